"""Check a set of pip centres against the six canonical die-face layouts.

A standard die face carries its pips on a 3x3 grid: 1 = centre; 2 = one diagonal pair of
corners; 3 = a diagonal with the centre; 4 = the four corners; 5 = corners and centre;
6 = two opposite rows of three. The checks here use only properties that survive an affine
map (collinearity, midpoints, central symmetry, parallelograms), so a face seen obliquely
(a webcam at 45 degrees, or a die tilted against a wall) is checked as well as one seen
square-on.

Source: the layout of Western six-sided dice (opposite faces sum to seven; pips on a 3x3
grid), as used by casino dice (N.J.A.C. 13:69F-1.11 describes the casino die's pips as
flush, of equal size and weight).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class LayoutFit:
    """How well pip centres fit the canonical layout for their count.

    Attributes:
        value: the face value the pips spell (1..6).
        error: the worst misfit, as a fraction of the pip pitch (0 = perfect); a
            genuine face scores below about 0.25.
        pitch: the grid pitch in pixels (distance from the centre pip position to a
            side pip position), ``nan`` for a single pip.
        centre: ``(x, y)`` in pixels of the layout's centre (the face centre).
        aspect: ratio of the longer to the shorter grid axis (1.0 for a face seen
            square-on; larger when it is foreshortened), ``nan`` where undefined
            (1, 2 or 3 pips give only one axis).
    """

    value: int
    error: float
    pitch: float
    centre: tuple[float, float]
    aspect: float


def _parallelogram_error(p: np.ndarray) -> tuple[float, np.ndarray, float, float] | None:
    """For four points, find the pairing into two diagonals that forms a parallelogram.

    Returns (misfit in pixels, centre, half-diagonal lengths ratio, pitch) or None.
    """
    best = None
    for a, b, c, d in ((0, 1, 2, 3), (0, 2, 1, 3), (0, 3, 1, 2)):
        m1 = (p[a] + p[b]) / 2
        m2 = (p[c] + p[d]) / 2
        err = float(np.linalg.norm(m1 - m2))
        if best is None or err < best[0]:
            d1 = p[b] - p[a]
            d2 = p[d] - p[c]
            best = (err, (m1 + m2) / 2, d1, d2)
    err, centre, d1, d2 = best
    # The diagonals of a face's corner square cross near right angles; nearly parallel
    # diagonals mean the points lie on a line, not on a face.
    cross = abs(float(d1[0] * d2[1] - d1[1] * d2[0]))
    if cross < 0.35 * float(np.linalg.norm(d1) * np.linalg.norm(d2)):
        return None
    # The two diagonals of the square of corners: sides are (d1 +- d2) / 2.
    s1 = float(np.linalg.norm((d1 + d2) / 2))
    s2 = float(np.linalg.norm((d1 - d2) / 2))
    if min(s1, s2) < 1e-6:
        return None
    pitch = (s1 + s2) / 4.0  # centre-to-side-pip distance (half a side of the corner square)
    return err, centre, max(s1, s2) / min(s1, s2), pitch


def fit_layout(points: np.ndarray) -> LayoutFit | None:
    """Fit pip centres to the canonical layout of their count.

    Args:
        points: float array ``(n, 2)`` of pip centres in pixels, 1 <= n <= 6.

    Returns:
        The fit, or ``None`` when the count is outside 1..6 or the points cannot form the
        layout at all (e.g. collinear for four pips). The caller judges ``error``.
    """
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    n = len(p)
    if n == 1:
        return LayoutFit(1, 0.0, float("nan"), (float(p[0, 0]), float(p[0, 1])), float("nan"))
    if n == 2:
        c = p.mean(axis=0)
        half = float(np.linalg.norm(p[1] - p[0])) / 2
        pitch = half / np.sqrt(2)
        return LayoutFit(2, 0.0, pitch, (float(c[0]), float(c[1])), float("nan"))
    if n == 3:
        # The middle pip is the one closest to the centroid; the others are its mirror pair.
        c = p.mean(axis=0)
        k = int(np.argmin(np.linalg.norm(p - c, axis=1)))
        others = np.delete(p, k, axis=0)
        mid = others.mean(axis=0)
        half = float(np.linalg.norm(others[1] - others[0])) / 2
        if half < 1e-6:
            return None
        pitch = half / np.sqrt(2)
        err = float(np.linalg.norm(p[k] - mid)) / pitch
        return LayoutFit(3, err, pitch, (float(mid[0]), float(mid[1])), float("nan"))
    if n == 4:
        r = _parallelogram_error(p)
        if r is None:
            return None
        err, centre, aspect, pitch = r
        return LayoutFit(4, err / pitch, pitch, (float(centre[0]), float(centre[1])), aspect)
    if n == 5:
        c = p.mean(axis=0)
        k = int(np.argmin(np.linalg.norm(p - c, axis=1)))
        corners = np.delete(p, k, axis=0)
        r = _parallelogram_error(corners)
        if r is None:
            return None
        err, centre, aspect, pitch = r
        err = max(err, float(np.linalg.norm(p[k] - centre)))
        return LayoutFit(5, err / pitch, pitch, (float(centre[0]), float(centre[1])), aspect)
    if n == 6:
        c = p.mean(axis=0)
        # Central symmetry: every pip has a partner mirrored through the centre.
        mirrored = 2 * c - p
        dmat = np.linalg.norm(p[:, None, :] - mirrored[None, :, :], axis=2)
        sym_err = float(np.max(np.min(dmat, axis=1)))
        # The two middle pips form one of the three mirrored pairs; try each pair and keep
        # the one whose four others form a parallelogram with the pair on its long sides.
        best6 = None
        for i in range(6):
            j = int(np.argmin(dmat[i]))
            if j <= i:
                continue
            mids = p[[i, j]]
            corners = np.delete(p, [i, j], axis=0)
            r = _parallelogram_error(corners)
            if r is None:
                continue
            err, _centre, _aspect, _pitch = r
            mid_err = 0.0
            for m in mids:
                bm = np.inf
                for a in range(4):
                    for b in range(a + 1, 4):
                        bm = min(bm, float(np.linalg.norm((corners[a] + corners[b]) / 2 - m)))
                mid_err = max(mid_err, bm)
            pitch = float(np.linalg.norm(mids[1] - mids[0])) / 2
            if pitch < 1e-6:
                continue
            score = max(err, mid_err) / pitch
            if best6 is None or score < best6[0]:
                best6 = (score, err, mid_err, pitch, mids, corners)
        if best6 is None:
            return None
        _score, err, mid_err, pitch, mids, corners = best6
        centre = c
        # Grid axes: across the rows (mid to mid) and along a row (corner to corner / 2).
        long_half = np.inf
        for i in range(4):
            for j in range(i + 1, 4):
                mpt = (corners[i] + corners[j]) / 2
                if min(np.linalg.norm(mpt - mids[0]), np.linalg.norm(mpt - mids[1])) < pitch:
                    long_half = min(long_half, float(np.linalg.norm(corners[i] - corners[j])) / 2)
        aspect = long_half / pitch if np.isfinite(long_half) and pitch > 0 else float("nan")
        if np.isfinite(aspect) and aspect < 1:
            # two coincident corner pips (long_half 0) are no grid at all: infinitely distorted
            aspect = 1 / aspect if aspect > 0 else float("inf")
        e = max(sym_err, err, mid_err) / pitch
        return LayoutFit(6, e, pitch, (float(centre[0]), float(centre[1])), aspect)
    return None
