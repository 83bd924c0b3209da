"""ThrowObserver: idle frame -> track over motion frames -> far-wall verdict; boxperson call and
decision flow. Synthetic frames (two red squares on green felt), 2 mm per pixel."""
from __future__ import annotations

import cv2
import pytest
import numpy as np

from camera.calibration import Calibration
from controller.boxperson import CallRegistry
from controller.irregularity_profile import load_profile
from controller.lifecycle import IN_MOTION, WAITING
from controller.throw_observer import ThrowObserver
from controller.verdict import decide
from simulator.geometry import TableGeometry
from vision.types import DieReading

G = TableGeometry()
S = 2.0  # mm per pixel; pixel (u, v) -> mm (S*u - 50, S*v - 50)
H = np.array([[S, 0, -50.0], [0, S, -50.0], [0, 0, 1.0]])
CAL = Calibration.from_homography(H, G.zones())
W, HGT = int((G.length + 100) / S), int((G.width + 100) / S)


def px(x_mm, y_mm):
    return (x_mm + 50.0) / S, (y_mm + 50.0) / S


def frame(dice_mm):
    img = np.zeros((HGT, W, 3), np.uint8)
    img[:] = (40, 110, 40)
    for x, y in dice_mm:
        u, v = px(x, y)
        h = 19.05 / S / 2
        cv2.rectangle(img, (int(u - h), int(v - h)), (int(u + h), int(v + h)), (38, 32, 178), -1)
    return img


def reading(x, y, value, conf=0.95):
    u, v = px(x, y)
    return DieReading(value=value, bbox=(int(u - 5), int(v - 5), int(u + 5), int(v + 5)), centre=(u, v),
                      confidence=conf, flat=True, side_px=19.05 / S)


def throw(obs: ThrowObserver, turn_x: float, end_x: float):
    """Two dice from x=100 mm to turn_x and back to end_x, 60 frames a second."""
    obs.on_frame(0.0, frame([]), WAITING)
    obs.throw_started(0.02)
    path = list(np.linspace(100, turn_x, 12)) + list(np.linspace(turn_x, end_x, 12)[1:])
    for k, x in enumerate(path):
        obs.on_frame(0.02 + k / 60, frame([(x, 200.0), (x - 30, 330.0)]), IN_MOTION)
    return obs.observe([reading(end_x, 200, 3), reading(end_x - 30, 330, 5)], 1.0)


def test_track_decides_the_far_wall():
    obs = ThrowObserver(load_profile("ny-5324"), calibration=CAL)
    good = throw(obs, G.length - 12, 600)
    v = decide(good.observations, good.facts, policy=obs.policy)
    assert good.facts.struck_far_wall is True and (v.kind, v.dice) == ("roll", (5, 3))
    short = throw(obs, 800, 600)
    v = decide(short.observations, short.facts, policy=obs.policy)
    assert short.facts.struck_far_wall is False and (v.kind, v.reason.value) == ("no-roll", "far-wall-missed")
    nj = ThrowObserver(load_profile("nj-13-47"), calibration=CAL)
    short = throw(nj, 800, 600)
    assert decide(short.observations, short.facts, policy=nj.policy).kind == "roll"


def test_wall_sensor_strikes_count():
    obs = ThrowObserver(load_profile("ny-5324"), calibration=CAL, track=False, wall_sensor=True)
    obs.on_frame(0.0, frame([]), WAITING)
    obs.throw_started(1.0)
    obs.wall_strike(0.1)  # before this throw
    o = obs.observe([reading(500, 200, 3), reading(600, 300, 5)], 3.0)
    assert o.facts.struck_far_wall is False
    obs.throw_started(4.0)
    obs.wall_strike(4.3)
    obs.wall_strike(4.35)
    o = obs.observe([reading(500, 200, 3), reading(600, 300, 5)], 6.0)
    assert o.facts.struck_far_wall is True


def test_boxperson_call_and_decision():
    reg = CallRegistry(30.0)
    obs = ThrowObserver(load_profile("ny-5324"), calibration=CAL, registry=reg, track=False)
    o = obs.observe([reading(500, 200, 3, conf=0.4), reading(600, 300, 5)], 1.0)
    v = decide(o.observations, o.facts, policy=obs.policy)
    assert (v.kind, v.reason.value) == ("boxperson", "face-unreadable")
    obs.verdict_published("table-1-00000003", v, frame([(500, 200), (600, 300)]), o)
    (call,) = reg.pending()
    assert call.reason == "face-unreadable" and call.evidence_png[:4] == b"\x89PNG"
    assert obs.decisions() == []
    reg.answer("table-1-00000003", who="ann", dice=[3, 5])
    (d,) = obs.decisions()
    assert (d.roll_id, d.dice, d.who) == ("table-1-00000003", (3, 5), "ann")
    assert obs.decisions() == []


def test_service_observe_hook_signature():
    from camera.base import Frame

    obs = ThrowObserver(load_profile("ny-5324"), calibration=CAL, track=False)
    img = frame([(500, 200), (560, 300)])
    f = Frame(image=img, t=2.0, index=7, source="test")
    observations, facts = obs([reading(500, 200, 3), reading(560, 300, 5)], f)
    assert [o.reading.value for o in observations] == [3, 5] and facts.struck_far_wall is None
    assert obs.last is not None and len(obs.last.observations) == 2


def test_observer_rereads_a_die_the_track_saw_settle_on_the_frame_at_rest():
    """The reader found one die; the track saw two come to rest: the observer asks its
    ``reread`` about the second on the frame at rest, and the roll counts (5324.52(h)(1))."""
    asked = []

    def reread(image, centre, side):
        asked.append((image.shape, round(centre[0]), round(centre[1])))
        return reading(570, 330, 5)
    for obs_reread, expected in ((None, ("boxperson", None)), (reread, ("roll", (5, 3)))):
        obs = ThrowObserver(load_profile("ny-5324"), calibration=CAL, reread=obs_reread)
        obs.on_frame(0.0, frame([]), WAITING)
        obs.throw_started(0.02)
        path = list(np.linspace(100, G.length - 12, 12)) + list(np.linspace(G.length - 12, 600, 12)[1:])
        path += [600.0] * 6
        for k, x in enumerate(path):
            obs.on_frame(0.02 + k / 60, frame([(x, 200.0), (x - 30, 330.0)]), IN_MOTION)
        at_rest = frame([(600, 200.0), (570, 330.0)])
        got = obs.observe([reading(600, 200, 3)], 1.0, image=at_rest)
        v = decide(got.observations, got.facts, policy=obs.policy)
        assert (v.kind, v.dice) == expected
    assert len(asked) == 1 and asked[0][0] == at_rest.shape
    assert abs(asked[0][1] - px(570, 330)[0]) <= 3 and abs(asked[0][2] - px(570, 330)[1]) <= 3


def test_observer_reads_the_spare_dice_in_the_cup_on_the_idle_frame():
    """``read_spares`` is asked about the last idle frame before the throw; a die in the cup there
    is a spare (9 NYCRR 5324.52(a)(5)), so one die on the layout and that spare at rest is a die
    off the table, (k)(1), not a die in the cup (which N.J.A.C. 13:47 gives to the boxperson)."""
    cx, cy = G.cup_centre
    idle = frame([(cx, cy)])
    asked = []

    def read_spares(image):   # the red square the crop holds, in the crop's pixels
        asked.append(image)
        ys, xs = np.nonzero(image[..., 2] > 150)
        return [DieReading(value=4, bbox=(0, 0, 1, 1), centre=(float(xs.mean()), float(ys.mean())),
                           confidence=0.95, flat=True, side_px=19.05 / S)]
    for spares_reader, expected in ((None, ("boxperson", "die-in-dice-cup")),
                                    (read_spares, ("no-roll", "die-off-table"))):
        obs = ThrowObserver(load_profile("nj-13-47"), calibration=CAL, track=False, read_spares=spares_reader)
        obs.on_frame(0.0, idle, WAITING)
        obs.throw_started(0.02)
        obs.on_frame(0.1, frame([(600, 200), (cx, cy)]), IN_MOTION)
        got = obs.observe([reading(600, 200, 3), reading(cx, cy, 4)], 1.0)
        v = decide(got.observations, got.facts, policy=obs.policy)
        assert (v.kind, v.reason.value) == expected
    # only the cup's part of the idle frame is read (the cup and a die side around it)
    assert len(asked) == 1 and asked[0].shape[0] < idle.shape[0] / 3 and asked[0].shape[1] < idle.shape[1] / 3


def test_observer_reads_the_cup_before_the_throw_only_where_it_changed():
    """With the frame at rest: where the cup's interior is as it was before the throw, nothing
    landed in it, and the dice there are the spares without reading the frame before; where a
    die landed in it, the frame before is read, and a die in the cup is a thrown die even when
    the reader sees no more dice there than before (it landed on a spare)."""
    cx, cy = G.cup_centre
    asked = []

    def read_spares(image):
        asked.append(image.shape)
        return [] if not np.any(image[..., 2] > 150) else [reading_in(image, 4)]

    def reading_in(image, value):
        ys, xs = np.nonzero(image[..., 2] > 150)
        return DieReading(value=value, bbox=(0, 0, 1, 1), centre=(float(xs.mean()), float(ys.mean())),
                          confidence=0.95, flat=True, side_px=19.05 / S)

    def run(at_rest_dice, cup_readings):
        obs = ThrowObserver(load_profile("nj-13-47"), calibration=CAL, track=False, read_spares=read_spares)
        obs.on_frame(0.0, frame([(cx, cy)]), WAITING)
        obs.throw_started(0.02)
        obs.on_frame(0.1, frame([(600, 200)]), IN_MOTION)
        got = obs.observe([reading(600, 200, 3)] + cup_readings, 1.0, image=frame([(600, 200)] + at_rest_dice))
        v = decide(got.observations, got.facts, policy=obs.policy)
        return v.kind, v.reason.value
    # the spare where it was: a die off the table, the frame before not read
    assert run([(cx, cy)], [reading(cx, cy, 4)]) == ("no-roll", "die-off-table") and asked == []
    # a die landed in the cup beside the spare; the reader at rest saw only one die there
    assert run([(cx, cy), (cx + 12, cy + 8)], [reading(cx + 6, cy + 4, 4)]) == ("boxperson", "die-in-dice-cup")
    assert len(asked) == 1


def test_observer_with_no_still_frame_before_takes_the_dice_in_the_cup_for_spares():
    """At start-up (or after a timed-out throw) there is no still frame before the motion: the
    dice in the cup at rest are the spares, so the lifecycle's scene of an empty table with three
    spares in the cup is empty (it waits for a throw) rather than three dice to decide."""
    cx, cy = G.cup_centre
    obs = ThrowObserver(load_profile("nj-13-47"), calibration=CAL, track=False,
                        read_spares=lambda image: pytest.fail("no still frame to read"))
    got = obs.observe([reading(cx - 12, cy, 4), reading(cx + 12, cy, 2)], 1.0)
    assert got.observations == ()
    obs.on_frame(0.0, frame([]), WAITING)
    obs.on_frame(0.1, frame([(600, 200)]), IN_MOTION)
    with pytest.raises(pytest.fail.Exception):
        obs.observe([reading(600, 200, 3), reading(cx - 12, cy, 4)], 1.0)


def test_a_failing_cup_reader_does_not_lose_the_throw(caplog):
    """The reader failing on the frame before the throw: the throw is still observed, every die
    in the cup counting as seen (as without ``read_spares``), and the failure is logged."""
    cx, cy = G.cup_centre

    def broken(image):
        raise RuntimeError("reader weights missing")
    obs = ThrowObserver(load_profile("nj-13-47"), calibration=CAL, track=False, read_spares=broken)
    obs.on_frame(0.0, frame([(cx, cy)]), WAITING)
    obs.on_frame(0.1, frame([(600, 200)]), IN_MOTION)
    got = obs.observe([reading(600, 200, 3), reading(cx, cy, 4)], 1.0,
                      image=frame([(600, 200), (cx, cy), (cx + 14, cy + 10)]))
    v = decide(got.observations, got.facts, policy=obs.policy)
    assert (v.kind, v.reason.value) == ("boxperson", "die-in-dice-cup")
    assert "reading the dice cup before the throw failed" in caplog.text
