"""The dice reader: find every six-sided die in a frame and read its upper face.

Pipeline (classical OpenCV, no learned weights):

1. Segment: Lab colour distance from a large-scale median background; regions above a
   noise-adaptive threshold, pip holes filled (:mod:`vision.segment`).
2. Size: the die side is taken from ``expected_side_px`` (calibration) or from the median
   of the square-looking regions.
3. Split: a region larger than 1.4 dice (dice touching each other) is cut at thin necks,
   or else into ``round(area / die_area)`` parts by k-means on its pixel coordinates; the
   split is kept only when it gives more valid reads.
4. Read: pips inside each part, checked against the canonical layouts and a set of vetoes
   (:mod:`vision.pips`, :mod:`vision.layout`); a part whose pips do not spell a face beyond
   doubt is returned with ``value=None`` and a low confidence, never a guess. A read whose
   pip pitch is unlike the other dice in the frame (all dice on a table are one size) is
   also refused.
5. Flat: for 4, 5, 6 the pip grid's aspect (a tilted die's upper face is foreshortened);
   for 1, 2, 3 the outline's (a tilted die shows a side face). See docs/vision.md.
"""
from __future__ import annotations

import cv2
import numpy as np

from camera.base import check_image
from vision.layout import LayoutFit
from vision.pips import FaceRead, Pip, read_face
from vision.segment import Region, background_distance, find_regions, lab_image
from vision.types import DieReading

#: Aspect (long / short side) of a die outline or pip grid above which a face is not flat.
MAX_FLAT_ASPECT = 1.3
#: Lowest colour distance from the table (Lab units, see segment.background_distance) that
#: counts as a die (12 was measured on the train photos: it finds pale dice on a pale tray
#: but merges neighbours, for no net gain).
MIN_TABLE_CONTRAST = 22.0
#: Aspect of the pip grid (4, 5, 6 pips) above which the upper face is foreshortened: a die
#: tilted by about 30 degrees or more (cos 30 = 0.87; 1 / 0.87 = 1.15, plus pixel noise).
MAX_GRID_ASPECT = 1.2


def _die_side(regions: list[Region], expected_side_px: float | None) -> float | None:
    if expected_side_px:
        return float(expected_side_px)
    sides = []
    for r in regions:
        (w, h) = r.rect[1]
        if min(w, h) < 4:
            continue
        if max(w, h) / min(w, h) < 1.35 and r.area > 0.7 * w * h:
            sides.append(np.sqrt(r.area))
    if not sides:
        return None
    return float(np.median(sides))


#: Dice larger than this (pixels per side) are read on a reduced crop: the pip search costs
#: grow with the area, and nothing is gained past this resolution.
READ_SIDE_PX = 36.0


def _read_scaled(crop: np.ndarray, mask: np.ndarray, side: float) -> FaceRead:
    """Read a die region, reduced first so the die is about READ_SIDE_PX across; the
    result is returned in the crop's own pixels."""
    s = READ_SIDE_PX / side
    if s >= 0.8:
        return read_face(crop, mask, side)
    h, w = mask.shape
    size = (max(4, int(round(w * s))), max(4, int(round(h * s))))
    sx, sy = size[0] / w, size[1] / h
    small = cv2.resize(crop, size, interpolation=cv2.INTER_AREA)
    smask = cv2.resize(mask, size, interpolation=cv2.INTER_NEAREST)
    f = read_face(small, smask, side * (sx + sy) / 2)
    k = 2.0 / (sx + sy)
    fit = f.fit
    if fit is not None:
        fit = LayoutFit(fit.value, fit.error, fit.pitch * k, (fit.centre[0] / sx, fit.centre[1] / sy), fit.aspect)
    pips = [Pip(p.x / sx, p.y / sy, p.area * k * k, p.elongation, p.contrast) for p in f.pips]
    return FaceRead(f.value, f.confidence, (f.centre[0] / sx, f.centre[1] / sy), pips, fit, f.reason)


def _die_shaped(mask: np.ndarray) -> bool:
    """True when a region looks like a die seen from above: its minimum-area rectangle is
    nearly square and the region fills most of it."""
    cnts, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not cnts:
        return False
    cnt = max(cnts, key=cv2.contourArea)
    (w, h) = cv2.minAreaRect(cnt)[1]
    if min(w, h) < 2:
        return False
    return max(w, h) / min(w, h) <= 1.4 and cv2.contourArea(cnt) >= 0.7 * w * h


def _split_necks(mask: np.ndarray, side: float, share: float = 1 / 3) -> list[np.ndarray]:
    """Cut dice joined by a thin neck (touching at a corner): open the region with a disc
    ``share`` of a die wide and return the parts, each grown back inside the region."""
    k = max(3, int(round(side * share)) | 1)
    se = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    opened = cv2.morphologyEx(mask, cv2.MORPH_OPEN, se)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(opened)
    parts = []
    for i in range(1, n):
        if stats[i][4] < 0.25 * side * side:
            continue
        m = ((labels == i) * 255).astype(np.uint8)
        parts.append(cv2.bitwise_and(cv2.dilate(m, se), mask))
    return parts


def _split(mask: np.ndarray, k: int) -> list[np.ndarray]:
    ys, xs = np.nonzero(mask)
    pts = np.column_stack([xs, ys]).astype(np.float32)
    if k <= 1 or len(pts) < 2 * k:
        return [mask]
    crit = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 20, 0.5)
    cv2.setRNGSeed(12345)
    step = max(1, len(pts) // (200 * k))
    _, _, centres = cv2.kmeans(pts[::step].copy(), k, None, crit, 2, cv2.KMEANS_PP_CENTERS)
    d2 = ((pts[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    lab = np.argmin(d2, axis=1)
    parts = []
    for j in range(k):
        m = np.zeros_like(mask)
        sel = lab.ravel() == j
        m[ys[sel], xs[sel]] = 255
        parts.append(m)
    return parts


def _reading(pm: np.ndarray, fr: FaceRead, x0: int, y0: int, side: float) -> DieReading:
    cnts, _ = cv2.findContours(pm, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    cnt = max(cnts, key=cv2.contourArea)
    bx, by, bw, bh = cv2.boundingRect(cnt)
    if fr.value is not None and bw * bh > 2.5 * side * side:
        # A region holding more than this die (dice touching, not split): box the die
        # read, a die's side around its face centre, inside the region.
        cx, cy = fr.centre
        h = 0.6 * side
        nx0, ny0 = max(bx, int(cx - h)), max(by, int(cy - h))
        nx1, ny1 = min(bx + bw, int(np.ceil(cx + h))), min(by + bh, int(np.ceil(cy + h)))
        bx, by, bw, bh = nx0, ny0, max(1, nx1 - nx0), max(1, ny1 - ny0)
    rect = cv2.minAreaRect(cnt)
    rw, rh = rect[1]
    outline_aspect = max(rw, rh) / max(1e-6, min(rw, rh))
    grid_aspect = fr.fit.aspect if fr.fit is not None else float("nan")
    if np.isfinite(grid_aspect):
        # The pip grid of 4, 5 or 6 is the upper face itself: square unless tilted.
        flat = grid_aspect <= MAX_GRID_ASPECT
    else:
        # Otherwise the die's outline (upper face plus any side face seen, and its shadow).
        flat = outline_aspect <= MAX_FLAT_ASPECT
    return DieReading(
        value=fr.value,
        bbox=(x0 + bx, y0 + by, x0 + bx + bw, y0 + by + bh),
        centre=(x0 + fr.centre[0], y0 + fr.centre[1]),
        confidence=fr.confidence,
        flat=bool(flat),
        side_px=float(np.sqrt(cv2.contourArea(cnt))),
        angle_deg=float(rect[2]) % 90.0,
        extra={"reason": fr.reason, "pips": len(fr.pips)},
    )


#: Environment switch of the reader behind :func:`read_dice`: ``learned`` (vision/learned.py,
#: the default when its weights are present) or ``classical`` (this module's pip reader).
READER_ENV = "CRAPS_VISION"


def _choice(method: str | None) -> str:
    """``"learned"`` or ``"classical"``: ``method``, else :data:`READER_ENV`, else learned when
    its weights are present. Raises ValueError for any other name."""
    import os

    from vision import learned

    if method is not None:
        choice = method
        if choice not in ("classical", "learned"):
            raise ValueError(f"method={choice!r}: expected 'classical' or 'learned'")
    else:
        choice = os.environ.get(READER_ENV, "").strip().lower()
        if choice not in ("", "classical", "learned"):
            raise ValueError(f"{READER_ENV}={choice!r}: expected 'classical' or 'learned'")
    if choice == "learned" or (choice == "" and learned.models_present()):
        return "learned"
    return "classical"


def read_dice(image: np.ndarray, *, expected_side_px: float | None = None,
              method: str | None = None) -> list[DieReading]:
    """Find every die in a frame and read its upper face: the learned reader
    (:func:`vision.learned.read_dice_learned`, two small CNNs run by ``cv2.dnn``, which asks
    :func:`read_dice_classical` about the dice it is unsure of) unless ``method="classical"``
    or, with no ``method``, the environment variable ``CRAPS_VISION=classical`` selects the
    classical pip reader. When the learned weights are missing from ``vision/models`` the
    default falls back to the classical reader.

    Args and returns as :func:`read_dice_classical`; ``method``: ``"classical"``,
    ``"learned"`` or ``None`` (the environment's choice, else learned).

    Raises:
        camera.base.FrameError: the image is not a usable uint8 frame.
        ValueError: ``CRAPS_VISION`` is set to something else than ``classical`` or ``learned``.
        FileNotFoundError: ``learned`` is chosen explicitly and its weights are not in
            vision/models.
    """
    from vision import learned

    if _choice(method) == "learned":
        return learned.read_dice_learned(image, expected_side_px=expected_side_px)
    return read_dice_classical(image, expected_side_px=expected_side_px)


def read_die_at(image: np.ndarray, centre: tuple[float, float], side_px: float, *,
                method: str | None = None) -> DieReading | None:
    """Read the one die expected at ``centre`` (pixels), e.g. where the motion track saw a
    die come to rest but :func:`read_dice` found none (controller/irregularity.py).

    Args:
        image: numpy ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey frame.
        centre: ``(x, y)`` pixels, roughly (within about half a die side).
        side_px: the die's side in pixels there (calibration).
        method: as :func:`read_dice`.

    Returns:
        A :class:`DieReading` (``value`` ``None`` when unsure) or ``None`` when no die is
        seen there. Learned: :func:`vision.learned.read_die_at`; classical: the pip reader on
        a window of three sides around ``centre``.

    Raises:
        camera.base.FrameError, ValueError, FileNotFoundError: as :func:`read_dice`.
    """
    from vision import learned

    if _choice(method) == "learned":
        return learned.read_die_at(image, centre, side_px)
    return read_classical_near(check_image(image, "read_die_at image"), centre, 3.0 * side_px, 0.7 * side_px,
                               expected_side_px=side_px)


def read_classical_near(img: np.ndarray, centre: tuple[float, float], window_px: float, max_dist_px: float, *,
                        expected_side_px: float | None = None) -> DieReading | None:
    """The classical reader on a square window of ``window_px`` pixels around ``centre``: the
    die read nearest ``centre`` if within ``max_dist_px``, in frame pixels, else ``None``
    (also for a window under 16 pixels). ``img``: a checked uint8 frame."""
    h, w = img.shape[:2]
    half = window_px / 2
    x0, y0 = max(0, int(centre[0] - half)), max(0, int(centre[1] - half))
    x1, y1 = min(w, int(np.ceil(centre[0] + half))), min(h, int(np.ceil(centre[1] + half)))
    if x1 - x0 < 16 or y1 - y0 < 16:
        return None
    reads = [r.moved(x0, y0) for r in
             read_dice_classical(np.ascontiguousarray(img[y0:y1, x0:x1]), expected_side_px=expected_side_px)]
    dist = [float(np.hypot(r.centre[0] - centre[0], r.centre[1] - centre[1])) for r in reads]
    near = [(d, r) for d, r in zip(dist, reads) if d < max_dist_px]
    if not near:
        return None
    return min(near, key=lambda dr: dr[0])[1]


def read_dice_classical(image: np.ndarray, *, expected_side_px: float | None = None) -> list[DieReading]:
    """Find every die in a frame and read its upper face (the classical pipeline).

    Args:
        image: numpy ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey frame.
        expected_side_px: the die side in pixels from calibration, if known; otherwise it
            is estimated from the frame.

    Returns:
        One :class:`vision.types.DieReading` per die found, in reading order (top to
        bottom, left to right). ``value`` is ``None`` where the face cannot be read.

    Raises:
        camera.base.FrameError: the image is not a usable uint8 frame.
    """
    img = check_image(image, "read_dice image")
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    h, w = img.shape[:2]
    lab = lab_image(img)
    reach = max(64.0, min(h, w) / 5.0)
    if expected_side_px:
        reach = max(reach, 3.0 * float(expected_side_px))
    dist = background_distance(lab, reach)
    noise = float(np.median(dist))
    thr = float(np.clip(3.0 * noise + 12.0, MIN_TABLE_CONTRAST, 60.0))
    min_side = 8.0 if not expected_side_px else 0.5 * float(expected_side_px)
    regions, mask = find_regions(dist, thr, min_side * min_side, (min(h, w) / 3.0) ** 2)
    side = _die_side(regions, expected_side_px)
    if side is None:
        return []
    die_area = side * side
    singles: list[tuple[Region, tuple, np.ndarray, FaceRead]] = []
    for r in regions:
        if r.area < 0.3 * die_area or r.area > 40 * die_area:
            continue
        x0, y0, x1, y1 = r.bbox
        pad = 2
        x0, y0 = max(0, x0 - pad), max(0, y0 - pad)
        x1, y1 = min(w, x1 + pad), min(h, y1 + pad)
        rmask = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.drawContours(rmask, [r.contour], -1, 255, -1, offset=(-x0, -y0))
        fr = _read_scaled(lab[y0:y1, x0:x1], rmask, float(np.sqrt(r.area)))
        singles.append((r, (x0, y0, x1, y1), rmask, fr))
    # Refine the die size from the regions that read as one clean die.
    if not expected_side_px:
        good = [np.sqrt(r.area) for r, _, _, fr in singles if fr.value is not None and fr.value > 1]
        if len(good) >= 2:
            side = float(np.median(good))
            die_area = side * side
    out: list[DieReading] = []
    for r, (x0, y0, x1, y1), rmask, fr in singles:
        crop = lab[y0:y1, x0:x1]
        k = int(round(r.area / die_area))
        reads = [(rmask, fr)]
        if r.area > 1.4 * die_area:
            split = []
            necks = _split_necks(rmask, side)
            if len(necks) < 2 and r.area > 3 * die_area:
                # A die against a wall or rail merges with it: a disc most of a die wide
                # removes the band and keeps the die.
                necks = [pm for pm in _split_necks(rmask, side, 0.75)
                         if cv2.countNonZero(pm) < 2.5 * die_area]
            by_neck = len(necks) >= 2
            for pm in necks if by_neck else (_split(rmask, k) if k >= 2 else []):
                pa = float(cv2.countNonZero(pm))
                if pa >= 0.3 * die_area:
                    f = _read_scaled(crop, pm, float(np.sqrt(pa)))
                    if not by_neck and f.value is not None and f.value <= 2:
                        # A straight cut through a die leaves half a face: one or two pips
                        # there prove nothing.
                        f = FaceRead(None, 0.2, f.centre, f.pips, f.fit, reason="1 or 2 on a cut part")
                    split.append((pm, f))
            n_split = sum(f.value is not None for _, f in split)
            if n_split > int(fr.value is not None):
                reads = split
        for pm, f in reads:
            if f.value is None and cv2.countNonZero(pm) > 2.5 * die_area:
                continue
            if f.value is None and not f.pips and not _die_shaped(pm):
                continue  # no pip and not die-shaped: a shadow, a wall, clutter
            out.append((pm, f, x0, y0, side))
    # All dice on a table are the same size: a read whose pip pitch (or, for a 1, whose
    # size) disagrees with the others is a part of a die or two dice, not a die.
    pitches = [f.fit.pitch for _, f, _, _, _ in out if f.value is not None and f.value >= 3]
    ref_pitch = float(np.median(pitches)) if len(pitches) >= 2 else None
    readings = []
    for pm, f, x0, y0, _s in out:
        if f.value is not None and ref_pitch is not None:
            if f.value >= 2 and not (0.6 <= f.fit.pitch / ref_pitch <= 1.6):
                f = FaceRead(None, 0.2, f.centre, f.pips, f.fit, reason="pitch unlike the other dice")
            elif f.value == 1:
                ps = np.sqrt(cv2.countNonZero(pm))
                if not (0.6 <= ps / side <= 1.6):
                    f = FaceRead(None, 0.2, f.centre, f.pips, f.fit, reason="size unlike the other dice")
        readings.append(_reading(pm, f, x0, y0, side))
    out = readings
    out.sort(key=lambda d: (round(d.centre[1] / max(side, 1.0)), d.centre[0]))
    return out
