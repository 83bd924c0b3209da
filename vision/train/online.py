"""Face-classifier training with crops made on the fly (a fresh rotation, scale, shift and
colour jitter for every crop of every step), instead of a fixed set of augmented crops.

Usage (train extra installed)::

    python -m vision.train.online --sim /tmp/vml/sim --cache /tmp/vml/online --minutes 30 --threads 2
    python -m vision.train.online --cache /tmp/vml/online --export   # -> vision/models/dice_faces.onnx

Sources are the *fit* parts of :mod:`vision.train.data` (the report splits are never read).
Class 6 ("not one readable die") crops are made from: background, a window half a die off a
die, two close dice's midpoint, and the places where the shipped centre detector fires on no
labelled die (casino chips, prints, tray corners).
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

import vision.learned as L
from vision.train import data as D

#: Share of each source in a batch of die crops; class-6 crops are added on top.
SOURCE_SHARE = {"topdown": 0.44, "oblique": 0.14, "sim": 0.32, "synthetic": 0.10}
NEG_SHARE = 0.22
#: Share of die crops whose window is moved off the die's centre by SHIFT_RANGE die boxes
#: (labelled with the face: every pip stays in the window) and by GEOMETRY_ONLY_RANGE (the
#: face is not trained, only the geometry outputs that point back to the centre). The
#: detector can peak on one pip of a 2; a window there, never seen in training, read as a 1.
SHIFT_SHARE = 0.4
SHIFT_RANGE = (0.08, 0.3)
GEOMETRY_ONLY_SHARE = 0.1
GEOMETRY_ONLY_RANGE = (0.3, 0.45)
#: Share of crops whose source pixels go through JPEG compression first (quality drawn from
#: JPEG_QUALITY), as a camera's MJPEG stream or a saved photo does: at quality 30 the round-5
#: classifier read 6 held-out topdown dice wrong, against none on the photos as stored.
JPEG_SHARE = 0.3
JPEG_QUALITY = (15, 85)
#: Share of crops made grey as a camera's luminance (random weights around ITU-R BT.601's
#: 0.114 B + 0.587 G + 0.299 R), not as the channels' mean.
GREY_SHARE = 0.12


@dataclass
class Entry:
    """One die (or "not a die" place) to crop, in image pixels: ``img`` the index into the image
    list, centre ``cx``, ``cy``, box side ``size``; ``y`` the class (face - 1, 6 "not one
    readable die", -1 face unknown: not trained); ``flat`` the flat target (1.0 or 0.0) and
    ``wflat`` its loss weight (0: not trained); ``wsize`` the weight of the geometry loss.
    """

    img: int          # index into the image list
    cx: float
    cy: float
    size: float
    y: int            # class 0..6, -1 = unknown face
    flat: float
    wflat: float
    wsize: float = 1.0


def hard_positions(samples: list[D.Sample]) -> list[tuple[int, float, float, float]]:
    """``(sample index, x, y, box)`` where the shipped detector fires on no labelled die."""
    out = []
    for k, smp in enumerate(samples):
        if smp.source == "synthetic":
            continue
        img = smp.load()
        for x, y, size, _ in L._find(img, smp.side_px):
            if all(math.hypot(x - d.cx, y - d.cy) >= 0.45 * d.size for d in smp.dice):
                out.append((k, x, y, size))
    return out


class OnlineCrops:
    """Draws batches of augmented classifier crops from in-memory images.

    Args:
        samples: training images with their dice (:class:`vision.train.data.Sample`).
        crop: output side in pixels.
        seed: random seed.
    """

    def __init__(self, samples: list[D.Sample], crop: int, seed: int = 0) -> None:
        self.crop = crop
        self.rng = np.random.default_rng(seed)
        self.images = [s.load() for s in samples]
        self.by_source: dict[str, list[Entry]] = {}
        self.neg: list[Entry] = []
        for k, smp in enumerate(samples):
            dice = smp.dice
            wflat = 1.0 if smp.source == "sim" else 0.15
            for d in dice:
                y = -1 if d.value is None else d.value - 1
                flat = 1.0 if d.flat is None or d.flat else 0.0
                self.by_source.setdefault(smp.source, []).append(Entry(k, d.cx, d.cy, d.size, y, flat, wflat, d.size_weight))
            for i, a in enumerate(dice):
                for b in dice[i + 1:]:
                    if math.hypot(a.cx - b.cx, a.cy - b.cy) < 1.6 * max(a.size, b.size):
                        self.neg.append(Entry(k, (a.cx + b.cx) / 2, (a.cy + b.cy) / 2, (a.size + b.size) / 2,
                                              D.NOT_A_FACE, 1.0, 0.0))
        n_mid = len(self.neg)
        for k, x, y, size in hard_positions(samples):
            self.neg.append(Entry(k, x, y, size, D.NOT_A_FACE, 1.0, 0.0))
        self.samples = samples
        print({s: len(v) for s, v in self.by_source.items()}, "midpoints", n_mid, "hard", len(self.neg) - n_mid,
              flush=True)

    def _crop(self, e: Entry, size: float, dx: float, dy: float) -> np.ndarray:
        """Crop at ``(cx + dx, cy + dy)`` with a window of WINDOW * size; sets ``self.geom``
        to the die's centre offset in the crop (crop sides) and log(die box / window box)."""
        rng = self.rng
        img = self.images[e.img]
        sc = self.crop / (L.WINDOW * size)
        m = cv2.getRotationMatrix2D((e.cx + dx, e.cy + dy), float(rng.uniform(0, 360)), sc)
        m[0, 2] += self.crop / 2 - (e.cx + dx)
        m[1, 2] += self.crop / 2 - (e.cy + dy)
        # The source pixels under the window: JPEG-compressed (at their own resolution, with
        # the 8x8 block grid where it falls) and, for a window shrunk below AREA_BELOW x,
        # reduced by pixel-area averaging as vision.learned.crop_die does at run time.
        prepare = None
        if rng.random() < JPEG_SHARE:
            q = int(rng.integers(JPEG_QUALITY[0], JPEG_QUALITY[1] + 1))

            def prepare(patch: np.ndarray) -> np.ndarray:
                ok, buf = cv2.imencode(".jpg", patch, [cv2.IMWRITE_JPEG_QUALITY, q])
                return cv2.imdecode(buf, cv2.IMREAD_COLOR) if ok else patch
        src, m_src = L.window_source(img, m, e.cx + dx, e.cy + dy, L.WINDOW * size, prepare)
        c = cv2.warpAffine(src, m_src, (self.crop, self.crop), flags=cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_REFLECT101)
        if rng.random() < GREY_SHARE:
            wts = np.array([0.114, 0.587, 0.299]) * rng.uniform(0.7, 1.3, 3)
            g = np.clip(c.astype(np.float32) @ (wts / wts.sum()).astype(np.float32), 0, 255).astype(np.uint8)
            c = cv2.cvtColor(g, cv2.COLOR_GRAY2BGR)
        tx, ty = m @ np.array([e.cx, e.cy, 1.0])
        ox, oy = tx / self.crop - 0.5, ty / self.crop - 0.5
        mirror = rng.random() < 0.5
        if mirror:
            c = c[:, ::-1]
            ox = -ox + (-1.0 / self.crop)
        self.geom = (ox, oy, math.log(e.size / size))
        if rng.random() < 0.15:   # a lower-resolution camera
            f = rng.uniform(0.45, 0.8)
            s = max(8, int(self.crop * f))
            c = cv2.resize(cv2.resize(c, (s, s), interpolation=cv2.INTER_AREA), (self.crop, self.crop))
        return D.photometric(np.ascontiguousarray(c), rng)

    def batch(self, n: int) -> dict[str, np.ndarray]:
        """``x`` uint8 (n, crop, crop, 3), ``y`` int64, ``flat`` and ``wflat`` float32."""
        rng = self.rng
        xs, ys, fs, ws, gs, gw = [], [], [], [], [], []
        names = [s for s in SOURCE_SHARE if s in self.by_source]
        p = np.array([SOURCE_SHARE[s] for s in names])
        for _ in range(n):
            r = rng.random()
            if r < NEG_SHARE:
                kind = rng.random()
                src = self.by_source[names[int(rng.choice(len(names), p=p / p.sum()))]]
                e = src[int(rng.integers(len(src)))]
                if kind < 0.35 and self.neg:
                    e = self.neg[int(rng.integers(len(self.neg)))]
                    c = self._crop(e, e.size * rng.uniform(0.85, 1.2), *(rng.uniform(-0.1, 0.1, 2) * e.size))
                elif kind < 0.7:   # half a die
                    a = rng.uniform(0, 2 * math.pi)
                    rr = e.size * rng.uniform(0.45, 0.75)
                    c = self._crop(e, e.size * rng.uniform(0.85, 1.2), rr * math.cos(a), rr * math.sin(a))
                else:              # background away from every die
                    img = self.images[e.img]
                    h, w = img.shape[:2]
                    dice = self.samples[e.img].dice
                    for _t in range(10):
                        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
                        if all(math.hypot(cx - d.cx, cy - d.cy) > 0.9 * d.size for d in dice):
                            break
                    c = self._crop(Entry(e.img, cx, cy, e.size, 6, 1.0, 0.0), e.size * rng.uniform(0.7, 1.3), 0, 0)
                xs.append(c)
                ys.append(D.NOT_A_FACE)
                fs.append(1.0)
                ws.append(0.0)
                gs.append((0.0, 0.0, 0.0))
                gw.append((0.0, 0.0))
                continue
            src = self.by_source[names[int(rng.choice(len(names), p=p / p.sum()))]]
            e = src[int(rng.integers(len(src)))]
            r = rng.random()
            y = e.y
            if r < SHIFT_SHARE + GEOMETRY_ONLY_SHARE:
                lo, hi = SHIFT_RANGE if r < SHIFT_SHARE else GEOMETRY_ONLY_RANGE
                y = e.y if r < SHIFT_SHARE else -1
                a = rng.uniform(0, 2 * math.pi)
                rr = e.size * rng.uniform(lo, hi)
                dx, dy = rr * math.cos(a), rr * math.sin(a)
            else:
                j = 0.08 * e.size
                dx, dy = rng.uniform(-j, j), rng.uniform(-j, j)
            xs.append(self._crop(e, e.size * rng.uniform(0.85, 1.2), dx, dy))
            ys.append(y)
            fs.append(e.flat)
            ws.append(e.wflat)
            gs.append(self.geom)
            gw.append((1.0, e.wsize))
        return {"x": np.stack(xs), "y": np.array(ys, np.int64), "flat": np.array(fs, np.float32),
                "wflat": np.array(ws, np.float32), "geom": np.array(gs, np.float32), "wgeom": np.array(gw, np.float32)}


def train(sim_root: Path | list[Path], cache: Path, minutes: float, crop: int, lr: float, resume: bool,
          seed: int, teacher: Path | None = None, arch: str = "face2", teacher_views: int = 1) -> None:
    """Train (or resume) the face classifier for ``minutes`` on fresh crops.

    ``teacher``: weights of a classifier (``face2.pt``) whose outputs the faces, "not a die"
    and the geometry are held to (knowledge distillation: KL divergence to its class
    probabilities, smooth L1 to its geometry outputs, on the same crops) while the flat output
    alone learns from the labels: it teaches P(flat) new cases (dice leaning on a wall) without
    moving what the classifier reads (a resumed run without it moved the faces: one more die
    unread and one wrong number on the held-out photos).

    ``arch`` other than ``"face2"`` (:data:`vision.train.models.FACE_ARCHS`) with a teacher:
    a new, smaller network learns every output from the teacher (class probabilities, P(flat)
    and geometry) and, at lower weight, from the labels. ``teacher_views`` 4: the teacher's
    outputs are those :func:`vision.learned._classify` makes of it, the mean over the crop's
    four 90-degree turns (probabilities averaged, centre offsets turned back), so that one
    view of the student can stand for four of the teacher."""
    import torch
    import torch.nn.functional as F

    from vision.train.models import FACE_ARCHS, FaceNet2

    cache.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    roots = sim_root if isinstance(sim_root, list) else [sim_root]
    fit = D.topdown("fit") + D.oblique("fit") + [s for r in roots for s in D.sim(r, "fit")] + D.synthetic(150, seed + 1)
    gen = OnlineCrops(fit, crop, seed)
    net = FACE_ARCHS[arch]()
    student = arch != "face2"
    if student and teacher is None:
        raise ValueError(f"--arch {arch} learns from a teacher: give --teacher")
    if resume:
        net.load_state_dict(torch.load(cache / "face2.pt"))
    tnet = None
    if teacher is not None:
        tnet = FaceNet2()
        tnet.load_state_dict(torch.load(teacher))
        tnet.eval()
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=3e-4)
    bs = 96
    t_start = time.time()
    t_end = t_start + 60 * minutes
    step = 0
    tot = tot_g = correct = seen = 0.0
    while time.time() < t_end:
        frac = (time.time() - t_start) / (t_end - t_start)
        warm = min(1.0, step / 200)
        for gp in opt.param_groups:
            gp["lr"] = lr * warm * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
        b = gen.batch(bs)
        xb = torch.from_numpy(L.standardise(b["x"]))
        o = net.logits(xb)
        yb = torch.from_numpy(b["y"])
        fb, wb = torch.from_numpy(b["flat"]), torch.from_numpy(b["wflat"])
        l_f = (F.binary_cross_entropy_with_logits(o[:, 7], fb, reduction="none") * wb).sum() / wb.sum().clamp(min=1)
        if tnet is not None:
            with torch.no_grad():
                t_logp, t_flat, t_geom = teacher_targets(tnet, xb, teacher_views)
            l_c = F.kl_div(F.log_softmax(o[:, :7], 1), t_logp, log_target=True, reduction="batchmean")
            l_g = F.smooth_l1_loss(o[:, 8:11], t_geom, beta=0.05) * 3
            loss = 4.0 * l_c + 1.0 * l_f + 2.0 * l_g
            if student:
                # every output from the teacher; the labels at lower weight
                l_ft = F.binary_cross_entropy_with_logits(o[:, 7], t_flat)
                l_y = F.cross_entropy(o[:, :7], yb, ignore_index=-1, label_smoothing=0.02)
                loss = loss + 1.0 * l_ft + 0.5 * l_y
        else:
            l_c = F.cross_entropy(o[:, :7], yb, ignore_index=-1, label_smoothing=0.02)
            g, wg = torch.from_numpy(b["geom"]), torch.from_numpy(b["wgeom"])
            l_g = F.smooth_l1_loss(o[:, 8:11], g, reduction="none", beta=0.05)
            l_g = ((l_g[:, :2].sum(1) * wg[:, 0]).sum() + (l_g[:, 2] * wg[:, 1]).sum()) / wg[:, 0].sum().clamp(min=1)
            loss = l_c + 0.5 * l_f + 2.0 * l_g
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        tot += float(loss.detach())
        tot_g += float(l_g.detach())
        m = yb >= 0
        correct += float((o[:, :7].argmax(1)[m] == yb[m]).sum())
        seen += float(m.sum())
        if step % 200 == 0:
            print(f"step {step} loss {tot / 200:.4f} geom {tot_g / 200:.4f} acc {correct / max(1, seen):.4f} "
                  f"lr {opt.param_groups[0]['lr']:.2e} {time.time() - t_start:.0f} s", flush=True)
            tot = tot_g = correct = seen = 0.0
            torch.save(net.state_dict(), cache / "face2.pt")
    torch.save(net.state_dict(), cache / "face2.pt")


def teacher_targets(tnet, xb, views: int = 1):
    """The teacher's targets for a batch ``xb`` (float tensor ``(N, 3, S, S)``): log class
    probabilities ``(N, 7)``, P(flat) ``(N,)`` and geometry ``(N, 3)``; with ``views`` > 1 the
    mean over that many 90-degree turns as the run-time reader averages them (an offset
    ``(x, y)`` seen in a crop turned k times is turned back k times by ``(x, y) -> (-y, x)``)."""
    import torch

    probs = flat = 0.0
    geom = torch.zeros(xb.shape[0], 3)
    for k in range(views):
        t = tnet.logits(torch.rot90(xb, k, dims=(2, 3)) if k else xb)
        probs = probs + torch.softmax(t[:, :7], 1)
        flat = flat + torch.sigmoid(t[:, 7])
        ox, oy = t[:, 8], t[:, 9]
        for _ in range(k):
            ox, oy = -oy, ox
        geom = geom + torch.stack([ox, oy, t[:, 10]], 1)
    return torch.log((probs / views).clamp(min=1e-8)), flat / views, geom / views


def export(cache: Path, out: Path, crop: int, arch: str = "face2") -> None:
    """Write the face classifier trained in ``cache`` (``face2.pt``, of architecture ``arch`` of
    :data:`vision.train.models.FACE_ARCHS`) to ``out`` as ONNX (opset 13): input ``crop``
    float32 ``(n, 3, crop, crop)`` standardised crops, output ``faces`` ``(n, 11)``.

    Raises:
        KeyError: an unknown ``arch``.
        FileNotFoundError: no ``face2.pt`` in ``cache``.
        RuntimeError: (torch) ``face2.pt`` holds another architecture's weights.
    """
    import torch

    from vision.train.models import FACE_ARCHS

    net = FACE_ARCHS[arch]()
    net.load_state_dict(torch.load(cache / "face2.pt"))
    net.eval()
    torch.onnx.export(net, torch.zeros(1, 3, crop, crop), str(out), input_names=["crop"], output_names=["faces"],
                      opset_version=13, dynamo=False, dynamic_axes={"crop": {0: "n"}, "faces": {0: "n"}})
    print(out, out.stat().st_size, "bytes")


def main() -> None:
    """``python -m vision.train.online [--sim DIR...] [--cache DIR] [--minutes 30] ... [--export]``:
    train the face classifier on fresh crops (:func:`train`), or with ``--export`` write it to
    ``--out`` (:func:`export`; default :data:`vision.learned.FACES_ONNX`). Sets this module's
    ``JPEG_SHARE`` and ``GREY_SHARE`` from the arguments.
    """
    global JPEG_SHARE, GREY_SHARE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", type=Path, nargs="+", default=[Path("/tmp/vml/sim")],
                    help="folders of simulator renders (vision.train.sim_data)")
    ap.add_argument("--jpeg-share", type=float, default=JPEG_SHARE, help="share of JPEG-compressed crops")
    ap.add_argument("--grey-share", type=float, default=GREY_SHARE, help="share of grey crops")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/vml/online"))
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--crop", type=int, default=48)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--export", action="store_true")
    ap.add_argument("--teacher", type=Path, help="face2.pt whose faces and geometry the run is held to "
                                                  "(only the flat output learns from labels)")
    ap.add_argument("--out", type=Path, default=L.FACES_ONNX)
    ap.add_argument("--teacher-views", type=int, default=1, help="the teacher's outputs averaged over this "
                                                                   "many 90-degree turns of each crop (1 or 4)")
    ap.add_argument("--arch", default="face2", help="network (vision.train.models.FACE_ARCHS); other than "
                                                     "face2 it learns every output from --teacher")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    cv2.setNumThreads(1)
    JPEG_SHARE, GREY_SHARE = a.jpeg_share, a.grey_share
    if a.export:
        export(a.cache, a.out, a.crop, a.arch)
    else:
        train(a.sim, a.cache, a.minutes, a.crop, a.lr, a.resume, a.seed, a.teacher, a.arch, a.teacher_views)


if __name__ == "__main__":
    main()
