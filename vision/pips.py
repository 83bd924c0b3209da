"""Find the pips on one die and read the face they spell.

Within a die's region the face is the dominant colour; pips are compact blobs of another
colour (dark on light, light on dark, or coloured) of similar size. The face colour is the
median Lab colour inside the region (pips cover well under half of it); pixels far from it
are pip candidates, thresholded by Otsu's method with a floor; blobs are kept by size,
compactness and agreement in size with the other blobs, then checked against the canonical
layouts (:mod:`vision.layout`).

Source: Otsu, "A threshold selection method from gray-level histograms", IEEE SMC 1979.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from vision.layout import LayoutFit, fit_layout

#: Pip-to-face contrast (Lab distance units) below which nothing counts as a pip.
MIN_PIP_CONTRAST = 28.0
#: Layout misfit (fraction of the pip pitch) above which a face is not read.
MAX_LAYOUT_ERROR = 0.30


@dataclass(slots=True)
class Pip:
    """One pip blob: centre ``(x, y)`` in ROI pixels, area in pixels, elongation (major /
    minor axis, 1 = round), mean contrast against the face (Lab distance)."""

    x: float
    y: float
    area: float
    elongation: float
    contrast: float


@dataclass(slots=True)
class FaceRead:
    """The result of reading one die region.

    Attributes:
        value: 1..6 or ``None``.
        confidence: 0..1.
        centre: face centre ``(x, y)`` in ROI pixels.
        pips: the pips kept.
        fit: the layout fit, or ``None``.
        reason: why the value is ``None`` (empty when read).
    """

    value: int | None
    confidence: float
    centre: tuple[float, float]
    pips: list[Pip] = field(default_factory=list)
    fit: LayoutFit | None = None
    reason: str = ""


def find_pips(lab: np.ndarray, mask: np.ndarray, side: float) -> tuple[list[Pip], float, np.ndarray, np.ndarray]:
    """Find pip blobs in a die region.

    A pip is a compact blob that differs from its immediate surround: the difference of
    two Gaussian blurs (pip scale minus surround scale) of each Lab channel is computed,
    its magnitude thresholded (Otsu with a floor) inside the region, and blobs are kept by
    size, compactness, and sign agreement with the strongest blob (all pips of a face are
    the same colour).

    Args:
        lab: uint8 ``(h, w, 3)`` Lab crop around the die.
        mask: uint8 ``(h, w)`` die region (255 inside, pips filled).
        side: approximate die side in pixels.

    Returns:
        (pips, threshold, contrast, inside): pip blobs in crop pixels, the contrast
        threshold used, the uint8 contrast map and the boolean region it was taken in.
    """
    sel = cv2.erode(mask, np.ones((3, 3), np.uint8)) > 0
    if sel.sum() < 16:
        return [], 0.0, np.zeros(mask.shape, np.uint8), sel
    r = max(1.0, 0.09 * side)
    f = lab.astype(np.float32)
    # Paint the table around the die in the face colour, so the die's outline does not
    # respond like a pip.
    face = np.median(f[sel], axis=0)
    f[mask == 0] = face
    g1 = cv2.GaussianBlur(f, (0, 0), max(0.5, 0.4 * r))
    g2 = cv2.GaussianBlur(f, (0, 0), 1.6 * r)
    dog = g1 - g2
    mag = np.sqrt((dog * dog).sum(axis=2))
    d = np.minimum(mag * 2.0, 255).astype(np.uint8)
    # Pips of one face have similar contrast: threshold at a share of the strongest.
    peak = float(np.percentile(d[sel], 99.5))
    thr = max(0.45 * peak, MIN_PIP_CONTRAST)
    bw = ((d > thr) & sel).astype(np.uint8)
    n, labels, stats, cents = cv2.connectedComponentsWithStats(bw, connectivity=8)
    amin = max(3.0, (0.06 * side) ** 2)
    amax = (0.40 * side) ** 2
    cand = []
    for i in range(1, n):
        x, y, w, h, a = stats[i]
        if a < amin or a > amax:
            continue
        if max(w, h) > 2.2 * min(w, h):
            continue
        if a < 0.40 * w * h:
            continue
        sub = labels[y:y + h, x:x + w] == i
        mo = cv2.moments(sub.astype(np.uint8), binaryImage=True)
        mu20, mu02, mu11 = mo["mu20"], mo["mu02"], mo["mu11"]
        root = np.sqrt(max(0.0, ((mu20 - mu02) / 2) ** 2 + mu11 * mu11))
        lam1 = (mu20 + mu02) / 2 + root
        lam2 = (mu20 + mu02) / 2 - root
        elong = float(np.sqrt(max(lam1, 1e-6) / max(lam2, 1e-6))) if a >= 3 else 1.0
        vec = dog[y:y + h, x:x + w][sub].mean(axis=0)
        contrast = float(d[y:y + h, x:x + w][sub].mean())
        cand.append((Pip(float(cents[i][0]), float(cents[i][1]), float(a), elong, contrast), vec))
    if not cand:
        return [], thr, d, sel
    ref = max(cand, key=lambda c: c[0].contrast * c[0].area)[1]
    refn = ref / (np.linalg.norm(ref) + 1e-6)
    pips = [p for p, v in cand if float(np.dot(v, refn)) > 0.6 * float(np.linalg.norm(v))]
    # Contrast in the pips' own polarity (the halo a blur leaves around a pip is of the
    # opposite sign and so does not count).
    proj = np.clip((dog @ refn.astype(np.float32)) * 2.0, 0, 255).astype(np.uint8)
    return pips, thr, proj, sel


def stray_blobs(d: np.ndarray, sel: np.ndarray, pips: list[Pip], level: float, centre: tuple[float, float], reach: float, min_area: float) -> int:
    """Count blobs of contrast above ``level`` within ``reach`` pixels of ``centre`` that
    are not one of ``pips``: a face whose pips were read right has none (a missed, weaker
    pip shows up here, so 5 is never read as 4, nor 3 as 1)."""
    bw = ((d > level) & sel).astype(np.uint8)
    n, _labels, stats, cents = cv2.connectedComponentsWithStats(bw, connectivity=8)
    count = 0
    for i in range(1, n):
        if stats[i][4] < min_area:
            continue
        x, y = cents[i]
        if np.hypot(x - centre[0], y - centre[1]) > reach:
            continue
        near = any(np.hypot(x - p.x, y - p.y) < max(2.0, np.sqrt(p.area)) for p in pips)
        if not near:
            count += 1
    return count


def read_face(lab: np.ndarray, mask: np.ndarray, side: float) -> FaceRead:
    """Read the value of one die from its region.

    Args:
        lab: uint8 ``(h, w, 3)`` Lab crop around the die.
        mask: uint8 ``(h, w)`` die region (255 inside).
        side: approximate die side in pixels.

    Returns:
        The reading; ``value`` is ``None`` when the pips do not form a canonical layout.
    """
    m = cv2.moments(mask, binaryImage=True)
    if m["m00"] <= 0:
        return FaceRead(None, 0.0, (0.0, 0.0), reason="empty region")
    rc = (m["m10"] / m["m00"], m["m01"] / m["m00"])
    pips, thr, dmap, sel = find_pips(lab, mask, side)
    pips = [p for p in pips if p.elongation < 2.0]
    if not pips:
        return FaceRead(None, 0.1, rc, reason="no pips")
    # Pips of one face agree in size: keep the largest group within a factor of ~2.2.
    areas = np.array([p.area for p in pips])
    best: list[Pip] = []
    for ref in areas:
        grp = [p for p in pips if ref / 1.6 <= p.area <= ref * 1.6]
        if len(grp) > len(best) or (len(grp) == len(best) and sum(q.area for q in grp) > sum(q.area for q in best)):
            best = grp
    dropped = len(pips) - len(best)
    pips = best
    n = len(pips)
    if n > 6:
        return FaceRead(None, 0.1, rc, pips, reason=f"{n} pips")
    pts = np.array([[p.x, p.y] for p in pips])
    fit = fit_layout(pts)
    if fit is None:
        return FaceRead(None, 0.1, rc, pips, reason="degenerate layout")
    cx, cy = fit.centre
    off = float(np.hypot(cx - rc[0], cy - rc[1])) / side
    if fit.value == 1:
        if off > 0.2:
            return FaceRead(None, 0.15, rc, pips, fit, reason="single pip off centre")
    else:
        ps = fit.pitch / side
        if not (0.12 <= ps <= 0.45):
            return FaceRead(None, 0.15, rc, pips, fit, reason=f"pitch {ps:.2f} of side")
        if off > 0.35:
            return FaceRead(None, 0.15, rc, pips, fit, reason="layout off centre")
        mean_d = 2 * np.sqrt(np.mean(areas) / np.pi)
        if fit.pitch < 0.8 * mean_d:
            return FaceRead(None, 0.15, rc, pips, fit, reason="pips too close")
    if fit.error > MAX_LAYOUT_ERROR:
        return FaceRead(None, 0.2, rc, pips, fit, reason=f"layout error {fit.error:.2f}")
    cmin = min(p.contrast for p in pips)
    reach = 0.45 * side if fit.value == 1 else 1.5 * fit.pitch
    amin = max(2.0, 0.25 * min(p.area for p in pips))
    if stray_blobs(dmap, sel, pips, max(0.35 * cmin, 0.6 * MIN_PIP_CONTRAST), (cx, cy), reach, amin):
        return FaceRead(None, 0.2, rc, pips, fit, reason="stray blob on face")
    if fit.error > MAX_LAYOUT_ERROR:
        return FaceRead(None, 0.2, rc, pips, fit, reason=f"layout error {fit.error:.2f}")
    conf = 1.0 - 0.5 * fit.error / MAX_LAYOUT_ERROR
    conf *= float(min(1.0, 0.6 + 0.4 * (cmin - thr) / max(thr, 1.0)))
    if dropped:
        conf *= 0.9
    return FaceRead(fit.value, round(max(0.0, min(1.0, conf)), 4), (cx, cy), pips, fit)
