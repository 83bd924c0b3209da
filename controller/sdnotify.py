"""A tiny sd_notify client: tells systemd the service is ready, alive, and what it is doing.

The protocol (sd_notify(3), systemd.service(5) ``Type=notify`` and ``WatchdogSec=``) is one
datagram per message, ``KEY=VALUE`` lines separated by ``\\n``, sent to the ``AF_UNIX``
``SOCK_DGRAM`` socket named by the ``NOTIFY_SOCKET`` environment variable. A name starting
with ``@`` is in the Linux abstract namespace (the ``@`` becomes a NUL byte). When
``NOTIFY_SOCKET`` is unset (run from a shell, in tests, in CI) every call is a no-op, so the
service calls it unconditionally.

Example, in the service's main loop::

    notifier = SdNotify()                 # reads NOTIFY_SOCKET once
    watchdog = Watchdog.from_env(notifier)
    ...open the camera, the bus, the bridge...
    notifier.ready("table open: 0 rolls")
    for frame in source.frames():
        ...
        watchdog.tick()                   # WATCHDOG=1 at most every WATCHDOG_USEC / 2
    notifier.stopping()

A service that must not die of its notifications passes ``on_error`` (``SdNotify(on_error=...)``,
``Watchdog.from_env(..., on_error=...)``): a bad ``NOTIFY_SOCKET`` or ``WATCHDOG_USEC`` and a
send that fails are then given to it (the service logs them) and the call returns ``False``.

The watchdog is pinged from the loop that does the work (not from a thread of its own), so a
loop that hangs on a stalled device stops the pings and systemd restarts the service
(``Restart=on-watchdog`` / ``on-failure`` in deploy/craps-table.service).
"""
from __future__ import annotations

import os
import socket
import time
from typing import Callable, Mapping

#: ``on_error(exc)``: told of an ``OSError`` / ``ValueError`` instead of raising it.
ErrorHandler = Callable[[Exception], None]

__all__ = ["SdNotify", "Watchdog", "watchdog_interval_s"]


def _socket_address(name: str) -> str | bytes:
    """``NOTIFY_SOCKET`` value -> an address for ``socket.sendto``.

    Raises:
        ValueError: when the name is neither an absolute path nor ``@abstract``.
    """
    if name.startswith("@"):
        return b"\0" + name[1:].encode()
    if name.startswith("/"):
        return name
    raise ValueError(f"NOTIFY_SOCKET={name!r}: expected an absolute path or an @abstract name")


class SdNotify:
    """Sends sd_notify messages to systemd.

    Args:
        env: where to read ``NOTIFY_SOCKET`` (default ``os.environ``), read once here.
        on_error: ``on_error(exc)`` instead of raising: a bad ``NOTIFY_SOCKET`` (``ValueError``;
            the notifier is then disabled) and a message that cannot be sent (``OSError``,
            ``ValueError``; the call returns ``False``). ``None``: raise.

    Each method returns ``True`` when a datagram was sent, ``False`` when there is no
    ``NOTIFY_SOCKET`` (a no-op). A send that fails (socket gone) raises ``OSError`` (without
    ``on_error``): systemd is then gone too, and the caller decides.

    Raises:
        ValueError: ``NOTIFY_SOCKET`` neither an absolute path nor ``@abstract`` (without
            ``on_error``).
    """

    def __init__(self, env: Mapping[str, str] | None = None, *, on_error: ErrorHandler | None = None) -> None:
        env = os.environ if env is None else env
        name = env.get("NOTIFY_SOCKET", "")
        self._on_error = on_error
        self._sock: socket.socket | None = None
        try:
            self._address = _socket_address(name) if name else None
        except ValueError as exc:
            if on_error is None:
                raise
            self._address = None
            on_error(exc)

    @property
    def enabled(self) -> bool:
        """Whether ``NOTIFY_SOCKET`` was set."""
        return self._address is not None

    def notify(self, **fields: str | int) -> bool:
        """Send one datagram with ``KEY=VALUE`` lines, e.g. ``notify(READY=1, STATUS="up")``.

        Raises:
            ValueError: a value containing a newline (it would split the message).
            OSError: the datagram could not be sent.
            (Neither with ``on_error``: it is told, and the call returns ``False``.)
        """
        if self._address is None:
            return False
        try:
            return self._send(fields)
        except (OSError, ValueError) as exc:
            if self._on_error is None:
                raise
            self._on_error(exc)
            return False

    def _send(self, fields: Mapping[str, str | int]) -> bool:
        lines = []
        for key, value in fields.items():
            text = str(value)
            if "\n" in text:
                raise ValueError(f"sd_notify {key}: the value must be one line, got {text!r}")
            lines.append(f"{key}={text}")
        if self._sock is None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self._sock.sendto("\n".join(lines).encode(), self._address)
        return True

    def ready(self, status: str | None = None) -> bool:
        """``READY=1`` (and ``STATUS=`` when given): start-up is complete (``Type=notify``)."""
        return self.notify(READY=1, STATUS=status) if status is not None else self.notify(READY=1)

    def watchdog(self) -> bool:
        """``WATCHDOG=1``: the service is alive (within ``WatchdogSec=``)."""
        return self.notify(WATCHDOG=1)

    def status(self, text: str) -> bool:
        """``STATUS=text``: shown by ``systemctl status craps-table``."""
        return self.notify(STATUS=text)

    def stopping(self, status: str | None = None) -> bool:
        """``STOPPING=1``: shutdown has begun (lamps off, devices closing)."""
        return self.notify(STOPPING=1, STATUS=status) if status is not None else self.notify(STOPPING=1)

    def close(self) -> None:
        """Close the socket. Safe to call twice."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def watchdog_interval_s(env: Mapping[str, str] | None = None, pid: int | None = None) -> float | None:
    """The ping interval in seconds, half of ``WATCHDOG_USEC``, or ``None`` when systemd's
    watchdog is off for this process.

    Follows sd_watchdog_enabled(3): ``WATCHDOG_USEC`` is the timeout in microseconds; when
    ``WATCHDOG_PID`` is set it must equal this process id (else the watchdog is someone else's).

    Raises:
        ValueError: ``WATCHDOG_USEC`` or ``WATCHDOG_PID`` not a positive integer.
    """
    env = os.environ if env is None else env
    usec_text = env.get("WATCHDOG_USEC", "")
    if not usec_text:
        return None
    try:
        usec = int(usec_text)
    except ValueError:
        raise ValueError(f"WATCHDOG_USEC={usec_text!r}: expected an integer of microseconds") from None
    if usec <= 0:
        raise ValueError(f"WATCHDOG_USEC={usec_text!r}: expected a positive integer of microseconds")
    pid_text = env.get("WATCHDOG_PID", "")
    if pid_text:
        try:
            watchdog_pid = int(pid_text)
        except ValueError:
            raise ValueError(f"WATCHDOG_PID={pid_text!r}: expected a process id") from None
        if watchdog_pid != (os.getpid() if pid is None else pid):
            return None
    return usec / 2e6


class Watchdog:
    """Pings systemd's watchdog at most every ``interval_s`` seconds.

    Args:
        notifier: the :class:`SdNotify` to send ``WATCHDOG=1`` with.
        interval_s: seconds between pings (half of ``WATCHDOG_USEC``); ``None`` = never ping.
        clock: monotonic clock in seconds (a fake in tests).

    Call :meth:`tick` from the service's main loop on every frame (cheap: one clock read).
    """

    def __init__(self, notifier: SdNotify, interval_s: float | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s is not None and interval_s <= 0:
            raise ValueError(f"watchdog interval must be > 0 s, got {interval_s}")
        self.notifier = notifier
        self.interval_s = interval_s
        self._clock = clock
        self._last: float | None = None
        self.pings = 0

    @classmethod
    def from_env(cls, notifier: SdNotify, env: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic, *,
                 on_error: ErrorHandler | None = None) -> "Watchdog":
        """A watchdog with the interval from ``WATCHDOG_USEC`` / ``WATCHDOG_PID``.

        Raises:
            ValueError: a malformed ``WATCHDOG_USEC`` / ``WATCHDOG_PID``; with ``on_error`` it is
                told instead and the watchdog never pings.
        """
        try:
            interval = watchdog_interval_s(env)
        except ValueError as exc:
            if on_error is None:
                raise
            on_error(exc)
            interval = None
        return cls(notifier, interval, clock)

    def tick(self, now: float | None = None) -> bool:
        """Send ``WATCHDOG=1`` if ``interval_s`` has passed since the last ping (or none was
        sent yet). Returns whether a ping was sent."""
        if self.interval_s is None:
            return False
        now = self._clock() if now is None else now
        if self._last is not None and now - self._last < self.interval_s:
            return False
        self._last = now
        sent = self.notifier.watchdog()
        self.pings += int(sent)
        return sent
