"""Equality of the dice reader's outputs with a saved reference: for speed work that must not
change what the reader returns.

Reads every photo of ``../shared/data/dice-photos`` (topdown-tray: all 250; oblique-webcam:
train and valid, 396) with ``vision.reader.read_dice`` (default method: the learned reader;
one OpenCV / onnxruntime thread), prints the number of dice and a digest of the readings
(SHA-256, 16 hex digits; equal digests: equal outputs, bit for bit), and saves them
(``--save REF.json``, run on the unchanged code first) or compares them with such a file
(``--compare REF.json``):

* the same number of dice in every photo, and per die (in the reader's order) the same
  ``value`` and ``flat``;
* ``bbox`` within ``--bbox-tol`` pixels (default 0.5; it is integer, so: equal), ``centre`` and
  ``side_px`` within ``--px-tol`` pixels (default 0.5);
* ``confidence`` and every number of ``extra`` (``p``, ``p_flat``, ``p_flat_tilt``, ``p_cocked``,
  ``centre_score``; those are rounded to 4 decimals by the reader) within ``--p-tol``
  (default 1e-4); ``extra["reason"]`` equal.

Prints the counts (photos, dice, values/flats/counts that differ) and the largest differences,
and exits 1 when any value, flat or die count differs or a tolerance is exceeded. Without the
photos (no ``../shared``) it says so and exits 0 (``make bench`` runs it without arguments).

Run: ``python bench/reader_equivalence.py --save /tmp/ref.json`` on the reference code, then
``python bench/reader_equivalence.py --compare /tmp/ref.json`` on the changed code. The reference
code can be another commit's tree: ``git archive REF | tar -x -C /tmp/ref`` and
``PYTHONPATH=/tmp/ref python bench/reader_equivalence.py --save /tmp/ref.json`` (``PYTHONPATH``
comes before the editable install on ``sys.path``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import cv2

ROOT = Path(__file__).resolve().parents[1]
PHOTOS = ROOT.parent / "shared" / "data" / "dice-photos"


def photo_paths(photos: Path) -> list[Path]:
    """The photos read: topdown-tray/images/*.jpg, then oblique-webcam/{train,valid}/*.jpg
    (sorted; paths absolute)."""
    out = sorted((photos / "topdown-tray" / "images").glob("*.jpg"))
    for split in ("train", "valid"):
        out += sorted((photos / "oblique-webcam" / split).glob("*.jpg"))
    return out


def reading_dict(d) -> dict:
    """A :class:`vision.types.DieReading` as plain JSON numbers (unrounded floats)."""
    return {"value": d.value, "flat": bool(d.flat), "bbox": [int(v) for v in d.bbox],
            "centre": [float(d.centre[0]), float(d.centre[1])], "confidence": float(d.confidence),
            "side_px": float(d.side_px), "extra": d.extra}


def read_all(paths: list[Path], photos: Path) -> tuple[dict, float]:
    """``({relative path: [reading dict]}, seconds of CPU time spent in read_dice)``."""
    from vision.reader import read_dice

    out, cpu = {}, 0.0
    for p in paths:
        img = cv2.imread(str(p))
        c0 = time.process_time()
        readings = read_dice(img)
        cpu += time.process_time() - c0
        out[str(p.relative_to(photos))] = [reading_dict(d) for d in readings]
    return out, cpu


def _numbers(v) -> list[float]:
    """The numbers of an ``extra`` entry (a number or a list of numbers), flattened."""
    return [float(x) for x in (v if isinstance(v, list) else [v])]


def compare(ref: dict, new: dict, bbox_tol: float, px_tol: float, p_tol: float) -> int:
    """Print the differences of ``new`` from ``ref``; returns the number of failures."""
    bad_count = bad_value = bad_flat = bad_tol = dice = 0
    worst = {"bbox": 0.0, "centre": 0.0, "side_px": 0.0, "confidence": 0.0, "extra": 0.0}
    for name in sorted(ref):
        a, b = ref[name], new.get(name)
        if b is None or len(a) != len(b):
            bad_count += 1
            print(f"  {name}: {len(a)} dice -> {None if b is None else len(b)}")
            continue
        for k, (da, db) in enumerate(zip(a, b)):
            dice += 1
            if da["value"] != db["value"]:
                bad_value += 1
                print(f"  {name} die {k}: value {da['value']} -> {db['value']}")
            if da["flat"] != db["flat"]:
                bad_flat += 1
                print(f"  {name} die {k}: flat {da['flat']} -> {db['flat']}")
            diffs = {"bbox": max(abs(x - y) for x, y in zip(da["bbox"], db["bbox"])),
                     "centre": max(abs(x - y) for x, y in zip(da["centre"], db["centre"])),
                     "side_px": abs(da["side_px"] - db["side_px"]),
                     "confidence": abs(da["confidence"] - db["confidence"])}
            ea, eb = da["extra"], db["extra"]
            ex = 0.0
            if set(ea) != set(eb) or ea.get("reason") != eb.get("reason"):
                ex = float("inf")
            else:
                for key in ea:
                    if key == "reason":
                        continue
                    na, nb = _numbers(ea[key]), _numbers(eb[key])
                    ex = max(ex, float("inf") if len(na) != len(nb) else
                             max((abs(x - y) for x, y in zip(na, nb)), default=0.0))
            diffs["extra"] = ex
            for key, v in diffs.items():
                worst[key] = max(worst[key], v)
            tol = {"bbox": bbox_tol, "centre": px_tol, "side_px": px_tol, "confidence": p_tol, "extra": p_tol}
            over = [key for key, v in diffs.items() if v > tol[key] + 1e-12]
            if over:
                bad_tol += 1
                print(f"  {name} die {k}: beyond tolerance: " + ", ".join(f"{key} {diffs[key]:.3g}" for key in over))
    print(f"photos {len(ref)}, dice compared {dice}: die count differs in {bad_count} photos, "
          f"value differs {bad_value}, flat differs {bad_flat}, beyond tolerance {bad_tol}")
    print("largest differences: " + ", ".join(f"{k} {v:.3g}" for k, v in worst.items()))
    return bad_count + bad_value + bad_flat + bad_tol


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--save", type=Path, help="write the readings to this JSON file")
    g.add_argument("--compare", type=Path, help="compare the readings with this JSON file")
    ap.add_argument("--photos", type=Path, default=PHOTOS, help=f"the dice-photos directory (default {PHOTOS})")
    ap.add_argument("--bbox-tol", type=float, default=0.5, help="pixels (default 0.5)")
    ap.add_argument("--px-tol", type=float, default=0.5, help="centre and side_px, pixels (default 0.5)")
    ap.add_argument("--p-tol", type=float, default=1e-4, help="confidence and extra numbers (default 1e-4)")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    paths = photo_paths(args.photos)
    if not paths:
        print(f"reader equivalence: no photos under {args.photos}, nothing compared")
        return 0
    readings, cpu = read_all(paths, args.photos)
    n = sum(len(v) for v in readings.values())
    digest = hashlib.sha256(json.dumps(readings, sort_keys=True).encode()).hexdigest()[:16]
    print(f"read {len(paths)} photos, {n} dice, CPU {cpu:.1f} s ({1000 * cpu / len(paths):.1f} ms a photo), "
          f"readings sha256 {digest}")
    if args.save:
        args.save.write_text(json.dumps(readings))
        print(f"saved to {args.save}")
        return 0
    if args.compare is None:
        return 0
    return 1 if compare(json.loads(args.compare.read_text()), readings, args.bbox_tol, args.px_tol, args.p_tol) else 0


if __name__ == "__main__":
    sys.exit(main())
