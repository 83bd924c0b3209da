"""A simulated table microcontroller on a pseudo-terminal, speaking docs/firmware-protocol.md.

It is the MCU side of the protocol written the way firmware would be (one loop, timers, a
duplicate filter keyed by session and sequence number), plus a fault injector between the
pseudo-terminal and the protocol engine.  Tests, the bench, the controller's demo and
``craps-table mcu-sim`` run it in a thread::

    with SimulatedMcu() as mcu:                 # creates a pty and a stable symlink to it
        link = FirmwareLink(BridgeConfig(port=str(mcu.path))).start()
        link.wait_up(2)
        mcu.strike_far_wall()                   # -> LinkEvent(FAR_WALL_STRIKE) at the host
        mcu.lamp("point-6")                     # -> ("on", 255)

``mcu.path`` plays the part of ``/dev/serial/by-id/...``: a symlink that disappears while the
simulated cable is unplugged (:meth:`SimulatedMcu.disconnect`) and points at a fresh pty when it
comes back, as udev does for a USB serial adapter.

Faults (:class:`FaultConfig`), applied per byte to the chosen direction(s): corrupt (XOR with a
random non-zero byte), drop, insert a random byte; a delay before each frame the MCU sends; a
disconnect right after every Nth executed command, before its ACK goes out (the worst moment: the
host must retransmit after reconnecting and the MCU must not act twice).
"""
from __future__ import annotations

import collections
import contextlib
import os
import random
import select
import shutil
import tempfile
import threading
import time
import tty
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from .protocol import (
    LAMP_NAMES,
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
    LampId,
    LampMode,
    McuStatus,
    Message,
    Nak,
    NakReason,
    Received,
    Rejected,
    SEQUENCED_TYPES,
    SetLamps,
    Shaker,
    ShakerAction,
    ShakerResult,
    Version,
    encode_frame,
    next_seq,
)

FIRMWARE_VERSION = (1, 0, 0)
ALL_CAPABILITIES = int(Capability.WALL_SENSOR | Capability.SHOOTER_BUTTON | Capability.SHAKER
                       | Capability.BLOWER | Capability.DOOR_SWITCH | Capability.TILT_SWITCH
                       | Capability.SHAKER_DONE_SEQ)
#: MCU event retransmission period, seconds (docs: "Timing").
EVENT_ACK_TIMEOUT_S = 0.05
#: Depth of the MCU's event queue (docs: oldest dropped, EVENT_QUEUE_OVERFLOW reported).
EVENT_QUEUE_DEPTH = 16
NAK_HOLDOFF_S = 0.002


@dataclass(frozen=True)
class FaultConfig:
    """Faults injected on the simulated serial line.

    Rates are probabilities per byte (0..1).  ``direction``: "both", "to-host" (bytes the MCU
    sends) or "to-mcu" (bytes the host sends).  ``delay_s``: extra latency before each frame the
    MCU sends, seconds.  ``disconnect_every``: unplug the cable right after every Nth executed
    command (before its ACK), for ``reconnect_after_s`` seconds; ``reboot_on_disconnect``: the
    MCU also restarts (loses its session and duplicate filter, gets a new boot id).
    """

    corrupt_rate: float = 0.0
    drop_rate: float = 0.0
    insert_rate: float = 0.0
    delay_s: float = 0.0
    direction: str = "both"
    disconnect_every: int | None = None
    reconnect_after_s: float = 0.05
    reboot_on_disconnect: bool = False

    def __post_init__(self) -> None:
        for name in ("corrupt_rate", "drop_rate", "insert_rate"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be within 0..1, got {v}")
        if self.delay_s < 0 or self.reconnect_after_s < 0:
            raise ValueError("delay_s and reconnect_after_s must be >= 0")
        if self.direction not in ("both", "to-host", "to-mcu"):
            raise ValueError(f"direction must be 'both', 'to-host' or 'to-mcu', got {self.direction!r}")
        if self.disconnect_every is not None and self.disconnect_every < 1:
            raise ValueError("disconnect_every must be >= 1")


@dataclass(frozen=True)
class ExecutedCommand:
    """A command the simulated MCU acted on: host ``session``, ``seq``, the message, uptime ms."""

    session: int
    seq: int
    message: Message
    time_ms: int


@dataclass
class _Outstanding:
    seq: int
    message: Message
    due: float
    attempts: int = 0


class SimulatedMcu:
    """The simulated microcontroller.  See the module docstring.

    Parameters:
        link_path: where to put the stable symlink to the pty (default: a new temp dir).
        faults: :class:`FaultConfig` (default: a clean line).
        seed: seeds the fault injector and the boot ids (runs are repeatable).
        capabilities: :class:`Capability` bits reported in VERSION.
        fitted_lamps: lamp ids present on this table (others are refused with NAK BAD_LAMP).
        event_ack_timeout_s: retransmission period of INPUT_EVENT / ERROR_REPORT.
        duplicate_filter: False makes a *broken* MCU that acts on every retransmission (only to
            show, in tests, what the filter prevents).
    """

    def __init__(
        self,
        link_path: Path | str | None = None,
        *,
        faults: FaultConfig | None = None,
        seed: int = 0,
        capabilities: int = ALL_CAPABILITIES,
        fitted_lamps: frozenset[int] | None = None,
        event_ack_timeout_s: float = EVENT_ACK_TIMEOUT_S,
        duplicate_filter: bool = True,
    ) -> None:
        self._tmpdir: str | None = None
        if link_path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="mcu-sim-")
            link_path = Path(self._tmpdir) / "ttyMCU"
        self.path = Path(link_path)
        self.faults = faults or FaultConfig()
        self.capabilities = capabilities
        self.fitted_lamps = frozenset(int(i) for i in (fitted_lamps or [int(x) for x in LampId]))
        self.event_ack_timeout_s = event_ack_timeout_s
        self.duplicate_filter = duplicate_filter
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._master: int | None = None
        self._slave: int | None = None
        self.pty_path: str | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._thread: threading.Thread | None = None
        self._running = False
        self._reconnect_at: float | None = None
        self._delayed: collections.deque[tuple[float, bytes]] = collections.deque()
        self.executed: list[ExecutedCommand] = []
        self.duplicates = 0
        self.bad_frames = 0
        self.disconnects = 0
        self.heartbeats_rx = 0
        self._commands_since_disconnect = 0
        self._boot()

    # ------------------------------------------------------------------ lifecycle

    def _boot(self) -> None:
        """Power-on state (also after a simulated reboot)."""
        self.boot_id = self._rng.getrandbits(32) or 1
        self._t0 = time.monotonic()
        self.session: int | None = None
        self._last_rx_seq: int | None = None
        self._last_response: Message | None = None
        self.host_timeout_s = 1.0
        self._last_host_rx = time.monotonic()
        self.failsafe = False
        self._lamps: dict[int, tuple[LampMode, int]] = {i: (LampMode.OFF, 0) for i in self.fitted_lamps}
        # the running shake: (action, end time, seq of its SHAKER command)
        self._shaker: tuple[ShakerAction, float, int] | None = None
        self._events: collections.deque[Message] = collections.deque()
        self._events_lost = 0
        self._outstanding: _Outstanding | None = None
        self._tx_seq = 0
        self._last_nak = -1.0
        self._decoder = FrameDecoder()
        self.door_open = False
        self.tilted = False
        self.wall_sensor_fault = False

    def start(self) -> Path:
        """Create the pty and the symlink, start the MCU thread.  Returns the symlink path."""
        with self._lock:
            self._plug()
            self._running = True
        self._thread = threading.Thread(target=self._main, name="mcu-sim", daemon=True)
        self._thread.start()
        return self.path

    def stop(self) -> None:
        """Stop the thread, close the pty, remove the symlink (and the temp dir it made)."""
        with self._lock:
            self._running = False
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._unplug()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def __enter__(self) -> "SimulatedMcu":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line discipline: bytes pass unchanged
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self._decoder.reset()
        self.pty_path = os.ttyname(slave)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        os.symlink(self.pty_path, tmp)
        os.replace(tmp, self.path)
        self._reconnect_at = None

    def _unplug(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        for fd in (self._master, self._slave):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._master = self._slave = None
        self._delayed.clear()

    # ------------------------------------------------------------------ test / operator API

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    @contextlib.contextmanager
    def frozen(self):
        """Hold the MCU loop still (for a test to queue several inputs at one instant)."""
        with self._lock:
            yield self

    def set_faults(self, **changes) -> None:
        """Change fault settings on the fly, e.g. ``set_faults(corrupt_rate=0.01)``."""
        with self._lock:
            self.faults = replace(self.faults, **changes)

    def disconnect(self, reconnect_after_s: float | None = 0.05, *, reboot: bool = False) -> None:
        """Unplug the simulated cable; plug it back after ``reconnect_after_s`` (None: never,
        until :meth:`reconnect`).  ``reboot``: the MCU also restarts."""
        with self._lock:
            self._disconnect(reconnect_after_s, reboot)
        self._wake()

    def reconnect(self) -> None:
        """Plug the cable back now (no-op if plugged)."""
        with self._lock:
            if self._master is None:
                self._plug()
        self._wake()

    def reboot(self) -> None:
        """Restart the MCU without unplugging (watchdog reset): new boot id, no session."""
        with self._lock:
            self._boot()
        self._wake()

    def emit(self, input_id: InputId, value: int = 1, detail: int = 0, cmd_seq: int | None = None) -> None:
        """Queue an INPUT_EVENT (sent reliably once a session exists); ``cmd_seq``: a
        SHAKER_DONE's command (tests send a late or replayed "done" this way)."""
        with self._lock:
            self._queue_event(InputEvent(input_id, value, self._uptime_ms(), detail, cmd_seq))
        self._wake()

    def strike_far_wall(self, zone: int = 0) -> None:
        """A die struck the far wall (sensor ``zone``; 0 = whole wall)."""
        self.emit(InputId.FAR_WALL_STRIKE, 1, zone)

    def press_shooter_button(self) -> None:
        """The shooter button was pressed and released (two events)."""
        self.emit(InputId.SHOOTER_BUTTON, 1)
        self.emit(InputId.SHOOTER_BUTTON, 0)

    def set_door(self, is_open: bool, index: int = 0) -> None:
        """Open or close a door switch."""
        with self._lock:
            self.door_open = bool(is_open)
        self.emit(InputId.DOOR, int(bool(is_open)), index)

    def set_tilt(self, tilted: bool) -> None:
        """Set the tilt switch."""
        with self._lock:
            self.tilted = bool(tilted)
        self.emit(InputId.TILT, int(bool(tilted)))

    def set_wall_sensor_fault(self, fault: bool) -> None:
        """Mark the far-wall sensor faulty (reported in heartbeats and by ERROR_REPORT)."""
        with self._lock:
            self.wall_sensor_fault = bool(fault)
            if fault:
                self._queue_event(ErrorReport(ErrorCode.WALL_SENSOR_FAULT, 0, "far-wall sensor open circuit"))
        self._wake()

    def report_error(self, code: ErrorCode, detail: int = 0, text: str = "") -> None:
        """Queue an ERROR_REPORT."""
        with self._lock:
            self._queue_event(ErrorReport(code, detail, text))
        self._wake()

    def lamp(self, name: str) -> tuple[str, int]:
        """Displayed state of lamp ``name``: (mode "on"|"off"|"flash", brightness 0..255).
        The fault lamp flashes at full brightness while there is no session or in failsafe."""
        lamp_id = {v: k for k, v in LAMP_NAMES.items()}[name]
        with self._lock:
            if lamp_id == LampId.FAULT and (self.session is None or self.failsafe):
                return ("flash", 255)
            mode, b = self._lamps.get(lamp_id, (LampMode.OFF, 0))
            return (mode.name.lower(), b)

    def lamps(self) -> dict[str, tuple[str, int]]:
        """Displayed state of every fitted lamp, by name."""
        return {LAMP_NAMES[i]: self.lamp(LAMP_NAMES[i]) for i in sorted(self.fitted_lamps)}

    @property
    def shaker_busy(self) -> bool:
        """True while a SHAKE or BLOW runs (started and its SHAKER_DONE not yet queued): another SHAKE
        or BLOW is then answered ``NAK(BUSY)`` (docs/firmware-protocol.md 4.8). Read without the
        lock: a snapshot that may change at once.
        """
        return self._shaker is not None

    def execution_counts(self) -> collections.Counter:
        """How many times each (session, seq) was executed (must never exceed 1)."""
        with self._lock:
            return collections.Counter((e.session, e.seq) for e in self.executed)

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Poll ``predicate`` every millisecond for up to ``timeout`` s.  Returns its last value."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(0.001)
        return bool(predicate())

    # ------------------------------------------------------------------ the MCU loop

    def _uptime_ms(self) -> int:
        return int((time.monotonic() - self._t0) * 1000) & 0xFFFFFFFF

    def _main(self) -> None:
        while True:
            with self._lock:
                if not self._running:
                    return
                timeout = self._timers()
                master = self._master
            fds = [self._wake_r] + ([master] if master is not None else [])
            try:
                readable, _, _ = select.select(fds, [], [], timeout)
            except (OSError, ValueError):
                continue
            if self._wake_r in readable:
                try:
                    os.read(self._wake_r, 4096)
                except OSError:
                    pass
            if master is not None and master in readable:
                with self._lock:
                    if self._master != master:
                        continue
                    try:
                        data = os.read(master, 4096)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        data = b""
                    if data:
                        if self.faults.direction in ("both", "to-mcu"):
                            data = self._mangle(data)
                        for item in self._decoder.feed(data):
                            self._handle(item)

    def _timers(self) -> float:
        """Run due timers; return seconds until the next one (at most 50 ms)."""
        now = time.monotonic()
        nxt = now + 0.05
        if self._reconnect_at is not None:
            if now >= self._reconnect_at:
                self._plug()
            else:
                nxt = min(nxt, self._reconnect_at)
        while self._delayed and self._delayed[0][0] <= now:
            self._write_now(self._delayed.popleft()[1])
        if self._delayed:
            nxt = min(nxt, self._delayed[0][0])
        if self.session is not None and not self.failsafe:
            lost_at = self._last_host_rx + self.host_timeout_s
            if now >= lost_at:
                self._enter_failsafe()
            else:
                nxt = min(nxt, lost_at)
        if self._shaker is not None:
            action, end, _ = self._shaker
            if now >= end:
                self._shaker_done(ShakerResult.COMPLETED)
            else:
                nxt = min(nxt, end)
        if self.session is not None:
            o = self._outstanding
            if o is None and self._events:
                self._report_overflow()
                self._tx_seq = next_seq(self._tx_seq)
                o = self._outstanding = _Outstanding(self._tx_seq, self._events.popleft(), now)
            if o is not None:
                if now >= o.due:
                    o.attempts += 1
                    o.due = now + self.event_ack_timeout_s
                    self._send(o.message, o.seq)
                nxt = min(nxt, o.due)
        return max(0.0, nxt - now)

    def _enter_failsafe(self) -> None:
        """No frame from the host for host_timeout: stop actuators, flash the fault lamp."""
        self.failsafe = True
        if self._shaker is not None:
            self._shaker_done(ShakerResult.FAILSAFE)
        self._queue_event(ErrorReport(ErrorCode.HOST_LOST, 0, "no frame from host"))

    def _shaker_done(self, result: ShakerResult) -> None:
        """The running shake ended: queue its SHAKER_DONE, carrying the seq of the SHAKER that
        started it when the firmware has the SHAKER_DONE_SEQ capability (docs 4.9)."""
        action, _, seq = self._shaker
        self._shaker = None
        tied = bool(self.capabilities & Capability.SHAKER_DONE_SEQ)
        self._queue_event(InputEvent(InputId.SHAKER_DONE, int(action), self._uptime_ms(), int(result),
                                     seq if tied else None))

    def _queue_event(self, msg: Message) -> None:
        """Queue a reliable message.  When the queue is full the new message is discarded and
        counted; one EVENT_QUEUE_OVERFLOW report is queued once there is room again."""
        if len(self._events) >= EVENT_QUEUE_DEPTH:
            self._events_lost += 1
            return
        self._events.append(msg)

    def _report_overflow(self) -> None:
        if self._events_lost and len(self._events) < EVENT_QUEUE_DEPTH:
            self._events.append(ErrorReport(ErrorCode.EVENT_QUEUE_OVERFLOW, min(self._events_lost, 0xFFFF), "event queue full"))
            self._events_lost = 0

    def _status_flags(self) -> int:
        f = 0
        if self.door_open:
            f |= McuStatus.DOOR_OPEN
        if self.tilted:
            f |= McuStatus.TILTED
        if self._shaker is not None:
            f |= McuStatus.SHAKER_BUSY
        if self.wall_sensor_fault:
            f |= McuStatus.WALL_SENSOR_FAULT
        if self.failsafe:
            f |= McuStatus.FAILSAFE
        if self.session is None:
            f |= McuStatus.NO_SESSION
        return int(f)

    # ------------------------------------------------------------------ receive

    def _handle(self, item: Received | Rejected) -> None:
        now = time.monotonic()
        if isinstance(item, Rejected):
            self.bad_frames += 1
            if item.frame is None:
                if self._outstanding is not None:
                    self._outstanding.due = now  # fast retransmit of our own pending event
                if now - self._last_nak >= NAK_HOLDOFF_S:
                    self._last_nak = now
                    self._send(Nak(0, 0, NakReason.BAD_FRAME))
            elif item.frame.type in [int(t) for t in SEQUENCED_TYPES] and item.frame.seq:
                self._send(Nak(item.frame.seq, item.frame.type, item.reason))
            return
        msg = item.message
        self._last_host_rx = now
        if self.session is not None and self.failsafe and not isinstance(msg, Hello):
            if isinstance(msg, Heartbeat) and msg.ident == self.session:
                self.failsafe = False
        if isinstance(msg, Hello):
            if msg.session_id != self.session:
                self.session = msg.session_id
                self._last_rx_seq = None
                self._last_response = None
                self._events.clear()
                self._events_lost = 0
                self._outstanding = None
                # a shake still running was commanded by another host process (restarted
                # faster than host_timeout): stop it, no SHAKER_DONE (docs 5.4)
                self._shaker = None
            self.failsafe = False
            self.host_timeout_s = msg.host_timeout_ms / 1000.0
            caps = self.capabilities
            self._send(Version(item.seq, PROTOCOL_VERSION, *FIRMWARE_VERSION, self.boot_id, caps,
                               len(self.fitted_lamps), self._status_flags()))
        elif isinstance(msg, Heartbeat):
            self.heartbeats_rx += 1
            flags = self._status_flags()
            if self.session is None or msg.ident != self.session:
                flags |= McuStatus.NO_SESSION
            self._send(Heartbeat(self._uptime_ms(), self.boot_id, flags))
        elif isinstance(msg, Ack):
            o = self._outstanding
            if o is not None and msg.ack_seq == o.seq and msg.acked_type == int(o.message.TYPE):
                self._outstanding = None
        elif isinstance(msg, Nak):
            o = self._outstanding
            if msg.nak_seq == 0 and msg.reason is NakReason.BAD_FRAME:
                if o is not None:
                    o.due = now
            elif o is not None and msg.nak_seq == o.seq:
                self._outstanding = None  # the host refused it; nothing to retry
        elif isinstance(msg, (SetLamps, Shaker)):
            self._on_command(item.seq, msg)
        elif item.seq:
            self._send(Nak(item.seq, int(msg.TYPE), NakReason.UNKNOWN_TYPE))

    def _on_command(self, seq: int, msg: SetLamps | Shaker) -> None:
        if self.session is None:
            self._send(Nak(seq, int(msg.TYPE), NakReason.NOT_READY))
            return
        if seq == self._last_rx_seq and self._last_response is not None and self.duplicate_filter:
            self.duplicates += 1              # a retransmission: answer again, do not act again
            self._send(self._last_response)
            return
        response: Message
        if isinstance(msg, SetLamps):
            bad = [s.lamp for s in msg.lamps if int(s.lamp) not in self.fitted_lamps]
            if bad:
                response = Nak(seq, int(msg.TYPE), NakReason.BAD_LAMP)
            else:
                for s in msg.lamps:
                    self._lamps[int(s.lamp)] = (s.mode, s.brightness)
                response = Ack(seq, int(msg.TYPE))
        else:
            response = self._shaker_command(seq, msg)
        if isinstance(response, Ack):
            self.executed.append(ExecutedCommand(self.session, seq, msg, self._uptime_ms()))
        self._last_rx_seq = seq
        self._last_response = response
        if isinstance(response, Ack) and self.faults.disconnect_every:
            self._commands_since_disconnect += 1
            if self._commands_since_disconnect >= self.faults.disconnect_every:
                self._commands_since_disconnect = 0
                self._disconnect(self.faults.reconnect_after_s, self.faults.reboot_on_disconnect)
                return  # the ACK is lost with the cable; the host must retransmit
        self._send(response)

    def _shaker_command(self, seq: int, msg: Shaker) -> Message:
        needed = {ShakerAction.SHAKE: Capability.SHAKER, ShakerAction.BLOW: Capability.BLOWER}
        if msg.action in needed and not self.capabilities & needed[msg.action]:
            return Nak(seq, int(msg.TYPE), NakReason.BAD_PAYLOAD)
        if msg.action == ShakerAction.STOP:
            if self._shaker is not None:
                self._shaker_done(ShakerResult.STOPPED)   # cmd_seq: the SHAKE's, not the STOP's
            return Ack(seq, int(msg.TYPE))
        if self._shaker is not None:
            return Nak(seq, int(msg.TYPE), NakReason.BUSY)
        self._shaker = (msg.action, time.monotonic() + msg.duration_ms / 1000.0, seq)
        return Ack(seq, int(msg.TYPE))

    # ------------------------------------------------------------------ transmit

    def _disconnect(self, reconnect_after_s: float | None, reboot: bool) -> None:
        self.disconnects += 1
        self._unplug()
        if reboot:
            self._boot()
        self._reconnect_at = None if reconnect_after_s is None else time.monotonic() + reconnect_after_s

    def _send(self, msg: Message, seq: int = 0) -> None:
        data = b"\x00" + encode_frame(msg, seq)  # leading delimiter, as the host does
        if self.faults.direction in ("both", "to-host"):
            data = self._mangle(data)
        if self.faults.delay_s > 0:
            self._delayed.append((time.monotonic() + self.faults.delay_s, data))
        else:
            self._write_now(data)

    def _write_now(self, data: bytes) -> None:
        if self._master is None or not data:
            return  # cable unplugged: the bytes are lost, as on a real line
        try:
            os.write(self._master, data)
        except (BlockingIOError, OSError):
            pass  # nobody reading and the pty buffer is full: bytes lost

    def _mangle(self, data: bytes) -> bytes:
        f = self.faults
        if not (f.corrupt_rate or f.drop_rate or f.insert_rate):
            return data
        rnd = self._rng.random
        out = bytearray()
        for b in data:
            if f.drop_rate and rnd() < f.drop_rate:
                continue
            if f.corrupt_rate and rnd() < f.corrupt_rate:
                b ^= self._rng.randrange(1, 256)
            out.append(b)
            if f.insert_rate and rnd() < f.insert_rate:
                out.append(self._rng.randrange(256))
        return bytes(out)
