"""The boxperson's answer is replied ``ok: true`` only once the table service has committed it
(controller/boxperson.py ``CommandServer(confirm_s=...)``, controller/handoff.py). Before, the
command socket replied ``ok`` as soon as the registry took the answer; the service committed it
at its next frame or tick, so a crash in between lost an answer the boxperson had been told was
done (the call reopened at the restart), and an answer the service then found stale was dropped
after an ``ok``.

The service is driven from the test's thread (``tick``, frames), the answer from another
thread over ``ipc://``; a subprocess is killed with SIGKILL right after its ``ok``. Every loop
is bounded in count, every wait in time.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from controller.boxperson import CommandServer, DecisionError, send_command
from list_publisher import ListPublisher
from test_controller_service import _observer_service, run_throws

import pytest

UNREADABLE = [(2, 100, 100), (0, 200, 120)]   # one face unreadable: a boxperson call
REPLY_S = 10.0
TESTS = Path(__file__).resolve().parent


def _answer_in_thread(server: CommandServer, roll_id: str, dice=(2, 5)) -> tuple[threading.Thread, list]:
    replies: list[dict] = []
    request = {"cmd": "decide", "roll_id": roll_id, "dice": list(dice), "who": "ann"}
    sender = threading.Thread(target=lambda: replies.append(send_command(server.endpoint, request,
                                                                         timeout_s=REPLY_S)))
    sender.start()
    return sender, replies


def _until(predicate, seconds: float = REPLY_S) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def _setup(tmp_path, confirm_s: float):
    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub)
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}", table_command=service.post, confirm_s=confirm_s).start()
    service.closers.append(server.close)
    bodies, _ = run_throws(service, [UNREADABLE])
    assert bodies[0]["verdict"] == "boxperson"
    return pub, service, reg, server, bodies[0]["roll_id"]


def _decided_in_store(service, call_id: str) -> list[dict]:
    return [b for b in service.store.verdicts(10) if (b.get("decision") or {}).get("call") == call_id]


def test_the_reply_waits_for_the_commit(tmp_path):
    """The answer is taken (the call closed) while the service is between two ticks: no reply
    comes until the service has committed the decision's verdict; then ``ok`` with the
    committed roll id, which the store holds and the bus carries."""
    pub, service, reg, server, rid = _setup(tmp_path, confirm_s=5.0)
    sender, replies = _answer_in_thread(server, rid)
    assert _until(lambda: reg.decision(rid) is not None), "the registry took the answer"
    sender.join(0.5)                       # the service does not run: nothing is committed
    assert _decided_in_store(service, rid) == []
    assert sender.is_alive() and replies == [], f"replied before the commit: {replies}"
    for _ in range(500):
        service.tick()
        sender.join(0.01)
        if not sender.is_alive():
            break
    (reply,) = replies
    (decided,) = _decided_in_store(service, rid)
    assert reply["ok"] is True and reply["committed"] == {"roll_id": decided["roll_id"], "published": True}
    assert (decided["verdict"], decided["dice"], decided["decision"]["who"]) == ("roll", [2, 5], "ann")
    assert pub.rolls()[-1] == decided
    service.close()


def test_not_confirmed_in_time_is_pending_never_ok(tmp_path):
    """The service does not run within ``confirm_s``: the reply is ``ok: false`` with
    ``pending: true`` naming that the table did not confirm; the answer (the call is closed) is
    applied when the service runs again, as the reply says."""
    pub, service, reg, server, rid = _setup(tmp_path, confirm_s=0.3)
    sender, replies = _answer_in_thread(server, rid)
    sender.join(REPLY_S)
    (reply,) = replies
    assert reply["ok"] is False and reply["pending"] is True
    assert reply["error"].startswith(f"roll {rid}: not confirmed: the table service did not commit the answer to "
                                     "its state store within 0.3 s")
    assert _decided_in_store(service, rid) == []
    service.tick()
    (decided,) = _decided_in_store(service, rid)
    assert decided["dice"] == [2, 5] and pub.rolls()[-1] == decided
    service.close()


def test_an_answer_the_service_finds_stale_is_refused_not_ok(tmp_path):
    """With a round driver: the answer is taken, then the table stops before the service
    applies it (the round no longer waits on the call). Before: ``ok: true`` and then dropped
    as a ``stale-decision``; now the reply says it was not applied, naming why."""
    from test_rounds_driver_faults import _automated_rig, _throw_to_a_boxperson_call

    pub = ListPublisher()
    service, reg = _observer_service(tmp_path, pub)
    drv, throws, frame = _automated_rig(service)
    server = CommandServer(reg, f"ipc://{tmp_path / 'cmd'}", table_command=service.post, confirm_s=5.0).start()
    service.closers.append(server.close)
    service.start()
    _throw_to_a_boxperson_call(throws, frame)
    call = service.store.verdicts(1)[-1]
    assert call["verdict"] == "boxperson"
    sender, replies = _answer_in_thread(server, call["roll_id"], dice=(6, 1))
    assert _until(lambda: reg.decision(call["roll_id"]) is not None)
    drv.cycle.stop("technician: test")                              # before the service applies it
    frame([(0, 100, 100), (4, 160, 100)])
    sender.join(REPLY_S)
    (reply,) = replies
    assert reply["ok"] is False and reply["error"].startswith(
        f"roll {call['roll_id']}: the answer was taken but not applied: decision on {call['roll_id']} after a "
        "newer verdict, or on a call the round no longer waits on (stale-decision)")
    assert [r["verdict"] for r in pub.rolls()] == ["boxperson"]
    service.close()


def test_close_commits_the_answers_taken_then_refuses_answers(tmp_path):
    """``close()`` takes no more answers, then commits those taken (their replies ``ok``) before
    it closes the command socket; the restart finds the decision committed, no call reopened.
    Before, an answer taken after the last tick was dropped at close."""
    pub, service, reg, server, rid = _setup(tmp_path, confirm_s=5.0)
    sender, replies = _answer_in_thread(server, rid)
    assert _until(lambda: reg.decision(rid) is not None)
    service.close()
    sender.join(REPLY_S)
    (reply,) = replies
    assert reply["ok"] is True and reply["committed"]["published"] is True
    assert pub.rolls()[-1]["decision"]["call"] == rid
    reg.open("t-test-99999999", "face-unreadable", b"png")
    with pytest.raises(DecisionError, match="answer not taken: the table service is stopping"):
        reg.answer("t-test-99999999", who="ann", void=True)
    service2, reg2 = _observer_service(tmp_path, ListPublisher())
    service2.start()
    assert reg2.pending() == [] and [d["dice"] for d in _decided_in_store(service2, rid)] == [[2, 5]]
    service2.close()


CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from list_publisher import ListPublisher
from controller.config import TableConfig
from controller.lamps import NullLampDriver
from controller.service_cli import build_service
from test_controller_service import fake_reader, run_throws

tmp = sys.argv[1]
cfg = TableConfig.model_validate({
    "table": {"id": "t-test"}, "vision": {"still_frames": 5, "still_s": 0.0, "rest_timeout_s": 2.0},
    "lamps": {"driver": "none"}, "state": {"db": tmp + "/state.sqlite"},
    "bus": {"journal_path": tmp + "/bus/journal.sqlite"}, "boxperson": {"endpoint": "ipc://" + tmp + "/box"}})
service, _ = build_service(cfg, None, publisher=ListPublisher(), lamp_driver=NullLampDriver(), reader=fake_reader)
bodies, _ = run_throws(service, [[(2, 100, 100), (0, 200, 120)]])
print(json.dumps({"call": bodies[0]["roll_id"]}), flush=True)
for _ in range(200):          # the service loop, slow: one tick every 0.3 s, at most 60 s
    time.sleep(0.3)
    service.tick()
"""


def test_an_answer_replied_ok_survives_a_sigkill_right_after(tmp_path):
    """A real table service (``build_service``: its command socket waits ``CONFIRM_S``) in a
    subprocess ticking every 0.3 s: the answer's ``ok`` comes after the commit, so SIGKILL at
    once after it leaves the decision in the state store; the restarted service opens no call
    again. Before: the ``ok`` came before the next tick and the kill lost the answer."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path), str(TESTS)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=str(TESTS.parent))
    try:
        line = child.stdout.readline()       # bounded: the child prints within seconds or exits
        assert line, child.stderr.read()[-2000:]
        rid = json.loads(line)["call"]
        reply = send_command(f"ipc://{tmp_path / 'box'}", {"cmd": "decide", "roll_id": rid, "dice": [2, 5],
                                                           "who": "ann"}, timeout_s=REPLY_S)
        child.send_signal(signal.SIGKILL)
        child.wait(REPLY_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(REPLY_S)
        child.stdout.close()
        child.stderr.close()
    assert reply["ok"] is True, reply
    service, reg = _observer_service(tmp_path, ListPublisher())
    service.start()
    (decided,) = _decided_in_store(service, rid)
    assert reply["committed"]["roll_id"] == decided["roll_id"] and decided["dice"] == [2, 5]
    assert reg.pending() == []
    service.close()
