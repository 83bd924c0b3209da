"""controller.dice_cup on the simulated camera: the spares in the cup, a die landing among them,
a die leaning on the cup's outside (9 NYCRR 5324.52(a)(5), (k)(2)(iv))."""
from __future__ import annotations

import numpy as np
import pytest

from camera.calibration import Calibration
from controller.dice_cup import cup_box, cup_changed, read_cup, spares_and_change
from vision.types import DieReading

pytest.importorskip("mujoco")
from simulator.geometry import CameraConfig, TableGeometry, default_spares  # noqa: E402
from simulator.render import DicePose, Renderer  # noqa: E402
from simulator.scenarios import plan_throw, run_throw  # noqa: E402


def _table(scenario: str, seed: int, spares: int = 3):
    plan = plan_throw(scenario, seed, geometry=TableGeometry(spare_dice=default_spares(spares)))
    out = run_throw(plan)
    ren = Renderer(plan.geometry, CameraConfig(), seed=0)
    cal = Calibration.from_homography(ren.cam.homography, plan.geometry.zones(), camera_height_mm=ren.c.height_mm)
    at_rest = ren.render([[DicePose(s.pos_mm, s.quat)] for s in out.states], frame_index=5)
    return out, ren, cal, ren.render([], frame_index=0), at_rest


def test_the_cup_is_unchanged_by_a_throw_that_does_not_land_in_it():
    """Three spares, another noise pattern, the dice thrown elsewhere (one off the table): the cup
    is as it was, so the dice there at rest are the spares and the frame before is not read."""
    out, ren, cal, before, at_rest = _table("off-table", 3)
    assert {s.rests_on for s in out.states} == {"felt", "off-table"}
    assert cup_changed(before, at_rest, cal) is False
    u, v = cal.to_px([TableGeometry().cup_centre])[0]
    rest = [DieReading(value=4, bbox=(0, 0, 1, 1), centre=(float(u), float(v)), confidence=1.0, flat=True, side_px=19.0),
            DieReading(value=2, bbox=(0, 0, 1, 1), centre=(1.0, 1.0), confidence=1.0, flat=True, side_px=19.0)]
    spares, changed = spares_and_change(lambda image: pytest.fail("read"), cal, before, at_rest, rest)
    assert (spares, changed) == (rest[:1], False)   # the die far from the cup is no spare


def test_a_die_dropped_into_the_cup_changes_it_and_the_spares_are_read_before():
    out, ren, cal, before, at_rest = _table("in-dice-cup", 3)
    assert "cup" in {s.rests_on for s in out.states}
    assert cup_changed(before, at_rest, cal) is True
    from vision.reader import read_dice

    side = 19.05 / ren.cam.mm_per_px
    rest = read_dice(at_rest, expected_side_px=side)   # the dice at rest, the one in the cup among them
    spares, changed = spares_and_change(lambda image: read_dice(image, expected_side_px=side), cal,
                                        before, at_rest, rest)
    assert changed is True and sorted(r.value for r in spares) == sorted(d.face for d in default_spares(3))
    x0, y0, x1, y1 = cup_box(cal, before.shape)
    assert all(x0 <= r.centre[0] < x1 and y0 <= r.centre[1] < y1 for r in spares)
    assert read_cup(lambda image: [], before, cal) == []
    # no die at rest near the cup: nothing to tell apart, neither frame compared nor read
    far = [r for r in rest if not (x0 - 50 <= r.centre[0] < x1 + 50 and y0 - 50 <= r.centre[1] < y1 + 50)]
    assert len(far) == 1   # the other die, thrown down the table
    assert spares_and_change(lambda image: pytest.fail("read"), cal, before, at_rest, far) == ([], None)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_die_leaning_on_the_cups_outside_does_not_change_its_interior(seed):
    out, ren, cal, before, at_rest = _table("cocked-on-cup", seed)
    assert "cup" not in {s.rests_on for s in out.states}
    assert cup_changed(before, at_rest, cal) is False


def test_no_cup_zone_or_frames_of_other_shapes_cannot_tell():
    g = TableGeometry()
    zones = {k: v for k, v in g.zones().items() if k != "dice_cup"}
    cal = Calibration.from_homography(np.eye(3), zones)
    img = np.zeros((600, 1200, 3), np.uint8)
    assert cup_changed(img, img, cal) is None and cup_box(cal, img.shape) is None
    full = Calibration.from_homography(np.eye(3), g.zones())
    assert cup_changed(img, img[:, :-1], full) is None
