"""Compare dice readers on rendered natural throws, as ``simulator.accuracy`` measures them
(the same seeds 0.., camera and matching: every flat die on the table, nearest reading within
0.7 die sides; right / wrong / unread / missed), plus readings that are no die at all.

Renders are cached in ``--cache`` so both readers see the same frames. Usage::

    python -m vision.train.sim_eval --throws 200 --cache /tmp/vml/simeval
    python -m vision.train.sim_eval --throws 200 --first-seed 200 --cache /tmp/vml/simeval
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import cv2
import numpy as np


def render(cache: Path, throws: int, first_seed: int = 0) -> None:
    """Render the natural throws of seeds ``first_seed`` .. ``first_seed + throws - 1``
    (``simulator.scenarios.plan_throw("natural", seed)``, default ``CameraConfig``) into
    ``cache`` as ``SEED.png`` and ``SEED.json`` (``side_px``: die side in pixels; per die
    ``value``, ``flat``, ``rests_on``, ``centre_px`` in pixels), skipping seeds already there.
    Creates ``cache``; needs MuJoCo.
    """
    from simulator.geometry import CameraConfig
    from simulator.physics import TableSim
    from simulator.render import DicePose, Renderer
    from simulator.scenarios import plan_throw, run_throw

    cache.mkdir(parents=True, exist_ok=True)
    sim = renderer = None
    for seed in range(first_seed, first_seed + throws):
        if (cache / f"{seed}.json").is_file():
            continue
        plan = plan_throw("natural", seed)
        sim = sim or TableSim(plan.geometry)
        renderer = renderer or Renderer(plan.geometry, CameraConfig(), seed=1)
        out = run_throw(plan, sim)
        poses = [DicePose(s.pos_mm, s.quat) for s in out.states]
        image = renderer.render([[p] for p in poses], seed)
        side = renderer.g.die_size / renderer.cam.mm_per_px
        dice = [{"value": int(s.value), "flat": bool(s.flat), "rests_on": s.rests_on,
                 "centre_px": [float(v) for v in renderer.die_centre_px(p)]} for s, p in zip(out.states, poses)]
        cv2.imwrite(str(cache / f"{seed}.png"), image)
        (cache / f"{seed}.json").write_text(json.dumps({"side_px": side, "dice": dice}))


def measure(cache: Path, throws: int, reader, first_seed: int = 0) -> dict:
    """Score ``reader(image, expected_side_px=...)`` on the cached renders as
    ``simulator.accuracy`` does: each flat die on the table is right, wrong, unread (value
    ``None``) or missed (no reading within 0.7 die sides of its centre). Returns a dict of those
    counts, ``extra_valued`` / ``extra_null`` (readings nearest to no die), ``rate`` (right /
    flat dice), ``flat_dice`` and ``median_ms`` (milliseconds per reader call).

    Raises:
        FileNotFoundError: a seed not rendered (call :func:`render` first).
    """
    c = {"right": 0, "wrong": 0, "unread": 0, "missed": 0, "extra_valued": 0, "extra_null": 0, "ms": []}
    for seed in range(first_seed, first_seed + throws):
        t = json.loads((cache / f"{seed}.json").read_text())
        img = cv2.imread(str(cache / f"{seed}.png"))
        side = t["side_px"]
        t0 = time.perf_counter()
        reads = reader(img, expected_side_px=side)
        c["ms"].append((time.perf_counter() - t0) * 1000)
        used = set()
        for d in t["dice"]:
            if d["rests_on"] == "off-table":
                continue
            cx, cy = d["centre_px"]
            near = sorted(range(len(reads)), key=lambda i: np.hypot(reads[i].centre[0] - cx, reads[i].centre[1] - cy))
            if near:
                used.add(near[0])
            if not d["flat"]:
                continue
            if not near or np.hypot(reads[near[0]].centre[0] - cx, reads[near[0]].centre[1] - cy) > 0.7 * side:
                c["missed"] += 1
            elif reads[near[0]].value is None:
                c["unread"] += 1
            elif reads[near[0]].value != d["value"]:
                c["wrong"] += 1
            else:
                c["right"] += 1
        for i, r in enumerate(reads):
            if i not in used:
                c["extra_valued" if r.value is not None else "extra_null"] += 1
    n = c["right"] + c["wrong"] + c["unread"] + c["missed"]
    c["rate"] = c["right"] / max(1, n)
    c["flat_dice"] = n
    c["median_ms"] = float(np.median(c.pop("ms")))
    return c


def main() -> None:
    """``python -m vision.train.sim_eval [--throws 100] [--first-seed 0] [--cache DIR] [--reader
    classical|learned|both]``: :func:`render` the throws, then print :func:`measure` for each
    reader asked for.
    """
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--throws", type=int, default=100)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/vml/simeval"))
    ap.add_argument("--reader", choices=["classical", "learned", "both"], default="both")
    a = ap.parse_args()
    cv2.setNumThreads(1)
    render(a.cache, a.throws, a.first_seed)
    if a.reader in ("classical", "both"):
        from vision.reader import read_dice_classical
        print("classical", measure(a.cache, a.throws, read_dice_classical, a.first_seed), flush=True)
    if a.reader in ("learned", "both"):
        from vision.learned import read_dice_learned
        print("learned", measure(a.cache, a.throws, read_dice_learned, a.first_seed), flush=True)


if __name__ == "__main__":
    main()
