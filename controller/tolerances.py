"""The irregularity detectors' thresholds (:class:`Tolerances`), as multiples of the die side.

:func:`controller.irregularity.observe_throw` and the stages it runs (controller/scene.py,
controller/missed_dice.py, controller/die_on_die.py, controller/cocked.py) take them; a rig sets
them under ``[rules.tolerances]`` (controller/config.py, config/table.toml). Each attribute's
docstring says what it is for and where its value was measured.
"""
from __future__ import annotations

from dataclasses import dataclass


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
            docs/irregularities-log.md).
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
            below this, within ``lean_contact`` of a wall it could lean on (``controller.cocked.WALLS``: the
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
            on the rail's wall flat (hence not beside walls; docs/irregularities-log.md,
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
            (docs/irregularities-log.md, seventeenth session). 0: off.
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
        face_sure_not_flat: ``tilt_flat_beside_stacks`` makes a die flat only when the face
            classifier's P(flat) is at least this; below it, the tilt classifier's P(flat) must
            reach 0.5, as elsewhere. Two wrong rolls in 200 (simulated camera,
            cocked-on-tall-stack seeds 7600-7799, ny-5324): dice leaning 39-42 degrees on a
            4- and a 6-chip stack were called flat; one at tilt P(flat) 0.25 had the face
            classifier's at 0.0015. Of 1,414 flat dice touching chip stacks (seeds 6800-7829,
            one-chip, low-stack, tall-stack and natural throws) the lowest face P(flat) was
            0.20. 0: off.
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
    face_sure_not_flat: float = 0.1
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

