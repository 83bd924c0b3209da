"""The host end of the serial link to the table microcontroller (docs/firmware-protocol.md).

:class:`FirmwareLink` opens the device by path (on the Pi a ``/dev/serial/by-id/...`` symlink)
with an exclusive lock, says HELLO, supervises heartbeats, reconnects with exponential backoff,
acknowledges and de-duplicates the MCU's input events, and sends commands stop-and-wait with
retransmission: :meth:`FirmwareLink.send_command` returns only when the MCU acknowledged the
command and raises :class:`CommandFailed` otherwise.  A retransmitted command carries the same
sequence number, so the MCU's duplicate filter never lets it act twice.

Threads: one I/O thread owns the port (reads, heartbeats, HELLO, reconnects); one dispatch thread
runs the listeners, so a slow listener never stalls the link and a listener may itself call
:meth:`send_command`.  :meth:`send_command` runs in the caller's thread and may be called from
several threads (calls are serialised: one command is outstanding at a time).

Example::

    from firmware_bridge import BridgeConfig, FirmwareLink, SetLamps, LampSetting, LampId, LampMode
    link = FirmwareLink(BridgeConfig(port="/dev/serial/by-id/usb-...-if00"),
                        on_event=print, on_link=print)
    link.start()
    link.wait_up(2.0)
    link.send_command(SetLamps((LampSetting(LampId.POINT_6, LampMode.ON),)))
    link.close()
"""
from __future__ import annotations

import collections
import enum
import logging
import os
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import serial

from .config import BridgeConfig
from .protocol import (
    PROTOCOL_VERSION,
    Ack,
    Capability,
    ErrorCode,
    ErrorReport,
    FrameDecoder,
    Heartbeat,
    Hello,
    InputEvent,
    InputId,
    McuStatus,
    Message,
    MsgType,
    Nak,
    NakReason,
    ProtocolError,
    Received,
    Rejected,
    SEQUENCED_TYPES,
    Version,
    encode_frame,
    next_seq,
)

log = logging.getLogger(__name__)

#: Commands the host may send with :meth:`FirmwareLink.send_command`.
COMMAND_TYPES = frozenset({MsgType.SET_LAMPS, MsgType.SHAKER})
#: Minimum gap between two NAK(BAD_FRAME) sent by the host, seconds (docs: "NAK rate limit").
NAK_HOLDOFF_S = 0.002
#: Read timeout of the port: the granularity of the I/O thread's timers, seconds.
POLL_S = 0.005
#: Minimum gap between two WARNING lines about frames refused with a matching CRC, seconds.
REFUSED_LOG_S = 5.0
#: Listener calls waiting on the dispatch thread beyond which input events and error reports are
#: no longer acknowledged to the MCU (it keeps them and sends them again): a listener that does
#: not return must not make the host's memory grow without bound, nor lose events.
DISPATCH_BACKLOG_MAX = 1000


class LinkState(str, enum.Enum):
    """Host link states (docs/firmware-protocol.md, "Host state machine")."""

    DISCONNECTED = "disconnected"
    HANDSHAKE = "handshake"
    UP = "up"
    CLOSED = "closed"


@dataclass(frozen=True)
class LinkStatus:
    """Snapshot given to link listeners on every change of ``up`` or ``rolls_allowed``.

    ``rolls_allowed`` is False when config requires the far-wall sensor and the link is down, the
    MCU has no wall sensor, or it reports the sensor faulty: the controller must then refuse
    rolls and light the fault lamp.  ``reason`` says why the link is not up ("" when up).
    """

    up: bool
    state: LinkState
    reason: str
    rolls_allowed: bool
    wall_sensor_ok: bool
    mcu: Version | None
    mcu_flags: int


@dataclass(frozen=True)
class LinkEvent:
    """An input event from the MCU, delivered once.

    ``event_time``: when the input changed, in ``time.monotonic()`` seconds, from the MCU's own
    stamp ``mcu_time_ms`` mapped through the clock offset the link measures on every heartbeat
    exchange (within about 1 ms, the MCU's stamp resolution, plus half the best recent round
    trip, itself well under 1 ms on USB), so an
    event delivered late (retransmitted, or queued through a link outage) still carries the time
    it happened; it equals ``host_time`` until the first heartbeat answer.  ``host_time``:
    ``time.monotonic()`` at receipt.  ``seq``: the event's own sequence number (the MCU's
    counter).  ``cmd_seq``: for SHAKER_DONE from firmware with the ``SHAKER_DONE_SEQ``
    capability, the ``seq`` of the SHAKER command it answers (docs/firmware-protocol.md 4.9),
    else ``None``.
    """

    input: InputId
    value: int
    detail: int
    mcu_time_ms: int
    host_time: float
    seq: int
    boot_id: int
    event_time: float = 0.0
    cmd_seq: int | None = None


@dataclass(frozen=True)
class McuError:
    """An ERROR_REPORT from the MCU, delivered once."""

    code: ErrorCode
    detail: int
    text: str
    host_time: float


@dataclass(frozen=True)
class CommandResult:
    """A command the MCU acknowledged.  ``latency_s``: first transmission to ACK, seconds."""

    seq: int
    attempts: int
    latency_s: float


class CommandFailed(RuntimeError):
    """A command was not acknowledged.

    ``reason``: "timeout" (deadline passed), "no-ack" (1 + retries transmissions unanswered),
    "link-down" (the link never came up before the deadline), "mcu-restarted" (the MCU rebooted
    while the command was outstanding), "closed", or "nak:<REASON>" (the MCU refused it: it was
    not executed).  ``maybe_executed`` is True when the MCU may have acted on it (transmitted at
    least once and not refused): a caller may re-send an idempotent command such as SET_LAMPS,
    but must not blindly repeat a SHAKER.
    """

    def __init__(self, reason: str, seq: int, attempts: int, maybe_executed: bool) -> None:
        super().__init__(f"command seq {seq} failed: {reason} after {attempts} transmission(s)")
        self.reason = reason
        self.seq = seq
        self.attempts = attempts
        self.maybe_executed = maybe_executed


@dataclass
class LinkStats:
    """Counters since start (read with :meth:`FirmwareLink.stats`)."""

    frames_tx: int = 0
    frames_rx: int = 0
    bad_frames: int = 0
    naks_tx: int = 0
    retransmissions: int = 0
    stale_acks: int = 0
    refused_frames: int = 0
    held_events: int = 0
    duplicate_events: int = 0
    reconnects: int = 0
    commands_ok: int = 0
    commands_failed: int = 0


@dataclass
class _Pending:
    seq: int
    type: MsgType
    frame: bytes
    attempts: int = 0
    boots: set = field(default_factory=set)
    retx: bool = False
    outcome: str | None = None      # "ack" | "nak"
    nak_reason: NakReason | None = None
    first_tx: float = 0.0
    ack_time: float = 0.0


class FirmwareLink:
    """Host end of the link.  See the module docstring.

    Parameters:
        config: :class:`BridgeConfig` (port path, timeouts in seconds, retries).
        on_event: called with each :class:`LinkEvent` (once per MCU event, duplicates removed).
        on_link: called with a :class:`LinkStatus` once at :meth:`start` (the current status) and
            then whenever ``up``, ``rolls_allowed`` or ``wall_sensor_ok`` changes.
        on_error: called with each :class:`McuError`.
        session_id: u32 identifying this host process to the MCU (random by default), 1..2**32-1:
            0 is no session (docs/firmware-protocol.md 4.1).
        opener: ``opener(config) -> serial.Serial``-like object (tests); default opens pyserial
            with ``exclusive=config.exclusive``.

    Listeners run on the link's dispatch thread, never on the I/O thread.

    Raises:
        ValueError: ``session_id`` is 0 or not a u32.
    """

    def __init__(
        self,
        config: BridgeConfig,
        *,
        on_event: Callable[[LinkEvent], None] | None = None,
        on_link: Callable[[LinkStatus], None] | None = None,
        on_error: Callable[[McuError], None] | None = None,
        session_id: int | None = None,
        opener: Callable[[BridgeConfig], serial.Serial] | None = None,
    ) -> None:
        self.config = config
        self._event_listeners: list[Callable[[LinkEvent], None]] = [on_event] if on_event else []
        self._link_listeners: list[Callable[[LinkStatus], None]] = []
        self._error_listeners: list[Callable[[McuError], None]] = [on_error] if on_error else []
        self._rx_listeners: list[Callable[[float], None]] = []
        if session_id is not None and (not isinstance(session_id, int) or not 0 < session_id <= 0xFFFFFFFF):
            raise ValueError(f"session_id must be an integer 1..4294967295 (docs/firmware-protocol.md 4.1: "
                             f"non-zero), got {session_id!r}")
        self.session_id = session_id if session_id is not None else int.from_bytes(os.urandom(4), "little") or 1
        self._opener = opener or _open_serial
        self._lock = threading.RLock()
        self._cv = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._cmd_lock = threading.Lock()
        self._rng = random.Random(self.session_id)
        self._t0 = time.monotonic()
        self._port = None
        self._decoder = FrameDecoder()
        self._state = LinkState.DISCONNECTED
        self._reason = "connecting"
        self._epoch = 0
        self._seq = 0
        self._hello_seq = 0
        self._hello_attempts = 0
        self._hello_due = 0.0
        self._hb_due = 0.0
        self._hb_sent = 0.0
        self._sync: collections.deque[tuple[float, float, int]] = collections.deque(maxlen=16)
        self._last_rx = 0.0
        self._last_nak = -1.0
        self._refused_logged = -REFUSED_LOG_S
        self._refused_held = 0
        self._backoff = config.reconnect_initial_s
        self._next_connect = 0.0
        self._write_error: str | None = None
        self._pending: _Pending | None = None
        self._mcu: Version | None = None
        self._boot_id: int | None = None
        self._mcu_flags = 0
        self._last_event_seq: int | None = None
        self._last_status: tuple[bool, bool, bool] | None = None
        self._stats = LinkStats()
        self._closing = threading.Event()
        self._dispatch_q: queue.Queue = queue.Queue()
        # the newest frame arrival not yet told to the rx listeners (one queued call carries it)
        self._rx_latest: float | None = None
        self._held_logged = -REFUSED_LOG_S
        self._io_thread: threading.Thread | None = None
        self._dispatch_thread: threading.Thread | None = None
        st = self._status()
        self._last_status = (st.up, st.rolls_allowed, st.wall_sensor_ok)
        if on_link is not None:
            self.add_link_listener(on_link)

    # ------------------------------------------------------------------ public API

    def start(self) -> "FirmwareLink":
        """Start the I/O and dispatch threads (the first connection attempt is immediate)."""
        if self._io_thread is not None:
            return self
        self._io_thread = threading.Thread(target=self._io_main, name="firmware-link-io", daemon=True)
        self._dispatch_thread = threading.Thread(target=self._dispatch_main, name="firmware-link-dispatch", daemon=True)
        self._dispatch_thread.start()
        self._io_thread.start()
        return self

    def close(self) -> None:
        """Stop the threads and close the port.  Outstanding commands fail with "closed"."""
        self._closing.set()
        with self._cv:
            self._cv.notify_all()
        if self._io_thread is not None and self._io_thread is not threading.current_thread():
            self._io_thread.join(timeout=5)
        with self._lock:
            self._close_port()
            self._state = LinkState.CLOSED
            self._reason = "closed"
            self._cv.notify_all()
        self._dispatch_q.put(None)
        if self._dispatch_thread is not None and self._dispatch_thread is not threading.current_thread():
            self._dispatch_thread.join(timeout=5)

    def __enter__(self) -> "FirmwareLink":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def add_event_listener(self, fn: Callable[[LinkEvent], None]) -> None:
        """Call ``fn(LinkEvent)`` for every new input event (dispatch thread)."""
        self._event_listeners.append(fn)

    def add_link_listener(self, fn: Callable[[LinkStatus], None]) -> None:
        """Call ``fn(LinkStatus)`` at once with the current status, then whenever ``up``,
        ``rolls_allowed`` or ``wall_sensor_ok`` changes (dispatch thread).  The first call means a
        listener added after the link came up still learns it is up."""
        with self._lock:
            self._link_listeners.append(fn)
            self._dispatch_q.put((fn, self._status()))

    def add_rx_listener(self, fn: Callable[[float], None]) -> None:
        """Call ``fn(host_time)`` (``time.monotonic()`` of its arrival) for every valid frame
        received from the MCU while the link is up: heartbeats, events, acknowledgements
        (dispatch thread). A liveness signal for a supervisor such as
        ``controller.health.HealthMonitor.bridge_traffic``. Arrivals made while an earlier one is
        still waiting for the dispatch thread are told once, with the newest time: a listener
        that does not return costs one queued call, not one per frame."""
        self._rx_listeners.append(fn)

    def remove_event_listener(self, fn: Callable[[LinkEvent], None]) -> None:
        """Stop calling ``fn`` on input events (no error if it was not registered)."""
        if fn in self._event_listeners:
            self._event_listeners.remove(fn)

    def remove_link_listener(self, fn: Callable[[LinkStatus], None]) -> None:
        """Stop calling ``fn`` on link changes (no error if it was not registered)."""
        if fn in self._link_listeners:
            self._link_listeners.remove(fn)

    def add_error_listener(self, fn: Callable[[McuError], None]) -> None:
        """Call ``fn(McuError)`` for every ERROR_REPORT from the MCU (dispatch thread)."""
        self._error_listeners.append(fn)

    @property
    def up(self) -> bool:
        """True while the link is in state UP (HELLO answered, heartbeats flowing)."""
        return self._state is LinkState.UP

    def status(self) -> LinkStatus:
        """The current :class:`LinkStatus`."""
        with self._lock:
            return self._status()

    def rolls_allowed(self) -> bool:
        """False when config requires the far-wall sensor and it is not available and working."""
        with self._lock:
            return self._status().rolls_allowed

    def stats(self) -> LinkStats:
        """A copy of the counters."""
        with self._lock:
            return LinkStats(**vars(self._stats))

    def mcu_to_host_time(self, mcu_time_ms: int, default: float | None = None) -> float | None:
        """Host ``time.monotonic()`` seconds of MCU uptime ``mcu_time_ms`` (u32 ms, wrapping),
        from the heartbeat exchange with the smallest round trip among the last 16; ``default``
        before any exchange (or after an MCU restart)."""
        with self._lock:
            if not self._sync:
                return default
            _, host_mid, mcu_ms = min(self._sync)
        delta = (mcu_time_ms - mcu_ms) & 0xFFFFFFFF
        if delta >= 0x80000000:
            delta -= 0x100000000
        return host_mid + delta / 1000.0

    def wait_up(self, timeout: float) -> bool:
        """Block until the link is UP or ``timeout`` seconds pass.  Returns ``self.up``."""
        end = time.monotonic() + timeout
        with self._cv:
            while self._state is not LinkState.UP and not self._closing.is_set():
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(left)
            return self._state is LinkState.UP

    def send_command(self, message: Message, *, timeout: float | None = None) -> CommandResult:
        """Send a SET_LAMPS or SHAKER command and wait for its ACK.

        Retransmits the same frame (same seq) when no answer came within the ACK wait
        (``ack_timeout_s`` doubled at each transmission, at most 8 times it), at once on a NAK(BAD_FRAME)
        or an unreadable frame from the MCU, and after a reconnect; at most ``1 + retries``
        transmissions, all within ``timeout`` seconds (default ``command_deadline_s``), time spent
        waiting for a link outage to end included.

        Returns :class:`CommandResult` when acknowledged.  Raises :class:`CommandFailed` otherwise
        (see its ``reason`` and ``maybe_executed``), ``ProtocolError`` for a message type that is
        not a command.
        """
        if message.TYPE not in COMMAND_TYPES:
            raise ProtocolError(f"send_command takes SET_LAMPS or SHAKER, not {message.TYPE.name}")
        cfg = self.config
        deadline = time.monotonic() + (cfg.command_deadline_s if timeout is None else timeout)
        if not self._cmd_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise CommandFailed("timeout", 0, 0, False)
        try:
            with self._lock:
                seq = self._alloc_seq()
                p = _Pending(seq, message.TYPE, encode_frame(message, seq))
                self._pending = p
            try:
                return self._run_command(p, deadline)
            finally:
                with self._lock:
                    self._pending = None
                    if p.outcome == "ack":
                        self._stats.commands_ok += 1
                    else:
                        self._stats.commands_failed += 1
        finally:
            self._cmd_lock.release()

    # ------------------------------------------------------------------ command engine

    def _run_command(self, p: _Pending, deadline: float) -> CommandResult:
        cfg = self.config
        while True:
            with self._cv:
                while p.outcome is None:
                    if self._closing.is_set():
                        raise CommandFailed("closed", p.seq, p.attempts, p.attempts > 0)
                    now = time.monotonic()
                    if now >= deadline:
                        raise CommandFailed("timeout" if p.attempts else "link-down", p.seq, p.attempts, p.attempts > 0)
                    if self._state is LinkState.UP:
                        break
                    self._cv.wait(deadline - now)
                if p.outcome is not None:
                    break
                if p.attempts > cfg.retries:
                    raise CommandFailed("no-ack", p.seq, p.attempts, True)
                if p.boots and self._boot_id not in p.boots:
                    raise CommandFailed("mcu-restarted", p.seq, p.attempts, True)
                p.boots.add(self._boot_id)
                p.retx = False
                epoch = self._epoch
                if p.attempts == 0:
                    p.first_tx = time.monotonic()
                else:
                    self._stats.retransmissions += 1
                p.attempts += 1
            ok = self._write(p.frame)
            with self._cv:
                if not ok:
                    # not transmitted (port closed or write failed): wait for the I/O thread to
                    # notice (epoch change) instead of burning the retry budget
                    p.attempts -= 1
                    if p.attempts:
                        self._stats.retransmissions -= 1
                t_end = min(time.monotonic() + ack_wait(cfg.ack_timeout_s, p.attempts), deadline)
                while p.outcome is None and not p.retx and self._epoch == epoch and not self._closing.is_set():
                    left = t_end - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                if p.outcome is not None:
                    break
        if p.outcome == "nak":
            raise CommandFailed(f"nak:{p.nak_reason.name}", p.seq, p.attempts, False)
        return CommandResult(p.seq, p.attempts, p.ack_time - p.first_tx)

    def _alloc_seq(self) -> int:
        self._seq = next_seq(self._seq)
        return self._seq

    # ------------------------------------------------------------------ I/O thread

    def _io_main(self) -> None:
        while not self._closing.is_set():
            port = self._port
            if port is None:
                wait = self._next_connect - time.monotonic()
                if wait > 0:
                    self._closing.wait(min(wait, 0.05))
                    continue
                self._try_open()
                continue
            try:
                data = port.read(1)
                if data:
                    n = port.in_waiting
                    if n:
                        data += port.read(n)
            except (serial.SerialException, OSError, TypeError, AttributeError) as exc:
                with self._lock:
                    self._drop(f"read failed: {exc}")
                continue
            with self._lock:
                try:
                    if data:
                        for item in self._decoder.feed(data):
                            self._handle(item)
                    self._timers()
                except Exception as exc:  # a bug must not leave a dead link behind: start over
                    log.exception("firmware link: internal error")
                    self._drop(f"internal error: {type(exc).__name__}: {exc}")

    def _try_open(self) -> None:
        cfg = self.config
        port = None
        try:
            port = self._opener(cfg)
            port.reset_input_buffer()
        except (serial.SerialException, OSError, ValueError) as exc:
            if port is not None:
                try:
                    port.close()
                except (serial.SerialException, OSError):
                    pass
            with self._lock:
                self._reason = f"cannot open {cfg.port}: {exc}"
                self._schedule_reconnect()
            log.debug("firmware link: %s", self._reason)
            return
        with self._lock:
            self._port = port
            self._decoder.reset()
            self._write_error = None
            self._state = LinkState.HANDSHAKE
            self._reason = "handshake"
            self._epoch += 1
            self._begin_hello()
            self._cv.notify_all()

    def _begin_hello(self) -> None:
        now = time.monotonic()
        self._hello_seq = self._alloc_seq()
        self._hello_attempts = 0
        self._hello_due = now
        self._last_rx = now

    def _schedule_reconnect(self) -> None:
        jitter = 1.0 + 0.2 * (self._rng.random() - 0.5)
        self._next_connect = time.monotonic() + self._backoff * jitter
        self._backoff = min(self._backoff * 2, self.config.reconnect_max_s)

    def _close_port(self) -> None:
        with self._write_lock:
            port, self._port = self._port, None
            if port is not None:
                try:
                    port.close()
                except (serial.SerialException, OSError):
                    pass

    def _drop(self, reason: str) -> None:
        """Close the port and schedule a reconnect (holding self._lock)."""
        if self._closing.is_set():
            return
        log.info("firmware link down: %s", reason)
        self._close_port()
        self._decoder.reset()
        self._state = LinkState.DISCONNECTED
        self._reason = reason
        self._epoch += 1
        self._stats.reconnects += 1
        self._schedule_reconnect()
        self._cv.notify_all()
        self._publish_status()

    def _rehandshake(self, reason: str) -> None:
        """Back to HANDSHAKE without reopening the port (MCU restarted or lost its session)."""
        log.info("firmware link re-handshake: %s", reason)
        self._state = LinkState.HANDSHAKE
        self._reason = reason
        self._epoch += 1
        self._begin_hello()
        self._cv.notify_all()
        self._publish_status()

    def _timers(self) -> None:
        now = time.monotonic()
        if self._write_error:
            self._drop(self._write_error)
            return
        if self._state is LinkState.HANDSHAKE:
            if now >= self._hello_due:
                if self._hello_attempts > self.config.hello_retries:
                    self._drop(f"no VERSION answer to {self._hello_attempts} HELLO")
                    return
                self._hello_attempts += 1
                self._hello_due = now + self.config.hello_timeout_s
                cfg = self.config
                self._send(Hello(self.session_id, round(cfg.heartbeat_period_s * 1000), round(cfg.host_timeout_s * 1000)), self._hello_seq)
        elif self._state is LinkState.UP:
            if now - self._last_rx > self.config.link_timeout_s:
                self._drop(f"no frame from the MCU for {self.config.link_timeout_s:.3f} s")
                return
            if now >= self._hb_due:
                self._hb_due = now + self.config.heartbeat_period_s
                self._hb_sent = now
                self._send(Heartbeat(int((now - self._t0) * 1000) & 0xFFFFFFFF, self.session_id, 0))

    def _send(self, message: Message, seq: int = 0) -> None:
        self._write(encode_frame(message, seq))

    def _write(self, frame: bytes) -> bool:
        with self._write_lock:
            port = self._port
            if port is None:
                return False
            try:
                port.write(b"\x00" + frame)  # leading delimiter: a frame damaged before it cannot swallow this one
            except (serial.SerialException, OSError) as exc:
                self._write_error = f"write failed: {exc}"
                return False
            self._stats.frames_tx += 1
            return True

    # ------------------------------------------------------------------ receive side

    def _handle(self, item: Received | Rejected) -> None:
        now = time.monotonic()
        if isinstance(item, Rejected):
            self._stats.bad_frames += 1
            if item.frame is None:
                self._request_retx()
                if now - self._last_nak >= NAK_HOLDOFF_S:
                    self._last_nak = now
                    self._stats.naks_tx += 1
                    self._send(Nak(0, 0, NakReason.BAD_FRAME))
            else:
                self._refused(f"{item.detail} (type 0x{item.frame.type:02X} seq {item.frame.seq}; "
                              f"{item.reason.name})")
                if item.frame.type in [int(t) for t in SEQUENCED_TYPES] and item.frame.seq:
                    self._stats.naks_tx += 1
                    self._send(Nak(item.frame.seq, item.frame.type, item.reason))
            log.debug("firmware link: rejected frame: %s", item.detail)
            return
        self._stats.frames_rx += 1
        self._last_rx = now
        if self._state is LinkState.UP and self._rx_listeners:
            with self._lock:
                told = self._rx_latest is None
                self._rx_latest = now
            if told:
                self._dispatch_q.put((self._tell_rx, None))
        msg = item.message
        if isinstance(msg, Version):
            self._on_version(msg)
        elif isinstance(msg, Heartbeat):
            self._on_heartbeat(msg)
        elif isinstance(msg, Ack):
            p = self._pending
            if p is not None and p.attempts and msg.ack_seq == p.seq and msg.acked_type == p.type and p.outcome is None:
                p.outcome = "ack"
                p.ack_time = now
                self._cv.notify_all()
            else:
                self._stats.stale_acks += 1
        elif isinstance(msg, Nak):
            self._on_nak(msg)
        elif isinstance(msg, (InputEvent, ErrorReport)):
            if self._state is not LinkState.UP:
                return  # not acknowledged: the MCU will resend it once the session is up
            if self._dispatch_q.qsize() >= DISPATCH_BACKLOG_MAX:
                self._hold(msg, item.seq, now)
                return  # not acknowledged: the MCU keeps it and sends it again
            self._send(Ack(item.seq, int(msg.TYPE)))
            if item.seq == self._last_event_seq:
                self._stats.duplicate_events += 1
                return
            self._last_event_seq = item.seq
            if isinstance(msg, InputEvent):
                ev = LinkEvent(msg.input, msg.value, msg.detail, msg.time_ms, now, item.seq, self._boot_id or 0,
                               self.mcu_to_host_time(msg.time_ms, default=now), msg.cmd_seq)
                for fn in list(self._event_listeners):
                    self._dispatch_q.put((fn, ev))
            else:
                err = McuError(msg.code, msg.detail, msg.text, now)
                log.warning("MCU error %s detail %d: %s", msg.code.name, msg.detail, msg.text)
                for fn in list(self._error_listeners):
                    self._dispatch_q.put((fn, err))
        else:
            self._refused(f"{msg.TYPE.name} is not a message an MCU sends (seq {item.seq}; UNKNOWN_TYPE)")
            if item.seq:
                self._stats.naks_tx += 1
                self._send(Nak(item.seq, int(msg.TYPE), NakReason.UNKNOWN_TYPE))

    def _tell_rx(self, _: None) -> None:
        """Dispatch thread: call every rx listener with the newest frame arrival not yet told."""
        with self._lock:
            t, self._rx_latest = self._rx_latest, None
        if t is None:
            return
        for fn in list(self._rx_listeners):
            try:
                fn(t)
            except Exception:  # a listener's bug must not kill the link
                log.exception("firmware link listener %r failed", fn)

    def _hold(self, msg: object, seq: int, now: float) -> None:
        """An input event or error report left unacknowledged because :data:`DISPATCH_BACKLOG_MAX`
        listener calls are waiting (a listener does not return): counted, logged at ERROR at
        most once per :data:`REFUSED_LOG_S` seconds. The MCU sends it again; nothing is lost."""
        self._stats.held_events += 1
        if now - self._held_logged >= REFUSED_LOG_S:
            self._held_logged = now
            log.error("firmware link: %d listener calls waiting (a listener does not return): %s seq %d "
                      "not acknowledged, the MCU will send it again", self._dispatch_q.qsize(),
                      type(msg).__name__, seq)

    def _refused(self, what: str) -> None:
        """Count and log (WARNING, at most once per :data:`REFUSED_LOG_S` seconds, with how many
        were held back) a frame whose CRC matched but which the host refuses: unknown type,
        wrong length or field, another protocol version, a host-to-MCU type. Line noise almost
        never makes one (the CRC would have to match): an MCU with other firmware does, and
        the events it sends that way are lost, so it must be seen."""
        self._stats.refused_frames += 1
        now = time.monotonic()
        if now - self._refused_logged < REFUSED_LOG_S:
            self._refused_held += 1
            return
        more = f" ({self._refused_held} more held back)" if self._refused_held else ""
        log.warning("firmware link: refused a frame from the MCU: %s%s (MCU firmware %s)", what, more,
                    "%d.%d.%d" % (self._mcu.fw_major, self._mcu.fw_minor, self._mcu.fw_patch) if self._mcu else "unknown")
        self._refused_logged, self._refused_held = now, 0

    def _request_retx(self) -> None:
        p = self._pending
        if p is not None and p.attempts and p.outcome is None:
            p.retx = True
            self._cv.notify_all()

    def _on_version(self, v: Version) -> None:
        if self._state is not LinkState.HANDSHAKE or v.ack_seq != self._hello_seq:
            return
        if v.protocol != PROTOCOL_VERSION:
            self._drop(f"MCU speaks protocol {v.protocol}, this host {PROTOCOL_VERSION}")
            return
        if self._boot_id is not None and v.boot_id != self._boot_id:
            log.warning("firmware link: MCU restarted (boot id %08X -> %08X)", self._boot_id, v.boot_id)
            self._last_event_seq = None
            self._sync.clear()
        self._boot_id = v.boot_id
        self._mcu = v
        self._mcu_flags = v.status
        self._state = LinkState.UP
        self._reason = ""
        self._epoch += 1
        self._backoff = self.config.reconnect_initial_s
        self._hb_due = time.monotonic()
        self._cv.notify_all()
        self._publish_status()

    def _on_heartbeat(self, hb: Heartbeat) -> None:
        if self._state is not LinkState.UP:
            return
        if hb.ident != self._boot_id:
            self._rehandshake(f"MCU restarted (boot id {hb.ident:08X})")
            return
        if hb.flags & McuStatus.NO_SESSION:
            self._rehandshake("MCU has no session")
            return
        now = time.monotonic()
        rtt = now - self._hb_sent
        if self._hb_sent and 0 <= rtt < self.config.heartbeat_period_s:
            # (round trip, host time at the middle of it, MCU time): the MCU answers at once
            self._sync.append((rtt, (self._hb_sent + now) / 2, hb.time_ms))
        if hb.flags != self._mcu_flags:
            self._mcu_flags = hb.flags
            self._publish_status()

    def _on_nak(self, nak: Nak) -> None:
        if nak.nak_seq == 0:
            if nak.reason is NakReason.BAD_FRAME:
                self._request_retx()
            return
        if nak.reason is NakReason.NOT_READY:
            if self._state is LinkState.UP:
                self._rehandshake("MCU has no session (NOT_READY)")
            return
        p = self._pending
        if p is not None and p.attempts and nak.nak_seq == p.seq and p.outcome is None:
            p.outcome = "nak"
            p.nak_reason = nak.reason
            self._cv.notify_all()

    # ------------------------------------------------------------------ status and dispatch

    def _status(self) -> LinkStatus:
        up = self._state is LinkState.UP
        caps = self._mcu.capabilities if self._mcu else 0
        wall_ok = up and bool(caps & Capability.WALL_SENSOR) and not (self._mcu_flags & McuStatus.WALL_SENSOR_FAULT)
        rolls = wall_ok or not self.config.require_wall_sensor
        return LinkStatus(up, self._state, self._reason, rolls, wall_ok, self._mcu, self._mcu_flags)

    def _publish_status(self) -> None:
        st = self._status()
        key = (st.up, st.rolls_allowed, st.wall_sensor_ok)
        if key == self._last_status:
            return
        self._last_status = key
        for fn in list(self._link_listeners):
            self._dispatch_q.put((fn, st))

    def _dispatch_main(self) -> None:
        while True:
            item = self._dispatch_q.get()
            if item is None:
                return
            fn, arg = item
            try:
                fn(arg)
            except Exception:  # a listener's bug must not kill the link
                log.exception("firmware link listener %r failed", fn)


def ack_wait(ack_timeout_s: float, attempt: int) -> float:
    """Seconds to wait for an ACK after transmission number ``attempt`` (1-based): the ACK timeout
    doubled at each transmission, capped at 8 times it (docs/firmware-protocol.md 5.2), so a
    stalled peer or host is not mistaken for a dead line while corruption is still answered at
    once by the NAK-driven fast retransmit."""
    return ack_timeout_s * min(2 ** max(attempt - 1, 0), 8)


def _open_serial(cfg: BridgeConfig) -> serial.Serial:
    """Open ``cfg.port`` with pyserial: 8N1, no flow control, exclusive lock if configured."""
    return serial.Serial(
        port=cfg.port,
        baudrate=cfg.baud,
        timeout=POLL_S,
        write_timeout=cfg.write_timeout_s,
        exclusive=cfg.exclusive,
    )
