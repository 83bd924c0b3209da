"""A rig technician's ``stop`` and ``resume`` over the table's command socket (controller/
boxperson.py, controller/table_commands.py, controller/automation.py). Before, a stopped
automated table (a shaker jam, ``restart-during-throw``, ...) could be cleared only by
restarting the service, and the ``resumed`` round event that settlement's round gate uses to
return the abandoned round's wagers was never published in production: the socket had no such
command (``unknown cmd``).

The service is driven from the test's thread (synthetic frames, ``tick``), the command from
another thread over ``ipc://``; every loop is bounded in count, every wait in time.
"""
from __future__ import annotations

import threading
import time

from controller.automation import attach_rounds
from controller.boxperson import CallRegistry, CommandServer, handle_request, send_command
from controller.cli import main as cli_main
from controller.health import HealthConfig, HealthMonitor
from list_publisher import ListPublisher
from test_controller_service import make_service
from test_rounds_driver_faults import _automated_rig

REPLY_S = 10.0


def _server(tmp_path, service, confirm_s=5.0) -> CommandServer:
    server = CommandServer(CallRegistry(60.0), f"ipc://{tmp_path / 'cmd'}", table_command=service.post,
                           confirm_s=confirm_s).start()
    service.closers.append(server.close)
    return server


def _command(server, request: dict, step, steps: int = 400) -> dict:
    """``request`` sent from another thread while this thread runs the service's loop (``step``:
    a tick or a frame, at most ``steps`` of them); the table's reply."""
    replies: list[dict] = []
    sender = threading.Thread(target=lambda: replies.append(send_command(server.endpoint, request,
                                                                         timeout_s=REPLY_S)))
    sender.start()
    for _ in range(steps):
        step()
        sender.join(0.01)
        if not sender.is_alive():
            break
    sender.join(REPLY_S)
    assert replies, f"no reply to {request}"
    return replies[0]


def _rounds(pub: ListPublisher) -> list[dict]:
    return [b for t, b in pub.sent if t == "round"]


def _alarms(pub: ListPublisher) -> list[dict]:
    return [b for t, b in pub.sent if t == "alarm"]


def test_stop_and_resume_over_the_command_socket(tmp_path):
    """stop: the round event ``stopped`` (cause names who and why), a fault alarm, no throw;
    resume: refused while the table is not stopped, and while the open round would be
    abandoned without ``abandon``; with it ``resumed`` names who, the round abandoned and the
    cause cleared, the fault lamp goes out and the next round opens."""
    pub = ListPublisher()
    svc = make_service(tmp_path, pub)
    drv, throws, frame = _automated_rig(svc)
    server = _server(tmp_path, svc)
    svc.start()
    for _ in range(2):
        frame([])
    assert drv.cycle.phase == "bets-open"
    round1 = drv.cycle.round.round_id

    reply = _command(server, {"cmd": "resume", "who": "tech-7"}, svc.tick)
    assert reply == {"ok": False, "error": "resume refused: the table is not stopped (round phase bets-open): "
                                          "nothing to resume"}
    reply = _command(server, {"cmd": "stop", "who": "tech-7", "reason": "dome open"}, svc.tick)
    assert reply["ok"] is True
    stopped = reply["stopped"]
    assert (stopped["event"], stopped["round_id"], stopped["cause"], stopped["technician"]) == (
        "stopped", round1, "technician-stop: stopped by tech-7: dome open", True)
    assert _rounds(pub)[-1] == stopped
    assert "technician-stop-fault" in [a["code"] for a in _alarms(pub)]
    reply = _command(server, {"cmd": "stop", "who": "tech-7", "reason": "again"}, svc.tick)
    assert reply["ok"] is False and reply["error"].startswith("stop refused: the table is already stopped")

    for _ in range(60):                                   # 2 s of table time: no throw, no round
        frame([])
    assert throws == [] and drv.cycle.stopped and svc.lamps.driver.modes["fault"] == "on"
    assert svc.lamps.driver.modes["bets-closed"] == "on"

    reply = _command(server, {"cmd": "resume", "who": "tech-7"}, svc.tick)
    assert reply["ok"] is False and reply["error"] == (
        f"resume refused: round {round1} has no result: resuming abandons it (settlement returns its wagers; "
        "no throw decides it): confirm with abandon (craps-table resume --abandon)")
    assert drv.cycle.stopped
    reply = _command(server, {"cmd": "resume", "who": "tech-7", "abandon": True}, svc.tick)
    assert reply["ok"] is True
    resumed = reply["resumed"]
    assert (resumed["event"], resumed["who"], resumed["abandoned"], resumed["cleared"], resumed["console"]) == (
        "resumed", "tech-7", round1, "technician-stop: stopped by tech-7: dome open", None)
    assert _rounds(pub)[-1] == resumed
    for _ in range(3):
        frame([])
    assert drv.cycle.phase == "bets-open" and drv.cycle.round.round_id != round1
    assert svc.lamps.driver.modes["fault"] == "off"
    refused = [a["message"] for a in _alarms(pub) if a["code"] == "command-refused"]
    assert [m.split(":")[0] for m in refused] == ["resume by tech-7", "stop by tech-7", "resume by tech-7"]
    svc.close()


def test_resume_is_refused_while_the_camera_is_still_lost(tmp_path):
    """The cause of the stop still present (the table's safe state: no frame, ``camera-lost``):
    the resume is refused naming it; once the camera is back and the safe state left, it is
    applied."""
    pub = ListPublisher()
    svc = make_service(tmp_path, pub)
    drv, throws, frame = _automated_rig(svc)
    server = _server(tmp_path, svc)
    svc.start()
    frame([])
    frames = [0]
    # the service's own clock (time.monotonic: it also reports the bus to the monitor)
    svc.health = HealthMonitor(HealthConfig(require_bridge=False, require_bus=False, frozen_after_s=None,
                                            dark_below=None, blinded_above=None))

    def tick(camera: bool) -> None:
        time.sleep(0.02)
        if camera:
            frames[0] += 1
            svc.health.frame(time.monotonic(), f"frame-{frames[0]}")
        svc.tick()

    assert _command(server, {"cmd": "stop", "who": "tech-7", "reason": "shaker jam"}, lambda: tick(True))["ok"]
    for _ in range(100):                                  # no frame for 0.5 s: camera-lost
        tick(False)
        if svc.safe_state:
            break
    assert svc.safe_state and "camera-lost" in svc.health_status.reasons
    reply = _command(server, {"cmd": "resume", "who": "tech-7", "abandon": True}, lambda: tick(False))
    assert reply["ok"] is False
    assert reply["error"].startswith("resume refused: the cause of the stop is still present: the table is in its "
                                     "safe state: camera-lost (")
    assert reply["error"].endswith("(stopped: technician-stop: stopped by tech-7: shaker jam)")
    assert drv.cycle.stopped and [b["event"] for b in _rounds(pub)].count("resumed") == 0
    for _ in range(200):                                  # the camera is back (0.5 s to recover)
        tick(True)
        if not svc.safe_state:
            break
    assert not svc.safe_state
    reply = _command(server, {"cmd": "resume", "who": "tech-7", "abandon": True}, lambda: tick(True))
    assert reply["ok"] is True and reply["resumed"]["cleared"] == "technician-stop: stopped by tech-7: shaker jam"
    assert not drv.cycle.stopped
    svc.close()


def test_restart_during_throw_is_cleared_by_a_resume_without_restarting(tmp_path):
    """The service killed while the shaker ran starts stopped (``restart-during-throw``); the
    technician's resume clears it in the running service: ``resumed`` (no round to abandon:
    the stop came before any round), and the rig opens a round and throws again."""
    from camera.base import Frame
    from test_controller_service import scene_image
    from test_rounds_ids import CFG, _CountingShaker

    first = make_service(tmp_path, ListPublisher())
    drv1 = attach_rounds(first, CFG, mode="automated", shaker=_CountingShaker(), wall=lambda: first._now,
                         prefix="T1-R")
    first.start()
    for k in range(12):                                   # bets open 0.3 s, then the SHAKER
        first.process(Frame(scene_image([]), k / 30, k))
    assert drv1.shaking
    first.store.close()                                   # killed: nothing cleared

    pub, shaker = ListPublisher(), _CountingShaker()
    svc = make_service(tmp_path, pub)
    drv = attach_rounds(svc, CFG, mode="automated", shaker=shaker, wall=lambda: svc._now, prefix="T1-R")
    server = _server(tmp_path, svc)
    svc.start()
    k = [0]

    def frame() -> None:
        svc.process(Frame(scene_image([]), k[0] / 30, k[0]))
        k[0] += 1

    for _ in range(5):
        frame()
    assert drv.cycle.stopped and drv.cycle.stop_cause.startswith("restart-during-throw")
    reply = _command(server, {"cmd": "resume", "who": "tech-7"}, svc.tick)
    assert reply["ok"] is True
    assert (reply["resumed"]["abandoned"], reply["resumed"]["cleared"].split(":")[0]) == (None, "restart-during-throw")
    for _ in range(15):
        frame()
    assert [b["event"] for b in _rounds(pub)][:5] == ["stopped", "resumed", "bets-open", "no-more-bets", "throw"]
    assert shaker.starts == 1 and not drv.cycle.stopped
    svc.close()


def test_a_command_the_service_did_not_take_in_time_is_withdrawn_never_applied(tmp_path):
    """No frame nor tick while the command waits (the service busy or hung): the reply says it
    was not applied, and it is not applied when the service runs again (skipped)."""
    pub = ListPublisher()
    svc = make_service(tmp_path, pub)
    drv, throws, frame = _automated_rig(svc)
    server = _server(tmp_path, svc, confirm_s=0.3)
    svc.start()
    frame([])
    reply = _command(server, {"cmd": "stop", "who": "tech-7", "reason": "check"}, lambda: None, steps=1)
    assert reply == {"ok": False, "error": "stop not applied: the table service did not take it within 0.3 s "
                                          "(busy, or not running); nothing changed: send it again"}
    for _ in range(3):
        svc.tick()
        frame([])
    assert not drv.cycle.stopped and "stopped" not in [b["event"] for b in _rounds(pub)]
    svc.close()


def test_stop_and_resume_from_the_command_line(tmp_path, capsys):
    """``craps-table stop`` / ``craps-table resume``: exit 0 with the round event printed, 1
    refused (reason on stderr), 2 bad arguments."""
    import json

    pub = ListPublisher()
    svc = make_service(tmp_path, pub)
    drv, throws, frame = _automated_rig(svc)
    server = _server(tmp_path, svc)
    svc.start()
    frame([])

    def cli(*argv: str) -> int:
        status: list[int] = []
        command = threading.Thread(target=lambda: status.append(cli_main([*argv, "--endpoint", server.endpoint])))
        command.start()
        for _ in range(400):
            svc.tick()
            command.join(0.01)
            if not command.is_alive():
                break
        command.join(REPLY_S)
        return status[0]

    assert cli("stop", "--who", "tech-7", "--reason", "dome open") == 0
    assert json.loads(capsys.readouterr().out)["stopped"]["cause"] == "technician-stop: stopped by tech-7: dome open"
    assert cli("resume", "--who", "tech-7") == 1
    err = capsys.readouterr().err
    assert "craps-table resume: refused: resume refused: round" in err and "confirm with abandon" in err
    assert cli("resume", "--who", "tech-7", "--abandon") == 0
    assert json.loads(capsys.readouterr().out)["resumed"]["who"] == "tech-7"
    assert cli_main(["resume", "--endpoint", server.endpoint]) == 2          # no --who
    assert cli_main(["stop", "--who", "tech-7", "--endpoint", server.endpoint]) == 2   # no --reason
    svc.close()


def test_technician_requests_are_checked_before_they_reach_the_table(tmp_path):
    """Bad input is named and nothing is posted; without rounds the service refuses both."""
    posted = []
    post = lambda e, **d: posted.append(e)   # noqa: E731
    reg = CallRegistry(60.0)
    for raw, says in [
        (b'{"cmd": "resume"}', "resume: who (the caller's name) is required"),
        (b'{"cmd": "resume", "who": "a\\nb"}', "resume: who: printable characters only"),
        (b'{"cmd": "resume", "who": "a", "abandon": "yes"}', "resume: abandon must be true or false, got 'yes'"),
        (b'{"cmd": "resume", "who": "a", "force": true}', "resume: unknown key(s) ['force']"),
        (b'{"cmd": "stop", "who": "a"}', "stop: reason (why the table stops, a few words) is required"),
        (b'{"cmd": "stop", "who": "a", "reason": "' + b"x" * 201 + b'"}', "stop: reason: at most 200 printable"),
    ]:
        reply = handle_request(reg, raw, post)
        assert reply["ok"] is False and reply["error"].startswith(says), (raw, reply)
    assert "not connected to a table service" in handle_request(reg, b'{"cmd": "stop", "who": "a", '
                                                                     b'"reason": "r"}')["error"]
    assert posted == []
    # a table without a round driver (--mode table): nothing to stop or resume
    pub = ListPublisher()
    svc = make_service(tmp_path, pub)
    server = _server(tmp_path, svc)
    svc.start()
    reply = _command(server, {"cmd": "stop", "who": "tech-7", "reason": "r"}, svc.tick)
    assert reply["ok"] is False and "this table runs no rounds" in reply["error"]
    svc.close()
