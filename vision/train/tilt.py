"""Train the tilt classifier, the reader's second opinion on flatness
(``vision/models/dice_tilt.onnx``, :func:`vision.learned.p_flat_tilt`).

Data (train data only, never the report splits):

- die crops from simulator renders (``python -m vision.train.sim_data``), flat or not as the
  simulator labels them; held out: every throw whose seed is 3 modulo 7;
- the same renders' dice where the reader finds them (:func:`reader_crops`: the detector's and
  the face classifier's centre and box, as :func:`vision.learned.p_flat_tilt` crops them in
  use), same labels and held-out throws;
- die crops from the real train photos (``topdown("fit")``, ``oblique("fit")`` of
  :mod:`vision.train.data`) and from 150 images of drawn dice (``synthetic``), all labelled
  flat: without the photos the classifier, trained on renders alone, called 2 in 3 real
  photographed dice "not flat"; without the drawn dice, a drawn white die on grey.

Each crop is the tilt classifier's window (:func:`vision.learned.crop_tilt`: 1.25 die boxes, the face classifier's,
48x48) around the die, its centre moved up to 10 % of a box, its size 0.9..1.15 x, turned any
angle and mirrored; a die not lying flat is cropped 12 times, a flat one 4 (renders) or 3 (photos).
Batches of 128: 64 not flat (renders), 40 flat renders, 24 flat photos and drawn dice; noise, 90-degree turns
and a mirror added per batch. Loss: binary cross-entropy. AdamW, cosine learning rate.

Usage (the shipped weights: ``vision/models/MODEL_CARD.md``, "Tilt classifier retrained on the
dice where the reader finds them")::

    python -m vision.train.sim_data /tmp/cocked/forced --throws 1200 --first-seed 40000 --scenarios \\
        cocked-on-chips cocked-on-chips cocked-on-chips cocked-chips-other-rail flat-on-one-chip \\
        cocked-two-objects cocked-on-die cocked-on-rail-wall cocked-on-cup cocked-on-bank-side
    python -m vision.train.sim_data /tmp/cocked/mix --throws 500 --first-seed 42000
    python -m vision.train.tilt /tmp/cocked/forced /tmp/cocked/mix --minutes 15

The second network (``vision/models/dice_tilt_stacks.onnx``, averaged with the first by
:func:`vision.learned.p_flat_tilt`; ``MODEL_CARD.md``, eighteenth session): the same renders
(seeds 40000-41199, 42000-42499) plus dice set flat beside and leaning on tall chip stacks
anywhere on the layout, 16 minutes::

    python -m vision.train.sim_data /tmp/t18/stacks --throws 700 --first-seed 44000 --scenarios \
        flat-beside-stack flat-beside-stack cocked-on-tall-stack
    python -m vision.train.tilt /tmp/t18/forced /tmp/t18/mix /tmp/t18/stacks --minutes 16 \
        --out vision/models/dice_tilt_stacks.onnx
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import nn

import vision.learned as L
from vision.train import data as D
from vision.train.loop import augment, cli, export, optimiser_step


class TiltNet(nn.Module):
    """Input ``(N, 3, 48, 48)`` float32, each crop standardised (:func:`vision.learned.standardise`);
    output ``(N, 1)``: P(the die lies flat). Four 3x3 convolutions (16-64 channels), ~5.9 M
    multiply-adds a crop."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 48, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(48, 64, 3, 1, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(N, 3, 48, 48)`` float32 standardised crops -> ``(N, 1)`` float32, P(the die lies
        flat) (sigmoid, 0..1).
        """
        return torch.sigmoid(self.head(self.features(x)))


def render_crops(dirs: list[Path], seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Crops of every die on the table in the renders of ``dirs``:
    ``{"fit" | "hold": (uint8 (N, 48, 48, 3) crops, bool (N,) flat, str (N,) scenario|rests_on)}``.
    The held-out crops are upright, at the die's true centre and size."""
    rng = np.random.default_rng(seed)
    out: dict[str, tuple[list, list, list]] = {"fit": ([], [], []), "hold": ([], [], [])}
    for d in dirs:
        for js in sorted(Path(d).glob("sim_*.json")):
            split = "hold" if int(js.stem.split("_")[1]) % 7 == 3 else "fit"
            t = json.loads(js.read_text())
            img = cv2.imread(str(js.with_suffix(".png")))
            for die in t["dice"]:
                if die["rests_on"] == "off-table":
                    continue
                k = 1 if split == "hold" else (4 if die["flat"] else 12)
                for _ in range(k):
                    box = 1.2 * t["side_px"]
                    cx, cy, angle = die["centre_px"][0], die["centre_px"][1], 0.0
                    if split == "fit":
                        box *= rng.uniform(0.9, 1.15)
                        cx += rng.uniform(-0.1, 0.1) * box
                        cy += rng.uniform(-0.1, 0.1) * box
                        angle = float(rng.uniform(0, 360))
                    c = L.crop_tilt(img, cx, cy, box, angle)
                    if split == "fit" and rng.random() < 0.5:
                        c = c[:, ::-1]
                    out[split][0].append(c)
                    out[split][1].append(bool(die["flat"]))
                    out[split][2].append(f"{t['scenario']}|{die['rests_on']}")
    return {k: (np.stack(x), np.array(y), np.array(g)) for k, (x, y, g) in out.items() if x}


def reader_crops(dirs: list[Path], seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Crops of the dice of the fit renders of ``dirs`` (seed not 3 modulo 7) where the reader
    finds them (:func:`vision.learned.read_dice_learned` with the render's die side): its centre
    and box, moved up to 5 % of a box, turned any angle and mirrored; a die not flat 8 times, a
    flat one 3. Returns ``(uint8 (N, 48, 48, 3) crops, bool (N,) flat)``.

    Why: the tilt classifier runs on these windows, not on the die's true centre, and the
    reader's centre of a die leaning on something is walked toward it (simulated camera,
    held-out renders: dice not flat called so 156 of 156 at the true centres, 126 of 146 where
    the reader found them)."""
    rng = np.random.default_rng(seed)
    crops, flat = [], []
    for d in dirs:
        for js in sorted(Path(d).glob("sim_*.json")):
            if int(js.stem.split("_")[1]) % 7 == 3:
                continue
            t = json.loads(js.read_text())
            img = cv2.imread(str(js.with_suffix(".png")))
            dice = [x for x in t["dice"] if x["rests_on"] != "off-table"]
            if not dice:
                continue
            for r in L.read_dice_learned(img, expected_side_px=t["side_px"]):
                best = min(dice, key=lambda x: np.hypot(x["centre_px"][0] - r.centre[0], x["centre_px"][1] - r.centre[1]))
                if np.hypot(best["centre_px"][0] - r.centre[0], best["centre_px"][1] - r.centre[1]) > 0.7 * t["side_px"]:
                    continue
                box = 1.2 * r.side_px
                for _ in range(3 if best["flat"] else 8):
                    b = box * rng.uniform(0.95, 1.08)
                    c = L.crop_tilt(img, r.centre[0] + rng.uniform(-0.05, 0.05) * b, r.centre[1] + rng.uniform(-0.05, 0.05) * b,
                                    b, float(rng.uniform(0, 360)))
                    crops.append(c[:, ::-1] if rng.random() < 0.5 else c)
                    flat.append(bool(best["flat"]))
    return np.stack(crops), np.array(flat)


def flat_crops(seed: int = 5, drawn: int = 150) -> np.ndarray:
    """uint8 ``(N, 48, 48, 3)`` crops of the dice of the real train photos (fit part) and of
    ``drawn`` images of drawn dice (:func:`vision.train.data.synthetic`), 3 each: all flat."""
    rng = np.random.default_rng(seed)
    crops = []
    for smp in D.topdown("fit") + D.oblique("fit") + D.synthetic(drawn, seed=seed):
        img = smp.load()
        for d in smp.dice:
            for _ in range(3):
                box = d.size * rng.uniform(0.9, 1.15)
                c = L.crop_tilt(img, d.cx + rng.uniform(-0.1, 0.1) * box, d.cy + rng.uniform(-0.1, 0.1) * box,
                                box, float(rng.uniform(0, 360)))
                crops.append(c[:, ::-1] if rng.random() < 0.5 else c)
    return np.stack(crops)


def train(dirs: list[Path], minutes: float, out: Path, lr: float = 2e-3, threads: int = 2, seed: int = 0) -> TiltNet:
    """Train :class:`TiltNet` for ``minutes`` and export it to ``out`` (ONNX, input ``crop``
    ``(n, 3, 48, 48)``, output ``p_flat`` ``(n, 1)``); prints held-out figures as it goes."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed + 1)
    sets = render_crops(dirs)
    xf, yf, _ = sets["fit"]
    xr, yr = reader_crops(dirs)
    xf, yf = np.concatenate([xf, xr]), np.concatenate([yf, yr])
    xh, yh, gh = sets["hold"]
    XF = torch.from_numpy(L.standardise(xf))
    XR = torch.from_numpy(L.standardise(flat_crops()))
    XH = torch.from_numpy(L.standardise(xh))
    flat_i, tilted_i = np.flatnonzero(yf), np.flatnonzero(~yf)
    print(f"render crops: {len(xf)} fit ({len(tilted_i)} not flat), {len(xh)} held out; photo and drawn crops {len(XR)}")
    net = TiltNet()
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=1e-4)
    t0, step = time.time(), 0
    while (el := time.time() - t0) < minutes * 60:
        idx = np.concatenate([rng.choice(flat_i, 40), rng.choice(tilted_i, 64)])
        ir = rng.choice(len(XR), 24)
        xb = torch.cat([XR[ir], XF[idx]])
        yb = torch.from_numpy(np.concatenate([np.ones(24, np.float32), yf[idx].astype(np.float32)]))[:, None]
        xb = augment(xb, rng)
        loss = nn.functional.binary_cross_entropy(net(xb), yb)
        optimiser_step(opt, loss, lr, el / (minutes * 60))
        step += 1
        if step % 2000 == 0:
            report(net, XH, yh, gh, f"step {step} loss {loss.item():.3f}", per_group=False)
    report(net, XH, yh, gh, f"final, {step} steps", per_group=True)
    export(net, out, "p_flat")
    return net


def report(net: TiltNet, xh: torch.Tensor, yh: np.ndarray, gh: np.ndarray, title: str, per_group: bool) -> None:
    """Print the held-out renders' share of dice not flat called so, and of flat ones kept."""
    net.eval()
    with torch.no_grad():
        p = net(xh)[:, 0].numpy()
    net.train()
    print(f"{title}: held out, not flat called not flat {(p[~yh] < 0.5).mean():.3f} of {(~yh).sum()}, "
          f"flat called flat {(p[yh] >= 0.5).mean():.3f} of {yh.sum()}", flush=True)
    if per_group:
        for g in sorted(set(gh)):
            m = gh == g
            print(f"  {g}: {m.sum()} dice, {yh[m].sum()} flat, {(p[m] >= 0.5).sum()} called flat")


def main() -> None:
    """``python -m vision.train.tilt RENDERS... [--minutes 10] [--lr] [--threads] [--seed]
    [--out]`` (:func:`vision.train.loop.cli`): train :class:`TiltNet` and write it as ONNX to
    ``--out`` (default :data:`vision.learned.TILT_ONNX`). argparse exits with status 2 on bad
    arguments.
    """
    cli(__doc__, train, L.TILT_ONNX, 10.0)


if __name__ == "__main__":
    main()
