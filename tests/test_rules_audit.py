"""Audit of the irregularity rules and the game state against the regulation texts
(/work/shared/regulations/). Each test asserts what the cited paragraph requires; each fails on
the code as audited (commit 575f1ee), and passes since.

Texts: 9 NYCRR 5324.52 (000), 9 NYCRR 4620.3 (001), N.J.A.C. 13:69F-1.11 (003),
N.J.A.C. 13:47-20.25 (004).
"""
from __future__ import annotations

import numpy as np
import pytest

from camera.calibration import Calibration
from controller.game import GameState, advance, new_shooter, set_decide_only
from controller.irregularity import judge
from controller.irregularity_profile import load_profile
from controller.reasons import Reason
from controller.verdict import DieObservation, decide
from simulator.geometry import TableGeometry
from vision.types import DieReading

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


def reading(value, x):
    return DieReading(value=value, bbox=(x - 10, 90, x + 10, 110), centre=(float(x), 100.0),
                      confidence=0.97, flat=True, side_px=20.0)


def bank_centre():
    x0, y0, x1, y1 = GEOM.bank_rect
    return (x0 + x1) / 2, (y0 + y1) / 2


# --- 1. a die that left the table is hidden by the other die's zone ------------------------------

@pytest.mark.parametrize("zone", ["chip_bank", "rail"])
def test_ny5324_die_off_table_is_listed_when_the_other_die_rests_in_another_zone(zone):
    """9 NYCRR 5324.52(k)(1): "A roll of the dice shall be invalid whenever either die leaves, or
    both dice leave, the table or whenever one die comes to rest on top of the other die."

    One die rests in the chip bank / on a rail ((k)(2)(iii)-(iv)) and the other is nowhere on the
    table: it left the table. The verdict must carry (k)(1) (``die-off-table``), the mandatory
    invalidity; the code lists only the zone reason ((k)(2), a discretionary "authority to
    invalidate ... by calling 'no roll'") and drops ``die-off-table`` altogether, although
    find_irregularities says every reason found is listed. (The no roll itself is right here;
    its reason and citation are not.)"""
    v = decide([DieObservation(reading(5, 100), zone=zone)], policy=load_profile("ny-5324").policy)
    assert v.kind == "no-roll"
    assert Reason.DIE_OFF_TABLE in v.irregularities


def test_ny5324_die_off_table_with_the_other_die_in_the_bank_detected_from_the_camera():
    """9 NYCRR 5324.52(k)(1) "A roll of the dice shall be invalid whenever either die leaves, or
    both dice leave, the table": the same through the detectors (judge) with a calibration: one
    die read in the chip bank, the other not seen anywhere."""
    bx, by = bank_centre()
    v, _ = judge([die(bx, by, 5)], calibration=CAL, profile=load_profile("ny-5324"))
    assert v.kind == "no-roll"
    assert Reason.DIE_OFF_TABLE in v.irregularities


@pytest.mark.parametrize("profile", ["nj-13-47", "ny-4620"])
@pytest.mark.parametrize("zone", ["chip_bank", "rail"])
def test_casino_night_die_off_table_is_a_no_roll_even_when_the_other_die_is_in_the_bank_or_on_a_rail(profile, zone):
    """N.J.A.C. 13:47-20.25(g)3 "The dice are thrown. After the dice come to rest, the numbers on
    the upward faces of the dice are added together. The total is the deciding number" and (b)1 a
    table "sufficient to prevent the dice from rolling off the table"; 9 NYCRR 4620.3(c)(1) "the
    two numbers, added together, that face upward when the dice come to rest are the deciding
    numbers". A die that left the table has no upward face on it: both profiles read this as a
    no roll (``dice-off-table`` / ``die-off-table`` = "no-roll"; controller/policy.py refuses
    anything else for them, docs: "A die off the table can never be read, whatever a profile
    says").

    With the other die in the chip bank or on a rail (both "boxperson" in these profiles) the
    code makes a boxperson call, whose answer with two values publishes a valid roll for a throw
    in which a die left the table."""
    v = decide([DieObservation(reading(5, 100), zone=zone)], policy=load_profile(profile).policy)
    assert v.kind == "no-roll"
    assert v.reason is Reason.DIE_OFF_TABLE


# --- 2. a third die outside the dice cup is ignored ----------------------------------------------

@pytest.mark.parametrize("profile", ["ny-5324", "nj-13-47", "ny-4620", "house-practice"])
def test_a_die_at_rest_in_the_chip_bank_beside_two_dice_on_the_felt_is_not_a_valid_roll(profile):
    """9 NYCRR 5324.52(a)(5) "The stickperson or mini craps dealer shall retain all dice, except
    those in active play, in a dice cup at the table" (likewise N.J.A.C. 13:47-20.25(e)2
    "Retaining all dice not in play in a dice cup"); (g) "the shooter shall throw the two
    selected dice"; (k)(2)(iii) "either die or both of the dice come to rest on the chips
    constituting the craps bank of chips"; (k)(2)(v)-(vi).

    Two dice rest on the felt and a third die rests in the chip bank. Outside the cup only the
    dice in active play may be on the table, so the die in the bank is either one of the thrown
    dice ((k)(2)(iii): no roll) or a die that is not one of the two selected (``extra-dice``: the
    boxperson). Either way the camera cannot publish the two dice on the felt as a valid roll; the
    code ignores every die outside the playing area when two are in it (meant for the spare dice
    in the cup) and publishes (3, 4).

    docs/irregularities.md (``extra-dice``: "a third die in the chip bank or on a rail is not one
    of the two selected dice, or is a thrown die: either way no valid roll") gives it to the
    boxperson as ``extra-dice`` in every profile, as the third die on a rail below."""
    bx, by = bank_centre()
    v, _ = judge([die(600, 200, 3), die(700, 300, 4), die(bx, by, 5)], calibration=CAL,
                 profile=load_profile(profile))
    assert (v.kind, v.reason, v.dice) == ("boxperson", Reason.EXTRA_DICE, None)


# --- 3. the game: rolls only to decide come / don't come wagers ----------------------------------

def _after_point_made() -> GameState:
    s, _ = advance(GameState(), (2, 2))
    s, outcome = advance(s, (1, 3))
    assert outcome == "point-made"
    return s


def test_a_new_shooter_ends_the_rolls_only_to_decide_come_wagers():
    """9 NYCRR 5324.52(i)(2): "... the previous shooter shall be allowed to shoot the dice without
    a pass or don't pass bet only for the purpose of effecting a decision on the remaining come
    and/or don't come wagers. ... Once the remaining come and/or don't come wagers have been
    decided or a player wishes to place a pass or don't pass bet, the game shall proceed."
    (N.J.A.C. 13:69F-1.11(b) likewise); (g) "Prior to the selection of the dice, the shooter shall
    make a pass or don't pass bet".

    Only the previous shooter rolls without a line bet. When the dice pass to a new shooter
    (new_shooter: (i)(1), (i)(3)), that shooter has made a pass or don't pass bet, so the game
    proceeds: the new shooter's first roll is a come-out roll and a 6 sets the point. The code
    keeps ``decide_only`` across the change of shooter, so the 6 is "decide-only" and no point
    is set (puck stays OFF)."""
    s = set_decide_only(_after_point_made(), True)
    s = new_shooter(s)
    assert s.decide_only is False
    s, outcome = advance(s, (3, 3))
    assert (outcome, s.point, s.puck) == ("point-set", 6, "ON")


def test_rolls_only_to_decide_come_wagers_cannot_start_after_a_seven_out():
    """9 NYCRR 5324.52(i)(2): "If, after making the come out point, the shooter elects not to place
    a pass or don't pass bet, and other wagers remain on the table with respect to come and/or
    don't come numbers, ..." and (i)(1)(i) "the shooter shall pass the dice upon throwing a loser
    7" (N.J.A.C. 13:69F-1.11(a)1, (b) likewise).

    After a seven-out the shooter did not make the point, must pass the dice, and the 7 decided
    every come and don't come wager on a number (the code itself ends decide-only on a 7 for that
    reason): there is nothing for rolls "only for the purpose of effecting a decision on the
    remaining come and/or don't come wagers" to decide. The code lets the boxperson start them
    whenever the puck is OFF, so the next shooter's come-out would set no point."""
    s, _ = advance(GameState(), (2, 2))
    s, outcome = advance(s, (3, 4))
    assert outcome == "seven-out"
    # refused because of the seven-out ((i)(1)(i)), not for a point (none is set after it)
    assert s.point is None
    with pytest.raises(ValueError, match=r"follow a point made, not a seven-out.*5324\.52\(i\)\(1\)\(i\)"):
        set_decide_only(s, True)


# --- 4. the table service: the shooter passes the dice in the middle of a throw -------------------

def test_shooter_button_during_a_throw_does_not_give_that_throw_to_the_next_shooter(tmp_path):
    """9 NYCRR 5324.52(i)(1): "It shall be the option of the shooter after any roll to either to
    pass the dice or remain the shooter, except: (i) the shooter shall pass the dice upon throwing
    a loser 7"; (i)(3) the dice go "to the player immediately to the left of the previous shooter"
    (N.J.A.C. 13:69F-1.11(a), (c) likewise).

    Shooter 1 has the point 4 and throws a 7; the shooter button (TableService.post
    "shooter-button") is pressed while the dice are still rolling. The throw is shooter 1's: it
    is shooter 1's loser 7, and the dice pass to the next player, shooter 2. The service applies
    the button before the next frame, mid-throw, so the 7 is published as shooter 2's roll and
    the seven-out passes the dice on to shooter 3: shooter 2 never shoots."""
    from test_controller_service import ListPublisher, make_service, throw_frames

    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.start()
    bodies = []
    frames, t, i = throw_frames([(2, 100, 100), (2, 200, 120)], 0.0)            # point 4
    bodies += [b for b in map(service.process, frames) if b is not None]
    frames, t, i = throw_frames([(3, 100, 100), (4, 200, 120)], t + 0.1, start_index=i + 1)  # 7
    for k, f in enumerate(frames):
        if k == 14:                                   # dice in motion (frames 12..17)
            service.post("shooter-button")
        b = service.process(f)
        if b is not None:
            bodies.append(b)
    service.close()
    assert [b["game"]["outcome"] for b in bodies] == ["point-set", "seven-out"]
    seven = bodies[-1]["game"]
    assert (seven["shooter"], seven["next_shooter"]) == (1, 2)


def test_a_third_die_on_a_rail_is_extra_but_one_beyond_the_table_or_in_the_cup_is_not():
    """9 NYCRR 5324.52(a)(5): dice not in active play are kept in the dice cup, so a die on a
    rail beside the two in play is one too many (``extra-dice``: the boxperson). The spare dice
    in the cup, and anything die-like seen beyond the table (the camera's margin), are not part
    of the throw."""
    pol = load_profile("ny-5324").policy
    two = [DieObservation(reading(3, 100)), DieObservation(reading(4, 200))]
    v = decide(two + [DieObservation(reading(5, 300), zone="rail")], policy=pol)
    assert (v.kind, v.reason) == ("boxperson", Reason.EXTRA_DICE)
    for zone in ("dice_cup", "off-table"):
        v = decide(two + [DieObservation(reading(5, 300), zone=zone)], policy=pol)
        assert (v.kind, v.dice) == ("roll", (3, 4)), zone


def test_shooter_button_mid_point_is_refused_where_the_dice_pass_on_a_decision(tmp_path):
    """9 NYCRR 4620.3(c)(5) "The shooter may ... pass the dice to the next player on completion
    of a decision without waiting to miss out on the point" (N.J.A.C. 13:47-20.25(g)6 the same):
    under those profiles the shooter button while the point is on is refused with a
    ``command-refused`` alarm and the shooter keeps the dice; after the point is made it is
    accepted. Under 9 NYCRR 5324.52(i)(1) ("after any roll") the same press is accepted."""
    from test_controller_service import ListPublisher, make_service, throw_frames

    from controller.irregularity_profile import load_profile as load_irregularity_profile

    assert load_irregularity_profile("ny-4620").shooter_change == "decision"
    assert load_irregularity_profile("nj-13-47").shooter_change == "decision"
    assert load_irregularity_profile("ny-5324").shooter_change == "any-roll"
    for rule, refused in (("decision", True), ("any-roll", False)):
        pub = ListPublisher()
        service = make_service(tmp_path / rule, pub)
        service.shooter_change = rule
        service.start()
        frames, t, i = throw_frames([(2, 100, 100), (2, 200, 120)], 0.0)            # point 4
        bodies = [b for b in map(service.process, frames) if b is not None]
        assert bodies[-1]["game"]["point"] == 4
        service.post("shooter-button")
        frames, t, i = throw_frames([(1, 100, 100), (2, 200, 120)], t + 0.1, start_index=i + 1)  # 3
        bodies += [b for b in map(service.process, frames) if b is not None]
        service.close()
        alarms = [b for topic, b in pub.sent if topic == "alarm" and b.get("code") == "command-refused"]
        assert (bodies[-1]["game"]["shooter"], len(alarms)) == ((1, 1) if refused else (2, 0))


def throw_with_a_no_roll_call(service, pub, reason: str, who: str = "sam") -> tuple[list[dict], list[dict]]:
    """Start ``service``, throw a 3 and a 5 through it with a person's "no roll" call for
    ``reason`` posted while the dice are in motion (frame 14), close it. Returns the roll
    messages published and the ``command-refused`` alarms (``pub``: the service's
    ``ListPublisher``)."""
    from test_controller_service import throw_frames

    service.start()
    frames, _, _ = throw_frames([(3, 100, 100), (5, 200, 120)], 0.0)
    bodies = []
    for k, f in enumerate(frames):
        if k == 14:                                  # dice in motion
            service.post("no-roll", reason=reason, who=who)
        b = service.process(f)
        if b is not None:
            bodies.append(b)
    service.close()
    return bodies, [m for topic, m in pub.sent if topic == "alarm" and m.get("code") == "command-refused"]


def test_a_far_wall_call_is_refused_where_the_profile_reads_a_missed_far_wall(tmp_path):
    """9 NYCRR 4620.3 and N.J.A.C. 13:47-20.25 do not require the dice to strike the far end
    (their profiles read ``far-wall-missed``): a person's "no roll" for it is refused with a
    ``command-refused`` alarm and the throw is read; under 9 NYCRR 5324.52(k)(2)(ii) the same
    call voids the throw."""
    from test_controller_service import ListPublisher, make_service

    for profile, called in (("ny-4620", False), ("ny-5324", True)):
        pub = ListPublisher()
        service = make_service(tmp_path / profile, pub)
        service.policy = load_profile(profile).policy
        bodies, alarms = throw_with_a_no_roll_call(service, pub, "far-wall-missed")
        got = (bodies[-1]["verdict"], bodies[-1]["reason"], bodies[-1]["dice"], len(alarms))
        assert got == (("no-roll", "far-wall-missed", None, 0) if called else ("roll", None, [3, 5], 1)), profile
