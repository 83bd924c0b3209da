"""Measure the dice reader (``vision.reader.read_dice``) on rendered natural throws.

Each natural throw is simulated to rest and rendered once (1280x720 by default, with the
camera's noise and blur); every die that lies flat in view is matched to the reading whose
centre is nearest (within 0.7 of a die side) and counted right, misread (wrong value),
unread (``value is None``) or missed (no reading there).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .geometry import CameraConfig
from .physics import TableSim
from .render import DicePose, Renderer
from .scenarios import plan_throw, run_throw


@dataclass(slots=True)
class Accuracy:
    """Counts of the reader's results on flat rendered dice."""

    right: int = 0
    wrong: int = 0
    unread: int = 0
    missed: int = 0
    failures: list[dict] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Flat dice looked at."""
        return self.right + self.wrong + self.unread + self.missed

    @property
    def rate(self) -> float:
        """Fraction read right (0..1)."""
        return self.right / self.total if self.total else 0.0


def reader_accuracy(throws: int, camera: CameraConfig | None = None, first_seed: int = 0,
                    keep_failures: int = 20) -> Accuracy:
    """Read the flat dice of ``throws`` rendered natural throws; return the counts.

    Raises:
        ModuleNotFoundError: when ``vision.reader`` is not available.
    """
    from vision.reader import read_dice

    acc = Accuracy()
    sim = renderer = None
    for seed in range(first_seed, first_seed + throws):
        plan = plan_throw("natural", seed)
        sim = sim or TableSim(plan.geometry)
        renderer = renderer or Renderer(plan.geometry, camera or CameraConfig(), seed=1)
        out = run_throw(plan, sim)
        image = renderer.render([[DicePose(s.pos_mm, s.quat)] for s in out.states], seed)
        side = renderer.g.die_size / renderer.cam.mm_per_px
        readings = read_dice(image, expected_side_px=side)
        for s in out.states:
            if not s.flat or s.rests_on == "off-table":
                continue
            c = np.array(renderer.die_centre_px(DicePose(s.pos_mm, s.quat)))
            near = sorted(readings, key=lambda d: float(np.hypot(*(np.asarray(d.centre) - c))))
            if not near or np.hypot(*(np.asarray(near[0].centre) - c)) > 0.7 * side:
                acc.missed += 1
                kind = "missed"
            elif near[0].value is None:
                acc.unread += 1
                kind = "unread"
            elif near[0].value != s.value:
                acc.wrong += 1
                kind = "wrong"
            else:
                acc.right += 1
                continue
            if len(acc.failures) < keep_failures:
                acc.failures.append({"seed": seed, "kind": kind, "value": s.value,
                                     "centre_px": [round(float(x), 1) for x in c],
                                     "read": near[0].value if near else None})
    return acc
