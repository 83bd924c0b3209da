"""Audit of settlement against the letter of the regulation texts (/work/shared/regulations/:
9 NYCRR 5324.52, N.J.A.C. 13:47-20.25). Each test failed on the code as audited (commit ce92af0)
and asserts what the quoted paragraph requires.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from settlement.engine import Table
from settlement.profile import ProfileError, profile_from_dict

REPO = Path(__file__).resolve().parents[1]


def _settlement_table(name: str) -> dict:
    return tomllib.loads((REPO / "config" / "profiles" / f"{name}.toml").read_text())["settlement"]


@pytest.mark.parametrize("name, lay_base", [("ny-5324", "win"), ("ny-5324", "wager"), ("nj-13-47", "win")])
def test_a_vig_above_five_percent_of_the_wager_is_refused(name, lay_base):
    """9 NYCRR 5324.52(e)(1)-(2): buy and lay bets pay "a percentage of the amount wagered that
    shall not exceed five percent of such wager"; N.J.A.C. 13:47-20.25(j): "which in no event shall
    exceed five percent of such wager", (k) (lay): "a percentage of the amount the player could win
    on such bet which in no event shall exceed five percent of such wager"; (e)(3), (l): no other
    vigorish.

    The audited profile schema took any ``vig.rate``: with ``rate = "6/100"`` a $20 buy of the 4
    was charged $1.20, 6% of the wager. A profile whose vig can exceed five percent of a wager is
    now refused at load, naming the paragraphs."""
    data = _settlement_table(name)
    data["vig"] = dict(data["vig"], rate="6/100", lay_base=lay_base)
    with pytest.raises(ProfileError) as exc:
        profile_from_dict(name, data)
    msg = str(exc.value)
    assert "five percent" in msg and "5324.52(e)(1)-(2)" in msg and "13:47-20.25(j)-(k)" in msg


def test_a_lay_vig_on_the_win_may_be_a_larger_rate_while_under_five_percent_of_the_wager():
    """N.J.A.C. 13:47-20.25(k): the lay vig is "a percentage of the amount the player could win ...
    which in no event shall exceed five percent of such wager": 6% of the win of a lay of the 6 or 8
    (5 to 6) is exactly 5% of the wager, so a lay-only profile with that rate loads and charges it;
    7% of that win (5.83% of the wager) is refused."""
    data = _settlement_table("nj-13-47")
    data["permitted"] = [k for k in data["permitted"] if k != "buy"]
    data["pays"] = {k: v for k, v in data["pays"].items() if k != "buy"}
    data["working"] = dict(data["working"], off_on_come_out=["place"],
                           callable_off=[k for k in data["working"]["callable_off"] if k != "buy"])
    data["vig"] = dict(data["vig"], rate="6/100", lay_base="win")
    prof = profile_from_dict("nj-13-47", data)
    t = Table(prof)
    w = t.place({"player": "p", "bet": "lay", "number": 6, "amount": 1200})
    assert w.vig_paid == 60                                   # 6% of $10 to win = 5% of $12
    data["vig"] = dict(data["vig"], rate="7/100")
    with pytest.raises(ProfileError):
        profile_from_dict("nj-13-47", data)


@pytest.mark.parametrize("name", ["ny-5324", "ny-4620", "nj-13-47", "rules-002"])
def test_a_field_pay_table_must_pay_every_field_number(name):
    """9 NYCRR 5324.52(b)(11): the field "shall win if any one of the totals 2, 3, 4, 9 10, 11 or 12
    is rolled"; N.J.A.C. 13:47-20.25(h)1.xi, rules text 002 2(k) the same; 9 NYCRR 4620.3(e)(6):
    "2, 3, 4, 9, 10, 11 or 12 ... the bettor gets even money".

    The audited profile check took any subset of those numbers as the field pay table (the hardway
    table must have exactly its four numbers): with 3 left out, a $5 field bet lost on a roll of
    1-2. A field table without one of the seven numbers is now refused at load."""
    data = _settlement_table(name)
    data["pays"] = dict(data["pays"], field={k: v for k, v in data["pays"]["field"].items() if k != "3"})
    with pytest.raises(ProfileError) as exc:
        profile_from_dict(name, data)
    assert "settlement.pays.field" in str(exc.value) and "[2, 3, 4, 9, 10, 11, 12]" in str(exc.value)


@pytest.mark.parametrize("name", ["ny-5324", "rules-002"])
@pytest.mark.parametrize("change", ["add-3", "drop-4"])
def test_a_fire_pay_table_pays_four_five_and_six_points_only(name, change):
    """9 NYCRR 5324.52(b)(40): the fire bet "shall win if at least four different point totals ...
    are made ... and shall lose if fewer than four different point totals are made"; (d)(4): paid
    for the highest number of different points made at tables A or B, "Four", "Five", "Six";
    rules text 002, 2(nn) the same.

    The audited profile check allowed fire tiers 1 to 6: a table with a tier for 3 points paid a
    fire bet on a seven-out after three points (the text: it loses), and a table without the tier
    for four lost a bet that made four. A fire table needs exactly the tiers 4, 5 and 6."""
    data = _settlement_table(name)
    fire = dict(data["pays"]["fire"])
    if change == "add-3":
        fire["3"] = "5:1"
    else:
        fire.pop("4")
    data["pays"] = dict(data["pays"], fire=fire)
    with pytest.raises(ProfileError) as exc:
        profile_from_dict(name, data)
    assert "settlement.pays.fire" in str(exc.value) and "[4, 5, 6]" in str(exc.value)


def test_a_hot_roller_pay_table_has_no_tier_below_two_points():
    """Rules text 002, 2(oo): the hot roller wager "shall win if all combinations for at least two
    of the numbers (points) ... is thrown before any 7 is thrown, and shall lose if any 7 is thrown
    before all combinations of any two of the points are thrown". The audited check allowed a tier
    for one point, which paid on a 7 after one point's combinations; it is now refused."""
    data = _settlement_table("rules-002")
    data["pays"] = dict(data["pays"], hot_roller={"1": "1:1", "2": "5:1"})
    with pytest.raises(ProfileError) as exc:
        profile_from_dict("rules-002", data)
    assert "settlement.pays.hot_roller" in str(exc.value)
    data["pays"] = dict(data["pays"], hot_roller={"2": "5:1", "6": "200:1"})
    assert profile_from_dict("rules-002", data).pays.hot_roller[2] == 5
