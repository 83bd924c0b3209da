"""``craps-table calibrate``: find the ArUco markers in one frame and write the table homography.

::

    craps-table calibrate --source picamera2 --out /etc/craps-table/calibration.toml \\
        --snapshot /tmp/calib.png
    craps-table calibrate --source replay:photos/table.png --out config/calibration.toml

    craps-table calibrate --source picamera2 --lens-images 'lens/*.png' --board 9x6 \
        --out /etc/craps-table/calibration.toml

Reads ``[layout]`` (markers) and ``[zones]`` from ``--layout`` (default: ``--out`` when it
exists, else ``config/calibration.example.toml`` of this checkout), takes frames from the
source (one photo, or ``--frames`` frames of a live camera after ``--skip`` frames so that its
controls have settled; marker corners are the median over them), fits the homography
(camera/calibration.py) and writes ``--out`` atomically with a new ``[homography]``;
``--snapshot`` gets the frame with the zones, a 100 mm grid and the markers drawn, to check by
eye before opening the table. With ``--lens-images`` the lens distortion is first measured from
chessboard photos (camera/lens.py) and written as ``[lens]``; without it a ``[lens]`` already in
the layout file is used.

Exit status: 0 written; 1 calibration failed (markers missing, error too large, chessboard not
found: nothing is written); 2 bad input (unreadable layout or image, bad source spec, camera not
available, an output path that is a directory or in a directory that does not exist (none is
made), a ``--snapshot`` extension OpenCV cannot write: checked before anything is written).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

from camera.argtypes import non_negative_int, positive_float, positive_int
from camera.base import FrameError
from camera.imagefile import load_image
from camera.calibration import (CalibrationError, calibrate, draw_calibration, load_layout,
                                write_calibration)

EXAMPLE_LAYOUT = Path(__file__).resolve().parents[1] / "config" / "calibration.example.toml"
_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"}


def board_size(text: str) -> tuple[int, int]:
    """argparse ``type`` of ``--board``: chessboard inner corners ``COLSxROWS`` -> ``(cols, rows)``;
    a bad value is reported by argparse naming the option, exit status 2.

    Raises:
        argparse.ArgumentTypeError: not two whole numbers joined by ``x``, or one under 3
            (:func:`camera.lens.calibrate_lens` needs 3x3 inner corners at least).
    """
    try:
        cols, rows = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected COLSxROWS inner corners, e.g. 9x6, got {text!r}") from None
    if cols < 3 or rows < 3:
        raise argparse.ArgumentTypeError(f"expected at least 3x3 inner corners, got {text!r}")
    return cols, rows


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
    parser.add_argument("--skip", type=non_negative_int, default=10,
                        help="frames to discard from a live source before the one used (default: %(default)s)")
    parser.add_argument("--camera-config", type=Path, default=None,
                        help="TOML with a [camera] table (exposure, gain...) for usb/picamera2; "
                             "checked whatever the source")
    parser.add_argument("--frames", type=positive_int, default=None,
                        help="frames of a live source to combine (median corners; default 5, 1 for replay)")
    parser.add_argument("--lens-images", default=None,
                        help="glob of chessboard photos (e.g. 'lens/*.png') to measure the lens distortion "
                             "first; written as [lens]. Without it, the layout file's [lens] is used if any")
    parser.add_argument("--board", type=board_size, default="9x6",
                        help="chessboard inner corners COLSxROWS for --lens-images (default: %(default)s)")
    parser.add_argument("--square-mm", type=positive_float, default=25.0,
                        help="chessboard square side, mm (default: %(default)s)")


def _layout_path(args: argparse.Namespace) -> Path:
    if args.layout is not None:
        return args.layout
    if args.out.exists():
        return args.out
    return EXAMPLE_LAYOUT


def _camera_config(args: argparse.Namespace):
    """The ``CameraConfig`` of ``--source``, over ``--camera-config``'s ``[camera]`` when given
    (read whatever the source, a photo included: a wrong file is never ignored).

    Raises:
        ValueError: a bad source spec; a camera config that cannot be read or has a wrong key,
            naming ``--camera-config`` and the file.
    """
    from camera.sources import CameraConfig, parse_source_spec
    base = CameraConfig()
    if args.camera_config is not None:
        from pydantic import ValidationError

        from camera.calibration import read_toml
        where = f"--camera-config {args.camera_config}"
        try:
            base = CameraConfig.model_validate(read_toml(args.camera_config).get("camera", {}))
        except CalibrationError as exc:   # names the file: no such file, a directory, not UTF-8, not TOML
            raise ValueError(f"--camera-config {exc}") from None
        except ValidationError as exc:
            problems = "; ".join(f"camera.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"{where}: {problems}") from None
    return parse_source_spec(args.source, base)


def grab_frames(args: argparse.Namespace, cfg) -> tuple[list[np.ndarray], str]:
    """Frames for calibration from ``--source`` (``cfg``: its ``CameraConfig``, from
    :func:`_camera_config`): ``([image uint8 BGR/grey, ...], source name)``; one from a photo,
    ``--frames`` (default 5) from a live camera after ``--skip``.

    Raises:
        ValueError: a replay source without a path.
        FrameError: an unreadable image, a camera that cannot be opened, a source with no frame.
    """
    kind, _, arg = args.source.partition(":")
    if kind == "replay" and Path(arg).suffix.lower() in _IMAGE_SUFFIXES:
        path = Path(arg)
        if not path.is_file():
            raise FrameError(f"{path}: no such image")
        return [load_image(path)], f"replay:{path}"   # FrameError naming a truncated or corrupt file
    from camera.sources import open_source
    source = open_source(cfg)
    try:
        live = cfg.source in ("usb", "picamera2")
        skip = args.skip if live else 0
        want = args.frames if args.frames is not None else (5 if live else 1)
        images, name = [], args.source
        for i, frame in enumerate(source.frames()):
            if i >= skip:
                images.append(frame.image)
                name = frame.source or args.source
                if len(images) >= want:
                    return images, name
        if images:
            return images, name
        raise FrameError(f"{args.source}: the source ended before giving a frame")
    finally:
        source.close()


def _lens(args: argparse.Namespace, cfile):
    """The lens model: measured from ``--lens-images``, else the layout file's ``[lens]``."""
    from camera.lens import Lens
    if args.lens_images is None:
        return (Lens.from_config(cfile.lens) if cfile.lens is not None else None), cfile.lens
    import glob
    from camera.lens import calibrate_lens
    paths = sorted(glob.glob(args.lens_images))
    if not paths:
        raise FrameError(f"--lens-images {args.lens_images!r}: no such files")
    images = []
    for p in paths:
        images.append(load_image(p))
    lens, rms = calibrate_lens(images, args.board, args.square_mm, names=paths)
    print(f"lens from {len(paths)} photos: rms {rms:.3f} px, fx {lens.camera_matrix[0, 0]:.1f} px, "
          f"k1 {lens.dist_coeffs[0]:+.4f}")
    return lens, lens.to_config(rms)


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an output path that cannot be written, before anything is read or written.

    Raises:
        ValueError: naming the option and the path: a directory, a missing directory (it is not
            made), a ``--snapshot`` extension OpenCV has no image writer for.
    """
    outputs = [("--out", args.out)] + ([("--snapshot", args.snapshot)] if args.snapshot is not None else [])
    for option, path in outputs:
        if path.is_dir():
            raise ValueError(f"{option} {path}: is a directory, not a file")
        if not path.parent.is_dir():
            problem = "is not a directory" if path.parent.exists() else "does not exist"
            raise ValueError(f"{option} {path}: directory {path.parent} {problem}")
    if args.snapshot is not None and not cv2.haveImageWriter(f"snapshot{args.snapshot.suffix or '.png'}"):
        raise ValueError(f"--snapshot {args.snapshot}: OpenCV cannot write images with extension "
                         f"{args.snapshot.suffix!r} (use .png or .jpg)")


def _write_image(path: Path, image: np.ndarray) -> None:
    """Write an image atomically (temporary file + rename), keeping its extension.

    Raises:
        OSError: the folder does not exist or is not writable, the image cannot be encoded.
    """
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


def _cannot_write(option: str, path: Path, exc: OSError) -> int:
    """Say that ``path`` could not be written (a folder made read-only meanwhile, a full disk); 2."""
    print(f"craps-table calibrate: {option} {path}: cannot write: {exc.strerror or exc}", file=sys.stderr)
    return 2


def run(command: str, args: argparse.Namespace) -> int:
    """Run ``craps-table calibrate``. Returns the exit status (see the module docstring)."""
    try:
        _check_outputs(args)
    except ValueError as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        return 2
    layout_path = _layout_path(args)
    try:
        cfile = load_layout(layout_path)
    except CalibrationError as exc:
        option = "--layout " if args.layout is not None else ("--out (read as the layout) "
                                                              if layout_path == args.out else "")
        print(f"craps-table calibrate: {option}{exc}", file=sys.stderr)
        return 2
    try:
        camera_cfg = _camera_config(args)
    except ValueError as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        return 2
    from camera.lens import LensError
    try:
        lens, lens_cfg = _lens(args, cfile)
    except LensError as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        return 1
    except (ValueError, FrameError) as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        return 2
    try:
        images, source_name = grab_frames(args, camera_cfg)
    except (ValueError, FrameError, ImportError) as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        return 2
    image = images[-1]
    try:
        result = calibrate(images, cfile.layout, cfile.zones, source=source_name, lens=lens)
    except CalibrationError as exc:
        print(f"craps-table calibrate: {exc}", file=sys.stderr)
        if args.source.partition(":")[0] == "sim":
            print("craps-table calibrate: the simulated table has no ArUco markers on its felt; the service "
                  "takes its homography and zones from SimSource.homography and SimSource.table_zones "
                  "(camera.calibration.Calibration.from_homography), so it needs no calibration file",
                  file=sys.stderr)
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
            try:
                _write_image(args.snapshot, snap)
            except OSError as exc:
                _cannot_write("--snapshot", args.snapshot, exc)
                return 1
            print(f"craps-table calibrate: frame with the markers found written to {args.snapshot}",
                  file=sys.stderr)
        return 1
    rec = result.record
    snapshot = draw_calibration(image, result.calibration, result.corners_px) if args.snapshot is not None else None
    try:
        write_calibration(args.out, cfile.model_copy(update={"homography": rec, "lens": lens_cfg}))
    except OSError as exc:
        return _cannot_write("--out", args.out, exc)
    if snapshot is not None:
        try:
            _write_image(args.snapshot, snapshot)
        except OSError as exc:
            return _cannot_write("--snapshot", args.snapshot, exc)
    centre = result.calibration.zones["playing"].mean(axis=0)
    print(f"calibrated from {source_name} ({rec.image_width}x{rec.image_height}, {len(images)} frame(s)"
          f"{', lens model' if lens is not None else ''}): markers {rec.markers_found}"
          + (f", missing {rec.markers_missing}" if rec.markers_missing else "")
          + (f", ignored unknown ids {list(result.unknown_ids)}" if result.unknown_ids else ""))
    print(f"corner error: mean {rec.error_mm_mean:.2f} mm / {rec.error_px_mean:.2f} px, "
          f"max {rec.error_mm_max:.2f} mm / {rec.error_px_max:.2f} px")
    print(f"die side at the centre of the felt: {result.calibration.die_side_px(centre):.1f} px")
    print(f"wrote {args.out}" + (f" and {args.snapshot}" if args.snapshot is not None else ""))
    return 0
