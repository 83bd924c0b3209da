"""The dice cup in the frame: which dice in it are spares, and whether a thrown die landed in it.

9 NYCRR 5324.52(a)(5): the stickperson "shall retain all dice, except those in active play, in a
dice cup at the table"; (f)(3): the dice the shooter did not select "shall be returned to the
dice cup". A camera over the table sees those spares in the cup at every throw. A die of the
throw that comes to rest in the cup is an irregularity ((k)(2)(iv)); a spare is not a die of the
throw, and must never stand in for a die that left the table ((k)(1)).

Two pieces of evidence, both on the frame of the still table before the throw and the frame at
rest (``ThrowObserver`` keeps them; ``bench/irregularity_bench.py`` renders them):

* :func:`cup_changed`: the cup's interior differs between the two frames (a die landed in it,
  or knocked a spare) -- image differencing, which does not depend on the reader finding every
  die of a tight group of spares in a dark cup;
* :func:`read_cup`: the reader's dice in the cup's part of the frame before the throw (their
  places and faces), read only where the cup changed.

``controller.irregularity.observe_throw(spares=..., cup_changed=...)`` decides with them.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import cv2
import numpy as np

from vision.types import DieReading

#: The cup's interior, for :func:`cup_changed`: its zone polygon shrunk towards its centre to
#: this share (the rim, the wall's top and a die leaning on the cup's outside stay out of it).
INTERIOR = 0.75
#: A change of a colour channel (0..255, after a 3x3 blur) that counts, and the share of a die's
#: area (pixels) that must change inside the interior: a die landing there changes most of its
#: area by far more; sensor noise (sigma 2-3 levels) and compression change single pixels.
CHANGE_LEVEL = 30
CHANGE_AREA = 0.2


def cup_box(calibration, shape: tuple[int, ...], margin_sides: float = 1.0) -> tuple[int, int, int, int] | None:
    """Pixel box ``(x0, y0, x1, y1)`` (x1, y1 exclusive) of the calibration's ``dice_cup`` zone
    plus ``margin_sides`` die sides around it, clipped to a frame of ``shape`` ``(H, W, ...)``;
    ``None`` without a cup zone or with the cup out of the frame."""
    zones = getattr(calibration, "zones", None) or {}
    if "dice_cup" not in zones:
        return None
    poly = np.asarray(zones["dice_cup"], float)
    px = np.asarray(calibration.to_px(poly), float)
    m = margin_sides * float(calibration.die_side_px(tuple(poly.mean(axis=0))))
    h, w = shape[:2]
    x0, y0 = (int(max(0, v)) for v in np.floor(px.min(axis=0) - m))
    x1, y1 = int(min(w, np.ceil(px[:, 0].max() + m))), int(min(h, np.ceil(px[:, 1].max() + m)))
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None
    return x0, y0, x1, y1


def cup_changed(before: np.ndarray, at_rest: np.ndarray, calibration) -> bool | None:
    """Whether the dice cup's interior changed between two frames of one camera (uint8
    ``(H, W, 3)`` BGR or ``(H, W)`` grey, same shape): more than :data:`CHANGE_AREA` of a die's
    area in pixels differs by more than :data:`CHANGE_LEVEL` levels in a channel inside the cup zone
    shrunk to :data:`INTERIOR`. ``None`` when it cannot tell (no cup zone, frames of different
    shapes).

    Raises:
        Nothing: a frame it cannot use gives ``None``.
    """
    if before is None or at_rest is None or before.shape != at_rest.shape:
        return None
    box = cup_box(calibration, before.shape, 0.0)
    if box is None:
        return None
    x0, y0, x1, y1 = box
    mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
    cv2.fillPoly(mask, [np.round(_interior_px(calibration) - (x0, y0)).astype(np.int32)], 255)

    diff = cv2.absdiff(cv2.blur(before[y0:y1, x0:x1], (3, 3)), cv2.blur(at_rest[y0:y1, x0:x1], (3, 3)))
    if diff.ndim == 3:   # any channel: a red die on green felt changes the colour more than the grey level
        diff = diff.max(axis=2)
    changed = int(np.count_nonzero((diff > CHANGE_LEVEL) & (mask > 0)))
    side = float(calibration.die_side_px(tuple(np.asarray(calibration.zones["dice_cup"], float).mean(axis=0))))
    return changed > CHANGE_AREA * side * side


def _interior_px(calibration) -> np.ndarray:
    """The cup zone shrunk towards its centre to :data:`INTERIOR`, in pixels: float ``(N, 2)``."""
    poly = np.asarray(calibration.zones["dice_cup"], float)
    c = poly.mean(axis=0)
    return np.asarray(calibration.to_px(c + (poly - c) * INTERIOR), float)


def read_cup(read: Callable[[np.ndarray], Sequence[DieReading]], image: np.ndarray,
             calibration) -> list[DieReading]:
    """The dice ``read`` (``vision.reader.read_dice``-like: image -> readings) finds in the dice
    cup's part of ``image`` (its box and a die side around it: the rest of the frame holds no
    spare), in frame pixels; none without a cup zone."""
    box = cup_box(calibration, image.shape)
    if box is None:
        return []
    x0, y0, x1, y1 = box
    return [r.moved(x0, y0) for r in read(np.ascontiguousarray(image[y0:y1, x0:x1]))]


def spares_and_change(read: Callable[[np.ndarray], Sequence[DieReading]], calibration,
                      before: np.ndarray | None, at_rest: np.ndarray | None,
                      readings: Sequence[DieReading]) -> tuple[list[DieReading], bool | None]:
    """What ``observe_throw(spares=..., cup_changed=...)`` needs: ``(spares, changed)``.

    With no frame before the motion (start-up, a timed-out throw: no throw is being decided)
    the dice in the cup at rest are the spares. Where the cup's interior did not change
    (:func:`cup_changed`), nothing landed in it: the dice there at rest are the spares, and
    the frame before is not read (a die at rest nearer the rim than the interior, e.g. one
    leaning on the cup's outside, is not counted among them). Where it changed, or where that
    cannot be told, the spares are the dice :func:`read_cup` finds in the frame before. With no
    die at rest near the cup (within its box and a die side) there is nothing to tell apart:
    no spares, and neither frame is compared or read (a timed-out throw, most throws)."""
    if before is None:
        return list(readings), None
    box = cup_box(calibration, before.shape)
    if box is None or not any(box[0] <= r.centre[0] < box[2] and box[1] <= r.centre[1] < box[3] for r in readings):
        return [], None   # no die at rest near the cup: no spare to tell from a thrown die, nothing read
    changed = cup_changed(before, at_rest, calibration) if at_rest is not None else None
    if changed is False:
        inner = _interior_px(calibration).astype(np.float32)
        return [r for r in readings
                if cv2.pointPolygonTest(inner, (float(r.centre[0]), float(r.centre[1])), False) >= 0], False
    return read_cup(read, before, calibration), changed
