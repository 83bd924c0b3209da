"""Durable game state and verdict outbox in SQLite, so that a restart resumes exactly.

One transaction writes the game state after a verdict together with the verdict's roll body
(the outbox row); the body is published afterwards and marked published with its bus sequence
number. On start, :meth:`StateStore.unpublished` returns the bodies written but not yet
published (the process stopped between the commit and the publish) so the service publishes
them before anything new: no verdict is lost and none is decided twice.

Schema (one file, WAL mode, ``synchronous=FULL``, ``PRAGMA user_version`` =
:data:`SCHEMA_VERSION`):

- ``game(id=1, state_json, verdicts, updated)``: the current :class:`~controller.game.GameState`
  and the number of verdicts issued (the next roll id's counter).
- ``verdicts(n PRIMARY KEY, roll_id UNIQUE, body_json, created, published_seq, journal_id)``:
  ``journal_id`` is the bus journal the verdict was published in (``published_seq`` is a
  sequence number of that journal).
- ``rounds(id=1, last_number, updated, throw)``: the number of the last round an automated or
  stadium rig opened (controller/rounds.py), so that round ids never repeat across restarts,
  whatever the wall clock did (:meth:`StateStore.next_round_number`); ``throw``: the automated
  throw commanded (SHAKER sent) and not yet decided nor stopped, or NULL
  (:meth:`StateStore.set_throw`), so that a restart during a throw is seen. Added to a
  version-1 file that lacks it when the file is opened (the table is new, the version
  unchanged).
- ``evidence(roll_id PRIMARY KEY, png, created)``: the evidence frame of the last boxperson
  call (one row at most), so that a restart opens the call again with it. A file without the
  table gets it when opened (older controllers ignore it).

One process owns the file: :class:`StateStore` holds an exclusive ``flock`` on ``<db>.lock``.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from bus.filelock import LockHeld, take_exclusive
from controller.game import GameState, state_from_json

#: The schema this code writes (``PRAGMA user_version``). 0: a file made before the version was
#: recorded (upgraded in place: the ``journal_id`` column is added). A higher version is refused.
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS game (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state_json TEXT NOT NULL,
    verdicts INTEGER NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS verdicts (
    n INTEGER PRIMARY KEY,
    roll_id TEXT NOT NULL UNIQUE,
    body_json TEXT NOT NULL,
    created REAL NOT NULL,
    published_seq INTEGER,
    journal_id TEXT
);
CREATE TABLE IF NOT EXISTS rounds (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_number INTEGER NOT NULL,
    updated REAL NOT NULL,
    throw TEXT
);
CREATE TABLE IF NOT EXISTS evidence (
    roll_id TEXT PRIMARY KEY,
    png BLOB NOT NULL,
    created REAL NOT NULL
);
"""

_COLUMNS = {
    "game": ("id", "state_json", "verdicts", "updated"),
    "verdicts": ("n", "roll_id", "body_json", "created", "published_seq", "journal_id"),
    "rounds": ("id", "last_number", "updated", "throw"),
    "evidence": ("roll_id", "png", "created"),
}


class StoreError(RuntimeError):
    """The state database cannot be opened or holds a corrupt record (the message says which)."""


class StateStore:
    """The table's game state and verdict outbox in one SQLite file.

    Args:
        path: the database file (created with its parent directory if missing).

    Raises:
        StoreError: when the file is not a usable SQLite database, its record is corrupt, its
            schema is newer than this code's (:data:`SCHEMA_VERSION`) or lacks a column, or
            another process (or another ``StateStore``) holds the store's lock ``<db>.lock``.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock_path = Path(str(self.path) + ".lock")
        self._db = None
        self._lockfile = None
        self._lockfile = self._take_lock()
        try:
            try:
                self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._open_schema()
            except (sqlite3.Error, OSError) as exc:
                raise StoreError(f"state db {self.path}: {exc}") from exc
            self._state, self._verdicts = self._load()
        except BaseException:
            self.close()
            raise

    def _take_lock(self):
        """Take the exclusive lock ``<db>.lock`` (one service per store)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return take_exclusive(self.lock_path)
        except LockHeld:
            raise StoreError(f"state db {self.path} is in use by another service (lock {self.lock_path})") from None
        except OSError as exc:
            raise StoreError(f"state db {self.path}: cannot open the lock {self.lock_path}: {exc}") from exc

    def _open_schema(self) -> None:
        """Create the tables in a new file, upgrade a version-0 file, refuse a newer one or one
        that lacks a column."""
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(f"state db {self.path}: schema version {version} is newer than this "
                             f"controller's ({SCHEMA_VERSION}); refusing to open it")
        self._db.executescript(_SCHEMA)
        cols = {r[1] for r in self._db.execute("PRAGMA table_info(verdicts)")}
        if "journal_id" not in cols:  # a version-0 file: add the column (NULL: journal unknown)
            self._db.execute("ALTER TABLE verdicts ADD COLUMN journal_id TEXT")
        for table, want in _COLUMNS.items():
            have = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
            missing = [c for c in want if c not in have]
            if missing:
                raise StoreError(f"state db {self.path}: table {table} lacks column(s) {', '.join(missing)} "
                                 f"(schema version {version}, expected {SCHEMA_VERSION})")
        if version < SCHEMA_VERSION:
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _load(self) -> tuple[GameState, int]:
        try:
            row = self._db.execute("SELECT state_json, verdicts FROM game WHERE id = 1").fetchone()
            top = self._db.execute("SELECT MAX(n) FROM verdicts").fetchone()[0]
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read the game record: {exc}") from exc
        if row is None:
            state, verdicts = GameState(), 0
        else:
            try:
                state = state_from_json(json.loads(row[0]))
                if isinstance(row[1], bool) or not isinstance(row[1], int) or row[1] < 0:
                    raise ValueError(f"verdicts counter {row[1]!r} is not a count")
                verdicts = row[1]
            except (ValueError, TypeError, OverflowError, RecursionError) as exc:
                raise StoreError(f"state db {self.path}: corrupt game record (game id 1): {exc}") from exc
        if top is not None and int(top) > verdicts:
            raise StoreError(f"state db {self.path}: the game record counts {verdicts} verdicts but the "
                             f"verdicts table holds verdict {top}: the roll ids would be reused")
        return state, verdicts

    @property
    def state(self) -> GameState:
        """The game state as last committed."""
        return self._state

    @property
    def verdict_count(self) -> int:
        """How many verdicts have been committed (the last roll's number)."""
        return self._verdicts

    def commit(self, state: GameState, body: dict | None) -> None:
        """Write ``state`` and, when given, one verdict ``body`` (a roll message body with a
        ``"roll_id"``) atomically: both or neither.

        Raises:
            StoreError: on a database error (nothing is written).
        """
        verdicts = self._verdicts + (1 if body is not None else 0)
        now = time.time()
        try:
            with self._db:  # BEGIN ... COMMIT, ROLLBACK on error
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "INSERT INTO game (id, state_json, verdicts, updated) VALUES (1, ?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET state_json = excluded.state_json, "
                    "verdicts = excluded.verdicts, updated = excluded.updated",
                    (json.dumps(state.to_json(), sort_keys=True), verdicts, now),
                )
                if body is not None:
                    self._db.execute(
                        "INSERT INTO verdicts (n, roll_id, body_json, created) VALUES (?, ?, ?, ?)",
                        (verdicts, body["roll_id"], json.dumps(body, sort_keys=True), now),
                    )
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: commit failed: {exc}") from exc
        self._state, self._verdicts = state, verdicts

    def next_round_number(self) -> int:
        """Take the next round number of this table (1, 2, ...; never one taken before, across
        restarts and whatever the wall clock does) and write it, fsync'd, before returning it:
        the round cycle calls it before it publishes the round's first event, so a round id
        (``PREFIX-NNNNNN``, controller/rounds.py) is never given to two rounds even when the
        per-start time prefix repeats (a clock set back by NTP or a Pi without RTC). Settlement
        gates wagers by round id (docs/messages.md#round; wagers are made before the dice are
        rolled, 9 NYCRR 5324.52(c)(1), N.J.A.C. 13:47-20.25(h)1): two rounds with one id would
        mix their wagers.

        Returns:
            the new round number (>= 1).

        Raises:
            StoreError: on a database error (nothing is written, no number taken) or a stored
                counter that is not a count, naming the file.
        """
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                row = self._db.execute("SELECT last_number FROM rounds WHERE id = 1").fetchone()
                last = 0 if row is None else row[0]
                if isinstance(last, bool) or not isinstance(last, int) or last < 0:
                    raise StoreError(f"state db {self.path}: corrupt rounds record (id 1): last_number "
                                     f"{last!r} is not a count")
                n = last + 1
                self._db.execute(
                    "INSERT INTO rounds (id, last_number, updated) VALUES (1, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET last_number = excluded.last_number, updated = excluded.updated",
                    (n, time.time()))
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot take the next round number: {exc}") from exc
        return n

    def set_throw(self, throw: str | None) -> None:
        """Record (fsync'd) the automated throw just commanded, e.g. ``"table-1-...-000042
        throw 2"``, before the SHAKER is sent; ``None`` once it is decided (its verdict
        published) or the table stopped. A service that starts and finds one recorded
        (:meth:`throw_in_progress`) was stopped during that throw (controller/automation.py:
        the table then starts stopped, ``restart-during-throw``).

        Raises:
            StoreError: on a database error, naming the file (nothing is written).
        """
        try:
            with self._db:
                self._db.execute(
                    "INSERT INTO rounds (id, last_number, updated, throw) VALUES (1, 0, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET throw = excluded.throw, updated = excluded.updated",
                    (time.time(), throw))
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot record the throw in progress: {exc}") from exc

    def throw_in_progress(self) -> str | None:
        """The throw :meth:`set_throw` recorded and did not clear (``None`` if none).

        Raises:
            StoreError: on a database error, naming the file.
        """
        try:
            row = self._db.execute("SELECT throw FROM rounds WHERE id = 1").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read the rounds record: {exc}") from exc
        return None if row is None or row[0] is None else str(row[0])

    def mark_published(self, roll_id: str, seq: int | None, journal_id: str | None = None) -> None:
        """Record that the verdict ``roll_id`` went out on the bus with sequence ``seq``
        (``-1`` when the bus gives none) in the bus journal ``journal_id``.

        The mark is written with ``synchronous=FULL`` (fsync'd, like the commit). A mark lost
        in a power cut would be looked for again in the bus journal on restart, but with
        ``[bus] prune_acked`` the journal may already have pruned the acknowledged roll, so the
        restart would publish it a second time; one fsync per verdict (a throw every few
        seconds at most) is the simpler safe choice.

        Raises:
            StoreError: on a database error (disk full, I/O error), naming the file; the mark is
                not written (a restart finds the verdict in the journal).
        """
        try:
            with self._db:
                self._db.execute("UPDATE verdicts SET published_seq = ?, journal_id = ? WHERE roll_id = ?",
                                 (-1 if seq is None else int(seq), journal_id, roll_id))
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot mark {roll_id} published: {exc}") from exc

    def last_published_seq(self, journal_id: str | None = None) -> int:
        """The highest bus sequence number a verdict was marked published with (0 if none).

        With ``journal_id``, only the marks made in that bus journal count: after the journal
        was replaced, its sequence numbers start again at 1, so this is 0 (search it all).

        Raises:
            StoreError: on a database error, naming the file.
        """
        try:
            if journal_id is None:
                row = self._db.execute("SELECT MAX(published_seq) FROM verdicts").fetchone()
            else:
                row = self._db.execute("SELECT MAX(published_seq) FROM verdicts WHERE journal_id = ?",
                                       (journal_id,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read the verdicts: {exc}") from exc
        return int(row[0]) if row and row[0] is not None and row[0] > 0 else 0

    def last_roll_id(self) -> str | None:
        """The roll id of the last verdict committed (``None`` if none).

        Raises:
            StoreError: on a database error, naming the file.
        """
        try:
            row = self._db.execute("SELECT roll_id FROM verdicts ORDER BY n DESC LIMIT 1").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read the verdicts: {exc}") from exc
        return None if row is None else str(row[0])

    def unpublished(self) -> list[dict]:
        """The verdict bodies committed but not yet published, oldest first.

        Raises:
            StoreError: on a database error or a row whose body is not a JSON object, naming the
                file and the row.
        """
        try:
            rows = self._db.execute(
                "SELECT n, roll_id, body_json FROM verdicts WHERE published_seq IS NULL ORDER BY n").fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read the outbox: {exc}") from exc
        out = []
        for n, roll_id, body in rows:
            try:
                obj = json.loads(body)
            except (ValueError, TypeError, RecursionError) as exc:
                raise StoreError(f"state db {self.path}: corrupt outbox row n={n} ({roll_id}): {exc}") from exc
            if not isinstance(obj, dict) or obj.get("roll_id") != roll_id:
                raise StoreError(f"state db {self.path}: corrupt outbox row n={n} ({roll_id}): "
                                 "not the verdict body of that roll")
            out.append(obj)
        return out

    def verdicts(self, limit: int = 1000) -> list[dict]:
        """The last ``limit`` verdict bodies, oldest first (for audit, the boxperson's decisions
        and tests).

        Raises:
            StoreError: the store cannot be read, or a verdict row is not JSON (naming the file
                and the row).
        """
        try:
            rows = self._db.execute(
                "SELECT n, body_json FROM (SELECT n, body_json FROM verdicts ORDER BY n DESC LIMIT ?) ORDER BY n",
                (limit,)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read the verdicts: {exc}") from None
        out = []
        for n, text in rows:
            try:
                out.append(json.loads(text))
            except (TypeError, ValueError) as exc:
                raise StoreError(f"state db {self.path}: verdict row n={n} is not JSON: {exc}") from None
        return out

    def verdict_created(self, roll_id: str) -> float | None:
        """When the verdict ``roll_id`` was committed (Unix seconds, ``time.time``), or ``None``
        when the store does not hold it.

        Raises:
            StoreError: the store cannot be read.
        """
        try:
            row = self._db.execute("SELECT created FROM verdicts WHERE roll_id = ?", (roll_id,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read verdict {roll_id}: {exc}") from None
        return None if row is None else float(row[0])

    def keep_evidence(self, roll_id: str, png: bytes) -> None:
        """Keep the evidence frame (PNG bytes) of the boxperson call ``roll_id``, replacing the
        one kept before: only the last call can be open at a restart (a later verdict closes
        it, 9 NYCRR 5324.52(h)(1)(ii)(a)), so one frame at most is stored.

        Raises:
            StoreError: on a database error (nothing is changed).
        """
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("DELETE FROM evidence")
                self._db.execute("INSERT INTO evidence (roll_id, png, created) VALUES (?, ?, ?)",
                                 (roll_id, sqlite3.Binary(bytes(png)), time.time()))
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot keep the evidence frame of {roll_id}: {exc}") from exc

    def evidence(self, roll_id: str) -> bytes | None:
        """The evidence frame kept for the boxperson call ``roll_id`` (:meth:`keep_evidence`),
        or ``None``.

        Raises:
            StoreError: the store cannot be read.
        """
        try:
            row = self._db.execute("SELECT png FROM evidence WHERE roll_id = ?", (roll_id,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"state db {self.path}: cannot read the evidence frame of {roll_id}: {exc}") from None
        return None if row is None else bytes(row[0])

    def close(self) -> None:
        """Close the database and release its lock. Safe to call twice."""
        try:
            if self._db is not None:
                self._db.close()
        except sqlite3.Error:
            pass
        if self._lockfile is not None:
            self._lockfile.close()  # releases the flock
            self._lockfile = None
