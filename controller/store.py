"""Durable game state and verdict outbox in SQLite, so that a restart resumes exactly.

One transaction writes the game state after a verdict together with the verdict's roll body
(the outbox row); the body is published afterwards and marked published with its bus sequence
number. On start, :meth:`StateStore.unpublished` returns the bodies written but not yet
published (the process stopped between the commit and the publish) so the service publishes
them before anything new: no verdict is lost and none is decided twice.

Schema (one file, WAL mode, ``synchronous=FULL``):

- ``game(id=1, state_json, verdicts, updated)``: the current :class:`~controller.game.GameState`
  and the number of verdicts issued (the next roll id's counter).
- ``verdicts(n PRIMARY KEY, roll_id UNIQUE, body_json, created, published_seq)``.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from controller.game import GameState, state_from_json

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
    published_seq INTEGER
);
"""


class StoreError(RuntimeError):
    """The state database cannot be opened or holds a corrupt record (the message says which)."""


class StateStore:
    """The table's game state and verdict outbox in one SQLite file.

    Args:
        path: the database file (created with its parent directory if missing).

    Raises:
        StoreError: when the file is not a usable SQLite database or its record is corrupt.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"state db {self.path}: {exc}") from exc
        self._state, self._verdicts = self._load()

    def _load(self) -> tuple[GameState, int]:
        row = self._db.execute("SELECT state_json, verdicts FROM game WHERE id = 1").fetchone()
        if row is None:
            return GameState(), 0
        try:
            return state_from_json(json.loads(row[0])), int(row[1])
        except (ValueError, TypeError) as exc:
            raise StoreError(f"state db {self.path}: corrupt game record: {exc}") from exc

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

    def mark_published(self, roll_id: str, seq: int | None) -> None:
        """Record that the verdict ``roll_id`` went out on the bus with sequence ``seq``
        (``-1`` when the bus gives none)."""
        # Not fsync'd: a mark lost in a power cut is found again in the bus journal on restart
        # (TableService.start), so it costs no duplicate; this keeps one fsync off the path.
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._db:
                self._db.execute("UPDATE verdicts SET published_seq = ? WHERE roll_id = ?",
                                 (-1 if seq is None else int(seq), roll_id))
        finally:
            self._db.execute("PRAGMA synchronous=FULL")

    def last_published_seq(self) -> int:
        """The highest bus sequence number a verdict was marked published with (0 if none)."""
        row = self._db.execute("SELECT MAX(published_seq) FROM verdicts").fetchone()
        return int(row[0]) if row and row[0] is not None and row[0] > 0 else 0

    def unpublished(self) -> list[dict]:
        """The verdict bodies committed but not yet published, oldest first."""
        rows = self._db.execute(
            "SELECT body_json FROM verdicts WHERE published_seq IS NULL ORDER BY n").fetchall()
        return [json.loads(r[0]) for r in rows]

    def verdicts(self, limit: int = 1000) -> list[dict]:
        """The last ``limit`` verdict bodies, oldest first (for audit and tests)."""
        rows = self._db.execute(
            "SELECT body_json FROM (SELECT n, body_json FROM verdicts ORDER BY n DESC LIMIT ?) ORDER BY n",
            (limit,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def close(self) -> None:
        """Close the database. Safe to call twice."""
        try:
            self._db.close()
        except sqlite3.Error:
            pass
