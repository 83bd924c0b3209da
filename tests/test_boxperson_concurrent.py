"""The command socket serves the other consoles while one console's command waits for the table
service to confirm it (controller/boxperson.py ``CommandServer``, ``AwaitingReply``;
controller/handoff.py ``Handoff.check``, ``CommitWaits.check``).

Before, the socket was a REP socket answering one request at a time: a ``decide-only`` held until
the throw in progress is decided (9 NYCRR 5324.52(i)(1)) held the server thread for 2 x
``confirm_s`` (4 s), and the boxperson's ``decide`` on the disputed throw (5324.52(h)(1)(ii)(a)),
a ``pending`` listing, and the calls' deadlines (``CallRegistry.expire``) all waited behind it.

Real sockets on ``ipc://``; the table service is driven by a ticker thread (every 20 ms, bounded
in count) or replaced by a ``table_command`` that records the hand-overs. Every wait is bounded
in time, every loop in count.
"""
from __future__ import annotations

import json
import threading
import time

import zmq

from controller.boxperson import CONFIRM_S, CallRegistry, CommandServer, send_command
from controller.handoff import COMMITTED, DONE, HELD, PENDING, QUEUED, REFUSED, TAKEN, WITHDRAWN, CommitWaits, Handoff
from list_publisher import ListPublisher
from test_boxperson_commit import _until
from test_controller_service import _observer_service, run_throws

UNREADABLE = [(2, 100, 100), (0, 200, 120)]   # one face unreadable: a boxperson call
EIGHT = [(4, 100, 100), (4, 200, 120)]          # come-out 8: the point
EIGHT_AGAIN = [(5, 100, 100), (3, 200, 120)]    # the point made
REPLY_S = 10.0
#: how soon another console's request is answered while one waits (the old server: ~2 x CONFIRM_S)
PROMPT_S = 1.0


def _send_in_thread(endpoint: str, request: dict) -> tuple[threading.Thread, list]:
    replies: list[dict] = []
    sender = threading.Thread(target=lambda: replies.append(send_command(endpoint, request, timeout_s=REPLY_S)))
    sender.start()
    return sender, replies


def _reply(sender: threading.Thread, replies: list) -> dict:
    sender.join(REPLY_S)
    assert not sender.is_alive() and replies, "no reply"
    return replies[0]


def _timed(endpoint: str, request: dict) -> tuple[dict, float]:
    t0 = time.monotonic()
    reply = send_command(endpoint, request, timeout_s=REPLY_S)
    return reply, time.monotonic() - t0


class Ticker:
    """The table service's health tick from its own thread, every 20 ms, at most 1000 times."""

    def __init__(self, service) -> None:
        self._stop = threading.Event()

        def run() -> None:
            for _ in range(1000):
                if self._stop.wait(0.02):
                    return
                service.tick()
        self._thread = threading.Thread(target=run, name="test-ticker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(REPLY_S)
        assert not self._thread.is_alive()


def test_a_held_decide_only_does_not_stall_the_boxpersons_decide_or_a_pending_listing(tmp_path):
    """After a point made (5324.52(i)(2)), a ``decide-only`` arrives while the next throw's
    boxperson call is open: held until the call is decided (5324.52(i)(1)). Meanwhile a second
    console's ``pending`` and the boxperson's ``decide`` (void) are answered within a second
    (before: ~4 s, behind the held one), the decide committed; the held ``decide-only`` is then
    applied and replied ``ok``."""
    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub)
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}", table_command=service.post,
                           confirm_s=CONFIRM_S).start()
    service.closers.append(server.close)
    bodies, _ = run_throws(service, [EIGHT, EIGHT_AGAIN, UNREADABLE])
    rid = bodies[-1]["roll_id"]
    assert [b["game"]["outcome"] for b in bodies[:2]] == ["point-set", "point-made"]
    assert bodies[-1]["verdict"] == "boxperson"
    ticker = Ticker(service)
    try:
        held_sender, held_replies = _send_in_thread(server.endpoint, {"cmd": "decide-only", "on": True,
                                                                      "who": "tech-7"})
        assert _until(lambda: len(service._deferred) == 1), "the decide-only is held behind the open call"
        pend, pend_s = _timed(server.endpoint, {"cmd": "pending"})
        assert pend_s < PROMPT_S, f"pending answered after {pend_s:.2f} s"
        assert [c["roll_id"] for c in pend["calls"]] == [rid]
        assert held_sender.is_alive() and held_replies == []     # the held one still waits
        dec, dec_s = _timed(server.endpoint, {"cmd": "decide", "roll_id": rid, "void": True, "who": "ann"})
        assert dec_s < PROMPT_S, f"decide answered after {dec_s:.2f} s"
        assert dec["ok"] is True and dec["decision"]["outcome"] == "void"
        decided = pub.rolls()[-1]
        assert dec["committed"] == {"roll_id": decided["roll_id"], "published": True}
        assert (decided["verdict"], decided["decision"]["outcome"], decided["decision"]["call"]) == \
            ("no-roll", "void", rid)
        held = _reply(held_sender, held_replies)
    finally:
        ticker.stop()
    assert (held["ok"], held["applied"], held["on"], held["game"]["decide_only"]) == (True, "decide-only", True,
                                                                                       True)
    assert [b for b in service.store.verdicts(10) if (b.get("decision") or {}).get("call") == rid] == [decided]
    assert service.store.state.decide_only is True
    assert _until(lambda: server.waiting == [], 1.0)      # the list is updated once its replies are sent
    service.close()


def test_calls_expire_while_a_command_waits(tmp_path):
    """A call's deadline passes while another console's command waits for the service: the
    call is void by timeout then, not after that wait (``CallRegistry.expire`` runs at every
    turn of the socket's loop)."""
    reg = CallRegistry(60.0)
    reg.open("table-1-00000042", "face-unreadable", b"png", timeout_s=0.2)
    handoffs: list[Handoff] = []
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}", confirm_s=5.0,
                           table_command=lambda cmd, handoff, **d: handoffs.append(handoff)).start()
    try:
        sender, replies = _send_in_thread(server.endpoint, {"cmd": "stop", "who": "tech-7", "reason": "dome"})
        assert _until(lambda: len(handoffs) == 1)
        handoffs[0].take()                                    # taken, not finished: it waits
        assert _until(lambda: reg.decision("table-1-00000042") is not None, 2.0)
        assert reg.decision("table-1-00000042").outcome == "timeout" and sender.is_alive()
        handoffs[0].finish({"event": "stopped"})
        assert _reply(sender, replies) == {"ok": True, "stopped": {"event": "stopped"}}
    finally:
        server.close()


def test_requests_still_waiting_are_replied_at_close(tmp_path):
    """At ``close`` every held request gets its reply: a command the service holds is
    ``pending``/``held``, one it has not taken is withdrawn (``not applied``; the service then
    skips it), an answer not yet committed is ``pending`` (taken), one refused meanwhile is
    refused; none is left without a reply, and close does not wait out ``confirm_s``."""
    reg = CallRegistry(60.0)
    reg.open("table-1-00000042", "face-unreadable", b"png")
    handoffs: dict[str, Handoff] = {}
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}", confirm_s=30.0,
                           table_command=lambda cmd, handoff, **d: handoffs.setdefault(cmd, handoff)).start()
    ep = server.endpoint
    sent = {"decide-only": _send_in_thread(ep, {"cmd": "decide-only", "on": True, "who": "ann"}),
            "no-roll": _send_in_thread(ep, {"cmd": "no-roll", "reason": "improper-throw", "who": "sam"}),
            "stop": _send_in_thread(ep, {"cmd": "stop", "who": "tech-7", "reason": "dome"}),
            "decide": _send_in_thread(ep, {"cmd": "decide", "roll_id": "table-1-00000042", "void": True,
                                           "who": "ann"})}
    assert _until(lambda: len(handoffs) == 3 and reg.decision("table-1-00000042") is not None)
    assert _until(lambda: len(server.waiting) == 4)
    assert handoffs["decide-only"].hold("held until the throw in progress is decided")
    handoffs["stop"].refuse("the table service is stopping: not applied")
    t0 = time.monotonic()
    server.close()
    assert time.monotonic() - t0 < 5.0
    replies = {cmd: _reply(*s) for cmd, s in sent.items()}
    assert replies["decide-only"] == {
        "ok": False, "pending": True, "held": True, "on": True,
        "error": ("decide-only: not confirmed: the table service held until the throw in progress is decided; it "
                  "is applied then, or refused; the state message decide-only or a command-refused alarm say "
                  "which")}
    assert replies["no-roll"] == {"ok": False, "error": "no-roll not applied: the command socket closed before the "
                                                        "table service took it; nothing changed: send it again"}
    assert handoffs["no-roll"].state == WITHDRAWN and not handoffs["no-roll"].take()   # never applied
    assert replies["stop"] == {"ok": False, "error": "stop refused: the table service is stopping: not applied"}
    assert replies["decide"]["ok"] is False and replies["decide"]["pending"] is True
    assert replies["decide"]["error"].startswith("roll table-1-00000042: not confirmed: the table service did not "
                                                 "commit the answer to its state store before the command socket "
                                                 "closed. The call is closed")
    assert server.waiting == []


def test_the_waiting_requests_are_bounded_and_one_more_is_refused_with_nothing_applied(tmp_path):
    """With ``max_waiting`` requests held, one more that would wait is refused naming the
    bound before anything is taken or handed over (the call stays open, nothing posted);
    ``pending`` is still answered; once one is replied, there is room again."""
    reg = CallRegistry(60.0)
    reg.open("table-1-00000042", "face-unreadable", b"png")
    handoffs: list[tuple[str, Handoff]] = []
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}", confirm_s=30.0, max_waiting=2,
                           table_command=lambda cmd, handoff, **d: handoffs.append((cmd, handoff))).start()
    ep = server.endpoint
    try:
        first = _send_in_thread(ep, {"cmd": "stop", "who": "tech-7", "reason": "dome"})
        assert _until(lambda: len(server.waiting) == 1)
        second = _send_in_thread(ep, {"cmd": "decide-only", "on": True, "who": "ann"})
        assert _until(lambda: len(server.waiting) == 2)
        full = "2 requests already wait for the table service to confirm them on this command socket, the most it holds"
        assert send_command(ep, {"cmd": "decide", "roll_id": "table-1-00000042", "dice": [3, 4], "who": "ann"},
                            timeout_s=REPLY_S) == {"ok": False, "error": f"decide not taken: {full}; nothing "
                                                                         "applied: send it again"}
        assert [c.roll_id for c in reg.pending()] == ["table-1-00000042"]          # not taken
        assert send_command(ep, {"cmd": "no-roll", "reason": "improper-throw", "who": "sam"},
                            timeout_s=REPLY_S)["error"] == f"no-roll not taken: {full}; nothing applied: send it again"
        assert [cmd for cmd, _ in handoffs] == ["stop", "decide-only"]            # nothing more posted
        assert [c["roll_id"] for c in send_command(ep, {"cmd": "pending"}, timeout_s=REPLY_S)["calls"]] == \
            ["table-1-00000042"]
        assert send_command(ep, {"cmd": "decide", "roll_id": "nope", "void": True, "who": "ann"},
                            timeout_s=REPLY_S)["error"].startswith("decide not taken: 2 requests")
        handoffs[0][1].take()
        handoffs[0][1].finish({"event": "stopped"})
        assert _reply(*first) == {"ok": True, "stopped": {"event": "stopped"}}
        assert _until(lambda: len(server.waiting) == 1)
        third = _send_in_thread(ep, {"cmd": "decide", "roll_id": "table-1-00000042", "dice": [3, 4], "who": "ann"})
        assert _until(lambda: reg.decision("table-1-00000042") is not None)       # room again: taken
        reg.commits.settle("table-1-00000042", committed={"roll_id": "table-1-00000043", "published": True})
        assert _reply(*third)["committed"] == {"roll_id": "table-1-00000043", "published": True}
    finally:
        server.close()
    assert _reply(*second) == {"ok": False, "error": "decide-only not applied: the command socket closed before "
                                                     "the table service took it; nothing changed: send it again"}


def test_a_console_gone_while_its_command_waits_neither_blocks_nor_loses_the_command(tmp_path):
    """The console that sent a command closes before the reply: the command is applied once
    all the same, the reply to its gone routing id is dropped without raising or blocking, and
    the socket serves the next console."""
    reg = CallRegistry(60.0)
    handoffs: list[Handoff] = []
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}", confirm_s=5.0,
                           table_command=lambda cmd, handoff, **d: handoffs.append(handoff)).start()
    ctx = zmq.Context()
    try:
        req = ctx.socket(zmq.REQ)
        req.setsockopt(zmq.LINGER, 0)
        req.connect(server.endpoint)
        req.send(json.dumps({"cmd": "stop", "who": "tech-7", "reason": "dome"}).encode())
        assert _until(lambda: len(server.waiting) == 1)
        req.close(0)                                            # the console goes
        time.sleep(0.1)
        assert handoffs[0].take()
        handoffs[0].finish({"event": "stopped"})
        assert _until(lambda: server.waiting == [], 2.0)         # replied (dropped), not kept
        assert send_command(server.endpoint, {"cmd": "pending"}, timeout_s=REPLY_S) == {"ok": True, "calls": []}
        assert len(handoffs) == 1 and handoffs[0].state == DONE  # applied once, not again
        assert server._thread.is_alive()
    finally:
        ctx.destroy(linger=0)              # closes the test's sockets too, on a failure as well
        server.close()


def test_a_request_of_several_parts_is_refused_and_a_message_without_the_req_envelope_dropped(tmp_path):
    """A REQ console sending a two-part request gets an error naming it; a DEALER sending no
    empty delimiter (no REQ envelope) is dropped unanswered, as a REP socket drops it; the
    socket serves on."""
    reg = CallRegistry(60.0)
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}").start()
    ctx = zmq.Context()
    try:
        req = ctx.socket(zmq.REQ)
        req.setsockopt(zmq.LINGER, 0)
        req.connect(server.endpoint)
        req.send_multipart([b'{"cmd": "pending"}', b"more"])
        assert req.poll(int(REPLY_S * 1000))
        assert json.loads(req.recv()) == {"ok": False, "error": "a request is one message part (the JSON command), "
                                                                "got 2"}
        dealer = ctx.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(server.endpoint)
        dealer.send(b'{"cmd": "pending"}')
        assert not dealer.poll(300)
        assert send_command(server.endpoint, {"cmd": "pending"}, timeout_s=REPLY_S) == {"ok": True, "calls": []}
    finally:
        ctx.destroy(linger=0)              # closes the test's sockets too, on a failure as well
        server.close()


def test_handoff_and_commit_checks_do_not_block():
    """``Handoff.check`` gives what ``wait`` would at the same elapsed time, without waiting;
    ``CommitWaits.check`` is ``None`` until the answer is settled."""
    h = Handoff()
    assert h.check(0.5, 1.0) is None                      # queued, within the bound
    assert h.check(1.0, 1.0) == WITHDRAWN and not h.take()
    held = Handoff()
    assert held.hold("until decided") and held.check(1.5, 1.0) is None     # held: a second bound
    assert held.check(2.0, 1.0) == HELD and held.state == HELD             # not withdrawn
    taken = Handoff()
    assert taken.take() and taken.check(2.0, 1.0, taken_s=0.5) == TAKEN
    taken.finish({"applied": "x"})
    assert taken.check(0.0, 1.0) == DONE
    refused = Handoff()
    refused.refuse("no")
    assert refused.check(0.0, 1.0) == REFUSED
    assert Handoff().check(float("inf"), 1.0) == WITHDRAWN
    assert Handoff().state == QUEUED
    waits = CommitWaits()
    assert waits.check("r1") == (PENDING, None)           # no answer expected on it
    waits.expect("r1")
    assert waits.check("r1") is None
    waits.settle("r1", committed={"roll_id": "r2", "published": True})
    assert waits.check("r1") == (COMMITTED, {"roll_id": "r2", "published": True})
    waits.expect("r3")
    waits.release()
    assert waits.check("r3") == (PENDING, None)
