"""Roll bus with real processes: SIGKILL of subscriber and publisher, unauthorised peers.

The soak runs ``python -m bus.soak publish`` (the table) and ``python -m bus.soak settle`` (a
settlement stand-in that records each applied seq in SQLite) and kills them with SIGKILL: the
subscriber every 500 applied rolls, the publisher every 700 journalled rolls. At the end the
settlement holds exactly the rolls 1..N, in order, each once. N is 3,000 in the suite and
10,000 in ``bench/bus_bench.py`` (see SOAK_ROLLS).
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from bus.config import BusConfig
from bus.keys import generate_keys
from bus.publisher import RollPublisher
from bus.subscriber import RollSubscriber

#: 3,000 rolls here (5 subscriber and 4 publisher kills, ~10-25 s on 2 shared cores) to keep the
#: suite fast (``make test`` sets CRAPS_FULL_COUNTS=1: the issue's full 10,000); ``python bench/bus_bench.py --soak 10000`` (the bench default) or
#: ``BUS_SOAK_ROLLS=10000 pytest tests/test_bus_soak.py`` runs the full 10,000.
SOAK_ROLLS = int(os.environ.get("BUS_SOAK_ROLLS",
                                "10000" if os.environ.get("CRAPS_FULL_COUNTS") == "1" else "3000"))


def _spawn(*args: str, log: Path | None = None) -> subprocess.Popen:
    """Start ``python -m bus.soak ARGS``; its stderr is appended to ``log`` (a file, never a
    pipe nobody reads, which would block a chatty process once full)."""
    err = open(log, "ab") if log is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "bus.soak", *args],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    finally:
        if log is not None:
            err.close()


def _tail(path: Path, n: int = 3000) -> str:
    return path.read_bytes()[-n:].decode(errors="replace") if path.exists() else ""


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _count(db: Path, sql: str) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            row = conn.execute(sql).fetchone()
            return int(row[0] or 0) if row else 0
        finally:
            conn.close()
    except sqlite3.OperationalError:  # table not created yet
        return 0


@pytest.mark.slow
def test_soak_sigkill_subscriber_and_publisher(tmp_path: Path):
    n = SOAK_ROLLS
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=0.1, replay_timeout_s=0.5)
    cfg_file = tmp_path / "bus.json"
    cfg_file.write_text(cfg.model_dump_json())
    db = tmp_path / "applied.sqlite"
    pub_args = ("publish", "--config", str(cfg_file), "--count", str(n), "--rate", "700")
    sub_args = ("settle", "--config", str(cfg_file), "--db", str(db), "--count", str(n), "--timeout", "120")
    pub_log, sub_log = tmp_path / "publisher.log", tmp_path / "settlement.log"
    pub, sub = _spawn(*pub_args, log=pub_log), _spawn(*sub_args, log=sub_log)
    kills = {"publisher": 0, "subscriber": 0}
    unexpected: list[str] = []
    next_pub_kill, next_sub_kill = 700, 500
    deadline = time.monotonic() + 150
    try:
        while time.monotonic() < deadline:
            journalled = _count(cfg.journal_path, "SELECT value FROM meta WHERE key='last_seq'")
            applied = _count(db, "SELECT COUNT(*) FROM applied")
            if journalled >= next_pub_kill and next_pub_kill < n:
                _kill(pub)
                kills["publisher"] += 1
                next_pub_kill += 700
                pub = _spawn(*pub_args, log=pub_log)
            if applied >= next_sub_kill and next_sub_kill < n:
                _kill(sub)
                kills["subscriber"] += 1
                next_sub_kill += 500
                sub = _spawn(*sub_args, log=sub_log)
            if pub.poll() is not None:  # died on its own: restart it, as a supervisor would
                unexpected.append(f"publisher exit status {pub.returncode}")
                pub = _spawn(*pub_args, log=pub_log)
            if sub.poll() is not None:
                break
            time.sleep(0.01)
        rc = sub.wait(timeout=5)
    finally:
        _kill(sub)
        _kill(pub)
    assert rc == 0, (f"settlement exit status {rc}, kills {kills}, {unexpected}: {_tail(sub_log)}\n"
                     f"publisher log: {_tail(pub_log)}")
    assert unexpected == [], _tail(pub_log)
    conn = sqlite3.connect(str(db))
    rows = conn.execute("SELECT seq, n FROM applied ORDER BY seq").fetchall()
    violations = conn.execute("SELECT what, seq FROM violations").fetchall()
    conn.close()
    # the settlement checks at each application that seq == previous + 1 ("out_of_order")
    # and that it was not applied before ("applied_twice")
    assert violations == []
    assert [s for s, _ in rows] == list(range(1, n + 1))       # every roll, each once
    assert [v for _, v in rows] == list(range(1, n + 1))       # the roll published under that seq
    assert kills["subscriber"] == (n - 1) // 500 and kills["publisher"] == (n - 1) // 700


def _receive_all(sub: RollSubscriber, seconds: float) -> list[dict]:
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        env = sub.receive(0.1)
        if env is not None:
            out.append(env)
    return out


def test_unauthorised_subscribers_receive_nothing(tmp_path: Path):
    """A subscriber whose CURVE key is not in the allow-list, and a plain (no CURVE) SUB
    socket, get nothing on the live or replay endpoint while the authorised one gets all."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=0.1)
    generate_keys(cfg.keys_dir, "intruder")  # a valid key pair, never authorised
    intruder_cfg = cfg.model_copy(update={"subscriber_key": "intruder"})
    ctx = zmq.Context()
    plain = ctx.socket(zmq.SUB)
    plain.setsockopt(zmq.SUBSCRIBE, b"")
    plain.connect(cfg.pub_endpoint)
    plain_dealer = ctx.socket(zmq.DEALER)
    plain_dealer.connect(cfg.replay_endpoint)
    pub = subprocess.Popen([sys.executable, "-m", "bus.soak", "publish", "--config", str(_dump(cfg, tmp_path)),
                            "--count", "50", "--rate", "50", "--linger", "10"], start_new_session=True,
                           stderr=subprocess.DEVNULL)
    try:
        alarms = []
        with RollSubscriber(intruder_cfg, tmp_path / "intruder.sqlite",
                            on_alarm=lambda c, d: alarms.append(c)) as bad, \
                RollSubscriber(cfg, tmp_path / "good.sqlite") as good:
            plain_dealer.send_multipart([b"REPLAY", b'{"from": 1}'])
            good_got, bad_got = [], []
            end = time.monotonic() + 8
            while len(good_got) < 50 and time.monotonic() < end:
                env = good.receive(0.05)
                if env is not None:
                    good_got.append(env["seq"])
                    good.ack(env["seq"])
                env = bad.receive(0.0)
                if env is not None:
                    bad_got.append(env)
            bad_got += _receive_all(bad, 0.5)
            assert good_got == list(range(1, 51))
            assert bad_got == [] and bad.stats["heartbeats"] == 0 and bad.stats["replayed"] == 0
            assert bad.stats.get("auth_failures", 0) >= 1 and "auth_failed" in alarms
        assert plain.poll(200) == 0 and plain_dealer.poll(200) == 0
    finally:
        _kill(pub)
        plain.close(0)
        plain_dealer.close(0)
        ctx.term()


def test_subscriber_refuses_impostor_table(tmp_path: Path):
    """A server with a different CURVE key at the table's endpoint (an impostor table) fails
    the subscriber's handshake: nothing is received."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", heartbeat_s=0.1)
    fake = tmp_path / "fake-keys"
    generate_keys(fake, "table")
    generate_keys(fake, "settlement", force=False)
    (fake / "authorized").mkdir()
    (fake / "authorized" / "settlement.key").write_bytes((cfg.keys_dir / "settlement.key").read_bytes())
    impostor_cfg = cfg.model_copy(update={"keys_dir": fake, "journal_path": tmp_path / "fake.sqlite"})
    with RollPublisher(impostor_cfg) as impostor:
        impostor.publish("roll", {"n": 1})
        with RollSubscriber(cfg, tmp_path / "s.sqlite") as sub:
            got = _receive_all(sub, 1.5)
            assert got == [] and sub.stats["heartbeats"] == 0 and sub.stats["replayed"] == 0


def _dump(cfg: BusConfig, tmp_path: Path) -> Path:
    p = tmp_path / "cfg.json"
    p.write_text(cfg.model_dump_json())
    return p


@pytest.mark.slow
def test_frozen_subscriber_raises_alarms_then_is_dropped(tmp_path: Path):
    """A subscriber process frozen with SIGSTOP (TCP connection open, nothing read) fills its
    pipe: sends fail with zmq.Again and raise "hwm" alarms (XPUB_NODROP: never a silent drop);
    after the ZMTP heartbeat timeout (3 s) the table drops it and the alarms stop. A live
    subscriber meanwhile gets every roll, in order, by replay where the live send failed."""
    cfg = BusConfig.local(tmp_path / "bus", transport="tcp", hwm=10, heartbeat_s=0.1, replay_timeout_s=0.3)
    cfg_file = _dump(cfg, tmp_path)
    alarms: list[float] = []
    pad = "x" * 65536
    with RollPublisher(cfg, on_alarm=lambda code, d: alarms.append(time.monotonic())) as pub, \
            RollSubscriber(cfg, tmp_path / "good.sqlite") as good:
        frozen = _spawn("settle", "--config", str(cfg_file), "--db", str(tmp_path / "frozen.sqlite"),
                        "--count", "1000000", log=tmp_path / "frozen.log")
        got: list[int] = []
        try:
            n = 0
            deadline = time.monotonic() + 15
            while _count(tmp_path / "frozen.sqlite", "SELECT COUNT(*) FROM applied") < 1 and time.monotonic() < deadline:
                n += 1
                pub.publish("roll", {"n": n, "t_ns": 0})
                time.sleep(0.05)
            os.kill(frozen.pid, signal.SIGSTOP)
            frozen_at = time.monotonic()
            # send for 8 s at least, then on until no alarm for 1.5 s (at most 20 s, 3,000 rolls)
            while n < 3000 and (time.monotonic() - frozen_at < 8.0 or (
                    time.monotonic() - frozen_at < 20.0 and alarms and time.monotonic() - alarms[-1] < 1.5)):
                n += 1
                pub.publish("roll", {"n": n, "t_ns": 0, "pad": pad})
                while (env := good.receive(0)) is not None:
                    got.append(env["seq"])
                    good.ack(env["seq"])
            sent_until = time.monotonic()
        finally:
            _kill(frozen)
        got += [e["seq"] for e in _drain_all(good, n - len(got), 15.0)]
    assert alarms, "the frozen subscriber never filled its pipe"
    # dropped after the heartbeat timeout (3 s after a PING the full pipe lets out; 6.02 s was
    # seen with two benchmarks running on the two cores, 7.27 and 7.47 s in full test runs on
    # an idle machine)...
    assert alarms[-1] - frozen_at < 10.0
    assert sent_until - alarms[-1] > 1.0           # ...and no alarm in the last second of sending
    assert got == list(range(1, n + 1))


def _drain_all(sub: RollSubscriber, want: int, seconds: float) -> list[dict]:
    out, end = [], time.monotonic() + seconds
    while len(out) < want and time.monotonic() < end:
        env = sub.receive(0.1)
        if env is not None:
            out.append(env)
            sub.ack(env["seq"])
    return out
