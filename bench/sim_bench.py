"""Simulator speed and statistics.

    .venv/bin/python bench/sim_bench.py            # speed: throws/s, frames/s, one whole throw
    .venv/bin/python bench/sim_bench.py --full     # + 3,000 natural throws (uniformity) and
                                                   #   200 seeds per scenario (success rates)
    .venv/bin/python bench/sim_bench.py --reader 200   # + dice reader accuracy on renders

Prints wall time and this process's CPU time (the machine is shared; CPU time is the fairer
figure for "on one core"). Target (issue 4): a whole throw, 2-4 s of table time at 60 fps,
simulated and rendered at 1280x720 in under 2 s.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.physics import TableSim  # noqa: E402
from simulator.render import DicePose, Renderer  # noqa: E402
from simulator.scenarios import SCENARIOS, plan_throw, run_throw  # noqa: E402
from simulator.source import SimSource  # noqa: E402
from simulator.stats import SUM_PROBS, chi2_uniform  # noqa: E402


class Clock:
    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.w, time.process_time() - self.c


def physics_speed(n: int) -> list:
    sim = None
    outs = []
    with Clock() as ck:
        for seed in range(n):
            plan = plan_throw("natural", seed)
            sim = sim or TableSim(plan.geometry)
            outs.append(run_throw(plan, sim))
    t = [o.t for o in outs]
    print(f"physics: {n} natural throws: {n / ck.wall:.1f} throws/s wall, {n / ck.cpu:.1f} throws/s CPU; "
          f"table time to rest: median {np.median(t):.2f} s, p10 {np.percentile(t, 10):.2f}, "
          f"p90 {np.percentile(t, 90):.2f}, max {max(t):.2f}")
    return outs


def render_speed(n_frames: int) -> None:
    plan = plan_throw("natural", 0)
    out = run_throw(plan)
    r = Renderer(plan.geometry)
    poses = [[DicePose(s.pos_mm, s.quat)] for s in out.states]
    with Clock() as ck:
        for i in range(n_frames):
            r.render(poses, i)
    print(f"render 1280x720, dice at rest: {n_frames / ck.wall:.1f} frames/s wall, {n_frames / ck.cpu:.1f} CPU")


def whole_throw(throws: int) -> None:
    for k in range(throws):
        src = SimSource("natural", 100 + k, throws=1, idle_s=0.0, rest_s=0.0)
        with Clock() as ck:
            frames = list(src.frames())
        motion = [f for f in frames if f.truth["phase"] == "motion"]
        print(f"whole throw seed {100 + k}: {len(motion)} frames ({len(motion) / 60:.2f} s of table time at 60 fps) "
              f"simulated and rendered at 1280x720 in {ck.wall:.2f} s wall, {ck.cpu:.2f} s CPU "
              f"({len(frames) / ck.cpu:.0f} frames/s CPU)")


def uniformity(outs: list) -> None:
    v = np.array([o.values for o in outs])
    for die in (0, 1):
        c = np.bincount(v[:, die], minlength=7)[1:]
        print(f"die {die}: faces 1..6 {c.tolist()}  chi-square p = {chi2_uniform(c)[1]:.4f}")
    s = np.bincount(v.sum(axis=1), minlength=13)[2:]
    print(f"totals 2..12 {s.tolist()}  chi-square p = {chi2_uniform(s, SUM_PROBS)[1]:.4f}")
    irr = Counter(x for o in outs for x in o.irregularities())
    print(f"irregular natural throws: {sum(1 for o in outs if o.irregularities())}/{len(outs)} {dict(irr)}")


def scenario_rates(n: int) -> None:
    for sc in SCENARIOS[1:]:
        hits = 0
        seen: Counter = Counter()
        sim = None
        with Clock() as ck:
            for seed in range(n):
                plan = plan_throw(sc, seed)
                if sim is None or sim.geometry != plan.geometry:
                    sim = TableSim(plan.geometry)
                irr = run_throw(plan, sim).irregularities()
                seen.update(irr)
                hits += sc in irr
        print(f"{sc:20s} {hits}/{n} = {hits / n:.1%}   ({ck.wall:.1f} s)  also: "
              f"{ {k: v for k, v in seen.items() if k != sc} }")


def reader_accuracy(n: int) -> None:
    from simulator.accuracy import reader_accuracy as measure
    with Clock() as ck:
        res = measure(n)
    print(f"dice reader on rendered flat dice of {n} natural throws: {res.right}/{res.total} right "
          f"= {res.rate:.2%}; misread {res.wrong}, unread {res.unread}, not found {res.missed} ({ck.wall:.0f} s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="3,000 natural throws and 200 seeds per scenario")
    ap.add_argument("--throws", type=int, default=None, help="natural throws for the speed/uniformity run")
    ap.add_argument("--seeds", type=int, default=200, help="seeds per scenario with --full")
    ap.add_argument("--reader", type=int, default=0, help="natural throws for the reader accuracy (0: skip)")
    a = ap.parse_args()
    n = a.throws or (3000 if a.full else 100)
    outs = physics_speed(n)
    render_speed(120)
    whole_throw(3)
    if a.full or a.throws:
        uniformity(outs)
    if a.full:
        scenario_rates(a.seeds)
    if a.reader:
        reader_accuracy(a.reader)
    return 0


if __name__ == "__main__":
    sys.exit(main())
