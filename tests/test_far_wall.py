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
