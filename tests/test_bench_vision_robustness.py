"""bench/vision_robustness.py: every geometric transform moves the labels with the pixels (a
label box that missed its die would count a right read as a miss)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import vision_robustness as VR  # noqa: E402
from vision.evaluate import Label  # noqa: E402


@pytest.mark.parametrize("name", sorted(VR.TRANSFORMS))
def test_the_label_box_stays_on_its_die(name: str) -> None:
    img = np.full((120, 160, 3), 90, np.uint8)
    img[20:50, 100:130] = 250                         # a bright "die" at x 100..130, y 20..50
    out, labels = VR.TRANSFORMS[name](img, [Label(4, (100.0, 20.0, 130.0, 50.0))])
    (lb,) = labels
    assert lb.value == 4
    x0, y0, x1, y1 = (int(round(v)) for v in lb.box)
    level = np.asarray(out, float)
    level = level.mean(axis=2) if level.ndim == 3 else level
    inner = level[y0 + 2:y1 - 2, x0 + 2:x1 - 2]
    # scaled, turned and framed copies keep the die under its box (dark, grey, blur, bright,
    # invert change levels): the box holds the pixels farthest from the table's level
    table = float(np.median(level))
    far = float(np.abs(level - table).max())
    assert abs(inner.mean() - table) > 0.8 * far, name
