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
