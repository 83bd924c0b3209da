"""Train the learned dice reader's two networks and export them to ONNX.

Usage (with the train extra installed, ``pip install -e .[train]``)::

    python -m vision.train.sim_data /tmp/vml/sim --throws 400        # simulator renders
    python -m vision.train.train data  --sim /tmp/vml/sim --cache /tmp/vml/cache
    python -m vision.train.train det   --cache /tmp/vml/cache --minutes 9
    python -m vision.train.train face  --cache /tmp/vml/cache --minutes 9
    python -m vision.train.train export --cache /tmp/vml/cache --out vision/models/dice.onnx   # detector only
    python -m vision.train.online --export                                  # face classifier

``det`` and ``face`` may run at once (one CPU thread each). The cache holds the built arrays
(``det.npz``, ``face.npz``) and the trained state dicts; nothing is written in the repo
except by ``export``.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from vision.learned import standardise
from vision.train import data as D
from vision.train.models import CentreNet, FaceNet


def build(sim_root: Path, cache: Path, seed: int = 0) -> None:
    """The first data build: from the fit parts of the topdown and oblique photos, the renders in
    ``sim_root`` and 150 drawn images, write ``cache/det.npz`` (detector tiles,
    :func:`vision.train.data.detector_tiles`: ``x``, ``heat``, ``size``, ``wsize``) and
    ``cache/face.npz`` (32x32 classifier crops, :func:`vision.train.data.classifier_crops`:
    ``x``, ``y``, ``flat``, ``wflat``). Creates ``cache``.

    Raises:
        FileNotFoundError: ``../shared/data/dice-photos`` is absent.
    """
    cache.mkdir(parents=True, exist_ok=True)
    fit = D.topdown("fit") + D.oblique("fit") + D.sim(sim_root, "fit") + D.synthetic(150, seed + 1)
    t0 = time.time()
    det = D.detector_tiles(fit, {"topdown": 30, "oblique": 6, "sim": 10, "synthetic": 5}, seed)
    np.savez(cache / "det.npz", **det)
    print("det tiles", det["x"].shape, f"{time.time() - t0:.0f} s", flush=True)
    t0 = time.time()
    face = D.classifier_crops(fit, {"topdown": 10, "oblique": 8, "sim": 14, "synthetic": 3}, seed + 2)
    np.savez(cache / "face.npz", **face)
    print("face crops", face["x"].shape, np.bincount(face["y"] + 1), f"{time.time() - t0:.0f} s", flush=True)


def build_extra(sim_root: Path, cache: Path, first: int, seed: int = 5) -> None:
    """More sim data rendered after the first build: the fit throws from the ``first``-th
    file on, as ``det_extra.npz`` and ``face_extra.npz`` (added to the training sets)."""
    fit = [s for s in D.sim(sim_root, "fit") if int(Path(s.path).stem.split("_")[1]) >= first]
    det = D.detector_tiles(fit, {"sim": 16}, seed)
    np.savez(cache / "det_extra.npz", **det)
    face = D.classifier_crops(fit, {"sim": 14}, seed + 1)
    np.savez(cache / "face_extra.npz", **face)
    print(f"extra from {len(fit)} sim throws: det {det['x'].shape} face {face['x'].shape}", flush=True)


def _load(cache: Path, name: str, keys: tuple[str, ...], cap_hard: int = 12000) -> dict[str, np.ndarray]:
    """``name.npz`` plus ``name_extra.npz`` and (for the faces) ``hard.npz`` when present."""
    parts = [np.load(cache / f"{name}.npz")]
    for extra in (f"{name}_extra.npz", "hard.npz" if name == "face" else None):
        if extra and (cache / extra).is_file():
            z = np.load(cache / extra)
            if extra == "hard.npz" and len(z["y"]) > cap_hard:
                idx = np.random.default_rng(3).choice(len(z["y"]), cap_hard, replace=False)
                z = {k: z[k][idx] for k in keys}
            parts.append(z)
    return {k: np.concatenate([p[k] for p in parts]) for k in keys}


def _focal(logit: torch.Tensor, heat: torch.Tensor) -> torch.Tensor:
    p = torch.sigmoid(logit).clamp(1e-4, 1 - 1e-4)
    pos = heat >= 0.999
    pos_l = -(torch.log(p) * (1 - p) ** 2)[pos].sum()
    neg_l = -(torch.log(1 - p) * p ** 2 * (1 - heat) ** 4)[~pos].sum()
    return (pos_l + neg_l) / pos.sum().clamp(min=1)


def _tensor_x(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(x).permute(0, 3, 1, 2).float().div_(255.0)


def train_det(cache: Path, minutes: float, seed: int = 0, resume: bool = False, lr: float = 3e-3) -> None:
    """Train :class:`CentreNet` on ``cache/det.npz`` (and ``det_extra.npz``) for ``minutes`` of
    wall-clock time: batches of 32, AdamW (weight decay 1e-4), learning rate ``lr`` on a cosine
    to 0 over the time; loss the CenterNet focal loss on the centre heat plus weighted L1 on the
    log box side. Saves the state dict to ``cache/det.pt`` after every epoch and at the end;
    ``resume`` starts from it.

    Raises:
        FileNotFoundError: no ``det.npz`` (run ``data`` first), or no ``det.pt`` to resume.
    """
    torch.manual_seed(seed)
    z = _load(cache, "det", ("x", "heat", "size", "wsize"))
    x, heat, size, wsz = z["x"], z["heat"].astype(np.float32), z["size"].astype(np.float32), z["wsize"].astype(np.float32)
    n = len(x)
    net = CentreNet()
    if resume:
        net.load_state_dict(torch.load(cache / "det.pt"))
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=1e-4)
    rng = np.random.default_rng(seed)
    bs = 32
    t_end = time.time() + 60 * minutes
    t_start = time.time()
    step = 0
    ep = 0
    while time.time() < t_end:
        perm = rng.permutation(n)
        tot = 0.0
        for i in range(0, n - bs + 1, bs):
            frac = (time.time() - t_start) / (t_end - t_start)
            if frac >= 1:
                break
            for gp in opt.param_groups:
                gp["lr"] = lr * 0.5 * (1 + np.cos(np.pi * min(1.0, frac)))
            idx = perm[i:i + bs]
            xb = _tensor_x(x[idx])
            o = net.logits(xb)
            hb, sb, wb = (torch.from_numpy(a[idx]) for a in (heat, size, wsz))
            l_h = _focal(o[:, 0], hb)
            l_s = (torch.abs(o[:, 1] - sb) * wb).sum() / wb.sum().clamp(min=1)
            loss = l_h + l_s
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach())
            step += 1
        ep += 1
        print(f"det epoch {ep} step {step} loss {tot / max(1, n // bs):.4f} {time.time() - t_start:.0f} s", flush=True)
        torch.save(net.state_dict(), cache / "det.pt")
    torch.save(net.state_dict(), cache / "det.pt")


def train_face(cache: Path, minutes: float, seed: int = 0, resume: bool = False, lr: float = 3e-3) -> None:
    """Train the first build's :class:`FaceNet` (32x32 crops) on ``cache/face.npz`` (and
    ``face_extra.npz``, and ``hard.npz`` capped at 12,000 crops) for ``minutes`` of wall-clock
    time: batches of 128 (half of them turned by 90, 180 or 270 degrees), AdamW, cosine learning rate
    from ``lr``; loss cross-entropy over the 7 classes (label smoothing 0.02, class -1 ignored)
    plus 0.5 x the weighted binary cross-entropy of the flat output. Saves ``cache/face.pt``
    after every epoch and at the end; ``resume`` starts from it.

    Raises:
        FileNotFoundError: no ``face.npz`` (run ``data`` first), or no ``face.pt`` to resume.
    """
    torch.manual_seed(seed)
    z = _load(cache, "face", ("x", "y", "flat", "wflat"))
    x = standardise(z["x"])
    y, flat, wflat = z["y"], z["flat"], z["wflat"]
    n = len(x)
    net = FaceNet()
    if resume:
        net.load_state_dict(torch.load(cache / "face.pt"))
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=1e-4)
    rng = np.random.default_rng(seed)
    bs = 128
    t_end = time.time() + 60 * minutes
    t_start = time.time()
    ep = 0
    xt = torch.from_numpy(x)
    while time.time() < t_end:
        perm = rng.permutation(n)
        tot = correct = seen = 0.0
        for i in range(0, n - bs + 1, bs):
            frac = (time.time() - t_start) / (t_end - t_start)
            if frac >= 1:
                break
            for gp in opt.param_groups:
                gp["lr"] = lr * 0.5 * (1 + np.cos(np.pi * min(1.0, frac)))
            idx = perm[i:i + bs]
            xb = xt[idx]
            if rng.random() < 0.5:
                xb = torch.rot90(xb, int(rng.integers(1, 4)), (2, 3))
            o = net.logits(xb)
            yb = torch.from_numpy(y[idx])
            l_c = F.cross_entropy(o[:, :7], yb, ignore_index=-1, label_smoothing=0.02)
            fb, wb = torch.from_numpy(flat[idx]), torch.from_numpy(wflat[idx])
            l_f = (F.binary_cross_entropy_with_logits(o[:, 7], fb, reduction="none") * wb).sum() / wb.sum().clamp(min=1)
            loss = l_c + 0.5 * l_f
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss) * len(idx)
            m = yb >= 0
            correct += float((o[:, :7].argmax(1)[m] == yb[m]).sum())
            seen += float(m.sum())
        ep += 1
        print(f"face epoch {ep} loss {tot / n:.4f} acc {correct / max(1, seen):.4f} {time.time() - t_start:.0f} s", flush=True)
        torch.save(net.state_dict(), cache / "face.pt")
    torch.save(net.state_dict(), cache / "face.pt")


def export(cache: Path, out: Path) -> None:
    """Write the centre detector to ``<out stem>_centres.onnx``. The shipped face classifier
    (48x48, with geometry outputs) comes from :mod:`vision.train.online` ``--export``; the
    32x32 ``FaceNet`` trained by ``face`` here is the first build's and is not exported."""
    out.parent.mkdir(parents=True, exist_ok=True)
    det = CentreNet()
    det.load_state_dict(torch.load(cache / "det.pt"))
    det.eval()
    det_path = out.with_name(out.stem + "_centres.onnx")
    torch.onnx.export(det, torch.zeros(1, 3, 320, 320), str(det_path), input_names=["image"],
                      output_names=["centres"], opset_version=13, dynamo=False,
                      dynamic_axes={"image": {0: "n", 2: "h", 3: "w"}, "centres": {0: "n", 2: "h4", 3: "w4"}})
    print(det_path, det_path.stat().st_size, "bytes")


def main() -> None:
    """``python -m vision.train.train {data,extra,det,face,export} [--sim] [--cache] [--minutes]
    [--threads] [--resume] [--lr] [--seed] [--first] [--out]``: run one step (module
    docstring). argparse exits with status 2 on bad arguments.
    """
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["data", "extra", "det", "face", "export"])
    ap.add_argument("--first", type=int, default=10125, help="extra: first sim seed not in the first build")
    ap.add_argument("--sim", type=Path, default=Path("/tmp/vml/sim"))
    ap.add_argument("--cache", type=Path, default=Path("/tmp/vml/cache"))
    ap.add_argument("--minutes", type=float, default=9.0)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--resume", action="store_true", help="start from the cached state dict")
    ap.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (cosine decay)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the data build and the training order")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "models" / "dice.onnx")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.step == "data":
        build(a.sim, a.cache, a.seed)
    elif a.step == "extra":
        build_extra(a.sim, a.cache, a.first)
    elif a.step == "det":
        train_det(a.cache, a.minutes, a.seed, a.resume, a.lr)
    elif a.step == "face":
        train_face(a.cache, a.minutes, a.seed, a.resume, a.lr)
    else:
        export(a.cache, a.out)


if __name__ == "__main__":
    main()
