"""``craps-table settle-service``: settle the line bets of test players as rolls arrive.

    craps-table settle-service --config config/table.toml --ledger FILE   # the table's [bus]
    craps-table settle-service --bus-dir DIR --ledger FILE                # a BusConfig.local(DIR) bus

Either way the keys must exist (a subscriber creates none); see docs/bus.md.

A subscriber of the roll bus (:class:`bus.subscriber.RollSubscriber`). For every envelope
in sequence order:

* topic ``"roll"`` with verdict ``"roll"`` and dice: the roll is settled in the SQLite
  ledger (:class:`settlement.ledger.Session`, one transaction, idempotent per envelope
  ``seq``), one human-readable line is logged per decided wager, THEN the envelope is
  acknowledged. A roll id settled before under another seq (the table published it again) is
  not settled twice (a warning line; the same roll id with other dice stops the service, see
  below). A change of ``game.shooter`` that is not a seven-out is applied as a
  voluntary relinquishment (N.J.A.C. 13:69F-1.11(a)). The engine tracks the game itself; if
  the table's ``game.point`` differs from its own a warning line is logged.
* topic ``"state"`` with ``event: "new-shooter"`` (the table's voluntary or compulsory
  relinquishment): a new shooter, applied once per ``seq`` (recorded in the ledger).
* topic ``"state"`` with ``event: "decide-only"`` and ``on``: the rolls made only to decide
  the remaining come and don't come wagers start or end (9 NYCRR 5324.52(i)(2); N.J.A.C.
  13:69F-1.11(b)), applied once per ``seq``.
* topic ``"round"`` (and the table's ``"state"`` ``"start"``): the round gate
  (settlement/rounds.py) that accepts terminals' wagers (:meth:`EnvelopeApplier.place_for_round`);
  the wagers of an abandoned round, or stamped at or after no more bets, are returned
  (9 NYCRR 5324.52(c)(1); docs/messages.md#round). After every ``receive`` the service tells the
  applier the table's bus head and when the table was last heard from
  (:meth:`EnvelopeApplier.heard_from_bus`): a round wager is refused while settlement is behind
  that head or has not heard from the table for two heartbeat periods (it may not have applied
  the round's no more bets yet; docs/wagers.md).
* with ``--intake ENDPOINT``: player terminals' wagers (settlement/intake.py, docs/wagers.md
  "Terminal intake"), answered from this loop whenever every bus message that has arrived is
  applied, placed once per ``wager_id`` (kept in the ledger) and acknowledged after the commit;
  with CURVE, each terminal only for the players its allow-list binds it to, the allow-list
  folder read again when it changes (looked at at most once a second, from this loop).
* anything else (no roll, boxperson call, other state, alarm): acknowledged, nothing settled
  (9 NYCRR 5324.52(k): a no roll decides nothing).
* a roll or state message settlement cannot apply (dice that are not two faces 1..6, a
  ``game`` that is not an object: a defect of the table, signed by it): the service stops
  there without acknowledging it (:class:`RollMessageError`, exit status 1), rather than skip
  a roll whose wagers would then never be settled.

The test players make line bets (issue 3 item 5): each is ``{"name": "p1", "bet": "pass" |
"dont_pass" | "come" | "dont_come", "amount": cents, "odds": multiple}`` (:class:`PlayerEntry`:
integers, amount > 0, odds 0..100, no other key; checked when the players are loaded, so a wrong
``--players`` file stops the command with exit status 2 before anything starts); before every roll
a player without a flat bet makes one when the rules allow it (pass/don't pass on the
come-out, come/don't come after it), and takes or lays ``odds`` x amount behind each flat
bet that has a point (capped by the profile's odds limit). A refused bet is logged.

Restart: the subscriber resumes after the last roll seq in the ledger (``resume_after``),
so a crash between the ledger commit and the ack cannot settle a roll twice. A ledger holding
fewer messages than the state file acknowledged lost settled rolls and wagers (an older copy
restored, its -wal file lost): it is refused (:class:`LedgerBehindError`), not resumed from.

Demo use (in a thread)::

    stop = threading.Event()
    t = threading.Thread(target=run_settlement_service,
                         args=(bus_cfg, "ny-5324", DEFAULT_PLAYERS, "/tmp/ledger.sqlite", stop))
    t.start(); ...; stop.set(); t.join()
"""
from __future__ import annotations

import argparse
import json
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from datetime import datetime
from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from camera.argtypes import positive_int

from .clock import utc_now as _watched_utc_now
from .engine import Rejected
from .ledger import DuplicateRoll, Session
from .profile import ProfileError, load_profile

__all__ = ["run_settlement_service", "DEFAULT_PLAYERS", "add_arguments", "run", "LineBettor",
           "PlayerEntry", "ConfigPlayer", "ConfigLineBet", "normalize_players", "load_players"]

DEFAULT_PLAYERS = [
    {"name": "p1", "bet": "pass", "amount": 1000, "odds": 2},
    {"name": "p2", "bet": "dont_pass", "amount": 1000, "odds": 1},
    {"name": "p3", "bet": "come", "amount": 500, "odds": 1},
    {"name": "p4", "bet": "dont_come", "amount": 500, "odds": 0},
]


def _money(c: int) -> str:
    return ("-" if c < 0 else "") + f"${abs(c) // 100}.{abs(c) % 100:02d}"


#: The flat bets a test player can make (issue 3 item 5).
LINE_BETS = ("pass", "dont_pass", "come", "dont_come")


def _underscored(v):
    """``"dont-pass"`` -> ``"dont_pass"`` (other values unchanged, for pydantic to refuse)."""
    return v.replace("-", "_") if isinstance(v, str) else v


class _LineBetFields(BaseModel):
    """What the two forms of a test player's line bet share: strict, no unknown keys, and
    ``bet`` one of :data:`LINE_BETS` (``-`` taken for ``_``)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    bet: Literal["pass", "dont_pass", "come", "dont_come"]

    @field_validator("bet", mode="before")
    @classmethod
    def _underscore_bet(cls, v):
        return _underscored(v)


class PlayerEntry(_LineBetFields):
    """One test player in the service's own form (a ``--players`` file entry).

    Attributes:
        name: the player id (a non-empty string).
        bet: ``"pass"``, ``"dont_pass"``, ``"come"`` or ``"dont_come"`` (``-`` is taken for ``_``).
        amount: the flat bet, integer cents (> 0; not a boolean, not a string).
        odds: odds taken or laid as a multiple of the flat bet, an integer 0..100 (0: none);
            capped by the profile's odds limit when placed.
    """

    name: str = Field(min_length=1)
    amount: int = Field(gt=0)
    odds: int = Field(0, ge=0, le=100)


class ConfigLineBet(_LineBetFields):
    """One line bet of a player in the table config's form (``[settlement.players]`` ``bets``).

    Attributes:
        bet: ``"pass"``, ``"dont-pass"``, ``"come"`` or ``"dont-come"`` (``_`` is taken too).
        amount_cents: the flat bet, integer cents (> 0).
        odds_multiple: odds as a multiple of the flat bet, an integer 0..100 (0: none).
    """

    amount_cents: int = Field(gt=0)
    odds_multiple: int = Field(0, ge=0, le=100)


class ConfigPlayer(BaseModel):
    """A test player in the table config's form: ``{"name", "bankroll_cents", "bets": [...]}``.

    Attributes:
        name: the player id (a non-empty string).
        bankroll_cents: the starting bankroll, integer cents (>= 0; not used by the strategy).
        bets: the player's standing line bets (:class:`ConfigLineBet`).
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str = Field(min_length=1)
    bankroll_cents: int = Field(100_000, ge=0)
    bets: list[ConfigLineBet]


def _entry_error(where: str, index: int, entry, exc: ValidationError) -> ValueError:
    who = f"player {index}" + (f" ({entry['name']!r})" if isinstance(entry, dict)
                                and isinstance(entry.get("name"), str) else "")
    msgs = []
    for err in exc.errors():
        key = ".".join(str(x) for x in err.get("loc", ())) or "(entry)"
        msg = "unknown key" if err.get("type") == "extra_forbidden" else err.get("msg", "invalid")
        got = "" if err.get("type") in ("missing", "extra_forbidden") else f" (got {err.get('input')!r})"
        msgs.append(f"{key}: {msg}{got}")
    return ValueError(f"{where}: {who}: " + "; ".join(msgs))


def normalize_players(players, where: str = "players") -> list[dict]:
    """Validate test players and return them as ``{"name", "bet", "amount", "odds"}`` dicts.

    Each entry is either the service's own form (:class:`PlayerEntry`) or the table config's
    form (controller ``[settlement.players]``, :class:`ConfigPlayer`): ``{"name", "bets":
    [{"bet": "dont-pass", "amount_cents": 1000, "odds_multiple": 2}, ...]}``, as a dict or a
    pydantic model. Unknown keys, wrong types (``"2"``, ``2.0``, ``true`` for an integer),
    ``amount <= 0``, odds outside 0..100 and unknown bets are refused.

    Args:
        players: a list of entries.
        where: names the source in messages (the players file).

    Raises:
        ValueError: naming ``where``, the entry's index (and name) and the wrong field.
    """
    if not isinstance(players, (list, tuple)):
        raise ValueError(f"{where}: must be a list of players, not {type(players).__name__}")
    out = []
    for i, p in enumerate(players):
        if hasattr(p, "model_dump"):
            p = p.model_dump()
        if not isinstance(p, dict):
            raise ValueError(f"{where}: player {i}: must be a mapping, not {p!r}")
        try:
            if "bets" in p:
                cp = ConfigPlayer.model_validate(p)
                out.extend({"name": cp.name, "bet": b.bet, "amount": b.amount_cents, "odds": b.odds_multiple}
                           for b in cp.bets)
            else:
                out.append(PlayerEntry.model_validate(p).model_dump())
        except ValidationError as exc:
            raise _entry_error(where, i, p, exc) from None
    return out


def load_players(path: str | Path) -> list[dict]:
    """Read and validate a ``--players`` JSON file (a list of players, see
    :func:`normalize_players`).

    Raises:
        ValueError: unreadable file, not JSON (with line and column), not a list, or a wrong
            entry; the message names the file (and the entry and field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the players file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON: {exc}") from None
    return normalize_players(data, str(path))


class LineBettor:
    """The test players' line-bet strategy (see module docstring). Pure decisions over a Table.

    Raises:
        ValueError: a wrong player entry (:func:`normalize_players`).
    """

    def __init__(self, players):
        self.players = normalize_players(players)

    def requests(self, table) -> list[dict]:
        """The bets to make now."""
        st = table.state
        out = []
        for p in self.players:
            name, kind, amount = p["name"], p["bet"], p["amount"]
            mine = table.of_player(name)
            flat = [w for w in mine if w.kind == kind]
            line = kind in ("pass", "dont_pass")
            if line and st.point is None and not st.decide_only and not flat:   # (i)(2): none then
                out.append({"player": name, "bet": kind, "amount": amount})
            if not line and st.point is not None and not any(w.number is None for w in flat):
                out.append({"player": name, "bet": kind, "amount": amount})
            mult = p.get("odds", 0) or 0
            if mult and "odds" in table.prof.permitted:
                for w in flat:
                    if w.number is None:
                        continue
                    if any(o.kind == "odds" and o.base == kind and o.number == w.number for o in mine):
                        continue
                    lim = table.prof.s.odds
                    light = kind in ("pass", "come")
                    cap_mult = (lim.take_multiple if light else lim.lay_multiple)[w.number]
                    cap = (lim.take_max_cents if light else lim.lay_max_cents).get(w.number)
                    odds = min(int(w.amount * mult), int(w.amount * cap_mult))
                    if cap is not None:
                        odds = min(odds, cap)
                    if odds > 0:
                        out.append({"player": name, "bet": "odds", "base": kind, "number": w.number, "amount": odds})
        return out


def _describe(seq: int, dice, outcome: str, s) -> str:
    what = s.kind + (f" {s.base}" if s.base else "") + (f" {s.number}" if s.number and s.kind != "pass"
                                                        and s.kind != "dont_pass" else "")
    money = {"win": f"wins {_money(s.payout)}", "lose": "loses", "push": "push", "void": "void"}[s.result]
    vig = f", vig {_money(s.vig)}" if s.vig else ""
    return (f"settle seq={seq} dice={dice[0]}-{dice[1]} ({outcome}): {s.player} {what} stake {_money(s.stake)} "
            f"{money}{vig}")


def run_settlement_service(bus_cfg, profile, players, ledger_path, stop_event: threading.Event,
                           on_line: Callable[[str], None] = print, *, state_path: Path | None = None,
                           max_rolls: int | None = None, receive_timeout_s: float = 0.2, intake=None) -> int:
    """Run the settlement subscriber until ``stop_event`` is set (or ``max_rolls`` rolls settled).

    Args:
        bus_cfg: a :class:`bus.config.BusConfig`.
        profile: profile name / path, or a loaded :class:`settlement.profile.Profile`.
        players: test players (see :data:`DEFAULT_PLAYERS`).
        ledger_path: SQLite ledger file (created if missing; resumes its session).
        stop_event: set it to stop (checked every ``receive_timeout_s`` seconds).
        on_line: called with each human-readable line (settled wagers, refusals, warnings).
        state_path: the subscriber's state file (default: ledger path + ".bus").
        max_rolls: stop after settling this many rolls (None = no limit).
        intake: where player terminals send wagers (:class:`settlement.intake.IntakeConfig`), or
            ``None`` (none). Served from this loop: a request is answered only when the bus has
            nothing more to apply (one ``zmq.Poller`` waits on both), so the round gate checks
            each wager against the latest bus messages. With CURVE, its allow-list folder is
            looked at once a second and read again when it changed
            (:meth:`settlement.intake.WagerIntake.refresh`).

    Returns:
        the number of rolls settled.

    Raises:
        ProfileError: bad profile; ValueError: bad players; bus errors from the subscriber
            (``bus.subscriber.BusError``); :class:`RollMessageError`: a message of the table
            settlement cannot apply, left unacknowledged (the restarted service meets it again
            until the table is fixed: no roll is skipped); :class:`LedgerBehindError`: the ledger
            holds fewer bus messages than the state file acknowledged (it lost settled rolls);
            :class:`settlement.intake.IntakeSetupError`: the intake cannot be set up.
    """
    import zmq

    from bus.subscriber import RollSubscriber

    from .intake import WagerIntake

    prof = load_profile(profile) if isinstance(profile, (str, Path)) else profile
    bettor = LineBettor(players)
    ledger_path = Path(ledger_path)
    sess = Session(prof, ledger_path)
    state_path = Path(state_path) if state_path else Path(str(ledger_path) + ".bus")
    sub = RollSubscriber(bus_cfg, state_path, resume_after=sess.last_bus_seq,
                         on_alarm=lambda code, d: on_line(f"bus alarm {code}: {d}"))
    if sub.stored_ack > sess.last_bus_seq:
        # every ack follows the ledger's commit, so the ledger is never behind what was acked
        # unless it lost commits: restored from an older copy, or its -wal file lost after a crash
        acked = sub.stored_ack
        sub.close()
        sess.close()
        raise LedgerBehindError(
            f"ledger {ledger_path}: it holds the bus messages up to seq {sess.last_bus_seq}, but {state_path} "
            f"acknowledged them up to seq {acked}: the ledger lost what it had settled since (an older copy, or "
            f"its -wal file lost); wagers placed in that time are not in it. Restore the newest ledger; or, to "
            f"settle again from the table's journal from seq {sess.last_bus_seq + 1}, delete {state_path}")
    settled = 0
    applier = EnvelopeApplier(sess, bettor, on_line, heartbeat_s=bus_cfg.heartbeat_s)
    server, poller = None, zmq.Poller()
    try:
        if intake is not None:
            server = WagerIntake(intake.endpoint, curve=intake.curve)
            for sock in (*sub.sockets, server.sock):
                poller.register(sock, zmq.POLLIN)
            on_line(f"wager intake on {server.endpoint}" + (
                f" (CURVE, {server.table.summary()})" if intake.curve else
                " (no CURVE: a loopback/ipc test mode; no terminal is authenticated, so none is bound to players: "
                "any local process may wager for any player)"))
        applier.bet()
        while not stop_event.is_set() and (max_rolls is None or settled < max_rolls):
            if server is not None and (reloaded := server.refresh()) is not None:
                on_line(reloaded)   # the allow-list folder changed: read again (at most once a second)
            env = sub.receive(receive_timeout_s if server is None else 0)
            applier.heard_from_bus(sub.head, sub.last_heard)   # round wagers: is settlement behind?
            if env is None:
                # the bus applied up to now: answer a terminal, else wait on both sockets
                if server is not None and not server.serve_one(applier):
                    poller.poll(int(receive_timeout_s * 1000))
                continue
            settled += applier.apply(env)
            sess.mark_seen(env["seq"])   # a no roll, an alarm...: a restart resumes after it too
            sub.ack(env["seq"])   # after the ledger commit
    finally:
        if server is not None:
            server.close()
        sub.close()
        sess.close()
    return settled


class LedgerBehindError(ValueError):
    """The ledger holds fewer bus messages than the subscriber's state file acknowledged: it
    lost settled rolls and wagers (:func:`run_settlement_service`; exit status 2)."""


class RollMessageError(ValueError):
    """A message signed by the table that settlement cannot apply (a roll whose dice are not two
    faces 1..6, a ``game`` that is not an object, ...): a defect of the table. Settlement stops
    at it, unacknowledged, rather than skip it (a skipped roll is a roll whose wagers are never
    settled); the table keeps it, and a fixed table or settlement takes it up on restart."""


def _message_problem(env: dict) -> str | None:
    """What makes a roll or state message unusable to settlement, or ``None``
    (docs/messages.md: ``body`` an object; a roll's ``dice`` two integers 1..6 and its
    ``game`` an object with an integer or null ``shooter`` and ``point``)."""
    body = env.get("body")
    if body is None:
        return None
    if not isinstance(body, dict):
        return f"body is {type(body).__name__}, not an object"
    game = body.get("game")
    if game is not None and not isinstance(game, dict):
        return f"game is {type(game).__name__}, not an object"
    for key in ("shooter", "point"):
        v = (game or {}).get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            return f"game.{key} is {v!r}, not an integer"
    if env.get("topic") == "roll" and body.get("verdict") == "roll" and body.get("dice") is not None:
        dice = body["dice"]
        if not isinstance(dice, list) or len(dice) != 2 or any(
                isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 6 for d in dice):
            return f"dice {dice!r} are not two faces 1..6"
    return None


def _utc_now() -> datetime:
    """Settlement's clock: now, UTC (aware), watched for steps (settlement/clock.py)."""
    return _watched_utc_now()


class EnvelopeApplier:
    """Applies bus envelopes to a ledger session (the service's logic, without the bus).

    :meth:`apply` returns 1 if the envelope settled a roll now, else 0 (not a roll, a no roll,
    or a roll already applied). The caller acks the envelope afterwards.
    """

    def __init__(self, sess: Session, bettor: LineBettor, on_line: Callable[[str], None], *,
                 clock: Callable[[], datetime] | None = _utc_now,
                 monotonic: Callable[[], float] | None = time.monotonic, heartbeat_s: float = 0.5):
        """``clock``: settlement's own time (UTC, aware) of a terminal's wager's receipt, checked
        against its stamp (:meth:`place_for_round`, settlement/rounds.py ``MAX_STAMP_AGE_S``);
        ``None``: the stamp alone is checked (tests of stamps at fixed times).

        ``monotonic``: the clock (seconds) of :meth:`heard_from_bus`'s ``heard_at``; a round
        wager is refused while settlement is behind the table's bus head or has not heard from
        the table for more than ``SILENT_HEARTBEATS`` x ``heartbeat_s`` seconds (the bus's
        heartbeat period; settlement/rounds.py :class:`BusView`); until :meth:`heard_from_bus`
        is first called every round wager is refused. ``None``: the bus position is not
        checked (tests of the round gate alone).

        Raises:
            ValueError: ``heartbeat_s`` not > 0.
        """
        from .rounds import SILENT_HEARTBEATS, RoundGate

        if not heartbeat_s > 0:
            raise ValueError(f"heartbeat_s must be > 0 seconds: {heartbeat_s!r}")
        self.sess = sess
        self.bettor = bettor
        self.on_line = on_line
        self.clock = clock
        self.monotonic = monotonic
        #: seconds without hearing from the table after which its last known head is stale
        self.max_bus_silence_s = SILENT_HEARTBEATS * float(heartbeat_s)
        #: the last seq applied (:meth:`apply`; on a resumed ledger, its last one)
        self.applied_seq = sess.last_bus_seq
        #: the table's bus head and when it was last heard from (:meth:`heard_from_bus`)
        self.bus_head: int | None = None
        self.bus_heard_at: float | None = None
        self.last_shooter = None

        #: the table's rounds (topic "round"): wagers stamped after their round closed are refused
        self.rounds = RoundGate()

    def heard_from_bus(self, head: int, heard_at: float | None) -> None:
        """Record what the bus subscriber knows of the table (the service calls it after every
        ``receive``): ``head``, the highest sequence number the table is known to have journalled
        (:attr:`bus.subscriber.RollSubscriber.head`), and ``heard_at``, when the table was last
        heard from on the ``monotonic`` clock (:attr:`bus.subscriber.RollSubscriber.last_heard`;
        ``None``: not yet)."""
        self.bus_head, self.bus_heard_at = int(head), heard_at

    def bus_view(self):
        """What settlement knows of the table's bus now (settlement/rounds.py :class:`BusView`),
        or ``None`` when it is not checked (``monotonic=None``)."""
        from .rounds import BusView

        if self.monotonic is None:
            return None
        silent = None if self.bus_heard_at is None else max(0.0, self.monotonic() - self.bus_heard_at)
        return BusView(applied=self.applied_seq, head=self.bus_head, silent_s=silent,
                       max_silent_s=self.max_bus_silence_s)

    def bet(self) -> None:
        """Make the test players' line bets and odds that are due now (:meth:`LineBettor.requests`:
        pass / don't pass on the come-out, come / don't come after it, 9 NYCRR 5324.52(b)(1)-(4);
        odds behind each flat bet with a point, (e)(4)) in the ledger session. A bet the engine
        refuses is recorded by :meth:`Session.place` and reported through ``on_line`` as
        ``bet refused: PLAYER BET $AMOUNT: REASON (RULE)``; the others are still made. Called after
        each settled roll and each new shooter.

        Raises:
            sqlite3.Error: the ledger could not commit a bet (that bet is not placed; those made
                before it stay).
        """
        _bet(self.sess, self.bettor, self.on_line)

    def apply(self, env: dict) -> int:
        """Apply one envelope; returns 1 if it settled a roll now, else 0. Its seq is then
        :attr:`applied_seq` (the round gate has seen everything up to it).

        Raises:
            RollMessageError: a roll or state message settlement cannot apply (nothing changed:
                the caller must not acknowledge it).
        """
        settled = self._apply(env)
        self.applied_seq = max(self.applied_seq, env["seq"])
        return settled

    def _apply(self, env: dict) -> int:
        sess, on_line = self.sess, self.on_line
        seq = env["seq"]
        problem = _message_problem(env) if env.get("topic") in ("roll", "state") else None
        if problem is not None:
            raise RollMessageError(f"seq {seq} ({env.get('topic')}): {problem}: the table's message cannot be "
                                   "settled; settlement stops here without acknowledging it (nothing skipped)")
        body = env.get("body") or {}
        if env.get("topic") == "round" or (env.get("topic") == "state" and body.get("event") == "start"):
            self._round_envelope(env, body)
            if env.get("topic") == "round":
                return 0
        if env.get("topic") == "state" and body.get("event") == "new-shooter":
            cause = body.get("cause", "voluntary")
            try:
                if sess.shooter_change(cause if cause in ("voluntary", "compulsory") else "voluntary", seq):
                    on_line(f"shooter change ({cause}) at seq={seq}")
                    self.bet()
            except Rejected as exc:
                on_line(f"shooter change seq={seq} refused: {exc.reason} [{exc.rule}]")
            self.last_shooter = (body.get("game") or {}).get("shooter")
            return 0
        if env.get("topic") == "state" and body.get("event") == "decide-only":
            on = body.get("on") is True
            try:
                if sess.decide_only(on, seq):
                    on_line(f"rolls only to decide come/don't come wagers {'start' if on else 'end'} at seq={seq}")
            except Rejected as exc:
                on_line(f"decide-only seq={seq} refused: {exc.reason} [{exc.rule}]")
            return 0
        if env.get("topic") != "roll" or body.get("verdict") != "roll" or not body.get("dice"):
            return 0
        dice = body["dice"]
        game = body.get("game") or {}
        shooter = game.get("shooter")
        st = sess.table.state
        seven_out = st.point is not None and sum(dice) == 7   # the table may already count the next shooter
        if (seq > sess.last_bus_seq and self.last_shooter is not None and shooter is not None
                and shooter != self.last_shooter and st.shooter_rolls > 0 and not seven_out):
            try:
                sess.shooter_change("voluntary")
                on_line(f"shooter change (voluntary) before seq={seq}")
            except Rejected as exc:
                on_line(f"shooter change before seq={seq} refused: {exc.reason} [{exc.rule}]")
        self.last_shooter = shooter
        deciding = sess.table.state.decide_only
        roll_id = body.get("roll_id") if isinstance(body.get("roll_id"), str) else None
        try:
            out, applied = sess.roll(dice, seq, roll_id=roll_id)
        except DuplicateRoll as dup:
            if sorted(dup.dice) != sorted(int(d) for d in dice):
                # one roll id, two throws: the table's record went back (controller/store.py)
                raise RollMessageError(f"seq {seq}: {dup}, now with dice {list(dice)}: the table reused a roll id; "
                                       "settlement stops here without acknowledging it") from None
            # the table published it again (it stopped between publishing and recording it)
            on_line(f"warning: seq={seq}: {dup}: published again by the table, not settled twice")
            return 0
        except ValueError as exc:    # a seq below the last applied one that was never applied
            raise RollMessageError(f"seq {seq}: {exc}; settlement stops here without acknowledging it") from None
        if not applied:
            return 0
        outcome = _outcome(sess)
        for s in out:
            on_line(_describe(seq, dice, outcome, s) + f", balance {_money(sess.balance(s.player))}")
        if deciding and not sess.table.state.decide_only and sum(dice) != 7:
            # settlement ended them itself, the table's boxperson has not (docs/messages.md)
            on_line(f"no come or don't come wager remains on a number after seq={seq}: the game proceeds "
                    "(9 NYCRR 5324.52(i)(2)); end the rolls only to decide on the table too "
                    "(craps-table decide --decide-only off)")
        if "point" in game and game.get("point") != sess.table.state.point:
            on_line(f"warning: table reports point {game.get('point')}, settlement has "
                    f"{sess.table.state.point} after seq={seq}")
        self.bet()
        return 1


    def _round_envelope(self, env: dict, body: dict) -> None:
        """A ``"round"`` envelope, or the table's ``"state"`` ``"start"``: the round gate, then
        the wagers it says to return (settlement/rounds.py), in one ledger transaction each,
        one line logged per wager returned. Idempotent on replay (a returned wager stays so).

        Raises:
            RollMessageError: a round envelope without ``round_id``/``event`` or with a bad
                ``ts`` (a defect of the table; nothing changed, the caller must not ack).
        """
        from .rounds import RULE

        seq = env["seq"]
        try:
            returns = self.rounds.observe(env)
        except ValueError as exc:
            raise RollMessageError(f"seq {seq} (round): {exc}: the table's message cannot be applied; "
                                   "settlement stops here without acknowledging it (nothing skipped)") from None
        if env.get("topic") == "round" and body.get("event") == "results" and isinstance(body.get("round_id"), str):
            self.sess.round_decided(body["round_id"])
        for r in returns:
            for o in self.sess.return_round_wagers(r.why, round_id=r.round_id, keep=r.keep, since=r.since, seq=seq):
                self.on_line(f"round {o['round_id']} {o['why']} (seq={seq}): {o['player']} {o['kind'] or 'wager'} "
                             f"wid {o['wid']} returned {_money(o['cents'])}, balance "
                             f"{_money(self.sess.balance(o['player']))} [{RULE}]")

    def place_for_round(self, req: dict, intake=None):
        """Place a terminal's wager stamped with ``round_id`` and ``placed_at`` (see
        settlement/rounds.py) and record the placement with its round in the ledger (with
        ``intake``, a :class:`settlement.ledger.IntakeEntry`, its wager id and reply too, in the
        same transaction: settlement/intake.py).

        Returns:
            the wager as now on the layout (:class:`settlement.wagers.Wager`; cents).

        Raises:
            Rejected: the round is unknown, not the current one, closed, decided or abandoned,
                its stamp is more than 2 s from settlement's receipt of it (``clock``), the
                wager was stamped or received after its round closed, or settlement is behind
                the table's bus or has not heard from it lately (:meth:`bus_view`: it may not
                have seen the close) (9 NYCRR 5324.52(c)(1); N.J.A.C. 13:47-20.25(h)1); or the
                wager itself is illegal. An accepted wager is returned later if its round is
                abandoned or it proves stamped at or after no more bets (:meth:`_round_envelope`).
        """
        self.rounds.check(req, received_at=None if self.clock is None else self.clock(), bus=self.bus_view())
        return self.sess.place({k: v for k, v in req.items() if k not in ("round_id", "placed_at")},
                               round_id=req["round_id"], placed_at=req["placed_at"], intake=intake)


def _outcome(sess) -> str:
    r = sess.db.execute("SELECT outcome FROM rolls ORDER BY seq DESC LIMIT 1").fetchone()
    return r[0] if r else ""


def _bet(sess, bettor: LineBettor, on_line) -> None:
    for req in bettor.requests(sess.table):
        try:
            sess.place(req)
        except Rejected as exc:
            on_line(f"bet refused: {req['player']} {req['bet']} {_money(req['amount'])}: {exc.reason} ({exc.rule})")


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table settle-service``."""
    parser.add_argument("--profile", default=None,
                        help="profile NAME or path (default: with --config, its [settlement] profile; else ny-5324)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bus-dir", type=Path,
                       help="directory of a table's local bus (BusConfig.local: ipc sockets, journal, keys/); "
                            "it must exist and hold the keys (craps-table keys generate ... --dir DIR/keys)")
    where.add_argument("--config", type=Path,
                       help="the table's config file (craps-table run --config PATH): its [bus] endpoints, "
                            "table id and keys_dir")
    parser.add_argument("--ledger", required=True, type=Path, help="SQLite ledger file")
    parser.add_argument("--players", type=Path, help="JSON file: a list of test players (default: 4 line bettors)")
    parser.add_argument("--max-rolls", type=positive_int, help="stop after settling this many rolls (>= 1)")
    parser.add_argument("--intake", metavar="ENDPOINT",
                        help="take player terminals' wagers on this ZeroMQ endpoint (docs/wagers.md \"Terminal "
                             "intake\"; default: with --config, its [settlement] intake_endpoint; else none); "
                             "without CURVE only a loopback tcp:// or an ipc:// endpoint")
    parser.add_argument("--intake-allow", metavar="DIR", type=Path,
                        help="CURVE on the intake: only terminals whose public certificate (NAME.key) is in DIR "
                             "connect; the server key is settlement's bus key (default: with --config and "
                             "[settlement] intake_curve = true, its intake_authorized_dir)")


def _subscriber_bus(bus, config: Path):
    """``bus`` (the ``[bus]`` of the table config file ``config``) with its keys checked as a
    subscriber reads them (nothing is created).

    Raises:
        bus.keys.BusKeyError: the keys directory lacks a file the subscriber reads (named, with
            the ``craps-table keys`` commands that make it).
    """
    from bus.keys import BusKeyError, missing_subscriber_keys

    problem = missing_subscriber_keys(bus)
    if problem is not None:
        raise BusKeyError(f"{config}: {problem}")
    return bus


def run(command: str, args: argparse.Namespace) -> int:
    """Entry point of ``craps-table settle-service``. Returns the exit status."""
    from bus.config import BusConfig
    from bus.keys import BusKeyError
    from controller.config import load_config

    from .intake import IntakeSetupError, intake_config
    try:
        table = load_config(args.config) if args.config is not None else None
        # with --config, the table's own pay tables and players unless given: a table configured
        # for nj-13-47 must not be settled on ny-5324's by default
        prof = load_profile(args.profile or (table.settlement.profile if table is not None else "ny-5324"))
        if args.players:
            players = load_players(args.players)
        elif table is not None and table.settlement.players:
            players = normalize_players(table.settlement.players, where=f"{args.config} [settlement.players]")
        else:
            players = DEFAULT_PLAYERS
        # a subscriber never makes the table's keys; checked before the ledger file is created
        cfg = _subscriber_bus(table.bus, args.config) if table is not None \
            else BusConfig.local(args.bus_dir, make_keys=False)
        intake = intake_config(args.intake, args.intake_allow, table.settlement if table is not None else None, cfg)
        Session(prof, args.ledger).close()   # a ledger that is not usable (or of another profile): exit 2 now
    except (ProfileError, ValueError, OSError, BusKeyError) as exc:
        print(f"craps-table settle-service: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"craps-table settle-service: profile {prof.name}, bus {cfg.pub_endpoint}, ledger {args.ledger}: "
          f"waiting for rolls", file=sys.stderr, flush=True)
    from bus.subscriber import BusError
    try:
        run_settlement_service(cfg, prof, players, args.ledger, stop, on_line=lambda s: print(s, flush=True),
                               max_rolls=args.max_rolls, intake=intake)
    except (LedgerBehindError, IntakeSetupError) as exc:   # a ledger that lost settled rolls, an intake that
        print(f"craps-table settle-service: {exc}", file=sys.stderr)   # cannot bind: bad input, not a traceback
        return 2
    except (RollMessageError, BusError) as exc:   # needs an operator: said, not a traceback
        print(f"craps-table settle-service: stopped: {exc}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:   # the ledger cannot be written (disk full, I/O error): nothing acked
        print(f"craps-table settle-service: stopped: ledger {args.ledger}: {exc}; the envelope being settled "
              "was not acknowledged and is settled on restart", file=sys.stderr)
        return 1
    except BusKeyError as exc:   # a key file there but unreadable (empty, not a certificate)
        print(f"craps-table settle-service: {exc}", file=sys.stderr)
        return 2
    return 0
