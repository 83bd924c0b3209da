"""A shaker "done" is tied to the SHAKER command it answers (docs/firmware-protocol.md 4.9,
controller/automation.py): the event carries the command's frame seq (``cmd_seq``), and a done
that answers no outstanding command (a late one from an earlier shake, one replayed after a
link reset or resent by the MCU, one naming no command) never ends the current shake."""
from __future__ import annotations

import re
import time

import pytest

from controller.automation import FirmwareShaker, RoundDriver
from controller.rounds import RoundCycle, RoundsConfig
from firmware_bridge.config import BridgeConfig
from firmware_bridge.events import EventQueue
from firmware_bridge.link import FirmwareLink
from firmware_bridge.mcu_sim import ALL_CAPABILITIES, SimulatedMcu
from firmware_bridge.protocol import (Capability, InputEvent, InputId, ProtocolError, Received, Rejected, Shaker,
                                      ShakerAction, ShakerResult, decode_one, encode_frame, encode_raw)
from firmware_bridge.soak import PTY_TIMING

#: a shake long enough for the test to send stray "done" events while it runs
CFG = RoundsConfig(bets_open_s=0, min_round_s=0, results_s=0, shake_ms=1500, shaker_done_timeout_s=5.0,
                   no_motion_s=600, throw_timeout_s=60)


class _Lifecycle:
    phase = "waiting"

    def arm(self):
        pass


def _link(mcu: SimulatedMcu) -> FirmwareLink:
    link = FirmwareLink(BridgeConfig(port=str(mcu.start()), exclusive=False, require_wall_sensor=False,
                                     **PTY_TIMING)).start()
    assert link.wait_up(5.0)
    return link


def _rig(link):
    """A round driver on a fake frame clock whose shaker is the microcontroller's (real link)."""
    clk, faults = {"t": 0.0}, []
    cyc = RoundCycle("T1", CFG, clock=lambda: clk["t"], publish=lambda body: None)
    holder = []
    shaker = FirmwareShaker(link, lambda *a: holder[0].shaker_done(*a))
    drv = RoundDriver(cyc, lifecycle=_Lifecycle(), shaker=shaker, wall=time.monotonic,
                      raise_fault=lambda where, msg: faults.append((where, msg)))
    holder.append(drv)
    return clk, drv, faults, shaker


def _frames_until(clk, drv, predicate, timeout_s: float) -> bool:
    """Frames every 10 ms (at most ``timeout_s`` of them) until ``predicate()``."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        drv.on_frame(clk["t"], False)
        if predicate():
            return True
        clk["t"] = round(clk["t"] + 0.01, 6)
        time.sleep(0.01)
    return bool(predicate())


def test_a_done_that_answers_no_outstanding_shaker_command_does_not_end_the_shake():
    mcu = SimulatedMcu(seed=5)
    link = _link(mcu)
    try:
        clk, drv, faults, shaker = _rig(link)
        drv.on_frame(0.0, False)                       # bets open, close (window 0), SHAKER
        assert drv.shaking and mcu.shaker_busy and drv.cycle.phase == "throw"
        # a "done" the MCU sends again naming no command (as every done looked before): the
        # shake it would end is still running, the next throw must not be released
        mcu.emit(InputId.SHAKER_DONE, int(ShakerAction.SHAKE), int(ShakerResult.COMPLETED))
        _frames_until(clk, drv, lambda: not drv.shaking or getattr(drv, "refused_dones", []), 1.0)
        assert drv.shaking, "a done naming no command ended the shake in progress"
        assert mcu.shaker_busy
        cmd = drv.shake_command
        assert isinstance(cmd, int) and cmd >= 1
        # a late done of an earlier command (seq cmd - 1): refused too, named
        mcu.emit(InputId.SHAKER_DONE, int(ShakerAction.SHAKE), int(ShakerResult.COMPLETED), cmd_seq=cmd - 1)
        _frames_until(clk, drv, lambda: len(drv.refused_dones) >= 2 or not drv.shaking, 1.0)
        assert drv.shaking and len(drv.refused_dones) == 2
        assert drv.refused_dones[0] == ("shaker 'done' completed of shake for command None refused: it answers "
                                        "no outstanding command (it names no command (firmware without "
                                        "SHAKER_DONE_SEQ?))")
        assert drv.refused_dones[1] == (f"shaker 'done' completed of shake for command {cmd - 1} refused: it "
                                        f"answers no outstanding command (the outstanding shake is command {cmd})")
        # the real done (1.5 s after the SHAKER) names the command and ends the shake
        assert _frames_until(clk, drv, lambda: not drv.shaking, 4.0)
        assert drv.shake_command is None and not mcu.shaker_busy
        assert not drv.cycle.stopped and faults == [] and len(drv.refused_dones) == 2
        # the same done replayed once more (a link reset, the MCU resending): no shake is
        # outstanding, refused
        mcu.emit(InputId.SHAKER_DONE, int(ShakerAction.SHAKE), int(ShakerResult.COMPLETED), cmd_seq=cmd)
        assert _frames_until(clk, drv, lambda: len(drv.refused_dones) == 3, 1.0)
        assert drv.refused_dones[2].endswith(f"for command {cmd} refused: it answers no outstanding command "
                                             f"(no shake is outstanding)")
        assert not drv.cycle.stopped and faults == []
        shaker.close()
    finally:
        link.close()
        mcu.stop()


def test_a_late_done_after_a_timeout_does_not_release_the_next_throw():
    """The shake of command A gets no done in time: the table stops; a technician resumes and
    the next round shakes with command B; then A's done arrives: it is refused, B's shake
    goes on, and B's own done ends it."""
    clk, faults, ids = {"t": 0.0}, [], iter([7, 8])

    class Port:
        def start(self, *a):
            return next(ids)

    cfg = RoundsConfig(bets_open_s=0, min_round_s=0, results_s=0, shake_ms=100, shaker_done_timeout_s=0.5,
                       no_motion_s=600, throw_timeout_s=60)
    cyc = RoundCycle("T1", cfg, clock=lambda: clk["t"], publish=lambda body: None)
    drv = RoundDriver(cyc, lifecycle=_Lifecycle(), shaker=Port(), wall=lambda: clk["t"],
                      raise_fault=lambda where, msg: faults.append((where, msg)))
    drv.on_frame(0.0, False)
    assert drv.shake_command == 7
    clk["t"] = 0.7
    drv.on_frame(0.7, False)                        # no done within 0.6 s
    assert cyc.stopped and faults == [("shaker", "no shaker 'done' for command 7 within 0.6 s")]
    drv.resume("tech")
    clk["t"] = 1.0
    drv.on_frame(1.0, False)                        # next round, command 8
    drv.on_frame(1.0, False)
    assert drv.shaking and drv.shake_command == 8 and cyc.phase == "throw"
    drv.shaker_done("completed", "shake", 7)        # A's done, late
    drv.on_frame(1.05, False)
    assert drv.shaking and drv.shake_command == 8
    assert drv.refused_dones == ["shaker 'done' completed of shake for command 7 refused: it answers no "
                                 "outstanding command (the outstanding shake is command 8)"]
    drv.shaker_done("completed", "shake", 8)
    drv.on_frame(1.1, False)
    assert not drv.shaking and drv.shake_command is None and len(faults) == 1


def test_the_simulated_mcu_names_the_command_in_every_done():
    mcu = SimulatedMcu(seed=6)
    link = _link(mcu)
    events = EventQueue(link, inputs={InputId.SHAKER_DONE})
    try:
        a = link.send_command(Shaker(ShakerAction.SHAKE, 30, 10)).seq
        ev = events.get(2.0)
        assert (ev.value, ev.detail, ev.cmd_seq) == (int(ShakerAction.SHAKE), int(ShakerResult.COMPLETED), a)
        b = link.send_command(Shaker(ShakerAction.BLOW, 5000, 10)).seq
        stop = link.send_command(Shaker(ShakerAction.STOP, 0, 0)).seq
        ev = events.get(2.0)                         # STOPPED names the BLOW, not the STOP
        assert (ev.value, ev.detail, ev.cmd_seq) == (int(ShakerAction.BLOW), int(ShakerResult.STOPPED), b)
        assert stop == b + 1
    finally:
        link.close()
        mcu.stop()


def test_a_new_host_session_stops_a_shake_the_previous_host_started():
    """A host process that restarts faster than the MCU's host timeout: the MCU stops the shake
    the old process commanded and sends no done for it (docs 5.4)."""
    mcu = SimulatedMcu(seed=7)
    path = mcu.start()
    cfg = BridgeConfig(port=str(path), exclusive=False, require_wall_sensor=False, **PTY_TIMING)
    old = FirmwareLink(cfg, session_id=0x1111).start()
    try:
        assert old.wait_up(5.0)
        old.send_command(Shaker(ShakerAction.SHAKE, 5000, 10))
        assert mcu.shaker_busy
    finally:
        old.close()
    new = FirmwareLink(cfg, session_id=0x2222).start()
    events = EventQueue(new, inputs={InputId.SHAKER_DONE})
    try:
        assert new.wait_up(5.0)
        assert mcu.wait_until(lambda: not mcu.shaker_busy, 1.0)
        assert events.get(0.3) is None
    finally:
        new.close()
        mcu.stop()


def test_firmware_whose_done_names_no_command_is_never_sent_a_shaker():
    mcu = SimulatedMcu(seed=8, capabilities=ALL_CAPABILITIES & ~Capability.SHAKER_DONE_SEQ)
    link = _link(mcu)
    try:
        clk, drv, faults, _ = _rig(link)
        drv.on_frame(0.0, False)
        assert drv.cycle.stopped and not drv.shaking and not mcu.shaker_busy
        assert not any(isinstance(e.message, Shaker) for e in mcu.executed)
        assert len(faults) == 1 and faults[0][0] == "shaker"
        assert faults[0][1] == ("shaker command failed: the microcontroller (firmware 1.0.0, capabilities 0x3F) "
                                "does not name the SHAKER command in its SHAKER_DONE (capability "
                                "SHAKER_DONE_SEQ 0x40, docs/firmware-protocol.md 4.9): no SHAKER sent; "
                                "update the firmware")
        # such firmware's done (8 bytes) reaches the host without a command
        events = EventQueue(link, inputs={InputId.SHAKER_DONE})
        link.send_command(Shaker(ShakerAction.SHAKE, 20, 10))
        ev = events.get(2.0)
        assert ev is not None and ev.cmd_seq is None and ev.detail == int(ShakerResult.COMPLETED)
    finally:
        link.close()
        mcu.stop()


def test_input_event_cmd_seq_codec():
    ev = InputEvent(InputId.SHAKER_DONE, 1, 0x000A1B2C, 0, 3)
    assert len(ev.payload()) == 10
    assert decode_one(encode_frame(ev, 12)[:-1]) == Received(12, ev)
    assert len(InputEvent(InputId.SHAKER_DONE, 1, 5, 0).payload()) == 8
    with pytest.raises(ProtocolError, match="only SHAKER_DONE carries cmd_seq, not FAR_WALL_STRIKE"):
        InputEvent(InputId.FAR_WALL_STRIKE, 1, 5, 0, 3)
    with pytest.raises(ProtocolError, match=r"cmd_seq must be 1..65535 \(the seq of a SHAKER\), got 0"):
        InputEvent(InputId.SHAKER_DONE, 1, 5, 0, 0)
    # on the wire: a 10-byte strike, a cmd_seq of 0, a 9-byte payload are refused (BAD_PAYLOAD)
    for payload, why in ((bytes([1, 1, 0, 0, 0, 0, 0, 0, 3, 0]), "only SHAKER_DONE carries cmd_seq"),
                         (bytes([3, 1, 0, 0, 0, 0, 0, 0, 0, 0]), "cmd_seq must be 1..65535"),
                         (bytes([3, 1, 0, 0, 0, 0, 0, 0, 3]), "must be 8 bytes \\(10 for SHAKER_DONE")):
        out = decode_one(encode_raw(1, 0x40, 5, payload)[:-1])
        assert isinstance(out, Rejected) and out.reason.name == "BAD_PAYLOAD"
        assert re.search(why, out.detail), out.detail
