"""Irregularity verdicts on the simulated table (a few seeds per scenario), against the verdict the
profile gives for the simulator's ground truth; and the motion tracker on rendered frames."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from controller.irregularity_profile import load_profile
from controller.track import ThrowTracker

pytest.importorskip("mujoco")
scenarios = pytest.importorskip("simulator.scenarios")

_spec = importlib.util.spec_from_file_location(
    "irregularity_bench", Path(__file__).resolve().parents[1] / "bench" / "irregularity_bench.py")
B = importlib.util.module_from_spec(_spec)
sys.modules["irregularity_bench"] = B  # dataclasses look the module up
_spec.loader.exec_module(B)

SIMS: dict = {}


PROFILES = ("ny-5324", "nj-13-47", "house-practice")


@pytest.fixture(scope="module")
def bench():
    return B.Bench(load_profile("ny-5324"), "truth")


#: scenario -> (ny-5324, nj-13-47, house-practice) verdict kind and reason code (seed 0 and 1)
CASES = {
    "natural": (("roll", None), ("roll", None), ("roll", None)),
    "die-on-die": (("no-roll", "far-wall-missed"), ("boxperson", "die-on-die"), ("no-roll", "far-wall-missed")),
    "in-dice-cup": (("no-roll", "far-wall-missed"), ("boxperson", "die-in-dice-cup"),
                    ("no-roll", "far-wall-missed")),
    "on-rail": (("no-roll", "far-wall-missed"), ("boxperson", "die-on-rail"), ("no-roll", "far-wall-missed")),
    "cocked-two-objects": (("no-roll", "far-wall-missed"), ("no-roll", "die-on-several-objects"),
                           ("no-roll", "far-wall-missed")),
    "cocked-on-chips": (("no-roll", "far-wall-missed"), ("boxperson", "die-not-flat"),
                        ("no-roll", "far-wall-missed")),
    "still-moving": (("no-roll", "not-at-rest"),) * 3,
}


@pytest.mark.parametrize("scenario, seed", [(s, 0) for s in CASES] + [("natural", 1), ("die-on-die", 1)])
def test_verdict_per_scenario_matches_ground_truth(bench, scenario, seed):
    seen = bench.observe(scenario, seed)
    for k, name in enumerate(PROFILES):
        row = bench.decide(seen, load_profile(name))
        kind, reason = CASES[scenario][k]
        got_reason = None if row["got"][1] is None else row["got"][1].value
        assert (row["got"][0], got_reason) == (kind, reason), (name, row)
        assert row["right"], (name, row)
        if kind == "roll":
            assert row["got"][2] == row["expected"][2]


def test_off_table_is_void_in_every_profile(bench):
    seen = bench.observe("off-table", 0)
    for name in PROFILES:
        row = bench.decide(seen, load_profile(name))
        assert row["got"][0] == "no-roll" and row["expected"][0] == "no-roll", (name, row)


def test_tracker_follows_both_dice_into_the_far_wall_band():
    """Rendered frames of a natural throw: both tracks reach the far-wall band; a short throw's
    do not."""
    bench = B.Bench(load_profile("ny-5324"), "camera")
    for scenario, reached in (("natural", True), ("short-throw", False)):
        th = B.simulate(scenario, 0, SIMS, 60.0, keep_poses=True)
        g = th.plan.geometry
        ren = bench.renderer(g)
        cal = B.calibration_for(ren, g)
        tr = ThrowTracker(cal, die_side_px=cal.die_side_px((550.0, 280.0)))
        tr.set_background(ren.background)
        for k in range(0, min(len(th.poses) - 1, 40)):
            tr.add(th.times[k], B.render(th, ren, k))
        tracks = tr.tracks()
        assert all(len(t) > 5 for t in tracks)
        far = [max(p[1] for p in t) for t in tracks]
        assert all(x > g.length - g.far_wall_band for x in far) is reached, (scenario, far)


def test_tracker_rejects_frames_before_background():
    tr = ThrowTracker(None, die_side_px=17.0)
    with pytest.raises(RuntimeError, match="before set_background"):
        tr.add(0.0, np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="die_side_px"):
        ThrowTracker(None, die_side_px=0)
