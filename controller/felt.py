"""The felt as the camera sees it: pixels -> table millimetres with parallax, zones, and the
chip stacks on the layout (pure).

:class:`FeltGeometry` wraps a table calibration (``camera.calibration.Calibration``: the
homography pixels -> felt mm, the zone polygons, the die's size and the camera's height) for the
irregularity detectors (controller/irregularity.py and the stages it runs): where a die seen at a
pixel lies on the felt, how large a die there looks, where its top face shows, which zone holds
it. :class:`TableObject` is an object on the layout a die may rest on (a stack of chips).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from controller.verdict import ZONE_PLAYING

#: Die side in millimetres when the calibration does not say: 0.75 in, N.J.A.C. 13:47-20.25(b)2i.
DIE_SIZE_MM = 19.05

#: A die seen smaller than this share of a die on the felt there lies below the felt (fell off
#: the table): it is not put on a rail (``controller.scene.ThrowScene.place``).
BELOW_FELT_RATIO = 0.9

#: Calibration zone name -> verdict zone name (controller/verdict.py).
ZONE_MAP = {
    "playing": ZONE_PLAYING,
    "far_wall_band": ZONE_PLAYING,
    "chip_bank": "chip_bank",
    "dice_cup": "dice_cup",
    "rails": "rail",
    "rail": "rail",
}


@dataclass(frozen=True, slots=True)
class TableObject:
    """An object on the layout a die may rest on or lean against (a stack of chips: a wager).

    Attributes:
        x_mm, y_mm: centre in table millimetres.
        radius_mm: footprint radius, mm (a chip: 19.5).
        height_mm: height above the felt, mm (3.3 per chip).
        kind: what it is, for notes (``"chips"``).
    """

    x_mm: float
    y_mm: float
    radius_mm: float
    height_mm: float
    kind: str = "chips"


def poly_centroid(poly: np.ndarray) -> tuple[float, float]:
    """Mean (x, y) of a polygon's vertices ``(N, 2)``, in its units."""
    return float(np.mean(poly[:, 0])), float(np.mean(poly[:, 1]))


def dist_to_boundary(poly: np.ndarray, p: tuple[float, float]) -> float:
    """Distance (same units) from ``p`` to the nearest edge of a closed polygon (N, 2)."""
    best = math.inf
    n = len(poly)
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        ab = b - a
        denom = float(ab @ ab)
        t = 0.0 if denom == 0 else max(0.0, min(1.0, float((np.asarray(p) - a) @ ab) / denom))
        q = a + t * ab
        best = min(best, math.hypot(p[0] - q[0], p[1] - q[1]))
    return best


class FeltGeometry:
    """Pixel -> felt mm with parallax correction; zone lookup. Wraps a calibration
    (``camera.calibration.Calibration`` or anything with ``to_mm``, ``zone_of``, ``zones``,
    ``die_side_px``, ``die_size_mm``, ``camera_height_mm``).

    Args:
        cal: the calibration.
        nadir_mm: the felt point straight under the camera, table mm (``None``: the
            calibration's ``nadir_mm``, else the centre of the "playing" zone).
        wall_height_mm: height of the rail tops above the felt, mm.

    Attributes:
        size: die side, mm (the calibration's, else :data:`DIE_SIZE_MM`).
        D: camera height above the felt, mm, or ``None``.
        zones: zone name -> polygon, ``(N, 2)`` float64 table mm.
        nadir: see ``nadir_mm``.
        wall_height: mm.
    """

    def __init__(self, cal, nadir_mm: tuple[float, float] | None, wall_height_mm: float) -> None:
        self.cal = cal
        self.size = float(getattr(cal, "die_size_mm", DIE_SIZE_MM) or DIE_SIZE_MM)
        self.D = getattr(cal, "camera_height_mm", None)
        zones = getattr(cal, "zones", {}) or {}
        self.zones = {k: np.asarray(v, dtype=np.float64).reshape(-1, 2) for k, v in zones.items()}
        playing = self.zones.get("playing")
        if nadir_mm is None:
            nadir_mm = getattr(cal, "nadir_mm", None)  # camera/calibration.py, when it knows
        if nadir_mm is None and playing is not None:
            nadir_mm = poly_centroid(playing)
        self.nadir = nadir_mm
        self.wall_height = float(wall_height_mm)

    def expected_side_px(self, p_mm: tuple[float, float]) -> float | None:
        """Apparent side (pixels) of the top face of a die lying on the felt at ``p_mm``, or
        ``None`` where the calibration cannot say."""
        try:
            return float(self.cal.die_side_px(p_mm))
        except (AttributeError, ValueError):
            return None

    def at_height(self, p_obs: np.ndarray, h_mm: float) -> tuple[float, float]:
        """Felt point under a point seen at height ``h_mm`` (pinhole over ``nadir``)."""
        if self.D is None or self.nadir is None or h_mm <= 0:
            return float(p_obs[0]), float(p_obs[1])
        k = (self.D - h_mm) / self.D
        n = np.asarray(self.nadir)
        q = n + (np.asarray(p_obs) - n) * k
        return float(q[0]), float(q[1])

    def top_px(self, q_mm: tuple[float, float]) -> tuple[float, float]:
        """Pixel (x, y) where the camera sees the top face's centre of a die lying on the felt
        at ``q_mm`` (its footprint's centre, mm): the inverse of :meth:`at_height` at one die
        side up, then the homography. The top face is seen further from the nadir than the
        footprint, by ``size / (D - size)`` of its distance (simulated camera, a die 125 mm
        from the nadir: ~4 px at 0.94 px/mm); without the camera height or nadir, the felt
        point's pixel."""
        q = np.asarray(q_mm, dtype=np.float64)
        if self.D is not None and self.nadir is not None and self.D > self.size:
            n = np.asarray(self.nadir, dtype=np.float64)
            q = n + (q - n) * (self.D / (self.D - self.size))
        c = self.cal.to_px([[float(q[0]), float(q[1])]])[0]
        return float(c[0]), float(c[1])

    def height_from_size(self, side_px: float, p_obs: np.ndarray) -> float | None:
        """Height of a die's top face above the felt from its apparent side (mm), or ``None``."""
        exp = self.expected_side_px((float(p_obs[0]), float(p_obs[1])))
        if self.D is None or not exp or side_px <= 0:
            return None
        r = side_px / exp  # exp is the top face of a die on the felt (height = size)
        return float(self.D - (self.D - self.size) / r)

    def zone(self, p: tuple[float, float]) -> str:
        """Verdict zone (:data:`ZONE_MAP`) of the felt point ``p`` (mm); ``"off-table"`` outside
        every zone."""
        name = self.cal.zone_of(p)
        if name is None:
            return "off-table"
        return ZONE_MAP.get(name, name)
