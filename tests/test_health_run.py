"""``craps-table run`` as systemd runs it: a subprocess on the simulated table with its lamps on
the simulated microcontroller (pseudo-terminal) and a fake ``NOTIFY_SOCKET``. It says READY=1,
pings the watchdog, logs JSON lines on stdout, and on SIGTERM says STOPPING=1, turns every lamp
off, closes its devices and exits 0 (issue 9 items 3 to 5)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _config(tmp_path: Path, mcu_path: Path) -> Path:
    from bus.config import BusConfig

    bus = BusConfig.local(tmp_path / "roll-bus", transport="tcp", table_id="table-1")  # not "bus": cwd is on sys.path
    text = (REPO / "config" / "table.toml").read_text()
    for old, new in [('"tcp://127.0.0.1:5556"', f'"{bus.pub_endpoint}"'),
                     ('"tcp://127.0.0.1:5557"', f'"{bus.replay_endpoint}"'),
                     ('"var/bus/journal.sqlite"', f'"{bus.journal_path}"'),
                     ('"var/bus/keys"', f'"{bus.keys_dir}"'),
                     ('"var/state/table.sqlite"', f'"{tmp_path / "state.sqlite"}"'),
                     ("port = 9108", "port = 0"),
                     ('endpoint = "tcp://127.0.0.1:5560"', 'endpoint = ""'),
                     ('driver = "gpiozero"', 'driver = "firmware"')]:
        assert old in text, old
        text = text.replace(old, new)
    text += f'\n[firmware]\nport = "{mcu_path}"\n'
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path


def test_sigterm_sends_stopping_turns_lamps_off_and_exits_0(tmp_path):
    pytest.importorskip("mujoco")
    from controller.game import GameState
    from controller.store import StateStore
    from firmware_bridge.mcu_sim import SimulatedMcu

    store = StateStore(tmp_path / "state.sqlite")  # a game with the point 6 on: lamps to turn off
    store.commit(GameState(shooter=1, shooter_roll=1, point=6, rolls=1), None)
    store.close()
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # a fake systemd (Type=notify)
    notify.bind(str(tmp_path / "notify.sock"))
    said: list[str] = []

    proc = None

    def hear(until, timeout_s):
        deadline = time.monotonic() + timeout_s
        while not until() and time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None and not said:
                break  # it died before saying anything
            notify.settimeout(min(0.2, max(0.01, deadline - time.monotonic())))
            try:
                said.append(notify.recv(4096).decode())
            except socket.timeout:
                continue
        return until()

    with SimulatedMcu() as mcu:
        cfg = _config(tmp_path, mcu.path)
        env = {**os.environ, "NOTIFY_SOCKET": str(tmp_path / "notify.sock"), "WATCHDOG_USEC": "400000"}
        env.pop("WATCHDOG_PID", None)
        proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "run", "--config", str(cfg),
                                 "--source", "sim", "--log-level", "INFO"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if not hear(lambda: any(m.startswith("READY=1") for m in said), 60):
                proc.kill()
                pytest.fail(f"no READY=1 (exit {proc.poll()}): {proc.communicate()[1][-3000:]}")
            assert mcu.wait_until(lambda: mcu.lamp("point-6")[0] == "on" and mcu.lamp("puck-on")[0] == "on", 10)
            assert hear(lambda: any("WATCHDOG=1" in m for m in said), 5)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        hear(lambda: False, 0.3)
        notify.close()
        assert proc.returncode == 0, err[-2000:]
        assert said[0].startswith("READY=1") and "point 6" in said[0]
        assert any(m.startswith("STOPPING=1") for m in said), said
        # every lamp the service lit is off (the MCU's own fault lamp flashes once the host is
        # gone: its failsafe, docs/firmware-protocol.md)
        lamps = mcu.lamps()
        assert {n: m for n, (m, _) in lamps.items() if n != "fault" and m != "off"} == {}, lamps
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert lines and all({"ts", "level", "logger", "msg"} <= set(rec) for rec in lines)
    assert any(rec["msg"].startswith("stopped:") for rec in lines), [r["msg"] for r in lines][-5:]
