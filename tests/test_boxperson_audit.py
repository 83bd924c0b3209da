"""Audit of the boxperson decisions (9 NYCRR 5324.52(h)(1)(ii)(a)): hostile or mistaken
consoles, the deadline, calls superseded by the next throw, a restart with a call open, an
evidence frame that cannot be made. Loopback / in-process only."""
from __future__ import annotations

import base64
import json
import threading

import nacl.signing
import pytest

from bus.envelope import seal
from camera.base import Frame
from controller.boxperson import (MAX_WHO_CHARS, CallRegistry, CommandServer, DecisionError, handle_request,
                                  send_command)
from list_publisher import ListPublisher
from test_controller_service import _observer_service, run_throws, scene_image

UNREADABLE = [(2, 100, 100), (0, 200, 120)]  # one face unreadable: a boxperson call


class SealingPublisher(ListPublisher):
    """Seals each message as the bus does (bus/envelope.py), so an oversized body is refused."""

    key = nacl.signing.SigningKey.generate()

    def publish(self, topic, body):
        seal(self.key, journal_id="j", seq=len(self.sent) + 1, table_id="t-test", topic=topic, body=body)
        return super().publish(topic, body)


def test_a_huge_who_is_refused_and_cannot_block_the_bus(tmp_path):
    """Before: a 2 MB ``who`` was accepted (ok: true); its roll message exceeded the bus's 1 MiB
    envelope and stuck in the outbox, holding every later verdict unpublished."""
    pub = SealingPublisher()
    service, reg = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [UNREADABLE])
    rid = bodies[0]["roll_id"]
    huge = {"cmd": "decide", "roll_id": rid, "dice": [2, 5], "who": "x" * (2 << 20)}
    reply = handle_request(reg, json.dumps(huge).encode())
    assert reply["ok"] is False and f"at most {MAX_WHO_CHARS} characters" in reply["error"]
    assert [c.roll_id for c in reg.pending()] == [rid]
    for bad in ("ann\nboxperson decision forged", "ann\x00"):
        reply = handle_request(reg, json.dumps({**huge, "who": bad}).encode())
        assert reply["ok"] is False and "printable" in reply["error"]
    ok = handle_request(reg, json.dumps({**huge, "who": "a" * MAX_WHO_CHARS}).encode())
    assert ok["ok"] is True
    service.process(Frame(scene_image(UNREADABLE), t, 999))
    assert pub.rolls()[-1]["decision"]["who"] == "a" * MAX_WHO_CHARS
    assert service.store.unpublished() == [] and not service._outbox_blocked
    service.close()


def test_a_huge_who_on_a_table_command_is_refused():
    reg = CallRegistry(60.0)
    posted = []
    for cmd in ({"cmd": "no-roll", "reason": "improper-throw"}, {"cmd": "decide-only", "on": True}):
        reply = handle_request(reg, json.dumps({**cmd, "who": "y" * 5000}).encode(),
                               lambda e, **d: posted.append(e))
        assert reply["ok"] is False and "at most" in reply["error"]
    assert posted == []


def test_the_command_socket_drops_an_oversized_request_and_serves_on():
    reg = CallRegistry(60.0)
    reg.open("table-1-00000001", "face-unreadable", b"png")
    server = CommandServer(reg, "tcp://127.0.0.1:*").start()
    try:
        with pytest.raises(TimeoutError):
            send_command(server.endpoint, {"cmd": "pending", "pad": "z" * (1 << 20)}, timeout_s=1.0)
        ok = send_command(server.endpoint, {"cmd": "decide", "roll_id": "table-1-00000001", "void": True,
                                            "who": "ann"}, timeout_s=5.0)
        assert ok["ok"] is True and ok["decision"]["outcome"] == "void"
    finally:
        server.close()


class SteppingClock:
    """Each reading is ``step`` seconds after the one before."""

    def __init__(self, step):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def test_an_answer_is_judged_against_the_deadline_at_one_time():
    """Before: ``answer`` expired calls at one clock reading and took the answer at a later one,
    so an answer read at the deadline was accepted as the dice (latency = the timeout)."""
    seen = []
    reg = CallRegistry(1.0, clock=SteppingClock(0.6), on_decision=seen.append)
    reg.open("r-1", "face-unreadable", b"")            # opened 0.6, deadline 1.6
    reg.clock.t = 0.4                                   # readings 1.0, then 1.6 (the deadline)
    try:
        d = reg.answer("r-1", who="ann", dice=[1, 2])
    except DecisionError:
        d = reg.decision("r-1")
    assert len(seen) == 1 and seen[0] == d
    assert d.outcome == "timeout" or d.latency_s < reg.timeout_s
    # exactly at the deadline the call is void (``now >= deadline``), and says so
    reg.open("r-3", "face-unreadable", b"")            # opened at the next reading
    reg.clock.step = 0.0
    reg.clock.t = reg.get("r-3").deadline
    with pytest.raises(DecisionError, match="already decided \\(timeout by timeout"):
        reg.answer("r-3", who="ann", void=True)
    assert [(d.roll_id, d.outcome) for d in seen[1:]] == [("r-3", "timeout")]


def test_two_consoles_racing_get_one_decision():
    seen = []
    reg = CallRegistry(60.0, on_decision=seen.append)
    reg.open("r-2", "face-unreadable", b"")
    barrier = threading.Barrier(8, timeout=5)
    replies = []

    def console(k):
        barrier.wait()
        req = {"cmd": "decide", "roll_id": "r-2", "who": f"c{k}", **({"void": True} if k % 2 else {"dice": [k % 6 + 1, 1]})}
        replies.append(handle_request(reg, json.dumps(req).encode()))

    threads = [threading.Thread(target=console, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(5)
    assert sum(r["ok"] for r in replies) == 1 and len(seen) == 1
    assert all("already decided" in r["error"] for r in replies if not r["ok"])


def test_a_call_whose_evidence_frame_fails_still_opens_and_is_decided(tmp_path, monkeypatch):
    """Before: an evidence frame that could not be made raised out of ``TableService.process``
    after the boxperson verdict was published, and no call was opened: nobody could answer it
    and it never timed out."""
    import controller.throw_observer as throw_observer

    real = throw_observer.annotate_evidence
    failures = []

    def failing_once(image, observations, **kw):
        if not failures:
            failures.append(1)
            raise ValueError("evidence image: PNG encoding failed")
        return real(image, observations, **kw)

    monkeypatch.setattr(throw_observer, "annotate_evidence", failing_once)
    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [UNREADABLE])
    (call,) = reg.pending()
    assert call.roll_id == bodies[0]["roll_id"] and call.evidence_png[:4] == b"\x89PNG"
    assert any("evidence frame not made" in n for n in call.notes)
    reply = handle_request(reg, json.dumps({"cmd": "decide", "roll_id": call.roll_id, "dice": [2, 3],
                                            "who": "ann"}).encode())
    assert reply["ok"] is True
    service.process(Frame(scene_image(UNREADABLE), t, 999))
    assert pub.rolls()[-1]["decision"]["call"] == call.roll_id and pub.rolls()[-1]["dice"] == [2, 3]
    service.close()


def test_an_answer_to_a_call_the_next_throw_superseded_is_refused_naming_why(tmp_path):
    """Before: the call stayed pending after the next verdict; a late answer got ``ok: true``
    (the console believed it decided the roll) and the service dropped it with a
    ``stale-decision`` alarm; at its deadline a timeout raised another. Now the call is closed
    void (decision outcome ``superseded``, published before the next throw's verdict) and an
    answer after it is refused naming why."""
    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub, timeout_s=0.5)
    bodies, t = run_throws(service, [UNREADABLE, [(3, 100, 100), (3, 200, 120)]])
    assert [b["verdict"] for b in bodies] == ["boxperson", "roll"]
    assert reg.pending() == []
    call, closed, roll = pub.rolls()
    assert (closed["verdict"], closed["reason"], closed["decision"]["outcome"], closed["decision"]["who"],
            closed["decision"]["call"]) == ("no-roll", "boxperson-void", "superseded", "superseded", call["roll_id"])
    reply = handle_request(reg, json.dumps({"cmd": "decide", "roll_id": bodies[0]["roll_id"], "dice": [2, 5],
                                            "who": "ann"}).encode())
    assert reply["ok"] is False
    assert reply["error"] == (f"roll {bodies[0]['roll_id']}: superseded: the table decided a later throw before an "
                              f"answer (the game moved on), so the call was closed void at "
                              f"{closed['decision']['at_utc']} (decision outcome \"superseded\"); a decision on it "
                              "would not be applied")
    reg.clock = lambda: 1e9   # long past the deadline
    service.process(Frame(scene_image([(3, 100, 100), (3, 200, 120)]), t, 999))
    assert len(pub.rolls()) == 3 and [b for tp, b in pub.sent if tp == "alarm"] == []
    assert service.store.state.point == 6
    service.close()


def test_a_call_open_when_the_service_restarts_is_opened_again(tmp_path):
    """Before: the calls were in the stopped process's memory only: after a restart the
    boxperson's answer was refused ("no pending boxperson call"), no timeout came, and the
    roll was never decided (while shooter changes waited on it)."""
    pub = ListPublisher()
    service, _ = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [UNREADABLE])
    rid = bodies[0]["roll_id"]
    service.close()
    pub2 = ListPublisher()
    service2, reg2 = _observer_service(tmp_path, pub2, timeout_s=60.0)
    service2.start()
    (call,) = reg2.pending()
    assert call.roll_id == rid and call.reason == "face-unreadable" and call.evidence_png[:4] == b"\x89PNG"
    assert "restart" in call.notes[0]
    assert service2.lamps.shown["call-boxperson"] == "flash"
    reply = handle_request(reg2, json.dumps({"cmd": "decide", "roll_id": rid, "void": True, "who": "ann"}).encode())
    assert reply["ok"] is True
    service2.process(Frame(scene_image(UNREADABLE), t, 999))
    (void,) = pub2.rolls()
    assert (void["verdict"], void["reason"], void["decision"]["call"]) == ("no-roll", "boxperson-void", rid)
    service2.close()
    # a second restart: the last verdict is the decision, no call is opened
    service3, reg3 = _observer_service(tmp_path, ListPublisher())
    service3.start()
    assert reg3.pending() == []
    service3.close()


def test_a_call_reopened_after_a_restart_is_void_at_its_deadline(tmp_path):
    service, _ = _observer_service(tmp_path, ListPublisher())
    bodies, t = run_throws(service, [UNREADABLE])
    service.close()
    pub2 = ListPublisher()
    service2, reg2 = _observer_service(tmp_path, pub2, timeout_s=0.05)
    service2.start()
    reg2.clock = lambda: 1e12
    service2.process(Frame(scene_image(UNREADABLE), t, 999))
    (void,) = pub2.rolls()
    assert (void["decision"]["outcome"], void["decision"]["who"]) == ("timeout", "timeout")
    assert void["decision"]["call"] == bodies[0]["roll_id"]
    service2.close()


def _stopped_with_a_call_open(tmp_path, down_s):
    """A service stopped with a boxperson call open, ``down_s`` seconds ago (the verdict's
    commit time moved back in the store). Returns ``(call roll id, its evidence PNG, frame t)``."""
    import sqlite3

    service, reg = _observer_service(tmp_path, ListPublisher())
    bodies, t = run_throws(service, [UNREADABLE])
    rid = bodies[0]["roll_id"]
    png = reg.get(rid).evidence_png
    service.close()
    db = sqlite3.connect(tmp_path / "state.sqlite")
    with db:
        db.execute("UPDATE verdicts SET created = created - ? WHERE roll_id = ?", (down_s, rid))
    db.close()
    return rid, png, t


def test_a_call_reopened_after_a_restart_keeps_its_deadline_and_evidence_frame(tmp_path):
    """Before: the call reopened after a restart got a fresh full timeout (a restart extended
    the time to decide) and a blank frame with the published readings boxed instead of the
    evidence frame the boxperson was shown."""
    rid, png, t = _stopped_with_a_call_open(tmp_path, down_s=50.0)
    service2, reg2 = _observer_service(tmp_path, ListPublisher(), timeout_s=120.0)
    reg2.clock = lambda: 1000.0
    service2.start()
    (call,) = reg2.pending()
    assert call.roll_id == rid and call.evidence_png == png
    assert call.notes == ("call opened again after a restart, with its original evidence frame and deadline",)
    # 120 s from the call, 50 s (and the test's own run time) of which passed while stopped
    assert 60.0 < call.deadline - 1000.0 <= 70.0 and call.deadline - call.opened == 120.0
    reply = handle_request(reg2, json.dumps({"cmd": "evidence", "roll_id": rid}).encode())
    assert reply["ok"] is True and base64.b64decode(reply["png_b64"]) == png
    service2.close()


def test_a_call_whose_deadline_passed_while_stopped_is_void_at_start(tmp_path):
    rid, _, t = _stopped_with_a_call_open(tmp_path, down_s=200.0)
    pub2 = ListPublisher()
    service2, reg2 = _observer_service(tmp_path, pub2, timeout_s=120.0)
    service2.start()
    reply = handle_request(reg2, json.dumps({"cmd": "decide", "roll_id": rid, "dice": [2, 5], "who": "ann"}).encode())
    assert reply["ok"] is False and reply["error"].startswith(f"roll {rid}: already decided (timeout by timeout")
    service2.process(Frame(scene_image(UNREADABLE), t, 999))
    (void,) = pub2.rolls()
    assert (void["verdict"], void["reason"], void["decision"]["outcome"], void["decision"]["call"]) == \
        ("no-roll", "boxperson-void", "timeout", rid)
    assert void["decision"]["latency_s"] >= 200.0
    service2.close()


def test_the_store_keeps_the_last_calls_evidence_frame_only(tmp_path):
    service, reg = _observer_service(tmp_path, ListPublisher())
    bodies, _ = run_throws(service, [UNREADABLE, [(0, 100, 100), (5, 200, 120)]])
    first, second = (b["roll_id"] for b in bodies)
    assert service.store.evidence(first) is None
    assert service.store.evidence(second) == reg.get(second).evidence_png
    assert service.store._db.execute("SELECT COUNT(*) FROM evidence").fetchone()[0] == 1
    service.close()
