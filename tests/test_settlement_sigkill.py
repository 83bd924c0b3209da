"""``craps-table settle-service`` killed with SIGKILL at random moments while the table publishes.

The table (a :class:`bus.publisher.RollPublisher` in this process, ``ipc://`` sockets) publishes
rolls, no rolls, alarms and shooter changes at a steady rate; the settlement service runs as a
subprocess and is killed (SIGKILL) at a random moment after each start (up to ``KILLS`` times,
most of them while it catches up with what was published while it was down), then started
again. At the end the ledger must hold:

* every roll once, under its seq, with its dice;
* the same settlement rows (seq, player, wager id, result, stake, payout, vig, cents returned)
  and the same placed wagers as the same envelopes applied once, without a kill;
* balances equal to an independent recomputation (tests/oracle_settle.py, the test players'
  strategy written out again here), integer cents.

Every loop is bounded in count and in time.
"""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bus.config import BusConfig
from bus.publisher import RollPublisher
from controller.game import GameState, advance, new_shooter
from settlement.ledger import Session
from settlement.profile import load_profile
from settlement.service import EnvelopeApplier, LineBettor

from oracle_settle import Oracle, OracleProfile
from test_settle_oracle import _odds_max

PLAYERS = [
    {"name": "p1", "bet": "pass", "amount": 1000, "odds": 2},
    {"name": "p2", "bet": "dont_pass", "amount": 1000, "odds": 1},
    {"name": "p3", "bet": "come", "amount": 500, "odds": 1},
    {"name": "p4", "bet": "dont_come", "amount": 500, "odds": 0},
]
MESSAGES = int(os.environ.get("SETTLE_KILL_MESSAGES", "360"))
KILLS = int(os.environ.get("SETTLE_KILL_COUNT", "10"))
RATE = 30.0          # messages per second


def _messages(n: int, seed: int) -> list[tuple[str, dict]]:
    """What a table publishes: (topic, body), the game tracked with controller/game.py."""
    rng = random.Random(seed)
    state = GameState()
    out: list[tuple[str, dict]] = []
    rolls = 0
    while len(out) < n:
        x = rng.random()
        if x < 0.06:
            out.append(("roll", {"roll_id": None, "verdict": "no-roll", "reason": "one-die-off-table",
                                 "dice": None, "total": None, "game": {"shooter": state.shooter,
                                                                      "point": state.point}}))
        elif x < 0.08:
            out.append(("alarm", {"code": "door-open", "message": "cash box door"}))
        elif x < 0.10 and state.shooter_roll > 0:
            state = new_shooter(state)
            out.append(("state", {"event": "new-shooter", "cause": "voluntary",
                                  "game": {"shooter": state.shooter, "point": state.point}}))
        else:
            rolls += 1
            d = (rng.randint(1, 6), rng.randint(1, 6))
            state, outcome = advance(state, d)
            out.append(("roll", {"roll_id": f"table-1-{rolls:08d}", "verdict": "roll", "reason": None,
                                 "dice": list(d), "total": sum(d), "game": {
                                     "shooter": state.shooter, "shooter_roll": state.shooter_roll,
                                     "point": state.point, "puck": "ON" if state.point else "OFF",
                                     "outcome": outcome}}))
    return out


def _reference(prof, messages) -> Session:
    """The envelopes applied once, in order, without a kill (an in-memory ledger)."""
    sess = Session(prof)
    ap = EnvelopeApplier(sess, LineBettor(PLAYERS), lambda s: None)
    ap.bet()
    for seq, (topic, body) in enumerate(messages, 1):
        ap.apply({"seq": seq, "topic": topic, "body": body})
        sess.mark_seen(seq)
    return sess


def _oracle_balances(messages) -> dict[str, int]:
    """Balances recomputed by the independent oracle, the test players' strategy written out
    again: a line bet on a come-out, a come bet after it, odds x flat behind each bet with a
    point (capped by the profile's odds limits)."""
    oprof = OracleProfile("ny-5324")
    orc = Oracle(oprof)

    def bets():
        for p in PLAYERS:
            name, kind, amount, mult = p["name"], p["bet"], p["amount"], p["odds"]
            line = kind in ("pass", "dont_pass")
            flats = [w for w in orc.wagers if w["player"] == name and w["bet"] == kind]
            if line and orc.point is None and not orc.decide_only and not flats:
                orc.bet({"player": name, "bet": kind, "amount": amount})
            if not line and orc.point is not None and not any(w.get("number") is None for w in flats):
                orc.bet({"player": name, "bet": kind, "amount": amount})
            for w in flats if mult else ():
                n = orc.point if line else w.get("number")
                if n is None or orc.find(name, "odds", base=kind, number=n) is not None:
                    continue
                odds = min(w["amount"] * mult, _odds_max(oprof, kind, w["amount"], n))
                if odds > 0:
                    orc.bet({"player": name, "bet": "odds", "base": kind, "amount": odds,
                             **({} if line else {"number": n})})

    bets()
    for topic, body in messages:
        if topic == "state" and body.get("event") == "new-shooter":
            orc.shooter_change()
            bets()
        elif topic == "roll" and body.get("verdict") == "roll":
            orc.roll(*body["dice"])
            bets()
    return {p["name"]: orc.balance(p["name"]) for p in PLAYERS}


def _ledger_seq(ledger: Path) -> int:
    """The last bus seq the ledger holds (0 if unreadable now)."""
    if not ledger.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=2)
        try:
            r = conn.execute("SELECT MAX(seq) FROM rolls").fetchone()[0] or 0
            m = conn.execute("SELECT value FROM meta WHERE key='event_seq'").fetchone()
            return max(r, int(m[0]) if m else 0)
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _start(bus_dir: Path, ledger: Path, players: Path, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "controller.cli", "settle-service", "--bus-dir", str(bus_dir),
                                 "--ledger", str(ledger), "--players", str(players)],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def _wait_ready(proc: subprocess.Popen, log: Path, starts: int, deadline: float) -> bool:
    """Until the ``starts``-th "waiting for rolls" line is in the log (bounded by ``deadline``)."""
    while time.monotonic() < deadline and proc.poll() is None:
        if log.read_bytes().count(b"waiting for rolls") >= starts:
            return True
        time.sleep(0.02)
    return False


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _rows(db: sqlite3.Connection) -> dict:
    return {
        "rolls": db.execute("SELECT seq, d1, d2, point_before, outcome FROM rolls ORDER BY seq").fetchall(),
        "settlements": db.execute("SELECT seq, player, wid, bet, number, base, result, stake, payout, vig, "
                                  "returned, balance_after FROM settlements ORDER BY seq, id").fetchall(),
        "bets": [(p, json.loads(r), c) for p, r, c in
                 db.execute("SELECT player, request, cents FROM events WHERE kind='bet' ORDER BY id")],
        "other_events": db.execute("SELECT kind, player, request, cents FROM events "
                                   "WHERE kind NOT IN ('bet', 'rejected') ORDER BY id").fetchall(),
        "balances": dict(db.execute("SELECT player, cents FROM balances")),
        "snapshot": json.loads(db.execute("SELECT json FROM snapshot").fetchone()[0]),
    }


@pytest.mark.slow
def test_sigkill_at_random_moments_settles_every_roll_once(tmp_path: Path):
    rng = random.Random(20240611)
    messages = _messages(MESSAGES, seed=7)
    prof = load_profile("ny-5324")
    bus_dir = tmp_path / "bus"
    cfg = BusConfig.local(bus_dir)
    ledger = tmp_path / "ledger.sqlite"
    players = tmp_path / "players.json"
    players.write_text(json.dumps(PLAYERS))
    log = tmp_path / "service.log"
    log.write_bytes(b"")
    published, finished = threading.Event(), threading.Event()
    pub_error: list[BaseException] = []

    def table():
        """The table: publishes at RATE, then serves replays until the test is finished (a
        publisher is used by the thread that made it)."""
        try:
            with RollPublisher(cfg) as pub:
                period, t_next = 1.0 / RATE, time.monotonic()
                for topic, body in messages:
                    t_next += period
                    time.sleep(max(0.0, t_next - time.monotonic()))
                    pub.publish(topic, body)
                published.set()
                finished.wait(180)
        except BaseException as exc:   # noqa: BLE001 - reported by the test
            pub_error.append(exc)
        finally:
            published.set()

    starts, kills, kill_at_seq = 0, 0, []
    deadline = time.monotonic() + 150
    feeder = threading.Thread(target=table, daemon=True)
    feeder.start()
    proc = _start(bus_dir, ledger, players, log)
    starts += 1
    try:
        while kills < KILLS and time.monotonic() < deadline:
            assert _wait_ready(proc, log, starts, deadline), f"service not ready: {log.read_text()[-3000:]}"
            time.sleep(rng.uniform(0.0, 0.5))     # most often while it catches up
            assert proc.poll() is None, f"service stopped by itself: {log.read_text()[-3000:]}"
            _kill(proc)
            kills += 1
            kill_at_seq.append(_ledger_seq(ledger))
            proc = _start(bus_dir, ledger, players, log)
            starts += 1
        published.wait(max(0.0, deadline - time.monotonic()))
        assert published.is_set() and not pub_error, pub_error
        while _ledger_seq(ledger) < len(messages) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert _ledger_seq(ledger) == len(messages), (f"ledger at seq {_ledger_seq(ledger)} of {len(messages)}: "
                                                      f"{log.read_text()[-3000:]}")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()[-3000:]
    finally:
        _kill(proc)
        finished.set()
        feeder.join(timeout=30)
    assert not pub_error, pub_error
    assert kills == KILLS, f"only {kills} kills before the deadline"
    # the kills fell at different points of the stream, not all before the first roll
    assert len(set(kill_at_seq)) >= 3, kill_at_seq

    db = sqlite3.connect(ledger)
    got = _rows(db)
    db.close()
    ref = _reference(prof, messages)
    want = _rows(ref.db)
    ref.close()
    n_rolls = sum(1 for t, b in messages if t == "roll" and b["verdict"] == "roll")
    assert [r[0] for r in got["rolls"]] == [seq for seq, (t, b) in enumerate(messages, 1)
                                            if t == "roll" and b["verdict"] == "roll"]
    assert len(got["rolls"]) == n_rolls
    assert [(r[1], r[2]) for r in got["rolls"]] == [tuple(b["dice"]) for t, b in messages
                                                    if t == "roll" and b["verdict"] == "roll"]
    # each wager decided once: no (seq, wid) twice and the same rows as one run without a kill
    keys = [(r[0], r[2]) for r in got["settlements"]]
    assert len(keys) == len(set(keys))
    assert got["settlements"] == want["settlements"]
    assert got["bets"] == want["bets"]                    # no wager lost or placed twice
    assert got["other_events"] == want["other_events"]    # each shooter change once
    assert got["snapshot"] == want["snapshot"]            # the same wagers open at the end
    assert got["balances"] == want["balances"]
    assert got["balances"] == _oracle_balances(messages)
    assert all(isinstance(c, int) for c in got["balances"].values())
