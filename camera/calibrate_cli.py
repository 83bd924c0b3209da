"""``craps-table calibrate``: find the ArUco markers in one frame and write the table homography.

::

    craps-table calibrate --source picamera2 --out /etc/craps-table/calibration.toml \\
        --snapshot /tmp/calib.png
    craps-table calibrate --source replay:photos/table.png --out config/calibration.toml

Reads ``[layout]`` (markers) and ``[zones]`` from ``--layout`` (default: ``--out`` when it
exists, else ``config/calibration.example.toml`` of this checkout), takes one frame from the
source (after ``--skip`` frames, so a live camera's controls have settled), fits the
homography (camera/calibration.py) and writes ``--out`` atomically with a new
``[homography]``; ``--snapshot`` gets the frame with the zones, a 100 mm grid and the markers
drawn, to check by eye before opening the table.

Exit status: 0 written; 1 calibration failed (markers missing, error too large: nothing is
written); 2 bad input (unreadable layout or image, bad source spec, camera not available).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

from camera.base import FrameError
from camera.calibration import (CalibrationError, calibrate, draw_calibration, load_layout,
                                write_calibration)

EXAMPLE_LAYOUT = Path(__file__).resolve().parents[1] / "config" / "calibration.example.toml"
_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"}


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table calibrate``."""
    parser.add_argument("--source", required=True,
                        help="replay:IMAGE (a photo of the table), replay:DIR|VIDEO, usb:N, usb:/dev/PATH, "
                             "picamera2[:N] or sim[:SCENARIO]")
    parser.add_argument("--out", type=Path, default=Path("config/calibration.toml"),
                        help="calibration TOML to write (default: %(default)s)")
    parser.add_argument("--layout", type=Path, default=None,
                        help="TOML with [layout] markers and [zones] (default: --out if it exists, "
                             "else config/calibration.example.toml)")
    parser.add_argument("--snapshot", type=Path, default=None,
                        help="write the frame with zones and markers drawn to this image (PNG/JPEG)")
    parser.add_argument("--skip", type=int, default=10,
                        help="frames to discard from a live source before the one used (default: %(default)s)")
    parser.add_argument("--camera-config", type=Path, default=None,
                        help="TOML with a [camera] table (exposure, gain...) for usb/picamera2")


def _layout_path(args: argparse.Namespace) -> Path:
    if args.layout is not None:
        return args.layout
    if args.out.exists():
        return args.out
    return EXAMPLE_LAYOUT


def _camera_config(args: argparse.Namespace):
    from camera.sources import CameraConfig, parse_source_spec
    base = CameraConfig()
    if args.camera_config is not None:
        import tomllib
        from pydantic import ValidationError
        try:
            with open(args.camera_config, "rb") as f:
                data = tomllib.load(f).get("camera", {})
            base = CameraConfig.model_validate(data)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"{args.camera_config}: {exc}") from None
        except ValidationError as exc:
            problems = "; ".join(f"camera.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"{args.camera_config}: {problems}") from None
    return parse_source_spec(args.source, base)


def grab_frame(args: argparse.Namespace) -> tuple[np.ndarray, str]:
    """One frame for calibration from ``--source``: ``(image uint8 BGR/grey, source name)``.

    Raises:
        ValueError: a bad source spec or camera config.
        FrameError: an unreadable image, a camera that cannot be opened, a source with no frame.
    """
    kind, _, arg = args.source.partition(":")
    if kind == "replay" and Path(arg).suffix.lower() in _IMAGE_SUFFIXES:
        path = Path(arg)
        if not path.is_file():
            raise FrameError(f"{path}: no such image")
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise FrameError(f"{path}: not a readable image")
        return image, f"replay:{path}"
    from camera.sources import open_source
    cfg = _camera_config(args)
    source = open_source(cfg)
    try:
        live = cfg.source in ("usb", "picamera2")
        skip = max(0, args.skip) if live else 0
        for i, frame in enumerate(source.frames()):
            if i >= skip:
                return frame.image, frame.source or args.source
        raise FrameError(f"{args.source}: the source ended before giving a frame")
    finally:
        source.close()


def _write_image(path: Path, image: np.ndarray) -> None:
    """Write an image atomically (temporary file + rename), keeping its extension."""
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix or ".png"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        if not cv2.imwrite(tmp, image):
            raise OSError(f"{path}: cannot encode an image with extension {suffix!r}")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o644 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run(command: str, args: argparse.Namespace) -> int:
    """Run ``craps-table calibrate``. Returns the exit status (see the module docstring)."""
    layout_path = _layout_path(args)
    try:
        cfile = load_layout(layout_path)
    except CalibrationError as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        return 2
    try:
        image, source_name = grab_frame(args)
    except (ValueError, FrameError, ImportError) as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        return 2
    try:
        result = calibrate(image, cfile.layout, cfile.zones, source=source_name)
    except CalibrationError as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        if args.snapshot is not None:
            # show what the camera saw, with the markers it did find, to fix the set-up
            from camera.calibration import detect_markers
            try:
                found = detect_markers(image, cfile.layout.dictionary)
            except CalibrationError:
                found = {}
            snap = image.copy() if image.ndim == 3 else cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
            for i, c in found.items():
                q = c.round().astype(np.int32).reshape(-1, 1, 2)
                cv2.polylines(snap, [q], True, (0, 255, 255), 2)
                cv2.putText(snap, str(i), tuple(int(v) for v in c.mean(axis=0)), cv2.FONT_HERSHEY_SIMPLEX,
                            0.6, (0, 0, 255), 2)
            _write_image(args.snapshot, snap)
            print(f"craps-table calibrate: frame with the markers found written to {args.snapshot}",
                  file=sys.stderr)
        return 1
    rec = result.record
    write_calibration(args.out, cfile.model_copy(update={"homography": rec}))
    if args.snapshot is not None:
        _write_image(args.snapshot, draw_calibration(image, result.calibration, result.corners_px))
    centre = result.calibration.zones["playing"].mean(axis=0)
    print(f"calibrated from {source_name} ({rec.image_width}x{rec.image_height}): markers {rec.markers_found}"
          + (f", missing {rec.markers_missing}" if rec.markers_missing else "")
          + (f", ignored unknown ids {list(result.unknown_ids)}" if result.unknown_ids else ""))
    print(f"corner error: mean {rec.error_mm_mean:.2f} mm / {rec.error_px_mean:.2f} px, "
          f"max {rec.error_mm_max:.2f} mm / {rec.error_px_max:.2f} px")
    print(f"die side at the centre of the felt: {result.calibration.die_side_px(centre):.1f} px")
    print(f"wrote {args.out}" + (f" and {args.snapshot}" if args.snapshot is not None else ""))
    return 0
