"""Frame times from the source that go back or jump forward (controller/frame_clock.py and the
table service): named (a WARNING, ``stats.clock_steps``, the metric), the service's frame clock
carried on at the usual interval, and a throw in motion meanwhile a no roll ``table-fault``
(``faults: ["frame-clock"]``) with a ``frame-fault`` alarm. Synthetic frames and the stand-in
reader of tests/test_controller_service.py; every loop is bounded by its script."""
from __future__ import annotations

import logging

import pytest

from camera.base import Frame
from controller.frame_clock import FrameClock
from controller.metrics import TableMetrics
from list_publisher import ListPublisher
from test_controller_service import make_service, scene_image, throw_frames

DICE = [(3, 100, 100), (4, 200, 120)]


def shifted(frames, start, by):
    """``frames`` with the times of ``frames[start:]`` moved by ``by`` seconds."""
    return frames[:start] + [Frame(f.image, f.t + by, f.index, f.source) for f in frames[start:]]


def run_frames(service, frames):
    service.start()
    for f in frames:
        service.process(f)


def test_frame_clock_passes_time_through_and_carries_on_over_steps():
    clock = FrameClock(max_gap_s=1.0)
    assert clock.time(5.0) == (5.0, None)
    assert clock.time(5.1) == (5.1, None)
    assert clock.time(5.1) == (5.1, None)          # two frames at one time: not a step
    assert clock.time(6.05) == (6.05, None)        # 0.95 s: time passing
    t, step = clock.time(3.0)                      # back 3.05 s
    assert step.kind == "backwards" and step.gap_s == pytest.approx(-3.05)
    assert t == pytest.approx(6.05 + 0.95)         # one usual interval (the last good one) on
    assert "went back by 3.05 s" in step.describe()
    t2, step2 = clock.time(3.5)
    assert step2 is None and t2 == pytest.approx(t + 0.5)
    t3, step3 = clock.time(1e6)                    # forward 1e6 s
    assert step3.kind == "jump" and "jumped forward" in step3.describe()
    assert t3 == pytest.approx(t2 + 0.5)
    assert clock.steps == 2


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1"])
def test_frame_clock_refuses_a_bad_largest_gap(bad):
    with pytest.raises(ValueError, match="max_gap_s"):
        FrameClock(bad)


def test_a_forward_jump_mid_throw_is_a_table_fault_not_a_timeout(tmp_path):
    """Before: the frame after a +1e6 s jump was 1e6 s after the throw's first motion, so the
    throw timed out at once: a no roll ``not-at-rest`` although the dice came to rest, and
    nothing said why. Now: a ``frame-fault`` alarm names the jump, the throw is a no roll
    ``table-fault`` with ``faults: ["frame-clock"]``, and the next throw is a roll."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    frames, t, i = throw_frames(DICE, 0.0, rest=20)
    frames = shifted(frames, 14, 1e6)              # frames 12..17 move: jump at the 3rd
    more, _, _ = throw_frames([(5, 100, 100), (6, 200, 120)], t + 1e6, start_index=i, rest=20)
    run_frames(service, frames + more)
    rolls = pub.rolls()
    assert [(b["verdict"], b["reason"], b["faults"]) for b in rolls] == [
        ("no-roll", "table-fault", ["frame-clock"]), ("roll", None, [])]
    assert rolls[1]["dice"] == [5, 6]
    alarms = [b for tp, b in pub.sent if tp == "alarm"]
    assert [a["code"] for a in alarms] == ["frame-fault"]
    assert "frame 14" in alarms[0]["message"] and "jumped forward by 1e+06 s" in alarms[0]["message"]
    assert service.stats.clock_steps == 1
    # the frames after the jump are on the service's frame clock, one interval after frame 13:
    # the times the frames would have had without the jump
    assert rolls[0]["frame"]["t"] == pytest.approx(rolls[0]["frame"]["index"] / 30.0, abs=1e-3)
    service.close()


def test_time_going_back_mid_throw_is_a_table_fault_and_the_timeout_still_fires(tmp_path):
    """Before: frame times 100 s back mid-throw kept ``t - first motion`` negative, so a throw
    whose dice never came to rest was never timed out (no verdict after 3 s of frames, with a
    rest timeout of 2 s). Now: the frame clock carries on, the throw times out after 2 s of
    frames, and its verdict is a no roll ``table-fault`` naming the step."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    frames, t, i = throw_frames(DICE, 0.0, motion=6, rest=0)
    # the dice keep moving for 3 s (90 frames), the frame times 100 s back from the 3rd moving one
    for k in range(90):
        x = 100 + (k % 2) * 12
        frames.append(Frame(scene_image([(3, x, 100), (4, 200, 120 + (k % 2) * 12)]), t, i))
        t += 1 / 30.0
        i += 1
    frames = shifted(frames, 14, -100.0)
    run_frames(service, frames)
    rolls = pub.rolls()
    assert [(b["verdict"], b["reason"], b["faults"]) for b in rolls] == [("no-roll", "table-fault", ["frame-clock"])]
    alarms = [b for tp, b in pub.sent if tp == "alarm"]
    assert [a["code"] for a in alarms] == ["frame-fault"]
    assert "went back by 99.9667 s" in alarms[0]["message"]
    service.close()


def test_time_going_back_at_rest_mid_throw_is_not_read_as_a_roll(tmp_path):
    """Before: a throw whose frame times went back 5 s while the dice were moving was read at
    rest as a roll, its timing (rest, track, far-wall window) unseen and nothing said. Now: a no
    roll ``table-fault`` with a ``frame-fault`` alarm."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    frames, _, _ = throw_frames(DICE, 0.0, rest=20)
    run_frames(service, shifted(frames, 15, -5.0))
    assert [(b["verdict"], b["reason"], b["faults"]) for b in pub.rolls()] == [
        ("no-roll", "table-fault", ["frame-clock"])]
    service.close()


def test_a_step_between_throws_is_named_and_the_next_throw_is_a_roll(tmp_path, caplog):
    """A step of the frame times while the table waits is logged at WARNING and counted
    (``stats.clock_steps``, ``craps_table_clock_jumps_total{clock="frame"}``), without an
    alarm; the next throw is an ordinary roll. Before: nothing named it."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    metrics = TableMetrics()
    service.metrics = metrics
    frames, _, _ = throw_frames(DICE, 0.0, rest=20)
    frames = shifted(frames, 5, -3600.0)            # the 6th idle frame: an hour back
    with caplog.at_level(logging.WARNING, logger="controller.service"):
        run_frames(service, frames)
    assert [(b["verdict"], b["dice"], b["faults"]) for b in pub.rolls()] == [("roll", [3, 4], [])]
    assert [b for tp, b in pub.sent if tp == "alarm"] == []
    assert service.stats.clock_steps == 1
    assert any("frame time went back by 3599.97 s" in r.getMessage() for r in caplog.records)
    assert metrics.registry.get_sample_value("craps_table_clock_jumps_total", {"clock": "frame"}) == 1.0
    service.close()
