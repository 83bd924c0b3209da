"""Dice the reader did not find where the motion track saw them come to rest (pure but for
the reader asked again).

The table service reads the dice once, at rest; the motion track (controller/track.py) saw where
each die came to rest. Where they disagree, 9 NYCRR 5324.52(k)(1) is at stake: a die the reader
missed did not leave the table. This stage (run by ``controller.irregularity.observe_throw``):

* :func:`other_die_under`: two tracks end on the one die seen, so the other die is under it;
* :func:`find_missed_dice`: a track settled where no die was read: the reader is asked there
  (``ThrowScene.reread``, ``vision.reader.read_die_at``), or beside the one die seen
  (:func:`die_beside`); nothing read: a hidden die whose face is in dispute ((h)(1)(ii));
* :func:`split_touching_pair`: a die read between two touching dice is read again a side out.

Thresholds are :class:`~controller.tolerances.Tolerances` (``reread_apart_flat``,
``reread_apart``, ``beside_track_end``, ``on_die_ratio``, ``stacked_offset``,
``track_end_match``); what each was measured on is in its docstring and docs/irregularities.md.
"""
from __future__ import annotations

import math
from typing import Sequence

from controller import far_wall
from controller.felt import FeltGeometry, dist_to_boundary
from controller.scene import ThrowScene, flat_by_either
from controller.tolerances import Tolerances
from controller.verdict import ZONE_PLAYING
from vision.types import DieReading


def settled_on_table(track, geo: FeltGeometry, tol: Tolerances) -> list[tuple[float, float]]:
    """End points (mm) of the tracks whose die came to rest inside the playing area.

    A track "settled" when its last three points, at the end of the throw (within 0.25 s of
    the last point of any track), moved less than half a die side, and its last point lies
    inside the playing area, at least a quarter side from its edge (a die against a wall has
    its centre half a side from it). A die flying off the table leaves the view fast and does
    not settle.
    """
    if not track:
        return []
    playing = geo.zones.get("playing")
    if playing is None:
        return []
    from camera.calibration import point_in_polygon

    tracks = [list(t) for t in track if len(t) >= 3]
    if not tracks:
        return []
    t_end = max(t[-1][0] for t in tracks)
    out = []
    for t in tracks:
        (_, x0, y0), (_, x2, y2) = t[-3], t[-1]
        if t_end - t[-1][0] > 0.25 or math.hypot(x2 - x0, y2 - y0) > 0.5 * geo.size:
            continue
        if point_in_polygon(playing, (x2, y2)) and dist_to_boundary(playing, (x2, y2)) >= 0.25 * geo.size:
            out.append((float(x2), float(y2)))
    return out


def ends_apart(ends: Sequence[tuple[float, float]], pa: tuple[float, float], pb: tuple[float, float],
               size: float, tol: Tolerances) -> float | None:
    """How far apart (mm) the motion track saw two dice settle, read at ``pa`` and ``pb`` (felt
    mm): the distance between the settled track ends (:func:`settled_on_table`) nearest each,
    when they are two different ends, each within ``track_end_match`` x ``size`` mm of its die;
    else ``None`` (the track cannot tell them apart)."""
    if len(ends) < 2:
        return None
    near = []
    for p in (pa, pb):
        k = min(range(len(ends)), key=lambda j: math.hypot(ends[j][0] - p[0], ends[j][1] - p[1]))
        if math.hypot(ends[k][0] - p[0], ends[k][1] - p[1]) > tol.track_end_match * size:
            return None
        near.append(k)
    if near[0] == near[1]:
        return None
    (xa, ya), (xb, yb) = ends[near[0]], ends[near[1]]
    return math.hypot(xa - xb, ya - yb)


def stacked_under(track, positions, zones, geo: FeltGeometry, tol: Tolerances
                  ) -> tuple[float, float] | None:
    """Whether the motion track says the other die lies under (or on) the one die seen, (k)(1).

    Two dice at rest on the felt have their centres at least one side apart; a die on the
    other is one blob to the camera, so two tracks that end closer than ``on_die_ratio`` x
    the side to each other, with the one die read in play within ``stacked_offset`` x the side
    of that spot, end on one spot: one die is on the other, and the lower one is hidden. (Two
    dice touching side by side, read as one, end a side apart, or, tracked as one blob, on
    one spot half a side or more from the die read: not stacked.)

    Args:
        track: the dice's motion tracks, each ``[(t s, x mm, y mm), ...]``, or ``None``.
        positions: felt positions (mm) of the dice read; exactly one.
        zones: their zones.

    Returns:
        ``(distance between the two track ends, distance of their midpoint from the die)`` in
        mm, or ``None`` when the track does not show two dice ending there.
    """
    if not track or len(positions) != 1 or positions[0] is None or zones[0] != ZONE_PLAYING:
        return None
    ends = [(float(t[-1][1]), float(t[-1][2])) for t in track if len(t)]
    reach = tol.on_die_ratio * geo.size
    p = positions[0]
    near = [q for q in ends if math.hypot(q[0] - p[0], q[1] - p[1]) < reach]
    best = None
    for a in range(len(near)):
        for b in range(a + 1, len(near)):
            d = math.hypot(near[a][0] - near[b][0], near[a][1] - near[b][1])
            mid = ((near[a][0] + near[b][0]) / 2, (near[a][1] + near[b][1]) / 2)
            off = math.hypot(mid[0] - p[0], mid[1] - p[1])
            if d < reach and off < tol.stacked_offset * geo.size and (best is None or d < best[0]):
                best = (d, off)
    return best


def pushed_out(scene: ThrowScene, found: DieReading, s_px: float, away_from: DieReading | None = None,
               any_flatness: bool = False) -> DieReading:
    """``found`` (a die read again lying flat by either estimate) less than a side from a
    die read: read once more a side and a tenth out from that die along the line through
    the two, where a flat die beside it has its centre (the geometry outputs pull a window
    on two touching dice towards the pair's middle, and a window there sees the other die's
    edge: simulated camera, cocked-on-die seed 2138, a flat 5 against the rail read at
    P(flat) 0.52 0.78 side from the die read, 0.93 side out at :func:`die_beside`'s place).

    Args:
        found: the reading to move.
        s_px: die side, pixels.
        away_from: the die to push it away from (default: the die read nearest it).
        any_flatness: push ``found`` whatever its flatness (the read that replaces it must
            still lie flat by either estimate).

    Returns:
        The new read, where it reads the same value and still lies more than
        ``reread_apart_flat`` side from the die read, flat by either estimate; else ``found``.
    """
    reread, dice = scene.reread, scene.dice
    if reread is None or found.value is None or not (any_flatness or flat_by_either(found)) or not dice:
        return found
    r = away_from or min(dice, key=lambda d: math.hypot(found.centre[0] - d.centre[0], found.centre[1] - d.centre[1]))
    dx, dy = found.centre[0] - r.centre[0], found.centre[1] - r.centre[1]
    d = math.hypot(dx, dy)
    if not 0 < d < s_px:
        return found
    again = reread((r.centre[0] + dx * 1.1 * s_px / d, r.centre[1] + dy * 1.1 * s_px / d), s_px)
    if again is None or again.value != found.value or not flat_by_either(again) or \
            math.hypot(again.centre[0] - r.centre[0], again.centre[1] - r.centre[1]) <= scene.apart_px(again, s_px):
        return found
    return again


def die_beside(scene: ThrowScene) -> DieReading | None:
    """A die lying flat beside the one die seen (``scene.dice[0]``) that the reader missed:
    ``reread`` a side and a tenth out in 8 directions, a die read with a value, flat by either
    flatness estimate (beside the other die the tilt classifier's decides), more than
    ``reread_apart_flat`` side from the one seen (its window moved onto another die, not back
    onto the one seen). ``None`` where none is found, or without ``reread`` or a position."""
    geo = scene.geo
    if scene.reread is None or scene.positions[0] is None:
        return None
    (x0, y0), r0 = scene.positions[0], scene.dice[0]
    for k in range(8):
        q = (x0 + 1.1 * geo.size * math.cos(k * math.pi / 4), y0 + 1.1 * geo.size * math.sin(k * math.pi / 4))
        c = geo.top_px(q)
        s_px = geo.expected_side_px(q) or 10.0
        found = scene.reread(c, s_px)
        if found is not None and found.value is not None and flat_by_either(found) and \
                math.hypot(found.centre[0] - r0.centre[0], found.centre[1] - r0.centre[1]) > scene.apart_px(found, s_px):
            return found
    return None


def other_die_under(scene: ThrowScene, track) -> tuple[float, float] | None:
    """:func:`stacked_under` for the one die there is (noted), else ``None``, (k)(1).

    Two dice touching side by side, one missed by the reader and tracked as one blob whose
    centroid the die seen dominates, look the same to the track (simulated camera, natural seed
    9606: the ends 5.7 mm from the die seen, a wrong no roll): a die found lying flat beside it
    (:func:`die_beside`) is added as read, and nothing is under it.
    """
    geo = scene.geo
    found = stacked_under(track, scene.positions, scene.zones, geo, scene.tol) \
        if geo is not None and len(scene.dice) == 1 else None
    if found is not None and (beside := die_beside(scene)) is not None:
        scene.add_reread(beside)
        scene.notes.append(f"two dice's tracks end {found[0]:.1f} mm apart at the one die seen, but a die lies "
                           f"flat beside it, read there: {beside.value} (p {beside.confidence:.2f}): not under it")
        return None
    if found is not None:
        scene.notes.append(f"two dice's tracks end {found[0]:.1f} mm apart, at the one die seen "
                           f"({found[1]:.1f} mm from it): the other die is under it, (k)(1)")
    return found


def find_missed_dice(scene: ThrowScene, track, stacked: tuple[float, float] | None
                     ) -> tuple[list[tuple[float, float]], tuple[float, float] | None]:
    """Dice the track saw settle on the table that the reader did not find: read again there
    and added, or added hidden (their face in dispute, (h)(1)(ii)); they did not leave the
    table, (k)(1).

    More dice settled than were read, or a die settled with no die read within two sides of it:
    dice not read, the track ends farthest from the dice read first; at most as many as the two
    dice less those read.

    Args:
        track: the motion track, per die ``[(t s, x mm, y mm), ...]``, or ``None``.
        stacked: :func:`other_die_under`'s finding so far.

    Returns:
        ``(settled, stacked)``: the settled track ends (mm, :func:`settled_on_table`) and
        :func:`other_die_under` asked again when a die was added to a lone die.
    """
    geo, tol, dice, positions, notes = scene.geo, scene.tol, scene.dice, scene.positions, scene.notes
    settled = settled_on_table(track, geo, tol) if geo is not None else []
    if not (settled and len(dice) < 2 and stacked is None):
        return settled, stacked
    seen_at = [p for p in positions if p is not None]

    def clearance(q: tuple[float, float]) -> float:
        return min((math.hypot(q[0] - a[0], q[1] - a[1]) for a in seen_at), default=math.inf)

    far = sum(clearance(q) > 2.0 * geo.size for q in settled)
    missing = min(2 - len(dice), max(len(settled) - len(dice), far))
    done: list[tuple[float, float]] = []
    # A track point is the centroid of all that changed (the die's sides, its shadow), which
    # the light pulls a millimetre or two off the die (``far_wall.track_offset``, measured
    # on the dice read): the die is read again where its track ended less that offset, at
    # the pixel where its top face shows (simulated camera, cocked-on-die seed 5841: a 1
    # against the rail touching a 6, the window 5.5 px off the 1 walked onto the pair's
    # middle and read nothing; at the corrected place it reads the 1 at p 0.99).
    # An offset of more than a quarter side is no light's: the die read is then two touching
    # dice read as one at their middle (seed 5819: 8.8 mm), and the track end is kept
    # (``far_wall.MAX_OFFSET_SIDES``).
    offset = far_wall.track_offset(track, [p for p, d in zip(positions, dice)
                                           if p is not None and not d.extra.get("from")], geo.size) or (0.0, 0.0)
    for x, y in sorted(settled, key=clearance, reverse=True)[:missing]:
        if any(math.hypot(x - u, y - v) < tol.on_die_ratio * geo.size for u, v in done):
            continue   # two tracks ending on one spot: one blob (one die on the other), one die
        done.append((x, y))
        c = geo.top_px((x - offset[0], y - offset[1]))
        s_px = geo.expected_side_px((x, y)) or 10.0
        found = scene.reread(c, s_px) if scene.reread is not None else None
        # a die read there, or a die there not lying flat with its face unsure (a cocked
        # die, judged by what it rests on below: on two objects the roll is void, (h)(1)(i))
        # (not lying flat by either estimate: beside chip stacks the tilt classifier's decides)
        if found is not None and (found.value is not None or not found.flat
                                  or found.extra.get("p_flat_tilt", 1.0) < 0.5) and all(
                math.hypot(found.centre[0] - r.centre[0], found.centre[1] - r.centre[1]) > scene.apart_px(found, s_px)
                for r in dice):
            found = pushed_out(scene, found, s_px)
            scene.add_reread(found)
            what = (f"{found.value} (p {found.confidence:.2f})" if found.value is not None
                    else "a die not lying flat, its face unsure")
            notes.append(f"the track saw a die settle at ({x:.0f}, {y:.0f}) mm that the reader did not find; "
                         f"read there: {what}")
            continue
        if len(dice) == 1 and positions[0] is not None and \
                math.hypot(x - positions[0][0], y - positions[0][1]) < tol.beside_track_end * geo.size \
                and (beside := die_beside(scene)) is not None:
            # the track ended beside the one die seen and the window there walked onto it
            # (two dice touching, one against the rail, missed by the detector: the track's
            # centroid of the pair pulled towards the die seen; simulated camera,
            # cocked-on-die seeds 2012, 2027): a die read lying flat a side out is that die
            scene.add_reread(beside)
            notes.append(f"the track saw a die settle at ({x:.0f}, {y:.0f}) mm, beside the die seen, that the "
                         f"reader did not find; read beside it: {beside.value} (p {beside.confidence:.2f})")
            continue
        box = (int(c[0] - s_px / 2), int(c[1] - s_px / 2), int(c[0] + s_px / 2), int(c[1] + s_px / 2))
        dice.append(DieReading(value=None, bbox=box, centre=(float(c[0]), float(c[1])), confidence=0.0,
                               flat=True, side_px=0.0, extra={"hidden": True, "from": "track"}))
        positions.append((x, y))
        zone = geo.zone((x, y))
        scene.zones.append(zone if zone in ("chip_bank", "dice_cup") else ZONE_PLAYING)
        notes.append(f"the track saw a die settle at ({x:.0f}, {y:.0f}) mm that the reader did not find: "
                     "it did not leave the table; its face is in dispute, (h)(1)(ii)")
    if stacked is None:
        # the one die is one the reader missed, found where the track ended
        stacked = other_die_under(scene, track)
    return settled, stacked


def split_touching_pair(scene: ThrowScene) -> None:
    """A die read between two touching dice, read again a side out.

    A die found again lying flat (where a track ended, or beside the die seen) less than
    ``on_die_ratio`` side from a die read: two dice lying flat are a side apart at least, so
    the die read is two touching dice seen as one between them (simulated camera, cocked-on-die
    seeds 5819, 5994: two flat dice in a column against the rail, one detector peak between
    them). It is read once more a side and a tenth out from the die found, through it, and that
    read (same value, flat by either estimate) replaces it (:func:`pushed_out`); otherwise it
    stands. Needs ``reread`` and a calibration (else nothing changes).
    """
    geo, dice, positions = scene.geo, scene.dice, scene.positions
    if scene.reread is None or geo is None:
        return
    for b in [d for d in dice if d.extra.get("from") == "track-reread" and d.value is not None
              and flat_by_either(d)]:
        for i, a in enumerate(dice):
            if a.extra.get("from") or a.value is None or positions[i] is None:
                continue
            s_px = geo.expected_side_px(positions[i]) or 10.0
            d = math.hypot(a.centre[0] - b.centre[0], a.centre[1] - b.centre[1])
            if d >= scene.tol.on_die_ratio * s_px:
                continue
            again = pushed_out(scene, a, s_px, away_from=b, any_flatness=True)
            if again is not a:
                scene.notes.append(f"die {a.value} read {d / s_px:.2f} side from the die found again ({b.value}): two "
                                   f"touching dice seen as one; read again a side out: {again.value} "
                                   f"(p {again.confidence:.2f})")
                dice[i] = again
                positions[i], scene.zones[i] = scene.place(again)
