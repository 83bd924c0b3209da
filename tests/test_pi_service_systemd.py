"""``craps-table run`` under systemd, in process: a camera whose read hangs for ever makes the
service stop pinging the watchdog and exit 1 (so ``Restart=on-failure`` restarts it), and a
notify socket that fails does not crash the service. The camera is a stand-in (noisy frames,
then a read that blocks until the source is closed); the bus, lamps (gpiozero MockFactory) and
metrics are the real ones on loopback."""
from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import controller.service_cli as service_cli
from camera.base import Frame
from tableconfig import write_test_config


class HangingCamera:
    """``good_frames`` noisy frames at 30 fps, then a read that never returns (until close)."""

    def __init__(self, good_frames: int = 20) -> None:
        self.good_frames = good_frames
        self._closed = threading.Event()
        self.rng = np.random.default_rng(3)

    def frames(self):
        for i in range(self.good_frames):
            if self._closed.wait(1 / 30):
                return
            yield Frame(self.rng.integers(40, 80, (120, 160, 3), dtype=np.uint8), i / 30, i, source="live")
        self._closed.wait()  # a hung USB read

    def close(self) -> None:
        self._closed.set()


class FakeSystemd:
    """A ``NOTIFY_SOCKET`` that records (arrival time, message)."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.05)
        self.said: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()

    def _main(self) -> None:
        while not self._stop.is_set():
            try:
                self.said.append((time.monotonic(), self.sock.recv(4096).decode()))
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.sock.close()


def service_config(tmp_path: Path, health: str = "") -> Path:
    from bus.keys import ensure_keys

    path = write_test_config(tmp_path)
    ensure_keys(tmp_path / "keys")
    text = path.read_text()
    assert "restart_after_lost_s = 30.0\n" in text
    path.write_text(text.replace("restart_after_lost_s = 30.0\n", health, 1))
    return path


def run_in_thread(config: Path, timeout_s: float) -> tuple[threading.Thread, dict]:
    """``craps-table run --config CONFIG`` (``service_cli.run``) in a thread; the result's
    ``"status"`` is the exit status, ``"error"`` what it raised."""
    args = argparse.Namespace(config=config, source=None, max_verdicts=None, mode="table", max_rounds=None,
                              log_level="INFO")
    out: dict = {}

    def main() -> None:
        try:
            out["status"] = service_cli.run("run", args)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            out["error"] = exc

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return thread, out


def test_hung_camera_stops_the_watchdog_and_exits_1_for_a_restart(tmp_path, monkeypatch, capsys):
    config = service_config(tmp_path, "restart_after_lost_s = 1.0\n")
    camera = HangingCamera()
    monkeypatch.setattr(service_cli, "open_frame_source", lambda cfg, spec: camera)
    systemd = FakeSystemd(tmp_path / "notify.sock")
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify.sock"))
    monkeypatch.setenv("WATCHDOG_USEC", "200000")  # a ping every 0.1 s
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    try:
        thread, out = run_in_thread(config, 30.0)
        assert not thread.is_alive(), "the service never gave up on the hung camera"
    finally:
        camera.close()
        systemd.close()
    assert out == {"status": 1}, out
    said = systemd.said
    assert said and said[0][1].startswith("READY=1")
    stopping = [t for t, m in said if m.startswith("STOPPING=1")]
    pings = [t for t, m in said if m == "WATCHDOG=1"]
    assert stopping and len(pings) >= 5
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    gave_up = [r for r in lines if r["msg"].startswith("camera lost for")]
    assert len(gave_up) == 1 and gave_up[0]["level"] == "ERROR", [r["msg"] for r in lines]
    # after the camera hung, the table went safe (camera-lost) and 1 s later the pings stopped
    safe = [r for r in lines if r["msg"].startswith("safe state:") and "camera-lost" in r["msg"]]
    assert safe
    assert max(pings) < min(stopping)
    assert float(gave_up[0]["msg"].split()[3]) >= 1.0


@pytest.mark.parametrize("env", [
    {"NOTIFY_SOCKET": "{tmp}/nonexistent.sock", "WATCHDOG_USEC": "200000"},  # systemd gone
    {"NOTIFY_SOCKET": "relative.sock"},
    {"NOTIFY_SOCKET": "{tmp}/notify.sock", "WATCHDOG_USEC": "five seconds"},
], ids=["socket-gone", "relative-socket", "bad-watchdog-usec"])
def test_notify_errors_are_logged_and_the_service_runs_on(tmp_path, monkeypatch, capsys, env):
    """A notification that cannot be sent, or a bad NOTIFY_SOCKET / WATCHDOG_USEC, is a warning
    in the log: the service runs and stops as usual (here: the camera hangs, it gives up after
    restart_after_lost_s and exits 1 with everything closed), instead of dying at READY=1 with
    a traceback and nothing closed."""
    config = service_config(tmp_path, "restart_after_lost_s = 0.5\n")
    camera = HangingCamera(good_frames=10)
    monkeypatch.setattr(service_cli, "open_frame_source", lambda cfg, spec: camera)
    systemd = FakeSystemd(tmp_path / "notify.sock")
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(tmp=tmp_path))
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    if "WATCHDOG_USEC" not in env:
        monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    try:
        thread, out = run_in_thread(config, 30.0)
        assert not thread.is_alive()
    finally:
        camera.close()
        systemd.close()
    assert out == {"status": 1}, out
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    warned = [r for r in lines if r["msg"].startswith("sd_notify failed")]
    assert warned and warned[0]["level"] == "WARNING"
    assert any(r["msg"].startswith("stopped:") for r in lines)  # closed down in order
    said = [m for _, m in systemd.said]
    if env["NOTIFY_SOCKET"].endswith("/notify.sock"):  # a good socket still hears the rest
        assert said[0].startswith("READY=1") and any(m.startswith("STOPPING=1") for m in said)
        assert "WATCHDOG=1" not in said
    else:
        assert said == []


def test_exit_status_2_for_a_setup_error_1_for_a_camera_that_cannot_be_opened(tmp_path, capsys):
    """deploy/craps-table.service has RestartPreventExitStatus=2: a setup error (here a config
    key that does not exist) must be 2, a camera that is not there (yet) 1, which is retried."""
    config = service_config(tmp_path)
    args = dict(source=None, max_verdicts=None, mode="table", max_rounds=None, log_level="INFO")
    camera = argparse.Namespace(config=config, **{**args, "source": f"usb:{tmp_path}/no-such-video0"})
    assert service_cli.run("run", camera) == 1
    assert "cannot open the camera" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text(config.read_text().replace("[health]\n", "[health]\nno_such_key = 1\n", 1))
    assert service_cli.run("run", argparse.Namespace(config=bad, **args)) == 2
    assert "health.no_such_key" in capsys.readouterr().err
