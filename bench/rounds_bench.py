"""Round cycle figures: rounds per hour reached and the time from "no more bets" to the result.

1. The round driver on a fake rig (fake clock, shaker done after ``shake_ms``, dice at rest 1.0 to
   2.5 s after the throw, 15 % no rolls re-thrown): table-clock rounds per hour with the pace cap
   of ``[rounds]`` (default 72 s: 50 an hour) and without it, and the CPU cost per round.
2. The real service (``TableService`` + ``SimSource`` throwing on command + ``SimulatedMcu``
   shaker on a pseudo-terminal + the bus on ipc://): frame-clock and wall-clock figures.

    .venv/bin/python bench/rounds_bench.py [--rounds 1000] [--service-rounds 4]
"""
from __future__ import annotations

import argparse
import random
import statistics
from collections import Counter
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.automation import RoundDriver  # noqa: E402
from controller.reasons import Reason  # noqa: E402
from controller.rounds import RoundCycle, RoundsConfig  # noqa: E402
from controller.verdict import Verdict  # noqa: E402


def fake_rig(cfg: RoundsConfig, rounds: int, seed: int = 0) -> dict:
    """Run ``rounds`` rounds of the driver on a fake rig; returns the figures."""
    rng = random.Random(seed)
    clock = {"t": 0.0}
    events: list[dict] = []
    jobs: list[tuple[float, object]] = []

    class Lifecycle:
        phase = "waiting"

        def arm(self):
            pass

    class Shaker:
        def start(self, action, ms, intensity):
            jobs.append((clock["t"] + ms / 1000.0, lambda: driver.shaker_done("completed")))

    cycle = RoundCycle("BENCH", cfg, clock=lambda: clock["t"], publish=events.append)
    n = {"roll": 0}

    def publish(v: Verdict):
        n["roll"] += 1
        driver.verdict_published({"roll_id": f"B-{n['roll']}", "verdict": v.kind,
                                   "reason": v.reason.value if v.reason else None,
                                   "dice": list(v.dice) if v.dice else None}, clock["t"])

    def rest():
        if rng.random() < 0.15:
            v = Verdict("no-roll", Reason.DIE_OUTSIDE_AREA, None)
        else:
            v = Verdict("roll", None, (rng.randint(1, 6), rng.randint(1, 6)))
        publish(driver.review(v, clock["t"]))

    def thrown():
        jobs.append((clock["t"] + 0.1, lambda: driver.throw_started(clock["t"])))
        jobs.append((clock["t"] + 0.1 + rng.uniform(1.0, 2.5), rest))

    driver = RoundDriver(cycle, lifecycle=Lifecycle(), shaker=Shaker(), trigger=thrown, wall=lambda: clock["t"])
    dt = 1 / 30
    cpu0 = time.process_time()
    while driver.rounds_done < rounds and not cycle.stopped:
        driver.on_frame(clock["t"], False)
        due = [j for j in jobs if j[0] <= clock["t"] + 1e-9]
        for j in due:
            jobs.remove(j)
            j[1]()
        clock["t"] += dt
    cpu = time.process_time() - cpu0
    res = [e for e in events if e["event"] == "results"]
    opens = [e["t"] for e in events if e["event"] == "bets-open"]
    span = opens[len(res)] - opens[0] if len(opens) > len(res) else clock["t"]
    return {"rounds": len(res), "per_hour": 3600.0 * len(res) / span,
            "close_to_result": [e["closed_to_result_s"] for e in res], "cpu_ms_per_round": 1000 * cpu / max(1, len(res)),
            "rethrows": sum(len(e["rethrown"]) for e in res)}


def service_rounds(rounds: int) -> dict:
    """Run ``rounds`` rounds through the real service on the simulated table and MCU."""
    from bus.config import BusConfig
    from bus.publisher import RollPublisher
    from controller.automation import attach_simulated_rig
    from controller.config import load_config
    from controller.lamps import NullLampDriver
    from controller.service_cli import build_service
    from simulator.source import SimSource

    wall: dict[tuple[str, str], float] = {}
    frame_t: list[float] = []
    with tempfile.TemporaryDirectory(prefix="rounds-bench-") as d:
        d = Path(d)
        base = load_config(REPO / "config" / "table.toml")
        bus = BusConfig.local(d / "bus", transport="ipc", table_id=base.table.id)
        rc = RoundsConfig(bets_open_s=0.5, min_round_s=0, results_s=0.3, shake_ms=300, no_motion_s=1.0)
        cfg = base.model_copy(update={"bus": bus, "metrics": None, "rounds": rc,
                                      "state": base.state.model_copy(update={"db": d / "state.sqlite"}),
                                      "boxperson": base.boxperson.model_copy(update={"endpoint": "", "timeout_s": 0.5})})
        source = SimSource("natural", seed=11, width=960, height=540, fps=30, idle_s=0.4, rest_s=0.6)
        publisher = RollPublisher(bus, cfg.table.id)
        results: list[dict] = []
        reasons: list[str] = []

        def on_message(topic, body, env):
            if topic == "roll":
                reasons.append(body["reason"] or "roll")
            if topic == "round":
                wall[(body["round_id"], body["event"])] = time.monotonic()
                if body["event"] == "results":
                    results.append(body)
                if body["event"] == "bets-open":
                    frame_t.append(body["t"])

        service, _ = build_service(cfg, source, publisher=publisher, lamp_driver=NullLampDriver(), on_message=on_message)
        driver, closers = attach_simulated_rig(service, rc, mode="automated", source=source)
        service.closers.extend(closers)
        t0 = time.monotonic()
        try:
            service.run(source, should_stop=lambda: driver.rounds_done >= rounds or driver.cycle.stopped
                        or time.monotonic() - t0 > 300)
        finally:
            service.close()
            publisher.close()
            source.close()
        elapsed = time.monotonic() - t0
    walls = [wall[(r["round_id"], "results")] - wall[(r["round_id"], "no-more-bets")] for r in results]
    span_t = (results[-1]["t"] - frame_t[0]) if results and frame_t else None
    return {"rounds": len(results), "wall_s": elapsed, "close_to_result_frame": [r["closed_to_result_s"] for r in results],
            "close_to_result_wall": walls, "per_hour_frame": 3600.0 * len(results) / span_t if span_t else None,
            "per_hour_wall": 3600.0 * len(results) / elapsed, "rethrows": sum(len(r["rethrown"]) for r in results),
            "stopped": driver.cycle.stop_cause, "reasons": reasons}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--service-rounds", type=int, default=4)
    args = ap.parse_args()
    for label, cfg in (("capped, [rounds] defaults (min_round_s 72)", RoundsConfig()),
                       ("uncapped (bets 10 s, results 3 s, min_round_s 0)", RoundsConfig(min_round_s=0))):
        r = fake_rig(cfg, args.rounds)
        c = r["close_to_result"]
        print(f"fake rig, {label}: {r['rounds']} rounds, {r['per_hour']:.1f} rounds/hour (table clock), "
              f"{r['rethrows']} re-throws; no-more-bets -> result median {statistics.median(c):.2f} s, "
              f"p95 {pct(c, 0.95):.2f} s, max {max(c):.2f} s; driver CPU {r['cpu_ms_per_round']:.2f} ms/round")
    if args.service_rounds > 0:
        s = service_rounds(args.service_rounds)
        cf, cw = s["close_to_result_frame"], s["close_to_result_wall"]
        print(f"service + SimSource + SimulatedMcu (bets 0.5 s, shake 0.3 s, no cap): {s['rounds']} rounds in "
              f"{s['wall_s']:.1f} s wall = {s['per_hour_wall']:.0f} rounds/hour wall"
              + (f", {s['per_hour_frame']:.0f} rounds/hour frame clock" if s["per_hour_frame"] else "")
              + f", {s['rethrows']} re-throws; verdicts {dict(Counter(s['reasons']))}"
              + (f"; STOPPED: {s['stopped']}" if s["stopped"] else ""))
        if cf:
            print(f"  no-more-bets -> result: frame clock median {statistics.median(cf):.2f} s (max {max(cf):.2f}); "
                  f"wall median {statistics.median(cw):.2f} s (max {max(cw):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
