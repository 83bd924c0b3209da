"""Third audit of the game state and the irregularity policy against the regulation texts
(/work/shared/regulations/: 000 = 9 NYCRR 5324.52, 001 = 9 NYCRR 4620.3, 003 = N.J.A.C.
13:69F-1.11, 004 = N.J.A.C. 13:47-20.25). tests/test_rules_audit.py and
tests/test_rules_audit_game.py are the earlier audits; each test here failed on the code as
audited (commit ce92af0) and passes since.
"""
from __future__ import annotations

import pytest

from controller.irregularity_profile import load_profile


# --- 1. a player may refuse to shoot in the player's turn, a point pending or not ----------------

def test_a_new_shooter_may_refuse_the_dice_while_a_point_is_pending_where_the_dice_pass_on_a_decision(tmp_path):
    """9 NYCRR 4620.3(c)(6) "Any player may, if the player likes, refuse to shoot in the player's
    turn, and pass the dice to the next player" (N.J.A.C. 13:47-20.25(g)7 the same). The
    "on completion of a decision" limit of (c)(5) (N.J.A.C. 13:47-20.25(g)6) is the *shooter's*
    option to stop "without waiting to miss out on the point"; a player whose turn it is and who
    has not thrown has no decision to complete. Shooter 1 is ordered to pass the dice while the
    point 4 is pending (compulsory); shooter 2 refuses to shoot: the dice go to shooter 3. The
    table service refused it ("not while the point 4 is pending"), and so did settlement."""
    from test_controller_service import ListPublisher, make_service, run_throws

    from settlement.engine import Table
    from settlement.profile import load_profile as load_settlement_profile

    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.shooter_change = "decision"                        # ny-4620, nj-13-47
    bodies, _ = run_throws(service, [[(2, 100, 100), (2, 200, 120)]])           # point 4
    assert bodies[-1]["game"]["point"] == 4
    service.relinquish(compulsory=True)                        # shooter 1 ordered to pass the dice
    state = service.relinquish()                               # shooter 2 refuses to shoot
    service.close()
    assert (state.shooter, state.shooter_roll, state.point) == (3, 0, 4)
    # the shooter who has thrown in the point still may not stop before a decision, (c)(5)
    service = make_service(tmp_path / "again", ListPublisher())
    service.shooter_change = "decision"
    run_throws(service, [[(2, 100, 100), (2, 200, 120)]])
    with pytest.raises(ValueError, match="point 4 is pending"):
        service.relinquish()
    service.close()

    for profile in ("ny-4620", "nj-13-47"):
        table = Table(load_settlement_profile(profile))
        table.roll((2, 2))                                     # point 4
        table.shooter_change("compulsory")
        table.shooter_change("voluntary")                      # the next player refuses to shoot
        assert (table.state.shooter, table.state.point) == (3, 4), profile


# --- 2. a die that leaves the table and comes back onto it ---------------------------------------

@pytest.mark.parametrize("profile, citation", [
    ("ny-5324", "9 NYCRR 5324.52(k)(1)"),
    ("ny-4620", "9 NYCRR 4620.3(c)(1)"),
    ("nj-13-47", "N.J.A.C. 13:47-20.25(g)3, (e)4"),
])
def test_a_person_may_call_a_die_that_left_the_table_and_came_back(tmp_path, profile, citation):
    """9 NYCRR 5324.52(k)(1): "A roll of the dice shall be invalid whenever either die leaves, or
    both dice leave, the table" -- leaves, not only comes to rest off it: a die that flies over
    the rail, strikes a person or the floor-side of the rail and is knocked back onto the layout
    makes the roll invalid, without the discretion of (k)(2). The camera judges where the dice
    come to rest (both on the felt here: a valid roll by their faces), so only the boxperson or
    stickperson ((k)(5)(i)) can tell; their "no roll" call ``die-off-table`` was refused ("cannot
    be called": only (k)(2)(i), (ii), (v), (vi) reasons could), and the throw was read."""
    from test_controller_service import ListPublisher
    from test_rules_audit import throw_with_a_no_roll_call
    from test_rules_audit_game import _service

    pub = ListPublisher()
    bodies, alarms = throw_with_a_no_roll_call(_service(tmp_path / profile, pub, profile), pub, "die-off-table")
    b = bodies[-1]
    assert (b["verdict"], b["reason"], b["citation"], b["dice"], len(alarms)) == \
        ("no-roll", "die-off-table", citation, None, 0)
    assert b["called"]["who"] == "sam" and b["game"]["outcome"] is None


# --- 3. a person's "no roll" call under a casino-night profile cites that profile's text ----------

@pytest.mark.parametrize("profile, prefix", [("ny-4620", "9 NYCRR 4620.3"), ("nj-13-47", "N.J.A.C. 13:47-20.25")])
def test_every_no_roll_a_person_may_call_cites_the_casino_night_profiles_own_text(profile, prefix):
    """The roll message's ``citation`` is "the paragraph the reason comes from" (docs/messages.md).
    A casino-night table is governed by 9 NYCRR 4620.3 or N.J.A.C. 13:47-20.25, not by the casino
    rule 9 NYCRR 5324.52; the profiles cite their own text for every irregularity they map
    (tests/test_rules_audit_game.py), but a person's call ``cheating-device`` or ``improper-throw``
    (always a no roll, not listed in ``[actions]``) still cited 9 NYCRR 5324.52(k)(2)(v) / (vi),
    (k)(3) alone. Neither casino-night text lists "no roll" reasons: the person running the game
    rules on the conduct of the game (N.J.A.C. 13:47-20.25(d); 4620.3 names the dealer, (a)(2)),
    which is what the citation must say, 5324.52 at most as a comparison ("cf.")."""
    from controller.reasons import STAFF_CALL_REASONS, Reason

    prof = load_profile(profile)
    got = {r.value: prof.policy.citation(r).startswith(prefix) for r in STAFF_CALL_REASONS}
    assert got == {r.value: True for r in STAFF_CALL_REASONS}
    assert load_profile("ny-5324").policy.citation(Reason.IMPROPER_THROW) == "9 NYCRR 5324.52(k)(2)(vi), (k)(3)"
