"""The table's durable journal of bus messages (SQLite, WAL, ``synchronous=FULL``).

Every message is appended here, under its sequence number, and committed to disk before it is
sent; the replay endpoint serves from here.
Sequence numbers rise across restarts and are never reused, even after pruning (the last one
is kept in ``meta``).

Schema::

    meta(key TEXT PRIMARY KEY, value TEXT)          -- journal_id, last_seq
    messages(seq INTEGER PRIMARY KEY, topic TEXT, ts TEXT, envelope BLOB)

Acknowledgements live in a separate file, ``<journal>.acks`` (:class:`AckStore`), so that
recording them never takes the journal's write lock while a message is being appended; that
file records the journal id its acks belong to (``meta``), and acks of another journal are
deleted when it is opened for this one.
"""
from __future__ import annotations

import logging
import sqlite3
import uuid
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages(seq INTEGER PRIMARY KEY, topic TEXT NOT NULL,
                                    ts TEXT NOT NULL, envelope BLOB NOT NULL);
"""


class JournalError(Exception):
    """The journal file cannot be opened or is not a bus journal (message names the file)."""


def _connect(path: Path, *, readonly: bool = False, synchronous: str = "FULL") -> sqlite3.Connection:
    conn = None
    try:
        if readonly:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=10)
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=10)
        conn.execute("PRAGMA busy_timeout=10000")
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise JournalError(f"{path}: cannot switch to WAL mode (got {mode})")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        return conn
    except (sqlite3.DatabaseError, JournalError) as exc:
        if conn is not None:
            # closed at once: a connection kept alive by this exception's traceback held its
            # lock, and a later open in this process (the file repaired) was "database is locked"
            conn.close()
        if isinstance(exc, JournalError):
            raise
        raise JournalError(f"{path}: not a usable SQLite journal: {exc}") from exc


class Journal:
    """Append-only message journal. One writer (the publisher) per file.

    Args:
        path: SQLite file; created with its parent directory if missing.
        readonly: open for reading only (tests, tools).
        autocheckpoint: let commits on this connection checkpoint the WAL into the database
            (SQLite's default, every 1000 pages). The publisher turns it off on its writing
            connection and calls :meth:`checkpoint` from its background thread, so no publish
            waits for a checkpoint.
    Raises:
        JournalError: unreadable or foreign file, or a damaged one (``last_seq`` not a number or
            below a sequence number it holds); the message names the file.
    """

    def __init__(self, path: Path, *, readonly: bool = False, autocheckpoint: bool = True):
        self.path = Path(path)
        self._conn = _connect(self.path, readonly=readonly)
        if not autocheckpoint:
            self._conn.execute("PRAGMA wal_autocheckpoint=0")
        try:
            if not readonly:
                self._conn.executescript(_SCHEMA)
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.execute("INSERT OR IGNORE INTO meta VALUES('journal_id', ?)", (uuid.uuid4().hex,))
                self._conn.execute("INSERT OR IGNORE INTO meta VALUES('last_seq', '0')")
                self._conn.execute("COMMIT")
            # one read transaction (one snapshot of the WAL): a publisher appending between the
            # read of last_seq and of MAX(seq) must not look like a damaged journal
            self._conn.execute("BEGIN")
            try:
                self.journal_id = self._meta("journal_id")
                last = self._meta("last_seq")
                top = self._conn.execute("SELECT MAX(seq) FROM messages").fetchone()[0]
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")
            if not (last.isascii() and last.isdigit()):
                raise JournalError(f"{self.path}: damaged journal: last_seq {last[:40]!r} is not a number")
            if top is not None and int(top) > int(last):
                raise JournalError(f"{self.path}: damaged journal: it holds seq {top} beyond its last_seq {last} "
                                   "(the next message would reuse a sequence number)")
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise JournalError(f"{self.path}: not a bus journal: {exc}") from exc
        except JournalError:
            self._conn.close()
            raise

    def _meta(self, key: str) -> str:
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            raise JournalError(f"{self.path}: meta key {key!r} missing")
        return row[0]

    @property
    def last_seq(self) -> int:
        """The last sequence number ever appended (0 for a new journal)."""
        return int(self._meta("last_seq"))

    def first_seq(self) -> int:
        """The lowest sequence number still held (``last_seq + 1`` if none is held), read in
        one statement, so one snapshot: read as two, a publisher appending between the
        ``MIN(seq)`` of an empty journal and ``last_seq`` made a journal holding seq 1..3 say
        it starts at 4, and a subscriber asking for 1 stopped with ``gap_lost``."""
        low, last = self._conn.execute(
            "SELECT (SELECT MIN(seq) FROM messages), (SELECT value FROM meta WHERE key='last_seq')").fetchone()
        if low is not None:
            return int(low)
        if last is None:
            raise JournalError(f"{self.path}: meta key 'last_seq' missing")
        return int(last) + 1

    def replay_view(self, seq: int, limit: int, max_bytes: int | None = None
                    ) -> tuple[list[tuple[int, bytes]], int, int]:
        """What a replay reply says, from ONE snapshot of the journal (one read transaction):
        ``(rows, first, head)``: :meth:`read_from` ``(seq, limit, max_bytes)``, :meth:`first_seq`
        and :attr:`last_seq`. Read one after the other, a publisher appending (or pruning)
        between them could make the three disagree: e.g. the rows of an empty journal with the
        ``first`` of one holding 1..3, which tells the subscriber its messages are gone
        (bus/subscriber.py ``gap_lost``) when they are not.

        Raises:
            sqlite3.Error: the journal cannot be read (the caller answers the request ERROR).
        """
        c = self._conn
        c.execute("BEGIN")
        try:
            rows = self.read_from(seq, limit, max_bytes)
            first = self.first_seq()
            head = self.last_seq
        finally:
            if c.in_transaction:
                c.execute("COMMIT")
        return rows, first, head

    def append(self, topic: str, build: Callable[[int, str], tuple[str, bytes]]) -> tuple[int, bytes]:
        """Append one message, durably, under the next sequence number.

        ``build(seq, journal_id) -> (ts, wire_bytes)`` makes the signed envelope once the
        number is known; if it raises, nothing is written. Returns ``(seq, wire_bytes)`` after
        the transaction has been committed (fsync'd, ``synchronous=FULL``).

        Raises:
            JournalError: the journal cannot be written (disk full, I/O error, locked); nothing
                was written.
        """
        c = self._conn
        try:
            c.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise JournalError(f"{self.path}: cannot write the journal: {exc}") from exc
        try:
            seq = int(c.execute("SELECT value FROM meta WHERE key='last_seq'").fetchone()[0]) + 1
            ts, wire = build(seq, self.journal_id)
            c.execute("INSERT INTO messages(seq, topic, ts, envelope) VALUES(?,?,?,?)", (seq, topic, ts, wire))
            c.execute("UPDATE meta SET value=? WHERE key='last_seq'", (str(seq),))
            c.execute("COMMIT")
        except BaseException as exc:
            if c.in_transaction:
                c.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise JournalError(f"{self.path}: cannot write the journal (nothing was published): {exc}") from exc
            raise
        return seq, wire

    def read_from(self, seq: int, limit: int, max_bytes: int | None = None) -> list[tuple[int, bytes]]:
        """Up to ``limit`` messages with sequence number >= ``seq``, in order: ``[(seq, wire)]``.

        With ``max_bytes``, also stops before the envelope that would take the total past
        ``max_bytes`` bytes (the first one is always returned); rows are read one at a time,
        so no more than that is held in memory."""
        cur = self._conn.execute("SELECT seq, envelope FROM messages WHERE seq>=? ORDER BY seq LIMIT ?",
                                 (int(seq), int(limit)))
        out: list[tuple[int, bytes]] = []
        total = 0
        try:
            for s, w in cur:
                if max_bytes is not None and out and total + len(w) > max_bytes:
                    break
                total += len(w)
                out.append((int(s), bytes(w)))
        finally:
            cur.close()
        return out

    def last_of(self, topic: str) -> tuple[int, bytes] | None:
        """The last message held on ``topic``: ``(seq, wire)``, or ``None`` if none is held."""
        row = self._conn.execute("SELECT seq, envelope FROM messages WHERE topic=? ORDER BY seq DESC LIMIT 1",
                                 (topic,)).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def last_ts(self) -> str | None:
        """The ``ts`` (ISO 8601 UTC) of the last message held, or ``None`` if none is held."""
        row = self._conn.execute("SELECT ts FROM messages ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def prune(self, upto: int) -> int:
        """Delete messages with seq <= ``upto``. Returns how many were deleted. The caller
        decides that they are acknowledged; ``last_seq`` is unchanged."""
        cur = self._conn.execute("DELETE FROM messages WHERE seq<=?", (int(upto),))
        return cur.rowcount

    def checkpoint(self) -> None:
        """Copy the WAL into the database without blocking writers (``wal_checkpoint(PASSIVE)``)."""
        self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        try:
            self._conn.close()
        except sqlite3.Error:
            pass


def acks_path(journal_path: Path) -> Path:
    """The acknowledgement store beside a journal: ``<journal>.acks``."""
    p = Path(journal_path)
    return p.with_name(p.name + ".acks")


class AckStore:
    """Subscribers' cumulative acknowledgements: ``acks(subscriber TEXT PRIMARY KEY, seq, ts)``
    in its own SQLite file (WAL, ``synchronous=NORMAL``: survives a process crash; an ack lost
    to a power cut only makes the table keep messages longer). The subscriber is named by its
    CURVE public key (Z85) as the ZAP handler authenticated it.

    Raises:
        JournalError: unusable file.
    """

    def __init__(self, path: Path, journal_id: str | None = None):
        self.path = Path(path)
        self._conn = _connect(self.path, synchronous="NORMAL")
        try:
            self._conn.execute("CREATE TABLE IF NOT EXISTS acks(subscriber TEXT PRIMARY KEY, "
                               "seq INTEGER NOT NULL, ts TEXT NOT NULL)")
            self._conn.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
            if journal_id is not None:
                self._bind(journal_id)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise JournalError(f"{self.path}: not an ack store: {exc}") from exc

    def _bind(self, journal_id: str) -> None:
        """Tie the store to the journal ``journal_id``: acks kept for another journal (one that
        was replaced beside this file, or a store written before the id was kept) are deleted,
        since their sequence numbers are another journal's and would prune this one's
        unacknowledged messages. Losing an ack only makes the table keep messages longer."""
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            row = c.execute("SELECT value FROM meta WHERE key='journal_id'").fetchone()
            if row is None or row[0] != journal_id:
                n = c.execute("DELETE FROM acks").rowcount
                c.execute("INSERT INTO meta VALUES('journal_id', ?) ON CONFLICT(key) DO UPDATE "
                          "SET value=excluded.value", (journal_id,))
                if n:
                    log.warning("bus: %s held %d ack(s) of journal %s, not of journal %s: deleted",
                                self.path, n, row[0] if row else "(not recorded)", journal_id)
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:   # on a full disk SQLite may have rolled back itself: its error stands
                c.execute("ROLLBACK")
            raise

    def record(self, subscriber: str, seq: int, ts: str) -> int:
        """Record that ``subscriber`` has durably applied everything up to ``seq`` (a lower ack
        than the one held is ignored). Returns the ack now held."""
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            c.execute("INSERT INTO acks(subscriber, seq, ts) VALUES(?,?,?) ON CONFLICT(subscriber) DO UPDATE "
                      "SET seq=excluded.seq, ts=excluded.ts WHERE excluded.seq > acks.seq", (subscriber, int(seq), ts))
            held = int(c.execute("SELECT seq FROM acks WHERE subscriber=?", (subscriber,)).fetchone()[0])
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:   # on a full disk SQLite may have rolled back itself: its error stands
                c.execute("ROLLBACK")
            raise
        return held

    def acks(self) -> dict[str, int]:
        """``{subscriber: acknowledged seq}``."""
        return {s: int(q) for s, q in self._conn.execute("SELECT subscriber, seq FROM acks")}

    def close(self) -> None:
        """Close the connection (idempotent)."""
        try:
            self._conn.close()
        except sqlite3.Error:
            pass
