"""Train the cocked-die reader: the upper face of a die that does not lie flat
(``vision/models/dice_cocked.onnx``, :func:`vision.learned.cocked_faces`).

Why: the face classifier learned faces seen square-on. A die cocked ~25 degrees on the edge
of a chip stack shows its upper face foreshortened beside a strip of the side face the stack
lifts into view; the face classifier read such dice with p 0.6-0.8 and now and then wrong
(simulated camera: ny-5324, whose rule reads the face opposite the side resting on the chip,
9 NYCRR 5324.52(h)(1)(i), sent 9 of 40 to the boxperson, one of them read 4 for a 1). This
network reads only such dice: the reader asks it about a die both flatness estimates call not
flat, so it cannot move the reading of flat dice.

Data (train data only, never the report splits):

- die crops from simulator renders (``python -m vision.train.sim_data``, which labels every die
  with the face most nearly up, ``value_up``, and its tilt, ``tilt_deg``): a die tilted up to
  :data:`READ_TILT_DEG` (42) is labelled with that face, one tilted :data:`UNSURE_TILT_DEG`
  (44) or more (two faces equally up) "cannot tell" (class 6), those between not trained; a die another die lies on is left out (hidden);
  held out: every throw whose seed is 3 modulo 7;
- die crops of the real train photos (``topdown("fit")``, ``oblique("fit")``) and of drawn
  dice, flat, labelled with their face, so that a flat die the flatness estimates wrongly call
  not flat is still read right.

Each crop is a window of :data:`vision.learned.COCKED_WINDOW` die boxes (a cocked die's footprint
is its upper face plus the lifted side: up to ~1.4 sides) around the die, 48x48, its centre moved
up to 40 % of a box (the reader's centre of a cocked die was up to half a side off), its size 0.9..1.15 x, turned any angle and mirrored; a die not lying flat
is cropped 12 times, a flat render 3 times, a photographed die 2 times. Batches of 128: 64 not flat
(renders), 40 flat renders, 24 photos and drawn dice; noise, 90-degree turns and a mirror per
batch. Loss: cross-entropy, label smoothing 0.02. AdamW, cosine learning rate.

Usage (the shipped weights: ``vision/models/MODEL_CARD.md``, "Cocked-die reader")::

    python -m vision.train.sim_data /tmp/cocked/forced --throws 1200 --first-seed 40000 --scenarios \\
        cocked-on-chips cocked-on-chips cocked-on-chips cocked-chips-other-rail flat-on-one-chip \\
        cocked-two-objects cocked-on-die cocked-on-rail-wall cocked-on-cup cocked-on-bank-side
    python -m vision.train.sim_data /tmp/cocked/mix --throws 500 --first-seed 42000
    python -m vision.train.sim_data /tmp/cocked/stacks --throws 700 --first-seed 44000 --scenarios \\
        flat-beside-stack flat-beside-stack cocked-on-tall-stack
    python -m vision.train.sim_data /tmp/cocked/leans --throws 800 --first-seed 48000 --scenarios \\
        cocked-on-cup cocked-on-die cocked-on-tall-stack cocked-on-rail-wall
    python -m vision.train.cocked /tmp/cocked/forced /tmp/cocked/mix /tmp/cocked/stacks /tmp/cocked/leans --minutes 30

(The stacks folder since the nineteenth session: dice leaning ~40 degrees on the side of a
tall chip stack, and flat beside one; the leans folder and 30 minutes since the twentieth.)
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import nn

import vision.learned as L
from vision.train import data as D
from vision.train.loop import augment, cli, export, optimiser_step
from vision.train.models import FaceNet

#: a die tilted up to this (degrees) is labelled with the face most nearly up. A die leaning on
#: a wall, the cup or the other die rests at 38-44 degrees in the renders; at 42 degrees its face
#: most nearly up still shows cos 42 / cos 48 = 1.11 times the other's area to a camera above.
#: 35 until the fifteenth session, when such leans were all "cannot tell" and house practice
#: (a cocked die read as it lies) sent them to the boxperson
READ_TILT_DEG = 42.0
#: from this tilt on (degrees) two faces are about equally up (within 1 degree of 45): "cannot
#: tell" (40 until the fifteenth session)
UNSURE_TILT_DEG = 44.0
CANNOT_TELL = 6


class CockedNet(FaceNet):
    """Input ``(N, 3, 48, 48)`` float32, each crop standardised (:func:`vision.learned.standardise`);
    output ``(N, 7)``: softmax over the upper face 1..6 and "cannot tell". Five 3x3 convolutions
    (16-96 channels, the face classifier's body), ~14 M multiply-adds a crop."""

    def __init__(self) -> None:
        super().__init__((16, 32, 64, 64, 96), n_out=7, dropout=0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(N, 3, 48, 48)`` float32 standardised crops -> ``(N, 7)`` float32 probabilities
        (softmax, each row sums to 1): upper face 1..6, then "cannot tell" (:data:`CANNOT_TELL`).
        """
        return torch.softmax(self.logits(x), dim=1)


def label(die: dict) -> int | None:
    """The class of a rendered die: face - 1, :data:`CANNOT_TELL`, or ``None`` (not trained)."""
    if die["flat"] or die["tilt_deg"] <= READ_TILT_DEG:
        return int(die["value_up"]) - 1
    if die["tilt_deg"] >= UNSURE_TILT_DEG:
        return CANNOT_TELL
    return None


def _crop(img: np.ndarray, cx: float, cy: float, box: float, rng: np.random.Generator | None,
          shift: float = 0.4) -> np.ndarray:
    """A :data:`vision.learned.COCKED_WINDOW` window around a die of box side ``box``; jittered
    (centre, size, angle, mirror) when ``rng`` is given, upright and true otherwise."""
    angle = 0.0
    if rng is not None:
        box *= rng.uniform(0.9, 1.15)
        cx += rng.uniform(-shift, shift) * box
        cy += rng.uniform(-shift, shift) * box
        angle = float(rng.uniform(0, 360))
    c = L.crop_die(img, cx, cy, box * L.COCKED_WINDOW / L.WINDOW, angle)
    if rng is not None and rng.random() < 0.5:
        c = c[:, ::-1]
    return c


def render_crops(dirs: list[Path], seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Crops of the dice in the renders of ``dirs``: ``{"fit" | "hold": (uint8 (N, 48, 48, 3)
    crops, int (N,) class, bool (N,) flat, str (N,) "scenario|rests_on")}``. The held-out crops
    are upright, at the die's true centre and size."""
    rng = np.random.default_rng(seed)
    out: dict[str, tuple[list, list, list, list]] = {"fit": ([], [], [], []), "hold": ([], [], [], [])}
    for d in dirs:
        for js in sorted(Path(d).glob("sim_*.json")):
            split = "hold" if int(js.stem.split("_")[1]) % 7 == 3 else "fit"
            t = json.loads(js.read_text())
            img = cv2.imread(str(js.with_suffix(".png")))
            side = float(t["side_px"])
            for die in t["dice"]:
                y = label(die)
                if die["rests_on"] == "off-table" or y is None:
                    continue
                cx, cy = die["centre_px"]
                if any(o is not die and o["rests_on"] == "die"
                       and math.hypot(o["centre_px"][0] - cx, o["centre_px"][1] - cy) < 1.2 * side for o in t["dice"]):
                    continue   # another die lies on it: its face is hidden
                k = 1 if split == "hold" else (3 if die["flat"] else 12)
                for _ in range(k):
                    out[split][0].append(_crop(img, cx, cy, 1.2 * side, None if split == "hold" else rng))
                    out[split][1].append(y)
                    out[split][2].append(bool(die["flat"]))
                    out[split][3].append(f"{t['scenario']}|{die['rests_on']}")
    return {k: (np.stack(x), np.array(y), np.array(f), np.array(g)) for k, (x, y, f, g) in out.items() if x}


def photo_crops(seed: int = 5, drawn: int = 150) -> tuple[np.ndarray, np.ndarray]:
    """uint8 ``(N, 48, 48, 3)`` crops of the dice of the real train photos (fit part) and of
    ``drawn`` images of drawn dice (:func:`vision.train.data.synthetic`), 2 each, and their
    classes (face - 1)."""
    rng = np.random.default_rng(seed)
    crops, ys = [], []
    for smp in D.topdown("fit") + D.oblique("fit") + D.synthetic(drawn, seed=seed):
        img = smp.load()
        for d in smp.dice:
            if d.value is None:
                continue
            for _ in range(2):
                crops.append(_crop(img, d.cx, d.cy, d.size, rng, shift=0.1))
                ys.append(d.value - 1)
    return np.stack(crops), np.array(ys)


def train(dirs: list[Path], minutes: float, out: Path, lr: float = 2e-3, threads: int = 2, seed: int = 0) -> CockedNet:
    """Train :class:`CockedNet` for ``minutes`` and export it to ``out`` (ONNX, input ``crop``
    ``(n, 3, 48, 48)``, output ``p`` ``(n, 7)``); prints held-out figures as it goes."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed + 1)
    sets = render_crops(dirs)
    xf, yf, ff, _ = sets["fit"]
    xh, yh, fh, gh = sets["hold"]
    XF = torch.from_numpy(L.standardise(xf))
    xr, yr = photo_crops()
    XR = torch.from_numpy(L.standardise(xr))
    XH = torch.from_numpy(L.standardise(xh))
    YF, YR = torch.from_numpy(yf).long(), torch.from_numpy(yr).long()
    flat_i, tilted_i = np.flatnonzero(ff), np.flatnonzero(~ff)
    print(f"render crops: {len(xf)} fit ({len(tilted_i)} not flat, {(yf == CANNOT_TELL).sum()} cannot tell), "
          f"{len(xh)} held out ({(~fh).sum()} not flat); photo and drawn crops {len(XR)}", flush=True)
    net = CockedNet()
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=1e-4)
    t0, step = time.time(), 0
    while (el := time.time() - t0) < minutes * 60:
        idx = np.concatenate([rng.choice(flat_i, 40), rng.choice(tilted_i, 64)])
        ir = rng.choice(len(XR), 24)
        xb = torch.cat([XR[ir], XF[idx]])
        yb = torch.cat([YR[ir], YF[idx]])
        xb = augment(xb, rng)
        loss = nn.functional.cross_entropy(net.logits(xb), yb, label_smoothing=0.02)
        optimiser_step(opt, loss, lr, el / (minutes * 60))
        step += 1
        if step % 1000 == 0:
            report(net, XH, yh, fh, gh, f"step {step} loss {loss.item():.3f}", per_group=False)
    report(net, XH, yh, fh, gh, f"final, {step} steps", per_group=True)
    export(net, out, "p")
    return net


def report(net: CockedNet, xh: torch.Tensor, yh: np.ndarray, fh: np.ndarray, gh: np.ndarray, title: str,
           per_group: bool) -> None:
    """Print, for the held-out renders not lying flat, how many are read right, wrong and
    unsure at the reader's threshold (:data:`vision.learned.COCKED_MIN`)."""
    net.eval()
    with torch.no_grad():
        p = net(xh).numpy()
    net.train()
    top, pc = p.argmax(1), p.max(1)
    sure = (pc >= L.COCKED_MIN) & (top != CANNOT_TELL)

    def line(m: np.ndarray) -> str:
        readable = m & (yh != CANNOT_TELL)
        return (f"{readable.sum()} readable: {(sure & readable & (top == yh)).sum()} right, "
                f"{(sure & readable & (top != yh)).sum()} wrong; {(m & (yh == CANNOT_TELL)).sum()} cannot tell: "
                f"{(sure & m & (yh == CANNOT_TELL)).sum()} read")

    print(f"{title}: held out, not flat {line(~fh)}; flat {line(fh)}", flush=True)
    if per_group:
        for g in sorted(set(gh)):
            m = (gh == g) & ~fh
            if m.any():
                print(f"  {g} not flat: {line(m)}")


def main() -> None:
    """``python -m vision.train.cocked RENDERS... [--minutes 12] [--lr] [--threads] [--seed]
    [--out]`` (:func:`vision.train.loop.cli`): train :class:`CockedNet` and write it as ONNX to
    ``--out`` (default :data:`vision.learned.COCKED_ONNX`). argparse exits with status 2 on bad
    arguments.
    """
    cli(__doc__, train, L.COCKED_ONNX, 12.0)


if __name__ == "__main__":
    main()
