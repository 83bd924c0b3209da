"""Layout lamps on gpiozero MockFactory pins: what each pin shows for game states and verdicts."""
from __future__ import annotations

import re
import time

import pytest
from gpiozero.pins.mock import MockFactory, MockPWMPin

from controller.game import GameState, advance
from controller.lamps import LAMP_NAMES, GpioLampDriver, LampController, LampDriver, NullLampDriver, lamp_plan
from controller.lifecycle import DECIDED, IN_MOTION, WAITING

PINS = {"point-4": 5, "point-5": 6, "point-6": 13, "point-8": 19, "point-9": 26, "point-10": 21,
        "puck-on": 20, "no-roll": 16, "call-boxperson": 12, "bets-closed": 25, "fault": 24}


@pytest.fixture
def rig():
    factory = MockFactory()
    driver = GpioLampDriver(PINS, pin_factory=factory, flash_on_s=0.02, flash_off_s=0.02)
    ctl = LampController(driver, flash_s=3.0)
    yield factory, driver, ctl
    driver.close()
    factory.close()


def lit(factory):
    return {name for name, pin in PINS.items() if factory.pin(pin).state}


def test_driver_is_a_lamp_driver(rig):
    """Both drivers are LampDrivers (a runtime-checkable Protocol: isinstance only sees that
    set_lamp and close exist), and do what the protocol says: set_lamp lights the named lamp
    alone, close turns every lamp off."""
    factory, driver, _ = rig
    null = NullLampDriver()
    assert isinstance(driver, LampDriver) and isinstance(null, LampDriver)
    for d in (driver, null):
        d.set_lamp("point-6", "on")
        d.set_lamp("puck-on", "on")
        d.set_lamp("puck-on", "off")
    assert lit(factory) == {"point-6"}
    assert null.modes["point-6"] == "on" and null.modes["puck-on"] == "off"
    driver.close()
    null.close()
    assert lit(factory) == set()
    assert null.modes == {"point-6": "off", "puck-on": "off"}


def test_point_lamp_follows_the_puck(rig):
    factory, _, ctl = rig
    s = GameState()
    ctl.update(s, WAITING, now=0.0)
    assert lit(factory) == set()
    s, _ = advance(s, (4, 5))  # point 9
    ctl.update(s, DECIDED, now=1.0)
    assert lit(factory) == {"point-9", "puck-on"}
    s, _ = advance(s, (2, 3))
    ctl.update(s, DECIDED, now=2.0)
    assert lit(factory) == {"point-9", "puck-on"}
    s, _ = advance(s, (6, 3))  # point made: puck OFF
    ctl.update(s, DECIDED, now=3.0)
    assert lit(factory) == set()
    s, _ = advance(s, (5, 5))
    ctl.update(s, DECIDED, now=4.0)
    assert lit(factory) == {"point-10", "puck-on"}
    s, _ = advance(s, (3, 4))  # seven-out
    ctl.update(s, DECIDED, now=5.0)
    assert lit(factory) == set()


def test_bets_closed_while_dice_in_motion(rig):
    factory, _, ctl = rig
    s = GameState(point=6)
    ctl.update(s, IN_MOTION, now=0.0)
    assert lit(factory) == {"point-6", "puck-on", "bets-closed"}
    ctl.update(s, DECIDED, now=0.5)
    assert lit(factory) == {"point-6", "puck-on"}


def test_no_roll_flashes_for_configured_time(rig):
    factory, _, ctl = rig
    s = GameState()
    ctl.verdict("no-roll", now=10.0)
    changed = ctl.update(s, DECIDED, now=10.0)
    assert changed["no-roll"] == "flash"
    time.sleep(0.15)  # the blink thread toggles the pin
    states = [p.state for p in factory.pin(PINS["no-roll"]).states]
    assert True in states and states.count(True) >= 2
    ctl.update(s, DECIDED, now=12.9)
    assert ctl.shown["no-roll"] == "flash"
    ctl.update(s, DECIDED, now=13.1)
    assert ctl.shown["no-roll"] == "off"
    time.sleep(0.05)
    assert factory.pin(PINS["no-roll"]).state is False


def test_call_boxperson_until_next_throw(rig):
    factory, _, ctl = rig
    s = GameState()
    ctl.verdict("boxperson", now=0.0)
    ctl.update(s, DECIDED, now=100.0)
    assert ctl.shown["call-boxperson"] == "flash"
    ctl.throw_started()
    ctl.update(s, IN_MOTION, now=101.0)
    assert ctl.shown["call-boxperson"] == "off" and lit(factory) == {"bets-closed"}


def test_fault_and_all_off(rig):
    factory, _, ctl = rig
    ctl.set_fault(True)
    ctl.update(GameState(point=5), WAITING, now=0.0)
    assert lit(factory) == {"fault", "bets-closed", "point-5", "puck-on"}
    ctl.all_off()
    assert lit(factory) == set()


def test_only_changes_are_sent():
    drv = NullLampDriver()
    ctl = LampController(drv)
    first = ctl.update(GameState(), WAITING, now=0.0)
    assert set(first) == set(LAMP_NAMES)
    assert ctl.update(GameState(), WAITING, now=1.0) == {}
    assert ctl.update(GameState(point=8), WAITING, now=2.0) == {"point-8": "on", "puck-on": "on"}


def test_pwm_brightness_and_active_low():
    factory = MockFactory(pin_class=MockPWMPin)
    drv = GpioLampDriver({"puck-on": 20}, pwm=True, pin_factory=factory)
    drv.set_lamp("puck-on", "on", brightness=0.5)
    assert factory.pin(20).state == pytest.approx(0.5)
    drv.close()
    factory.close()
    factory = MockFactory()
    drv = GpioLampDriver({"puck-on": 20}, active_high=False, pin_factory=factory)
    drv.set_lamp("puck-on", "on")
    assert factory.pin(20).state is False  # active low: lit = low
    drv.set_lamp("puck-on", "off")
    assert factory.pin(20).state is True
    drv.close()
    factory.close()


def test_bad_lamp_commands():
    drv = NullLampDriver()
    with pytest.raises(ValueError, match="unknown lamp 'point-7'"):
        drv.set_lamp("point-7", "on")
    with pytest.raises(ValueError, match="unknown mode"):
        drv.set_lamp("puck-on", "blink")
    with pytest.raises(ValueError, match="brightness"):
        drv.set_lamp("puck-on", "on", 1.5)
    with pytest.raises(ValueError, match="lamps.pins: unknown lamp"):
        GpioLampDriver({"point-7": 4}, pin_factory=MockFactory())


def test_plan_is_complete():
    plan = lamp_plan(GameState(point=4), IN_MOTION, no_roll=True, boxperson=True)
    assert set(plan) == set(LAMP_NAMES)
    assert plan["point-4"] == "on" and plan["no-roll"] == "flash" and plan["call-boxperson"] == "flash"


def test_firmware_driver_from_config_on_a_simulated_mcu(tmp_path):
    """lamps.driver = "firmware": the lamp controller drives the simulated microcontroller."""
    from controller.config import parse_config
    from controller.service_cli import build_lamp_driver
    from firmware_bridge.mcu_sim import SimulatedMcu

    with SimulatedMcu() as mcu:
        cfg = parse_config({"lamps": {"driver": "firmware"}, "firmware": {"port": str(mcu.path)}})
        driver = build_lamp_driver(cfg)
        try:
            assert isinstance(driver, LampDriver)
            ctl = LampController(driver)
            s, _ = advance(GameState(), (5, 1))  # point 6
            ctl.update(s, DECIDED, now=0.0)
            assert mcu.wait_until(lambda: mcu.lamp("point-6")[0] == "on" and mcu.lamp("puck-on")[0] == "on", 5)
            assert mcu.lamp("point-8")[0] == "off"
            ctl.verdict("no-roll", now=1.0)
            ctl.update(s, DECIDED, now=1.0)
            assert mcu.wait_until(lambda: mcu.lamp("no-roll")[0] == "flash", 5)
        finally:
            driver.close()


def test_firmware_driver_needs_its_section():
    from controller.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match="firmware"):
        parse_config({"lamps": {"driver": "firmware"}})


@pytest.mark.parametrize("value", ["0.5", None, True, False, float("nan"), float("inf"), -0.1, 1.5])
def test_bad_brightness_is_a_value_error_naming_the_lamp_for_every_driver(value):
    """One check for the GPIO, null and firmware drivers: a brightness that is not a finite
    number within 0..1 (a string, None, a bool) is a ValueError naming the lamp and the value,
    never a TypeError from deep inside, and True is not taken for "full"."""
    from firmware_bridge.lamps import FirmwareLampDriver

    factory = MockFactory(pin_class=MockPWMPin)
    gpio = GpioLampDriver({"point-6": 13}, pwm=True, pin_factory=factory)
    try:
        for set_lamp in (gpio.set_lamp, NullLampDriver().set_lamp, FirmwareLampDriver.setting):
            with pytest.raises(ValueError, match=r"lamp point-6: brightness .*" + re.escape(repr(value))):
                set_lamp("point-6", "on", value)
        assert factory.pin(13).state == 0          # nothing was driven
    finally:
        gpio.close()
        factory.close()


def test_good_brightness_values_are_accepted_as_numbers():
    factory = MockFactory(pin_class=MockPWMPin)
    gpio = GpioLampDriver({"point-6": 13}, pwm=True, pin_factory=factory)
    try:
        gpio.set_lamp("point-6", "on", 1)           # an int is a number
        assert factory.pin(13).state == 1.0
        gpio.set_lamp("point-6", "on", 0.25)
        assert factory.pin(13).state == pytest.approx(0.25)
    finally:
        gpio.close()
        factory.close()
