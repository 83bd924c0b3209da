"""A boxperson answer racing the next throw's verdict (9 NYCRR 5324.52(h)(1)(ii)(a): the call
decides the throw it was made on). Every answer is either applied (published with the roll) or
refused naming why, never replied ``ok`` and then dropped; a call closed without an answer is
published. The interleavings are injected (a publisher hook, a paused ``on_decision``, a spy on
the registry's gate); every wait is bounded. In-process only."""
from __future__ import annotations

import json
import threading

import pytest

from camera.base import Frame
from controller.boxperson import CallRegistry, DecisionError, handle_request
from list_publisher import ListPublisher
from test_controller_service import _observer_service, run_throws, scene_image, throw_frames

UNREADABLE = [(2, 100, 100), (0, 200, 120)]  # one face unreadable: a boxperson call
SIX_SIX = [(6, 100, 100), (6, 200, 120)]     # the next throw: a valid 12
WAIT_S = 10.0


def _decide(roll_id: str, **what) -> bytes:
    return json.dumps({"cmd": "decide", "roll_id": roll_id, "who": "ann", **what}).encode()


def _alarms(pub: ListPublisher) -> list[dict]:
    return [b for tp, b in pub.sent if tp == "alarm"]


class HookedPublisher(ListPublisher):
    """Calls ``hook(body)`` when a roll message is published (after its commit, before the
    service tells the observer)."""

    hook = None

    def publish(self, topic, body):
        env = super().publish(topic, body)
        if topic == "roll" and self.hook is not None:
            self.hook(body)
        return env


def test_an_answer_while_the_next_verdict_is_committed_is_refused_not_dropped(tmp_path):
    """Before: the open call was superseded only after the next verdict was committed and
    published; an answer in between was taken (``ok: true``) and then dropped by the service
    as a ``stale-decision``. Now the call is closed (and published void, outcome
    ``superseded``) before the commit, and the answer is refused naming why."""
    pub = HookedPublisher()
    service, reg = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [UNREADABLE])
    call = bodies[0]
    replies = []

    def answer_during_the_throws_verdict(body):
        if body["verdict"] == "roll" and body["decision"] is None:
            pub.hook = None
            replies.append(handle_request(reg, _decide(call["roll_id"], dice=[2, 5])))

    pub.hook = answer_during_the_throws_verdict
    frames, t, _ = throw_frames(SIX_SIX, t, start_index=1000)
    for f in frames:
        service.process(f)
    service.process(Frame(scene_image(SIX_SIX), t, 2000))
    (reply,) = replies
    assert reply["ok"] is False and reply["error"].startswith(f"roll {call['roll_id']}: superseded: the table "
                                                              "decided a later throw before an answer")
    assert [(b["verdict"], b["reason"], (b["decision"] or {}).get("outcome")) for b in pub.rolls()] == [
        ("boxperson", "face-unreadable", None), ("no-roll", "boxperson-void", "superseded"), ("roll", None, None)]
    assert pub.rolls()[1]["decision"]["call"] == call["roll_id"] and pub.rolls()[2]["dice"] == [6, 6]
    assert _alarms(pub) == []
    service.close()


class GateSpy:
    """The registry's gate, telling (``event``) when ``thread`` starts waiting for it."""

    def __init__(self, gate, event: threading.Event) -> None:
        self.gate, self.event, self.thread = gate, event, None

    def __enter__(self):
        if threading.current_thread() is self.thread:
            self.event.set()
        return self.gate.__enter__()

    def __exit__(self, *exc):
        return self.gate.__exit__(*exc)


def test_an_answer_taken_as_the_next_throw_is_decided_is_published_before_it(tmp_path):
    """Before: the registry handed a decision to the service (``on_decision``) after releasing
    its lock; the service could decide the next throw in between (nothing pending to
    supersede, no decision yet to publish), so the answer, replied ``ok: true``, reached the
    service after the throw's verdict and was dropped as a ``stale-decision``. Now the service
    waits for the answer's step (the registry's gate) before it collects the decisions or
    closes the calls, and the decision is published on its call, before the throw's verdict.
    Injected: the answer pauses inside ``on_decision`` while the service thread decides the
    next throw."""
    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [UNREADABLE])
    rid = bodies[0]["roll_id"]
    entered, go, progressed = threading.Event(), threading.Event(), threading.Event()
    hand_over = reg.on_decision

    def paused_hand_over(d):
        entered.set()
        go.wait(WAIT_S)
        hand_over(d)

    reg.on_decision = paused_hand_over
    replies = []
    answering = threading.Thread(target=lambda: replies.append(handle_request(reg, _decide(rid, dice=[2, 5]))))
    answering.start()
    assert entered.wait(WAIT_S), "the answer reached on_decision"
    frames, t, _ = throw_frames(SIX_SIX, t, start_index=1000)

    def decide_the_next_throw():
        try:
            for f in frames:
                service.process(f)
        finally:
            progressed.set()

    deciding = threading.Thread(target=decide_the_next_throw)
    spy = GateSpy(reg._gate if hasattr(reg, "_gate") else threading.RLock(), progressed)
    spy.thread = deciding
    reg._gate = spy
    deciding.start()
    # the service either decided the throw (the old code) or waits for the answer's step
    assert progressed.wait(WAIT_S)
    go.set()
    answering.join(WAIT_S)
    deciding.join(WAIT_S)
    assert not answering.is_alive() and not deciding.is_alive()
    service.process(Frame(scene_image(SIX_SIX), t, 2000))   # the old code published the stale alarm here
    assert replies[0]["ok"] is True and replies[0]["decision"]["dice"] == [2, 5]
    _, decided, roll = pub.rolls()
    assert (decided["verdict"], decided["dice"], decided["decision"]["call"], decided["decision"]["who"]) == \
        ("roll", [2, 5], rid, "ann")
    assert (roll["verdict"], roll["dice"], roll["decision"]) == ("roll", [6, 6], None)
    assert _alarms(pub) == []
    assert service.store.state.rolls == 2
    service.close()


def test_supersede_closes_each_open_call_void_and_refuses_a_later_answer():
    """The registry alone: each open call gets a ``superseded`` decision (who ``superseded``,
    no dice, the latency from the call), handed to ``on_decision``; a call past its deadline
    is a timeout instead; ``superseded`` is reserved as a name."""
    now = {"t": 100.0}
    seen = []
    reg = CallRegistry(timeout_s=30.0, clock=lambda: now["t"], on_decision=seen.append)
    reg.open("t-1", "face-unreadable", b"png")
    now["t"] = 110.0
    reg.open("t-2", "die-on-die", b"png")
    now["t"] = 131.0   # t-1's deadline (130) passed, t-2's (140) not
    closed = reg.supersede()
    assert [(d.roll_id, d.outcome, d.who, d.dice, d.latency_s) for d in closed] == [
        ("t-2", "superseded", "superseded", None, 21.0)]
    assert [(d.roll_id, d.outcome) for d in seen] == [("t-1", "timeout"), ("t-2", "superseded")]
    assert reg.pending() == [] and reg.decision("t-2").void
    with pytest.raises(DecisionError, match="^roll t-2: superseded: the table decided a later throw before an answer"):
        reg.answer("t-2", who="ann", dice=[1, 2])
    reg.open("t-3", "face-unreadable", b"png")
    for name in ("superseded", "Superseded"):
        with pytest.raises(DecisionError, match="reserved for a call voided without an answer"):
            reg.answer("t-3", who=name, void=True)
    assert [c.roll_id for c in reg.pending()] == ["t-3"]


def test_an_answer_after_the_round_left_the_call_is_refused_not_dropped(tmp_path):
    """Before: with a round driver, after the table stopped (and a technician's resume abandoned
    the round) the call stayed open until the next verdict; an answer was replied ``ok: true``
    and then dropped as a ``stale-decision`` at the next frame. Now the call is closed at the
    end of the frame in which the round stopped waiting on it: the closing raises the alarm
    once, and an answer after it is refused naming why."""
    from test_controller_service import _observer_service
    from test_rounds_driver_faults import _automated_rig, _throw_to_a_boxperson_call

    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub)
    drv, throws, frame = _automated_rig(service)
    service.start()
    _throw_to_a_boxperson_call(throws, frame)
    call = service.store.verdicts(1)[-1]
    assert call["verdict"] == "boxperson" and [c.roll_id for c in reg.pending()] == [call["roll_id"]]
    drv.cycle.stop("technician: test")
    drv.resume("tech-7")
    frame([(0, 100, 100), (4, 160, 100)])
    assert reg.pending() == []
    reply = handle_request(reg, _decide(call["roll_id"], dice=[6, 1]))
    assert reply["ok"] is False and reply["error"].startswith(
        f"roll {call['roll_id']}: superseded: the round driver no longer waits on it")
    for _ in range(3):
        frame([(0, 100, 100), (4, 160, 100)])
    assert [r["verdict"] for r in pub.rolls()] == ["boxperson"]
    stale = [b for b in _alarms(pub) if b["code"] == "stale-decision-fault"]
    assert len(stale) == 1 and stale[0]["message"].startswith(f"call closed without an answer on {call['roll_id']}")
    service.close()


def test_an_answer_while_no_frame_comes_is_published_at_the_next_tick(tmp_path):
    """Before: decisions were published only when a frame was processed; while none came (a
    camera lost: ``run`` only ticks) an answer replied ``ok`` stayed in memory, and a stop
    meanwhile lost it (the call reopened at the restart). Now each tick publishes it."""
    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [UNREADABLE])
    rid = bodies[0]["roll_id"]
    assert handle_request(reg, _decide(rid, dice=[2, 5]))["ok"] is True
    service.tick()
    _, decided = pub.rolls()
    assert (decided["verdict"], decided["dice"], decided["decision"]["call"]) == ("roll", [2, 5], rid)
    assert decided["frame"] == bodies[0]["frame"] and decided["frame_sha256"] == bodies[0]["frame_sha256"]
    service.close()
    # the restart finds the call decided: nothing reopened, nothing to answer again
    service2, reg2 = _observer_service(tmp_path, ListPublisher())
    service2.start()
    assert reg2.pending() == [] and service2.store.state.rolls == 1
    service2.close()
