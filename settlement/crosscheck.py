"""Roll-by-roll cross-check of this engine against crapssim 0.4.1 (a test-only dependency).

Both engines get the same seeded dice. One player per wager type re-makes its wager
whenever it is not on the layout and the rules allow it (line bets with odds, come and
don't come bets with odds on every come point, place, buy, lay, hardways, field, one-roll
bets, C and E, horn, whirl, every hop, fire, bonus craps; big 6/8 under ny-4620). After
each roll the decided wagers of each player are compared (total stake and payout in cents
per result) and every difference is classified.

Settings made equal (crapssim ``TableSettings``): field 2:1 / 3:1 (ny-5324 (d)(1)),
bonus craps 34/34/175 to 1 ((d)(5)), fire table A ((d)(4)), hops 15/30 to 1, odds 3-4-5x
and 6x lay, vig unrounded (amounts chosen so 5% is whole cents), buy vig when placed, lay
vig on the win (the ny-5324 choices), lay bets working on the come-out (crapssim's
"real_casino" policy turns them off; (c)(5) keeps them on), hardways called "on"
(crapssim works them on the come-out; (c)(5) turns them off).

Known differences that remain (each demonstrated in tests/test_settlement_crosscheck.py):

* ``void-vs-push``: a don't come bet on a 12 is "void" in 9 NYCRR 5324.52(b)(4)(v);
  crapssim calls it a push. Same money.
* ``fire-six-points``: crapssim pays a fire bet as soon as the sixth point is made; 5324.52
  (j)(1)(v) settles fire bets upon the loser 7. Same amount, later roll.
* Bonus craps may be made in crapssim after any 7; 5324.52(b)(41) only before a new
  shooter's come-out. The players here make them only when both engines allow it.
* A winning place bet stays up in crapssim; here it comes down with its payout and the
  player makes it again (same money on every roll).

Usage: ``python -m settlement.crosscheck --rolls 100000 --seed 1`` (measured: 3,640,095
decisions + 11,644 fire decisions, 0 unexplained; 1,902 void-vs-push, 1 fire-six-points).
"""
from __future__ import annotations

import argparse
from collections import Counter, defaultdict

import numpy as np

from .engine import Rejected, Table
from .profile import load_profile

__all__ = ["PLAYERS", "BIG", "crosscheck", "main"]

HOPS17 = ((2, 2), (3, 3), (4, 4), (5, 5), (1, 3), (1, 4), (2, 3), (1, 5), (2, 4), (1, 6), (2, 5), (3, 4),
          (2, 6), (3, 5), (3, 6), (4, 5), (4, 6))

#: (player, request without player) made whenever absent; amounts in cents
STATIC = (
    [(f"place{n}", {"bet": "place", "number": n, "amount": 1200 if n in (6, 8) else 1000}) for n in (4, 5, 6, 8, 9, 10)]
    + [(f"buy{n}", {"bet": "buy", "number": n, "amount": 2000}) for n in (4, 5, 6, 8, 9, 10)]
    + [(f"lay{n}", {"bet": "lay", "number": n, "amount": 4000 if n in (4, 10) else 3000}) for n in (4, 5, 6, 8, 9, 10)]
    + [(f"hard{n}", {"bet": "hardway", "number": n, "amount": 500, "working": True}) for n in (4, 6, 8, 10)]
    + [(k, {"bet": k, "amount": a}) for k, a in (("field", 500), ("any7", 500), ("any_craps", 500), ("craps2", 100),
                                                  ("craps3", 100), ("craps12", 100), ("eleven", 100),
                                                  ("c_and_e", 200), ("horn", 400), ("whirl", 500))]
    + [(f"hop{a}{b}", {"bet": "hop", "dice": [a, b], "amount": 100}) for a, b in HOPS17]
    + [(k, {"bet": k, "amount": 100}) for k in ("fire", "all_small", "all_tall", "make_em_all")]
)
PLAYERS = [p for p, _ in STATIC] + ["pass", "dont_pass", "come", "dont_come"]


def _cs_bet(req: dict):
    """The crapssim bet for one of our requests (amounts in dollars)."""
    from crapssim import bet as B
    a = req["amount"] / 100
    k = req["bet"]
    n = req.get("number")
    simple = {"field": B.Field, "any7": B.Any7, "any_craps": B.AnyCraps, "craps2": B.Two, "craps3": B.Three,
              "craps12": B.Boxcars, "eleven": B.Yo, "c_and_e": B.CAndE, "horn": B.Horn, "whirl": B.World,
              "fire": B.Fire, "all_small": B.Small, "all_tall": B.Tall, "make_em_all": B.All,
              "big6": B.Big6, "big8": B.Big8, "pass": B.PassLine, "dont_pass": B.DontPass, "come": B.Come,
              "dont_come": B.DontCome}
    if k in simple:
        return simple[k](a)
    if k == "place":
        return B.Place(n, a)
    if k == "buy":
        return B.Buy(n, a)
    if k == "lay":
        return B.Lay(n, a, always_working=True)
    if k == "hardway":
        return B.HardWay(n, a)
    if k == "hop":
        return B.Hop(tuple(req["dice"]), a)
    if k == "odds":
        base = {"pass": B.PassLine, "dont_pass": B.DontPass, "come": B.Come, "dont_come": B.DontCome}[req["base"]]
        return B.Odds(base, n, a)
    raise ValueError(k)


def _cs_add(player, bet) -> bool:
    """Player.add_bet without its (slow) typing-Protocol checks: same rules (is_allowed, merge
    with a bet of the same placement key, bankroll debited by the cost)."""
    if not bet.is_allowed(player):
        return False
    same = [x for x in player.bets if x._placed_key == bet._placed_key]
    if same:
        old = same[0]
        before = old.cost(player.table)
        old.amount += bet.amount
        if not old.is_allowed(player):
            old.amount -= bet.amount
            return False
        player.bankroll -= old.cost(player.table) - before
        return True
    player.bets.append(bet)
    player.bankroll -= bet.cost(player.table)
    return True


def _cs_table(seed: int):
    from crapssim import Table as CsTable
    from crapssim.strategy.tools import NullStrategy
    t = CsTable(seed=seed)
    t.settings.update({
        "field_payouts": {2: 2, 3: 1, 4: 1, 9: 1, 10: 1, 11: 1, 12: 3},
        "ATS_payouts": {"all": 175, "tall": 34, "small": 34},
        "fire_payouts": {4: 24, 5: 249, 6: 999},
        "hop_payouts": {"easy": 15, "hard": 30},
        "max_odds": {4: 3, 5: 4, 6: 5, 8: 5, 9: 4, 10: 3},
        "max_dont_odds": {4: 6, 5: 6, 6: 6, 8: 6, 9: 6, 10: 6},
        "vig_rounding": "none", "vig_floor": 0, "vig_paid_on_win": False,
        "come_out_working_policy": "real_casino",
    })
    return t, NullStrategy


def _wants(table: Table, player: str) -> list[dict]:
    """The requests a player makes before the next roll (our side decides; crapssim mirrors)."""
    st = table.state
    mine = table.of_player(player)
    kinds = {(w.kind, w.number, w.base) for w in mine}
    out = []
    if player in ("pass", "dont_pass"):
        flat = [w for w in mine if w.kind == player]
        if st.point is None and not flat:
            out.append({"bet": player, "amount": 1000})
        elif flat and flat[0].number is not None and ("odds", flat[0].number, player) not in kinds:
            out.append({"bet": "odds", "base": player, "number": flat[0].number,
                        "amount": 2000 if player == "pass" else 3000})
        return out
    if player in ("come", "dont_come"):
        if st.point is not None and (player, None, None) not in kinds:
            out.append({"bet": player, "amount": 1000})
        for w in mine:
            if w.kind == player and w.number is not None and ("odds", w.number, player) not in kinds:
                out.append({"bet": "odds", "base": player, "number": w.number,
                            "amount": 1000 if player == "come" else 3000})
        return out
    req = dict(STATIC_BY_PLAYER[player])
    key = (req["bet"], req.get("number"), None)
    if req["bet"] == "hop":
        if any(w.kind == "hop" for w in mine):
            return []
    elif key in kinds or any(w.kind == req["bet"] for w in mine if req["bet"] in ("fire", "all_small", "all_tall",
                                                                                   "make_em_all")):
        return []
    return [req]


STATIC_BY_PLAYER = dict(STATIC)
#: wagers of 9 NYCRR 4620.3 only (cross-checked with profile="ny-4620", players=BIG)
STATIC_BY_PLAYER.update({"big6": {"bet": "big6", "amount": 500}, "big8": {"bet": "big8", "amount": 500}})
BIG = ["big6", "big8"]


def crosscheck(rolls: int = 20000, seed: int = 1, profile: str = "ny-5324", players=None):
    """Run both engines on the same seeded dice. Returns a dict of counters and the list of
    unexplained differences (empty when they agree): {"rolls", "decisions", "by_player",
    "explained": Counter, "unexplained": [...], "placement": Counter}."""
    from crapssim.table import TableUpdate

    prof = load_profile(profile)
    players = list(players or PLAYERS)
    ours = Table(prof)
    cs, Null = _cs_table(seed)
    cs_players = {p: cs.add_player(bankroll=1e12, strategy=Null(), name=p) for p in players}
    dice = np.random.default_rng(seed).integers(1, 7, size=(rolls, 2))
    explained: Counter = Counter()
    placement: Counter = Counter()
    decisions = Counter()
    unexplained = []
    fire_ours: list = []
    fire_cs: list = []
    for i in range(rolls):
        for p in players:
            for req in _wants(ours, p):
                try:
                    ours.place({"player": p, **req})
                except Rejected:
                    placement["ours-rejected"] += 1
                    continue
                if not _cs_add(cs_players[p], _cs_bet(req)):
                    placement["crapssim-refused"] += 1
        d1, d2 = int(dice[i, 0]), int(dice[i, 1])
        got = ours.roll((d1, d2), seq=i + 1)
        a: dict = defaultdict(lambda: [0, 0])
        for s in got:
            res = "push" if s.result == "void" else s.result
            if s.result == "void":
                explained["void-vs-push"] += 1
            if s.kind == "fire":
                fire_ours.append((res, s.payout))
                continue
            a[(s.player, res)][0] += s.stake
            a[(s.player, res)][1] += s.payout
            decisions[s.player] += 1
        # crapssim: the same steps as TableUpdate.run, without strategies
        cs.dice.fixed_roll((d1, d2))
        cs.last_roll = d1 + d2
        b: dict = defaultdict(lambda: [0, 0])
        for p, cp in cs_players.items():
            for bet in cp.bets[:]:
                r = bet.get_result(cs)
                cp.bankroll += r.bankroll_change
                if r.remove:
                    cp.bets.remove(bet)
                if r.amount == 0 and not r.remove:
                    continue
                if r.won:
                    res, payout = "win", round((r.amount - r.bet_amount) * 100)
                elif r.lost:
                    res, payout = "lose", 0
                elif r.pushed:
                    res, payout = "push", 0
                else:
                    continue
                if type(bet).__name__ == "Fire":
                    fire_cs.append((res, payout))
                    if d1 + d2 != 7:
                        explained["fire-six-points"] += 1
                    continue
                if type(bet).__name__ == "Place" and res == "win":
                    cp.bets.remove(bet)   # ours comes down; both re-make it before the next roll
                    cp.bankroll += bet.amount
                b[(p, res)][0] += round(bet.amount * 100)
                b[(p, res)][1] += payout
        TableUpdate.set_new_shooter(cs)
        TableUpdate.update_numbers(cs, False)
        if dict(a) != dict(b):
            unexplained.append({"roll": i + 1, "dice": (d1, d2), "ours": dict(a), "crapssim": dict(b)})
    if fire_ours != fire_cs:
        unexplained.append({"fire": True, "ours": fire_ours[:20], "crapssim": fire_cs[:20]})
    return {"rolls": rolls, "decisions": sum(decisions.values()), "by_player": decisions,
            "explained": explained, "unexplained": unexplained, "placement": placement,
            "fire_decisions": len(fire_ours)}


def main(argv=None) -> int:
    """``python -m settlement.crosscheck [--rolls N] [--seed S]``: cross-check ``N`` seeded rolls
    under ny-5324 and again under ny-4620 (big 6/8 players) against crapssim 0.4.1, print the
    decisions compared, the explained differences and up to 10 unexplained ones. Returns the
    exit status: 0 when nothing is unexplained, else 1 (argparse exits with 2 on bad arguments).
    """
    ap = argparse.ArgumentParser(prog="python -m settlement.crosscheck", description="cross-check against crapssim")
    ap.add_argument("--rolls", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    import time
    t0 = time.perf_counter()
    r = crosscheck(a.rolls, a.seed)
    r2 = crosscheck(a.rolls, a.seed, profile="ny-4620", players=BIG)
    r["decisions"] += r2["decisions"]
    r["unexplained"] += r2["unexplained"]
    dt = time.perf_counter() - t0
    print(f"rolls {r['rolls']}, wager decisions compared {r['decisions']} (+{r['fire_decisions']} fire), "
          f"{dt:.1f} s")
    print(f"explained differences: {dict(r['explained'])}")
    print(f"placements: {dict(r['placement'])}")
    print(f"unexplained differences: {len(r['unexplained'])}")
    for d in r["unexplained"][:10]:
        print("  ", d)
    return 0 if not r["unexplained"] else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
