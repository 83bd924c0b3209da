"""Dice offered to a new shooter told from a throw (controller/offer.py), 9 NYCRR 5324.52(i)(3),
(i)(4): the pure rule, the far-wall evidence from the track, the lifecycle's transitions and the
service on synthetic frames. The simulated table end to end: tests/test_dice_offer_sim.py."""
from __future__ import annotations

import numpy as np
import pytest

from camera.calibration import Calibration
from controller import far_wall
from controller.irregularity import observe_throw
from controller.lifecycle import (CLEARING, DECIDED, IN_MOTION, READ_CLEARED, READ_OFFERED, READ_VERDICT,
                                  STEP_READ, STEP_THROW, WAITING, RollLifecycle, SceneDie, within_scene)
from controller.offer import MIN_OFFERED_DICE, NEAR_FAR_WALL_MM, far_wall_approached, judge_offer
from controller.policy import NY_5324
from controller.reasons import Reason
from controller.verdict import DieObservation, ThrowFacts, decide
from simulator.geometry import TableGeometry
from vision.types import DieReading

GEOM = TableGeometry()                      # far wall: the line x = 1100 mm
BAND = np.asarray(GEOM.zones()["far_wall_band"], dtype=np.float64)
WALL = far_wall.wall_of(BAND, np.asarray(GEOM.zones()["playing"], dtype=np.float64))


def die(value, x, y=100.0):
    return DieReading(value=value, bbox=(int(x) - 9, int(y) - 9, int(x) + 9, int(y) + 9), centre=(float(x), float(y)),
                      confidence=0.97, flat=True, side_px=18.0)


def offered_set(n=5, zone="playing"):
    """``n`` dice side by side, 30 px apart."""
    return [DieObservation(die(1 + k % 6, 100 + 30 * k), zone=zone) for k in range(n)]


QUIET = ThrowFacts(far_wall_approached=False)


# --- the rule ---------------------------------------------------------------------------------

def test_five_dice_nowhere_near_the_far_wall_for_a_new_shooter_are_an_offer():
    found = judge_offer(offered_set(5), QUIET, awaiting_new_shooter=True)
    assert (found.offered, found.dice) == (True, 5)
    assert "(i)(3)" in found.why
    # six dice too ("five or more"); the dice cup may hold dice meanwhile
    cup = [DieObservation(die(6, 500), zone="dice_cup")]
    assert judge_offer(offered_set(6) + cup, QUIET, awaiting_new_shooter=True).offered is True


@pytest.mark.parametrize("obs, facts, awaiting, why", [
    (offered_set(5), QUIET, False, "already rolled"),                        # mid-shooter
    (offered_set(3), QUIET, True, "3 dice on the layout"),                   # a foreign third die
    (offered_set(4), QUIET, True, "4 dice on the layout"),
    (offered_set(5), ThrowFacts(far_wall_approached=True), True, "near the far wall"),   # thrown
    (offered_set(5), ThrowFacts(), True, "not tracked"),                     # no evidence
    (offered_set(5), ThrowFacts(timed_out=True, far_wall_approached=False), True, "in time"),
    (offered_set(5) + [DieObservation(die(2, 400), zone="rail")], QUIET, True, "a die in rail"),
    (offered_set(5) + [DieObservation(die(2, 400), zone="chip_bank")], QUIET, True, "a die in chip_bank"),
])
def test_not_an_offer_stays_extra_dice(obs, facts, awaiting, why):
    found = judge_offer(obs, facts, awaiting_new_shooter=awaiting)
    assert found.offered is False and why in found.why
    if not facts.timed_out:
        v = decide(obs, facts, policy=NY_5324)
        assert (v.kind, v.reason) == ("boxperson", Reason.EXTRA_DICE)


def test_min_offered_dice_is_the_regulations_five():
    assert MIN_OFFERED_DICE == 5


def test_far_wall_approached_by_points_and_sensor():
    near_cup = [(0.1 * k, 550.0 - 30.0 * k, 420.0 - 10.0 * k) for k in range(12)]    # cup -> shooter's end
    assert far_wall_approached(near_cup, WALL) is False
    assert far_wall_approached(None, WALL) is None                    # not tracked
    assert far_wall_approached([], WALL) is None
    assert far_wall_approached(near_cup, None) is None                # no band calibrated
    x_near = 1100.0 - NEAR_FAR_WALL_MM + 1.0
    assert far_wall_approached(near_cup + [(1.3, x_near, 300.0)], WALL) is True
    assert far_wall_approached(near_cup + [(1.3, 1100.0 - NEAR_FAR_WALL_MM - 1.0, 300.0)], WALL) is False
    assert far_wall_approached(near_cup + [(1.3, 1130.0, 300.0)], WALL) is True     # beyond the line
    # a sensor strike during the motion is a throw; one before it is not this motion's
    assert far_wall_approached(near_cup, WALL, strikes=[0.5], window=(0.0, 1.2)) is True
    assert far_wall_approached(near_cup, WALL, strikes=[-3.0], window=(0.0, 1.2)) is False
    assert far_wall_approached(None, WALL, strikes=[0.5], window=(0.0, 1.2)) is True


# --- the evidence from observe_throw -----------------------------------------------------------

OFF = np.array([90.0, 80.0])
CAL = Calibration.from_homography(np.array([[1.0, 0.0, -OFF[0]], [0.0, 1.0, -OFF[1]], [0.0, 0.0, 1.0]]),
                                  GEOM.zones(), camera_height_mm=1800.0)


def felt_die(value, x_mm, y_mm):
    cx, cy = np.array([x_mm, y_mm]) + OFF
    return DieReading(value=value, bbox=(int(cx) - 9, int(cy) - 9, int(cx) + 9, int(cy) + 9),
                      centre=(float(cx), float(cy)), confidence=0.97, flat=True, side_px=19.0)


FIVE = [felt_die(v, 150.0 + 26.0 * k, 300.0) for k, v in enumerate((3, 4, 5, 2, 6))]


def slide(x0, y0, x1, y1, n=30, dt=1 / 60):
    return [(k * dt, x0 + (x1 - x0) * k / (n - 1), y0 + (y1 - y0) * k / (n - 1)) for k in range(n)]


def test_observe_throw_tells_the_slide_from_a_throw_that_struck_the_far_wall():
    slid = [slide(560.0, 430.0, 180.0, 300.0), slide(600.0, 430.0, 230.0, 300.0)]
    observed = observe_throw(FIVE, calibration=CAL, track=slid, track_seen=[p for t in slid for p in t])
    assert observed.facts.far_wall_approached is False
    assert judge_offer(observed.observations, observed.facts, awaiting_new_shooter=True).offered is True
    # the same dice at rest after a throw whose two tracked dice struck the far wall
    thrown = [slide(60.0, 280.0, 1090.0, 260.0, n=15) + slide(1090.0, 260.0, 180.0, 300.0, n=15)[1:],
              slide(60.0, 300.0, 1085.0, 330.0, n=15) + slide(1085.0, 330.0, 230.0, 300.0, n=15)[1:]]
    observed = observe_throw(FIVE, calibration=CAL, track=thrown)
    assert observed.facts.far_wall_approached is True
    assert judge_offer(observed.observations, observed.facts, awaiting_new_shooter=True).offered is False
    v = decide(observed.observations, observed.facts, policy=NY_5324)
    assert (v.kind, v.reason) == ("boxperson", Reason.EXTRA_DICE)
    # a third component the two tracks did not follow went to the far wall: a throw too
    observed = observe_throw(FIVE, calibration=CAL, track=slid,
                             track_seen=[p for t in slid for p in t] + [(0.2, 1080.0, 200.0)])
    assert observed.facts.far_wall_approached is True
    # not tracked: unknown, decided as a throw
    assert observe_throw(FIVE, calibration=CAL).facts.far_wall_approached is None


# --- the lifecycle ----------------------------------------------------------------------------

def scene(*dice):
    return tuple(SceneDie(v, x, y) for v, x, y in dice)


OFFER = scene((3, 100, 300), (4, 126, 300), (5, 152, 300), (2, 178, 300), (6, 204, 300))


def rest(lc, t, frames=3):
    """Still frames until the lifecycle asks for a read; the time after them."""
    for _ in range(frames):
        step = lc.on_frame(t, False)
        t += 0.1
    assert step.kind == STEP_READ
    return t


def test_lifecycle_offer_then_selection_then_ordinary_throw():
    lc = RollLifecycle(still_frames=3, rest_timeout_s=5.0)
    rest(lc, 0.0)
    assert lc.on_read(()) == "settled" and lc.phase == WAITING
    assert lc.on_frame(1.0, True).kind == STEP_THROW and lc.phase == IN_MOTION   # the stick's push
    t = rest(lc, 1.1)
    assert lc.on_read(OFFER, offer=True) == READ_OFFERED
    assert lc.phase == DECIDED and lc.offer_on_table
    # the shooter takes two dice: the other three where they were
    assert lc.on_frame(t, True).kind == "none" and lc.phase == CLEARING
    t = rest(lc, t + 0.1)
    assert lc.on_read(OFFER[2:]) == READ_OFFERED and lc.phase == DECIDED
    # the three pushed back into the cup: an empty table
    lc.on_frame(t, True)
    t = rest(lc, t + 0.1)
    assert lc.on_read(()) == READ_CLEARED and lc.phase == WAITING and not lc.offer_on_table
    # the shooter's throw is an ordinary throw
    assert lc.on_frame(t, True).kind == STEP_THROW
    t = rest(lc, t + 0.1)
    assert lc.on_read(scene((3, 600, 200), (5, 650, 260))) == READ_VERDICT and lc.phase == DECIDED


def test_lifecycle_without_the_offer_flag_or_armed_is_a_verdict():
    lc = RollLifecycle(still_frames=3)
    rest(lc, 0.0)
    lc.on_read(())
    lc.on_frame(1.0, True)
    rest(lc, 1.1)
    assert lc.on_read(OFFER) == READ_VERDICT and not lc.offer_on_table
    # an armed motion (a rig's shaker) is always a throw, whatever the caller says
    lc.arm()
    lc.on_frame(3.0, True)
    assert lc.phase == IN_MOTION and lc.armed_throw
    rest(lc, 3.1)
    assert lc.on_read(OFFER, offer=True) == READ_VERDICT and not lc.armed_throw and not lc.offer_on_table


def test_lifecycle_dice_after_an_offer_that_are_not_the_offered_ones_are_a_throw():
    lc = RollLifecycle(still_frames=3)
    rest(lc, 0.0)
    lc.on_read(())
    lc.on_frame(1.0, True)
    t = rest(lc, 1.1)
    assert lc.on_read(OFFER, offer=True) == READ_OFFERED
    lc.on_frame(t, True)
    t = rest(lc, t + 0.1)
    # two thrown dice beside three offered ones left on the layout: a throw (its verdict says
    # extra dice); an offer flag from a clearing rest is not taken (no track there)
    assert lc.on_read(OFFER[2:] + scene((1, 700, 200), (2, 760, 240)), offer=True) == READ_VERDICT
    assert not lc.offer_on_table


def test_within_scene():
    assert within_scene(OFFER[1:4], OFFER, 5.0) and within_scene((), OFFER, 5.0)
    assert not within_scene(scene((3, 100, 330)), OFFER, 5.0)          # moved 30 px
    assert not within_scene(scene((6, 100, 300)), OFFER, 5.0)          # another face
    assert not within_scene(OFFER + scene((1, 0, 0)), OFFER, 5.0)


# --- the service on synthetic frames ----------------------------------------------------------

def _service(tmp_path, reader, observe):
    """A table service on no source (frames pushed by the test), ``reader`` and ``observe``
    given: ``(service, publisher)``."""
    from controller.config import TableConfig
    from controller.lamps import NullLampDriver
    from controller.service_cli import build_service

    cfg = TableConfig.model_validate({
        "table": {"id": "t-offer"}, "vision": {"still_frames": 5, "still_s": 0.0, "rest_timeout_s": 3.0},
        "lamps": {"driver": "none"}, "state": {"db": str(tmp_path / "state.sqlite")},
        "bus": {"journal_path": str(tmp_path / "bus" / "journal.sqlite")}})
    from list_publisher import ListPublisher

    pub = ListPublisher()
    service, _ = build_service(cfg, source=None, publisher=pub, lamp_driver=NullLampDriver(), reader=reader)
    service.observe = observe
    return service, pub


def test_service_offer_gives_no_verdict_and_the_throw_after_it_a_roll(tmp_path):
    """The stick's push of five dice, at rest, picked up / returned to the cup, then a throw:
    no verdict for the offer and a roll for the throw; the same five dice pushed after the
    shooter has rolled are extra-dice (the boxperson)."""
    import cv2

    from camera.base import Frame

    def image(dice):
        img = np.full((240, 320, 3), 60, np.uint8)
        for v, x, y in dice:
            img[y - 8:y + 8, x - 8:x + 8] = 150 + 15 * v
        return img

    def reader(img):
        grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        n, labels, st, c = cv2.connectedComponentsWithStats((grey > 140).astype(np.uint8))
        return [DieReading(value=int(round((float(grey[labels == i].mean()) - 150) / 15)),
                           bbox=(st[i][0], st[i][1], st[i][0] + st[i][2], st[i][1] + st[i][3]),
                           centre=(float(c[i][0]), float(c[i][1])), confidence=0.99, flat=True,
                           side_px=16.0) for i in range(1, n)]

    approached = {"now": False}

    def observe(readings, frame):   # x > 280: the dice cup; the track's answer set by the test
        obs = [DieObservation(r, zone="dice_cup" if r.centre[0] > 280 else "playing") for r in readings]
        return obs, ThrowFacts(far_wall_approached=approached["now"])

    service, pub = _service(tmp_path, reader, observe)
    clock = {"t": 0.0, "i": 0}

    def show(dice, n=1):
        out = []
        for _ in range(n):
            b = service.process(Frame(image(dice), clock["t"], clock["i"]))
            clock["t"] += 1 / 30
            clock["i"] += 1
            if b is not None:
                out.append(b)
        return out

    five = [(3, 40, 60), (4, 70, 60), (5, 100, 60), (2, 130, 60), (6, 160, 60)]
    service.start()
    out = show([], 10)
    for k in range(6, 0, -1):                            # the push from the cup side
        out += show([(v, x + 15 * k, y + 10 * k) for v, x, y in five])
    out += show(five, 12)                               # at rest before the shooter
    assert out == [] and service.stats.offers == 1
    out += show(five[2:], 8)                            # two selected: three left
    out += show([(5, 300, 60), (2, 300, 100), (6, 300, 140)], 10)   # three in the cup
    throw = [(6, 120, 150), (1, 200, 160)]
    for k in range(6, 0, -1):
        out += show([(v, x - 6 * k, y) for v, x, y in throw] + [(5, 300, 60), (2, 300, 100), (6, 300, 140)])
    out += show(throw + [(5, 300, 60), (2, 300, 100), (6, 300, 140)], 10)
    assert [(b["verdict"], b["dice"], b["game"]["outcome"]) for b in out] == [("roll", [6, 1], "natural")]
    assert service.stats.offers == 1 and service.lifecycle.phase == DECIDED
    # the shooter has rolled: five dice pushed onto the layout now are a throw's extra dice
    out = show([], 10)
    for k in range(6, 0, -1):
        out += show([(v, x + 15 * k, y + 10 * k) for v, x, y in five])
    out += show(five, 12)
    assert [(b["verdict"], b["reason"]) for b in out] == [("boxperson", "extra-dice")]
    assert service.stats.offers == 1
    # a point made: the set is offered to the player left of the shooter, 9 NYCRR 5324.52(i)(2)
    cup = [(5, 300, 60), (2, 300, 100), (6, 300, 140)]

    def throw_of(dice):
        got = show([], 10)
        for k in range(6, 0, -1):
            got += show([(v, x - 6 * k, y) for v, x, y in dice] + cup)
        return got + show(dice + cup, 10)

    out = throw_of([(1, 120, 150), (3, 200, 160)]) + throw_of([(2, 120, 150), (2, 200, 160)])
    assert [(b["dice"], b["game"]["outcome"]) for b in out] == [([1, 3], "point-set"), ([2, 2], "point-made")]
    out = show([], 10)
    for k in range(6, 0, -1):
        out += show([(v, x + 15 * k, y + 10 * k) for v, x, y in five])
    out += show(five, 12)
    assert out == [] and service.stats.offers == 2
    service.close()


def test_service_offer_needs_the_motion_away_from_the_far_wall(tmp_path):
    """The same five dice at rest for a new shooter after a motion that came near the far
    wall: extra-dice, a boxperson call, and the game does not move."""
    from camera.base import Frame

    readings = [die(v, 40 + 30 * k, 60) for k, v in enumerate((3, 4, 5, 2, 6))]

    def reader(img):
        return readings if img.mean() > 61 else []

    def observe(rs, frame):
        return [DieObservation(r) for r in rs], ThrowFacts(far_wall_approached=True, struck_far_wall=True)

    service, pub = _service(tmp_path, reader, observe)
    service.start()
    frames = ([np.full((120, 160, 3), 60, np.uint8)] * 8
              + [np.full((120, 160, 3), 60 + 20 * (k % 2 + 1), np.uint8) for k in range(4)]
              + [np.full((120, 160, 3), 80, np.uint8)] * 8)
    out = [b for i, img in enumerate(frames) if (b := service.process(Frame(img, i / 30, i)))]
    assert [(b["verdict"], b["reason"]) for b in out] == [("boxperson", "extra-dice")]
    assert service.stats.offers == 0 and service.store.state.shooter_roll == 0
    service.close()
