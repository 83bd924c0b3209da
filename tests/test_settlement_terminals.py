"""Player terminals bound to their players on settle-service's wager intake (settlement/terminals.py,
settlement/intake.py; docs/wagers.md "Terminal intake"): real CURVE sockets on 127.0.0.1 only,
every wait bounded in time.

A terminal acts only for the players ``terminals.toml`` in the allow-list folder binds it to: a
wager or a balance for another player is refused naming the terminal and the player, nothing
written; the folder is read again when it changes, so a removed certificate is refused from the
next request (an open connection included); a malformed ``terminals.toml`` is a startup error
naming the file and line, and at a reload keeps the list in effect (logged at ERROR), never
opening access wider."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from bus.config import BusConfig
from bus.keys import authorize, generate_keys, key_files, load_curve_public, load_curve_secret
from controller.boxperson import CurveClientKeys
from settlement.intake import IntakeCurve, IntakeSetupError, WagerIntake
from test_settlement_intake import _port, rig, wager


class Terminal:
    """A terminal with one CURVE connection kept open (as a terminal on the floor keeps it)."""

    def __init__(self, endpoint: str, keys, server_cert: Path):
        self.keys = keys
        self.key = load_curve_public(keys.curve_public).decode()
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        public, secret = load_curve_secret(keys.curve_secret)
        self.sock.curve_publickey, self.sock.curve_secretkey = public, secret
        self.sock.curve_serverkey = load_curve_public(server_cert)
        self.sock.connect(endpoint)

    def send(self, request: dict, timeout_s: float = 5.0) -> dict:
        self.sock.send(json.dumps(request).encode())
        assert self.sock.poll(int(timeout_s * 1000), zmq.POLLIN), "no reply from the intake"
        return json.loads(self.sock.recv())

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()


@pytest.fixture
def floor(tmp_path: Path):
    """Keys of four terminals (terminal-1..3 allow-listed, terminal-4 not yet), settlement's bus
    keys, and the allow-list folder; yields (allow_dir, {name: KeyFiles}, server key files)."""
    keys = {n: generate_keys(tmp_path / "tk", n) for n in ("terminal-1", "terminal-2", "terminal-3", "terminal-4")}
    allow = tmp_path / "terminals"
    for n in ("terminal-1", "terminal-2", "terminal-3"):
        authorize(keys[n].curve_public, allow)
    BusConfig.local(tmp_path / "bus")
    return allow, keys, key_files(tmp_path / "bus" / "keys", "settlement")


def _wait_line(r, text: str, count: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(text in s for s in r.lines) < count:
        assert time.monotonic() < deadline, f"no {text!r} x{count}: {r.lines}"
        time.sleep(0.02)


def _wait_error(caplog, text: str, timeout_s: float = 10.0) -> logging.LogRecord:
    deadline = time.monotonic() + timeout_s
    while True:
        found = [rec for rec in caplog.records if rec.levelno == logging.ERROR and text in rec.getMessage()]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no ERROR with {text!r}: {[r.getMessage() for r in caplog.records]}"
        time.sleep(0.02)


def test_a_terminal_wagers_and_reads_balances_only_for_the_players_it_is_bound_to(tmp_path: Path, floor):
    allow, keys, server = floor
    (allow / "terminals.toml").write_text('# seat 3 and seat 5\nterminal-1 = ["p3"]\nterminal-2 = ["p5"]\n')
    bindings = allow / "terminals.toml"
    with rig(tmp_path, curve=IntakeCurve(server.curve_secret, allow), endpoint=f"tcp://127.0.0.1:{_port()}") as r:
        seat3 = Terminal(r.endpoint, keys["terminal-1"], server.curve_public)
        seat5 = Terminal(r.endpoint, keys["terminal-2"], server.curve_public)
        idle = Terminal(r.endpoint, keys["terminal-3"], server.curve_public)
        try:
            r.publish_round("bets-open", client=CurveClientKeys(keys["terminal-1"].curve_secret,
                                                                server.curve_public), window_s=3.0)
            ok = seat3.send(wager("s3-1", player="p3", amount=1500))
            assert (ok["ok"], ok["player"], ok["amount"], ok["balance_cents"], ok["terminal"]) == (
                True, "p3", 1500, -1500, seat3.key)
            s3 = f"terminal terminal-1 (key {seat3.key[:8]}...)"
            # seat 3 betting for the player at seat 5: refused, naming the terminal and the player
            assert seat3.send(wager("s3-2", player="p5")) == {
                "ok": False, "wager_id": "s3-2",
                "error": f"{s3} is not bound to player 'p5' (it serves p3: {bindings}): request refused, "
                         "nothing written"}
            # ... nor reading seat 5's balance
            assert seat3.send({"cmd": "balance", "player": "p5"}) == {
                "ok": False, "error": f"{s3} is not bound to player 'p5' (it serves p3: {bindings}): request "
                                      "refused, nothing written"}
            assert seat3.send({"cmd": "balance", "player": "p3"})["balance_cents"] == -1500
            # a certificate with no line in terminals.toml serves no player (it may ask for the round)
            refused = idle.send(wager("i-1", player="p3"))
            assert refused["ok"] is False and refused["error"] == (
                f"terminal terminal-3 (key {idle.key[:8]}...) is not bound to player 'p3' (it serves no player: "
                f"{bindings}): request refused, nothing written")
            assert idle.send({"cmd": "round"})["round_id"] is not None
            # nothing of the refused wagers was written: seat 5's own terminal uses the id s3-2 freely
            assert seat5.send(wager("s3-2", player="p5", amount=700))["balance_cents"] == -700
        finally:
            for t in (seat3, seat5, idle):
                t.close()
    assert any("CURVE, 3 terminal certificate(s) in" in s and "serving no player" in s and "terminal-3" in s
               for s in r.lines)
    # the ledger keeps which terminal placed each wager (its whole key), and nothing refused
    assert r.rows("SELECT wager_id, terminal FROM intake ORDER BY wager_id") == [
        ("s3-1", seat3.key), ("s3-2", seat5.key)]
    bets = r.rows("SELECT player, cents, request FROM events ORDER BY id")
    assert [(p, c, json.loads(q)["terminal"]) for p, c, q in bets] == [("p3", -1500, seat3.key),
                                                                      ("p5", -700, seat5.key)]
    assert r.rows("SELECT player, cents FROM balances ORDER BY player") == [("p3", -1500), ("p5", -700)]


def test_a_removed_terminal_is_refused_from_its_next_request_after_the_reload(tmp_path: Path, floor):
    allow, keys, server = floor
    (allow / "terminals.toml").write_text('terminal-1 = ["p1"]\nterminal-2 = ["p2"]\n')
    with rig(tmp_path, curve=IntakeCurve(server.curve_secret, allow), endpoint=f"tcp://127.0.0.1:{_port()}") as r:
        t1 = Terminal(r.endpoint, keys["terminal-1"], server.curve_public)
        t2 = Terminal(r.endpoint, keys["terminal-2"], server.curve_public)
        try:
            r.publish_round("bets-open", client=CurveClientKeys(keys["terminal-2"].curve_secret,
                                                                server.curve_public), window_s=5.0)
            assert t1.send(wager("a-1", player="p1"))["ok"] is True
            (allow / "terminal-1.key").unlink()                   # surveillance: take terminal-1 off the floor
            _wait_line(r, "wager intake: allow-list reloaded: 2 terminal certificate(s)", 1)
            # its connection is still open: each request is refused, nothing written
            gone = f"terminal key {t1.key[:8]}... is not in the allow-list {allow} (its certificate was removed): " \
                   "request refused, nothing written"
            assert t1.send(wager("a-2", player="p1")) == {"ok": False, "error": gone}
            assert t1.send({"cmd": "balance", "player": "p1"}) == {"ok": False, "error": gone}
            assert t1.send({"cmd": "round"}) == {"ok": False, "error": gone}
            # and a new connection fails the CURVE handshake
            with pytest.raises(PermissionError, match="refused the CURVE handshake"):
                r.send({"cmd": "round"}, CurveClientKeys(keys["terminal-1"].curve_secret, server.curve_public),
                       timeout_s=2)
            assert t2.send(wager("b-1", player="p2"))["ok"] is True
            # a new terminal and a changed binding: in from the next look at the folder (the file
            # first: a look between the two sees 2 certificates, terminal-4's line ignored)
            (allow / "terminals.toml").write_text('terminal-2 = ["p2", "p1"]\nterminal-4 = ["p4"]\n')
            authorize(keys["terminal-4"].curve_public, allow)
            _wait_line(r, "wager intake: allow-list reloaded: 3 terminal certificate(s)", 1)
            assert t2.send(wager("b-2", player="p1", amount=300))["balance_cents"] == -1300
            t4 = CurveClientKeys(keys["terminal-4"].curve_secret, server.curve_public)
            assert r.send(wager("d-1", player="p4", amount=600), t4)["balance_cents"] == -600
        finally:
            t1.close()
            t2.close()
    assert r.rows("SELECT wager_id FROM intake ORDER BY wager_id") == [("a-1",), ("b-1",), ("b-2",), ("d-1",)]
    assert r.rows("SELECT player, cents FROM balances ORDER BY player") == [("p1", -1300), ("p2", -1000),
                                                                             ("p4", -600)]


def test_a_malformed_binding_file_at_start_is_an_error_naming_the_file_and_line(tmp_path: Path, floor):
    allow, keys, server = floor
    bindings = allow / "terminals.toml"
    curve = IntakeCurve(server.curve_secret, allow)
    cases = [
        ('terminal-1 = ["p1"]\nterminal-2 = [p2]\n', f"{bindings} line 2: not TOML: "),
        ('terminal-1 = ["p1"]\n\nterminal-2 = "p2"\n',
         f"{bindings} line 3: terminal-2 must be a list of player ids, e.g. terminal-2 = [\"p1\"], got 'p2'"),
        ('terminal-1 = ["p1", 7]\n', f"{bindings} line 1: terminal-1: a player id must be a non-empty string of "
                                     "at most 100 printable characters, got 7"),
        ('terminal-1 = ["p1"]\n[terminal-2]\nplayers = ["p2"]\n',
         f"{bindings} line 2: terminal-2 must be a list of player ids"),
    ]
    for text, want in cases:
        bindings.write_text(text)
        with pytest.raises(IntakeSetupError) as exc:
            WagerIntake("tcp://127.0.0.1:*", curve=curve)
        assert want in str(exc.value), (text, str(exc.value))
    # settle-service: exit status 2 naming it, before the ledger is made
    bindings.write_text('terminal-1 = ["p1"]\nterminal-2 = [p2]\n')
    p = subprocess.run([sys.executable, "-m", "controller.cli", "settle-service", "--bus-dir", str(tmp_path / "bus"),
                        "--ledger", str(tmp_path / "l.sqlite"), "--intake", "tcp://127.0.0.1:0",
                        "--intake-allow", str(allow)],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert p.returncode == 2, p.stderr
    assert f"craps-table settle-service: wager intake: {bindings} line 2: not TOML: " in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "l.sqlite").exists()


def test_a_malformed_binding_file_at_a_reload_keeps_the_list_in_effect_and_is_logged(tmp_path: Path, floor, caplog):
    allow, keys, server = floor
    bindings = allow / "terminals.toml"
    bindings.write_text('terminal-1 = ["p1"]\nterminal-2 = ["p2"]\n')
    with rig(tmp_path, curve=IntakeCurve(server.curve_secret, allow), endpoint=f"tcp://127.0.0.1:{_port()}") as r:
        t1 = Terminal(r.endpoint, keys["terminal-1"], server.curve_public)
        t2 = Terminal(r.endpoint, keys["terminal-2"], server.curve_public)
        try:
            r.publish_round("bets-open", client=CurveClientKeys(keys["terminal-1"].curve_secret,
                                                                server.curve_public), window_s=5.0)
            # an edit gone wrong that would have given terminal-1 player p2 as well
            bindings.write_text('terminal-1 = ["p1", "p2"]\nterminal-2 = ["p2"\n')
            rec = _wait_error(caplog, "not reloaded")
            assert rec.name == "settlement.intake"
            assert rec.getMessage().startswith(f"wager intake: allow-list {allow} not reloaded: {bindings} line 2: "
                                               "not TOML: ")
            assert rec.getMessage().endswith("; the list in effect is kept")
            assert t1.send(wager("w-1", player="p2"))["error"].startswith(
                f"terminal terminal-1 (key {t1.key[:8]}...) is not bound to player 'p2' (it serves p1:")
            assert t1.send(wager("w-2", player="p1"))["ok"] is True
            # a certificate removed while the file is still broken: refused all the same
            (allow / "terminal-2.key").unlink()
            rec = _wait_error(caplog, "less the terminals whose certificate was removed: terminal-2")
            assert t2.send(wager("w-3", player="p2"))["error"].startswith(f"terminal key {t2.key[:8]}... is not in "
                                                                          "the allow-list")
            # fixed: read again
            bindings.write_text('terminal-1 = ["p1", "p2"]\n')
            _wait_line(r, "wager intake: allow-list reloaded: 2 terminal certificate(s)", 1)
            assert t1.send(wager("w-4", player="p2"))["ok"] is True
        finally:
            t1.close()
            t2.close()
    assert r.rows("SELECT wager_id, terminal FROM intake ORDER BY wager_id") == [("w-2", t1.key), ("w-4", t1.key)]
    assert r.rows("SELECT player, cents FROM balances ORDER BY player") == [("p1", -1000), ("p2", -1000)]


def test_without_curve_no_terminal_is_bound_and_the_start_line_says_so(tmp_path: Path):
    with rig(tmp_path) as r:
        r.publish_round("bets-open", window_s=3.0)
        assert r.send(wager("n-1", player="p9"))["ok"] is True     # any player: nobody is authenticated
    assert any(s.startswith("wager intake on ipc://") and "no CURVE: a loopback/ipc test mode" in s
               and "none is bound to players" in s for s in r.lines)
