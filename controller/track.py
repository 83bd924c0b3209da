"""The motion track of a throw: each die's centre in table millimetres, frame by frame.

Used for 9 NYCRR 5324.52(k)(2)(ii) and (g): "either die or both of the dice fail to strike an
end of the table" / "in a manner calculated to cause the dice to strike the end of the table
farthest from the shooter". :func:`controller.irregularity.observe_throw` takes the tracks and
asks whether each die's track entered the ``far_wall_band`` zone.

Method: background subtraction against the table as it was before the throw (grey, downscaled
by ``scale``), threshold, opening, connected components inside the playing area. A component of
``n`` die areas (rounded, 1..2) holds ``n`` dice. Components are assigned to two tracks by the
nearest previous position (both tracks take a component holding two dice). Each point is the
component's centroid mapped to the felt plane by the calibration's homography (a die in the air
appears a little further from the camera's nadir than it is: at 50 mm up, 3 % of its distance).

Pure apart from numpy/OpenCV; one :meth:`ThrowTracker.add` costs about 1-2 ms at 1280x720.
"""
from __future__ import annotations

import math
from typing import Sequence

import cv2
import numpy as np

from camera.base import check_image


class ThrowTracker:
    """Tracks up to ``max_dice`` dice through the frames of one throw.

    Args:
        calibration: ``camera.calibration.Calibration`` (``to_mm``, ``to_px``, ``zones``).
        die_side_px: the die's side in pixels (``calibration.die_side_px(...)``).
        threshold: grey levels (1..255) a pixel must differ from the background by.
        scale: downscale factor of the images compared (1 = full size).
        max_dice: dice tracked (2).

    Example::

        tr = ThrowTracker(cal, die_side_px=17.6)
        tr.set_background(frame_before_throw)
        for f in motion_frames:
            tr.add(f.t, f.image)
        observe_throw(readings, calibration=cal, track=tr.tracks())
    """

    def __init__(self, calibration, *, die_side_px: float, threshold: int = 40, scale: int = 2,
                 max_dice: int = 2) -> None:
        if die_side_px <= 0:
            raise ValueError(f"die_side_px must be > 0, got {die_side_px}")
        self.cal = calibration
        self.side = float(die_side_px)
        self.threshold = int(threshold)
        self.scale = max(1, int(scale))
        self.max_dice = int(max_dice)
        self._bg: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        self._tracks: list[list[tuple[float, float, float]]] = [[] for _ in range(self.max_dice)]
        self._last_px: list[tuple[float, float] | None] = [None] * self.max_dice

    def _grey(self, image: np.ndarray) -> np.ndarray:
        img = check_image(image, "tracker frame")
        g = img if img.ndim == 2 else cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        if self.scale > 1:
            g = cv2.resize(g, (g.shape[1] // self.scale, g.shape[0] // self.scale), interpolation=cv2.INTER_AREA)
        return g

    def set_background(self, image: np.ndarray) -> None:
        """The table before the throw (no dice moving); starts a new throw.

        Raises:
            camera.base.FrameError: not a valid frame.
        """
        self._bg = self._grey(image)
        h, w = self._bg.shape
        mask = np.zeros((h, w), np.uint8)
        playing = getattr(self.cal, "zones", {}).get("playing")
        if playing is not None:
            px = self.cal.to_px(np.asarray(playing, dtype=np.float64)) / self.scale
            cv2.fillPoly(mask, [np.round(px).astype(np.int32)], 255)
        else:
            mask[:] = 255
        self._mask = mask
        self._tracks = [[] for _ in range(self.max_dice)]
        self._last_px = [None] * self.max_dice

    def _blobs(self, grey: np.ndarray) -> list[tuple[float, float, int]]:
        diff = cv2.absdiff(grey, self._bg)
        fg = ((diff > self.threshold) * 255).astype(np.uint8)
        fg = cv2.bitwise_and(fg, self._mask)
        fg = cv2.morphologyEx(fg, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
        n, _, stats, cents = cv2.connectedComponentsWithStats(fg)
        die_area = (self.side / self.scale) ** 2
        out = []
        for i in range(1, n):
            area = stats[i][4]
            if area < 0.3 * die_area:
                continue
            k = int(min(self.max_dice, max(1, round(area / die_area))))
            out.append((float(cents[i][0]) * self.scale, float(cents[i][1]) * self.scale, k))
        out.sort(key=lambda b: -b[2])
        return out

    def add(self, t: float, image: np.ndarray) -> None:
        """Add one frame of the throw at time ``t`` (seconds).

        Raises:
            RuntimeError: no background set.
            camera.base.FrameError: not a valid frame.
        """
        if self._bg is None:
            raise RuntimeError("ThrowTracker.add before set_background")
        grey = self._grey(image)
        if grey.shape != self._bg.shape:
            raise ValueError(f"tracker frame size {grey.shape} differs from the background {self._bg.shape}")
        blobs = self._blobs(grey)
        if not blobs:
            return
        points: list[tuple[float, float]] = []
        for x, y, k in blobs:
            points.extend([(x, y)] * k)
        points = points[: self.max_dice]
        assign = self._assign(points)
        for d, p in assign.items():
            mm = self.cal.to_mm([[p[0], p[1]]])[0]
            self._tracks[d].append((float(t), float(mm[0]), float(mm[1])))
            self._last_px[d] = p

    def _assign(self, points: Sequence[tuple[float, float]]) -> dict[int, tuple[float, float]]:
        """Track index -> point, by least total distance to the tracks' last points."""
        dice = list(range(self.max_dice))
        if all(p is None for p in self._last_px):
            return {d: points[d] if d < len(points) else points[-1] for d in dice}
        best, best_cost = {}, math.inf
        if len(points) >= 2:
            for order in ((0, 1), (1, 0)):
                cost = sum(self._dist(d, points[order[d]]) for d in (0, 1))
                if cost < best_cost:
                    best, best_cost = {d: points[order[d]] for d in (0, 1)}, cost
            return best
        d = min(dice, key=lambda i: self._dist(i, points[0]))
        return {d: points[0]}

    def _dist(self, d: int, p: tuple[float, float]) -> float:
        last = self._last_px[d]
        return 1e6 if last is None else math.hypot(p[0] - last[0], p[1] - last[1])

    def tracks(self) -> list[list[tuple[float, float, float]]]:
        """Per die, the ``(t_s, x_mm, y_mm)`` points seen (copies)."""
        return [list(t) for t in self._tracks]
