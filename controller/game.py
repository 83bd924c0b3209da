"""Game state of a craps table, advanced by valid rolls (pure functions over frozen values).

Rules (9 NYCRR 5324.52(b)(1), (h), (i); N.J.A.C. 13:69F-1.11):

- Come-out roll (no point, puck OFF): 7 or 11 is a natural, 2, 3 or 12 is craps (the shooter
  keeps the dice, another come-out follows); 4, 5, 6, 8, 9 or 10 sets the point and the puck
  goes ON that number (5324.52(b)(1)(i)-(iv)).
- Point roll (puck ON): the point again is a pass (point made: puck OFF, same shooter, come-out
  next); a 7 is a seven-out (miss-out, "loser 7"): puck OFF and the shooter must pass the dice
  (5324.52(i)(1)(i); N.J.A.C. 13:69F-1.11(a)1); any other total decides nothing for the line.
- The shooter may pass the dice after any roll (voluntary relinquish) or be ordered to
  (compulsory): a new shooter takes the dice, the game state (point, puck) is unchanged
  (5324.52(i)(1), (i)(3); N.J.A.C. 13:69F-1.11(a), (c)).
- After a decision, with come or don't come wagers left and no pass or don't pass bet, the
  shooter may roll only to decide those wagers, the on/off marker OFF on the don't pass line
  (5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)): such a roll sets no point ("decide-only"); a 7
  decides every come and don't come wager on a number, so the game proceeds after it.
- A no roll or a boxperson call does not change the game: only valid rolls count.

Shooters are numbered 1, 2, ... from the first shooter the table has recorded;
``shooter_roll`` is the number of valid rolls the current shooter has thrown.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Literal

#: Totals that set a point, 9 NYCRR 5324.52(b)(1)(ii).
POINTS: tuple[int, ...] = (4, 5, 6, 8, 9, 10)
#: Come-out naturals, 9 NYCRR 5324.52(b)(1)(i).
NATURALS: tuple[int, ...] = (7, 11)
#: Come-out craps, 9 NYCRR 5324.52(b)(1)(iii).
CRAPS: tuple[int, ...] = (2, 3, 12)

Outcome = Literal["natural", "craps", "point-set", "point-made", "seven-out", "no-decision", "decide-only"]


@dataclass(frozen=True, slots=True)
class GameState:
    """The state of the game between rolls.

    Attributes:
        shooter: the current shooter's number (1-based, rising for the life of the table).
        shooter_roll: valid rolls thrown by the current shooter (0 before the first).
        point: the point 4, 5, 6, 8, 9 or 10 while the puck is ON, else ``None``.
        rolls: valid rolls thrown at the table in total.
        points_made: the distinct points made since the last seven-out, ascending: the fire
            bet point markers (9 NYCRR 5324.52(j)(1)(iv), (viii)), which stay through a voluntary
            or compulsory change of shooter because pending fire bets carry to the successor
            shooter ((j)(1)(ii); :func:`new_shooter`).
        last_outcome: the outcome of the last valid roll, ``None`` before the first.
        decide_only: the shooter rolls only to decide the remaining come and don't come
            wagers (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)); :func:`set_decide_only`.
    """

    shooter: int = 1
    shooter_roll: int = 0
    point: int | None = None
    rolls: int = 0
    points_made: tuple[int, ...] = ()
    last_outcome: str | None = None
    decide_only: bool = False

    @property
    def come_out(self) -> bool:
        """``True`` when the next roll is a come-out roll (no point established)."""
        return self.point is None

    @property
    def puck(self) -> str:
        """``"ON"`` while a point is established, else ``"OFF"`` (the on/off marker)."""
        return "OFF" if self.point is None else "ON"

    def to_json(self) -> dict:
        """Return a JSON-ready dict (lists for tuples); :func:`state_from_json` reverses it."""
        d = asdict(self)
        d["points_made"] = list(self.points_made)
        return d


#: The outcomes :func:`classify` gives (``GameState.last_outcome`` is one of them or ``None``).
OUTCOMES: tuple[str, ...] = ("natural", "craps", "point-set", "point-made", "seven-out", "no-decision",
                             "decide-only")


def _int_field(data: dict, name: str, *, minimum: int) -> int:
    value = data[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"game state record: {name} {value!r} is not an integer")
    if value < minimum:
        raise ValueError(f"game state record: {name} {value} is below {minimum}")
    return value


def state_from_json(data: dict) -> GameState:
    """Rebuild a :class:`GameState` from :meth:`GameState.to_json`.

    Every counter must be a JSON integer (not a float, a string or a boolean), ``point`` and
    each of ``points_made`` one of :data:`POINTS`, ``last_outcome`` one of :data:`OUTCOMES`
    or ``None``, ``decide_only`` a boolean.

    Raises:
        ValueError: naming the field when a value is missing, of the wrong type or out of range
            (a corrupt state record).
    """
    if not isinstance(data, dict):
        raise ValueError(f"game state record: not an object: {type(data).__name__}")
    try:
        shooter = _int_field(data, "shooter", minimum=1)
        shooter_roll = _int_field(data, "shooter_roll", minimum=0)
        rolls = _int_field(data, "rolls", minimum=0)
        point = data["point"]
    except KeyError as exc:
        raise ValueError(f"game state record: missing field {exc}") from None
    if point is not None and (isinstance(point, bool) or not isinstance(point, int) or point not in POINTS):
        raise ValueError(f"game state record: point {point!r} is not one of {POINTS}")
    made = data.get("points_made", [])
    if not isinstance(made, (list, tuple)):
        raise ValueError(f"game state record: points_made {made!r} is not a list")
    for p in made:
        if isinstance(p, bool) or not isinstance(p, int) or p not in POINTS:
            raise ValueError(f"game state record: points_made holds {p!r}, not one of {POINTS}")
    outcome = data.get("last_outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise ValueError(f"game state record: last_outcome {outcome!r} is not one of {OUTCOMES}")
    decide_only = data.get("decide_only", False)
    if not isinstance(decide_only, bool):
        raise ValueError(f"game state record: decide_only {decide_only!r} is not a boolean")
    return GameState(shooter=shooter, shooter_roll=shooter_roll, point=point, rolls=rolls,
                     points_made=tuple(made), last_outcome=outcome, decide_only=decide_only)


def classify(state: GameState, total: int) -> Outcome:
    """Return the outcome of a roll totalling ``total`` in ``state`` (9 NYCRR 5324.52(b)(1)).

    Raises:
        ValueError: when ``total`` is not 2..12.
    """
    if not 2 <= total <= 12:
        raise ValueError(f"total {total} is not a craps total (2..12)")
    if state.decide_only and state.point is None:
        return "decide-only"
    if state.point is None:
        if total in NATURALS:
            return "natural"
        if total in CRAPS:
            return "craps"
        return "point-set"
    if total == state.point:
        return "point-made"
    if total == 7:
        return "seven-out"
    return "no-decision"


def is_face(value) -> bool:
    """A die's face: a whole number 1..6 (9 NYCRR 5324.52(h)(1); not a bool, not 3.5, not
    ``None``). ``3.0`` is one (``int(3.0) == 3``)."""
    return value is not None and not isinstance(value, bool) and value in range(1, 7)


def advance(state: GameState, dice: tuple[int, int]) -> tuple[GameState, Outcome]:
    """Apply one valid roll.

    Args:
        state: the state before the roll.
        dice: the two face values, each 1..6.

    Returns:
        ``(state after the roll, outcome)``. After a seven-out the state already has the next
        shooter (roll count 0, puck OFF): the shooter "shall pass the dice upon throwing a loser
        7", 9 NYCRR 5324.52(i)(1)(i).

    Raises:
        ValueError: when a die value is not 1..6.
    """
    d1, d2 = dice
    if not (is_face(d1) and is_face(d2)):
        raise ValueError(f"dice {dice}: each value must be 1..6")
    d1, d2 = int(d1), int(d2)   # (3.0 is 3: a float point would not reload, state_from_json)
    total = d1 + d2
    outcome = classify(state, total)
    after = replace(state, shooter_roll=state.shooter_roll + 1, rolls=state.rolls + 1, last_outcome=outcome)
    if outcome == "decide-only" and total == 7:
        after = replace(after, decide_only=False)
    elif outcome == "point-set":
        after = replace(after, point=total)
    elif outcome == "point-made":
        made = tuple(sorted(set(state.points_made) | {total}))
        after = replace(after, point=None, points_made=made)
    elif outcome == "seven-out":
        after = replace(after, point=None, shooter=state.shooter + 1, shooter_roll=0, points_made=())
    return after, outcome


def new_shooter(state: GameState) -> GameState:
    """A voluntary or compulsory relinquishment of the dice: the next shooter takes over.

    The point and the puck are unchanged; the new shooter's roll count starts at 0
    (9 NYCRR 5324.52(i)(1), (i)(3); N.J.A.C. 13:69F-1.11(a), (c)). Pending fire bets carry to the
    successor shooter (5324.52(j)(1)(ii)), so ``points_made`` is kept until a seven-out.
    Rolls made only to decide come and don't come wagers end: they are the previous shooter's,
    and a player who accepts the dice makes a pass or don't pass bet and "the game shall
    proceed" (5324.52(g), (i)(2); N.J.A.C. 13:69F-1.11(b)).
    """
    return replace(state, shooter=state.shooter + 1, shooter_roll=0, decide_only=False)


def set_decide_only(state: GameState, on: bool) -> GameState:
    """Start (``on``) or end the rolls made only to decide the remaining come and don't come
    wagers, the on/off marker OFF on the don't pass line (9 NYCRR 5324.52(i)(2); N.J.A.C.
    13:69F-1.11(b)). The boxperson starts them after a decision when no player makes a pass
    or don't pass bet, and ends them when the wagers are decided or a player makes one.

    Raises:
        ValueError: started while a point is established, after a seven-out, or after any
            other decision than a point made, or for a new shooter: they follow the shooter's
            "making the come out point", and after a loser 7 the shooter passes the dice
            ((i)(1)(i)).
    """
    if on and state.point is not None:
        raise ValueError(f"rolls only to decide come/don't come wagers start after a decision, "
                         f"not while the point is {state.point} (9 NYCRR 5324.52(i)(2))")
    if on and state.last_outcome == "seven-out":
        raise ValueError("rolls only to decide come/don't come wagers follow a point made, not a seven-out: "
                         "the shooter passes the dice (9 NYCRR 5324.52(i)(1)(i), (i)(2))")
    if on and not state.decide_only and (state.last_outcome != "point-made" or state.shooter_roll == 0):
        raise ValueError("rolls only to decide come/don't come wagers follow a point made (\"after making "
                         f"the come out point\") by this shooter, not a "
                         f"{'new shooter' if state.shooter_roll == 0 else state.last_outcome} "
                         "(9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b))")
    return replace(state, decide_only=bool(on))
