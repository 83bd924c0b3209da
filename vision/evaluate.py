"""Measure the dice reader on photographs labelled in YOLO text.

Label format: one line per die, ``class cx cy w h``, coordinates normalised to the image
width and height, class 0..5 = face value 1..6.

Matching is one-to-one: a reading and a label may pair when their boxes overlap with
IoU >= 0.3 or the reading's centre lies inside the label box (one labelled set boxes only
the pip pattern, not the whole die). Pairs are taken greedily, best IoU first, then
nearest centre.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from vision.types import DieReading

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
MATCH_IOU = 0.3


@dataclass(frozen=True, slots=True)
class Label:
    """One labelled die: value 1..6 and box ``(x0, y0, x1, y1)`` in pixels (float)."""

    value: int
    box: tuple[float, float, float, float]


class LabelError(ValueError):
    """A label file that cannot be parsed; the message names the file and line."""


def load_labels(path: Path, width: int, height: int) -> list[Label]:
    """Read a YOLO label file.

    Each non-blank line must be exactly five fields ``class cx cy w h``: ``class`` an integer
    0..5 (``2`` or ``2.0``, not ``2.7``), ``cx`` and ``cy`` finite numbers in [0, 1], ``w`` and
    ``h`` finite numbers in (0, 1].

    Args:
        path: the ``.txt`` file; a missing file means no dice.
        width, height: the image size in pixels.

    Raises:
        LabelError: naming ``path`` and the line number (``file:line``) and saying what is wrong;
            also for a file that cannot be read or is not UTF-8 text (naming ``path``).
    """
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LabelError(f"{path}: not a UTF-8 text label file (byte {exc.start}: "
                         f"{exc.object[exc.start:exc.start + 1]!r})") from exc
    except OSError as exc:
        raise LabelError(f"{path}: cannot read the label file: {exc.strerror or exc}") from exc
    labels = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        where = f"{path}:{n}"
        if len(parts) != 5:
            raise LabelError(f"{where}: expected 5 fields 'class cx cy w h', got {len(parts)} in {line!r}")
        try:
            values = [float(v) for v in parts]
        except ValueError as exc:
            raise LabelError(f"{where}: expected 'class cx cy w h' numbers, got {line!r}") from exc
        names = ("class", "cx", "cy", "w", "h")
        for name, v in zip(names, values):
            if not math.isfinite(v):
                raise LabelError(f"{where}: {name} must be a finite number, got {v} in {line!r}")
        cf, cx, cy, bw, bh = values
        if cf != int(cf):
            raise LabelError(f"{where}: class must be an integer 0..5, got {parts[0]}")
        c = int(cf)
        if not 0 <= c <= 5:
            raise LabelError(f"{where}: class {c} outside 0..5")
        for name, v in (("cx", cx), ("cy", cy)):
            if not 0.0 <= v <= 1.0:
                raise LabelError(f"{where}: {name} {v} outside [0, 1] (normalised to the image size)")
        for name, v in (("w", bw), ("h", bh)):
            if not 0.0 < v <= 1.0:
                raise LabelError(f"{where}: {name} {v} outside (0, 1] (normalised to the image size)")
        labels.append(Label(c + 1, ((cx - bw / 2) * width, (cy - bh / 2) * height,
                                    (cx + bw / 2) * width, (cy + bh / 2) * height)))
    return labels


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Intersection over union of two ``(x0, y0, x1, y1)`` boxes."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0


def match(readings: list[DieReading], labels: list[Label]) -> list[tuple[int, int]]:
    """Pair readings with labels one-to-one; returns ``(reading index, label index)`` pairs."""
    cands = []
    for i, r in enumerate(readings):
        cx, cy = r.centre
        for j, lb in enumerate(labels):
            v = iou(tuple(float(x) for x in r.bbox), lb.box)
            inside = lb.box[0] <= cx <= lb.box[2] and lb.box[1] <= cy <= lb.box[3]
            if v >= MATCH_IOU or inside:
                lx, ly = (lb.box[0] + lb.box[2]) / 2, (lb.box[1] + lb.box[3]) / 2
                cands.append((-v, float(np.hypot(cx - lx, cy - ly)), i, j))
    cands.sort()
    used_r, used_l, pairs = set(), set(), []
    for _, _, i, j in cands:
        if i in used_r or j in used_l:
            continue
        used_r.add(i)
        used_l.add(j)
        pairs.append((i, j))
    return pairs


@dataclass(slots=True)
class ImageResult:
    """Per-image outcome: counts and the per-die errors, for reports."""

    image: str
    labels: int
    readings: int
    matched: int
    correct: int
    nulls: int
    ms: float
    errors: list[str] = field(default_factory=list)


@dataclass(slots=True)
class EvalReport:
    """Totals over a set of images.

    ``confusion[t-1][p-1]`` counts matched dice of true value t read as p; ``null_by_true``
    counts matched dice read as ``None``.
    """

    images: list[ImageResult] = field(default_factory=list)
    confusion: np.ndarray = field(default_factory=lambda: np.zeros((6, 6), dtype=np.int64))
    null_by_true: np.ndarray = field(default_factory=lambda: np.zeros(6, dtype=np.int64))

    @property
    def n_labels(self) -> int:
        """Labelled dice over all images."""
        return sum(r.labels for r in self.images)

    @property
    def n_readings(self) -> int:
        """Dice the reader reported over all images, matched to a label or not."""
        return sum(r.readings for r in self.images)

    @property
    def n_matched(self) -> int:
        """Readings paired one-to-one with a label (:func:`match`: IoU >= 0.3 or the reading's centre
        inside the label box), over all images.
        """
        return sum(r.matched for r in self.images)

    @property
    def recall(self) -> float:
        """Matched labels / labels."""
        return self.n_matched / self.n_labels if self.n_labels else 1.0

    @property
    def precision(self) -> float:
        """Matched readings / readings."""
        return self.n_matched / self.n_readings if self.n_readings else 1.0

    @property
    def face_accuracy(self) -> float:
        """Right values / matched dice (a ``None`` counts as not right)."""
        return sum(r.correct for r in self.images) / self.n_matched if self.n_matched else 0.0

    @property
    def wrong_values(self) -> int:
        """Matched dice read as a wrong number (not ``None``)."""
        return int(self.confusion.sum() - np.trace(self.confusion))

    @property
    def null_share(self) -> float:
        """Matched dice read as ``None`` / matched dice."""
        return int(self.null_by_true.sum()) / self.n_matched if self.n_matched else 0.0

    @property
    def all_right_share(self) -> float:
        """Images where every labelled die is found and read right and nothing else is
        reported."""
        if not self.images:
            return 0.0
        ok = sum(1 for r in self.images if r.correct == r.labels and r.readings == r.labels)
        return ok / len(self.images)

    @property
    def median_ms(self) -> float:
        """Median time of one reader call per image, in milliseconds (``time.perf_counter``); 0.0 when
        there are no images.
        """
        return statistics.median(r.ms for r in self.images) if self.images else 0.0

    def format(self) -> str:
        """The text report printed by ``craps-table eval``."""
        lines = [
            f"images            {len(self.images)}",
            f"labelled dice     {self.n_labels}",
            f"readings          {self.n_readings}",
            f"recall            {100 * self.recall:.2f} %",
            f"precision         {100 * self.precision:.2f} %",
            f"face accuracy     {100 * self.face_accuracy:.2f} % of {self.n_matched} matched dice",
            f"  wrong numbers   {self.wrong_values}",
            f"  null (unsure)   {int(self.null_by_true.sum())} ({100 * self.null_share:.2f} %)",
            f"all right images  {100 * self.all_right_share:.2f} %",
            f"median ms/image   {self.median_ms:.2f}",
            "confusion (rows true 1..6, columns read 1..6, then null):",
        ]
        for t in range(6):
            row = " ".join(f"{v:5d}" for v in self.confusion[t])
            lines.append(f"  {t + 1}: {row} | {int(self.null_by_true[t]):5d}")
        return "\n".join(lines)


def image_pairs(images_dir: Path, labels_dir: Path, only: Iterable[str] | None = None) -> list[tuple[Path, Path]]:
    """List ``(image, label)`` paths: every image in ``images_dir`` (or those named in
    ``only``, by file name or stem), with the same-stem ``.txt`` in ``labels_dir``.

    Raises:
        LabelError: a name of ``only`` matches no image of ``images_dir`` (the first few are
            named), or no image has a label file in ``labels_dir`` (a wrong labels directory
            would otherwise measure every image as holding no dice).
    """
    names = set(only) if only is not None else None
    out, used = [], set()
    for p in sorted(images_dir.iterdir()):
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            continue
        if names is not None:
            hit = names & {p.name, p.stem}
            if not hit:
                continue
            used |= hit
        out.append((p, labels_dir / (p.stem + ".txt")))
    missing = sorted(names - used) if names is not None else []
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise LabelError(f"{len(missing)} name(s) of the list match no image in {images_dir}: "
                         f"{', '.join(missing[:3])}{more}")
    if out and not any(lab.exists() for _, lab in out):
        raise LabelError(f"{labels_dir}: no label file for any of the {len(out)} image(s) "
                         f"(a YOLO .txt of the same name as each image)")
    return out


def evaluate(pairs: list[tuple[Path, Path]], reader: Callable[[np.ndarray], list[DieReading]] | None = None) -> EvalReport:
    """Run the reader on each image and compare with its labels.

    Args:
        pairs: ``(image path, label path)`` pairs (see :func:`image_pairs`).
        reader: the function under test; defaults to :func:`vision.reader.read_dice`.

    Raises:
        LabelError: a malformed label file.
        camera.base.FrameError: an image that cannot be decoded.
    """
    from camera.imagefile import load_image

    if reader is None:
        from vision.reader import read_dice as reader
    rep = EvalReport()
    for img_path, lab_path in pairs:
        img = load_image(img_path)   # FrameError naming a truncated or corrupt file
        h, w = img.shape[:2]
        labels = load_labels(lab_path, w, h)
        t0 = time.perf_counter()
        readings = reader(img)
        ms = (time.perf_counter() - t0) * 1000.0
        pairs_ = match(readings, labels)
        res = ImageResult(img_path.name, len(labels), len(readings), len(pairs_), 0, 0, ms)
        for i, j in pairs_:
            t = labels[j].value
            v = readings[i].value
            if v is None:
                rep.null_by_true[t - 1] += 1
                res.nulls += 1
                res.errors.append(f"null true={t} at {tuple(round(c) for c in readings[i].centre)} ({readings[i].extra.get('reason', '')})")
            else:
                rep.confusion[t - 1][v - 1] += 1
                if v == t:
                    res.correct += 1
                else:
                    res.errors.append(f"WRONG true={t} read={v} at {tuple(round(c) for c in readings[i].centre)}")
        matched_l = {j for _, j in pairs_}
        matched_r = {i for i, _ in pairs_}
        for j, lb in enumerate(labels):
            if j not in matched_l:
                res.errors.append(f"missed true={lb.value} at {tuple(round(c) for c in lb.box)}")
        for i, r in enumerate(readings):
            if i not in matched_r:
                res.errors.append(f"extra read={r.value} bbox={r.bbox}")
        rep.images.append(res)
    return rep
