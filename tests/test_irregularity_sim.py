"""Irregularity verdicts on the simulated table (a few seeds per scenario), against the verdict the
profile gives for the simulator's ground truth; and the motion tracker on rendered frames."""
from __future__ import annotations

import json

import numpy as np
import pytest
from bench_module import irregularity_bench

from controller.irregularity_profile import load_profile
from controller.reasons import Reason
from controller.track import ThrowTracker

pytest.importorskip("mujoco")
scenarios = pytest.importorskip("simulator.scenarios")

B = irregularity_bench()

SIMS: dict = {}


PROFILES = ("ny-5324", "nj-13-47", "house-practice")


@pytest.fixture(scope="module")
def bench():
    return B.Bench(load_profile("ny-5324"), "truth")


#: scenario -> the nj-13-47 verdict (kind, reason code). N.J.A.C. 13:47-20.25 does not require the
#: far-wall strike, so the scenario's own irregularity decides there; under ny-5324 and
#: house-practice the forced die usually also missed the far wall (docs/simulator.md), so those
#: are checked against the verdict worked out from the ground truth.
NJ = {
    "natural": ("roll", None),
    "die-on-die": ("boxperson", "die-on-die"),
    "in-dice-cup": ("boxperson", "die-in-dice-cup"),
    "on-rail": ("boxperson", "die-on-rail"),
    "cocked-two-objects": ("no-roll", "die-on-several-objects"),
    "cocked-on-chips": ("boxperson", "die-not-flat"),
    "still-moving": ("no-roll", "not-at-rest"),
}


@pytest.mark.parametrize("scenario, seed", [(s, 0) for s in NJ] + [("natural", 1), ("die-on-die", 1)])
def test_verdict_per_scenario_matches_ground_truth(bench, scenario, seed):
    seen = bench.observe(scenario, seed)
    for name in PROFILES:
        row = bench.decide(seen, load_profile(name))
        assert row["got"] == row["expected"], (name, row)
        if name == "nj-13-47":
            got_reason = None if row["got"][1] is None else row["got"][1].value
            assert (row["got"][0], got_reason) == NJ[scenario], row
        if scenario == "still-moving":
            assert row["got"][:2] == ("no-roll", Reason.NOT_AT_REST)
        if scenario == "natural":
            assert row["got"][0] == "roll" and row["got"][2] == tuple(sorted(s.value for s in seen["throw"].states))


def test_off_table_is_void_in_every_profile(bench):
    """9 NYCRR 5324.52(k)(1): a die that left the table makes the roll invalid, whatever else
    (a missed far wall under ny-5324) the throw did; no profile may read it."""
    seen = bench.observe("off-table", 0)
    assert sorted(s.rests_on for s in seen["throw"].states) == ["felt", "off-table"]
    for name in PROFILES:
        row = bench.decide(seen, load_profile(name))
        want = ("no-roll", Reason.DIE_OFF_TABLE, None)
        assert row["got"] == want and row["expected"] == want, (name, row)


@pytest.mark.parametrize("scenario, seed, profile, want", [
    # a die in the chip bank, the track's end re-read: no roll (k)(2)(iii); the far wall is
    # counted as struck (the forced die was dropped, not thrown)
    ("both-in-bank", 0, "ny-5324", ("no-roll", Reason.DIE_IN_CHIP_BANK)),
    # leaning on the bank's tray: on the bank for house practice too (it read it as seen)
    ("cocked-on-bank-side", 0, "house-practice", ("no-roll", Reason.DIE_IN_CHIP_BANK)),
    # leaning on the rail's wall: the counted face cannot be seen, the boxperson decides
    ("cocked-on-rail-wall", 0, "ny-5324", ("boxperson", Reason.FACE_UNREADABLE)),
    ("flat-on-one-chip", 0, "ny-5324", ("roll", None)),
])
def test_extra_scenarios_judged_where_the_dice_rest(scenario, seed, profile, want):
    """EXTRA_SCENARIOS with the far wall counted as struck (``--far-wall-struck``): the
    resting-place detectors decide, and the bench counts a boxperson call right where the
    face that counts cannot be seen."""
    b = B.Bench(load_profile(profile), "truth", far_wall_struck=True)
    row = b.decide(b.observe(scenario, seed))
    assert row["got"][:2] == want and row["right"], row


def _camera_tracks(seed: int, *, max_frames: int | None = None, t_max: float | None = None,
                   scenario: str = "natural"):
    """Simulate throw ``seed`` of ``scenario`` and track its rendered motion frames (the first
    ``max_frames``, or those up to ``t_max`` s): ``(throw, tracker)``."""
    bench = B.Bench(load_profile("ny-5324"), "camera")
    th = B.simulate(scenario, seed, SIMS, 60.0, keep_poses=True)
    g = th.plan.geometry
    ren = bench.renderer(g)
    cal = B.calibration_for(ren, g)
    tr = ThrowTracker(cal, die_side_px=cal.die_side_px((550.0, 280.0)))
    tr.set_background(ren.background)
    for k in range(len(th.poses) - 1):
        if (max_frames is not None and k >= max_frames) or (t_max is not None and th.times[k] > t_max):
            break
        tr.add(th.times[k], B.render(th, ren, k))
    return th, tr


def test_tracker_follows_both_dice_into_the_far_wall_band():
    """Rendered frames of a natural throw: both tracks reach the far-wall band; a short throw's
    do not."""
    for scenario, reached in (("natural", True), ("short-throw", False)):
        th, tr = _camera_tracks(0, max_frames=40, scenario=scenario)
        g = th.plan.geometry
        tracks = tr.tracks()
        assert all(len(t) > 5 for t in tracks)
        far = [max(p[1] for p in t) for t in tracks]
        assert all(x > g.length - g.far_wall_band for x in far) is reached, (scenario, far)


def test_tracker_rejects_frames_before_background():
    tr = ThrowTracker(None, die_side_px=17.0)
    with pytest.raises(RuntimeError, match="before set_background"):
        tr.add(0.0, np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="die_side_px"):
        ThrowTracker(None, die_side_px=0)


def test_tracker_splits_two_touching_dice_and_corrects_parallax():
    """Two dice (with their sides and shadow: 1.2 sides square each) touching on a 0.5 mm/px
    table: one component of ~2.9 die areas, split in two by 2-means, each point within 1 mm
    of its die's centre; without the split both tracks took the pair's centroid. A point seen
    near the table's edge is moved towards the nadir for the die's half height."""
    from flat_table import flat_table

    g, cal, side_px, bg, frame = flat_table(0.6)
    tr = ThrowTracker(cal, die_side_px=side_px)
    tr.set_background(bg)
    a, b = (700.0, 300.0), (700.0 + 1.2 * g.die_size, 300.0)
    tr.add(0.0, frame([a, b]))
    pts = sorted((p[-1][1], p[-1][2]) for p in tr.tracks())
    assert tr.shared() == [[True], [True]]
    tr.add(0.1, frame([a, (b[0] + 60.0, b[1])]))     # apart again: two components
    assert tr.shared() == [[True, False], [True, False]]
    k = (1800.0 - g.die_size / 2) / 1800.0   # the parallax of a point half a side up
    for (x, y), (tx, ty) in zip(pts, [a, b]):
        want = (550.0 + (tx - 550.0) * k, 280.0 + (ty - 280.0) * k)
        assert abs(x - want[0]) < 1.0 and abs(y - want[1]) < 1.0, (pts, want)



def test_tracker_splits_two_dice_touching_in_a_component_too_small_to_hold_both_by_area():
    """Two dice touching at a wall hide part of their shadows: one component of ~2.2 die areas,
    below ``together_areas``. Both tracks, seen a frame before on either die, are split at it
    as a larger component is; giving both its centroid ended both tracks on one spot between
    the dice (simulated camera, cocked-on-die seed 4294: the pair then taken for one die and a
    die off the table)."""
    from flat_table import flat_table

    g, cal, side_px, bg, frame = flat_table(0.53)
    tr = ThrowTracker(cal, die_side_px=side_px)
    tr.set_background(bg)
    a, b = (550.0, 280.0), (550.0 + 1.06 * g.die_size, 280.0)
    tr.add(0.0, frame([(a[0] - 10.0, a[1]), (b[0] + 10.0, b[1])]))
    tr.add(0.02, frame([a, b]))
    assert tr.shared() == [[False, True], [False, True]]
    ends = sorted((t[-1][1], t[-1][2]) for t in tr.tracks())
    for (x, y), (tx, ty) in zip(ends, [a, b]):
        assert abs(x - tx) < 1.5 and abs(y - ty) < 1.0, ends
    assert ends[1][0] - ends[0][0] > 0.95 * g.die_size


def _owners(th, tr) -> list[list[int]]:
    """Per track, for each of its points not shared by both dice: the index of the physics
    die nearest to it at that frame (a track that stays on its die has one index)."""
    times = {round(t, 6): k for k, t in enumerate(th.times)}
    out = []
    for track, shared in zip(tr.tracks(), tr.shared()):
        owners = []
        for (t, x, y), s in zip(track, shared):
            if not s:
                k = times[round(t, 6)]
                d = [np.hypot(x - th.track[i][k][1], y - th.track[i][k][2]) for i in range(2)]
                owners.append(int(np.argmin(d)))
        out.append(owners)
    return out


def test_tracks_keep_their_die_through_a_bounce_off_the_far_wall():
    """Natural throw 153: one die bounces off the far wall between two frames while the other
    arrives there. Predicted at constant velocity, the first die's next position lay beyond
    the wall, nearer the other die, and the tracks swapped dice (so one track "struck" twice
    and the other never). Mirrored back at the wall, each track stays on its die: every point
    is nearest to the same physics die (points where the dice touched, which both tracks
    share, aside)."""
    th, tr = _camera_tracks(153, t_max=0.35)
    assert any(any(s) for s in tr.shared())
    for owners in _owners(th, tr):
        assert len(set(owners)) == 1, owners


@pytest.mark.parametrize("seed", [6112, 6117])
def test_tracks_keep_their_die_when_one_comes_back_slowly_from_the_far_wall(seed):
    """Natural throws 6112 and 6117: one die strikes the far wall's rubber and comes back
    slowly (it moved 5-20 mm in the next frame) while the other arrives. Its mirror image
    across the wall, taken as its only predicted place, lay 30-60 mm further out, nearer the
    other die, and the tracks swapped dice: one track was at the wall at both pulses, the other
    at neither, and the good throw was called far-wall-missed. Predicted anywhere between the
    wall and the mirror image, each track stays on its die (shared points aside)."""
    th, tr = _camera_tracks(seed, t_max=0.35)
    for owners in _owners(th, tr):
        assert len(set(owners)) == 1, owners


def test_two_dice_against_the_far_wall_are_both_tracked_there():
    """Natural throw 116: both dice strike the far wall 4 ms apart, touching; the wall hides
    part of their shadows and they make one component of ~2.4 die areas (under the 2.5 of two
    dice in the open). Both tracks were predicted next to it, so both take its
    centroid: both have a point within 15 mm of the wall then (before: only one did)."""
    th, tr = _camera_tracks(116, t_max=0.3)
    wall_x = th.plan.geometry.length
    t_hit = max(t for t, _ in th.wall_hits)
    for track in tr.tracks():
        near = [wall_x - x for t, x, _ in track if abs(t - t_hit) < 0.01]
        assert near and min(near) < 15.0, near
    assert any(all(s) for s in zip(*[sh[:20] for sh in tr.shared()]))


def test_camera_die_on_die_is_not_a_die_off_table():
    """Camera mode, one die forced onto the other (seed 500): the reader sees one die and the
    two tracks end on its spot, so the other die is under it, (k)(1), not off the table: no roll
    under 9 NYCRR 5324.52, the boxperson under N.J.A.C. 13:47-20.25, and the boxperson under
    house practice too (it reads a die on a die, but the lower die's face is covered)."""
    b = B.Bench(load_profile("ny-5324"), "camera", far_wall_struck=True)
    seen = b.observe("die-on-die", 500)
    assert len(seen["readings"]) == 1
    want = {"ny-5324": ("no-roll", Reason.DIE_ON_DIE), "nj-13-47": ("boxperson", Reason.DIE_ON_DIE),
            "house-practice": ("boxperson", Reason.FACE_UNREADABLE)}
    for name, got in want.items():
        row = b.decide(seen, load_profile(name))
        assert row["got"][:2] == got and row["right"], (name, row)


def test_bench_decides_each_throw_under_every_profile_given(capsys):
    """``--profile ny-5324,nj-13-47``: one simulated throw of a die dropped on a rail, one table
    per profile. 9 NYCRR 5324.52(k)(2)(iv) makes it a no roll; N.J.A.C. 13:47 is silent, so its
    profile gives the rail to the boxperson."""
    assert B.main(["--mode", "truth", "--far-wall-struck", "--throws", "1", "--natural", "0",
                   "--scenarios", "on-rail", "--profile", "ny-5324,nj-13-47", "--show-wrong", "0"]) == 0
    out = capsys.readouterr().out
    tables = out.split("irregularity bench: profile ")[1:]
    assert [t.split(",")[0] for t in tables] == ["ny-5324", "nj-13-47"]
    rows = [next(line.split() for line in t.splitlines() if line.startswith("on-rail")) for t in tables]
    # scenario, throws, right, right %, no-roll, boxp, roll
    assert [r[1:3] + r[4:7] for r in rows] == [["1", "1", "1", "0", "0"], ["1", "1", "0", "1", "0"]]


def test_bench_scenarios_by_commas_and_unknown_refused_before_any_throw(tmp_path, capsys):
    """``--scenarios on-rail,in-chip-bank`` is two scenarios (it was taken as one name and the
    run stopped at its first throw); an unknown name is refused at once, named, exit status 2,
    nothing written to ``--rows``."""
    assert B.main(["--mode", "truth", "--far-wall-struck", "--throws", "1", "--natural", "0",
                   "--scenarios", "on-rail,in-chip-bank", "--show-wrong", "0"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[:2] for line in out.splitlines() if line.startswith(("on-rail", "in-chip-bank"))] \
        == [["on-rail", "1"], ["in-chip-bank", "1"]]
    rows = tmp_path / "rows.jsonl"
    with pytest.raises(SystemExit) as stop:
        B.main(["--mode", "truth", "--throws", "1", "--natural", "0", "--rows", str(rows),
                "--scenarios", "on-rail", "on-rails"])
    assert stop.value.code == 2
    assert "unknown scenario(s) 'on-rails'" in capsys.readouterr().err
    assert not rows.exists()


def test_bench_writes_every_verdict_as_it_is_made(tmp_path, capsys):
    """``--rows FILE``: one JSON line per throw and profile, reasons by their codes, written
    as the run goes (a run stopped early keeps them)."""
    rows = tmp_path / "rows.jsonl"
    assert B.main(["--mode", "truth", "--far-wall-struck", "--throws", "1", "--natural", "0",
                   "--scenarios", "on-rail", "--profile", "ny-5324,nj-13-47", "--show-wrong", "0",
                   "--rows", str(rows)]) == 0
    capsys.readouterr()
    got = [json.loads(line) for line in rows.read_text().splitlines()]
    assert [(r["scenario"], r["seed"], r["profile"]) for r in got] == [("on-rail", 0, "ny-5324"),
                                                                       ("on-rail", 0, "nj-13-47")]
    assert [r["got"][:2] for r in got] == [["no-roll", "die-on-rail"], ["boxperson", "die-on-rail"]]
    assert [r["right"] for r in got] == [True, True]


def _leaning(lean_deg: float, rests_on: str = "chips"):
    """A die with 1 up turned ``lean_deg`` about its x axis (so 1 and 3 are the faces most
    nearly up), resting on ``rests_on``, and a flat 5 beside it."""
    from simulator.dice import quat_with_face_up
    from simulator.physics import DieState
    h = np.radians(lean_deg) / 2
    q = np.array([np.cos(h), np.sin(h), 0.0, 0.0])
    lean = DieState(np.array([500.0, 300.0, 12.0]), q, 1, lean_deg, False, rests_on,
                    [{"face": 6, "on": "felt"}, {"face": 4, "on": "chips"}])
    flat = DieState(np.array([600.0, 300.0, 9.5]), quat_with_face_up(5), 5, 0.0, True, "felt",
                    [{"face": 2, "on": "felt"}])
    return [lean, flat]


def test_a_lean_near_45_degrees_is_a_dispute_under_every_profile():
    """9 NYCRR 5324.52(h)(1)(ii): the bench counts a boxperson call right for a die whose two
    faces most nearly up are under ``DISPUTE_MARGIN_DEG`` (10) apart, house practice included;
    a lean of 38 degrees (margin 14) is not in dispute there."""
    assert B.face_margin_deg(_leaning(41.7)[0]) == pytest.approx(6.6, abs=0.01)
    assert B.face_margin_deg(_leaning(41.7)[1]) == pytest.approx(90.0, abs=1e-6)
    house = load_profile("house-practice")
    assert B.dispute_is_right(_leaning(41.7), house) is True
    assert B.dispute_is_right(_leaning(38.0), house) is False
    assert B.dispute_is_right(_leaning(41.7, rests_on="rail"), house) is False   # not on the layout


def test_a_lean_just_short_of_the_dispute_line_is_only_shown_near_it():
    """The bench's ``near line`` column: a boxperson call on a lean of 38.5-40 degrees (face
    margin 10-13) still counts wrong, but is counted there; 41.7 (a dispute) and 38.0 (margin
    14) are not near the line."""
    assert B.near_dispute_line(_leaning(39.0)) is True     # margin 12
    assert B.near_dispute_line(_leaning(41.7)) is False    # margin 6.6: in dispute, not near it
    assert B.near_dispute_line(_leaning(38.0)) is False    # margin 14
    assert B.near_dispute_line(_leaning(39.0, rests_on="rail")) is False
    assert B.dispute_is_right(_leaning(39.0), load_profile("house-practice")) is False
