"""Health monitor: safe state within 1 s of a fault, recovery by itself (fake clock)."""
from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from controller.health import HealthConfig, HealthMonitor, frame_digest, frame_level

FPS = 30.0
DT = 1.0 / FPS


class Table:
    """Drives a monitor like the service loop: a noisy 30 fps camera, bridge and bus up."""

    def __init__(self, config: HealthConfig | None = None) -> None:
        self.h = HealthMonitor(config or HealthConfig())
        self.t = 1000.0
        self.rng = np.random.default_rng(1)
        self.camera = "ok"       # ok | lost | frozen
        self.frozen_image = None
        self.log = []            # (t, status)

    def image(self):
        if self.camera == "frozen":
            if self.frozen_image is None:
                self.frozen_image = self.rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
            return self.frozen_image
        self.frozen_image = None
        return self.rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)

    def run(self, seconds: float):
        for _ in range(int(round(seconds * FPS))):
            self.t += DT
            if self.camera != "lost":
                self.h.frame(self.t, frame_digest(self.image()))
            self.log.append((self.t, self.h.check(self.t)))
        return self.log[-1][1]

    def first(self, after: float, pred):
        return next(t for t, s in self.log if t >= after and pred(s)) - after


def healthy_table(**cfg) -> Table:
    tb = Table(HealthConfig(**cfg))
    tb.h.bridge(tb.t, up=True)
    tb.h.bus(tb.t, up=True)
    st = tb.run(1.0)
    assert not st.safe_state and st.reasons == ()
    return tb


def test_starts_safe_until_first_frame_and_links_up():
    h = HealthMonitor(HealthConfig())
    st = h.check(0.0)
    assert st.safe_state
    assert st.reasons == ("bridge-down", "bus-down", "camera-no-frame")
    assert st.entered == st.reasons
    h.frame(0.1, b"a")
    h.bridge(0.1, up=True)
    h.bus(0.1, up=True)
    assert h.check(0.2).safe_state  # hysteresis: clears only after recover_after_s
    h.frame(0.3, b"b"); h.frame(0.5, b"c")
    assert h.check(0.69).safe_state
    h.frame(0.75, b"d")
    st = h.check(0.75)
    assert not st.safe_state
    assert st.cleared == ("bridge-down", "bus-down", "camera-no-frame")


def test_lost_camera_safe_within_1s_and_recovers():
    tb = healthy_table()
    t_fault = tb.t
    tb.camera = "lost"
    st = tb.run(1.5)
    assert st.safe_state and st.reasons == ("camera-lost",)
    latency = tb.first(t_fault, lambda s: s.safe_state)
    assert 0.45 < latency <= 0.6
    entered = [s for t, s in tb.log if s.entered]
    assert [s.entered for s in entered] == [("camera-lost",)]  # alarm once
    t_back = tb.t
    tb.camera = "ok"
    st = tb.run(1.5)
    assert not st.safe_state
    back = tb.first(t_back, lambda s: not s.safe_state)
    assert 0.45 < back <= 0.6


def test_frozen_camera_safe_within_1s_and_recovers():
    tb = healthy_table()
    t_fault = tb.t
    tb.camera = "frozen"
    st = tb.run(1.5)
    assert st.reasons == ("camera-frozen",)
    assert "identical frames" in st.details["camera-frozen"]
    assert tb.first(t_fault, lambda s: s.safe_state) <= 0.6
    tb.camera = "ok"
    t_back = tb.t
    assert not tb.run(1.0).safe_state
    assert tb.first(t_back, lambda s: not s.safe_state) <= 0.6


def test_frozen_check_can_be_turned_off_for_a_noise_free_simulator():
    tb = healthy_table(frozen_after_s=None)
    tb.camera = "frozen"
    assert not tb.run(2.0).safe_state


def test_reported_bridge_and_bus_faults_are_immediate():
    tb = healthy_table()
    tb.h.bridge(tb.t, up=False, detail="serial port /dev/ttyACM0 closed")
    st = tb.h.check(tb.t)
    assert st.safe_state and st.reasons == ("bridge-down",) and st.entered == ("bridge-down",)
    assert st.details["bridge-down"] == "serial port /dev/ttyACM0 closed"
    assert st.changed
    assert st.alarm_body() == {"alarm": "health", "safe_state": True, "reasons": ["bridge-down"],
                               "entered": ["bridge-down"], "cleared": [],
                               "details": {"bridge-down": "serial port /dev/ttyACM0 closed"}}
    assert not tb.h.check(tb.t).changed
    tb.h.bus(tb.t, up=False, detail="publish failed")
    st = tb.run(0.2)
    assert st.reasons == ("bridge-down", "bus-down")
    tb.h.bridge(tb.t, up=True)
    st = tb.run(0.2)
    assert st.reasons == ("bridge-down", "bus-down")  # still clearing
    st = tb.run(0.4)
    assert st.reasons == ("bus-down",)
    tb.h.bus(tb.t, up=True)
    assert not tb.run(0.6).safe_state


def test_silent_bridge_times_out():
    tb = healthy_table(bridge_timeout_s=1.2)
    # bridge traffic stopped 1 s ago; the camera keeps running
    st = tb.run(0.5)
    assert st.reasons == ("bridge-silent",)
    tb.h.bridge(tb.t, up=True)
    assert not tb.run(0.6).safe_state


def test_camera_error_until_next_good_frame():
    h = HealthMonitor(HealthConfig(require_bridge=False, require_bus=False, recover_after_s=0.0))
    h.frame(0.0, b"x")
    h.frame_error(0.05, "usb:0 (/dev/video0): read failed")
    st = h.check(0.05)
    assert st.reasons == ("camera-error",)
    assert st.details["camera-error"] == "usb:0 (/dev/video0): read failed"
    h.frame(0.1, b"y")
    st = h.check(0.1)
    assert not st.safe_state and st.cleared == ("camera-error",)


def test_time_going_backwards_and_bad_config_are_refused():
    h = HealthMonitor()
    h.check(5.0)
    h.frame(4.7, b"x")  # another thread read the clock first: taken as 5.0
    assert h.faults(5.0) == {"bridge-down": "bridge has not reported up yet",
                             "bus-down": "bus has not reported up yet"}
    with pytest.raises(ValueError, match="backwards"):
        h.frame(3.9, b"x")
    with pytest.raises(ValidationError, match=r"frame_timeout_s\n.*less than or equal to 1"):
        HealthConfig(frame_timeout_s=3.0)  # would break the 1 s promise
    assert HealthConfig(frame_timeout_s=1.0).frame_timeout_s == 1.0   # the promise itself is allowed
    with pytest.raises(ValidationError, match=r"frame_timout_s\n.*Extra inputs are not permitted"):
        HealthConfig(frame_timout_s=0.2)  # misspelt key


def test_frame_digest_tells_frames_apart():
    a = np.zeros((20, 30, 3), np.uint8)
    b = a.copy(); b[16, 10, 1] = 1
    c = a.copy(); c[3, 10, 1] = 1
    assert frame_digest(a) == frame_digest(a.copy())
    assert frame_digest(a) != frame_digest(b)
    assert frame_digest(a) == frame_digest(c)            # row 3 is not sampled...
    assert frame_digest(a, row_step=1) != frame_digest(c, row_step=1)  # ...unless asked
    assert frame_digest(a) != frame_digest(a.reshape(30, 20, 3))
    assert len(frame_digest(a)) == 16


def test_events_from_another_thread_with_the_real_clock():
    import threading
    import time

    h = HealthMonitor(HealthConfig(require_bus=False, recover_after_s=0.0))
    stop = threading.Event()

    def link_thread():  # a firmware link listener flapping the bridge
        up = True
        while not stop.is_set():
            h.bridge(time.monotonic(), up=up, detail="" if up else "link lost")
            up = not up
            time.sleep(0.001)

    t = threading.Thread(target=link_thread)
    t.start()
    seen = set()
    try:
        end = time.monotonic() + 0.5
        i = 0
        while time.monotonic() < end:
            h.frame(time.monotonic(), b"%d" % i)
            i += 1
            seen.update(h.check(time.monotonic()).reasons)
    finally:
        stop.set()
        t.join(5)
    assert seen <= {"bridge-down", "camera-no-frame"}
    assert "bridge-down" in seen


def test_dark_or_blinded_camera():
    h = HealthMonitor(HealthConfig(require_bridge=False, require_bus=False, recover_after_s=0.2))
    t = 0.0
    dark = np.full((48, 64, 3), 3, np.uint8)
    normal = np.full((48, 64, 3), 90, np.uint8)
    assert frame_level(dark) == 3.0 and frame_level(normal) == 90.0
    for i in range(10):  # 0.3 s of normal frames
        t += 1 / 30
        h.frame(t, b"%d" % i, frame_level(normal))
    assert not h.check(t).safe_state
    t_fault = t
    reasons = []
    for i in range(30):  # the table light fails
        t += 1 / 30
        h.frame(t, b"d%d" % i, frame_level(dark))
        st = h.check(t)
        reasons.append((round(t - t_fault, 3), st.reasons))
    first = next(dt for dt, r in reasons if r)
    assert 0.5 <= first <= 0.6  # first dark frame at +1/30 s, then level_after_s
    assert reasons[-1][1] == ("camera-dark",)
    assert "mean grey level 3" in h.check(t).details["camera-dark"]
    for i in range(3):  # a hand passes for 0.1 s: not a fault once the light is back
        t += 1 / 30
        h.frame(t, b"n%d" % i, 90.0)
    for i in range(12):
        t += 1 / 30
        h.frame(t, b"m%d" % i, 90.0 if i % 6 else 2.0)
        h.check(t)
    assert not h.check(t).safe_state
    for i in range(30):
        t += 1 / 30
        h.frame(t, b"b%d" % i, 252.0)
    assert h.check(t).reasons == ("camera-blinded",)
    off = HealthMonitor(HealthConfig(require_bridge=False, require_bus=False, dark_below=None))
    off.frame(0.0, b"x", 0.0)
    off.frame(0.9, b"y", 0.0)
    assert not off.check(0.9).safe_state


def test_bridge_and_bus_traffic_keep_a_quiet_table_healthy():
    """Heartbeats from the MCU and the bus publisher count as traffic: a table with no link
    change and no roll for longer than the timeouts stays open."""
    tb = healthy_table(bridge_timeout_s=1.0, bus_timeout_s=1.0)
    for _ in range(15):  # 3 s of heartbeats every 0.2 s and nothing else
        tb.h.bridge_traffic(tb.t)
        tb.h.bus_traffic(tb.t)
        st = tb.run(0.2)
        assert not st.safe_state, st.reasons
    tb.run(1.2)  # the heartbeats stop: silent
    assert tb.log[-1][1].reasons == ("bridge-silent", "bus-silent")


def test_traffic_does_not_clear_a_link_reported_down():
    tb = healthy_table(bridge_timeout_s=1.0, bus_timeout_s=1.0)
    tb.h.bridge(tb.t, up=False, detail="far-wall sensor not working")
    tb.h.bus(tb.t, up=False, detail="publish: disk I/O error")
    for _ in range(5):
        tb.h.bridge_traffic(tb.t)
        tb.h.bus_traffic(tb.t)
        st = tb.run(0.2)
    assert st.reasons == ("bridge-down", "bus-down")
    assert st.details["bridge-down"] == "far-wall sensor not working"


def test_camera_give_up_after_the_camera_stays_lost():
    from controller.health import CameraGiveUp

    tb = healthy_table()
    give_up = CameraGiveUp(2.0)
    tb.camera = "lost"
    gave = []
    for _ in range(30):  # 3 s in steps of 0.1 s
        st = tb.run(0.1)
        gave.append(give_up.update(tb.t, st))
    first = gave.index(True)
    assert 2.4 <= first * 0.1 + 0.1 <= 2.7  # lost after 0.5 s, then 2 s
    tb.camera = "ok"  # frames again: the clock resets
    assert not give_up.update(tb.t, tb.run(1.0)) and give_up.lost_for(tb.t) == 0.0
    assert not CameraGiveUp(None).update(tb.t, st) and not CameraGiveUp(1.0).update(tb.t, None)
