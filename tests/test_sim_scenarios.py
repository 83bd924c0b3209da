"""Throws: natural outcomes are fair, each forced scenario produces its irregularity.

Physics only (no rendering). The full figures (3,000 natural throws, 200 seeds per scenario)
are printed by ``bench/sim_bench.py --full``; these tests use fewer to stay fast:
400 natural throws and 20 seeds per scenario; with CRAPS_FULL_COUNTS=1 (``make test`` sets it)
the issue's 3,000 natural throws.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from simulator.physics import TableSim
from simulator.scenarios import SCENARIOS, plan_throw, run_throw
from simulator.stats import SUM_PROBS, chi2_uniform

N_NATURAL = 3000 if os.environ.get("CRAPS_FULL_COUNTS") == "1" else 400
N_SCENARIO = 20


@pytest.fixture(scope="module")
def natural_outcomes():
    sim = None
    out = []
    for seed in range(N_NATURAL):
        plan = plan_throw("natural", seed)
        sim = sim or TableSim(plan.geometry)
        out.append(run_throw(plan, sim))
    return out


@pytest.mark.slow
def test_natural_throws_are_uniform(natural_outcomes):
    v = np.array([o.values for o in natural_outcomes])
    for die in (0, 1):
        counts = np.bincount(v[:, die], minlength=7)[1:]
        assert chi2_uniform(counts)[1] > 0.001, f"die {die}: {counts}"
    sums = np.bincount(v.sum(axis=1), minlength=13)[2:]
    assert chi2_uniform(sums, SUM_PROBS)[1] > 0.001, f"totals 2..12: {sums}"


@pytest.mark.slow
def test_natural_throws_are_mostly_valid_rolls(natural_outcomes):
    valid = sum(not o.irregularities() for o in natural_outcomes)
    assert valid / len(natural_outcomes) > 0.9
    assert all(not o.moving for o in natural_outcomes)
    times = [o.t for o in natural_outcomes]
    assert 0.7 < float(np.median(times)) < 4.0


def test_same_seed_same_throw_and_seeds_differ():
    a = run_throw(plan_throw("natural", 11))
    b = run_throw(plan_throw("natural", 11))
    assert a.values == b.values and np.allclose(a.states[0].pos_mm, b.states[0].pos_mm)
    c = run_throw(plan_throw("natural", 12))
    assert not np.allclose(a.states[0].pos_mm, c.states[0].pos_mm)


def test_unknown_scenario_is_named_in_the_error():
    with pytest.raises(ValueError, match="unknown scenario 'cocked'.*cocked-on-chips"):
        plan_throw("cocked", 1)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS[1:])
def test_scenario_produces_its_irregularity(scenario):
    hits = 0
    sim = None
    for seed in range(N_SCENARIO):
        plan = plan_throw(scenario, seed)
        if sim is None or sim.geometry != plan.geometry:
            sim = TableSim(plan.geometry)
        if scenario in run_throw(plan, sim).irregularities():
            hits += 1
    assert hits >= 0.95 * N_SCENARIO, f"{scenario}: {hits}/{N_SCENARIO}"


def test_cocked_die_truth_names_the_side_on_the_chips():
    o = run_throw(plan_throw("cocked-on-chips", 5))
    d = o.states[o.plan.forced_die]
    assert d.rests_on == "chips" and not d.flat and 10.0 < d.tilt_deg < 45.0
    on_chips = [s["face"] for s in d.sides if s["on"] == "chips"]
    # 9 NYCRR 5324.52(h)(1)(i): the side opposite the one resting on the chips is skyward
    assert len(on_chips) == 1 and 7 - on_chips[0] == d.value


def test_die_on_die_rests_on_the_other_die():
    o = run_throw(plan_throw("die-on-die", 2))
    top = o.states[o.plan.forced_die]
    assert top.rests_on == "die" and top.flat
    assert top.pos_mm[2] == pytest.approx(1.5 * o.plan.geometry.die_size, abs=1.0)


def test_dice_set_beside_and_leaning_on_tall_stacks_rest_as_placed():
    """``flat-beside-stack``: the forced die lies flat on the felt within 4 mm of a 3-6 chip
    stack; ``cocked-on-tall-stack``: it leans on a 4-6 chip stack's side, resting on the felt
    and the chips (9 NYCRR 5324.52(h)(1)(i)), tilted 25-50 degrees. Stacks anywhere on the
    layout, so the tilt classifier learns them beyond the places the other scenarios use."""
    from simulator.geometry import CHIP_DIAMETER_MM
    places = set()
    for seed in range(10):
        o = run_throw(plan_throw("flat-beside-stack", seed))
        d = o.states[o.plan.forced_die]
        g = o.plan.geometry
        assert d.flat and d.rests_on == "felt" and not o.moving, (seed, d)
        gap = min(np.hypot(d.pos_mm[0] - s.x, d.pos_mm[1] - s.y) - CHIP_DIAMETER_MM / 2 for s in g.stacks if s.chips >= 3)
        assert g.die_size / 2 - 0.5 < gap < g.die_size / np.sqrt(2) + 4.5, (seed, gap)
        places.add((round(d.pos_mm[0], -2), round(d.pos_mm[1], -2)))
        o = run_throw(plan_throw("cocked-on-tall-stack", seed))
        d = o.states[o.plan.forced_die]
        assert not d.flat and d.rests_on == "chips" and 25.0 < d.tilt_deg < 50.0, (seed, d)
        assert sorted(s["on"] for s in d.sides) == ["chips", "felt"]
        near = min(o.plan.geometry.stacks, key=lambda s: np.hypot(d.pos_mm[0] - s.x, d.pos_mm[1] - s.y))
        assert near.chips >= 4 and np.hypot(d.pos_mm[0] - near.x, d.pos_mm[1] - near.y) < CHIP_DIAMETER_MM / 2 + g.die_size, seed
    assert len(places) >= 5, places


def test_a_die_set_flat_beside_a_low_stack_lies_flat_against_it():
    """``flat-beside-low-stack``: as ``flat-beside-stack`` against a 1-2 chip stack, the height
    a die cocks on (``cocked-on-one-chip``): it lies flat on the felt, its centre half a side to
    a half diagonal + 4 mm from the stack's rim."""
    from simulator.geometry import CHIP_DIAMETER_MM
    for seed in range(6):
        o = run_throw(plan_throw("flat-beside-low-stack", seed))
        d = o.states[o.plan.forced_die]
        g = o.plan.geometry
        assert d.flat and d.rests_on == "felt" and not o.moving, (seed, d)
        gap, chips = min((np.hypot(d.pos_mm[0] - s.x, d.pos_mm[1] - s.y) - CHIP_DIAMETER_MM / 2, s.chips)
                         for s in g.stacks)
        assert chips in (1, 2) and g.die_size / 2 - 0.5 < gap < g.die_size / np.sqrt(2) + 4.5, (seed, gap, chips)


def test_a_die_leaning_on_the_bank_rests_on_the_bank_however_lightly_it_presses():
    """``cocked-on-bank-side``: the forced die leans ~42 degrees on the chip bank's side. The
    felt's friction carries most of it, so the bank pushes on it with 1.7-2.0 % of its weight;
    at the 2 % cut kept for flat dice, 6 of these 40 seeds (4, 22, 31, 32, 36, 38) came out
    "felt, touching nothing". The truth counts every contact of a die not lying flat
    (``simulator.physics.LEAN_FORCE_CUT``), so each rests on the bank, 9 NYCRR 5324.52(k)(2)(iii)."""
    sim = None
    for seed in range(40):
        plan = plan_throw("cocked-on-bank-side", seed)
        if sim is None or sim.geometry != plan.geometry:
            sim = TableSim(plan.geometry)
        d = run_throw(plan, sim).states[plan.forced_die]
        assert not d.flat and 30.0 < d.tilt_deg < 50.0, (seed, d.tilt_deg)
        assert d.rests_on == "bank" and "bank" in {s["on"] for s in d.sides}, (seed, d.rests_on, d.sides)


def test_spare_dice_rest_in_the_cup_and_are_drawn_there():
    """``*-spares`` scenarios keep two or three spare dice in the dice cup (9 NYCRR
    5324.52(a)(5)): static in the physics (the forced die of ``off-table-spares`` still leaves
    the table), drawn into the empty table's frame with their faces up, and read there."""
    import pydantic

    from simulator.geometry import CameraConfig, TableGeometry
    from simulator.render import Renderer
    from vision.reader import read_dice

    with pytest.raises(pydantic.ValidationError, match="face"):
        TableGeometry(spare_dice=[{"face": 7}])
    with pytest.raises(pydantic.ValidationError, match="spare_dice"):
        TableGeometry(spare_dice=[{"face": 1}] * 4)
    plan = plan_throw("off-table-spares", 1)
    g = plan.geometry
    faces = sorted(d.face for d in g.spare_dice)
    assert 2 <= len(faces) <= 3
    out = run_throw(plan)
    assert out.states[plan.forced_die].rests_on == "off-table"
    ren = Renderer(g, CameraConfig(), seed=0)
    cx, cy = g.cup_centre
    side = 19.05 / ren.cam.mm_per_px
    u, v = ren.cam.project(np.array([[cx, cy, 0.0]]))[0]
    seen = [d for d in read_dice(ren.background, expected_side_px=side)
            if np.hypot(d.centre[0] - u, d.centre[1] - v) < g.cup_radius / ren.cam.mm_per_px]
    assert sorted(d.value for d in seen) == faces


def test_a_die_cocked_on_one_chip_rests_on_its_rim_tilted_12_to_14_degrees():
    """``cocked-on-one-chip``: as ``cocked-on-chips`` on a single chip (3.3 mm), so the die is
    tilted only ~12-14 degrees with one side on the chip: still cocked, 9 NYCRR
    5324.52(h)(1)(i). Natural throws left dice so (seeds 18605, 19887: ~10 degrees)."""
    for seed in range(6):
        o = run_throw(plan_throw("cocked-on-one-chip", seed))
        d = o.states[o.plan.forced_die]
        assert not d.flat and d.rests_on == "chips" and 11.0 < d.tilt_deg < 15.0, (seed, d)
        assert sorted(s["on"] for s in d.sides) == ["chips", "felt"]
        assert "cocked-on-chips" in o.irregularities()
        assert sum(s.chips == 1 for s in o.plan.geometry.stacks) >= 1


def test_a_die_cocked_on_a_chip_by_its_corner_tilts_10_to_11_degrees():
    """``cocked-on-chip-corner``: the lower face rests on a single chip's rim near the raised
    edge, off its middle towards a corner, as natural throws 18605, 19887 and 22877 left dice
    (10.1-10.6 degrees): one side on the chip, 9 NYCRR 5324.52(h)(1)(i)."""
    from simulator.geometry import CHIP_DIAMETER_MM
    for seed in range(6):
        o = run_throw(plan_throw("cocked-on-chip-corner", seed))
        d = o.states[o.plan.forced_die]
        assert not d.flat and d.rests_on == "chips" and 9.5 < d.tilt_deg < 11.5, (seed, d)
        assert sorted(s["on"] for s in d.sides) == ["chips", "felt"]
        stack = o.plan.geometry.stacks[-1]
        assert stack.chips == 1
        rim = np.hypot(d.pos_mm[0] - stack.x, d.pos_mm[1] - stack.y) - CHIP_DIAMETER_MM / 2
        assert 9.5 < rim < 12.5, (seed, rim)
