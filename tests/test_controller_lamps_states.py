"""Layout lamps on gpiozero MockFactory pins for every game state and verdict a casino floor
sees: puck OFF on a come-out, ON its point number alone, unchanged by a new shooter; NO ROLL and
CALL BOXPERSON flash; the safe state (table fault) lights FAULT and BETS CLOSED and keeps the
point; clearing it restores the layout."""
from __future__ import annotations

import time

import pytest
from gpiozero.pins.mock import MockFactory

from controller.game import POINTS, GameState, advance, new_shooter, set_decide_only
from controller.lamps import GpioLampDriver, LampController
from controller.lifecycle import DECIDED, IN_MOTION, WAITING

from test_controller_lamps import PINS, lit


@pytest.fixture
def rig():
    factory = MockFactory()
    driver = GpioLampDriver(PINS, pin_factory=factory, flash_on_s=0.02, flash_off_s=0.02)
    yield factory, LampController(driver, flash_s=3.0)
    driver.close()
    factory.close()


def _blinks(factory, lamp: str) -> bool:
    time.sleep(0.12)
    states = [p.state for p in factory.pin(PINS[lamp]).states[-8:]]
    return True in states and False in states


@pytest.mark.parametrize("point", POINTS)
def test_the_puck_is_on_its_point_number_alone_and_off_on_the_come_out(rig, point):
    factory, ctl = rig
    s = GameState()
    ctl.update(s, WAITING, now=0.0)
    assert lit(factory) == set()                                     # come-out: puck OFF
    d = (point // 2, point - point // 2)
    s, outcome = advance(s, d)
    assert outcome == "point-set"
    ctl.update(s, DECIDED, now=1.0)
    assert lit(factory) == {f"point-{point}", "puck-on"}
    s = new_shooter(s)                                               # the puck stays for the new shooter
    ctl.update(s, WAITING, now=2.0)
    assert lit(factory) == {f"point-{point}", "puck-on"}
    s, outcome = advance(s, (3, 4))
    assert outcome == "seven-out"
    ctl.update(s, DECIDED, now=3.0)
    assert lit(factory) == set()


def test_rolls_only_to_decide_come_bets_show_the_puck_off(rig):
    factory, ctl = rig
    s, _ = advance(GameState(), (3, 3))
    s, outcome = advance(s, (4, 2))
    assert outcome == "point-made"
    s = set_decide_only(s, True)
    ctl.update(s, WAITING, now=0.0)
    assert lit(factory) == set()


def test_call_boxperson_flashes_until_answered_and_a_no_roll_flash_ends_with_it(rig):
    factory, ctl = rig
    s, _ = advance(GameState(), (5, 5))
    ctl.verdict("no-roll", now=0.0)
    ctl.update(s, DECIDED, now=0.0)
    assert ctl.shown["no-roll"] == "flash" and _blinks(factory, "no-roll")
    ctl.verdict("boxperson", now=1.0)
    ctl.update(s, DECIDED, now=1.0)
    assert ctl.shown["call-boxperson"] == "flash" and ctl.shown["no-roll"] == "off"
    assert _blinks(factory, "call-boxperson")
    assert factory.pin(PINS["point-10"]).state and factory.pin(PINS["puck-on"]).state
    ctl.boxperson_answered()
    ctl.update(s, DECIDED, now=2.0)
    time.sleep(0.05)
    assert lit(factory) == {"point-10", "puck-on"}


def test_safe_state_lights_fault_and_bets_closed_keeps_the_point_and_clears(rig):
    factory, ctl = rig
    s, _ = advance(GameState(), (2, 4))
    ctl.update(s, WAITING, now=0.0)
    ctl.set_fault(True)
    ctl.update(s, WAITING, now=1.0)
    assert lit(factory) == {"point-6", "puck-on", "fault", "bets-closed"}
    ctl.verdict("no-roll", now=2.0)                                  # a throw in the safe state: table-fault
    ctl.update(s, DECIDED, now=2.0)
    assert ctl.shown["no-roll"] == "flash" and _blinks(factory, "no-roll")
    assert {"point-6", "puck-on", "fault", "bets-closed"} <= {n for n in PINS if factory.pin(PINS[n]).state}
    ctl.set_fault(False)
    ctl.update(s, WAITING, now=10.0)                                 # the no roll flash is over too
    time.sleep(0.05)
    assert lit(factory) == {"point-6", "puck-on"}
    ctl.throw_started()
    ctl.update(s, IN_MOTION, now=11.0)
    assert lit(factory) == {"point-6", "puck-on", "bets-closed"}
