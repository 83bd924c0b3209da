"""The learned dice reader: a small centre detector and a face classifier, run on the CPU
through OpenCV's dnn module (no other runtime, nothing downloaded).

Pipeline:

1. **Centres.** The frame is scaled so a die is about 12..30 pixels across (from
   ``expected_side_px`` when calibration gives it; otherwise a first pass at ~288 pixels on the
   long side, repeated at a corrected scale when the dice found are far from that size) and
   passed to ``vision/models/dice_centres.onnx``, a fully convolutional CenterNet-style net
   (Zhou et al., "Objects as Points", 2019): a heat map of die centres and the log of the
   die's box side, at stride 4. Local maxima above :data:`CENTRE_MIN` are dice; a weaker peak
   closer than half a die to a stronger one is dropped.
2. **Faces.** Around each centre a window of 1.25 box sides is resampled from the full-size
   frame to 32x32, standardised, and classified by ``vision/models/dice_faces.onnx`` into
   faces 1..6 or "not one readable die" (the crop and its 90-degree turns are averaged), with
   a probability that the upper face is seen square-on (``flat``).
3. **Refusal.** The classifier's value is returned when its probability is at least
   :data:`FACE_MIN` (chosen on held-out train photos and renders so that wrong values are ~0).
   Below that, the classical pip reader (:mod:`vision.reader`) reads a window around the die,
   and its value is taken only if the classifier gives it at least :data:`FALLBACK_MIN_P`
   (two methods agreeing); otherwise ``value=None`` with confidence <= 0.2. A peak the classifier calls "not a die" is dropped
   unless the detector is sure of it (:data:`CENTRE_SURE`) and the classifier is not
   (:data:`NOT_A_DIE_SURE`), in which case it is an unread die.

Training: :mod:`vision.train` (``pip install -e .[train]``); data recipe and figures in
``vision/models/MODEL_CARD.md``.
"""
from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np

from camera.base import check_image
from vision.types import DieReading

MODEL_DIR = Path(__file__).resolve().parent / "models"
CENTRES_ONNX = MODEL_DIR / "dice_centres.onnx"
FACES_ONNX = MODEL_DIR / "dice_faces.onnx"

#: Classifier input side (pixels) and the window it sees, in die box sides.
CROP = 32
WINDOW = 1.25
STRIDE = 4
#: Die box side (pixels) the detector sees best; it was trained on 7..34.
TARGET_BOX_PX = 18.0
#: Long side (pixels) of the first detection pass when the die size is unknown.
FIRST_PASS_PX = 288
#: Lowest centre-heat peak taken as a die candidate.
CENTRE_MIN = 0.3
#: Centre-heat peak above which a candidate the classifier rejects is still a die (unread)...
CENTRE_SURE = 0.7
#: ...unless the classifier is this sure it is no die (casino chips, prints, tray corners).
NOT_A_DIE_SURE = 0.9
#: Lowest face probability for which the classifier's value is returned on its own.
FACE_MIN = 0.9
#: Below FACE_MIN, the classical pip reader (:mod:`vision.reader`) is run on a window around
#: the die; its value is taken only when the classifier gives that value at least this
#: probability (two different methods agreeing), else the die is unread (None).
FALLBACK_MIN_P = 0.1
#: Side of the window (in die boxes) the classical reader sees around an unsure die.
FALLBACK_WINDOW = 3.0
#: Class index of "not one readable die".
NOT_A_FACE = 6


def models_present() -> bool:
    """True when both ONNX files are in ``vision/models``."""
    return CENTRES_ONNX.is_file() and FACES_ONNX.is_file()


@functools.lru_cache(maxsize=1)
def _nets() -> tuple[cv2.dnn.Net, cv2.dnn.Net]:
    if not models_present():
        raise FileNotFoundError(f"learned dice reader weights missing: {CENTRES_ONNX}, {FACES_ONNX}")
    det = cv2.dnn.readNetFromONNX(str(CENTRES_ONNX))
    face = cv2.dnn.readNetFromONNX(str(FACES_ONNX))
    return det, face


def standardise(crops: np.ndarray) -> np.ndarray:
    """uint8 ``(N, CROP, CROP, 3)`` BGR crops -> float32 ``(N, 3, CROP, CROP)``, each crop
    shifted to mean 0 and scaled to standard deviation 1 (over all its pixels and channels)."""
    x = crops.astype(np.float32)
    m = x.mean(axis=(1, 2, 3), keepdims=True)
    s = x.std(axis=(1, 2, 3), keepdims=True)
    x = (x - m) / np.maximum(s, 4.0)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def crop_die(img: np.ndarray, cx: float, cy: float, size: float, angle_deg: float = 0.0) -> np.ndarray:
    """The classifier's view of a die: uint8 ``(CROP, CROP, 3)``, a window of
    ``WINDOW * size`` pixels around ``(cx, cy)`` rotated by ``angle_deg``."""
    sc = CROP / (WINDOW * size)
    m = cv2.getRotationMatrix2D((cx, cy), angle_deg, sc)
    m[0, 2] += CROP / 2 - cx
    m[1, 2] += CROP / 2 - cy
    return cv2.warpAffine(img, m, (CROP, CROP), flags=cv2.INTER_AREA if sc < 0.7 else cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REFLECT101)


def _centres(img: np.ndarray, s: float) -> tuple[list[tuple[float, float, float, float]], float]:
    """Detector pass at scale ``s``: ``[(x, y, box side, score)]`` in frame pixels."""
    h, w = img.shape[:2]
    nw, nh = max(8, int(round(w * s / 8)) * 8), max(8, int(round(h * s / 8)) * 8)
    sx, sy = nw / w, nh / h
    small = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA if sx < 1 else cv2.INTER_LINEAR)
    det, _ = _nets()
    det.setInput(cv2.dnn.blobFromImage(small, 1.0 / 255.0))
    out = det.forward()[0]
    heat, logsize = out[0], out[1]
    peaks = (heat >= CENTRE_MIN) & (heat >= cv2.dilate(heat, np.ones((3, 3), np.uint8)))
    found = []
    gh, gw = heat.shape
    for v, u in zip(*np.nonzero(peaks)):
        c = float(heat[v, u])
        du = dv = 0.0
        if 0 < u < gw - 1:
            a, b = float(heat[v, u - 1]), float(heat[v, u + 1])
            den = 2 * c - a - b
            du = float(np.clip((b - a) / (2 * den), -0.5, 0.5)) if den > 1e-6 else 0.0
        if 0 < v < gh - 1:
            a, b = float(heat[v - 1, u]), float(heat[v + 1, u])
            den = 2 * c - a - b
            dv = float(np.clip((b - a) / (2 * den), -0.5, 0.5)) if den > 1e-6 else 0.0
        x = (STRIDE * (u + du) + 1.5) / sx
        y = (STRIDE * (v + dv) + 1.5) / sy
        size = float(np.exp(logsize[v, u])) / ((sx + sy) / 2)
        found.append((x, y, size, c))
    found.sort(key=lambda t: -t[3])
    kept: list[tuple[float, float, float, float]] = []
    for f in found:
        if all(np.hypot(f[0] - k[0], f[1] - k[1]) > 0.5 * min(f[2], k[2]) for k in kept):
            kept.append(f)
    return kept, (sx + sy) / 2


def _find(img: np.ndarray, expected_side_px: float | None) -> list[tuple[float, float, float, float]]:
    h, w = img.shape[:2]
    if expected_side_px:
        # A die's box is 1..1.41 sides (turned) plus a little perspective: ~1.2 sides.
        s = TARGET_BOX_PX / (1.2 * float(expected_side_px))
        return _centres(img, s)[0]
    s0 = min(1.0, FIRST_PASS_PX / max(h, w))
    found, s_eff = _centres(img, s0)
    if found:
        m = float(np.median([f[2] for f in found])) * s_eff
        if not 11.0 <= m <= 30.0:
            s1 = s0 * TARGET_BOX_PX / m
            s1 = min(s1, 1.5, 1024.0 / max(h, w))
            if abs(np.log(s1 / s0)) > 0.2:
                found = _centres(img, s1)[0]
    return found


def _classify(img: np.ndarray, found: list[tuple[float, float, float, float]]) -> np.ndarray:
    """Per candidate, ``(8,)`` float: 7 class probabilities then P(flat), averaged over the
    crop's four 90-degree turns."""
    crops = np.stack([crop_die(img, x, y, size) for x, y, size, _ in found])
    views = np.concatenate([np.rot90(crops, k, axes=(1, 2)) for k in range(4)])
    _, face = _nets()
    face.setInput(standardise(np.ascontiguousarray(views)))
    out = face.forward().reshape(4, len(found), -1)
    return out.mean(axis=0)


def _classical_value(img: np.ndarray, x: float, y: float, size: float) -> tuple[int | None, float, bool | None]:
    """The classical reader's value, confidence and flat for the die at ``(x, y)``, read on a
    window of FALLBACK_WINDOW boxes around it (``(None, 0, None)`` when it reads none there)."""
    from vision import reader

    classical = getattr(reader, "read_dice_classical", None) or reader.read_dice
    h, w = img.shape[:2]
    half = FALLBACK_WINDOW * size / 2
    x0, y0 = max(0, int(x - half)), max(0, int(y - half))
    x1, y1 = min(w, int(np.ceil(x + half))), min(h, int(np.ceil(y + half)))
    if x1 - x0 < 16 or y1 - y0 < 16:
        return None, 0.0, None
    reads = classical(np.ascontiguousarray(img[y0:y1, x0:x1]), expected_side_px=size / 1.2)
    best = None
    for r in reads:
        d = float(np.hypot(r.centre[0] + x0 - x, r.centre[1] + y0 - y))
        if d < 0.5 * size and (best is None or d < best[0]):
            best = (d, r)
    if best is None or best[1].value is None:
        return None, 0.0, None
    return best[1].value, float(best[1].confidence), bool(best[1].flat)


def read_dice_learned(image: np.ndarray, *, expected_side_px: float | None = None,
                      fallback: bool = True) -> list[DieReading]:
    """Find every die in a frame and read its upper face with the learned models.

    Args:
        image: numpy ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey frame.
        expected_side_px: the die's side in pixels from calibration, if known.
        fallback: for a die the classifier is unsure of, ask the classical pip reader
            (:mod:`vision.reader`) on a window around it; its value is kept only when the
            classifier gives it at least :data:`FALLBACK_MIN_P`.

    Returns:
        One :class:`vision.types.DieReading` per die, in reading order (top to bottom, left
        to right); ``value`` is ``None`` where the face probability is below
        :data:`FACE_MIN` and no agreeing classical read (confidence then <= 0.2). ``side_px`` is estimated from the box
        (box / 1.2); ``angle_deg`` is not measured (0). ``extra`` holds ``"p"`` (the seven
        class probabilities) and ``"centre_score"``.

    Raises:
        camera.base.FrameError: the image is not a usable uint8 frame.
        FileNotFoundError: the weights are not in ``vision/models``.
    """
    img = check_image(image, "read_dice image")
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    h, w = img.shape[:2]
    found = _find(img, expected_side_px)
    if not found:
        return []
    probs = _classify(img, found)
    out = []
    for (x, y, size, score), p in zip(found, probs):
        cls = int(np.argmax(p[:7]))
        pc = float(p[cls])
        if cls == NOT_A_FACE:
            if score < CENTRE_SURE or pc >= NOT_A_DIE_SURE:
                continue
            value, conf = None, min(0.2, 1.0 - pc)
        elif pc >= FACE_MIN:
            value, conf = cls + 1, pc
        else:
            value, conf = None, min(0.2, pc * 0.2)
            if fallback:
                vc, cc, _ = _classical_value(img, x, y, size)
                if vc is not None and p[vc - 1] >= FALLBACK_MIN_P:
                    value, conf = vc, min(cc, 0.5 + 0.5 * float(p[vc - 1]))
        half = size / 2
        bbox = (max(0, int(np.floor(x - half))), max(0, int(np.floor(y - half))),
                min(w, int(np.ceil(x + half))), min(h, int(np.ceil(y + half))))
        out.append(DieReading(value=value, bbox=bbox, centre=(float(x), float(y)), confidence=float(conf),
                              flat=bool(p[7] >= 0.5), side_px=float(size / 1.2), angle_deg=0.0,
                              extra={"p": [round(float(v), 4) for v in p[:7]], "centre_score": round(score, 4),
                                     "reason": "" if value is not None else ("not a die" if cls == NOT_A_FACE else "unsure")}))
    side = float(np.median([d.side_px for d in out])) if out else 1.0
    out.sort(key=lambda d: (round(d.centre[1] / max(side, 1.0)), d.centre[0]))
    return out
