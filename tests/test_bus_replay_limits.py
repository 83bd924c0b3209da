"""Roll bus resource limits: replay requests rate-limited per subscriber key, replay replies
bounded in messages and bytes, the subscriber's sockets bounded in frame size and frame count.
Loopback / ipc only; every loop is bounded in count and time."""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import zmq

from bus import envelope as envmod
from bus.config import BusConfig, free_tcp_ports
from bus.journal import Journal
from bus.keys import authorize, generate_keys, key_files, load_curve_secret, load_signing_key
from bus.publisher import REPLY_MAX_BYTES, RollPublisher
from bus.ratelimit import PeerRateLimiter
from bus.subscriber import RollSubscriber

from test_bus_adversarial import _client, _fake_xpub


def _fill(cfg: BusConfig, n: int, body_bytes: int = 0) -> list[bytes]:
    """Journal ``n`` genuine signed rolls (seq 1..n) in one transaction, as a table would have
    after a long settlement outage (publishing them one by one takes an fsync each). Returns
    their wire bytes."""
    j = Journal(cfg.journal_path)
    jid = j.journal_id
    j.close()
    key = load_signing_key(key_files(cfg.keys_dir, cfg.table_key).sign_secret)
    wires = []
    c = sqlite3.connect(str(cfg.journal_path), isolation_level=None)
    try:
        c.execute("BEGIN IMMEDIATE")
        for seq in range(1, n + 1):
            body = {"n": seq, "dice": [1 + seq % 6, 1 + seq // 6 % 6]}
            if body_bytes:
                body["pad"] = "p" * body_bytes
            env, wire = envmod.seal(key, journal_id=jid, seq=seq, table_id=cfg.table_id, topic="roll", body=body)
            c.execute("INSERT INTO messages(seq, topic, ts, envelope) VALUES(?,?,?,?)", (seq, "roll", env["ts"], wire))
            wires.append(wire)
        c.execute("UPDATE meta SET value=? WHERE key='last_seq'", (str(n),))
        c.execute("COMMIT")
    finally:
        c.close()
    return wires


def _replies(sock: zmq.Socket, n: int, timeout_s: float = 10.0) -> list[list[bytes]]:
    """Up to ``n`` replies on ``sock`` within ``timeout_s``."""
    out: list[list[bytes]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        if sock.poll(100):
            out.append(sock.recv_multipart())
    return out


def _catch_up(sub: RollSubscriber, n: int, timeout_s: float) -> list[int]:
    """Receive up to ``n`` messages within ``timeout_s``, acking every 1,000th (cumulative);
    returns their seqs."""
    got: list[int] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        env = sub.receive(0.2)
        if env is not None:
            got.append(env["seq"])
            if env["seq"] % 1000 == 0 or len(got) == n:
                sub.ack(env["seq"])
    return got


# -- the table's replay server ---------------------------------------------------------------------
def test_the_rate_limiter_refills_at_its_rate_up_to_its_burst():
    now = [100.0]
    lim = PeerRateLimiter(2.0, 3, clock=lambda: now[0])
    assert [lim.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert lim.take("a") == 0.5            # empty: one token in 1 / 2 s
    assert lim.take("b") == 0.0            # another peer has its own bucket
    now[0] += 0.25
    assert lim.take("a") == 0.25           # half a token back
    now[0] += 60.0
    assert [lim.take("a") for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]   # refilled to the burst, not past it


def test_replay_requests_over_the_rate_are_refused_busy_per_subscriber_key(tmp_path: Path):
    """An allow-listed subscriber asks for the same big replay again and again: the table
    answers ``replay_burst`` of them, then refuses with ``BUSY`` naming the limit and when to
    ask again, without reading its journal; another subscriber key is still served. Before,
    every request was answered with a full batch (here 10 x 500 envelopes)."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=5, replay_rate=1.0, replay_burst=3)
    _fill(cfg, 600)
    generate_keys(cfg.keys_dir, "audit")
    authorize(key_files(cfg.keys_dir, "audit").curve_public, cfg.allow_dir)
    with RollPublisher(cfg) as pub:
        ctx = zmq.Context()
        try:
            flood = _client(ctx, cfg, zmq.DEALER)
            flood.connect(cfg.replay_endpoint)
            for i in range(10):
                flood.send_multipart([b"REPLAY", json.dumps({"from": 1, "nonce": f"n{i}"}).encode()])
            replies = _replies(flood, 10)
            assert [r[0] for r in replies] == [b"BATCH"] * 3 + [b"BUSY"] * 7
            assert [len(r) - 2 for r in replies[:3]] == [500] * 3
            busy = json.loads(replies[3][1])
            assert "over 1 per second (burst 3)" in busy["error"]
            assert 0 < busy["retry_after_s"] <= 1.0
            assert pub.stats["replay_refused"] == 7 and pub.stats["replayed"] == 1500
            other = _client(ctx, cfg, zmq.DEALER, key="audit")
            other.connect(cfg.replay_endpoint)
            other.send_multipart([b"REPLAY", b'{"from": 590}'])
            (reply,) = _replies(other, 1)
            assert reply[0] == b"BATCH" and len(reply) == 2 + 11
            assert pub.publish("roll", {"n": 601})["seq"] == 601        # the table goes on
        finally:
            ctx.destroy(0)


def test_a_replay_reply_is_bounded_in_envelopes_asked_for_and_in_bytes(tmp_path: Path):
    """A reply carries at most the ``max`` envelopes the subscriber asks for and at most
    ``REPLY_MAX_BYTES`` of envelopes (always one): 40 envelopes of 200 KiB are 8 MiB, and the
    subscriber pages through them by asking again from where each reply ends. Before, one reply
    held all 40 (up to replay_batch = 500 envelopes of up to 1 MiB each)."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=0.2)
    wires = _fill(cfg, 40, body_bytes=200 * 1024)
    with RollPublisher(cfg):
        ctx = zmq.Context()
        try:
            d = _client(ctx, cfg, zmq.DEALER)
            d.connect(cfg.replay_endpoint)
            d.send_multipart([b"REPLAY", b'{"from": 1}'])
            d.send_multipart([b"REPLAY", b'{"from": 3, "max": 5}'])
            d.send_multipart([b"REPLAY", b'{"from": 1, "max": 0}'])
            by_bytes, by_max, bad = _replies(d, 3)
            fits = REPLY_MAX_BYTES // len(wires[0])
            assert fits == 10 and by_bytes[2:] == wires[:fits]
            assert json.loads(by_bytes[1])["body"]["count"] == fits
            assert by_max[2:] == wires[2:7]
            assert bad[0] == b"ERROR" and b"'max' must be an int >= 1" in bad[1]
        finally:
            ctx.destroy(0)
        with RollSubscriber(cfg, tmp_path / "s.sqlite") as sub:
            assert _catch_up(sub, 40, timeout_s=30) == list(range(1, 41))
            assert sub.stats["replay_requests"] >= 4 and sub.rejections == {}


def test_a_catch_up_of_20000_journalled_rolls_completes_under_the_rate_limit(tmp_path: Path):
    """Settlement comes back after a long outage with 20,000 rolls journalled: it pages through
    them (500 per reply) and, refused ``BUSY`` past the table's rate, asks again when told;
    every roll is delivered once, in order, nothing rejected."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=0.2, replay_rate=4.0, replay_burst=2)
    _fill(cfg, 20_000)
    with RollPublisher(cfg) as pub, RollSubscriber(cfg, tmp_path / "s.sqlite", resume_after=0) as sub:
        got = _catch_up(sub, 20_000, timeout_s=90)
        assert got == list(range(1, 20_001))
        assert sub.rejections == {} and sub.stats["duplicates"] <= 500
        assert sub.stats["replay_busy"] >= 1 and pub.stats["replay_refused"] >= sub.stats["replay_busy"]
        assert pub.stats["replayed"] <= 20_000 + 500
        pub.publish("roll", {"n": 20_001})
        assert _catch_up(sub, 1, timeout_s=5) == [20_001]


def test_a_subscriber_that_asks_and_never_reads_does_not_stall_the_table(tmp_path: Path):
    """A subscriber sends replay requests and never reads the replies: once its queue is full
    the table drops the replies (it would ask again) instead of blocking its background
    thread, which sends the heartbeats and serves every other subscriber."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=0.1, hwm=1, replay_batch=50,
                          replay_rate=10_000, replay_burst=10_000)
    _fill(cfg, 50, body_bytes=4096)
    with RollPublisher(cfg) as pub:
        ctx = zmq.Context()
        try:
            mute = _client(ctx, cfg, zmq.DEALER)
            mute.setsockopt(zmq.RCVHWM, 1)
            mute.setsockopt(zmq.RCVBUF, 4096)
            mute.connect(cfg.replay_endpoint)
            for _ in range(300):                     # 300 x 200 KiB replies: far past its queue
                mute.send_multipart([b"REPLAY", b'{"from": 1}'])
            time.sleep(1.5)
            beats = pub.stats["heartbeats"]
            time.sleep(1.0)
            assert pub.stats["heartbeats"] >= beats + 5      # the background thread still runs
            other = _client(ctx, cfg, zmq.DEALER)
            other.connect(cfg.replay_endpoint)
            other.send_multipart([b"REPLAY", b'{"from": 50}'])
            (reply,) = _replies(other, 1, timeout_s=5)
            assert reply[0] == b"BATCH" and len(reply) == 3
        finally:
            ctx.destroy(0)


# -- the subscriber's sockets ------------------------------------------------------------------
def _live_through_attacker(tmp_path: Path):
    """A real table with rolls 1, 2 journalled, and a subscriber config whose live endpoint is
    an attacker's XPUB holding the table's CURVE key (its replay endpoint is the real table's).
    Returns ``(cfg, subscriber cfg)``."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=5, replay_timeout_s=0.3)
    _fill(cfg, 2)
    (port,) = free_tcp_ports(1)
    return cfg, cfg.model_copy(update={"pub_endpoint": f"tcp://127.0.0.1:{port}"})


def _publish_3_and_4(pub: RollPublisher) -> bytes:
    """The table publishes rolls 3 and 4 (on its own live endpoint, which the subscriber does
    not hear); returns roll 4's wire bytes as journalled."""
    pub.publish("roll", {"n": 3})
    pub.publish("roll", {"n": 4})
    j = Journal(pub.cfg.journal_path, readonly=True)
    try:
        ((seq, wire),) = j.read_from(4, 1)
    finally:
        j.close()
    return wire


def _deliver(sub: RollSubscriber, n: int, timeout_s: float) -> list[int]:
    got: list[int] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        env = sub.receive(0.1)
        if env is not None:
            got.append(env["seq"])
    return got


def test_live_messages_of_another_frame_count_are_refused_named_and_the_stream_goes_on(tmp_path: Path):
    """On the live stream, a message of 3 frames and one of 20,000 frames (sent by a holder of
    the table's CURVE key) are rejected, ``malformed``, naming the count; the frames past the
    second are not kept. The next genuine roll (4) is delivered after the gap before it (3)
    is replayed from the table. Before, the rejection did not say what was expected, and all
    20,000 frames were taken into memory first."""
    cfg, sub_cfg = _live_through_attacker(tmp_path)
    with RollPublisher(cfg) as pub:
        ctx = zmq.Context()
        x = _fake_xpub(ctx, sub_cfg)
        try:
            alarms: list = []
            with RollSubscriber(sub_cfg, tmp_path / "s.sqlite", on_alarm=lambda c, d: alarms.append(d)) as sub:
                assert x.poll(5000) and x.recv()[:1] == b"\x01"
                assert _deliver(sub, 2, timeout_s=5) == [1, 2]
                roll4 = _publish_3_and_4(pub)
                x.send_multipart([b"roll", roll4, b"extra"])
                x.send_multipart([b"roll"] + [b"f"] * 19_999)
                x.send_multipart([b"roll", roll4])
                assert _deliver(sub, 2, timeout_s=5) == [3, 4]
                assert sub.rejections == {"malformed": 2}
                details = [d["detail"] for d in alarms]
                assert details == ["live: a message of 3 frame(s), not 2 (topic, envelope)",
                                   "live: a message of 20000 frame(s), not 2 (topic, envelope)"]
        finally:
            x.close(0)
            ctx.term()


def test_a_live_frame_over_the_envelope_limit_drops_the_connection_and_nothing_is_lost(tmp_path: Path):
    """A frame larger than any envelope (``MAX_ENVELOPE_BYTES``) on the live stream: ZeroMQ drops
    that connection (ZMQ_MAXMSGSIZE on the subscriber's sockets) instead of taking it into
    memory; the subscriber reconnects, and the next genuine roll (4) is delivered after the
    gap before it (3) is replayed. Before, the subscriber took the whole 8 MiB frame in and
    then rejected it."""
    cfg, sub_cfg = _live_through_attacker(tmp_path)
    with RollPublisher(cfg) as pub:
        ctx = zmq.Context()
        x = _fake_xpub(ctx, sub_cfg)
        try:
            with RollSubscriber(sub_cfg, tmp_path / "s.sqlite") as sub:
                for sock in (sub._sub, sub._dealer):
                    assert sock.getsockopt(zmq.MAXMSGSIZE) == envmod.MAX_ENVELOPE_BYTES
                assert x.poll(5000) and x.recv()[:1] == b"\x01"
                assert _deliver(sub, 2, timeout_s=5) == [1, 2]
                roll4 = _publish_3_and_4(pub)
                x.send_multipart([b"roll", b" " * (8 * envmod.MAX_ENVELOPE_BYTES)])
                rejoined = False
                deadline = time.monotonic() + 5
                while not rejoined and time.monotonic() < deadline:
                    sub.receive(0.05)                            # the subscriber reconnects meanwhile
                    rejoined = bool(x.poll(50)) and x.recv()[:1] == b"\x01"
                assert rejoined
                x.send_multipart([b"roll", roll4])
                assert _deliver(sub, 2, timeout_s=5) == [3, 4]
                assert sub.rejections == {}
        finally:
            x.close(0)
            ctx.term()


def test_a_replay_reply_with_more_envelopes_than_asked_for_is_refused_and_asked_again(tmp_path: Path):
    """A replay server holding the table's CURVE key answers with more envelopes than the
    subscriber asked for (``replay_batch`` 2; here a genuine header and all 3 rolls): the
    reply is rejected, ``malformed``, naming the frame count; the request is sent again and
    the table's proper answers deliver 1, 2, 3. Before, any number of frames was taken."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=5)
    _fill(cfg, 3)
    (port,) = free_tcp_ports(1)
    sub_cfg = cfg.model_copy(update={"replay_endpoint": f"tcp://127.0.0.1:{port}", "replay_batch": 2,
                                     "replay_timeout_s": 0.3})
    with RollPublisher(cfg):
        ctx = zmq.Context()
        r = ctx.socket(zmq.ROUTER)
        r.setsockopt(zmq.LINGER, 0)
        r.curve_publickey, r.curve_secretkey = load_curve_secret(key_files(cfg.keys_dir, cfg.table_key).curve_secret)
        r.curve_server = True
        r.bind(sub_cfg.replay_endpoint)
        table = _client(ctx, cfg, zmq.DEALER)
        table.connect(cfg.replay_endpoint)
        try:
            with RollSubscriber(sub_cfg, tmp_path / "s.sqlite") as sub:
                forwarded, got = 0, []
                deadline = time.monotonic() + 10
                while len(got) < 3 and time.monotonic() < deadline:
                    env = sub.receive(0.05)
                    if env is not None:
                        got.append(env["seq"])
                    if r.poll(0):
                        ident, kind, req = r.recv_multipart()
                        if kind != b"REPLAY":
                            continue
                        asked = json.loads(req)
                        if forwarded == 0:
                            assert asked["max"] == 2
                            asked["max"] = 3           # the first answer: more than asked for
                        table.send_multipart([kind, json.dumps(asked).encode()])
                        assert table.poll(5000)
                        r.send_multipart([ident] + table.recv_multipart())
                        forwarded += 1
                assert got == [1, 2, 3]
                assert sub.rejections.get("malformed") == 1 and forwarded >= 3
        finally:
            table.close(0)
            r.close(0)
            ctx.term()
