"""SimSource (camera.base.FrameSource), the renderer's images and truth, and craps-table sim."""
from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from camera.base import Frame, FrameSource
from simulator import cli
from simulator.geometry import CameraConfig, TableGeometry
from simulator.render import Camera
from simulator.source import SimSource


@pytest.fixture(scope="module")
def one_throw():
    src = SimSource("natural", 4, width=640, height=360, fps=30, throws=1)
    frames = list(src.frames())
    return src, frames


def test_simsource_is_a_frame_source(one_throw):
    src, frames = one_throw
    assert isinstance(src, FrameSource)
    assert all(isinstance(f, Frame) for f in frames)
    assert [f.index for f in frames] == list(range(len(frames)))
    f = frames[0]
    assert f.image.dtype == np.uint8 and f.image.shape == (360, 640, 3)
    assert f.source == "sim:natural:4"
    assert f.t == 0.0 and frames[1].t == pytest.approx(1 / 30, abs=1e-5)


def test_phases_run_idle_motion_rest(one_throw):
    _, frames = one_throw
    phases = [f.truth["phase"] for f in frames]
    first_motion, first_rest = phases.index("motion"), phases.index("rest")
    assert set(phases[:first_motion]) == {"idle"} and first_motion == 15       # 0.5 s at 30 fps
    assert set(phases[first_motion:first_rest]) == {"motion"}
    assert set(phases[first_rest:]) == {"rest"} and len(phases) - first_rest == 30   # 1 s
    assert all(f.truth["dice"] == [] for f in frames[:first_motion])
    rest = frames[-1].truth
    assert len(rest["dice"]) == 2
    for d in rest["dice"]:
        assert d["value"] in range(1, 7)
        assert set(d) >= {"value", "pose", "rests_on", "flat", "struck_far_wall", "centre_px", "centre_mm", "sides"}
    # the still image does not change during rest except for sensor noise
    a, b = frames[-1].image.astype(int), frames[-10].image.astype(int)
    assert np.abs(a - b).mean() < 4


def test_dice_are_drawn_where_the_truth_says(one_throw):
    src, frames = one_throw
    f = frames[-1]
    bg = src._base.background.astype(int)
    for d in f.truth["dice"]:
        u, v = (int(round(c)) for c in d["centre_px"])
        # the die (red) differs from the empty table at its centre
        assert np.abs(f.image[v, u].astype(int) - bg[v, u]).sum() > 60
        # homography: pixel -> felt mm, within the parallax of the 19 mm high upper face
        x, y, w = src.homography @ np.array([u, v, 1.0])
        assert np.hypot(x / w - d["centre_mm"][0], y / w - d["centre_mm"][1]) < 12.0


def test_homography_inverts_the_projection():
    g = TableGeometry()
    cam = Camera(g, CameraConfig())
    pts = np.array([[0.0, 0.0, 0.0], [g.length, g.width, 0.0], [300.0, 120.0, 0.0]])
    px = cam.project(pts)
    back = (cam.homography @ np.column_stack([px, np.ones(3)]).T).T
    assert np.allclose(back[:, :2] / back[:, 2:], pts[:, :2], atol=1e-6)
    # the whole table with its rails is in view
    R = g.rail_width
    corners = cam.project(np.array([[-R, -R, g.wall_height], [g.length + R, g.width + R, g.wall_height]]))
    assert (corners >= 0).all() and (corners[:, 0] <= 1280).all() and (corners[:, 1] <= 720).all()


def test_zones_and_bad_arguments():
    src = SimSource("in-dice-cup", 1, width=320, height=180, throws=0)
    assert set(src.table_zones) == {"playing", "far_wall_band", "chip_bank", "dice_cup", "rails"}
    assert src.homography.shape == (3, 3) and src.homography.dtype == np.float64
    assert list(src.frames()) == []
    with pytest.raises(ValueError, match="unknown scenario"):
        SimSource("wobbly")
    with pytest.raises(ValueError):
        SimSource(width=10)


def test_close_stops_the_frames():
    src = SimSource("natural", 1, width=320, height=180, fps=30)
    it = src.frames()
    for _ in range(3):
        next(it)
    src.close()
    src.close()
    assert list(it) == []


def _args(tmp_path, **kw):
    ns = argparse.ArgumentParser()
    cli.add_arguments("sim", ns)
    argv = ["--out", str(tmp_path / "out"), "--width", "320", "--height", "180", "--fps", "20"]
    for k, v in kw.items():
        argv += [f"--{k}", str(v)]
    return ns.parse_args(argv)


def test_cli_writes_frames_and_truth(tmp_path, capsys):
    rc = cli.run("sim", _args(tmp_path, scenario="on-rail", seed=3, every=5))
    assert rc == 0
    out = tmp_path / "out"
    doc = json.loads((out / "truth.json").read_text())
    assert doc["scenario"] == "on-rail" and doc["seed"] == 3
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs and pngs == sorted(f["file"] for f in doc["frames"] if "file" in f)
    assert len(doc["frames"]) > len(pngs)                  # truth for every frame
    assert "on-rail" in doc["throws"][0]["irregularities"]
    assert any(d["rests_on"] == "rail" for d in doc["throws"][0]["dice"])
    assert "on-rail" in capsys.readouterr().out


def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path):
    assert cli.run("sim", _args(tmp_path, scenario="nope")) == 2
    assert not (tmp_path / "out").exists()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    assert cli.run("sim", _args(tmp_path)) == 2
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_mm_to_px_is_the_inverse_homography():
    src = SimSource(width=640, height=360, throws=0)
    m = src.homography_mm_to_px @ src.homography
    assert np.allclose(m / m[2, 2], np.eye(3))
    u, v, w = src.homography_mm_to_px @ np.array([src.geometry.length, 0.0, 1.0])
    assert 0 < u / w < 640 and 0 < v / w < 360


def test_still_moving_throw_moves_past_its_timeout():
    src = SimSource("still-moving", 2, width=320, height=180, fps=30, throws=1, timeout_s=1.0,
                    idle_s=0.0, rest_s=0.2)
    frames = list(src.frames())
    late = [f for f in frames if f.truth["phase"] == "motion" and f.truth["throw_t"] > 1.2]
    assert late and all(any(d["moving"] for d in f.truth["dice"]) for f in late[:10])
    rest = [f for f in frames if f.truth["phase"] == "rest"]
    assert rest and "still-moving" in rest[-1].truth["irregularities"]


def test_scenario_stacks_are_in_the_truth():
    src = SimSource("cocked-on-chips", 1, width=320, height=180, fps=20, throws=1, idle_s=0.0, rest_s=0.1)
    f = list(src.frames())[-1]
    assert len(f.truth["stacks"]) == 1 and f.truth["stacks"][0]["height_mm"] == pytest.approx(6.6)
    assert len(src.chip_stacks) == len(src.geometry.stacks)
    assert "cocked-on-chips" in f.truth["irregularities"]


@pytest.mark.parametrize("value", [1, 2, 3, 4, 5, 6])
def test_rendered_flat_die_shows_its_number_of_pips(value):
    import cv2

    from simulator.dice import quat_with_face_up
    from simulator.render import DicePose, Renderer

    g = TableGeometry(stacks=())
    r = Renderer(g, CameraConfig(width=1920, height=1080, noise_sigma=0, blur_sigma=0, layout_lines=False))
    pose = DicePose(np.array([g.length / 2, g.width / 2 - 60, g.die_size / 2]), quat_with_face_up(value, 0.4))
    img = r.render([[pose]])
    x0, y0, x1, y1 = r.die_bbox_px(pose)
    face = img[y0:y1, x0:x1]
    # pips are near-white on the red die
    white = ((face.min(axis=2) > 170)).astype(np.uint8)
    n, _, stats, _ = cv2.connectedComponentsWithStats(white)
    blobs = [s for s in stats[1:] if s[4] >= 3]
    assert len(blobs) == value
    # the table is seen from above, not mirrored: +y (stickperson's side) is up in the image
    u0, v0 = r.cam.project(np.array([[100.0, 100.0, 0.0]]))[0]
    u1, v1 = r.cam.project(np.array([[200.0, 300.0, 0.0]]))[0]
    assert u1 > u0 and v1 < v0


def test_simulated_wall_sensor_rings_at_every_far_wall_contact():
    """``on_wall_strike``: at least one strike per die that struck the far wall (the final
    truth's ``struck_far_wall``; a die's rattle and later strikes ring too), timed on the frame
    clock inside the throw's motion frames."""
    src = SimSource("natural", 4, width=320, height=180, fps=30, throws=2)
    strikes: list[float] = []
    src.on_wall_strike(strikes.append)
    seen = []                                        # (strikes so far, frame) per frame
    for f in src.frames():
        seen.append((len(strikes), f))
    for k in range(2):
        frames = [(n, f) for n, f in seen if f.truth["throw"] == k]
        motion = [f.t for n, f in frames if f.truth["phase"] == "motion"]
        mine = [t for t in strikes if motion[0] - 1 / 30 <= t <= motion[-1]]
        struck = sum(d["struck_far_wall"] for d in frames[-1][1].truth["dice"])
        assert struck >= 1 and len(mine) >= struck
        # each strike was given before the frame at whose time it had happened
        for t in mine:
            first_after = next(n for n, f in frames if f.t >= t)
            assert first_after > strikes.index(t)
    assert len(strikes) == len(set(strikes)) and strikes == sorted(strikes)
