"""Fourth audit of the game state and the irregularity verdict against the regulation texts
(/work/shared/regulations/: 000 = 9 NYCRR 5324.52, 001 = 9 NYCRR 4620.3, 003 = N.J.A.C.
13:69F-1.11, 004 = N.J.A.C. 13:47-20.25). tests/test_rules_audit.py, test_rules_audit_game.py and
test_rules_audit_third.py are the earlier audits. The tests of section 1 failed on the code as
audited (commit 83418a7) and pass since; the others pin combinations found right.
"""
from __future__ import annotations

import numpy as np
import pytest

from camera.calibration import Calibration
from controller.game import GameState, advance, new_shooter, set_decide_only
from controller.irregularity import TableObject, judge
from controller.irregularity_profile import load_profile
from controller.reasons import Reason
from controller.verdict import DieObservation, ThrowFacts, decide
from simulator.geometry import TableGeometry
from vision.types import DieReading

PROFILES = ("ny-5324", "nj-13-47", "ny-4620", "house-practice")

GEOM = TableGeometry()
OFF = np.array([90.0, 80.0])  # pixel of table mm (0, 0); 1 px = 1 mm (as tests/test_irregularity_detect.py)
H = np.array([[1.0, 0.0, -OFF[0]], [0.0, 1.0, -OFF[1]], [0.0, 0.0, 1.0]])
CAL = Calibration.from_homography(H, GEOM.zones(), camera_height_mm=1800.0)
SIDE = CAL.die_side_px((550.0, 280.0))


def die(x_mm, y_mm, value, *, flat=True, conf=0.97):
    """A reading centred over table point (x, y) mm (the top face of a die on the felt)."""
    n = np.array([550.0, 280.0])
    p = n + (np.array([x_mm, y_mm]) - n) * 1800.0 / (1800.0 - 19.05)
    cx, cy = p + OFF
    s = SIDE
    return DieReading(value=value, bbox=(int(cx - s / 2), int(cy - s / 2), int(cx + s / 2), int(cy + s / 2)),
                      centre=(float(cx), float(cy)), confidence=conf, flat=flat, side_px=float(s))


def reading(value, x, *, flat=True, conf=0.97):
    return DieReading(value=value, bbox=(x - 10, 90, x + 10, 110), centre=(float(x), 100.0),
                      confidence=conf, flat=flat, side_px=20.0)


# --- 1. a cocked die resting on the chip bank and on a chip stack: more than one side -------------

def _on_bank_and_stack():
    """A die on the felt below the chip bank, not flat, leaning on the bank's chips, its bottom
    on a low chip stack (3.3 mm, its centre 12 mm from the die's): two objects it rests on."""
    x0, y0, x1, y1 = GEOM.bank_rect
    cocked = die((x0 + x1) / 2, y1 + 0.9 * 19.05, 5, flat=False)
    stack = TableObject((x0 + x1) / 2, y1 + 0.9 * 19.05 + 12.0, 19.5, 3.3)
    return [die(800, 300, 2), cocked], (stack,)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_die_cocked_on_the_chip_bank_and_a_chip_stack_is_void_in_every_profile(profile):
    """9 NYCRR 5324.52(h)(1)(i): "If more than one side of a die is resting on a stack of chips or
    other object, the roll shall be void and the dice shall be re-rolled." Every shipped profile
    makes ``die-on-several-objects`` a no roll ("void in every profile", nj-13-47.toml and
    ny-4620.toml; controller.policy refuses anything else).

    The die rests with one side on the chips of the craps bank and another on a chip stack. The
    detector put it in the chip bank ((k)(2)(iii)) and counted no side at all, so under N.J.A.C.
    13:47-20.25 and 9 NYCRR 4620.3 (``die-in-chip-bank`` = boxperson) the throw went to the
    boxperson, whose answer with two values publishes as valid a roll the rule makes void."""
    readings, objects = _on_bank_and_stack()
    v, observed = judge(readings, calibration=CAL, profile=load_profile(profile), objects=objects)
    assert v.kind == "no-roll"
    assert Reason.DIE_ON_SEVERAL_OBJECTS in v.irregularities
    assert Reason.DIE_IN_CHIP_BANK in v.irregularities
    assert [o.zone for o in observed.observations] == ["playing", "chip_bank"]


def test_a_die_cocked_on_the_chip_bank_alone_stays_the_banks_in_every_profile():
    """(k)(2)(iii) alone (nothing else under the die): unchanged, the zone's action decides
    (tests/test_irregularity_detect.py has the same throw)."""
    x0, y0, x1, y1 = GEOM.bank_rect
    readings = [die(800, 300, 2), die((x0 + x1) / 2, y1 + 0.9 * 19.05, 5, flat=False)]
    got = {p: judge(readings, calibration=CAL, profile=load_profile(p))[0] for p in PROFILES}
    assert {p: (v.kind, v.reason, v.irregularities) for p, v in got.items()} == {
        "ny-5324": ("no-roll", Reason.DIE_IN_CHIP_BANK, (Reason.DIE_IN_CHIP_BANK,)),
        "nj-13-47": ("boxperson", Reason.DIE_IN_CHIP_BANK, (Reason.DIE_IN_CHIP_BANK,)),
        "ny-4620": ("boxperson", Reason.DIE_IN_CHIP_BANK, (Reason.DIE_IN_CHIP_BANK,)),
        "house-practice": ("no-roll", Reason.DIE_IN_CHIP_BANK, (Reason.DIE_IN_CHIP_BANK,)),
    }


@pytest.mark.parametrize("profile", ["nj-13-47", "ny-4620"])
@pytest.mark.parametrize("zone", ["chip_bank", "rail", "dice_cup"])
def test_decide_voids_a_thrown_die_outside_play_resting_on_several_objects(profile, zone):
    """The same at the verdict (controller.verdict.decide): one die in play, the other thrown die
    at rest in the chip bank, on a rail or in the dice cup with two sides resting on objects.
    (h)(1)(i) voids the roll; the code looked at ``sides_resting`` of the dice in play only and
    gave the throw to the boxperson (the zone's action in these profiles)."""
    obs = [DieObservation(reading(2, 100)),
           DieObservation(reading(5, 200, flat=False), zone=zone, sides_resting=2)]
    v = decide(obs, policy=load_profile(profile).policy)
    assert (v.kind, v.reason) == ("no-roll", Reason.DIE_ON_SEVERAL_OBJECTS)


def test_a_foreign_third_die_on_several_objects_does_not_void_the_two_dice_in_play():
    """(a)(5), (g): with both selected dice in play, a third die is not one of the thrown dice
    (``extra-dice``: the boxperson); how it rests is not the throw's (unchanged)."""
    obs = [DieObservation(reading(2, 100)), DieObservation(reading(5, 200)),
           DieObservation(reading(4, 300, flat=False), zone="chip_bank", sides_resting=2)]
    v = decide(obs, policy=load_profile("ny-5324").policy)
    assert (v.kind, v.reason, v.irregularities) == ("boxperson", Reason.EXTRA_DICE, (Reason.EXTRA_DICE,))
