"""FramePump: a stalled camera does not stall the loop; errors reach the caller; replay keeps
every frame; a live camera keeps the newest."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from camera.base import Frame, FrameError
from camera.pump import FramePump
from controller.health import HealthConfig, HealthMonitor, frame_digest


class ScriptedSource:
    """Yields n frames (distinct noise), then stalls until released, then raises or ends."""

    def __init__(self, n, stall=False, error=None, delay_s=0.0):
        self.n, self.stall, self.error, self.delay_s = n, stall, error, delay_s
        self.release = threading.Event()
        self.closed = 0
        self.rng = np.random.default_rng(0)

    def frames(self):
        for i in range(self.n):
            if self.delay_s:
                time.sleep(self.delay_s)
            yield Frame(self.rng.integers(0, 256, (20, 20, 3), dtype=np.uint8), float(i), i, "scripted")
        if self.stall:
            self.release.wait(10)
        if self.error:
            raise self.error

    def close(self):
        self.closed += 1
        self.release.set()


def test_replay_delivers_every_frame_in_order_then_ends():
    src = ScriptedSource(50)
    pump = FramePump(src, maxsize=2, drop_old=False)
    got = [f.index for f in pump.items(0.5) if f is not None]
    assert got == list(range(50))
    assert pump.dropped == 0
    pump.close(); pump.close()
    assert src.closed == 1


def test_source_error_is_raised_in_the_caller():
    pump = FramePump(ScriptedSource(3, error=FrameError("usb:0: read failed after 3 frames")))
    got = []
    with pytest.raises(FrameError, match="usb:0: read failed after 3 frames"):
        for f in pump.items(0.5):
            got.append(f.index)
    assert got == [0, 1, 2]
    with pytest.raises(EOFError):
        pump.get(0.01)
    pump.close()


def test_stalled_camera_gives_ticks_and_safe_state_within_1s():
    src = ScriptedSource(10, stall=True)
    pump = FramePump(src, drop_old=True)
    health = HealthMonitor(HealthConfig(require_bridge=False, require_bus=False))
    t0 = time.monotonic()
    last_frame_at, safe_at, ticks = None, None, 0
    for item in pump.items(0.05):
        now = time.monotonic()
        if item is not None:
            health.frame(now, frame_digest(item.image))
            last_frame_at = now
        else:
            ticks += 1
        if health.check(now).safe_state and last_frame_at is not None and now > last_frame_at:
            if "camera-lost" in health.check(now).reasons:
                safe_at = now
                break
        assert now - t0 < 5.0, "the loop must not hang"
    assert ticks >= 5
    assert safe_at - last_frame_at <= 1.0
    pump.close(join_s=1.0)
    assert src.closed == 1


def test_live_camera_drops_old_frames_for_a_slow_consumer():
    src = ScriptedSource(40)
    pump = FramePump(src, maxsize=1, drop_old=True)
    time.sleep(0.3)  # the consumer is late: the camera filled the queue long ago
    got = [f.index for f in pump.items(0.3) if f is not None]
    assert got[-1] == 39
    assert len(got) < 40 and pump.dropped == 40 - len(got)
    pump.close()
    with pytest.raises(ValueError):
        FramePump(src, maxsize=0)
