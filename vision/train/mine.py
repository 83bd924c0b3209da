"""Hard negatives for the face classifier: where the current detector fires on something
that is not a labelled die (casino chips, pip-like prints, tray corners), in the *fit* part
of the train data. Each becomes several augmented class-6 crops ("not one readable die").

Usage: ``python -m vision.train.mine --sim /tmp/vml/sim --cache /tmp/vml/cache`` (after a
first ``export``); writes ``CACHE/hard.npz`` which ``train face`` adds to ``face.npz``.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import cv2
import numpy as np

import vision.learned as L
from vision.train import data as D


def mine(samples: list[D.Sample], per_fp: int, seed: int) -> dict[str, np.ndarray]:
    """Hard negatives from ``samples``: a detection of the learned reader (its face and centre
    thresholds set to 0 in this process) 0.45 die sides or more from every labelled die is a
    false detection, each turned into ``per_fp`` jittered, photometrically changed crops. Returns
    the arrays of ``hard.npz``: ``x`` uint8 ``(N, 48, 48, 3)`` BGR, ``y`` int64 ``(N,)`` all
    :data:`vision.train.data.NOT_A_FACE` (6), ``flat`` float32 ones, ``wflat`` float32 zeros
    (flatness not trained), ``src`` ``"hard"``.

    Raises:
        ValueError: no false detection at all (nothing to stack).
    """
    rng = np.random.default_rng(seed)
    L.FACE_MIN, L.CENTRE_SURE = 0.0, 0.0
    xs, n_fp = [], 0
    for smp in samples:
        img = smp.load()
        for r in L.read_dice_learned(img, expected_side_px=smp.side_px):
            x, y = r.centre
            size = r.bbox[2] - r.bbox[0]
            if any(math.hypot(x - d.cx, y - d.cy) < 0.45 * d.size for d in smp.dice):
                continue
            n_fp += 1
            for _ in range(per_fp):
                c = D.crop(img, x + rng.uniform(-0.1, 0.1) * size, y + rng.uniform(-0.1, 0.1) * size,
                           size * rng.uniform(0.85, 1.2), float(rng.uniform(0, 360)))
                xs.append(D.photometric(c, rng))
    print(f"{n_fp} false detections in {len(samples)} images", flush=True)
    n = len(xs)
    return {"x": np.stack(xs), "y": np.full(n, D.NOT_A_FACE, np.int64), "flat": np.ones(n, np.float32),
            "wflat": np.zeros(n, np.float32), "src": np.array(["hard"] * n)}


def main() -> None:
    """``python -m vision.train.mine [--sim DIR] [--cache DIR] [--per-fp 6]``: mine the fit parts
    of the photos and renders and write ``CACHE/hard.npz`` (:func:`mine`, seed 7).
    """
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sim", type=Path, default=Path("/tmp/vml/sim"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/vml/cache"))
    ap.add_argument("--per-fp", type=int, default=6)
    a = ap.parse_args()
    cv2.setNumThreads(1)
    fit = D.topdown("fit") + D.oblique("fit") + D.sim(a.sim, "fit")
    np.savez(a.cache / "hard.npz", **mine(fit, a.per_fp, 7))


if __name__ == "__main__":
    main()
