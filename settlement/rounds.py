"""Round gate: refuse a wager stamped after its round closed (automated and stadium rigs).

The table publishes its round cycle on the bus under topic ``"round"`` (docs/messages.md#round):
``bets-open``, ``no-more-bets``, ``throw``, ..., ``results``, each with a ``round_id``. A player
terminal stamps each wager with the round it is for and the UTC time it was placed::

    {"player": "p1", "bet": "pass", "amount": 1000,
     "round_id": "table-1-20261130T000512-000042", "placed_at": "2026-11-30T00:07:03.120000+00:00"}

:meth:`RoundGate.check` accepts it only when all of these hold, else raises
:class:`settlement.engine.Rejected` naming what is wrong:

1. it carries a ``round_id`` and a ``placed_at`` with a time zone, and, given when settlement
   received it (its own clock), the stamp is at most :data:`MAX_STAMP_AGE_S` older (a terminal
   stamps its own wagers: a held or backdated stamp could carry a wager made after the close
   while settlement, catching up on the bus, has not seen the close yet) and at most
   :data:`MAX_STAMP_AHEAD_S` newer;
2. the gate has seen that round's ``bets-open`` (an unknown round is refused: it may be a guess)
   and it is the current round: the last ``bets-open`` seen (a round left open by a table that
   stopped or restarted is refused, whatever its stamp says);
3. ``placed_at`` is not before the round's ``bets-open`` envelope time;
4. the gate has not seen the round's ``no-more-bets`` (received after it, the wager is late,
   whatever its stamp says), and ``placed_at`` is before the ``no-more-bets`` time when known;
5. the round was not abandoned (a technician's ``resumed`` names it, a later ``bets-open`` or
   the table's ``"state"`` ``"start"`` envelope left it without a result) and has no result;
6. given what settlement knows of the table's bus (:class:`BusView`), it is not behind: it has
   heard from the table within :attr:`BusView.max_silent_s` (two heartbeat periods,
   :data:`SILENT_HEARTBEATS`) and has applied every message up to the table's head. A stamp
   within :data:`MAX_STAMP_AGE_S` only vouches for the wager if settlement would already know
   of a close before it: behind the bus (catching up after a restart, a slow consumer, a
   replay), it has not applied a ``no-more-bets``, or even the throw's result, that the table
   published before the wager arrived.

Returns: :meth:`RoundGate.observe` says which accepted wagers settlement must return (refund,
a void: no throw decided them) with :class:`Return` values:

* an abandoned round (``resumed`` with ``abandoned``; a ``bets-open`` of another round while it
  had no ``results``; the table's ``start``): every wager placed for it still untouched by a roll;
* ``no-more-bets``: the wagers of that round stamped at or after the close time (accepted
  because they reached settlement before the close envelope: a close and a throw published in
  the same instant race the terminal's wager on the bus).

The rule: "Wagers shall be made before the dice are rolled" (9 NYCRR 5324.52(c)(1)); "All bets
shall be made before the dice are thrown" (N.J.A.C. 13:47-20.25(h)1). The paragraph's exception
(a wager made while the dice are in the air, confirmed orally by the dealer and a boxperson) has no
terminal equivalent and is not offered.

Pure: no I/O, no clock. Times are the envelopes' ``ts`` (the table's publish time, UTC ISO 8601).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .engine import Rejected

__all__ = ["RoundGate", "RoundInfo", "Return", "BusView", "RULE", "parse_utc"]

RULE = "9 NYCRR 5324.52(c)(1); N.J.A.C. 13:47-20.25(h)1"
#: Seconds a wager's stamp (``placed_at``, the terminal's clock) may be older than settlement's
#: own receipt of it (its clock; the two kept in step by NTP). A terminal stamps its own wagers,
#: so a stamp far older than its receipt vouches for nothing: held back, or backdated, it could
#: carry a wager made after no more bets, even after the dice came to rest, while settlement was
#: still catching up on the bus and had not yet seen the close.
MAX_STAMP_AGE_S = 2.0
#: Seconds a stamp may be ahead of settlement's receipt (the two clocks' disagreement).
MAX_STAMP_AHEAD_S = 2.0
#: Heartbeat periods (the bus's ``heartbeat_s``, 0.5 s by default) settlement may go without
#: hearing from the table and still take its last known head for the table's head now. The
#: table sends a heartbeat whenever it has published nothing for ``heartbeat_s``, so one period
#: of silence is normal; the second covers a heartbeat sent late (the publisher's thread polls
#: every 50 ms) and read late (the service reads the bus every 0.2 s). Longer, the table may
#: have published a close settlement has not heard of.
SILENT_HEARTBEATS = 2


def parse_utc(text, what: str) -> datetime:
    """Parse an ISO 8601 time with a time zone.

    Raises:
        Rejected: missing, malformed or without a time zone (``what`` names the field).
    """
    if not isinstance(text, str) or not text:
        raise Rejected(f"{what} missing (an ISO 8601 UTC time is required)", RULE)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise Rejected(f"{what} {text!r} is not an ISO 8601 time", RULE) from None
    if t.tzinfo is None:
        raise Rejected(f"{what} {text!r} has no time zone", RULE)
    return t


@dataclass
class RoundInfo:
    """What the gate knows of one round (envelope times, UTC)."""

    round_id: str
    opened: datetime
    closed: datetime | None = None
    decided: bool = False
    abandoned: bool = False
    #: why it was abandoned (in the refusal's reason)
    abandoned_why: str = "table stopped"


@dataclass(frozen=True)
class Return:
    """Wagers placed for rounds that settlement must return (one ledger transaction).

    Attributes:
        why: the cause, for the ledger and the log (e.g. ``"abandoned"``).
        round_id: the round whose wagers are returned; ``None``: every round but ``keep``.
        keep: with ``round_id`` ``None``, the round whose wagers stay (the one just opened).
        since: only the wagers stamped (``placed_at``) at or after this UTC time; ``None``: all.
    """

    why: str
    round_id: str | None = None
    keep: str | None = None
    since: datetime | None = None


@dataclass(frozen=True)
class BusView:
    """What settlement knows of the table's bus when a wager arrives (for :meth:`RoundGate.check`;
    the caller measures it: the gate has no clock).

    Attributes:
        applied: the last sequence number settlement has applied (every envelope up to it has
            reached the gate; after a restart the gate was rebuilt empty and refuses a round it
            never saw open).
        head: the highest sequence number the table is known to have journalled (the bus
            subscriber's :attr:`bus.subscriber.RollSubscriber.head`: heartbeats' ``last_seq``,
            messages, replay headers); ``None``: not known.
        silent_s: seconds since settlement last heard from the table (a fresh message or
            heartbeat, a replay header: :attr:`bus.subscriber.RollSubscriber.last_heard`);
            ``None``: not since settlement started.
        max_silent_s: the longest silence (seconds) after which ``head`` is still taken for the
            table's head now: :data:`SILENT_HEARTBEATS` x the bus's ``heartbeat_s``.
    """

    applied: int
    head: int | None
    silent_s: float | None
    max_silent_s: float

    def behind(self) -> str | None:
        """Why settlement cannot know it has seen every round envelope the table published
        (the reason of a refusal), or ``None`` when it knows it is caught up."""
        if self.head is None or self.silent_s is None:
            return ("settlement has not heard from the table's bus since it started: still catching up, it "
                    "cannot know whether the round closed")
        if self.silent_s > self.max_silent_s:
            return (f"settlement has not heard from the table's bus for {self.silent_s:.1f} s (more than "
                    f"{self.max_silent_s:g} s, {SILENT_HEARTBEATS} heartbeat periods): it cannot know whether it "
                    "is behind, nor whether the round closed")
        if self.head > self.applied:
            n = self.head - self.applied
            return (f"settlement is behind the table's bus by {n} message{'s' if n != 1 else ''} (applied seq "
                    f"{self.applied}, the table's head seq {self.head}): still catching up, it may not have seen "
                    "the round's no more bets")
        return None


class RoundGate:
    """Tracks the table's rounds from ``"round"`` envelopes and checks wagers against them.

    Args:
        keep: rounds remembered (the oldest are forgotten: a wager for one is "unknown").
    """

    def __init__(self, keep: int = 1000) -> None:
        self.keep = int(keep)
        self.rounds: dict[str, RoundInfo] = {}
        self.current: str | None = None

    def observe(self, env: dict) -> list[Return]:
        """Apply one envelope (others than topic ``"round"``, and ``"state"`` ``"start"``, are
        ignored) and say which accepted wagers must be returned.

        * ``bets-open``: the round becomes the current one; every earlier round without a
          result is abandoned (the table restarted or stopped without telling);
        * ``state`` ``start`` (the table's process started): every round without a result is
          abandoned and no round is current until the next ``bets-open``;
        * ``resumed`` with ``abandoned``: that round is abandoned;
        * ``no-more-bets``: the round closes; wagers stamped at or after the close are returned
          (also for a round whose ``bets-open`` the gate never saw: settlement restarted mid-round).

        Returns:
            the :class:`Return` instructions for the ledger (possibly empty).

        Raises:
            ValueError: a round envelope without ``round_id``/``event`` or a bad ``ts`` (the
                message names the envelope ``seq``; nothing is changed).
        """
        body = env.get("body") or {}
        if env.get("topic") == "state" and isinstance(body, dict) and body.get("event") == "start":
            for info in self.rounds.values():
                if not info.decided and not info.abandoned:
                    info.abandoned, info.abandoned_why = True, "the table restarted"
            self.current = None
            return [Return("abandoned: the table restarted")]
        if env.get("topic") != "round":
            return []
        event, rid = body.get("event"), body.get("round_id")
        if event == "resumed":
            gone = body.get("abandoned")
            if isinstance(gone, str) and gone:
                if gone in self.rounds:
                    self.rounds[gone].abandoned = True
                return [Return("abandoned: the table stopped", round_id=gone)]
            return []
        if event == "stopped":
            return []
        if not isinstance(rid, str) or not isinstance(event, str):
            raise ValueError(f"round envelope seq {env.get('seq')}: body needs 'round_id' and 'event'")
        try:
            ts = parse_utc(env.get("ts"), "envelope ts")
        except Rejected as exc:
            raise ValueError(f"round envelope seq {env.get('seq')}: {exc.reason}") from None
        if event == "bets-open":
            for info in self.rounds.values():
                if info.round_id != rid and not info.decided and not info.abandoned:
                    info.abandoned, info.abandoned_why = True, f"left without a result; round {rid} opened"
            self.rounds[rid] = RoundInfo(rid, ts)
            self.current = rid
            while len(self.rounds) > self.keep:
                del self.rounds[next(iter(self.rounds))]
            return [Return(f"abandoned: round {rid} opened", keep=rid)]
        info = self.rounds.get(rid)
        if info is None:
            if event == "no-more-bets":
                # a round opened before settlement (re)started: the gate never saw its bets-open,
                # but the ledger holds the wagers accepted for it then (a restart mid-round)
                return [Return("placed at or after no more bets", round_id=rid, since=ts)]
            return []
        if event == "no-more-bets" and info.closed is None:
            info.closed = ts
            return [Return("placed at or after no more bets", round_id=rid, since=ts)]
        if event == "results":
            info.decided = True
            if info.closed is None:
                info.closed = ts
        return []

    def check(self, wager: dict, received_at: datetime | None = None, bus: BusView | None = None) -> RoundInfo:
        """Accept or refuse a wager stamped with its round (see the module docstring).

        Args:
            wager: the terminal's wager with ``round_id`` and ``placed_at``.
            received_at: when settlement received it (its own clock, UTC); ``None``: not
                checked. The stamp must be within :data:`MAX_STAMP_AGE_S` before it and
                :data:`MAX_STAMP_AHEAD_S` after it.
            bus: what settlement knows of the table's bus at receipt (:class:`BusView`); the
                wager is refused while settlement is behind the table's head or has not heard
                from the table within ``bus.max_silent_s``. ``None``: not checked.

        Returns:
            the round's info when accepted.

        Raises:
            Rejected: with the reason and :data:`RULE`.
        """
        rid = wager.get("round_id")
        if not isinstance(rid, str) or not rid:
            raise Rejected("wager carries no round id", RULE)
        placed = parse_utc(wager.get("placed_at"), "placed_at")
        if received_at is not None:
            age = (received_at - placed).total_seconds()
            if age > MAX_STAMP_AGE_S:
                raise Rejected(f"placed at {placed.isoformat()} but received at {received_at.isoformat()}: a stamp "
                               f"{age:.1f} s old (more than {MAX_STAMP_AGE_S:g} s) cannot vouch that the wager came "
                               "before no more bets", RULE)
            if -age > MAX_STAMP_AHEAD_S:
                raise Rejected(f"placed at {placed.isoformat()}, {-age:.1f} s after it was received at "
                               f"{received_at.isoformat()} (more than {MAX_STAMP_AHEAD_S:g} s: the terminal's clock "
                               "is wrong)", RULE)
        why = None if bus is None else bus.behind()
        if why is not None:
            raise Rejected(f"round {rid}: {why}", RULE)
        info = self.rounds.get(rid)
        if info is None:
            raise Rejected(f"round {rid} is not open for bets (unknown round)", RULE)
        if info.abandoned:
            raise Rejected(f"round {rid} was abandoned ({info.abandoned_why})", RULE)
        if info.decided:
            raise Rejected(f"round {rid} is decided", RULE)
        if rid != self.current:
            raise Rejected(f"round {rid} is not the current round ({self.current or 'none open'})", RULE)
        if placed < info.opened:
            raise Rejected(f"placed at {placed.isoformat()}, before round {rid} opened at {info.opened.isoformat()}",
                           RULE)
        if info.closed is not None:
            if placed >= info.closed:
                raise Rejected(f"placed at {placed.isoformat()}, after round {rid} closed at "
                               f"{info.closed.isoformat()} (no more bets)", RULE)
            raise Rejected(f"received after round {rid} closed at {info.closed.isoformat()} (no more bets)", RULE)
        return info

    def accepts(self, wager: dict) -> tuple[bool, str | None]:
        """:meth:`check` as ``(True, None)`` or ``(False, reason)``."""
        try:
            self.check(wager)
        except Rejected as exc:
            return False, exc.reason
        return True, None
