"""Opening a bus journal while the publisher writes to it (bus/journal.py ``Journal.__init__``):
the damaged-journal check reads ``last_seq`` and the highest sequence number held in one read
transaction, so a message appended between the two reads is not taken for a damaged journal."""
from __future__ import annotations

from pathlib import Path

from bus.journal import Journal


def _build(seq: int, journal_id: str) -> tuple[str, bytes]:
    return "2026-12-04T00:00:00.000000+00:00", f"envelope {seq} of {journal_id}".encode()


def test_a_message_appended_while_a_reader_opens_the_journal_is_not_a_damaged_journal(tmp_path: Path, monkeypatch):
    path = tmp_path / "journal.sqlite"
    writer = Journal(path)
    assert writer.append("roll", _build)[0] == 1
    meta = Journal._meta
    appended = []

    def meta_then_append(self, key):
        value = meta(self, key)
        if self is not writer and key == "last_seq" and not appended:
            # the publisher commits seq 2 between the reader's read of last_seq and of MAX(seq)
            appended.append(writer.append("roll", _build)[0])
        return value

    monkeypatch.setattr(Journal, "_meta", meta_then_append)
    reader = Journal(path, readonly=True)   # before: JournalError "holds seq 2 beyond its last_seq 1"
    assert appended == [2]
    assert reader.journal_id == writer.journal_id
    assert reader.last_seq == 2 and [s for s, _ in reader.read_from(1, 10)] == [1, 2]
    reader.close()
    writer.close()


class _AppendAfter:
    """The reader's connection, appending through ``writer`` right after the first statement
    that contains ``marker`` (the publisher committing between two of the reader's reads)."""

    def __init__(self, conn, writer: Journal, marker: str, times: int) -> None:
        self._conn, self._writer, self._marker, self._times = conn, writer, marker, times
        self.appended: list[int] = []

    def execute(self, sql, *args):
        cur = self._conn.execute(sql, *args)
        if self._marker in sql and not self.appended:
            rows = _Rows(cur.fetchall())   # the statement's result, read before the writer commits
            self.appended = [self._writer.append("roll", _build)[0] for _ in range(self._times)]
            return rows
        return cur

    def __getattr__(self, name):
        return getattr(self._conn, name)


class _Rows(list):
    """A fetched result with the cursor methods the journal uses."""

    def fetchone(self):
        return self[0] if self else None

    def close(self) -> None:
        pass


def test_where_an_empty_journal_starts_is_read_in_one_snapshot(tmp_path: Path):
    """first_seq of an empty journal: before, MIN(seq) (none) and last_seq were two reads, and 3
    messages appended between them made it 4: a subscriber asking for seq 1 was told 1..3 were
    gone (gap_lost) while the journal held them."""
    path = tmp_path / "journal.sqlite"
    writer = Journal(path)
    reader = Journal(path, readonly=True)
    proxy = _AppendAfter(reader._conn, writer, "MIN(seq)", 3)
    reader._conn = proxy
    first = reader.first_seq()
    assert proxy.appended == [1, 2, 3]
    assert first == 1          # the snapshot of the empty journal: last_seq 0 + 1; before: 4
    assert reader.first_seq() == 1 and reader.last_seq == 3
    reader._conn = proxy._conn
    reader.close()
    writer.close()


def test_a_replay_reply_reads_rows_first_and_head_in_one_snapshot(tmp_path: Path):
    """The publisher's replay header (bus/publisher.py): rows, first and head from one read
    transaction, so messages appended while it reads do not appear in first/head without the rows."""
    path = tmp_path / "journal.sqlite"
    writer = Journal(path)
    reader = Journal(path, readonly=True)
    proxy = _AppendAfter(reader._conn, writer, "ORDER BY seq LIMIT", 3)
    reader._conn = proxy
    rows, first, head = reader.replay_view(1, 10)
    assert proxy.appended == [1, 2, 3]
    assert (rows, first, head) == ([], 1, 0)     # the empty journal as one snapshot saw it
    rows, first, head = reader.replay_view(1, 10)
    assert ([s for s, _ in rows], first, head) == ([1, 2, 3], 1, 3)
    reader._conn = proxy._conn
    reader.close()
    writer.close()
