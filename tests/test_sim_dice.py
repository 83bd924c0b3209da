"""The simulated die: pip layout (N.J.A.C. 13:47-20.25(b)2viii), face-up reading, statistics."""
from __future__ import annotations

import math

import numpy as np
import pytest

from simulator.dice import (FACE_NORMALS, PIP_GRID, axis_angle, face_towards, opposite,
                            quat_to_mat, quat_with_face_up, random_rotation, value_up)
from simulator.stats import SUM_PROBS, chi2_sf, chi2_uniform


def test_opposite_faces_sum_to_seven():
    for v, n in FACE_NORMALS.items():
        assert np.allclose(FACE_NORMALS[opposite(v)], -n)
        assert v + opposite(v) == 7
    with pytest.raises(ValueError, match="1..6"):
        opposite(7)


def test_pip_counts_match_values():
    assert {v: len(p) for v, p in PIP_GRID.items()} == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6}


def test_one_two_three_run_counter_clockwise():
    # Western dice: seen from the corner shared by 1, 2, 3 they run counter-clockwise,
    # i.e. (n1 x n2) . n3 > 0.
    assert float(np.cross(FACE_NORMALS[1], FACE_NORMALS[2]) @ FACE_NORMALS[3]) > 0


@pytest.mark.parametrize("value", [1, 2, 3, 4, 5, 6])
def test_value_up_of_a_die_placed_with_that_face_up(value):
    rot = quat_to_mat(quat_with_face_up(value, yaw_rad=0.7))
    got, tilt = value_up(rot)
    assert got == value
    assert tilt == pytest.approx(0.0, abs=1e-6)
    assert face_towards(rot, np.array([0.0, 0.0, -1.0])) == 7 - value


def test_tilted_die_reports_the_face_most_nearly_up_and_its_tilt():
    q = quat_with_face_up(5)
    tilted = axis_angle((1.0, 0.0, 0.0), math.radians(30))
    from simulator.dice import quat_mul
    got, tilt = value_up(quat_to_mat(quat_mul(tilted, q)))
    assert got == 5
    assert tilt == pytest.approx(30.0, abs=1e-6)


def test_random_rotations_favour_no_face():
    rng = np.random.default_rng(1)
    counts = [0] * 6
    for _ in range(6000):
        counts[value_up(quat_to_mat(random_rotation(rng)))[0] - 1] += 1
    assert chi2_uniform(counts)[1] > 0.001


def test_chi_square_tail_matches_tables():
    assert chi2_sf(11.0705, 5) == pytest.approx(0.05, rel=1e-4)
    assert chi2_sf(20.515, 5) == pytest.approx(0.001, rel=1e-3)
    assert chi2_sf(18.307, 10) == pytest.approx(0.05, rel=1e-4)
    assert sum(SUM_PROBS) == pytest.approx(1.0)
    # a loaded die is caught
    assert chi2_uniform([200, 100, 100, 100, 100, 100])[1] < 1e-6
    with pytest.raises(ValueError):
        chi2_uniform([5])
