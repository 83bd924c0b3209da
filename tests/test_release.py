"""9 NYCRR 5324.52(k)(2)(i) "the dice do not leave the shooter's hand simultaneously" seen by
the camera (controller/release.py): a die entering the view well after the other, away from it,
in the shooter's half, goes to the boxperson with ``dice-not-simultaneous`` in every profile;
dice seen together, or one re-emerging beside the other, do not."""
from __future__ import annotations

import tomllib

import numpy as np
import pytest

from camera.calibration import Calibration
from controller import far_wall
from controller.irregularity import Tolerances, judge
from controller.irregularity_profile import PROFILE_DIR, SHIPPED, ProfileError, load_profile, parse_profile
from controller.policy import Action
from controller.reasons import Reason
from controller.release import late_entry
from controller.track import ThrowTracker
from simulator.geometry import TableGeometry
from vision.types import DieReading

GEOM = TableGeometry()
H = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # 1 px = 1 mm
CAL = Calibration.from_homography(H, GEOM.zones(), camera_height_mm=1800.0)
WALL = far_wall.wall_of(np.array(GEOM.zones()["far_wall_band"]), np.array(GEOM.zones()["playing"]))


def flight(t0: float, x0: float, y: float, n: int = 40, v: float = 4000.0, dt: float = 1 / 60):
    """A die seen from ``t0`` at ``(x0, y)`` moving along x at ``v`` mm/s (stopping 12 mm
    short of the far wall)."""
    return [(t0 + k * dt, min(x0 + v * k * dt, GEOM.length - 12.0), y) for k in range(n)]


def test_late_entry_gives_times_and_places():
    early, late = flight(0.016, 120.0, 250.0), flight(0.316, 110.0, 282.0)
    ev = late_entry([late, early], min_gap_s=0.1, min_apart_mm=76.2, far_wall=WALL, table_depth_mm=GEOM.length)
    assert ev is not None
    assert (ev.first_s, ev.second_s) == (0.016, 0.316)
    assert ev.gap_s == pytest.approx(0.3)
    assert ev.second_at_mm == (110.0, 282.0)
    # the first die at 0.316 s: its point at 0.316 (k = 18: 120 + 4000 * 0.3 = 1320, stopped at 1088)
    assert ev.first_at_mm == (GEOM.length - 12.0, 250.0)
    assert ev.apart_mm == pytest.approx(np.hypot(GEOM.length - 12.0 - 110.0, 32.0))
    note = ev.note()
    assert "0.016 s" in note and "0.316 s" in note and "0.300 s later" in note and "(k)(2)(i)" in note


@pytest.mark.parametrize("case", ["together", "short gap", "beside the other", "far half", "not thrown",
                                  "one track", "none"])
def test_no_late_entry(case):
    early = flight(0.016, 120.0, 250.0)
    tracks = {
        "together": [early, flight(0.016, 122.0, 282.0)],
        # one frame short of the threshold: a die hidden for 5 frames
        "short gap": [early, flight(0.016 + 5 / 60, 450.0, 282.0)],
        # hidden by the other die 0.3 s, showing again beside it
        "beside the other": [early, flight(0.316, GEOM.length - 12.0, 280.0)],
        # something showing late beyond the middle of the table, away from the shooter's hand
        "far half": [flight(0.016, 120.0, 250.0, n=10), flight(0.316, 700.0, 282.0)],
        # not thrown: a die falling off the shooter's end rail onto the felt 0.3 s in, moving
        # 40 mm in its first 0.1 s (thrown dice make 350 mm and more)
        "not thrown": [early, [(0.316 + k / 60, 12.0 + 6.0 * k, 282.0) for k in range(12)]],
        "one track": [early, []],
        "none": None,
    }[case]
    assert late_entry(tracks, min_gap_s=0.1, min_apart_mm=76.2, far_wall=WALL,
                      table_depth_mm=GEOM.length) is None


def test_late_entry_refuses_bad_thresholds():
    with pytest.raises(ValueError, match="min_gap_s"):
        late_entry([], min_gap_s=0.0, min_apart_mm=10.0)
    with pytest.raises(ValueError, match="min_apart_mm"):
        late_entry([], min_gap_s=0.1, min_apart_mm=-1.0)


def test_tracker_starts_the_late_die_where_it_first_shows():
    """A lone die in the first frames starts one track only (it used to start both, so the late
    die showed as the second track jumping, not as a late start); the other starts when a
    second component shows."""
    from flat_table import flat_table

    _, cal, side_px, bg, frame = flat_table(0.6)

    tr = ThrowTracker(cal, die_side_px=side_px)
    tr.set_background(bg)
    for k in range(12):
        t = (k + 1) / 60
        dice = [(150.0 + 60.0 * k, 250.0)] + ([(140.0 + 60.0 * (k - 9), 300.0)] if k >= 9 else [])
        tr.add(t, frame(dice))
    tracks = tr.tracks()
    # both tracks start at the lone die (a die on the other stays one component: both tracks
    # must end there), the copy flagged; the late die's own points start at 10/60 s
    assert [len(t) for t in tracks] == [12, 4]
    assert tr.copied() == [[False] * 12, [True, False, False, False]]
    assert tracks[1][0][:3] == tracks[0][0][:3]
    assert tracks[0][0][0] == pytest.approx(1 / 60) and tracks[1][1][0] == pytest.approx(10 / 60)
    assert tracks[1][1][1] == pytest.approx(140.0, abs=3.0) and tracks[1][1][2] == pytest.approx(300.0, abs=3.0)
    assert tracks[0][-1][1] == pytest.approx(150.0 + 60.0 * 11, abs=12.0)
    ev = late_entry(tracks, min_gap_s=0.1, min_apart_mm=76.2, far_wall=WALL, table_depth_mm=GEOM.length,
                    copied=tr.copied())
    assert ev is not None and (ev.first_s, ev.second_s) == (pytest.approx(1 / 60), pytest.approx(10 / 60))
    # without the flags the copy counts as the late die's own point: no late entry
    assert late_entry(tracks, min_gap_s=0.1, min_apart_mm=76.2, far_wall=WALL, table_depth_mm=GEOM.length) is None


def die(x_mm: float, y_mm: float, value: int) -> DieReading:
    return DieReading(value=value, bbox=(int(x_mm - 10), int(y_mm - 10), int(x_mm + 10), int(y_mm + 10)),
                      centre=(x_mm, y_mm), confidence=0.97, flat=True, side_px=19.3)


#: a clean throw: both dice at rest on the felt, both tracks reaching the far wall
DICE = [die(900.0, 250.0, 3), die(950.0, 320.0, 4)]


def _own(tracks):
    return [[False] * len(t) for t in tracks]


def _judge(tracks, profile="ny-5324", tol=Tolerances(), copied=True):
    return judge(DICE, calibration=CAL, profile=load_profile(profile), track=tracks, tolerances=tol,
                 track_copied=_own(tracks) if copied else None)


@pytest.mark.parametrize("name", SHIPPED)
def test_late_die_goes_to_the_boxperson_in_every_profile(name):
    # the far wall struck by both (the tracks reach it), the late die 0.25 s after the other
    early = flight(0.016, 120.0, 250.0, n=60)
    late = flight(0.266, 110.0, 300.0, n=60)
    v, obs = _judge([early, late], name)
    assert (v.kind, v.reason.value, v.dice) == ("boxperson", "dice-not-simultaneous", None)
    assert obs.facts.released_apart is True
    assert any("first seen at 0.016 s, the other at 0.266 s (0.250 s later)" in n for n in obs.notes)
    # released together: a roll, nothing noted
    v, obs = _judge([early, flight(0.016, 118.0, 282.0, n=60)], name)
    assert (v.kind, v.reason, v.dice) == ("roll", None, (3, 4))
    assert obs.facts.released_apart is False
    assert not any("simultaneously" in n for n in obs.notes)
    # switched off, or not known which points are the dice's own
    v, _ = _judge([early, late], name, Tolerances(release_gap_s=0.0))
    assert (v.kind, v.reason) == ("roll", None)
    v, obs = _judge([early, late], name, copied=False)
    assert (v.kind, v.reason, obs.facts.released_apart) == ("roll", None, None)


def test_a_no_roll_comes_first_and_a_profile_may_make_it_a_no_roll():
    early = flight(0.016, 120.0, 250.0, n=60)
    late_short = [(0.3 + k / 60, min(110.0 + 25.0 * k, 600.0), 300.0) for k in range(40)]   # stops mid-table
    v, _ = _judge([early, late_short])
    assert (v.kind, v.reason.value) == ("no-roll", "far-wall-missed")
    assert [r.value for r in v.irregularities][:2] == ["far-wall-missed", "dice-not-simultaneous"]
    # a profile written before the camera saw it leaves it out: the built-in action, boxperson
    data = tomllib.loads((PROFILE_DIR / "ny-5324.toml").read_text())
    del data["actions"]["dice-not-simultaneous"]
    assert parse_profile(data).policy.action(Reason.DICE_NOT_SIMULTANEOUS) is Action.BOXPERSON
    # a profile that says otherwise: a no roll
    data["actions"]["dice-not-simultaneous"] = "no-roll"
    prof = parse_profile(data)
    both = [early, flight(0.266, 110.0, 300.0, n=60)]
    v, _ = judge(DICE, calibration=CAL, profile=prof, track=both, track_copied=_own(both))
    assert (v.kind, v.reason.value) == ("no-roll", "dice-not-simultaneous")
    # never read: the roll is not valid if the dice did not leave the hand together
    data["actions"]["dice-not-simultaneous"] = "read"
    with pytest.raises(ProfileError, match="dice-not-simultaneous"):
        parse_profile(data)


def test_simulated_late_release_goes_to_the_boxperson_and_a_natural_throw_does_not():
    """Rendered camera frames at 60 fps (the bench's path, far-wall sensor): late-release seed 0
    (a die released 0.336 s late) enters the view 0.336 s after the other and goes to the
    boxperson under every profile; natural seed 0 has both dice in the first frame."""
    from bench_module import irregularity_bench

    ib = irregularity_bench()
    bench = ib.Bench(load_profile("ny-5324"), "camera", 60.0, wall_sensor=True)
    seen = bench.observe("late-release", 0)
    assert seen["throw"].plan.release_gap_s == pytest.approx(0.336, abs=0.001)
    firsts = sorted(next(p[0] for p, c in zip(t, cs) if not c) for t, cs in zip(seen["track"], seen["copied"]))
    assert firsts[1] - firsts[0] == pytest.approx(0.336, abs=1 / 60)
    for name in SHIPPED:
        row = bench.decide(seen, load_profile(name))
        assert row["got"][:2] == ("boxperson", Reason.DICE_NOT_SIMULTANEOUS), (name, row)
        assert row["expected"][:2] == ("boxperson", Reason.DICE_NOT_SIMULTANEOUS) and row["right"]
        assert any("(k)(2)(i)" in n for n in row["notes"])
    seen = bench.observe("natural", 0)
    assert [t[0][0] for t in seen["track"]] == [pytest.approx(0.016)] * 2   # the first frame (2 ms steps)
    assert not any(c for cs in seen["copied"] for c in cs)
    row = bench.decide(seen)
    assert Reason.DICE_NOT_SIMULTANEOUS not in (row["got"][1], row["expected"][1])
