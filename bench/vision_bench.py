"""Speed of the dice reader: median and p95 milliseconds per 640x640 photo on one core.

Uses the topdown-tray photos in ../shared/data/dice-photos when present (640x640), else
synthetic 640x640 frames of drawn dice. Run: ``python bench/vision_bench.py [--n N]``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "dice-photos" / "topdown-tray" / "images"


def frames(n: int) -> tuple[str, list[np.ndarray]]:
    """Return (source name, list of uint8 BGR 640x640 frames)."""
    if SHARED.is_dir():
        paths = sorted(SHARED.glob("*.jpg"))[:n]
        return str(SHARED), [cv2.imread(str(p)) for p in paths]
    sys.path.insert(0, str(ROOT / "tests"))
    from test_vision_faces import draw_die, table

    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        img = table(640, 640, seed=i)
        for _ in range(rng.integers(2, 8)):
            c = (float(rng.uniform(60, 580)), float(rng.uniform(60, 580)))
            draw_die(img, c, 36, float(rng.uniform(0, 90)), int(rng.integers(1, 7)), (40, 40, 200), (240, 240, 240))
        out.append(img)
    return "synthetic", out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=60, help="number of photos (default 60)")
    ap.add_argument("--repeat", type=int, default=2, help="passes over the photos (default 2)")
    ap.add_argument("--reader", choices=["classical", "learned", "both"], default="both",
                    help="which dice reader (vision.reader.read_dice method; default both)")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    source, imgs = frames(args.n)
    for method in (["classical", "learned"] if args.reader == "both" else [args.reader]):
        bench(method, source, imgs, args.repeat)
    return 0


def bench(method: str, source: str, imgs: list, repeat: int) -> None:
    """Print wall and CPU median / p95 / max ms per photo of ``read_dice(method=method)``."""
    import functools

    from vision.reader import read_dice as _read_dice

    read_dice = functools.partial(_read_dice, method=method)
    read_dice(imgs[0])  # warm-up (the learned reader loads its models)
    times, cpu = [], []
    for _ in range(repeat):
        for img in imgs:
            t0, c0 = time.perf_counter(), time.process_time()
            read_dice(img)
            times.append((time.perf_counter() - t0) * 1000.0)
            cpu.append((time.process_time() - c0) * 1000.0)
    times.sort()
    cpu.sort()

    def p95(v: list[float]) -> float:
        return v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))]

    print(f"vision ({method}): {len(times)} reads of {len(imgs)} 640x640 photos from {source}, 1 thread")
    print(f"vision ({method}): wall median {statistics.median(times):.2f} ms  p95 {p95(times):.2f} ms  max {times[-1]:.2f} ms")
    print(f"vision ({method}): cpu  median {statistics.median(cpu):.2f} ms  p95 {p95(cpu):.2f} ms "
          "(CPU time: less disturbed by other load on the machine)")


if __name__ == "__main__":
    sys.exit(main())
