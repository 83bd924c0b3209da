"""Did each die strike the far end of the table? 9 NYCRR 5324.52(k)(2)(ii) and (g) (pure).

Two kinds of evidence, on one clock (the frame clock, seconds):

* the **motion track** of the throw (controller/track.py): per die a sequence of
  ``(t_s, x_mm, y_mm)`` on the felt. A die struck the wall if its track enters the far-wall
  band (within ``reach_mm`` of the wall's line when set) or is seen a little past the line
  (:func:`reached_by_track`). A 60 fps track samples a die every 17 ms, in which a fast die
  moves 80 mm, so the turning point of a bounce is reconstructed (:func:`track_points`);
* a **wall-strike sensor** (a piezo or switch on the far wall, through the firmware bridge):
  the times of its pulses. A sensor cannot tell the dice apart, and two dice striking within a
  few milliseconds give one pulse. Each pulse is credited to **every** die the track places at
  the wall then (:func:`credited_by_sensor`): its path, straight between track points and
  through the turning points of bounces, is within reach of the wall at the pulse, or, the
  pulse within a frame of its last point and the next point fitting a bounce, the die carried
  on at the speed it had towards the wall is (:func:`_carried_on`). A die
  credited by no pulse, while the track saw it away from the wall at every pulse, did not
  strike.

:func:`decide` combines them: no pulse at all is a miss whatever the track says; with pulses and
a track, each die needs a pulse credited to it (a die the track lost at the pulses falls back to
the track alone); a sensor without a track can only say "struck" when it gave at least as many
distinct pulses as there are dice.

Which track is which die is certain only while the dice are apart. Where they touch (one
component split in two), or one die is seen alone while both are tracked (one hides the other,
or both form one blob), the tracks may have swapped dice (:func:`ambiguous_times`). Between two
pulses with such a frame the sensor path tries both identities, and a die is credited if it is
under either: on the simulated table (camera, 60 fps), two dice passing at the far wall gave both
strikes to one track, and a good throw was called far-wall-missed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: A track point: ``(t_s, x_mm, y_mm)``.
Point = tuple[float, float, float]

#: Track points further apart in time than this (seconds) around a pulse: the track lost the
#: die there (occluded, or touching the other die) and cannot place it.
MAX_TRACK_GAP_S = 0.1
#: A die moving towards the wall at its last track point before a pulse is carried on at the
#: velocity of its last segment (spanning at most this) to the pulse, when the pulse is at most
#: this long after that point (seconds; a frame at 60 fps is 0.0167 s): :func:`_carried_on`. On
#: felt a die loses under 0.1 m/s in that time, so it is where the straight line puts it unless
#: it struck something; the straight path to the *next* point cuts the corner of a bounce the
#: frames did not see (0 turns it off).
EXTRAPOLATE_S = 0.02


@dataclass(frozen=True)
class Wall:
    """The far wall's line in table mm.

    Attributes:
        a: one end of the wall's line, shape (2,), float64 mm.
        along: unit vector along the wall, shape (2,).
        inward: unit vector from the wall towards the table's centre, shape (2,).
        length: the wall's length, mm.
    """

    a: np.ndarray
    along: np.ndarray
    inward: np.ndarray
    length: float

    def depth(self, x: float, y: float) -> float:
        """Distance (mm) of ``(x, y)`` from the wall's line towards the table; < 0 beyond it."""
        return float((np.array([x, y]) - self.a) @ self.inward)

    def alongside(self, x: float, y: float, margin: float = 0.0) -> bool:
        """``(x, y)`` lies within the wall's length (± ``margin`` mm)."""
        s = float((np.array([x, y]) - self.a) @ self.along)
        return -margin <= s <= self.length + margin


def wall_of(band: np.ndarray, playing: np.ndarray | None = None) -> Wall:
    """The far wall: the edge of the far-wall band polygon (N, 2) mm whose line lies farthest
    from the playing area's centre (the band's centre without ``playing``).

    Raises:
        ValueError: the band has fewer than two distinct vertices.
    """
    band = np.asarray(band, dtype=np.float64).reshape(-1, 2)
    centre = playing.mean(axis=0) if playing is not None else band.mean(axis=0)
    n = len(band)
    edges = [(band[i], band[(i + 1) % n]) for i in range(n) if np.any(band[i] != band[(i + 1) % n])]
    if not edges:
        raise ValueError(f"far_wall_band has no edge: {band.tolist()}")

    def line_distance(e: tuple[np.ndarray, np.ndarray]) -> float:
        d = e[1] - e[0]
        return abs(float(d[0] * (centre[1] - e[0][1]) - d[1] * (centre[0] - e[0][0]))) / float(np.hypot(*d))
    a, b = max(edges, key=line_distance)
    length = float(np.hypot(*(b - a)))
    along = (b - a) / length
    inward = np.array([-along[1], along[0]])
    if float((centre - a) @ inward) < 0:
        inward = -inward
    return Wall(a.copy(), along, inward, length)


def track_points(t: Sequence[Point]) -> list[Point]:
    """The track's points, plus the turning point of every bounce back from the far end, in
    time order.

    A fast die may strike the wall between two frames (5 m/s is 83 mm a frame at 60 Hz) and
    never be sampled in the band. Where the x velocity turns from + to -, the line of the
    segment before the turn (through the last point going out) and the line of the segment after
    it (through the first point coming back) meet at the turning point ``x*`` at time ``t*``; it
    is added (``y`` interpolated) when ``t*`` falls between those two points.
    """
    pts = [(float(p[0]), float(p[1]), float(p[2])) for p in t]
    out = list(pts)
    for k in range(1, len(pts) - 2):
        (ta, xa, _), (tb, xb, yb), (tc, xc, yc), (td, xd, _) = pts[k - 1], pts[k], pts[k + 1], pts[k + 2]
        if not (tb > ta and tc > tb and td > tc):
            continue
        vin, vout = (xb - xa) / (tb - ta), (xd - xc) / (td - tc)
        if vin <= 0 or vout >= 0:
            continue
        ts = (xc - xb + vin * tb - vout * tc) / (vin - vout)
        if tb <= ts <= tc:
            f = (ts - tb) / (tc - tb)
            out.append((ts, xb + vin * (ts - tb), yb + f * (yc - yb)))
    out.sort(key=lambda p: p[0])
    return out


#: An offset of more than this x side is no light's: the die read is two touching dice read as
#: one at their middle (simulated camera, cocked-on-die 5819: 8.8 mm), so :func:`track_offset`
#: gives none.
MAX_OFFSET_SIDES = 0.25


def track_offset(track: Sequence[Sequence[Point]], read_at: Sequence[tuple[float, float]],
                 size: float) -> tuple[float, float] | None:
    """The track's offset (mm) from where the reader put the dice at rest: the mean of
    (track end - die read) over the dice whose track ended within half a side (``size`` mm) of
    one read. A track point is the centroid of everything that differs from the empty table
    (the die's sides, its shadow), which the light pulls a millimetre or two off the die's
    centre; the reader's centre is the upper face's. ``None`` without such a pair, or when the
    mean is more than :data:`MAX_OFFSET_SIDES` sides long."""
    pairs = []
    for tr in track:
        if not tr:
            continue
        end = (float(tr[-1][1]), float(tr[-1][2]))
        near = min(read_at, key=lambda q: math.hypot(q[0] - end[0], q[1] - end[1]), default=None)
        if near is not None and math.hypot(near[0] - end[0], near[1] - end[1]) < 0.5 * size:
            pairs.append((end[0] - near[0], end[1] - near[1]))
    if not pairs:
        return None
    dx, dy = float(np.mean([p[0] for p in pairs])), float(np.mean([p[1] for p in pairs]))
    return None if math.hypot(dx, dy) > MAX_OFFSET_SIDES * size else (dx, dy)


def reached_by_track(tracks: Sequence[Sequence[Point]], wall: Wall, band: np.ndarray,
                     reach_mm: float | None = None, beyond_mm: float = 0.0) -> list[bool]:
    """Per die: its track entered the far-wall band (and, with ``reach_mm``, came within
    ``reach_mm`` of the wall's line), or was seen up to ``beyond_mm`` beyond the line within the
    wall's length (a bounce's turning point a little past the wall, or a die just above it;
    further out is no place a die can be seen and come back from).

    Args:
        tracks: per die, ``(t_s, x_mm, y_mm)`` points.
        wall: :func:`wall_of`.
        band: the far-wall band polygon, shape (N, 2), mm.
    """
    from camera.calibration import point_in_polygon  # the even-odd test used for the zones

    def at_wall(x: float, y: float) -> bool:
        depth = wall.depth(x, y)
        if depth < 0:
            return wall.alongside(x, y) and depth >= -beyond_mm
        if not point_in_polygon(band, (x, y)):
            return False
        return reach_mm is None or depth <= reach_mm

    return [any(at_wall(x, y) for _, x, y in track_points(t)) for t in tracks]


def pulses(strikes: Sequence[float] | None, window: tuple[float, float] | None, gap_s: float) -> list[float] | None:
    """The sensor's strikes within ``window`` (``(t0, t1)`` s, inclusive), sorted, with strikes
    closer than ``gap_s`` to the previous one merged into it (one impact rings the sensor for a
    few milliseconds). ``None`` when the rig has no sensor (``strikes is None``)."""
    if strikes is None:
        return None
    ts = sorted(float(t) for t in strikes if window is None or window[0] <= float(t) <= window[1])
    out: list[float] = []
    last = -math.inf
    for t in ts:
        if t - last > gap_s:
            out.append(t)
        last = t
    return out


def at_wall_then(track: Sequence[Point], t: float, wall: Wall, reach_mm: float,
                 slack_s: float = 0.0) -> bool | None:
    """Was the die of ``track`` touching the wall at some time in ``[t, t + slack_s]`` (s)?

    The track is taken as straight between its points (turning points of bounces included,
    :func:`track_points`); the die was at the wall if this path comes within ``reach_mm`` of the
    wall's line, within its length, in that interval. ``slack_s``: a sensor pulse that merged
    several impacts stands for impacts up to ``slack_s`` after it.

    Returns:
        ``True``/``False``; ``None`` when the track does not cover the interval (no point at or
        before ``t``, none at or after ``t + slack_s``, or, with no place in it at the wall, two
        points more than :data:`MAX_TRACK_GAP_S` apart around it): it cannot place the die.
    """
    return _at_wall_then(track_points(track), t, wall, reach_mm, slack_s)


def _at_wall_then(pts: Sequence[Point], t: float, wall: Wall, reach_mm: float, slack_s: float) -> bool | None:
    """:func:`at_wall_then` on the points of :func:`track_points`.

    A place on a stretch between two points more than :data:`MAX_TRACK_GAP_S` apart is no
    place: if none of the others (nor the die carried on, :func:`_carried_on`) is at the wall,
    the answer is ``None``. One place at the wall is enough, wherever the rest of the interval
    falls (a die placed at the wall at the pulse by the frames around it, then lost: simulated
    natural throw 24640, a good throw called far-wall-missed)."""
    t1 = t + slack_s
    first = next((k for k in range(len(pts) - 1, -1, -1) if pts[k][0] <= t), None)
    last = next((k for k, p in enumerate(pts) if p[0] >= t1), None)
    if first is None or last is None:
        return None

    def at(time: float) -> tuple[float, float, bool]:
        """The path's point at ``time`` (linear between the points around it) and whether the
        points around it are close enough in time to place the die."""
        for k in range(first, last):
            (ta, xa, ya), (tb, xb, yb) = pts[k], pts[k + 1]
            if time <= tb:
                f = 0.0 if tb <= ta else max(0.0, (time - ta) / (tb - ta))
                return xa + f * (xb - xa), ya + f * (yb - ya), time in (ta, tb) or tb - ta <= MAX_TRACK_GAP_S
        return pts[last][1], pts[last][2], True

    where = [at(t), at(t1)] + [(x, y, True) for ts, x, y in pts[first:last + 1] if t < ts < t1]
    where += [(x, y, True) for x, y in _carried_on(pts, first, t, t1, wall)]
    if any(wall.depth(x, y) <= reach_mm and wall.alongside(x, y, reach_mm) for x, y, placed in where if placed):
        return True
    return False if all(placed for _, _, placed in where) else None


def _carried_on(pts: Sequence[Point], first: int, t: float, t1: float, wall: Wall) -> list[tuple[float, float]]:
    """Where the die of ``pts`` would be at ``t`` and ``t1`` (s) had it kept the velocity of its
    last track segment before ``t`` (ending at ``pts[first]``); no point unless that segment
    moves it towards the wall and spans at most :data:`EXTRAPOLATE_S`, ``t1`` is at most that
    after its end, and the next track point fits a bounce off the wall's line: later than the
    die, so carried on, would reach the line, further from the wall than the segment's end (it
    came back out: a die seen where it was had stopped), and no further out than it could come
    back by then at the speed it went in (the rubber returns a die at most as fast; a die seen
    coming back sooner or faster turned on something else, or earlier).

    Simulated camera at 60 fps, natural throws with the wall sensor: a die 22-29 mm from the
    wall's line at its last frame before the pulse, moving towards it at 4-6.5 m/s, struck it
    4-8 ms later, but the straight path to its next point (after the bounce, or after frames in
    which it touched the other die and was left out) put it 24-66 mm from the line at the pulse:
    good throws called far-wall-missed (seeds 26320, 26367)."""
    ta, xa, ya = pts[first]
    # turning points of bounces may sit on a frame's time: the segments are between distinct times
    back = next((k for k in range(first - 1, -1, -1) if pts[k][0] < ta - 1e-3), None)
    nxt = next((k for k in range(first + 1, len(pts)) if pts[k][0] > ta + 1e-3), None)
    # the segment's velocity is the die's at its end only over about a frame (a die slowing to a
    # stop over a longer one would be carried on past where it stopped)
    if back is None or nxt is None or t1 - ta > EXTRAPOLATE_S or ta - pts[back][0] > EXTRAPOLATE_S:
        return []
    tb, xb, yb = pts[back]
    vx, vy = (xa - xb) / (ta - tb), (ya - yb) / (ta - tb)
    speed_in = -(vx * wall.inward[0] + vy * wall.inward[1])     # mm/s towards the wall
    if speed_in <= 0:
        return []
    depth_a = wall.depth(xa, ya)
    t_line = ta + max(0.0, depth_a) / speed_in                   # when it would reach the line
    tc, xc, yc = pts[nxt]
    depth_c = wall.depth(xc, yc)
    if tc <= t_line or depth_c <= depth_a or depth_c > speed_in * (tc - t_line):
        return []
    return [(xa + vx * (u - ta), ya + vy * (u - ta)) for u in (t, t1)]


def credited_by_sensor(track: Sequence[Point], pulse_times: Sequence[float], wall: Wall, reach_mm: float,
                       slack_s: float = 0.0) -> bool | None:
    """One die: ``True`` if the track puts it at the wall at some pulse (:func:`at_wall_then`),
    ``False`` if it puts it away from the wall at every pulse, ``None`` otherwise (no pulse, or
    the track lost the die at a pulse)."""
    if not pulse_times:
        return None
    pts = track_points(track)
    seen = [_at_wall_then(pts, t, wall, reach_mm, slack_s) for t in pulse_times]
    if any(s is True for s in seen):
        return True
    return None if any(s is None for s in seen) else False


def _shared_times(tracks: Sequence[Sequence[Point]], shared: Sequence[Sequence[bool]] | None) -> set[float]:
    """Times (s) of the points marked shared (``ThrowTracker.shared``) in any track."""
    return {float(p[0]) for tr, sh in zip(tracks, shared or ()) for p, s in zip(tr, sh) if s}


def ambiguous_times(tracks: Sequence[Sequence[Point]], shared: Sequence[Sequence[bool]] | None) -> list[float]:
    """Frame times (s) after which two tracks may have swapped dice: points marked shared (one
    component holding both dice, ``ThrowTracker.shared``), and frames in which only one of the
    two tracks has a point while both are tracked (one die hid the other, or their blobs
    merged below the size that is split). Empty unless there are exactly two tracks."""
    if len(tracks) != 2 or not all(tracks):
        return []
    out = _shared_times(tracks, shared)
    ta, tb = {float(p[0]) for p in tracks[0]}, {float(p[0]) for p in tracks[1]}
    lo, hi = max(min(ta), min(tb)), min(max(ta), max(tb))
    out.update(t for t in ta ^ tb if lo <= t <= hi)
    return sorted(out)


def _credited_any_identity(placed: Sequence[Sequence[bool | None]], pulse_times: Sequence[float],
                           swaps: Sequence[float], fallback: Sequence[bool], slack_s: float) -> bool:
    """Two tracks: can every die be credited under some identity of the tracks?

    A die is credited by a pulse at which its track is at the wall, or, at a pulse where its
    track cannot place it, by that track's own reach of the wall (``fallback``). Walked pulse
    by pulse over the states (which die each track follows, which dice are credited so far):
    at most 8 states, whatever the number of pulses.

    Args:
        placed: per pulse, per track, :func:`at_wall_then` (``True``/``False``/``None``).
        pulse_times: the pulses, s, sorted.
        swaps: :func:`ambiguous_times`: a frame in ``(previous pulse, pulse + slack_s]`` means the
            tracks may have changed dice between the two pulses.
        fallback: per track, :func:`reached_by_track`.
    """
    states = {(0, False, False)}        # (track 0 follows die 0 / die 1, die 0 credited, die 1 credited)
    for i, t in enumerate(pulse_times):
        if i and any(pulse_times[i - 1] < s <= t + slack_s for s in swaps):
            states |= {(1 - perm, c0, c1) for perm, c0, c1 in states}
        nxt = set()
        for perm, c0, c1 in states:
            credited = [c0, c1]
            for d in range(2):
                v = placed[i][d]
                if v is True or (v is None and fallback[d]):
                    credited[d ^ perm] = True
            nxt.add((perm, credited[0], credited[1]))
        states = nxt
    return any(c0 and c1 for _, c0, c1 in states)


#: A point this close to the far wall's line (mm, measured into the table), or beyond the line,
#: is near the far wall (dice offered to a new shooter never come there, controller/offer.py): the far-wall band (50 mm on the simulated table) plus what a die thrown
#: at 5 m/s covers between two frames at 30 fps (167 mm), rounded up. The dice cup stands
#: mid-table (550 mm from the wall on the simulated 1100 mm table), and an offer goes from it to
#: a player at the sides or the shooter's end.
NEAR_FAR_WALL_MM = 250.0


def far_wall_approached(points: Sequence[Point] | None, wall: Wall | None, *,
                        near_mm: float = NEAR_FAR_WALL_MM, strikes: Sequence[float] | None = None,
                        window: tuple[float, float] | None = None, gap_s: float = 0.0) -> bool | None:
    """Did anything that moved come near the far wall, or did the far-wall sensor ring?

    Args:
        points: ``(t_s, x_mm, y_mm)`` felt-plane points of what the tracker saw moving (each
            die's track, its reconstructed bounce points, every component it found); ``None``
            when the motion was not tracked.
        wall: the far wall (:func:`wall_of`), ``None`` without a band.
        near_mm: a point within this many mm of the wall's line, measured into the table, or
            beyond the line, alongside the wall (± ``near_mm``), is near it.
        strikes: far-wall sensor strike times (s, frame clock), ``None`` without a sensor.
        window: ``(t_start, t_rest)`` s: strikes outside it are of another motion.
        gap_s: strikes closer than this are one (:func:`pulses`).

    Returns:
        ``True`` (a sensor strike in the window, or a point near the wall), ``False`` (points
        seen, none near, no strike) or ``None`` (nothing tracked, or no wall: cannot tell).
    """
    if pulses(strikes, window, gap_s):
        return True
    if wall is None or not points:
        return None
    for _, x, y in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        if wall.depth(x, y) <= near_mm and wall.alongside(x, y, margin=near_mm):
            return True
    return False


@dataclass(frozen=True)
class FarWallFinding:
    """What :func:`decide` found.

    Attributes:
        struck: every die struck the far wall (``True``), a die did not (``False``), or the
            evidence cannot tell (``None``: the verdict does not void the roll on it).
        how: what decided it, for the notes (``"sensor: no strike"``, ``"track"``, ...).
    """

    struck: bool | None
    how: str


def decide(tracks: Sequence[Sequence[Point]] | None, n_dice: int, wall: Wall | None, band: np.ndarray | None,
           strikes: Sequence[float] | None, window: tuple[float, float] | None, *,
           reach_mm: float | None, beyond_mm: float, attribution_reach_mm: float,
           gap_s: float, shared: Sequence[Sequence[bool]] | None = None) -> FarWallFinding:
    """Combine the track and the sensor (see the module docstring), 9 NYCRR 5324.52(k)(2)(ii).

    Args:
        tracks: per die ``(t_s, x_mm, y_mm)`` points (corrected for the track's offset), or
            ``None`` when the throw was not tracked; fewer than ``n_dice`` non-empty tracks:
            the track cannot tell.
        n_dice: how many dice must have struck (the dice that came to rest on the table).
        wall, band: :func:`wall_of` and the far-wall band polygon (N, 2) mm; ``None`` without a
            calibrated band.
        strikes: sensor strike times, s (frame clock); ``None`` when the rig has no sensor.
        window: ``(t_throw_start, t_rest)``, s: strikes outside it are not of this throw.
        reach_mm, beyond_mm: :func:`reached_by_track`.
        attribution_reach_mm: a die within this of the wall's line touches it (rubber depth +
            the die's half diagonal + the track's error), for :func:`at_wall_then`.
        gap_s: strikes closer than this are one pulse.
        shared: per track and point, ``True`` where the point came from one component holding
            both dice (``ThrowTracker.shared``). Such points are left out where a die is placed
            at a pulse (which die is which there is a guess), mark where the tracks may have
            swapped dice (:func:`ambiguous_times`), and count for a die the track lost at every
            pulse (both dice in that component were where its halves are); a pulse that falls
            among them does not place either die away from the wall.
    """
    ps = pulses(strikes, window, gap_s)
    if ps is not None and not ps:
        return FarWallFinding(False, "sensor: no strike")
    whole = [list(t) for t in tracks] if tracks is not None else None
    swaps = ambiguous_times(whole, shared) if whole is not None else []
    if whole is not None and shared is not None:
        tracks = [[p for p, sh in zip(t, s) if not sh] for t, s in zip(whole, shared)]
    else:
        tracks = whole
    calibrated = wall is not None and band is not None and tracks is not None
    live = [t for t in tracks if t] if calibrated else []
    by_track = reached_by_track(live, wall, band, reach_mm, beyond_mm) if len(live) >= max(1, n_dice) else None
    if ps is None:
        if by_track is None:
            return FarWallFinding(None, "no usable track, no sensor")
        return FarWallFinding(all(by_track), "track" if all(by_track) else "track: not in the far-wall band")
    if by_track is not None:
        # per die: credited by a pulse, or (lost at a pulse) the track alone
        lost_fallback = reached_by_track([w for w, t in zip(whole, tracks) if t], wall, band, reach_mm, beyond_mm)
        if len(live) == 2 and swaps:
            pts = [track_points(t) for t in live]
            placed = [[_at_wall_then(p, t, wall, attribution_reach_mm, gap_s) for p in pts] for t in ps]
            # A pulse between two points with shared points left out between them: the straight
            # line across them is no place for the die (it may have struck in that stretch), so
            # it is not placed there ("away" becomes "cannot tell": the track alone decides).
            joined = _shared_times(whole, shared)
            for i, t in enumerate(ps):
                for d, tr in enumerate(live):
                    before = max((p[0] for p in tr if p[0] <= t), default=None)
                    after = min((p[0] for p in tr if p[0] >= t + gap_s), default=None)
                    if placed[i][d] is False and before is not None and after is not None \
                            and any(before < h < after for h in joined):
                        placed[i][d] = None
            if _credited_any_identity(placed, ps, swaps, lost_fallback, gap_s):
                return FarWallFinding(True, "sensor strikes, each die at the wall at one (the dice touched "
                                            "or hid each other: either identity of the tracks)")
            return FarWallFinding(False, "sensor strikes, a die away from the wall at every one")
        credits = [credited_by_sensor(t, ps, wall, attribution_reach_mm, gap_s) for t in live]
        if all(reached if c is None else c for c, reached in zip(credits, lost_fallback)):
            return FarWallFinding(True, "sensor strikes, each die at the wall at one")
        return FarWallFinding(False, "sensor strikes, a die away from the wall at every one")
    if len(ps) >= max(1, n_dice):
        return FarWallFinding(True, f"sensor: {len(ps)} strikes")
    return FarWallFinding(None, f"sensor: {len(ps)} strike, no track to tell which die")
