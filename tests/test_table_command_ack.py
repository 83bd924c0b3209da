"""The boxperson's ``decide-only`` and ``no-roll`` commands are replied ``ok`` only once the
table service has applied them (controller/boxperson.py ``_handed_over``, controller/handoff.py,
controller/table_commands.py). Before, the command socket replied ``{"ok": true, "queued": ...}``
as soon as it had put the command in the service's inbox: a no roll called when no throw was in
progress (9 NYCRR 5324.52(k)(3)), a ``decide-only`` while a point is on (5324.52(i)(2)), or a
command still queued when the service closed was told ``ok`` and then refused or dropped.

The interleaving is injected: the command is sent from another thread over ``ipc://``, the test
waits until it is in the service's inbox (``posts``), then runs the service's step (a tick, a
frame, ``close``) on its own thread. Every wait is bounded in time, every loop in count.
"""
from __future__ import annotations

import json
import queue
import threading

from controller.boxperson import CallRegistry, CommandServer, send_command
from controller.cli import main as cli_main
from controller.handoff import DONE, HELD, QUEUED, REFUSED, TAKEN, WITHDRAWN, Handoff
from controller.lifecycle import IN_MOTION
from list_publisher import ListPublisher
from test_controller_service import make_service, throw_frames

REPLY_S = 10.0
EIGHT = [(4, 100, 100), (4, 200, 120)]          # come-out 8: the point
EIGHT_AGAIN = [(5, 100, 100), (3, 200, 120)]    # the point made
SEVEN = [(3, 100, 100), (4, 200, 120)]
SIX = [(4, 100, 100), (2, 200, 120)]
IN_FLIGHT = 14                                  # throw_frames: frames 12..17 move


class Table:
    """A table service driven from the test's thread, its command socket on ``ipc://``."""

    def __init__(self, tmp_path, confirm_s: float = 5.0) -> None:
        self.pub = ListPublisher()
        self.svc = make_service(tmp_path, self.pub)
        self.posts: queue.Queue = queue.Queue()

        self._gate: threading.Event | None = None

        def post(event: str, **details) -> None:
            self.svc.post(event, **details)
            self.posts.put(event)
            gate = self._gate
            if gate is not None:        # the reply's wait starts only after the test's step
                assert gate.wait(REPLY_S), "the test did not release the command socket"

        self.server = CommandServer(CallRegistry(60.0), f"ipc://{tmp_path / 'cmd'}", table_command=post,
                                    confirm_s=confirm_s).start()
        self.svc.closers.append(self.server.close)
        self.svc.start()
        self.t, self.i = 0.0, 0
        self.bodies: list[dict] = []

    def throw(self, dice, frames: slice = slice(None)) -> list:
        """Process the frames of one throw (``frames``: only these); the rest are returned."""
        all_frames, self.t, self.i = throw_frames(dice, self.t, start_index=self.i)
        for f in all_frames[frames]:
            body = self.svc.process(f)
            if body is not None:
                self.bodies.append(body)
        return all_frames[frames.stop:] if frames.stop is not None else []

    def run(self, frames) -> None:
        for f in frames:
            body = self.svc.process(f)
            if body is not None:
                self.bodies.append(body)

    def send(self, request: dict, step=None) -> tuple[threading.Thread, list]:
        """``request`` sent from another thread; returns once it is in the service's inbox.
        ``step``: run on this thread then, before the command socket starts to wait for the
        service (the reply's bound cannot end first, however slow this thread is)."""
        self._gate = None if step is None else threading.Event()
        replies: list[dict] = []
        sender = threading.Thread(target=lambda: replies.append(send_command(self.server.endpoint, request,
                                                                             timeout_s=REPLY_S)))
        sender.start()
        assert self.posts.get(timeout=REPLY_S) == request["cmd"]
        if step is not None:
            step()
            self._gate.set()
        return sender, replies

    def cli(self, *argv: str, step=None) -> int:
        """``craps-table decide ARGV`` from another thread; ``step`` runs once it is posted."""
        self._gate = threading.Event()
        status: list[int] = []
        command = threading.Thread(target=lambda: status.append(cli_main(["decide", *argv, "--endpoint",
                                                                          self.server.endpoint])))
        command.start()
        self.posts.get(timeout=REPLY_S)
        (step or self.svc.tick)()
        self._gate.set()
        command.join(REPLY_S)
        assert status, f"no exit status from craps-table decide {argv}"
        return status[0]

    def alarms(self) -> list[dict]:
        return [b for topic, b in self.pub.sent if topic == "alarm"]

    def states(self) -> list[dict]:
        return [b for topic, b in self.pub.sent if topic == "state" and b.get("event") == "decide-only"]


def _reply(sender: threading.Thread, replies: list) -> dict:
    sender.join(REPLY_S)
    assert not sender.is_alive() and replies, "no reply"
    return replies[0]


def test_no_roll_applied_to_the_throw_in_progress_is_replied_ok_with_what_was_applied(tmp_path):
    """The call reaches the service while the dice move: replied ``ok`` only after the service
    recorded it, with the reason, who, the phase and the last verdict before the throw it
    applies to; that throw's verdict is the no roll (9 NYCRR 5324.52(k)(2)(vi), (k)(5)(i))."""
    table = Table(tmp_path)
    table.throw(EIGHT)
    assert [b["roll_id"] for b in table.bodies] == ["t-test-00000001"]
    rest = table.throw(SEVEN, slice(0, IN_FLIGHT))
    assert table.svc.lifecycle.phase == IN_MOTION
    sender, replies = table.send({"cmd": "no-roll", "reason": "improper-throw", "who": "sam"})
    sender.join(0.2)
    assert sender.is_alive() and replies == [], f"replied before the service applied it: {replies}"
    table.svc.tick()                                      # the service applies it
    assert _reply(sender, replies) == {"ok": True, "applied": "no-roll", "reason": "improper-throw", "who": "sam",
                                       "phase": "in-motion", "after_roll_id": "t-test-00000001"}
    table.run(rest)
    last = table.bodies[-1]
    assert (last["roll_id"], last["verdict"], last["reason"], last["dice"]) == (
        "t-test-00000002", "no-roll", "improper-throw", None)
    assert (last["called"]["who"], last["called"]["reason"]) == ("sam", "improper-throw")
    # and from the command line: exit 0, the applied reply printed
    rest = table.throw(SEVEN, slice(0, IN_FLIGHT))
    assert table.cli("--no-roll", "dice-not-simultaneous", "--who", "sam") == 0
    table.run(rest)
    assert table.bodies[-1]["reason"] == "dice-not-simultaneous"
    table.svc.close()


def test_no_roll_refused_by_the_service_is_replied_refused_naming_why(tmp_path, capsys):
    """No throw in progress (the dice at rest, the verdict published): the service refuses the
    call (9 NYCRR 5324.52(k)(3)); the reply says so. Before: ``{"ok": true, "queued": "no-roll"}``
    and only a ``command-refused`` alarm said otherwise."""
    table = Table(tmp_path)
    table.throw(EIGHT)
    sender, replies = table.send({"cmd": "no-roll", "reason": "improper-throw", "who": "sam"}, step=table.svc.tick)
    reply = _reply(sender, replies)
    assert reply["ok"] is False and set(reply) == {"ok", "error"}
    assert reply["error"].startswith("no-roll refused: no throw in progress (phase ")
    assert "called, whenever possible, before both dice come to rest, 9 NYCRR 5324.52(k)(3)" in reply["error"]
    assert table.alarms()[-1]["code"] == "command-refused"
    assert table.alarms()[-1]["message"] == "no-roll: " + reply["error"].removeprefix("no-roll refused: ")
    # the command line exits 1 naming the refusal
    capsys.readouterr()
    assert table.cli("--no-roll", "cheating-device", "--who", "sam") == 1
    err = capsys.readouterr().err
    assert "craps-table decide: refused: no-roll refused: no throw in progress" in err
    assert "does not undo a published roll" in err
    # nothing was called on the next throw
    table.throw(SEVEN)
    assert (table.bodies[-1]["verdict"], table.bodies[-1]["called"]) == ("roll", None)
    table.svc.close()


def test_decide_only_on_and_off_are_confirmed_with_the_game_applied(tmp_path, capsys):
    """9 NYCRR 5324.52(i)(2): refused while the point is on (reply and alarm name why); after
    the point is made, on and off are each replied with the game the service committed and
    published."""
    table = Table(tmp_path)
    table.throw(EIGHT)
    sender, replies = table.send({"cmd": "decide-only", "on": True, "who": "ann"}, step=table.svc.tick)
    reply = _reply(sender, replies)
    assert reply == {"ok": False, "error": "decide-only refused: rolls only to decide come/don't come wagers start "
                                          "after a decision, not while the point is 8 (9 NYCRR 5324.52(i)(2))"}
    assert table.alarms()[-1]["code"] == "command-refused" and table.states() == []
    table.throw(EIGHT_AGAIN)
    assert table.bodies[-1]["game"]["outcome"] == "point-made"
    capsys.readouterr()
    assert table.cli("--decide-only", "on", "--who", "ann") == 0
    out = capsys.readouterr()
    on = json.loads(out.out)
    assert (on["ok"], on["applied"], on["on"], on["game"]["decide_only"], on["game"]["point"]) == (
        True, "decide-only", True, True, None)
    assert out.err == ""
    assert table.states()[-1] == {"event": "decide-only", "on": True, "game": on["game"]}
    assert table.svc.store.state.decide_only is True
    sender, replies = table.send({"cmd": "decide-only", "on": False, "who": "ann"}, step=table.svc.tick)
    off = _reply(sender, replies)
    assert (off["ok"], off["applied"], off["on"], off["game"]["decide_only"]) == (True, "decide-only", False, False)
    assert table.states()[-1] == {"event": "decide-only", "on": False, "game": off["game"]}
    table.svc.close()


def test_decide_only_held_behind_the_throw_in_progress_is_pending_then_applied(tmp_path):
    """A ``decide-only`` that arrives while the dice move is held until that roll is decided
    (9 NYCRR 5324.52(i)(1)): not withdrawn when the reply's wait ends first, but replied
    ``pending``/``held``; it is applied after the verdict."""
    table = Table(tmp_path, confirm_s=0.5)
    table.throw(EIGHT)
    table.throw(EIGHT_AGAIN)
    sender, replies = table.send({"cmd": "decide-only", "on": True, "who": "ann"}, step=table.svc.tick)
    assert _reply(sender, replies)["applied"] == "decide-only"
    rest = table.throw(SIX, slice(0, IN_FLIGHT))
    sender, replies = table.send({"cmd": "decide-only", "on": False, "who": "ann"},
                                 step=table.svc.tick)     # held: the throw is in motion
    assert len(table.svc._deferred) == 1
    reply = _reply(sender, replies)
    assert (reply["ok"], reply["pending"], reply["held"], reply["on"]) == (False, True, True, False)
    assert reply["error"].startswith("decide-only: not confirmed: the table service held until the throw in "
                                     "progress is decided")
    assert table.svc.store.state.decide_only is True      # not applied yet
    table.run(rest)
    assert table.bodies[-1]["game"]["outcome"] == "decide-only"
    table.svc.tick()
    assert table.svc.store.state.decide_only is False and table.states()[-1]["on"] is False
    table.svc.close()


def test_a_command_the_service_does_not_take_in_time_is_withdrawn_and_never_applied(tmp_path):
    """The service neither ticks nor takes a frame while the reply waits: ``not applied ...
    send it again``; when it runs again the call is skipped, and the throw is a roll."""
    table = Table(tmp_path, confirm_s=0.3)
    rest = table.throw(SEVEN, slice(0, IN_FLIGHT))
    sender, replies = table.send({"cmd": "no-roll", "reason": "improper-throw", "who": "sam"})
    assert _reply(sender, replies) == {"ok": False, "error": "no-roll not applied: the table service did not take "
                                                            "it within 0.3 s (busy, or not running); nothing "
                                                            "changed: send it again"}
    table.run(rest)
    assert (table.bodies[-1]["verdict"], table.bodies[-1]["called"]) == ("roll", None)
    table.svc.close()


def test_service_close_refuses_a_command_still_queued(tmp_path):
    """A no-roll in the service's inbox when it closes is refused, and the waiting reply says
    so (before: replied ``ok``, ``queued``, and never applied); a command posted after that is
    refused at once."""
    table = Table(tmp_path)
    table.throw(SEVEN, slice(0, IN_FLIGHT))
    sender, replies = table.send({"cmd": "no-roll", "reason": "improper-throw", "who": "sam"})
    table.svc.close()
    assert _reply(sender, replies) == {"ok": False,
                                       "error": "no-roll refused: the table service is stopping: not applied"}
    late = Handoff()
    table.svc.post("no-roll", handoff=late, reason="improper-throw", who="sam", console=None)
    assert (late.wait(0.0), late.error) == (REFUSED, "the table service is stopping: not applied")
    assert table.svc._inbox.empty()


def test_service_close_refuses_a_decide_only_held_behind_the_throw(tmp_path):
    """A decide-only held until the throw in progress is decided when the service closes is
    refused (before, the held event was dropped without a word); the waiting reply says so."""
    table = Table(tmp_path)
    table.throw(EIGHT)
    table.throw(EIGHT_AGAIN)
    table.throw(SIX, slice(0, IN_FLIGHT))
    sender, replies = table.send({"cmd": "decide-only", "on": True, "who": "ann"}, step=table.svc.tick)
    assert len(table.svc._deferred) == 1
    table.svc.close()
    assert _reply(sender, replies) == {"ok": False,
                                       "error": "decide-only refused: the table service is stopping: not applied"}
    assert len(table.svc._deferred) == 0 and table.states() == []


def test_handoff_held_is_not_withdrawn_and_is_taken_later():
    h = Handoff()
    assert h.hold("until later") and h.state == HELD and h.held == "until later"
    assert h.wait(0.0, taken_s=0.0) == HELD              # the wait ends: held, not withdrawn
    assert h.take() and h.state == TAKEN
    h.finish({"applied": "x"})
    assert (h.wait(0.0), h.result) == (DONE, {"applied": "x"})
    gone = Handoff()
    assert gone.wait(0.0) == WITHDRAWN
    assert not gone.hold("too late") and not gone.take() and gone.state == WITHDRAWN
    assert Handoff().state == QUEUED
