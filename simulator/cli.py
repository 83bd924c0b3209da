"""``craps-table sim``: simulate throws and write their frames (PNG) and ground truth (JSON).

Example::

    craps-table sim --scenario cocked-on-chips --seed 3 --out /tmp/cocked3

writes ``/tmp/cocked3/frame_000000.png ...`` and ``/tmp/cocked3/truth.json``::

    {"scenario": ..., "seed": ..., "fps": ..., "width": ..., "height": ...,
     "homography_px_to_mm": [[...], [...], [...]], "zones_mm": {...}, "die_side_px": ...,
     "throws": [{"throw": 0, "seed": 3, "irregularities": [...], "dice": [...final truth...]}],
     "frames": [{"file": "frame_000000.png", "index": 0, "t": 0.0, ...Frame.truth...}, ...]}

Frames are written to a temporary folder beside ``--out`` and renamed into place at the end, so
an interrupted run leaves no half-written output.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .scenarios import SCENARIOS


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table sim``."""
    parser.add_argument("--scenario", default="natural", help=f"one of: {', '.join(SCENARIOS)}")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first throw (default 0)")
    parser.add_argument("--out", type=Path, required=True, help="output folder (created; must be empty if it exists)")
    parser.add_argument("--throws", type=int, default=1, help="number of throws (default 1)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--fps", type=float, default=60.0)
    parser.add_argument("--every", type=int, default=1, help="write every N-th frame (truth for all)")
    parser.add_argument("--noise", type=float, default=None, help="sensor noise sigma, grey levels")
    parser.add_argument("--blur", type=float, default=None, help="optical blur sigma, pixels")
    parser.add_argument("--die-colour", choices=("red", "white"), default=None)


#: CameraConfig field -> the option that sets it (for messages)
_OPTION_OF = {"width": "--width", "height": "--height", "fps": "--fps", "noise_sigma": "--noise",
              "blur_sigma": "--blur", "die_colour": "--die-colour"}


def _argument_error(exc: ValueError) -> str:
    """One line naming the option and what is wrong, from a pydantic ValidationError (or any
    ValueError, whose text is used as it is)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for e in errors():
        field = str(e.get("loc", ("?",))[-1]) if e.get("loc") else "?"
        parts.append(f"{_OPTION_OF.get(field, field)} {e.get('input')!r}: {e.get('msg')}")
    return "; ".join(parts) or str(exc)


def run(command: str, args: argparse.Namespace) -> int:
    """Simulate and write. Returns 0, or 2 on bad arguments or an unusable ``--out``."""
    import cv2  # imported here so that argument errors are quick

    from .geometry import CameraConfig
    from .source import SimSource

    if args.scenario not in SCENARIOS:
        print(f"craps-table sim: unknown scenario {args.scenario!r}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    if args.throws < 1 or args.every < 1:
        print("craps-table sim: --throws and --every must be >= 1", file=sys.stderr)
        return 2
    out: Path = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"craps-table sim: --out {out} exists and is not an empty folder", file=sys.stderr)
        return 2
    extra = {}
    if args.noise is not None:
        extra["noise_sigma"] = args.noise
    if args.blur is not None:
        extra["blur_sigma"] = args.blur
    if args.die_colour is not None:
        extra["die_colour"] = args.die_colour
    try:
        camera = CameraConfig(**extra)
        src = SimSource(args.scenario, args.seed, width=args.width, height=args.height, fps=args.fps,
                        throws=args.throws, camera=camera)
    except ValueError as exc:
        print(f"craps-table sim: bad argument: {_argument_error(exc)}", file=sys.stderr)
        return 2
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:
        print(f"craps-table sim: cannot write under {out.parent}: {exc}", file=sys.stderr)
        return 2
    try:
        frames, throws = [], []
        for f in src.frames():
            entry = {"index": f.index, "t": f.t, **(f.truth or {})}
            if f.index % args.every == 0:
                name = f"frame_{f.index:06d}.png"
                if not cv2.imwrite(str(tmp / name), f.image, [cv2.IMWRITE_PNG_COMPRESSION, 1]):
                    raise OSError(f"cannot write {tmp / name}")
                entry = {"file": name, **entry}
            frames.append(entry)
            tr = f.truth or {}
            if tr.get("phase") == "rest" and (not throws or throws[-1]["throw"] != tr["throw"]):
                throws.append({"throw": tr["throw"], "seed": tr["seed"], "throw_t": tr.get("throw_t"),
                               "irregularities": tr.get("irregularities", []), "dice": tr["dice"]})
        doc = {
            "scenario": args.scenario, "seed": args.seed, "fps": args.fps,
            "width": args.width, "height": args.height,
            "homography_px_to_mm": src.homography.tolist(),
            "zones_mm": {k: [list(p) for p in v] for k, v in src.table_zones.items()},
            "die_side_px": src.die_side_px,
            "throws": throws, "frames": frames,
        }
        with open(tmp / "truth.json", "w") as fh:
            json.dump(doc, fh)
            fh.flush()
            os.fsync(fh.fileno())
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        src.close()
    n_png = sum(1 for f in frames if "file" in f)
    summary = "; ".join(f"throw {t['throw']}: {[d['value'] for d in t['dice']]} {t['irregularities'] or 'valid'}" for t in throws)
    print(f"wrote {n_png} frames and truth.json to {out} ({summary})")
    return 0
