"""The irregularity detectors' stages one by one (controller/felt.py, scene.py, missed_dice.py,
die_on_die.py, cocked.py): exact positions, indices, counts and notes on synthetic input."""
from __future__ import annotations

import math

import numpy as np
import pytest

from camera.calibration import Calibration
from controller.cocked import Surroundings, judge_cocked_dice
from controller.die_on_die import find_dice_on_dice, leans_beside
from controller.felt import FeltGeometry, TableObject, dist_to_boundary
from controller.irregularity_profile import load_profile
from controller.missed_dice import ends_apart, settled_on_table, stacked_under
from controller.scene import place_dice, spares_left_out
from controller.tolerances import Tolerances
from simulator.geometry import TableGeometry
from vision.types import DieReading

GEOM = TableGeometry()
OFF = np.array([90.0, 80.0])  # pixel of table mm (0, 0)
H = np.array([[1.0, 0.0, -OFF[0]], [0.0, 1.0, -OFF[1]], [0.0, 0.0, 1.0]])  # 1 px = 1 mm
CAL = Calibration.from_homography(H, GEOM.zones(), camera_height_mm=1800.0)
NADIR = (550.0, 280.0)
GEO = FeltGeometry(CAL, NADIR, GEOM.wall_height)
TOL = Tolerances()


def die(x_mm: float, y_mm: float, value: int | None, *, flat: bool = True, conf: float = 0.97,
        extra: dict | None = None) -> DieReading:
    """A reading whose top face shows over the felt point (x, y) mm."""
    cx, cy = GEO.top_px((x_mm, y_mm))
    s = GEO.expected_side_px((x_mm, y_mm))
    return DieReading(value=value, bbox=(int(cx - s / 2), int(cy - s / 2), int(cx + s / 2), int(cy + s / 2)),
                      centre=(cx, cy), confidence=conf, flat=flat, side_px=s, extra=extra or {})


def test_top_face_is_seen_further_from_the_nadir_by_the_parallax_of_one_side():
    # 1 px = 1 mm; a die 250 mm from the nadir: its top face 19.05 mm up shows 250 * 19.05 /
    # (1800 - 19.05) = 2.67 mm further out
    x, y = GEO.top_px((800.0, 280.0))
    assert x - OFF[0] == pytest.approx(800.0 + 250.0 * 19.05 / (1800.0 - 19.05), abs=1e-9)
    assert y - OFF[1] == pytest.approx(280.0, abs=1e-9)
    # and at_height takes it back to the footprint
    assert GEO.at_height(np.array([x - OFF[0], y - OFF[1]]), GEO.size) == pytest.approx((800.0, 280.0), abs=1e-9)


def test_dist_to_boundary_of_a_square():
    square = np.array([[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]])
    assert dist_to_boundary(square, (3.0, 5.0)) == pytest.approx(3.0)
    assert dist_to_boundary(square, (13.0, 14.0)) == pytest.approx(5.0)


def test_place_dice_puts_each_die_at_its_footprint_and_zone():
    scene, placed_notes = place_dice([die(600.0, 200.0, 3), die(700.0, 300.0, 4)], GEO, TOL, None)
    assert scene.positions[0] == pytest.approx((600.0, 200.0), abs=1e-6)
    assert scene.positions[1] == pytest.approx((700.0, 300.0), abs=1e-6)
    assert scene.zones == ["playing", "playing"]
    assert placed_notes == [[], []]
    assert scene.apart(0, 1) == pytest.approx(math.hypot(100.0, 100.0), abs=1e-6)
    assert scene.side_of(0) == pytest.approx(19.05)


def test_spares_left_out_keeps_a_die_showing_another_face_on_a_spares_place():
    before = [((10.0, 10.0), 5), ((40.0, 10.0), 2)]
    # the spare 5 still there; a 6 where the spare 2 lay covers it: thrown
    assert spares_left_out([((10.5, 10.0), 5), ((40.0, 11.0), 6)], before, 9.5) == [0]
    # the same two spares and a third die where none lay: the third is thrown
    assert spares_left_out([((10.0, 10.0), 5), ((40.0, 10.0), 2), ((80.0, 10.0), 3)], before, 9.5) == [0, 1]
    # a die landed on the spares unseen: the one farthest from every spare's place is thrown
    assert spares_left_out([((10.0, 10.0), 5), ((45.0, 10.0), 2)], before, 9.5, landed=True) == [0]


def test_settled_track_ends_and_their_distance():
    rest = [(0.0, 600.0, 200.0), (0.1, 601.0, 200.0), (0.2, 601.0, 200.5)]
    apart = [(0.0, 640.0, 200.0), (0.1, 640.0, 201.0), (0.2, 640.0, 201.0)]
    flying = [(0.0, 500.0, 200.0), (0.1, 560.0, 200.0), (0.2, 620.0, 200.0)]   # moved 120 mm
    ends = settled_on_table([rest, apart, flying], GEO, TOL)
    assert ends == [(601.0, 200.5), (640.0, 201.0)]
    assert ends_apart(ends, (601.0, 201.0), (641.0, 201.0), GEO.size, TOL) == pytest.approx(math.hypot(39.0, 0.5))
    # both dice nearest the same end: the track cannot tell them apart
    assert ends_apart(ends, (601.0, 201.0), (603.0, 201.0), GEO.size, TOL) is None


def test_two_tracks_ending_on_the_die_seen_put_the_other_die_under_it():
    a = [(0.0, 500.0, 200.0), (0.1, 600.0, 200.0), (0.2, 600.0, 200.0)]
    b = [(0.0, 500.0, 300.0), (0.1, 604.0, 203.0), (0.2, 604.0, 203.0)]
    found = stacked_under([a, b], [(602.0, 201.0)], ["playing"], GEO, TOL)
    assert found == pytest.approx((5.0, math.hypot(0.0, 0.5)))
    # the same ends, the die seen 10 mm away (more than stacked_offset 0.375 side): side by side
    assert stacked_under([a, b], [(612.0, 201.5)], ["playing"], GEO, TOL) is None


def test_two_dice_closer_than_on_die_ratio_are_one_on_the_other():
    scene, _ = place_dice([die(600.0, 200.0, 3), die(610.0, 204.0, 4, flat=True)], GEO, TOL, None)
    scene.values = list(scene.dice)
    on_die, hidden = find_dice_on_dice(scene, [0, 1], [], None)
    assert on_die.count(True) == 1 and hidden == []
    assert "rests on the other, (k)(1)" in scene.notes[-1]


def test_a_lone_die_region_of_two_dice_hides_the_lower_die():
    r = die(600.0, 200.0, 3)
    big = DieReading(value=3, bbox=r.bbox, centre=r.centre, confidence=0.97, flat=True, side_px=r.side_px * 1.7)
    scene, _ = place_dice([big], GEO, TOL, None)
    scene.values = list(scene.dice)
    on_die, hidden = find_dice_on_dice(scene, [0], [], None)
    assert on_die == [True] and len(hidden) == 1 and hidden[0].value is None


def test_a_die_leaning_on_the_side_of_a_flat_die_read_surely_does_not_rest_on_top_of_it():
    leaning = die(600.0, 200.0, 5, flat=False, extra={"p_flat_tilt": 0.1})
    other = die(614.0, 200.0, 2, conf=0.95, extra={"p_flat_tilt": 0.9})
    assert leans_beside(leaning, other)
    assert not leans_beside(leaning, die(614.0, 200.0, 2, conf=0.8, extra={"p_flat_tilt": 0.9}))


def test_contacts_name_the_stack_the_rail_and_the_other_die():
    chips = TableObject(600.0, 200.0, 19.5, 6.6)
    scene, _ = place_dice([die(600.0 + 19.5 + 5.0, 200.0, 4), die(600.0 + 19.5 + 24.0, 200.0, 2)], GEO, TOL, None)
    around = Surroundings(scene, [0, 1], [chips])
    support, edge, lean = around.contacts(0)
    assert support == ["chips at (600, 200)"] and edge == [] and lean == ["the other die"]
    assert around.rims == {0: {"chips at (600, 200)"}}
    # die 1 is 24 mm beyond the rim: more than contact_margin 0.9 side (17.1 mm): not touching it
    assert around.contacts(1) == ([], [], ["the other die"])


def test_a_die_cocked_on_one_stack_counts_the_face_seen_and_on_two_is_void():
    low = TableObject(600.0, 200.0, 19.5, 6.6)
    scene, _ = place_dice([die(626.0, 200.0, 4, flat=False), die(800.0, 400.0, 2)], GEO, TOL, None)
    scene.values = list(scene.dice)
    assert judge_cocked_dice(scene, [0, 1], [False, False], [low], load_profile("ny-5324")) == [1, 0]
    assert scene.values[0].value == 4
    assert "bottom side 3 rests on chips at (600, 200); the opposite face 4 counts, (h)(1)(i)" in scene.notes[-1]
    # a second stack on its other side: two sides rest on objects
    other = TableObject(626.0 + 19.5 + 8.0, 200.0, 19.5, 6.6)
    scene, _ = place_dice([die(626.0, 200.0, 4, flat=False), die(800.0, 400.0, 2)], GEO, TOL, None)
    scene.values = list(scene.dice)
    assert judge_cocked_dice(scene, [0, 1], [False, False], [low, other], load_profile("ny-5324")) == [2, 0]
    assert scene.notes[-1].endswith("void, (h)(1)(i)")
