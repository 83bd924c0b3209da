"""Render simulated throws (``simulator``) with per-die truth, as training data.

Each throw is simulated to rest and rendered once; the image goes to ``OUT/sim_<k>.png`` and
the truth to ``OUT/sim_<k>.json`` (``[{"value", "centre_px", "bbox_px", "flat", "rests_on",
"value_up", "tilt_deg", "sides"}]``: ``value_up`` the face most nearly up whatever the tilt,
``tilt_deg`` its normal's angle from the vertical in degrees, ``sides`` ``[face, object]`` per
load-bearing contact).
Seeds start at 10000 so that the throws measured by ``simulator.accuracy`` (seeds 0..) are
never trained on. Camera settings (die colour, lighting, noise, blur, resolution) vary per
throw for robustness.

Usage: ``python -m vision.train.sim_data OUT_DIR --throws 300``
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import cv2
import numpy as np


def render_throws(out: Path, throws: int, first_seed: int = 10000, scenarios: list[str] | None = None) -> int:
    """Write ``throws`` rendered throws to ``out``; returns the number of dice written.

    ``scenarios``: render only these (cycled), e.g. the dice leaning on a wall, the cup or the
    other die of ``simulator.scenarios.EXTRA_SCENARIOS``; a die not lying flat in them gets no
    face label (``"value": null``: which face is up is not defined for a die tilted ~45
    degrees), only its ``flat`` label."""
    from simulator.geometry import CameraConfig
    from simulator.physics import TableSim
    from simulator.render import DicePose, Renderer
    from simulator.scenarios import SCENARIOS, plan_throw, run_throw

    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(first_seed)
    renderers: dict = {}
    sims: dict = {}
    n = 0
    for k in range(throws):
        seed = first_seed + k
        # mostly natural throws, a share of every forced scenario (cocked dice, chips, rails)
        if scenarios:
            scen = scenarios[k % len(scenarios)]
        else:
            scen = "natural" if rng.random() < 0.6 else str(rng.choice([s for s in SCENARIOS if s != "still-moving"]))
        plan = plan_throw(scen, seed)
        cam = CameraConfig(
            die_colour=str(rng.choice(["red", "white"])),
            brightness=float(rng.uniform(0.75, 1.25)),
            noise_sigma=float(rng.uniform(1.0, 5.0)),
            blur_sigma=float(rng.uniform(0.3, 1.2)),
            layout_lines=bool(rng.random() < 0.85),
        )
        key = (plan.geometry, cam)
        if key not in renderers:
            if len(renderers) > 8:
                renderers.clear()
            renderers[key] = Renderer(plan.geometry, cam, seed=int(rng.integers(1 << 30)))
        if plan.geometry not in sims:
            sims[plan.geometry] = TableSim(plan.geometry)
        r, sim = renderers[key], sims[plan.geometry]
        res = run_throw(plan, sim)
        poses = [DicePose(s.pos_mm, s.quat) for s in res.states]
        image = r.render([[p] for p in poses], seed)
        dice = []
        for s, p in zip(res.states, poses):
            if s.rests_on == "off-table":
                continue
            u, v = r.die_centre_px(p)
            value = None if scenarios and not s.flat else int(s.value)
            dice.append({"value": value, "centre_px": [float(u), float(v)],
                         "bbox_px": [float(x) for x in r.die_bbox_px(p)], "flat": bool(s.flat),
                         "rests_on": s.rests_on, "value_up": int(s.value), "tilt_deg": float(s.tilt_deg),
                         "sides": [[int(c["face"]), str(c["on"])] for c in s.sides]})
        side = r.g.die_size / r.cam.mm_per_px
        cv2.imwrite(str(out / f"sim_{seed}.png"), image)
        (out / f"sim_{seed}.json").write_text(json.dumps({"scenario": scen, "side_px": side, "dice": dice}))
        n += len(dice)
    return n


def main() -> None:
    """``python -m vision.train.sim_data OUT [--throws 300] [--first-seed 10000] [--scenarios ...]``:
    :func:`render_throws` into OUT, then print how many dice were written. Needs MuJoCo.
    """
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--throws", type=int, default=300)
    ap.add_argument("--first-seed", type=int, default=10000)
    ap.add_argument("--scenarios", nargs="*", help="render only these scenarios (cycled); a cocked die's face "
                                                   "is then not labelled")
    a = ap.parse_args()
    print(render_throws(a.out, a.throws, a.first_seed, a.scenarios), "dice")


if __name__ == "__main__":
    main()
