"""The two small networks of the learned dice reader (torch; exported to ONNX).

- :class:`CentreNet`: fully convolutional, stride 4; input ``(N, 3, H, W)`` float32 (BGR / 255,
  H and W multiples of 8); output ``(N, 2, H/4, W/4)``: channel 0 the die-centre heat
  (sigmoid, 0..1), channel 1 the log of the die's box side in input pixels. After CenterNet
  (Zhou, Wang, Kraehenbuehl, "Objects as Points", 2019), shrunk to ~80 M multiply-adds at
  320x320.
- :class:`FaceNet`: input ``(N, 3, 32, 32)`` float32 (crop standardised per crop); output
  ``(N, 8)``: softmax over 7 classes (faces 1..6, 6 = not one readable die) then the
  probability that the upper face is flat.
"""
from __future__ import annotations

import torch
from torch import nn


def _cbr(cin: int, cout: int, stride: int = 1, dil: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, dil, dilation=dil, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class CentreNet(nn.Module):
    """The die-centre detector (CenterNet-style: Zhou, Wang, Kraehenbuehl, "Objects as Points",
    2019): fully convolutional, stride 4, ~80 M multiply-adds at 320x320. Input ``(N, 3, H, W)``
    float32 BGR / 255 with H and W multiples of 8; exported to ``vision/models/dice_centres.onnx``
    by :mod:`vision.train.train` ``export``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.c1 = _cbr(3, 8, 2)
        self.c2 = _cbr(8, 16, 2)
        self.c3 = _cbr(16, 16)
        self.c4 = _cbr(16, 32, 2)
        self.c5 = _cbr(32, 32)
        self.c6 = _cbr(32, 32, dil=2)
        self.lat = nn.Sequential(nn.Conv2d(32, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h1 = _cbr(16, 16)
        self.out = nn.Conv2d(16, 2, 1)
        nn.init.constant_(self.out.bias, 0.0)
        with torch.no_grad():
            self.out.bias[0] = -4.0
            self.out.bias[1] = 3.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(N, 3, H, W)`` float32 BGR / 255 (H, W multiples of 8) -> ``(N, 2, H/4, W/4)``
        float32: channel 0 the die-centre heat (sigmoid, 0..1), channel 1 the log of the die's box
        side in input pixels.

        Raises:
            RuntimeError: (torch) not 3 channels, or an H or W (not a multiple of 8) at which the
                stride-4 and upsampled stride-8 maps differ in size.
        """
        x = (x - 0.5) * 4.0
        s = self.c3(self.c2(self.c1(x)))
        d = self.c6(self.c5(self.c4(s)))
        f = torch.relu(s + self.up(self.lat(d)))
        o = self.out(self.h1(f))
        return torch.cat([torch.sigmoid(o[:, :1]), o[:, 1:]], dim=1)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` before the sigmoid: ``(N, 2, H/4, W/4)`` float32, channel 0 the centre heat
        logit, channel 1 the log box side in input pixels (what the training losses take). Same
        input and errors as :meth:`forward`.
        """
        x = (x - 0.5) * 4.0
        s = self.c3(self.c2(self.c1(x)))
        d = self.c6(self.c5(self.c4(s)))
        f = torch.relu(s + self.up(self.lat(d)))
        return self.out(self.h1(f))


class FaceNet(nn.Module):
    """Face classifier: 5 conv layers of ``widths`` channels (pooled after the 1st, 2nd and
    4th), global average pool, linear to ``n_out``. Output: softmax over the 7 classes,
    P(flat), then any further outputs raw. The first build: 32x32 crops, ``(N, 8)``."""

    def __init__(self, widths: tuple[int, int, int, int, int] = (16, 32, 48, 48, 64), n_out: int = 8,
                 dropout: float = 0.1) -> None:
        super().__init__()
        a, b, c, d, e = widths
        self.f = nn.Sequential(
            _cbr(3, a), nn.MaxPool2d(2),
            _cbr(a, b), nn.MaxPool2d(2),
            _cbr(b, c), _cbr(c, d), nn.MaxPool2d(2),
            _cbr(d, e),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(e, n_out)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(N, 3, S, S)`` float32 crops standardised per crop (:func:`vision.learned.standardise`;
        S = 32 for the first build) -> ``(N, n_out)`` float32 raw outputs: 7 class logits (faces
        1..6, then "not one readable die"), then (``n_out`` > 7) the flat logit and any further outputs.
        """
        return self.fc(self.drop(self.f(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`logits` turned into the product's outputs, ``(N, n_out)`` float32: softmax over the
        7 classes, then P(flat) (sigmoid), then any further outputs raw (:class:`FaceNet2`: the
        die's centre offset x, y in crop sides and the log box-side ratio).
        """
        o = self.logits(x)
        return torch.cat([torch.softmax(o[:, :7], dim=1), torch.sigmoid(o[:, 7:8]), o[:, 8:]], dim=1)


class FaceNet2(FaceNet):
    """The face classifier at 48x48: ``(N, 3, 48, 48)`` standardised crops -> ``(N, 11)``:
    softmax over the 7 classes, P(flat), then the die's centre offset from the crop centre
    (x, y, in crop sides) and the log of the die's box side over the window's side / 1.25
    (0 when the window is 1.25 boxes). ~14 M multiply-adds per crop, so that the pips of dark
    or marbled dice keep 3-5 pixels."""

    def __init__(self) -> None:
        super().__init__((16, 32, 64, 64, 96), n_out=11, dropout=0.15)


class FaceNetS(nn.Module):
    """A smaller face classifier with :class:`FaceNet2`'s contract (``(N, 3, 48, 48)``
    standardised crops -> ``(N, 11)``), taught by it (knowledge distillation, Hinton, Vinyals,
    Dean, "Distilling the Knowledge in a Neural Network", 2015; ``vision.train.online
    --arch small --teacher``). The first layer is a 4x4 convolution at stride 2, so no layer
    runs at the crop's full 48x48 (where FaceNet2 spends most of its time: on one core,
    onnxruntime, ~0.17-0.24 ms a crop against 0.44 ms); its 4x4 kernel still sees a 3-5 px
    pip whole before the resolution halves.

    Args:
        widths: channels of the five conv layers (the first at stride 2, pooled after the
            2nd and 4th).
    """

    def __init__(self, widths: tuple[int, int, int, int, int] = (12, 24, 32, 48, 64), dropout: float = 0.1) -> None:
        super().__init__()
        a, b, c, d, e = widths
        self.f = nn.Sequential(
            nn.Conv2d(3, a, 4, 2, 1, bias=False), nn.BatchNorm2d(a), nn.ReLU(inplace=True),
            _cbr(a, b), nn.MaxPool2d(2),
            _cbr(b, c), _cbr(c, d), nn.MaxPool2d(2),
            _cbr(d, e),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(e, 11)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(N, 3, 48, 48)`` float32 crops standardised per crop -> ``(N, 11)`` float32 raw
        outputs: 7 class logits (faces 1..6, "not one readable die"), the flat logit, the centre
        offset x, y (crop sides) and the log box-side ratio.
        """
        return self.fc(self.drop(self.f(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(N, 3, 48, 48)`` standardised crops -> ``(N, 11)`` float32, :class:`FaceNet2`'s contract:
        softmax over the 7 classes, P(flat), then the three geometry outputs raw.
        """
        o = self.logits(x)
        return torch.cat([torch.softmax(o[:, :7], dim=1), torch.sigmoid(o[:, 7:8]), o[:, 8:]], dim=1)


#: Face classifier architectures by name (``vision.train.online --arch``).
FACE_ARCHS = {
    "face2": FaceNet2,
    "small": FaceNetS,
}
