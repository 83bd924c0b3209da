"""Irregularity detectors (controller/irregularity.py) on synthetic readings: exact verdicts and reasons."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from camera.calibration import Calibration
from controller import far_wall
from controller.irregularity import TableObject, Tolerances, judge, observe_throw, opposite_face
from controller.irregularity_profile import load_profile
from controller.reasons import Reason
from simulator.geometry import TableGeometry
from vision.types import DieReading

GEOM = TableGeometry()
OFF = np.array([90.0, 80.0])  # pixel of table mm (0, 0)
H = np.array([[1.0, 0.0, -OFF[0]], [0.0, 1.0, -OFF[1]], [0.0, 0.0, 1.0]])  # 1 px = 1 mm
CAL = Calibration.from_homography(H, GEOM.zones(), camera_height_mm=1800.0)
SIDE = CAL.die_side_px((550.0, 280.0))  # ~19.25 px
CHIPS = (TableObject(330.0, 70.0, 19.5, 9.9), TableObject(300.0, 500.0, 19.5, 33.0))


def die(x_mm, y_mm, value, *, flat=True, conf=0.97, side=None):
    """A reading centred over table point (x, y) mm (the top face of a die on the felt)."""
    n = np.array([550.0, 280.0])
    p = n + (np.array([x_mm, y_mm]) - n) * 1800.0 / (1800.0 - 19.05)  # parallax of the top face
    cx, cy = p + OFF
    s = SIDE if side is None else side
    return DieReading(value=value, bbox=(int(cx - s / 2), int(cy - s / 2), int(cx + s / 2), int(cy + s / 2)),
                      centre=(float(cx), float(cy)), confidence=conf, flat=flat, side_px=float(s))


def tilted(r: DieReading, p_face: float, p_tilt: float) -> DieReading:
    """``r`` with the face classifier's P(flat) ``p_face`` (its ``flat``) and the tilt
    classifier's ``p_tilt``."""
    return dataclasses.replace(r, flat=p_face >= 0.5, extra={**r.extra, "p_flat": p_face, "p_flat_tilt": p_tilt})


def verdict(readings, profile="ny-5324", **kw):
    v, obs = judge(readings, calibration=CAL, profile=load_profile(profile), objects=CHIPS, **kw)
    return v.kind, (None if v.reason is None else v.reason.value), v.dice


def test_opposite_faces():
    assert [opposite_face(v) for v in range(1, 7)] == [6, 5, 4, 3, 2, 1]
    with pytest.raises(ValueError, match="1..6"):
        opposite_face(7)


def test_clean_throw_is_a_roll():
    assert verdict([die(600, 200, 3), die(700, 300, 4)]) == ("roll", None, (3, 4))


def test_both_dice_off_table():
    assert verdict([]) == ("no-roll", "dice-off-table", None)


def test_one_die_off_table():
    assert verdict([die(600, 200, 3)]) == ("no-roll", "die-off-table", None)


def test_die_seen_outside_every_zone_is_outside_area():
    assert verdict([die(600, 200, 3), die(600, -150, 2)]) == ("no-roll", "die-outside-area", None)


def test_die_in_chip_bank():
    x0, y0, x1, y1 = GEOM.bank_rect
    assert verdict([die(600, 300, 3), die((x0 + x1) / 2, (y0 + y1) / 2, 5)]) == ("no-roll", "die-in-chip-bank", None)
    # NJ: the boxperson rules on it
    assert verdict([die(600, 300, 3), die((x0 + x1) / 2, (y0 + y1) / 2, 5)], "nj-13-47") == \
        ("boxperson", "die-in-chip-bank", None)


def test_die_in_dice_cup():
    cx, cy = GEOM.cup_centre
    assert verdict([die(600, 200, 3), die(cx, cy, 1)]) == ("no-roll", "die-in-dice-cup", None)


def test_die_on_rail_found_from_its_height():
    """A die on the near rail (top 219 mm up) is seen far outside the rail from above; its size
    says how high it is, and the parallax-corrected centre is on the rail."""
    n = np.array([550.0, 280.0])
    true = np.array([400.0, -25.0])
    h = GEOM.wall_height + 19.05
    p = n + (true - n) * 1800.0 / (1800.0 - h)
    side = SIDE * (1800.0 - 19.05) / (1800.0 - h)
    r = DieReading(value=4, bbox=(0, 0, 1, 1), centre=(float(p[0] + OFF[0]), float(p[1] + OFF[1])),
                   confidence=0.95, flat=True, side_px=float(side))
    assert verdict([die(600, 200, 3), r]) == ("no-roll", "die-on-rail", None)


def test_die_on_rail_seen_at_felt_size_is_on_the_rail():
    """The same die on the near rail, its apparent size no larger than a die on the felt (the
    reader's box is a coarse height gauge): seen beyond the rails at felt height, at the rail's
    own height it lies on the rail. Under N.J.A.C. 13:47 the boxperson rules on a die on the
    rail; a die outside every zone would be a no roll."""
    n = np.array([550.0, 280.0])
    true = np.array([400.0, -25.0])
    p = n + (true - n) * 1800.0 / (1800.0 - (GEOM.wall_height + 19.05))
    r = DieReading(value=4, bbox=(0, 0, 1, 1), centre=(float(p[0] + OFF[0]), float(p[1] + OFF[1])),
                   confidence=0.95, flat=True, side_px=float(SIDE))
    assert verdict([die(600, 200, 3), r]) == ("no-roll", "die-on-rail", None)
    assert verdict([die(600, 200, 3), r], "nj-13-47") == ("boxperson", "die-on-rail", None)
    # seen clearly smaller than a die on the felt, it lies below the felt: off the table
    small = DieReading(value=4, bbox=(0, 0, 1, 1), centre=r.centre, confidence=0.95, flat=True,
                       side_px=float(SIDE * 0.8))
    assert verdict([die(600, 200, 3), small], "nj-13-47") == ("no-roll", "die-outside-area", None)


def test_barely_flat_die_beside_a_wall_goes_to_the_boxperson():
    """A die the reader calls flat with P(flat) 0.55, against the rail's wall: it may be leaning
    on the wall, so which face is uppermost is in dispute, 9 NYCRR 5324.52(h)(1)(ii). The same
    die read sure of being flat, or as unsure in open felt or beside the other die (not a wall),
    is a roll."""
    from dataclasses import replace

    def p_flat(r, p):
        return replace(r, extra={**r.extra, "p_flat": p})

    at_wall = die(12, 300, 4)
    assert verdict([die(700, 300, 3), p_flat(at_wall, 0.55)]) == ("boxperson", "face-unreadable", None)
    assert verdict([die(700, 300, 3), p_flat(at_wall, 0.55)], "nj-13-47") == ("boxperson", "face-unreadable", None)
    assert verdict([die(700, 300, 3), p_flat(at_wall, 0.9)]) == ("roll", None, (4, 3))
    assert verdict([die(700, 300, 3), p_flat(die(600, 200, 4), 0.55)]) == ("roll", None, (4, 3))
    assert verdict([die(700, 300, 3), p_flat(die(700 + 21, 300, 4), 0.55)]) == ("roll", None, (3, 4))
    # house practice reads a cocked die as seen
    assert verdict([die(700, 300, 3), p_flat(at_wall, 0.55)], "house-practice") == ("roll", None, (4, 3))
    v, obs = judge([die(700, 300, 3), p_flat(at_wall, 0.55)], calibration=CAL, profile=load_profile("ny-5324"),
                   objects=CHIPS)
    assert obs.observations[1].reading.extra["seen_value"] == 4
    assert any("P(flat) 0.55) beside rail" in n for n in obs.notes)


def test_die_read_flat_off_the_wall_needs_to_be_surer_of_it():
    """A die leaning 45 degrees on the rail's wall shows two faces spanning 1.41 sides out from
    it; read "flat", its centre lies 0.7-1.0 side out. A flat die touching the wall has its
    centre within half a diagonal (0.71 side) of it. So a die read flat 16 mm (0.84 side) out
    needs P(flat) 0.85 (``sure_flat_off_wall``; 0.7 from the sixteenth to the twenty-third
    session, when dice leaning ~40 degrees on the rail's wall read 0.75-0.79 were published), one
    12 mm out (touching, if flat) 0.6 as before: below, which face is uppermost is in dispute,
    9 NYCRR 5324.52(h)(1)(ii)."""
    from dataclasses import replace

    def p_flat(r, p):
        return replace(r, extra={**r.extra, "p_flat": p})

    other = die(700, 300, 3)
    assert verdict([other, p_flat(die(16, 300, 4), 0.65)]) == ("boxperson", "face-unreadable", None)
    assert verdict([other, p_flat(die(16, 300, 4), 0.79)]) == ("boxperson", "face-unreadable", None)
    assert verdict([other, p_flat(die(16, 300, 4), 0.9)]) == ("roll", None, (4, 3))
    assert verdict([other, p_flat(die(16, 300, 4), 0.79)], tolerances=Tolerances(sure_flat_off_wall=0.7)) == \
        ("roll", None, (4, 3))
    assert verdict([other, p_flat(die(12, 300, 4), 0.65)]) == ("roll", None, (4, 3))
    # beyond lean_contact (1.1 sides) a die leans on nothing
    assert verdict([other, p_flat(die(30, 300, 4), 0.65)]) == ("roll", None, (4, 3))
    # house practice reads a cocked die as seen
    assert verdict([other, p_flat(die(16, 300, 4), 0.65)], "house-practice") == ("roll", None, (4, 3))
    # the chip bank is left out: 16 mm off its inner side, read at P(flat) 0.65, a roll
    x0, y0, x1, y1 = GEOM.bank_rect
    assert verdict([other, p_flat(die((x0 + x1) / 2, y1 + 16, 4), 0.65)]) == ("roll", None, (4, 3))
    assert verdict([other, p_flat(die((x0 + x1) / 2, y1 + 16, 4), 0.55)]) == ("boxperson", "face-unreadable", None)


def test_die_read_flat_standing_out_from_the_other_die_needs_to_be_surer_of_it():
    """The other die, lying flat, is a wall as high as a die: one leaning 45 degrees on it is
    read "flat" 1.2-1.5 sides from its centre (simulated camera), where two flat dice that
    touch are 1.0-1.2 apart. A die read flat 25 mm (1.31 sides) from the other needs P(flat)
    0.85 (``sure_flat_off_wall``), as off a wall; 21 mm (1.1 sides) away it is a die touching the other, as before.
    Below, which face is uppermost is in dispute, 9 NYCRR 5324.52(h)(1)(ii)."""
    from dataclasses import replace

    def p_flat(r, p):
        return replace(r, extra={**r.extra, "p_flat": p})

    assert verdict([die(700, 300, 3), p_flat(die(725, 300, 4), 0.65)]) == ("boxperson", "face-unreadable", None)
    assert verdict([die(700, 300, 3), p_flat(die(725, 300, 4), 0.8)]) == ("boxperson", "face-unreadable", None)
    assert verdict([die(700, 300, 3), p_flat(die(725, 300, 4), 0.9)]) == ("roll", None, (3, 4))
    assert verdict([die(700, 300, 3), p_flat(die(721, 300, 4), 0.65)]) == ("roll", None, (3, 4))
    # the other die not read flat leans on this one, not this on it (a dispute of its own)
    assert verdict([die(700, 300, 3, flat=False), p_flat(die(725, 300, 4), 0.65)])[:2] == \
        ("boxperson", "face-unreadable")
    # house practice reads a cocked die as seen
    assert verdict([die(700, 300, 3), p_flat(die(725, 300, 4), 0.65)], "house-practice") == ("roll", None, (3, 4))


def test_barely_flat_die_wedged_between_two_stacks_goes_to_the_boxperson():
    """A die read flat with P(flat) 0.65 between two 5-chip stacks, touching both: it may rest
    cocked on both (more than one side resting voids the roll, 9 NYCRR 5324.52(h)(1)(i)), so
    which face is uppermost is in dispute ((h)(1)(ii)). Read surely flat (``sure_flat_wedged``
    0.7; 0.8 before the seventeenth session), or beside one stack only, it is a roll."""
    from dataclasses import replace

    stacks = (TableObject(490.0, 300.0, 19.5, 16.5), TableObject(550.0, 300.0, 19.5, 16.5))

    def read(r, p, profile="ny-5324"):
        v, _ = judge([die(800, 200, 3), replace(r, extra={**r.extra, "p_flat": p})], calibration=CAL,
                     profile=load_profile(profile), objects=stacks)
        return v.kind, (None if v.reason is None else v.reason.value), v.dice

    assert read(die(520, 300, 4), 0.65) == ("boxperson", "face-unreadable", None)
    # house practice reads a cocked die as seen, but a die on two objects is void there too
    assert read(die(520, 300, 4), 0.65, "house-practice") == ("boxperson", "face-unreadable", None)
    assert read(die(520, 300, 4), 0.9, "house-practice") == ("roll", None, (4, 3))
    assert read(die(520, 300, 4), 0.9) == ("roll", None, (4, 3))
    assert read(die(520, 300, 4), 0.75) == ("roll", None, (4, 3))
    assert read(die(520, 330, 4), 0.65) == ("roll", None, (4, 3))   # clear of both stacks
    assert read(die(460, 300, 4), 0.65) == ("roll", None, (4, 3))   # beside one stack only
    # the old tolerance: 0.75 was in dispute
    v, _ = judge([die(800, 200, 3), replace(die(520, 300, 4), extra={"p_flat": 0.75})], calibration=CAL,
                 profile=load_profile("ny-5324"), objects=stacks, tolerances=Tolerances(sure_flat_wedged=0.8))
    assert (v.kind, v.reason) == ("boxperson", Reason.FACE_UNREADABLE)


def test_two_dice_touching_are_not_stacked():
    assert verdict([die(600, 200, 3), die(600 + 19.5, 200, 6)]) == ("roll", None, (3, 6))


def test_die_on_die():
    readings = [die(600, 200, 3), die(608, 205, 6, side=SIDE * 1.01)]
    assert verdict(readings) == ("no-roll", "die-on-die", None)
    assert verdict(readings, "house-practice") == ("roll", None, (3, 6))
    assert verdict(readings, "nj-13-47") == ("boxperson", "die-on-die", None)


def test_a_die_leaning_on_the_side_of_a_flat_die_read_surely_is_not_on_top_of_it():
    """(k)(1) is a die "on top of the other die". A die leaning ~40 degrees on the other die's
    side was placed 0.70-0.80 sides from it on the simulated camera (cocked-on-die seeds
    2100-2299), inside the 0.8 sides that tell a die lying on the other by distance. Both
    flatness estimates call it not flat, and the other die's face is read surely and called
    flat by the tilt classifier: nothing lies on it, so the lean is judged as a cocked die
    (ny-5324: the face opposite the side resting on the other die is in dispute), not voided."""
    flat = tilted(die(600, 200, 3, conf=0.96), 0.33, 0.71)
    leaning = tilted(die(600 + 0.75 * 19.05, 200, 4, conf=0.96), 0.01, 0.0)
    assert verdict([flat, leaning]) == ("boxperson", "face-unreadable", None)
    assert verdict([flat, leaning], "house-practice") == ("roll", None, (3, 4))
    # the other die's face read below 0.9, or called not flat by the tilt classifier: it may be
    # covered by a die on it, so it is a die on the other die, as before
    for other in (tilted(die(600, 200, 3, conf=0.85), 0.33, 0.71), tilted(die(600, 200, 3, conf=0.96), 0.33, 0.3)):
        assert verdict([other, leaning]) == ("no-roll", "die-on-die", None)
    # a die lying flat on the other (no tilt estimate saying otherwise): die on die
    assert verdict([flat, tilted(die(600 + 0.75 * 19.05, 200, 4, conf=0.96), 0.9, 0.95)]) == ("no-roll", "die-on-die", None)


def test_die_on_die_with_lower_die_hidden():
    """One region of 2.9 die areas: the lower die is under the upper one."""
    readings = [die(600, 200, 3, side=SIDE * 1.7)]
    assert verdict(readings) == ("no-roll", "die-on-die", None)
    # house practice reads a die on a die, but the hidden die cannot be read: a person decides
    assert verdict(readings, "house-practice") == ("boxperson", "face-unreadable", None)


def test_cocked_on_chips_counts_the_face_opposite_the_resting_side():
    readings = [die(600, 300, 2), die(345, 70, 5, flat=False)]  # bottom on the red stack
    assert verdict(readings) == ("roll", None, (5, 2))
    obs = observe_throw(readings, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS)
    assert [o.sides_resting for o in obs.observations] == [0, 1]
    assert verdict(readings, "nj-13-47") == ("boxperson", "die-not-flat", None)
    assert verdict(readings, "house-practice") == ("roll", None, (5, 2))


def test_cocked_leaning_on_a_tall_stack_is_a_dispute():
    readings = [die(600, 300, 2), die(300 + 19.5 + 12, 500, 5, flat=False)]  # beside the 10-chip stack
    assert verdict(readings) == ("boxperson", "face-unreadable", None)
    assert verdict(readings, "house-practice") == ("roll", None, (5, 2))


def test_not_flat_on_open_felt_is_a_dispute_unless_told_otherwise():
    readings = [die(600, 300, 2), die(800, 300, 5, flat=False)]
    assert verdict(readings) == ("boxperson", "face-unreadable", None)
    open_felt = Tolerances(open_felt_is_flat=True)
    v, _ = judge(readings, calibration=CAL, profile=load_profile("ny-5324"), tolerances=open_felt)
    assert (v.kind, v.dice) == ("roll", (2, 5))
    v, _ = judge(readings, calibration=CAL, profile=load_profile("nj-13-47"), tolerances=open_felt)
    assert (v.kind, v.dice) == ("roll", (2, 5))


def test_tilt_classifiers_doubt_counts_only_where_an_object_can_hold_the_die_cocked():
    """The reader gives the face classifier's P(flat) (``extra["p_flat"]``, ``flat``) and the tilt
    classifier's (``extra["p_flat_tilt"]``, vision.learned.p_flat_tilt). Beside an object the
    controller takes the lower: beside the 3-chip stack the tilt classifier's "not flat" makes
    the die cocked on it: under nj-13-47 the
    boxperson decides (die-not-flat), under ny-5324 the face opposite the resting side counts.
    On open felt nothing can hold a die cocked: the tilt classifier's lower P(flat) does not count,
    a roll (it was a dispute, face-unreadable, in 3 of 200 natural simulated throws). Touching two
    objects, the tilt classifier alone does not void the roll: a dispute (natural seed 9095, two
    flat dice side by side by the dice cup, was voided)."""
    beside_stack = tilted(die(345, 70, 5), 0.97, 0.1)
    assert verdict([die(600, 300, 2), beside_stack], "nj-13-47") == ("boxperson", "die-not-flat", None)
    assert verdict([die(600, 300, 2), beside_stack]) == ("roll", None, (5, 2))
    open_felt = tilted(die(800, 300, 5), 0.97, 0.1)
    assert verdict([die(600, 300, 2), open_felt], "nj-13-47") == ("roll", None, (2, 5))
    assert verdict([die(600, 300, 2), open_felt]) == ("roll", None, (2, 5))
    obs = observe_throw([die(600, 300, 2), open_felt], calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS)
    assert obs.observations[1].reading.flat is True
    assert obs.observations[1].reading.extra["p_flat"] == 0.97
    # touching two objects (a stack and the rail): both classifiers calling it not flat void the
    # roll, (h)(1)(i); the tilt classifier alone makes it a dispute, (h)(1)(ii)
    objects = CHIPS + (TableObject(200.0, 22.0, 19.5, 6.6),)
    for p_face, want in ((0.3, ("no-roll", Reason.DIE_ON_SEVERAL_OBJECTS)), (0.9, ("boxperson", Reason.FACE_UNREADABLE))):
        v, _ = judge([die(600, 300, 2), tilted(die(205, 10, 4), p_face, 0.05)], calibration=CAL,
                     profile=load_profile("ny-5324"), objects=objects)
        assert (v.kind, v.reason) == want, p_face
    # both classifiers calling it not flat on open felt: a dispute, as before
    both = tilted(die(800, 300, 5), 0.3, 0.1)
    assert verdict([die(600, 300, 2), both]) == ("boxperson", "face-unreadable", None)
    assert verdict([die(600, 300, 2), both], "nj-13-47") == ("boxperson", "die-not-flat", None)


def test_tilt_classifier_decides_beside_stacks_and_the_other_die_and_either_flat_on_open_felt():
    """Beside chip stacks and the other die only (no wall), the tilt classifier's P(flat) is the
    die's, higher or lower than the face classifier's: the face classifier called flat dice
    touching the other die or lying on a chip not flat (simulated camera, seeds 1800-1899: 25
    of 128, 23 of 193), sending the throw to the boxperson. Beside the rail the lower of the two
    stands (both are fooled by a die leaning on a wall). On open felt either calling it flat is
    enough."""
    flat_pair = [die(600, 300, 2), tilted(die(621, 300, 5), 0.35, 0.99)]   # touching, both flat
    assert verdict(flat_pair) == ("roll", None, (2, 5))
    assert verdict(flat_pair, "nj-13-47") == ("roll", None, (2, 5))
    obs = observe_throw(flat_pair, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS)
    assert obs.observations[1].reading.flat is True
    assert obs.observations[1].reading.extra["p_flat"] == 0.99
    assert obs.observations[1].reading.extra["p_flat_face"] == 0.35
    # the old rule (the lower of the two): a die leaning on the other die, a dispute
    old = Tolerances(tilt_decides_off_walls=False)
    assert verdict(flat_pair, tolerances=old) == ("boxperson", "face-unreadable", None)
    # the tilt classifier calling it not flat beside the stack still makes it cocked on it
    assert verdict([die(600, 300, 2), tilted(die(345, 70, 5), 0.97, 0.1)], "nj-13-47") == \
        ("boxperson", "die-not-flat", None)
    # beside the rail (a wall): the lower, the face classifier's 0.35: not flat, leaning on it
    by_rail = [die(600, 300, 2), tilted(die(800, 550, 5), 0.35, 0.99)]
    assert verdict(by_rail) == ("boxperson", "face-unreadable", None)
    # open felt: the tilt classifier's flat is enough; both not flat stays a dispute
    assert verdict([die(600, 300, 2), tilted(die(800, 300, 5), 0.41, 0.99)]) == ("roll", None, (2, 5))
    assert verdict([die(600, 300, 2), tilted(die(800, 300, 5), 0.41, 0.3)]) == ("boxperson", "face-unreadable", None)
    # between two chip stacks alone, the tilt classifier's "not flat" voids the roll (two sides
    # resting, (h)(1)(i)); the old rule made it a dispute (cocked-two-objects: 4 of 100)
    two_stacks = CHIPS + (TableObject(372.0, 70.0, 19.5, 9.9),)
    wedged = [die(600, 300, 2), tilted(die(351, 70, 4), 0.9, 0.05)]
    for tol, want in ((Tolerances(), ("no-roll", Reason.DIE_ON_SEVERAL_OBJECTS)), (old, ("boxperson", Reason.FACE_UNREADABLE))):
        v, _ = judge(wedged, calibration=CAL, profile=load_profile("ny-5324"), objects=two_stacks, tolerances=tol)
        assert (v.kind, v.reason) == want


def test_flat_die_between_the_rail_and_the_other_die_has_no_room_to_be_cocked():
    """A die read flat at P(flat) 0.65 touching the rail and the other die (lying flat 1.1 sides
    out) was "wedged" (below ``sure_flat_wedged``): a dispute. With 1.1 sides of room between
    the rail and the other die it cannot be cocked there (``tilt_room``): a roll (cocked-on-die
    seeds 1800-1999: 12 of 200 throws went to the boxperson). With more room, still a dispute."""
    from dataclasses import replace

    def unsure(r, p):
        return replace(r, extra={**r.extra, "p_flat": p, "p_flat_tilt": p})

    pair = [unsure(die(800, 550.5, 4), 0.65), die(800, 529.4, 5)]
    assert verdict(pair) == ("roll", None, (4, 5))
    assert verdict(pair, tolerances=Tolerances(tilt_room=0.0)) == ("boxperson", "face-unreadable", None)
    # the other die 1.34 sides out from the rail's die: as much room, a die tilted 20 degrees fits
    wide = [unsure(die(800, 550.5, 4), 0.65), die(800, 525.0, 5)]
    assert verdict(wide) == ("boxperson", "face-unreadable", None)


def test_cocked_on_chips_and_against_the_rail_is_void():
    objects = CHIPS + (TableObject(200.0, 22.0, 19.5, 6.6),)
    readings = [die(600, 300, 2), die(205, 10, 4, flat=False)]
    v, _ = judge(readings, calibration=CAL, profile=load_profile("ny-5324"), objects=objects)
    assert (v.kind, v.reason) == ("no-roll", Reason.DIE_ON_SEVERAL_OBJECTS)
    v, _ = judge(readings, calibration=CAL, profile=load_profile("house-practice"), objects=objects)
    assert (v.kind, v.reason) == ("no-roll", Reason.DIE_ON_SEVERAL_OBJECTS)


def test_unsure_face_goes_to_the_boxperson():
    assert verdict([die(600, 200, 3, conf=0.5), die(700, 300, 4)]) == ("boxperson", "face-unreadable", None)
    assert verdict([die(600, 200, None, conf=0.6), die(700, 300, 4)]) == ("boxperson", "face-unreadable", None)


def test_non_die_blob_is_dropped():
    assert verdict([die(600, 200, 3), die(700, 300, 4), die(800, 100, None, conf=0.1)]) == ("roll", None, (3, 4))


def test_far_wall_from_track():
    band_x = GEOM.length - 20
    both = [[(0.0, 100.0, 200.0), (0.2, band_x, 250.0)], [(0.0, 100.0, 220.0), (0.2, band_x, 300.0)]]
    short = [[(0.0, 100.0, 200.0), (0.2, band_x, 250.0)], [(0.0, 100.0, 220.0), (0.2, 700.0, 300.0)]]
    dice = [die(600, 200, 3), die(700, 300, 4)]
    assert verdict(dice, track=both) == ("roll", None, (3, 4))
    assert verdict(dice, track=short) == ("no-roll", "far-wall-missed", None)
    assert verdict(dice, "nj-13-47", track=short) == ("roll", None, (3, 4))
    assert verdict(dice, "ny-4620", track=short) == ("roll", None, (3, 4))
    # one die tracked only: the track cannot tell
    assert verdict(dice, track=short[:1]) == ("roll", None, (3, 4))


def test_far_wall_from_sensor():
    dice = [die(600, 200, 3), die(700, 300, 4)]
    assert verdict(dice, wall_strikes=[], window=(0.0, 3.0)) == ("no-roll", "far-wall-missed", None)
    assert verdict(dice, wall_strikes=[5.0], window=(0.0, 3.0)) == ("no-roll", "far-wall-missed", None)
    assert verdict(dice, wall_strikes=[0.5, 0.52], window=(0.0, 3.0)) == ("roll", None, (3, 4))
    # two pulses of one impact are one strike; the track then decides
    short = [[(0.0, 100.0, 200.0), (0.2, 1090.0, 250.0)], [(0.0, 100.0, 220.0), (0.2, 700.0, 300.0)]]
    assert verdict(dice, wall_strikes=[0.5, 0.501], window=(0.0, 3.0), track=short) == \
        ("no-roll", "far-wall-missed", None)
    # the sensor saying "no strike" wins over a track
    both = [[(0.0, 1090.0, 200.0)], [(0.0, 1090.0, 220.0)]]
    assert verdict(dice, wall_strikes=[], track=both) == ("no-roll", "far-wall-missed", None)


def test_without_calibration_everything_is_in_play():
    v, obs = judge([die(600, 200, 3), die(700, 300, 4)])
    assert (v.kind, v.dice) == ("roll", (3, 4))
    assert obs.positions_mm == (None, None)
    v, _ = judge([die(600, 200, 3), die(605, 204, 4)])
    assert (v.kind, v.reason) == ("no-roll", Reason.DIE_ON_DIE)


def test_tolerances_are_parameters():
    readings = [die(600, 200, 3), die(600 + 16, 200, 6)]
    assert verdict(readings) == ("roll", None, (3, 6))
    v, _ = judge(readings, calibration=CAL, tolerances=Tolerances(on_die_ratio=0.9))
    assert v.reason is Reason.DIE_ON_DIE


def test_far_wall_strike_between_frames_is_found_from_the_bounce():
    """At 5 m/s a die crosses the 50 mm band between two 60 Hz frames: the turning point of the
    track (incoming and outgoing lines meeting) is at the wall."""
    L = GEOM.length
    dt = 1 / 60
    fast = [(0.0, L - 150.0, 200.0), (dt, L - 67.0, 200.0), (2 * dt, L - 95.0, 201.0), (3 * dt, L - 160.0, 202.0)]
    other = [(0.0, L - 150.0, 300.0), (dt, L - 30.0, 300.0)]
    dice = [die(600, 200, 3), die(700, 300, 4)]
    assert verdict(dice, track=[fast, other]) == ("roll", None, (3, 4))
    # bounced off something mid-table: the turn is far from the wall
    mid = [(0.0, 400.0, 200.0), (dt, 480.0, 200.0), (2 * dt, 470.0, 200.0), (3 * dt, 400.0, 200.0)]
    assert verdict(dice, track=[mid, other]) == ("no-roll", "far-wall-missed", None)


def test_die_on_rail_from_calibrated_zone_heights():
    """With the rail height in the calibration (camera/calibration.py zone_heights_mm) the die on
    the rail is placed there even when its apparent size says nothing."""
    cal = Calibration.from_homography(H, GEOM.zones(), camera_height_mm=1800.0,
                                      camera_nadir_mm=(550.0, 280.0), zone_heights_mm={"rails": GEOM.wall_height})
    n = np.array([550.0, 280.0])
    p = n + (np.array([700.0, 585.0]) - n) * 1800.0 / (1800.0 - GEOM.wall_height - 19.05)
    r = DieReading(value=2, bbox=(0, 0, 1, 1), centre=(float(p[0] + OFF[0]), float(p[1] + OFF[1])),
                   confidence=0.95, flat=True, side_px=SIDE)
    v, obs = judge([die(600, 200, 3), r], calibration=cal, profile=load_profile("ny-5324"))
    assert (v.kind, v.reason) == ("no-roll", Reason.DIE_ON_RAIL)
    assert obs.positions_mm[1] == pytest.approx((700.0, 585.0), abs=0.5)


def test_die_the_track_saw_settle_is_not_off_table():
    """Two dice touching read as one: the track saw both settle on the felt, so neither left the
    table; the unread die is in dispute. A die whose track flew out fast did leave."""
    dt = 1 / 60
    wall = [(-0.2, 1080.0, 300.0)]  # both struck the far wall first
    settle_a = wall + [(k * dt, 500.0 + 3 * max(0, 10 - k), 300.0) for k in range(12)]
    settle_b = wall + [(k * dt, 520.0 + 3 * max(0, 10 - k), 300.0) for k in range(12)]
    flying = wall + [(k * dt, 500.0 - 80 * k, 300.0) for k in range(7)]
    one = [die(510, 300, 4)]
    assert verdict(one, track=[settle_a, settle_b]) == ("boxperson", "face-unreadable", None)
    assert verdict(one, track=[settle_a, flying]) == ("no-roll", "die-off-table", None)
    assert verdict([], track=[settle_a, settle_b]) == ("boxperson", "face-unreadable", None)


def test_far_wall_reach_narrows_the_band():
    """A die that stopped 30 mm from the wall entered the 50 mm band without touching the wall
    (its centre must come within rubber + half diagonal, 23.5 mm, to touch it)."""
    L = GEOM.length
    stopped = [[(0.0, 500.0, 200.0), (0.5, L - 30.0, 200.0)], [(0.0, 500.0, 300.0), (0.4, L - 12.0, 300.0)]]
    dice = [die(600, 200, 3), die(700, 300, 4)]
    assert verdict(dice, track=stopped) == ("roll", None, (3, 4))
    reach = Tolerances(far_wall_reach_mm=10.0 + 19.05 / 2 ** 0.5)
    v, _ = judge(dice, calibration=CAL, profile=load_profile("ny-5324"), track=stopped, tolerances=reach)
    assert (v.kind, v.reason) == ("no-roll", Reason.FAR_WALL_MISSED)
    touched = [stopped[0][:1] + [(0.5, L - 20.0, 200.0)], stopped[1]]
    v, _ = judge(dice, calibration=CAL, profile=load_profile("ny-5324"), track=touched, tolerances=reach)
    assert (v.kind, v.dice) == ("roll", (3, 4))


def test_die_that_left_the_table_is_judged_by_k1_not_by_the_far_wall():
    dt = 1 / 60
    L = GEOM.length
    stays = [(k * dt, 500.0 + 60 * k, 300.0) for k in range(10)] + \
            [(0.2 + k * dt, L - 15.0 - 80 * k, 300.0) for k in range(6)] + [(0.4 + k * dt, 600.0, 300.0) for k in range(4)]
    flies = [(k * dt, 500.0 + 90 * k, 200.0) for k in range(6)]  # lobbed over the far wall: never seen near it
    assert verdict([die(600, 300, 4)], track=[stays, flies]) == ("no-roll", "die-off-table", None)
    # with both dice on the table, the same short track is a far-wall miss
    assert verdict([die(600, 300, 4), die(800, 200, 2)], track=[stays, flies]) == \
        ("no-roll", "far-wall-missed", None)


def _settling(x_mm: float, y_mm: float) -> list[tuple[float, float, float]]:
    """A die's track: into the far-wall band, back, and at rest at (x, y) mm."""
    return [(0.0, 100.0, y_mm), (0.3, GEOM.length - 20, y_mm), (0.6, x_mm, y_mm), (0.65, x_mm, y_mm),
            (0.7, x_mm, y_mm)]


def test_die_the_track_saw_settle_but_the_reader_missed():
    """5324.52(h)(1)(ii): a die at rest on the table that the reader did not find is in
    dispute; with a re-read at the track's end point the die read there counts."""
    track = [_settling(600, 200), _settling(700, 300)]
    seen = [die(600, 200, 3)]
    assert verdict(seen, track=track) == ("boxperson", "face-unreadable", None)
    asked = []

    def reread(centre, side):
        asked.append((round(centre[0]), round(centre[1]), round(side, 1)))
        return die(700, 300, 5)
    v, obs = judge(seen, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS, track=track,
                   reread=reread)
    assert (v.kind, v.dice) == ("roll", (3, 5))
    # asked where the top face of a die resting at the track's end shows (parallax), not where
    # the felt point under it does (2 px nearer the nadir here)
    top = die(700, 300, 5).centre
    assert asked == [(792, 380, round(CAL.die_side_px((700.0, 300.0)), 1))] == [(round(top[0]), round(top[1]), asked[0][2])]
    assert any("read there: 5" in n for n in obs.notes)
    # nothing read there, or no value: in dispute as before
    for answer in (None, die(700, 300, None, conf=0.1)):
        v, _ = judge(seen, calibration=CAL, objects=CHIPS, track=track, reread=lambda c, s, a=answer: a)
        assert (v.kind, v.reason) == ("boxperson", Reason.FACE_UNREADABLE)
    # a re-read that lands on the die already read is not a second die
    v, _ = judge(seen, calibration=CAL, objects=CHIPS, track=track, reread=lambda c, s: die(602, 201, 3))
    assert (v.kind, v.reason) == ("boxperson", Reason.FACE_UNREADABLE)


def test_a_missed_die_is_read_where_its_track_ended_less_the_tracks_offset():
    """The track's points are centroids the light pulls a millimetre or two off the dice: the
    die the reader missed is read again where its track ended less the offset between the
    other track's end and the die read there (3, -2 mm here), at its top face's pixel. An
    offset of more than a quarter side is no light's (two touching dice read as one at their
    middle): the track's end is used as it is."""
    seen = [die(600, 200, 3)]
    for off, expect in (((3.0, -2.0), (700, 300)), ((6.0, 0.0), (706, 300))):
        track = [_settling(600 + off[0], 200 + off[1]), _settling(700 + off[0], 300 + off[1])]
        asked = []

        def reread(centre, side):
            asked.append(centre)
            return die(700, 300, 5)
        v, _ = judge(seen, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS, track=track,
                     reread=reread)
        assert (v.kind, v.dice) == ("roll", (3, 5))
        top = die(*expect, 5).centre
        assert len(asked) == 1 and math.hypot(asked[0][0] - top[0], asked[0][1] - top[1]) < 0.01, (off, asked, top)


def test_two_touching_dice_read_as_one_between_them_are_read_again_apart():
    """Two flat dice touching (a 2 and a 3, 19 mm apart), one reading between them (a 2 at
    p 0.7, too unsure to publish): the die found beside it (the 3) lies less than 0.8 side from
    it, which no two flat dice do, so the reading is two dice seen as one and is read again a
    side out from the 3: the 2 at p 0.98, and the roll is valid (5324.52(h)(1)(ii) needs no
    dispute). Without the second read the 2 stays unsure and the throw goes to the boxperson."""
    true = [die(600, 200, 2, conf=0.98), die(600, 219, 3, conf=0.99)]
    seen = [die(600, 207, 2, conf=0.7)]
    track = [_settling(600, 200), _settling(600, 219)]

    def reread(centre, side):
        near = min(true, key=lambda d: math.hypot(d.centre[0] - centre[0], d.centre[1] - centre[1]))
        return near if math.hypot(near.centre[0] - centre[0], near.centre[1] - centre[1]) < side else None
    v, obs = judge(seen, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS, track=track,
                   reread=reread)
    assert (v.kind, v.dice) == ("roll", (2, 3)), obs.notes
    assert any("two touching dice seen as one" in n for n in obs.notes)
    # the read a side out finds another value: the reading stands (unsure: to the boxperson)
    true[0] = die(600, 200, 5, conf=0.98)
    v, _ = judge(seen, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS, track=track, reread=reread)
    assert (v.kind, v.reason) == ("boxperson", Reason.FACE_UNREADABLE)


def test_die_against_the_near_wall_and_a_die_not_read_elsewhere():
    """One die rests against the shooter's wall (centre half a side from it) and is read; the
    track saw the other come to rest mid-table where nothing was read: that die is in dispute
    (not off the table, as a count of settled tracks against dice read would say)."""
    track = [_settling(12, 300), _settling(620, 110)]
    assert verdict([die(12, 300, 6)], track=track) == ("boxperson", "face-unreadable", None)
    assert verdict([die(12, 300, 6)], track=track[:1]) == ("no-roll", "die-off-table", None)


def test_a_die_seen_beyond_the_far_walls_line_struck_it():
    """A die just over the far wall is seen (parallax) beyond the wall's line; back on the
    table, it met the wall. Beyond the line but off the wall's length, or far beyond it, no."""
    L = GEOM.length
    over = [(0.0, 300.0, 200.0), (0.2, L + 25.0, 210.0), (0.4, 600.0, 200.0), (0.45, 600.0, 200.0), (0.5, 600.0, 200.0)]
    other = _settling(700, 300)
    dice = [die(600, 200, 3), die(700, 300, 4)]
    reach = Tolerances(far_wall_reach_mm=23.5)
    v, _ = judge(dice, calibration=CAL, objects=CHIPS, track=[over, other], tolerances=reach)
    assert (v.kind, v.dice) == ("roll", (3, 4))
    aside = [(t, x, -200.0 if x > L else y) for t, x, y in over]
    v, _ = judge(dice, calibration=CAL, objects=CHIPS, track=[aside, other], tolerances=reach)
    assert (v.kind, v.reason) == ("no-roll", Reason.FAR_WALL_MISSED)
    # seen 80 mm past the wall: no die is there and back, a mis-tracked point
    far_out = [(t, L + 80.0 if x > L else x, y) for t, x, y in over]
    v, _ = judge(dice, calibration=CAL, objects=CHIPS, track=[far_out, other], tolerances=reach)
    assert (v.kind, v.reason) == ("no-roll", Reason.FAR_WALL_MISSED)


def test_track_offset_from_the_dice_read_at_rest_is_taken_out():
    """The track's centroids sit 3.5 mm towards the far wall of the dice's centres (light and
    shading); the dice read at rest show it, and a die that rolled along the wall 25.5 mm from
    it (not touching: reach 23.5 mm) is not taken for one that struck it."""
    L = GEOM.length
    bias = np.array([3.5, 0.0])

    def biased(points):
        return [(t, x + bias[0], y + bias[1]) for t, x, y in points]
    # slowing to a stop 25.5 mm from the wall, then drifting back to rest (60 Hz samples)
    along_wall = [(k / 60, L - 25.5 - 0.5 * 4000.0 * (k / 60 - 0.25) ** 2 / 0.25, 150.0 + 100 * k / 60)
                  for k in range(31)]
    along_wall += [(0.55, 900.0, 200.0), (0.6, 900.0, 200.0), (0.65, 900.0, 200.0)]
    struck = _settling(700, 350)
    reach = Tolerances(far_wall_reach_mm=23.5)
    dice = [die(900, 200, 3), die(700, 350, 4)]
    v, obs = judge(dice, calibration=CAL, objects=CHIPS, track=[biased(along_wall), biased(struck)],
                   tolerances=reach)
    assert (v.kind, v.reason) == ("no-roll", Reason.FAR_WALL_MISSED)
    assert any("track corrected by (-3.5, -0.0) mm" in n or "track corrected by (-3.5, 0.0) mm" in n
               for n in obs.notes), obs.notes
    # the same track taken as it is would reach the wall (22 mm from it): the offset decides
    band = np.asarray(GEOM.zones()["far_wall_band"], dtype=np.float64)
    wall = far_wall.wall_of(band, np.asarray(GEOM.zones()["playing"], dtype=np.float64))
    assert far_wall.reached_by_track([biased(along_wall)], wall, band, 23.5) == [True]
    assert far_wall.reached_by_track([along_wall], wall, band, 23.5) == [False]


def test_a_track_offset_longer_than_a_quarter_side_is_none():
    """``far_wall.track_offset``: 3.5 mm (a light's pull) is the offset; 8.8 mm (two touching
    dice read as one at their middle, cocked-on-die 5819) is no light's, so none is taken out,
    for the far wall as for the dice read again where their tracks ended."""
    size = 19.05
    end = [(0.0, 100.0, 100.0), (0.5, 503.5, 300.0)]
    assert far_wall.track_offset([end], [(500.0, 300.0)], size) == pytest.approx((3.5, 0.0))
    far = [(0.0, 100.0, 100.0), (0.5, 508.8, 300.0)]
    assert far_wall.track_offset([far], [(500.0, 300.0)], size) is None
    # the line is a quarter side (4.76 mm): 4.6 mm is still taken out, 4.9 mm is not
    near = [(0.0, 100.0, 100.0), (0.5, 504.6, 300.0)]
    assert far_wall.track_offset([near], [(500.0, 300.0)], size) == pytest.approx((4.6, 0.0))
    beyond = [(0.0, 100.0, 100.0), (0.5, 504.9, 300.0)]
    assert far_wall.track_offset([beyond], [(500.0, 300.0)], size) is None


def test_far_wall_leaves_out_points_of_the_two_dice_touching():
    """Die a strikes the wall; die b comes to touch it there (the tracker saw one component,
    split in two: which die is which is a guess) and never strikes: b's points while touching
    do not count for it."""
    L = GEOM.length
    a = [(0.0, 100.0, 200.0), (0.25, L - 20.0, 200.0), (0.3, L - 45.0, 205.0), (0.6, 600.0, 200.0),
         (0.65, 600.0, 200.0), (0.7, 600.0, 200.0)]   # strikes at 0.25 s, b touches it at 0.3 s
    b = [(0.0, 100.0, 220.0), (0.2, 700.0, 220.0), (0.3, L - 22.0, 215.0), (0.4, 900.0, 300.0),
         (0.6, 700.0, 300.0), (0.65, 700.0, 300.0), (0.7, 700.0, 300.0)]
    dice = [die(600, 200, 3), die(700, 300, 4)]
    reach = Tolerances(far_wall_reach_mm=23.5)
    v, _ = judge(dice, calibration=CAL, objects=CHIPS, track=[a, b], tolerances=reach)
    assert (v.kind, v.dice) == ("roll", (3, 4))
    touching = [[k == 2 for k in range(len(a))], [k == 2 for k in range(len(b))]]
    v, obs = judge(dice, calibration=CAL, objects=CHIPS, track=[a, b], tolerances=reach, track_shared=touching)
    assert (v.kind, v.reason) == ("no-roll", Reason.FAR_WALL_MISSED)
    # a's own strike still counts: with b's untouched strike the roll stands
    b_struck = b[:3] + [(0.35, L - 15.0, 230.0)] + b[3:]
    v, _ = judge(dice, calibration=CAL, objects=CHIPS, track=[a, b_struck], tolerances=reach,
                 track_shared=[touching[0], [k == 2 for k in range(len(b_struck))]])
    assert (v.kind, v.dice) == ("roll", (3, 4))


def test_a_strike_rings_again_while_the_other_die_stops_short_of_the_wall():
    """A sensor rings at every impact: die a strikes the wall at 0.25 s and rattles on the
    rubber at 0.27 s, when die b stops 26 mm from the wall's line without touching it (a die
    touches only within rubber + half diagonal, 23.5 mm). With no allowance beyond that reach
    (the default ``strike_track_error``), b is not credited: no roll, 9 NYCRR 5324.52(k)(2)(ii).
    A quarter side of allowance (28.3 mm) credited the rattle to b too and published the roll."""
    L = GEOM.length
    a = [(0.0, 100.0, 200.0), (0.1, 500.0, 200.0), (0.2, 900.0, 200.0), (0.25, L - 20.0, 200.0),
         (0.27, L - 21.0, 200.0), (0.35, 900.0, 200.0), (0.45, 700.0, 200.0)] + \
        [(0.55 + 0.05 * k, 600.0, 200.0) for k in range(4)]
    b = [(0.0, 100.0, 300.0), (0.1, 500.0, 300.0), (0.2, 900.0, 300.0)] + \
        [(0.27 + 0.06 * k, L - 26.0, 300.0) for k in range(8)]     # stopped, 26 mm from the wall
    dice = [die(600, 200, 3), die(L - 26.0, 300, 4)]
    kw = dict(calibration=CAL, objects=CHIPS, track=[a, b], wall_strikes=[0.25, 0.27], window=(0.0, 1.0))
    v, obs = judge(dice, tolerances=Tolerances(far_wall_reach_mm=23.5), **kw)
    assert (v.kind, v.reason) == ("no-roll", Reason.FAR_WALL_MISSED)
    assert obs.facts.struck_far_wall is False
    v, _ = judge(dice, tolerances=Tolerances(far_wall_reach_mm=23.5, strike_track_error=0.25), **kw)
    assert (v.kind, v.dice) == ("roll", (3, 4))
    # b touching the rubber at the rattle (22 mm): both struck
    touched = b[:3] + [(0.27, L - 22.0, 300.0)] + b[4:]
    v, _ = judge(dice, tolerances=Tolerances(far_wall_reach_mm=23.5), **{**kw, "track": [a, touched]})
    assert (v.kind, v.dice) == ("roll", (3, 4))


def test_a_die_the_reader_missed_found_again_in_the_chip_bank_is_in_the_bank():
    """The playing area holds the chip bank: a die the track saw settle there and the re-read
    found was put in play, and published as a valid roll (simulated table, a die dropped at
    the bank's edge: roll [2, 6]). It is placed like any die read: in the bank, (k)(2)(iii).
    Not found again either: its zone is the bank's, not in play."""
    x0, y0, x1, y1 = GEOM.bank_rect
    bx, by = (x0 + x1) / 2, (y0 + y1) / 2
    track = [_settling(600, 200), _settling(bx, by)]
    seen = [die(600, 200, 2)]
    assert verdict(seen, track=track, reread=lambda c, s: die(bx, by, 6)) == ("no-roll", "die-in-chip-bank", None)
    assert verdict(seen, track=track, reread=lambda c, s: die(bx, by, 6), profile="nj-13-47") == \
        ("boxperson", "die-in-chip-bank", None)
    assert verdict(seen, track=track, reread=lambda c, s: None) == ("no-roll", "die-in-chip-bank", None)


def test_a_cocked_die_leaning_on_the_bank_is_in_the_bank_for_every_profile():
    """A die on the felt leaning on the chip bank's tray: it rests on the bank, (k)(2)(iii).
    House practice reads a cocked die as seen, but it read this one too (34 of 34 such
    simulated throws published as rolls)."""
    x0, y0, x1, y1 = GEOM.bank_rect
    readings = [die(600, 300, 2), die((x0 + x1) / 2, y1 + 0.9 * 19.05, 5, flat=False)]
    assert verdict(readings) == ("no-roll", "die-in-chip-bank", None)
    assert verdict(readings, "house-practice") == ("no-roll", "die-in-chip-bank", None)
    assert verdict(readings, "nj-13-47") == ("boxperson", "die-in-chip-bank", None)


def test_a_cocked_die_leaning_on_the_other_die_beside_a_low_stack():
    """A die leaning on the other die, a 2-chip stack within reach of its edge: the stack is not
    its support (the face opposite the stack's side was read as the value: wrong rolls on the
    simulated table); it leans on the other die, so its uppermost face is in dispute."""
    objects = (TableObject(627.0, 331.5, 19.5, 6.6),)                # 31.5 mm from the die: its edge
    readings = [die(600, 300, 3), die(600 + 19.05 + 8.0, 300, 1, flat=False)]
    v, obs = judge(readings, calibration=CAL, profile=load_profile("ny-5324"), objects=objects)
    assert (v.kind, v.reason) == ("boxperson", Reason.FACE_UNREADABLE)
    assert any("leans on the other die" in n for n in obs.notes)
    # no other die near: the low stack is its support, the face opposite counts as before
    readings = [die(300, 150, 3), die(600 + 19.05 + 8.0, 300, 1, flat=False)]
    v, _ = judge(readings, calibration=CAL, profile=load_profile("ny-5324"), objects=objects)
    assert (v.kind, v.dice) == ("roll", (3, 1))


def test_a_cocked_die_leaning_on_the_rail_or_the_cup_is_not_on_open_felt():
    """A die tilted 45 degrees against the rail's wall or the dice cup: its upper face's centre
    is ~0.3 side further out than a flat die's, beyond ``wall_contact``; it still leans on them
    (``lean_contact``), so even with ``open_felt_is_flat`` it is not read flat."""
    open_felt = Tolerances(open_felt_is_flat=True)
    cx, cy = GEOM.cup_centre
    for leaning in (die(400, GEOM.width - 19.0, 4, flat=False),                      # stick rail
                    die(cx, cy - GEOM.cup_radius - 19.0, 4, flat=False)):            # the cup
        v, obs = judge([die(800, 300, 2), leaning], calibration=CAL, profile=load_profile("ny-5324"),
                       tolerances=open_felt)
        assert (v.kind, v.reason) == ("boxperson", Reason.FACE_UNREADABLE), obs.notes


def test_two_dice_touching_both_read_not_flat_is_a_dispute_not_a_void():
    """(h)(1)(i)-(ii): a die pushed flat against the stick rail with the other die leaning on
    it (the simulated camera reads both "not flat": each is in the other's window). The flat
    one touches the rail and the other die, but the other die is an object it rests on only
    if that die lies flat; which rests on which is in dispute, so the boxperson decides rather
    than the roll being void. Before, it was "die-on-several-objects"."""
    flat_at_rail = die(400, GEOM.width - 10.0, 2, flat=False)
    leaning = die(400, GEOM.width - 10.0 - 23.0, 5, flat=False)
    assert verdict([flat_at_rail, leaning]) == ("boxperson", "face-unreadable", None)
    # (a cocked die is the boxperson's under the casino-night rules anyway)
    for profile in ("nj-13-47", "ny-4620"):
        assert verdict([flat_at_rail, leaning], profile=profile) == ("boxperson", "die-not-flat", None)
    # the other die read lying flat is an object the leaning die rests on: as before
    assert verdict([die(400, GEOM.width - 10.0, 2), leaning]) == ("boxperson", "face-unreadable", None)
    assert verdict([flat_at_rail, die(400, GEOM.width - 33.0, 5)]) == ("no-roll", "die-on-several-objects", None)


def test_die_on_die_from_two_tracks_ending_under_the_one_die_seen():
    """5324.52(k)(1): the reader sees one die, and the track saw both dice come to rest on that
    spot (ends 1 mm apart): the other die is under it, not off the table. Two dice touching
    side by side end a side apart and stay as before."""
    under = [_settling(600, 200), _settling(601, 200)]
    one = [die(600, 200, 3)]
    assert verdict(one, track=under) == ("no-roll", "die-on-die", None)
    assert verdict(one, track=under, profile="nj-13-47") == ("boxperson", "die-on-die", None)
    # house practice reads a die on a die, but the lower die's face is covered: a person decides
    assert verdict(one, track=under, profile="house-practice") == ("boxperson", "face-unreadable", None)
    beside = [_settling(600, 200), _settling(620, 200)]
    assert verdict(one, track=beside) == ("boxperson", "face-unreadable", None)
    # two dice side by side tracked as one blob: both tracks end at the blob's centroid, half
    # a side from the die read (a die on the other is within ~0.25 side of it)
    blob = [_settling(610, 200), _settling(610, 200)]
    assert verdict(one, track=blob) == ("boxperson", "face-unreadable", None)
    assert verdict(one, track=[_settling(604, 200), _settling(604, 200)]) == ("no-roll", "die-on-die", None)
    # the reader missed the upper die too; read again where the tracks ended, it is there
    found = die(600, 200, None, flat=False, conf=0.1)
    assert verdict([], track=under, reread=lambda c, s: found) == ("no-roll", "die-on-die", None)
    assert verdict([], track=under, reread=lambda c, s: None) == ("no-roll", "die-on-die", None)
    # the two tracks end together, but away from the die seen: not under it; a die settled
    # there that the reader did not find, whose face is in dispute
    away = [_settling(700, 300), _settling(701, 300)]
    assert verdict(one, track=away) == ("boxperson", "face-unreadable", None)


def test_two_tracks_on_the_one_die_seen_with_a_die_found_beside_it_are_not_stacked():
    """Two dice touching side by side, one missed by the reader and tracked as one blob whose
    centroid the die seen dominates, end on one spot at the die seen like a die on the other
    (natural seed 9606: a wrong no roll). Read again a side out around the die seen, a die lying
    flat there counts as read: a roll. The re-read is at most 8 places; a window that moves
    back onto the die seen is not a second die."""
    one = [die(600, 200, 3)]
    under = [_settling(603, 200), _settling(603, 200)]
    beside = die(621, 200, 5)
    asked = []

    def reread(c, s):
        asked.append(c)
        return beside if c[0] > one[0].centre[0] + 0.9 * SIDE else one[0]

    assert verdict(one, track=under, reread=reread) == ("roll", None, (3, 5))
    assert 1 <= len(asked) <= 8
    # nothing beside it (every window goes back onto the die seen): the other die is under it
    assert verdict(one, track=under, reread=lambda c, s: one[0]) == ("no-roll", "die-on-die", None)
    assert verdict(one, track=under, reread=lambda c, s: None) == ("no-roll", "die-on-die", None)
    # a die beside it read not flat by both estimates, or unread, does not count
    for other in (die(621, 200, 5, flat=False), die(621, 200, None, conf=0.1)):
        assert verdict(one, track=under, reread=lambda c, s: other) == ("no-roll", "die-on-die", None)


def test_a_track_ending_beside_the_one_die_seen_finds_the_die_beside_it():
    """Two dice touching side by side, one against the rail, the reader finding one: the missed
    die's track ends 0.85 side from the die seen (its blob's centroid pulled towards it), and
    read there the window walks onto the die seen (simulated camera, cocked-on-die seeds 2012,
    2027). A side out around the die seen a die lying flat is read: a roll, where the hidden
    die's face was in dispute. Not when the track ends farther than ``beside_track_end``
    sides, nor when nothing flat and read lies beside it."""
    one = [die(600, 200, 3)]
    tracks = [_settling(600, 200), _settling(616, 200)]
    beside = die(621, 200, 5)

    def reread(c, s):
        return beside if c[0] > one[0].centre[0] + 0.9 * SIDE else one[0]

    assert verdict(one, track=tracks, reread=reread) == ("roll", None, (3, 5))
    assert verdict(one, track=tracks, reread=lambda c, s: one[0]) == ("boxperson", "face-unreadable", None)
    off = Tolerances(beside_track_end=0.0)
    assert verdict(one, track=tracks, reread=reread, tolerances=off) == ("boxperson", "face-unreadable", None)
    unread = die(621, 200, None, conf=0.1)
    assert verdict(one, track=tracks, reread=lambda c, s: unread if c[0] > one[0].centre[0] + 0.9 * SIDE
                   else one[0]) == ("boxperson", "face-unreadable", None)


def test_die_the_reader_missed_found_again_cocked_between_two_stacks_is_void():
    """5324.52(h)(1)(i): the track saw a die settle between two 5-chip stacks that the reader did
    not find; read again there it is a die not lying flat, face unsure. Touching both stacks,
    more than one side rests on objects: void. Beside one stack only, or read flat but unsure,
    which face is uppermost is in dispute, (h)(1)(ii)."""
    stacks = (TableObject(490.0, 300.0, 19.5, 16.5), TableObject(550.0, 300.0, 19.5, 16.5))
    seen = [die(800, 200, 3)]

    def kind(end, answer):
        track = [_settling(800, 200), _settling(*end)]
        v, _ = judge(seen, calibration=CAL, profile=load_profile("ny-5324"), objects=stacks, track=track,
                     reread=lambda c, s: answer)
        return v.kind, (None if v.reason is None else v.reason.value)

    cocked = die(520, 300, None, flat=False, conf=0.15)
    assert kind((520, 300), cocked) == ("no-roll", "die-on-several-objects")
    assert kind((460, 300), die(460, 300, None, flat=False, conf=0.15)) == ("boxperson", "face-unreadable")
    assert kind((520, 300), die(520, 300, None, flat=True, conf=0.15)) == ("boxperson", "face-unreadable")
    assert kind((520, 300), None) == ("boxperson", "face-unreadable")
    # flat by the face classifier, not by the tilt classifier (which decides beside chip stacks):
    # not lying flat, on both stacks, void (simulated camera, cocked-two-objects seeds 2009,
    # 2078, 2092: a dispute before; fifteenth session)
    tilted = dataclasses.replace(die(520, 300, None, flat=True, conf=0.15), extra={"p_flat": 0.9, "p_flat_tilt": 0.1})
    assert kind((520, 300), tilted) == ("no-roll", "die-on-several-objects")


def test_die_called_not_flat_over_the_middle_of_a_stack_lies_flat_on_it():
    """A die the reader calls not flat, its centre 14.5 mm inside the top of the one-chip stack it
    rests on and touching nothing else: nothing holds it tilted, so it lies flat on the stack.
    N.J.A.C. 13:47-20.25 (a cocked die is the boxperson's) reads it; 9 NYCRR 5324.52(h)(1)(i)
    read the same face either way. On the stack's edge (centre beyond the edge) it is cocked."""
    stack = (TableObject(500.0, 300.0, 19.5, 3.3),)

    def judge_on(x, profile):
        v, _ = judge([die(x, 300, 5, flat=False), die(800, 200, 3)], calibration=CAL,
                     profile=load_profile(profile), objects=stack)
        return v.kind, (None if v.reason is None else v.reason.value), v.dice

    assert judge_on(495, "nj-13-47") == ("roll", None, (5, 3))
    assert judge_on(495, "ny-5324") == ("roll", None, (5, 3))
    # 9.5 mm beyond the edge: resting on it cocked, the boxperson's under 13:47-20.25
    assert judge_on(529, "nj-13-47") == ("boxperson", "die-not-flat", None)
    assert judge_on(529, "ny-5324") == ("roll", None, (5, 3))
    # off: judged cocked on the stack as before
    v, _ = judge([die(495, 300, 5, flat=False), die(800, 200, 3)], calibration=CAL,
                 profile=load_profile("nj-13-47"), objects=stack, tolerances=Tolerances(on_top_margin=0))
    assert (v.kind, v.reason) == ("boxperson", Reason.DIE_NOT_FLAT)


def test_cocked_die_on_a_low_stack_with_its_face_unread_is_noted_as_resting_on_it():
    """(h)(1)(i)-(ii): a die cocked on the edge of the 3-chip stack at (330, 70), its face not
    read: the face that counts (opposite the side on the chips) is unknown, so the boxperson
    decides, and the note names the stack it rests on (it said "rests on no object")."""
    cocked = die(330.0 + 19.5 + 11.0, 70.0, None, flat=False, conf=0.35)
    v, obs = judge([die(700, 300, 3), cocked], calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS)
    assert (v.kind, v.reason) == ("boxperson", Reason.FACE_UNREADABLE)
    assert obs.observations[1].sides_resting == 1
    assert any("rests on chips at (330, 70), its upper face not read" in n for n in obs.notes), obs.notes
    v, _ = judge([die(700, 300, 3), cocked], calibration=CAL, profile=load_profile("nj-13-47"), objects=CHIPS)
    assert (v.kind, v.reason) == ("boxperson", Reason.DIE_NOT_FLAT)


def test_tilt_classifier_sure_of_flat_outweighs_the_face_classifier_beside_a_wall():
    """Beside a wall the lower of the two flatness estimates counts, but the tilt classifier at
    ``tilt_sure_flat`` (0.999) or more counts instead: two flat dice touching, one against the
    rail, the face classifier's P(flat) 0.23 for it (its window holds the other die), the tilt
    classifier's 0.9995 (simulated camera, cocked-on-die seed 2270: voided as a die resting on
    the rail and the other die). No die leaning on a wall had the tilt classifier's P(flat)
    above 0.989 (seeds 2100-2299): at 0.99 the lower, the face classifier's, still counts."""
    pair = [tilted(die(800, 550.5, 5), 0.23, 0.9995), die(800, 529.4, 5)]
    assert verdict(pair) == ("roll", None, (5, 5))
    assert verdict(pair, "nj-13-47") == ("roll", None, (5, 5))
    obs = observe_throw(pair, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS)
    assert obs.observations[0].reading.extra["p_flat"] == 0.9995
    assert obs.observations[0].reading.extra["p_flat_face"] == 0.23
    # (with no room to tilt off too: its face, not read by the face classifier here, is not
    # in dispute but void, the die resting on the rail and the other die)
    off = Tolerances(tilt_sure_flat=0.0, tilt_room=0.0)
    v, _ = judge(pair, calibration=CAL, profile=load_profile("ny-5324"), objects=CHIPS, tolerances=off)
    assert (v.kind, v.reason) == ("no-roll", Reason.DIE_ON_SEVERAL_OBJECTS)
    # the tilt classifier at 0.99 beside the rail, alone: the face classifier's 0.35 counts
    assert verdict([die(600, 300, 2), tilted(die(800, 550, 5), 0.35, 0.99)]) == ("boxperson", "face-unreadable", None)
    assert verdict([die(600, 300, 2), tilted(die(800, 550, 5), 0.35, 0.9995)]) == ("roll", None, (2, 5))


def test_beside_a_wall_a_die_called_flat_is_doubted_on_the_mean_of_the_two_estimates():
    """Beside a wall the lower of the two flatness estimates says whether a die is flat, and
    the mean of the two whether it is surely so (``Tolerances.doubt_on_mean``, twenty-fifth
    session): each estimate is fooled beside walls in its own way, seldom both (simulated
    camera: dice leaning on the dice cup read flat 0.88-0.97 by the face classifier and 0.001 or
    less by the tilt classifier; a flat 5 standing 15 mm off the cup read 0.83 and 0.999, sent to
    the boxperson when the lower decided)."""
    other = die(700, 300, 3)
    standing_out = tilted(die(16, 300, 4), 0.83, 0.998)           # 0.84 side off the rail
    assert verdict([other, standing_out]) == ("roll", None, (4, 3))
    assert verdict([other, standing_out], "nj-13-47") == ("roll", None, (4, 3))
    lower = Tolerances(doubt_on_mean=False)
    assert verdict([other, standing_out], tolerances=lower) == ("boxperson", "face-unreadable", None)
    # a lean both estimates half believe (0.75 and 0.73, a 2 leaning 41 degrees on the rail's
    # wall): doubted either way
    leaning = tilted(die(16, 300, 2), 0.75, 0.73)
    assert verdict([other, leaning]) == ("boxperson", "face-unreadable", None)
    # touching the wall: 0.6 (``sure_flat``) on the mean; the lower (0.55) alone was a dispute
    touching = tilted(die(12, 300, 4), 0.96, 0.555)
    assert verdict([other, touching]) == ("roll", None, (4, 3))
    assert verdict([other, touching], tolerances=lower) == ("boxperson", "face-unreadable", None)
    _, obs = judge([other, tilted(die(16, 300, 4), 0.7, 0.8)], calibration=CAL, profile=load_profile("ny-5324"),
                   objects=CHIPS)
    assert any("(P(flat) 0.75, the mean of the two estimates) beside rail, standing out" in n for n in obs.notes), \
        obs.notes
    # the face classifier sure, the tilt classifier not (a lean on the cup): not flat at all,
    # though the mean (0.535) is above 0.5: the lower still says whether a die is flat
    cup_lean = tilted(die(16, 300, 5), 0.97, 0.1)
    assert verdict([other, cup_lean], "nj-13-47")[:2] == ("boxperson", "die-not-flat")


def test_a_stack_a_die_can_lean_on_is_reached_as_far_as_a_wall():
    """A die leaning 40 degrees on the side of a stack taller than ``lean_min_height`` shows
    its upper face up to a side beyond the stack's edge (simulated camera, seventeenth session:
    75 dice leaning on a 5-chip stack, 26-38 mm from its centre, the stack's radius 19.5 mm), as
    a die leaning on the rail does: such a stack is reached within ``lean_contact`` (1.1 side),
    not ``contact_margin`` (0.9). Beyond 0.9 side the die was on open felt, where the higher of
    the two flatness estimates counts: the face classifier's "flat" (0.75; the tilt classifier
    0.003) published the face seen, under ny-5324 and nj-13-47 (2 of 80 such throws). Now it
    leans on the chips: its face is in dispute (nj-13-47: the boxperson decides die-not-flat)."""
    leaning = [die(600, 300, 2), tilted(die(300.0 + 19.5 + 0.98 * 19.05, 500.0, 4), 0.75, 0.003)]
    assert verdict(leaning) == ("boxperson", "face-unreadable", None)
    assert verdict(leaning, "nj-13-47") == ("boxperson", "die-not-flat", None)
    # the old reach, 0.9 side for every stack: open felt, the face seen published
    old = Tolerances(lean_contact=0.9)
    assert verdict(leaning, tolerances=old) == ("roll", None, (4, 2))
    # a low stack (the 3-chip one, 9.9 mm) is no wall: at the same distance, open felt
    beside_low = [die(600, 300, 2), tilted(die(330.0, 70.0 + 19.5 + 0.98 * 19.05, 4), 0.75, 0.003)]
    assert verdict(beside_low) == ("roll", None, (4, 2))


def test_beside_chip_stacks_only_the_tilt_classifier_calls_a_die_cocked_below_its_own_threshold():
    """Touching chip stacks only, the tilt classifier's P(flat) decides and a die is flat from
    ``tilt_flat_beside_stacks`` (0.2), not 0.5: 503 of 504 dice cocked on or leaning against a
    stack had P(flat) below 0.11 on the simulated camera, while flat dice touching a stack were
    read 0.2-0.5 now and then (nineteenth session) and were called cocked at 0.5. Touching
    the other die too, or a wall, the old 0.5 holds."""
    x = 300.0 + 19.5 + 0.55 * 19.05   # touching the 10-chip stack at (300, 500)
    beside = tilted(die(x, 500.0, 3), 0.9, 0.35)
    assert verdict([die(700, 300, 5), beside]) == ("roll", None, (3, 5))
    assert verdict([die(700, 300, 5), beside], "nj-13-47") == ("roll", None, (3, 5))
    # the old threshold: "cocked on the chips", the face in dispute
    old = Tolerances(tilt_flat_beside_stacks=0.5)
    assert verdict([die(700, 300, 5), beside], tolerances=old) == ("boxperson", "face-unreadable", None)
    assert verdict([die(700, 300, 5), beside], "nj-13-47", tolerances=old) == ("boxperson", "die-not-flat", None)
    # as low as a cocked die: cocked
    cocked = tilted(die(x, 500.0, 3), 0.9, 0.08)
    assert verdict([die(700, 300, 5), cocked], "nj-13-47") == ("boxperson", "die-not-flat", None)
    # the other die touching it too: 0.5 still
    pair = [die(x + 1.05 * 19.05, 500.0, 5), beside]
    assert verdict(pair, "nj-13-47")[0] == "boxperson"


def test_beside_chip_stacks_the_face_classifier_sure_of_a_lean_outweighs_the_lowered_tilt_threshold():
    """``face_sure_not_flat`` (0.1): touching chip stacks only, the tilt classifier's P(flat)
    from ``tilt_flat_beside_stacks`` (0.2) up to 0.5 makes a die flat only when the face
    classifier's P(flat) is at least 0.1. Simulated camera, cocked-on-tall-stack 7690: a die
    leaning 39 degrees on a 4-chip stack, tilt P(flat) 0.25, face 0.0015, was published with
    the face seen under ny-5324; no flat die of 1,414 touching a stack had the face's below
    0.20."""
    x = 300.0 + 19.5 + 0.6 * 19.05   # touching the 10-chip stack at (300, 500), not over it
    leaning = [die(700, 300, 5), tilted(die(x, 500.0, 1), 0.0015, 0.25)]
    assert verdict(leaning) == ("boxperson", "face-unreadable", None)
    assert verdict(leaning, "nj-13-47") == ("boxperson", "die-not-flat", None)
    # off: the tilt classifier's 0.25 is flat, the face seen published
    off = Tolerances(face_sure_not_flat=0.0)
    assert verdict(leaning, tolerances=off) == ("roll", None, (1, 5))
    # the face classifier unsure, not sure of a lean: flat from 0.2 as before
    unsure = [die(700, 300, 5), tilted(die(x, 500.0, 1), 0.2, 0.25)]
    assert verdict(unsure) == ("roll", None, (1, 5))
    # the tilt classifier at 0.5 or more: flat whatever the face classifier says
    assert verdict([die(700, 300, 5), tilted(die(x, 500.0, 1), 0.0015, 0.6)]) == ("roll", None, (1, 5))


def test_a_die_cocked_beside_a_tall_stack_leans_on_its_side_and_does_not_rest_on_its_rim():
    """A die cannot rest its bottom on the rim of a stack at least ``lean_min_height`` tall with
    its other edge on the felt: it leans on the stack's side, the side touching the chips is a
    lateral one, and the face that counts ((h)(1)(i), the one opposite it) is not the face
    seen: a dispute. Only within ``support_margin_tall`` (0.15 side) of the edge does it rest
    on the stack. Simulated camera, cocked-on-tall-stack seeds 2700-2799: dice leaning on a
    5-chip stack read 0.3 side beyond its edge had their face seen published under ny-5324
    (3 of 100). A low stack's rim still holds the die's bottom: the face seen counts."""
    out = 19.5 + 0.3 * 19.05
    leaning = [die(700, 300, 5), tilted(die(300.0, 500.0 - out, 4, flat=False), 0.2, 0.003)]
    assert verdict(leaning) == ("boxperson", "face-unreadable", None)
    assert verdict(leaning, "nj-13-47") == ("boxperson", "die-not-flat", None)
    # the old margin: its bottom on the rim, the face seen counted
    assert verdict(leaning, tolerances=Tolerances(support_margin_tall=0.35)) == ("roll", None, (4, 5))
    # the 3-chip stack (9.9 mm) at the same distance: cocked on its rim, the face seen counts
    on_rim = [die(700, 300, 5), tilted(die(330.0, 70.0 + out, 4, flat=False), 0.2, 0.003)]
    assert verdict(on_rim) == ("roll", None, (4, 5))


def _face_read(r: DieReading, p_face: float, p_tilt: float) -> DieReading:
    """``tilted(r, p_face, p_tilt)`` whose face classifier also put ``r.value`` first (p 0.99)."""
    p = [0.002] * 7
    p[r.value - 1] = 0.99
    t = tilted(r, p_face, p_tilt)
    return dataclasses.replace(t, extra={**t.extra, "p": p})


def test_die_read_not_flat_between_the_rail_and_the_other_die_lying_flat_lies_flat():
    """Two flat dice against the rail, one behind the other: the one at the rail read not flat
    by both estimates (the rail's dark wall in its window) was voided as resting on the rail and
    the other die, (h)(1)(i) (simulated camera, cocked-on-die seeds 2146, 2270). With 1.1 sides
    between the rail and the other die's near face it cannot be cocked there (``tilt_room``):
    its face counts. Not when the other die lies beside the line from it to the rail (room to
    lean); where only the cocked-die reader, not the face classifier, read its value, or no
    reader did, it lies flat with its face in dispute."""
    at_rail = _face_read(die(800, 550.5, 4, flat=False), 0.02, 0.4)
    assert verdict([at_rail, die(800, 529.4, 5)]) == ("roll", None, (4, 5))
    assert verdict([at_rail, die(800, 529.4, 5)], "nj-13-47") == ("roll", None, (4, 5))
    assert verdict([at_rail, die(800, 529.4, 5)], tolerances=Tolerances(tilt_room=0.0)) == \
        ("no-roll", "die-on-several-objects", None)
    # the other die half a side along the rail: room beside it to lean on the rail
    assert verdict([at_rail, die(810, 531.0, 5)]) == ("no-roll", "die-on-several-objects", None)
    # the value from the cocked-die reader alone (the face classifier read another face), or no
    # value: flat, but its face in dispute (it was void)
    other_face = dataclasses.replace(at_rail, extra={**at_rail.extra, "p": [0.9, 0.02, 0.02, 0.02, 0.02, 0.01, 0.01]})
    assert verdict([other_face, die(800, 529.4, 5)]) == ("boxperson", "face-unreadable", None)
    unread = dataclasses.replace(at_rail, value=None, confidence=0.35)
    assert verdict([unread, die(800, 529.4, 5)]) == ("boxperson", "face-unreadable", None)
    assert verdict([unread, die(800, 529.4, 5)], tolerances=Tolerances(tilt_room=0.0)) == \
        ("no-roll", "die-on-several-objects", None)


def test_die_read_again_where_its_track_ended_is_another_die_beyond_reread_apart():
    """A die read again where its track ended is another die than the die read when their
    centres are more than ``reread_apart_flat`` (0.6) sides apart if it lies flat by either
    estimate, ``reread_apart`` (0.9) if not: two flat dice touching against the rail, the
    window on the missed one pulled 0.78 side towards the die read (simulated camera,
    cocked-on-die seeds 2182, 2188, 2284: to the boxperson before, at 1.0 side)."""
    seen = [die(600, 200, 3)]
    track = [_settling(600, 200), _settling(650, 200)]
    near = die(600 + 0.7 * 19.05, 200, 5)
    assert verdict(seen, track=track, reread=lambda c, s: near) == ("roll", None, (3, 5))
    old = Tolerances(reread_apart_flat=1.0)
    assert verdict(seen, track=track, reread=lambda c, s: near, tolerances=old) == \
        ("boxperson", "face-unreadable", None)
    # nearer than 0.6 side: the window walked back onto the die read
    nearer = die(600 + 0.5 * 19.05, 200, 5)
    assert verdict(seen, track=track, reread=lambda c, s: nearer) == ("boxperson", "face-unreadable", None)
    # not flat by either estimate, 0.7 side out: a window on the die read's side face
    side_face = tilted(die(600 + 0.7 * 19.05, 200, 5, flat=False), 0.05, 0.05)
    assert verdict(seen, track=track, reread=lambda c, s: side_face) == ("boxperson", "face-unreadable", None)


def test_die_read_again_less_than_a_side_from_the_die_read_is_read_once_more_a_side_out():
    """The window on a flat die read again 0.75 side from the die read is read once more a side
    and a tenth out along the line through the two (``pushed_out``); that read (same value, flat)
    places the die (simulated camera, cocked-on-die seed 2138: the first window read P(flat)
    0.52 beside the rail, a dispute; the one a side out 0.99)."""
    seen = [die(600, 200, 3)]
    track = [_settling(600, 200), _settling(650, 200)]
    pulled = die(600 + 0.75 * 19.05, 200, 5)
    out = die(600 + 1.02 * 19.05, 200, 5)
    asked = []

    def reread(c, s):
        asked.append(c)
        return out if abs(c[0] - (seen[0].centre[0] + 1.1 * s)) < 1.0 else pulled

    obs = observe_throw(seen, calibration=CAL, track=track, reread=reread)
    assert len(asked) == 2 and asked[1][0] == pytest.approx(seen[0].centre[0] + 1.1 * SIDE, abs=0.5)
    assert obs.positions_mm[1][0] == pytest.approx(600 + 1.02 * 19.05, abs=0.6)
    assert [o.reading.value for o in obs.observations] == [3, 5]
    # another value a side out: the first read stands
    other = die(600 + 1.02 * 19.05, 200, 6)
    obs = observe_throw(seen, calibration=CAL, track=track,
                        reread=lambda c, s: other if abs(c[0] - (seen[0].centre[0] + 1.1 * s)) < 1.0 else pulled)
    assert obs.positions_mm[1][0] == pytest.approx(600 + 0.75 * 19.05, abs=0.6)
    assert [o.reading.value for o in obs.observations] == [3, 5]


def test_two_dice_closer_than_leaning_ratio_lie_side_by_side_when_the_tilt_classifier_calls_both_flat():
    """Two flat dice against the rail, one behind the other, placed 0.85 side apart (the camera
    sees the one at the rail pushed out by parallax): the face classifier called one not flat
    (P(flat) 0.33, the other die in its window), which made it "leaning on the other die"
    (``leaning_ratio`` 0.9), a die on die, (k)(1) (simulated camera, cocked-on-die seed
    2988). A die is leaning only when neither estimate calls it flat: the tilt classifier's
    0.99 makes them two dice lying side by side. Both estimates not flat: a die on die."""
    pair = [die(600, 200, 4), tilted(die(600 + 0.85 * 19.05, 200, 5), 0.33, 0.99)]
    assert verdict(pair, "nj-13-47") == ("roll", None, (4, 5))
    leaning = [die(600, 200, 4), tilted(die(600 + 0.85 * 19.05, 200, 5), 0.33, 0.2)]
    assert verdict(leaning, "nj-13-47") == ("boxperson", "die-on-die", None)


def test_die_barely_read_flat_between_the_rail_and_the_other_die_in_line_is_not_in_dispute():
    """A die read flat at P(flat) 0.64 against the rail, the other die lying flat in front of it
    0.82 side farther out (its window pulled towards this one): "beside the rail, standing out
    from it, it may lean on it" sent the throw to the boxperson (simulated camera, cocked-on-die
    seed 2809). With less than ``tilt_room`` sides between the rail and the other die's near
    face it cannot lean on the rail (nor on the other die): a roll. A side or more along the
    rail, the other die leaves it room: in dispute."""
    def unsure(r, p):
        return dataclasses.replace(r, extra={**r.extra, "p_flat": p, "p_flat_tilt": p})

    at_rail = unsure(die(800, 545.5, 4), 0.64)
    assert verdict([at_rail, die(800, 529.9, 5)]) == ("roll", None, (4, 5))
    assert verdict([at_rail, die(800, 529.9, 5)], tolerances=Tolerances(tilt_room=0.0)) == \
        ("boxperson", "face-unreadable", None)
    # a side and a fifth along the rail: room beside it to lean on the rail
    assert verdict([at_rail, die(823, 529.9, 5)]) == ("boxperson", "face-unreadable", None)


def test_die_leaning_on_the_other_die_beside_a_one_chip_stack_does_not_rest_on_it():
    """A die leaning ~40 degrees on the other die lying flat, its centre 3 mm beyond the rim of
    a one-chip stack (within ``support_margin``): its foot is on the felt, it rests on the other
    die alone; it was voided as resting on two objects, (h)(1)(i) (simulated camera,
    cocked-on-die: 10 of 11 such throws, seeds 2281, 2839, 2841, 3007...). Now a cocked die
    leaning on the other die: nj-13-47 calls the boxperson, house practice reads it as seen.
    Its centre over the stack: on the stack and the other die, void."""
    stack = (TableObject(600.0, 300.0, 19.5, 3.3),)

    def kind(readings, profile):
        v, _ = judge(readings, calibration=CAL, profile=load_profile(profile), objects=stack)
        return v.kind, (None if v.reason is None else v.reason.value), v.dice

    beside = [tilted(die(600, 322.5, 4, flat=False), 0.05, 0.01), die(600, 341.55, 5)]
    assert kind(beside, "nj-13-47") == ("boxperson", "die-not-flat", None)
    assert kind(beside, "house-practice") == ("roll", None, (4, 5))
    over = [tilted(die(600, 318.0, 4, flat=False), 0.05, 0.01), die(600, 341.55, 5)]
    assert kind(over, "nj-13-47") == ("no-roll", "die-on-several-objects", None)
    assert kind(over, "house-practice") == ("no-roll", "die-on-several-objects", None)


# --- spare dice in the dice cup, 9 NYCRR 5324.52(a)(5), (f)(3) -----------------------------------

def _in_cup(k: int, value: int) -> DieReading:
    """A die at spare slot ``k`` of the dice cup (the simulator's slots)."""
    (x, y, _), _, _ = TableGeometry(spare_dice=[{"face": 1}] * 3).spare_dice_poses()[k]
    return die(x, y, value)


def test_a_spare_in_the_cup_does_not_stand_in_for_a_die_that_left_the_table():
    """One die on the layout, two spares in the cup: the other die left the table, (k)(1), a no
    roll in every profile. Without the spares seen before the throw the casino-night profiles
    sent it to the boxperson as a die in the cup."""
    spares = [_in_cup(0, 4), _in_cup(1, 6)]
    at_rest = [die(600, 200, 3)] + spares
    for profile in ("ny-5324", "nj-13-47", "ny-4620", "house-practice"):
        assert verdict(at_rest, profile, spares=spares) == ("no-roll", "die-off-table", None), profile
    assert verdict(at_rest, "nj-13-47") == ("boxperson", "die-in-dice-cup", None)
    assert verdict([die(600, 200, 3), die(700, 300, 5)] + spares, spares=spares) == ("roll", None, (3, 5))
    _, obs = judge(at_rest, calibration=CAL, profile=load_profile("nj-13-47"), spares=spares)
    assert [n for n in obs.notes if "dice_cup" in n] == []   # the spares' places are no findings
    assert any("2 of the 2 dice in the dice cup lay there before the throw" in n for n in obs.notes)


def test_a_die_thrown_into_the_cup_beside_the_spares_is_in_the_cup():
    cx, cy = GEOM.cup_centre
    spares = [_in_cup(0, 4), _in_cup(1, 6)]
    at_rest = [die(600, 200, 3), die(cx, cy - 14, 2)] + spares   # a third die in the cup
    assert verdict(at_rest, "nj-13-47", spares=spares) == ("boxperson", "die-in-dice-cup", None)
    assert verdict(at_rest, "ny-5324", spares=spares) == ("no-roll", "die-in-dice-cup", None)


def test_a_die_on_a_spares_place_showing_another_face_is_a_thrown_die():
    """The thrown die landed on a spare and hides it (the cup holds as many dice as before): the
    value at the spare's place changed, so a thrown die is in the cup. A value read unsurely
    (below ``spare_sure``) proves nothing: then the die is the spare, and the missing die left
    the table."""
    spares = [_in_cup(0, 4), _in_cup(1, 6)]
    covered = [die(600, 200, 3), _in_cup(0, 2), _in_cup(1, 6)]
    assert verdict(covered, "nj-13-47", spares=spares) == ("boxperson", "die-in-dice-cup", None)
    unsure = [die(600, 200, 3), dataclasses.replace(_in_cup(0, 2), confidence=0.85), _in_cup(1, 6)]
    assert verdict(unsure, "nj-13-47", spares=spares) == ("no-roll", "die-off-table", None)


def test_a_spare_the_reader_missed_before_the_throw_still_does_not_count_as_thrown():
    """Two dice in the cup at rest, one seen there before: the cup holds one more die, so one of
    them may be a thrown die: the one where no spare lay. The die that left the table cannot be
    made up for by a spare knocked aside: only as many as the cup gained count."""
    before = [_in_cup(0, 4)]
    at_rest = [die(600, 200, 3), _in_cup(0, 4), _in_cup(2, 5)]
    assert verdict(at_rest, "nj-13-47", spares=before) == ("boxperson", "die-in-dice-cup", None)
    knocked = [die(600, 200, 3), _in_cup(2, 4)]   # the spare knocked to another place, same count
    assert verdict(knocked, "nj-13-47", spares=before) == ("no-roll", "die-off-table", None)


def test_two_dice_read_close_but_tracked_settling_a_side_apart_are_side_by_side():
    """(k)(1) is a die "on top of the other die". Two flat 5s touching face to face were read
    14.2 mm apart (0.74 side: the windows pulled towards the pair's middle), inside the 0.8 side
    that tells a die on the other, while their tracks settled 20.3 mm apart (simulated camera,
    cocked-on-die seed 4201: a wrong no roll). A die on the other is one blob to the camera,
    its track ending on the lower die's: still a die on the other die."""
    close = [die(600, 200, 5), die(614.2, 200, 5)]
    apart = [_settling(599, 200), _settling(619.5, 200)]
    assert verdict(close, track=apart) == ("roll", None, (5, 5))
    assert verdict(close, track=apart, profile="nj-13-47") == ("roll", None, (5, 5))
    one_spot = [_settling(606, 200), _settling(607, 200)]
    assert verdict(close, track=one_spot) == ("no-roll", "die-on-die", None)
    # tracks a little less than a side apart (a stack's blob split in two): on the other die
    assert verdict(close, track=[_settling(598, 200), _settling(614, 200)]) == ("no-roll", "die-on-die", None)
    # one track lost: the track cannot tell them apart, the reading's distance decides
    assert verdict(close, track=[_settling(599, 200)]) == ("no-roll", "die-on-die", None)
    assert verdict(close, track=apart, tolerances=Tolerances(tracks_apart=0.0)) == ("no-roll", "die-on-die", None)


def test_a_die_read_unsurely_beside_the_other_is_read_again_a_side_out():
    """The window on a flat 2 against the rail, touching a 6, was pulled 6 px towards the 6 and
    read the 2 at p 0.74, under the verdict's 0.8 (cocked-on-die seed 4202). Their tracks
    settled a side apart, so the 2 is read again a side and a tenth out from the 6: p 0.98, a
    roll. A re-read giving another value is not taken."""
    six = die(600, 200, 6, conf=0.99)
    two = die(615, 200, 2, conf=0.74)
    apart = [_settling(599.5, 200), _settling(620.5, 200)]
    asked = []

    def reread(c, s):
        asked.append(c)
        return die(621, 200, 2, conf=0.98)

    assert verdict([six, two], track=apart) == ("boxperson", "face-unreadable", None)
    assert verdict([six, two], track=apart, reread=reread) == ("roll", None, (6, 2))
    assert len(asked) == 1 and asked[0][0] > six.centre[0] + SIDE
    assert verdict([six, two], track=apart, reread=lambda c, s: die(621, 200, 3, conf=0.98)) == \
        ("boxperson", "face-unreadable", None)


def test_a_die_read_flat_nearer_a_low_stack_than_a_flat_die_can_be_may_rest_cocked_on_its_rim():
    """``rim_reach``, ``sure_flat_on_rim``: a die read flat (tilt classifier's P(flat) 0.6),
    touching only the one-chip stack at (500, 300) of radius 19.5 mm, its centre 8 mm from the
    rim: a die lying flat against the stack has its centre half a side (9.5 mm) or more from it,
    so it may rest cocked on the rim, which N.J.A.C. 13:47-20.25 and 9 NYCRR 4620.3 give to the
    boxperson ((h)(1)(ii)). Under 9 NYCRR 5324.52(h)(1)(i) the face opposite the rim's side is the
    face up, the one read: a roll. 14 mm from the rim, or sure flat (0.95), it lies flat."""
    stack = (TableObject(500.0, 300.0, 19.5, 3.3),)

    def judge_at(rim_mm, p_tilt, profile, **tol):
        r = tilted(die(500.0 + 19.5 + rim_mm, 300.0, 5), 0.9, p_tilt)
        v, obs = judge([r, die(800, 200, 3)], calibration=CAL, profile=load_profile(profile), objects=stack,
                       tolerances=Tolerances(**tol))
        return (v.kind, None if v.reason is None else v.reason.value, v.dice), obs.notes

    got, notes = judge_at(8.0, 0.6, "nj-13-47")
    assert got == ("boxperson", "face-unreadable", None)
    assert any("from the rim of chips at (500, 300): it may rest cocked on it" in n for n in notes), notes
    assert judge_at(8.0, 0.6, "ny-4620")[0] == ("boxperson", "face-unreadable", None)
    assert judge_at(8.0, 0.6, "ny-5324")[0] == ("roll", None, (5, 3))
    assert judge_at(8.0, 0.6, "house-practice")[0] == ("roll", None, (5, 3))
    assert judge_at(14.0, 0.6, "nj-13-47")[0] == ("roll", None, (5, 3))
    assert judge_at(8.0, 0.95, "nj-13-47")[0] == ("roll", None, (5, 3))
    assert judge_at(8.0, 0.6, "nj-13-47", rim_reach=0.0)[0] == ("roll", None, (5, 3))
    # a die cocked on two chips (``rim_low_height``) tilts enough for the tilt classifier to
    # see; a tall stack is leaned on: not this rule
    for h in (6.6, 16.5):
        v, obs = judge([tilted(die(527.5, 300.0, 5), 0.9, 0.6), die(800, 200, 3)], calibration=CAL,
                       profile=load_profile("nj-13-47"), objects=(TableObject(500.0, 300.0, 19.5, h),))
        assert (v.kind, v.dice) == ("roll", (5, 3)), h
        assert not any("may rest cocked on it" in n for n in obs.notes), obs.notes
