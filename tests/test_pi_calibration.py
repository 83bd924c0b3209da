"""Calibration: synthetic top-down layouts with ArUco markers at known mm positions, seen under a
known perspective; recover the homography, check mm errors, zones, die size and failures."""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from camera.base import FrameError
from camera.calibration import (Calibration, CalibrationError, CalibrationFile, calibrate,
                                detect_markers, draw_calibration, load_calibration, load_layout,
                                map_points, marker_corners_mm, write_calibration)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "config" / "calibration.example.toml"

PX_PER_MM = 3.0                       # the flat layout picture
X0, X1, Y0, Y1 = -60.0, 1160.0, -60.0, 620.0
CAM_W, CAM_H = 1280, 720
# where the table's bounding box corners land in the camera (a tilted camera: perspective)
BOX_MM = np.array([[X0, Y0], [X1, Y0], [X1, Y1], [X0, Y1]], np.float64)
BOX_CAM = np.array([[70, 680], [1215, 700], [1160, 35], [125, 60]], np.float64)


def mm_to_layout_px() -> np.ndarray:
    """Table mm -> pixel coordinates of the flat layout picture (y up on the table = up in it),
    pixel centres at integers."""
    s = PX_PER_MM
    return np.array([[s, 0, -X0 * s - 0.5], [0, -s, Y1 * s - 0.5], [0, 0, 1]], np.float64)


def render(layout, *, mm_to_cam=None, hide=(), noise=2.0, seed=0, extra_ids=()):
    """Camera frame of the felt with the layout's markers; returns (BGR uint8, px->mm truth)."""
    if mm_to_cam is None:
        mm_to_cam = cv2.getPerspectiveTransform(BOX_MM.astype(np.float32), BOX_CAM.astype(np.float32))
    s = PX_PER_MM
    w, h = int((X1 - X0) * s), int((Y1 - Y0) * s)
    flat = np.empty((h, w, 3), np.uint8)
    flat[:] = (40, 110, 45)  # felt
    d = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)
    S = mm_to_layout_px()
    specs = [(m, m.size_mm or layout.marker_size_mm) for m in layout.markers if m.id not in hide]
    specs += [(type(layout.markers[0])(id=i, x=x, y=y), layout.marker_size_mm) for i, x, y in extra_ids]
    for m, size in specs:
        side = int(round(size * s))
        marker = cv2.cvtColor(cv2.aruco.generateImageMarker(d, m.id, side), cv2.COLOR_GRAY2BGR)
        quiet = side // 6
        tile = np.full((side + 2 * quiet, side + 2 * quiet, 3), 255, np.uint8)
        tile[quiet:quiet + side, quiet:quiet + side] = marker
        # map the tile's outer corners to the layout picture (handles rotation_deg too)
        half_q = (size / 2) * (side + 2 * quiet) / side
        big = marker_corners_mm(type(m)(id=m.id, x=m.x, y=m.y, size_mm=2 * half_q,
                                        rotation_deg=m.rotation_deg), size)
        dst = map_points(S, big).astype(np.float32)
        t = float(side + 2 * quiet)
        src = np.array([[-0.5, -0.5], [t - 0.5, -0.5], [t - 0.5, t - 0.5], [-0.5, t - 0.5]], np.float32)
        # warp into the marker's bounding box only (a full-size warp per marker is slow)
        x0, y0 = np.floor(dst.min(axis=0)).astype(int) - 2
        x1, y1 = np.ceil(dst.max(axis=0)).astype(int) + 2
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
        warp = np.array([[1, 0, -x0], [0, 1, -y0], [0, 0, 1]], np.float64) @ cv2.getPerspectiveTransform(src, dst)
        size = (int(x1 - x0), int(y1 - y0))
        mask = cv2.warpPerspective(np.full(tile.shape[:2], 255, np.uint8), warp, size, flags=cv2.INTER_NEAREST)
        layer = cv2.warpPerspective(tile, warp, size, flags=cv2.INTER_NEAREST)
        roi = flat[y0:y1, x0:x1]
        roi[mask > 0] = layer[mask > 0]
    flat = cv2.GaussianBlur(flat, (0, 0), PX_PER_MM / 2.5)  # anti-alias before shrinking
    layout_to_cam = mm_to_cam @ np.linalg.inv(S)
    cam = cv2.warpPerspective(flat, layout_to_cam, (CAM_W, CAM_H), flags=cv2.INTER_LINEAR,
                              borderValue=(20, 20, 20))
    if noise:
        rng = np.random.default_rng(seed)
        cam = np.clip(cam.astype(np.float32) + rng.normal(0, noise, cam.shape), 0, 255).astype(np.uint8)
    return cam, np.linalg.inv(mm_to_cam)


@pytest.fixture(scope="module")
def example() -> CalibrationFile:
    return load_layout(EXAMPLE)


@pytest.fixture(scope="module")
def scene(example):
    image, truth = render(example.layout)
    return image, truth


def _grid_px(truth_px_to_mm, step=50.0):
    xs, ys = np.meshgrid(np.arange(0, 1100.1, step), np.arange(0, 560.1, step))
    mm = np.stack([xs.ravel(), ys.ravel()], 1)
    return mm, map_points(np.linalg.inv(truth_px_to_mm), mm)


def test_recovers_the_homography_to_a_fraction_of_a_millimetre(example, scene):
    image, truth = scene
    res = calibrate(image, example.layout, example.zones, source="synthetic")
    assert res.record.markers_found == [0, 1, 2, 3, 4, 5]
    assert res.record.markers_missing == []
    assert (res.record.image_width, res.record.image_height) == (CAM_W, CAM_H)
    mm, px = _grid_px(truth)
    err = np.linalg.norm(res.calibration.to_mm(px) - mm, axis=1)
    print(f"mapping error over the felt: mean {err.mean():.3f} mm, max {err.max():.3f} mm; "
          f"corner error mean {res.record.error_mm_mean:.3f} mm, {res.record.error_px_mean:.3f} px")
    assert err.max() < 1.0
    assert err.mean() < 0.5
    assert res.record.error_mm_max < 1.0
    back = res.calibration.to_px(mm)
    assert np.abs(back - px).max() < 1.0
    # corners found are where the truth puts them
    for i, c in res.corners_px.items():
        m = next(m for m in example.layout.markers if m.id == i)
        want = map_points(np.linalg.inv(truth), marker_corners_mm(m, example.layout.marker_size_mm))
        assert np.abs(c - want).max() < 0.6, i


def test_zones_of_known_points(example, scene):
    image, truth = scene
    cal = calibrate(image, example.layout, example.zones).calibration
    cases = {
        (550.0, 280.0): "playing",
        (1080.0, 280.0): "far_wall_band",
        (550.0, 45.0): "chip_bank",
        (550.0, 507.0): "dice_cup",
        (-25.0, 280.0): "rails",
        (560.0, 590.0): "rails",
        (1120.0, 10.0): "rails",
        (-100.0, 280.0): None,          # off the table
        (600.0, 700.0): None,
    }
    to_px = np.linalg.inv(truth)
    for mm, zone in cases.items():
        px = map_points(to_px, [mm])
        got = cal.zone_of(cal.to_mm(px)[0])
        assert got == zone, (mm, got, zone)
    assert cal.zones_at((550.0, 45.0)) == ["chip_bank", "playing"]
    assert cal.zones_at((-25.0, 280.0)) == ["rails"]  # the ring's hole is not rails
    assert not cal.in_zone("rails", (550.0, 280.0))
    assert cal.in_zone("playing", (1099.0, 559.0))
    with pytest.raises(KeyError, match="no zone 'felt'; zones: playing"):
        cal.in_zone("felt", (0, 0))


def test_expected_die_side_in_pixels(example, scene):
    image, truth = scene
    cal = calibrate(image, example.layout, example.zones).calibration
    to_px = np.linalg.inv(truth)
    for x, y in [(100.0, 100.0), (550.0, 280.0), (1000.0, 500.0)]:
        h = 19.05 / 2
        sq = map_points(to_px, [[x - h, y - h], [x + h, y - h], [x + h, y + h], [x - h, y + h]])
        area = 0.5 * abs(np.dot(sq[:, 0], np.roll(sq[:, 1], -1)) - np.dot(sq[:, 1], np.roll(sq[:, 0], -1)))
        want = math.sqrt(area) * 1800.0 / (1800.0 - 19.05)  # camera_height_mm in the example
        got = cal.die_side_px((x, y))
        assert got == pytest.approx(want, rel=0.01)
        assert 14.0 < got < 20.0  # about 0.9 px/mm in this view
    seen = map_points(to_px, [(1000.0, 500.0)])[0]  # a mark on the felt...
    assert cal.felt_point(seen) == pytest.approx((1000.0, 500.0), abs=0.5)
    where = cal.place(seen)  # ...or a die top seen there: 19 mm up, so nearer the nadir
    nadir = np.array(cal.nadir_mm)
    want = nadir + (np.array([1000.0, 500.0]) - nadir) * (1800.0 - 19.05) / 1800.0
    assert where.zone == "playing"
    assert where.mm == pytest.approx(tuple(want), abs=0.5)
    assert where.expected_side_px == pytest.approx(cal.die_side_px(where.mm))
    flat = Calibration(cal.homography, cal.zones, die_size_mm=19.05)
    assert flat.die_side_px((550.0, 280.0)) < cal.die_side_px((550.0, 280.0))


def test_rotated_and_resized_markers(example):
    markers = [m.model_copy(update={"rotation_deg": 90.0 * (m.id % 4), "size_mm": 50.0 if m.id == 4 else None})
               for m in example.layout.markers]
    layout = example.layout.model_copy(update={"markers": markers})
    image, truth = render(layout, seed=3)
    res = calibrate(image, layout, example.zones)
    mm, px = _grid_px(truth)
    assert np.abs(res.calibration.to_mm(px) - mm).max() < 1.0


def test_missing_marker_names_the_ids(example):
    image, _ = render(example.layout, hide=(2, 4), extra_ids=[(17, 700.0, 300.0)])
    with pytest.raises(CalibrationError) as info:
        calibrate(image, example.layout, example.zones)
    msg = str(info.value)
    assert "markers [2, 4] not found" in msg
    assert "found [0, 1, 3, 5]" in msg and "need 6 of 6" in msg
    assert "ids found that the layout does not list: [17]" in msg
    relaxed = example.layout.model_copy(update={"min_markers": 4})
    res = calibrate(image, relaxed, example.zones)
    assert res.record.markers_missing == [2, 4]
    assert res.unknown_ids == (17,)


def test_too_few_markers_and_blank_frames(example):
    image, _ = render(example.layout, hide=(0, 1, 2, 3, 4))
    relaxed = example.layout.model_copy(update={"min_markers": 2})
    with pytest.raises(CalibrationError, match=r"markers \[0, 1, 2, 3, 4\] not found .*need 2 of 6"):
        calibrate(image, relaxed, example.zones)
    with pytest.raises(CalibrationError, match=r"markers \[0, 1, 2, 3, 4, 5\] not found"):
        calibrate(np.full((720, 1280, 3), 60, np.uint8), example.layout, example.zones)
    with pytest.raises(FrameError, match="calibration image"):
        calibrate(np.zeros((720, 1280), np.float32), example.layout, example.zones)


def test_a_misplaced_marker_is_refused(example):
    # marker 5 is really 30 mm further along x than the layout says
    moved = [m.model_copy(update={"x": m.x + 30.0}) if m.id == 5 else m for m in example.layout.markers]
    image, _ = render(example.layout.model_copy(update={"markers": moved}))
    with pytest.raises(CalibrationError, match=r"corner error up to .* mm \(marker 5\)"):
        calibrate(image, example.layout, example.zones)


def test_file_round_trip_and_snapshot(example, scene, tmp_path):
    image, truth = scene
    res = calibrate(image, example.layout, example.zones, source="replay:synthetic.png")
    out = tmp_path / "calibration.toml"
    write_calibration(out, example.model_copy(update={"homography": res.record}))
    cal = load_calibration(out)
    assert np.allclose(cal.homography, res.calibration.homography, rtol=0, atol=1e-12)
    assert cal.image_size == (CAM_W, CAM_H)
    assert cal.zone_of((550.0, 507.0)) == "dice_cup"
    again = load_layout(out)
    assert again.layout == example.layout and again.homography == res.record
    assert [p for p in tmp_path.iterdir()] == [out]  # no temporary file left
    umask = os.umask(0); os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o644 & ~umask  # not mkstemp's 0600
    out.chmod(0o640)
    write_calibration(out, example.model_copy(update={"homography": res.record}))
    assert out.stat().st_mode & 0o777 == 0o640  # the old file's mode is kept
    snap = draw_calibration(image, cal, res.corners_px)
    assert snap.shape == image.shape and snap.dtype == np.uint8
    assert np.count_nonzero(np.any(snap != image, axis=2)) > 5000  # zones, grid, markers drawn
    # the chip bank's outline is drawn (in its colour) where its corner (680, 90) mm is
    corner = np.round(cal.to_px([[680.0, 90.0]])[0]).astype(int)
    patch = snap[corner[1] - 2:corner[1] + 3, corner[0] - 2:corner[0] + 3]
    assert np.any(np.all(np.abs(patch.astype(int) - (255, 120, 0)) < 40, axis=2))
    far = np.round(cal.to_px([[350.0, 350.0]])[0]).astype(int)  # mid-felt, away from lines
    assert np.array_equal(snap[far[1], far[0]], image[far[1], far[0]])


def test_bad_files_name_the_problem(tmp_path, example):
    with pytest.raises(CalibrationError, match="no such file"):
        load_layout(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text(EXAMPLE.read_text().replace("marker_size_mm = 40.0", "marker_size = 40.0"))
    with pytest.raises(CalibrationError, match=r"layout.marker_size: Extra inputs are not permitted"):
        load_layout(bad)
    bad.write_text(EXAMPLE.read_text().replace("id = 5", "id = 4"))
    with pytest.raises(CalibrationError, match=r"marker ids appear more than once: \[4\]"):
        load_layout(bad)
    bad.write_text(EXAMPLE.read_text().replace("id = 5", "id = 50"))
    with pytest.raises(CalibrationError, match=r"marker ids \[50\] are not in DICT_4X4_50"):
        load_layout(bad)
    bad.write_text(EXAMPLE.read_text().replace("playing =", "felt ="))
    with pytest.raises(CalibrationError, match="'playing' zone"):
        load_layout(bad)
    bad.write_text("[layout\n")
    with pytest.raises(CalibrationError, match="not valid TOML"):
        load_layout(bad)
    with pytest.raises(CalibrationError, match="no \\[homography\\]: run `craps-table calibrate"):
        load_calibration(EXAMPLE)


def test_detect_markers_refuses_duplicate_ids(example):
    image, _ = render(example.layout, hide=(3,), extra_ids=[(0, 600.0, 300.0)])
    with pytest.raises(CalibrationError, match="marker id 0 is seen twice"):
        detect_markers(image)


def test_from_homography_for_the_simulated_table():
    # 1 px/mm, pixel (0, 0) at table (0, 560), y up: the shape SimSource.homography has
    h = np.array([[1.0, 0, 0], [0, -1.0, 560.0], [0, 0, 1]])
    cal = Calibration.from_homography(h, {"playing": [(0, 0), (1100, 0), (1100, 560), (0, 560)]})
    assert cal.to_mm([[100.0, 60.0]]).tolist() == [[100.0, 500.0]]
    assert cal.zone_of((100.0, 500.0)) == "playing"
    assert cal.die_side_px((100.0, 500.0)) == pytest.approx(19.05)
    with pytest.raises(CalibrationError, match="singular"):
        Calibration.from_homography(np.zeros((3, 3)), {"playing": [(0, 0), (1, 0), (1, 1)]})
    with pytest.raises(CalibrationError, match=r"shape \(3, 3\)"):
        Calibration.from_homography(np.eye(2), {"playing": [(0, 0), (1, 0), (1, 1)]})


# -- craps-table calibrate -------------------------------------------------------------------

def _cli(argv):
    from controller.cli import main
    return main(["calibrate", *argv])


def test_cli_writes_homography_and_snapshot(example, scene, tmp_path, capsys):
    image, truth = scene
    photo = tmp_path / "table.png"
    cv2.imwrite(str(photo), image)
    out, snap = tmp_path / "cfg" / "calibration.toml", tmp_path / "calib.png"
    out.parent.mkdir()
    assert _cli(["--source", f"replay:{photo}", "--out", str(out), "--snapshot", str(snap)]) == 0
    printed = capsys.readouterr().out
    assert "markers [0, 1, 2, 3, 4, 5]" in printed and f"wrote {out}" in printed
    cal = load_calibration(out)
    mm, px = _grid_px(truth)
    assert np.abs(cal.to_mm(px) - mm).max() < 1.0
    drawn = cv2.imread(str(snap))
    assert drawn.shape == image.shape
    # a second run reads the layout back from --out and rewrites it
    assert _cli(["--source", f"replay:{photo}", "--out", str(out)]) == 0
    assert load_layout(out).layout == example.layout
    assert sorted(p.name for p in out.parent.iterdir()) == ["calibration.toml"]


def test_cli_failures_write_nothing(example, tmp_path, capsys):
    image, _ = render(example.layout, hide=(1,))
    photo = tmp_path / "table.png"
    cv2.imwrite(str(photo), image)
    out, snap = tmp_path / "calibration.toml", tmp_path / "calib.png"
    assert _cli(["--source", f"replay:{photo}", "--out", str(out), "--snapshot", str(snap)]) == 1
    assert "markers [1] not found" in capsys.readouterr().err
    assert not out.exists() and snap.exists()  # the snapshot shows what was found
    assert _cli(["--source", f"replay:{tmp_path / 'none.png'}", "--out", str(out)]) == 2
    assert "no such image" in capsys.readouterr().err
    assert _cli(["--source", "webcam:0", "--out", str(out)]) == 2
    assert "expected picamera2" in capsys.readouterr().err
    (tmp_path / "junk.png").write_bytes(b"not a png")
    assert _cli(["--source", f"replay:{tmp_path / 'junk.png'}", "--out", str(out)]) == 2
    assert "not a readable image" in capsys.readouterr().err
    bad = tmp_path / "layout.toml"
    bad.write_text("[layout]\nmarkers = []\n[zones]\n")
    assert _cli(["--source", f"replay:{photo}", "--layout", str(bad), "--out", str(out)]) == 2
    assert "layout.markers" in capsys.readouterr().err
    assert not out.exists()


def test_unreadable_layout_files_name_the_file(tmp_path):
    png = tmp_path / "table.png"
    png.write_bytes(cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))[1].tobytes())
    with pytest.raises(CalibrationError, match=re.escape(f"{png}: not a UTF-8 TOML text file (byte 0: b'\\x89')")):
        load_layout(png)
    with pytest.raises(CalibrationError, match=re.escape(f"{tmp_path}: is a directory, not a TOML file")):
        load_layout(tmp_path)
    with pytest.raises(CalibrationError, match=re.escape(f"{png}: not a UTF-8 TOML text file")):
        load_calibration(png)


def test_cli_unreadable_layout_or_camera_config_exit_2_naming_the_option(example, scene, tmp_path, capsys):
    image, _ = scene
    photos = tmp_path / "photos"
    photos.mkdir()
    photo = photos / "table.png"
    cv2.imwrite(str(photo), image)
    out = tmp_path / "calibration.toml"
    for option, path, says in (
            ("--layout", photo, "not a UTF-8 TOML text file (byte 0: b'\\x89')"),
            ("--layout", tmp_path, "is a directory, not a TOML file"),
            ("--camera-config", photo, "not a UTF-8 TOML text file (byte 0: b'\\x89')"),
            ("--camera-config", tmp_path, "is a directory, not a TOML file"),
            ("--camera-config", tmp_path / "none.toml", "no such file")):
        assert _cli(["--source", f"replay:{photos}", "--out", str(out), option, str(path)]) == 2
        err = capsys.readouterr().err
        assert f"craps-table calibrate: {option} {path}: {says}" in err, err
        assert "Traceback" not in err
    assert not out.exists()
    out.write_bytes(photo.read_bytes())  # --out, read back as the layout, is not a TOML file
    assert _cli(["--source", f"replay:{photo}", "--out", str(out)]) == 2
    assert f"--out (read as the layout) {out}: not a UTF-8 TOML text file" in capsys.readouterr().err
    assert out.read_bytes() == photo.read_bytes()
