"""The two networks of the learned dice reader that learned tilted dice (:mod:`vision.learned`):
the tilt classifier (P(the die lies flat), :func:`p_flat_tilt`), a second opinion on flatness,
and the cocked-die reader (the upper face of a die cocked on an object, :func:`cocked_faces`),
which 9 NYCRR 5324.52(h)(1)(i) counts. Both are optional: without their weights in
``vision/models`` the readings carry no ``extra["p_flat_tilt"]`` / ``extra["p_cocked"]``.
Training: :mod:`vision.train.tilt`, :mod:`vision.train.cocked`; ``vision/models/MODEL_CARD.md``."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from vision.crops import WINDOW, crop_dice, crop_die, standardise, turns
from vision.onnx_net import MeanNet, OnnxNet

MODEL_DIR = Path(__file__).resolve().parent / "models"
#: The second opinion on flatness (:func:`p_flat_tilt`); optional: without it the readings carry
#: no ``extra["p_flat_tilt"]``.
TILT_ONNX = MODEL_DIR / "dice_tilt.onnx"
#: More tilt classifiers, each optional, whose P(flat) is averaged with :data:`TILT_ONNX`'s
#: (:func:`p_flat_tilt`): ``dice_tilt_stacks.onnx``, the same network trained again with dice set
#: flat beside and leaning on tall chip stacks anywhere on the layout (eighteenth session,
#: ``vision/models/MODEL_CARD.md``).
TILT_MORE_ONNX: tuple[Path, ...] = (MODEL_DIR / "dice_tilt_stacks.onnx",)
#: The tilt classifier's window, in die boxes (the face classifier's :data:`WINDOW`).
TILT_WINDOW = 1.25
#: The cocked-die reader (:func:`cocked_faces`); optional: without it a die both flatness
#: estimates call not flat keeps the face classifier's reading.
COCKED_ONNX = MODEL_DIR / "dice_cocked.onnx"
#: The cocked-die reader's window, in die boxes (a cocked die shows its upper face and the side
#: the object lifts into view: up to ~1.4 sides; the reader's centre of such a die can be half a
#: side off).
COCKED_WINDOW = 2.0


@functools.lru_cache(maxsize=1)
def _tilt_net() -> OnnxNet | MeanNet | None:
    """The tilt classifier (loaded once): :data:`TILT_ONNX`, averaged with those of
    :data:`TILT_MORE_ONNX` that are shipped; ``None`` when :data:`TILT_ONNX` is not."""
    if not TILT_ONNX.is_file():
        return None
    nets = [OnnxNet(TILT_ONNX)] + [OnnxNet(p) for p in TILT_MORE_ONNX if Path(p).is_file()]
    return nets[0] if len(nets) == 1 else MeanNet(nets)


def p_flat_tilt(img: np.ndarray, found: list[tuple[float, float, float, float]]) -> np.ndarray | None:
    """P(the die lies flat) of each candidate from the tilt classifier
    (``vision/models/dice_tilt.onnx``, :mod:`vision.train.tilt`; averaged with the networks of
    :data:`TILT_MORE_ONNX` that are shipped), or ``None`` when it is not shipped.

    A second opinion on the face classifier's P(flat): that output, learned beside the faces,
    called dice cocked about 25 degrees on the edge of a 2-chip stack flat (simulated camera,
    P(flat) up to 0.98; 37 of 63 held-out renders), so the table published their seen face as a
    valid roll where the profile gives a cocked die to the boxperson. The tilt classifier
    learned flatness alone, on die crops from renders of every forced scenario (flat and not,
    labelled by the simulator), the real train photos and drawn dice (flat). It has seen no
    other camera's tilted dice, so the reader's ``flat`` stays the face classifier's; the
    controller takes the lower of the two for a die beside an object that can hold it cocked.

    Args:
        img: uint8 ``(H, W, 3)`` BGR frame.
        found: candidates ``[(x, y, box side, score)]`` (pixels), each cropped as the face
            classifier sees it (:func:`crop_die`), upright and, where that view calls it not
            flat, in three more 90-degree turns (the four averaged).

    Returns:
        float32 ``(len(found),)`` in 0..1, or ``None``.
    """
    net = _tilt_net()
    if net is None or not found:
        return None
    crops = crop_dice(img, found, TILT_WINDOW)
    p = net(standardise(crops)).reshape(len(found))
    # A die the upright view calls not flat is seen in three more 90-degree turns too, and the
    # four are averaged (held-out renders: flat dice called not flat 4 -> 3 of 376, the same
    # 107 of 108 not flat called so; the first model trained, without drawn dice: 10 -> 5 and
    # 108 -> 107).
    todo = np.flatnonzero(p < 0.5)
    if len(todo):
        more = net(standardise(turns(crops[todo], range(1, 4)))).reshape(3, len(todo))
        p[todo] = (p[todo] + more.sum(axis=0)) / 4
    return p


@functools.lru_cache(maxsize=1)
def _cocked_net() -> OnnxNet | None:
    """The cocked-die reader (loaded once), or ``None`` when its weights are not shipped."""
    return OnnxNet(COCKED_ONNX) if COCKED_ONNX.is_file() else None


def cocked_faces(img: np.ndarray, found: list[tuple[float, float, float, float]]) -> np.ndarray | None:
    """The cocked-die reader's probabilities for each candidate: float32 ``(len(found), 7)``
    (upper face 1..6, "cannot tell"), the mean of four 90-degree turns of a
    :data:`COCKED_WINDOW`-box window (``vision/models/dice_cocked.onnx``,
    :mod:`vision.train.cocked`), or ``None`` when the weights are not shipped or ``found`` is
    empty.

    A die cocked on an object shows its upper face foreshortened beside the side the object
    lifts into view; the face classifier, which learned faces seen square-on, reads it unsure
    or wrong. 9 NYCRR 5324.52(h)(1)(i) counts the face opposite the side resting on the object,
    the upper face of a die cocked ~25 degrees on a chip stack's edge: this reader learned it
    from simulator renders (the only source of cocked dice with their faces), "cannot tell" for
    a die leaning ~45 degrees (two faces about equally up, (h)(1)(ii)).

    Args:
        img: uint8 ``(H, W, 3)`` BGR frame.
        found: candidates ``[(x, y, box side, score)]`` (pixels).
    """
    net = _cocked_net()
    if net is None or not found:
        return None
    crops = crop_dice(img, found, COCKED_WINDOW)
    p = net(standardise(turns(crops, range(4)))).reshape(4, len(found), 7)
    return p.mean(axis=0)


def crop_tilt(img: np.ndarray, cx: float, cy: float, size: float, angle_deg: float = 0.0) -> np.ndarray:
    """The tilt classifier's view of a die of box side ``size`` (pixels) at ``(cx, cy)``:
    :func:`crop_die` with a window of :data:`TILT_WINDOW` boxes; uint8 ``(CROP, CROP, 3)``."""
    return crop_die(img, cx, cy, size * TILT_WINDOW / WINDOW, angle_deg)
