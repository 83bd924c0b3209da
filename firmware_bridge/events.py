"""Small listeners for the input events of a :class:`~firmware_bridge.link.FirmwareLink`.

:class:`EventQueue` turns the callback into a blocking ``get(timeout)``; :class:`WallStrikeLog`
keeps the times of far-wall strikes so the irregularity rules can ask whether a throw reached the
far wall: the shooter throws "to cause the dice to strike the end of the table farthest from the
shooter" (9 NYCRR 5324.52(g)), and a throw in which either die fails to strike an end of the table
may be called "no roll" (9 NYCRR 5324.52(k)(2)(ii)).  The controller decides what a missed wall
means under its jurisdiction profile; this module only records the sensor.
"""
from __future__ import annotations

import collections
import queue
import threading
import time
from typing import Callable

from .link import FirmwareLink, LinkEvent
from .protocol import InputId


class EventQueue:
    """Queue of :class:`LinkEvent` from a link (optionally only some inputs).

    ``get(timeout) -> LinkEvent | None`` (None after ``timeout`` seconds with no event).
    """

    def __init__(self, link: FirmwareLink | None = None, inputs: set[InputId] | None = None, maxsize: int = 1024) -> None:
        self._q: queue.Queue[LinkEvent] = queue.Queue(maxsize)
        self._inputs = inputs
        self.dropped = 0
        if link is not None:
            link.add_event_listener(self)

    def __call__(self, event: LinkEvent) -> None:
        if self._inputs is not None and event.input not in self._inputs:
            return
        try:
            self._q.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def get(self, timeout: float) -> LinkEvent | None:
        """The oldest queued event, waiting up to ``timeout`` seconds for one (0: do not wait);
        ``None`` if none came in that time. Events that arrived while the queue was full are not
        queued, only counted in :attr:`dropped`.

        Raises:
            ValueError: ``timeout`` is negative (``queue.Queue.get``).
        """
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None


class WallStrikeLog:
    """Times of the last ``maxlen`` far-wall strikes, in seconds on the caller's clock.

    A strike is recorded at :attr:`LinkEvent.event_time`: the MCU's stamp (taken within 1 ms of
    the sensor edge) on the host clock, so a strike delivered late (retransmitted, or held through
    a link outage) still falls inside the throw it belongs to.

    ``clock``: the clock to record on (default ``time.monotonic``, the clock of live camera
    frames).  With another clock (say the frame clock of a replay) a strike is recorded as
    ``clock()`` at delivery minus the time since the strike (``time.monotonic() - event_time``).
    """

    def __init__(self, link: FirmwareLink | None = None, maxlen: int = 256,
                 clock: Callable[[], float] | None = None) -> None:
        self._times: collections.deque[float] = collections.deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._clock = clock
        if link is not None:
            link.add_event_listener(self)

    def __call__(self, event: LinkEvent) -> None:
        if event.input is InputId.FAR_WALL_STRIKE:
            t = event.event_time or event.host_time
            if self._clock is not None:
                t = self._clock() - (time.monotonic() - t)
            with self._lock:
                self._times.append(t)

    def times(self) -> list[float]:
        """All recorded strike times, oldest first."""
        with self._lock:
            return list(self._times)

    def strikes_between(self, t0: float, t1: float) -> list[float]:
        """Strike times t with t0 <= t <= t1 (monotonic seconds)."""
        with self._lock:
            return [t for t in self._times if t0 <= t <= t1]

    def struck_between(self, t0: float, t1: float) -> bool:
        """True if the far wall was struck between t0 and t1 (monotonic seconds, inclusive)."""
        return bool(self.strikes_between(t0, t1))
