"""Settlement against the letter of the regulation tables: exact payouts in cents.

Each test takes its numbers from a regulation's own table or paragraph (cited in the
docstring) and settles them through the settle interface (settlement.cli.run_scenario).
"""
from __future__ import annotations


import pytest


from test_settlement_payouts import bet, one, rejected, roll, run, settled  # the settle interface helpers




#: a come-out roll setting each point, and a roll making it
POINT_ROLL = {4: (1, 3), 5: (1, 4), 6: (2, 4), 8: (2, 6), 9: (3, 6), 10: (4, 6)}


# ---- 9 NYCRR 4620.3: the "Maximum bet / To win" columns ------------------------------------

@pytest.mark.parametrize("point,maximum,to_win", [(4, 500, 1000), (10, 500, 1000), (5, 600, 900), (9, 600, 900),
                                                  (6, 500, 600), (8, 500, 600)])
def test_4620_taking_the_odds_table(point, maximum, to_win):
    """9 NYCRR 4620.3(e)(3)(i): a $5 pass line; "Shooter's point / Maximum bet / To win":
    4 or 10 $5 $10, 5 or 9 $6 $9, 6 or 8 $5 $6; a cent more is over the maximum."""
    base = [bet("p", "pass", 500), roll(*POINT_ROLL[point])]
    out = run("ny-4620", base + [bet("p", "odds", maximum, base="pass"), roll(*POINT_ROLL[point])])
    assert one(out, bet="odds")["payout"] == to_win
    assert one(out, bet="pass")["payout"] == 500
    assert "exceed" in rejected(run("ny-4620", base + [bet("p", "odds", maximum + 1, base="pass")]))[0]["reason"]


@pytest.mark.parametrize("point,to_win", [(4, 300), (10, 300), (5, 400), (9, 400), (6, 500), (8, 500)])
def test_4620_laying_the_odds_table(point, to_win):
    """9 NYCRR 4620.3(e)(3)(ii): a $5 don't pass; "Maximum lay odds $6" on every point, "To win"
    4 or 10 $3, 5 or 9 $4, 6 or 8 $5 (1-2, 2-3, 5-6)."""
    base = [bet("p", "dont_pass", 500), roll(*POINT_ROLL[point])]
    out = run("ny-4620", base + [bet("p", "odds", 600, base="dont_pass"), roll(3, 4)])
    assert one(out, bet="odds")["payout"] == to_win
    assert "exceed" in rejected(run("ny-4620", base + [bet("p", "odds", 601, base="dont_pass")]))[0]["reason"]


@pytest.mark.parametrize("point,take,take_win,lay_win", [(4, 500, 1000, 300), (5, 600, 900, 400),
                                                         (6, 500, 600, 500), (8, 500, 600, 500),
                                                         (9, 600, 900, 400), (10, 500, 1000, 300)])
def test_4620_odds_on_come_and_dont_come_tables(point, take, take_win, lay_win):
    """9 NYCRR 4620.3(e)(5)(iii) "Come point / Maximum odds / To win" and (e)(5)(iv) "Don't come
    point / Maximum lay bet $6 / To win", on $5 come and don't come bets."""
    other = 8 if point != 8 else 6
    ev = [bet("x", "pass", 500), roll(*POINT_ROLL[other]), bet("c", "come", 500), bet("d", "dont_come", 500),
          roll(*POINT_ROLL[point]), bet("c", "odds", take, base="come", number=point),
          bet("d", "odds", 600, base="dont_come", number=point), roll(*POINT_ROLL[point])]
    out = run("ny-4620", ev)
    assert one(out, player="c", bet="odds")["payout"] == take_win
    assert one(out, player="d", bet="odds")["result"] == "lose"
    ev[-1] = roll(3, 4)
    out = run("ny-4620", ev)
    assert one(out, player="d", bet="odds")["payout"] == lay_win
    assert one(out, player="c", bet="odds")["result"] == "lose"


@pytest.mark.parametrize("number,maximum,to_win", [(4, 500, 900), (10, 500, 900), (5, 500, 700), (9, 500, 700),
                                                   (6, 600, 700), (8, 600, 700)])
def test_4620_place_bet_table(number, maximum, to_win):
    """9 NYCRR 4620.3(e)(4): "Place number / Maximum bet / To win": 4 or 10 $5 $9, 5 or 9 $5 $7,
    6 or 8 $6 $7; a cent more is over the maximum."""
    other = 5 if number != 5 else 9
    base = [bet("x", "pass", 500), roll(*POINT_ROLL[other])]
    out = run("ny-4620", base + [bet("p", "place", maximum, number=number), roll(*POINT_ROLL[number])])
    assert one(out, bet="place")["payout"] == to_win
    assert "over the maximum" in rejected(run("ny-4620", base + [bet("p", "place", maximum + 1, number=number)]))[0][
        "reason"]


@pytest.mark.parametrize("name,dice,returned", [("any7", (3, 4), 2500), ("any_craps", (1, 1), 4000),
                                                ("craps2", (1, 1), 15000), ("craps12", (6, 6), 15000),
                                                ("craps3", (1, 2), 7500), ("eleven", (6, 5), 7500)])
def test_4620_for_odds_return_the_stake_included(name, dice, returned):
    """9 NYCRR 4620.3(e)(8), (9), (11): "collects 5 for 1", "8 for 1", ace-ace and 6-6 "30 for
    1", ace-2 and 6-5 "15 for 1": a $5 winning wager gets back 5 x the "for" number in all,
    the stake included (stake + payout)."""
    o = one(run("ny-4620", [bet("p", name, 500), roll(*dice)]), bet=name)
    assert o["stake"] + o["payout"] == returned


# ---- 9 NYCRR 5324.52: odds, buy and lay on awkward amounts ----------------------------------

@pytest.mark.parametrize("point,amount,payout", [(5, 500, 750), (9, 700, 1050), (5, 100, 150), (9, 1900, 2850)])
def test_5324_odds_on_5_and_9_with_an_odd_number_of_dollars(point, amount, payout):
    """9 NYCRR 5324.52(e)(4)(i): the supplemental wager on a 5 or 9 is paid at 3:2; an odd
    number of dollars is paid the half dollar too (exact in cents)."""
    ev = [bet("p", "pass", 500), roll(*POINT_ROLL[point]), bet("p", "odds", amount, base="pass"),
          roll(*POINT_ROLL[point])]
    assert one(run("ny-5324", ev), bet="odds")["payout"] == payout


@pytest.mark.parametrize("point,amount,payout", [(5, 500, 334), (9, 1000, 667), (6, 500, 417), (8, 700, 584),
                                                 (4, 500, 250), (10, 700, 350)])
def test_5324_lay_odds_not_a_multiple_of_the_denominator_round_up(point, amount, payout):
    """9 NYCRR 5324.52(e)(4)(ii): laid odds paid at 2:3 on 5/9, 5:6 on 6/8, 1:2 on 4/10; a
    payout that is not a whole cent is paid up to the cent, never below the odds
    ((d)(1), (e)(2) "no less than")."""
    ev = [bet("p", "dont_pass", 500), roll(*POINT_ROLL[point]), bet("p", "odds", amount, base="dont_pass"),
          roll(3, 4)]
    assert one(run("ny-5324", ev), bet="odds")["payout"] == payout


@pytest.mark.parametrize("number,amount,payout,vig", [(4, 500, 250, 12), (5, 500, 334, 16), (6, 500, 417, 20),
                                                      (10, 1000, 500, 25), (9, 3000, 2000, 100)])
def test_5324_lay_vig_on_small_bets_is_never_over_five_percent(number, amount, payout, vig):
    """9 NYCRR 5324.52(e)(2): lay at 1:2 / 2:3 / 5:6, the percentage collected only on a
    winning bet (ny-5324: 5% of the win), never above five percent of the wager: rounded
    down to the cent."""
    ev = [bet("x", "pass", 500), roll(*POINT_ROLL[8 if number != 8 else 6]), bet("p", "lay", amount, number=number),
          roll(3, 4)]
    o = one(run("ny-5324", ev), bet="lay")
    assert (o["result"], o["payout"], o["vig"]) == ("win", payout, vig)
    assert vig * 20 <= amount


@pytest.mark.parametrize("amount,vig", [(500, 25), (1000, 50), (2100, 105), (1990, 99), (501, 25)])
def test_5324_buy_vig_at_placement_never_over_five_percent(amount, vig):
    """9 NYCRR 5324.52(e)(1): the buy's percentage is paid when the bet is made and "shall not
    exceed five percent of such wager": rounded down to the cent; the buy on 4 pays 2:1."""
    ev = [bet("x", "pass", 500), roll(4, 4), bet("p", "buy", amount, number=4), roll(2, 2)]
    o = one(run("ny-5324", ev), bet="buy")
    assert (o["payout"], o["vig"]) == (2 * amount, vig)


@pytest.mark.parametrize("amount,vig", [(100, 2), (300, 7), (1000, 25), (2000, 50)])
def test_nj_lay_vig_on_the_amount_that_could_be_won(amount, vig):
    """N.J.A.C. 13:47-20.25(k): a lay's percentage is of "the amount the player could win",
    paid when the bet is made, at most five percent: a lay on 4 at 1 to 2 could win half the
    wager, 5% of it rounded down to the cent."""
    ev = [bet("x", "pass", 500), roll(4, 4), bet("p", "lay", amount, number=4), roll(3, 4)]
    o = one(run("nj-13-47", ev), bet="lay")
    assert (o["result"], o["payout"], o["vig"]) == ("win", amount // 2, vig)


# ---- fire and bonus craps tables -----------------------------------------------------------

@pytest.mark.parametrize("points,payout", [(3, 0), (4, 500 * 24), (5, 500 * 249), (6, 500 * 999)])
def test_5324_fire_table_a(points, payout):
    """9 NYCRR 5324.52(d)(4) pay table A: four, five, six different points 24:1, 249:1, 999:1,
    paid once for the highest number made, on the loser 7 ((j)(1)(v)); fewer than four lose
    ((b)(40))."""
    ev = [bet("p", "fire", 500)]
    for n in (4, 5, 6, 8, 9, 10)[:points]:
        ev += [roll(*POINT_ROLL[n]), roll(*POINT_ROLL[n])]
    ev += [roll(*POINT_ROLL[4]), roll(*POINT_ROLL[4]), roll(2, 2), roll(3, 4)]   # 4 again: no new point
    o = one(run("ny-5324", ev), bet="fire")
    assert o["payout"] == payout and o["result"] == ("win" if payout else "lose")


@pytest.mark.parametrize("name,rolls,payout", [
    ("all_small", [(1, 1), (1, 2), (2, 2), (1, 4), (3, 3)], 34 * 500),
    ("all_tall", [(6, 6), (5, 6), (5, 5), (4, 5), (4, 4)], 34 * 500),
    ("make_em_all", [(1, 1), (1, 2), (2, 2), (1, 4), (3, 3), (6, 6), (5, 6), (5, 5), (4, 5), (4, 4)], 175 * 500)])
def test_5324_bonus_craps_table(name, rolls, payout):
    """9 NYCRR 5324.52(d)(5): all small 34:1, all tall 34:1, make 'em all 175:1."""
    o = one(run("ny-5324", [bet("p", name, 500)] + [roll(*d) for d in rolls]), bet=name)
    assert (o["result"], o["payout"]) == ("win", payout)


# ---- working on the come-out, seven-out, shooter change -----------------------------------

def test_5324_come_out_seven_decides_only_the_wagers_that_are_on():
    """9 NYCRR 5324.52(c)(5): buy and place to win bets, come odds and hard ways are inactive on
    a come-out roll unless called "on"; "All other wagers shall be considered on" (place to
    lose, lay, don't come odds)."""
    ev = [bet("x", "pass", 500), roll(2, 6), bet("c", "come", 500), bet("d", "dont_come", 500), roll(3, 6),
          bet("c", "odds", 1000, base="come", number=9), bet("d", "odds", 1500, base="dont_come", number=9),
          roll(2, 6)]                                                        # point 8 made: come-out next
    ev += [bet("p1", "place", 600, number=6), bet("p2", "buy", 2000, number=4), bet("p3", "hardway", 500, number=6),
           bet("p4", "place_lose", 500, number=6), bet("p5", "lay", 4000, number=4), roll(3, 4)]
    out = run("ny-5324", ev)
    decided = {(o["player"], o["bet"]): (o["result"], o["payout"]) for o in settled(out) if o["roll"] == 4}
    assert decided == {("c", "come"): ("lose", 0), ("c", "odds"): ("push", 0),
                       ("d", "dont_come"): ("win", 500), ("d", "odds"): ("win", 1000),
                       ("p4", "place_lose"): ("win", 400), ("p5", "lay"): ("win", 2000)}


def test_5324_relinquished_dice_keep_the_point_and_the_fire_bet():
    """9 NYCRR 5324.52(i)(1), (3): after any roll the shooter may pass the dice; (j)(1)(ii): a
    pending fire bet is settled upon the successor throwing a loser 7; the point stays."""
    ev = [bet("p", "fire", 500), bet("p", "pass", 500), roll(2, 2), {"type": "shooter", "change": "voluntary"},
          roll(3, 1), roll(2, 3), roll(1, 4), roll(3, 4), roll(2, 2), roll(3, 4)]
    out = run("ny-5324", ev)
    assert one(out, bet="pass")["result"] == "win"                     # the successor made the point 4
    o = one(out, bet="fire")
    assert (o["roll"], o["result"]) == (7, "lose")   # points 4 and 5 made; the come-out 7 is no loser 7


# ---- N.J.A.C. 13:47-20.25(i)2, (j): place to lose and buy tables ----------------------------

@pytest.mark.parametrize("number,amount,payout", [(4, 1100, 500), (10, 1100, 500), (5, 800, 500), (9, 800, 500),
                                                  (6, 500, 400), (8, 500, 400), (4, 500, 228)])
def test_nj_place_to_lose_table(number, amount, payout):
    """N.J.A.C. 13:47-20.25(i)2: place bet to lose 5 to 11 on 4/10, 5 to 8 on 5/9, 4 to 5 on
    6/8; "at less than the odds listed" never: $5 against the 4 wins 227 3/11 cents, paid 228."""
    ev = [bet("x", "pass", 500), roll(*POINT_ROLL[8 if number != 8 else 6]),
          bet("p", "place_lose", amount, number=number), roll(3, 4)]
    o = one(run("nj-13-47", ev), bet="place_lose")
    assert (o["result"], o["payout"]) == ("win", payout)


@pytest.mark.parametrize("number,amount,payout", [(4, 2000, 4000), (5, 2000, 3000), (6, 2500, 3000), (10, 500, 1000)])
def test_nj_buy_true_odds_and_vig_when_made(number, amount, payout):
    """N.J.A.C. 13:47-20.25(j): buy (place to win at true odds, 2 to 1, 3 to 2, 6 to 5), the
    percentage paid at the time of making the bet, five percent of the wager at most."""
    ev = [bet("x", "pass", 500), roll(*POINT_ROLL[8 if number != 8 else 9]), bet("p", "buy", amount, number=number),
          roll(*POINT_ROLL[number])]
    o = one(run("nj-13-47", ev), bet="buy")
    assert (o["result"], o["payout"], o["vig"]) == ("win", payout, amount // 20)
