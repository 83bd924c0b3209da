"""A subscriber key removed from the roll bus's allow-list loses the stream without a restart
(bus/publisher.py, bus/allowwatch.py; docs/bus.md "Revoking a subscriber").

Before, :meth:`RollPublisher.reload_allow_list` ran only when called by hand, and even then the
connections already open (the PUB stream and the replay ROUTER) stayed up: a removed settlement
subscriber went on reading every roll. Now the background thread reads the folder again within
a second of a change; a removed key's replay requests are refused, and the PUB endpoint is bound
again so that every subscriber reconnects through the authenticator: the removed one is refused
at the handshake, an allowed one reconnects and replays what it missed (nothing lost, nothing
twice). Loopback tcp only; every wait bounded.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from bus.config import BusConfig
from bus.keys import BusKeyError, authorize, generate_keys, load_curve_public
from bus.publisher import RollPublisher
from bus.subscriber import RollSubscriber


@pytest.fixture(params=["tcp", "ipc"])
def floor(tmp_path: Path, request):
    """A bus (tcp on 127.0.0.1, or ipc) with two allow-listed subscribers, settlement and audit."""
    cfg = BusConfig.local(tmp_path / "bus", transport=request.param, heartbeat_s=0.1)
    audit = generate_keys(cfg.keys_dir, "audit")
    authorize(audit.curve_public, cfg.allow_dir)
    return cfg, cfg.model_copy(update={"subscriber_key": "audit"}), audit


def _take(sub: RollSubscriber, seqs: list[int], until, timeout_s: float) -> None:
    """Receive (and ack) into ``seqs`` until ``until(seqs)`` or ``timeout_s`` (bounded)."""
    deadline = time.monotonic() + timeout_s
    while not until(seqs) and time.monotonic() < deadline:
        env = sub.receive(0.05)
        if env is not None:
            seqs.append(env["seq"])
            sub.ack(env["seq"])


def _wait(cond, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_removed_subscriber_reads_no_roll_published_after_the_reload(floor, tmp_path: Path, caplog):
    cfg, audit_cfg, audit = floor
    caplog.set_level(logging.INFO, logger="bus.publisher")
    kept_seqs: list[int] = []
    gone_seqs: list[int] = []
    with RollPublisher(cfg) as pub, RollSubscriber(cfg, tmp_path / "s.sqlite") as kept, \
            RollSubscriber(audit_cfg, tmp_path / "a.sqlite") as gone:
        for n in range(1, 4):
            pub.publish("roll", {"n": n})
        _take(kept, kept_seqs, lambda s: len(s) >= 3, 10.0)
        _take(gone, gone_seqs, lambda s: len(s) >= 3, 10.0)
        assert (kept_seqs, gone_seqs) == ([1, 2, 3], [1, 2, 3])
        (cfg.allow_dir / "audit.key").unlink()
        # the background thread looks once a second (bounded wait; never, before)
        _wait(lambda: any("allow-list reloaded: 1 certificate(s)" in r.getMessage() for r in caplog.records))
        for n in range(4, 11):
            pub.publish("roll", {"n": n})
            _take(kept, kept_seqs, lambda s: False, 0.05)
            _take(gone, gone_seqs, lambda s: False, 0.05)
        _take(kept, kept_seqs, lambda s: len(s) >= 10, 10.0)
        _take(gone, gone_seqs, lambda s: False, 1.5)
        # the removed subscriber read nothing published after the reload ...
        assert gone_seqs == [1, 2, 3]
        # ... the allowed one every roll, in order, none twice, none missing
        assert kept_seqs == list(range(1, 11))
        assert pub.stats["pub_rebinds"] == 1
        audit_key = load_curve_public(audit.curve_public).decode("ascii")
        assert any(r.levelname == "WARNING" and f"subscriber key(s) {audit_key[:8]}... removed" in r.getMessage()
                   for r in caplog.records)


def test_a_removed_subscribers_replay_requests_are_refused_on_its_open_connection(floor, tmp_path: Path, caplog):
    """The replay ROUTER stays up (it serves the others); a request from the removed key on the
    connection it already had is refused naming the key: nothing read, no ack recorded."""
    import json

    import zmq

    from bus.keys import key_files, load_curve_secret
    from bus.publisher import REP_ERROR, REQ_ACK, REQ_REPLAY

    cfg, _, audit = floor
    with RollPublisher(cfg) as pub:
        pub.publish("roll", {"n": 1})
        ctx = zmq.Context()
        dealer = ctx.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.curve_publickey, dealer.curve_secretkey = load_curve_secret(audit.curve_secret)
        dealer.curve_serverkey = load_curve_public(key_files(cfg.keys_dir, cfg.table_key).curve_public)
        dealer.connect(pub.replay_endpoint)
        try:
            dealer.send_multipart([REQ_REPLAY, json.dumps({"from": 1}).encode()])
            assert dealer.poll(5000), "no replay reply"
            assert dealer.recv_multipart()[0] == b"BATCH"
            (cfg.allow_dir / "audit.key").unlink()
            assert pub.reload_allow_list() == 1
            key = load_curve_public(audit.curve_public).decode("ascii")
            for req in ([REQ_REPLAY, json.dumps({"from": 1}).encode()],
                        [REQ_ACK, json.dumps({"seq": 1, "journal_id": pub.journal_id}).encode()]):
                dealer.send_multipart(req)
                assert dealer.poll(5000), "no reply"
                reply = dealer.recv_multipart()
                assert reply[0] == REP_ERROR, f"{req[0]} from the removed key served: {reply[0]!r}"
                kind, body = reply
                assert (kind, json.loads(body)) == (REP_ERROR, {"error": (
                    f"roll bus: audit (key {key[:8]}...) is not in the allow-list {cfg.allow_dir} (its certificate "
                    "was removed): request refused, nothing read or recorded")})
            assert key not in pub.acks()
        finally:
            dealer.close(0)
            ctx.term()


def test_a_reload_that_cannot_read_the_folder_still_removes_the_removed_key(floor, tmp_path: Path, caplog):
    """A damaged certificate in the folder at the same time: the reload fails (raised, and
    logged at ERROR naming the file), the list in effect is kept less the removed key, and the
    stream still stops reaching it."""
    cfg, audit_cfg, _ = floor
    kept_seqs: list[int] = []
    gone_seqs: list[int] = []
    with RollPublisher(cfg) as pub, RollSubscriber(cfg, tmp_path / "s.sqlite") as kept, \
            RollSubscriber(audit_cfg, tmp_path / "a.sqlite") as gone:
        pub.publish("roll", {"n": 1})
        _take(kept, kept_seqs, lambda s: len(s) >= 1, 10.0)
        _take(gone, gone_seqs, lambda s: len(s) >= 1, 10.0)
        (cfg.allow_dir / "stray.key").write_text("not a certificate\n")
        (cfg.allow_dir / "audit.key").unlink()
        with pytest.raises(BusKeyError, match="stray.key"):
            pub.reload_allow_list()
        assert any(r.levelname == "ERROR" and "stray.key" in r.getMessage() and r.getMessage().endswith(
            "the list in effect is kept, less the subscribers whose certificate was removed: audit")
            for r in caplog.records)
        for n in range(2, 6):
            pub.publish("roll", {"n": n})
        _take(kept, kept_seqs, lambda s: len(s) >= 5, 10.0)
        _take(gone, gone_seqs, lambda s: False, 1.5)
        assert (kept_seqs, gone_seqs) == ([1, 2, 3, 4, 5], [1])
