"""``craps-table read`` and ``craps-table eval``: the dice reader on photographs.

``read IMAGE... [--json] [--annotate OUT_DIR]``: one line per image (a JSON object with
``--json``); with ``--annotate`` a PNG per image with each die's box and value drawn. An
unreadable file is reported on stderr by name and the exit status is 2, but the other
images are still read; a truncated or corrupt JPEG/PNG is refused by name
(``camera.imagefile.load_image``) rather than read as a half-grey picture.

``eval IMAGES_DIR LABELS_DIR [--list FILE]``: YOLO labels (class 0..5 = face 1..6); prints
recall, precision, face accuracy over matched dice, the share of images with every die
right, the 6x6 confusion matrix and the median milliseconds per image.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np

from camera.argtypes import positive_float
from camera.base import FrameError
from camera.imagefile import load_image


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``read`` or ``eval``."""
    if command == "read":
        parser.add_argument("images", nargs="+", type=Path, metavar="IMAGE", help="photographs to read")
        parser.add_argument("--json", action="store_true", help="one JSON object per image per line")
        parser.add_argument("--annotate", type=Path, metavar="OUT_DIR", help="write a PNG per image with boxes and values")
        parser.add_argument("--side-px", type=positive_float, default=None, help="expected die side in pixels (calibration)")
    elif command == "eval":
        parser.add_argument("images_dir", type=Path, metavar="IMAGES_DIR")
        parser.add_argument("labels_dir", type=Path, metavar="LABELS_DIR")
        parser.add_argument("--list", type=Path, metavar="FILE", help="only the image names listed in FILE (one per line), e.g. a test split")
        parser.add_argument("--errors", action="store_true", help="also list every wrong, null, missed and extra die")
    else:  # pragma: no cover - the dispatcher only routes read/eval here
        raise ValueError(f"vision.cli has no command {command!r}")


def annotate(image: np.ndarray, readings: list) -> np.ndarray:
    """Return a BGR copy of ``image`` with each die's box and value (``?`` for None)
    drawn; green for a flat die read, orange for not flat, red for unread."""
    out = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR) if image.ndim == 2 else image.copy()
    for r in readings:
        x0, y0, x1, y1 = r.bbox
        colour = (0, 0, 255) if r.value is None else ((0, 200, 0) if r.flat else (0, 140, 255))
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), colour, 2)
        text = "?" if r.value is None else str(r.value)
        cv2.putText(out, text, (x0, max(12, y0 - 3)), cv2.FONT_HERSHEY_SIMPLEX, 0.6, colour, 2)
    return out


#: ``read --side-px`` warns when the dice read surely without it measure more than this
#: factor off the size given (a wrong size puts windows across two dice or on pips: a 5 read
#: as a 6 at p 0.96 with the side given 2.3x too large).
SIDE_DISAGREES = 1.6


def side_disagreement(img: np.ndarray, side_px: float) -> float | None:
    """The median side (pixels) of the dice the reader reads surely (value, confidence >= 0.9)
    in ``img`` (numpy uint8, (H, W, 3) BGR or (H, W) grey) without a size given, where it is
    more than :data:`SIDE_DISAGREES` times off ``side_px`` (pixels); else None (they agree, or
    nothing is read surely: dice too small in the frame to be measured without the size)."""
    from vision.reader import read_dice

    sure = [r.side_px for r in read_dice(img) if r.value is not None and r.confidence >= 0.9]
    if not sure:
        return None
    m = float(np.median(sure))
    return m if max(m / side_px, side_px / m) > SIDE_DISAGREES else None


def _run_read(args: argparse.Namespace) -> int:
    from vision.reader import read_dice

    status = 0
    if args.annotate:
        try:
            args.annotate.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = "exists and is not a folder" if isinstance(exc, FileExistsError) else (exc.strerror or str(exc))
            print(f"craps-table read: --annotate {args.annotate}: cannot create the output folder: {reason}",
                  file=sys.stderr)
            return 2
    for path in args.images:
        try:
            img = load_image(path)
        except FrameError as exc:
            print(f"craps-table read: {exc}", file=sys.stderr)
            status = 2
            continue
        t0 = time.perf_counter()
        try:
            readings = read_dice(img, expected_side_px=args.side_px)
        except FrameError as exc:
            print(f"craps-table read: {path}: {exc}", file=sys.stderr)
            status = 2
            continue
        ms = (time.perf_counter() - t0) * 1000.0
        if args.side_px is not None and (measured := side_disagreement(img, args.side_px)) is not None:
            print(f"craps-table read: {path}: warning: --side-px {args.side_px:g} but the dice read without it "
                  f"measure about {measured:.0f} px: values read at a wrong size can be wrong", file=sys.stderr)
        h, w = img.shape[:2]
        if args.json:
            obj = {"image": str(path), "width": int(w), "height": int(h), "ms": round(ms, 2),
                   "dice": [r.to_json() for r in readings]}
            print(json.dumps(obj), flush=True)
        else:
            vals = " ".join("?" if r.value is None else str(r.value) for r in readings)
            print(f"{path}: {len(readings)} dice: {vals} ({ms:.1f} ms)", flush=True)
        if args.annotate:
            out = args.annotate / (path.stem + ".png")
            try:
                written = cv2.imwrite(str(out), annotate(img, readings))
            except cv2.error as exc:
                written, why = False, str(exc).strip().splitlines()[-1] if str(exc).strip() else "cv2.error"
            else:
                why = "OpenCV could not write it (folder not writable, or a folder of that name)"
            if not written:
                print(f"craps-table read: --annotate: cannot write {out}: {why}", file=sys.stderr)
                status = 2
    return status


def _run_eval(args: argparse.Namespace) -> int:
    from vision.evaluate import LabelError, evaluate, image_pairs

    for d in (args.images_dir, args.labels_dir):
        if not d.is_dir():
            print(f"craps-table eval: {d}: not a directory", file=sys.stderr)
            return 2
    only = None
    if args.list is not None:
        if not args.list.is_file():
            print(f"craps-table eval: {args.list}: no such file", file=sys.stderr)
            return 2
        try:
            text = args.list.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            print(f"craps-table eval: --list {args.list}: not a UTF-8 text file of image names",
                  file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"craps-table eval: --list {args.list}: cannot be read: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
        only = [ln.strip() for ln in text.splitlines() if ln.strip()]
    try:
        pairs = image_pairs(args.images_dir, args.labels_dir, only)
    except LabelError as exc:
        print(f"craps-table eval: {exc}", file=sys.stderr)
        return 2
    if not pairs:
        print(f"craps-table eval: no images in {args.images_dir}", file=sys.stderr)
        return 2
    try:
        rep = evaluate(pairs)
    except (LabelError, FrameError) as exc:
        print(f"craps-table eval: {exc}", file=sys.stderr)
        return 2
    print(rep.format())
    if args.errors:
        for r in rep.images:
            for e in r.errors:
                print(f"{r.image}: {e}")
    return 0


def run(command: str, args: argparse.Namespace) -> int:
    """Run ``read`` or ``eval``; returns the exit status (2 for bad input)."""
    if command == "read":
        return _run_read(args)
    return _run_eval(args)
