"""Time from dice at rest to the roll message published, through the whole table service.

Measures, per verdict, the wall time from the arrival of the deciding frame (the frame that
completes ``still_frames`` still frames) to ``RollPublisher.publish`` returning (journalled,
signed, sent on loopback TCP): motion detection, dice reading, verdict, game state, SQLite
commit, bus. Prints median and p95 for:

1. the real dice reader on replayed dice photos (``../shared/data/dice-photos/topdown-tray``, or
   ``tests/data/dice``), 640x640;
2. a stand-in reader on synthetic 1280x720 frames: the controller and bus cost alone;
3. the real reader on the simulated table (960x540, 30 fps), with the detection delay in table
   time from the simulator's first "rest" frame to the verdict's frame.

From the physical rest, add the detection delay: the wait that proves the dice are at rest, at
most ``still_frames / fps`` (8 / 30 fps = 267 ms with the shipped config); measured in table time
on the simulated table.

Usage: ``.venv/bin/python bench/service_bench.py [--photos N] [--throws N]``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bus.config import BusConfig  # noqa: E402
from bus.publisher import RollPublisher  # noqa: E402
from camera.base import Frame  # noqa: E402
from controller.config import TableConfig  # noqa: E402
from controller.lamps import NullLampDriver  # noqa: E402
from controller.service_cli import build_service  # noqa: E402
from vision.types import DieReading  # noqa: E402


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values``, nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def report(name: str, lat: list[float], extra: str = "") -> None:
    ms = [x * 1000 for x in lat]
    print(f"{name:<44} n={len(ms):>4}  median {statistics.median(ms):7.2f} ms  p95 {pct(ms, 0.95):7.2f} ms  {extra}")


def make(tmp: Path, reader=None):
    cfg = TableConfig.model_validate({"table": {"id": "bench"}, "lamps": {"driver": "none"},
                                      "state": {"db": str(tmp / "state.sqlite")}})
    bus = BusConfig.local(tmp / "bus", transport="tcp", table_id="bench")
    pub = RollPublisher(bus, "bench")
    service, _ = build_service(cfg, None, publisher=pub, lamp_driver=NullLampDriver(), reader=reader)
    return cfg, service, pub


def bench_photos(n: int) -> None:
    from camera.replay import ReplaySource
    from vision.reader import read_dice

    folder = None
    for cand in (REPO.parent / "shared" / "data" / "dice-photos" / "topdown-tray" / "images", REPO / "tests" / "data" / "dice"):
        if cand.is_dir():
            folder = cand
            break
    if folder is None:
        print("real reader: no photos found (../shared/data/dice-photos or tests/data/dice); skipped")
        return
    cv2.setNumThreads(1)
    with tempfile.TemporaryDirectory() as d:
        cfg, service, pub = make(Path(d), read_dice)
        still = cfg.vision.still_frames
        src = ReplaySource(folder, fps=30, hold_frames=still + 4, empty_frames=still + 2, limit=n)
        t0 = time.perf_counter()
        stats = service.run(src)
        wall = time.perf_counter() - t0
        service.close()
        pub.close()
    report("real reader, 640x640 photos (topdown-tray)", list(stats.latencies_s),
           f"[{stats.frames} frames in {wall:.1f} s; verdicts {stats.verdicts}]")


def bench_synthetic(throws: int) -> None:
    def reader(image):
        return [DieReading(3, (100, 100, 140, 140), (120.0, 120.0), 0.99, True, 40.0),
                DieReading(4, (300, 100, 340, 140), (320.0, 120.0), 0.99, True, 40.0)] if image[120, 120, 0] > 200 else []

    empty = np.full((720, 1280, 3), 70, np.uint8)
    dice = empty.copy()
    dice[100:140, 100:140] = 255
    dice[100:140, 300:340] = 255
    with tempfile.TemporaryDirectory() as d:
        cfg, service, pub = make(Path(d), reader)
        service.start()
        still = cfg.vision.still_frames
        t, i = 0.0, 0
        per_frame = []
        for k in range(throws):
            shifted = np.roll(dice, 37 * (k % 5 + 1), axis=1)
            for img in [empty] * (still + 2) + [shifted] + [dice] * (still + 2):
                f0 = time.perf_counter()
                service.process(Frame(img, t, i))
                per_frame.append(time.perf_counter() - f0)
                t += 1 / 30
                i += 1
        service.close()
        pub.close()
    report("stand-in reader, 1280x720 synthetic frames", list(service.stats.latencies_s))
    report("  per frame (motion detection etc.)", per_frame)


def bench_sim(throws: int) -> None:
    try:
        from simulator.source import SimSource
    except ImportError:
        print("simulated table: not in this build; skipped")
        return
    with tempfile.TemporaryDirectory() as d:
        src = SimSource("natural", seed=11, width=960, height=540, fps=30, throws=throws)
        cfg = TableConfig.model_validate({"table": {"id": "bench"}, "lamps": {"driver": "none"},
                                          "state": {"db": str(Path(d) / "state.sqlite")}})
        bus = BusConfig.local(Path(d) / "bus", transport="tcp", table_id="bench")
        pub = RollPublisher(bus, "bench")
        service, _ = build_service(cfg, src, publisher=pub, lamp_driver=NullLampDriver())
        service.start()
        first_rest: dict[int, float] = {}
        delays = []
        t0 = time.perf_counter()
        for frame in src.frames():
            truth = frame.truth or {}
            if truth.get("phase") == "rest":
                first_rest.setdefault(truth.get("throw"), frame.t)
            body = service.process(frame)
            if body is not None and truth.get("throw") in first_rest:
                delays.append(frame.t - first_rest[truth["throw"]])
        wall = time.perf_counter() - t0
        service.close()
        pub.close()
    report("real reader, simulated table 960x540", list(service.stats.latencies_s),
           f"[{throws} throws, {service.stats.frames} frames in {wall:.1f} s; verdicts {service.stats.verdicts}]")
    if delays:
        print(f"{'  detection delay (table time, truth rest -> verdict)':<44} n={len(delays):>4}  median "
              f"{statistics.median(delays) * 1000:7.1f} ms  max {max(delays) * 1000:7.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--photos", type=int, default=20)
    ap.add_argument("--throws", type=int, default=100)
    ap.add_argument("--sim-throws", type=int, default=5)
    args = ap.parse_args()
    print("time from dice at rest (deciding frame received) to roll message published")
    bench_synthetic(args.throws)
    bench_photos(args.photos)
    bench_sim(args.sim_throws)
    print("from the physical rest add the detection delay: at most still_frames / fps (8 / 30 fps = 266.7 ms "
          "with the shipped config), less when the last slow roll is already below the motion threshold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
