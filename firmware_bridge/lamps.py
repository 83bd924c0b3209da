"""Layout lamps driven through the table microcontroller (the firmware implementation of the
lamp interface in CONTRACTS.md / controller/lamps.py, by structural typing).

Example::

    link = FirmwareLink(BridgeConfig(port="/dev/serial/by-id/usb-...-if00")).start()
    lamps = FirmwareLampDriver(link)
    lamps.set_lamp("point-6", "on")
    lamps.set_lamp("fault", "flash", 0.5)
    lamps.close()

Lamp names map to firmware lamp ids as in docs/firmware-protocol.md ("Lamp ids").
"""
from __future__ import annotations

import logging
import math
import threading

from .link import CommandFailed, FirmwareLink, LinkStatus
from .protocol import LAMP_IDS, LAMP_MODES, LampMode, LampSetting, SetLamps

log = logging.getLogger(__name__)


class FirmwareLampDriver:
    """Lamp driver over a :class:`~firmware_bridge.link.FirmwareLink`.

    ``set_lamp`` records the wanted state and, if the link is up, sends it as one SET_LAMPS and
    waits for the ACK (at most ``timeout_s`` seconds, 0.25 by default, so a dead link never stalls
    the caller for long).  It never raises for a link failure: the wanted state of every lamp is
    re-sent in one SET_LAMPS each time the link comes (back) up, so after a reconnect or an MCU
    restart the layout shows what the controller last asked for.  While the link is down the MCU
    flashes the fault lamp by itself (its failsafe, docs/firmware-protocol.md).

    Raises ``ValueError`` for an unknown lamp name or mode or a brightness outside 0..1.
    """

    def __init__(self, link: FirmwareLink, *, timeout_s: float = 0.25) -> None:
        self._link = link
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._wanted: dict[str, LampSetting] = {
            name: LampSetting(lamp_id, LampMode.OFF, 255) for name, lamp_id in LAMP_IDS.items()
        }
        self._closed = False
        self.failures = 0
        # the listener is called at once with the current status: if the link is already up the
        # full lamp state is sent (a new driver owns the layout; the MCU may still show an old
        # host's lamps), and again at every link up
        link.add_link_listener(self._on_link)

    @staticmethod
    def setting(name: str, mode: str, brightness: float = 1.0) -> LampSetting:
        """The firmware :class:`LampSetting` for a lamp name, mode and brightness 0..1 (rounded to
        0..255).  Raises ``ValueError`` naming the bad argument."""
        if name not in LAMP_IDS:
            raise ValueError(f"unknown lamp {name!r}; lamps are {sorted(LAMP_IDS)}")
        if mode not in LAMP_MODES:
            raise ValueError(f"unknown lamp mode {mode!r}; modes are {sorted(LAMP_MODES)}")
        if isinstance(brightness, bool) or not isinstance(brightness, (int, float)) or not math.isfinite(brightness) \
                or not 0.0 <= brightness <= 1.0:
            raise ValueError(f"brightness must be a number within 0..1, got {brightness!r}")
        return LampSetting(LAMP_IDS[name], LAMP_MODES[mode], round(brightness * 255))

    def set_lamp(self, name: str, mode: str, brightness: float = 1.0) -> None:
        """Set lamp ``name`` ("point-4" ... "fault") to ``mode`` ("on"|"off"|"flash") at
        ``brightness`` (0..1, fraction of full PWM duty)."""
        setting = self.setting(name, mode, brightness)
        with self._lock:
            if self._closed:
                raise ValueError("lamp driver is closed")
            self._wanted[name] = setting
            if self._link.up:
                self._send((setting,))

    def wanted(self) -> dict[str, tuple[str, float]]:
        """The state last asked for, by lamp name: (mode, brightness 0..1)."""
        with self._lock:
            return {n: (s.mode.name.lower(), s.brightness / 255) for n, s in self._wanted.items()}

    def resync(self) -> bool:
        """Send the wanted state of all lamps in one SET_LAMPS.  Returns True if acknowledged."""
        with self._lock:
            return self._send(tuple(self._wanted.values()))

    def close(self) -> None:
        """Turn every lamp off (best effort, if the link is up) and stop following the link.
        The link itself stays open: it belongs to the caller."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._link.remove_link_listener(self._on_link)
            if self._link.up:
                self._send(tuple(LampSetting(s.lamp, LampMode.OFF, 0) for s in self._wanted.values()))

    def _send(self, settings: tuple[LampSetting, ...]) -> bool:
        try:
            self._link.send_command(SetLamps(settings), timeout=self._timeout_s)
            return True
        except CommandFailed as exc:
            self.failures += 1
            log.warning("lamp update not acknowledged (%s); it will be re-sent when the link is up", exc)
            return False

    def _on_link(self, status: LinkStatus) -> None:
        if status.up and not self._closed:
            self.resync()
