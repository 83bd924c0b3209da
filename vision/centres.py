"""Die centre candidates for the learned dice reader (:mod:`vision.learned`): a CenterNet-style
detector (Zhou et al., "Objects as Points", 2019; ``vision/models/dice_centres.onnx``) run on the
frame scaled so a die box is about :data:`TARGET_BOX_PX` pixels; its heat-map peaks, refined to
sub-cell precision and suppressed, are the candidates ``(x, y, box side, score)`` in frame
pixels."""
from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

#: The detector's output stride (pixels of its input per heat-map cell).
STRIDE = 4
#: Die box side (pixels) at which the detector is run; it was trained on 7..34.
TARGET_BOX_PX = 18.0
#: Long side (pixels) of the coarse pass that measures the dice when their size is unknown.
COARSE_PX = 115
#: Long side (pixels) of the first pass when the coarse pass finds no die.
FIRST_PASS_PX = 288
#: Largest scale (upsampling) and long side (pixels) of a detection pass.
MAX_SCALE = 1.5
MAX_PASS_PX = 1024
#: Two detector peaks closer than this many die boxes are one candidate (the stronger);
#: peaks further apart are both classified, and :func:`vision.learned.read_dice_learned`
#: keeps, of two candidates within half a die, the one the classifier reads best.
NMS_DETECTOR = 0.25
#: Lowest centre-heat peak taken as a die candidate.
CENTRE_MIN = 0.15
#: Two detector peaks closer than this many die sides (not boxes) are also tried at their
#: midpoint: the detector can peak on each pip of a 2 (or the end pips of a 3) and not on the
#: die's centre; two separate dice are never closer than one side (:func:`add_midpoints`).
MIDPOINT_SIDES = 0.9


Net = Callable[[np.ndarray], np.ndarray]
Candidate = tuple[float, float, float, float]


def centres(img: np.ndarray, s: float, det: Net) -> tuple[list[Candidate], float]:
    """Detector pass at scale ``s`` with the centre detector ``det`` (float32 ``(1, 3, H, W)``
    -> ``(1, 2, H / STRIDE, W / STRIDE)``: centre heat, log box side): ``([(x, y, box side,
    score)], effective scale)`` in frame pixels."""
    h, w = img.shape[:2]
    nw, nh = max(8, int(round(w * s / 8)) * 8), max(8, int(round(h * s / 8)) * 8)
    sx, sy = nw / w, nh / h
    small = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA if sx < 1 else cv2.INTER_LINEAR)
    out = det(cv2.dnn.blobFromImage(small, 1.0 / 255.0))[0]
    heat, logsize = out[0], out[1]
    peaks = (heat >= CENTRE_MIN) & (heat >= cv2.dilate(heat, np.ones((3, 3), np.uint8)))
    gh, gw = heat.shape
    v, u = np.nonzero(peaks)
    c = heat[v, u].astype(np.float64)
    # sub-cell peak: a parabola through the peak and its two neighbours along each axis
    du = vertex(c, heat[v, np.maximum(u - 1, 0)], heat[v, np.minimum(u + 1, gw - 1)], (u > 0) & (u < gw - 1))
    dv = vertex(c, heat[np.maximum(v - 1, 0), u], heat[np.minimum(v + 1, gh - 1), u], (v > 0) & (v < gh - 1))
    x = (STRIDE * (u + du) + 1.5) / sx
    y = (STRIDE * (v + dv) + 1.5) / sy
    size = np.exp(logsize[v, u]).astype(np.float64) / ((sx + sy) / 2)   # exp in float32
    order = np.argsort(-c, kind="stable")                               # strongest first
    x, y, size, c = x[order], y[order], size[order], c[order]
    # of two peaks closer than NMS_DETECTOR x the smaller box, the stronger
    keep = greedy(distances(x, y) <= NMS_DETECTOR * np.minimum(size[:, None], size[None, :]))
    return list(zip(x[keep].tolist(), y[keep].tolist(), size[keep].tolist(), c[keep].tolist())), (sx + sy) / 2


def vertex(c: np.ndarray, a: np.ndarray, b: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """Offset (cells, float64 ``(n,)`` in -0.5..0.5) of the vertex of the parabola through
    ``(-1, a)``, ``(0, c)``, ``(1, b)`` (heat values, ``(n,)``), 0 where not ``inside`` the map or
    where the peak is flat (curvature ``2c - a - b`` <= 1e-6)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    den = 2 * c - a - b
    ok = inside & (den > 1e-6)
    return np.where(ok, np.clip((b - a) / (2 * np.where(ok, den, 1.0)), -0.5, 0.5), 0.0)


def distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float64 ``(n, n)``: the distance of points ``i`` and ``j`` (``x``, ``y``: float ``(n,)``,
    pixels), ``np.hypot(x[i] - x[j], y[i] - y[j])``."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return np.hypot(x[:, None] - x[None, :], y[:, None] - y[None, :])


def greedy(near: np.ndarray) -> list[int]:
    """Greedy suppression in index order: the indices ``i`` kept, each not ``near[i, k]`` any
    ``k`` kept before it (``near``: bool ``(n, n)``, symmetric)."""
    keep: list[int] = []
    for i in range(len(near)):
        if not near[i, keep].any():
            keep.append(i)
    return keep


def find(img: np.ndarray, expected_side_px: float | None, det: Net) -> list[Candidate]:
    """Candidates ``[(x, y, box side, centre score)]`` in frame pixels, best first.

    With ``expected_side_px`` (calibration), one pass at the scale that makes a die
    :data:`TARGET_BOX_PX` across. Without it, a coarse pass (long side :data:`COARSE_PX`,
    ~1/6 of the cost) measures the dice, then one pass at the scale they give; a pass
    whose dice come out far from the target size is repeated once at the corrected scale.
    Dice too big for a fixed first pass (close camera, small frame) are found whole this
    way, not as their pips.

    Args:
        img: uint8 ``(H, W, 3)`` BGR frame.
        expected_side_px: the die's side in pixels from calibration, or ``None``.
        det: the centre detector (:func:`centres`).
    """
    h, w = img.shape[:2]
    if expected_side_px:
        # A die's box is 1..1.41 sides (turned) plus a little perspective: ~1.2 sides.
        s = TARGET_BOX_PX / (1.2 * float(expected_side_px))
        return centres(img, s, det)[0]
    top = min(MAX_SCALE, MAX_PASS_PX / max(h, w))
    sc = min(1.0, COARSE_PX / max(h, w))
    coarse, sc_eff = centres(img, sc, det)
    if coarse:
        s1 = min(top, sc * TARGET_BOX_PX / (float(np.median([f[2] for f in coarse])) * sc_eff))
        if abs(np.log(s1 / sc)) <= 0.2:
            return coarse
    else:
        s1 = min(1.0, FIRST_PASS_PX / max(h, w))
    found, s_eff = centres(img, s1, det)
    if found:
        m = float(np.median([f[2] for f in found])) * s_eff
        s2 = min(top, s1 * TARGET_BOX_PX / m)
        if not 0.65 * TARGET_BOX_PX <= m <= 1.6 * TARGET_BOX_PX and abs(np.log(s2 / s1)) > 0.2:
            found = centres(img, s2, det)[0]
    return found


def add_midpoints(found: list[tuple[float, float, float, float]]
                   ) -> list[tuple[float, float, float, float]]:
    """``found`` plus, for every two candidates closer than :data:`MIDPOINT_SIDES` die sides
    (box / 1.2), a candidate at their midpoint (box side and score: the pair's larger). The
    classifier-aware suppression in :func:`vision.learned.read_dice_learned` then keeps the best read."""
    if len(found) < 2:
        return list(found)
    x, y, size = (np.array([f[k] for f in found], np.float64) for k in range(3))
    side = np.minimum(size[:, None], size[None, :]) / 1.2
    close = np.triu(distances(x, y) < MIDPOINT_SIDES * side, 1)
    extra = []
    for i, j in zip(*np.nonzero(close)):
        a, b = found[i], found[j]
        extra.append(((a[0] + b[0]) / 2, (a[1] + b[1]) / 2, max(a[2], b[2]), max(a[3], b[3])))
    return found + extra
