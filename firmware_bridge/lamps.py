"""Layout lamps driven through the table microcontroller (the firmware implementation of the
lamp interface in CONTRACTS.md / controller/lamps.py, by structural typing).

Example::

    link = FirmwareLink(BridgeConfig(port="/dev/serial/by-id/usb-...-if00")).start()
    lamps = FirmwareLampDriver(link)
    lamps.set_lamp("point-6", "on")          # returns at once; a worker thread sends it
    lamps.set_lamp("fault", "flash", 0.5)
    lamps.flush(1.0)                         # optional: wait until the MCU acknowledged
    lamps.close()

Lamp names map to firmware lamp ids as in docs/firmware-protocol.md ("Lamp ids").

How the state reaches the MCU: :meth:`FirmwareLampDriver.set_lamp` only records the wanted
state and wakes the driver's worker thread.  The worker compares the wanted state with what the
MCU acknowledged and sends every lamp that differs in one SET_LAMPS (after a link up: the whole
state), and keeps doing so, with a growing pause between failed attempts, until the MCU
acknowledges it.  So an update lost while the link stays up (a noise burst shorter than the link
timeout, the command lock held by a slow SHAKER) is sent again, and a slow or stalled MCU never
holds up the caller (the table service thread).
"""
from __future__ import annotations

import logging
import threading
import time

from controller.lamp_values import check_brightness

from .link import CommandFailed, FirmwareLink, LinkStatus
from .protocol import LAMP_IDS, LAMP_MODES, LampMode, LampSetting, SetLamps

log = logging.getLogger(__name__)

#: the NAK reason of a SET_LAMPS naming a lamp the MCU has not fitted (docs 4.6, 4.10)
_BAD_LAMP = "nak:BAD_LAMP"


class FirmwareLampDriver:
    """Lamp driver over a :class:`~firmware_bridge.link.FirmwareLink` (see the module docstring).

    ``set_lamp`` validates and records the wanted state and returns at once: it never waits for
    the MCU and never raises for a link failure.  A worker thread (``firmware-lamps``) sends the
    lamps whose wanted state the MCU has not acknowledged, merged into one SET_LAMPS, and repeats
    until acknowledged: every ``retry_s`` seconds at first, doubling to ``retry_max_s``, while the
    link is up; at every link up (reconnect, MCU restart) it sends the whole state.  While the
    link is down the MCU flashes the fault lamp by itself (its failsafe, docs/firmware-protocol.md).

    An MCU with fewer lamps fitted refuses a SET_LAMPS naming a missing lamp whole with
    NAK(BAD_LAMP) (docs 4.6); the driver then sends the lamps one per SET_LAMPS, remembers the
    lamps the MCU refuses (:attr:`refused`, logged once at WARNING each) and leaves them out
    afterwards.

    Args:
        link: the link (started or not; it belongs to the caller and is not closed here).
        timeout_s: how long the worker waits for one SET_LAMPS to be acknowledged, seconds
            (retransmissions included; the link's ``send_command`` timeout).
        retry_s: pause after a first failed attempt before the next one, seconds.
        retry_max_s: the longest pause between attempts while failures go on, seconds.
        close_timeout_s: how long :meth:`close` tries to turn the lamps off, seconds.

    Attributes:
        sent: SET_LAMPS commands sent (counted from 0).
        failures: SET_LAMPS commands not acknowledged (other than a BAD_LAMP refusal).

    Raises ``ValueError`` (from ``set_lamp``) for an unknown lamp name or mode or a brightness
    that is not a finite number within 0..1, and for a non-positive timing argument.
    """

    def __init__(self, link: FirmwareLink, *, timeout_s: float = 0.5, retry_s: float = 0.05,
                 retry_max_s: float = 1.0, close_timeout_s: float = 0.5) -> None:
        for arg, value in (("timeout_s", timeout_s), ("retry_s", retry_s), ("retry_max_s", retry_max_s),
                           ("close_timeout_s", close_timeout_s)):
            if not value > 0:
                raise ValueError(f"{arg} must be > 0 seconds, got {value!r}")
        self._link = link
        self._timeout_s = float(timeout_s)
        self._retry_s = float(retry_s)
        self._retry_max_s = max(float(retry_max_s), float(retry_s))
        self._close_timeout_s = float(close_timeout_s)
        self._cv = threading.Condition()
        self._wanted: dict[str, LampSetting] = {
            name: LampSetting(lamp_id, LampMode.OFF, 255) for name, lamp_id in LAMP_IDS.items()
        }
        # what the MCU acknowledged, by lamp name; a lamp missing here is unknown (sent again)
        self._acked: dict[str, LampSetting] = {}
        self._epoch = 0             # +1 at each link up: an ACK from an older epoch is not trusted
        # the last status the listener saw; starting from the current one, the initial listener
        # call of an up link does not make the worker send the whole state twice
        self._link_up = link.up
        self._refused: dict[str, int | None] = {}   # lamp -> VERSION lamp_count of the MCU refusing it
        self._warned: set[str] = set()
        self._retry_at = 0.0
        self._pause = 0.0
        self._failing = False
        self._closed = False
        self._stopping = False
        self.failures = 0
        self.sent = 0
        self._worker = threading.Thread(target=self._run, name="firmware-lamps", daemon=True)
        self._worker.start()
        # the listener is called at once with the current status: if the link is already up the
        # full lamp state is sent (a new driver owns the layout; the MCU may still show an old
        # host's lamps), and again at every link up
        link.add_link_listener(self._on_link)

    @property
    def link(self) -> FirmwareLink:
        """The link the lamps are sent over."""
        return self._link

    @property
    def refused(self) -> frozenset[str]:
        """The lamps the MCU refused with NAK(BAD_LAMP) (not fitted); they are no longer sent."""
        with self._cv:
            return frozenset(self._refused)

    @staticmethod
    def setting(name: str, mode: str, brightness: float = 1.0) -> LampSetting:
        """The firmware :class:`LampSetting` for a lamp name, mode and brightness 0..1 (rounded to
        0..255).  Raises ``ValueError`` naming the bad argument (brightness: see
        :func:`controller.lamp_values.check_brightness`)."""
        if name not in LAMP_IDS:
            raise ValueError(f"unknown lamp {name!r}; lamps are {sorted(LAMP_IDS)}")
        if mode not in LAMP_MODES:
            raise ValueError(f"lamp {name}: unknown lamp mode {mode!r}; modes are {sorted(LAMP_MODES)}")
        value = check_brightness(name, brightness)
        return LampSetting(LAMP_IDS[name], LAMP_MODES[mode], round(value * 255))

    def set_lamp(self, name: str, mode: str, brightness: float = 1.0) -> None:
        """Set lamp ``name`` ("point-4" ... "fault") to ``mode`` ("on"|"off"|"flash") at
        ``brightness`` (0..1, fraction of full PWM duty).

        Returns at once: the worker thread sends the change (see the class docstring).

        Raises:
            ValueError: an unknown lamp or mode, a bad brightness, or the driver is closed.
        """
        setting = self.setting(name, mode, brightness)
        with self._cv:
            if self._closed:
                raise ValueError("lamp driver is closed")
            if self._wanted[name] != setting:
                self._wanted[name] = setting
                self._cv.notify_all()

    def wanted(self) -> dict[str, tuple[str, float]]:
        """The state last asked for, by lamp name: (mode, brightness 0..1)."""
        with self._cv:
            return {n: (s.mode.name.lower(), s.brightness / 255) for n, s in self._wanted.items()}

    def pending(self) -> list[str]:
        """The lamps whose wanted state the MCU has not acknowledged yet (refused lamps left out)."""
        with self._cv:
            return [n for n, _ in self._dirty()]

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until the MCU acknowledged the wanted state of every
        lamp (refused lamps left out).  Returns True if it did.  For tests and tools: the
        controller never needs to wait."""
        end = time.monotonic() + timeout
        with self._cv:
            while self._dirty():
                left = end - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._cv.wait(left)
            return True

    def resync(self, wait_s: float = 0.0) -> bool:
        """Forget what the MCU acknowledged so that the worker sends the whole wanted state again,
        and wait up to ``wait_s`` seconds for it to be acknowledged.  Returns True if it was."""
        with self._cv:
            self._forget()
        return self.flush(wait_s) if wait_s > 0 else False

    def close(self) -> None:
        """Stop the worker, then try once to turn every lamp off (at most about
        ``timeout_s + close_timeout_s`` seconds in all; nothing is sent if the link is down), and
        stop following the link.  The link itself stays open: it belongs to the caller.  Safe to
        call twice."""
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._stopping = True
            self._cv.notify_all()
        self._link.remove_link_listener(self._on_link)
        if self._worker is not threading.current_thread():
            self._worker.join(timeout=self._timeout_s + 0.5)
        if not self._link.up:
            return
        end = time.monotonic() + self._close_timeout_s
        with self._cv:
            off = [(n, LampSetting(s.lamp, LampMode.OFF, 0)) for n, s in self._wanted.items() if n not in self._refused]
        if off:
            self._deliver(off, self._epoch, deadline=end)

    # ------------------------------------------------------------------ worker

    def _dirty(self) -> list[tuple[str, LampSetting]]:
        """Lamps whose wanted state differs from the acknowledged one (holding ``_cv``)."""
        return [(n, s) for n, s in self._wanted.items() if n not in self._refused and self._acked.get(n) != s]

    def _forget(self) -> None:
        """The MCU's lamps are unknown: send everything, now (holding ``_cv``)."""
        self._acked.clear()
        self._epoch += 1
        self._retry_at = 0.0
        self._pause = 0.0
        self._cv.notify_all()

    def _on_link(self, status: LinkStatus) -> None:
        """Link listener (dispatch thread): never sends, only wakes the worker."""
        with self._cv:
            if status.up and not self._link_up:
                count = status.mcu.lamp_count if status.mcu is not None else None
                # another MCU (a different lamp count) may have the lamps this one refused
                self._refused = {n: c for n, c in self._refused.items() if c == count}
                self._forget()
            self._link_up = status.up

    def _run(self) -> None:
        while True:
            with self._cv:
                while True:
                    if self._stopping:
                        return
                    batch = self._dirty()
                    if not batch:
                        self._cv.wait()
                        continue
                    if not self._link.up:
                        self._cv.wait(0.1)       # the listener wakes us at link up; poll anyway
                        continue
                    wait = self._retry_at - time.monotonic()
                    if wait > 0:
                        self._cv.wait(wait)
                        continue
                    epoch = self._epoch
                    break
            try:
                self._deliver(batch, epoch, deadline=None)
            except Exception:  # noqa: BLE001 - a bug must not leave the lamps unattended for good
                log.exception("lamp worker: internal error")
                self._failed(None, batch)

    def _deliver(self, batch: list[tuple[str, LampSetting]], epoch: int, *, deadline: float | None) -> bool:
        """Send ``batch`` in one SET_LAMPS; on NAK(BAD_LAMP) one lamp per SET_LAMPS, refusing the
        lamps the MCU does not have.  ``deadline``: monotonic time bounding all of it (close), or
        None (worker: ``timeout_s`` per command).  Returns True when nothing is left to send."""
        try:
            self._send(batch, deadline)
        except CommandFailed as exc:
            if exc.reason != _BAD_LAMP:
                self._failed(exc, batch)
                return False
            if len(batch) == 1:
                self._refuse(batch[0][0])
                return True
            log.info("lamps: the MCU refused a SET_LAMPS of %d lamps (BAD_LAMP); sending them one by one",
                     len(batch))
            for item in batch:
                if deadline is None and self._stopping:
                    return False
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                try:
                    self._send([item], deadline)
                except CommandFailed as exc1:
                    if exc1.reason == _BAD_LAMP:
                        self._refuse(item[0])
                        continue
                    self._failed(exc1, [item])
                    return False
                self._acknowledged([item], epoch)
            return True
        self._acknowledged(batch, epoch)
        return True

    def _send(self, batch: list[tuple[str, LampSetting]], deadline: float | None) -> None:
        """One SET_LAMPS; raises CommandFailed."""
        timeout = self._timeout_s if deadline is None else max(0.0, deadline - time.monotonic())
        self.sent += 1
        self._link.send_command(SetLamps(tuple(s for _, s in batch)), timeout=timeout)

    def _acknowledged(self, batch: list[tuple[str, LampSetting]], epoch: int) -> None:
        with self._cv:
            if epoch == self._epoch:      # no link up since it was taken: the ACK is current
                for name, setting in batch:
                    self._acked[name] = setting
            self._pause = 0.0
            self._retry_at = 0.0
            if self._failing:
                self._failing = False
                log.info("lamp updates acknowledged again")
            self._cv.notify_all()

    def _failed(self, exc: CommandFailed | None, batch: list[tuple[str, LampSetting]]) -> None:
        with self._cv:
            self.failures += 1
            if exc is None or exc.maybe_executed:
                for name, _ in batch:     # the MCU may show either state now: unknown
                    self._acked.pop(name, None)
            self._pause = min(max(self._pause * 2, self._retry_s), self._retry_max_s)
            self._retry_at = time.monotonic() + self._pause
            first = not self._failing
            self._failing = True
            self._cv.notify_all()
        if first:
            log.warning("lamp update not acknowledged (%s); re-sending every %.2f..%.2f s until it is",
                        exc, self._retry_s, self._retry_max_s)
        else:
            log.debug("lamp update not acknowledged (%s)", exc)

    def _refuse(self, name: str) -> None:
        status = self._link.status()
        count = status.mcu.lamp_count if status.mcu is not None else None
        with self._cv:
            self._refused[name] = count
            warn = name not in self._warned
            self._warned.add(name)
            self._cv.notify_all()
        if warn:
            log.warning("lamp %s: the MCU refuses it (NAK BAD_LAMP: not fitted, VERSION lamp_count %s); "
                        "it is no longer sent", name, count)
