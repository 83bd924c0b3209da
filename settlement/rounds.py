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
   the table's ``"state"`` ``"start"`` envelope left it without a result) and has no result.

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

__all__ = ["RoundGate", "RoundInfo", "Return", "RULE", "parse_utc"]

RULE = "9 NYCRR 5324.52(c)(1); N.J.A.C. 13:47-20.25(h)1"
#: Seconds a wager's stamp (``placed_at``, the terminal's clock) may be older than settlement's
#: own receipt of it (its clock; the two kept in step by NTP). A terminal stamps its own wagers,
#: so a stamp far older than its receipt vouches for nothing: held back, or backdated, it could
#: carry a wager made after no more bets, even after the dice came to rest, while settlement was
#: still catching up on the bus and had not yet seen the close.
MAX_STAMP_AGE_S = 2.0
#: Seconds a stamp may be ahead of settlement's receipt (the two clocks' disagreement).
MAX_STAMP_AHEAD_S = 2.0


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

    def check(self, wager: dict, received_at: datetime | None = None) -> RoundInfo:
        """Accept or refuse a wager stamped with its round (see the module docstring).

        Args:
            wager: the terminal's wager with ``round_id`` and ``placed_at``.
            received_at: when settlement received it (its own clock, UTC); ``None``: not
                checked. The stamp must be within :data:`MAX_STAMP_AGE_S` before it and
                :data:`MAX_STAMP_AHEAD_S` after it.

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
