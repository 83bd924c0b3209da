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
import vision.tilted as tilted

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


@pytest.mark.parametrize("path", [L.TILT_ONNX, *L.TILT_MORE_ONNX], ids=lambda p: p.name)
def test_tilt_weights_are_shipped_small_and_agree_across_runtimes(path) -> None:
    assert path.is_file()
    assert path.stat().st_size < 300_000
    x = np.random.default_rng(4).standard_normal((3, 3, L.CROP, L.CROP)).astype(np.float32)
    a = L.OnnxNet(path)
    out = a(x)
    assert out.shape == (3, 1)
    assert np.all((out >= 0) & (out <= 1))
    if a.runtime == "onnxruntime":
        np.testing.assert_allclose(out, L.OnnxNet(path, "cv2")(x).reshape(out.shape), atol=1e-4)


def test_tilt_classifier_is_the_mean_of_the_shipped_networks() -> None:
    """P(flat) of the tilt classifier is the mean of dice_tilt.onnx's and
    dice_tilt_stacks.onnx's (checked on inputs where they differ)."""
    frame, side, pairs = _at_rest("cocked-on-chips", 1200)
    r = [r for st, r in pairs if st.rests_on == "chips"][0]
    crop = L.standardise(np.stack([L.crop_tilt(frame, r.centre[0] + dx * side, r.centre[1], 1.2 * r.side_px)
                                   for dx in (0.0, 0.6, 1.2)]))
    each = [L.OnnxNet(p)(crop).reshape(-1) for p in (L.TILT_ONNX, *L.TILT_MORE_ONNX)]
    assert len(each) == 2 and not np.allclose(each[0], each[1], rtol=0.5, atol=0), each
    np.testing.assert_allclose(tilted._tilt_net()(crop).reshape(-1), (each[0] + each[1]) / 2, rtol=1e-4, atol=1e-9)
    assert L.MeanNet([lambda x: np.full((1, 1), 0.2)])(crop)[0, 0] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="at least one"):
        L.MeanNet([])


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
    monkeypatch.setattr(tilted, "_tilt_net", lambda: None)
    from vision.reader import read_dice

    readings = read_dice(frame, expected_side_px=side, method="learned")
    assert readings and all("p_flat_tilt" not in r.extra for r in readings)
    assert L.p_flat_tilt(frame, [(100.0, 100.0, 1.2 * side, 1.0)]) is None
    assert sorted(r.extra["p_flat"] for r in readings) == sorted(r.extra["p_flat"] for _, r in pairs)
