"""The player terminals' wager intake of settle-service (settlement/intake.py): real sockets on
ipc:// and 127.0.0.1 only; every loop bounded in count and time.

A terminal's wager is a round wager ("Wagers shall be made before the dice are rolled", 9 NYCRR
5324.52(c)(1); N.J.A.C. 13:47-20.25(h)1): accepted (cents debited in the ledger), a retry under
the same wager_id answered the same and placed once, a late one refused with the round gate's
reason, a terminal not in the CURVE allow-list kept out, a malformed request named and changing
nothing, and a wager acknowledged by a settle-service SIGKILLed right after still in the ledger
after its restart (the reply is sent only after the commit)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import pytest
import zmq

from bus.config import BusConfig
from bus.keys import authorize, generate_keys, key_files
from bus.publisher import RollPublisher
from controller.boxperson import CurveClientKeys, send_command
from settlement.intake import (MAX_AMOUNT_CENTS, REQUEST_MAX_BYTES, IntakeConfig, IntakeCurve, IntakeSetupError,
                               WagerIntake, check_endpoint)
from settlement.rounds import RULE
from settlement.service import run_settlement_service

RID = "table-1-20261204T000000-000001"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def wager(wager_id: str, player: str = "p1", amount=1000, **kw) -> dict:
    return {"cmd": "wager", "wager_id": wager_id, "player": player, "bet": "pass", "amount": amount,
            "round_id": RID, "placed_at": now(), **kw}


def raw_request(endpoint: str, payload, timeout_s: float = 5.0):
    """Send raw bytes (one frame, or a list: several frames) on a REQ socket; the reply (dict)."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        if isinstance(payload, list):
            sock.send_multipart(payload)
        else:
            sock.send(payload)
        assert sock.poll(int(timeout_s * 1000), zmq.POLLIN), "no reply from the intake"
        return json.loads(sock.recv())
    finally:
        sock.close(0)
        ctx.term()


class Rig:
    """A table (a RollPublisher made and used by the test's thread) and settle-service with its
    intake running in a thread."""

    def __init__(self, tmp_path: Path, curve: IntakeCurve | None = None, endpoint: str | None = None):
        self.cfg = BusConfig.local(tmp_path / "bus")
        self.ledger = tmp_path / "ledger.sqlite"
        self.endpoint = endpoint or f"ipc://{tmp_path / 'intake'}"
        self.curve = curve
        self.lines: list[str] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.pub = RollPublisher(self.cfg)

        def serve():
            try:
                run_settlement_service(self.cfg, "ny-5324", [], self.ledger, self.stop, on_line=self.lines.append,
                                       intake=IntakeConfig(self.endpoint, curve))
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.errors.append(exc)

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not any(s.startswith("wager intake on") for s in self.lines) and time.monotonic() < deadline:
            assert not self.errors, self.errors
            time.sleep(0.01)
        assert any(s.startswith("wager intake on") for s in self.lines), self.lines

    def send(self, request: dict, client: CurveClientKeys | None = None, timeout_s: float = 5.0) -> dict:
        return send_command(self.endpoint, request, timeout_s=timeout_s, curve=client)

    def publish_round(self, event: str, client: CurveClientKeys | None = None, **body) -> None:
        """Publish a round event and wait (bounded) until settlement's intake reports it."""
        self.pub.publish("round", {"round_id": RID, "event": event, "mode": "automated", **body})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = self.send({"cmd": "round"}, client)
            if r["round_id"] == RID and r["open"] == (event == "bets-open") and r["behind"] is None:
                return
            time.sleep(0.02)
        raise AssertionError(f"settlement did not apply round event {event}: {r}")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=20)
        self.pub.close()
        assert not self.thread.is_alive()
        assert not self.errors, self.errors

    def rows(self, sql: str, *args) -> list:
        db = sqlite3.connect(self.ledger)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()


@contextmanager
def rig(tmp_path: Path, **kw):
    r = Rig(tmp_path, **kw)
    try:
        yield r
    finally:
        r.close()


def test_a_wager_is_accepted_and_a_retry_gets_the_same_reply_and_places_it_once(tmp_path: Path):
    with rig(tmp_path) as r:
        r.publish_round("bets-open", window_s=3.0)
        req = wager("t1-0001")
        first = r.send(req)
        assert first == {"ok": True, "wager_id": "t1-0001", "wid": 1, "player": "p1", "bet": "pass",
                         "amount": 1000, "vig": 0, "on_layout": 1000, "balance_cents": -1000,
                         "round_id": RID, "placed_at": req["placed_at"], "terminal": None}
        # the reply was lost: the terminal sends the same request again
        assert r.send(req) == first
        assert r.send(dict(reversed(list(req.items())))) == first     # key order is not the request
        assert r.send({"cmd": "balance", "player": "p1"}) == {
            "ok": True, "player": "p1", "balance_cents": -1000,
            "wagers": [{"wid": 1, "bet": "pass", "amount": 1000, "number": None, "base": None, "dice": None,
                        "working": None, "vig_paid": 0}]}
        # another request under the used wager_id: refused, naming it; nothing placed
        other = r.send({**req, "amount": 2000})
        assert other["ok"] is False and other["wager_id"] == "t1-0001"
        assert other["error"].startswith("wager_id 't1-0001' was used for another request {")
        assert "nothing placed" in other["error"]
        assert r.send({"cmd": "balance", "player": "p1"})["balance_cents"] == -1000
        # a second wager of its own id is placed: the amounts add up on the pass line
        second = r.send(wager("t1-0002", amount=500))
        assert (second["ok"], second["wid"], second["on_layout"], second["balance_cents"]) == (True, 1, 1500, -1500)
    assert r.rows("SELECT cents FROM balances WHERE player='p1'") == [(-1500,)]
    bets = r.rows("SELECT request, cents FROM events WHERE kind='bet' ORDER BY id")
    assert [(json.loads(q)["wager_id"], c) for q, c in bets] == [("t1-0001", -1000), ("t1-0002", -500)]
    assert r.rows("SELECT wager_id, terminal, wid FROM intake ORDER BY wager_id") == [
        ("t1-0001", None, 1), ("t1-0002", None, 1)]
    assert r.rows("SELECT round_id, player, amount, status FROM round_wagers ORDER BY id") == [
        (RID, "p1", 1000, "open"), (RID, "p1", 500, "open")]


def test_a_wager_after_no_more_bets_is_refused_with_the_round_gate_reason(tmp_path: Path):
    with rig(tmp_path) as r:
        r.publish_round("bets-open", window_s=3.0)
        r.publish_round("no-more-bets", cause="window")
        req = wager("t1-late")
        reply = r.send(req)
        assert reply["ok"] is False and reply["rule"] == RULE == "9 NYCRR 5324.52(c)(1); N.J.A.C. 13:47-20.25(h)1"
        assert reply["error"].startswith(f"placed at {datetime.fromisoformat(req['placed_at']).isoformat()}, "
                                         f"after round {RID} closed at ")
        assert reply["error"].endswith("(no more bets)")
        assert r.send(req) == reply                     # the refusal is final for that wager_id
        assert r.send({"cmd": "balance", "player": "p1"}) == {"ok": True, "player": "p1", "balance_cents": 0,
                                                              "wagers": []}
        # no round at all (unknown round id): the gate's reason too
        unknown = r.send({**wager("t1-x"), "round_id": "table-1-nope"})
        assert (unknown["ok"], unknown["error"], unknown["rule"]) == (
            False, "round table-1-nope is not open for bets (unknown round)", RULE)
    assert r.rows("SELECT COUNT(*) FROM events WHERE kind='bet'") == [(0,)]
    assert r.rows("SELECT wager_id, wid FROM intake ORDER BY wager_id") == [("t1-late", None), ("t1-x", None)]


def test_malformed_requests_are_named_and_change_nothing(tmp_path: Path):
    with rig(tmp_path) as r:
        r.publish_round("bets-open", window_s=3.0)
        ok = wager("w-ok")
        cases = [
            (b"not json", "request is not JSON: Expecting value: line 1 column 1 (char 0)"),
            (b"\xff\xfe", "request is not UTF-8 text: "),
            (b"[1, 2]", "request must be a JSON object, not list"),
            (b'{"player": "p1"}', 'request needs "cmd": "wager", "balance" or "round"'),
            (json.dumps({"cmd": "bet"}).encode(), "unknown cmd 'bet'; commands: wager, balance, round"),
            (json.dumps({**ok, "amount": 1000.0}).encode(),
             "wager: amount must be integer cents (a JSON integer), got 1000.0 (a float: money is integer cents, "
             "never a float)"),
            (json.dumps({**ok, "amount": 10.5}).encode(), "wager: amount must be integer cents (a JSON integer), "
                                                        "got 10.5 (a float"),
            (json.dumps({**ok, "amount": "1000"}).encode(),
             "wager: amount must be integer cents (a JSON integer), got '1000' (a str)"),
            (json.dumps({**ok, "amount": True}).encode(),
             "wager: amount must be integer cents (a JSON integer), got True (a boolean)"),
            (json.dumps({**ok, "amount": 0}).encode(), f"wager: amount must be 1..{MAX_AMOUNT_CENTS} cents, got 0"),
            (json.dumps({**ok, "amount": 10 ** 30}).encode(), f"wager: amount must be 1..{MAX_AMOUNT_CENTS} cents"),
            (json.dumps({**ok, "amonut": 5}).encode(), "wager: unknown key(s) ['amonut']; keys: cmd, wager_id, "),
            (json.dumps({k: v for k, v in ok.items() if k != "wager_id"}).encode(),
             "wager: missing key(s) ['wager_id']"),
            (json.dumps({**ok, "wager_id": ""}).encode(), "wager: wager_id must be a non-empty string, got ''"),
            (json.dumps({**ok, "player": 7}).encode(), "wager: player must be a non-empty string, got 7"),
            (json.dumps({**ok, "number": 6.0}).encode(), "wager: number must be an integer, got 6.0"),
            (json.dumps({**ok, "working": "yes"}).encode(), "wager: working must be true or false, got 'yes'"),
            (b'{"cmd": "wager", "amount": 1, "amount": 1000}', "request has the key 'amount' twice"),
            (b'{"cmd": "wager", "amount": NaN}', "request is not JSON this server reads: NaN is not a number"),
            (json.dumps({**ok, "pad": "x" * REQUEST_MAX_BYTES}).encode(),
             f"bytes, over the limit of {REQUEST_MAX_BYTES} bytes (64 KiB)"),
            (json.dumps({"cmd": "balance", "player": "p1", "x": 1}).encode(),
             "balance: unknown key(s) ['x']; keys: cmd, player"),
            ([b'{"cmd": "round"}', b"more"], "request must be one message frame, got 2"),
        ]
        for payload, want in cases:
            reply = raw_request(r.endpoint, payload)
            assert reply["ok"] is False and want in reply["error"], (payload[:80], reply)
            assert "rule" not in reply
        # the service serves on and the well-formed wager is placed (cents)
        assert r.send(ok)["balance_cents"] == -1000
    assert r.rows("SELECT wager_id FROM intake") == [("w-ok",)]
    assert r.rows("SELECT player, cents FROM balances") == [("p1", -1000)]
    assert r.rows("SELECT COUNT(*) FROM events") == [(1,)]


def test_curve_only_allow_listed_terminals_connect_and_each_wager_records_its_key(tmp_path: Path):
    keys = tmp_path / "tk"
    allowed_dir = tmp_path / "terminals"
    good = generate_keys(keys, "terminal-1")
    bad = generate_keys(keys, "terminal-2")
    other = generate_keys(keys, "terminal-3")
    authorize(good.curve_public, allowed_dir)
    authorize(other.curve_public, allowed_dir)
    # both serve p1 (say, the player's seat and a cashier's terminal)
    (allowed_dir / "terminals.toml").write_text('terminal-1 = ["p1"]\nterminal-3 = ["p1"]\n')
    cfg_keys = tmp_path / "bus" / "keys"
    BusConfig.local(tmp_path / "bus")          # the bus's keys, settlement's among them
    server = key_files(cfg_keys, "settlement")
    curve = IntakeCurve(server.curve_secret, allowed_dir)
    with rig(tmp_path, curve=curve, endpoint=f"tcp://127.0.0.1:{_port()}") as r:
        ok_client = CurveClientKeys(good.curve_secret, server.curve_public)
        r.publish_round("bets-open", client=ok_client, window_s=3.0)
        reply = r.send(wager("c-1"), ok_client)
        public = good.curve_public.read_text()
        assert reply["ok"] is True and reply["balance_cents"] == -1000
        assert reply["terminal"] is not None and f'"{reply["terminal"]}"' in public   # the Z85 key of its cert
        with pytest.raises(PermissionError, match="refused the CURVE handshake"):
            r.send(wager("c-2", player="p2"), CurveClientKeys(bad.curve_secret, server.curve_public), timeout_s=2)
        with pytest.raises((PermissionError, TimeoutError)):    # no CURVE at all: no answer
            r.send({"cmd": "round"}, None, timeout_s=1)
        # the same request from another allow-listed terminal: not its wager, nothing placed
        req = wager("c-1")
        stolen = r.send(req, CurveClientKeys(other.curve_secret, server.curve_public))
        assert stolen == {"ok": False, "wager_id": "c-1", "error": "wager_id 'c-1' was used by another terminal: "
                          "a wager_id names one wager; nothing placed (a new wager needs a new wager_id)"}
    assert any("CURVE, 2 terminal certificate(s)" in s for s in r.lines)
    assert r.rows("SELECT wager_id, terminal FROM intake") == [("c-1", reply["terminal"])]
    assert json.loads(r.rows("SELECT request FROM events WHERE kind='bet'")[0][0])["terminal"] == reply["terminal"]
    assert r.rows("SELECT player, cents FROM balances") == [("p1", -1000)]


def _port() -> int:
    from bus.config import free_tcp_ports

    return free_tcp_ports(1)[0]


def test_an_endpoint_that_is_not_local_needs_curve(tmp_path: Path):
    for ep in ("tcp://0.0.0.0:5570", "tcp://192.168.1.20:5570", "tcp://*:5570"):
        with pytest.raises(IntakeSetupError) as exc:
            WagerIntake(ep)
        assert str(exc.value) == (
            f"wager intake endpoint {ep!r}: without CURVE (an allow-list of terminal certificates) the intake has "
            "no authentication, so any process that reaches it could place wagers for any player; it binds only a "
            "loopback tcp:// (127.0.0.1, localhost, [::1]) or an ipc:// endpoint")
    with pytest.raises(IntakeSetupError, match="must be tcp://HOST:PORT or ipc://PATH"):
        check_endpoint("udp://127.0.0.1:1", curve=True)
    assert check_endpoint("tcp://0.0.0.0:5570", curve=True) == "tcp://0.0.0.0:5570"
    # an allow-list folder with a certificate ZeroMQ cannot read is refused, naming it
    allow = tmp_path / "terminals"
    allow.mkdir()
    (allow / "broken.key").write_text("not a certificate")
    BusConfig.local(tmp_path / "bus")
    with pytest.raises(IntakeSetupError, match=r"broken\.key"):
        WagerIntake("tcp://127.0.0.1:*", curve=IntakeCurve(tmp_path / "bus" / "keys" / "settlement.key_secret", allow))


def _service(bus_dir: Path, ledger: Path, endpoint: str, log: Path, *extra: str) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "controller.cli", "settle-service", "--bus-dir", str(bus_dir),
                                 "--ledger", str(ledger), "--players", str(ledger.parent / "players.json"),
                                 "--intake", endpoint, *extra],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _wait_line(proc: subprocess.Popen, log: Path, text: bytes, count: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if log.read_bytes().count(text) >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"no {text!r} x{count}: {log.read_text()[-3000:]}")


def test_a_wager_acknowledged_before_a_sigkill_is_in_the_ledger_after_the_restart(tmp_path: Path):
    bus_dir = tmp_path / "bus"
    cfg = BusConfig.local(bus_dir)
    ledger = tmp_path / "ledger.sqlite"
    (tmp_path / "players.json").write_text("[]")
    log = tmp_path / "service.log"
    log.write_bytes(b"")
    endpoint = f"ipc://{tmp_path / 'intake'}"
    with RollPublisher(cfg) as pub:
        proc = _service(bus_dir, ledger, endpoint, log)
        try:
            _wait_line(proc, log, b"wager intake on", 1)
            pub.publish("round", {"round_id": RID, "event": "bets-open", "mode": "automated", "window_s": 3.0})
            deadline = time.monotonic() + 10
            while send_command(endpoint, {"cmd": "round"})["open"] is not True or \
                    send_command(endpoint, {"cmd": "round"})["behind"] is not None:
                assert time.monotonic() < deadline, "settlement did not open the round"
                time.sleep(0.02)
            req = wager("k-1", amount=2500)
            reply = send_command(endpoint, req)
            os.kill(proc.pid, signal.SIGKILL)        # right after the reply: nothing more is written
            proc.wait(timeout=10)
            assert reply["ok"] is True and reply["balance_cents"] == -2500
            # the restarted service (its round gate empty) finds the wager and answers the retry the same
            proc = _service(bus_dir, ledger, endpoint, log)
            _wait_line(proc, log, b"wager intake on", 2)
            assert send_command(endpoint, req) == reply
            assert send_command(endpoint, {"cmd": "balance", "player": "p1"})["balance_cents"] == -2500
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0, log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    db = sqlite3.connect(ledger)
    try:
        assert db.execute("SELECT player, cents FROM balances").fetchall() == [("p1", -2500)]
        assert db.execute("SELECT COUNT(*) FROM events WHERE kind='bet'").fetchone() == (1,)
        assert db.execute("SELECT wager_id, wid FROM intake").fetchall() == [("k-1", 1)]
        snap = json.loads(db.execute("SELECT json FROM snapshot").fetchone()[0])
    finally:
        db.close()
    assert [(w["player"], w["kind"], w["amount"]) for w in snap["wagers"]] == [("p1", "pass", 2500)]


def test_settle_service_refuses_a_public_intake_without_curve(tmp_path: Path):
    bus_dir = tmp_path / "bus"
    BusConfig.local(bus_dir)
    p = subprocess.run([sys.executable, "-m", "controller.cli", "settle-service", "--bus-dir", str(bus_dir),
                        "--ledger", str(tmp_path / "l.sqlite"), "--intake", "tcp://0.0.0.0:5570"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert p.returncode == 2
    assert ("craps-table settle-service: wager intake endpoint 'tcp://0.0.0.0:5570': without CURVE" in p.stderr)
    assert "Traceback" not in p.stderr and not (tmp_path / "l.sqlite").exists()
    p = subprocess.run([sys.executable, "-m", "controller.cli", "settle-service", "--bus-dir", str(bus_dir),
                        "--ledger", str(tmp_path / "l.sqlite"), "--intake-allow", str(tmp_path)],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert p.returncode == 2 and "--intake-allow needs a wager intake endpoint (--intake ENDPOINT)" in p.stderr


def test_craps_table_wager_places_a_wager_for_the_current_round_and_shows_the_balance(tmp_path: Path, capsys):
    from controller.cli import main

    with rig(tmp_path) as r:
        assert main(["wager", "--endpoint", r.endpoint, "--player", "p2", "--bet", "pass", "--amount", "700"]) == 1
        assert "no round is open for bets (round None)" in capsys.readouterr().err
        r.publish_round("bets-open", window_s=3.0)
        assert main(["wager", "--endpoint", r.endpoint, "--player", "p2", "--bet", "pass", "--amount", "700",
                     "--wager-id", "cli-1"]) == 0
        placed = json.loads(capsys.readouterr().out)
        assert (placed["ok"], placed["wager_id"], placed["round_id"], placed["balance_cents"]) == (True, "cli-1", RID,
                                                                                                 -700)
        assert main(["wager", "--endpoint", r.endpoint, "--balance", "p2"]) == 0
        assert json.loads(capsys.readouterr().out)["balance_cents"] == -700
        # a come bet before the come-out roll: the engine's refusal, exit status 1
        assert main(["wager", "--endpoint", r.endpoint, "--player", "p2", "--bet", "come", "--amount", "500"]) == 1
        out = capsys.readouterr()
        assert json.loads(out.out)["rule"].startswith("9 NYCRR 5324.52(b)(3)")
        assert "refused: a come bet may be made only after the come-out roll" in out.err
        with pytest.raises(SystemExit) as exc:   # argparse: not integer cents
            main(["wager", "--endpoint", r.endpoint, "--player", "p2", "--bet", "pass", "--amount", "7.5"])
        assert exc.value.code == 2


def test_the_table_config_gives_the_intake_off_by_default_and_never_public_without_curve(tmp_path: Path):
    from pydantic import ValidationError

    from controller.config import TableConfig
    from settlement.intake import intake_config

    with pytest.raises(ValidationError, match="(?s)settlement.intake_endpoint.*without CURVE"):
        TableConfig(settlement={"intake_endpoint": "tcp://0.0.0.0:5570"})
    bus = BusConfig.local(tmp_path / "bus")
    allow = tmp_path / "terminals"
    allow.mkdir()
    assert intake_config(None, None, TableConfig().settlement, bus) is None          # off unless given
    assert intake_config(None, None, None, bus) is None
    st = TableConfig(settlement={"intake_endpoint": "tcp://0.0.0.0:5570", "intake_curve": True,
                                 "intake_authorized_dir": str(allow)}).settlement
    assert intake_config(None, None, st, bus) == IntakeConfig(
        "tcp://0.0.0.0:5570", IntakeCurve(bus.keys_dir / "settlement.key_secret", allow))
    assert intake_config("ipc:///tmp/x", None, None, bus) == IntakeConfig("ipc:///tmp/x")   # --intake, plain
    with pytest.raises(IntakeSetupError, match="CURVE allow-list folder .*nowhere does not exist"):
        intake_config("tcp://0.0.0.0:5570", tmp_path / "nowhere", None, bus)
