"""The dice reader on photos changed as another camera would change them: scaled, set in a
wider frame (2x and 3x: dice 5 % and 2 % of the long side), grey, JPEG-compressed, darker,
blurred, noisier, turned, over-exposed, inverted, hue-turned, smeared by motion.

Reads the *held-out* train photos (``vision.train.data``: every 8th topdown-tray train photo,
every 6th oblique-webcam train photo; the photos thresholds were chosen on, never trained on)
or, with ``--report``, the report splits (topdown-tray test, oblique-webcam valid). Prints,
per set and transform: dice labelled, detection recall, share of matched dice read right,
wrong numbers, nulls, readings matched to no label, and the median CPU ms per photo (one
OpenCV thread). Matching as ``craps-table eval`` (``vision.evaluate.match``).

Skips (exit 0, saying why) where ``../shared/data/dice-photos`` is absent. Run::

    .venv/bin/python bench/vision_robustness.py [--transforms id,x2.5,pad2,jpeg30] [--report]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vision.evaluate import Label, load_labels, match  # noqa: E402
from vision.reader import read_dice  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "dice-photos"

#: A transform: (image, labels) -> (image, labels); labels are vision.evaluate.Label.
Transform = Callable[[np.ndarray, list[Label]], tuple[np.ndarray, list[Label]]]


def _scaled(f: float) -> Transform:
    def t(img: np.ndarray, labels: list[Label]) -> tuple[np.ndarray, list[Label]]:
        h, w = img.shape[:2]
        out = cv2.resize(img, (int(round(w * f)), int(round(h * f))),
                         interpolation=cv2.INTER_AREA if f < 1 else cv2.INTER_CUBIC)
        return out, [Label(lb.value, tuple(v * f for v in lb.box)) for lb in labels]
    return t


def _framed(k: int) -> Transform:
    """The photo in the middle of a plain frame ``k`` times its size (its median colour)."""
    def t(img: np.ndarray, labels: list[Label]) -> tuple[np.ndarray, list[Label]]:
        h, w = img.shape[:2]
        out = np.empty((k * h, k * w, 3), np.uint8)
        out[:] = np.median(img, axis=(0, 1)).astype(np.uint8)
        oy, ox = (k - 1) * h // 2, (k - 1) * w // 2
        out[oy:oy + h, ox:ox + w] = img
        return out, [Label(lb.value, (lb.box[0] + ox, lb.box[1] + oy, lb.box[2] + ox, lb.box[3] + oy))
                     for lb in labels]
    return t


def _pixels(fn: Callable[[np.ndarray], np.ndarray]) -> Transform:
    return lambda img, labels: (fn(img), labels)


def _jpeg(q: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda img: cv2.imdecode(cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, q])[1], cv2.IMREAD_COLOR)


def _hue_turned(degrees: int) -> Callable[[np.ndarray], np.ndarray]:
    def t(img: np.ndarray) -> np.ndarray:
        hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
        hsv[..., 0] = ((hsv[..., 0].astype(np.int32) + degrees // 2) % 180).astype(np.uint8)
        return cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
    return t


def _turned(img: np.ndarray, labels: list[Label]) -> tuple[np.ndarray, list[Label]]:
    """90 degrees counter-clockwise: (x, y) -> (y, w - x)."""
    w = img.shape[1]
    return (np.ascontiguousarray(np.rot90(img)),
            [Label(lb.value, (lb.box[1], w - lb.box[2], lb.box[3], w - lb.box[0])) for lb in labels])


TRANSFORMS: dict[str, Transform] = {
    "id": lambda img, labels: (img, labels),
    "x0.35": _scaled(0.35), "x0.5": _scaled(0.5), "x1.5": _scaled(1.5), "x2.5": _scaled(2.5),
    "pad2": _framed(2), "pad3": _framed(3),
    "grey": _pixels(lambda img: cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)),
    "jpeg30": _pixels(_jpeg(30)),
    "dark": _pixels(lambda img: (img * 0.45).astype(np.uint8)),
    "blur": _pixels(lambda img: cv2.GaussianBlur(img, (0, 0), 1.2)),
    "noise": _pixels(lambda img: np.clip(img + np.random.default_rng(0).normal(0, 8, img.shape), 0, 255)
                     .astype(np.uint8)),
    "rot90": _turned,
    # thirty-fourth session: over-exposed (white dice vanish into a light table), inverted
    # (light pips on dark dice, dark table), hue turned 120 degrees, horizontal motion blur of
    # 7 px (a shaken hand-held camera)
    "bright": _pixels(lambda img: np.clip(img.astype(np.float32) * 1.6 + 20, 0, 255).astype(np.uint8)),
    "invert": _pixels(lambda img: 255 - img),
    "hue120": _pixels(_hue_turned(120)),
    "motion7": _pixels(lambda img: cv2.filter2D(img, -1, np.full((1, 7), 1 / 7, np.float32))),
}


def photo_sets(report: bool) -> list[tuple[str, list[tuple[Path, Path]]]]:
    """``[(set name, [(image, YOLO label file)])]``."""
    td, ob = SHARED / "topdown-tray", SHARED / "oblique-webcam"
    if report:
        names = sorted((td / "test.txt").read_text().split())
        top = [(td / "images" / n, td / "labels" / (Path(n).stem + ".txt")) for n in names]
        obl = [(p, p.with_suffix(".txt")) for p in sorted((ob / "valid").glob("*.jpg"))]
        return [("topdown test", top), ("oblique valid", obl)]
    names = sorted((td / "train.txt").read_text().split())
    top = [(td / "images" / n, td / "labels" / (Path(n).stem + ".txt")) for k, n in enumerate(names) if k % 8 == 7]
    obl_all = sorted(p.name for p in (ob / "train").iterdir() if p.suffix.lower() == ".jpg")
    obl = [(ob / "train" / n, (ob / "train" / n).with_suffix(".txt")) for k, n in enumerate(obl_all) if k % 6 == 5]
    return [("topdown held-out", top), ("oblique held-out", obl)]


def measure(pairs: list[tuple[Path, Path]], transform: Transform) -> dict[str, float]:
    """Counts over the photos: labels, matched, right, wrong, null, extra, ms (median)."""
    c = dict(labels=0, matched=0, right=0, wrong=0, null=0, extra=0)
    times = []
    for img_path, lab_path in pairs:
        img = cv2.imread(str(img_path))
        h, w = img.shape[:2]
        img, labels = transform(img, load_labels(lab_path, w, h))
        t0 = time.process_time()
        reads = read_dice(img)
        times.append((time.process_time() - t0) * 1000.0)
        pairs_ij = match(reads, labels)
        c["labels"] += len(labels)
        c["matched"] += len(pairs_ij)
        c["extra"] += len(reads) - len(pairs_ij)
        for i, j in pairs_ij:
            v = reads[i].value
            key = "null" if v is None else ("right" if v == labels[j].value else "wrong")
            c[key] += 1
    c["ms"] = float(np.median(times)) if times else 0.0
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transforms", default=",".join(TRANSFORMS),
                    help=f"comma-separated, of: {', '.join(TRANSFORMS)} (default all)")
    ap.add_argument("--report", action="store_true", help="the report splits instead of the held-out train photos")
    args = ap.parse_args()
    names = [t.strip() for t in args.transforms.split(",") if t.strip()]
    unknown = [t for t in names if t not in TRANSFORMS]
    if unknown:
        ap.error(f"unknown transform(s) {unknown}; known: {', '.join(TRANSFORMS)}")
    if not SHARED.is_dir():
        print(f"vision robustness: skipped, {SHARED} is absent (the labelled photos are not shipped)")
        return 0
    cv2.setNumThreads(1)
    print("set               transform  dice  recall   right  wrong  null  extra  cpu ms (median)")
    for set_name, pairs in photo_sets(args.report):
        for t in names:
            c = measure(pairs, TRANSFORMS[t])
            m = max(1, c["matched"])
            print(f"{set_name:17s} {t:9s} {c['labels']:5d} {c['matched'] / max(1, c['labels']):7.2%} "
                  f"{c['right'] / m:7.2%} {c['wrong']:6d} {c['null']:5d} {c['extra']:6d} {c['ms']:8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
