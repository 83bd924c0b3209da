"""Audit: settlement / game tracking against the regulation texts in /work/shared/regulations.

Each test here failed on the code as audited (commit 575f1ee) and asserts what the quoted text requires.
"""
from __future__ import annotations

import pytest

from settlement.engine import Rejected, Table
from settlement.profile import load_profile


def _table(name: str) -> Table:
    return Table(load_profile(name))


def _bet(t: Table, player: str, kind: str, amount: int, **kw):
    return t.place({"player": player, "bet": kind, "amount": amount, **kw})


@pytest.mark.parametrize("name", ["ny-5324", "nj-13-47"])
def test_decide_only_rolls_end_once_the_remaining_come_and_dont_come_wagers_are_decided(name):
    """9 NYCRR 5324.52(i)(2) (and N.J.A.C. 13:69F-1.11(b), same words): the previous shooter may
    shoot without a pass or don't pass bet "only for the purpose of effecting a decision on the
    remaining come and/or don't come wagers" ... "Once the remaining come and/or don't come wagers
    have been decided or a player wishes to place a pass or don't pass bet, the game shall proceed."

    Here the only remaining come bet (on 6) is decided by a 6. The code ends the decide-only rolls
    only on a 7 (settlement/game.py advance: ``decide_only=t != 7``), so afterwards it still
    refuses a pass bet ("the shooter is rolling only to decide the remaining come and don't come
    wagers") and a following 5 sets no point, although no such wager remains.
    """
    t = _table(name)
    _bet(t, "p", "pass", 500)
    t.roll((2, 2))                       # point 4
    _bet(t, "p", "come", 500)
    t.roll((3, 3))                       # come bet -> 6
    t.roll((1, 3))                       # point 4 made: pass wins; come on 6 remains
    t.decide_only(True)                  # the shooter makes no pass / don't pass bet
    out = t.roll((5, 1))                 # 6: the come bet on 6 wins
    assert [(s.kind, s.result) for s in out] == [("come", "win")]
    assert not any(w.kind in ("come", "dont_come") for w in t.wagers)   # nothing left to decide
    # the game shall proceed: no longer rolling "only" to decide come / don't come wagers
    assert t.state.decide_only is False
    _bet(t, "p", "pass", 500)            # raises Rejected [9 NYCRR 5324.52(i)(2)] on the audited code
    t.roll((2, 3))
    assert t.state.point == 5            # a come-out 5 is the point again


@pytest.mark.parametrize("name", ["ny-5324", "nj-13-47"])
def test_decide_only_rolls_refused_when_no_come_or_dont_come_wager_remains(name):
    """9 NYCRR 5324.52(i)(2) (N.J.A.C. 13:69F-1.11(b) the same): "If, after making the come out
    point, the shooter elects not to place a pass or don't pass bet, and other wagers remain on the
    table with respect to come and/or don't come numbers, ... the previous shooter shall be allowed
    to shoot the dice without a pass or don't pass bet only for the purpose of effecting a decision
    on the remaining come and/or don't come wagers."

    After a seven-out no come or don't come wager remains (the 7 decided them) and no come-out
    point was made, yet Table.decide_only(True) is accepted (it checks only that no point is
    established), and from then on every pass bet is refused.
    """
    t = _table(name)
    _bet(t, "p", "pass", 500)
    t.roll((2, 2))                       # point 4
    _bet(t, "p", "come", 500)
    t.roll((3, 3))                       # come bet -> 6
    out = t.roll((3, 4))                 # seven-out: pass and come on 6 lose
    assert sorted((s.kind, s.result) for s in out) == [("come", "lose"), ("pass", "lose")]
    assert t.wagers == ()
    with pytest.raises(Rejected, match="no come or don't come wager on a number remains") as exc:
        t.decide_only(True)
    # the paragraph broken: (i)(2), or N.J.A.C. 13:69F-1.11(b) under the New Jersey profile
    assert exc.value.rule == {"ny-5324": "9 NYCRR 5324.52(i)(2)", "nj-13-47": "as N.J.A.C. 13:69F-1.11(b) (N.J.A.C. 13:47-20.25 is silent)"}[name]
    assert t.state.decide_only is False
    _bet(t, "q", "pass", 500)            # the game proceeds: a come-out 6 is the point
    t.roll((4, 2))
    assert t.state.point == 6


@pytest.mark.parametrize("name", ["ny-5324", "nj-13-47"])
def test_decide_only_rolls_end_when_the_dice_pass_to_a_new_shooter(name):
    """9 NYCRR 5324.52(i)(2) (N.J.A.C. 13:69F-1.11(b) the same): "If there are no other players at
    the table, or if no other players at the table elect to make a pass or don't pass bet in order
    to shoot the dice and continue the game, the previous shooter shall be allowed to shoot the dice
    without a pass or don't pass bet only for the purpose of effecting a decision on the remaining
    come and/or don't come wagers." and 5324.52(g): "Prior to the selection of the dice, the shooter
    shall make a pass or don't pass bet".

    Only the previous shooter rolls without a line bet; a player who takes the dice makes a pass or
    don't pass bet and the game proceeds. settlement.game.change_shooter keeps decide_only=True, so
    the new shooter's pass bet is refused and the new shooter's 5 sets no point.
    """
    t = _table(name)
    _bet(t, "p", "pass", 500)
    t.roll((2, 2))                       # point 4
    _bet(t, "q", "dont_come", 500)
    t.roll((4, 5))                       # don't come -> 9
    t.roll((1, 3))                       # point made; the don't come on 9 remains
    t.decide_only(True)
    t.roll((1, 1))                       # a decide-only roll of the previous shooter
    t.shooter_change("voluntary")        # the dice pass; the new shooter takes them
    assert t.state.decide_only is False
    _bet(t, "r", "pass", 500)            # refused [9 NYCRR 5324.52(i)(2)] on the audited code
    t.roll((2, 3))
    assert t.state.point == 5


@pytest.mark.parametrize("name", ["ny-5324", "nj-13-47"])
def test_decide_only_rolls_follow_only_a_point_made_by_the_shooter(name):
    """9 NYCRR 5324.52(i)(2), N.J.A.C. 13:69F-1.11(b): "If, after making the come out point, the
    shooter elects not to place a pass or don't pass bet". After a come-out 11 or a come-out
    craps the come bets on numbers remain (neither decides them), but no point was made: the
    rolls are refused, as the controller refuses them (controller.game.set_decide_only); so they
    are for a new shooter, and after a 7 ended them."""
    t = _table(name)
    _bet(t, "p", "pass", 500)
    t.roll((2, 2))                       # point 4
    _bet(t, "q", "come", 500)
    t.roll((4, 5))                       # come -> 9
    t.roll((1, 3))                       # point made; the come on 9 remains
    _bet(t, "p", "pass", 500)
    t.roll((5, 6))                       # come-out 11: pass wins, the come on 9 stays
    assert [w.number for w in t.wagers if w.kind == "come"] == [9]
    with pytest.raises(Rejected, match="follow a point made") as exc:
        t.decide_only(True)
    assert exc.value.rule == {"ny-5324": "9 NYCRR 5324.52(i)(2)", "nj-13-47": "as N.J.A.C. 13:69F-1.11(b) (N.J.A.C. 13:47-20.25 is silent)"}[name]
    t.roll((1, 1))                       # come-out craps: the come on 9 stays
    with pytest.raises(Rejected, match="follow a point made"):
        t.decide_only(True)
    assert t.state.decide_only is False
    t.roll((4, 4))                       # point 8
    t.roll((6, 2))                       # point 8 made: now the shooter may
    assert [(w.kind, w.number) for w in t.wagers] == [("come", 9)]
    t.decide_only(True)
    assert t.state.decide_only is True


def test_ny4620_shooter_keeps_the_dice_until_a_decision():
    """9 NYCRR 4620.3(c)(3): "If the shooter throws a 4, 5, 6, 8, 9, 10, that number becomes the
    shooter's point and the shooter continues throwing until either: (i) he throws his point again,
    which is a winning decision or pass; or(ii) he throws a 7, which is a losing decision or a
    miss-out." (c)(5): "The shooter may, if the shooter likes, pass the dice to the next player on
    completion of a decision without waiting to miss out on the point."

    Under 4620.3 the dice may be passed voluntarily only on completion of a decision, not while a
    point is pending (unlike 9 NYCRR 5324.52(i)(1) "after any roll"). Table.shooter_change accepts
    a voluntary change with the point 6 established under the ny-4620 profile. (No money changes
    hands on it under ny-4620 - no fire or bonus bets - but the game record gets a new shooter in
    the middle of a point.)
    """
    t = _table("ny-4620")
    _bet(t, "p", "pass", 500)
    t.roll((3, 3))                       # point 6: no decision yet
    shooter = t.state.shooter
    with pytest.raises(Rejected, match="on completion of a decision, not while the point 6 is pending") as exc:
        t.shooter_change("voluntary")
    assert exc.value.rule == "9 NYCRR 4620.3(c)(5)"
    assert (t.state.shooter, t.state.point) == (shooter, 6)    # the shooter keeps the dice
    t.roll((4, 2))                       # the point made: a decision
    t.shooter_change("voluntary")        # now the dice may pass
    assert t.state.shooter == shooter + 1
