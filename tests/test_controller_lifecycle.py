"""Roll lifecycle (motion -> rest -> read -> verdict) and the verdict rules with reason codes."""
from __future__ import annotations

import numpy as np
import pytest

from camera.base import FrameError
from controller.lifecycle import (DECIDED, IN_MOTION, SETTLING, WAITING, MotionDetector, RollLifecycle,
                                  SceneDie, same_scene)
from controller.policy import NY_5324, policy_from_mapping
from controller.reasons import Reason
from controller.verdict import DieObservation, ThrowFacts, decide
from vision.types import DieReading


def die(value, x=100.0, y=100.0, conf=0.95, flat=True):
    return DieReading(value=value, bbox=(int(x) - 10, int(y) - 10, int(x) + 10, int(y) + 10),
                      centre=(x, y), confidence=conf, flat=flat, side_px=20.0)


def obs(*readings, zone="playing"):
    return [DieObservation(r, zone=zone) for r in readings]


# --- verdicts ---------------------------------------------------------------------------------

def test_two_confident_dice_make_a_roll_left_to_right():
    v = decide(obs(die(5, x=300), die(2, x=100)))
    assert v.kind == "roll" and v.dice == (2, 5) and v.total == 7 and v.reason is None


@pytest.mark.parametrize("readings, kind, reason", [
    ([], "no-roll", Reason.DICE_OFF_TABLE),
    ([die(3)], "no-roll", Reason.DIE_OFF_TABLE),
    ([die(3, x=10), die(4, x=60), die(6, x=120)], "boxperson", Reason.EXTRA_DICE),
    ([die(3, x=10), die(None, x=60, conf=0.5)], "boxperson", Reason.FACE_UNREADABLE),
    ([die(3, x=10), die(4, x=60, conf=0.6)], "boxperson", Reason.FACE_UNREADABLE),
    ([die(3, x=10), die(4, x=60, flat=False)], "boxperson", Reason.DIE_NOT_FLAT),
])
def test_irregular_throws(readings, kind, reason):
    v = decide(obs(*readings), min_confidence=0.8)
    assert (v.kind, v.reason, v.dice) == (kind, reason, None)


def test_die_outside_area_names_the_zone():
    o = [DieObservation(die(3, x=10)), DieObservation(die(4, x=60), zone="rail")]
    v = decide(o)
    assert v.kind == "no-roll" and v.reason is Reason.DIE_ON_RAIL
    o = [DieObservation(die(3, x=10)), DieObservation(die(4, x=60), zone="outside")]
    assert decide(o).reason is Reason.DIE_OUTSIDE_AREA
    # spare dice in the dice cup do not spoil a throw of two dice in play (5324.52(a)(5))
    o = obs(die(3, x=10), die(4, x=60)) + [DieObservation(die(6, x=500), zone="dice_cup")]
    assert decide(o).dice == (3, 4)


def test_timeout_and_far_wall():
    v = decide([], ThrowFacts(timed_out=True))
    assert v.kind == "no-roll" and v.reason is Reason.NOT_AT_REST
    v = decide(obs(die(3, x=10), die(4, x=60)), ThrowFacts(struck_far_wall=False))
    assert v.kind == "no-roll" and v.reason is Reason.FAR_WALL_MISSED


def test_policy_is_data():
    house = policy_from_mapping("house", {"die-not-flat": "read", "die-on-die": "read"}, departs_from_regulation=True)
    readings = obs(die(3, x=10), die(4, x=60, flat=False))
    assert decide(readings, policy=NY_5324).kind == "boxperson"
    v = decide(readings, policy=house)
    assert v.kind == "roll" and v.dice == (3, 4) and v.irregularities == (Reason.DIE_NOT_FLAT,)
    stacked = [DieObservation(die(3, x=10), on_die=True), DieObservation(die(4, x=12))]
    assert decide(stacked).reason is Reason.DIE_ON_DIE and decide(stacked).kind == "no-roll"
    assert decide(stacked, policy=house).dice == (3, 4)
    with pytest.raises(ValueError, match="dice-off-table"):
        policy_from_mapping("bad", {"dice-off-table": "read"})
    # 9 NYCRR 5324.52(k)(1) "shall be invalid": reading a die on the other die must be declared
    with pytest.raises(ValueError, match=r"die-on-die: .*departs_from_regulation"):
        policy_from_mapping("ny-5324+custom", {"die-on-die": "read"})
    # nor a boxperson call: the boxperson could answer with dice and make the roll valid
    with pytest.raises(ValueError, match=r"die-on-die: .*'boxperson' departs from the regulation"):
        policy_from_mapping("ny-5324+custom", {"die-on-die": "boxperson"})
    # a casino-night text with no such rule, cited as its own paragraph, may send it to the boxperson
    nj = policy_from_mapping("nj", {"die-on-die": "boxperson"}, citations={"die-on-die": "N.J.A.C. 13:47-20.25(d)"})
    assert nj.action(Reason.DIE_ON_DIE).value == "boxperson"
    assert policy_from_mapping("house+custom", {"die-not-flat": "no-roll"}, base=house).departs_from_regulation
    with pytest.raises(ValueError, match="unknown reason code"):
        policy_from_mapping("bad", {"cocked": "read"})


def test_every_reason_cites_a_paragraph():
    for r in Reason:
        assert r.citation.startswith("9 NYCRR 5324.52(") and r.description
        assert NY_5324.action(r).value in ("no-roll", "boxperson")


# --- state machine ----------------------------------------------------------------------------

def run(lc, moves, t0=0.0, dt=1 / 30):
    steps = []
    for i, m in enumerate(moves):
        steps.append(lc.on_frame(t0 + i * dt, m).kind)
    return steps


def started(lc):
    """Bring a fresh lifecycle from start-up to waiting (empty table at rest)."""
    steps = run(lc, [False] * lc.still_frames)
    assert steps[-1] == "read"
    assert lc.on_read(()) == "settled" and lc.phase == WAITING


def test_motion_then_rest_then_read():
    lc = RollLifecycle(still_frames=4, rest_timeout_s=5)
    started(lc)
    steps = run(lc, [True, True, True, False, False, False, False], t0=1.0)
    assert steps[0] == "throw-started" and lc.phase == "reading"
    assert steps[-1] == "read" and steps[1:-1] == ["none"] * 5
    assert lc.on_read((SceneDie(3, 10, 10), SceneDie(4, 60, 10))) == "verdict"
    assert lc.phase == DECIDED


def test_rest_needs_still_s_seconds_at_any_frame_rate():
    """8 still frames are 0.23 s at 30 fps but 0.12 s at 60 fps: with still_s = 0.2 the 60 fps
    read waits for the 13th still frame (0.2 s), the 30 fps one still comes at the 8th."""
    for dt, n_read in ((1 / 30, 8), (1 / 60, 13)):
        lc = RollLifecycle(still_frames=8, rest_timeout_s=5, still_s=0.2)
        steps = run(lc, [False] * 20, dt=dt)
        assert steps.index("read") + 1 == n_read, (dt, steps)
    with pytest.raises(ValueError, match="still_s"):
        RollLifecycle(still_s=-1.0)


def test_rest_needs_consecutive_still_frames():
    lc = RollLifecycle(still_frames=3, rest_timeout_s=5)
    started(lc)
    steps = run(lc, [True, False, False, True, False, False, False], t0=1.0)
    assert steps.count("read") == 1 and steps[-1] == "read"


def test_timeout_is_a_no_roll_then_settles_without_verdict():
    lc = RollLifecycle(still_frames=3, rest_timeout_s=1.0)
    started(lc)
    steps = run(lc, [True] * 40, t0=1.0)  # 40 frames at 30 fps: 1.3 s of motion
    assert steps.count("timed-out") == 1 and lc.phase == SETTLING
    steps = run(lc, [False] * 3, t0=3.0)
    assert steps[-1] == "read"
    assert lc.on_read((SceneDie(2, 5, 5), SceneDie(2, 50, 5))) == "settled" and lc.phase == DECIDED


def test_pickup_after_verdict_is_not_a_throw():
    lc = RollLifecycle(still_frames=2, rest_timeout_s=1.0)
    started(lc)
    run(lc, [True, False, False], t0=1.0)
    scene = (SceneDie(3, 10, 10), SceneDie(4, 60, 10))
    assert lc.on_read(scene) == "verdict"
    # a hand passes over for a long time (no timeout after a verdict), dice untouched
    steps = run(lc, [True] * 60 + [False, False], t0=2.0)
    assert "timed-out" not in steps and steps[-1] == "read"
    assert lc.on_read((SceneDie(4, 62, 11), SceneDie(3, 9, 10))) == "unchanged" and lc.phase == DECIDED
    # dice picked up: empty table -> waiting
    run(lc, [True, False, False], t0=5.0)
    assert lc.on_read(()) == "cleared" and lc.phase == WAITING
    # automated rig: re-thrown without an empty table -> a new verdict
    run(lc, [True, False, False], t0=6.0)
    assert lc.on_read(scene) == "verdict"
    run(lc, [True, False, False], t0=7.0)
    assert lc.on_read((SceneDie(6, 200, 10), SceneDie(1, 260, 10))) == "verdict"
    lc.arm()
    assert run(lc, [True], t0=8.0) == ["throw-started"] and lc.phase == IN_MOTION


def test_on_read_out_of_turn():
    with pytest.raises(RuntimeError, match="on_read"):
        RollLifecycle().on_read(())


def test_same_scene():
    a = (SceneDie(3, 10, 10), SceneDie(4, 60, 10))
    assert same_scene(a, (SceneDie(4, 65, 12), SceneDie(3, 12, 8)), 10)
    assert not same_scene(a, (SceneDie(4, 80, 10), SceneDie(3, 10, 10)), 10)
    assert not same_scene(a, (SceneDie(5, 60, 10), SceneDie(3, 10, 10)), 10)


# --- motion detector --------------------------------------------------------------------------

def test_motion_detector_inside_area_only():
    img = np.full((240, 320, 3), 90, np.uint8)
    md = MotionDetector(area=[(0, 0), (160, 0), (160, 240), (0, 240)], width=160, min_pixels=10)
    assert md.moving(img) is False
    assert md.moving(img.copy()) is False
    moved_out = img.copy()
    moved_out[100:140, 250:300] = 255  # right half: outside the area
    assert md.moving(moved_out) is False
    moved_in = moved_out.copy()
    moved_in[100:140, 40:80] = 255
    assert md.moving(moved_in) is True and md.last_fraction > 0.01
    assert md.moving(moved_in) is False
    noisy = np.clip(moved_in.astype(int) + np.random.default_rng(0).integers(-8, 9, moved_in.shape), 0, 255)
    assert md.moving(noisy.astype(np.uint8)) is False  # sensor noise under the threshold
    with pytest.raises(FrameError):
        md.moving(np.zeros((240, 320), np.float32))


def test_motion_detector_scales_to_the_die():
    """A 10-pixel die rolling a few pixels in a 1280x720 frame is motion when the die size is
    known; the same frames at a fixed 160-pixel width lose it."""
    base = np.full((720, 1280, 3), 40, np.uint8)

    def at(x):
        img = base.copy()
        img[300:310, x:x + 10] = 230
        return img

    auto = MotionDetector(die_side_px=10.0)
    coarse = MotionDetector(width=160, min_pixels=2)
    for md in (auto, coarse):
        md.moving(at(600))
    assert auto.moving(at(604)) is True and auto.min_pixels == 12  # 10 x 10 / 8
    assert coarse.moving(at(604)) is False
    assert auto.moving(at(604)) is False
