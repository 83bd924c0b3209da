"""The windows the learned dice reader's networks see (:mod:`vision.learned`): a die cropped
and resampled to ``CROP`` x ``CROP`` pixels (anti-aliased where the window is shrunk), turned
by 90 degrees, standardised for the networks."""
from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

#: Classifier input side (pixels) and the window it sees, in die box sides.
CROP = 48
WINDOW = 1.25
#: A classifier window shrunk below AREA_BELOW x is first reduced by pixel-area averaging to
#: AREA_KEEP x the final scale (:func:`crop_die`).
AREA_BELOW = 0.6
AREA_KEEP = 0.8


def standardise(crops: np.ndarray) -> np.ndarray:
    """uint8 ``(N, CROP, CROP, 3)`` BGR crops -> float32 ``(N, 3, CROP, CROP)``, each crop
    shifted to mean 0 and scaled to standard deviation 1 (over all its pixels and channels)."""
    x = crops.astype(np.float32)
    m = x.mean(axis=(1, 2, 3), keepdims=True)
    s = x.std(axis=(1, 2, 3), keepdims=True)
    x = (x - m) / np.maximum(s, 4.0)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


#: ``cv2.rotate`` codes of the 90-degree turns ``k`` of :func:`turns` (``np.rot90``'s sense).
_ROTATE = {1: cv2.ROTATE_90_COUNTERCLOCKWISE, 2: cv2.ROTATE_180, 3: cv2.ROTATE_90_CLOCKWISE}


def turns(crops: np.ndarray, ks: range | tuple[int, ...]) -> np.ndarray:
    """The crops turned by ``k`` x 90 degrees for each ``k`` of ``ks`` (0..3), one after the
    other: uint8 ``(len(ks) * N, H, W, C)`` from ``(N, H, W, C)``, equal to
    ``np.concatenate([np.rot90(crops, k, axes=(1, 2)) for k in ks])`` (pixels moved, not
    resampled), about 5x faster (``cv2.rotate`` into one array)."""
    n = len(crops)
    out = np.empty((len(ks) * n,) + crops.shape[1:], crops.dtype)
    for j, k in enumerate(ks):
        for i in range(n):
            if k % 4 == 0:
                out[j * n + i] = crops[i]
            else:
                cv2.rotate(crops[i], _ROTATE[k % 4], dst=out[j * n + i])
    return out


def crop_dice(img: np.ndarray, boxes, window_boxes: float | None = None) -> np.ndarray:
    """:func:`crop_die` of every ``(x, y, box side, ...)`` of ``boxes`` (pixels): uint8
    ``(len(boxes), CROP, CROP, 3)``, written into one array. ``window_boxes``: the window in
    boxes (``None``: :data:`WINDOW`, the face classifier's; :data:`vision.learned.TILT_WINDOW` gives
    :func:`vision.learned.crop_tilt`'s crops, :data:`vision.learned.COCKED_WINDOW`
    :func:`vision.learned.cocked_faces`')."""
    out = np.empty((len(boxes), CROP, CROP, 3), np.uint8)
    for i, b in enumerate(boxes):
        out[i] = crop_die(img, b[0], b[1], b[2] if window_boxes is None else b[2] * window_boxes / WINDOW)
    return out


def crop_die(img: np.ndarray, cx: float, cy: float, size: float, angle_deg: float = 0.0) -> np.ndarray:
    """The classifier's view of a die: uint8 ``(CROP, CROP, 3)``, a window of
    ``WINDOW * size`` pixels around ``(cx, cy)`` (pixels) rotated by ``angle_deg`` (degrees),
    bilinear.

    A window shrunk below :data:`AREA_BELOW` x is first reduced by pixel-area averaging
    (``cv2.INTER_AREA``) to :data:`AREA_KEEP` x the final scale, so the crop is anti-aliased
    and as sharp as a small die's. Before, such a window was sampled bilinearly and then
    blurred by 0.35 / scale output pixels: a die 270 px across (the oblique webcam photos
    scaled 2.5x) came out blurred to sigma 2.5 px, and 4 of 155 held-out dice read wrong
    (2s as 3s), none with this crop.
    """
    sc = CROP / (WINDOW * size)
    m = cv2.getRotationMatrix2D((cx, cy), angle_deg, sc)
    m[0, 2] += CROP / 2 - cx
    m[1, 2] += CROP / 2 - cy
    src, m_src = window_source(img, m, cx, cy, WINDOW * size)
    return cv2.warpAffine(src, m_src, (CROP, CROP), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT101)


def window_source(img: np.ndarray, m: np.ndarray, cx: float, cy: float, window: float,
                  prepare: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The pixels a classifier window is sampled from, and the matrix to sample them with.

    Args:
        img: uint8 ``(H, W, 3)`` frame.
        m: float ``(2, 3)`` affine matrix from frame pixels to the crop (scale = crop side /
            ``window``).
        cx, cy: the window's centre (frame pixels); window: its side (frame pixels).
        prepare: applied to the patch under the window at its own resolution first (training:
            JPEG compression); a patch is then cut even when the window is not shrunk.

    Returns:
        ``(src, m_src)``: ``img`` and ``m`` unchanged, or, for a window shrunk below
        :data:`AREA_BELOW` x (or with ``prepare``), the patch under the (turned) window,
        prepared and reduced by pixel-area averaging to :data:`AREA_KEEP` x the final scale,
        with ``m`` composed onto it. Used by :func:`crop_die` and by the training crops
        (``vision.train.online``), so both sample alike.
    """
    sc = float(np.hypot(m[0, 0], m[0, 1]))
    if sc >= AREA_BELOW and prepare is None:
        return img, m
    h, w = img.shape[:2]
    r = int(np.ceil(0.75 * window)) + 2        # the turned window's half-diagonal
    x0, y0 = max(0, int(cx) - r), max(0, int(cy) - r)
    x1, y1 = min(w, int(cx) + r + 1), min(h, int(cy) + r + 1)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return img, m
    src = np.ascontiguousarray(img[y0:y1, x0:x1])
    if prepare is not None:
        src = prepare(src)
    fx = fy = 1.0
    if sc < AREA_BELOW:
        f = sc / AREA_KEEP
        pw, ph = max(1, int(round((x1 - x0) * f))), max(1, int(round((y1 - y0) * f)))
        src = cv2.resize(src, (pw, ph), interpolation=cv2.INTER_AREA)
        fx, fy = pw / (x1 - x0), ph / (y1 - y0)
    # patch pixel (u, v) is frame pixel (x0 + (u + 0.5) / fx - 0.5, y0 + (v + 0.5) / fy - 0.5)
    m_src = np.empty_like(m)
    m_src[:, 0] = m[:, 0] / fx
    m_src[:, 1] = m[:, 1] / fy
    m_src[:, 2] = m[:, :2] @ np.array([x0 + 0.5 / fx - 0.5, y0 + 0.5 / fy - 0.5]) + m[:, 2]
    return src, m_src
