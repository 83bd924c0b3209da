"""Read a frame source in a thread, so that a camera that stalls cannot stall the service.

``cv2.VideoCapture.read`` and ``Picamera2.capture_array`` block until a frame comes; a camera
unplugged mid-read can block for seconds. The service's loop must keep running meanwhile: to
check health every 100 ms, enter the safe state within 1 s, and ping the systemd watchdog.
``FramePump`` reads in a daemon thread and hands frames over a small queue; the loop gets a
frame, or ``None`` when none came within its tick::

    pump = FramePump(source, drop_old=True)   # live camera: always the newest frame
    for frame in pump.items(tick_s=0.1):      # Frame, or None after 0.1 s without one
        now = time.monotonic()
        if frame is not None:
            health.frame(now, frame_digest(frame.image))
            service.process(frame)
        status = health.check(now)
        watchdog.tick(now)
    pump.close()

A ``FrameError`` raised by the source is raised from ``items()``/``get()`` in the caller's
thread (once), and the pump ends. Replays and the simulator use ``drop_old=False``: every frame
is delivered, the reader waits for the consumer.
"""
from __future__ import annotations

import queue
import threading
from typing import Iterator

from camera.base import Frame, FrameSource

__all__ = ["FramePump"]

_END = object()


class FramePump:
    """A frame source read by a background thread.

    Args:
        source: any ``camera.base.FrameSource``.
        maxsize: frames held between the reader and the consumer (>= 1).
        drop_old: when the queue is full, drop the oldest frame (live cameras) instead of
            making the reader wait (replay, simulator).

    Attributes:
        dropped: frames dropped because the consumer was slower than the camera.
    """

    def __init__(self, source: FrameSource, maxsize: int = 2, drop_old: bool = False) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self.source = source
        self.drop_old = drop_old
        self.dropped = 0
        self._q: queue.Queue = queue.Queue(maxsize=maxsize)
        self._stop = threading.Event()
        self._ended = False
        self._thread = threading.Thread(target=self._read, name="frame-pump", daemon=True)
        self._thread.start()

    def _put(self, item: object) -> bool:
        """Queue ``item``; False when stopping."""
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.05)
                return True
            except queue.Full:
                if self.drop_old and isinstance(item, Frame):
                    try:
                        self._q.get_nowait()
                        self.dropped += 1
                    except queue.Empty:
                        pass
        return False

    def _read(self) -> None:
        try:
            for frame in self.source.frames():
                if not self._put(frame):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            self._put(exc)
            return
        self._put(_END)

    def get(self, timeout_s: float) -> Frame | None:
        """The next frame, or ``None`` if none arrives within ``timeout_s`` seconds.

        Raises:
            camera.base.FrameError (or whatever the source raised): the source failed.
            EOFError: the source has ended (replay finished) or the pump is closed.
        """
        if self._ended:
            raise EOFError("frame source ended")
        try:
            item = self._q.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if item is _END:
            self._ended = True
            raise EOFError("frame source ended")
        if isinstance(item, BaseException):
            self._ended = True
            raise item
        return item

    def items(self, tick_s: float = 0.1) -> Iterator[Frame | None]:
        """Yield frames, and ``None`` each ``tick_s`` seconds without one, until the source
        ends (the iterator stops) or fails (its error is raised)."""
        while True:
            try:
                yield self.get(tick_s)
            except EOFError:
                return

    def close(self, join_s: float = 2.0) -> None:
        """Stop reading and close the source: the reader thread is given ``join_s`` seconds
        to leave the source first; one blocked inside a device read past that is left to end on
        its own (a daemon thread) and the source is closed under it. Safe to call twice."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._ended = True
        self._thread.join(join_s)
        self.source.close()
