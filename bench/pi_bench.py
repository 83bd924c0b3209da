"""Costs of the Raspberry Pi edges per frame: frame digest (frozen-camera check), pixel -> mm
mapping and zone test, health check, metrics update, JSON log line, marker detection.

    .venv/bin/python bench/pi_bench.py [--frames 300]

Prints figures; asserts nothing. Run it on the Pi to size the frame budget (16.7 ms at 60 fps).
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from camera.calibration import Calibration, calibrate, load_layout, map_points, marker_corners_mm  # noqa: E402
from controller.health import HealthConfig, HealthMonitor, frame_digest  # noqa: E402
from controller.jsonlog import JsonFormatter  # noqa: E402
from controller.metrics import TableMetrics  # noqa: E402


def per_call_us(fn, n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def synthetic_table(layout) -> np.ndarray:
    """1280x720 view of the felt with the layout's markers at 1 px/mm (no perspective)."""
    img = np.full((720, 1280, 3), (40, 110, 45), np.uint8)
    d = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)
    mm_to_px = np.array([[1.0, 0, 90], [0, -1.0, 640], [0, 0, 1]])
    for m in layout.markers:
        c = map_points(mm_to_px, marker_corners_mm(m, layout.marker_size_mm))
        x0, y0 = c.min(axis=0).round().astype(int)
        side = int(round(m.size_mm or layout.marker_size_mm))
        q = side // 6
        img[y0 - q:y0 + side + q, x0 - q:x0 + side + q] = 255
        img[y0:y0 + side, x0:x0 + side] = cv2.cvtColor(cv2.aruco.generateImageMarker(d, m.id, side),
                                                       cv2.COLOR_GRAY2BGR)
    return img


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300)
    n = ap.parse_args().frames
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    print(f"frame_digest 1280x720x3      {per_call_us(lambda: frame_digest(frame), n) / 1000:8.3f} ms "
          f"(every row: {per_call_us(lambda: frame_digest(frame, row_step=1), n // 4 or 1) / 1000:.3f} ms)")

    cf = load_layout(ROOT / "config" / "calibration.example.toml")
    image = synthetic_table(cf.layout)
    t = time.perf_counter()
    res = calibrate(image, cf.layout, cf.zones)
    print(f"calibrate (detect + fit)     {(time.perf_counter() - t) * 1000:8.1f} ms   "
          f"corner error mean {res.record.error_mm_mean:.3f} mm, max {res.record.error_mm_max:.3f} mm")
    cal: Calibration = res.calibration
    pts = np.array([[640.0, 360.0], [700.0, 300.0]])
    print(f"to_mm 2 dice                 {per_call_us(lambda: cal.to_mm(pts), n * 10):8.1f} us")
    print(f"zone_of 1 point              {per_call_us(lambda: cal.zone_of((550.0, 280.0)), n * 10):8.1f} us")
    print(f"die_side_px 1 point          {per_call_us(lambda: cal.die_side_px((550.0, 280.0)), n * 10):8.1f} us")

    from camera.lens import Lens
    lens = Lens(np.array([[1000.0, 0, 640], [0, 1000.0, 360], [0, 0, 1]]), np.array([-0.28, 0.09, 0, 0, 0.0]),
                (1280, 720))
    cal_lens = Calibration(cal.homography, cal.zones, lens=lens)
    print(f"to_mm 2 dice, lens model     {per_call_us(lambda: cal_lens.to_mm(pts), n * 10):8.1f} us")
    print(f"die_side_px, lens model      {per_call_us(lambda: cal_lens.die_side_px((550.0, 280.0)), n * 10):8.1f} us")

    h = HealthMonitor(HealthConfig())
    clock = [0.0]

    def tick():
        clock[0] += 1 / 60
        h.frame(clock[0], b"%d" % int(clock[0] * 60))
        h.bridge(clock[0], True)
        h.bus(clock[0], True)
        h.check(clock[0])

    print(f"health frame+links+check     {per_call_us(tick, n * 10):8.1f} us")
    m = TableMetrics()
    clock2 = [0.0]

    def metrics():
        clock2[0] += 1 / 60
        m.frame(clock2[0])
        m.read_ms(8.0)

    print(f"metrics frame+read_ms        {per_call_us(metrics, n * 10):8.1f} us")
    fmt = JsonFormatter()
    rec = logging.LogRecord("craps_table", logging.INFO, __file__, 1, "roll %s", ("r-1",), None)
    rec.dice = [3, 4]
    rec.verdict = "roll"
    print(f"JSON log line                {per_call_us(lambda: fmt.format(rec), n * 10):8.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
