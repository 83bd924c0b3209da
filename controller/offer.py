"""Dice offered to a new shooter, told from a throw (pure).

At every change of shooter the stickperson "shall offer the complete set of five or more dice"
to the new shooter, who "shall select and retain two of the dice offered. The remaining dice
shall be returned to the dice cup" (9 NYCRR 5324.52(i)(3), (i)(4); at the start of play (f)(1),
(f)(3); N.J.A.C. 13:69F-1.11(c), (d); N.J.A.C. 13:47-20.25 "at least five dice"; 9 NYCRR
4620.3(a)(2)). The stick pushes the set across the layout from the dice cup to the player, where
it comes to rest: seen as a throw, five dice at rest on the layout are ``extra-dice``, a
boxperson call ((k)(2)(v)-(vi)) that would stop the table at every new shooter.

:func:`judge_offer` calls the dice at rest an offer only when **all** of these hold:

1. the game awaits the new shooter's first valid roll (``GameState.shooter_roll == 0``: at the
   start, after a seven-out, after a voluntary or compulsory change), or the shooter has just
   made the point (the set is then offered to the player left of the shooter, (i)(2); the
   previous shooter keeps the dice if nobody takes them), the only times a set is offered;
   otherwise extra dice on the layout are always ``extra-dice``;
2. at least :data:`MIN_OFFERED_DICE` (5, the regulation's "complete set of five or more") dice
   rest in the playing area, and none on a rail, in the chip bank or off the layout: a throw
   with one or two foreign dice (three or four dice) is never an offer;
3. the motion was followed (a track: a motion from an empty table, not armed by a rig) and
   nothing the tracker saw moving came near the far wall (within :data:`controller.far_wall.NEAR_FAR_WALL_MM` of
   its line, or beyond it), and the far-wall sensor, on a rig that has one, gave no strike
   during the motion: a throw is made "to strike the end of the table farthest from the
   shooter" ((g)); the stick never takes the dice there. Without a track (a motion after a
   verdict with no empty table in between, no calibration) nothing is known, and the dice are
   decided as a throw.

Why it is safe: a throw whose dice struck the far wall, however many dice it has, fails 3 and
keeps its verdict (a foreign third die is ``extra-dice``, the boxperson's); a throw of three or
four dice fails 2. What an offer could still hide is a "throw" of five or more dice by a new
shooter that came nowhere near the far wall: not a throw anyone makes unseen, and without a
valid roll it moves no wager. The caller (controller/service.py) asks only for an unarmed motion
from an empty table and without a round driver (an automated rig's shaker always throws).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from controller.far_wall import NEAR_FAR_WALL_MM, far_wall_approached  # noqa: F401 (the rule's evidence)
from controller.verdict import ZONE_PLAYING, DieObservation, ThrowFacts

#: Dice of an offered set, 9 NYCRR 5324.52(i)(3) "the complete set of five or more dice".
MIN_OFFERED_DICE = 5


#: Zones a die of an offered set may rest in besides the playing area (the cup it came from).
_OFFER_ZONES = frozenset({ZONE_PLAYING, "dice_cup"})


@dataclass(frozen=True, slots=True)
class OfferFinding:
    """What :func:`judge_offer` found.

    Attributes:
        offered: the dice at rest are a set offered to the new shooter (no verdict).
        dice: dice at rest in the playing area.
        why: one line for the log: what made it an offer, or the first condition that failed.
    """

    offered: bool
    dice: int
    why: str


def judge_offer(observations: Sequence[DieObservation], facts: ThrowFacts, *,
                awaiting_new_shooter: bool) -> OfferFinding:
    """Tell dice offered to a new shooter from a throw (the rule of the module docstring).

    Args:
        observations: the dice at rest, placed in zones (``controller.irregularity.
            observe_throw``).
        facts: the motion's facts; ``facts.far_wall_approached`` must be ``False`` (known).
        awaiting_new_shooter: the game awaits the current shooter's first valid roll
            (``GameState.shooter_roll == 0``), or the shooter has just made the point ((i)(2)).

    Returns:
        :class:`OfferFinding` (``offered`` only when every condition holds).
    """
    in_play = sum(1 for o in observations if o.zone == ZONE_PLAYING)
    elsewhere = sorted({o.zone for o in observations if o.zone not in _OFFER_ZONES})
    if not awaiting_new_shooter:
        return OfferFinding(False, in_play, "the shooter has already rolled: dice are offered only to a new "
                                            "shooter or after a point made, 9 NYCRR 5324.52(i)(2)-(3)")
    if in_play < MIN_OFFERED_DICE:
        return OfferFinding(False, in_play, f"{in_play} dice on the layout: an offer is the complete set of "
                                            f"{MIN_OFFERED_DICE} or more, 9 NYCRR 5324.52(i)(3)")
    if elsewhere:
        return OfferFinding(False, in_play, f"a die in {', '.join(elsewhere)}: not an offered set")
    if facts.timed_out:
        return OfferFinding(False, in_play, "the motion did not come to rest in time")
    if facts.far_wall_approached is None:
        return OfferFinding(False, in_play, "the motion was not tracked: decided as a throw")
    if facts.far_wall_approached:
        return OfferFinding(False, in_play, "a die came near the far wall (track or sensor): a throw, (g)")
    return OfferFinding(True, in_play, f"{in_play} dice offered to the new shooter, none near the far wall, "
                                       "9 NYCRR 5324.52(i)(3), (i)(4)")
