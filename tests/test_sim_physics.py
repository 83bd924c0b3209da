"""The MuJoCo table: geometry validation, the compiled model, resting dice and their truth."""
from __future__ import annotations

import math

import numpy as np
import pydantic
import pytest

from simulator.dice import quat_with_face_up
from simulator.geometry import ChipStack, TableGeometry
from simulator.physics import DieStart, TableSim, build_mjcf


def test_geometry_rejects_unknown_keys_and_misplaced_fittings():
    with pytest.raises(pydantic.ValidationError, match="lenght"):
        TableGeometry(lenght=1000)
    with pytest.raises(pydantic.ValidationError, match="off the playing surface"):
        TableGeometry(stacks=(ChipStack(x=5.0, y=100.0, chips=2),))
    with pytest.raises(pydantic.ValidationError):
        TableGeometry(die_size=25.0)        # larger than 0.775 in (N.J.A.C. 13:47-20.25(b)2i)


def test_zones_are_in_table_millimetres():
    g = TableGeometry()
    z = g.zones()
    assert set(z) == {"playing", "far_wall_band", "chip_bank", "dice_cup", "rails"}
    assert z["playing"] == [(0.0, 0.0), (g.length, 0.0), (g.length, g.width), (0.0, g.width)]
    xs = [p[0] for p in z["far_wall_band"]]
    assert min(xs) == pytest.approx(g.length - g.far_wall_band) and max(xs) == pytest.approx(g.length)
    cx, cy = g.cup_centre
    assert all(math.hypot(x - cx, y - cy) == pytest.approx(g.cup_radius) for x, y in z["dice_cup"])


def test_model_has_dice_of_casino_size_and_mass():
    sim = TableSim(TableGeometry())
    half = sim.model.geom_size[sim.die_geoms[0]]
    assert np.allclose(half * 2000, 19.05, atol=1e-3)            # 0.75 in
    mass = float(sim.model.body_mass[sim.model.geom_bodyid[sim.die_geoms[0]]])
    assert 0.008 < mass < 0.011                                   # about 9 g of cellulose
    assert '<geom name="far_wall_rubber0"' in build_mjcf(TableGeometry())


def _rest(sim, starts, seconds=1.0):
    sim.reset(starts)
    for _ in range(int(seconds * 30)):
        sim.advance(1 / 30)
    return sim.die_states()


def test_dice_set_down_flat_read_their_faces_and_rest_on_felt():
    g = TableGeometry()
    sim = TableSim(g)
    a = g.die_size
    st = _rest(sim, [DieStart((500.0, 250.0, a / 2 + 1), tuple(quat_with_face_up(4, 0.3))),
                     DieStart((700.0, 300.0, a / 2 + 1), tuple(quat_with_face_up(2, 1.1)))])
    assert [s.value for s in st] == [4, 2]
    assert all(s.flat and s.at_rest and s.rests_on == "felt" for s in st)
    assert st[0].sides == [{"face": 3, "on": "felt"}]            # 4 up, so 3 down
    assert not any(s.struck_far_wall for s in st)
    assert not sim.moving()


def test_die_rolled_into_the_far_wall_is_marked_struck():
    g = TableGeometry()
    sim = TableSim(g)
    a = g.die_size
    st = _rest(sim, [DieStart((g.length - 100, 250.0, a / 2 + 1), tuple(quat_with_face_up(1)), vel_mm_s=(900.0, 0, 0)),
                     DieStart((300.0, 300.0, a / 2 + 1), tuple(quat_with_face_up(6)))], seconds=1.5)
    assert st[0].struck_far_wall and not st[1].struck_far_wall
    assert [d for _, d in sim.wall_hits] == [0]
    assert sim.wall_contacts[0] == sim.wall_hits[0] and {d for _, d in sim.wall_contacts} == {0}


def test_far_wall_contacts_include_a_dies_second_strike():
    """Natural throw 135: die 0 strikes the far wall at 0.240 s and again at 0.264 s; die 1
    never touches it. The first contacts (the truth of "struck") list die 0 once; the contacts
    a sensor rings at list both strikes."""
    from simulator.scenarios import plan_throw

    plan = plan_throw("natural", 135)
    sim = TableSim(plan.geometry)
    sim.reset(plan.starts, plan.agitate_s, plan.seed)
    sim.advance(1.0)
    assert [(round(t, 3), d) for t, d in sim.wall_hits] == [(0.24, 0)]
    assert [(round(t, 3), d) for t, d in sim.wall_contacts] == [(0.24, 0), (0.264, 0)]


def test_die_dropped_on_a_chip_stack_rests_on_chips():
    g = TableGeometry()
    s0 = g.stacks[0]
    sim = TableSim(g)
    st = _rest(sim, [DieStart((s0.x, s0.y, s0.height + g.die_size / 2 + 2), tuple(quat_with_face_up(3))),
                     DieStart((600.0, 300.0, g.die_size / 2 + 1), tuple(quat_with_face_up(6)))])
    assert st[0].rests_on == "chips" and st[0].flat and st[0].value == 3
    assert {"face": 4, "on": "chips"} in st[0].sides


def test_reset_needs_two_dice():
    sim = TableSim(TableGeometry())
    with pytest.raises(ValueError, match="two dice"):
        sim.reset([DieStart((1.0, 1.0, 10.0), (1.0, 0.0, 0.0, 0.0))])
