"""Lens distortion: the camera matrix and distortion coefficients, from chessboard photographs.

A homography maps the felt plane to the image exactly only for a pinhole camera. Real lenses bend
straight lines (barrel distortion of wide lenses), by several millimetres on the table at the
edges of the picture: enough to put a die on the wrong side of the chip bank's edge. With a lens
model, pixels are first undistorted (``cv2.undistortPoints``), then mapped by the homography; and
table points are mapped back through the homography, then distorted (``cv2.projectPoints``).

The model is OpenCV's (Brown-Conrady): camera matrix ``K`` (3x3: focal lengths ``fx, fy`` and
principal point ``cx, cy`` in pixels) and coefficients ``(k1, k2, p1, p2[, k3[, k4, k5, k6]])``.
It is measured once per camera and lens focus with :func:`calibrate_lens` from 10 to 20 photos of
a printed chessboard held at different angles over the whole picture (``craps-table calibrate
--lens-images 'lens/*.png'``), and kept in the calibration TOML as ``[lens]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from camera.base import check_image

__all__ = ["LensConfig", "Lens", "LensError", "calibrate_lens"]

_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-10)


class LensError(ValueError):
    """Lens calibration failed or a lens model is wrong; the message says which photo or value."""


class LensConfig(BaseModel):
    """TOML table ``[lens]``.

    Attributes:
        camera_matrix: ``[[fx, 0, cx], [0, fy, cy], [0, 0, 1]]``, pixels.
        dist_coeffs: ``[k1, k2, p1, p2]`` plus optionally ``k3`` or ``k3..k6`` (4, 5 or 8 values).
        image_width, image_height: the frame size the model is for, pixels.
        rms_px: RMS reprojection error of the lens calibration, pixels (information).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    camera_matrix: list[list[float]]
    dist_coeffs: list[float]
    image_width: int = Field(ge=16)
    image_height: int = Field(ge=16)
    rms_px: float | None = Field(None, ge=0)

    @field_validator("camera_matrix")
    @classmethod
    def _matrix(cls, v: list[list[float]]) -> list[list[float]]:
        k = np.asarray(v, dtype=np.float64)
        if k.shape != (3, 3) or not np.all(np.isfinite(k)):
            raise ValueError(f"expected a finite 3x3 matrix, got shape {k.shape}")
        if k[0, 0] <= 0 or k[1, 1] <= 0 or abs(k[2, 2] - 1) > 1e-9 or np.any(k[2, :2] != 0) or k[1, 0] != 0:
            raise ValueError("expected [[fx, 0, cx], [0, fy, cy], [0, 0, 1]] with fx, fy > 0")
        return v

    @field_validator("dist_coeffs")
    @classmethod
    def _coeffs(cls, v: list[float]) -> list[float]:
        if len(v) not in (4, 5, 8) or not all(np.isfinite(v)):
            raise ValueError(f"expected 4, 5 or 8 finite coefficients (k1, k2, p1, p2[, k3[, k4, k5, k6]]), "
                             f"got {len(v)}")
        return v


@dataclass(frozen=True)
class Lens:
    """A lens model.

    Attributes:
        camera_matrix: ``(3, 3)`` float64.
        dist_coeffs: ``(k,)`` float64, k in 4, 5, 8.
        image_size: ``(width, height)`` pixels.
    """

    camera_matrix: np.ndarray
    dist_coeffs: np.ndarray
    image_size: tuple[int, int]

    @classmethod
    def from_config(cls, cfg: LensConfig) -> "Lens":
        """From the ``[lens]`` table."""
        return cls(np.asarray(cfg.camera_matrix, dtype=np.float64), np.asarray(cfg.dist_coeffs, dtype=np.float64),
                   (cfg.image_width, cfg.image_height))

    def to_config(self, rms_px: float | None = None) -> LensConfig:
        """The ``[lens]`` table."""
        return LensConfig(camera_matrix=self.camera_matrix.tolist(), dist_coeffs=self.dist_coeffs.tolist(),
                          image_width=self.image_size[0], image_height=self.image_size[1], rms_px=rms_px)

    def undistort(self, points_px) -> np.ndarray:
        """Observed pixels ``(N, 2)`` -> ideal (pinhole) pixels ``(N, 2)`` float64, same matrix."""
        pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 1, 2)
        out = cv2.undistortPoints(pts, self.camera_matrix, self.dist_coeffs, P=self.camera_matrix,
                                  criteria=_CRITERIA)
        return out.reshape(-1, 2)

    def distort(self, points_px) -> np.ndarray:
        """Ideal pixels ``(N, 2)`` -> observed pixels ``(N, 2)`` float64."""
        pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 2)
        ray = np.hstack([pts, np.ones((len(pts), 1))]) @ np.linalg.inv(self.camera_matrix).T
        out, _ = cv2.projectPoints(ray.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), self.camera_matrix,
                                   self.dist_coeffs)
        return out.reshape(-1, 2)


def _find_board(grey: np.ndarray, pattern: tuple[int, int]) -> np.ndarray | None:
    """Inner chessboard corners ``(N, 1, 2)`` float32 refined to sub-pixel, or ``None``.
    The classic detector first (fast), the sector-based one when it fails (slower, more robust)."""
    flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_FAST_CHECK
    ok, corners = cv2.findChessboardCorners(grey, pattern, flags=flags)
    if ok:
        crit = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 40, 0.001)
        return cv2.cornerSubPix(grey, corners, (5, 5), (-1, -1), crit).astype(np.float32)
    ok, corners = cv2.findChessboardCornersSB(grey, pattern)
    return corners.astype(np.float32) if ok else None


def calibrate_lens(images: Sequence[np.ndarray], board: tuple[int, int], square_mm: float,
                   names: Sequence[str] | None = None, min_views: int = 6) -> tuple[Lens, float]:
    """Measure a lens from photographs of a chessboard (OpenCV ``calibrateCamera``).

    Args:
        images: ``uint8`` ``(H, W, 3)`` or ``(H, W)`` photos, all the same size, of a flat printed
            chessboard at different angles and places covering the picture.
        board: inner corners ``(columns, rows)``, e.g. ``(9, 6)`` for a 10 x 7 squares board.
        square_mm: side of a square, mm (scales nothing in the lens model; kept for the record).
        names: a name per image for messages (file names).
        min_views: photos in which the board must be found.

    Returns:
        ``(Lens, rms_px)``: the model and its RMS reprojection error in pixels.

    Raises:
        camera.base.FrameError: an image that is not a frame.
        LensError: images of different sizes, or the board found in fewer than ``min_views``
            photos (naming those where it was not found).
    """
    names = list(names) if names is not None else [f"image {i}" for i in range(len(images))]
    cols, rows = board
    if cols < 3 or rows < 3:
        raise LensError(f"board {cols}x{rows}: expected at least 3x3 inner corners")
    grid = np.zeros((cols * rows, 3), np.float32)
    grid[:, :2] = np.mgrid[0:cols, 0:rows].T.reshape(-1, 2) * square_mm
    obj, img_pts, failed, size = [], [], [], None
    for image, name in zip(images, names):
        image = check_image(image, name)
        grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
        here = (grey.shape[1], grey.shape[0])
        if size is None:
            size = here
        elif here != size:
            raise LensError(f"{name}: {here[0]}x{here[1]} pixels, the first photo is {size[0]}x{size[1]}")
        corners = _find_board(grey, (cols, rows))
        if corners is None:
            failed.append(name)
            continue
        obj.append(grid)
        img_pts.append(corners)
    if len(obj) < min_views:
        raise LensError(f"lens: a {cols}x{rows} chessboard was found in {len(obj)} photos, need {min_views}; "
                        f"not found in: {', '.join(failed) or 'none'}")
    rms, k, d, _, _ = cv2.calibrateCamera(obj, img_pts, size, None, None)
    return Lens(k, d.ravel()[:5].astype(np.float64), size), float(rms)
