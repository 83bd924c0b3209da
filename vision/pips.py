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
#: Also veto a read for any same-polarity connected blob near the face (coarser than the
#: candidate check; off: it fires on the inner edges of translucent dice).
STRAY_COMPONENTS = True
#: Contrast at a grid position that must be bare, as a share of the weakest pip's, above
#: which the read is refused.
EMPTY_SPOT_SHARE = 0.5
#: How far (share of the strongest pip's response vector) another pip's may differ (0.65
#: measured worse on the train photos: more wrong reads, no more right ones).
PIP_COLOUR_TOLERANCE = 0.5
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


def find_pips(lab: np.ndarray, mask: np.ndarray, side: float) -> tuple[list[Pip], float, np.ndarray, np.ndarray, list[Pip]]:
    """Find pip blobs in a die region.

    A pip is a compact blob that differs from its immediate surround. The difference of
    two Gaussian blurs (pip scale minus surround scale; a band-pass "blob" filter) of each
    Lab channel gives a colour vector per pixel; its local maxima of magnitude are the
    candidate pip centres. Each candidate's extent is the connected set around it whose
    response, projected on the candidate's own colour vector, is at least half the peak;
    candidates too small, too large or elongated (streaks, edges) are dropped. All pips of
    a face are of one colour on one face colour, so the kept pips are those whose response
    vector is close to that of the strongest candidate.

    Args:
        lab: uint8 ``(h, w, 3)`` Lab crop around the die.
        mask: uint8 ``(h, w)`` die region (255 inside, pips filled).
        side: approximate die side in pixels.

    Returns:
        (pips, threshold, contrast, inside, similar): pip blobs in crop pixels, the
        contrast floor used, the uint8 map of contrast in the pips' polarity, the boolean
        region it was taken in, and the other compact blobs of the pips' polarity (a
        weaker pip, or a pip on a side face).

    Source: Lindeberg, "Feature detection with automatic scale selection", IJCV 1998
    (difference-of-Gaussian blob detection).
    """
    sel = cv2.erode(mask, np.ones((3, 3), np.uint8)) > 0
    empty = np.zeros(mask.shape, np.uint8)
    if sel.sum() < 16:
        return [], 0.0, empty, sel, []
    r = max(1.0, 0.09 * side)
    f = lab.astype(np.float32)
    # Paint the table around the die in the face colour, so the die's outline does not
    # respond like a pip.
    inside = f[sel]
    face = np.median(inside[:: max(1, len(inside) // 400)], axis=0)
    f[mask == 0] = face
    g1 = cv2.GaussianBlur(f, (0, 0), max(0.5, 0.4 * r))
    g2 = cv2.GaussianBlur(f, (0, 0), 1.6 * r)
    dog = g1 - g2
    mag = np.sqrt((dog * dog).sum(axis=2))
    k = max(3, int(round(1.6 * r)) | 1)
    dil = cv2.dilate(mag, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    floor = MIN_PIP_CONTRAST / 2.0
    # Pips of one face have similar contrast: peaks far weaker than the strongest are
    # texture, not pips (a quarter keeps a faint pip for the vetoes below).
    top = float(mag[sel].max())
    pk = (mag >= dil) & sel & (mag > max(floor, 0.25 * top))
    ys, xs = np.nonzero(pk)
    order = np.argsort(-mag[ys, xs])[:24]
    amin = max(3.0, (0.06 * side) ** 2)
    amax = (0.40 * side) ** 2
    R = int(np.ceil(2.2 * r)) + 1
    hh, ww = mag.shape
    cand: list[tuple[Pip, np.ndarray]] = []
    for o in order:
        y, x = int(ys[o]), int(xs[o])
        if any(abs(p.x - x) <= r and abs(p.y - y) <= r for p, _ in cand):
            continue
        m = float(mag[y, x])
        v = dog[y, x]
        y0, y1, x0, x1 = max(0, y - R), min(hh, y + R + 1), max(0, x - R), min(ww, x + R + 1)
        proj = dog[y0:y1, x0:x1] @ (v / m)
        bw = (proj >= 0.5 * m).astype(np.uint8)
        n, labels, stats, cents = cv2.connectedComponentsWithStats(bw, connectivity=8)
        li = labels[y - y0, x - x0]
        if li == 0:
            continue
        bx, by, bw_, bh, a = stats[li]
        if a < amin or a > amax:
            continue
        if bx == 0 or by == 0 or bx + bw_ == x1 - x0 or by + bh == y1 - y0:
            continue  # runs out of the window: a streak or an edge, not a pip
        mo = cv2.moments((labels == li).astype(np.uint8), binaryImage=True)
        mu20, mu02, mu11 = mo["mu20"], mo["mu02"], mo["mu11"]
        root = np.sqrt(max(0.0, ((mu20 - mu02) / 2) ** 2 + mu11 * mu11))
        lam1 = (mu20 + mu02) / 2 + root
        lam2 = (mu20 + mu02) / 2 - root
        elong = float(np.sqrt(max(lam1, 1e-6) / max(lam2, 1e-6))) if a >= 3 else 1.0
        if elong > 2.2:
            continue
        cx, cy = cents[li]
        cand.append((Pip(float(x0 + cx), float(y0 + cy), float(a), elong, 2.0 * m), v))
    if not cand:
        return [], MIN_PIP_CONTRAST, empty, sel, []
    ref = cand[0][1]
    refn = ref / (np.linalg.norm(ref) + 1e-6)
    pips, similar = [], []
    for p, v in cand:
        if float(np.linalg.norm(v - ref)) < PIP_COLOUR_TOLERANCE * float(np.linalg.norm(ref)):
            pips.append(p)
        elif float(np.dot(v, refn)) > 0.7 * float(np.linalg.norm(v)):
            similar.append(p)
    # Contrast in the pips' own polarity (the halo a blur leaves around a pip is of the
    # opposite sign and so does not count).
    proj = np.clip((dog @ refn.astype(np.float32)) * 2.0, 0, 255).astype(np.uint8)
    return pips, MIN_PIP_CONTRAST, proj, sel, similar


def empty_positions(value: int, pts: np.ndarray, centre: tuple[float, float]) -> list[tuple[float, float]]:
    """Grid positions that must be bare on a face read as ``value`` and would carry a pip
    on the face it is most easily mistaken for (the centre of a 4 is a 5's; the mid-sides
    of a 4 or 5 are a 6's; the other diagonal of a 2 or 3 is a 4's or 5's).

    Args:
        value: the value read.
        pts: float ``(n, 2)`` pip centres of that read.
        centre: the face centre.

    Returns:
        Positions in the same pixels; empty for 1 and 6.
    """
    c = np.asarray(centre, dtype=np.float64)
    out: list[np.ndarray] = []
    if value in (2, 3):
        ends = sorted(pts.tolist(), key=lambda q: -np.hypot(q[0] - c[0], q[1] - c[1]))[:2]
        half = (np.asarray(ends[1]) - np.asarray(ends[0])) / 2
        rot = np.array([-half[1], half[0]])  # the other diagonal, for a face seen square-on
        out += [c + rot, c - rot]
        if value == 2:
            out.append(c)
    elif value in (4, 5):
        corners = pts if value == 4 else np.array(sorted(pts.tolist(), key=lambda q: np.hypot(q[0] - c[0], q[1] - c[1]))[1:])
        for i in range(4):
            d = np.hypot(*(corners - corners[i]).T)
            opp = int(np.argmax(d))
            for j in range(4):
                if j not in (i, opp) and j > i:
                    out.append((corners[i] + corners[j]) / 2)
        if value == 4:
            out.append(c)
    return [(float(q[0]), float(q[1])) for q in out]


def _best_subset(pips: list[Pip]) -> tuple[list[Pip], LayoutFit | None]:
    """The largest subset (of 3 or more pips, dropping at most 3) that spells a face."""
    from itertools import combinations

    n = len(pips)
    for m in range(min(n - 1, 6), max(2, n - 4), -1):
        best = None
        for idx in combinations(range(n), m):
            sub = [pips[i] for i in idx]
            fit = fit_layout(np.array([[p.x, p.y] for p in sub]))
            if fit is None or fit.error > MAX_LAYOUT_ERROR:
                continue
            # The dropped pips must lie off this face (on a side face), beyond its corners.
            reach = 1.9 * fit.pitch
            if any(np.hypot(pips[i].x - fit.centre[0], pips[i].y - fit.centre[1]) <= reach
                   for i in range(n) if i not in idx):
                continue
            if best is None or fit.error < best[1].error:
                best = (sub, fit)
        if best is not None:
            return best
    return pips, None


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
    pips, thr, dmap, sel, similar = find_pips(lab, mask, side)
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
    similar = similar + [p for p in pips if p not in best]
    pips = best
    n = len(pips)
    fit = fit_layout(np.array([[p.x, p.y] for p in pips])) if n <= 6 else None
    if (fit is None or fit.error > MAX_LAYOUT_ERROR) and 4 <= n <= 9:
        # Pips of a side face seen obliquely may have joined the upper face's: keep the
        # largest subset that spells a face; the dropped ones must lie off that face
        # (checked below with the other blobs).
        sub, sfit = _best_subset(pips)
        if sfit is not None:
            similar = similar + [p for p in pips if p not in sub]
            pips, fit, n = sub, sfit, len(sub)
            dropped += 1
    if n > 6:
        return FaceRead(None, 0.1, rc, pips, reason=f"{n} pips")
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
        if off > (0.22 if fit.value <= 3 else 0.35):
            # A 2 or 3 is a diagonal through the die's centre; a row of three off the
            # centre is a 6's column.
            return FaceRead(None, 0.15, rc, pips, fit, reason="layout off centre")
        if fit.value == 6 and np.isfinite(fit.aspect) and fit.aspect > 1.6:
            return FaceRead(None, 0.15, rc, pips, fit, reason="six with a distorted grid")
        mean_d = 2 * np.sqrt(np.mean(areas) / np.pi)
        if fit.pitch < 0.8 * mean_d:
            return FaceRead(None, 0.15, rc, pips, fit, reason="pips too close")
    if fit.error > MAX_LAYOUT_ERROR:
        return FaceRead(None, 0.2, rc, pips, fit, reason=f"layout error {fit.error:.2f}")
    cmin = min(p.contrast for p in pips)
    reach = 0.35 * side if fit.value == 1 else 1.5 * fit.pitch
    amin = max(2.0, 0.25 * min(p.area for p in pips))
    if STRAY_COMPONENTS and stray_blobs(dmap, sel, pips, max(0.5 * cmin, 0.6 * MIN_PIP_CONTRAST), (cx, cy), reach, amin):
        return FaceRead(None, 0.2, rc, pips, fit, reason="stray blob on face")
    # For 1, 2 and 3 (few pips, so a partial view of a larger face fits them) any
    # unread pip-like blob in the die's region vetoes the read.
    # The grid positions that must be bare are read straight from the contrast map (a pip
    # there that the blob search lost, e.g. merged with its neighbours, still shows).
    rad = max(1, int(round(0.5 * np.sqrt(np.mean([p.area for p in pips]) / np.pi))))
    hh, ww = dmap.shape
    for ex, ey in empty_positions(fit.value, np.array([[p.x, p.y] for p in pips]), (cx, cy)):
        ix, iy = int(round(ex)), int(round(ey))
        if not (0 <= ix < ww and 0 <= iy < hh):
            continue
        patch = dmap[max(0, iy - rad):iy + rad + 1, max(0, ix - rad):ix + rad + 1]
        if float(patch.max()) >= EMPTY_SPOT_SHARE * cmin:
            return FaceRead(None, 0.2, rc, pips, fit, reason="pip where the face must be bare")
    amean = float(np.mean([p.area for p in pips]))
    emax = max(p.elongation for p in pips)
    for q in similar:
        if q.contrast < 0.3 * cmin:
            continue
        twin = fit.value <= 3 and q.elongation <= max(1.5, emax) and 0.6 * amean <= q.area <= 1.6 * amean
        if twin or np.hypot(q.x - cx, q.y - cy) <= reach:
            return FaceRead(None, 0.2, rc, pips, fit, reason="unread pip-like blob on face")
    if fit.error > MAX_LAYOUT_ERROR:
        return FaceRead(None, 0.2, rc, pips, fit, reason=f"layout error {fit.error:.2f}")
    conf = 1.0 - 0.5 * fit.error / MAX_LAYOUT_ERROR
    conf *= float(min(1.0, 0.6 + 0.4 * (cmin - thr) / max(thr, 1.0)))
    if dropped:
        conf *= 0.9
    return FaceRead(fit.value, round(max(0.0, min(1.0, conf)), 4), (cx, cy), pips, fit)
