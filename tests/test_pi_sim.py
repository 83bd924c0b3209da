"""The Pi parts against the simulated table (simulator.source.SimSource): calibration places dice
where the simulator's ground truth says they are; the health monitor stays calm on live
simulated frames and trips on a frozen or stalled feed."""
from __future__ import annotations

import pytest

sim_source = pytest.importorskip("simulator.source", reason="the simulator is not in this build")

from camera.base import Frame  # noqa: E402
from camera.calibration import Calibration  # noqa: E402
from camera.pump import FramePump  # noqa: E402
from controller.health import HealthConfig, HealthMonitor, frame_digest, frame_level  # noqa: E402
from simulator.geometry import CHIP_THICKNESS_MM  # noqa: E402

W, H = 640, 360

#: simulator "rests_on" -> the zone the controller must find
ZONE_OF = {"felt": {"playing", "far_wall_band"}, "bank": {"chip_bank"}, "cup": {"dice_cup"},
           "rail": {"rails"}, "off-table": {None}}


def _calibration(src) -> Calibration:
    g = src.geometry
    return Calibration.from_homography(
        src.homography, src.table_zones, camera_height_mm=src.camera_config.height_mm, image_size=(W, H),
        die_size_mm=g.die_size, zone_heights_mm={"rails": g.wall_height, "chip_bank": g.bank_chips * CHIP_THICKNESS_MM})


def _rest_frame(scenario: str, seed: int) -> tuple[Frame, Calibration]:
    src = sim_source.SimSource(scenario, seed=seed, width=W, height=H, fps=30, throws=1, rest_s=0.3)
    last = None
    try:
        for f in src.frames():
            if f.truth and f.truth["phase"] == "rest":
                last = f
    finally:
        src.close()
    assert last is not None, f"{scenario}: no frame at rest"
    # the scenario may change the table (a taller rail): zones and heights from its geometry
    return last, _calibration(src)


#: scenario -> where its two dice rest (the forced die where the scenario puts it, the other on
#: the felt): every one of them is checked, so the forced die's zone is never skipped
RESTS_ON = {"natural": ["felt", "felt"], "in-chip-bank": ["bank", "felt"], "in-dice-cup": ["cup", "felt"],
            "on-rail": ["felt", "rail"]}


@pytest.mark.parametrize("scenario, seed", [("natural", 3), ("in-chip-bank", 3), ("in-dice-cup", 3),
                                            ("on-rail", 3), ("natural", 11)])
def test_dice_placed_in_table_mm_and_zones_match_the_simulator(scenario, seed):
    frame, cal = _rest_frame(scenario, seed)
    checked = []
    for d in frame.truth["dice"]:
        if d["rests_on"] not in ZONE_OF or not d.get("flat", True):
            continue
        u, v = d["centre_px"]
        if not (0 <= u < W and 0 <= v < H):
            continue  # not in view (off the table)
        place = cal.place((u, v))
        assert place.zone in ZONE_OF[d["rests_on"]], (scenario, d["rests_on"], place)
        if d["rests_on"] == "felt":
            # the top face is seen ~19 mm up: parallax-corrected to the footprint
            assert place.mm == pytest.approx(tuple(d["centre_mm"]), abs=1.5), d
            raw = cal.to_mm([(u, v)])[0]
            assert abs(place.mm[0] - d["centre_mm"][0]) <= abs(raw[0] - d["centre_mm"][0]) + 0.05
            # expected size vs the simulator's felt-level size: the top face is 1 % larger
            sim_side = cal.die_size_mm / (cal.homography[0, 0] ** 2 + cal.homography[1, 0] ** 2) ** 0.5
            d_mm = cal.camera_height_mm
            assert place.expected_side_px == pytest.approx(sim_side * d_mm / (d_mm - cal.die_size_mm), rel=0.02)
        checked.append(d["rests_on"])
    assert sorted(checked) == RESTS_ON[scenario], (scenario, frame.truth["dice"])


def test_health_is_calm_on_live_simulated_frames_and_trips_on_a_frozen_feed():
    src = sim_source.SimSource("natural", seed=5, width=W, height=H, fps=30, throws=1, rest_s=0.3)
    h = HealthMonitor(HealthConfig(require_bridge=False, require_bus=False))
    pump = FramePump(src)
    last = None
    faults = set()
    for f in pump.items(5.0):
        if f is None:
            continue
        h.frame(f.t, frame_digest(f.image), frame_level(f.image))  # table time as the clock
        faults.update(h.check(f.t).reasons)
        last = f
    pump.close()
    # the simulated camera has sensor noise: no two frames alike, and the felt is lit
    assert faults <= {"camera-no-frame"}
    assert not h.check(last.t).safe_state
    # the pipeline freezes: the same frame keeps coming at 30 fps
    t = last.t
    for i in range(30):
        t += 1 / 30
        h.frame(t, frame_digest(last.image), frame_level(last.image))
        st = h.check(t)
        if st.safe_state:
            break
    assert st.reasons == ("camera-frozen",)
    assert t - last.t <= 0.6
    # then nothing comes at all
    st = h.check(t + 0.6)
    assert "camera-lost" in st.reasons
