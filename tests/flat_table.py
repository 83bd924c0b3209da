"""A synthetic table for the motion tracker's tests: a 0.5 mm/px top view of the simulated
layout (plain felt), its calibration, and frames with dice drawn as squares."""
from __future__ import annotations

import cv2
import numpy as np

from camera.calibration import Calibration
from simulator.geometry import TableGeometry

#: mm per pixel of the synthetic frames.
MM_PER_PX = 0.5


def flat_table(half_sides: float = 0.6):
    """``(geometry, calibration, die side px, background, frame)`` for the default
    :class:`TableGeometry` seen straight down at :data:`MM_PER_PX` (camera 1800 mm above its
    middle). ``frame(centres_mm)`` is the background (uint8 BGR, felt green) with a red square
    of ``2 * half_sides`` die sides at each ``(x, y)`` mm (a die with its sides and shadow)."""
    g = TableGeometry()
    s = MM_PER_PX
    cal = Calibration.from_homography(np.diag([s, s, 1.0]), g.zones(), camera_height_mm=1800.0,
                                      camera_nadir_mm=(550.0, 280.0))
    side_px = g.die_size / s
    bg = np.zeros((int(g.width / s), int(g.length / s), 3), np.uint8)
    bg[:] = (40, 110, 40)

    def frame(centres_mm):
        img = bg.copy()
        half = half_sides * side_px
        for x, y in centres_mm:
            u, v = x / s, y / s
            cv2.rectangle(img, (int(u - half), int(v - half)), (int(u + half) - 1, int(v + half) - 1),
                          (38, 32, 178), -1)
        return img
    return g, cal, side_px, bg, frame
