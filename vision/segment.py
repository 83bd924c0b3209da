"""Find die-sized regions that stand out from the table surface.

The table (felt, tray floor, wood) is smooth at the scale of a die; a die differs from it
in colour or brightness. The background is estimated by a median filter far larger than a
die (computed on a reduced image, so it is cheap), and every pixel is scored by its Lab
colour distance from that background. Regions above a threshold, with their pip holes
filled, are the die candidates.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np


#: Share of the threshold down to which a region is grown from its strong pixels (1.0 =
#: plain threshold; 0.65 was measured worse on the train photos: neighbours merge).
HYSTERESIS = 1.0


@dataclass(slots=True)
class Region:
    """One connected foreground region (one die, or several touching, or clutter).

    Attributes:
        contour: int32 ``(k, 1, 2)`` outer contour in full-image pixels.
        area: filled area in pixels.
        bbox: ``(x0, y0, x1, y1)`` pixels, x1/y1 exclusive.
        rect: OpenCV rotated rectangle ``((cx, cy), (w, h), angle)``.
    """

    contour: np.ndarray
    area: float
    bbox: tuple[int, int, int, int]
    rect: tuple


def lab_image(bgr: np.ndarray) -> np.ndarray:
    """Return the Lab image as uint8 ``(H, W, 3)`` (OpenCV 8-bit Lab scaling)."""
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2LAB)


def background_distance(lab: np.ndarray, reach_px: float) -> np.ndarray:
    """Colour distance of each pixel from the local table surface.

    Args:
        lab: uint8 ``(H, W, 3)`` Lab image.
        reach_px: the median window in pixels; must exceed about twice the die side.

    Returns:
        uint8 ``(H, W)`` distance, saturated at 255: the sum of the absolute differences
        of the Lab channels, with a darkening counted at half weight (shadows are darker
        than the table; a die is lighter, darker or of another colour).
    """
    h, w = lab.shape[:2]
    f = max(2, int(round(reach_px / 11)))
    small = cv2.resize(lab, (max(8, w // f), max(8, h // f)), interpolation=cv2.INTER_AREA)
    bg_small = cv2.medianBlur(small, 11)
    bg = cv2.resize(bg_small, (w, h), interpolation=cv2.INTER_LINEAR)
    diff = cv2.absdiff(lab, bg).astype(np.uint16)
    brighter = lab[..., 0] > bg[..., 0]
    # Lighter than the table counts fully; darker counts half (shadows are darker).
    dl = np.where(brighter, diff[..., 0], diff[..., 0] >> 1)
    dist = dl + diff[..., 1] + diff[..., 2]
    return np.minimum(dist, 255).astype(np.uint8)


def find_regions(dist: np.ndarray, threshold: float, min_area: float, max_area: float) -> tuple[list[Region], np.ndarray]:
    """Threshold the distance map into filled regions.

    Args:
        dist: uint8 ``(H, W)`` from :func:`background_distance`.
        threshold: distance above which a pixel is foreground.
        min_area, max_area: pixel areas outside which a region is dropped.

    Returns:
        (regions, mask): the regions, and the uint8 ``(H, W)`` foreground mask (255) with
        small holes (pips) filled.
    """
    # Hysteresis: a region is grown down to HYSTERESIS x threshold from pixels above it, so
    # a pale die on a pale table is taken whole, not as a few bright fragments.
    low = (dist > HYSTERESIS * threshold).astype(np.uint8)
    low = cv2.morphologyEx(low, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)))
    n, labels = cv2.connectedComponents(low, connectivity=8)
    keep = np.zeros(n, np.uint8)
    keep[np.unique(labels[(dist > threshold) & (low > 0)])] = 255
    keep[0] = 0
    mask = keep[labels]
    contours, hierarchy = cv2.findContours(mask, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    regions: list[Region] = []
    if hierarchy is None:
        return regions, mask
    hierarchy = hierarchy[0]
    areas = [cv2.contourArea(c) for c in contours]
    # Fill holes that are small next to their parent (pips, not a tray interior).
    holes = [c for i, c in enumerate(contours)
             if hierarchy[i][3] >= 0 and areas[i] < 0.3 * areas[hierarchy[i][3]]]
    if holes:
        cv2.drawContours(mask, holes, -1, 255, -1)
    for i, c in enumerate(contours):
        if hierarchy[i][3] >= 0:
            continue
        a = areas[i]
        if a < min_area or a > max_area:
            continue
        x, y, w, h = cv2.boundingRect(c)
        regions.append(Region(c, a, (x, y, x + w, y + h), cv2.minAreaRect(c)))
    return regions, mask
