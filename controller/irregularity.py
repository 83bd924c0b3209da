"""Irregularity detectors: what the camera saw -> the observations the verdict is made from (pure).

:func:`observe_throw` takes the dice the reader found at rest, the table calibration
(homography pixels -> table millimetres and the zone polygons), the objects on the layout a
die may rest on (chip stacks), the motion track of the throw and the far-wall sensor's strike
times, and returns :class:`ObservedThrow`: one :class:`~controller.verdict.DieObservation` per
die (zone, on the other die, sides resting on objects, the reading with the value that
*counts*) and the :class:`~controller.verdict.ThrowFacts` (far-wall strike, timeout). The
verdict (:func:`controller.verdict.decide`, under the profile's policy) does the rest;
:func:`judge` does both.

What is detected, and from what (9 NYCRR 5324.52):

* a die or both dice leave the table, (k)(1): fewer than two dice at rest inside the zones
  (a die seen outside every zone is ``"off-table"``);
* one die on top of the other, (k)(1): two dice whose felt-plane centres are closer than
  ``on_die_ratio`` x the die side (two dice lying on the felt are never closer than one side);
  a die not flat within ``leaning_ratio`` x side of the other die (it rests on it), except a
  die both flatness estimates call not flat beside a die read surely and flat, whose face
  nothing covers (``controller.die_on_die.leans_beside``: it leans on that die's side); one die
  region of more than ``merged_area_ratio`` x the die's area (the lower die mostly hidden: a
  hidden die with no value is added so that the verdict sees two dice); one die seen (or found
  again where the track ended) where two dice's tracks end closer than ``on_die_ratio`` x side
  to each other, within ``stacked_offset`` x side of it (one blob: the other die is under it,
  not off the table);
* a die the motion track saw come to rest inside the table but the reader did not find (dice
  touching, read as one; a die beside a chip the detector missed) did not leave the table: with
  ``reread`` (``vision.reader.read_die_at`` on the frame at rest) the die is read where the
  track ended; a die found there not lying flat, its face unsure, is judged as a cocked die
  (below: on two objects the roll is void); if nothing is read there, a hidden die with no
  value is added, so the face is in dispute (boxperson) instead of a wrong "die off table";
* a die at rest in the chip bank (k)(2)(iii), in the dice cup or on a rail (k)(2)(iv): the zone
  of its centre in table mm; on the rail the die's top is ``wall_height`` above the felt, so its
  centre is corrected for parallax with the height estimated from its apparent size (camera
  height from calibration);
* a die failing to strike the far end, (k)(2)(ii) and (g): controller/far_wall.py. Each die's
  motion track (centres in table mm, shifted by its offset from the dice read at rest) must
  enter the ``far_wall_band`` zone (within ``far_wall_reach_mm`` of the wall when set), or be
  seen up to two sides past the wall's line. With a wall-strike sensor: no strike in the throw
  is a miss; otherwise every die must be at the wall, by its track, at one of the strikes (a
  strike is credited to every die there, since two dice striking together give one pulse);
* a cocked die, (h)(1)(i): for a die the reader marks not flat, the objects it touches (chip
  stacks under or beside it, the rails, the chip bank) give the sides resting on objects. More
  than one side: void (``sides_resting`` > 1). Its bottom on a chip stack: the face opposite it
  is the face seen uppermost, which counts. Leaning sideways on an object, or no object found:
  the counted face is one the camera cannot see, so which face is uppermost is in dispute and
  the reading's value is withdrawn (``face-unreadable``: boxperson, (h)(1)(ii)). The other die
  counts as an object a die rests on only when it is read flat: two dice touching, both read
  not flat, do not tell which rests on which (a dispute, not a void). No object
  within reach at all: also a dispute by default; with ``Tolerances.open_felt_is_flat`` the
  reader's "not flat" is taken for its error (nothing can hold a die cocked on open felt) and
  the die is read flat. A die called not flat whose centre lies over the middle of the one
  stack it rests on (``on_top_margin``), touching nothing else, lies flat on it. A die read
  flat but barely (``sure_flat``, ``sure_flat_wedged``) beside a wall or touching two objects
  is in dispute, and so is a die read flat not surely enough (``sure_flat_off_wall``) that
  stands out from a wall, or from the other die lying flat, where a die leaning on it is seen
  (``off_wall``). Where the reader gives two flatness estimates (the face classifier's and the
  tilt classifier's P(flat)), a die beside a wall takes the lower (and is doubted on their mean,
  ``doubt_on_mean``), a die beside chip stacks and
  the other die only the tilt classifier's (``tilt_decides_off_walls``), a die on open felt the
  higher. With the profile option ``cocked = "as-read"`` (house practice) the face
  seen uppermost counts, but a die on two objects is still void;
* a dispute as to which face is uppermost, (h)(1)(ii): a value the reader is not sure of (left
  to the verdict's ``min_confidence``).

The die layout (1-6, 2-5, 3-4 opposite) is N.J.A.C. 13:47-20.25(b)2viii: :func:`opposite_face`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from controller import far_wall, release
from controller.cocked import WALLS, judge_cocked_dice, opposite_face
from controller.die_on_die import find_dice_on_dice
from controller.felt import DIE_SIZE_MM, ZONE_MAP, FeltGeometry, TableObject
from controller.irregularity_profile import IrregularityProfile
from controller.missed_dice import find_missed_dice, other_die_under, settled_on_table, split_touching_pair
from controller.policy import NY_5324
from controller.scene import Reread, ThrowScene, is_die, leave_out_spares, place_dice
from controller.tolerances import Tolerances
from controller.verdict import ZONE_PLAYING, DieObservation, ThrowFacts, Verdict, decide
from vision.types import DieReading

__all__ = ["DIE_SIZE_MM", "WALLS", "ZONE_MAP", "ObservedThrow", "TableObject", "Tolerances", "judge",
           "observe_throw", "opposite_face"]


@dataclass(frozen=True)
class ObservedThrow:
    """What :func:`observe_throw` found.

    Attributes:
        observations: one per die (the hidden lower die of a die-on-die included), in the
            order of the readings.
        facts: throw facts for the verdict.
        positions_mm: each observation's centre on the felt in table mm (``None`` without a
            calibration; pixels are not millimetres).
        notes: one line per finding, for logs and the boxperson's screen.
    """

    observations: tuple[DieObservation, ...]
    facts: ThrowFacts
    positions_mm: tuple[tuple[float, float] | None, ...] = ()
    notes: tuple[str, ...] = field(default=())


def observe_throw(readings: Sequence[DieReading], *, calibration=None,
                  profile: IrregularityProfile | None = None,
                  objects: Sequence[TableObject] = (),
                  track: Sequence[Sequence[tuple[float, float, float]]] | None = None,
                  wall_strikes: Sequence[float] | None = None,
                  window: tuple[float, float] | None = None,
                  timed_out: bool = False,
                  min_presence: float = 0.3,
                  camera_nadir_mm: tuple[float, float] | None = None,
                  wall_height_mm: float = 200.0,
                  tolerances: Tolerances = Tolerances(),
                  reread: Reread | None = None,
                  track_shared: Sequence[Sequence[bool]] | None = None,
                  spares: Sequence[DieReading] | None = None,
                  cup_changed: bool | None = None,
                  track_seen: Sequence[tuple[float, float, float]] | None = None,
                  track_copied: Sequence[Sequence[bool]] | None = None) -> ObservedThrow:
    """Turn the dice seen at rest into verdict observations (see the module docstring).

    Args:
        readings: the reader's dice (``vision.reader.read_dice``); a reading with no value and
            confidence below ``min_presence`` is not a die and is dropped.
        calibration: ``camera.calibration.Calibration`` (pixels -> table mm, zones, die size,
            camera height). ``None``: every die is in the playing area and distances are in
            pixels with the die side taken from the readings.
        profile: the jurisdiction profile (``None``: 9 NYCRR 5324.52 detection).
        objects: chip stacks on the layout (table mm).
        track: the motion track of the throw: per die a sequence of ``(t_s, x_mm, y_mm)``
            (controller/track.py), or ``None`` when not tracked.
        wall_strikes: times (seconds, the frame clock) of far-wall sensor strikes, or ``None``
            when the rig has no sensor.
        window: ``(t_throw_start, t_rest)``: strikes outside it are not of this throw.
        timed_out: the throw did not come to rest in time.
        min_presence: 0..1.
        camera_nadir_mm: the felt point straight under the camera (default: the centre of the
            "playing" zone, as for a camera over the middle of the table).
        wall_height_mm: height of the rail tops above the felt, mm.
        tolerances: thresholds (:class:`Tolerances`).
        reread: ``(centre_px, side_px) -> DieReading | None``, the reader asked about one
            place of the frame at rest (``vision.reader.read_die_at`` bound to the frame).
            Where the track saw a die come to rest that the reader did not find, the die is
            read there; without ``reread``, or when it reads no value, that die's face is in
            dispute ((h)(1)(ii)).
        track_shared: per die and track point, ``True`` where the point came from the two dice
            touching (``ThrowTracker.shared``): which die it is is a guess, so the far-wall
            decision does not place a die at a sensor pulse by it (a die bouncing off the other
            at the wall is not taken for one that struck it), and the tracks may have swapped
            dice there (``far_wall.ambiguous_times``); ``None``: every point counts.
        spares: the reader's dice in the cup before the throw (``controller.dice_cup.
            spares_and_change``: read on the still frame before it, or, where the cup did not
            change, the dice in it at rest); those in the dice cup are the spare dice the
            stickperson keeps there, 9 NYCRR 5324.52(a)(5), (f)(3). A die in the cup at rest is
            a thrown die only where a spare's place shows another face, or as far as the cup
            holds more dice than before and it lies where no spare lay (``controller.scene.spares_left_out``):
            a die that left the table is not made up for by a spare in the cup ((k)(1), a no
            roll in every profile, where a die in the cup goes to the boxperson under N.J.A.C.
            13:47 and 9 NYCRR 4620). ``None`` (not known): every die in the cup counts as seen.
        cup_changed: with ``spares``, whether the cup's interior changed between the frame
            before the throw and the frame at rest (``controller.dice_cup.cup_changed``):
            ``True``, a die came to rest in it, so at least one die in the cup is a thrown die
            even where the reader could not tell it from the spares (landed on them); ``None``
            or ``False``: the dice in the cup decide alone.
        track_seen: every component the tracker found moving, ``(t_s, x_mm, y_mm)``
            (``ThrowTracker.seen``), with ``track`` for ``facts.far_wall_approached``
            (controller/offer.py: dice offered to a new shooter never come near the far wall).
        track_copied: per die and track point, ``True`` where the point is a copy of the other
            die's (``ThrowTracker.copied``: a lone die in the first frame starts both tracks),
            for when each die entered the view, 9 NYCRR 5324.52(k)(2)(i)
            (controller/release.py); ``None``: not known, and no late entry is found.

    Returns:
        :class:`ObservedThrow`.
    """
    dice = [r for r in readings if is_die(r, min_presence)]
    geo = FeltGeometry(calibration, camera_nadir_mm, wall_height_mm) if calibration is not None else None
    # where each die is: felt-plane position and zone; the spares in the cup are not thrown dice
    scene, placed_notes = place_dice(dice, geo, tolerances, reread)
    if spares is not None and geo is not None:
        leave_out_spares(scene, placed_notes, spares, cup_changed, min_presence)
    # the other die ended where the one die seen lies: under it, (k)(1); dice the reader missed
    stacked = other_die_under(scene, track)
    settled, stacked = find_missed_dice(scene, track, stacked)
    split_touching_pair(scene)
    # one die on top of the other, (k)(1); cocked dice, (h)(1)
    in_play = [i for i, z in enumerate(scene.zones) if z == ZONE_PLAYING]
    scene.values = list(scene.dice)
    on_die, hidden = find_dice_on_dice(scene, in_play, settled, stacked)
    sides_resting = judge_cocked_dice(scene, in_play, on_die, objects, profile)

    dice, positions, zones, values, notes = scene.dice, scene.positions, scene.zones, scene.values, scene.notes
    observations = [DieObservation(values[i], zone=zones[i], on_die=on_die[i], sides_resting=sides_resting[i])
                    for i in range(len(dice))]
    for h in hidden:
        observations.append(DieObservation(h, zone=ZONE_PLAYING, on_die=False))
        positions.append(positions[in_play[0]] if in_play else None)
    facts = _throw_facts(scene, track=track, wall_strikes=wall_strikes, window=window, timed_out=timed_out,
                         track_shared=track_shared, track_seen=track_seen, track_copied=track_copied)
    return ObservedThrow(tuple(observations), facts, tuple(positions), tuple(notes))


def _throw_facts(scene: ThrowScene, *, track, wall_strikes, window, timed_out: bool, track_shared, track_seen,
                 track_copied) -> ThrowFacts:
    """The facts of the throw as a whole: far-wall strike ((k)(2)(ii), (g):
    controller/far_wall.py), the far wall approached at all (controller/offer.py), the dice
    leaving the hand apart ((k)(2)(i): controller/release.py); notes what it finds. Arguments
    as :func:`observe_throw`'s."""
    geo, tol, notes, positions, dice = scene.geo, scene.tol, scene.notes, scene.positions, scene.dice
    readings_seen = [d for d in dice if not d.extra.get("hidden")]
    # --- far-wall strike, 5324.52(k)(2)(ii) and (g) --------------------------------------------
    band = geo.zones.get("far_wall_band") if geo is not None else None
    tracks, need = (list(track) if track is not None else None), 2
    shared = None
    if tracks is not None:
        shared = list(track_shared) if track_shared is not None else [[False] * len(t) for t in tracks]
    if tracks is not None and geo is not None and len(readings_seen) < 2:
        # a die left the table: (k)(1) voids the roll whatever it struck on its way; the far
        # wall is judged on the dice whose tracks came to rest on the table
        keep = [i for i, t in enumerate(tracks) if t and settled_on_table([t], geo, tol)]
        tracks, shared = [tracks[i] for i in keep], [shared[i] for i in keep]
        need = max(1, len(readings_seen))
    if tracks is not None and geo is not None:
        bias = far_wall.track_offset(track, [p for p, d in zip(positions, dice)
                                             if p is not None and not d.extra.get("from")], geo.size)
        if bias is not None:
            tracks = [[(t, x - bias[0], y - bias[1]) for t, x, y in tr] for tr in tracks]
            if math.hypot(*bias) >= 0.1:
                notes.append(f"track corrected by ({-bias[0]:.1f}, {-bias[1]:.1f}) mm, "
                             "its offset from the dice read at rest")
    wall = far_wall.wall_of(band, geo.zones.get("playing")) if band is not None else None
    reach = tol.far_wall_reach_mm
    if reach is None and wall is not None:
        reach_touch = max(wall.depth(float(x), float(y)) for x, y in band)  # the band's depth
    else:
        reach_touch = reach if reach is not None else 0.0
    found = far_wall.decide(tracks, need, wall, band, wall_strikes, window,
                            reach_mm=reach, beyond_mm=2.0 * geo.size if geo is not None else 0.0,
                            attribution_reach_mm=reach_touch + tol.strike_track_error * (geo.size if geo else 0.0),
                            gap_s=tol.strike_gap_s, shared=shared)
    struck = found.struck
    if struck is False:
        notes.append(f"a die did not strike the far wall ({found.how}), (k)(2)(ii)")
    moved = None
    if track is not None or track_seen is not None:
        moved = [p for t in (track or ()) for p in far_wall.track_points(t)] + list(track_seen or ())
    approached = far_wall.far_wall_approached(moved, wall, strikes=wall_strikes, window=window, gap_s=tol.strike_gap_s)
    # --- the dice leave the hand together, 5324.52(k)(2)(i) ------------------------------------
    late, apart = None, None
    if track is not None and track_copied is not None and tol.release_gap_s > 0:
        playing = geo.zones.get("playing") if geo is not None else None
        depth = (max(wall.depth(float(x), float(y)) for x, y in playing)
                 if wall is not None and playing is not None else None)
        late = release.late_entry(track, min_gap_s=tol.release_gap_s,
                                  min_apart_mm=tol.release_apart * (geo.size if geo is not None else DIE_SIZE_MM),
                                  far_wall=wall, table_depth_mm=depth, copied=track_copied)
        apart = late is not None
        if late is not None:
            notes.append(late.note())
    return ThrowFacts(timed_out=timed_out, struck_far_wall=struck, far_wall_approached=approached,
                      released_apart=apart)


def judge(readings: Sequence[DieReading], *, profile: IrregularityProfile | None = None,
          min_confidence: float = 0.8, **kwargs) -> tuple[Verdict, ObservedThrow]:
    """:func:`observe_throw` then :func:`controller.verdict.decide` under the profile's policy.

    Args:
        readings: see :func:`observe_throw`.
        profile: the jurisdiction profile (``None``: the built-in 9 NYCRR 5324.52 policy).
        min_confidence: a value read with less confidence (0..1) is in dispute.
        **kwargs: the other arguments of :func:`observe_throw`.

    Returns:
        ``(verdict, observed)``.
    """
    observed = observe_throw(readings, profile=profile, **kwargs)
    policy = profile.policy if profile is not None else NY_5324
    verdict = decide(observed.observations, observed.facts, policy=policy, min_confidence=min_confidence)
    return verdict, observed

