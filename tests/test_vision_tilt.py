"""The tilt classifier, the reader's second opinion on flatness (vision.learned.p_flat_tilt,
``DieReading.extra["p_flat_tilt"]``; the controller uses it beside objects).

A die cocked about 25 degrees on the edge of a 2-chip stack was called flat by the face
classifier's P(flat) output; the tilt classifier calls it not flat. Rendered throws of the
simulator (seeds never trained on: the tilt classifier's renders are seeds 30000-34399)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from bench_module import irregularity_bench

import vision.learned as L

pytest.importorskip("mujoco")
pytest.importorskip("simulator.scenarios")

B = irregularity_bench()


def _at_rest(scenario: str, seed: int):
    """(frame at rest, calibrated die side px, [(truth state, reading nearest it)])."""
    from simulator.render import DicePose
    from vision.reader import read_dice

    th = B.simulate(scenario, seed, {}, 60.0, keep_poses=True)
    g = th.plan.geometry
    ren = B.Bench(None, "camera").renderer(g)
    cal = B.calibration_for(ren, g)
    side = cal.die_side_px((g.length / 2, g.width / 2))
    frame = B.render(th, ren, -1)
    readings = read_dice(frame, expected_side_px=side, method="learned")
    pairs = []
    for st in th.states:
        cx, cy = ren.die_centre_px(DicePose(st.pos_mm, st.quat))
        near = min(readings, key=lambda r: math.hypot(r.centre[0] - cx, r.centre[1] - cy))
        assert math.hypot(near.centre[0] - cx, near.centre[1] - cy) < side, (scenario, seed, st)
        pairs.append((st, near))
    return frame, side, pairs


def test_tilt_weights_are_shipped_small_and_agree_across_runtimes() -> None:
    assert L.TILT_ONNX.is_file()
    assert L.TILT_ONNX.stat().st_size < 300_000
    x = np.random.default_rng(4).standard_normal((3, 3, L.CROP, L.CROP)).astype(np.float32)
    a = L.OnnxNet(L.TILT_ONNX)
    out = a(x)
    assert out.shape == (3, 1)
    assert np.all((out >= 0) & (out <= 1))
    if a.runtime == "onnxruntime":
        np.testing.assert_allclose(out, L.OnnxNet(L.TILT_ONNX, "cv2")(x).reshape(out.shape), atol=1e-4)


@pytest.mark.parametrize("seed", [1200, 1208])
def test_die_cocked_on_a_chip_stack_edge_is_not_flat_to_the_tilt_classifier(seed: int) -> None:
    """cocked-on-chips seeds 1200 and 1208: the face classifier called the cocked die flat
    (nj-13-47 published the throw as a valid roll); the tilt classifier calls it not flat, and
    the flat die on the felt flat."""
    _, _, pairs = _at_rest("cocked-on-chips", seed)
    cocked = [(st, r) for st, r in pairs if st.rests_on == "chips"]
    assert len(cocked) == 1 and not cocked[0][0].flat
    r = cocked[0][1]
    assert r.flat is True and r.extra["p_flat"] >= 0.5      # the face classifier's: flat
    assert r.extra["p_flat_tilt"] < 0.5
    flat = [r for st, r in pairs if st.rests_on == "felt"]
    assert len(flat) == 1 and flat[0].flat is True and flat[0].extra["p_flat_tilt"] >= 0.85


def test_without_tilt_weights_the_readings_carry_no_second_opinion(monkeypatch) -> None:
    frame, side, pairs = _at_rest("cocked-on-chips", 1200)
    monkeypatch.setattr(L, "_tilt_net", lambda: None)
    from vision.reader import read_dice

    readings = read_dice(frame, expected_side_px=side, method="learned")
    assert readings and all("p_flat_tilt" not in r.extra for r in readings)
    assert L.p_flat_tilt(frame, [(100.0, 100.0, 1.2 * side, 1.0)]) is None
    assert sorted(r.extra["p_flat"] for r in readings) == sorted(r.extra["p_flat"] for _, r in pairs)
