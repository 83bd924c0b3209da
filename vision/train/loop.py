"""What the crop classifiers' trainers share (:mod:`vision.train.tilt`, :mod:`vision.train.cocked`):
the batch augmentation, one optimiser step on a cosine learning rate, the ONNX export and the
command line."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import nn

import vision.learned as L


def augment(xb: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """A batch of standardised crops ``(N, 3, 48, 48)`` with Gaussian noise (sigma up to 0.15 per
    crop), one 90-degree turn and, half the time, a mirror, the same for the whole batch."""
    xb = xb + torch.randn_like(xb) * torch.rand(len(xb), 1, 1, 1) * 0.15
    xb = torch.rot90(xb, int(rng.integers(4)), (2, 3))
    if rng.random() < 0.5:
        xb = torch.flip(xb, (3,))
    return xb


def optimiser_step(opt: torch.optim.Optimizer, loss: torch.Tensor, lr: float, done: float) -> None:
    """One optimiser step at the cosine learning rate ``lr`` x (1 + cos(pi x done)) / 2,
    ``done`` the share of the training time spent (0..1)."""
    for g in opt.param_groups:
        g["lr"] = lr * 0.5 * (1 + math.cos(math.pi * min(1.0, done)))
    opt.zero_grad()
    loss.backward()
    opt.step()


def export(net: nn.Module, out: Path, output: str) -> None:
    """Write ``net`` to ``out`` as ONNX (opset 13): input ``crop`` ``(n, 3, 48, 48)``, output
    ``output`` with a dynamic first axis."""
    net.eval()
    torch.onnx.export(net, torch.zeros(1, 3, L.CROP, L.CROP), str(out), input_names=["crop"],
                      output_names=[output], dynamic_axes={"crop": {0: "n"}, output: {0: "n"}},
                      opset_version=13, dynamo=False)
    print("wrote", out)


def cli(doc: str, train_fn: Callable, default_out: Path, minutes: float, argv: list[str] | None = None) -> None:
    """The command line of a crop classifier's trainer: ``RENDERS... [--minutes M] [--lr]
    [--threads] [--seed] [--out]``, then ``train_fn(renders, minutes, out, lr, threads, seed)``."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("renders", type=Path, nargs="+", help="folders written by vision.train.sim_data")
    ap.add_argument("--minutes", type=float, default=minutes)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=default_out)
    a = ap.parse_args(argv)
    cv2.setNumThreads(1)
    train_fn(a.renders, a.minutes, a.out, a.lr, a.threads, a.seed)
