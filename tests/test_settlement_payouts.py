"""Settlement: real payouts in cents per profile for each wager family (via the settle interface)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from settlement.cli import run_scenario
from settlement.profile import load_profile, profile_from_dict

REPO = Path(__file__).resolve().parents[1]


def run(profile, events, ledger=":memory:"):
    prof = load_profile(profile) if isinstance(profile, str) else profile
    out: list[dict] = []
    rc = run_scenario(prof, list(enumerate(events, 1)), ledger, emit=lambda s: out.append(json.loads(s)))
    assert rc == 0
    return out


def bet(player, name, amount, **kw):
    return {"type": "bet", "player": player, "bet": name, "amount": amount, **kw}


def roll(a, b, **kw):
    return {"type": "roll", "dice": [a, b], **kw}


def settled(out):
    return [o for o in out if "roll" in o]


def rejected(out):
    return [o for o in out if o.get("type") == "rejected"]


def one(out, **match):
    hits = [o for o in settled(out) if all(o.get(k) == v for k, v in match.items())]
    assert len(hits) == 1, (match, out)
    return hits[0]


def variant(name: str, **changes):
    """A copy of a profile's [settlement] table with some keys changed."""
    import tomllib
    data = tomllib.loads((REPO / "config" / "profiles" / f"{name}.toml").read_text())["settlement"]
    for dotted, value in changes.items():
        d = data
        parts = dotted.split("__")
        for p in parts[:-1]:
            d = d[p]
        d[parts[-1]] = value
    return profile_from_dict(name, data)


# ---- line bets and odds ---------------------------------------------------------------

def test_pass_dont_come_dont_come_and_odds_ny5324():
    out = run("ny-5324", [
        bet("p1", "pass", 1000), bet("p2", "dont_pass", 1000),
        roll(2, 2),                                               # point 4
        bet("p1", "odds", 3000, base="pass"), bet("p2", "odds", 6000, base="dont_pass"),
        bet("p1", "come", 1000), bet("p2", "dont_come", 1000),
        roll(5, 4),                                               # come/don't come to 9
        bet("p1", "odds", 4000, base="come", number=9), bet("p2", "odds", 6000, base="dont_come", number=9),
        roll(1, 3),                                               # point made
        roll(6, 1),                                               # come-out 7: come 9 loses, odds off; don't come 9 wins
    ])
    assert one(out, player="p1", bet="pass") == {"roll": 3, "player": "p1", "bet": "pass", "result": "win",
                                                 "stake": 1000, "payout": 1000, "vig": 0}
    assert one(out, player="p1", bet="odds", base="pass")["payout"] == 6000       # 2:1 on 4
    assert one(out, player="p2", bet="dont_pass")["result"] == "lose"
    assert one(out, player="p2", bet="odds", base="dont_pass")["result"] == "lose"
    assert one(out, player="p1", bet="come")["result"] == "lose"
    assert one(out, player="p1", bet="odds", base="come") == {
        "roll": 4, "player": "p1", "bet": "odds", "base": "come", "number": 9, "result": "push",
        "stake": 4000, "payout": 0, "vig": 0}                                       # come odds off on the come-out
    assert one(out, player="p2", bet="dont_come")["payout"] == 1000
    assert one(out, player="p2", bet="odds", base="dont_come")["payout"] == 4000   # 2:3 on 9, working


def test_come_odds_called_on_work_on_the_come_out():
    out = run("ny-5324", [
        bet("p1", "pass", 500), roll(3, 3), bet("p1", "come", 500), roll(4, 4),
        bet("p1", "odds", 2500, base="come", number=8, working=True), roll(3, 3), roll(5, 3)])
    assert one(out, bet="odds")["payout"] == 3000                                   # 6:5 on 8, on lammer
    assert one(out, bet="come")["payout"] == 500


def test_bars_per_profile():
    evs = [bet("p", "dont_pass", 1000), roll(6, 6)]
    assert settled(run("ny-5324", evs))[0]["result"] == "push"
    assert settled(run("nj-13-47", evs))[0]["result"] == "void"
    assert settled(run("rules-002", evs))[0]["result"] == "push"
    o = settled(run("ny-4620", [bet("p", "dont_pass", 500), roll(6, 6)]))[0]
    assert (o["result"], o["payout"]) == ("win", 500)                              # 4620: wins on 12
    o = settled(run("ny-4620", [bet("p", "dont_pass", 500), roll(1, 2)]))[0]
    assert o["result"] == "push"                                                    # ace-deuce barred
    dc = [bet("p", "pass", 1000), roll(2, 2), bet("p", "dont_come", 1000), roll(6, 6)]
    assert one(run("ny-5324", dc), bet="dont_come")["result"] == "void"             # (b)(4)(v)
    dc4620 = [bet("p", "pass", 500), roll(2, 2), bet("p", "dont_come", 500), roll(1, 2)]
    assert one(run("ny-4620", dc4620), bet="dont_come")["result"] == "push"


def test_4620_odds_limits_and_for_odds():
    base = [bet("p", "pass", 500), roll(4, 1)]
    out = run("ny-4620", base + [bet("p", "odds", 600, base="pass"), roll(3, 2)])
    assert one(out, bet="odds")["payout"] == 900                                    # $6 at 3-2
    out = run("ny-4620", base + [bet("p", "odds", 700, base="pass")])
    assert "exceed" in rejected(out)[0]["reason"] and "4620.3(e)(3)" in rejected(out)[0]["rule"]


# ---- place, place to lose, buy, lay, big 6/8 -----------------------------------------

def test_place_payouts_and_rounding():
    ev = [bet("p", "pass", 500), roll(2, 2), bet("p", "place", 1200, number=6), bet("q", "place", 500, number=6),
          bet("r", "place", 1000, number=4), roll(5, 1), roll(1, 3)]
    out = run("ny-5324", ev)
    assert one(out, player="p", bet="place")["payout"] == 1400
    # 5 x 7/6 = 5.833..: up to the cent, never below the odds listed (5324.52(d)(1))
    assert one(out, player="q", bet="place")["payout"] == 584
    assert one(out, player="r", bet="place")["payout"] == 1800
    dollars = variant("ny-5324", payout_unit_cents=100)
    assert one(run(dollars, ev), player="q", bet="place")["payout"] == 600          # up to the house unit
    assert one(run(dollars, ev), player="p", bet="place")["payout"] == 1400         # exact: not rounded
    assert one(run("ny-4620", [bet("p", "pass", 500), roll(2, 2), bet("p", "place", 600, number=6), roll(3, 3)]),
               bet="place")["payout"] == 700


def test_place_off_on_come_out_unless_on():
    out = run("ny-5324", [bet("p", "place", 600, number=6), bet("q", "place", 600, number=6, working=True), roll(3, 3)])
    assert [o["player"] for o in settled(out)] == ["q"]
    assert one(out, player="q")["payout"] == 700
    # 4620.3(e)(4): place bets work unless called off; not on the established point
    out = run("ny-4620", [bet("p", "place", 600, number=6), roll(4, 2)])
    assert one(out, bet="place")["payout"] == 700
    out = run("ny-4620", [bet("p", "pass", 500), roll(4, 2), bet("p", "place", 600, number=6)])
    assert "4620.3(e)(4)" in rejected(out)[0]["rule"]


def test_off_lammer_turns_place_off():
    out = run("ny-5324", [bet("p", "pass", 500), roll(2, 2), bet("p", "place", 600, number=6),
                          {"type": "working", "player": "p", "bet": "place", "number": 6, "on": False},
                          roll(3, 3), {"type": "working", "player": "p", "bet": "place", "number": 6, "on": True},
                          roll(3, 3)])
    assert [o["roll"] for o in settled(out) if o["bet"] == "place"] == [3]


def test_place_to_lose():
    ev = [bet("p", "place_lose", 1100, number=4), bet("q", "place_lose", 500, number=6), roll(3, 4)]
    out = run("ny-5324", ev)
    assert one(out, player="p")["payout"] == 500                                   # 5:11
    assert one(out, player="q")["payout"] == 400                                   # 4:5
    assert one(run("nj-13-47", ev), player="q")["payout"] == 400


def test_buy_and_lay_vig_both_ways():
    pt = [bet("x", "pass", 500), roll(3, 2)]
    # ny-5324: buy vig when placed (5% of $25 = $1.25), lay vig on the win (5% of the win)
    out = run("ny-5324", pt + [bet("p", "buy", 2500, number=10), bet("q", "lay", 4000, number=4), roll(5, 5),
                               roll(2, 2)])
    assert one(out, player="p") == {"roll": 2, "player": "p", "bet": "buy", "number": 10, "result": "win",
                                    "stake": 2500, "payout": 5000, "vig": 125}
    assert one(out, player="q") == {"roll": 3, "player": "q", "bet": "lay", "number": 4, "result": "lose",
                                    "stake": 4000, "payout": 0, "vig": 0}
    out = run("ny-5324", pt + [bet("q", "lay", 4000, number=4), roll(3, 4)])
    assert one(out, player="q")["payout"] == 2000 and one(out, player="q")["vig"] == 100
    # vig only on a win for the buy, and when placed for the lay
    flip = variant("ny-5324", vig__buy_when="win", vig__lay_when="placed")
    out = run(flip, pt + [bet("p", "buy", 2500, number=10), bet("q", "lay", 4000, number=4), roll(4, 3)])
    assert one(out, player="p")["vig"] == 0 and one(out, player="p")["result"] == "lose"
    assert one(out, player="q")["vig"] == 100 and one(out, player="q")["payout"] == 2000
    out = run(flip, pt + [bet("p", "buy", 2500, number=10), roll(6, 4)])
    assert one(out, player="p")["vig"] == 125 and one(out, player="p")["payout"] == 5000
    # NJ (k): lay vig on the amount that could be won, at placement
    out = run("nj-13-47", pt + [bet("q", "lay", 4000, number=4), roll(2, 2)])
    assert one(out, player="q") == {"roll": 2, "player": "q", "bet": "lay", "number": 4, "result": "lose",
                                    "stake": 4000, "payout": 0, "vig": 100}


def test_buy_vig_rounded_down_to_unit():
    out = run("ny-5324", [bet("x", "pass", 500), roll(3, 2), bet("p", "buy", 1990, number=4), roll(2, 2)])
    assert one(out, player="p")["vig"] == 99                                       # 5% of 1990 = 99.5 -> 99
    dollar = variant("ny-5324", vig__unit_cents=100)
    out = run(dollar, [bet("x", "pass", 500), roll(3, 2), bet("p", "buy", 3900, number=4), roll(2, 2)])
    assert one(out, player="p")["vig"] == 100                                      # $1.95 -> $1


def test_big_6_and_8():
    out = run("ny-4620", [bet("p", "big6", 500), bet("q", "big8", 500), roll(4, 2), roll(3, 4)])
    assert one(out, player="p")["payout"] == 500
    assert one(out, player="q")["result"] == "lose"
    assert "not a permissible wager" in rejected(run("ny-5324", [bet("p", "big6", 500)]))[0]["reason"]


# ---- hardways, field, one-roll props ------------------------------------------------

def test_hardways_per_profile():
    pt = [bet("x", "pass", 500), roll(4, 1)]
    out = run("ny-5324", pt + [bet("p", "hardway", 500, number=6), bet("q", "hardway", 500, number=4),
                               bet("r", "hardway", 500, number=8), roll(3, 3), roll(3, 1), roll(5, 3)])
    assert one(out, player="p")["payout"] == 4500                                  # 9:1
    assert one(out, player="q")["result"] == "lose"                                # easy 4
    assert one(out, player="r")["result"] == "lose"                                # easy 8
    out = run("ny-4620", pt + [bet("p", "hardway", 500, number=6), bet("q", "hardway", 500, number=10),
                               roll(3, 3), roll(5, 5)])
    assert one(out, player="p")["payout"] == 4500                                  # 10 for 1 = 9 to 1
    assert one(out, player="q")["payout"] == 3500                                  # 8 for 1 = 7 to 1
    # hardways are off on the come-out (5324.52(c)(5))
    assert settled(run("ny-5324", [bet("p", "hardway", 500, number=4), roll(2, 2)])) == []


def test_field_12_by_profile():
    for prof, twelve in (("ny-5324", 1500), ("nj-13-47", 1000), ("ny-4620", 1000)):
        out = run(prof, [bet("p", "field", 500), roll(6, 6)])
        assert one(out, bet="field")["payout"] == twelve, prof
    out = run("ny-5324", [bet("p", "field", 500), roll(1, 1), bet("p", "field", 500), roll(1, 2),
                          bet("p", "field", 500), roll(3, 4)])
    assert [o["payout"] for o in settled(out)] == [1000, 500, 0]


def test_one_roll_props():
    cases = [
        ("ny-5324", "any7", 500, (3, 4), 2000), ("ny-4620", "any7", 500, (3, 4), 2000),
        ("ny-4620", "any_craps", 500, (1, 1), 3500), ("ny-4620", "craps2", 500, (1, 1), 14500),
        ("ny-4620", "craps3", 500, (1, 2), 7000), ("ny-4620", "eleven", 500, (6, 5), 7000),
        ("ny-5324", "craps12", 100, (6, 6), 3000), ("ny-5324", "eleven", 100, (5, 6), 1500),
        ("nj-13-47", "craps3", 100, (2, 1), 1500), ("ny-5324", "c_and_e", 200, (1, 1), 600),
        ("ny-5324", "c_and_e", 200, (5, 6), 1400),
    ]
    for prof, name, amount, dice, payout in cases:
        out = run(prof, [bet("p", name, amount), roll(*dice)])
        assert one(out, bet=name)["payout"] == payout, (prof, name)
    assert one(run("ny-5324", [bet("p", "any7", 500), roll(3, 3)]), bet="any7")["result"] == "lose"


def test_hops():
    out = run("ny-5324", [bet("p", "hop", 100, dice=[2, 2]), bet("q", "hop", 100, dice=[3, 1]),
                          bet("r", "hop", 100, dice=[1, 3]), roll(2, 2)])
    assert one(out, player="p")["payout"] == 3000
    assert one(out, player="q")["result"] == "lose"
    out = run("ny-5324", [bet("q", "hop", 100, dice=[3, 1]), roll(3, 1)])
    assert one(out, player="q") == {"roll": 1, "player": "q", "bet": "hop", "dice": [1, 3], "result": "win",
                                    "stake": 100, "payout": 1500, "vig": 0}
    assert "no hop bet" in rejected(run("ny-5324", [bet("p", "hop", 100, dice=[1, 2])]))[0]["reason"]


def test_horn_horn_high_whirl():
    out = run("ny-5324", [bet("p", "horn", 400), roll(1, 1), bet("p", "horn", 400), roll(1, 2),
                          bet("p", "horn", 400), roll(3, 3)])
    assert [(o["result"], o["payout"]) for o in settled(out)] == [("win", 2700), ("win", 1200), ("lose", 0)]
    out = run("ny-5324", [bet("p", "horn_high", 500, number=12), roll(6, 6),
                          bet("p", "horn_high", 500, number=12), roll(5, 6)])
    assert [o["payout"] for o in settled(out)] == [5700, 1100]                    # 2x30-3 ; 15-4
    out = run("ny-5324", [bet("p", "whirl", 500), roll(3, 4), bet("p", "whirl", 500), roll(5, 6),
                          bet("p", "whirl", 500), roll(1, 1)])
    assert [(o["result"], o["payout"]) for o in settled(out)] == [("push", 0), ("win", 1100), ("win", 2600)]
    rej = rejected(run("ny-5324", [bet("p", "horn", 500), bet("p", "whirl", 400)]))
    assert len(rej) == 2 and all("5324.52(b)(20)-(21), (d)(2)-(3)" in r["rule"] for r in rej)
    assert "not a permissible" in rejected(run("ny-4620", [bet("p", "horn", 400)]))[0]["reason"]


def test_six_seven_eight():
    out = run("ny-5324", [bet("p", "six_seven_eight", 500), roll(3, 3), bet("p", "six_seven_eight", 500),
                          roll(1, 5), bet("p", "six_seven_eight", 500), roll(4, 4),
                          bet("p", "six_seven_eight", 500), roll(4, 5)])
    assert [o["payout"] for o in settled(out)] == [1000, 500, 1000, 0]


# ---- fire, bonus craps, hot roller ---------------------------------------------------

FOUR_POINTS = [roll(2, 2), roll(3, 1), roll(4, 1), roll(3, 2), roll(5, 1), roll(4, 2), roll(6, 2), roll(5, 3)]


def test_fire_table_a_and_b():
    ev = [bet("p", "fire", 100)] + FOUR_POINTS + [roll(4, 4), roll(6, 1)]   # 8 twice does not count twice
    out = run("ny-5324", ev + [roll(4, 3)])
    assert one(out, bet="fire")["payout"] == 2400
    b = variant("ny-5324", pays__fire={4: "39:1", 5: "199:1", 6: "499:1"})
    assert one(run(b, ev + [roll(4, 3)]), bet="fire")["payout"] == 3900
    # three points then a seven-out: loses
    out = run("ny-5324", [bet("p", "fire", 500)] + FOUR_POINTS[:6] + [roll(5, 5), roll(3, 4)])
    assert one(out, bet="fire")["result"] == "lose"
    # a come-out 7 is not a loser 7
    assert settled(run("ny-5324", [bet("p", "fire", 100), roll(3, 4)])) == []


def test_fire_carried_to_successor_on_voluntary_relinquish():
    ev = ([bet("p", "fire", 100)] + FOUR_POINTS[:4] + [{"type": "shooter", "change": "voluntary"},
          bet("q", "fire", 100)] + FOUR_POINTS[4:] + [roll(6, 3), roll(1, 6)])
    out = run("ny-5324", ev)
    assert one(out, player="p", bet="fire")["payout"] == 2400                     # 4,5 + 6,8 of the successor
    assert one(out, player="q", bet="fire")["result"] == "lose"                    # only 6, 8


def test_fire_and_bonus_craps_open_until_a_successor_s_own_come_out_roll():
    """9 NYCRR 5324.52(b)(40), (b)(41), (j)(1)(i): fire and bonus craps bets are made "prior to
    the come out roll of a new shooter". A shooter who takes the dice with the point
    established ((i)(1): "after any roll") rolls to it first: the bets are still open after
    that shooter's first rolls, and close with the shooter's own come-out roll."""
    ev = [bet("p", "pass", 1000), roll(3, 3), roll(2, 3), {"type": "shooter", "change": "voluntary"},
          roll(4, 1),                                          # the successor's first roll: 5, no decision
          bet("q", "fire", 100), bet("q", "all_small", 100),   # still before its come-out roll
          roll(2, 4),                                          # the 6 made: the next roll is its come-out
          bet("r", "fire", 100),                               # still open
          roll(2, 2),                                          # the successor's come-out roll: point 4
          bet("s", "fire", 100), bet("s", "all_small", 100)]   # closed
    out = run("ny-5324", ev)
    refused = [(r["player"], r["bet"], r["rule"]) for r in rejected(out)]
    assert refused == [("s", "fire", "9 NYCRR 5324.52(b)(40), (j)(1)(i)"),
                       ("s", "all_small", "9 NYCRR 5324.52(b)(41)")], refused


def test_fire_rules():
    out = run("ny-5324", [bet("p", "fire", 100), bet("p", "fire", 100), roll(2, 2), bet("q", "fire", 100),
                          {"type": "remove", "player": "p", "bet": "fire"}, bet("r", "fire", 150)])
    reasons = [r["rule"] for r in rejected(out)]
    assert reasons[0] == "9 NYCRR 5324.52(c)(3)(ii)-(iii)"        # no increase
    assert reasons[1] == "9 NYCRR 5324.52(b)(40), (j)(1)(i)"      # only before the shooter's first roll
    assert reasons[2] == "9 NYCRR 5324.52(c)(3)(ii)-(iii)"        # no removal
    assert len(reasons) == 4


def test_bonus_craps():
    small = [roll(1, 1), roll(1, 2), roll(2, 2), roll(2, 3), roll(3, 3)]
    out = run("ny-5324", [bet("p", "all_small", 100), bet("q", "make_em_all", 100), bet("r", "all_tall", 100)]
              + small + [roll(4, 4), roll(4, 5), roll(5, 5), roll(5, 6), roll(6, 6)])
    assert one(out, player="p")["payout"] == 3400
    assert one(out, player="r")["payout"] == 3400
    assert one(out, player="q")["payout"] == 17500
    out = run("ny-5324", [bet("p", "all_small", 100), roll(1, 1), roll(3, 4)])
    assert one(out, player="p")["result"] == "lose"                                # a come-out 7 loses it too


def test_hot_roller():
    out = run("rules-002", [bet("p", "hot_roller", 100)])
    assert "2(oo)" in rejected(out)[0]["rule"]
    prof = variant("rules-002", pays__hot_roller={2: "5:1", 3: "10:1", 6: "100:1"})
    both = [roll(1, 3), roll(2, 2), roll(1, 4), roll(3, 2)]                        # all of 4, all of 5
    out = run(prof, [bet("p", "hot_roller", 100)] + both + [roll(1, 3), roll(3, 4)])
    assert one(out, bet="hot_roller")["payout"] == 500
    out = run(prof, [bet("p", "hot_roller", 100), roll(1, 3), roll(2, 2), roll(1, 4), roll(6, 1)])
    assert one(out, bet="hot_roller")["result"] == "lose"
    # every way of all six point numbers: the top tier, paid on the roll that completes it
    six = [roll(a, b) for a, b in [(1, 3), (2, 2), (1, 4), (2, 3), (1, 5), (2, 4), (3, 3), (2, 6), (3, 5), (4, 4),
                                   (3, 6), (4, 5), (4, 6), (5, 5)]]
    out = run(prof, [bet("p", "hot_roller", 100)] + six)
    assert (one(out, bet="hot_roller")["roll"], one(out, bet="hot_roller")["payout"]) == (14, 10000)
    # five of them and a 7: the highest tier reached (3 and more: 10 to 1), not the top one
    out = run(prof, [bet("p", "hot_roller", 100)] + six[:-1] + [roll(3, 4)])
    assert (one(out, bet="hot_roller")["result"], one(out, bet="hot_roller")["payout"]) == ("win", 1000)


# ---- rejections ---------------------------------------------------------------------

def test_rejections_name_the_rule():
    out = run("ny-5324", [
        bet("p", "pass", 1000), roll(2, 2),
        bet("p", "pass", 1000),                                        # (b)(1)
        {"type": "remove", "player": "p", "bet": "pass"},              # (c)(3)(i)
        bet("p", "odds", 9000, base="pass"),                           # over 3x
        bet("p", "nonsense", 100),
        bet("p", "place", 600, number=7),
        bet("p", "field", 0),
    ])
    rules = [r["rule"] for r in rejected(out)]
    assert rules[:3] == ["9 NYCRR 5324.52(b)(1)", "9 NYCRR 5324.52(c)(3)(i)", "9 NYCRR 5324.52(e)(4)"]
    assert "unknown wager" in rejected(out)[3]["reason"]
    assert rules[4:] == ["9 NYCRR 5324.52(b)(5)", "docs/wagers.md"]   # amount 0: the input format
    assert len(rules) == 6
    assert rejected(run("nj-13-47", [bet("p", "pass", 500), roll(2, 2), bet("p", "odds", 500, base="pass")]))[0][
        "rule"] == "N.J.A.C. 13:47-20.25(h)1"


def test_malformed_amount_and_over_reduction_cite_what_the_text_says():
    """A malformed amount cited "table limits (rules of games notice, 9 NYCRR 5323.13)": no
    paragraph of the regulations texts says anything of it (it is the input format, as a missing
    player). Reducing odds by more than the wager cited (c)(3)(i), the pass/come lock: the
    paragraph on reducing any wager is (c)(3), "A wager made on any bet may be removed or
    reduced at any time prior to a roll that decides the outcome of such wager"."""
    out = run("ny-5324", [
        bet("p", "pass", 1000), roll(2, 2), bet("p", "odds", 2000, base="pass"),
        {"type": "remove", "player": "p", "bet": "odds", "base": "pass", "amount": 2500},
        {"type": "remove", "player": "p", "bet": "odds", "base": "pass", "amount": "500"},
        bet("p", "field", -100),
        bet("p", "field", 1.5),
    ])
    rej = rejected(out)
    assert [(r["line"], r["rule"]) for r in rej] == [
        (4, "9 NYCRR 5324.52(c)(3)"), (5, "docs/wagers.md"), (6, "docs/wagers.md"), (7, "docs/wagers.md")]
    assert rej[0]["reason"] == "cannot reduce a 2000-cent odds bet by 2500 (9 NYCRR 5324.52(c)(3))"
    assert not any("5323.13" in r["reason"] for r in rej)


def test_dont_pass_reduced_may_not_be_increased():
    out = run("ny-5324", [bet("p", "dont_pass", 2000), roll(2, 2),
                          {"type": "remove", "player": "p", "bet": "dont_pass", "amount": 1000},
                          bet("p", "dont_pass", 1000), roll(3, 4), bet("p", "dont_pass", 1000)])
    assert rejected(out)[0]["rule"] == "9 NYCRR 5324.52(c)(4)"
    assert one(out, bet="dont_pass")["stake"] == 1000 and len(rejected(out)) == 1


def test_dont_pass_reduced_on_the_come_out_may_not_be_increased():
    """(c)(4): "may be removed or reduced at any time but may not be replaced or increased after
    such removal or reduction", the come-out roll included; the mark ends with the bet's
    decision (a come-out 7 here), after which a new don't pass bet is taken."""
    remove = {"type": "remove", "player": "p", "bet": "dont_pass", "amount": 500}
    out = run("ny-5324", [bet("p", "dont_pass", 1000), remove, bet("p", "dont_pass", 500), roll(3, 4),
                          bet("p", "dont_pass", 800), roll(1, 1)])
    assert [r["rule"] for r in rejected(out)] == ["9 NYCRR 5324.52(c)(4)"]
    assert one(out, bet="dont_pass", roll=1)["stake"] == 500      # the reduced bet loses on the 7
    assert one(out, bet="dont_pass", roll=2)["stake"] == 800      # a new bet, after the decision
    removed = run("ny-5324", [bet("p", "dont_pass", 1000), {"type": "remove", "player": "p", "bet": "dont_pass"},
                              bet("p", "dont_pass", 1000)])
    assert [r["rule"] for r in rejected(removed)] == ["9 NYCRR 5324.52(c)(4)"]   # not replaced either
    # nj-13-47 has no such rule: a removed don't pass may be made again
    assert rejected(run("nj-13-47", [bet("p", "dont_pass", 1000), remove, bet("p", "dont_pass", 500)])) == []


def test_cli_bad_input_exit_2(tmp_path, capsys):
    from controller.cli import main
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "bet", "player": "p", "bet": "pass", "amount": 500}\n{"type": "roll", "dice": [7, 1]}\n')
    assert main(["settle", "--profile", "ny-5324", str(bad)]) == 2
    cap = capsys.readouterr()
    assert "bad.jsonl:2" in cap.err and cap.out == ""
    good = tmp_path / "good.jsonl"
    good.write_text('{"type": "bet", "player": "p", "bet": "pass", "amount": 500}\n{"type": "roll", "dice": [6, 5]}\n')
    assert main(["settle", "--profile", "ny-5324", str(good)]) == 0
    assert json.loads(capsys.readouterr().out) == {"roll": 1, "player": "p", "bet": "pass", "result": "win",
                                                   "stake": 500, "payout": 500, "vig": 0}
    wrong = tmp_path / "wrong.toml"
    wrong.write_text((REPO / "config/profiles/ny-5324.toml").read_text().replace("[settlement.bar]",
                                                                                  "plce = 1\n[settlement.bar]"))
    assert main(["settle", "--profile", str(wrong), str(good)]) == 2
    assert "settlement.plce" in capsys.readouterr().err


def test_settlement_does_not_import_controller():
    code = ("import sys, settlement.engine, settlement.cli, settlement.ledger, settlement.house_edge, "
            "settlement.service, settlement.fast, settlement.crosscheck;"
            "print(any(m == 'controller' or m.startswith('controller.') for m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.stdout.strip() == "False", r.stderr


@pytest.mark.parametrize("name", ["ny-5324", "ny-4620", "nj-13-47", "rules-002"])
def test_profiles_load(name):
    p = load_profile(name)
    assert p.pays.line == 1


@pytest.mark.parametrize("name", ["ny-5324", "ny-4620", "nj-13-47", "rules-002"])
def test_common_wagers_in_every_profile(name):
    """The same bets under each profile: cents as each text's pay table gives them."""
    pt = [bet("x", "pass", 500), roll(4, 2)]                                       # point 6
    out = run(name, pt + [bet("p", "place", 600, number=8), bet("h", "hardway", 500, number=8), roll(4, 4),
                          bet("f", "field", 500), roll(1, 1), bet("s", "any7", 500), roll(2, 5)])
    assert one(out, player="p")["payout"] == 700                                   # 7:6 / 7-6 / 7 to 6
    assert one(out, player="h")["payout"] == 4500                                  # 9:1 / "10 for 1"
    assert one(out, player="f")["payout"] == 1000                                  # field 2 pays 2:1
    assert one(out, player="s")["payout"] == 2000                                  # 4:1 / "5 for 1"
    assert one(out, player="x")["result"] == "lose"                                # seven-out


def test_rolls_only_to_decide_the_remaining_come_and_dont_come_wagers():
    """9 NYCRR 5324.52(i)(2) / N.J.A.C. 13:69F-1.11(b): after the point is made, with come and
    don't come wagers left and no pass or don't pass bet, the shooter rolls only to decide
    them. Those rolls set no point (a 6 is not a point: the come bet on 6 wins, nothing else
    changes), a pass bet is refused until they end, and a 7 decides the rest and ends them
    without a change of shooter."""
    on, off = {"type": "decide_only", "on": True}, {"type": "decide_only", "on": False}
    ev = [bet("p", "pass", 500), roll(2, 2),                         # point 4
          bet("p", "come", 500), roll(3, 3),                         # come -> 6
          bet("q", "dont_come", 500), roll(4, 5),                    # don't come -> 9
          roll(1, 3),                                                # point 4 made: pass wins
          on, bet("p", "pass", 500),                                 # refused: decision-only rolls
          roll(5, 1),                                                # 6: the come bet on 6 wins; no point
          roll(4, 1),                                                # 5: nothing (no point was set by the 6)
          roll(5, 2),                                                # 7: the don't come on 9 wins; rolls end
          bet("p", "pass", 500), roll(3, 3), roll(3, 3)]             # the game proceeds: point 6, made
    out = run("ny-5324", ev)
    assert [(r["rule"], r["bet"]) for r in rejected(out)] == [("9 NYCRR 5324.52(i)(2)", "pass")]
    assert one(out, bet="come", roll=5) == {"roll": 5, "player": "p", "bet": "come", "number": 6, "result": "win",
                                            "stake": 500, "payout": 500, "vig": 0}
    assert one(out, bet="dont_come", roll=7)["result"] == "win"
    assert [o["roll"] for o in settled(out)] == [4, 5, 7, 9]          # the 5 (roll 6) decided nothing
    assert one(out, bet="pass", roll=9)["result"] == "win"            # a new point 6, made on roll 9
    # Without the mode the pass bet is taken, the 6 is its point and the 7 a seven-out.
    plain = run("ny-5324", [e for e in ev if e not in (on, off)])
    assert rejected(plain) == []
    assert [(o["roll"], o["bet"], o["result"]) for o in settled(plain)] == [
        (4, "pass", "win"), (5, "come", "win"), (7, "dont_come", "win"), (7, "pass", "lose"), (9, "pass", "win")]
    # Not while a point is established.
    late = run("nj-13-47", [bet("p", "pass", 500), roll(2, 2), on])
    assert [r["rule"] for r in rejected(late)] == ["as N.J.A.C. 13:69F-1.11(b) (N.J.A.C. 13:47-20.25 is silent)"]


def test_bonus_craps_may_be_removed_whole_but_not_reduced_or_increased():
    """9 NYCRR 5324.52(c)(3): any wager may be removed or reduced before the roll that decides it,
    except (ii) a fire bet (not reduced, increased, or removed before a loser 7) and (iii) a bonus
    craps bet: "shall not be reduced or increased at any time" (removal is not forbidden)."""
    out = run("ny-5324", [bet("p", "make_em_all", 500), bet("p", "make_em_all", 100), roll(1, 1),
                          {"type": "remove", "player": "p", "bet": "make_em_all", "amount": 200},
                          {"type": "remove", "player": "p", "bet": "make_em_all"},
                          roll(3, 4)])
    assert [r["rule"] for r in rejected(out)] == ["9 NYCRR 5324.52(c)(3)(ii)-(iii)"] * 2
    assert "increased" in rejected(out)[0]["reason"] and "reduced" in rejected(out)[1]["reason"]
    assert settled(out) == []                          # removed whole before the 7: nothing to lose


def test_cli_decide_only_lines(tmp_path, capsys):
    """The settle command takes the decide_only line it documents (docs/wagers.md), and names a
    malformed one (exit 2, nothing printed)."""
    from controller.cli import main
    lines = [bet("p", "pass", 500), roll(2, 2), bet("p", "come", 500), roll(2, 3), roll(1, 3),
             {"type": "decide_only", "on": True}, bet("p", "pass", 500), roll(4, 1), roll(3, 3)]
    good = tmp_path / "decide.jsonl"
    good.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert main(["settle", "--profile", "ny-5324", str(good)]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(o.get("roll"), o.get("bet"), o.get("result", o.get("type"))) for o in out] == [
        (3, "pass", "win"), (None, "pass", "rejected"), (4, "come", "win")]
    assert out[1]["rule"] == "9 NYCRR 5324.52(i)(2)"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "decide_only", "on": "yes"}\n')
    assert main(["settle", "--profile", "ny-5324", str(bad)]) == 2
    cap = capsys.readouterr()
    assert "bad.jsonl:1: decide_only 'on' must be true or false" in cap.err and cap.out == ""
    bad.write_text('{"type": "decide_only", "on": true, "who": "ann"}\n')
    assert main(["settle", "--profile", "ny-5324", str(bad)]) == 2
    assert "unknown key 'who' in a decide_only line" in capsys.readouterr().err
