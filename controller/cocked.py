"""Cocked dice, 9 NYCRR 5324.52(h)(1) (pure).

For each die in play that is not on the other die: what it touches (:class:`Surroundings`: chip
stacks under or beside it, the rails, the chip bank, the dice cup, the other die), which of the
reader's two flatness estimates to believe there (:func:`choose_flatness`), and then, for a die
read flat, whether its flatness is in dispute (:func:`_doubt_flat_die`), and for a die read not
flat, how many sides rest on objects and which face counts (:func:`_judge_cocked_die`):

* (h)(1)(i): the side resting on a chip stack is the bottom; the face opposite it, the face seen
  uppermost, counts (:func:`opposite_face`); more than one side resting on objects voids the roll;
* (h)(1)(ii): a die leaning on an object, or one whose flatness is in doubt, shows no face the
  camera can call uppermost: the value is withdrawn (the boxperson decides);
* a die leaning on the chip bank rests on the bank, (k)(2)(iii);
* with the profile option ``cocked = "as-read"`` (house practice) the face seen uppermost counts,
  but a die on two objects is still void.

Run by ``controller.irregularity.observe_throw``; the thresholds are
:class:`~controller.tolerances.Tolerances`, each documented with what it was measured on.
"""
from __future__ import annotations

import math
from dataclasses import replace
from itertools import chain
from typing import Sequence

from controller.felt import TableObject, dist_to_boundary
from controller.irregularity_profile import COCKED_AS_READ, IrregularityProfile
from controller.policy import NY_5324, Action
from controller.reasons import Reason
from controller.scene import ThrowScene, face_classifier_reads

#: What a cocked die may lean on sideways that stands above the felt like a wall
#: (:class:`~controller.tolerances.Tolerances` ``sure_flat``).
WALLS = frozenset({"rail", "chip bank", "dice cup"})


def opposite_face(value: int) -> int:
    """The value on the face opposite ``value``: 1-6, 2-5, 3-4 (N.J.A.C. 13:47-20.25(b)2viii).

    Raises:
        ValueError: ``value`` is not 1..6.
    """
    if not isinstance(value, int) or not 1 <= value <= 6:
        raise ValueError(f"die face value must be 1..6, got {value!r}")
    return 7 - value


def _stack_name(o: TableObject) -> str:
    """How notes (and :meth:`Surroundings.contacts`) name a stack: ``"chips at (x, y)"``."""
    return f"{o.kind} at ({o.x_mm:.0f}, {o.y_mm:.0f})"


class Surroundings:
    """What the dice in play touch, from where they lie on the felt (table mm).

    Args:
        scene: the placed dice.
        in_play: indices of the dice in the playing area.
        objects: the chip stacks on the layout.
    """

    def __init__(self, scene: ThrowScene, in_play: Sequence[int], objects: Sequence[TableObject]) -> None:
        self.scene = scene
        self.in_play = list(in_play)
        self.objects = list(objects)
        geo = scene.geo
        self.playing = geo.zones.get("playing") if geo is not None else None
        self.bank = geo.zones.get("chip_bank") if geo is not None else None
        self.cup = geo.zones.get("dice_cup") if geo is not None else None
        #: low stacks a die's centre is beside, not over (filled by :meth:`contacts`)
        self.rims: dict[int, set[str]] = {}
        #: each stack by the name :meth:`contacts` gives it (the first of two with one name)
        self.stacks: dict[str, TableObject] = {}
        for o in self.objects:
            self.stacks.setdefault(_stack_name(o), o)

    def over_stack_top(self, i: int) -> tuple[TableObject, float] | None:
        """A stack whose top holds die ``i``'s centre at least ``on_top_margin`` x side inside
        its edge: ``(stack, mm inside)``, or ``None``."""
        sc, tol = self.scene, self.scene.tol
        if sc.positions[i] is None or not tol.on_top_margin:
            return None
        p = sc.where(i)
        for o in self.objects:
            inside = o.radius_mm - math.hypot(p[0] - o.x_mm, p[1] - o.y_mm)
            if inside >= tol.on_top_margin * sc.side_of(i):
                return o, inside
        return None

    def contacts(self, i: int) -> tuple[list[str], list[str], list[str]]:
        """What die ``i`` may rest on: (support: under it, its bottom side rests on it; edge: a
        low stack beside it, its bottom edge may rest on the top; lean: what it leans on
        sideways), each a list of descriptions (``"chips at (x, y)"``, ``"rail"``, ``"chip
        bank"``, ``"dice cup"``, ``"the other die"``). Notes in :attr:`rims` a low stack die
        ``i`` is beside, not over."""
        sc, tol = self.scene, self.scene.tol
        s = sc.side_of(i)
        p = sc.where(i)
        support: list[str] = []
        edge: list[str] = []
        lean: list[str] = []
        farther: list[str] = []   # tall stacks beyond contact_margin, within lean_contact
        if sc.positions[i] is not None:
            for o in self.objects:
                d = math.hypot(p[0] - o.x_mm, p[1] - o.y_mm)
                tall = o.height_mm >= tol.lean_min_height * s
                if d < o.radius_mm + (tol.support_margin_tall if tall else tol.support_margin) * s:
                    support.append(_stack_name(o))
                    if not tall and d >= o.radius_mm:
                        self.rims.setdefault(i, set()).add(support[-1])
                elif d < o.radius_mm + tol.contact_margin * s:
                    (lean if tall else edge).append(_stack_name(o))
                elif tall and d < o.radius_mm + tol.lean_contact * s:
                    farther.append(_stack_name(o))
            reach = max(tol.wall_contact, tol.lean_contact) * s
            if self.playing is not None and dist_to_boundary(self.playing, p) < reach:
                lean.append("rail")
            if self.bank is not None and dist_to_boundary(self.bank, p) < max(tol.contact_margin, tol.lean_contact) * s:
                lean.append("chip bank")
            if self.cup is not None and dist_to_boundary(self.cup, p) < tol.lean_contact * s:
                lean.append("dice cup")
            for j in self.in_play:
                if j != i and sc.apart(i, j) < (0.5 + tol.lean_contact) * s:
                    lean.append("the other die")
            if not (support or edge or lean):
                # A stack a die can lean on sideways is a wall to it: a die leaning on it shows
                # its upper face as far out as from the rail (``lean_contact``), when it has
                # nothing nearer to lean on (a die leaning on the other die beside a 4-chip stack
                # was made to rest on both: simulated camera, cocked-on-die seed 2181).
                lean += farther
        return support, edge, lean

    def wall_distance(self, i: int, walls: Sequence[str]) -> float | None:
        """Distance (mm) from die ``i``'s centre to the nearest of ``walls`` (names of
        :data:`WALLS`: the rail is the playing area's edge), ``None`` if none is known."""
        p = self.scene.positions[i]
        if p is None:
            return None
        shape = {"rail": self.playing, "chip bank": self.bank, "dice cup": self.cup}
        d = [dist_to_boundary(shape[w], p) for w in walls if shape.get(w) is not None]
        return min(d) if d else None

    def other_die_face_distance(self, i: int) -> float | None:
        """Distance (mm) from die ``i``'s centre to the nearest face of the other die in play
        (its centre distance less half a side), ``None`` if unknown."""
        d = min((self.scene.apart(i, j) for j in self.in_play if j != i), default=math.inf)
        return d - 0.5 * self.scene.side_of(i) if d < math.inf else None

    def other_die_unsure(self, i: int) -> bool:
        """The other die touches die ``i`` and is not read lying flat (or was never read: found
        by the track). It is then no object die ``i`` rests on: which of the two rests on which
        is not known (one die leaning on a flat one is read "not flat" twice, the leaning die
        sitting in the flat one's window; simulated camera)."""
        sc = self.scene
        reach = (0.5 + sc.tol.lean_contact) * sc.side_of(i)
        return any(j != i and (not sc.dice[j].flat or sc.dice[j].extra.get("from") == "track")
                   and sc.apart(i, j) < reach
                   for j in self.in_play)

    def no_room_to_tilt(self, i: int, touched: list[str], in_line: bool = False) -> bool:
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
        sc, tol = self.scene, self.scene.tol
        walls = [w for w in touched if w in ("rail", "dice cup")]
        if not tol.tilt_room or len(touched) != 2 or len(walls) != 1 or "the other die" not in touched:
            return False
        s = sc.side_of(i)
        for j in self.in_play:
            if j == i or not sc.dice[j].flat or sc.dice[j].extra.get("from") == "track" \
                    or sc.apart(i, j) >= (0.5 + tol.lean_contact) * s:
                continue
            di, dj = self.wall_distance(i, walls), self.wall_distance(j, walls)
            if di is None or dj is None:
                continue
            # off the line square to the wall by a side or more, it leaves die i room to lean
            if math.sqrt(max(0.0, sc.apart(i, j) ** 2 - (dj - di) ** 2)) >= (0.5 if in_line else 1.0) * s:
                continue
            if dj - di >= (0.5 if in_line else 0.8) * s and dj - 0.5 * s < tol.tilt_room * s:
                return True
        return False

    def on_rim(self, i: int, touched: Sequence[str]) -> tuple[str, float] | None:
        """Die ``i`` touches one chip stack lower than ``rim_low_height`` x side and nothing
        else, its centre less than ``rim_reach`` x side from its rim and not over its top:
        ``(the stack, mm from its rim)``, else ``None``."""
        sc, tol = self.scene, self.scene.tol
        if not tol.rim_reach or len(touched) != 1 or sc.positions[i] is None or self.over_stack_top(i) is not None:
            return None
        o = self.stacks.get(touched[0])
        if o is None:
            return None
        s, p = sc.side_of(i), sc.where(i)
        d = math.hypot(p[0] - o.x_mm, p[1] - o.y_mm) - o.radius_mm
        if o.height_mm < tol.rim_low_height * s and d < tol.rim_reach * s:
            return touched[0], d
        return None


def choose_flatness(scene: ThrowScene, in_play: Sequence[int],
                    touching: dict[int, tuple[list[str], list[str], list[str]]]) -> dict[int, float]:
    """Where the reader gives two flatness estimates (the face classifier's ``extra["p_flat"]``
    and the tilt classifier's ``extra["p_flat_tilt"]``), which one a die's ``flat`` follows,
    from what it touches (:meth:`Surroundings.contacts`). A die whose flatness now follows the
    tilt classifier is replaced in ``scene.dice`` and ``scene.values`` (``p_flat`` the tilt
    classifier's, ``p_flat_face`` the face classifier's).

    Returns:
        die index -> the P(flat) a die beside a wall called flat is doubted by (the mean of the
        two estimates, ``doubt_on_mean``).
    """
    dice, tol = scene.dice, scene.tol
    doubt_p: dict[int, float] = {}
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
                if face_p < tol.face_sure_not_flat:
                    # unless the face classifier is sure it is not (``face_sure_not_flat``)
                    flat_at = max(flat_at, 0.5)
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
            dice[i] = scene.values[i] = replace(dice[i], flat=tilt_p >= flat_at,
                                                extra={**dice[i].extra, "p_flat": tilt_p, "p_flat_face": face_p})
    return doubt_p


def judge_cocked_dice(scene: ThrowScene, in_play: Sequence[int], on_die: Sequence[bool],
                      objects: Sequence[TableObject], profile: IrregularityProfile | None) -> list[int]:
    """Judge every die in play that is not on the other die as flat, cocked or in dispute,
    (h)(1) (see the module docstring).

    Changes ``scene.values`` (the value that counts, withdrawn where in dispute), ``scene.dice``
    (the flatness estimate believed), ``scene.zones`` (a cocked die leaning on the chip bank is
    in it) and adds notes.

    Args:
        scene: the placed dice, ``scene.values`` set.
        in_play: indices of the dice in the playing area.
        on_die: per die, whether it rests on the other die (not judged here).
        objects: the chip stacks on the layout.
        profile: the jurisdiction profile (``None``: 9 NYCRR 5324.52).

    Returns:
        Per die, the number of sides resting on objects (``DieObservation.sides_resting``).
    """
    around = Surroundings(scene, in_play, objects)
    touching = {i: around.contacts(i) for i in in_play}   # (depends on where the dice are, not on flat)
    doubt_p = choose_flatness(scene, in_play, touching)
    cocked_as_read = profile is not None and profile.cocked == COCKED_AS_READ
    cocked_face_up_counts = cocked_as_read or \
        (profile.policy if profile is not None else NY_5324).actions.get(Reason.DIE_NOT_FLAT) is Action.READ
    sides_resting = [0] * len(scene.dice)
    for i in in_play:
        if on_die[i]:
            continue
        support, edge, lean = (list(c) for c in touching[i])
        # The other die is an object this die rests on (or is wedged against) only when it lies
        # flat itself: with two dice touching, both read not flat, counting it as a resting side
        # voided throws whose counted face is only in dispute (simulated camera).
        mutual = "the other die" in lean and around.other_die_unsure(i)
        if mutual:
            lean = [w for w in lean if w != "the other die"]
        elif "the other die" in lean and not scene.dice[i].flat and around.rims.get(i):
            # A die leaning on the other die lying flat, its centre beside a low stack (within
            # ``support_margin`` of its edge, not over it): its foot is on the felt, the stack is
            # no side it rests on (simulated camera, cocked-on-die 2100-2299, 2800-2999,
            # 3000-3199: 10 of 11 such dice leant on the other die alone and were voided as
            # resting on two objects). An edge, which counts only where it leans on nothing.
            edge += [w for w in support if w in around.rims[i]]
            support = [w for w in support if w not in around.rims[i]]
        if scene.dice[i].flat:
            rim = None if cocked_face_up_counts else around.on_rim(i, support + edge + lean)
            _doubt_flat_die(scene, around, i, support, edge, lean, doubt_p.get(i), rim, cocked_as_read)
        else:
            sides_resting[i] = _judge_cocked_die(scene, around, i, support, edge, lean, mutual, cocked_as_read)
    return sides_resting


def _doubt_flat_die(scene: ThrowScene, around: Surroundings, i: int, support: list[str], edge: list[str],
                    lean: list[str], doubt_p: float | None, rim: tuple[str, float] | None,
                    cocked_as_read: bool) -> None:
    """A die read flat, but not surely enough for where it lies: its face is in dispute,
    (h)(1)(ii) (its value withdrawn from ``scene.values``, ``seen_value`` kept)."""
    tol, r = scene.tol, scene.dice[i]
    p_flat = doubt_p if doubt_p is not None else r.extra.get("p_flat")
    touched = support + edge + lean
    if p_flat is None or r.value is None or p_flat >= max(
            tol.sure_flat, tol.sure_flat_wedged, tol.sure_flat_off_wall, tol.sure_flat_on_rim if rim else 0.0):
        return
    walls = [w for w in lean if w in WALLS]
    # (a profile that reads a cocked die as seen reads one leaning on a wall as seen too,
    # but a die resting on two objects is void in every profile)
    off_walls = [w for w in walls if w != "chip bank"]   # (the bank: see sure_flat_off_wall)
    off = around.wall_distance(i, off_walls)
    off_die = around.other_die_face_distance(i) if "the other die" in lean else None
    far = tol.off_wall * scene.side_of(i)
    if around.no_room_to_tilt(i, touched) or around.no_room_to_tilt(i, touched, in_line=True):
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
        mean = ", the mean of the two estimates" if doubt_p is not None else ""
        scene.notes.append(f"die {r.value} read flat but unsure (P(flat) {p_flat:.2f}{mean}) {doubt}; "
                           "which face is uppermost is in dispute, (h)(1)(ii)")
        scene.values[i] = replace(r, value=None, confidence=0.0,
                                  extra={**r.extra, "seen_value": r.value, "flat_in_doubt": True})


def _judge_cocked_die(scene: ThrowScene, around: Surroundings, i: int, support: list[str], edge: list[str],
                      lean: list[str], mutual: bool, cocked_as_read: bool) -> int:
    """A die read not flat: flat after all (no room to tilt, over a stack's top, open felt),
    on the chip bank, void on two objects, its face opposite the stack it rests on, or in
    dispute. Changes ``scene.values``, ``scene.zones`` and notes.

    Returns:
        The number of sides resting on objects.
    """
    tol, r, notes, values = scene.tol, scene.dice[i], scene.notes, scene.values
    touched = support + edge + lean
    if around.no_room_to_tilt(i, touched, in_line=True):
        # read not flat, but between a wall and the other die lying flat with less room than
        # a tilted die needs: it cannot be cocked there, it lies flat and its face counts
        # (simulated camera, cocked-on-die seeds 2146, 2270: two flat dice against the rail,
        # the one at the rail read not flat with the rail's dark wall in its window, voided
        # as resting on the rail and the other die); the face the face classifier read, or,
        # where it read none (or only the cocked-die reader did), a face in dispute, not a
        # void (seed 3226)
        wall = next(w for w in touched if w in WALLS)
        if face_classifier_reads(r):
            values[i] = replace(r, flat=True, extra={**r.extra, "flat_overridden": "no room to tilt"})
            notes.append(f"die {r.value} read as not flat lies between the {wall} and "
                         "the other die lying flat, with no room to tilt: flat")
        else:
            values[i] = replace(r, flat=True, value=None, confidence=0.0,
                                extra={**r.extra, "flat_overridden": "no room to tilt", "seen_value": r.value})
            notes.append(f"die ({r.value} seen) read as not flat lies between the {wall} and the other die "
                         "lying flat, with no room to tilt: flat, its face not read surely; which face is "
                         "uppermost is in dispute, (h)(1)(ii)")
        return 0
    # A low stack beside the die is its support only when the die leans on nothing else:
    # a die leaning on the other die or a wall beside a low stack rests on that, and
    # reading the face opposite the stack's side published wrong rolls (simulated table).
    if not lean and not mutual:
        support += edge
    if "chip bank" in lean:
        # resting against the bank's chips or tray: on the craps bank, (k)(2)(iii), for
        # every profile (house practice reads a cocked die as seen, but not one in the bank)
        scene.zones[i] = "chip_bank"
        others = [o for o in support + lean if o != "chip bank"]
        if others and r.extra.get("p_flat_face", 0.0) < 0.5:
            # and on another object too: more than one side rests on objects, void in every
            # profile, (h)(1)(i) (where only the tilt classifier calls it not flat, whether it
            # rests on them is in dispute, as below: the bank's action decides)
            notes.append(f"cocked die {r.value} leans on the chip bank and rests on {', '.join(others)}: "
                         f"{1 + len(others)} sides rest on objects: void, (h)(1)(i); on the bank, (k)(2)(iii)")
            return 1 + len(others)
        notes.append(f"cocked die {r.value} leans on the chip bank: it rests on the bank, (k)(2)(iii)")
        return 0
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
        notes.append(f"die {r.value}: the tilt classifier calls it not flat, the face classifier flat, "
                     f"touching {', '.join(support + lean)}: whether it rests on them, and so which face "
                     "is uppermost, is in dispute, (h)(1)(ii)")
        values[i] = replace(r, value=None, confidence=0.0, extra={**r.extra, "seen_value": r.value})
        return 1
    if n_sides > 1:
        notes.append(f"cocked die {r.value}: {n_sides} sides rest on objects ({', '.join(support + lean)}): "
                     "void, (h)(1)(i)")
        return n_sides
    top = around.over_stack_top(i)
    if n_sides == 1 and not edge and top is not None:
        # its centre over the middle of the stack it rests on, touching nothing else: nothing
        # holds it tilted, so it lies flat on the stack (a die on a stack's edge has its
        # centre beyond the edge); the reader's "not flat" is its own error
        o, inside = top
        values[i] = replace(r, flat=True, extra={**r.extra, "flat_overridden": "on a stack's top"})
        notes.append(f"die {r.value} read as not flat lies {inside:.0f} mm inside the top of the {o.kind} at "
                     f"({o.x_mm:.0f}, {o.y_mm:.0f}), touching nothing else: flat on it")
        return 0
    if n_sides == 0 and not mutual and tol.open_felt_is_flat:
        # nothing within reach to rest on: a die at rest on open felt lies flat; the reader's
        # "not flat" is its own error (a die cannot rest cocked on nothing)
        values[i] = replace(r, flat=True, extra={**r.extra, "flat_overridden": True})
        notes.append(f"die {r.value} read as not flat but rests on open felt, no object within reach: flat")
        return 0
    if cocked_as_read:
        notes.append(f"cocked die read as seen: {r.value} (house practice)")
        return 0
    if mutual and not lean:
        notes.append(f"cocked die ({r.value} seen) touches the other die, which is not read lying flat: "
                     "which rests on which, and so which face is uppermost, is in dispute, (h)(1)(ii)")
        values[i] = replace(r, value=None, confidence=0.0, extra={**r.extra, "seen_value": r.value})
        return 1
    if support and r.value is not None:
        notes.append(f"cocked die: bottom side {opposite_face(r.value)} rests on {support[0]}; "
                     f"the opposite face {r.value} counts, (h)(1)(i)")
        return 1
    if support:   # its bottom side on the stack, but the face opposite it was not read
        what = f"rests on {support[0]}, its upper face not read"
    else:
        what = f"leans on {lean[0]}" if lean else "rests on no object the camera knows"
    notes.append(f"cocked die ({r.value} seen) {what}: which face is uppermost is in dispute, (h)(1)(ii)")
    values[i] = replace(r, value=None, confidence=0.0, extra={**r.extra, "seen_value": r.value})
    return 1 if lean or support else 0
