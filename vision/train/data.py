"""Training data for the learned dice reader: labelled photos, simulator renders, drawn dice.

Sources (train splits only; the report splits are never read here):

- ``../shared/data/dice-photos/topdown-tray`` images listed in ``train.txt`` (boxes = whole die);
- ``../shared/data/dice-photos/oblique-webcam/train`` (boxes = the pip pattern, or the face for
  a 1: the die's size is taken as 1.6x / 1.3x the box, with a low weight on the size loss);
- simulator renders written by :mod:`vision.train.sim_data` (seeds >= 10000, so never the
  throws ``simulator.accuracy`` measures);
- dice drawn here (rounded squares with pips in random colours, sizes and angles on random
  tables), for light-on-dark and colour variety.

Each source is split into a fitting part and a held-out part (every 8th topdown image, every
6th oblique image, every 7th sim throw), the held-out part used only to choose thresholds.

Two products are built from an image list, both as uint8 arrays:

- detector tiles (:func:`detector_tiles`): ``TILE x TILE`` BGR views at a random scale and
  rotation, with a centre heat map and log-size map at stride 4;
- classifier crops (:func:`classifier_crops`): ``CROP x CROP`` BGR crops of each die (any
  rotation, jittered scale and shift; class = value - 1), of background, of two dice's
  midpoint and of half a die (class 6 = "not one readable die"), with a flat target.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from vision.learned import crop_die

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "dice-photos"
TILE = 96
STRIDE = 4
NOT_A_FACE = 6


@dataclass
class Die:
    """One labelled die of a training image: centre ``cx``, ``cy`` and whole-die box side ``size``
    in image pixels (float); ``value`` 1..6 or ``None`` (face unknown: the class is not trained
    on it); ``flat`` lies flat, ``None`` unknown; ``size_weight`` the weight of its size loss
    (0.2 for the oblique photos, whose boxes are the pip pattern).
    """

    cx: float
    cy: float
    size: float             # whole-die box side, pixels (mean of w and h)
    value: int | None       # 1..6, None = unknown (do not train the class on it)
    flat: bool | None       # None = unknown
    size_weight: float = 1.0


@dataclass
class Sample:
    """One training image and its dice: ``path`` the image file (or a name for drawn images),
    ``dice`` its :class:`Die` list, ``source`` "topdown", "oblique", "sim" or "synthetic",
    ``image`` the BGR uint8 ``(H, W, 3)`` array when held in memory (drawn dice) else ``None``,
    ``side_px`` the die side in pixels from the render's camera (sim renders) else ``None``.
    """

    path: str
    dice: list[Die]
    source: str
    image: np.ndarray | None = field(default=None, repr=False)
    side_px: float | None = None    # calibration die side (sim renders), else unknown

    def load(self) -> np.ndarray:
        """The image, BGR uint8 ``(H, W, 3)``: :attr:`image` when held, else read from :attr:`path`
        (``cv2.imread``, colour; read again at each call).

        Raises:
            FileNotFoundError: ``path`` cannot be read as an image.
        """
        if self.image is not None:
            return self.image
        img = cv2.imread(self.path, cv2.IMREAD_COLOR)
        if img is None:
            raise FileNotFoundError(self.path)
        return img


def _yolo(path: Path, w: int, h: int) -> list[tuple[int, float, float, float, float]]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        p = line.split()
        if len(p) >= 5:
            out.append((int(float(p[0])) + 1, float(p[1]) * w, float(p[2]) * h, float(p[3]) * w, float(p[4]) * h))
    return out


def topdown(split: str) -> list[Sample]:
    """``split``: "fit" or "hold" (both from train.txt)."""
    d = SHARED / "topdown-tray"
    names = sorted((d / "train.txt").read_text().split())
    out = []
    for k, n in enumerate(names):
        if (k % 8 == 7) != (split == "hold"):
            continue
        img_path = d / "images" / n
        dice = [Die(cx, cy, (bw + bh) / 2, v, True, 1.0)
                for v, cx, cy, bw, bh in _yolo(d / "labels" / (Path(n).stem + ".txt"), 640, 640)]
        out.append(Sample(str(img_path), dice, "topdown"))
    return out


def oblique(split: str) -> list[Sample]:
    """The ``oblique-webcam/train`` photos (640x480) of ``split`` "hold" (every 6th by sorted name)
    or, for any other value, "fit" (the rest). Their labels box the pip pattern (the face for a
    1), so a die's ``size`` is 1.6x the box's longer side (1.3x for a 1), with size weight 0.2;
    every die is labelled flat.

    Raises:
        FileNotFoundError: ``../shared/data/dice-photos`` is absent.
    """
    d = SHARED / "oblique-webcam" / "train"
    names = sorted(p.name for p in d.iterdir() if p.suffix.lower() == ".jpg")
    out = []
    for k, n in enumerate(names):
        if (k % 6 == 5) != (split == "hold"):
            continue
        dice = []
        for v, cx, cy, bw, bh in _yolo(d / (Path(n).stem + ".txt"), 640, 480):
            f = 1.3 if v == 1 else 1.6
            dice.append(Die(cx, cy, f * max(bw, bh), v, True, 0.2))
        out.append(Sample(str(d / n), dice, "oblique"))
    return out


def sim(root: Path, split: str) -> list[Sample]:
    """The simulator renders in ``root`` (``sim_*.json`` / ``.png`` pairs of
    :mod:`vision.train.sim_data`), sorted by name, of ``split`` "hold" (every 7th, from the 4th)
    or, for any other value, "fit". Each die: centre and box side in pixels from ``centre_px`` and
    ``bbox_px``, ``value`` (``None``: not labelled), ``flat``; the sample's ``side_px`` from the
    render. A missing ``root`` gives no samples.

    Raises:
        json.JSONDecodeError, KeyError: a truth file that is not sim_data's.
    """
    out = []
    for k, js in enumerate(sorted(root.glob("sim_*.json"))):
        if (k % 7 == 3) != (split == "hold"):
            continue
        t = json.loads(js.read_text())
        dice = []
        for dd in t["dice"]:
            x0, y0, x1, y1 = dd["bbox_px"]
            dice.append(Die(dd["centre_px"][0], dd["centre_px"][1], ((x1 - x0) + (y1 - y0)) / 2,
                            None if dd["value"] is None else int(dd["value"]), bool(dd["flat"]), 1.0))
        out.append(Sample(str(js.with_suffix(".png")), dice, "sim", side_px=float(t["side_px"])))
    return out


_LAYOUT = {1: [(0, 0)], 2: [(-1, -1), (1, 1)], 3: [(-1, -1), (0, 0), (1, 1)],
           4: [(-1, -1), (1, -1), (-1, 1), (1, 1)], 5: [(-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)],
           6: [(-1, -1), (-1, 0), (-1, 1), (1, -1), (1, 0), (1, 1)]}


def _rand_colour(rng) -> tuple[int, int, int]:
    return tuple(int(v) for v in rng.integers(0, 256, 3))


def synthetic(n: int, seed: int) -> list[Sample]:
    """``n`` drawn images (480x640) of 1..8 dice seen from above on a plain noisy table."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        h, w = 480, 640
        bg = np.array(_rand_colour(rng), np.float32)
        img = np.empty((h, w, 3), np.float32)
        img[:] = bg
        grad = np.linspace(-1, 1, w, dtype=np.float32)[None, :, None] * rng.uniform(-25, 25)
        img = img + grad + rng.normal(0, rng.uniform(1, 6), (h, w, 3)).astype(np.float32)
        img = np.clip(img, 0, 255).astype(np.uint8)
        side = float(np.exp(rng.uniform(np.log(18), np.log(90))))
        dice = []
        for _ in range(int(rng.integers(1, 9))):
            for _try in range(20):
                cx, cy = rng.uniform(side, w - side), rng.uniform(side, h - side)
                if all(math.hypot(cx - d.cx, cy - d.cy) > 1.5 * side for d in dice):
                    break
            else:
                continue
            face = np.array(_rand_colour(rng))
            while True:
                pip = np.array(_rand_colour(rng))
                if np.abs(pip.astype(int) - face).sum() > 200:
                    break
            if np.abs(face.astype(int) - bg).sum() < 60:
                face = 255 - bg.astype(int)
            v = int(rng.integers(1, 7))
            a = rng.uniform(0, 2 * math.pi)
            ca, sa = math.cos(a), math.sin(a)
            half = side / 2
            s = 8
            corner = half * rng.uniform(0.05, 0.3)
            sq = cv2.boxPoints(((cx, cy), (side - 2 * corner, side - 2 * corner), math.degrees(a)))
            pts = (sq * s).round().astype(np.int32)
            fc = tuple(int(x) for x in face)
            cv2.fillConvexPoly(img, pts, fc, cv2.LINE_AA, 3)
            cv2.polylines(img, [pts], True, fc, int(round(2 * corner * s)) or 1, cv2.LINE_AA, 3)
            pitch = side * rng.uniform(0.25, 0.3)
            r = side * rng.uniform(0.07, 0.11) * (rng.uniform(1.0, 1.6) if v == 1 else 1.0)
            for ux, uy in _LAYOUT[v]:
                x, y = ux * pitch, uy * pitch
                cv2.circle(img, (round((cx + ca * x - sa * y) * s), round((cy + sa * x + ca * y) * s)),
                           round(r * s), tuple(int(x) for x in pip), -1, cv2.LINE_AA, 3)
            bsize = side * (abs(ca) + abs(sa))
            dice.append(Die(cx, cy, bsize, v, True, 1.0))
        if rng.random() < 0.5:
            img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.5, 1.5))
        out.append(Sample(f"synthetic-{seed}-{i}", dice, "synthetic", image=img))
    return out


# ---- augmentation -------------------------------------------------------------------------

def photometric(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Colour, brightness, contrast, blur and noise jitter of a uint8 BGR image (a copy)."""
    x = img
    if rng.random() < 0.5:
        x = x[..., rng.permutation(3)]
    x = x.astype(np.float32)
    if rng.random() < 0.1:
        x[:] = x.mean(axis=2, keepdims=True)
    x = x * rng.uniform(0.6, 1.4) + rng.uniform(-40, 40)
    x = x * rng.uniform(0.85, 1.15, 3).astype(np.float32)
    if rng.random() < 0.3:
        x = 255.0 * (np.clip(x, 0, 255) / 255.0) ** rng.uniform(0.7, 1.4)
    if rng.random() < 0.3:
        x = cv2.GaussianBlur(x, (0, 0), rng.uniform(0.4, 1.3))
    if rng.random() < 0.5:
        x = x + rng.normal(0, rng.uniform(1, 8), x.shape).astype(np.float32)
    return np.clip(x, 0, 255).astype(np.uint8)


def _affine(cx: float, cy: float, scale: float, angle_deg: float, out_size: int) -> np.ndarray:
    """Matrix mapping image pixels so that (cx, cy) lands on the output's centre, scaled and
    rotated."""
    m = cv2.getRotationMatrix2D((cx, cy), angle_deg, scale)
    m[0, 2] += out_size / 2 - cx
    m[1, 2] += out_size / 2 - cy
    return m


def detector_tiles(samples: list[Sample], per_image: dict[str, int], seed: int,
                   size_range=(7.0, 34.0)) -> dict[str, np.ndarray]:
    """Tiles for the centre detector.

    Returns ``x`` uint8 (N, TILE, TILE, 3), ``heat`` float16 (N, G, G) with G = TILE/STRIDE,
    ``size`` float16 (N, G, G) log die size at the tile's scale, ``wsize`` float16 (N, G, G)
    size-loss weight.
    """
    rng = np.random.default_rng(seed)
    g = TILE // STRIDE
    xs, hs, ss, ws = [], [], [], []
    gy, gx = np.mgrid[0:g, 0:g].astype(np.float32)
    for smp in samples:
        n = per_image[smp.source]
        if n <= 0:
            continue
        img = smp.load()
        h, w = img.shape[:2]
        med = float(np.median([d.size for d in smp.dice])) if smp.dice else 40.0
        for _ in range(n):
            target = float(np.exp(rng.uniform(np.log(size_range[0]), np.log(size_range[1]))))
            sc = target / med
            if smp.dice and rng.random() < 0.75:
                d = smp.dice[int(rng.integers(len(smp.dice)))]
                off = TILE * 0.35 / sc
                cx, cy = d.cx + rng.uniform(-off, off), d.cy + rng.uniform(-off, off)
            else:
                cx, cy = rng.uniform(0, w), rng.uniform(0, h)
            ang = float(rng.uniform(0, 360))
            m = _affine(cx, cy, sc, ang, TILE)
            if rng.random() < 0.5:   # mirror
                m = np.array([[-1, 0, TILE], [0, 1, 0]], np.float64) @ np.vstack([m, [0, 0, 1]])
            tile = cv2.warpAffine(img, m, (TILE, TILE), flags=cv2.INTER_AREA if sc < 0.7 else cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_REFLECT101)
            heat = np.zeros((g, g), np.float32)
            size = np.zeros((g, g), np.float32)
            wsz = np.zeros((g, g), np.float32)
            for d in smp.dice:
                tx, ty = m @ np.array([d.cx, d.cy, 1.0])
                u, v = (tx - 1.5) / STRIDE, (ty - 1.5) / STRIDE
                if not (-3 <= u < g + 3 and -3 <= v < g + 3):
                    continue
                s_in = d.size * sc
                sig = max(0.6, s_in / STRIDE / 5.0)
                heat = np.maximum(heat, np.exp(-((gx - u) ** 2 + (gy - v) ** 2) / (2 * sig * sig)))
                iu, iv = int(round(u)), int(round(v))
                for dv in (-1, 0, 1):
                    for du in (-1, 0, 1):
                        a, b = iv + dv, iu + du
                        if 0 <= a < g and 0 <= b < g:
                            size[a, b] = math.log(s_in)
                            wsz[a, b] = d.size_weight
                if 0 <= iu < g and 0 <= iv < g:
                    heat[iv, iu] = 1.0
            xs.append(photometric(tile, rng))
            hs.append(heat)
            ss.append(size)
            ws.append(wsz)
    return {"x": np.stack(xs), "heat": np.stack(hs).astype(np.float16),
            "size": np.stack(ss).astype(np.float16), "wsize": np.stack(ws).astype(np.float16)}


def crop(img: np.ndarray, cx: float, cy: float, size: float, angle_deg: float = 0.0) -> np.ndarray:
    """The classifier's view of a die (the same function the product uses)."""
    return crop_die(img, cx, cy, size, angle_deg)


def classifier_crops(samples: list[Sample], per_die: dict[str, int], seed: int,
                     jitter: bool = True) -> dict[str, np.ndarray]:
    """Crops for the face classifier.

    Returns ``x`` uint8 (N, CROP, CROP, 3), ``y`` int64 class 0..6 (-1 = do not train the
    class), ``flat`` float32 (N,) 1/0, ``wflat`` float32 (N,) flat-loss weight, ``src`` the
    source name per crop.
    """
    rng = np.random.default_rng(seed)
    xs, ys, fs, wf, src = [], [], [], [], []

    def add(img, cx, cy, size, y, flat, wflat, s):
        ang = float(rng.uniform(0, 360)) if jitter else 0.0
        c = crop(img, cx, cy, size, ang)
        if jitter and rng.random() < 0.5:
            c = c[:, ::-1]
        xs.append(photometric(c, rng) if jitter else c)
        ys.append(y)
        fs.append(1.0 if flat else 0.0)
        wf.append(wflat)
        src.append(s)

    for smp in samples:
        k = per_die[smp.source]
        img = smp.load()
        h, w = img.shape[:2]
        dice = smp.dice
        if not dice:
            continue
        med = float(np.median([d.size for d in dice]))
        for d in dice:
            wflat = 1.0 if smp.source == "sim" else 0.15
            flat = True if d.flat is None else d.flat
            y = -1 if d.value is None else d.value - 1
            for _ in range(k):
                sz = d.size * (rng.uniform(0.85, 1.2) if jitter else 1.0)
                j = 0.08 * d.size if jitter else 0.0
                add(img, d.cx + rng.uniform(-j, j), d.cy + rng.uniform(-j, j), sz, y, flat, wflat, smp.source)
            # half a die: the window centred off the die by about half its size
            for _ in range(max(1, k // 4)):
                a = rng.uniform(0, 2 * math.pi)
                r = d.size * rng.uniform(0.45, 0.75)
                add(img, d.cx + r * math.cos(a), d.cy + r * math.sin(a), d.size * rng.uniform(0.85, 1.2),
                    NOT_A_FACE, True, 0.0, smp.source)
        # two dice's midpoint
        for i, a in enumerate(dice):
            for b in dice[i + 1:]:
                dist = math.hypot(a.cx - b.cx, a.cy - b.cy)
                if dist < 1.6 * max(a.size, b.size):
                    add(img, (a.cx + b.cx) / 2, (a.cy + b.cy) / 2, (a.size + b.size) / 2, NOT_A_FACE, True, 0.0, smp.source)
        # background
        n_bg = max(2, len(dice) * k // 3)
        for _ in range(n_bg):
            for _try in range(10):
                cx, cy = rng.uniform(0, w), rng.uniform(0, h)
                if all(math.hypot(cx - d.cx, cy - d.cy) > 0.9 * d.size for d in dice):
                    break
            else:
                continue
            add(img, cx, cy, med * rng.uniform(0.7, 1.3), NOT_A_FACE, True, 0.0, smp.source)
    return {"x": np.stack(xs), "y": np.array(ys, np.int64), "flat": np.array(fs, np.float32),
            "wflat": np.array(wf, np.float32), "src": np.array(src)}
