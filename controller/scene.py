"""The dice of one throw as the irregularity detectors work on them: where each lies and in
which zone, the notes made on the way (:class:`ThrowScene`), and the spare dice in the cup.

:func:`controller.irregularity.observe_throw` places the dice read at rest (:meth:`ThrowScene.
place`: felt millimetres with parallax, the zone, a die up on a rail), leaves out the spare dice
the stickperson keeps in the cup (:func:`leave_out_spares`, 9 NYCRR 5324.52(a)(5), (f)(3)), and
hands the scene to the stages that find dice the reader missed (controller/missed_dice.py), dice
on dice (controller/die_on_die.py) and cocked dice (controller/cocked.py). Each stage adds dice,
moves them, or replaces a reading by the value that counts, and says so in ``notes``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from controller.felt import BELOW_FELT_RATIO, ZONE_MAP, FeltGeometry
from controller.tolerances import Tolerances
from controller.verdict import ZONE_PLAYING
from vision.types import DieReading

#: The face classifier's probability of a face that reads it (``vision.learned.FACE_MIN``).
FACE_READ_MIN = 0.6

#: ``(centre_px, side_px) -> DieReading | None``: the reader asked about one place of the frame
#: at rest (``vision.reader.read_die_at`` bound to the frame).
Reread = Callable[[tuple[float, float], float], "DieReading | None"]


def is_die(r: DieReading, min_presence: float) -> bool:
    """``r`` is a die: it has a value, or a confidence (0..1) of at least ``min_presence``."""
    return not (r.value is None and r.confidence < min_presence)


def face_classifier_reads(r: DieReading) -> bool:
    """The face classifier's own probabilities (``r.extra["p"]``, :mod:`vision.learned`) put
    ``r.value`` first with at least :data:`FACE_READ_MIN`: the value is the face seen
    square-on, not only the cocked-die reader's."""
    p = r.extra.get("p")
    if r.value is None or not p or len(p) < 6:
        return False
    best = max(range(len(p)), key=lambda k: p[k])
    return best == r.value - 1 and p[best] >= FACE_READ_MIN


def flat_by_either(r: DieReading) -> bool:
    """Either flatness estimate (the reader's ``flat``, the tilt classifier's
    ``extra["p_flat_tilt"]`` at 0.5 or more) calls ``r`` flat."""
    return bool(r.flat or r.extra.get("p_flat_tilt", 0.0) >= 0.5)


@dataclass
class ThrowScene:
    """The dice of one throw, placed (mutable working state of ``observe_throw``).

    ``dice``, ``positions`` and ``zones`` are parallel lists, one entry per die in the order
    the reader gave them, then the dice found again. ``values`` (a copy of ``dice`` made
    before the dice-on-dice stage, parallel too) holds the reading whose value *counts* for each die.

    Attributes:
        dice: the readings (pixels: ``centre``, ``bbox``, ``side_px``).
        positions: felt position of each die's footprint centre, table mm; ``None`` entries
            without a calibration.
        zones: verdict zone of each die (``controller.verdict.ZONE_PLAYING``, ``"chip_bank"``,
            ``"dice_cup"``, ``"rail"``, ``"off-table"``).
        notes: one line per finding so far.
        geo: the felt geometry, ``None`` without a calibration.
        tol: the thresholds.
        reread: the reader asked about one place of the frame at rest, or ``None``.
        values: the readings that count (``None`` before the dice-on-dice stage).
    """

    dice: list[DieReading]
    geo: FeltGeometry | None
    tol: Tolerances
    reread: Reread | None = None
    positions: list[tuple[float, float] | None] = field(default_factory=list)
    zones: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    values: list[DieReading] | None = None

    @property
    def size(self) -> float | None:
        """Die side, mm (``None`` without a calibration)."""
        return self.geo.size if self.geo is not None else None

    def place(self, r: DieReading) -> tuple[tuple[float, float], str]:
        """Felt position (mm) and zone of a die read at ``r.centre``; notes what it finds.

        A die seen outside the playing area, or on a rail, is seen at its height: from its
        apparent size (more than 0.4 of the rail's height above a die on the felt) or, seen
        beyond the rails and not smaller than a die on the felt there
        (:data:`~controller.felt.BELOW_FELT_RATIO`), at the rail's own height, it lies on the
        rail, 9 NYCRR 5324.52(k)(2)(iv). Needs ``geo``.
        """
        geo, notes = self.geo, self.notes
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

    def side_of(self, i: int) -> float:
        """The die side in the units of ``positions`` (mm), or pixels without calibration
        (the median side read, 20 when none is known)."""
        if self.size is not None:
            return self.size
        known = [r.side_px for r in self.dice if r.side_px > 0]
        return float(np.median(known)) if known else 20.0

    def where(self, i: int) -> tuple[float, float]:
        """Die ``i``'s felt position (mm), or its pixel centre without calibration."""
        p = self.positions[i]
        return p if p is not None else (float(self.dice[i].centre[0]), float(self.dice[i].centre[1]))

    def expected_px(self, i: int) -> float | None:
        """The side (pixels) a die lying on the felt where die ``i`` lies would show; without
        calibration the smallest side read when two or more are known, else ``None``."""
        if self.geo is not None and self.positions[i] is not None:
            return self.geo.expected_side_px(self.positions[i])
        known = sorted(r.side_px for r in self.dice if r.side_px > 0)
        return known[0] if len(known) >= 2 else None

    def apart(self, i: int, j: int) -> float:
        """Distance (mm) between the centres of dice ``i`` and ``j`` (``inf`` if unknown)."""
        pi, pj = self.positions[i], self.positions[j]
        if pi is None or pj is None:
            return math.inf
        return math.hypot(pi[0] - pj[0], pi[1] - pj[1])

    def add_reread(self, found: DieReading) -> None:
        """Add a die found again by ``reread`` (where a track ended, or beside the die seen) as
        any die read, placed in its zone (the playing area holds the chip bank and the dice cup:
        a die found again there is in that zone, not in play)."""
        self.dice.append(replace(found, extra={**found.extra, "from": "track-reread"}))
        p, zone = self.place(found)
        self.positions.append(p)
        self.zones.append(zone)

    def apart_px(self, found: DieReading, s_px: float) -> float:
        """How far (pixels) a die read again must lie from a die read to be another die
        (``reread_apart_flat`` / ``reread_apart`` x ``s_px``)."""
        return (self.tol.reread_apart_flat if flat_by_either(found) else self.tol.reread_apart) * s_px


def place_dice(dice: list[DieReading], geo: FeltGeometry | None, tol: Tolerances,
               reread: Reread | None) -> tuple[ThrowScene, list[list[str]]]:
    """Place each die read (:meth:`ThrowScene.place`).

    Returns:
        ``(scene, placed_notes)``: the notes placing each die made (empty without a
        calibration), so that a spare's placing can be taken back.
    """
    scene = ThrowScene(list(dice), geo, tol, reread)
    placed_notes: list[list[str]] = []
    for r in scene.dice:
        if geo is None:
            scene.positions.append(None)
            scene.zones.append(ZONE_PLAYING)
            continue
        n_notes = len(scene.notes)
        p, zone = scene.place(r)
        scene.positions.append(p)
        scene.zones.append(zone)
        placed_notes.append(scene.notes[n_notes:])
    return scene, placed_notes


def leave_out_spares(scene: ThrowScene, placed_notes: list[list[str]], spares: Sequence[DieReading],
                     cup_changed: bool | None, min_presence: float) -> None:
    """Take the spare dice in the dice cup out of ``scene``: they are not the dice thrown,
    9 NYCRR 5324.52(a)(5) (:func:`spares_left_out`). Needs ``scene.geo``.

    Args:
        placed_notes: from :func:`place_dice`.
        spares: the reader's dice in the cup before the throw.
        cup_changed: the cup's interior changed between then and the frame at rest.
        min_presence: see :func:`is_die`.
    """
    tol, geo, notes = scene.tol, scene.geo, scene.notes

    def sure(r: DieReading) -> int | None:
        return r.value if r.value is not None and r.confidence >= tol.spare_sure else None

    before = []
    for r in spares:
        if is_die(r, min_presence):
            n_notes = len(notes)
            p, zone = scene.place(r)
            del notes[n_notes:]
            if zone == "dice_cup":
                before.append((p, sure(r)))
    cup_now = [i for i, z in enumerate(scene.zones) if z == "dice_cup"]
    drop = spares_left_out([(scene.positions[i], sure(scene.dice[i])) for i in cup_now], before,
                           tol.spare_match * geo.size, landed=bool(cup_changed))
    if drop:
        gone = {cup_now[j] for j in drop}
        keep = [k for k in range(len(scene.dice)) if k not in gone]
        # so far the notes are the placing's: a spare's place is no finding
        notes[:] = [n for k, made in enumerate(placed_notes) if k not in gone for n in made]
        notes.append(f"{len(drop)} of the {len(cup_now)} dice in the dice cup lay there before the throw "
                     f"({len(before)} spare dice seen then): not the dice thrown, (a)(5)")
        scene.dice = [scene.dice[k] for k in keep]
        scene.positions = [scene.positions[k] for k in keep]
        scene.zones = [scene.zones[k] for k in keep]


def spares_left_out(now: Sequence[tuple[tuple[float, float], int | None]],
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
