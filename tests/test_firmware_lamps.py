"""The firmware lamp driver against the simulated MCU over a pseudo-terminal: it never makes the
caller wait for the MCU, re-sends a lost update while the link stays up, and copes with an MCU
that has fewer lamps fitted."""
from __future__ import annotations

import logging
import threading
import time

import pytest

from controller.game import GameState
from controller.lamps import LampController
from firmware_bridge.lamps import FirmwareLampDriver
from firmware_bridge.link import CommandFailed, FirmwareLink
from firmware_bridge.mcu_sim import SimulatedMcu
from firmware_bridge.protocol import LampId, Shaker, ShakerAction

from test_firmware_link import fast_config

#: a call that does not wait for the MCU returns in microseconds; the old driver waited up to
#: its 0.25 s ACK timeout per lamp.  Generous for a loaded 2-core machine.
NO_WAIT_S = 0.1


@pytest.fixture
def mcu():
    sim = SimulatedMcu(seed=5, event_ack_timeout_s=0.02)
    sim.start()
    yield sim
    sim.stop()


@pytest.fixture
def link(mcu):
    lk = FirmwareLink(fast_config(mcu.path, link_timeout_s=1.0)).start()
    assert lk.wait_up(3.0), lk.status()
    yield lk
    lk.close()


def test_set_lamp_does_not_wait_for_an_mcu_that_never_answers(mcu, link):
    """The MCU's loop is frozen (it reads nothing, answers nothing): the lamp controller's update
    of three lamps returns at once, and the lamps reach the MCU once it answers again."""
    drv = FirmwareLampDriver(link)
    ctl = LampController(drv)
    ctl.update(GameState(), "idle", 0.0)
    time.sleep(0.2)                                   # the initial state is through
    with mcu.frozen():
        t0 = time.monotonic()
        changed = ctl.update(GameState(point=6), "idle", 1.0)        # point-6 and puck-on
        drv.set_lamp("fault", "flash", 0.5)
        took = time.monotonic() - t0
        assert set(changed) == {"point-6", "puck-on"}
        assert took < NO_WAIT_S, f"set_lamp waited {took:.3f} s for a silent MCU"
        assert mcu.lamp("point-6")[0] == "off"                          # nothing got through
        time.sleep(0.3)                                                 # the worker retries meanwhile
    assert mcu.wait_until(lambda: mcu.lamp("point-6") == ("on", 255) and mcu.lamp("puck-on") == ("on", 255)
                          and mcu.lamp("fault") == ("flash", 128), 5.0), mcu.lamps()
    assert drv.flush(3.0) and drv.pending() == []
    drv.close()


def test_an_update_lost_while_the_link_stays_up_is_sent_again(mcu, link):
    """Every byte to the MCU is lost for 0.4 s, longer than the driver's command timeout (0.1 s)
    and shorter than the link timeout (1 s): the seven-out's update fails, the link stays up,
    and the driver sends it again until the MCU has it (the old driver dropped it for good and
    point 6 stayed lit)."""
    drv = FirmwareLampDriver(link, timeout_s=0.1)
    ctl = LampController(drv)
    ctl.update(GameState(point=6), "idle", 0.0)
    assert mcu.wait_until(lambda: mcu.lamp("point-6") == ("on", 255), 3.0)
    time.sleep(0.1)                                   # nothing left in flight
    reconnects = link.stats().reconnects
    mcu.set_faults(drop_rate=1.0, direction="to-mcu")
    restore = threading.Timer(0.4, lambda: mcu.set_faults(drop_rate=0.0))
    restore.start()
    try:
        ctl.update(GameState(), "idle", 1.0)                            # seven-out
        time.sleep(0.25)
        assert drv.failures >= 1 and mcu.lamp("point-6") == ("on", 255)  # lost, not yet through
    finally:
        restore.join(2.0)
    assert mcu.wait_until(lambda: mcu.lamp("point-6")[0] == "off" and mcu.lamp("puck-on")[0] == "off", 5.0)
    assert link.up and link.stats().reconnects == reconnects           # the link never went down
    drv.close()


def test_an_update_refused_the_command_lock_is_sent_again(mcu, link):
    """A SHAKER waiting for a slow MCU holds the link's command lock longer than the driver's
    command timeout: the lamp update cannot even be sent, and is sent once the lock is free."""
    drv = FirmwareLampDriver(link, timeout_s=0.1)
    time.sleep(0.2)                                   # the initial state is through
    shaker_result: list = []

    def shake():
        try:
            shaker_result.append(link.send_command(Shaker(ShakerAction.SHAKE, 200, 100), timeout=0.6))
        except CommandFailed as exc:
            shaker_result.append(exc)

    mcu.set_faults(delay_s=0.35)              # every answer 350 ms late; the link stays up
    th = threading.Thread(target=shake)
    th.start()
    try:
        time.sleep(0.05)                      # the SHAKER holds the command lock
        drv.set_lamp("point-9", "on")
        time.sleep(0.2)
        assert drv.failures >= 1              # could not get the lock within 0.1 s
        mcu.set_faults(delay_s=0.0)
    finally:
        th.join(3.0)
    assert mcu.wait_until(lambda: mcu.lamp("point-9") == ("on", 255), 5.0), mcu.lamps()
    assert link.stats().reconnects == 0
    drv.close()


def test_link_up_resend_does_not_run_on_the_dispatch_thread(mcu, link):
    """The full-state re-send at link up is the worker's: the link's listeners (shooter button,
    wall strikes) are not held up by SET_LAMPS round trips."""
    drv = FirmwareLampDriver(link)
    drv.set_lamp("point-5", "on")
    assert mcu.wait_until(lambda: mcu.lamp("point-5") == ("on", 255), 3.0)
    time.sleep(0.1)
    senders: list[str] = []
    real = link.send_command

    def spy(message, **kw):
        senders.append(threading.current_thread().name)
        return real(message, **kw)

    link.send_command = spy
    try:
        with mcu.frozen():
            mcu.reboot()
        assert mcu.wait_until(lambda: mcu.lamp("point-5") == ("on", 255), 5.0)
    finally:
        link.send_command = real
    assert senders and set(senders) == {"firmware-lamps"}, senders
    drv.close()


def test_an_mcu_with_ten_lamps_gets_the_fitted_lamps_restored_and_turned_off(caplog):
    """VERSION lamp_count 10 (no bets-closed lamp): an all-lamps SET_LAMPS is refused whole
    (NAK BAD_LAMP, docs 4.6); the driver falls back to one lamp per command, leaves bets-closed
    out afterwards (one WARNING naming it), restores the fitted lamps after a reset and turns
    them off at close."""
    fitted = frozenset(int(i) for i in LampId if i != LampId.BETS_CLOSED)
    caplog.set_level(logging.WARNING, logger="firmware_bridge.lamps")
    with SimulatedMcu(seed=7, fitted_lamps=fitted) as mcu:
        link = FirmwareLink(fast_config(mcu.path)).start()
        try:
            assert link.wait_up(3.0)
            assert link.status().mcu.lamp_count == 10
            drv = FirmwareLampDriver(link)
            for name in ("point-6", "puck-on", "bets-closed"):
                drv.set_lamp(name, "on")
            drv.set_lamp("no-roll", "flash", 0.5)
            lit = {"point-6": ("on", 255), "puck-on": ("on", 255), "no-roll": ("flash", 128)}
            assert mcu.wait_until(lambda: {n: v for n, v in mcu.lamps().items() if v[0] != "off"} == lit, 5.0), \
                mcu.lamps()
            for _ in range(2):                                   # two resets: restored each time
                with mcu.frozen():
                    mcu.reboot()
                    assert mcu.lamp("point-6") == ("off", 0)
                assert mcu.wait_until(lambda: {n: v for n, v in mcu.lamps().items() if v[0] != "off"} == lit, 5.0), \
                    mcu.lamps()
            assert drv.flush(3.0) and drv.refused == {"bets-closed"}
            drv.close()
            assert all(v == ("off", 0) for v in mcu.lamps().values()), mcu.lamps()
            warnings = [r.getMessage() for r in caplog.records if "bets-closed" in r.getMessage()]
            assert len(warnings) == 1 and "BAD_LAMP" in warnings[0], warnings
        finally:
            link.close()


def test_close_turns_the_lamps_off_in_one_command_and_is_bounded(mcu, link):
    """close() stops the worker and sends every lamp off once; with a silent MCU it gives up
    within its bound."""
    drv = FirmwareLampDriver(link)
    drv.set_lamp("point-8", "on")
    drv.set_lamp("call-boxperson", "flash")
    assert mcu.wait_until(lambda: mcu.lamp("call-boxperson") == ("flash", 255), 3.0)
    time.sleep(0.1)
    before = len(mcu.executed)
    drv.close()
    assert mcu.lamp("point-8") == ("off", 0) and mcu.lamp("call-boxperson") == ("off", 0)
    assert len(mcu.executed) == before + 1                        # one SET_LAMPS, all lamps
    with pytest.raises(ValueError, match="closed"):
        drv.set_lamp("point-8", "on")

    drv2 = FirmwareLampDriver(link, timeout_s=0.2, close_timeout_s=0.3)
    time.sleep(0.2)
    with mcu.frozen():
        drv2.set_lamp("point-4", "on")
        t0 = time.monotonic()
        drv2.close()
        took = time.monotonic() - t0
    assert took < 0.2 + 0.5 + 0.3 + 0.5, took                     # worker join + one all-off try


@pytest.mark.parametrize("value", ["0.5", None, True, float("nan"), float("inf"), -0.1, 1.01])
def test_firmware_setting_refuses_a_bad_brightness_naming_the_lamp(value):
    with pytest.raises(ValueError, match=r"lamp point-6: brightness"):
        FirmwareLampDriver.setting("point-6", "on", value)
