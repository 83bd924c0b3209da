"""Layout lamps: one interface, swappable drivers, and the mapping from the game to the lamps.

Lamp names (CONTRACTS.md): ``point-4`` ... ``point-10``, ``puck-on``, ``no-roll``,
``call-boxperson``, ``bets-closed``, ``fault``. Modes: ``"on"``, ``"off"``, ``"flash"``.

- :class:`LampDriver` is the interface (structural: the firmware bridge's
  ``firmware_bridge.lamps.FirmwareLampDriver`` has the same two methods and does not import this).
- :class:`GpioLampDriver` drives one GPIO pin per lamp through a gpiozero ``LEDBoard``; the pin
  factory (lgpio on a Pi, ``MockFactory`` in tests) is chosen by gpiozero's usual means or passed.
- :func:`lamp_plan` is the pure rule: what every lamp shows for a game state, a lifecycle phase and
  the alerts in force; :class:`LampController` applies it to a driver, sending only changes.

What the lamps show (the layout conventions of 9 NYCRR 5324.52 tables):

- the point lamp of the point is lit while the puck is ON that number, and ``puck-on`` with it
  (the on/off marker named in 5324.52(i)(2); the point, (b)(1)(ii));
- ``bets-closed`` is lit while the dice are in motion (from the first motion of a throw to its
  verdict);
- ``no-roll`` flashes for ``flash_s`` seconds after a no roll (5324.52(k));
- ``call-boxperson`` flashes from a boxperson call until the next throw starts or the call is
  answered (5324.52(h)(1)(ii)(a));
- ``fault`` is lit while the service has a fault (camera lost, bus down).
"""
from __future__ import annotations

from typing import Mapping, Protocol, runtime_checkable

from controller.game import POINTS, GameState
from controller.lamp_values import check_brightness
from controller.lifecycle import IN_MOTION

POINT_LAMPS: tuple[str, ...] = tuple(f"point-{p}" for p in POINTS)
LAMP_NAMES: tuple[str, ...] = POINT_LAMPS + ("puck-on", "no-roll", "call-boxperson", "bets-closed", "fault")
MODES: tuple[str, ...] = ("on", "off", "flash")


@runtime_checkable
class LampDriver(Protocol):
    """Anything that can set a layout lamp."""

    def set_lamp(self, name: str, mode: str, brightness: float = 1.0) -> None:
        """Set lamp ``name`` (one of :data:`LAMP_NAMES`) to ``mode`` ("on", "off", "flash") at
        ``brightness`` 0.0..1.0 (drivers without dimming treat > 0 as full).

        Must not wait for slow hardware: it runs on the table service thread. A driver may apply
        the change later (the firmware driver hands it to its own thread, which re-sends it
        until the microcontroller acknowledges it).

        Raises:
            ValueError: an unknown lamp or mode, or a brightness that is not a finite number
                within 0..1 (:func:`check_lamp`).
        """
        ...

    def close(self) -> None:
        """Turn every lamp off and release the hardware. Safe to call twice."""
        ...


def check_lamp(name: str, mode: str, brightness: float) -> float:
    """Validate a lamp command.

    Returns:
        the brightness as a float 0.0..1.0.

    Raises:
        ValueError: naming the unknown lamp, mode, or a brightness that is not a finite number
            within 0..1 (a string, ``None`` and ``True`` included; see
            :func:`controller.lamp_values.check_brightness`, shared with the firmware driver).
    """
    if name not in LAMP_NAMES:
        raise ValueError(f"unknown lamp {name!r}; lamps: {', '.join(LAMP_NAMES)}")
    if mode not in MODES:
        raise ValueError(f"lamp {name}: unknown mode {mode!r}; modes: on, off, flash")
    return check_brightness(name, brightness)


class GpioLampDriver:
    """Lamps on GPIO pins, one ``LED`` per lamp in a gpiozero ``LEDBoard``.

    Wiring: each lamp's driver input (a transistor or a MOSFET board, not the lamp itself) on the
    BCM pin given in config ``[lamps.pins]``; ``active_high = false`` for boards that switch on a
    low level. Lamps not in ``pins`` are ignored (a layout without them).

    Example::

        from gpiozero.pins.mock import MockFactory
        drv = GpioLampDriver({"point-4": 5, "puck-on": 6}, pin_factory=MockFactory())
        drv.set_lamp("point-4", "on")      # BCM 5 goes high

    Args:
        pins: lamp name -> BCM pin number (or a gpiozero pin name such as ``"GPIO5"``).
        active_high: ``True`` when a high level lights the lamp.
        pwm: drive brightness with PWM (needs PWM-capable pins; MockPWMPin in tests).
        flash_on_s, flash_off_s: the flash cadence in seconds.
        pin_factory: a gpiozero pin factory; ``None`` uses gpiozero's default
            (``GPIOZERO_PIN_FACTORY``).

    Raises:
        ValueError: for an unknown lamp name in ``pins``.
        gpiozero.GPIOZeroError: when a pin cannot be claimed (in use, not a GPIO).
    """

    def __init__(self, pins: Mapping[str, int | str], *, active_high: bool = True, pwm: bool = False,
                 flash_on_s: float = 0.25, flash_off_s: float = 0.25, pin_factory=None) -> None:
        from gpiozero import LEDBoard  # imported here: a firmware-driven table needs no gpiozero

        for name in pins:
            if name not in LAMP_NAMES:
                raise ValueError(f"lamps.pins: unknown lamp {name!r}; lamps: {', '.join(LAMP_NAMES)}")
        self._attr = {name: name.replace("-", "_") for name in pins}
        self._pwm = bool(pwm)
        self._flash = (float(flash_on_s), float(flash_off_s))
        kwargs = {self._attr[n]: pin for n, pin in pins.items()}
        self._board = LEDBoard(**kwargs, active_high=active_high, pwm=pwm, initial_value=False,
                               pin_factory=pin_factory)
        self._closed = False

    def set_lamp(self, name: str, mode: str, brightness: float = 1.0) -> None:
        """Set one lamp (see :class:`LampDriver`). A lamp without a pin is ignored.

        Raises:
            ValueError: for an unknown lamp or mode, or a brightness that is not a finite
                number within 0..1 (``"0.5"``, ``None``, ``True``; the message names the lamp).
        """
        brightness = check_lamp(name, mode, brightness)
        if self._closed or name not in self._attr:
            return
        led = getattr(self._board, self._attr[name])
        level = brightness if self._pwm else (1.0 if brightness > 0 else 0.0)
        if mode == "off" or level == 0.0:
            led.off()
        elif mode == "on":
            if self._pwm:
                led.value = level
            else:
                led.on()
        else:
            on_s, off_s = self._flash
            led.blink(on_time=on_s, off_time=off_s, background=True)

    def close(self) -> None:
        """Turn every lamp off and release the pins. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._board.off()
        finally:
            self._board.close()


class NullLampDriver:
    """A driver for tables without lamps (and for ``lamps.driver = "none"``): remembers the
    last mode of each lamp in :attr:`modes`, drives nothing."""

    def __init__(self) -> None:
        self.modes: dict[str, str] = {}

    def set_lamp(self, name: str, mode: str, brightness: float = 1.0) -> None:
        """Record the mode (validated like a real driver).

        Raises:
            ValueError: as :meth:`GpioLampDriver.set_lamp`.
        """
        check_lamp(name, mode, brightness)
        self.modes[name] = mode

    def close(self) -> None:
        """Turn every recorded lamp off."""
        self.modes = {n: "off" for n in self.modes}


def lamp_plan(state: GameState, phase: str, *, no_roll: bool = False, boxperson: bool = False,
              fault: bool = False) -> dict[str, str]:
    """What every lamp shows (pure). See the module docstring for the rules.

    Args:
        state: the game state.
        phase: the roll lifecycle phase (``controller.lifecycle``).
        no_roll: a no roll's flash is in force.
        boxperson: a boxperson call is open.
        fault: the service has a fault.

    Returns:
        lamp name -> mode, for every lamp in :data:`LAMP_NAMES`.
    """
    plan = {f"point-{p}": ("on" if state.point == p else "off") for p in POINTS}
    plan["puck-on"] = "on" if state.point is not None else "off"
    plan["bets-closed"] = "on" if phase == IN_MOTION or fault else "off"
    plan["no-roll"] = "flash" if no_roll else "off"
    plan["call-boxperson"] = "flash" if boxperson else "off"
    plan["fault"] = "on" if fault else "off"
    return plan


class LampController:
    """Keeps a driver showing :func:`lamp_plan`, sending only the lamps that change.

    Args:
        driver: any :class:`LampDriver`.
        flash_s: how long ``no-roll`` flashes after a no roll, seconds.
        brightness: 0..1, passed to the driver.

    Times (``now``) are seconds on any monotonic clock, the same for every call.

    :attr:`shown` is what was last asked of the driver for each lamp (name -> mode); a driver
    that delivers asynchronously (the firmware one) keeps re-sending it until it is shown.
    """

    def __init__(self, driver: LampDriver, *, flash_s: float = 3.0, brightness: float = 1.0) -> None:
        self.driver = driver
        self.flash_s = float(flash_s)
        self.brightness = float(brightness)
        self.shown: dict[str, str] = {}
        self._no_roll_until: float | None = None
        self._boxperson = False
        self._fault = False

    def verdict(self, kind: str, now: float) -> None:
        """Note a verdict (``"roll"``, ``"no-roll"``, ``"boxperson"``) at time ``now``."""
        if kind == "no-roll":
            self._no_roll_until = now + self.flash_s
        elif kind == "boxperson":
            self._boxperson = True
            self._no_roll_until = None
        else:
            self._no_roll_until = None

    def throw_started(self) -> None:
        """A new throw is in motion: an open boxperson call and a no roll flash end."""
        self._boxperson = False
        self._no_roll_until = None

    def boxperson_answered(self) -> None:
        """The boxperson decided: the call lamp goes off."""
        self._boxperson = False

    def set_fault(self, fault: bool) -> None:
        """Raise or clear the fault (lit ``fault``, ``bets-closed``)."""
        self._fault = bool(fault)

    def update(self, state: GameState, phase: str, now: float) -> dict[str, str]:
        """Bring the lamps to the plan for ``state`` and ``phase`` at ``now``.

        Returns:
            the lamps changed by this call, name -> mode.
        """
        no_roll = self._no_roll_until is not None and now < self._no_roll_until
        if self._no_roll_until is not None and not no_roll:
            self._no_roll_until = None
        plan = lamp_plan(state, phase, no_roll=no_roll, boxperson=self._boxperson, fault=self._fault)
        changed = {n: m for n, m in plan.items() if self.shown.get(n) != m}
        for name, mode in changed.items():
            self.driver.set_lamp(name, mode, self.brightness)
            self.shown[name] = mode
        return changed

    def all_off(self) -> None:
        """Turn every lamp off (safe state on shutdown) and forget what was shown."""
        for name in LAMP_NAMES:
            self.driver.set_lamp(name, "off", self.brightness)
        self.shown = {n: "off" for n in LAMP_NAMES}
