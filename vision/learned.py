"""The learned dice reader: a small centre detector and a face classifier, run on the CPU
through onnxruntime, or OpenCV's dnn module where onnxruntime is not installed (nothing
downloaded; :class:`OnnxNet`).

Pipeline:

1. **Centres.** The frame is scaled so a die box is about :data:`TARGET_BOX_PX` pixels (from
   ``expected_side_px`` when calibration gives it; otherwise a coarse pass at
   :data:`COARSE_PX` on the long side measures the dice first) and passed to
   ``vision/models/dice_centres.onnx``, a fully convolutional CenterNet-style net (Zhou et
   al., "Objects as Points", 2019): a heat map of die centres and the log of the die's box
   side, at stride 4. Local maxima above :data:`CENTRE_MIN` are candidates.
2. **Faces and geometry.** Around each candidate a window of 1.25 box sides is resampled to
   48x48, standardised, and classified by ``vision/models/dice_faces.onnx``: faces 1..6 or
   "not one readable die", P(flat) and the die's centre offset and size in the window. The
   die is cropped again at the corrected centre and seen upright and, unless that view is
   sure of it (:data:`SURE_VIEW`), in three more 90-degree turns, which are averaged
   (:data:`VIEWS`). Of two candidates within half a die the better read is kept; a
   candidate much smaller than the other dice is read again at their size.
3. **Refusal.** The classifier's value is returned when its probability is at least
   :data:`FACE_MIN` (chosen on held-out train photos so that no value there is wrong;
   :data:`FACE_MIN_WEAK_PEAK` for a weak detector peak), and below :data:`READ_ALONE` only
   where the classical pip reader reads the same value (the held-out photos read as other
   cameras would give them had 8 of their 11 wrong numbers there). Below FACE_MIN, the
   classical pip reader (:mod:`vision.reader`) reads a window around the die, and its value is
   taken only if the classifier gives it at least :data:`FALLBACK_MIN_P` (two methods
   agreeing); otherwise ``value=None`` with confidence <= 0.2. A weak peak that nothing reads is dropped, and a
   peak the classifier calls "not a die" is dropped unless the detector is sure of it
   (:data:`CENTRE_SURE`) and the classifier is not (:data:`NOT_A_DIE_SURE`).
4. **Flat.** ``flat`` is the face classifier's P(flat) >= 0.5 (``extra["p_flat"]``). A tilt
   classifier (``vision/models/dice_tilt.onnx``, :func:`p_flat_tilt`), which learned flatness
   alone on rendered cocked and flat dice, real photographed dice and drawn ones (flat), gives a
   second opinion, ``extra["p_flat_tilt"]``: the controller takes the lower of the two for a
   die beside an object that can hold it cocked (controller/irregularity.py).

Training: :mod:`vision.train` (``pip install -e .[train]``); data recipe and figures in
``vision/models/MODEL_CARD.md``.
"""
from __future__ import annotations

import bisect
import functools
import math
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from camera.base import check_image
from vision import centres as _centres_mod
from vision.centres import (  # noqa: F401  (re-exported: the reader's tuning constants in one place)
    CENTRE_MIN, COARSE_PX, FIRST_PASS_PX, MAX_PASS_PX, MAX_SCALE, MIDPOINT_SIDES, NMS_DETECTOR, STRIDE,
    TARGET_BOX_PX,
)
from vision.centres import distances as _distances
from vision.centres import greedy as _greedy
from vision.crops import (  # noqa: F401  (re-exported for vision.train and the tests)
    AREA_BELOW, AREA_KEEP, CROP, WINDOW, crop_dice, crop_die, standardise, turns, window_source,
)
from vision.onnx_net import MeanNet, OnnxNet  # noqa: F401  (re-exported)
from vision.tilted import (  # noqa: F401  (re-exported for vision.train and the tests)
    COCKED_ONNX, COCKED_WINDOW, TILT_MORE_ONNX, TILT_ONNX, TILT_WINDOW, cocked_faces, crop_tilt, p_flat_tilt,
)
from vision.types import DieReading

MODEL_DIR = Path(__file__).resolve().parent / "models"
CENTRES_ONNX = MODEL_DIR / "dice_centres.onnx"
FACES_ONNX = MODEL_DIR / "dice_faces.onnx"
#: Lowest probability for which the cocked-die reader's face is returned.
COCKED_MIN = 0.9
#: A die the face classifier reads below this confidence (or leaves unread) is also shown to
#: the cocked-die reader, a second opinion (:func:`_read_cocked`).
SECOND_OPINION_BELOW = 0.9
#: ... and its agreeing face is read only where the face classifier gives that face at least
#: this (two networks agreeing, each with some confidence: the cocked-die reader called a drawn
#: black 5 a 4 at p 0.998).
SECOND_OPINION_FLOOR = 0.5
#: A die both flatness estimates call not flat keeps the face classifier's value only where the
#: cocked-die reader gives that face at least this (:func:`_read_cocked`): :data:`COCKED_MIN`
#: since the twenty-sixth session (0.6 before), so such a die is read only where the reader
#: that learned tilted dice is sure of its face. At 0.6 the face classifier's face of a die
#: leaning 41-42 degrees on a tall chip stack stood where the cocked-die reader gave it
#: 0.6-0.9, and house practice published it; it was the face nearer the camera, not the face
#: most nearly up (simulated camera, cocked-on-tall-stack seeds 4997, 5454, 5535). The same
#: floor holds, since then, for a die read surely (>= :data:`SECOND_OPINION_BELOW`) that one
#: flatness estimate calls not flat and the other flat, which is now asked too: beside a chip
#: stack the controller takes the tilt classifier's "not flat" and, under house practice,
#: publishes the value as seen. Dice leaning ~40 degrees on tall stacks, the face classifier
#: sure (0.90-0.995) of the face turned towards the camera and its P(flat) 0.58-0.64, the tilt
#: classifier's 0.0, were published with that face (cocked-on-tall-stack 5611, 5656, 5760);
#: the cocked-die reader gave it 0.05-0.36.
COCKED_AGREE = 0.9
#: A die one flatness estimate calls not flat is left unread where the cocked-die reader gives
#: another face than the face classifier's at least this (:func:`_read_cocked`).
DISAGREE_TILTED = 0.5

#: Centre-heat peak above which a candidate the classifier rejects is still a die (unread)...
CENTRE_SURE = 0.7
#: ...unless the classifier is this sure it is no die (casino chips, prints, tray corners).
NOT_A_DIE_SURE = 0.9
#: A candidate whose box is below this share of the other dice's median is read again at
#: their size (:func:`_reread_small`).
SMALL_DIE_RATIO = 0.7
#: A candidate whose detector peak is below CENTRE_READ (a die the detector barely sees,
#: or a peak off the die's centre) needs a face probability of FACE_MIN_WEAK_PEAK.
CENTRE_READ = 0.5
FACE_MIN_WEAK_PEAK = 0.9
#: 90-degree turns of each die the classifier sees (outputs averaged).
VIEWS = 4
#: A die whose upright view gives a face (or "not a die") at least this probability is not
#: seen in the other turns (``None``: every die is).
SURE_VIEW: float | None = 0.995
#: Lowest face probability for which the classifier's value is returned (on its own from
#: :data:`READ_ALONE`; between the two, where the classical reader agrees).
FACE_MIN = 0.6
#: Below FACE_MIN, the classical pip reader (:mod:`vision.reader`) is run on a window around
#: the die; its value is taken only when the classifier gives that value at least this
#: probability (two different methods agreeing), else the die is unread (None).
FALLBACK_MIN_P = 0.1
#: A face the classifier gives at least FACE_MIN but below this probability is returned only
#: where the classical pip reader reads the same value on a window around the die (two
#: methods agreeing), else the die is unread: on the held-out train photos read as another
#: camera would give them (``bench/vision_robustness.py``: scaled, grey, JPEG 30, darker,
#: noisier, ...), 8 of the 11 wrong numbers were read at 0.60-0.69 (1 right in 6 there).
READ_ALONE = 0.7
#: A die read at least this confidence is read surely (:func:`_smaller_dice`).
SURE_READ = 0.9
#: Die boxes, as shares of the frame's long side, at which a frame read without the die's size
#: and with no die read surely is read again (:func:`_smaller_dice`): below the coarse pass's
#: range (~6 %), each step 1.56x. Held-out train photos set in a plain frame 3x their size
#: (dice 2 % of the long side): recall 21 -> 80 % (topdown-tray), 73 -> 90 % (oblique).
SMALLER_DICE = (0.05, 0.032, 0.02)
#: At most this many detector peaks (the strongest) are classified in a frame: a frame of
#: noise read at 2 % of its long side gave 418, 1.7 s of CPU; the most in the 646 labelled
#: photos is far below (25 dice at most, with the peaks on their pips).
MAX_CANDIDATES = 150
#: Windows (multiples of its own box) in which a die read as 1 in a frame read without the
#: die's size is classified again (:func:`_pips_of_larger`): where the die's outline is lost
#: (over-exposed white dice on a light table, dots printed on paper), each pip of a larger die
#: reads as the 1 of a small one, surely (held-out oblique train photos brightened 1.6x: a 3's
#: three pips read as three 1s at p 0.95-0.98).
PIP_OF_LARGER = (2.5, 4.0)
#: :func:`_pips_of_larger` asks only about a 1 smaller than this share of the frame's other
#: dice read surely (all dice of a throw are the same size; a pip is a fraction of one).
PIP_SIZE_RATIO = 0.8
#: The smallest die box (pixels) :data:`SMALLER_DICE` tries.
SMALLER_MIN_BOX = 14.0
#: Side of the window (in die boxes) the classical reader sees around an unsure die.
FALLBACK_WINDOW = 3.0
#: Class index of "not one readable die".
NOT_A_FACE = 6
#: A candidate the classifier cannot yet read is classified again, up to this many times, at
#: the centre and size its geometry outputs give (:func:`_refine_unsure`): a window that
#: starts on one pip moves onto the die in two or three steps.
REFINE_STEPS = 3


def models_present() -> bool:
    """True when both ONNX files are in ``vision/models``."""
    return CENTRES_ONNX.is_file() and FACES_ONNX.is_file()


@functools.lru_cache(maxsize=1)
def _nets() -> tuple[OnnxNet, OnnxNet]:
    """The centre detector and the face classifier (loaded once).

    Raises:
        FileNotFoundError: a weights file is missing.
    """
    if not models_present():
        raise FileNotFoundError(f"learned dice reader weights missing: {CENTRES_ONNX}, {FACES_ONNX}")
    # OpenCV builds its Lab tables at the first BGR->Lab conversion (~160 ms): here, with the
    # networks, not in the first verdict whose die goes to the classical fallback.
    cv2.cvtColor(np.zeros((1, 1, 3), np.uint8), cv2.COLOR_BGR2LAB)
    return OnnxNet(CENTRES_ONNX), OnnxNet(FACES_ONNX)


def _not_flat_votes(p: np.ndarray, tilt: float | None) -> int:
    """How many of the two flatness estimates call a candidate not flat (0, 1 or 2): the face
    classifier's P(flat) ``p[7]`` and the tilt classifier's ``tilt`` (``None``: not shipped),
    each below 0.5."""
    return int(p[7] < 0.5) + int(tilt is not None and tilt < 0.5)


def _read_cocked(img: np.ndarray, kept: list) -> list:
    """``kept`` (``[(candidate, p, value, conf, tilt)]``) with the cocked-die reader
    (:func:`cocked_faces`) asked about two kinds of dice; its probabilities go to
    ``extra["p_cocked"]``.

    * Dice both flatness estimates call not flat (the face classifier's P(flat) and the tilt
      classifier's below 0.5): its face where it gives one at least :data:`COCKED_MIN` and the
      face classifier does not call it "not a die", also where the face classifier read
      another face (twentieth session; before, such a die was unread: on rendered dice both
      estimates call not flat, seeds 2100-2299 and 2600-2799, it was sure and right in 388 of
      388, and right in each of the 80 where the face classifier read another face); the face
      classifier's reading where it is unsure or "cannot tell" (a die leaning ~45 degrees: the controller
      gives a lean to the boxperson under the regulations' profiles, (h)(1)(ii)).
    * Dice the face classifier reads below :data:`SECOND_OPINION_BELOW` (a value read at a
      low confidence, or none) but as a face, not "not a die": a second opinion. Where it is
      sure (:data:`COCKED_MIN`) of the face classifier's most likely face, given at least
      :data:`SECOND_OPINION_FLOOR` by the face classifier, that face is read at its
      confidence; sure of another face, the die is left unread (a wrong number is worse than
      none: a drawn black 5 the face classifier reads at p 0.60 and the cocked-die reader
      calls a 4 at 0.998 comes back unread); otherwise the reading stands. Dice lying flat on
      a chip, whose white inserts beside the die look like pips to the face classifier, were
      read at p 0.67-0.77 (below the verdict's 0.8: the boxperson, 13 of 100 flat-on-one-chip throws
      on the simulated camera, seeds 1800-1899); the cocked-die reader, which saw dice on
      chips in training, read them at p >= 0.98.
    * Of those, a die left unread that one flatness estimate calls not flat (a lean the face
      classifier takes for another face: 2s leaning ~40 degrees on the rail's wall read as 6s
      at p ~0.45): the cocked-die reader's sure face is read where the face classifier gives
      it at least :data:`FALLBACK_MIN_P` (as the classical fallback's).
    * A die asked about that one flatness estimate calls not flat is left unread where the
      cocked-die reader gives another face than the face classifier's value at least
      :data:`DISAGREE_TILTED`, sure or not (a lean on the cup read a 6 at p 0.89 by the
      face classifier, a 2 at 0.74 by the cocked-die reader: it was a 2).
    * Dice read surely that one flatness estimate calls not flat and the other flat (the tilt
      classifier shipped): the face classifier's value stands only where the cocked-die reader
      gives it at least :data:`COCKED_AGREE` (twenty-sixth session; before, they were not asked).
    * A die both estimates call not flat keeps the face classifier's value only where the
      cocked-die reader gives that face at least :data:`COCKED_AGREE`, i.e. is sure of it (a
      lean of 43.5 degrees read a 6 at p 0.996, the cocked-die reader 6 at 0.53: it was a 2;
      a 1 leaning 42 degrees on a tall stack read a 4 at p 0.93, the cocked-die reader 4 at
      0.76: the 4 was the face turned towards the camera)."""
    def asked(item) -> str | None:
        _, p, _, conf, tilt = item
        if _not_flat_votes(p, tilt) == 2:
            return "cocked"
        if p[NOT_A_FACE] < 0.5 and int(np.argmax(p[:7])) != NOT_A_FACE and conf < SECOND_OPINION_BELOW:
            return "second"
        if tilt is not None and _not_flat_votes(p, tilt) == 1 and item[2] is not None:
            return "tilted"
        return None

    kinds = [asked(item) for item in kept]
    todo = [k for k, kind in enumerate(kinds) if kind]
    pc = cocked_faces(img, [kept[k][0] for k in todo]) if todo else None
    out = [(*item, None) for item in kept]
    if pc is None:
        return out
    for j, k in enumerate(todo):
        f, p, value, conf, tilt = kept[k]
        c = int(np.argmax(pc[j]))
        one_not_flat = _not_flat_votes(p, tilt) >= 1   # (both: kind "cocked")
        sure = c != 6 and float(pc[j][c]) >= COCKED_MIN
        if kinds[k] == "cocked" and sure and p[NOT_A_FACE] < 0.5:
            # both estimates call it not flat: the reader that learned tilted dice decides,
            # also against the face classifier's value (simulated camera, seeds 2100-2299 and
            # 2600-2799, the nineteenth session's weights: dice both call not flat that it reads
            # at p >= 0.9, 388 of 388 right, the face classifier's other face 0 of 80; such dice
            # were left unread)
            value, conf = c + 1, float(pc[j][c])
        elif kinds[k] == "second" and sure and c == int(np.argmax(p[:6])) and p[c] >= SECOND_OPINION_FLOOR \
                and value in (None, c + 1):
            value, conf = c + 1, max(conf, float(pc[j][c]))
        elif kinds[k] == "second" and sure and value is None and p[c] >= FALLBACK_MIN_P and one_not_flat:
            # an unread die one flatness estimate calls not flat: a lean the face classifier
            # reads as another face (a 2 leaning ~40 degrees on the rail's wall read a 6 at
            # p 0.45); the cocked-die reader's sure face, given some probability by the face
            # classifier too (two networks agreeing, as the classical fallback), is read
            value, conf = c + 1, float(pc[j][c])
        elif sure and value is not None and value != c + 1:   # the two readers disagree
            value, conf = None, min(conf, 0.2)
        elif kinds[k] in ("cocked", "tilted") and value is not None and float(pc[j][value - 1]) < COCKED_AGREE:
            # the controller may call it not flat and the reader that learned tilted dice is not
            # sure of the face classifier's face (simulated camera, cocked-on-cup seed 2064: a 2
            # leaning 43.5 degrees read a 6 at p 0.996, the cocked-die reader 6 at 0.53 and 2 at
            # 0.41, house practice published the 6; cocked-on-tall-stack 5454: a 1 leaning 42
            # degrees read a 4 at p 0.93, the cocked-die reader 4 at 0.76; 5760, one estimate
            # calling it flat: a 1 leaning 40 degrees read a 2 at p 0.92, the cocked-die reader
            # 2 at 0.35, 1 at 0.33)
            value, conf = None, min(conf, 0.2)
        elif value is not None and value != c + 1 and c != 6 and float(pc[j][c]) >= DISAGREE_TILTED \
                and one_not_flat:
            # a die one flatness estimate calls not flat, whose face the cocked-die reader, which
            # learned tilted dice, gives to another face at p >= DISAGREE_TILTED: unread
            # (simulated camera, cocked-on-cup seed 1986: a 2 leaning on the cup read a 6 at
            # p 0.89, the cocked-die reader 2 at 0.74; house practice published the 6)
            value, conf = None, min(conf, 0.2)
        out[k] = (f, p, value, conf, tilt, pc[j])
    return out


def _find(img: np.ndarray, expected_side_px: float | None) -> list[tuple[float, float, float, float]]:
    """:func:`vision.centres.find` with the shipped centre detector: candidates
    ``[(x, y, box side, centre score)]`` in frame pixels, best first."""
    return _centres_mod.find(img, expected_side_px, _nets()[0])


_add_midpoints = _centres_mod.add_midpoints


def _classify(img: np.ndarray, found: list[tuple[float, float, float, float]]
              ) -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
    """Classify every candidate; returns ``(probs, refined)``: per candidate ``(8,)`` float
    (7 class probabilities then P(flat)) and the candidate with its centre and box side
    corrected by the classifier's geometry outputs.

    A first upright view per die gives the geometry; the die is then cropped again around
    the corrected centre and size and seen in :data:`VIEWS` 90-degree turns, whose outputs
    are averaged (a single view misreads some dice it is sure of: drawn 3s and 5s on a light
    table came back as 2s and 4s at p > 0.9, the averaged views read them right). A die whose
    upright view reaches :data:`SURE_VIEW` is not turned (same values on the held-out train
    photos, the golden photos and 800 rendered dice; 6 % less CPU on the topdown photos, most
    of whose dice are below it)."""
    _, face = _nets()
    raw = face(standardise(crop_dice(img, found))).reshape(len(found), -1)
    x, y, size = (np.array([f[k] for f in found], np.float64) for k in range(3))
    geo = raw[:, 8:11].astype(np.float64)    # centre offset (x, y) in windows, log size; float64
    xr = x + np.clip(geo[:, 0], -0.3, 0.3) * WINDOW * size
    yr = y + np.clip(geo[:, 1], -0.3, 0.3) * WINDOW * size
    sr = size * np.exp(np.clip(geo[:, 2], -0.5, 0.5))
    refined = list(zip(xr.tolist(), yr.tolist(), sr.tolist(), [f[3] for f in found]))
    sub = crop_dice(img, refined)
    n = len(found)
    upright = face(standardise(sub)).reshape(n, -1)
    # The other turns only for the dice the upright view is not sure of (SURE_VIEW).
    todo = np.arange(n) if SURE_VIEW is None else np.flatnonzero(upright[:, :7].max(axis=1) < SURE_VIEW)
    res = np.repeat(upright[None], VIEWS, axis=0)       # (VIEWS, n, 11)
    counted = np.zeros((VIEWS, n), bool)
    counted[0] = True
    if len(todo) and VIEWS > 1:
        res[1:, todo] = face(standardise(turns(sub[todo], range(1, VIEWS)))).reshape(VIEWS - 1, len(todo), -1)
        counted[1:, todo] = True
    # The views' centre offsets, turned back to the upright crop (np.rot90 maps an offset
    # (x, y) to (y, -x)), averaged: a second, finer correction of the centre.
    off = np.empty((VIEWS, n, 2), np.float32)
    for k in range(VIEWS):
        ox, oy = res[k, :, 8], res[k, :, 9]
        for _ in range(k):
            ox, oy = -oy, ox
        off[k, :, 0], off[k, :, 1] = ox, oy
    w = counted / counted.sum(axis=0, keepdims=True)    # (VIEWS, n): mean over the views seen
    off = np.clip((off * w[:, :, None]).sum(axis=0), -0.15, 0.15)
    ls = np.clip((res[:, :, 10] * w).sum(axis=0), -0.3, 0.3)
    refined = list(zip((xr + off[:, 0] * WINDOW * sr).tolist(), (yr + off[:, 1] * WINDOW * sr).tolist(),
                       (sr * np.exp(ls)).tolist(), [f[3] for f in refined]))
    return (res[:, :, :8] * w[:, :, None]).sum(axis=0), refined


def _reread_small(img: np.ndarray, probs: np.ndarray, found: list[tuple[float, float, float, float]]
                  ) -> tuple[np.ndarray, list[tuple[float, float, float, float]], dict[int, float]]:
    """Read again, at the frame's typical die size, every candidate much smaller than the
    other dice (box < :data:`SMALL_DIE_RATIO` x the median of the others, at least one other
    read: all dice of a throw are the same size, and a craps throw has two), twice (the
    second time where the first moved the window): a window on one big pip of a die, or on a
    speck of the table, looks like the 1 of a small die. The re-read replaces the first when
    it is sure (>= :data:`FACE_MIN`); when it is unsure, the candidate's face probabilities
    are cut to the re-read's (so it comes back unread), and its box, in pixels, is returned in
    the third value (``{candidate index: typical box}``): the floor of its window when it is
    refined (:func:`_refine_unsure`), which would otherwise shrink it back onto the speck."""
    read = np.flatnonzero(probs[:, :7].argmax(axis=1) != NOT_A_FACE).tolist()
    if len(read) < 2:
        return probs, found, {}
    ranked = sorted(float(found[i][2]) for i in read)
    redo = []
    for i in read:
        med = _median_without(ranked, float(found[i][2]))
        if found[i][2] < SMALL_DIE_RATIO * med:
            redo.append((i, med))
    if not redo:
        return probs, found, {}
    p2, f2 = _classify(img, [(found[i][0], found[i][1], med, found[i][3]) for i, med in redo])
    p2, f2 = _classify(img, f2)   # the geometry moves the window onto the die; read it there
    probs, found, floors = probs.copy(), list(found), {}
    for (i, med), p, f in zip(redo, p2, f2):
        if float(np.max(p[:6])) >= FACE_MIN:
            probs[i], found[i] = p, f
        else:
            probs[i][:6] = np.minimum(probs[i][:6], p[:6])
            floors[i] = med
    return probs, found, floors


def _median_without(ranked: list[float], v: float) -> float:
    """``float(np.median(others))`` of the values ``ranked`` (sorted, at least two) with one
    ``v`` taken out: the middle one, or the mean ``(a + b) / 2`` of the middle two."""
    k = bisect.bisect_left(ranked, v)
    others = ranked[:k] + ranked[k + 1:]
    m = len(others) // 2
    return others[m] if len(others) % 2 else (others[m - 1] + others[m]) / 2


def _threshold(score: float) -> float:
    """The face probability a candidate with centre-heat peak ``score`` needs to be read."""
    return FACE_MIN if score >= CENTRE_READ else FACE_MIN_WEAK_PEAK


def _refine_unsure(img: np.ndarray, probs: np.ndarray, found: list[tuple[float, float, float, float]],
                   min_box: float | None, floors: dict[int, float] | None = None
                   ) -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
    """Classify again, at its refined centre and size, every candidate that is not "not a die"
    and whose face probability is below :func:`_threshold`, up to :data:`REFINE_STEPS` times
    while it stays unsure. ``min_box`` (calibrated die box, pixels) floors every window, and
    ``floors`` (``{candidate index: box}``, :func:`_reread_small`) single ones: a window
    shrunk onto one pip of a 2 would show it as the 1 of a smaller die."""
    probs, found = probs.copy(), list(found)
    floor = [max(min_box or 0.0, (floors or {}).get(i, 0.0)) for i in range(len(found))]
    for _ in range(REFINE_STEPS):
        need = np.array([_threshold(f[3]) for f in found])
        todo = np.flatnonzero((probs[:, :7].argmax(axis=1) != NOT_A_FACE) & (probs[:, :6].max(axis=1) < need)).tolist()
        if not todo:
            break
        sub = [(*found[i][:2], max(found[i][2], floor[i]), found[i][3]) for i in todo]
        p2, f2 = _classify(img, sub)
        for i, p, f in zip(todo, p2, f2):
            probs[i], found[i] = p, (*f[:2], max(f[2], floor[i]), f[3])
    return probs, found


def _classical_value(img: np.ndarray, x: float, y: float, size: float) -> tuple[int | None, float, bool | None]:
    """The classical reader's value, confidence and flat for the die at ``(x, y)``, read on a
    window of FALLBACK_WINDOW boxes around it (``(None, 0, None)`` when it reads none there)."""
    from vision import reader

    r = reader.read_classical_near(img, (x, y), FALLBACK_WINDOW * size, 0.5 * size, expected_side_px=size / 1.2)
    if r is None or r.value is None:
        return None, 0.0, None
    return r.value, float(r.confidence), bool(r.flat)


def _reading(x: float, y: float, size: float, score: float, p: np.ndarray, value: int | None,
             conf: float, frame_wh: tuple[int, int], tilt: float | None = None,
             cocked: np.ndarray | None = None) -> DieReading:
    """The :class:`DieReading` of a candidate at ``(x, y)`` with box side ``size`` (pixels);
    ``p[7]`` is the face classifier's P(flat), ``tilt`` the tilt classifier's (:func:`p_flat_tilt`),
    ``cocked`` the cocked-die reader's probabilities (:func:`cocked_faces`) where it was asked."""
    w, h = frame_wh
    half = size / 2
    bbox = (max(0, int(np.floor(x - half))), max(0, int(np.floor(y - half))),
            min(w, int(np.ceil(x + half))), min(h, int(np.ceil(y + half))))
    cls = int(np.argmax(p[:7]))
    reason = "" if value is not None else ("not a die" if cls == NOT_A_FACE else "unsure")
    return DieReading(value=value, bbox=bbox, centre=(float(x), float(y)), confidence=float(conf),
                      flat=bool(p[7] >= 0.5), side_px=float(size / 1.2), angle_deg=0.0,
                      extra={"p": [round(float(v), 4) for v in p[:7]], "p_flat": round(float(p[7]), 4),
                             "centre_score": round(score, 4),
                             "reason": reason,
                             **({} if tilt is None else {"p_flat_tilt": round(float(tilt), 4)}),
                             **({} if cocked is None else {"p_cocked": [round(float(v), 4) for v in cocked]})})


def read_die_at(image: np.ndarray, centre: tuple[float, float], side_px: float) -> DieReading | None:
    """Read the one die expected near ``centre``: the classifier's window (the calibrated die
    box, 1.2 ``side_px``) is put there and moved by its geometry outputs onto the die
    (classified again where they put it until it moves less than 5 % of the box, at most
    1 + :data:`REFINE_STEPS` times; where the last window reads no face surely, the window on
    the way that read one best), without the detector. The caller knows a die is there (the
    motion track saw it come to rest) where the detector found none: beside a chip, at the
    frame's dark edge. Its value needs :data:`FACE_MIN_WEAK_PEAK`, as a weak detector peak.

    Args:
        image: numpy ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey frame.
        centre: ``(x, y)`` pixels, within about half a die side of the die's centre.
        side_px: the die's side in pixels (> 0).

    Returns:
        A :class:`vision.types.DieReading` (``value`` ``None`` when unsure, confidence then
        <= 0.2), or ``None`` when the classifier sees no die there. A die both flatness
        estimates call not flat is placed at ``centre`` with the calibrated box (where the
        cocked-die reader looked), not where the geometry outputs moved the window.

    Raises:
        camera.base.FrameError: the image is not a usable uint8 frame.
        ValueError: ``side_px`` is not positive.
        FileNotFoundError: the weights are not in ``vision/models``.
    """
    img = check_image(image, "read_die_at image")
    if not side_px > 0:
        raise ValueError(f"read_die_at: side_px={side_px!r}, expected > 0")
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    h, w = img.shape[:2]
    box = 1.2 * float(side_px)
    x, y, size, score = float(centre[0]), float(centre[1]), box, 0.0
    best = None
    for _ in range(1 + REFINE_STEPS):   # until the window stops moving
        probs, found = _classify(img, [(x, y, size, score)])
        moved = float(np.hypot(found[0][0] - x, found[0][1] - y))
        x, y, size = found[0][0], found[0][1], max(found[0][2], box)
        # a window on the way that reads a face surely, if the last does not: beside another
        # die the geometry outputs can walk the window off the die towards the pair's middle
        # (simulated camera, cocked-on-die seed 1953: a 2 read at p 0.99 in the first window,
        # unsure in the last)
        q = probs[0]
        rank = float(np.max(q[:6])) if int(np.argmax(q[:7])) != NOT_A_FACE else -1.0
        if rank >= _threshold(score) and (best is None or rank > best[0]):
            best = (rank, probs, (x, y, size))
        if moved < 0.05 * box:
            break
    if best is not None and rank < _threshold(score):   # (rank: the last window's)
        _, probs, (x, y, size) = best
    tilt = p_flat_tilt(img, [(x, y, size, score)])
    p = probs[0]
    cls = int(np.argmax(p[:7]))
    if cls == NOT_A_FACE:
        return None
    pc = float(p[cls])
    value, conf = (cls + 1, pc) if pc >= _threshold(score) else (None, min(0.2, pc * 0.2))
    # The cocked-die reader looks where the caller says the die is, at the calibrated size: the
    # face classifier's geometry outputs, learned on flat dice, move and grow the window on a
    # cocked one (simulated camera, 12 cocked dice found only by the track, seeds 1600-1699:
    # read there at p >= 0.9 7, where the window was moved to 1, none wrong at either).
    x0, y0 = float(centre[0]), float(centre[1])
    (_, p, value, conf, t, cocked), = _read_cocked(img, [((x0, y0, box, score), p, value, conf,
                                                          None if tilt is None else float(tilt[0]))])
    if _not_flat_votes(p, t) == 2:
        # a die both estimates call not flat is placed where the caller says it is, where the
        # cocked-die reader looked: the geometry outputs, learned on flat dice, walked the window
        # of a die leaning on the other die half a side towards it (simulated camera,
        # cocked-on-die seeds 1928, 1963: the caller then took it for the die already read)
        x, y, size = x0, y0, box
    return _reading(x, y, size, score, p, value, conf, (w, h), t, cocked)


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
        :data:`FACE_MIN` and no agreeing classical read, or below :data:`READ_ALONE` and the
        classical reader not reading that same value (confidence then <= 0.2), or, read without
        ``expected_side_px``, a 1 that is a pip of a larger die (:func:`_pips_of_larger`,
        confidence 0). ``side_px`` is estimated from the box (box / 1.2); ``angle_deg`` is not
        measured (0). ``extra`` holds ``"p"`` (the seven
        class probabilities), ``"p_flat"``, ``"centre_score"``, ``"p_flat_tilt"``
        (:func:`p_flat_tilt`) and, for a die both call not flat, ``"p_cocked"``
        (:func:`cocked_faces`, whose face may be the value).

    Raises:
        camera.base.FrameError: the image is not a usable uint8 frame.
        FileNotFoundError: the weights are not in ``vision/models``.
    """
    img = check_image(image, "read_dice image")
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    out = _read(img, expected_side_px, fallback)
    if expected_side_px:
        return out
    if not any(_sure(d) for d in out):
        out = _smaller_dice(img, out, fallback)
    return _pips_of_larger(img, out)


def _sure(d: DieReading) -> bool:
    return d.value is not None and d.confidence >= SURE_READ


def _pips_of_larger(img: np.ndarray, out: list[DieReading]) -> list[DieReading]:
    """``out`` (a frame read without the die's size) with every die read as 1 that is one pip
    of a larger die made unread (value ``None``, confidence 0, ``extra["pip_of"]`` the larger
    die's value).

    A 1 is a single pip on a plain face. With the die's outline lost (over-exposed, or dots
    printed on paper), one pip of a larger die is that too, at the size the detector measures
    around it. So the window around each 1 is classified again at :data:`PIP_OF_LARGER` times
    its box (:func:`_classify`, whose geometry outputs centre the window on what it sees): if
    a larger window reads surely (:data:`SURE_READ`) another value, at least 1.8x the box and
    centred within half its box of the 1, and no window reads the 1 surely, the 1 is a pip of
    that die. A real 1 shown larger is read as a 1 again, or as nothing (no pip pattern around
    it). A 1 at least :data:`PIP_SIZE_RATIO` x the median side of two or more dice read surely
    as other values is not asked (a train photo: a 1 beside another 1 and a 5, as large as the
    frame's other dice, read at 2.5x as a 3). The table service reads with the calibrated size
    (every window the die's size), so this is for photos read without it.

    Source: held-out train photos of ``../shared`` read as other cameras give them
    (``bench/vision_robustness.py``), thirty-fourth session; docs/vision.md.
    """
    others = [d.side_px for d in out if d.value not in (None, 1) and d.confidence >= SURE_READ]
    # a 1 as large as two or more other dice read surely is one of them: a pip is far smaller
    typical = float(np.median(others)) if len(others) >= 2 else math.inf
    ones = [k for k, d in enumerate(out) if d.value == 1 and d.side_px < PIP_SIZE_RATIO * typical]
    if not ones:
        return out
    boxes = [1.2 * out[k].side_px for k in ones]
    cands = [(out[k].centre[0], out[k].centre[1], m * b, 1.0)
             for k, b in zip(ones, boxes) for m in PIP_OF_LARGER]
    probs, found = _classify(img, cands)
    out = list(out)
    n = len(PIP_OF_LARGER)
    for a, (k, box) in enumerate(zip(ones, boxes)):
        d, larger, one_sure = out[k], None, False
        for p, f in zip(probs[a * n:(a + 1) * n], found[a * n:(a + 1) * n]):
            cls, pc = int(np.argmax(p[:7])), float(np.max(p[:7]))
            if cls == 0 and pc >= SURE_READ:
                one_sure = True
            elif cls != NOT_A_FACE and cls != 0 and pc >= SURE_READ and f[2] >= 1.8 * box \
                    and float(np.hypot(f[0] - d.centre[0], f[1] - d.centre[1])) < 0.5 * f[2]:
                larger = cls + 1
        if larger is not None and not one_sure:
            out[k] = replace(d, value=None, confidence=0.0,
                             extra={**d.extra, "reason": "a pip of a larger die", "pip_of": larger})
    return out


def _smaller_dice(img: np.ndarray, out: list[DieReading], fallback: bool) -> list[DieReading]:
    """``out`` (a frame read without the die's size, no die read surely) or, where the frame
    holds dice too small for the coarse pass of :func:`_find` to measure (under ~6 % of the
    long side: it then measures the tray or a cluster), the frame read at the die sizes of
    :data:`SMALLER_DICE` (shares of the long side, boxes of at least :data:`SMALLER_MIN_BOX`
    pixels), taking the size at which most dice are read surely (:data:`SURE_READ`), then
    read once more at the median side those dice measure. A size at which two or more dice
    are read surely and all as 1s is not taken: the pips of a larger die."""
    long = max(img.shape[:2])
    best, n_best = out, 0
    for share in SMALLER_DICE:
        box = share * long
        if box < SMALLER_MIN_BOX:
            break
        res = _read(img, box / 1.2, fallback)
        sure = [d for d in res if _sure(d)]
        if len(sure) >= 2 and all(d.value == 1 for d in sure):
            continue
        if len(sure) > n_best:
            best, n_best = res, len(sure)
    if best is out:
        return out
    side = float(np.median([d.side_px for d in best if _sure(d)]))
    again = _read(img, side, fallback)
    return again if sum(_sure(d) for d in again) >= n_best else best


def _read(img: np.ndarray, expected_side_px: float | None, fallback: bool) -> list[DieReading]:
    """:func:`read_dice_learned` on a checked BGR frame, with ``expected_side_px`` as given
    (no search of smaller dice)."""
    h, w = img.shape[:2]
    found = _find(img, expected_side_px)[:MAX_CANDIDATES]
    if not found:
        return []
    if expected_side_px:
        # Calibrated: every die has the same size, so the classifier's window is the die's
        # (a window sized on a big pip by a peak there would show the pip as the 1 of a
        # small die); the geometry outputs then centre it on the die.
        box = 1.2 * float(expected_side_px)
        found = [(x, y, box, sc) for x, y, _, sc in found]
    found = _add_midpoints(found)
    probs, found = _classify(img, found)
    probs, found, floors = _reread_small(img, probs, found)
    probs, found = _refine_unsure(img, probs, found, 1.2 * float(expected_side_px) if expected_side_px else None,
                                  floors)
    # Second suppression, after the classifier: of two candidates closer than half a die,
    # keep the one the classifier reads best (a peak on a big pip of a 2 can outscore the
    # die's centre at the detector, but not at the classifier).
    order = np.argsort(-probs[:, :6].max(axis=1).astype(np.float64), kind="stable")
    xs, ys, ss = (np.array([f[k] for f in found], np.float64)[order] for k in range(3))
    keep = sorted(order[_greedy(_distances(xs, ys) <= 0.5 * np.maximum(ss[:, None], ss[None, :]))].tolist())
    found, probs = [found[i] for i in keep], probs[keep]
    kept = []
    for (x, y, size, score), p in zip(found, probs):
        cls = int(np.argmax(p[:7]))
        pc = float(p[cls])
        if cls == NOT_A_FACE:
            if score < CENTRE_SURE or pc >= NOT_A_DIE_SURE:
                continue
            value, conf = None, min(0.2, 1.0 - pc)
        elif pc >= _threshold(score) and pc >= READ_ALONE:
            value, conf = cls + 1, pc
        elif pc >= _threshold(score):
            # sure enough to be read, not to be read alone: the classical reader must agree
            value, conf = None, min(0.2, pc * 0.2)
            if fallback and _classical_value(img, x, y, size)[0] == cls + 1:
                value, conf = cls + 1, pc
        else:
            value, conf = None, min(0.2, pc * 0.2)
            if fallback:
                vc, cc, _ = _classical_value(img, x, y, size)
                if vc is not None and p[vc - 1] >= FALLBACK_MIN_P:
                    value, conf = vc, min(cc, 0.5 + 0.5 * float(p[vc - 1]))
            if value is None and score < CENTRE_READ:
                continue   # a weak peak that neither reader can read: a print, a chip's edge
        kept.append(((x, y, size, score), p, value, conf))
    # the tilt classifier only for the dice returned (not for the candidates dropped above)
    tilt = p_flat_tilt(img, [f for f, _, _, _ in kept])
    kept = _read_cocked(img, [(*item, None if tilt is None else float(tilt[k])) for k, item in enumerate(kept)])
    out = [_reading(*f, p, value, conf, (w, h), t, cocked) for f, p, value, conf, t, cocked in kept]
    side = float(np.median([d.side_px for d in out])) if out else 1.0
    out.sort(key=lambda d: (round(d.centre[1] / max(side, 1.0)), d.centre[0]))
    return out
