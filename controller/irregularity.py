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
  nothing covers (:func:`_leans_beside`: it leans on that die's side); one die
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
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Callable, Sequence

import numpy as np

from controller import far_wall, release
from controller.irregularity_profile import COCKED_AS_READ, IrregularityProfile
from controller.policy import NY_5324, Action
from controller.reasons import Reason
from controller.verdict import ZONE_PLAYING, DieObservation, ThrowFacts, Verdict, decide
from vision.types import DieReading

#: Die side in millimetres when the calibration does not say: 0.75 in, N.J.A.C. 13:47-20.25(b)2i.
DIE_SIZE_MM = 19.05

#: A die seen smaller than this share of a die on the felt there lies below the felt (fell off
#: the table): it is not put on a rail (:func:`observe_throw`).
BELOW_FELT_RATIO = 0.9

#: What a cocked die may lean on sideways that stands above the felt like a wall
#: (:class:`Tolerances` ``sure_flat``).
WALLS = frozenset({"rail", "chip bank", "dice cup"})

#: Calibration zone name -> verdict zone name (controller/verdict.py).
ZONE_MAP = {
    "playing": ZONE_PLAYING,
    "far_wall_band": ZONE_PLAYING,
    "chip_bank": "chip_bank",
    "dice_cup": "dice_cup",
    "rails": "rail",
    "rail": "rail",
}


def opposite_face(value: int) -> int:
    """The value on the face opposite ``value``: 1-6, 2-5, 3-4 (N.J.A.C. 13:47-20.25(b)2viii).

    Raises:
        ValueError: ``value`` is not 1..6.
    """
    if not isinstance(value, int) or not 1 <= value <= 6:
        raise ValueError(f"die face value must be 1..6, got {value!r}")
    return 7 - value


@dataclass(frozen=True, slots=True)
class TableObject:
    """An object on the layout a die may rest on or lean against (a stack of chips: a wager).

    Attributes:
        x_mm, y_mm: centre in table millimetres.
        radius_mm: footprint radius, mm (a chip: 19.5).
        height_mm: height above the felt, mm (3.3 per chip).
        kind: what it is, for notes (``"chips"``).
    """

    x_mm: float
    y_mm: float
    radius_mm: float
    height_mm: float
    kind: str = "chips"


@dataclass(frozen=True, slots=True)
class Tolerances:
    """Geometric thresholds, as multiples of the die side (so they hold for any camera).

    Attributes:
        on_die_ratio: two dice centres closer than this: one is on the other (two dice on the
            felt are at least one side apart).
        leaning_ratio: a die not flat with its centre this close to the other die rests on it
            (0.9: simulated camera, a die leaning on the side of a flat die measured 0.94-1.05
            sides from it, a tilted die on the other's top 0.76).
        stacked_offset: two tracks ending on one spot mean the other die is under the one die
            seen only when that die is within this x side of the spot. A die resting on the
            other has its centre over the lower die's top face, so the pair's centroid (the
            spot) is within ~0.25 side of it (simulated camera: at most 0.27); two dice side by
            side seen as one blob put the die seen half a side or more from it.
        merged_area_ratio: a lone die region larger than this x the die's area holds two dice
            (a reader's region of one die takes in its sides and shadow: up to ~1.9 areas).
        support_margin: a die centre within a stack's radius + this: its bottom rests on it.
        support_margin_tall: ``support_margin`` for a stack at least ``lean_min_height`` tall.
            A die cannot rest its bottom on such a stack's rim with its other edge on the felt
            (it would stand 37 degrees or more: it leans on the stack's side, which a side
            touches), so only a die whose centre is over the top, within this x side of the
            edge (the reader's error), rests on it. At ``support_margin`` (0.35) dice leaning
            40 degrees on a 5-chip stack's side, their upper face's centre 0.34-1.0 side
            beyond its edge, were taken to rest their bottom on it, and ny-5324 counted their
            face seen (simulated camera, cocked-on-tall-stack seeds 2700-2799, never looked
            at: 3 valid rolls published wrongly in 100; nineteenth session).
        contact_margin: within a stack's radius + this: it touches the stack (a stack lower
            than ``lean_min_height``; a taller one is reached within ``lean_contact``).
        lean_min_height: a stack lower than this cannot be leaned against sideways (the die
            rests on its top edge instead). A taller one is a wall to the die: reached within
            ``lean_contact`` of its edge (seventeenth session: 75 dice leaning 40 degrees on a
            5-chip stack's side, simulated camera, had their upper face 0.34-1.0 side beyond
            its edge; beyond 0.9 side they were on open felt, where either flatness estimate
            calling a die flat is enough, and 3 of 80 (ny-5324; 2 under nj-13-47) were
            published with the face seen).
        wall_contact: a die centre within this of the playing area's edge touches the rail.
        lean_contact: a die not lying flat whose upper face's centre is within this of a rail,
            the chip bank, the dice cup, the other die or a stack at least ``lean_min_height``
            tall leans on it. The reader gives the
            upper face's centre, which for a die tilted 45 degrees against a wall lies ~0.3
            side further from the wall than its footprint's (simulated table: 19 mm against
            the 14.3 mm of ``wall_contact``; no leaning die was found against the rail).
        strike_gap_s: wall-sensor strikes closer than this are one strike (seconds).
        strike_track_error: a sensor strike is credited to a die the track places within
            ``far_wall_reach_mm`` (the band's depth when unset) + this x side of the wall then
            (controller/far_wall.py): an allowance for the track's error. 0 by default: a
            sensor rings at every impact, the other die's rattle and later strikes included,
            and each mm of allowance credits those to a die that stopped just short of the
            wall (simulated table, a sensor ringing at every contact: a quarter side gave 24
            valid rolls published wrongly in 3,000 truth-mode throws and 0 good throws called
            missed, 0 gave 4 and 5; 1,600 camera throws: 20 and 29 against 13 and 43;
            docs/irregularities.md).
        open_felt_is_flat: ``True``: a die the reader calls not flat with no object within
            reach (no chip stack, rail, chip bank or other die) is read flat (nothing can hold
            it cocked). ``False`` (default): its face is in dispute (boxperson): the objects on
            the layout may not all be known, and a reader that misjudges flatness may also have
            misread the face (seen on the simulated table: a 6 read as a 4, "not flat").
        far_wall_reach_mm: a die struck the far wall only if its track came within this many mm
            of the wall (the band's edge farthest from the table's centre), not just into the
            band. Geometry: a die touching the wall's rubber with a corner has its centre
            ``rubber depth + die side / sqrt(2)`` from the wall (10 + 13.5 mm on the simulated
            table); no die beyond that touched it. ``None``: anywhere in the band counts.
        sure_flat: a die the reader calls flat with P(flat) (``DieReading.extra["p_flat"]``)
            below this, within ``lean_contact`` of a wall it could lean on (:data:`WALLS`: the
            rail, the chip bank, the dice cup), may be a cocked die leaning on it: which face is
            uppermost is in dispute, the boxperson decides ((h)(1)(ii)). The reader calls a die
            leaning 45 degrees on a wall flat with P(flat) 0.5-0.95, and flat dice beside a wall
            0.6-1.0 (simulated table: 0.75 the lowest in 300 natural throws): only the barely-flat
            are sent to the boxperson. 0: off.
        sure_flat_off_wall: the same, higher, for a die read flat whose centre is at least
            ``off_wall`` x side from the rail or the dice cup beside it (within
            ``lean_contact``; the chip bank is left out: dice leaning on its tray were read not
            flat, none published wrongly under ny-5324 in 200 throws, while flat dice beside it, read at P(flat)
            0.75, went to the boxperson in the default demo and bank-edge). A flat die touching
            a wall has its centre at most half a diagonal (0.71 side) from it; a die leaning
            45 degrees on it shows two faces spanning 1.41 sides out from it, read 0.73-1.01
            side out (simulated camera, 52 leaning dice read flat, P(flat) 0.51-0.96). So a die
            read flat out there either stands free of the wall or leans on it. Simulated camera,
            seeds 1000-1099: published wrongly leaning on the dice cup 19 -> 5 of 100 throws, on
            the rail's wall 18 -> 6 (0.6 -> 0.85); natural throws 8000-8299, none more to the
            boxperson (at 0.9: 19 -> 3 and 18 -> 2, but 2 more of 300 natural throws to the
            boxperson, flat dice 0.79-0.87 side out read at P(flat) 0.89-0.90). The other die,
            read flat, is such a wall too (as high as a die), measured from its face: two flat
            dice touching are 1.0-1.2 sides apart, a die leaning on the other was read flat
            1.16-1.5 sides from it. Cocked-on-die, ny-5324: wrong rolls 10 -> 6 of 100 (seeds
            1000-1099), 11 -> 3 (1100-1199); natural throws 1 more of 600 to the boxperson.
            0.85 -> 0.7 in the sixteenth session, with the tilt classifier retrained on the
            reader's windows: of 492 dice tilted 20 degrees or more in the lean scenarios (rail,
            cup, bank side, other die; seeds 2100-2299) the highest P(flat), the lower of the two
            estimates, was 0.50, below ``sure_flat`` (0.85 had guarded leans read 0.6-0.85 by the
            old model); flat dice standing out read 0.7-0.85 went to the boxperson: bank-edge
            98 -> 100 of 100 (ny-5324), natural 10050-10249 3 -> 2 of 200 (nj-13-47), the same
            elsewhere, no valid roll published wrongly. 0.7 -> 0.85 in the twenty-third session
            (the chip bank left out since): dice leaning 39-41 degrees on the rail's wall, the
            face towards the wall in view, were read flat at 0.75 and 0.79 (the lower of the two
            estimates) and published as valid rolls of the face seen (cocked-on-rail-wall seeds
            3854, 3923 and 4000-4199's one; ny-5324 counts the face opposite the wall, which the
            camera cannot see): 3 -> 0 of 400, while no verdict changed in cocked-on-die,
            cocked-on-cup, rail-edge, flat-beside-stack 3800-3999 nor in 700 natural throws
            (14500-14899, 14900-15199; ny-5324 and nj-13-47). 0: off.
        off_wall: see ``sure_flat_off_wall``.
        sure_flat_wedged: the same for a die read flat touching two or more objects (two chip
            stacks, a stack and a wall), where a die is held cocked: simulated camera, dice
            wedged between two 5-chip stacks were called flat with P(flat) 0.57-0.77 and
            published (4 of 117 throws); flat dice beside one stack 0.73 and up. 0.8 -> 0.7 in
            the seventeenth session, as ``sure_flat_off_wall`` in the sixteenth: with the
            retrained tilt classifier no die tilted 15 degrees or more in the lean scenarios
            had P(flat) (as the controller takes it) above 0.5, the dice wedged between two
            stacks (cocked-two-objects) at most 0.001; seeds 2100-2399 and natural 10050-10449,
            decisions re-run: cocked-on-die one more throw right in 300 (a flat die touching a
            stack and the other die, 0.72), no other verdict changed, none published wrongly;
            `make demo`'s first throw (a flat 1 touching the rail and the other die, 0.78) no
            longer goes to the boxperson. 0: off.
        on_top_margin: a die the reader calls not flat whose centre lies at least this far
            inside the edge of the one stack it rests on, touching nothing else, lies flat on
            it: nothing can hold it tilted there (a die cocked on a stack's edge has its centre
            beyond the edge, about half a side out). Simulated camera: dice lying flat on a
            one-chip stack, centres 0.7-0.95 side inside its edge, were called not flat in
            7 of 20 throws. 0: off (the die is judged cocked on the stack).
        tilt_decides_off_walls: ``True``: for a die with chip stacks or the other die within
            reach but no wall (rail, chip bank, dice cup), the tilt classifier's P(flat)
            (``DieReading.extra["p_flat_tilt"]``) is the die's P(flat), whether it is higher
            or lower than the face classifier's. ``False``: the lower of the two, as beside a
            wall. Simulated camera, seeds 1800-1899: the face classifier called 25 of 123 flat
            dice touching the other die and 23 of 193 flat dice on a one-chip stack not flat;
            the tilt classifier called all 198 dice cocked on a stack's edge or leaning on the
            other die not flat, 8 of those 316 flat dice not flat, and 31 of 94 dice leaning
            on the rail's wall flat (hence not beside walls; docs/irregularities.md,
            fourteenth session).
        tilt_room: a die read flat touching just a wall (the rail, the dice cup) and the other
            die lying flat beyond it, with less than this x side between the wall and the other
            die's near face, is not "wedged" (``sure_flat_wedged``): a die tilted by t needs
            cos t + sin t sides across (1.2 at 12 degrees). 0: off.
        tilt_sure_flat: beside a wall, where the lower of the two flatness estimates counts, the
            tilt classifier's P(flat) at or above this counts instead, however low the face
            classifier's. Simulated camera, seeds 2100-2299 (seventeenth session): of 753 dice
            tilted 15 degrees or more in the lean scenarios (rail, cup, bank side, the other
            die, chips) the tilt classifier gave none 0.99 or more (the highest 0.989 and 0.984,
            two dice leaning on the rail's wall), while flat dice beside the rail whose face
            classifier's P(flat) was below 0.7 had it at 0.999 or more in 26 of 67 (two flat
            dice touching, one against the rail: the face classifier sees the other die in its
            window). Cocked-on-die went 185 -> 193 of 200 right under ny-5324 (seeds 2300-2399,
            never looked at: 91 -> 96 of 100), natural throws one boxperson call fewer in 200
            (10050-10249 and 10250-10449), no valid roll published wrongly in any scenario
            (docs/irregularities.md, seventeenth session). 0: off.
        tilt_flat_beside_stacks: where the tilt classifier decides (``tilt_decides_off_walls``)
            for a die touching chip stacks only (no wall, not the other die), the die is flat
            when its P(flat) is at least this (0.5 elsewhere). Beside a stack the tilt
            classifier is sure of a cocked die and unsure of a flat one (simulated camera,
            nineteenth session): of 504 dice cocked 8 degrees or more on a stack's rim, between
            two stacks or leaning on a tall stack's side (seeds 2200-2299, 2600-2699 and, never
            looked at, 2700-2799) 503 had P(flat) below 0.11 and one, leaning 41 degrees on a
            6-chip stack, 0.41-0.51 (read flat at 0.5 too); of 918 flat dice touching a stack
            (3,500 natural throws, flat-beside-stack 2600-2799) 19 had 0.07-0.5, 15 of them
            0.2 or more, and were called cocked at 0.5 (most beside the layout's 5-chip
            stack at the far corner). 0.5: the old rule.
        beside_track_end: a track that came to rest within this x side of the one die seen,
            whose re-read there found only that die again (or nothing), is a die beside it the
            reader missed: it is read again a side out around the die seen (``die_beside``);
            a die read lying flat there counts as read (simulated camera, cocked-on-die: two
            dice touching, one against the rail and missed by the detector, the track's end 0.3
            side from the die seen; fifteenth session). 0: off.
        reread_apart_flat: a die read again (where a track ended, or beside the die seen)
            lying flat by either flatness estimate is another die than a die read when their
            centres are more than this x side (pixels, the expected side there) apart; nearer,
            the window walked back onto the die read. Simulated camera, seeds 2100-2299,
            2800-2999 (cocked-on-die, rail, tall stack, natural): such windows on the die
            already read were at most 0.40 side from it, on the other die 0.67 side or more
            (two dice touching against the rail, the geometry outputs pulling the window
            towards the pair's middle: 0.78, 0.98), every one of those read right. Before (1.0
            where a track ended, 0.8 beside the die): 5 throws of 200 to the boxperson
            (twenty-first session).
        reread_apart: the same for a die read again not lying flat by either estimate (a
            window on a leaning die's side face reads another value): on the die read, up to
            0.71 side; on the other die 0.80 side or more.
        tracks_apart: two dice read closer than ``on_die_ratio`` (or one not flat within
            ``leaning_ratio``) are nevertheless side by side, neither on the other, when the
            motion track saw them settle at least this x side apart, each read within
            ``track_end_match`` x side of its own track's end. A die on the other is one blob
            to the camera, its track ending on the lower die's (simulated camera, die-on-die
            seeds 4200-4259: the two ends at most 0.13 side apart); two dice touching side by
            side end a side apart (1.06-1.2 side in cocked-on-die 4200-4399), while the
            reader's windows on them, pulled towards the pair's middle by the geometry
            outputs, put their centres 0.73-0.89 side apart: two flat 5s touching face to face
            were called one on the other, a wrong no roll (seeds 4201, 4202; twenty-fourth
            session). 0: off.
        track_end_match: see ``tracks_apart``.
        spare_match: a die at rest in the dice cup within this x side (table mm) of a die seen
            there before the throw (``observe_throw(spares=...)``) is that spare die, not a
            thrown one, 9 NYCRR 5324.52(a)(5). Spare dice lie still in the cup; the reader
            places a die to ~0.1 side.
        spare_sure: a die in the cup whose value, read at least this surely before the throw
            and at rest, differs at a spare's place covers that spare (or knocked it aside):
            a thrown die, whether or not the cup holds more dice.
        release_gap_s: one die entering the view (its track's first point of its own,
            ``ThrowTracker.copied``) at least this many
            seconds after the other is evidence that the dice did not leave the shooter's hand
            simultaneously, 9 NYCRR 5324.52(k)(2)(i) (controller/release.py): the boxperson
            decides. Simulated camera at 60 fps (bench/irregularity_bench.py, twenty-fourth
            session): late-release seeds 0-99 (a die released 0.15-0.4 s late) entered 0.144-
            0.40 s after the other, 577-974 mm from it, at most 189 mm from the shooter's end;
            natural throws 0-199: both dice seen in the first frame, gap 0. 0.1 s (6 frames)
            catches every late die; held out (seeds 1000-): late-release 100 of 100 to the
            boxperson, natural 0 of 200. 0: off.
        release_apart: ... and only where the late die enters at least this x side (table mm)
            from the first die then (a die hidden by the other shows again beside it).
        doubt_on_mean: beside a wall (rail, chip bank, dice cup), where the lower of the two
            flatness estimates decides whether a die is flat, whether a die called flat is
            surely so (``sure_flat``, ``sure_flat_off_wall``, ``sure_flat_wedged``) is judged on
            the mean of the two (``True``) or on the lower (``False``, before the twenty-fifth
            session). Each estimate is fooled beside walls in its own way, seldom both: dice
            leaning 38-42 degrees on the dice cup were read flat by the face classifier at
            0.88-0.97 and by the tilt classifier at 0.0001-0.001, the two 2s leaning on the
            rail's wall it read highest at 0.73 and 0.62 (face 0.75, 0.78), while flat dice
            beside the cup and the rail that went to the boxperson were read 0.83 / 0.999,
            0.84 / 0.989, 0.99 / 0.81 (simulated camera; natural throws 4900-5899, lean
            scenarios 4900-5199, twenty-fifth session). No lean's mean was 0.8 or more.
        rim_reach: a die read flat that touches one low chip stack and nothing else (not over
            its top), its centre less than this x side from the stack's rim, may rest cocked
            on the rim: lying flat, its centre is at least half a side from it (its side
            against the stack). Dice cocked 12-14 degrees with an edge on a one-chip stack's
            rim had their upper face's centre placed 4.8-10.2 mm (0.25-0.54 side) from it;
            flat dice were placed within 0.64 mm (sd) of the truth, but beside the layout's
            white one-chip stack up to 2.8 mm nearer (simulated camera, thirtieth session).
            Such a die is in dispute, (h)(1)(ii), unless surely flat (``sure_flat_on_rim``),
            where a cocked die is not simply read (die-not-flat not ``read``; under 9 NYCRR
            5324.52(h)(1)(i) the face opposite the rim's side is the face up, the one read).
            nj-13-47 and ny-4620 on seeds never looked at (6950-7149): cocked-on-one-chip
            136 -> 191 of 200 (wrong rolls published 64 -> 9), flat-beside-low-stack (a flat die
            set against a 1-2 chip stack) 198 -> 197; 900 natural throws (22100-22999) unchanged.
            At 0.55: 199 and 196, and 2 of the 900 natural throws to the boxperson (flat dice
            placed 1.1 and 2.8 mm nearer the stack than they lay). 0: off.
        rim_low_height: ``rim_reach`` is for stacks lower than this x side (one chip, 3.3 mm,
            is 0.17 side): a die cocked on one tilts 12-14 degrees, where the tilt classifier
            is unsure; on two chips (0.35 side) 24-28 degrees, which it called not flat in 50 of
            50 throws (P(flat) at most 0.03), while a flat 1 beside a 2-chip stack, placed 1.1
            mm nearer it than it lay (P(flat) 0.77), went to the boxperson at ``rim_reach``
            0.55 (natural 22240).
        sure_flat_on_rim: the P(flat) (the tilt classifier's, beside chip stacks) from which a
            die within ``rim_reach`` of a low stack's rim is surely flat. Of 69 dice cocked on
            a one-chip rim (seeds 6880-6949), 20 were read flat at 0.28-0.92; of 138 flat dice
            against 1-2 chip stacks (6800-6949), 7 had less than 0.9 (0.24-0.87).
    """

    on_die_ratio: float = 0.8
    leaning_ratio: float = 0.9
    stacked_offset: float = 0.375
    merged_area_ratio: float = 2.6
    support_margin: float = 0.35
    support_margin_tall: float = 0.15
    contact_margin: float = 0.9
    lean_min_height: float = 0.6
    wall_contact: float = 0.75
    lean_contact: float = 1.1
    strike_gap_s: float = 0.005
    strike_track_error: float = 0.0
    open_felt_is_flat: bool = False
    far_wall_reach_mm: float | None = None
    sure_flat: float = 0.6
    sure_flat_off_wall: float = 0.85
    off_wall: float = 0.7
    sure_flat_wedged: float = 0.7
    on_top_margin: float = 0.25
    tilt_decides_off_walls: bool = True
    tilt_room: float = 1.2
    tilt_flat_beside_stacks: float = 0.2
    tilt_sure_flat: float = 0.999
    beside_track_end: float = 1.5
    reread_apart_flat: float = 0.6
    reread_apart: float = 0.9
    tracks_apart: float = 0.95
    track_end_match: float = 0.5
    spare_match: float = 0.5
    spare_sure: float = 0.9
    release_gap_s: float = 0.1
    release_apart: float = 4.0
    doubt_on_mean: bool = True
    rim_reach: float = 0.5
    rim_low_height: float = 0.25
    sure_flat_on_rim: float = 0.9


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


def _poly_centroid(poly: np.ndarray) -> tuple[float, float]:
    return float(np.mean(poly[:, 0])), float(np.mean(poly[:, 1]))


def _dist_to_boundary(poly: np.ndarray, p: tuple[float, float]) -> float:
    """Distance (same units) from ``p`` to the nearest edge of a closed polygon (N, 2)."""
    best = math.inf
    n = len(poly)
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        ab = b - a
        denom = float(ab @ ab)
        t = 0.0 if denom == 0 else max(0.0, min(1.0, float((np.asarray(p) - a) @ ab) / denom))
        q = a + t * ab
        best = min(best, math.hypot(p[0] - q[0], p[1] - q[1]))
    return best


#: The face of a die lying flat beside a leaning one, read at least this sure, is not covered
#: by it (:func:`_leans_beside`).
UNCOVERED_FACE_CONFIDENCE = 0.9


#: A die of two read side by side (their tracks settled a side apart) below this confidence is
#: read again a side and a tenth out from the other die (``pushed_out``): the geometry outputs
#: pull a window on two touching dice towards the pair's middle.
SECOND_READ_BELOW = 0.9


#: The face classifier's probability of a face that reads it (``vision.learned.FACE_MIN``).
FACE_READ_MIN = 0.6


def _face_classifier_reads(r: DieReading) -> bool:
    """The face classifier's own probabilities (``r.extra["p"]``, :mod:`vision.learned`) put
    ``r.value`` first with at least :data:`FACE_READ_MIN`: the value is the face seen
    square-on, not only the cocked-die reader's."""
    p = r.extra.get("p")
    if r.value is None or not p or len(p) < 6:
        return False
    best = max(range(len(p)), key=lambda k: p[k])
    return best == r.value - 1 and p[best] >= FACE_READ_MIN


def _flat_by_either(r: DieReading) -> bool:
    """Either flatness estimate (the reader's ``flat``, the tilt classifier's
    ``extra["p_flat_tilt"]`` at 0.5 or more) calls ``r`` flat."""
    return bool(r.flat or r.extra.get("p_flat_tilt", 0.0) >= 0.5)


def _leans_beside(leaning: DieReading, other: DieReading) -> bool:
    """``leaning`` leans on the side of ``other``, not on top of it (9 NYCRR 5324.52(k)(1) is a
    die "on top of the other die"): both flatness estimates call ``leaning`` not flat (the
    reader's ``flat`` and the tilt classifier's ``extra["p_flat_tilt"]`` below 0.5), and
    ``other`` is called flat by the tilt classifier with its face read at
    :data:`UNCOVERED_FACE_CONFIDENCE` or more, so nothing lies on its top face. A die leaning
    ~40 degrees on the other die shows its upper face tilted towards it, and its centre was
    placed 0.70-0.80 sides from the other's (simulated camera, cocked-on-die seeds 2100-2299:
    7 such pairs, each a lean), inside the 0.8 sides at which a die lying on the other die is
    told by distance. A die lying on the other die is seen flat, and the lower die's face is
    covered (die-on-die, 200 throws: the reader never found two dice closer than one side).
    Without a tilt classifier's estimate, ``False``."""
    t_lean, t_other = leaning.extra.get("p_flat_tilt"), other.extra.get("p_flat_tilt")
    if t_lean is None or t_other is None or other.value is None:
        return False
    return (not leaning.flat and float(t_lean) < 0.5 and float(t_other) >= 0.5
            and float(other.confidence) >= UNCOVERED_FACE_CONFIDENCE)


class _Geometry:
    """Pixel -> felt mm with parallax correction; zone lookup. Wraps a calibration
    (``camera.calibration.Calibration`` or anything with ``to_mm``, ``zone_of``, ``zones``,
    ``die_side_px``, ``die_size_mm``, ``camera_height_mm``)."""

    def __init__(self, cal, nadir_mm: tuple[float, float] | None, wall_height_mm: float) -> None:
        self.cal = cal
        self.size = float(getattr(cal, "die_size_mm", DIE_SIZE_MM) or DIE_SIZE_MM)
        self.D = getattr(cal, "camera_height_mm", None)
        zones = getattr(cal, "zones", {}) or {}
        self.zones = {k: np.asarray(v, dtype=np.float64).reshape(-1, 2) for k, v in zones.items()}
        playing = self.zones.get("playing")
        if nadir_mm is None:
            nadir_mm = getattr(cal, "nadir_mm", None)  # camera/calibration.py, when it knows
        if nadir_mm is None and playing is not None:
            nadir_mm = _poly_centroid(playing)
        self.nadir = nadir_mm
        self.wall_height = float(wall_height_mm)

    def expected_side_px(self, p_mm: tuple[float, float]) -> float | None:
        try:
            return float(self.cal.die_side_px(p_mm))
        except (AttributeError, ValueError):
            return None

    def at_height(self, p_obs: np.ndarray, h_mm: float) -> tuple[float, float]:
        """Felt point under a point seen at height ``h_mm`` (pinhole over ``nadir``)."""
        if self.D is None or self.nadir is None or h_mm <= 0:
            return float(p_obs[0]), float(p_obs[1])
        k = (self.D - h_mm) / self.D
        n = np.asarray(self.nadir)
        q = n + (np.asarray(p_obs) - n) * k
        return float(q[0]), float(q[1])

    def top_px(self, q_mm: tuple[float, float]) -> tuple[float, float]:
        """Pixel (x, y) where the camera sees the top face's centre of a die lying on the felt
        at ``q_mm`` (its footprint's centre, mm): the inverse of :meth:`at_height` at one die
        side up, then the homography. The top face is seen further from the nadir than the
        footprint, by ``size / (D - size)`` of its distance (simulated camera, a die 125 mm
        from the nadir: ~4 px at 0.94 px/mm); without the camera height or nadir, the felt
        point's pixel."""
        q = np.asarray(q_mm, dtype=np.float64)
        if self.D is not None and self.nadir is not None and self.D > self.size:
            n = np.asarray(self.nadir, dtype=np.float64)
            q = n + (q - n) * (self.D / (self.D - self.size))
        c = self.cal.to_px([[float(q[0]), float(q[1])]])[0]
        return float(c[0]), float(c[1])

    def height_from_size(self, side_px: float, p_obs: np.ndarray) -> float | None:
        """Height of a die's top face above the felt from its apparent side (mm), or ``None``."""
        exp = self.expected_side_px((float(p_obs[0]), float(p_obs[1])))
        if self.D is None or not exp or side_px <= 0:
            return None
        r = side_px / exp  # exp is the top face of a die on the felt (height = size)
        return float(self.D - (self.D - self.size) / r)

    def zone(self, p: tuple[float, float]) -> str:
        name = self.cal.zone_of(p)
        if name is None:
            return "off-table"
        return ZONE_MAP.get(name, name)


def _is_die(r: DieReading, min_presence: float) -> bool:
    return not (r.value is None and r.confidence < min_presence)


def _settled_on_table(track, geo: "_Geometry", tol: "Tolerances") -> list[tuple[float, float]]:
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
        if point_in_polygon(playing, (x2, y2)) and _dist_to_boundary(playing, (x2, y2)) >= 0.25 * geo.size:
            out.append((float(x2), float(y2)))
    return out


def _ends_apart(ends: Sequence[tuple[float, float]], pa: tuple[float, float], pb: tuple[float, float],
                size: float, tol: "Tolerances") -> float | None:
    """How far apart (mm) the motion track saw two dice settle, read at ``pa`` and ``pb`` (felt
    mm): the distance between the settled track ends (:func:`_settled_on_table`) nearest each,
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


def _stacked_under(track, positions, zones, geo: "_Geometry", tol: "Tolerances"
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


def _spares_left_out(now: Sequence[tuple[tuple[float, float], int | None]],
                     before: Sequence[tuple[tuple[float, float], int | None]], match_mm: float,
                     landed: bool = False) -> list[int]:
    """Which of the dice in the dice cup at rest are spare dice, not thrown ones (indices into
    ``now``), given the dice seen in the cup before the throw. Each die is ``((x, y) table mm,
    value or None)``, the value given only where it was read surely.

    A die at rest within ``match_mm`` of a spare's place, showing its value (or a value not read
    surely at either time), is that spare; one showing another value there covers the spare or
    knocked it aside: a thrown die. A die where no spare lay is a thrown die only as far as the
    cup holds more dice than before (it may be a spare the reader missed then). Where a die
    ``landed`` in the cup (its interior changed), at least one die there is a thrown die (the
    one farthest from every spare's place: the reader may see a die that landed on the spares
    as one of them). So a die that left the table is not made up for by a spare ((k)(1): a no
    roll in every profile, where a die in the cup goes to the boxperson under N.J.A.C. 13:47
    and 9 NYCRR 4620); a thrown die the reader misses at rest is taken for one that left the
    table (a no roll, the stricter verdict)."""
    free = list(before)
    covered: list[int] = []
    placed_anew: list[tuple[float, int]] = []
    for i, (p, value) in enumerate(now):
        d = [math.hypot(p[0] - q[0], p[1] - q[1]) for q, _ in free]
        if d and min(d) <= match_mm:
            _, v0 = free.pop(int(np.argmin(d)))
            if value is not None and v0 is not None and value != v0:
                covered.append(i)
        else:
            far = min((math.hypot(p[0] - q[0], p[1] - q[1]) for q, _ in before), default=math.inf)
            placed_anew.append((far, i))
    placed_anew.sort(reverse=True)
    thrown = covered + [i for _, i in placed_anew[:max(0, len(now) - len(before) - len(covered))]]
    if landed and not thrown and now:
        far = [min((math.hypot(p[0] - q[0], p[1] - q[1]) for q, _ in before), default=math.inf) for p, _ in now]
        thrown = [int(np.argmax(far))]
    return [i for i in range(len(now)) if i not in thrown]


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
                  reread: Callable[[tuple[float, float], float], DieReading | None] | None = None,
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
            holds more dice than before and it lies where no spare lay (:func:`_spares_left_out`):
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
    tol = tolerances
    cocked_as_read = profile is not None and profile.cocked == COCKED_AS_READ
    dice = [r for r in readings if _is_die(r, min_presence)]
    notes: list[str] = []
    geo = _Geometry(calibration, camera_nadir_mm, wall_height_mm) if calibration is not None else None

    # --- where each die is: felt-plane position and zone ---------------------------------------
    positions: list[tuple[float, float] | None] = []
    zones: list[str] = []
    placed_notes: list[list[str]] = []   # the notes placing each die made
    def place(r: DieReading) -> tuple[tuple[float, float], str]:
        """Felt position (mm) and zone of a die read at ``r.centre`` (notes what it finds)."""
        p_obs = geo.cal.to_mm([[float(r.centre[0]), float(r.centre[1])]])[0]
        if getattr(geo.cal, "zone_heights_mm", None) and hasattr(geo.cal, "place"):
            # the calibration knows how high each zone's surface is (rail tops, bank chips)
            placed = geo.cal.place((float(r.centre[0]), float(r.centre[1])))
            p = (float(placed.mm[0]), float(placed.mm[1]))
            zone = "off-table" if placed.zone is None else ZONE_MAP.get(placed.zone, placed.zone)
        else:
            p = geo.at_height(p_obs, geo.size)  # a die on the felt: its top face is one side up
            zone = geo.zone(p)
        if zone in ("off-table", "rail"):
            h = geo.height_from_size(r.side_px, p_obs)
            if h is not None and h > geo.size + 0.4 * geo.wall_height:
                p_h = geo.at_height(p_obs, h)
                if geo.zone(p_h) == "rail":
                    p, zone = p_h, "rail"
                    notes.append(f"die at ({p[0]:.0f}, {p[1]:.0f}) mm is {h:.0f} mm up: on the rail, (k)(2)(iv)")
            exp = geo.expected_side_px((float(p_obs[0]), float(p_obs[1])))
            lower = bool(exp) and 0 < r.side_px < BELOW_FELT_RATIO * exp
            if zone == "off-table" and not lower:
                # Seen beyond the rails at felt height, and not lower than the felt: a die on a
                # rail top is seen further out than it lies (parallax), and its apparent size
                # is too coarse a height gauge (the side faces show at the table's ends). Put
                # at the rail's own height, it lies on the rail.
                p_r = geo.at_height(p_obs, geo.wall_height + geo.size)
                if geo.zone(p_r) == "rail":
                    p, zone = p_r, "rail"
                    notes.append(f"die at ({p[0]:.0f}, {p[1]:.0f}) mm lies on the rail at the rail's height "
                                 f"{geo.wall_height:.0f} mm, (k)(2)(iv)")
        if zone != ZONE_PLAYING:
            notes.append(f"die {r.value} at ({p[0]:.0f}, {p[1]:.0f}) mm rests in zone {zone}")
        return p, zone

    for r in dice:
        if geo is None:
            positions.append(None)
            zones.append(ZONE_PLAYING)
            continue
        n_notes = len(notes)
        p, zone = place(r)
        positions.append(p)
        zones.append(zone)
        placed_notes.append(notes[n_notes:])
    size = geo.size if geo is not None else None
    if spares is not None and geo is not None:
        # --- the spare dice in the dice cup are not the dice thrown, (a)(5) ------------------
        def sure(r: DieReading) -> int | None:
            return r.value if r.value is not None and r.confidence >= tol.spare_sure else None

        before = []
        for r in spares:
            if _is_die(r, min_presence):
                n_notes = len(notes)
                p, zone = place(r)
                del notes[n_notes:]
                if zone == "dice_cup":
                    before.append((p, sure(r)))
        cup_now = [i for i, z in enumerate(zones) if z == "dice_cup"]
        drop = _spares_left_out([(positions[i], sure(dice[i])) for i in cup_now], before,
                                tol.spare_match * geo.size, landed=bool(cup_changed))
        if drop:
            gone = {cup_now[j] for j in drop}
            keep = [k for k in range(len(dice)) if k not in gone]
            # so far the notes are the placing's: a spare's place is no finding
            notes[:] = [n for k, made in enumerate(placed_notes) if k not in gone for n in made]
            notes.append(f"{len(drop)} of the {len(cup_now)} dice in the dice cup lay there before the throw "
                         f"({len(before)} spare dice seen then): not the dice thrown, (a)(5)")
            dice = [dice[k] for k in keep]
            positions = [positions[k] for k in keep]
            zones = [zones[k] for k in keep]

    def side_of(i: int) -> float:
        """The die side in the units of ``positions`` (mm) or pixels without calibration."""
        if size is not None:
            return size
        known = [r.side_px for r in dice if r.side_px > 0]
        return float(np.median(known)) if known else 20.0

    def where(i: int) -> tuple[float, float]:
        p = positions[i]
        return p if p is not None else (float(dice[i].centre[0]), float(dice[i].centre[1]))

    def expected_px(i: int) -> float | None:
        if geo is not None and positions[i] is not None:
            return geo.expected_side_px(positions[i])
        known = sorted(r.side_px for r in dice if r.side_px > 0)
        return known[0] if len(known) >= 2 else None

    def add_reread(found: DieReading) -> None:
        """Add a die found again by ``reread`` (where a track ended, or beside the die seen) as
        any die read, placed in its zone (the playing area holds the chip bank and the dice cup:
        a die found again there is in that zone, not in play)."""
        dice.append(replace(found, extra={**found.extra, "from": "track-reread"}))
        p, zone = place(found)
        positions.append(p)
        zones.append(zone)

    def apart_px(found: DieReading, s_px: float) -> float:
        """How far (pixels) a die read again must lie from a die read to be another die
        (``reread_apart_flat`` / ``reread_apart`` x ``s_px``)."""
        return (tol.reread_apart_flat if _flat_by_either(found) else tol.reread_apart) * s_px

    def pushed_out(found: DieReading, s_px: float, away_from: DieReading | None = None,
                   any_flatness: bool = False) -> DieReading:
        """``found`` (a die read again lying flat by either estimate) less than a side from a
        die read: read once more a side and a tenth out from that die along the line through
        the two, where a flat die beside it has its centre (the geometry outputs pull a window
        on two touching dice towards the pair's middle, and a window there sees the other die's
        edge: simulated camera, cocked-on-die seed 2138, a flat 5 against the rail read at
        P(flat) 0.52 0.78 side from the die read, 0.93 side out at ``die_beside``'s place).
        The new read replaces ``found`` when it reads the same value and still lies more than
        ``reread_apart_flat`` side from the die read, flat by either estimate. ``away_from``:
        the die to push it away from (default: the die read nearest it). ``any_flatness``: push
        ``found`` whatever its flatness (the read that replaces it must still lie flat by either
        estimate)."""
        if reread is None or found.value is None or not (any_flatness or _flat_by_either(found)) or not dice:
            return found
        r = away_from or min(dice, key=lambda d: math.hypot(found.centre[0] - d.centre[0], found.centre[1] - d.centre[1]))
        dx, dy = found.centre[0] - r.centre[0], found.centre[1] - r.centre[1]
        d = math.hypot(dx, dy)
        if not 0 < d < s_px:
            return found
        again = reread((r.centre[0] + dx * 1.1 * s_px / d, r.centre[1] + dy * 1.1 * s_px / d), s_px)
        if again is None or again.value != found.value or not _flat_by_either(again) or \
                math.hypot(again.centre[0] - r.centre[0], again.centre[1] - r.centre[1]) <= apart_px(again, s_px):
            return found
        return again

    # --- the other die ended where the one die seen lies: under it, (k)(1) ---------------------
    def die_beside() -> DieReading | None:
        """A die lying flat beside the one die seen that the reader missed: ``reread`` a side
        and a tenth out in 8 directions, a die read with a value, flat by either flatness
        estimate (beside the other die the tilt classifier's decides, see below), more than
        ``reread_apart_flat`` side from the one seen (its window moved onto another die, not
        back onto the one seen)."""
        if reread is None or positions[0] is None:
            return None
        (x0, y0), r0 = positions[0], dice[0]
        for k in range(8):
            q = (x0 + 1.1 * geo.size * math.cos(k * math.pi / 4), y0 + 1.1 * geo.size * math.sin(k * math.pi / 4))
            c = geo.top_px(q)
            s_px = geo.expected_side_px(q) or 10.0
            found = reread(c, s_px)
            if found is not None and found.value is not None and _flat_by_either(found) and \
                    math.hypot(found.centre[0] - r0.centre[0], found.centre[1] - r0.centre[1]) > apart_px(found, s_px):
                return found
        return None

    def stacked_under() -> tuple[float, float] | None:
        """:func:`_stacked_under` for the one die there is (noted), else ``None``. Two dice
        touching side by side, one missed by the reader and tracked as one blob whose centroid
        the die seen dominates, look the same to the track (simulated camera, natural seed
        9606: the ends 5.7 mm from the die seen, a wrong no roll): a die found lying flat
        beside it (:func:`die_beside`) is added as read, and nothing is under it."""
        found = _stacked_under(track, positions, zones, geo, tol) if geo is not None and len(dice) == 1 else None
        if found is not None and (beside := die_beside()) is not None:
            add_reread(beside)
            notes.append(f"two dice's tracks end {found[0]:.1f} mm apart at the one die seen, but a die lies "
                         f"flat beside it, read there: {beside.value} (p {beside.confidence:.2f}): not under it")
            return None
        if found is not None:
            notes.append(f"two dice's tracks end {found[0]:.1f} mm apart, at the one die seen "
                         f"({found[1]:.1f} mm from it): the other die is under it, (k)(1)")
        return found

    stacked = stacked_under()

    # --- a die the track saw settle on the table but the reader did not find --------------------
    settled = _settled_on_table(track, geo, tol) if geo is not None else []
    if settled and len(dice) < 2 and stacked is None:
        seen_at = [p for p in positions if p is not None]

        def clearance(q: tuple[float, float]) -> float:
            return min((math.hypot(q[0] - a[0], q[1] - a[1]) for a in seen_at), default=math.inf)

        # more dice settled than were read, or a die settled with no die read within two sides
        # of it: dice not read, the track ends farthest from the dice read first; at most as
        # many as the two dice less those read
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
            found = reread(c, s_px) if reread is not None else None
            # a die read there, or a die there not lying flat with its face unsure (a cocked
            # die, judged by what it rests on below: on two objects the roll is void, (h)(1)(i))
            # (not lying flat by either estimate: beside chip stacks the tilt classifier's decides)
            if found is not None and (found.value is not None or not found.flat
                                      or found.extra.get("p_flat_tilt", 1.0) < 0.5) and all(
                    math.hypot(found.centre[0] - r.centre[0], found.centre[1] - r.centre[1]) > apart_px(found, s_px)
                    for r in dice):
                found = pushed_out(found, s_px)
                add_reread(found)
                what = (f"{found.value} (p {found.confidence:.2f})" if found.value is not None
                        else "a die not lying flat, its face unsure")
                notes.append(f"the track saw a die settle at ({x:.0f}, {y:.0f}) mm that the reader did not find; "
                             f"read there: {what}")
                continue
            if len(dice) == 1 and positions[0] is not None and \
                    math.hypot(x - positions[0][0], y - positions[0][1]) < tol.beside_track_end * geo.size \
                    and (beside := die_beside()) is not None:
                # the track ended beside the one die seen and the window there walked onto it
                # (two dice touching, one against the rail, missed by the detector: the track's
                # centroid of the pair pulled towards the die seen; simulated camera,
                # cocked-on-die seeds 2012, 2027): a die read lying flat a side out is that die
                add_reread(beside)
                notes.append(f"the track saw a die settle at ({x:.0f}, {y:.0f}) mm, beside the die seen, that the "
                             f"reader did not find; read beside it: {beside.value} (p {beside.confidence:.2f})")
                continue
            box = (int(c[0] - s_px / 2), int(c[1] - s_px / 2), int(c[0] + s_px / 2), int(c[1] + s_px / 2))
            dice.append(DieReading(value=None, bbox=box, centre=(float(c[0]), float(c[1])), confidence=0.0,
                                   flat=True, side_px=0.0, extra={"hidden": True, "from": "track"}))
            positions.append((x, y))
            zone = geo.zone((x, y))
            zones.append(zone if zone in ("chip_bank", "dice_cup") else ZONE_PLAYING)
            notes.append(f"the track saw a die settle at ({x:.0f}, {y:.0f}) mm that the reader did not find: "
                         "it did not leave the table; its face is in dispute, (h)(1)(ii)")
        if stacked is None:
            # the one die is one the reader missed, found where the track ended
            stacked = stacked_under()

    # --- a die read between two touching dice ------------------------------------------------
    # A die found again lying flat (where a track ended, or beside the die seen) less than
    # ``on_die_ratio`` side from a die read: two dice lying flat are a side apart at least, so
    # the die read is two touching dice seen as one between them (simulated camera, cocked-on-die
    # seeds 5819, 5994: two flat dice in a column against the rail, one detector peak between
    # them). It is read once more a side and a tenth out from the die found, through it, and that
    # read (same value, flat by either estimate) replaces it; otherwise it stands.
    if reread is not None and geo is not None:
        for b in [d for d in dice if d.extra.get("from") == "track-reread" and d.value is not None
                  and _flat_by_either(d)]:
            for i, a in enumerate(dice):
                if a.extra.get("from") or a.value is None or positions[i] is None:
                    continue
                s_px = geo.expected_side_px(positions[i]) or 10.0
                d = math.hypot(a.centre[0] - b.centre[0], a.centre[1] - b.centre[1])
                if d >= tol.on_die_ratio * s_px:
                    continue
                again = pushed_out(a, s_px, away_from=b, any_flatness=True)
                if again is not a:
                    notes.append(f"die {a.value} read {d / s_px:.2f} side from the die found again ({b.value}): two "
                                 f"touching dice seen as one; read again a side out: {again.value} "
                                 f"(p {again.confidence:.2f})")
                    dice[i] = again
                    positions[i], zones[i] = place(again)

    in_play = [i for i, z in enumerate(zones) if z == ZONE_PLAYING]
    on_die = [False] * len(dice)
    sides_resting = [0] * len(dice)
    values: list[DieReading] = list(dice)
    hidden: list[DieReading] = []

    # --- one die on top of the other, 5324.52(k)(1) -------------------------------------------
    for a_i, a in enumerate(in_play):
        for b in in_play[a_i + 1:]:
            if dice[a].extra.get("from") or dice[b].extra.get("from"):
                # a track's end is a blob centroid, too rough to say one die is on another; a die
                # read again there (or beside the die seen) was taken for another die beside it
                # by its distance from the die read (``reread_apart_flat``), its window pulled
                # towards that die by the geometry outputs (simulated camera, cocked-on-die seed
                # 2188: two flat dice against the rail, placed 14.9 mm apart)
                continue
            s = side_of(a)
            pa, pb = where(a), where(b)
            d = math.hypot(pa[0] - pb[0], pa[1] - pb[1])
            leaning = (not _flat_by_either(dice[a]) or not _flat_by_either(dice[b])) and d < tol.leaning_ratio * s
            if (d < tol.on_die_ratio * s or leaning) and tol.tracks_apart and geo is not None and \
                    (te := _ends_apart(settled, pa, pb, geo.size, tol)) is not None and te >= tol.tracks_apart * geo.size:
                notes.append(f"dice read {d:.1f} apart (side {s:.1f}), but their tracks settled {te:.1f} mm apart: "
                             "side by side, neither on the other")
                for i, j in ((a, b), (b, a)):
                    # a die read unsurely there: its window was pulled towards the other die
                    # (seed 4202: a flat 2 against the rail read at p 0.74 six px off its centre)
                    if dice[i].confidence >= SECOND_READ_BELOW or dice[i].extra.get("from"):
                        continue
                    s_px = geo.expected_side_px(pa if i == a else pb) or 10.0
                    again = pushed_out(dice[i], s_px, away_from=dice[j])
                    if again is not dice[i] and again.confidence > dice[i].confidence:
                        notes.append(f"die {again.value} read again a side out from the other die: p "
                                     f"{dice[i].confidence:.2f} -> {again.confidence:.2f}")
                        dice[i] = values[i] = again
                        positions[i], zones[i] = place(again)
                continue
            if (d < tol.on_die_ratio * s or leaning) and not (_leans_beside(dice[a], dice[b])
                                                               or _leans_beside(dice[b], dice[a])):
                upper = a if (not dice[a].flat, dice[a].side_px) >= (not dice[b].flat, dice[b].side_px) else b
                on_die[upper] = True
                notes.append(f"dice {d:.1f} apart (side {s:.1f}): die {dice[upper].value} rests on the other, (k)(1)")
    if len(in_play) == 1:
        i = in_play[0]
        exp = expected_px(i)
        merged = bool(exp) and dice[i].side_px ** 2 > tol.merged_area_ratio * exp ** 2
        if stacked is not None or merged:
            on_die[i] = True
            r = dice[i]
            hidden.append(DieReading(value=None, bbox=r.bbox, centre=r.centre, confidence=0.0, flat=True,
                                     side_px=0.0, extra={"hidden": True}))
        if stacked is None and merged:
            notes.append(f"one die region of {dice[i].side_px:.1f} px side (die {exp:.1f} px): "
                         "a die on the other die, the lower one hidden, (k)(1)")

    # --- cocked dice, 5324.52(h)(1)(i) ---------------------------------------------------------
    playing = geo.zones.get("playing") if geo is not None else None
    bank = geo.zones.get("chip_bank") if geo is not None else None
    cup = geo.zones.get("dice_cup") if geo is not None else None

    def over_stack_top(i: int) -> tuple[TableObject, float] | None:
        """A stack whose top holds die ``i``'s centre at least ``on_top_margin`` x side inside
        its edge: ``(stack, mm inside)``, or ``None``."""
        if positions[i] is None or not tol.on_top_margin:
            return None
        p = where(i)
        for o in objects:
            inside = o.radius_mm - math.hypot(p[0] - o.x_mm, p[1] - o.y_mm)
            if inside >= tol.on_top_margin * side_of(i):
                return o, inside
        return None

    def apart(i: int, j: int) -> float:
        """Distance (mm) between the centres of dice ``i`` and ``j`` (``inf`` if unknown)."""
        if positions[i] is None or positions[j] is None:
            return math.inf
        return math.hypot(positions[i][0] - positions[j][0], positions[i][1] - positions[j][1])

    rims: dict[int, set[str]] = {}   # low stacks a die's centre is beside, not over (contacts)

    def contacts(i: int) -> tuple[list[str], list[str], list[str]]:
        """What die ``i`` may rest on: (support: under it, its bottom side rests on it; edge: a
        low stack beside it, its bottom edge may rest on the top; lean: what it leans on
        sideways), each a list of descriptions."""
        s = side_of(i)
        p = where(i)
        support: list[str] = []
        edge: list[str] = []
        lean: list[str] = []
        farther: list[str] = []   # tall stacks beyond contact_margin, within lean_contact
        if positions[i] is not None:
            for o in objects:
                d = math.hypot(p[0] - o.x_mm, p[1] - o.y_mm)
                tall = o.height_mm >= tol.lean_min_height * s
                if d < o.radius_mm + (tol.support_margin_tall if tall else tol.support_margin) * s:
                    support.append(f"{o.kind} at ({o.x_mm:.0f}, {o.y_mm:.0f})")
                    if not tall and d >= o.radius_mm:
                        rims.setdefault(i, set()).add(support[-1])
                elif d < o.radius_mm + tol.contact_margin * s:
                    (lean if tall else edge).append(f"{o.kind} at ({o.x_mm:.0f}, {o.y_mm:.0f})")
                elif tall and d < o.radius_mm + tol.lean_contact * s:
                    farther.append(f"{o.kind} at ({o.x_mm:.0f}, {o.y_mm:.0f})")
            reach = max(tol.wall_contact, tol.lean_contact) * s
            if playing is not None and _dist_to_boundary(playing, p) < reach:
                lean.append("rail")
            if bank is not None and _dist_to_boundary(bank, p) < max(tol.contact_margin, tol.lean_contact) * s:
                lean.append("chip bank")
            if cup is not None and _dist_to_boundary(cup, p) < tol.lean_contact * s:
                lean.append("dice cup")
            for j in in_play:
                if j != i and apart(i, j) < (0.5 + tol.lean_contact) * s:
                    lean.append("the other die")
            if not (support or edge or lean):
                # A stack a die can lean on sideways is a wall to it: a die leaning on it shows
                # its upper face as far out as from the rail (``lean_contact``), when it has
                # nothing nearer to lean on (a die leaning on the other die beside a 4-chip stack
                # was made to rest on both: simulated camera, cocked-on-die seed 2181).
                lean += farther
        return support, edge, lean

    def wall_distance(i: int, walls: Sequence[str]) -> float | None:
        """Distance (mm) from die ``i``'s centre to the nearest of ``walls`` (names of
        :data:`WALLS`: the rail is the playing area's edge), ``None`` if none is known."""
        if positions[i] is None:
            return None
        shape = {"rail": playing, "chip bank": bank, "dice cup": cup}
        d = [_dist_to_boundary(shape[w], positions[i]) for w in walls if shape.get(w) is not None]
        return min(d) if d else None

    def other_die_face_distance(i: int) -> float | None:
        """Distance (mm) from die ``i``'s centre to the nearest face of the other die in play
        (its centre distance less half a side), ``None`` if unknown."""
        d = min((apart(i, j) for j in in_play if j != i), default=math.inf)
        return d - 0.5 * side_of(i) if d < math.inf else None

    def other_die_unsure(i: int) -> bool:
        """The other die touches die ``i`` and is not read lying flat (or was never read: found
        by the track). It is then no object die ``i`` rests on: which of the two rests on which
        is not known (one die leaning on a flat one is read "not flat" twice, the leaning die
        sitting in the flat one's window; simulated camera)."""
        reach = (0.5 + tol.lean_contact) * side_of(i)
        return any(j != i and (not dice[j].flat or dice[j].extra.get("from") == "track")
                   and apart(i, j) < reach
                   for j in in_play)

    def no_room_to_tilt(i: int, touched: list[str], in_line: bool = False) -> bool:
        """Die ``i`` touches just a wall (the rail or the dice cup) and the other die lying
        flat on its far side, with less than ``tilt_room`` x side between the wall and that
        die's near face: a die tilted by t needs cos t + sin t sides across (1.2 at 12
        degrees), so it cannot be cocked between them. (Simulated camera, cocked-on-die seeds
        1800-1999: a flat die between the rail and the other die, 1.1 sides of room, read at
        P(flat) 0.52-0.79 went to the boxperson in 12 of 200 throws.)

        The other die must lie in front of die ``i``: less than a side off the line from die
        ``i`` square to the wall (beside it, die ``i`` has room to lean on the wall).
        ``in_line``: less than half a side off that line, and half a side farther from the wall
        than die ``i`` is enough (a window on one of two touching dice is pulled towards the
        other)."""
        walls = [w for w in touched if w in ("rail", "dice cup")]
        if not tol.tilt_room or len(touched) != 2 or len(walls) != 1 or "the other die" not in touched:
            return False
        s = side_of(i)
        for j in in_play:
            if j == i or not dice[j].flat or dice[j].extra.get("from") == "track" \
                    or apart(i, j) >= (0.5 + tol.lean_contact) * s:
                continue
            di, dj = wall_distance(i, walls), wall_distance(j, walls)
            if di is None or dj is None:
                continue
            # off the line square to the wall by a side or more, it leaves die i room to lean
            if math.sqrt(max(0.0, apart(i, j) ** 2 - (dj - di) ** 2)) >= (0.5 if in_line else 1.0) * s:
                continue
            if dj - di >= (0.5 if in_line else 0.8) * s and dj - 0.5 * s < tol.tilt_room * s:
                return True
        return False

    touching = {i: contacts(i) for i in in_play}   # (depends on where the dice are, not on flat)
    doubt_p: dict[int, float] = {}   # beside a wall: the P(flat) a die called flat is doubted by
    for i in in_play:
        tilt_p, face_p = dice[i].extra.get("p_flat_tilt"), dice[i].extra.get("p_flat")
        if tilt_p is None or face_p is None or tilt_p == face_p:
            continue
        flat_at = 0.5
        if not any(touching[i]):
            # On open felt nothing can hold a die cocked: either estimate calling it flat is
            # enough (simulated camera, natural seed 9398: a flat 4 in the open read at face
            # P(flat) 0.41, tilt 0.99, went to the boxperson). Both calling it not flat is left
            # to ``open_felt_is_flat``; the tilt classifier alone called 3 flat dice of 200
            # natural throws there not flat (8600-8799).
            take_tilt = tilt_p > face_p
        elif tol.tilt_decides_off_walls and not any(w in WALLS for w in touching[i][2]):
            # Beside chip stacks and the other die only, the tilt classifier's P(flat) is the
            # die's, higher or lower than the face classifier's: flat dice touching the other
            # die or lying on a chip were called not flat by the face classifier (P(flat)
            # 0.23-0.5: 25 of 123 and 23 of 193 on the simulated camera, seeds 1800-1899), which
            # sent their throws to the boxperson; the tilt classifier called every die cocked
            # on a stack or leaning on the other die not flat (198 of 198) and 308 of those
            # 123 + 193 flat dice flat.
            take_tilt = True
            if not any(o in WALLS or o == "the other die" for o in chain(*touching[i])):
                # chip stacks alone: it calls a cocked die not flat with P(flat) below 0.11,
                # a flat die now and then 0.2-0.5 (``tilt_flat_beside_stacks``)
                flat_at = tol.tilt_flat_beside_stacks
        else:
            # Beside a wall (rail, cup, bank), where both are fooled by a die leaning on it (the
            # tilt classifier called 31 of 94 such dice flat), the lower of the two: the face
            # classifier called dice cocked on a 2-chip stack's edge flat (simulated camera,
            # nj-13-47: 41 of 100 such throws published as valid rolls, before the rule above).
            # The tilt classifier *sure* it is flat (``tilt_sure_flat``) outweighs the face
            # classifier's doubt: the face classifier's P(flat) of flat dice beside the rail and
            # touching the other die fell to 0.1-0.6 (its window holds the other die), voiding
            # or disputing good throws, while no die leaning on a wall had the tilt
            # classifier's above 0.989.
            sure = bool(tol.tilt_sure_flat and tilt_p >= tol.tilt_sure_flat)
            take_tilt = tilt_p < face_p or sure
            if tol.doubt_on_mean and not sure:
                # called flat by the lower, doubted by the mean (``doubt_on_mean``)
                doubt_p[i] = (tilt_p + face_p) / 2
        if take_tilt:
            dice[i] = values[i] = replace(dice[i], flat=tilt_p >= flat_at,
                                          extra={**dice[i].extra, "p_flat": tilt_p, "p_flat_face": face_p})

    cocked_face_up_counts = cocked_as_read or \
        (profile.policy if profile is not None else NY_5324).actions.get(Reason.DIE_NOT_FLAT) is Action.READ

    def on_rim(i: int, touched: Sequence[str]) -> tuple[str, float] | None:
        """Die ``i`` touches one chip stack lower than ``rim_low_height`` x side and nothing
        else, its centre less than ``rim_reach`` x side from its rim and not over its top:
        ``(the stack, mm from its rim)``, else ``None``."""
        if not tol.rim_reach or len(touched) != 1 or positions[i] is None or over_stack_top(i) is not None:
            return None
        s, p = side_of(i), where(i)
        for o in objects:
            name = f"{o.kind} at ({o.x_mm:.0f}, {o.y_mm:.0f})"
            d = math.hypot(p[0] - o.x_mm, p[1] - o.y_mm) - o.radius_mm
            if name == touched[0] and o.height_mm < tol.rim_low_height * s and d < tol.rim_reach * s:
                return name, d
        return None

    for i in in_play:
        r = dice[i]
        if on_die[i]:
            continue
        support, edge, lean = (list(c) for c in touching[i])
        # The other die is an object this die rests on (or is wedged against) only when it lies
        # flat itself: with two dice touching, both read not flat, counting it as a resting side
        # voided throws whose counted face is only in dispute (simulated camera).
        mutual = "the other die" in lean and other_die_unsure(i)
        if mutual:
            lean = [w for w in lean if w != "the other die"]
        elif "the other die" in lean and not r.flat and rims.get(i):
            # A die leaning on the other die lying flat, its centre beside a low stack (within
            # ``support_margin`` of its edge, not over it): its foot is on the felt, the stack is
            # no side it rests on (simulated camera, cocked-on-die 2100-2299, 2800-2999,
            # 3000-3199: 10 of 11 such dice leant on the other die alone and were voided as
            # resting on two objects). An edge, which counts only where it leans on nothing.
            edge += [w for w in support if w in rims[i]]
            support = [w for w in support if w not in rims[i]]
        if r.flat:
            p_flat = doubt_p.get(i, r.extra.get("p_flat"))
            touched = support + edge + lean
            rim = None if cocked_face_up_counts else on_rim(i, touched)
            if p_flat is None or r.value is None or p_flat >= max(
                    tol.sure_flat, tol.sure_flat_wedged, tol.sure_flat_off_wall, tol.sure_flat_on_rim if rim else 0.0):
                continue
            walls = [w for w in lean if w in WALLS]
            # (a profile that reads a cocked die as seen reads one leaning on a wall as seen too,
            # but a die resting on two objects is void in every profile)
            off_walls = [w for w in walls if w != "chip bank"]   # (the bank: see sure_flat_off_wall)
            off = wall_distance(i, off_walls)
            off_die = other_die_face_distance(i) if "the other die" in lean else None
            far = tol.off_wall * side_of(i)
            if no_room_to_tilt(i, touched) or no_room_to_tilt(i, touched, in_line=True):
                # between a wall and the other die lying flat, no room to lean on either
                doubt = ""
            elif walls and not cocked_as_read and p_flat < tol.sure_flat:
                # a die leaning about 45 degrees on a wall can look square-on to the reader
                doubt = f"beside {walls[0]}: it may lean on it"
            elif off is not None and off >= far and p_flat < tol.sure_flat_off_wall and not cocked_as_read:
                # where a die leaning on the wall is seen, and a flat die does not touch it
                doubt = f"beside {off_walls[0]}, standing out from it: it may lean on it"
            elif off_die is not None and off_die >= far and p_flat < tol.sure_flat_off_wall and not cocked_as_read:
                # the flat other die is a wall as high as this one: leaning on it looks the same
                doubt = "beside the other die, standing out from it: it may lean on it"
            elif len(touched) >= 2 and p_flat < tol.sure_flat_wedged:
                # a die wedged between two stacks (or a stack and a wall) sits cocked on them
                doubt = f"touching {touched[0]} and {touched[1]}: it may rest on both"
            elif rim is not None and p_flat < tol.sure_flat_on_rim:
                # nearer the stack than a flat die against it can be: cocked on its rim, as
                # seen from above a die tilted 12 degrees on one chip (``rim_reach``)
                doubt = f"its centre {rim[1]:.1f} mm from the rim of {rim[0]}: it may rest cocked on it"
            else:
                doubt = ""
            if doubt:
                mean = ", the mean of the two estimates" if i in doubt_p else ""
                notes.append(f"die {r.value} read flat but unsure (P(flat) {p_flat:.2f}{mean}) {doubt}; "
                             "which face is uppermost is in dispute, (h)(1)(ii)")
                values[i] = replace(r, value=None, confidence=0.0,
                                    extra={**r.extra, "seen_value": r.value, "flat_in_doubt": True})
            continue
        touched = support + edge + lean
        if no_room_to_tilt(i, touched, in_line=True):
            # read not flat, but between a wall and the other die lying flat with less room than
            # a tilted die needs: it cannot be cocked there, it lies flat and its face counts
            # (simulated camera, cocked-on-die seeds 2146, 2270: two flat dice against the rail,
            # the one at the rail read not flat with the rail's dark wall in its window, voided
            # as resting on the rail and the other die); the face the face classifier read, or,
            # where it read none (or only the cocked-die reader did), a face in dispute, not a
            # void (seed 3226)
            wall = next(w for w in touched if w in WALLS)
            if _face_classifier_reads(r):
                values[i] = replace(r, flat=True, extra={**r.extra, "flat_overridden": "no room to tilt"})
                notes.append(f"die {r.value} read as not flat lies between the {wall} and "
                             "the other die lying flat, with no room to tilt: flat")
            else:
                values[i] = replace(r, flat=True, value=None, confidence=0.0,
                                    extra={**r.extra, "flat_overridden": "no room to tilt", "seen_value": r.value})
                notes.append(f"die ({r.value} seen) read as not flat lies between the {wall} and the other die "
                             "lying flat, with no room to tilt: flat, its face not read surely; which face is "
                             "uppermost is in dispute, (h)(1)(ii)")
            continue
        # A low stack beside the die is its support only when the die leans on nothing else:
        # a die leaning on the other die or a wall beside a low stack rests on that, and
        # reading the face opposite the stack's side published wrong rolls (simulated table).
        if not lean and not mutual:
            support += edge
        if "chip bank" in lean:
            # resting against the bank's chips or tray: on the craps bank, (k)(2)(iii), for
            # every profile (house practice reads a cocked die as seen, but not one in the bank)
            zones[i] = "chip_bank"
            notes.append(f"cocked die {r.value} leans on the chip bank: it rests on the bank, (k)(2)(iii)")
            continue
        # each distinct object touched is a side resting on it (a die wedged between two
        # stacks rests on both with two sides); one object under the die is its bottom side
        n_sides = len(support) + len(lean)
        stacks_only = all(o not in WALLS and o != "the other die" for o in support + lean)
        if n_sides > 1 and r.extra.get("p_flat_face", 0.0) >= 0.5 \
                and not (stacks_only and tol.tilt_decides_off_walls):
            # only the tilt classifier calls it not flat (vision.learned.p_flat_tilt), the face
            # classifier flat: whether it rests on those objects at all is in dispute, not a void
            # (simulated camera, natural seed 9095: two flat dice side by side by the dice cup).
            # Between chip stacks alone its "not flat" decides (``tilt_decides_off_walls``): a
            # void (cocked-two-objects, seeds 1800-1899: 4 of 100 throws went to the boxperson;
            # it called 1 of the 392 flat dice of the chip-stack scenarios not flat).
            sides_resting[i] = 1
            notes.append(f"die {r.value}: the tilt classifier calls it not flat, the face classifier flat, "
                         f"touching {', '.join(support + lean)}: whether it rests on them, and so which face "
                         "is uppermost, is in dispute, (h)(1)(ii)")
            values[i] = replace(r, value=None, confidence=0.0, extra={**r.extra, "seen_value": r.value})
            continue
        if n_sides > 1:
            sides_resting[i] = n_sides
            notes.append(f"cocked die {r.value}: {n_sides} sides rest on objects ({', '.join(support + lean)}): "
                         "void, (h)(1)(i)")
            continue
        top = over_stack_top(i)
        if n_sides == 1 and not edge and top is not None:
            # its centre over the middle of the stack it rests on, touching nothing else: nothing
            # holds it tilted, so it lies flat on the stack (a die on a stack's edge has its
            # centre beyond the edge); the reader's "not flat" is its own error
            o, inside = top
            values[i] = replace(r, flat=True, extra={**r.extra, "flat_overridden": "on a stack's top"})
            notes.append(f"die {r.value} read as not flat lies {inside:.0f} mm inside the top of the {o.kind} at "
                         f"({o.x_mm:.0f}, {o.y_mm:.0f}), touching nothing else: flat on it")
            continue
        if n_sides == 0 and not mutual and tol.open_felt_is_flat:
            # nothing within reach to rest on: a die at rest on open felt lies flat; the reader's
            # "not flat" is its own error (a die cannot rest cocked on nothing)
            values[i] = replace(r, flat=True, extra={**r.extra, "flat_overridden": True})
            notes.append(f"die {r.value} read as not flat but rests on open felt, no object within reach: flat")
            continue
        if cocked_as_read:
            notes.append(f"cocked die read as seen: {r.value} (house practice)")
            continue
        if mutual and not lean:
            sides_resting[i] = 1
            notes.append(f"cocked die ({r.value} seen) touches the other die, which is not read lying flat: "
                         "which rests on which, and so which face is uppermost, is in dispute, (h)(1)(ii)")
            values[i] = replace(r, value=None, confidence=0.0, extra={**r.extra, "seen_value": r.value})
            continue
        if support and r.value is not None:
            sides_resting[i] = 1
            notes.append(f"cocked die: bottom side {opposite_face(r.value)} rests on {support[0]}; "
                         f"the opposite face {r.value} counts, (h)(1)(i)")
            continue
        sides_resting[i] = 1 if lean or support else 0
        if support:   # its bottom side on the stack, but the face opposite it was not read
            what = f"rests on {support[0]}, its upper face not read"
        else:
            what = f"leans on {lean[0]}" if lean else "rests on no object the camera knows"
        notes.append(f"cocked die ({r.value} seen) {what}: which face is uppermost is in dispute, (h)(1)(ii)")
        values[i] = replace(r, value=None, confidence=0.0, extra={**r.extra, "seen_value": r.value})

    observations = [DieObservation(values[i], zone=zones[i], on_die=on_die[i], sides_resting=sides_resting[i])
                    for i in range(len(dice))]
    for h in hidden:
        observations.append(DieObservation(h, zone=ZONE_PLAYING, on_die=False))
        positions.append(positions[in_play[0]] if in_play else None)

    # --- far-wall strike, 5324.52(k)(2)(ii) and (g) --------------------------------------------
    band = geo.zones.get("far_wall_band") if geo is not None else None
    tracks, need = (list(track) if track is not None else None), 2
    shared = None
    if tracks is not None:
        shared = list(track_shared) if track_shared is not None else [[False] * len(t) for t in tracks]
    if tracks is not None and geo is not None and len(readings_seen := [d for d in dice if not d.extra.get("hidden")]) < 2:
        # a die left the table: (k)(1) voids the roll whatever it struck on its way; the far
        # wall is judged on the dice whose tracks came to rest on the table
        keep = [i for i, t in enumerate(tracks) if t and _settled_on_table([t], geo, tol)]
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
                                  min_apart_mm=tol.release_apart * (geo.size if geo is not None else 19.05),
                                  far_wall=wall, table_depth_mm=depth, copied=track_copied)
        apart = late is not None
        if late is not None:
            notes.append(late.note())
    facts = ThrowFacts(timed_out=timed_out, struck_far_wall=struck, far_wall_approached=approached,
                       released_apart=apart)
    return ObservedThrow(tuple(observations), facts, tuple(positions), tuple(notes))


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
