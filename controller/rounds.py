"""The round cycle of automated and stadium rigs: a pure state machine with round ids.

An automated rig (a shaker or blower under a dome) and a stadium rig (one live table, many player
terminals) run the game as *rounds* that the controller paces and announces::

    bets-open --window / dice out--> no-more-bets --> throw --> in-motion --> at-rest --> verdict
        ^                                              ^                                    |
        |                                              +------ re-throw (a no roll, automated)
        +---------------- results <------------------------------------------ a final verdict

Every transition is one event handed to ``publish(body)`` (the driver publishes it on the bus
under topic ``"round"``, docs/messages.md#round) and every event carries the round id. A round
ends with exactly one ``results`` event naming exactly one final verdict (``roll_id``); the no
rolls that were re-thrown inside the round are listed in ``rethrown`` (no roll verdicts only: a
boxperson call is decided by the next verdict, it is not re-thrown).

Why bets close where they do: "Wagers shall be made before the dice are rolled"
(9 NYCRR 5324.52(c)(1)); "All bets shall be made before the dice are thrown" (N.J.A.C.
13:47-20.25(h)1); "All bets must be made before the dice are thrown" (9 NYCRR 4620.3(d)(1)). The regulation's exception for wagers made while the
dice are in the air needs an oral confirmation by the dealer and the boxperson (5324.52(c)(1)(i)),
which a player terminal cannot give: on these rigs a wager is accepted only while the round is
``bets-open``.

Modes:

- ``"automated"``: the bets window is ``bets_open_s`` seconds, then no more bets, then the rig
  throws (the driver commands the shaker). A no roll is re-thrown inside the same round up to
  ``max_rethrows`` times; one more and the table stops and calls for a technician (a house / rig
  rule: no regulation paragraph speaks of shakers). Rounds start no closer than
  ``min_round_s`` seconds apart (a cap such as 50 games an hour is ``min_round_s = 72``).
- ``"live"``: bets close when the dice leave the shooter's hand, seen as the first motion on the
  layout or a "dice out" input (:meth:`RoundCycle.dice_out`). A no roll ends the round (its
  result decides nothing; 9 NYCRR 5324.52(k)) and the next round opens for bets.

Dice that did not move (a house / rig rule, the integrity of a mechanical throw): when both dice
rest where they rested at the end of the previous throw, with the same faces, the result is not
used; the driver publishes a no roll ``dice-did-not-move`` and raises a fault
(:meth:`RoundCycle.dice_did_not_move` tells; :meth:`RoundCycle.verdict` counts them). After
``stuck_limit`` such no rolls in a row the table stops.

The machine does no I/O: times come from the injectable ``clock`` (seconds, any monotonic clock:
the frame clock in the service, a fake clock in tests), events go to ``publish``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

BETS_OPEN = "bets-open"
NO_MORE_BETS = "no-more-bets"
THROW = "throw"
IN_MOTION = "in-motion"
AT_REST = "at-rest"
VERDICT = "verdict"
RESULTS = "results"
STOPPED = "stopped"

#: Event names, in cycle order (``stopped`` and ``resumed`` are outside the cycle).
EVENTS: tuple[str, ...] = (BETS_OPEN, NO_MORE_BETS, THROW, IN_MOTION, AT_REST, VERDICT, RESULTS, STOPPED, "resumed")

MODES = ("automated", "live")

#: What :meth:`RoundCycle.verdict` tells the driver to do next.
NEXT_RESULTS = "results"      # the round is decided
NEXT_RETHROW = "rethrow"      # throw again inside the round (automated no roll)
NEXT_WAIT = "wait"            # a boxperson call is open: wait for the decision (a new verdict)
NEXT_STOP = "stop"            # the table stopped (technician)

#: The reason code of a throw whose dice did not move (house / rig rule; see the module docstring).
DICE_DID_NOT_MOVE = "dice-did-not-move"


class RoundsConfig(BaseModel):
    """``[rounds]``: the round cycle of an automated or stadium rig (``craps-table run --mode``).

    Attributes:
        bets_open_s: seconds the bets window stays open (automated; live: at least this long,
            then until the dice leave the shooter's hand).
        min_round_s: seconds from one round's bets-open to the next at the least (the pace cap;
            3600 / games-per-hour, e.g. 72 for 50 games an hour); 0: no cap.
        results_s: seconds the results are shown before the next round opens.
        max_rethrows: no rolls re-thrown automatically inside one round (automated); one more
            stops the table and calls for a technician.
        stuck_limit: "dice did not move" no rolls in a row that stop the table (>= 1).
        same_tolerance_px: centre distance in pixels within which a die rests "where it rested".
        shake_ms: how long the shaker or blower runs per throw, milliseconds (1..10000).
        action: ``"shake"`` or ``"blow"`` (the rig's actuator).
        intensity: 0..255, passed to the microcontroller.
        shaker_done_timeout_s: seconds past ``shake_ms`` to wait for the shaker's "done" event
            before the table stops with a fault.
        no_motion_s: seconds after the shaker's "done" event without any motion on the layout
            that make a "dice did not move" no roll.
        throw_guard_s: seconds between ``no-more-bets`` and the SHAKER command (automated; 0: in
            the same frame): time for the close to reach settlement before the dice move
            (settlement returns any wager stamped at or after the close anyway, 9 NYCRR
            5324.52(c)(1)).
        throw_timeout_s: wall-clock seconds from a throw's SHAKER command to its verdict (a
            result, a boxperson call, or a no roll's re-throw command) at the most; exceeded
            (dice that never come to rest, a lifecycle that never settles) the table stops
            with a fault. Keep it above ``[lifecycle] rest_timeout_s`` plus the time dice take
            to settle after a not-at-rest no roll.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    bets_open_s: float = Field(10.0, ge=0, le=3600)
    min_round_s: float = Field(72.0, ge=0, le=86400)
    results_s: float = Field(3.0, ge=0, le=3600)
    max_rethrows: int = Field(3, ge=0, le=100)
    stuck_limit: int = Field(3, ge=1, le=100)
    same_tolerance_px: float = Field(12.0, gt=0)
    shake_ms: int = Field(1500, ge=1, le=10000)
    action: str = Field("shake", pattern="^(shake|blow)$")
    intensity: int = Field(255, ge=0, le=255)
    shaker_done_timeout_s: float = Field(3.0, gt=0, le=600)
    no_motion_s: float = Field(2.0, gt=0, le=600)
    throw_guard_s: float = Field(0.0, ge=0, le=60)
    throw_timeout_s: float = Field(60.0, gt=0, le=3600)

    @property
    def rounds_per_hour_cap(self) -> float | None:
        """The pace cap in rounds per hour (``None`` without one)."""
        return 3600.0 / self.min_round_s if self.min_round_s > 0 else None


@dataclass(frozen=True, slots=True)
class RestDie:
    """A die at rest, for the "did not move" check: face value and centre in pixels."""

    value: int | None
    x: float
    y: float


def same_rest(a: Sequence[RestDie], b: Sequence[RestDie], tolerance_px: float) -> bool:
    """``True`` when ``a`` and ``b`` are both exactly two dice, with the same faces, each within
    ``tolerance_px`` pixels of where its partner is (matched greedily by nearest same face).
    A scene with a die not read (value ``None``) is never "the same"."""
    if len(a) != 2 or len(b) != 2 or any(d.value is None for d in (*a, *b)):
        return False
    left = list(b)
    for die in a:
        cands = [(((die.x - o.x) ** 2 + (die.y - o.y) ** 2) ** 0.5, i) for i, o in enumerate(left)
                 if o.value == die.value]
        if not cands:
            return False
        dist, i = min(cands)
        if dist > tolerance_px:
            return False
        left.pop(i)
    return True


@dataclass
class Round:
    """One round's record.

    Attributes:
        round_id: ``PREFIX-NNNNNN``.
        number: the round's number: the table's round count when the cycle takes numbers from
            the state store (rising across restarts), else 1, 2, ... within this cycle.
        opened_at, closed_at: clock seconds of bets-open and no-more-bets (``None`` until then).
        throws: throws made (1 + re-throws).
        verdicts: roll ids of every verdict of the round, in order.
        final: the roll id of the deciding verdict (``None`` until results).
        no_rolls: roll ids of the round's no roll verdicts, in order (the ``rethrown`` of
            ``results``: a boxperson call decided with dice or void is not one).
    """

    round_id: str
    number: int
    opened_at: float
    closed_at: float | None = None
    throws: int = 0
    verdicts: list = None  # type: ignore[assignment]
    final: str | None = None
    no_rolls: list = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.verdicts is None:
            self.verdicts = []
        if self.no_rolls is None:
            self.no_rolls = []


class RoundError(RuntimeError):
    """A transition asked in a phase that does not allow it (names both)."""


class RoundCycle:
    """The round state machine (see the module docstring).

    Args:
        prefix: round ids are ``f"{prefix}-{n:06d}"`` (e.g. ``"table-1-20261130T000512"``: the
            start time is for reading only, a clock set back can repeat it; the number ``n``
            makes the id unique when it comes from ``numbers``).
        config: :class:`RoundsConfig`.
        mode: ``"automated"`` or ``"live"``.
        clock: ``() -> float`` seconds (monotonic).
        publish: called with each event body (a dict; see docs/messages.md#round).
        first_number: the first round's number (without ``numbers``).
        numbers: ``() -> int``: the next round's number, taken (and made durable) before the
            round's first event is published: the state store's
            :meth:`controller.store.StateStore.next_round_number`, which never gives a number
            twice across restarts. ``None``: ``first_number``, ``first_number + 1``, ... (this
            cycle only). An exception it raises (``StoreError``) propagates and no round opens.

    Raises:
        ValueError: an unknown mode.
    """

    def __init__(self, prefix: str, config: RoundsConfig, *, mode: str = "automated",
                 clock: Callable[[], float], publish: Callable[[dict], None], first_number: int = 1,
                 numbers: Callable[[], int] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.prefix, self.config, self.mode = prefix, config, mode
        self.clock, self.publish = clock, publish
        self.phase: str | None = None
        self.round: Round | None = None
        self.history: list[Round] = []
        self.stop_cause: str | None = None
        self.stuck_run = 0
        self._next_number = int(first_number)
        self._numbers = numbers
        self._next_open_at: float | None = None
        self._last_rest: tuple[RestDie, ...] = ()

    # --- queries ------------------------------------------------------------------------------

    @property
    def bets_open(self) -> bool:
        """``True`` while wagers may be accepted for :attr:`round`."""
        return self.phase == BETS_OPEN

    @property
    def bets_closed(self) -> bool:
        """``True`` whenever bets are not open (the ``bets-closed`` lamp)."""
        return self.phase != BETS_OPEN

    @property
    def stopped(self) -> bool:
        """``True`` after the table stopped (until :meth:`resume`)."""
        return self.phase == STOPPED

    def accepts_wager(self, round_id: str) -> tuple[bool, str | None]:
        """May a wager for ``round_id`` be accepted now? ``(True, None)`` or ``(False, why)``.
        Only the current round, only while its bets are open (9 NYCRR 5324.52(c)(1))."""
        if self.round is None or round_id != self.round.round_id:
            return False, f"round {round_id!r} is not the current round"
        if self.phase != BETS_OPEN:
            return False, f"round {round_id} is {self.phase}: no more bets"
        return True, None

    def open_due(self, now: float) -> bool:
        """``True`` when the next round may open (results shown, pace cap kept)."""
        return self.phase == RESULTS and (self._next_open_at is None or now >= self._next_open_at)

    def close_due(self, now: float) -> bool:
        """Automated: ``True`` when the bets window of the open round has passed."""
        return (self.phase == BETS_OPEN and self.round is not None
                and now >= self.round.opened_at + self.config.bets_open_s)

    def dice_did_not_move(self, scene: Sequence[RestDie]) -> bool:
        """``True`` when ``scene`` (the dice at rest now) is where the previous throw's dice
        rested, with the same faces (see :func:`same_rest`)."""
        return same_rest(tuple(scene), self._last_rest, self.config.same_tolerance_px)

    # --- transitions --------------------------------------------------------------------------

    def _emit(self, event: str, **extra) -> dict:
        now = self.clock()
        r = self.round
        body = {"round_id": r.round_id if r else None, "round": r.number if r else None, "event": event,
                "mode": self.mode, "t": round(float(now), 6), "throw": r.throws if r else 0}
        body.update(extra)
        self.phase = event if event in (BETS_OPEN, NO_MORE_BETS, THROW, IN_MOTION, AT_REST, VERDICT,
                                        RESULTS, STOPPED) else self.phase
        self.publish(body)
        return body

    def _take_number(self) -> int:
        """The next round's number (from ``numbers`` when given)."""
        if self._numbers is not None:
            n = int(self._numbers())
        else:
            n = self._next_number
        self._next_number = n + 1
        return n

    def _expect(self, what: str, *phases: str | None) -> None:
        if self.phase not in phases:
            raise RoundError(f"{what} in phase {self.phase!r} (allowed: {', '.join(str(p) for p in phases)})")

    def open(self) -> dict:
        """Open the next round for bets (at start, or when :meth:`open_due`)."""
        self._expect("bets-open", None, RESULTS)
        now = self.clock()
        n = self._take_number()
        self.round = Round(f"{self.prefix}-{n:06d}", n, now)
        return self._emit(BETS_OPEN, window_s=self.config.bets_open_s if self.mode == "automated" else None)

    def begin_closed(self, cause: str) -> dict:
        """Start the next round with its bets already closed (live mode: the dice were thrown
        again before the bets window could open). Only ``no-more-bets`` is published (with
        ``opened: false``): no ``bets-open``, so settlement refuses every wager for it."""
        self._expect("no-more-bets", None, RESULTS)
        now = self.clock()
        n = self._take_number()
        self.round = Round(f"{self.prefix}-{n:06d}", n, now, closed_at=now)
        return self._emit(NO_MORE_BETS, cause=cause, opened=False)

    def close_bets(self, cause: str) -> dict:
        """No more bets (``cause``: ``"window"``, ``"first-motion"``, ``"dice-out"``)."""
        self._expect("no-more-bets", BETS_OPEN)
        self.round.closed_at = self.clock()
        return self._emit(NO_MORE_BETS, cause=cause)

    def throw(self, how: str) -> dict:
        """The dice are thrown (``how``: ``"shaker"``, ``"blower"``, ``"shooter"``); also the
        re-throw of a no roll (from ``verdict``)."""
        self._expect("throw", NO_MORE_BETS, VERDICT)
        self.round.throws += 1
        return self._emit(THROW, how=how)

    def motion(self) -> dict | None:
        """The first motion of the throw on the layout (``None`` if already in motion)."""
        if self.phase == IN_MOTION:
            return None
        self._expect("in-motion", THROW)
        return self._emit(IN_MOTION)

    def at_rest(self) -> dict | None:
        """The dice came to rest (``None`` when no throw was in motion: e.g. a rest read after
        a forced verdict)."""
        if self.phase != IN_MOTION:
            return None
        return self._emit(AT_REST)

    def verdict(self, roll_id: str, kind: str, reason: str | None, dice: Sequence[int] | None = None,
                scene: Sequence[RestDie] = ()) -> str:
        """A verdict of the current throw was published.

        Args:
            roll_id: the verdict's roll id.
            kind: ``"roll"``, ``"no-roll"``, ``"boxperson"``.
            reason: its reason code or ``None``.
            dice: the dice of a valid roll.
            scene: the dice at rest (remembered for the next "did not move" check; an empty
                scene keeps the last one).

        Returns:
            :data:`NEXT_RESULTS`, :data:`NEXT_RETHROW`, :data:`NEXT_WAIT` or :data:`NEXT_STOP`.

        Raises:
            RoundError: no throw of this round awaits a verdict.
        """
        self._expect("verdict", THROW, IN_MOTION, AT_REST, VERDICT)
        r = self.round
        r.verdicts.append(roll_id)
        if kind == "no-roll":
            r.no_rolls.append(roll_id)
        if scene:
            self._last_rest = tuple(scene)
        stuck = reason == DICE_DID_NOT_MOVE
        self.stuck_run = self.stuck_run + 1 if stuck else (self.stuck_run if kind == "boxperson" else 0)
        self._emit(VERDICT, roll_id=roll_id, verdict=kind, reason=reason,
                   dice=None if dice is None else list(dice), stuck_run=self.stuck_run)
        if kind == "boxperson":
            return NEXT_WAIT
        if stuck and self.stuck_run >= self.config.stuck_limit:
            self.stop(f"{DICE_DID_NOT_MOVE} x{self.stuck_run}: the dice did not move; call a technician")
            return NEXT_STOP
        if kind == "no-roll" and self.mode == "automated":
            if r.throws > self.config.max_rethrows:
                self.stop(f"no roll after {r.throws} throws (max_rethrows {self.config.max_rethrows}); "
                          f"call a technician")
                return NEXT_STOP
            return NEXT_RETHROW
        r.final = roll_id
        now = self.clock()
        self._next_open_at = max(now + self.config.results_s, r.opened_at + self.config.min_round_s)
        self._emit(RESULTS, roll_id=roll_id, verdict=kind, reason=reason,
                   dice=None if dice is None else list(dice),
                   rethrown=[v for v in r.no_rolls if v != roll_id],
                   duration_s=round(now - r.opened_at, 6),
                   closed_to_result_s=None if r.closed_at is None else round(now - r.closed_at, 6))
        self.history.append(r)
        if len(self.history) > 1000:
            del self.history[:-1000]
        return NEXT_RESULTS

    def stop(self, cause: str) -> dict:
        """Stop the table (technician called); bets stay closed until :meth:`resume`."""
        self.stop_cause = cause
        return self._emit(STOPPED, cause=cause, technician=True)

    def resume(self, who: str = "technician", **extra) -> dict:
        """A technician cleared the stop: the open round (if any) is abandoned without a result
        (its wagers are returned by settlement, no verdict decided it) and the next round may open
        at once. ``extra``: more fields of the ``resumed`` event (the driver's ``cleared``,
        ``console``)."""
        self._expect("resume", STOPPED)
        r = self.round
        body = self._emit("resumed", who=who, abandoned=r.round_id if r is not None and r.final is None else None,
                          **extra)
        self.phase, self.stop_cause, self.stuck_run, self._next_open_at = RESULTS, None, 0, None
        return body
