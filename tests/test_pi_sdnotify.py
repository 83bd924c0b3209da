"""sd_notify client against a fake NOTIFY_SOCKET (an AF_UNIX datagram socket we bind)."""
from __future__ import annotations

import os
import socket

import pytest

from controller.sdnotify import SdNotify, Watchdog, watchdog_interval_s


@pytest.fixture()
def fake_systemd(tmp_path):
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2.0)
    yield str(path), sock
    sock.close()


def _recv(sock) -> bytes:
    return sock.recv(4096)


def test_ready_watchdog_status_stopping_exact_datagrams(fake_systemd):
    path, sock = fake_systemd
    n = SdNotify({"NOTIFY_SOCKET": path})
    assert n.enabled
    assert n.ready() is True
    assert _recv(sock) == b"READY=1"
    n.ready("table open")
    assert _recv(sock) == b"READY=1\nSTATUS=table open"
    n.watchdog()
    assert _recv(sock) == b"WATCHDOG=1"
    n.status("rolls 12, point 6")
    assert _recv(sock) == b"STATUS=rolls 12, point 6"
    n.stopping()
    assert _recv(sock) == b"STOPPING=1"
    n.close()
    n.close()


def test_abstract_namespace_socket():
    name = f"craps-table-test-{os.getpid()}-{id(object())}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(b"\0" + name.encode())
    sock.settimeout(2.0)
    try:
        n = SdNotify({"NOTIFY_SOCKET": "@" + name})
        n.ready("up")
        assert sock.recv(4096) == b"READY=1\nSTATUS=up"
    finally:
        sock.close()


def test_no_notify_socket_is_a_noop():
    n = SdNotify({})
    assert not n.enabled
    assert n.ready() is False
    assert n.watchdog() is False
    assert n.status("x") is False


def test_bad_values_are_refused(fake_systemd):
    path, _ = fake_systemd
    with pytest.raises(ValueError, match="NOTIFY_SOCKET"):
        SdNotify({"NOTIFY_SOCKET": "relative/path"})
    with pytest.raises(ValueError, match="STATUS"):
        SdNotify({"NOTIFY_SOCKET": path}).status("two\nlines")


def test_watchdog_interval_is_half_of_watchdog_usec():
    assert watchdog_interval_s({"WATCHDOG_USEC": "5000000"}) == 2.5
    assert watchdog_interval_s({}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "5000000", "WATCHDOG_PID": "1"}, pid=2) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "5000000", "WATCHDOG_PID": "7"}, pid=7) == 2.5
    with pytest.raises(ValueError, match="WATCHDOG_USEC"):
        watchdog_interval_s({"WATCHDOG_USEC": "soon"})
    with pytest.raises(ValueError, match="WATCHDOG_USEC"):
        watchdog_interval_s({"WATCHDOG_USEC": "0"})


def test_watchdog_pings_at_half_the_timeout(fake_systemd):
    path, sock = fake_systemd
    now = [100.0]
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000"}
    wd = Watchdog.from_env(SdNotify(env), env, clock=lambda: now[0])
    assert wd.interval_s == 1.0
    sent = []
    for step in range(31):  # 3 s of a 10 Hz loop
        now[0] = 100.0 + step * 0.1
        sent.append(wd.tick())
    # pings at t = 0, 1.0, 2.0 and 3.0 s of the loop
    assert sum(sent) == 4
    assert wd.pings == 4
    for _ in range(4):
        assert sock.recv(4096) == b"WATCHDOG=1"
    sock.settimeout(0.05)
    with pytest.raises(socket.timeout):
        sock.recv(4096)


def test_watchdog_off_without_watchdog_usec():
    wd = Watchdog.from_env(SdNotify({}), {})
    assert wd.tick(0.0) is False
    with pytest.raises(ValueError):
        Watchdog(SdNotify({}), 0.0)


def test_on_error_reports_instead_of_raising(tmp_path, fake_systemd):
    errors: list[Exception] = []
    gone = SdNotify({"NOTIFY_SOCKET": str(tmp_path / "nonexistent.sock")}, on_error=errors.append)
    assert gone.enabled
    assert gone.ready("up") is False and gone.watchdog() is False and gone.stopping() is False
    assert [type(e) for e in errors] == [FileNotFoundError] * 3
    errors.clear()
    relative = SdNotify({"NOTIFY_SOCKET": "relative.sock"}, on_error=errors.append)
    assert not relative.enabled and relative.ready() is False
    assert len(errors) == 1 and "NOTIFY_SOCKET='relative.sock'" in str(errors[0])
    errors.clear()
    path, sock = fake_systemd
    ok = SdNotify({"NOTIFY_SOCKET": path}, on_error=errors.append)
    assert ok.status("two\nlines") is False and isinstance(errors[0], ValueError)
    assert ok.ready("up") is True and _recv(sock) == b"READY=1\nSTATUS=up"
    errors.clear()
    dog = Watchdog.from_env(ok, {"WATCHDOG_USEC": "5s"}, on_error=errors.append)
    assert dog.interval_s is None and dog.tick() is False
    assert len(errors) == 1 and "WATCHDOG_USEC='5s'" in str(errors[0])
    with pytest.raises(ValueError):  # without on_error: as before
        Watchdog.from_env(ok, {"WATCHDOG_USEC": "5s"})
    with pytest.raises(FileNotFoundError):
        SdNotify({"NOTIFY_SOCKET": str(tmp_path / "nonexistent.sock")}).ready()
