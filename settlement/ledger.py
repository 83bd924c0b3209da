"""Per-player ledger in SQLite; settling is idempotent per roll sequence number.

:class:`Session` couples a :class:`settlement.engine.Table` with a SQLite file. Every
change (a wager made, removed or switched on/off, a shooter change, a roll) is applied to a
copy of the table and committed in ONE transaction together with the new table snapshot,
the balance changes and an audit row; only then does the in-memory table change. A crash
leaves either the whole change or none of it.

Idempotency: :meth:`Session.roll` with a sequence number already applied returns the
settlements recorded the first time and changes nothing. A sequence number lower than the
last applied one that was never applied is refused (ValueError): rolls are settled in order.

Tables (all amounts in cents):
    meta(key, value)                      profile name
    balances(player, cents)               net position of each player (0 at the start)
    rolls(seq, d1, d2, point_before, outcome, utc)
    settlements(id, seq, player, wid, bet, number, base, dice, result, stake, payout, vig,
                returned, balance_after, rule, utc)   -- one row per decided wager
    events(id, kind, player, request, cents, utc)     -- bets, removals, lammers, shooter changes,
                                                        rejections (cents = balance change)
    snapshot(id=1, json)                  open wagers and game state after the last change
    round_wagers(id, round_id, wid, player, amount, vig, placed_at, status, seq, why, utc)
                                          -- one row per wager placed for a round (a terminal's,
                                             settlement/rounds.py); status "open" until a roll
                                             settles the layout ("rode"), its round has a result
                                             ("decided") or it is given back ("returned",
                                             :meth:`Session.return_round_wagers`)
    intake(wager_id, terminal, request, reply, wid, utc)
                                          -- one row per wager a player terminal sent
                                             (settlement/intake.py): its idempotency key, the
                                             terminal's CURVE public key (NULL without CURVE),
                                             the request and the reply given (JSON); written in
                                             the placement's transaction (``wid`` set) or, for a
                                             refused wager, alone (``wid`` NULL)
"""
from __future__ import annotations

import copy
import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable

from bus.filelock import LockHeld, take_exclusive

from .clock import utc_now as _watched_utc_now
from .engine import Rejected, Settlement, Table
from .wagers import Wager

__all__ = ["Session", "IntakeEntry"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS balances(player TEXT PRIMARY KEY, cents INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rolls(seq INTEGER PRIMARY KEY, d1 INTEGER NOT NULL, d2 INTEGER NOT NULL,
    point_before INTEGER, outcome TEXT NOT NULL, utc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settlements(id INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL,
    player TEXT NOT NULL, wid INTEGER NOT NULL, bet TEXT NOT NULL, number INTEGER, base TEXT, dice TEXT,
    result TEXT NOT NULL, stake INTEGER NOT NULL, payout INTEGER NOT NULL, vig INTEGER NOT NULL,
    returned INTEGER NOT NULL, balance_after INTEGER NOT NULL, rule TEXT NOT NULL, utc TEXT NOT NULL,
    UNIQUE(seq, wid));
CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,
    player TEXT, request TEXT NOT NULL, cents INTEGER NOT NULL, utc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshot(id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS roll_ids(roll_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, d1 INTEGER NOT NULL,
    d2 INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS round_wagers(id INTEGER PRIMARY KEY AUTOINCREMENT, round_id TEXT NOT NULL,
    wid INTEGER NOT NULL, player TEXT NOT NULL, amount INTEGER NOT NULL, vig INTEGER NOT NULL,
    placed_at TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'open', seq INTEGER, why TEXT, utc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS intake(wager_id TEXT PRIMARY KEY, terminal TEXT, request TEXT NOT NULL,
    reply TEXT NOT NULL, wid INTEGER, utc TEXT NOT NULL);
"""


@dataclass(frozen=True)
class IntakeEntry:
    """A player terminal's wager as the ledger records it with its placement (settlement/intake.py).

    Attributes:
        wager_id: the terminal's idempotency key (unique in the ledger).
        terminal: the terminal's CURVE public key (Z85), or ``None`` on a socket without CURVE.
        request: the request as received, canonical JSON (sorted keys).
        reply: ``reply(wager, debited_cents, balance_cents)`` -> the reply to store and send:
            called inside the placement's transaction, with the wager as now on the layout, the
            cents debited (stake + vig taken at placement) and the player's balance after it.
    """

    wager_id: str
    terminal: str | None
    request: str
    reply: Callable[[Wager, int, int], dict]



class DuplicateRoll(ValueError):
    """A roll whose table roll id was settled before under another bus seq (the table published
    it again: a crash between its publish and its record of it, with the journal pruned).

    Attributes:
        roll_id: the table's roll id.
        first_seq: the seq it was settled at.
        dice: the dice settled then.
    """

    def __init__(self, roll_id: str, first_seq: int, dice: tuple[int, int]) -> None:
        super().__init__(f"roll {roll_id} was settled at seq {first_seq} with dice {list(dice)}")
        self.roll_id, self.first_seq, self.dice = roll_id, first_seq, dice


def _outlay(table: Table, player: str) -> int:
    return sum(w.amount + w.vig_paid for w in table.wagers if w.player == player)


def _utc() -> str:
    """Now, UTC, ISO 8601 to the millisecond: settlement's watched clock (settlement/clock.py)."""
    return _watched_utc_now().isoformat(timespec="milliseconds")


def _create(prof, path: Path) -> None:
    """Make a new, empty ledger file at ``path`` for profile ``prof`` atomically: it is built
    under ``path.new`` (schema, profile) and renamed into place, so that a ledger file that
    exists always holds its profile. An empty or truncated file is then never taken for a new
    ledger (:func:`_check_file`).

    Raises:
        sqlite3.Error, OSError: the directory is missing or not writable.
    """
    tmp = path.with_name(path.name + ".new")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):   # a creation killed half way
        leftover.unlink(missing_ok=True)
    conn = sqlite3.connect(str(tmp), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(_SCHEMA)
        conn.execute("INSERT INTO meta VALUES('profile', ?)", (prof.name,))
    finally:
        conn.close()      # the last connection: the WAL is checkpointed into the file
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)      # the rename itself survives a power cut
    finally:
        os.close(fd)


def _check_file(db: sqlite3.Connection, path) -> None:
    """Refuse an existing ledger file that is damaged or is not a ledger: ``PRAGMA
    quick_check`` must pass (the file's structure: truncated or overwritten pages), it must
    hold the profile it was made for (a file emptied or truncated to nothing holds none: it
    must not be taken for a new ledger), and each player's balance must equal the sum of the
    recorded changes (bets, removals, returns, settlements; cents).

    Raises:
        ValueError: ``ledger PATH: ...`` naming what is wrong.
        sqlite3.Error: not an SQLite database at all.
    """
    check = [r[0] for r in db.execute("PRAGMA quick_check(5)").fetchall()]
    if check != ["ok"]:
        raise ValueError(f"ledger {path}: damaged ({'; '.join(check)[:300]}); it is not used: "
                         "restore it from a copy")
    have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not {"meta", "balances", "events", "settlements"} <= have or db.execute(
            "SELECT 1 FROM meta WHERE key='profile'").fetchone() is None:
        raise ValueError(f"ledger {path}: not a settlement ledger (no profile recorded: an empty or truncated "
                         "file, or another program's database); it is not used: restore it from a copy, or "
                         "give a path that does not exist to start a new ledger")
    want: dict[str, int] = {}
    for sql in ("SELECT player, SUM(cents) FROM events WHERE player IS NOT NULL GROUP BY player",
                "SELECT player, SUM(returned) FROM settlements GROUP BY player"):
        for player, cents in db.execute(sql):
            want[player] = want.get(player, 0) + cents
    have_cents = dict(db.execute("SELECT player, cents FROM balances").fetchall())
    wrong = next(((p, have_cents.get(p, 0), want.get(p, 0)) for p in sorted(set(want) | set(have_cents))
                  if have_cents.get(p, 0) != want.get(p, 0)), None)
    if wrong is not None:
        raise ValueError(f"ledger {path}: damaged: player {wrong[0]!r} has balance {wrong[1]} cents but the "
                         f"recorded changes sum to {wrong[2]} cents; it is not used: restore it from a copy")


def _take_lock(path: Path):
    """Take the exclusive lock ``<ledger>.lock`` beside ``path`` (one session per ledger);
    returns its open file, whose closing releases it.

    Raises:
        ValueError: ``ledger PATH: in use by another ...`` (the lock is held), or the lock file
            cannot be opened (a missing directory, no permission), naming it.
    """
    lock = Path(str(path) + ".lock")
    if not path.parent.is_dir():
        raise ValueError(f"ledger {path}: unable to open database file: its directory {path.parent} does not exist")
    try:
        return take_exclusive(lock)
    except LockHeld:
        raise ValueError(f"ledger {path}: in use by another settle-service or settle session (lock {lock} "
                         "held); one session owns a ledger, or rolls and wagers would be applied twice") from None
    except OSError as exc:
        raise ValueError(f"ledger {path}: cannot open its lock {lock}: {exc.strerror or exc}") from None


class Session:
    """A table session persisted in SQLite.

    Args:
        prof: a :class:`settlement.profile.Profile`.
        path: SQLite file (created if missing) or ":memory:".

    A file that does not exist is created whole (:func:`_create`); an existing one must be a
    sound ledger (:func:`_check_file`): a ledger emptied, truncated or overwritten while the
    service was stopped is refused, never taken for a new, empty one.

    One session owns a ledger file: it holds an exclusive ``flock`` on ``<ledger>.lock`` until
    :meth:`close` (as the controller's state store and the bus journal do). Two settle-services
    (or a ``craps-table settle``) on one ledger would each apply the same rolls and wagers from
    their own in-memory layout: bets placed twice, a payout settled twice, and the second to
    commit stopping on a constraint error.

    Raises:
        ValueError: the file was written under a different profile, is in use by another
            session (its lock is held), or cannot be used as a ledger (not an SQLite database,
            a missing directory, no permission, damaged, empty or truncated, not a ledger: the
            message is ``ledger PATH: <what is wrong>``).
    """

    def __init__(self, prof, path: str | Path = ":memory:"):
        self.prof = prof
        self.db = None
        self._lockfile = None
        memory = str(path) == ":memory:"
        if not memory:
            self._lockfile = _take_lock(Path(path))
        try:
            if not memory and not Path(path).exists():
                _create(prof, Path(path))   # whole or not at all: a ledger file is never empty
            self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            if not memory:
                _check_file(self.db, path)
            self.db.execute("PRAGMA journal_mode=WAL") if not memory else None
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            if memory:
                self.db.execute("INSERT INTO meta VALUES('profile', ?)", (prof.name,))
            row = self.db.execute("SELECT value FROM meta WHERE key='profile'").fetchone()
            if row[0] != prof.name:
                raise ValueError(f"ledger {path} belongs to profile {row[0]!r}, not {prof.name!r}")
            snap = self.db.execute("SELECT json FROM snapshot WHERE id=1").fetchone()
            self.table = Table.from_snapshot(prof, json.loads(snap[0])) if snap else Table(prof)
            r = self.db.execute("SELECT MAX(seq) FROM rolls").fetchone()
            self.last_seq = r[0] if r and r[0] is not None else 0
            m = self.db.execute("SELECT value FROM meta WHERE key='event_seq'").fetchone()
            self.event_seq = int(m[0]) if m else 0
        except (sqlite3.Error, ValueError, KeyError, TypeError, OSError, MemoryError) as exc:
            # not a database, damaged, a missing directory, no permission, an unreadable snapshot
            if self.db is not None:
                self.db.close()
            if self._lockfile is not None:
                self._lockfile.close()     # releases the flock
            if isinstance(exc, ValueError) and str(exc).startswith(f"ledger {path}"):
                raise
            raise ValueError(f"ledger {path}: {getattr(exc, 'strerror', None) or exc}") from None

    @property
    def last_bus_seq(self) -> int:
        """The highest bus sequence number applied (a roll, or a shooter change given a seq)."""
        return max(self.last_seq, self.event_seq)

    # ---- helpers -------------------------------------------------------------------
    def balance(self, player: str) -> int:
        """Net position of ``player`` in cents."""
        r = self.db.execute("SELECT cents FROM balances WHERE player=?", (player,)).fetchone()
        return r[0] if r else 0

    def _add(self, player: str, cents: int) -> int:
        self.db.execute("INSERT INTO balances VALUES(?, ?) ON CONFLICT(player) DO UPDATE SET cents=cents+?",
                        (player, cents, cents))
        return self.balance(player)

    def _commit(self, table: Table, fn):
        """Run ``fn(cur)`` and write the snapshot of ``table`` in one transaction."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            result = fn()
            self.db.execute("INSERT INTO snapshot VALUES(1, ?) ON CONFLICT(id) DO UPDATE SET json=excluded.json",
                            (json.dumps(table.snapshot()),))
            self.db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        self.table = table
        return result

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not done so itself: on a full disk
        (SQLITE_FULL) it may have, and a ROLLBACK then fails with "cannot rollback - no
        transaction is active", hiding the error that matters."""
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def _event(self, kind: str, player, req, cents: int) -> None:
        self.db.execute("INSERT INTO events(kind, player, request, cents, utc) VALUES(?,?,?,?,?)",
                        (kind, player, json.dumps(req, sort_keys=True, default=str), cents, _utc()))

    def _reject(self, req: dict, exc: Rejected) -> None:
        self.db.execute("INSERT INTO events(kind, player, request, cents, utc) VALUES(?,?,?,?,?)",
                        ("rejected", req.get("player") if isinstance(req.get("player"), str) else None,
                         json.dumps({"request": req, "reason": exc.reason, "rule": exc.rule}, default=str), 0, _utc()))

    # ---- changes -------------------------------------------------------------------
    def place(self, req: dict, *, round_id: str | None = None, placed_at: str | None = None,
              intake: IntakeEntry | None = None):
        """Make a wager; debits stake + vig taken at placement (cents).

        Args:
            req: the wager request (docs/wagers.md).
            round_id, placed_at: a terminal's wager for a round (settlement/rounds.py): the
                placement is recorded in ``round_wagers`` in the same transaction, so that it can
                be returned if the round is abandoned or the wager came after no more bets
                (:meth:`return_round_wagers`; 9 NYCRR 5324.52(c)(1)).
            intake: a terminal's wager (settlement/intake.py): its ``wager_id``, terminal and
                reply are written to table ``intake`` in the same transaction, so the wager is
                placed once and a retry finds the reply (:meth:`intake_answer`).

        Raises:
            Rejected: an illegal wager (also recorded).
            sqlite3.IntegrityError: ``intake.wager_id`` is in the ledger already (nothing placed).
        """
        t = copy.copy(self.table)
        try:
            w = t.place(req)
        except Rejected as exc:
            self._reject(req, exc)
            raise
        debit = _outlay(t, w.player) - _outlay(self.table, w.player)

        def fn():
            bal = self._add(w.player, -debit)
            record = req if round_id is None else {**req, "round_id": round_id, "placed_at": placed_at}
            if intake is not None:
                record = {**record, "wager_id": intake.wager_id, "terminal": intake.terminal}
            self._event("bet", w.player, record, -debit)
            if intake is not None:
                self.db.execute("INSERT INTO intake(wager_id, terminal, request, reply, wid, utc) VALUES(?,?,?,?,?,?)",
                                (intake.wager_id, intake.terminal, intake.request,
                                 json.dumps(intake.reply(w, debit, bal), sort_keys=True), w.wid, _utc()))
            if round_id is not None:
                stake = int(req["amount"])
                self.db.execute("INSERT INTO round_wagers(round_id, wid, player, amount, vig, placed_at, utc) "
                                "VALUES(?,?,?,?,?,?,?)", (round_id, w.wid, w.player, stake, debit - stake,
                                                          str(placed_at), _utc()))
        self._commit(t, fn)
        return w

    def intake_answer(self, wager_id: str) -> dict | None:
        """What the ledger holds for a terminal's ``wager_id`` (settlement/intake.py): ``None``, or
        ``{"terminal": key or None, "request": canonical JSON, "reply": the reply given (dict),
        "wid": the wager id on the layout or None (refused)}``."""
        r = self.db.execute("SELECT terminal, request, reply, wid FROM intake WHERE wager_id=?", (wager_id,)).fetchone()
        if r is None:
            return None
        return {"terminal": r[0], "request": r[1], "reply": json.loads(r[2]), "wid": r[3]}

    def intake_refused(self, wager_id: str, terminal: str | None, request: str, reply: dict) -> None:
        """Record a terminal's refused wager under its ``wager_id`` with the refusal sent (one
        transaction, nothing else changed), so that a retry gets the same reply.

        Raises:
            sqlite3.IntegrityError: ``wager_id`` is in the ledger already.
        """
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("INSERT INTO intake(wager_id, terminal, request, reply, wid, utc) VALUES(?,?,?,?,NULL,?)",
                            (wager_id, terminal, request, json.dumps(reply, sort_keys=True), _utc()))
            self.db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def open_round_wagers(self, round_id: str | None = None) -> list[dict]:
        """The placements for rounds still ``open`` (no roll since, round without a result, not
        returned), of ``round_id`` or of every round; dicts with the ``round_wagers`` columns."""
        sql = "SELECT * FROM round_wagers WHERE status='open'" + (" AND round_id=?" if round_id else "")
        rows = self.db.execute(sql + " ORDER BY id", (round_id,) if round_id else ())
        cols = [c[0] for c in rows.description]
        return [dict(zip(cols, r)) for r in rows.fetchall()]

    def round_decided(self, round_id: str) -> int:
        """The round has a result (``results`` envelope): its open placements are no longer
        returned when a later round opens (a live no roll ends the round, its wagers stay on the
        layout for the next throw, 9 NYCRR 5324.52(k)). Returns the rows marked."""
        cur = self.db.execute("UPDATE round_wagers SET status='decided' WHERE status='open' AND round_id=?",
                              (round_id,))
        return cur.rowcount

    def return_round_wagers(self, why: str, *, round_id: str | None = None, keep: str | None = None,
                            since=None, seq: int | None = None) -> list[dict]:
        """Return (refund) the wagers placed for a round that no throw may decide: an abandoned
        round, or wagers stamped at or after the round's no more bets ("Wagers shall be made
        before the dice are rolled", 9 NYCRR 5324.52(c)(1); N.J.A.C. 13:47-20.25(h)1). Each
        placement still ``open`` comes off the layout (stake and any vig taken at placement
        credited, cents) in ONE transaction with a ``round-return`` event row per wager;
        idempotent: a placement returned once is ``returned`` and a replayed envelope finds
        nothing more to return.

        Args:
            why: the cause, recorded and returned.
            round_id: the round; ``None``: every round but ``keep``.
            keep: with ``round_id`` ``None``, the round whose wagers stay.
            since: a timezone-aware ``datetime``: only placements stamped at or after it.
            seq: the bus seq of the envelope that caused it (recorded).

        Returns:
            one dict per wager returned: ``round_id``, ``player``, ``wid``, ``kind``, ``cents``
            (credited), ``why``.
        """
        rows = [r for r in self.open_round_wagers(round_id) if keep is None or r["round_id"] != keep]
        if since is not None:
            rows = [r for r in rows if datetime.fromisoformat(r["placed_at"]) >= since]
        if not rows:
            return []
        t = copy.copy(self.table)
        out = []
        for r in rows:
            w = next((x for x in t.wagers if x.wid == r["wid"]), None)
            amount = min(r["amount"], w.amount) if w is not None else 0
            vig = min(r["vig"], w.vig_paid) if w is not None else 0
            if w is not None:
                left = w.amount - amount
                t.wagers = tuple(x for x in t.wagers if x is not w) if left <= 0 else tuple(
                    x.with_(amount=left, vig_paid=w.vig_paid - vig) if x is w else x for x in t.wagers)
            out.append({"id": r["id"], "round_id": r["round_id"], "player": r["player"], "wid": r["wid"],
                        "kind": w.kind if w is not None else None, "cents": amount + vig, "why": why})
        now = _utc()

        def fn():
            for o in out:
                self._add(o["player"], o["cents"])
                self._event("round-return", o["player"], {"round_id": o["round_id"], "wid": o["wid"],
                                                          "why": why, "seq": seq}, o["cents"])
                self.db.execute("UPDATE round_wagers SET status='returned', seq=?, why=?, utc=? WHERE id=?",
                                (seq, why, now, o["id"]))
        self._commit(t, fn)
        return out

    def remove(self, req: dict):
        """Remove or reduce a wager; credits what comes back. Raises Rejected (also recorded)."""
        t = copy.copy(self.table)
        try:
            w, refund = t.remove(req)
        except Rejected as exc:
            self._reject(req, exc)
            raise

        def fn():
            self._add(w.player, refund)
            self._event("remove", w.player, req, refund)
        self._commit(t, fn)
        return w, refund

    def set_working(self, req: dict, on: bool):
        """Place an on/off lammer. Raises Rejected (also recorded)."""
        t = copy.copy(self.table)
        try:
            w = t.set_working(req, on)
        except Rejected as exc:
            self._reject(req, exc)
            raise
        self._commit(t, lambda: self._event("working", w.player, {**req, "on": on}, 0))
        return w

    def shooter_change(self, change: str = "voluntary", seq: int | None = None) -> bool:
        """A new shooter (voluntary or compulsory). With a bus ``seq``, applied once: a seq
        at or below :attr:`last_bus_seq` changes nothing. Returns whether it was applied.

        Raises:
            Rejected: a voluntary change while a point is pending where the profile passes the
                dice only on a decision (recorded as a rejection).
        """
        if seq is not None and seq <= self.last_bus_seq:
            return False
        t = copy.copy(self.table)
        try:
            t.shooter_change(change)
        except Rejected as exc:
            self._reject({"shooter_change": change}, exc)
            raise
        self._commit_table_event(t, "shooter", {"change": change, "seq": seq}, seq)
        return True

    def decide_only(self, on: bool, seq: int | None = None) -> bool:
        """Start or end the rolls made only to decide the remaining come and don't come wagers
        (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)). With a bus ``seq``, applied once, as
        :meth:`shooter_change`. Returns whether it was applied.

        Raises:
            Rejected: started while a point is established (recorded as a rejection).
        """
        if seq is not None and seq <= self.last_bus_seq:
            return False
        t = copy.copy(self.table)
        try:
            t.decide_only(on)
        except Rejected as exc:
            self._reject({"decide_only": bool(on)}, exc)
            raise
        self._commit_table_event(t, "decide_only", {"on": bool(on), "seq": seq}, seq)
        return True

    def mark_seen(self, seq: int) -> None:
        """Record bus ``seq`` as handled when nothing in it was settled (a no roll, an alarm, a
        round message), so that a restart resumes after it: the subscriber acks every envelope,
        and a table that prunes acked envelopes no longer holds it (the service then could not
        restart: "no longer holds seq ..."). A seq at or below :attr:`last_bus_seq` is ignored."""
        if seq <= self.last_bus_seq:
            return
        self.db.execute("BEGIN IMMEDIATE")    # only the seq: the table (and its snapshot) is unchanged
        try:
            self._write_event_seq(seq)
            self.db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        self.event_seq = seq

    def _write_event_seq(self, seq: int) -> None:
        self.db.execute("INSERT INTO meta VALUES('event_seq', ?) ON CONFLICT(key) DO UPDATE "
                        "SET value=excluded.value", (str(seq),))

    def _commit_table_event(self, table: Table, kind: str, record: dict, seq: int | None) -> None:
        """Commit a table event (new shooter, decide-only) with its record and, for a bus
        event, its ``seq`` (so a replayed envelope is applied once)."""
        def fn():
            self._event(kind, None, record, 0)
            if seq is not None:
                self._write_event_seq(seq)
        self._commit(table, fn)
        if seq is not None:
            self.event_seq = seq

    def roll(self, dice, seq: int | None = None,
             roll_id: str | None = None) -> tuple[list[Settlement] | list[dict], bool]:
        """Settle a roll once. Returns (settlements, applied_now).

        A ``seq`` already applied returns the stored settlement rows (dicts) and False. With the
        table's ``roll_id``, a roll id settled before under another seq is not settled again.

        Raises:
            DuplicateRoll: ``roll_id`` was settled before at another seq (nothing changed).
            ValueError: bad dice, or a ``seq`` below the last applied one that was never applied.
        """
        if seq is None:
            seq = self.last_bus_seq + 1
        if seq <= self.last_bus_seq:
            if self.db.execute("SELECT 1 FROM rolls WHERE seq=?", (seq,)).fetchone():
                rows = self.db.execute("SELECT * FROM settlements WHERE seq=? ORDER BY id", (seq,))
                cols = [c[0] for c in rows.description]
                return [dict(zip(cols, r)) for r in rows.fetchall()], False
            raise ValueError(f"roll seq {seq} is not after the last applied seq {self.last_bus_seq}")
        if roll_id is not None:
            row = self.db.execute("SELECT seq, d1, d2 FROM roll_ids WHERE roll_id=?", (roll_id,)).fetchone()
            if row is not None:
                raise DuplicateRoll(roll_id, row[0], (row[1], row[2]))
        t = copy.copy(self.table)
        point_before = t.state.point
        out = t.roll(dice, seq)
        from .game import advance  # outcome for the audit row
        _, outcome = advance(self.table.state, int(dice[0]), int(dice[1]))
        now = _utc()

        def fn():
            self.db.execute("INSERT INTO rolls VALUES(?,?,?,?,?,?)", (seq, int(dice[0]), int(dice[1]),
                                                                      point_before, outcome, now))
            if roll_id is not None:
                self.db.execute("INSERT INTO roll_ids VALUES(?,?,?,?)", (roll_id, seq, int(dice[0]), int(dice[1])))
            # every wager placed for a round so far rode this roll: never returned afterwards
            self.db.execute("UPDATE round_wagers SET status='rode', seq=? WHERE status='open'", (seq,))
            for s in out:
                bal = self._add(s.player, s.returned)
                self.db.execute(
                    "INSERT INTO settlements(seq, player, wid, bet, number, base, dice, result, stake, payout, vig,"
                    " returned, balance_after, rule, utc) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (seq, s.player, s.wid, s.kind, s.number, s.base, json.dumps(s.dice) if s.dice else None,
                     s.result, s.stake, s.payout, s.vig, s.returned, bal, s.rule, now))
        self._commit(t, fn)
        self.last_seq = seq
        return out, True

    def close(self) -> None:
        """Close the ledger's SQLite connection. Every change was committed in its own transaction,
        so nothing is lost; the session is not usable afterwards (``sqlite3.ProgrammingError``).
        The ledger's lock is released: another session may open it.
        """
        self.db.close()
        if self._lockfile is not None:
            self._lockfile.close()     # releases the flock
            self._lockfile = None
