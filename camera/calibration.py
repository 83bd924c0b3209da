"""Table calibration: ArUco markers on the felt give the homography from pixels to table millimetres.

Markers of a ``DICT_4X4_50`` set lie flat on the felt (printed into the layout or glued on) at
known positions. Each marker found gives its four corners in pixels; with the corners' known
positions in millimetres, ``cv2.findHomography`` (RANSAC, then least squares on the inliers)
gives the 3x3 homography ``H`` that maps a pixel ``(u, v)`` to the felt point ``(x, y)`` mm.
The felt is a plane, so one homography is exact for a pinhole camera; lens distortion and the
height of a die's top face above the felt are what is left (see :meth:`Calibration.die_side_px`).

Table frame (the same as the simulator's, simulator/geometry.py): millimetres, origin at the
inner corner of the playing surface at the shooter's end on the boxperson's side, ``x`` along
the table towards the far wall, ``y`` across it towards the stickperson, ``z`` up. Seen from
above, a marker at ``rotation_deg = 0`` has its top edge facing ``+y``.

Zones are polygons in table mm from config (the places a die may rest that matter for the
verdict): ``playing`` (the felt), ``far_wall_band`` (the dice must strike the far end,
9 NYCRR 5324.52(k)(2)(ii)), ``chip_bank`` ((k)(2)(iii)), ``dice_cup`` and ``rails``
((k)(2)(iv)); outside every zone is off the table ((k)(1)). Zones may overlap: a point belongs
to the first zone of ``zone_priority`` that contains it (the dice cup and the chip bank sit on
the felt, so they come first).

Example::

    from camera.calibration import load_calibration
    cal = load_calibration("config/calibration.toml")
    xy = cal.to_mm([[640.0, 360.0]])          # (1, 2) float64, mm
    cal.zone_of(xy[0])                        # "playing"
    cal.die_side_px(xy[0])                    # ~ 19.3 px at 1 px/mm
    cal.place(reading.centre)                 # DiePlace(mm=(x, y), zone="playing", expected_side_px=19.3)
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from camera.base import check_image
from camera.lens import Lens, LensConfig

__all__ = [
    "DIE_SIZE_MM", "CalibrationError", "DiePlace", "MarkerSpec", "LayoutConfig", "HomographyRecord",
    "CalibrationFile", "Calibration", "CalibrationResult", "marker_corners_mm", "detect_markers",
    "calibrate", "map_points", "point_in_polygon", "load_layout", "load_calibration",
    "write_calibration", "draw_calibration", "DEFAULT_ZONE_PRIORITY",
]

#: Side of a casino die, mm: 0.75 in, the smallest allowed by N.J.A.C. 13:47-20.25(b)2i
#: (0.75 to 0.775 in).
DIE_SIZE_MM = 19.05

DEFAULT_ZONE_PRIORITY = ("dice_cup", "chip_bank", "far_wall_band", "playing", "rails")

#: ArUco dictionaries accepted by name -> number of markers in them.
_DICTIONARIES = {
    "DICT_4X4_50": 50, "DICT_4X4_100": 100, "DICT_5X5_50": 50, "DICT_5X5_100": 100,
    "DICT_6X6_50": 50, "DICT_6X6_100": 100,
}


class CalibrationError(ValueError):
    """Calibration failed or a calibration file is wrong; the message says what (which marker
    ids are missing, which key is bad, how large the error is)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MarkerSpec(_Strict):
    """One ArUco marker on the felt.

    Attributes:
        id: marker id in the dictionary.
        x, y: centre in table mm.
        size_mm: side of the black square (the marker, without its white margin), mm;
            ``None`` = the layout's ``marker_size_mm``.
        rotation_deg: counter-clockwise seen from above; 0 = top edge facing ``+y``.
    """

    id: int = Field(ge=0)
    x: float
    y: float
    size_mm: float | None = Field(None, gt=0)
    rotation_deg: float = 0.0


class LayoutConfig(_Strict):
    """TOML table ``[layout]``: the markers and how strict the calibration is.

    Attributes:
        dictionary: ArUco dictionary name (``DICT_4X4_50``).
        marker_size_mm: default side of a marker's black square, mm.
        markers: the markers (``[[layout.markers]]``), unique ids, at least 1.
        min_markers: markers that must be found; ``None`` = all of them.
        ransac_threshold_mm: RANSAC inlier threshold, mm on the felt.
        max_error_mm: refuse a calibration whose largest corner error exceeds this, mm.
        die_size_mm: die side, mm (0.75 to 0.775 in, N.J.A.C. 13:47-20.25(b)2i).
        camera_height_mm: camera height above the felt, mm; when given, the expected die
            size in pixels is that of the die's top face (closer to the camera), and a die's
            position is corrected for parallax (its top face is seen further out than its
            footprint, by up to 6 mm at the edge of a 1.1 m table seen from 1.8 m).
        camera_nadir_mm: the felt point straight below the camera, mm; ``None`` = the felt
            point seen at the centre of the picture (a camera looking straight down).
        zone_heights_mm: height above the felt of what a die rests on in a zone, mm (the rail
            tops, the chip bank's stacks); zones not listed are at felt level. Used with
            ``camera_height_mm`` to place a die resting up there.
        zone_priority: order in which zones claim a point (others follow in file order).
    """

    dictionary: str = "DICT_4X4_50"
    marker_size_mm: float = Field(40.0, gt=0)
    markers: list[MarkerSpec] = Field(min_length=1)
    min_markers: int | None = Field(None, ge=2)
    ransac_threshold_mm: float = Field(3.0, gt=0)
    max_error_mm: float = Field(2.0, gt=0)
    die_size_mm: float = Field(DIE_SIZE_MM, ge=19.05, le=19.685)
    camera_height_mm: float | None = Field(None, gt=100)
    camera_nadir_mm: tuple[float, float] | None = None
    zone_heights_mm: dict[str, float] = Field(default_factory=dict)
    zone_priority: list[str] = Field(default_factory=lambda: list(DEFAULT_ZONE_PRIORITY))

    @field_validator("dictionary")
    @classmethod
    def _known_dictionary(cls, v: str) -> str:
        if v not in _DICTIONARIES:
            raise ValueError(f"unknown ArUco dictionary {v!r}; one of {', '.join(_DICTIONARIES)}")
        return v

    @model_validator(mode="after")
    def _check_markers(self) -> "LayoutConfig":
        ids = [m.id for m in self.markers]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"marker ids appear more than once: {dupes}")
        size = _DICTIONARIES[self.dictionary]
        bad = [i for i in ids if i >= size]
        if bad:
            raise ValueError(f"marker ids {bad} are not in {self.dictionary} (ids 0..{size - 1})")
        if self.min_markers is not None and self.min_markers > len(ids):
            raise ValueError(f"min_markers = {self.min_markers} but only {len(ids)} markers are listed")
        return self

    @property
    def required(self) -> int:
        """How many markers must be found."""
        return len(self.markers) if self.min_markers is None else self.min_markers


class HomographyRecord(_Strict):
    """TOML table ``[homography]``, written by ``craps-table calibrate``.

    Attributes:
        pixel_to_mm: 3x3 homography, pixels -> table mm (``H[2][2] = 1``); of undistorted
            pixels when the file has a ``[lens]``.
        image_width, image_height: frame size it is valid for, pixels.
        error_mm_mean, error_mm_max: marker-corner reprojection error on the felt, mm.
        error_px_mean, error_px_max: the same in the image, pixels.
        markers_found: marker ids used; markers_missing: listed but not found.
        created: UTC ISO 8601 time; source: the frame source it was made from.
    """

    pixel_to_mm: list[list[float]]
    image_width: int = Field(ge=16)
    image_height: int = Field(ge=16)
    error_mm_mean: float = Field(ge=0)
    error_mm_max: float = Field(ge=0)
    error_px_mean: float = Field(ge=0)
    error_px_max: float = Field(ge=0)
    markers_found: list[int]
    markers_missing: list[int] = Field(default_factory=list)
    created: str = ""
    source: str = ""

    @field_validator("pixel_to_mm")
    @classmethod
    def _three_by_three(cls, v: list[list[float]]) -> list[list[float]]:
        arr = np.asarray(v, dtype=np.float64)
        if arr.shape != (3, 3) or not np.all(np.isfinite(arr)):
            raise ValueError(f"expected a finite 3x3 matrix, got shape {arr.shape}")
        if abs(np.linalg.det(arr)) < 1e-12:
            raise ValueError("the matrix is singular")
        return v


def _check_zones(zones: dict[str, list[tuple[float, float]]]) -> dict[str, list[tuple[float, float]]]:
    for name, poly in zones.items():
        if len(poly) < 3:
            raise ValueError(f"zone {name!r}: a polygon needs at least 3 points [x, y], got {len(poly)}")
    if "playing" not in zones:
        raise ValueError("zones: a 'playing' zone (the felt) is required")
    return zones


class CalibrationFile(_Strict):
    """The whole calibration TOML: ``[layout]`` (with ``[[layout.markers]]``), ``[zones]``
    (name = ``[[x, y], ...]`` mm), optionally ``[lens]`` (camera/lens.py) and, once
    calibrated, ``[homography]``."""

    layout: LayoutConfig
    zones: dict[str, list[tuple[float, float]]]
    lens: LensConfig | None = None
    homography: HomographyRecord | None = None

    @field_validator("zones")
    @classmethod
    def _zones_ok(cls, v: dict[str, list[tuple[float, float]]]) -> dict[str, list[tuple[float, float]]]:
        return _check_zones(v)


# -- geometry ------------------------------------------------------------------------------

def map_points(h: np.ndarray, points: Iterable[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Apply a 3x3 homography to points.

    Args:
        h: ``(3, 3)`` float64.
        points: ``(N, 2)`` (or one ``(2,)`` point) of ``(x, y)``.

    Returns:
        ``(N, 2)`` float64.

    Raises:
        ValueError: points of the wrong shape, or a point mapped to infinity.
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim == 1:
        pts = pts[None, :]
    if pts.ndim != 2 or pts.shape[1] != 2:
        raise ValueError(f"points: expected shape (N, 2), got {pts.shape}")
    hom = np.hstack([pts, np.ones((len(pts), 1))]) @ np.asarray(h, dtype=np.float64).T
    w = hom[:, 2:3]
    if np.any(np.abs(w) < 1e-12):
        raise ValueError("points: a point maps to infinity (on the horizon of the homography)")
    return hom[:, :2] / w


def point_in_polygon(polygon: np.ndarray | Sequence[Sequence[float]], point: Sequence[float]) -> bool:
    """Whether ``point`` ``(x, y)`` lies inside or on the edge of ``polygon`` ``(N, 2)``
    (same units). Even-odd rule, so a ring drawn as outer boundary + slit + inner boundary
    (the rails) excludes its hole."""
    poly = np.asarray(polygon, dtype=np.float32).reshape(-1, 1, 2)
    return cv2.pointPolygonTest(poly, (float(point[0]), float(point[1])), False) >= 0


def marker_corners_mm(marker: MarkerSpec, default_size_mm: float) -> np.ndarray:
    """The four corners of a marker in table mm, in ArUco's order (top-left, top-right,
    bottom-right, bottom-left of the marker as printed).

    Returns:
        ``(4, 2)`` float64.
    """
    half = (marker.size_mm or default_size_mm) / 2.0
    local = np.array([[-half, half], [half, half], [half, -half], [-half, -half]])  # (right, up)
    a = math.radians(marker.rotation_deg)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return local @ rot.T + np.array([marker.x, marker.y])


@dataclass(frozen=True, slots=True)
class DiePlace:
    """A die's place on the table (:meth:`Calibration.place`).

    Attributes:
        mm: ``(x, y)`` felt position, table mm.
        zone: the zone it is in, or ``None`` (off the table).
        expected_side_px: side of a die's top face expected there, pixels.
    """

    mm: tuple[float, float]
    zone: str | None
    expected_side_px: float


@dataclass(frozen=True)
class Calibration:
    """A homography with the table zones: what the controller uses at run time.

    Attributes:
        homography: ``(3, 3)`` float64, pixels -> table mm.
        zones: name -> ``(N, 2)`` float64 polygon in table mm.
        zone_priority: the order zones claim a point.
        die_size_mm: die side, mm.
        camera_height_mm: camera above the felt (for the die's top-face size), or ``None``.
        image_size: ``(width, height)`` pixels it was made for, or ``None``.
        lens: the lens model (``homography`` then maps undistorted pixels), or ``None``.
        camera_nadir_mm: felt point below the camera, or ``None`` (the one seen at the
            picture's centre; see :attr:`nadir_mm`).
        zone_heights_mm: zone -> height above the felt of what a die rests on there, mm.
    """

    homography: np.ndarray
    zones: dict[str, np.ndarray]
    zone_priority: tuple[str, ...] = DEFAULT_ZONE_PRIORITY
    die_size_mm: float = DIE_SIZE_MM
    camera_height_mm: float | None = None
    image_size: tuple[int, int] | None = None
    lens: Lens | None = None
    camera_nadir_mm: tuple[float, float] | None = None
    zone_heights_mm: dict[str, float] = field(default_factory=dict)
    _inverse: np.ndarray = field(init=False, repr=False)
    _order: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        h = np.asarray(self.homography, dtype=np.float64)
        if h.shape != (3, 3):
            raise CalibrationError(f"homography: expected shape (3, 3), got {h.shape}")
        object.__setattr__(self, "homography", h)
        object.__setattr__(self, "zones", {k: np.asarray(v, dtype=np.float64).reshape(-1, 2)
                                           for k, v in self.zones.items()})
        if not np.all(np.isfinite(h)) or abs(np.linalg.det(h)) < 1e-15:
            raise CalibrationError("homography: not finite or singular (no mapping from pixels to the felt)")
        object.__setattr__(self, "_inverse", np.linalg.inv(h))
        order = [z for z in self.zone_priority if z in self.zones]
        order += [z for z in self.zones if z not in order]
        object.__setattr__(self, "_order", tuple(order))

    @classmethod
    def from_homography(cls, homography: np.ndarray, zones: dict[str, Sequence[Sequence[float]]],
                        **kw) -> "Calibration":
        """From a homography and zones given directly (``SimSource.homography`` and
        ``SimSource.table_zones`` of the simulated table)."""
        return cls(np.asarray(homography, dtype=np.float64), dict(zones), **kw)

    def to_mm(self, points_px) -> np.ndarray:
        """Pixels ``(N, 2)`` -> felt points ``(N, 2)`` float64 mm (undistorted first when there
        is a lens model)."""
        if self.lens is not None:
            points_px = self.lens.undistort(points_px)
        return map_points(self.homography, points_px)

    def to_px(self, points_mm) -> np.ndarray:
        """Felt points ``(N, 2)`` mm -> pixels ``(N, 2)`` float64 (distorted by the lens model
        when there is one)."""
        ideal = map_points(self._inverse, points_mm)
        return ideal if self.lens is None else self.lens.distort(ideal)

    def zones_at(self, point_mm: Sequence[float]) -> list[str]:
        """Every zone containing ``point_mm``, in priority order."""
        return [z for z in self._order if point_in_polygon(self.zones[z], point_mm)]

    def zone_of(self, point_mm: Sequence[float]) -> str | None:
        """The zone a point belongs to (the first in priority order), or ``None``: off the
        table (9 NYCRR 5324.52(k)(1))."""
        for z in self._order:
            if point_in_polygon(self.zones[z], point_mm):
                return z
        return None

    def in_zone(self, name: str, point_mm: Sequence[float]) -> bool:
        """Whether ``point_mm`` lies in zone ``name``.

        Raises:
            KeyError: no such zone (the message lists the zones).
        """
        if name not in self.zones:
            raise KeyError(f"no zone {name!r}; zones: {', '.join(self.zones)}")
        return point_in_polygon(self.zones[name], point_mm)

    @property
    def nadir_mm(self) -> tuple[float, float] | None:
        """The felt point straight below the camera, mm: ``camera_nadir_mm``, else the point
        seen at the principal point (the lens model's) or the picture's centre; ``None``
        without an image size."""
        if self.camera_nadir_mm is not None:
            return (float(self.camera_nadir_mm[0]), float(self.camera_nadir_mm[1]))
        if self.lens is not None:
            k = self.lens.camera_matrix
            p = map_points(self.homography, [[k[0, 2], k[1, 2]]])[0]
        elif self.image_size is not None:
            w, h = self.image_size
            p = map_points(self.homography, [[(w - 1) / 2.0, (h - 1) / 2.0]])[0]
        else:
            return None
        return (float(p[0]), float(p[1]))

    def felt_point(self, point_px: Sequence[float], height_mm: float = 0.0) -> tuple[float, float]:
        """The felt position (mm) below a point seen at ``point_px`` that is ``height_mm`` above
        the felt (a die's top face: ``die_size_mm``).

        The ray through the pixel meets the felt at ``m`` (the homography); the point at height
        ``h`` on that ray lies over ``n + (m - n) (D - h) / D``, with ``n`` the nadir and ``D`` the
        camera height (similar triangles, pinhole camera). Without ``camera_height_mm`` (or a
        nadir) no correction is made.
        """
        m = self.to_mm([point_px])[0]
        nadir = self.nadir_mm
        if height_mm and self.camera_height_mm is not None and nadir is not None:
            k = (self.camera_height_mm - height_mm) / self.camera_height_mm
            m = np.asarray(nadir) + (m - np.asarray(nadir)) * k
        return (float(m[0]), float(m[1]))

    def place(self, centre_px: Sequence[float]) -> "DiePlace":
        """Where a die whose top face is seen centred at ``centre_px`` (pixels,
        ``DieReading.centre``) is on the table: its footprint's centre in mm, its zone, and the
        die side in pixels expected there (compare with ``DieReading.side_px``: much larger =
        nearer the camera = resting on a die or on chips, 9 NYCRR 5324.52(k)(1) and (h)).

        Zones are tried in priority order, each at its own height (``zone_heights_mm``: a die on
        a rail top has its top face ``rail height + die size`` above the felt, and is seen
        further out than it is, :meth:`felt_point`); the first zone containing the die's
        position computed for that height claims it. ``zone`` ``None``: off the table
        (9 NYCRR 5324.52(k)(1)), ``mm`` then assumes the die is at felt level.
        """
        s = self.die_size_mm
        for zone in self._order:
            rest = float(self.zone_heights_mm.get(zone, 0.0))
            point = self.felt_point(centre_px, rest + s)
            if point_in_polygon(self.zones[zone], point):
                return DiePlace(point, zone, self.die_side_px(point, rest))
        point = self.felt_point(centre_px, s)
        return DiePlace(point, None, self.die_side_px(point))

    def die_side_px(self, point_mm: Sequence[float], rest_height_mm: float = 0.0) -> float:
        """Expected side of a die's top face in pixels with its centre at ``point_mm``, resting
        ``rest_height_mm`` above the felt (0: on the felt).

        The die's footprint square (``die_size_mm``, axis-aligned) is mapped to pixels and the
        side of the square of equal area is returned. With ``camera_height_mm`` (``D``) the
        top face, ``rest_height_mm + die_size_mm`` (``h``) nearer the camera, is scaled by
        ``D / (D - h)`` (pinhole camera over the felt).
        """
        x, y = float(point_mm[0]), float(point_mm[1])
        h = self.die_size_mm / 2.0
        sq = self.to_px([[x - h, y - h], [x + h, y - h], [x + h, y + h], [x - h, y + h]])
        area = 0.5 * abs(np.dot(sq[:, 0], np.roll(sq[:, 1], -1)) - np.dot(sq[:, 1], np.roll(sq[:, 0], -1)))
        side = math.sqrt(area)
        if self.camera_height_mm is not None:
            top = rest_height_mm + self.die_size_mm
            if top >= self.camera_height_mm:
                raise ValueError(f"a die top {top} mm above the felt is not below the camera "
                                 f"({self.camera_height_mm} mm)")
            side *= self.camera_height_mm / (self.camera_height_mm - top)
        return side


# -- detection and fitting -----------------------------------------------------------------

@dataclass(frozen=True)
class CalibrationResult:
    """What :func:`calibrate` found.

    Attributes:
        calibration: the :class:`Calibration` (homography and zones).
        record: the ``[homography]`` table to write.
        corners_px: marker id -> ``(4, 2)`` float64 pixel corners found.
        unknown_ids: ids found in the image but not in the layout (ignored).
    """

    calibration: Calibration
    record: HomographyRecord
    corners_px: dict[int, np.ndarray]
    unknown_ids: tuple[int, ...] = ()


def detect_markers(image: np.ndarray, dictionary: str = "DICT_4X4_50") -> dict[int, np.ndarray]:
    """Find ArUco markers.

    Args:
        image: ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey.
        dictionary: ArUco dictionary name.

    Returns:
        id -> ``(4, 2)`` float64 corners in pixels (top-left, top-right, bottom-right,
        bottom-left of the printed marker), refined to sub-pixel.

    Raises:
        camera.base.FrameError: not a valid image.
        CalibrationError: a marker id seen twice (two prints of one marker: ambiguous).
    """
    image = check_image(image, "calibration image")
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    detector = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, dictionary)), params)
    corners, ids, _rejected = detector.detectMarkers(grey)
    found: dict[int, np.ndarray] = {}
    if ids is None:
        return found
    for c, i in zip(corners, ids.ravel().tolist()):
        if i in found:
            raise CalibrationError(f"marker id {i} is seen twice in the image; each id must appear once")
        found[int(i)] = np.asarray(c, dtype=np.float64).reshape(4, 2)
    return found


def _median_corners(images: list[np.ndarray], dictionary: str) -> tuple[dict[int, np.ndarray], tuple[int, int]]:
    """Markers found in at least half of the frames, each corner the median over the frames."""
    seen: dict[int, list[np.ndarray]] = {}
    size = None
    for k, image in enumerate(images):
        image = check_image(image, f"calibration image {k}" if len(images) > 1 else "calibration image")
        here = (image.shape[1], image.shape[0])
        if size is None:
            size = here
        elif here != size:
            raise CalibrationError(f"calibration image {k}: {here[0]}x{here[1]} pixels, the first is "
                                   f"{size[0]}x{size[1]}")
        for i, c in detect_markers(image, dictionary).items():
            seen.setdefault(i, []).append(c)
    need = (len(images) + 1) // 2
    return {i: np.median(np.stack(cs), axis=0) for i, cs in seen.items() if len(cs) >= need}, size


def calibrate(image: np.ndarray | Sequence[np.ndarray], layout: LayoutConfig,
              zones: dict[str, Sequence[Sequence[float]]], source: str = "",
              lens: Lens | None = None) -> CalibrationResult:
    """Find the layout's markers and fit the homography pixels -> table mm.

    Args:
        image: ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey, the table seen by the camera; or a
            list of such frames of one size from a still camera: a marker counts when found in at
            least half of them, its corners the median (less sensor noise).
        layout: markers and thresholds.
        zones: name -> polygon in table mm.
        source: where the image came from (recorded).
        lens: lens model of the camera (camera/lens.py); corners are undistorted before the fit.

    Returns:
        :class:`CalibrationResult`.

    Raises:
        camera.base.FrameError: not a valid image.
        CalibrationError: fewer markers found than ``layout.required`` (naming the missing
            ids), frames or lens of different sizes, no homography, or a corner error above
            ``layout.max_error_mm``.
    """
    images = [image] if isinstance(image, np.ndarray) else list(image)
    if not images:
        raise CalibrationError("calibration: no image")
    found, (width, height) = _median_corners(images, layout.dictionary)
    if lens is not None and tuple(lens.image_size) != (width, height):
        raise CalibrationError(f"calibration: the lens model is for {lens.image_size[0]}x{lens.image_size[1]} "
                               f"pixels, the frames are {width}x{height}")
    listed = {m.id: m for m in layout.markers}
    used = sorted(i for i in found if i in listed)
    missing = sorted(i for i in listed if i not in found)
    unknown = tuple(sorted(i for i in found if i not in listed))
    if len(used) < layout.required:
        extra = f"; ids found that the layout does not list: {list(unknown)}" if unknown else ""
        raise CalibrationError(
            f"calibration: markers {missing} not found in the image (found {used}; need "
            f"{layout.required} of {len(listed)} listed){extra}. Check that they are in view, lit "
            f"and not covered, and that the layout lists the right ids ({layout.dictionary})")
    px = np.vstack([found[i] for i in used])
    mm = np.vstack([marker_corners_mm(listed[i], layout.marker_size_mm) for i in used])
    ideal = px if lens is None else lens.undistort(px)
    h, mask = cv2.findHomography(ideal, mm, cv2.RANSAC, layout.ransac_threshold_mm)
    if h is None or not np.all(np.isfinite(h)) or abs(np.linalg.det(h)) < 1e-15:
        raise CalibrationError(f"calibration: no homography fits markers {used} "
                               "(are they all on the felt plane and listed at the right positions?)")
    h = h / h[2, 2]
    cal = Calibration(h, dict(zones), tuple(layout.zone_priority), layout.die_size_mm,
                      layout.camera_height_mm, (width, height), lens, layout.camera_nadir_mm,
                      dict(layout.zone_heights_mm))
    err_mm = np.linalg.norm(cal.to_mm(px) - mm, axis=1)
    err_px = np.linalg.norm(cal.to_px(mm) - px, axis=1)
    worst = used[int(np.argmax(err_mm)) // 4]
    if err_mm.max() > layout.max_error_mm:
        raise CalibrationError(
            f"calibration: corner error up to {err_mm.max():.2f} mm (marker {worst}), more than "
            f"max_error_mm = {layout.max_error_mm}: is marker {worst} where the layout says, flat on "
            "the felt, and is the lens distortion small (else measure it: --lens-images)?")
    record = HomographyRecord(
        pixel_to_mm=h.tolist(), image_width=width, image_height=height,
        error_mm_mean=float(err_mm.mean()), error_mm_max=float(err_mm.max()),
        error_px_mean=float(err_px.mean()), error_px_max=float(err_px.max()),
        markers_found=used, markers_missing=missing,
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), source=source)
    return CalibrationResult(cal, record, {i: found[i] for i in used}, unknown)


# -- files -----------------------------------------------------------------------------------

def read_toml(path: Path) -> dict:
    """The TOML file ``path`` as a dict; every way it can be unreadable is a CalibrationError
    naming ``path``: no such file, a directory, unreadable (permissions), not UTF-8 text (e.g.
    an image passed by mistake), not valid TOML."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise CalibrationError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CalibrationError(f"{path}: is a directory, not a TOML file") from None
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CalibrationError(f"{path}: not a UTF-8 TOML text file (byte {exc.start}: "
                               f"{exc.object[exc.start:exc.start + 1]!r})") from None
    except tomllib.TOMLDecodeError as exc:
        raise CalibrationError(f"{path}: not valid TOML: {exc}") from None


def _parse(path: Path) -> CalibrationFile:
    data = read_toml(path)
    try:
        return CalibrationFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise CalibrationError(f"{path}: {problems}") from None


def load_layout(path: str | Path) -> CalibrationFile:
    """Read a calibration TOML (``[layout]``, ``[zones]``, ``[homography]`` optional).

    Raises:
        CalibrationError: missing file, a directory, unreadable or not UTF-8 text, bad TOML,
            unknown key or bad value (named).
    """
    return _parse(Path(path))


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibrated file into a :class:`Calibration`.

    Raises:
        CalibrationError: as :func:`load_layout`, or no ``[homography]`` yet (run
            ``craps-table calibrate``).
    """
    path = Path(path)
    cf = _parse(path)
    if cf.homography is None:
        raise CalibrationError(f"{path}: no [homography]: run `craps-table calibrate --out {path}` first")
    r = cf.homography
    lens = Lens.from_config(cf.lens) if cf.lens is not None else None
    return Calibration(np.asarray(r.pixel_to_mm, dtype=np.float64), dict(cf.zones),
                       tuple(cf.layout.zone_priority), cf.layout.die_size_mm, cf.layout.camera_height_mm,
                       (r.image_width, r.image_height), lens, cf.layout.camera_nadir_mm,
                       dict(cf.layout.zone_heights_mm))


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _table(name: str, values: dict) -> list[str]:
    lines = [f"[{name}]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in values.items() if v is not None]
    return lines


def _keep_mode(path: Path, fd: int) -> None:
    """Give the new file the old one's mode and owner (the service user must still read it),
    or 0644 less the umask for a new file (``mkstemp`` makes 0600)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o644 & ~umask)
        return
    os.fchmod(fd, st.st_mode & 0o7777)
    if hasattr(os, "fchown") and os.geteuid() == 0:
        os.fchown(fd, st.st_uid, st.st_gid)


def write_calibration(path: str | Path, cfile: CalibrationFile) -> None:
    """Write a calibration TOML atomically (a temporary file in the same folder, then rename):
    a crash leaves the old file or the new one, never half of one.

    Raises:
        OSError: the folder does not exist (it is not made) or is not writable.
    """
    path = Path(path)
    layout = cfile.layout.model_dump(exclude={"markers"})
    lines = [
        "# Table calibration: ArUco markers on the felt -> homography pixels -> table mm.",
        "# Written by `craps-table calibrate`; edit [layout] and [zones], then run it again.",
        "# Keys are documented in config/calibration.example.toml.",
        "",
        *_table("layout", layout),
        "",
    ]
    for m in cfile.layout.markers:
        lines += ["[[layout.markers]]", *_table("", m.model_dump())[1:], ""]
    lines += ["[zones]"]
    lines += [f"{name} = {_toml_value([list(p) for p in poly])}" for name, poly in cfile.zones.items()]
    lines.append("")
    if cfile.lens is not None:
        lines += [*_table("lens", cfile.lens.model_dump()), ""]
    if cfile.homography is not None:
        lines += [*_table("homography", cfile.homography.model_dump()), ""]
    text = "\n".join(lines)
    tomllib.loads(text)  # never write what cannot be read back
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            _keep_mode(path, f.fileno())
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_ZONE_COLOURS = {"playing": (0, 200, 0), "far_wall_band": (0, 200, 255), "chip_bank": (255, 120, 0),
                 "dice_cup": (255, 0, 255), "rails": (0, 0, 255)}


def _densify(points_mm, closed: bool, step_mm: float = 10.0) -> np.ndarray:
    """Points every ``step_mm`` along a polyline, so that a lens-distorted edge is drawn curved."""
    pts = np.asarray(points_mm, dtype=np.float64).reshape(-1, 2)
    ends = np.vstack([pts, pts[:1]]) if closed else pts
    out = []
    for a, b in zip(ends[:-1], ends[1:]):
        n = max(1, int(np.ceil(np.linalg.norm(b - a) / step_mm)))
        out.append(a + (b - a) * (np.arange(n)[:, None] / n))
    out.append(ends[-1:])
    return np.vstack(out)


def _polyline(img: np.ndarray, cal: Calibration, points_mm, colour, thickness: int, closed: bool) -> np.ndarray:
    px = cal.to_px(_densify(points_mm, closed)).round().astype(np.int32)
    cv2.polylines(img, [px.reshape(-1, 1, 2)], False, colour, thickness, cv2.LINE_AA)
    return px


def draw_calibration(image: np.ndarray, cal: Calibration, corners_px: dict[int, np.ndarray] | None = None,
                     grid_mm: float | None = 100.0) -> np.ndarray:
    """A copy of ``image`` (BGR ``uint8``) with the zones, a millimetre grid on the playing
    surface, the markers found (ids) and a die-sized square at the playing surface's centre.

    Returns:
        ``(H, W, 3)`` uint8 BGR.
    """
    img = check_image(image, "calibration image")
    out = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR) if img.ndim == 2 else img.copy()
    if grid_mm and "playing" in cal.zones:
        poly = cal.zones["playing"]
        (x0, y0), (x1, y1) = poly.min(axis=0), poly.max(axis=0)
        for x in np.arange(math.ceil(x0 / grid_mm) * grid_mm, x1 + 1e-9, grid_mm):
            _polyline(out, cal, [(x, y0), (x, y1)], (90, 90, 90), 1, closed=False)
        for y in np.arange(math.ceil(y0 / grid_mm) * grid_mm, y1 + 1e-9, grid_mm):
            _polyline(out, cal, [(x0, y), (x1, y)], (90, 90, 90), 1, closed=False)
    for name, poly in cal.zones.items():
        colour = _ZONE_COLOURS.get(name, (255, 255, 255))
        px = _polyline(out, cal, poly, colour, 2, closed=True)
        anchor = px.min(axis=0) + 4
        cv2.putText(out, name, (int(anchor[0]), int(anchor[1]) + 14), cv2.FONT_HERSHEY_SIMPLEX, 0.5,
                    colour, 1, cv2.LINE_AA)
    if corners_px:
        for i, c in corners_px.items():
            q = c.round().astype(np.int32)
            cv2.polylines(out, [q.reshape(-1, 1, 2)], True, (0, 255, 255), 2, cv2.LINE_AA)
            cv2.circle(out, tuple(q[0]), 4, (0, 0, 255), -1)
            cv2.putText(out, str(i), tuple(q.mean(axis=0).astype(int)), cv2.FONT_HERSHEY_SIMPLEX, 0.6,
                        (0, 0, 255), 2, cv2.LINE_AA)
    if "playing" in cal.zones:
        centre = cal.zones["playing"].mean(axis=0)
        h = cal.die_size_mm / 2
        sq = cal.to_px([[centre[0] - h, centre[1] - h], [centre[0] + h, centre[1] - h],
                        [centre[0] + h, centre[1] + h], [centre[0] - h, centre[1] + h]])
        cv2.polylines(out, [sq.round().astype(np.int32).reshape(-1, 1, 2)], True, (255, 255, 255), 1)
    return out
