"""The verdict on a throw at rest: a valid roll, a no roll, or a boxperson call (pure).

Input is what was observed (the dice the reader found, each placed in a zone, and facts about
the throw such as a timeout); output is a :class:`Verdict`. The rules are 9 NYCRR 5324.52(h)(1)
and (k); what to do about each irregularity comes from a :class:`~controller.policy.Policy`,
so jurisdictions differ by data.

Precedence (the first that applies names the verdict's reason; all found are listed):

1. the throw did not come to rest in time (``not-at-rest``);
2. a die failed to strike the far wall (``far-wall-missed``), when known; the dice did not
   leave the shooter's hand together (``dice-not-simultaneous``), when the track shows it;
3. fewer than two dice in the playing area: fewer than two dice seen anywhere,
   ``die-off-table`` / ``dice-off-table`` ((k)(1)); then each die seen in another zone names
   it (chip bank, dice cup, rail, outside the area);
   more than two dice in play, in the chip bank or on a rail: ``extra-dice``;
4. for the two dice in play: on the other die, resting on several objects (also a thrown die
   outside the playing area, (h)(1)(i)), not flat, face not read with confidence.

With two dice in the playing area, dice seen in the dice cup (the spare dice, 9 NYCRR
5324.52(a)(5)) are not part of the throw and are ignored, as are dice seen beyond the table; a
die in the chip bank or on a rail is one more than the two selected dice ((a)(5): all dice not
in active play are kept in the cup).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from controller.game import is_face
from controller.policy import NY_5324, Action, Policy
from controller.reasons import Reason
from vision.types import DieReading

#: Zone names. "playing" is the table area where a throw may come to rest; the others are
#: where a die may be seen outside it (the zone detector of a later issue fills them in).
ZONE_PLAYING = "playing"
_ZONE_REASON: dict[str, Reason] = {
    "outside": Reason.DIE_OUTSIDE_AREA,
    "off-table": Reason.DIE_OUTSIDE_AREA,
    "chip_bank": Reason.DIE_IN_CHIP_BANK,
    "dice_cup": Reason.DIE_IN_DICE_CUP,
    "rail": Reason.DIE_ON_RAIL,
}

#: Zones on the table besides the playing area: with two dice in play, a die in one of them is
#: an extra die (a die seen beyond the table, where the camera may also see players' things,
#: is not counted).
_ON_TABLE = frozenset({"chip_bank", "rail"})


@dataclass(frozen=True, slots=True)
class DieObservation:
    """One die found at rest, placed on the table.

    Attributes:
        reading: what the dice reader returned.
        zone: ``"playing"`` inside the table area, else ``"outside"``, ``"chip_bank"``,
            ``"dice_cup"``, ``"rail"`` or ``"off-table"``.
        on_die: the die rests on top of the other die (9 NYCRR 5324.52(k)(1)).
        sides_resting: how many sides of the die rest on chips or another object (0 when flat
            on the felt or unknown; > 1 voids the roll, (h)(1)(i)).
    """

    reading: DieReading
    zone: str = ZONE_PLAYING
    on_die: bool = False
    sides_resting: int = 0


@dataclass(frozen=True, slots=True)
class ThrowFacts:
    """Facts about the throw itself, not about a die.

    Attributes:
        timed_out: the dice did not come to rest within the rest timeout.
        struck_far_wall: ``True``/``False`` when a wall sensor or the motion track knows,
            ``None`` when unknown (not checked).
        far_wall_approached: anything the tracker saw moving came near the far wall, or the
            far-wall sensor rang during the motion (``True``); the motion was tracked and
            nothing came near (``False``); not tracked (``None``). Not a verdict rule: it tells
            dice offered to a new shooter from a throw (controller/offer.py).
        released_apart: the motion track shows one die entering the view well after the other
            (controller/release.py): evidence that the dice did not leave the shooter's hand
            simultaneously, 9 NYCRR 5324.52(k)(2)(i) (``dice-not-simultaneous``); ``False``: not
            shown; ``None``: not tracked.
    """

    timed_out: bool = False
    struck_far_wall: bool | None = None
    far_wall_approached: bool | None = None
    released_apart: bool | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The decision on one throw.

    Attributes:
        kind: ``"roll"`` (valid, ``dice`` set), ``"no-roll"`` or ``"boxperson"``.
        reason: the deciding reason (``None`` for a valid roll).
        dice: the two face values, left to right in the image, for a valid roll; else ``None``.
        irregularities: every reason found, in precedence order (a valid roll may carry
            reasons the policy said to "read").
        observations: the dice the verdict was made from.
    """

    kind: str
    reason: Reason | None
    dice: tuple[int, int] | None
    irregularities: tuple[Reason, ...] = ()
    observations: tuple[DieObservation, ...] = field(default=(), repr=False)

    @property
    def total(self) -> int | None:
        """The sum of the two dice, or ``None`` when not a valid roll."""
        return None if self.dice is None else self.dice[0] + self.dice[1]


def find_irregularities(observations: Sequence[DieObservation], facts: ThrowFacts,
                        min_confidence: float) -> list[Reason]:
    """List every irregularity of a throw, in the precedence order of this module's docstring.

    Args:
        observations: the dice seen at rest (already filtered of non-dice).
        facts: throw facts (timeout, far-wall strike).
        min_confidence: a face read with confidence below this (0..1) is in dispute.

    Returns:
        reasons (possibly empty: a clean throw of two dice read with confidence).
    """
    found: list[Reason] = []
    if facts.timed_out:
        found.append(Reason.NOT_AT_REST)
    if facts.struck_far_wall is False:
        found.append(Reason.FAR_WALL_MISSED)
    if facts.released_apart:
        found.append(Reason.DICE_NOT_SIMULTANEOUS)
    in_play = [o for o in observations if o.zone == ZONE_PLAYING]
    elsewhere = [o for o in observations if o.zone != ZONE_PLAYING]
    if facts.timed_out and not observations:
        return found
    if len(in_play) < 2:
        seen = len(in_play) + len(elsewhere)
        if seen < 2:
            # a die seen nowhere left the table, (k)(1), whatever zone the other rests in
            found.append(Reason.DICE_OFF_TABLE if seen == 0 else Reason.DIE_OFF_TABLE)
        zone_reasons = [_ZONE_REASON.get(o.zone, Reason.DIE_OUTSIDE_AREA) for o in elsewhere]
        found.extend(dict.fromkeys(zone_reasons))  # unique, in order
    elif len(in_play) + sum(o.zone in _ON_TABLE for o in elsewhere) > 2:
        # more than the two selected dice on the table outside the dice cup, (a)(5), (g)
        found.append(Reason.EXTRA_DICE)
    for o in in_play:
        if o.on_die and Reason.DIE_ON_DIE not in found:
            found.append(Reason.DIE_ON_DIE)
    # (h)(1)(i) "If more than one side of a die is resting on a stack of chips or other object,
    # the roll shall be void": a thrown die, wherever it rests (with fewer than two dice in play
    # the dice elsewhere are the thrown dice: one cocked on the chip bank and a chip stack)
    thrown = in_play if len(in_play) >= 2 else in_play + elsewhere
    for o in thrown:
        if o.sides_resting > 1 and Reason.DIE_ON_SEVERAL_OBJECTS not in found:
            found.append(Reason.DIE_ON_SEVERAL_OBJECTS)
    for o in in_play:
        if not o.reading.flat and Reason.DIE_NOT_FLAT not in found:
            found.append(Reason.DIE_NOT_FLAT)
    for o in in_play:
        # (h)(1)(ii): a face is a whole number 1..6 read with confidence >= min_confidence (a NaN
        # confidence is not; 3.5, 0 or 7 is no face)
        unread = not is_face(o.reading.value) or not o.reading.confidence >= min_confidence
        if unread and Reason.FACE_UNREADABLE not in found:
            found.append(Reason.FACE_UNREADABLE)
    return found


def decide(observations: Sequence[DieObservation], facts: ThrowFacts = ThrowFacts(), *,
           policy: Policy = NY_5324, min_confidence: float = 0.8) -> Verdict:
    """Decide a throw at rest.

    A valid roll needs exactly two dice in the playing area, each read (value 1..6) with
    confidence >= ``min_confidence``, and every irregularity found mapped to ``"read"`` by the
    policy. Otherwise the first irregularity whose action is ``"no-roll"`` makes a no roll; if
    there is none, the first whose action is ``"boxperson"`` makes a boxperson call.

    Args:
        observations: dice seen at rest (see :class:`DieObservation`).
        facts: throw facts (see :class:`ThrowFacts`).
        policy: the jurisdiction policy (default 9 NYCRR 5324.52).
        min_confidence: 0..1.

    Returns:
        the :class:`Verdict`.
    """
    obs = tuple(observations)
    found = find_irregularities(obs, facts, min_confidence)
    actions = [(r, policy.action(r)) for r in found]
    for action in (Action.NO_ROLL, Action.BOXPERSON):
        for reason, act in actions:
            if act is action:
                return Verdict(kind=action.value, reason=reason, dice=None,
                               irregularities=tuple(found), observations=obs)
    in_play = sorted((o for o in obs if o.zone == ZONE_PLAYING), key=lambda o: o.reading.centre[0])
    values = [o.reading.value for o in in_play]
    if len(values) != 2 or not all(is_face(v) for v in values):
        # Unreachable with a consistent policy (a missing or unread die is never "read"),
        # kept so that a wrong value can never become a roll.
        return Verdict(kind=Action.BOXPERSON.value, reason=Reason.FACE_UNREADABLE, dice=None,
                       irregularities=tuple(found), observations=obs)
    return Verdict(kind="roll", reason=None, dice=(int(values[0]), int(values[1])),
                   irregularities=tuple(found), observations=obs)
