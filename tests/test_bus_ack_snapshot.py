"""The roll bus publisher's ack check (bus/publisher.py ``_handle_request``) reads the journal's
``last_seq`` once: the refusal of an ack beyond it names the number it was compared with, even
when the publishing thread appends between the check and the message."""
from __future__ import annotations

import json
from pathlib import Path

from bus.config import BusConfig
from bus.journal import AckStore, Journal, acks_path
from bus.publisher import REP_ERROR, REQ_ACK, RollPublisher


class _Frame:
    """A received ZeroMQ frame as ``_handle_request`` reads it: its bytes and ``User-Id``."""

    def __init__(self, data: bytes, user: str | None = None) -> None:
        self.bytes, self._user = data, user

    def get(self, name: str):
        return self._user if name == "User-Id" else None


class _Recorder:
    """The ROUTER socket, recording the replies instead of sending them."""

    def __init__(self) -> None:
        self.sent: list[list[bytes]] = []

    def send_multipart(self, frames, flags=0) -> None:
        self.sent.append(list(frames))


class _AppendAfterLastSeq:
    """The replay thread's journal, on which the publishing thread appends one message right
    after the first read of ``last_seq`` (a publish landing between two reads)."""

    def __init__(self, journal: Journal, pub: RollPublisher) -> None:
        self._journal, self._pub = journal, pub
        self.journal_id = journal.journal_id
        self.appended: list[int] = []

    @property
    def last_seq(self) -> int:
        value = self._journal.last_seq
        if not self.appended:
            self.appended.append(self._pub.publish("roll", {"n": value + 1})["seq"])
        return value


def test_an_ack_beyond_the_journal_is_refused_naming_the_last_seq_it_was_compared_with(tmp_path: Path):
    """Before, the check and the message read ``last_seq`` apart: a roll published in between
    made the table refuse ack 3 as "beyond the last sequence number 3"."""
    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=5)
    pub = RollPublisher(cfg)
    reader = Journal(cfg.journal_path, readonly=True)
    acks = AckStore(acks_path(cfg.journal_path), pub.journal_id)
    router, recorder = pub._router, _Recorder()
    try:
        assert [pub.publish("roll", {"n": n})["seq"] for n in (1, 2)] == [1, 2]
        journal = _AppendAfterLastSeq(reader, pub)
        subscriber = next(iter(pub.allow.table.by_key))
        request = json.dumps({"seq": 3, "journal_id": pub.journal_id}).encode()
        pub._router = recorder   # the background thread serves no request meanwhile (none is sent)
        pub._handle_request(journal, acks, [_Frame(b"sub-1", subscriber), _Frame(REQ_ACK), _Frame(request)])
        pub._router = router
        assert journal.appended == [3]
        assert [f[:2] for f in recorder.sent] == [[b"sub-1", REP_ERROR]]
        # before: "ack 3 beyond the last sequence number 3" (read again after the publish)
        assert json.loads(recorder.sent[0][2]) == {"error": "ack 3 beyond the last sequence number 2"}
        assert acks.acks() == {}        # refused: nothing recorded
        assert reader.last_seq == 3
    finally:
        pub._router = router
        acks.close()
        reader.close()
        pub.close()
