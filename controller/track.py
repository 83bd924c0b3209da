"""The motion track of a throw: each die's centre in table millimetres, frame by frame.

Used for 9 NYCRR 5324.52(k)(2)(ii) and (g): "either die or both of the dice fail to strike an
end of the table" / "in a manner calculated to cause the dice to strike the end of the table
farthest from the shooter". :func:`controller.irregularity.observe_throw` takes the tracks and
asks whether each die's track entered the ``far_wall_band`` zone.

Method: background subtraction against the table as it was before the throw (colour, downscaled
by ``scale``; the largest difference of the three channels), threshold, opening, connected components inside the playing area. Two or more components: the two
largest are one die each; a lone component holds both dice when it covers ``together_areas``
die areas, else one; a component holding both dice (two dice touching) is split in two by
k-means on its pixels (Lloyd's iterations from the tracks' predicted positions), so that each
die keeps its own centre while they touch. A smaller component of ``both_areas`` that both
tracks are predicted within two sides of (two dice touching at a wall, which hides part of
their shadows) is split the same way.
Components are assigned to the two tracks by the least total distance to each track's predicted
position (constant velocity from its last two points); a prediction beyond a wall (at 60 fps a
die bounces off the far wall between two frames) is the segment from the wall to its mirror
image inside, since the rubber returns a die anywhere from dead stopped to nearly elastic; both
tracks take the two halves of a split component. Each point is the
component's centroid mapped to the felt plane by the calibration's homography, corrected for
the parallax of a die's centre half a side above the felt when the calibration knows the camera
height (``Calibration.felt_point``); a die in the air appears further out still (at 50 mm up,
3 % of its distance from the nadir).

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
        threshold: levels (1..255) a pixel must differ from the background by in some channel.
        scale: downscale factor of the images compared (1 = full size).
        max_dice: dice tracked (2).
        together_areas: a lone component of at least this many die areas holds both dice (a
            die with its shadow and side faces covers up to about two die areas).
        both_areas: a lone component of at least this many die areas also holds both dice
            when both tracks are predicted within two sides of it; both take its centroid.

    Example::

        tr = ThrowTracker(cal, die_side_px=17.6)
        tr.set_background(frame_before_throw)
        for f in motion_frames:
            tr.add(f.t, f.image)
        observe_throw(readings, calibration=cal, track=tr.tracks())
    """

    def __init__(self, calibration, *, die_side_px: float, threshold: int = 40, scale: int = 2,
                 max_dice: int = 2, together_areas: float = 2.5, both_areas: float = 2.0) -> None:
        if die_side_px <= 0:
            raise ValueError(f"die_side_px must be > 0, got {die_side_px}")
        self.cal = calibration
        self.side = float(die_side_px)
        self.threshold = int(threshold)
        self.scale = max(1, int(scale))
        #: full-size pixel of a downscaled pixel's centre: k -> scale * k + (scale - 1) / 2
        self._off = (self.scale - 1) / 2
        if max_dice not in (1, 2):
            raise ValueError(f"max_dice must be 1 or 2, got {max_dice}")
        self.max_dice = int(max_dice)
        self.together_areas = float(together_areas)
        self.both_areas = float(both_areas)
        self._bg: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        self._edges: list[tuple[np.ndarray, np.ndarray]] = []
        self._tracks: list[list[tuple[float, float, float]]] = [[] for _ in range(self.max_dice)]
        self._shared: list[list[bool]] = [[] for _ in range(self.max_dice)]
        self._copied: list[list[bool]] = [[] for _ in range(self.max_dice)]
        self._last_px: list[tuple[float, float, float] | None] = [None] * self.max_dice
        self._prev_px: list[tuple[float, float, float] | None] = [None] * self.max_dice
        self._seen: list[tuple[float, float, float]] = []

    def _grey(self, image: np.ndarray) -> np.ndarray:
        """The downscaled frame (colour kept: a red die on green felt has about the felt's grey)."""
        img = check_image(image, "tracker frame")
        if self.scale > 1:
            img = cv2.resize(img, (img.shape[1] // self.scale, img.shape[0] // self.scale),
                             interpolation=cv2.INTER_AREA)
        return img

    def set_background(self, image: np.ndarray) -> None:
        """The table before the throw (no dice moving); starts a new throw.

        Raises:
            camera.base.FrameError: not a valid frame.
        """
        self._bg = self._grey(image)
        h, w = self._bg.shape[:2]
        mask = np.zeros((h, w), np.uint8)
        playing = getattr(self.cal, "zones", {}).get("playing")
        if playing is not None:
            px = self.cal.to_px(np.asarray(playing, dtype=np.float64)) / self.scale
            cv2.fillPoly(mask, [np.round(px).astype(np.int32)], 255)
        else:
            mask[:] = 255
        self._mask = mask
        self._edges = self._inner_edges(playing)
        self._tracks = [[] for _ in range(self.max_dice)]
        self._shared = [[] for _ in range(self.max_dice)]
        self._copied = [[] for _ in range(self.max_dice)]
        self._last_px = [None] * self.max_dice
        self._prev_px = [None] * self.max_dice
        self._seen = []

    def _inner_edges(self, playing) -> list[tuple[np.ndarray, np.ndarray]]:
        """The playing area's edges in full-size pixels as ``(point, inward unit normal)``,
        moved half a die side inwards (the nearest a die's centre comes to a wall)."""
        if playing is None:
            return []
        px = self.cal.to_px(np.asarray(playing, dtype=np.float64)).reshape(-1, 2)
        centre = px.mean(axis=0)
        out = []
        for a, b in zip(px, np.roll(px, -1, axis=0)):
            d = b - a
            n = float(np.hypot(*d))
            if n == 0:
                continue
            normal = np.array([-d[1], d[0]]) / n
            if float((centre - a) @ normal) < 0:
                normal = -normal
            out.append((a + normal * 0.5 * self.side, normal))
        return out

    def _blobs(self, grey: np.ndarray) -> tuple[list[tuple[float, float, float, int]], np.ndarray]:
        """Components ``(x_px, y_px, area in die areas, label)``, largest first, and the label
        image (downscaled)."""
        diff = cv2.absdiff(grey, self._bg)
        if diff.ndim == 3:
            diff = diff.max(axis=2)
        fg = ((diff > self.threshold) * 255).astype(np.uint8)
        fg = cv2.bitwise_and(fg, self._mask)
        fg = cv2.morphologyEx(fg, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
        n, labels, stats, cents = cv2.connectedComponentsWithStats(fg)
        die_area = (self.side / self.scale) ** 2
        out = []
        for i in range(1, n):
            area = float(stats[i][4])
            if area < 0.3 * die_area:
                continue
            out.append((float(cents[i][0]) * self.scale + self._off, float(cents[i][1]) * self.scale + self._off,
                        area / die_area, i))
        out.sort(key=lambda b: -b[2])
        return out, labels

    def _split(self, labels: np.ndarray, label: int, t: float) -> list[tuple[float, float]]:
        """The two dice of one component: 2-means of its pixels (full-size pixel coordinates),
        started from the tracks' predicted positions (or the ends of its long axis)."""
        ys, xs = np.nonzero(labels == label)
        pts = np.stack([xs, ys], axis=1).astype(np.float64) * self.scale + self._off
        pred = [self._predict(d, t) for d in range(2)]
        if all(p is not None for p in pred) and math.hypot(pred[0][0] - pred[1][0], pred[0][1] - pred[1][1]) > 0.5 * self.side:
            c = np.array(pred, np.float64)
        else:
            m = pts.mean(axis=0)
            _, _, vt = np.linalg.svd(pts - m, full_matrices=False)
            proj = (pts - m) @ vt[0]
            c = np.array([m + vt[0] * np.percentile(proj, 25), m + vt[0] * np.percentile(proj, 75)])
        for _ in range(8):
            near = np.argmin(((pts[:, None, :] - c[None, :, :]) ** 2).sum(axis=2), axis=1)
            if near.min() == near.max():
                break
            c = np.array([pts[near == k].mean(axis=0) for k in range(2)])
        return [(float(c[0][0]), float(c[0][1])), (float(c[1][0]), float(c[1][1]))]

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
        blobs, labels = self._blobs(grey)
        if not blobs:
            return
        mm_all = self.cal.to_mm([[b[0], b[1]] for b in blobs])
        self._seen.extend((float(t), float(x), float(y)) for x, y in np.asarray(mm_all).reshape(-1, 2))
        shared = False
        if len(blobs) >= 2:
            points = [(x, y) for x, y, _, _ in blobs[: self.max_dice]]
        elif self.max_dice == 2 and blobs[0][2] >= self.together_areas:
            points = self._split(labels, blobs[0][3], float(t))
            shared = True
        elif self.max_dice == 2 and self._both_in(blobs[0], float(t)):
            # both dice, touching at a wall that hides part of their shadows: split at the
            # tracks' predicted positions as a larger component is (both at its centroid, a
            # pair settling there ended both tracks on one spot between the dice: simulated
            # camera, cocked-on-die seed 4294, taken for a die off the table)
            points = self._split(labels, blobs[0][3], float(t))
            shared = True
        else:
            points = [(blobs[0][0], blobs[0][1])]
        first = all(not tr for tr in self._tracks)
        assign = self._assign(points, float(t))
        half = float(getattr(self.cal, "die_size_mm", 19.05)) / 2.0
        felt_point = getattr(self.cal, "felt_point", None)
        for d, p in assign.items():
            if felt_point is not None:  # the die's centre is half a side up: parallax-corrected
                mm = felt_point((p[0], p[1]), half)
            else:
                mm = self.cal.to_mm([[p[0], p[1]]])[0]
            self._tracks[d].append((float(t), float(mm[0]), float(mm[1])))
            self._shared[d].append(shared)
            self._copied[d].append(first and not shared and d >= len(points))
            self._prev_px[d] = self._last_px[d]
            self._last_px[d] = (float(t), p[0], p[1])

    def _both_in(self, blob: tuple[float, float, float, int], t: float) -> bool:
        """A lone component below ``together_areas`` still holds both
        dice when it covers ``both_areas`` die areas and both tracks, seen in the last 0.05 s,
        are predicted within two sides of its centroid (two dice touching at a wall, which
        hides part of their shadows)."""
        if blob[2] < self.both_areas:
            return False
        for d in range(2):
            last, q = self._last_px[d], self._predict(d, t)
            if last is None or q is None or t - last[0] > 0.05:
                return False
            if math.hypot(q[0] - blob[0], q[1] - blob[1]) > 2.0 * self.side:
                return False
        return True

    def _predict(self, d: int, t: float) -> tuple[float, float] | None:
        """Where track ``d`` should be at ``t`` (full-size pixels): constant velocity from its
        last two points, mirrored back into the playing area across any wall it went beyond."""
        span = self._predict_span(d, t)
        return None if span is None else span[1]

    def _predict_span(self, d: int, t: float) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """Where track ``d`` can be at ``t`` (full-size pixels), as a segment ``(a, b)``:
        constant velocity from its last two points (``a == b``); past a wall, anywhere from
        the wall (``a``, the die stopped by it) to the mirror image (``b``, an elastic bounce).

        A die strikes the rubber of the far wall and comes back slower than it went in, often
        barely moving away in the next frame: the mirror image alone put it 30-60 mm too far
        back, nearer the other die coming in, and the tracker swapped the two dice (simulated
        camera at 60 fps: the die that struck then took the other's track, and a good throw was
        called far-wall-missed)."""
        last, prev = self._last_px[d], self._prev_px[d]
        if last is None:
            return None
        if prev is None or last[0] <= prev[0]:
            return (last[1], last[2]), (last[1], last[2])
        k = (t - last[0]) / (last[0] - prev[0])
        p = np.array([last[1] + k * (last[1] - prev[1]), last[2] + k * (last[2] - prev[2])])
        stop = p.copy()
        for a, normal in self._edges:   # beyond a wall: it bounced, mirrored back
            depth = float((p - a) @ normal)
            if depth < 0:
                stop = stop - depth * normal
                p = p - 2.0 * depth * normal
        return (float(stop[0]), float(stop[1])), (float(p[0]), float(p[1]))

    def _assign(self, points: Sequence[tuple[float, float]], t: float) -> dict[int, tuple[float, float]]:
        """Track index -> point, by least total distance to the tracks' predicted positions."""
        dice = list(range(self.max_dice))
        pred = [self._predict_span(d, t) for d in dice]
        if all(p is None for p in pred):
            # the first frame with anything in it: a lone component starts both tracks (a die
            # on the other is one component throughout, and its two tracks must end there);
            # the copy is flagged (:meth:`copied`): that die has not been seen yet
            return {d: points[d] if d < len(points) else points[-1] for d in dice}

        def dist(d: int, p: tuple[float, float]) -> float:
            """Distance of ``p`` from the segment where track ``d`` can be."""
            if pred[d] is None:
                return 1e6
            (ax, ay), (bx, by) = pred[d]
            vx, vy = bx - ax, by - ay
            vv = vx * vx + vy * vy
            f = 0.0 if vv <= 0 else min(1.0, max(0.0, ((p[0] - ax) * vx + (p[1] - ay) * vy) / vv))
            return math.hypot(p[0] - ax - f * vx, p[1] - ay - f * vy)

        if len(points) >= 2:
            a = dist(0, points[0]) + dist(1, points[1])
            b = dist(0, points[1]) + dist(1, points[0])
            return {0: points[0], 1: points[1]} if a <= b else {0: points[1], 1: points[0]}
        d = min(dice, key=lambda i: dist(i, points[0]))
        return {d: points[0]}

    def tracks(self) -> list[list[tuple[float, float, float]]]:
        """Per die, the ``(t_s, x_mm, y_mm)`` points seen (copies)."""
        return [list(t) for t in self._tracks]

    def seen(self) -> list[tuple[float, float, float]]:
        """Every component found in every frame (not only the two followed as dice), as
        ``(t_s, x_mm, y_mm)``: its centroid mapped to the felt plane (no parallax correction: a
        die in the air appears further from the camera's nadir). Where anything moved, for
        telling dice offered to a shooter from a throw (controller/offer.py)."""
        return list(self._seen)

    def copied(self) -> list[list[bool]]:
        """Per die and point of :meth:`tracks`: ``True`` where the point is a copy of the other
        die's: a lone component in the first frame (not one holding both dice) starts both
        tracks, though only one die was seen. The other die's first point not copied is when
        it entered the view (9 NYCRR 5324.52(k)(2)(i), controller/release.py)."""
        return [list(c) for c in self._copied]

    def shared(self) -> list[list[bool]]:
        """Per die and point of :meth:`tracks`: ``True`` where the point came from one
        component holding both dice (two dice touching, split by 2-means): which die is
        which there is a guess, and the far-wall decision leaves such points out."""
        return [list(s) for s in self._shared]
