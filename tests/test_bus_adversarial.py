"""Roll bus under attack: genuine signed envelopes used out of place, oversized frames,
corrupted journals and state files, restarts mid-stream. Loopback / ipc only; every loop is
bounded in count and time."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import zmq

from bus import envelope as envmod
from bus.config import BusConfig, free_tcp_ports
from bus.journal import Journal, JournalError
from bus.keys import key_files, load_curve_public, load_curve_secret
from bus.publisher import RollPublisher
from bus.subscriber import RollSubscriber

from test_bus_basic import _drain  # receive and ack up to n messages, bounded in time


def _client(ctx: zmq.Context, cfg: BusConfig, kind: int, key: str = "settlement") -> zmq.Socket:
    s = ctx.socket(kind)
    s.setsockopt(zmq.LINGER, 0)
    s.curve_serverkey = load_curve_public(key_files(cfg.keys_dir, cfg.table_key).curve_public)
    s.curve_publickey, s.curve_secretkey = load_curve_secret(key_files(cfg.keys_dir, key).curve_secret)
    return s


def _fake_xpub(ctx: zmq.Context, cfg: BusConfig) -> zmq.Socket:
    """An attacker's XPUB holding the table's CURVE server key (so the transport admits it)."""
    x = ctx.socket(zmq.XPUB)
    x.setsockopt(zmq.LINGER, 0)
    x.curve_publickey, x.curve_secretkey = load_curve_secret(key_files(cfg.keys_dir, cfg.table_key).curve_secret)
    x.curve_server = True
    x.bind(cfg.pub_endpoint)
    return x


def _genuine_header_and_roll(cfg: BusConfig) -> tuple[bytes, bytes]:
    """Ask the real table (as an allow-listed subscriber may) for a replay from seq 1: returns
    the genuine signed header (seq = head = 1) and the genuine roll 1."""
    ctx = zmq.Context()
    d = _client(ctx, cfg, zmq.DEALER)
    d.connect(cfg.replay_endpoint)
    try:
        d.send_multipart([b"REPLAY", json.dumps({"from": 1, "nonce": "attacker"}).encode()])
        assert d.poll(5000)
        frames = d.recv_multipart()
        assert frames[0] == b"BATCH" and len(frames) == 3
        return frames[1], frames[2]
    finally:
        d.close(0)
        ctx.term()


def _stolen_header(tmp_path: Path):
    """A table journal holding roll 1, the genuine signed replay header and roll envelope its
    replay server sends (seq 1), and a config whose endpoints are two free loopback ports where
    an attacker's sockets stand: ``(cfg, attacker cfg, header, roll 1)``."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=5)
    with RollPublisher(cfg) as pub:
        pub.publish("roll", {"n": 1})
        header, roll1 = _genuine_header_and_roll(cfg)
    p1, p2 = free_tcp_ports(2)
    inj = cfg.model_copy(update={"pub_endpoint": f"tcp://127.0.0.1:{p1}", "replay_endpoint": f"tcp://127.0.0.1:{p2}"})
    return cfg, inj, header, roll1


# -- genuine signatures out of place ----------------------------------------------------------
def test_a_genuine_replay_header_on_the_live_stream_is_not_delivered_in_place_of_a_roll(tmp_path: Path):
    """A holder of the table's CURVE key and of an allow-listed subscriber key asks the table
    for a replay and gets a genuine signed header whose seq is the journal's head (here 1, the
    roll not yet delivered). Sent on the live stream before the roll, it must be rejected:
    before the fix it was delivered as seq 1 (topic "replay-header", which settlement ignores)
    and the genuine roll 1 was then dropped as a duplicate: a roll lost without an alarm."""
    cfg, inj, header, roll1 = _stolen_header(tmp_path)
    ctx = zmq.Context()
    x = _fake_xpub(ctx, inj)
    try:
        alarms: list = []
        with RollSubscriber(inj, tmp_path / "s.sqlite", on_alarm=lambda c, d: alarms.append((c, d))) as sub:
            assert x.poll(5000) and x.recv()[:1] == b"\x01"
            x.send_multipart([envmod.REPLAY_HEADER.encode(), header])
            x.send_multipart([b"roll", roll1])
            got = _drain(sub, 2, timeout_s=1.5)
            assert [(e["seq"], e["topic"]) for e in got] == [(1, "roll")]
            assert sub.rejections.get("malformed", 0) == 1
            assert any(c == "rejected" and "replay-header" in d["detail"] for c, d in alarms)
    finally:
        x.close(0)
        ctx.term()


def test_a_genuine_replay_header_inside_a_replay_batch_is_not_delivered(tmp_path: Path):
    """The same genuine header placed among a batch's envelopes (by a fake replay server
    holding the table's CURVE key, answering with the subscriber's own nonce on a genuine
    header it relays) is rejected, not delivered as a message."""
    cfg, inj, stolen, roll1 = _stolen_header(tmp_path)
    ctx = zmq.Context()
    r = ctx.socket(zmq.ROUTER)
    r.setsockopt(zmq.LINGER, 0)
    r.curve_publickey, r.curve_secretkey = load_curve_secret(key_files(cfg.keys_dir, cfg.table_key).curve_secret)
    r.curve_server = True
    r.bind(inj.replay_endpoint)
    try:
        with RollSubscriber(inj, tmp_path / "s.sqlite") as sub:
            assert r.poll(5000)
            ident, kind, req = r.recv_multipart()
            assert kind == b"REPLAY"
            # relay the subscriber's request to the real table: a genuine header with its nonce
            with RollPublisher(cfg):
                c2 = zmq.Context()
                d = _client(c2, cfg, zmq.DEALER)
                d.connect(cfg.replay_endpoint)
                d.send_multipart([b"REPLAY", req])
                assert d.poll(5000)
                real = d.recv_multipart()
                d.close(0)
                c2.term()
            r.send_multipart([ident, b"BATCH", real[1], stolen, roll1])
            got = _drain(sub, 2, timeout_s=1.5)
            assert [(e["seq"], e["topic"]) for e in got] == [(1, "roll")]
            assert sub.rejections.get("malformed", 0) == 1
    finally:
        r.close(0)
        ctx.term()



# -- damaged journal and state files ----------------------------------------------------------
def _journal_with(path: Path, n: int) -> bytes:
    """A journal of ``n`` messages, checkpointed into the file alone; returns its bytes."""
    j = Journal(path)
    for _ in range(n):
        j.append("roll", lambda seq, jid: ("2026-01-01T00:00:00+00:00", b"x" * 400))
    j.checkpoint()
    j.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path.read_bytes()


@pytest.mark.parametrize("cut", [100, 4096, 20000])
def test_a_truncated_journal_is_named_and_a_failed_open_leaves_no_lock_behind(tmp_path: Path, cut):
    """A journal cut short (a full disk, a bad copy) is refused with a JournalError naming the
    file. Before, the refused connection stayed open (kept alive by the exception): the same
    file, emptied in place to start a new journal, then failed with "database is locked" after
    a 10 s wait instead of opening."""
    p = tmp_path / "journal.sqlite"
    good = _journal_with(p, 60)
    assert len(good) > cut
    p.write_bytes(good[:cut])
    with pytest.raises(JournalError, match=r"journal\.sqlite: not a usable SQLite journal: .*malformed") as ei:
        Journal(p)
    with open(p, "r+b") as f:      # emptied in place (same inode) while the exception is held
        f.truncate(0)
    t0 = time.monotonic()
    j = Journal(p)
    assert j.last_seq == 0 and time.monotonic() - t0 < 5
    j.close()
    assert ei.value is not None


def test_a_damaged_journal_last_seq_is_refused_at_open(tmp_path: Path):
    """``meta.last_seq`` below the seqs held (or not a number): before, the publisher started and
    every publish failed with "UNIQUE constraint failed" (or a bare ValueError at start); now
    the journal is refused at open, naming the file and the problem."""
    import sqlite3

    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=5)
    _journal_with(cfg.journal_path, 10)
    c = sqlite3.connect(cfg.journal_path)
    c.execute("UPDATE meta SET value='5' WHERE key='last_seq'")
    c.commit()
    with pytest.raises(JournalError, match="holds seq 10 beyond its last_seq 5"):
        RollPublisher(cfg)
    c.execute("UPDATE meta SET value='abc' WHERE key='last_seq'")
    c.commit()
    c.close()
    with pytest.raises(JournalError, match="last_seq 'abc' is not a number"):
        RollPublisher(cfg)


@pytest.mark.parametrize("damage", ["garbage", "last_applied"])
def test_a_damaged_subscriber_state_file_is_named(tmp_path: Path, damage):
    """A garbage state file raised a bare sqlite3.DatabaseError "file is not a database" (which
    file? settlement opens its ledger too); a non-numeric last_applied a bare ValueError. Both now
    raise sqlite3.DatabaseError naming the state file."""
    import os
    import sqlite3

    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=5)
    with RollPublisher(cfg):
        pass
    state = tmp_path / "bus-state.sqlite"
    if damage == "garbage":
        state.write_bytes(os.urandom(8192))
    else:
        c = sqlite3.connect(state)
        c.execute("CREATE TABLE bus_state(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        c.execute("INSERT INTO bus_state VALUES('last_applied', 'x')")
        c.commit()
        c.close()
    with pytest.raises(sqlite3.DatabaseError, match=r"bus-state\.sqlite: not a usable bus state file"):
        RollSubscriber(cfg, state)


# -- restarts mid-stream ----------------------------------------------------------------------
def test_publisher_and_subscriber_restarts_mid_stream_deliver_each_roll_once_in_order(tmp_path: Path):
    """The table restarts while a subscriber is connected (rolls published while it was down
    are none; rolls after it continue the numbering), then the subscriber restarts having
    received but not acknowledged some rolls: every roll is delivered once, in order."""
    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=0.1)
    state = tmp_path / "s.sqlite"
    seen: list[int] = []
    with RollSubscriber(cfg, state) as sub:
        for round_ in range(3):                                  # three table restarts
            with RollPublisher(cfg) as pub:
                for i in range(5):
                    pub.publish("roll", {"n": round_ * 5 + i})
                seen += [e["body"]["n"] for e in _drain(sub, 3)]  # 3 of 5 before the restart
        with RollPublisher(cfg) as pub:
            seen += [e["body"]["n"] for e in _drain(sub, 6)]
            assert seen == list(range(15))
            pub.publish("roll", {"n": 15})
            got = _drain(sub, 1, ack=False)                      # delivered, not acked
            assert [e["body"]["n"] for e in got] == [15]
    with RollPublisher(cfg) as pub, RollSubscriber(cfg, state) as sub:
        pub.publish("roll", {"n": 16})
        assert [e["body"]["n"] for e in _drain(sub, 2)] == [15, 16]   # 15 again: never acked
        assert sub.receive(0.3) is None


def test_a_frame_over_the_request_limit_drops_that_connection_and_the_table_serves_on(tmp_path: Path):
    """An allow-listed subscriber sends the replay server a 4 MiB frame: ZeroMQ drops that
    connection (``REQUEST_MAX_BYTES``) instead of taking it into the table's memory; the
    table's journal and live stream go on, and a good request is answered."""
    from bus.publisher import REQUEST_MAX_BYTES

    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=5)
    with RollPublisher(cfg) as pub:
        pub.publish("roll", {"n": 1})
        ctx = zmq.Context()
        try:
            big = _client(ctx, cfg, zmq.DEALER)
            big.connect(cfg.replay_endpoint)
            big.send_multipart([b"REPLAY", b" " * (4 * REQUEST_MAX_BYTES * 4)])
            assert not big.poll(1000)                       # no answer: the connection was dropped
            good = _client(ctx, cfg, zmq.DEALER)
            good.connect(cfg.replay_endpoint)
            good.send_multipart([b"REPLAY", b'{"from": 1}'])
            assert good.poll(5000)
            assert good.recv_multipart()[0] == b"BATCH"
            assert pub.publish("roll", {"n": 2})["seq"] == 2
        finally:
            ctx.destroy(0)


def test_a_full_disk_under_the_subscriber_state_is_reported_as_such(tmp_path: Path):
    """The state file's disk fills (SQLITE_FULL, made with ``PRAGMA max_page_count``): the error
    that reaches the caller says so. Before, SQLite had already rolled the transaction back, and
    the subscriber's own ROLLBACK raised "cannot rollback - no transaction is active" over it."""
    import sqlite3

    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=5)
    with RollPublisher(cfg):
        with RollSubscriber(cfg, tmp_path / "s.sqlite") as sub:
            sub._state.execute(f"PRAGMA max_page_count={sub._state.execute('PRAGMA page_count').fetchone()[0]}")
            with pytest.raises(sqlite3.OperationalError, match="full"):
                for k in range(200):                      # bounded: the pages fill at once
                    sub._put(**{f"filler{k}": "x" * 4000})
            sub._state.execute("PRAGMA max_page_count=1000000")
