"""Did the dice leave the shooter's hand together? Evidence from the motion track (pure).

9 NYCRR 5324.52(k)(2)(i): a roll is invalid if "the dice do not leave the shooter's hand
simultaneously"; the boxperson or stickperson has the authority to call it, (k)(2), whenever
possible before the dice rest, (k)(3). The camera sees a die only once it leaves the hand:
:class:`controller.track.ThrowTracker` starts both tracks at the first component and flags
the copy where one die was seen alone (``ThrowTracker.copied``), so each track's first point
of its own is its die's entry on the layout. A die entering the view well after the other, away from it and in the shooter's half of
the table, did not leave the hand with it. What this module gives is evidence for a person (the
verdict sends the throw to the boxperson under every shipped profile), not a no roll.

What must not count: dice released together of which one is hidden for a few frames, by the
other die (it shows again beside it) or by the hand (it shows again within a few frames).
Nor a die that was never thrown: one falling off a rail top onto the felt, or placed there.
Hence four conditions (:func:`late_entry`): the gap is at least ``min_gap_s``; the late die
enters at least ``min_apart_mm`` from where the first die is then; and, when the far wall is
known, in the half of the table nearer the shooter, and thrown: within :data:`THROWN_S` of its
entry it comes :data:`THROWN_MM` or more nearer the far wall (simulated camera, late-release
seeds 0-99: 354-505 mm; a die leaving the hand at 3.5-5 m/s).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

Point = tuple[float, float, float]

#: A die entering late counts as thrown when within this many seconds of its entry ...
THROWN_S = 0.1
#: ... it comes at least this many mm nearer the far wall (1 m/s; thrown dice make 3.5-5 m/s).
THROWN_MM = 100.0


@dataclass(frozen=True, slots=True)
class LateEntry:
    """One die entered the view well after the other.

    Attributes:
        first_s: when the first die was first seen (seconds, the frame clock).
        second_s: when the other die was first seen (seconds).
        first_at_mm: where the first die was at ``second_s`` (its last point then), table mm.
        second_at_mm: where the other die was first seen, table mm.
        apart_mm: the distance between the two, mm.
    """

    first_s: float
    second_s: float
    first_at_mm: tuple[float, float]
    second_at_mm: tuple[float, float]
    apart_mm: float

    @property
    def gap_s(self) -> float:
        """Seconds between the two entries."""
        return self.second_s - self.first_s

    def note(self) -> str:
        """One line for the boxperson's screen, with the times and places."""
        return (f"one die first seen at {self.first_s:.3f} s, the other at {self.second_s:.3f} s "
                f"({self.gap_s:.3f} s later) at ({self.second_at_mm[0]:.0f}, {self.second_at_mm[1]:.0f}) mm, "
                f"{self.apart_mm:.0f} mm from the first die: the dice may not have left the shooter's hand "
                "simultaneously, (k)(2)(i)")


def late_entry(tracks: Sequence[Sequence[Point]] | None, *, min_gap_s: float, min_apart_mm: float,
               far_wall=None, table_depth_mm: float | None = None,
               copied: Sequence[Sequence[bool]] | None = None) -> LateEntry | None:
    """The evidence that one die entered the view ``min_gap_s`` or more after the other.

    Args:
        tracks: per die its ``(t_s, x_mm, y_mm)`` points in time order
            (``ThrowTracker.tracks``); ``None`` or fewer than two tracks with points of their
            own: no evidence.
        copied: per die and point, ``True`` where the point is a copy of the other die's
            (``ThrowTracker.copied``: a lone die in the first frame starts both tracks); such
            points are left out. ``None``: every point is the die's own (a late die then
            shows as a jump, not a late start: no evidence).
        min_gap_s: seconds (> 0) the second entry must come after the first.
        min_apart_mm: mm the second die must enter from the first die's position then (a die
            hidden by the other shows again beside it).
        far_wall: ``controller.far_wall.Wall`` (its ``depth(x, y)`` in mm), or ``None``.
        table_depth_mm: with ``far_wall``, the depth of the shooter's end from it (mm): the
            second die must enter at least half of it from the far wall (in the shooter's
            half, where the hand is). With ``far_wall`` the second die must also be thrown
            (:data:`THROWN_MM` nearer the far wall within :data:`THROWN_S`).

    Returns:
        :class:`LateEntry`, or ``None`` when the entries do not show it.

    Raises:
        ValueError: ``min_gap_s`` not > 0 or ``min_apart_mm`` < 0.
    """
    if not min_gap_s > 0:
        raise ValueError(f"min_gap_s must be > 0, got {min_gap_s}")
    if min_apart_mm < 0:
        raise ValueError(f"min_apart_mm must be >= 0, got {min_apart_mm}")
    if tracks is None:
        return None
    if copied is not None:
        tracks = [[p for p, c in zip(t, cs) if not c] for t, cs in zip(tracks, copied)]
    live = [list(t) for t in tracks if len(t) > 0]
    if len(live) < 2:
        return None
    first, second = sorted(live[:2], key=lambda t: t[0][0])
    t1, t2 = float(first[0][0]), float(second[0][0])
    if t2 - t1 < min_gap_s:
        return None
    before = [p for p in first if p[0] <= t2]
    fx, fy = float(before[-1][1]), float(before[-1][2])
    sx, sy = float(second[0][1]), float(second[0][2])
    apart = math.hypot(sx - fx, sy - fy)
    if apart < min_apart_mm:
        return None
    if far_wall is not None:
        if table_depth_mm is not None and far_wall.depth(sx, sy) < 0.5 * table_depth_mm:
            return None
        soon = [far_wall.depth(float(p[1]), float(p[2])) for p in second if p[0] <= t2 + THROWN_S + 1e-9]
        if far_wall.depth(sx, sy) - min(soon) < THROWN_MM:
            return None
    return LateEntry(t1, t2, (fx, fy), (sx, sy), apart)
