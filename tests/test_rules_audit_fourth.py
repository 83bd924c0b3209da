"""Fourth audit of the game state and the irregularity verdict against the regulation texts
(/work/shared/regulations/: 000 = 9 NYCRR 5324.52, 001 = 9 NYCRR 4620.3, 003 = N.J.A.C.
13:69F-1.11, 004 = N.J.A.C. 13:47-20.25). tests/test_rules_audit.py, test_rules_audit_game.py and
test_rules_audit_third.py are the earlier audits. The tests of section 1 failed on the code as
audited (commit 83418a7) and pass since; the others pin combinations found right.
"""
from __future__ import annotations

import pytest

from controller.game import GameState, advance, new_shooter, set_decide_only
from controller.irregularity import TableObject, judge
from controller.irregularity_profile import load_profile
from controller.reasons import Reason
from controller.verdict import DieObservation, ThrowFacts, decide
from vision.types import DieReading

from test_rules_audit import CAL, GEOM, die  # the same table, calibration and reading helper

PROFILES = ("ny-5324", "nj-13-47", "ny-4620", "house-practice")



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


# --- 2. combinations found right (pinned) -------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_two_irregularities_in_one_throw_a_no_roll_beats_a_boxperson_call(profile):
    """9 NYCRR 5324.52(k)(1) "shall be invalid" (a die left the table) with the other die cocked
    ((h)(1)(i), boxperson under the casino-night profiles): a no roll in every profile, both
    listed; a die on a rail with the far wall missed: (k)(2)(iv) / (ii), both no rolls under
    ny-5324, the rail the boxperson's where the far wall is read (N.J.A.C. 13:47-20.25, 9 NYCRR
    4620.3 require no far-wall strike); both dice in the chip bank: the bank's action."""
    pol = load_profile(profile).policy
    v = decide([DieObservation(reading(3, 100, flat=False), sides_resting=1)], policy=pol)
    assert (v.kind, v.reason, v.irregularities) == \
        ("no-roll", Reason.DIE_OFF_TABLE, (Reason.DIE_OFF_TABLE, Reason.DIE_NOT_FLAT))
    v = decide([DieObservation(reading(3, 100)), DieObservation(reading(4, 200), zone="rail")],
               ThrowFacts(struck_far_wall=False), policy=pol)
    want = {"ny-5324": ("no-roll", Reason.FAR_WALL_MISSED), "house-practice": ("no-roll", Reason.FAR_WALL_MISSED),
            "nj-13-47": ("boxperson", Reason.DIE_ON_RAIL), "ny-4620": ("boxperson", Reason.DIE_ON_RAIL)}[profile]
    assert (v.kind, v.reason) == want and set(v.irregularities) == {Reason.FAR_WALL_MISSED, Reason.DIE_ON_RAIL}
    v = decide([DieObservation(reading(3, 100), zone="chip_bank"), DieObservation(reading(4, 200), zone="chip_bank")],
               policy=pol)
    assert (v.kind, v.reason) == (pol.action(Reason.DIE_IN_CHIP_BANK).value, Reason.DIE_IN_CHIP_BANK)


def test_a_point_made_then_a_seven_on_the_come_out_is_a_natural_for_the_same_shooter():
    """9 NYCRR 5324.52(b)(1)(i), (i)(1)(i): only a loser 7 (the seven-out) passes the dice; a 7 on
    the come-out after the point was made is a natural: same shooter, the fire-bet points made
    ((j)(1)(iv)) kept; the next 7 after a point is the loser 7."""
    s = GameState()
    for dice, outcome in [((2, 2), "point-set"), ((1, 3), "point-made"), ((3, 4), "natural"),
                          ((4, 5), "point-set"), ((6, 1), "seven-out")]:
        before = s
        s, got = advance(s, dice)
        assert got == outcome
        if outcome == "natural":
            assert (s.shooter, s.point, s.puck, s.points_made) == (1, None, "OFF", (4,))
    assert (before.shooter, s.shooter, s.shooter_roll, s.point, s.points_made) == (1, 2, 0, None, ())


def test_decide_only_rolls_set_no_point_and_a_seven_ends_them_for_the_same_shooter():
    """9 NYCRR 5324.52(i)(2), N.J.A.C. 13:69F-1.11(b): the previous shooter rolls only to decide
    the come / don't come wagers, the marker OFF: a 6 sets no point; a 7 decides them all and the
    game proceeds (the next 6 sets the point). The shooter is not changed by that 7 (see the
    report: whether it is a "loser 7" is not said)."""
    s, _ = advance(GameState(), (2, 2))
    s, _ = advance(s, (2, 2))
    s = set_decide_only(s, True)
    s, got = advance(s, (3, 3))
    assert (got, s.point, s.puck, s.decide_only) == ("decide-only", None, "OFF", True)
    s, got = advance(s, (3, 4))
    assert (got, s.shooter, s.point, s.decide_only, s.points_made) == ("decide-only", 1, None, False, (4,))
    s, got = advance(s, (3, 3))
    assert (got, s.point, s.puck) == ("point-set", 6, "ON")


@pytest.mark.parametrize("profile", ["ny-5324", "nj-13-47"])
def test_a_no_roll_on_the_come_out_and_on_the_point_does_not_move_the_game(tmp_path, profile):
    """9 NYCRR 5324.52(k)(1) (N.J.A.C. 13:47-20.25(g)3): a throw with one die off the table is no
    roll, on the come-out and while the point is on: puck, point, shooter and the shooter's roll
    count stay; the next valid 7 is still shooter 1's seven-out."""
    from test_controller_service import ListPublisher, run_throws
    from test_rules_audit_game import _service

    service = _service(tmp_path / profile, ListPublisher(), profile)
    bodies, _ = run_throws(service, [[(3, 100, 100)], [(2, 100, 100), (2, 200, 120)], [(5, 100, 100)],
                                     [(3, 100, 100), (4, 200, 120)]])
    state = service.store.state
    service.close()
    got = [(b["verdict"], b["game"]["shooter"], b["game"]["shooter_roll"], b["game"]["point"], b["game"]["puck"],
            b["game"]["outcome"]) for b in bodies]
    assert got == [("no-roll", 1, 0, None, "OFF", None), ("roll", 1, 1, 4, "ON", "point-set"),
                   ("no-roll", 1, 1, 4, "ON", None), ("roll", 1, 2, None, "OFF", "seven-out")]
    assert (state.shooter, state.shooter_roll, state.rolls) == (2, 0, 2)


def test_a_new_shooter_takes_over_the_point_and_the_fire_bet_points():
    """9 NYCRR 5324.52(i)(1), (i)(3) (N.J.A.C. 13:69F-1.11(a), (c)): a voluntary change keeps the
    point and puck; (j)(1)(ii) pending fire bets settle on the successor's loser 7, so the points
    made carry over until then."""
    s, _ = advance(GameState(), (3, 2))
    s, _ = advance(s, (4, 1))              # point 5 made
    s, _ = advance(s, (5, 5))              # point 10
    s = new_shooter(s)
    assert (s.shooter, s.shooter_roll, s.point, s.puck, s.points_made) == (2, 0, 10, "ON", (5,))
    s, got = advance(s, (6, 4))
    assert (got, s.shooter, s.points_made) == ("point-made", 2, (5, 10))
    s, _ = advance(s, (4, 4))
    s, got = advance(s, (4, 3))
    assert (got, s.shooter, s.points_made) == ("seven-out", 3, ())
