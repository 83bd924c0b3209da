"""The reader's two flatness estimates by what a die touches, on the simulated camera.

For each seeded throw of the given scenarios (simulator/scenarios.py) the frame at rest is
rendered and read (``vision.reader.read_dice``, calibrated die size, as in
``bench/irregularity_bench.py --mode camera``). Each die found (a reading within 12 px of its
upper face's centre) is put in one context by the simulator's ground truth: beside the rail
(centre within 1.1 sides of the playing area's edge), beside the other die (centres within 1.35
sides), both, beside a chip stack (within 0.9 side of its edge), or on open felt. Per context it
prints how many dice not lying flat (tilt above 3 degrees) each estimate calls flat (P(flat) >=
0.5), and how many flat dice each calls not flat: the face classifier's ``extra["p_flat"]`` and
the tilt classifier's ``extra["p_flat_tilt"]``. The controller's choice between them by context
(``Tolerances.tilt_decides_off_walls``, controller/irregularity.py; docs/irregularities-log.md,
fourteenth session) rests on these counts; run it on a rig's own camera model before changing it.

Run::

    .venv/bin/python bench/flatness_bench.py --throws 20 --first-seed 1900
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_module import irregularity_bench  # noqa: E402
from controller.felt import dist_to_boundary  # noqa: E402
from simulator.geometry import CHIP_DIAMETER_MM  # noqa: E402
from simulator.render import DicePose  # noqa: E402

DEFAULT_SCENARIOS = ("cocked-on-die", "cocked-on-chips", "cocked-two-objects", "flat-on-one-chip",
                     "cocked-on-rail-wall", "flat-beside-stack", "cocked-on-tall-stack", "natural")


def context(st, states, geometry) -> str:
    """Where die state ``st`` lies, from the ground truth (see the module docstring)."""
    side = geometry.die_size
    x, y = float(st.pos_mm[0]), float(st.pos_mm[1])
    rail = dist_to_boundary(np.asarray(geometry.zones()["playing"], float), (x, y)) < 1.1 * side
    die = any(o is not st and math.hypot(o.pos_mm[0] - x, o.pos_mm[1] - y) < 1.35 * side for o in states)
    if rail and die:
        return "the rail and the other die"
    if rail:
        return "the rail"
    if die:
        return "the other die"
    if any(math.hypot(s.x - x, s.y - y) < CHIP_DIAMETER_MM / 2 + 0.9 * side for s in geometry.stacks):
        return "a chip stack"
    return "open felt"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--throws", type=int, default=20, help="seeded throws per scenario")
    ap.add_argument("--first-seed", type=int, default=1900)
    ap.add_argument("--scenarios", nargs="*", default=list(DEFAULT_SCENARIOS))
    args = ap.parse_args(argv)
    B = irregularity_bench()
    bench = B.Bench(B.load_profile("ny-5324"), "camera")
    # context -> [not flat, face says flat, tilt says flat, flat, face says not, tilt says not]
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * 6)
    t0 = time.perf_counter()
    found = missed = 0
    for scenario in args.scenarios:
        for seed in range(args.first_seed, args.first_seed + args.throws):
            seen = bench.observe(scenario, seed)
            th = seen["throw"]
            ren = bench.renderer(th.plan.geometry)
            for st in th.states:
                if st.rests_on not in ("felt", "chips", "die"):
                    continue
                cx, cy = ren.die_centre_px(DicePose(st.pos_mm, st.quat))
                near = min(seen["readings"], key=lambda r: math.hypot(r.centre[0] - cx, r.centre[1] - cy), default=None)
                if near is None or math.hypot(near.centre[0] - cx, near.centre[1] - cy) > 12 \
                        or "p_flat_tilt" not in near.extra:
                    missed += 1
                    continue
                found += 1
                face, tilt = near.extra["p_flat"] >= 0.5, near.extra["p_flat_tilt"] >= 0.5
                c = counts[context(st, th.states, th.plan.geometry)]
                if st.flat:
                    c[3] += 1
                    c[4] += not face
                    c[5] += not tilt
                else:
                    c[0] += 1
                    c[1] += face
                    c[2] += tilt
    print(f"flatness estimates: {args.throws} throws x {len(args.scenarios)} scenarios from seed "
          f"{args.first_seed}, {found} dice read ({missed} not found or without a tilt estimate), "
          f"{time.perf_counter() - t0:.0f} s")
    print(f"{'beside':28s} {'not flat':>9s} {'face: flat':>11s} {'tilt: flat':>11s} {'flat':>6s} "
          f"{'face: not':>10s} {'tilt: not':>10s}")
    for name in ("open felt", "a chip stack", "the other die", "the rail", "the rail and the other die"):
        n, ff, tf, m, fn, tn = counts.get(name, [0] * 6)
        print(f"{name:28s} {n:9d} {ff:11d} {tf:11d} {m:6d} {fn:10d} {tn:10d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
