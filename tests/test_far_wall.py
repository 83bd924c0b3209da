"""Far-wall strike from the track and a wall sensor (controller/far_wall.py), 9 NYCRR 5324.52(k)(2)(ii)."""
from __future__ import annotations

import numpy as np
import pytest

from controller import far_wall
from simulator.geometry import TableGeometry

GEOM = TableGeometry()                     # the far wall is the line x = 1100 mm
BAND = np.asarray(GEOM.zones()["far_wall_band"], dtype=np.float64)
PLAYING = np.asarray(GEOM.zones()["playing"], dtype=np.float64)
WALL = far_wall.wall_of(BAND, PLAYING)
L = GEOM.length
DT = 1 / 60
REACH = GEOM.rubber_depth + GEOM.die_size / np.sqrt(2)   # 23.5 mm: a corner on the rubber
TOUCH = REACH + 0.25 * GEOM.die_size                      # + the track's error


def bounce(y: float, t_hit: float, v: float = 1500.0, depth_at_hit: float = 12.0, n: int = 20):
    """A die rolling at ``v`` mm/s to the wall, touching it (centre ``depth_at_hit`` mm from the
    line) at ``t_hit`` s and coming back at half speed; 60 fps samples from t = 0."""
    out = []
    for k in range(n):
        t = k * DT
        x = L - depth_at_hit - (v * (t_hit - t) if t <= t_hit else 0.5 * v * (t - t_hit))
        out.append((t, x, y))
    return out


def stops_short(y: float, depth: float, n: int = 20):
    """A die rolling to a stop ``depth`` mm from the wall's line by the 6th frame."""
    return [(k * DT, L - depth - max(0, 5 - k) * 25.0, y) for k in range(n)]


def decide(tracks, strikes, window=(0.0, 1.0)):
    return far_wall.decide(tracks, 2, WALL, BAND, strikes, window, reach_mm=REACH,
                           beyond_mm=2 * GEOM.die_size, attribution_reach_mm=TOUCH, gap_s=0.005)


def test_wall_is_the_band_edge_farthest_from_the_table():
    assert WALL.length == pytest.approx(560.0)
    assert WALL.depth(1090.0, 100.0) == pytest.approx(10.0)
    assert WALL.depth(1110.0, 100.0) == pytest.approx(-10.0)
    assert WALL.alongside(1090.0, 559.0) and not WALL.alongside(1090.0, 600.0)


def test_bounce_between_frames_puts_the_die_at_the_wall_at_its_strike():
    tr = bounce(200.0, t_hit=0.075)          # between frames 4 (0.0667) and 5 (0.0833)
    assert far_wall.at_wall_then(tr, 0.075, WALL, TOUCH) is True
    # 0.15 s later it is ~110 mm out
    assert far_wall.at_wall_then(tr, 0.15, WALL, TOUCH) is False
    # no track point after the time: cannot place it
    assert far_wall.at_wall_then(tr, 5.0, WALL, TOUCH) is None


def test_two_dice_striking_together_give_one_pulse_credited_to_both():
    a, b = bounce(200.0, 0.075), bounce(260.0, 0.078)
    found = decide([a, b], [0.075, 0.078])          # 3 ms apart: one pulse at 0.075
    assert far_wall.pulses([0.075, 0.078], None, 0.005) == [0.075]
    assert found.struck is True


def test_die_stopping_short_is_not_credited_with_the_other_dies_strike():
    a, b = bounce(200.0, 0.075), stops_short(260.0, depth=40.0)
    # the track alone: b came within the 50 mm band but not within the 23.5 mm reach
    assert decide([a, b], None).struck is False
    found = decide([a, b], [0.075])
    assert (found.struck, found.how) == (False, "sensor strikes, a die away from the wall at every one")


def test_die_the_track_puts_in_the_band_but_away_from_the_wall_at_every_strike():
    """The track says it reached the wall; the sensor rang only while it was 100 mm out."""
    a = bounce(200.0, 0.075)
    b = bounce(300.0, 0.15)                      # at the wall at 0.15 s: no pulse then
    assert decide([a, b], None).struck is True   # the track alone
    assert decide([a, b], [0.075]).struck is False
    assert decide([a, b], [0.075, 0.15]).struck is True


def test_no_strike_at_all_is_a_miss_whatever_the_track():
    a, b = bounce(200.0, 0.075), bounce(300.0, 0.08)
    assert decide([a, b], []) == far_wall.FarWallFinding(False, "sensor: no strike")
    # strikes outside the throw's window do not count
    assert decide([a, b], [3.0], window=(0.0, 1.0)).struck is False


def test_track_lost_at_the_strike_falls_back_to_the_track():
    a = bounce(200.0, 0.075)
    b = [p for p in bounce(260.0, 0.075, depth_at_hit=5.0) if p[0] < 0.07]   # lost from 0.07 s on
    assert far_wall.at_wall_then(b, 0.075, WALL, TOUCH) is None
    assert decide([a, b], [0.075]).struck is True          # b's track came within reach before
    c = [p for p in stops_short(260.0, depth=60.0) if p[0] < 0.07]
    assert decide([a, c], [0.075]).struck is False


def test_sensor_without_a_track_needs_a_pulse_per_die():
    assert decide(None, [0.5, 0.6]).struck is True
    assert decide(None, [0.5]).struck is None
    assert decide(None, None).struck is None


def _swapped_after(a, b, k):
    """The tracks a tracker gives when it swapped the dice at frame ``k``: ``(track 0, track 1,
    shared)`` with the frame-``k`` points marked shared (the dice touched there)."""
    t0, t1 = a[:k] + b[k:], b[:k] + a[k:]
    sh = [i == k for i in range(len(a))]
    return t0, t1, sh


def test_ambiguous_times_are_shared_points_and_frames_with_one_die_seen():
    a, b = bounce(200.0, 0.075), bounce(260.0, 0.2)
    assert far_wall.ambiguous_times([a, b], [[False] * 20] * 2) == []
    t0, t1, sh = _swapped_after(a, b, 8)
    assert far_wall.ambiguous_times([t0, t1], [sh, sh]) == [pytest.approx(8 * DT)]
    hidden = a[:5] + a[6:]                               # frame 5: only the other die seen
    assert far_wall.ambiguous_times([hidden, b], None) == [pytest.approx(5 * DT)]
    assert far_wall.ambiguous_times([a], None) == []


def test_dice_that_touched_between_two_strikes_are_credited_under_either_identity():
    """Die a strikes at 0.075 s and comes back; it touches die b, and the tracker, unable to
    tell them apart there, continues each track on the other die; b strikes at 0.2 s. Track 0
    is then at the wall at both strikes and track 1 at neither: the old rule called the throw
    far-wall-missed. The frame where they touched may have swapped them, so either identity
    is tried and both dice are credited."""
    a, b = bounce(200.0, 0.075), bounce(260.0, 0.2)
    t0, t1, sh = _swapped_after(a, b, 8)
    assert far_wall.at_wall_then(t0, 0.2, WALL, TOUCH) is True
    assert far_wall.at_wall_then(t1, 0.075, WALL, TOUCH) is False
    assert far_wall.at_wall_then(t1, 0.2, WALL, TOUCH) is False
    found = far_wall.decide([t0, t1], 2, WALL, BAND, [0.075, 0.2], (0.0, 1.0), reach_mm=REACH,
                            beyond_mm=2 * GEOM.die_size, attribution_reach_mm=TOUCH, gap_s=0.005,
                            shared=[sh, sh])
    assert found.struck is True
    assert "either identity" in found.how
    # the same tracks with no frame where the dice touched or hid each other: a miss
    assert decide([t0, t1], [0.075, 0.2]).struck is False


def test_a_die_that_never_touched_the_other_is_not_credited_by_its_strikes():
    """Die a strikes twice; die b stops short and never comes near a: no frame makes their
    identities doubtful, so b has no strike (a touch before the first strike changes nothing)."""
    a = bounce(200.0, 0.075, n=20)
    a2 = [(t, x, y) if t <= 0.15 else (t, L - 12.0, y) for t, x, y in a]   # back at the wall at 0.2 s
    b = stops_short(400.0, depth=60.0)
    sh = [k == 1 for k in range(20)]                     # touched at the throw's start only
    found = far_wall.decide([a2, b], 2, WALL, BAND, [0.075, 0.2], (0.0, 1.0), reach_mm=REACH,
                            beyond_mm=2 * GEOM.die_size, attribution_reach_mm=TOUCH, gap_s=0.005,
                            shared=[sh, sh])
    assert found.struck is False


def test_a_pulse_among_shared_points_does_not_place_a_die_away_from_the_wall():
    """Two dice arrive at the far wall together, in one component at the frame before the
    strike (its points left out). Die a stops against the wall (20 mm from its line) at the
    pulse; the straight line across the left-out frame put it 29 mm out, beyond the 23.5 mm
    reach, and the good throw was called far-wall-missed (simulated camera, seed 7319). Among
    left-out points a die is not placed away: its track alone decides, and it reached the wall."""
    a = [(k * DT, L - 20.0 - max(0, 5 - k) * 37.5, 200.0) for k in range(20)]
    b = bounce(220.0, 0.075)
    sh = [k == 4 for k in range(20)]
    args = dict(reach_mm=REACH, beyond_mm=2 * GEOM.die_size, attribution_reach_mm=REACH, gap_s=0.005)
    far_a = [p for p, s in zip(a, sh) if not s]
    assert far_wall.at_wall_then(far_a, 0.075, WALL, REACH) is False
    found = far_wall.decide([a, b], 2, WALL, BAND, [0.075], (0.0, 1.0), shared=[sh, sh], **args)
    assert found.struck is True
    # a that stopped 40 mm out is still a miss: its track never came within reach
    short = [(t, x - 20.0, y) for t, x, y in a]
    assert far_wall.decide([short, b], 2, WALL, BAND, [0.075], (0.0, 1.0), shared=[sh, sh], **args).struck is False


def _fast_into_gap(depth_last: float = 28.0, v: float = 5000.0):
    """A die at ``v`` mm/s towards the wall, last seen ``depth_last`` mm from its line (frame 4);
    its next points (frames 9, 10) are ~120 mm out, coming back slowly: the frames between were
    left out (the dice touched at the wall), so the straight path from frame 4 to frame 9 cuts
    the bounce's corner (simulated camera, natural seed 26320)."""
    t4 = 4 * DT
    pts = [(k * DT, L - depth_last - v * (t4 - k * DT), 300.0) for k in range(5)]
    return pts + [(9 * DT, L - 120.0, 310.0), (10 * DT, L - 135.0, 312.0)], t4


def test_a_fast_die_last_seen_short_of_the_wall_is_carried_on_to_the_pulse():
    tr, t4 = _fast_into_gap()
    # 4 ms after its last frame at 5 m/s it is 8 mm from the line: at the wall
    assert far_wall.at_wall_then(tr, t4 + 0.004, WALL, TOUCH) is True
    # without carrying it on, the straight path to frame 9 puts it 32 mm out: away
    old = far_wall.EXTRAPOLATE_S
    try:
        far_wall.EXTRAPOLATE_S = 0.0
        assert far_wall.at_wall_then(tr, t4 + 0.004, WALL, TOUCH) is False
    finally:
        far_wall.EXTRAPOLATE_S = old
    # never further than EXTRAPOLATE_S after the last point (here 30 ms): the straight path
    assert far_wall.at_wall_then(tr, t4 + 0.03, WALL, TOUCH) is False
    # at 1 m/s the 4 ms carry it 4 mm, to 36 mm out: away
    slow, t4 = _fast_into_gap(depth_last=40.0, v=1000.0)
    assert far_wall.at_wall_then(slow, t4 + 0.004, WALL, TOUCH) is False
    # seen next where it was (it stopped there, or was stopped by the other die): not carried on
    # (32 mm out at its last frame, 12 mm carried on)
    tr, t4 = _fast_into_gap(depth_last=32.0)
    assert far_wall.at_wall_then(tr, t4 + 0.004, WALL, TOUCH) is True
    stopped = tr[:5] + [(9 * DT, L - 32.0, 300.0), (10 * DT, L - 32.0, 300.0)]
    assert far_wall.at_wall_then(stopped, t4 + 0.004, WALL, TOUCH) is False
    # seen next further out than it could have come back at 5 m/s: it turned before the wall
    back_fast = tr[:5] + [(4 * DT + 0.008, L - 60.0, 300.0), (5 * DT, L - 100.0, 300.0)]
    assert far_wall.at_wall_then(back_fast, t4 + 0.004, WALL, TOUCH) is False


def test_a_die_moving_away_from_the_wall_is_not_carried_back_to_it():
    tr, t4 = _fast_into_gap()
    # the same points mirrored in time: last seen 28 mm out moving away at 5 m/s
    away = [(1.0 - t, x, y) for t, x, y in reversed(tr)]
    t_last = 1.0 - t4
    assert far_wall.at_wall_then(away, t_last + 0.004, WALL, TOUCH) is False


def test_a_die_placed_at_the_wall_by_close_frames_is_not_lost_to_a_gap_after_the_pulse():
    """Two frames 4 ms apart (a frame and a bounce's turning point) put the die 6 mm from the
    line at the pulse; its next point comes 0.104 s later (it touched the other die: those
    points left out). The pulse stands for impacts up to 5 ms after it, which fall in that gap,
    but one place at the wall is enough (simulated natural throw 24640: called far-wall-missed)."""
    t = 0.212
    tr = [(0.16, L - 240.0, 250.0), (0.208, L - 24.0, 243.0), (0.216, L + 11.0, 251.0), (0.32, L - 136.0, 359.0)]
    assert far_wall.at_wall_then(tr, t, WALL, TOUCH, slack_s=0.005) is True
    # nothing at the wall and the gap in the interval: cannot tell (the straight line is no place)
    far = [(0.16, L - 240.0, 250.0), (0.208, L - 124.0, 243.0), (0.216, L - 100.0, 251.0), (0.32, L - 136.0, 359.0)]
    assert far_wall.at_wall_then(far, t, WALL, TOUCH, slack_s=0.005) is None
    # the same with the next frame in time: away
    near = far[:3] + [(0.232, L - 130.0, 300.0)]
    assert far_wall.at_wall_then(near, t, WALL, TOUCH, slack_s=0.005) is False
