"""The host link, the lamp driver and the simulated MCU over a real pseudo-terminal."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import serial
from pydantic import ValidationError

from firmware_bridge.config import BridgeConfig, load_bridge_config
from firmware_bridge.events import EventQueue, WallStrikeLog
from firmware_bridge.lamps import FirmwareLampDriver
from firmware_bridge.link import CommandFailed, FirmwareLink, LinkState
from firmware_bridge.mcu_sim import ALL_CAPABILITIES, FaultConfig, SimulatedMcu
from firmware_bridge.protocol import (
    Capability,
    ErrorCode,
    InputId,
    LampId,
    LampMode,
    LampSetting,
    ProtocolError,
    SetLamps,
    Shaker,
    ShakerAction,
    ShakerResult,
    Ack,
)

REPO = Path(__file__).resolve().parents[1]


def fast_config(path, **kw) -> BridgeConfig:
    """Timeouts tuned for a pseudo-terminal on a shared 2-core machine."""
    base = dict(port=str(path), ack_timeout_s=0.02, retries=8, command_deadline_s=3.0, heartbeat_period_s=0.1,
                link_timeout_s=1.0, hello_timeout_s=0.05, host_timeout_s=1.0, reconnect_initial_s=0.02,
                reconnect_max_s=0.2)
    base.update(kw)
    return BridgeConfig(**base)


class Recorder:
    def __init__(self):
        self.items = []
        self.cv = threading.Condition()

    def __call__(self, item):
        with self.cv:
            self.items.append(item)
            self.cv.notify_all()

    def wait_for(self, pred, timeout=3.0):
        end = time.monotonic() + timeout
        with self.cv:
            while not pred(self.items):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cv.wait(left)
            return True


@pytest.fixture
def mcu():
    sim = SimulatedMcu(seed=3, event_ack_timeout_s=0.02)
    sim.start()
    yield sim
    sim.stop()


@pytest.fixture
def rig(mcu):
    events, statuses, errors = Recorder(), Recorder(), Recorder()
    link = FirmwareLink(fast_config(mcu.path), on_event=events, on_link=statuses, on_error=errors, session_id=0xABCD)
    link.start()
    assert link.wait_up(3.0), link.status()
    yield mcu, link, events, statuses, errors
    link.close()


def test_link_comes_up_with_the_mcu_identity(rig):
    mcu, link, _, statuses, _ = rig
    assert statuses.wait_for(lambda s: any(x.up for x in s))
    st = link.status()
    assert st.up and st.state is LinkState.UP and st.reason == ""
    assert st.mcu.boot_id == mcu.boot_id and st.mcu.protocol == 1 and st.mcu.lamp_count == 11
    assert st.wall_sensor_ok and st.rolls_allowed and link.rolls_allowed()
    assert mcu.session == 0xABCD
    assert mcu.lamp("fault") == ("off", 0)   # session open: the MCU stops flashing the fault lamp


def test_a_listener_added_late_learns_the_current_status_at_once(rig):
    _, link, _, statuses, _ = rig
    assert [x.up for x in statuses.items][:1] == [False]      # the initial status at start
    late = Recorder()
    link.add_link_listener(late)
    assert late.wait_for(lambda s: len(s) >= 1, 2.0)
    assert late.items[0].up is True and late.items[0].rolls_allowed is True


def test_set_lamps_reaches_the_mcu(rig):
    mcu, link, *_ = rig
    r = link.send_command(SetLamps((LampSetting(LampId.POINT_6, LampMode.ON, 128),
                                    LampSetting(LampId.PUCK_ON, LampMode.FLASH, 255))))
    assert r.attempts == 1 and r.latency_s > 0
    assert mcu.lamp("point-6") == ("on", 128)
    assert mcu.lamp("puck-on") == ("flash", 255)
    assert [e.seq for e in mcu.executed] == [r.seq]


def test_send_command_refuses_non_commands(rig):
    _, link, *_ = rig
    with pytest.raises(ProtocolError):
        link.send_command(Ack(1, 0x20))


def test_lamp_driver_sets_validates_and_closes(rig):
    mcu, link, *_ = rig
    lamps = FirmwareLampDriver(link)
    lamps.set_lamp("point-4", "flash", 0.5)
    lamps.set_lamp("no-roll", "on")
    assert lamps.flush(3.0), lamps.pending()   # set_lamp returns at once; the worker sends it
    assert mcu.lamp("point-4") == ("flash", 128)
    assert mcu.lamp("no-roll") == ("on", 255)
    assert lamps.wanted()["point-4"] == ("flash", 128 / 255)
    with pytest.raises(ValueError, match="unknown lamp 'point-7'"):
        lamps.set_lamp("point-7", "on")
    with pytest.raises(ValueError, match="mode"):
        lamps.set_lamp("point-4", "blink")
    with pytest.raises(ValueError, match="brightness"):
        lamps.set_lamp("point-4", "on", 1.5)
    lamps.close()
    assert mcu.lamp("point-4") == ("off", 0) and mcu.lamp("no-roll") == ("off", 0)


def test_lamp_driver_restores_lamps_after_mcu_restart(rig):
    mcu, link, _, statuses, _ = rig
    lamps = FirmwareLampDriver(link)
    lamps.set_lamp("point-9", "on")
    lamps.set_lamp("puck-on", "on", 0.25)
    old_boot = mcu.boot_id
    with mcu.frozen():       # nothing can reach the MCU between the restart and the check
        mcu.reboot()
        assert mcu.lamp("point-9") == ("off", 0)
    assert mcu.wait_until(lambda: mcu.lamp("point-9") == ("on", 255) and mcu.lamp("puck-on") == ("on", 64), 3.0)
    assert link.status().mcu.boot_id == mcu.boot_id != old_boot
    lamps.close()


def test_input_events_arrive_once_each_in_order(rig):
    mcu, link, events, *_ = rig
    log = WallStrikeLog(link)
    q = EventQueue(link, inputs={InputId.SHOOTER_BUTTON})
    t0 = time.monotonic()
    for zone in range(5):
        mcu.strike_far_wall(zone)
    mcu.press_shooter_button()
    mcu.set_door(True)
    mcu.set_tilt(True)
    assert events.wait_for(lambda e: len(e) >= 9)
    time.sleep(0.1)
    got = [(e.input, e.value, e.detail) for e in events.items]
    assert got == [(InputId.FAR_WALL_STRIKE, 1, z) for z in range(5)] + [
        (InputId.SHOOTER_BUTTON, 1, 0), (InputId.SHOOTER_BUTTON, 0, 0), (InputId.DOOR, 1, 0), (InputId.TILT, 1, 0)]
    # event times come from the MCU's millisecond stamps: within a few ms of the real instant
    assert len(log.strikes_between(t0 - 0.005, time.monotonic())) == 5
    assert log.struck_between(t0 - 0.005, time.monotonic()) and not log.struck_between(0, t0 - 1)
    assert [q.get(0.5).value, q.get(0.5).value, q.get(0.01)] == [1, 0, None]


def test_wall_strike_log_on_another_clock():
    from firmware_bridge.link import LinkEvent
    frame_clock = [1000.0]
    log = WallStrikeLog(clock=lambda: frame_clock[0])
    now = time.monotonic()
    log(LinkEvent(InputId.FAR_WALL_STRIKE, 1, 0, 5, now, 1, 7, now - 0.25))   # happened 0.25 s ago
    log(LinkEvent(InputId.DOOR, 1, 0, 6, now, 2, 7, now))                     # not a strike
    (t,) = log.times()
    assert 999.74 < t < 999.76
    assert log.struck_between(999.7, 999.8) and not log.struck_between(999.8, 1000.0)


def test_event_time_is_when_the_input_changed_even_if_delivered_late(rig):
    mcu, link, events, *_ = rig
    time.sleep(0.35)                       # a few heartbeat exchanges to measure the clock offset
    t0 = time.monotonic()
    mcu.strike_far_wall(1)
    assert events.wait_for(lambda e: len(e) >= 1)
    prompt = events.items[0]
    assert t0 - 0.005 <= prompt.event_time <= prompt.host_time + 0.005
    # now a strike while the cable is unplugged: delivered after the reconnect, about 0.4 s late
    mcu.disconnect(0.4)
    t1 = time.monotonic()
    mcu.strike_far_wall(2)
    assert events.wait_for(lambda e: len(e) >= 2, 5.0)
    late = events.items[1]
    assert late.detail == 2 and late.host_time - t1 >= 0.35
    assert abs(late.event_time - t1) < 0.02, (late.event_time - t1)


def test_events_survive_corruption_without_duplicates(mcu):
    mcu.set_faults(corrupt_rate=0.03)
    events = Recorder()
    with FirmwareLink(fast_config(mcu.path), on_event=events) as link:
        assert link.wait_up(3.0)
        for batch in range(6):
            for zone in range(10 * batch, 10 * batch + 10):
                mcu.strike_far_wall(zone)
            assert events.wait_for(lambda e: len(e) >= 10 * batch + 10, 10.0), len(events.items)
        time.sleep(0.2)
        assert [e.detail for e in events.items] == list(range(60))
        assert link.stats().bad_frames > 0


def test_event_queue_overflow_is_reported_once_with_the_count(mcu):
    errors, events = Recorder(), Recorder()
    for zone in range(20):                 # before any host: the queue holds 16
        mcu.strike_far_wall(zone)
    with FirmwareLink(fast_config(mcu.path), on_event=events, on_error=errors, session_id=0x1234) as link:
        assert link.wait_up(3.0)
        # a new session discards what was queued for an earlier host
        with mcu.frozen():
            for zone in range(20):
                mcu.strike_far_wall(zone)
        assert errors.wait_for(lambda e: len(e) >= 1)
        assert events.wait_for(lambda e: len(e) >= 16)
        time.sleep(0.1)
    overflow = [e for e in errors.items if e.code is ErrorCode.EVENT_QUEUE_OVERFLOW]
    assert len(overflow) == 1 and overflow[0].detail == 4
    assert [e.detail for e in events.items] == list(range(16))


def test_shaker_ack_busy_nak_stop_and_done_events(rig):
    mcu, link, events, *_ = rig
    link.send_command(Shaker(ShakerAction.SHAKE, 10000, 200))
    assert mcu.shaker_busy
    with pytest.raises(CommandFailed) as exc:
        link.send_command(Shaker(ShakerAction.BLOW, 100))
    assert exc.value.reason == "nak:BUSY" and exc.value.maybe_executed is False
    link.send_command(Shaker(ShakerAction.STOP))
    assert events.wait_for(lambda e: any(x.input is InputId.SHAKER_DONE for x in e))
    link.send_command(Shaker(ShakerAction.BLOW, 30))
    assert events.wait_for(lambda e: sum(x.input is InputId.SHAKER_DONE for x in e) >= 2)
    done = [(x.value, x.detail) for x in events.items if x.input is InputId.SHAKER_DONE]
    assert done == [(int(ShakerAction.SHAKE), int(ShakerResult.STOPPED)),
                    (int(ShakerAction.BLOW), int(ShakerResult.COMPLETED))]
    assert [type(e.message).__name__ for e in mcu.executed] == ["Shaker"] * 3


def test_retransmission_after_a_pulled_cable_is_not_executed_twice(mcu):
    """The MCU acts, the cable is pulled before the ACK leaves; the host retransmits after the
    reconnect and the MCU must answer from its duplicate filter, not act again."""
    mcu.set_faults(disconnect_every=1, reconnect_after_s=0.03)
    statuses = Recorder()
    with FirmwareLink(fast_config(mcu.path), on_link=statuses) as link:
        assert link.wait_up(3.0)
        results = [link.send_command(SetLamps((LampSetting(LampId.POINT_5, LampMode.ON, b),))) for b in (10, 20, 30)]
        assert all(r.attempts >= 2 for r in results)
        assert mcu.disconnects == 3 and mcu.duplicates >= 3
        assert sorted(mcu.execution_counts().values()) == [1, 1, 1]
        assert mcu.lamp("point-5") == ("on", 30)
        # the first status is the initial one (down, connecting); then one down per pulled cable
        assert statuses.wait_for(lambda s: sum(not x.up for x in s) >= 4)
        assert statuses.items[0].up is False and statuses.items[0].reason == "connecting"


def test_command_outstanding_across_an_mcu_restart_is_reported_maybe_executed(mcu):
    mcu.set_faults(disconnect_every=1, reconnect_after_s=0.03, reboot_on_disconnect=True)
    with FirmwareLink(fast_config(mcu.path)) as link:
        assert link.wait_up(3.0)
        with pytest.raises(CommandFailed) as exc:
            link.send_command(Shaker(ShakerAction.SHAKE, 100))
        assert exc.value.reason == "mcu-restarted" and exc.value.maybe_executed is True
        assert len(mcu.executed) == 1   # acted on once, by the MCU before its restart


def test_link_down_refuses_rolls_and_commands_then_recovers(rig):
    mcu, link, _, statuses, _ = rig
    assert statuses.wait_for(lambda s: any(x.up for x in s))
    mcu.disconnect(None)
    assert statuses.wait_for(lambda s: not s[-1].up)
    down = statuses.items[-1]
    assert "read failed" in down.reason or "no frame" in down.reason or "write failed" in down.reason
    assert down.rolls_allowed is False and down.wall_sensor_ok is False and down.reason
    with pytest.raises(CommandFailed) as exc:
        link.send_command(SetLamps((LampSetting(LampId.FAULT, LampMode.ON),)), timeout=0.15)
    assert exc.value.reason == "link-down" and exc.value.maybe_executed is False
    mcu.reconnect()
    assert link.wait_up(3.0)
    assert link.rolls_allowed()
    assert link.send_command(SetLamps((LampSetting(LampId.FAULT, LampMode.ON),))).attempts == 1


def test_rolls_allowed_without_link_when_wall_sensor_not_required(mcu):
    with FirmwareLink(fast_config(mcu.path, require_wall_sensor=False)) as link:
        assert link.rolls_allowed()          # down, but the sensor is not required
        assert link.wait_up(3.0)


def test_wall_sensor_fault_or_absence_refuses_rolls(rig):
    mcu, link, _, statuses, errors = rig
    mcu.set_wall_sensor_fault(True)
    assert statuses.wait_for(lambda s: any(x.up and not x.wall_sensor_ok for x in s))
    assert not link.rolls_allowed()
    assert errors.wait_for(lambda e: any(x.code is ErrorCode.WALL_SENSOR_FAULT for x in e))
    no_sensor = SimulatedMcu(capabilities=ALL_CAPABILITIES & ~Capability.WALL_SENSOR)
    no_sensor.start()
    try:
        with FirmwareLink(fast_config(no_sensor.path)) as other:
            assert other.wait_up(3.0)
            assert other.status().up and not other.rolls_allowed()
    finally:
        no_sensor.stop()


def test_port_is_opened_exclusively(rig):
    mcu, link, *_ = rig
    with pytest.raises(serial.SerialException):
        serial.Serial(str(mcu.path), exclusive=True)


def test_missing_port_keeps_retrying_with_a_reason(tmp_path):
    link = FirmwareLink(fast_config(tmp_path / "no-such-tty")).start()
    try:
        assert not link.wait_up(0.2)
        assert "cannot open" in link.status().reason and "no-such-tty" in link.status().reason
    finally:
        link.close()


def test_mcu_enters_failsafe_when_the_host_goes_silent(mcu):
    link = FirmwareLink(fast_config(mcu.path, host_timeout_s=0.3)).start()
    assert link.wait_up(3.0)
    link.send_command(Shaker(ShakerAction.SHAKE, 5000))
    assert mcu.shaker_busy and mcu.host_timeout_s == 0.3
    link.close()
    assert mcu.wait_until(lambda: mcu.failsafe, 3.0)
    assert mcu.lamp("fault") == ("flash", 255) and not mcu.shaker_busy


def test_garbage_from_the_host_is_answered_with_nak_and_ignored(rig):
    mcu, link, *_ = rig
    before = mcu.bad_frames
    link._write(b"\x55\x66\x77")           # garbage ended by the link's own delimiter
    link.send_command(SetLamps((LampSetting(LampId.POINT_8, LampMode.ON),)))
    assert mcu.bad_frames > before
    assert mcu.lamp("point-8") == ("on", 255) and len(mcu.executed) == 1


def test_config_errors_name_the_field(tmp_path):
    with pytest.raises(ValidationError, match="hearbeat_period_s"):
        BridgeConfig(port="/dev/null", hearbeat_period_s=0.1)
    with pytest.raises(ValidationError, match="link_timeout_s"):
        BridgeConfig(port="/dev/null", heartbeat_period_s=0.5, link_timeout_s=0.6)
    f = tmp_path / "table.toml"
    f.write_text('[firmware]\nport = "/dev/serial/by-id/x"\nretries = -1\n')
    with pytest.raises(ValueError, match=r"\[firmware\]: retries"):
        load_bridge_config(f)
    f.write_text('[firmware]\nport = "/dev/serial/by-id/x"\nbaud = 57600\n')
    cfg = load_bridge_config(f)
    assert cfg.baud == 57600 and cfg.require_wall_sensor is True and cfg.exclusive is True
    f.write_text("[camera]\n")
    with pytest.raises(ValueError, match="no \\[firmware\\] table"):
        load_bridge_config(f)


def test_fault_config_rejects_bad_rates():
    with pytest.raises(ValueError, match="corrupt_rate"):
        FaultConfig(corrupt_rate=1.5)
    with pytest.raises(ValueError, match="direction"):
        FaultConfig(direction="sideways")


def test_mcu_sim_command_serves_a_link(tmp_path):
    link_path = tmp_path / "ttyMCU"
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "mcu-sim", "--link", str(link_path), "--duration", "20"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("mcu-sim: pty /dev/pts/") and str(link_path) in first
        events = Recorder()
        with FirmwareLink(fast_config(link_path), on_event=events) as link:
            assert link.wait_up(5.0)
            link.send_command(SetLamps((LampSetting(LampId.POINT_10, LampMode.FLASH, 255),)))
            proc.stdin.write("strike 3\nlamps\n")
            proc.stdin.flush()
            assert events.wait_for(lambda e: any(x.input is InputId.FAR_WALL_STRIKE and x.detail == 3 for x in e))
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert any(line.split()[:3] == ["point-10", "flash", "255"] for line in out.splitlines())
        assert "executed 1 commands" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_mcu_sim_command_rejects_bad_arguments(tmp_path):
    r = subprocess.run([sys.executable, "-m", "controller.cli", "mcu-sim", "--corrupt", "2"],
                       capture_output=True, text=True, cwd=REPO, timeout=30)
    assert r.returncode == 2 and "--corrupt must be a probability" in r.stderr   # the option as typed
    r = subprocess.run([sys.executable, "-m", "controller.cli", "mcu-sim", "--link", str(tmp_path / "no" / "tty")],
                       capture_output=True, text=True, cwd=REPO, timeout=30)
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_refused_command_is_not_retried_and_changes_nothing():
    sim = SimulatedMcu(fitted_lamps=frozenset(int(i) for i in LampId if i != LampId.POINT_10))
    sim.start()
    try:
        with FirmwareLink(fast_config(sim.path)) as link:
            assert link.wait_up(3.0)
            assert link.status().mcu.lamp_count == 10
            with pytest.raises(CommandFailed) as exc:
                link.send_command(SetLamps((LampSetting(LampId.POINT_4, LampMode.ON),
                                            LampSetting(LampId.POINT_10, LampMode.ON))))
            assert exc.value.reason == "nak:BAD_LAMP" and exc.value.attempts == 1 and not exc.value.maybe_executed
            assert sim.lamp("point-4") == ("off", 0) and sim.executed == []
    finally:
        sim.stop()
