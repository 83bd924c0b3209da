"""Lens distortion: a barrel-distorted synthetic camera. The lens model measured from synthetic
chessboard photos, and the table calibration with and without it."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pydantic
import pytest

from camera.calibration import (CalibrationError, calibrate, load_calibration, load_layout, map_points,
                                write_calibration)
from camera.lens import Lens, LensConfig, LensError, calibrate_lens

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "config" / "calibration.example.toml"
W, H = 1280, 720
TRUE_LENS = Lens(np.array([[1000.0, 0, 640.0], [0, 1000.0, 360.0], [0, 0, 1]]),
                 np.array([-0.28, 0.09, 0.0, 0.0, 0.0]), (W, H))


_MAPS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def distort_image(ideal: np.ndarray, lens: Lens) -> np.ndarray:
    """What a camera with ``lens`` sees, given the pinhole picture ``ideal``. The remap table
    (ideal position of every observed pixel) is computed on a 1/4 grid and interpolated."""
    if id(lens) not in _MAPS:
        step = 4
        ys, xs = np.mgrid[0:H + step:step, 0:W + step:step].astype(np.float64)
        src = lens.undistort(np.stack([xs.ravel(), ys.ravel()], 1)).reshape(xs.shape + (2,))
        big = cv2.resize(src.astype(np.float32), ((W // step + 1) * step, (H // step + 1) * step),
                         interpolation=cv2.INTER_LINEAR)
        # resize maps pixel centres; shift so that big[y, x] is the value at (x, y)
        shift = np.float32([[1, 0, -(step - 1) / 2], [0, 1, -(step - 1) / 2]])
        big = cv2.warpAffine(big, shift, (big.shape[1], big.shape[0]), flags=cv2.INTER_LINEAR,
                             borderMode=cv2.BORDER_REPLICATE)[:H, :W]
        _MAPS[id(lens)] = (np.ascontiguousarray(big[..., 0]), np.ascontiguousarray(big[..., 1]))
    mx, my = _MAPS[id(lens)]
    return cv2.remap(ideal, mx, my, cv2.INTER_LINEAR, borderValue=(20, 20, 20))


@pytest.fixture(scope="module")
def example():
    return load_layout(EXAMPLE)


@pytest.fixture(scope="module")
def distorted_scene(example):
    import test_pi_calibration as tc  # the synthetic layout renderer

    ideal, truth_ideal_px_to_mm = tc.render(example.layout, noise=0.0)
    image = distort_image(ideal, TRUE_LENS)
    rng = np.random.default_rng(5)
    image = np.clip(image + rng.normal(0, 2.0, image.shape), 0, 255).astype(np.uint8)
    return image, truth_ideal_px_to_mm


def _felt_grid(truth_ideal_px_to_mm):
    xs, ys = np.meshgrid(np.arange(0, 1100.1, 50.0), np.arange(0, 560.1, 50.0))
    mm = np.stack([xs.ravel(), ys.ravel()], 1)
    px = TRUE_LENS.distort(map_points(np.linalg.inv(truth_ideal_px_to_mm), mm))
    return mm, px


def test_distort_and_undistort_are_inverse():
    pts = np.array([[5.0, 7.0], [640.0, 360.0], [1275.0, 715.0], [300.0, 650.0]])
    assert np.abs(TRUE_LENS.distort(TRUE_LENS.undistort(pts)) - pts).max() < 1e-3
    # barrel: an image corner comes from further out
    assert TRUE_LENS.undistort([[0.0, 0.0]])[0, 0] < -50


def test_homography_alone_is_refused_on_a_distorted_camera(example, distorted_scene):
    image, _ = distorted_scene
    with pytest.raises(CalibrationError, match=r"corner error up to .* mm .*--lens-images"):
        calibrate(image, example.layout, example.zones)


def test_with_the_lens_model_the_mapping_is_exact_again(example, distorted_scene, tmp_path):
    image, truth = distorted_scene
    res = calibrate(image, example.layout, example.zones, lens=TRUE_LENS)
    mm, px = _felt_grid(truth)
    err = np.linalg.norm(res.calibration.to_mm(px) - mm, axis=1)
    print(f"distorted camera, lens model: felt error mean {err.mean():.3f} mm, max {err.max():.3f} mm")
    assert err.max() < 1.0
    assert np.abs(res.calibration.to_px(mm) - px).max() < 1.0
    # the same with a homography only, for comparison (no error threshold)
    loose = example.layout.model_copy(update={"max_error_mm": 1000.0})
    plain = calibrate(image, loose, example.zones)
    plain_err = np.linalg.norm(plain.calibration.to_mm(px) - mm, axis=1)
    print(f"distorted camera, homography only: felt error max {plain_err.max():.1f} mm")
    assert plain_err.max() > 5.0
    # the file keeps the lens
    out = tmp_path / "calibration.toml"
    write_calibration(out, example.model_copy(update={"lens": TRUE_LENS.to_config(0.1),
                                                      "homography": res.record}))
    cal = load_calibration(out)
    assert cal.lens is not None and np.allclose(cal.lens.dist_coeffs, TRUE_LENS.dist_coeffs)
    assert np.abs(cal.to_mm(px) - mm).max() < 1.0
    wrong = Lens(TRUE_LENS.camera_matrix, TRUE_LENS.dist_coeffs, (640, 480))
    with pytest.raises(CalibrationError, match="lens model is for 640x480 pixels, the frames are 1280x720"):
        calibrate(image, example.layout, example.zones, lens=wrong)


def chessboard_views(lens: Lens, n: int = 10, cols: int = 9, rows: int = 6, sq_px: int = 40):
    """Photos of a (cols+1) x (rows+1) squares chessboard at varied poses through ``lens``."""
    margin = sq_px
    board = np.full(((rows + 1) * sq_px + 2 * margin, (cols + 1) * sq_px + 2 * margin), 255, np.uint8)
    for r in range(rows + 1):
        for c in range(cols + 1):
            if (r + c) % 2 == 0:
                board[margin + r * sq_px: margin + (r + 1) * sq_px, margin + c * sq_px: margin + (c + 1) * sq_px] = 0
    board = cv2.cvtColor(board, cv2.COLOR_GRAY2BGR)
    # board pixel (u, v) -> board plane (X, Y) in units of squares, inner corner (0, 0) at 0
    A = np.array([[1 / sq_px, 0, -(margin + sq_px - 0.5) / sq_px], [0, 1 / sq_px, -(margin + sq_px - 0.5) / sq_px],
                  [0, 0, 1]])
    rng = np.random.default_rng(11)
    kinv = np.linalg.inv(lens.camera_matrix)
    centre = np.array([cols / 2, rows / 2, 0.0])
    spots = [(0.3, 0.35), (0.7, 0.35), (0.3, 0.65), (0.7, 0.65), (0.5, 0.5), (0.5, 0.35), (0.25, 0.5),
             (0.75, 0.5), (0.5, 0.65), (0.38, 0.5), (0.62, 0.5), (0.5, 0.42)]
    views = []
    for k in range(n):
        rvec = np.array([rng.uniform(-0.45, 0.45), rng.uniform(-0.45, 0.45), rng.uniform(-0.3, 0.3)])
        R, _ = cv2.Rodrigues(rvec)
        z = rng.uniform(30.0, 36.0)  # distance in squares: the board is ~30 % of the width
        fx, fy = spots[k % len(spots)]
        t = z * (kinv @ np.array([fx * W, fy * H, 1.0])) - R @ centre
        Hp = lens.camera_matrix @ np.column_stack([R[:, 0], R[:, 1], t]) @ A
        ideal = cv2.warpPerspective(board, Hp, (W, H), flags=cv2.INTER_LINEAR, borderValue=(128, 128, 128))
        views.append(distort_image(ideal, lens))
    return views


def test_lens_measured_from_chessboard_photos(example, distorted_scene):
    views = chessboard_views(TRUE_LENS)
    lens, rms = calibrate_lens(views, (9, 6), square_mm=25.0, names=[f"v{i}.png" for i in range(len(views))])
    print(f"lens calibration: rms {rms:.3f} px, fx {lens.camera_matrix[0, 0]:.1f}, k1 {lens.dist_coeffs[0]:.3f}")
    assert rms < 0.5
    # what matters: undistorting pixels agrees with the true lens over the picture
    ys, xs = np.mgrid[int(0.2 * H):int(0.8 * H):40, int(0.15 * W):int(0.85 * W):40]  # where the boards were
    pts = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float64)
    # compare as directions (K may differ a little, the rays must not)
    def rays(l, p):
        u = l.undistort(p)
        return np.hstack([u, np.ones((len(u), 1))]) @ np.linalg.inv(l.camera_matrix).T
    diff_px = np.abs(rays(lens, pts) - rays(TRUE_LENS, pts)).max() * 1000.0  # x focal length
    print(f"ray difference over the boards' area: {diff_px:.3f} px")
    assert diff_px < 8.0
    # and what it is for: the table calibration through the measured lens is right to < 1 mm
    image, truth = distorted_scene
    res = calibrate(image, example.layout, example.zones, lens=lens)
    mm, px = _felt_grid(truth)
    err = np.linalg.norm(res.calibration.to_mm(px) - mm, axis=1)
    print(f"measured lens: felt error mean {err.mean():.3f} mm, max {err.max():.3f} mm")
    assert err.max() < 1.0
    assert lens.image_size == (W, H)
    cfg = lens.to_config(rms)
    assert Lens.from_config(LensConfig.model_validate(cfg.model_dump())).image_size == (W, H)


def test_lens_errors():
    blank = [np.full((120, 160, 3), 128, np.uint8)] * 3
    with pytest.raises(LensError, match=r"found in 0 photos, need 6; not found in: a, b, c"):
        calibrate_lens(blank, (9, 6), 25.0, names=["a", "b", "c"])
    with pytest.raises(LensError, match="image 1: 64x48 pixels, the first photo is 160x120"):
        calibrate_lens([blank[0], np.zeros((48, 64), np.uint8)], (9, 6), 25.0)
    # LensConfig is a pydantic model: its validators' ValueError comes out as a ValidationError
    with pytest.raises(pydantic.ValidationError, match=r"dist_coeffs\n.*expected 4, 5 or 8 finite coefficients .*, got 2"):
        LensConfig(camera_matrix=TRUE_LENS.camera_matrix.tolist(), dist_coeffs=[0.1, 0.2],
                   image_width=W, image_height=H)
    with pytest.raises(pydantic.ValidationError, match=r"camera_matrix\n.*with fx, fy > 0"):
        LensConfig(camera_matrix=[[0, 0, 1], [0, 1, 1], [0, 0, 1]], dist_coeffs=[0, 0, 0, 0],
                   image_width=W, image_height=H)


def test_several_frames_take_the_median_and_need_half(example):
    import test_pi_calibration as tc

    frames = [tc.render(example.layout, seed=s)[0] for s in range(2)]
    res = calibrate(frames, example.layout, example.zones)
    one = calibrate(frames[0], example.layout, example.zones)
    assert res.record.error_mm_mean <= one.record.error_mm_mean * 1.2
    hidden = [tc.render(example.layout, seed=7, hide=(3,))[0]] * 2
    with pytest.raises(CalibrationError, match=r"markers \[3\] not found"):
        calibrate([frames[0], *hidden], example.layout, example.zones)
    relaxed = example.layout.model_copy(update={"min_markers": 5})
    assert calibrate([frames[0], *hidden], relaxed, example.zones).record.markers_missing == [3]
    with pytest.raises(CalibrationError, match="calibration image 1: 640x480"):
        calibrate([frames[0], np.zeros((480, 640, 3), np.uint8)], example.layout, example.zones)
    with pytest.raises(CalibrationError, match="no image"):
        calibrate([], example.layout, example.zones)


def test_cli_measures_the_lens_and_calibrates_through_it(example, distorted_scene, tmp_path, capsys):
    from controller.cli import main

    image, truth = distorted_scene
    photo = tmp_path / "table.png"
    cv2.imwrite(str(photo), image)
    lens_dir = tmp_path / "lens"
    lens_dir.mkdir()
    for i, v in enumerate(chessboard_views(TRUE_LENS)):
        cv2.imwrite(str(lens_dir / f"board{i:02d}.png"), v)
    out = tmp_path / "calibration.toml"
    argv = ["calibrate", "--source", f"replay:{photo}", "--layout", str(EXAMPLE), "--out", str(out)]
    assert main(argv) == 1  # a homography alone is refused on this lens
    assert "--lens-images" in capsys.readouterr().err and not out.exists()
    assert main(argv + ["--lens-images", str(lens_dir / "*.png"), "--board", "9x6"]) == 0
    printed = capsys.readouterr().out
    assert "lens from 10 photos" in printed and "lens model" in printed
    cal = load_calibration(out)
    assert cal.lens is not None
    mm, px = _felt_grid(truth)
    assert np.abs(cal.to_mm(px) - mm).max() < 1.0
    # the [lens] now in --out is used by the next run without --lens-images
    assert main(["calibrate", "--source", f"replay:{photo}", "--out", str(out)]) == 0
    assert "lens model" in capsys.readouterr().out
    assert main(argv + ["--lens-images", str(tmp_path / "none*.png")]) == 2
    assert "no such files" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:   # refused by argparse, before any photo is read
        main(argv + ["--lens-images", str(lens_dir / "*.png"), "--board", "nine"])
    assert exc.value.code == 2
    assert "argument --board: expected COLSxROWS inner corners, e.g. 9x6, got 'nine'" in capsys.readouterr().err
