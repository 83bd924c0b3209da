"""Boxperson calls: registry with an injected clock, evidence frame, ZeroMQ command server on
loopback (plain and CURVE), and `craps-table decide`."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import cv2
import numpy as np
import pytest

from controller.boxperson import (CallRegistry, CommandServer, CurveClientKeys, CurveServerKeys, DecisionError,
                                  annotate_evidence, handle_request, send_command)
from controller.cli import main as cli_main
from controller.verdict import DieObservation
from vision.types import DieReading


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


WALL = datetime(2026, 11, 29, 23, 30, tzinfo=timezone.utc)


def registry(timeout=30.0, seen=None):
    clock = Clock()
    reg = CallRegistry(timeout, clock=clock, wall_clock=lambda: WALL,
                       on_decision=None if seen is None else seen.append)
    return reg, clock


def test_answer_with_dice_logs_who_and_when():
    seen = []
    reg, clock = registry(seen=seen)
    reg.open("t-1", "face-unreadable", b"png")
    clock.t += 4.5
    d = reg.answer("t-1", who="ann", dice=[3, 4])
    assert d.to_json() == {"roll_id": "t-1", "reason": "face-unreadable", "outcome": "dice", "dice": [3, 4],
                           "who": "ann", "at": "2026-11-29T23:30:00+00:00", "latency_s": 4.5,
                           "console": None}
    assert not d.void and seen == [d] and reg.pending() == [] and reg.decision("t-1") == d


def test_void_and_second_answer_refused():
    reg, _ = registry()
    reg.open("t-2", "die-not-flat", b"")
    d = reg.answer("t-2", who="bob", void=True)
    assert (d.outcome, d.dice, d.void) == ("void", None, True)
    with pytest.raises(DecisionError, match="already decided \\(void by bob"):
        reg.answer("t-2", who="ann", dice=[1, 1])


def test_timeout_voids_the_roll():
    seen = []
    reg, clock = registry(timeout=10.0, seen=seen)
    reg.open("t-3", "extra-dice", b"")
    clock.t += 9.99
    assert reg.expire() == []
    clock.t += 0.02
    (d,) = reg.expire()
    assert (d.outcome, d.who, d.void, d.dice) == ("timeout", "timeout", True, None)
    assert seen == [d]
    with pytest.raises(DecisionError, match="already decided \\(timeout"):
        reg.answer("t-3", who="ann", dice=[2, 2])


@pytest.mark.parametrize("kw, msg", [
    ({"who": "", "dice": [1, 2]}, "name is required"),
    ({"who": "ann"}, "either the dice"),
    ({"who": "ann", "dice": [1, 2], "void": True}, "either the dice"),
    ({"who": "ann", "dice": [1, 7]}, "1..6"),
    ({"who": "ann", "dice": [1]}, "exactly two"),
    ({"who": "ann", "dice": [1, 2.0]}, "integer"),
])
def test_bad_answers(kw, msg):
    reg, _ = registry()
    reg.open("t-4", "face-unreadable", b"")
    with pytest.raises(DecisionError, match=msg):
        reg.answer("t-4", **kw)
    assert [c.roll_id for c in reg.pending()] == ["t-4"]  # nothing half-done


def test_unknown_roll_and_duplicate_open():
    reg, _ = registry()
    with pytest.raises(DecisionError, match="no pending boxperson call"):
        reg.answer("nope", who="ann", void=True)
    reg.open("t-5", "face-unreadable", b"")
    with pytest.raises(DecisionError, match="already opened"):
        reg.open("t-5", "face-unreadable", b"")


def test_handle_request_rejects_garbage():
    reg, _ = registry()
    assert "not JSON" in handle_request(reg, b"\xff\x00")["error"]
    assert "JSON object" in handle_request(reg, b"[1]")["error"]
    assert "unknown cmd" in handle_request(reg, b'{"cmd": "drop"}')["error"]
    assert "unknown key" in handle_request(reg, b'{"cmd": "decide", "roll_id": "x", "who": "a", "x": 1}')["error"]
    # dice that are no list, and JSON nested past Python's recursion limit: answered, not raised
    reg.open("table-1-00000042", "face-unreadable", b"png")
    bad = {"cmd": "decide", "roll_id": "table-1-00000042", "dice": 5, "who": "x"}
    assert handle_request(reg, json.dumps(bad).encode())["error"] == "dice: give exactly two values 1..6, got 5"
    assert "nested too deeply" in handle_request(reg, b"[" * 100000)["error"]
    assert [c.roll_id for c in reg.pending()] == ["table-1-00000042"]


def test_a_person_cannot_answer_as_timeout():
    """``"timeout"`` is who a call voided at its deadline is logged by: a console giving it as a
    name would make a person's void read as a timeout."""
    reg, _ = registry()
    reg.open("table-1-00000043", "face-unreadable", b"png")
    with pytest.raises(DecisionError, match="reserved"):
        reg.answer("table-1-00000043", who=" Timeout ", void=True)
    assert [c.roll_id for c in reg.pending()] == ["table-1-00000043"]


def test_command_server_answers_and_serves_on_after_a_defect_in_a_handler(monkeypatch):
    """A request that raises inside the handler (a defect) gets an error reply and the server
    thread serves the next request: the boxperson's console must not go dead (before, one
    ``"dice": 5`` killed the thread and every later decision timed out)."""
    import controller.boxperson as bp

    reg = CallRegistry(60.0)
    reg.open("table-1-00000042", "face-unreadable", b"png")
    real = bp.handle_request
    calls = {"n": 0}

    def flaky(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise TypeError("a defect")
        return real(*a, **kw)

    monkeypatch.setattr(bp, "handle_request", flaky)
    server = CommandServer(reg, "tcp://127.0.0.1:*").start()
    try:
        first = send_command(server.endpoint, {"cmd": "pending"}, timeout_s=5)
        assert first["ok"] is False and first["error"].startswith("internal error")
        ok = send_command(server.endpoint, {"cmd": "decide", "roll_id": "table-1-00000042", "dice": [3, 4],
                                            "who": "ann"}, timeout_s=5)
        assert ok["ok"] is True and ok["decision"]["dice"] == [3, 4]
    finally:
        server.close()


def test_evidence_frame_is_a_png_with_boxes():
    img = np.full((120, 160, 3), 40, np.uint8)
    r = DieReading(value=None, bbox=(50, 50, 70, 70), centre=(60.0, 60.0), confidence=0.2, flat=False,
                   extra={"seen_value": 5})
    png = annotate_evidence(img, [DieObservation(r)], title="t-1 face-unreadable", notes=["cocked"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    out = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    assert out.shape == img.shape
    assert tuple(out[48, 60]) == (0, 0, 255)  # red box edge: a die in dispute
    with pytest.raises(ValueError, match="uint8"):
        annotate_evidence(np.zeros((4, 4), np.float32), [])


def test_command_server_over_loopback_and_decide_cli(capsys, tmp_path):
    seen = []
    reg = CallRegistry(60.0, on_decision=seen.append)
    img = np.full((60, 80, 3), 30, np.uint8)
    reg.open("table-1-00000007", "face-unreadable", annotate_evidence(img, []))
    reg.open("table-1-00000008", "die-not-flat", b"x")
    server = CommandServer(reg, "tcp://127.0.0.1:*").start()
    try:
        ep = server.endpoint
        assert ep.startswith("tcp://127.0.0.1:")
        pend = send_command(ep, {"cmd": "pending"})
        assert [c["roll_id"] for c in pend["calls"]] == ["table-1-00000007", "table-1-00000008"]
        assert cli_main(["decide", "--endpoint", ep, "--roll-id", "table-1-00000007", "--evidence-out",
                         str(tmp_path / "e.png")]) == 0
        assert (tmp_path / "e.png").read_bytes()[:4] == b"\x89PNG"
        capsys.readouterr()
        assert cli_main(["decide", "--endpoint", ep, "--roll-id", "table-1-00000007", "--dice", "3", "4",
                         "--who", "ann"]) == 0
        reply = json.loads(capsys.readouterr().out)
        assert reply["decision"]["dice"] == [3, 4] and reply["decision"]["who"] == "ann"
        assert cli_main(["decide", "--endpoint", ep, "--roll-id", "table-1-00000007", "--void", "--who", "ann"]) == 1
        assert "already decided" in capsys.readouterr().err
        assert cli_main(["decide", "--endpoint", ep, "--roll-id", "table-1-00000008", "--void", "--who", "bob"]) == 0
        assert [(d.roll_id, d.outcome, d.who) for d in seen] == [
            ("table-1-00000007", "dice", "ann"), ("table-1-00000008", "void", "bob")]
    finally:
        server.close()


def test_decide_cli_bad_input():
    assert cli_main(["decide", "--roll-id", "x", "--dice", "3", "9", "--who", "ann"]) == 2
    assert cli_main(["decide", "--roll-id", "x", "--dice", "3", "4"]) == 2
    assert cli_main(["decide", "--dice", "3", "4", "--who", "a"]) == 2
    with pytest.raises(SystemExit) as e:
        cli_main(["decide", "--roll-id", "x", "--dice", "3", "4", "--void", "--who", "a"])
    assert e.value.code == 2


def test_decide_cli_no_server_is_status_1():
    from bus.config import free_tcp_ports

    (port,) = free_tcp_ports(1)
    assert cli_main(["decide", "--endpoint", f"tcp://127.0.0.1:{port}", "--roll-id", "x", "--void",
                     "--who", "a", "--timeout", "0.3"]) == 1


def test_curve_command_server(tmp_path, caplog):
    from bus.keys import authorize, generate_keys

    server_keys = generate_keys(tmp_path, "table")
    client_keys = generate_keys(tmp_path, "boxperson")
    stranger = generate_keys(tmp_path, "stranger")
    authorize(client_keys.curve_public, tmp_path / "authorized")
    reg = CallRegistry(60.0)
    reg.open("t-9", "face-unreadable", b"")
    server = CommandServer(reg, "tcp://127.0.0.1:*",
                           curve=CurveServerKeys(server_keys.curve_secret, tmp_path / "authorized")).start()
    try:
        # a stranger's key, or no CURVE at all: refused, and said so (not "no reply")
        bad = CurveClientKeys(stranger.curve_secret, server_keys.curve_public)
        with pytest.raises(PermissionError, match=r"refused the CURVE handshake \(authentication\)"):
            send_command(server.endpoint, {"cmd": "pending"}, timeout_s=1.0, curve=bad)
        with pytest.raises(PermissionError, match="refused the CURVE handshake"):
            send_command(server.endpoint, {"cmd": "pending"}, timeout_s=1.0)
        # and the server side says so (pyzmq logs a refusal at DEBUG only)
        assert any(r.levelname == "WARNING" and "refused by CURVE authentication" in r.getMessage()
                   for r in caplog.records), [r.getMessage() for r in caplog.records]
        good = CurveClientKeys(client_keys.curve_secret, server_keys.curve_public)
        reply = send_command(server.endpoint, {"cmd": "decide", "roll_id": "t-9", "dice": [6, 6], "who": "cy"},
                             curve=good)
        assert reply["ok"] and reply["decision"]["dice"] == [6, 6]
        # the decision records the console the socket authenticated, not only the name given
        from bus.keys import load_curve_public

        assert reply["decision"]["console"] == load_curve_public(client_keys.curve_public).decode("ascii")
        assert reg.decision("t-9").console == reply["decision"]["console"]
    finally:
        server.close()


def test_decide_only_command_reaches_the_table_service(capsys, tmp_path):
    """``craps-table decide --decide-only on --who ann`` (9 NYCRR 5324.52(i)(2)) goes over the
    command socket to the table service's inbox; without a service it is refused; bad input is
    named."""
    reg, _ = registry()
    posted = []
    assert "not connected" in handle_request(reg, b'{"cmd": "decide-only", "on": true, "who": "ann"}')["error"]
    bad = handle_request(reg, b'{"cmd": "decide-only", "on": "yes", "who": "ann"}', lambda e, **d: posted.append(e))
    assert "on must be true or false" in bad["error"] and posted == []
    server = CommandServer(reg, "tcp://127.0.0.1:*", table_command=lambda e, **d: posted.append((e, d))).start()
    try:
        assert cli_main(["decide", "--endpoint", server.endpoint, "--decide-only", "on", "--who", "ann"]) == 0
        out = capsys.readouterr()
        assert json.loads(out.out) == {"ok": True, "queued": "decide-only", "on": True}
        # a socket that does not wait for the table service: the console is told it is not confirmed
        assert "decide-only queued, not confirmed" in out.err
        assert cli_main(["decide", "--endpoint", server.endpoint, "--decide-only", "off"]) == 2   # no --who
        assert posted == [("decide-only", {"on": True, "who": "ann", "console": None})]
    finally:
        server.close()


def test_decide_only_cli_refuses_a_roll_id(capsys):
    assert cli_main(["decide", "--decide-only", "on", "--who", "a", "--roll-id", "x"]) == 2
    assert "not a roll" in capsys.readouterr().err


def test_decide_evidence_out_that_cannot_be_written_exit_2(capsys, tmp_path):
    reg = CallRegistry(60.0)
    reg.open("table-1-00000009", "face-unreadable", annotate_evidence(np.full((60, 80, 3), 30, np.uint8), []))
    server = CommandServer(reg, "tcp://127.0.0.1:*").start()
    try:
        for out, reason in ((tmp_path / "no" / "such" / "e.png", "No such file or directory"),
                            (tmp_path, "is a directory")):
            assert cli_main(["decide", "--endpoint", server.endpoint, "--roll-id", "table-1-00000009",
                             "--evidence-out", str(out)]) == 2
            cap = capsys.readouterr()
            assert f"craps-table decide: --evidence-out {out}: cannot write the evidence PNG: {reason}" in cap.err
            assert cap.out == ""
        assert [c["roll_id"] for c in send_command(server.endpoint, {"cmd": "pending"})["calls"]] == ["table-1-00000009"]
    finally:
        server.close()


@pytest.mark.parametrize("value, says", [
    ("nan", "must be a finite number of seconds, got 'nan'"),
    ("inf", "must be a finite number of seconds, got 'inf'"),
    ("0", "must be > 0, got '0'"),
    ("soon", "expected a number of seconds, got 'soon'"),
])
def test_decide_timeout_must_be_finite_and_positive(value, says, capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["decide", "--pending", "--timeout", value])
    assert exc.value.code == 2
    assert f"argument --timeout: {says}" in capsys.readouterr().err


class _Console:
    """A boxperson console holding one CURVE connection open (as ``craps-table decide`` in a
    loop would not: it reconnects per command)."""

    def __init__(self, endpoint: str, keys, server_public) -> None:
        import zmq

        from bus.keys import load_curve_public, load_curve_secret

        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.key = load_curve_public(keys.curve_public).decode("ascii")
        self.sock.curve_publickey, self.sock.curve_secretkey = load_curve_secret(keys.curve_secret)
        self.sock.curve_serverkey = load_curve_public(server_public)
        self.sock.connect(endpoint)

    def send(self, request: dict, timeout_s: float = 5.0) -> dict:
        import zmq

        self.sock.send(json.dumps(request).encode())
        assert self.sock.poll(int(timeout_s * 1000), zmq.POLLIN), "no reply from the command server"
        return json.loads(self.sock.recv())

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()


def _curve_floor(tmp_path):
    from bus.keys import authorize, generate_keys

    server_keys = generate_keys(tmp_path, "table")
    consoles = {n: generate_keys(tmp_path, n) for n in ("box-a", "box-b")}
    allow = tmp_path / "authorized"
    for kf in consoles.values():
        authorize(kf.curve_public, allow)
    return server_keys, consoles, allow


def _refused_within(console: _Console, timeout_s: float = 5.0) -> dict:
    """Ask ``pending`` until the server refuses the console (bounded): the reply refused."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        reply = console.send({"cmd": "pending"})
        if not reply["ok"]:
            return reply
        assert time.monotonic() < deadline, f"console still served {timeout_s} s after its certificate was removed"
        time.sleep(0.05)


def test_a_console_removed_from_the_allow_list_is_refused_without_a_restart(tmp_path, caplog):
    """A console's certificate removed from ``[boxperson] authorized_dir`` while its connection
    is open: within a second its next command is refused naming its key, nothing applied (the
    call stays open for another console); a new connection from it fails the handshake; the
    other console decides. Before, the list was read only at start: the removed console went
    on deciding rolls until the table service was restarted."""
    caplog.set_level("INFO", logger="controller.boxperson")
    server_keys, consoles, allow = _curve_floor(tmp_path)
    reg = CallRegistry(60.0)
    reg.open("t-1", "face-unreadable", b"")
    server = CommandServer(reg, "tcp://127.0.0.1:*",
                           curve=CurveServerKeys(server_keys.curve_secret, allow)).start()
    a = _Console(server.endpoint, consoles["box-a"], server_keys.curve_public)
    b = _Console(server.endpoint, consoles["box-b"], server_keys.curve_public)
    try:
        assert [c["roll_id"] for c in a.send({"cmd": "pending"})["calls"]] == ["t-1"]
        (allow / "box-a.key").unlink()
        refused = _refused_within(a)
        expected = (f"boxperson commands: box-a (key {a.key[:8]}...) is not in the allow-list {allow} (its "
                    "certificate was removed): command refused, nothing applied")
        assert refused == {"ok": False, "error": expected}
        assert a.send({"cmd": "decide", "roll_id": "t-1", "dice": [6, 6], "who": "al"}) == {
            "ok": False, "error": expected}
        assert reg.decision("t-1") is None and [c.roll_id for c in reg.pending()] == ["t-1"]
        assert any(r.levelname == "INFO" and r.getMessage() == f"boxperson commands: allow-list reloaded: 1 "
                   f"certificate(s) in {allow}" for r in caplog.records)
        # a new connection with the removed key fails the CURVE handshake
        with pytest.raises(PermissionError, match="refused the CURVE handshake"):
            send_command(server.endpoint, {"cmd": "pending"}, timeout_s=1.0,
                         curve=CurveClientKeys(consoles["box-a"].curve_secret, server_keys.curve_public))
        d = b.send({"cmd": "decide", "roll_id": "t-1", "dice": [6, 5], "who": "bo"})
        assert d["ok"] and d["decision"]["dice"] == [6, 5] and d["decision"]["console"] == b.key
    finally:
        a.close()
        b.close()
        server.close()


def test_a_console_removed_while_the_folder_cannot_be_read_is_refused_and_the_error_named(tmp_path, caplog):
    """A damaged certificate dropped into the folder while a console's is removed: the reload
    fails, logged at ERROR naming the file; the list in effect is kept less the removed console
    (a reload never widens access, and a removal does not wait for the folder to be fixed)."""
    server_keys, consoles, allow = _curve_floor(tmp_path)
    reg = CallRegistry(60.0)
    reg.open("t-1", "face-unreadable", b"")
    server = CommandServer(reg, "tcp://127.0.0.1:*",
                           curve=CurveServerKeys(server_keys.curve_secret, allow)).start()
    a = _Console(server.endpoint, consoles["box-a"], server_keys.curve_public)
    b = _Console(server.endpoint, consoles["box-b"], server_keys.curve_public)
    try:
        assert a.send({"cmd": "pending"})["ok"] and b.send({"cmd": "pending"})["ok"]
        (allow / "stray.key").write_text("not a certificate\n")
        (allow / "box-a.key").unlink()
        assert "box-a (key" in _refused_within(a)["error"]
        errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1 and errors[0].startswith(f"boxperson commands: allow-list {allow} not reloaded: ")
        assert str(allow / "stray.key") in errors[0] and errors[0].endswith(
            "the list in effect is kept, less the consoles whose certificate was removed: box-a")
        d = b.send({"cmd": "decide", "roll_id": "t-1", "dice": [2, 2], "who": "bo"})
        assert d["ok"] and d["decision"]["console"] == b.key
    finally:
        a.close()
        b.close()
        server.close()
