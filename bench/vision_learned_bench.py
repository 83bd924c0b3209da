"""Speed of the learned dice reader (vision.learned): median and p95 milliseconds per 640x640
photo on one core (``cv2.setNumThreads(1)``), wall and CPU time.

Uses the topdown-tray photos in ../shared/data/dice-photos when present (640x640), else
synthetic 640x640 frames of drawn dice. Run: ``python bench/vision_learned_bench.py [--n N]``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import cv2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from vision_bench import frames  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=60, help="number of photos (default 60)")
    ap.add_argument("--repeat", type=int, default=2, help="passes over the photos (default 2)")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    from vision.learned import read_dice_learned

    source, imgs = frames(args.n)
    read_dice_learned(imgs[0])  # warm-up (loads the models)
    times, cpu = [], []
    for _ in range(args.repeat):
        for img in imgs:
            t0, c0 = time.perf_counter(), time.process_time()
            read_dice_learned(img)
            times.append((time.perf_counter() - t0) * 1000.0)
            cpu.append((time.process_time() - c0) * 1000.0)
    times.sort()
    cpu.sort()

    def p95(v: list[float]) -> float:
        return v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))]

    print(f"vision-learned: {len(times)} reads of {len(imgs)} 640x640 photos from {source}, 1 thread")
    print(f"vision-learned: wall median {statistics.median(times):.2f} ms  p95 {p95(times):.2f} ms  max {times[-1]:.2f} ms")
    print(f"vision-learned: cpu  median {statistics.median(cpu):.2f} ms  p95 {p95(cpu):.2f} ms "
          "(CPU time: less disturbed by other load on the machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
