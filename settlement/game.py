"""Game state as settlement sees it, advanced from the rolls and shooter events alone.

Pure functions over plain values (no controller import): come-out roll, point,
shooter number and the roll count within the shooter.

Sources: 9 NYCRR 5324.52(b)(1) (come-out, point), (i)(1)(i) (the shooter passes the dice
on a loser 7), (i)(1)-(3) and N.J.A.C. 13:69F-1.11(a),(c) (voluntary or compulsory
relinquishment: a new shooter, the point, if any, stays), (i)(2) and N.J.A.C.
13:69F-1.11(b) (rolls only to decide the remaining come and don't come wagers).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .wagers import POINTS

__all__ = ["GameState", "advance", "change_shooter", "set_decide_only"]


@dataclass(frozen=True)
class GameState:
    """Table state before a roll.

    Attributes:
        point: None on a come-out roll, else the point (4, 5, 6, 8, 9 or 10).
        shooter: shooter number, from 1.
        shooter_rolls: rolls thrown by the current shooter (0 before the first).
        come_out_thrown: the current shooter has thrown a come-out roll. Fire, bonus craps and
            hot roller bets may be made only before it ("prior to the come out roll of a new
            shooter", 9 NYCRR 5324.52(b)(40), (b)(41), (j)(1)(i)): a shooter who takes the dice
            with a point established ((i)(1): "after any roll") rolls to that point first, and
            those bets may still be made until the shooter's own come-out roll.
        rolls: rolls settled in this session.
        decide_only: the shooter rolls without a pass or don't pass bet only to decide the
            remaining come and don't come wagers, the on/off marker OFF on the don't pass
            line (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)): no point is established,
            and a 7 is no loser 7.
        point_made: the last decision was a point made (the come out point): only then may
            the shooter elect to roll only to decide the remaining come and don't come wagers
            ("after making the come out point", 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)). Any
            later roll clears it (once started, the rolls go on while ``decide_only``), and a
            new shooter has made no point: as the controller's ``last_outcome == "point-made"``
            (controller.game.set_decide_only).
    """

    point: int | None = None
    shooter: int = 1
    shooter_rolls: int = 0
    rolls: int = 0
    decide_only: bool = False
    point_made: bool = False
    come_out_thrown: bool = False

    @property
    def come_out(self) -> bool:
        """True when the next roll is a come-out roll: no point is established (9 NYCRR 5324.52(b)(1));
        also during the rolls made only to decide come and don't come wagers ((i)(2)), which set no
        point.
        """
        return self.point is None


def advance(state: GameState, d1: int, d2: int) -> tuple[GameState, str]:
    """The state after a roll, and the outcome: natural, craps, point-set, point-made,
    seven-out or no-decision (9 NYCRR 5324.52(b)(1)), or decide-only for a roll made only to
    decide the remaining come and don't come wagers (5324.52(i)(2)): it sets no point; a 7
    decides every come and don't come wager on a number, so the game proceeds after it."""
    t = d1 + d2
    rolls = state.rolls + 1
    if state.decide_only and state.point is None:
        return replace(state, shooter_rolls=state.shooter_rolls + 1, rolls=rolls,
                       decide_only=t != 7, point_made=False), "decide-only"
    if state.point is None:
        if t in POINTS:
            return replace(state, point=t, shooter_rolls=state.shooter_rolls + 1, rolls=rolls,
                           point_made=False, come_out_thrown=True), "point-set"
        outcome = "natural" if t in (7, 11) else "craps"
        return replace(state, shooter_rolls=state.shooter_rolls + 1, rolls=rolls, point_made=False,
                       come_out_thrown=True), outcome
    if t == state.point:
        return replace(state, point=None, shooter_rolls=state.shooter_rolls + 1, rolls=rolls,
                       point_made=True), "point-made"
    if t == 7:  # loser 7: the shooter passes the dice, (i)(1)(i)
        return GameState(point=None, shooter=state.shooter + 1, shooter_rolls=0, rolls=rolls), "seven-out"
    return replace(state, shooter_rolls=state.shooter_rolls + 1, rolls=rolls), "no-decision"


def change_shooter(state: GameState) -> GameState:
    """A voluntary or compulsory relinquishment: a new shooter, the point unchanged
    (9 NYCRR 5324.52(i)(1),(3); N.J.A.C. 13:69F-1.11(a),(c)). Rolls only to decide come and
    don't come wagers end: only the previous shooter makes them, and the new shooter makes a
    pass or don't pass bet ((g), (i)(2))."""
    return replace(state, shooter=state.shooter + 1, shooter_rolls=0, decide_only=False, point_made=False,
                   come_out_thrown=False)


def set_decide_only(state: GameState, on: bool) -> GameState:
    """Start (``on``) or end the rolls made only to decide the remaining come and don't come
    wagers (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)).

    Raises:
        ValueError: started while a point is established, or when the last decision was not
            a point made ("after making the come out point": not after a come-out natural,
            craps or a seven-out).
    """
    if on and state.point is not None:
        raise ValueError(f"rolls only to decide come/don't come wagers start after a decision, "
                         f"not while the point is {state.point} (9 NYCRR 5324.52(i)(2))")
    if on and not state.decide_only and not state.point_made:
        raise ValueError("rolls only to decide come/don't come wagers follow a point made "
                         "(\"after making the come out point\", 9 NYCRR 5324.52(i)(2))")
    return replace(state, decide_only=bool(on))
