"""An independent reference model ("oracle") of craps settlement, for differential tests.

Written from the regulation texts (9 NYCRR 5324.52, 9 NYCRR 4620.3, N.J.A.C. 13:47-20.25,
rules text 002), docs/wagers.md and the pay tables of config/profiles/*.toml, without
reading settlement/*.py.  It is deliberately plain: one dict per open wager, one function
per wager family, money in integer cents and fractions.Fraction (never float).

Scope: the wagers a differential test generates (see tests/test_settle_oracle.py): line
bets, come / don't come, odds, place, place to lose, buy, lay, hardways, field, the one-roll
bets, C and E, horn, horn high, whirl, hops, 6-7-8, fire and bonus craps.  Legality checks
(limits, units, timing) are left to the generator: the oracle settles what it is given.

Model choices, each from the texts:

* Payout = stake x odds, rounded UP to payout_unit_cents (odds are a floor, 5324.52(d)(1),
  13:47-20.25(i)2; docs/wagers.md "Money and rounding").
* Vig = rate x base, rounded DOWN to vig.unit_cents (5% cap, 5324.52(e)(1)-(2),
  13:47-20.25(j)-(k)).  Base: the wager (buy), the wager's possible win (lay, lay_base
  "win"; the exact, unrounded win).  "placed": charged at placement and reported on the
  decision whatever it is; "win": deducted from a win only.
* Working: place/buy/come odds/hardways as listed in the profile's
  working.off_on_come_out are inactive on a come-out roll unless the player called them
  "on" (5324.52(c)(5), (b)(5); 13:47-20.25(h)1.v); a wager called "off" is inactive on
  every roll until called on.  Come odds that are off when their come bet is decided come
  back as a push (docs/wagers.md).
* Composite one-roll wagers are paid as separate wagers on each part (5324.52(d)(2)-(3),
  (b)(21); 13:47-20.25(i)3-4) and reported as their net; a net of zero is a push.
* Fire bet: settled on a loser 7 only ((j)(1)(v)), paid for the number of different points
  made while it was pending ((d)(4), (j)(1)(viii)); carried to a successor shooter on a
  relinquishment ((j)(1)(ii)) with the points already made.  Bonus craps: any 7 loses,
  won as soon as its numbers have all been thrown ((b)(41)).
* Decide-only rolls (5324.52(i)(2), 13:69F-1.11(b)): no point is set; they end when no come
  or don't come wager on a number is left, or with a new shooter.
* Reducing a wager whose vig was paid at placement recomputes that vig on the reduced
  wager (the 5% cap of 5324.52(e)(1)-(2), 13:47-20.25(j)-(k)); a removal returns it whole.
"""
from __future__ import annotations

import math
import tomllib
from fractions import Fraction as F
from pathlib import Path

PROFILES = Path(__file__).resolve().parents[1] / "config" / "profiles"
POINTS = (4, 5, 6, 8, 9, 10)


def parse_odds(text: str) -> F:
    """'9:5', '9 to 5', '9-5' -> 9/5; '5 for 1' -> 4/1 (4620.3 "for" odds)."""
    s = str(text).strip().lower()
    if " for " in s:
        a, b = s.split(" for ")
        return F(int(a) - int(b), int(b))
    for sep in (" to ", ":", "-"):
        if sep in s:
            a, b = s.split(sep)
            return F(int(a), int(b))
    raise ValueError(text)


class OracleProfile:
    def __init__(self, name: str, raw: dict | None = None):
        self.name = name
        if raw is None:
            raw = tomllib.loads((PROFILES / f"{name}.toml").read_text())["settlement"]
        self.raw = raw
        self.permitted = set(raw["permitted"])
        self.payout_unit = int(raw.get("payout_unit_cents", 1))
        self.bet_unit = int(raw.get("bet_unit_cents", 100))
        self.units = dict(raw.get("units", {}))
        self.place_not_on_point = bool(raw.get("place_not_on_point", False))
        bar = raw["bar"]
        self.bar_number = int(bar["number"])
        self.comeout_wins = {int(x) for x in bar["comeout_wins"]}
        self.dont_pass_bar = bar["dont_pass_result"]
        self.dont_come_bar = bar["dont_come_result"]
        p = raw["pays"]

        def table(key):
            return {int(k): parse_odds(v) for k, v in p[key].items()} if key in p else {}

        self.line = parse_odds(p["line"])
        self.place = table("place")
        self.place_lose = table("place_lose")
        self.buy = table("buy")
        self.lay = table("lay")
        self.take_odds = table("take_odds")
        self.lay_odds = table("lay_odds")
        self.hardway = table("hardway")
        self.field = table("field")
        self.fire = table("fire")
        self.single = {k: parse_odds(p[k]) for k in
                       ("any7", "any_craps", "craps2", "craps3", "craps12", "eleven",
                        "hop_hard", "hop_easy", "six_seven_eight", "six_seven_eight_hard",
                        "all_small", "all_tall", "make_em_all", "big6", "big8") if k in p}
        vig = raw.get("vig", {})
        self.vig_rate = F(vig["rate"]) if vig else F(0)
        self.buy_when = vig.get("buy_when")
        self.lay_when = vig.get("lay_when")
        self.lay_base = vig.get("lay_base", "wager")
        self.vig_unit = int(vig.get("unit_cents", 1))
        w = raw.get("working", {})
        self.off_on_come_out = set(w.get("off_on_come_out", []))
        self.callable_off = set(w.get("callable_off", []))
        self.stays_up = set(raw.get("stays_up", []))
        self.limits = raw.get("limits", {})
        self.odds_limits = raw.get("odds", {})

    # ---- money ---------------------------------------------------------------------
    def pay(self, stake, odds: F) -> int:
        """Payout of a win, rounded UP to the payout unit."""
        x = F(stake) * odds
        u = self.payout_unit
        return math.ceil(x / u) * u

    def vig(self, base) -> int:
        u = self.vig_unit
        return math.floor(F(base) * self.vig_rate / u) * u

    # ---- limits (for the generator) --------------------------------------------------
    def min_max(self, kind: str, number: int | None = None) -> tuple[int, int, int]:
        lim = self.limits
        per = lim.get("wager", {}).get(kind, {})
        lo = int(per.get("min_cents", lim.get("min_cents", 100)))
        hi = int(per.get("max_cents", lim.get("max_cents", 10 ** 9)))
        if number is not None and "max_cents_by_number" in per:
            hi = int(per["max_cents_by_number"].get(str(number), hi))
        step = int(per.get("step_cents", 1))
        return lo, hi, step


def _off_kind(w) -> str:
    if w["bet"] == "odds":
        return w["base"] + "_odds"
    return w["bet"]


class Oracle:
    """The table: point, shooter, open wagers.  bet() adds a wager, roll() settles a roll."""

    def __init__(self, prof: OracleProfile):
        self.prof = prof
        self.point: int | None = None
        self.shooter_rolls = 0           # rolls by the current shooter
        self.wagers: list[dict] = []
        self.rolls = 0
        self.decide_only = False         # 5324.52(i)(2), 13:69F-1.11(b)
        self.settled_net: dict[str, int] = {}   # cents won (+) or lost (-) on decided wagers
        self.point_made_last = False     # the shooter's last decision was a point made

    # ---- queries ----------------------------------------------------------------------
    @property
    def come_out(self) -> bool:
        return self.point is None

    def find(self, player, bet, **kw):
        for w in self.wagers:
            if w["player"] == player and w["bet"] == bet and all(w.get(k) == v for k, v in kw.items()):
                return w
        return None

    # ---- wagers ----------------------------------------------------------------------
    def bet(self, req: dict) -> None:
        w = {k: v for k, v in req.items() if k != "type"}
        w["amount"] = int(w["amount"])
        if "dice" in w:
            w["dice"] = sorted(w["dice"])
        if w["bet"] == "odds":
            if w["base"] in ("pass", "dont_pass"):
                w["number"] = self.point
            else:   # behind the come bet on the number given (a player may have several)
                base = self.find(w["player"], w["base"], **({"number": w["number"]} if "number" in w else {}))
                assert base is not None
                w["number"] = base["number"]
        w["vig_paid"] = 0
        if w["bet"] == "fire":
            w["points"] = set()
        if w["bet"] in ("all_small", "all_tall", "make_em_all"):
            w["thrown"] = set()
        prof = self.prof
        if w["bet"] == "buy" and prof.buy_when == "placed":
            w["vig_paid"] = prof.vig(w["amount"])
        if w["bet"] == "lay" and prof.lay_when == "placed":
            w["vig_paid"] = prof.vig(self._lay_base(w))
        self.wagers.append(w)

    def balance(self, player) -> int:
        """The player's money: decided wagers' net, less the outlay of the open ones (stake
        and vig paid).  A removed or reduced wager gives its stake and vig back."""
        return self.settled_net.get(player, 0) - sum(
            w["amount"] + w["vig_paid"] for w in self.wagers if w["player"] == player)

    def remove(self, player, bet, amount=None, **kw) -> None:
        """Take a wager down (amount None) or reduce it; the odds of a removed don't bet
        come down with it (docs/wagers.md).  Vig paid at placement is not refunded."""
        w = self.find(player, bet, **kw)
        if amount is not None and amount < w["amount"] and w["vig_paid"]:
            # vig paid at placement follows the reduced wager: 5% of 699 is 34 cents, and
            # keeping 35 would exceed the cap of 5324.52(e)(1) / 13:47-20.25(j) ("shall not
            # exceed five percent of such wager")
            w["amount"] -= amount
            w["vig_paid"] = self.prof.vig(w["amount"] if bet == "buy" else self._lay_base(w))
            return
        if amount is None or amount >= w["amount"]:
            self.wagers.remove(w)
            if bet in ("dont_pass", "dont_come", "pass", "come"):
                self.wagers = [o for o in self.wagers
                               if not (o["bet"] == "odds" and o["player"] == player and o["base"] == bet)]
        else:
            w["amount"] -= amount

    def shooter_change(self) -> None:
        """A new shooter; the point stays; fire bets carry over ((j)(1)(ii))."""
        self.shooter_rolls = 0
        self.decide_only = False
        self.point_made_last = False

    def set_decide_only(self, on: bool) -> None:
        self.decide_only = on

    def come_numbers_left(self) -> bool:
        return any(w["bet"] in ("come", "dont_come") and w.get("number") is not None for w in self.wagers)

    def set_working(self, player, bet, on: bool, **kw) -> None:
        w = self.find(player, bet, **kw)
        w["working"] = on

    def _lay_base(self, w):
        if self.prof.lay_base == "win":
            return F(w["amount"]) * self.prof.lay[w["number"]]
        return F(w["amount"])

    def _active(self, w) -> bool:
        if w.get("working") is not None:
            return bool(w["working"])
        return not (self.come_out and _off_kind(w) in self.prof.off_on_come_out)

    # ---- one roll ----------------------------------------------------------------------
    def roll(self, d1: int, d2: int) -> list[dict]:
        self.rolls += 1
        t = d1 + d2
        dice = tuple(sorted((d1, d2)))
        hard = d1 == d2
        prof = self.prof
        out: list[dict] = []
        keep: list[dict] = []
        come_out = self.come_out
        point = self.point
        seven_out = (not come_out) and t == 7
        point_made = (not come_out) and t == point

        def decide(w, result, payout=0, vig=None, number="keep"):
            o = {"roll": self.rolls, "player": w["player"], "bet": w["bet"], "result": result,
                 "stake": w["amount"], "payout": payout if result == "win" else 0,
                 "vig": w["vig_paid"] if vig is None else vig}
            # money: the wager's outlay was stake + vig paid at placement
            placed = w["vig_paid"]
            stays = result == "win" and w["bet"] in prof.stays_up
            if result == "win":
                on_win = o["vig"] - placed if o["vig"] > placed else 0
                back = o["payout"] - on_win + (0 if stays else w["amount"])
            elif result in ("push", "void"):
                back = w["amount"] + placed      # a standoff returns the vig paid with the wager
            else:
                back = 0
            self.settled_net[w["player"]] = self.settled_net.get(w["player"], 0) + back - (
                0 if stays else w["amount"] + placed)
            num = w.get("number") if number == "keep" else number
            if num is not None:
                o["number"] = num
            if "base" in w:
                o["base"] = w["base"]
            if "dice" in w:
                o["dice"] = list(w["dice"])
            out.append(o)

        # progress of the shooter wagers, kept on each wager: a fire bet carried to a successor
        # shooter ((j)(1)(ii)) counts the points made while it is pending, the predecessor's too
        for w in self.wagers:
            if w["bet"] == "fire" and point_made:
                w["points"].add(point)
            if w["bet"] in ("all_small", "all_tall", "make_em_all") and t != 7:
                w["thrown"].add(t)
        # odds whose base wager is decided on this roll follow it: decide bases first
        decided_bases: dict[tuple, str] = {}
        for w in self.wagers:
            kind = w["bet"]
            if kind == "odds":
                keep.append(w)          # handled below
                continue
            r = self._settle_one(w, t, dice, hard, come_out, point, seven_out, point_made)
            if r is None:
                keep.append(w)
                continue
            if r[0] == "move":
                w["number"] = r[1]
                keep.append(w)
                continue
            result, payout, vig = r
            decide(w, result, payout, vig)
            if result == "win" and kind in prof.stays_up:
                keep.append(w)          # paid, and the wager stays up
            if kind in ("pass", "dont_pass", "come", "dont_come"):
                # a come bet's odds follow the come bet on their number, not another one
                decided_bases[(w["player"], kind, w.get("number") if kind in ("come", "dont_come") else None)] = result
        rest = []
        for w in keep:
            if w["bet"] != "odds":
                rest.append(w)
                continue
            key = (w["player"], w["base"], w["number"] if w["base"] in ("come", "dont_come") else None)
            if key not in decided_bases:
                rest.append(w)
                continue
            base_result = decided_bases[key]
            n = w["number"]
            if not self._active(w):
                decide(w, "push")
            elif base_result == "win":
                odds = prof.take_odds[n] if w["base"] in ("pass", "come") else prof.lay_odds[n]
                decide(w, "win", prof.pay(w["amount"], odds))
            elif base_result == "lose":
                decide(w, "lose")
            else:                       # cannot happen: a base on a number is never barred
                decide(w, base_result)
        self.wagers = rest

        # ---- table state ------------------------------------------------------------
        self.shooter_rolls += 1
        if self.decide_only:
            if not self.come_numbers_left():
                self.decide_only = False
        elif come_out:
            self.point_made_last = False
            if t in POINTS:
                self.point = t
        else:
            if point_made:
                self.point = None
                self.point_made_last = True
            elif seven_out:
                self.point = None
                self.shooter_rolls = 0
        return out

    def _settle_one(self, w, t, dice, hard, come_out, point, seven_out, point_made):
        """None: no decision; ("move", n): a come/don't come bet to its come point;
        else (result, payout, vig)."""
        prof = self.prof
        kind = w["bet"]
        a = w["amount"]
        n = w.get("number")
        line = prof.line
        if kind == "pass":
            if come_out:
                if t in (7, 11):
                    return ("win", prof.pay(a, line), 0)
                if t in (2, 3, 12):
                    return ("lose", 0, 0)
                return None
            if point_made:
                return ("win", prof.pay(a, line), 0)
            if seven_out:
                return ("lose", 0, 0)
            return None
        if kind == "dont_pass":
            if come_out:
                if t in prof.comeout_wins:
                    return ("win", prof.pay(a, line), 0)
                if t == prof.bar_number:
                    return (prof.dont_pass_bar, 0, 0)
                if t in (7, 11):
                    return ("lose", 0, 0)
                return None
            if seven_out:
                return ("win", prof.pay(a, line), 0)
            if point_made:
                return ("lose", 0, 0)
            return None
        if kind == "come":
            if n is None:
                if t in (7, 11):
                    return ("win", prof.pay(a, line), 0)
                if t in (2, 3, 12):
                    return ("lose", 0, 0)
                return ("move", t)
            if t == n:
                return ("win", prof.pay(a, line), 0)
            if t == 7:
                return ("lose", 0, 0)
            return None
        if kind == "dont_come":
            if n is None:
                if t in prof.comeout_wins:
                    return ("win", prof.pay(a, line), 0)
                if t == prof.bar_number:
                    return (prof.dont_come_bar, 0, 0)
                if t in (7, 11):
                    return ("lose", 0, 0)
                return ("move", t)
            if t == 7:
                return ("win", prof.pay(a, line), 0)
            if t == n:
                return ("lose", 0, 0)
            return None
        if kind in ("place", "buy", "place_lose", "lay", "big6", "big8"):
            if kind in ("big6", "big8"):
                n = 6 if kind == "big6" else 8
            if not self._active(w):
                return None
            if t != n and t != 7:
                return None
            right = kind in ("place", "buy", "big6", "big8")
            won = (t == n) == right
            if kind == "place":
                odds = prof.place[n]
            elif kind == "buy":
                odds = prof.buy[n]
            elif kind == "place_lose":
                odds = prof.place_lose[n]
            elif kind == "lay":
                odds = prof.lay[n]
            else:
                odds = prof.single[kind]
            vig = w["vig_paid"]
            if not won:
                return ("lose", 0, vig)
            payout = prof.pay(a, odds)
            if kind == "buy" and prof.buy_when == "win":
                vig = prof.vig(a)
            if kind == "lay" and prof.lay_when == "win":
                vig = prof.vig(self._lay_base(w))
            return ("win", payout, vig)
        if kind == "hardway":
            if not self._active(w):
                return None
            if t == n:
                if hard:
                    return ("win", prof.pay(a, prof.hardway[n]), 0)
                return ("lose", 0, 0)
            if t == 7:
                return ("lose", 0, 0)
            return None
        # ---- one-roll wagers ------------------------------------------------------------
        if kind == "field":
            if t in prof.field:
                return ("win", prof.pay(a, prof.field[t]), 0)
            return ("lose", 0, 0)
        if kind in ("any7", "any_craps", "craps2", "craps3", "craps12", "eleven"):
            wins = {"any7": (7,), "any_craps": (2, 3, 12), "craps2": (2,), "craps3": (3,),
                    "craps12": (12,), "eleven": (11,)}[kind]
            if t in wins:
                return ("win", prof.pay(a, prof.single[kind]), 0)
            return ("lose", 0, 0)
        if kind in ("c_and_e", "horn", "horn_high", "whirl"):
            if kind == "c_and_e":
                half = F(a, 2)
                parts = {"any_craps": half, "eleven": half}
            elif kind == "horn":
                q = F(a, 4)
                parts = {"craps2": q, "craps3": q, "eleven": q, "craps12": q}
            elif kind == "horn_high":
                q = F(a, 5)
                parts = {"craps2": q, "craps3": q, "eleven": q, "craps12": q}
                parts[{2: "craps2", 3: "craps3", 11: "eleven", 12: "craps12"}[n]] += q
            else:
                q = F(a, 5)
                parts = {"craps2": q, "craps3": q, "eleven": q, "craps12": q, "any7": q}
            wins_on = {"any_craps": (2, 3, 12), "craps2": (2,), "craps3": (3,), "craps12": (12,),
                       "eleven": (11,), "any7": (7,)}
            net = 0
            for part, stake in parts.items():
                if t in wins_on[part]:
                    net += prof.pay(stake, prof.single[part])
                else:
                    net -= stake
            net = math.ceil(net)        # integral when the units are whole
            if net > 0:
                return ("win", net, 0)
            if net == 0:
                return ("push", 0, 0)
            return ("lose", 0, 0)
        if kind == "hop":
            if tuple(w["dice"]) == dice:
                odds = prof.single["hop_hard"] if dice[0] == dice[1] else prof.single["hop_easy"]
                return ("win", prof.pay(a, odds), 0)
            return ("lose", 0, 0)
        if kind == "six_seven_eight":
            if t in (6, 7, 8):
                odds = prof.single["six_seven_eight_hard"] if dice in ((3, 3), (4, 4)) \
                    else prof.single["six_seven_eight"]
                return ("win", prof.pay(a, odds), 0)
            return ("lose", 0, 0)
        # ---- shooter wagers -------------------------------------------------------------
        if kind == "fire":
            if not seven_out:
                return None
            made = len(w["points"])
            if made >= 4:
                return ("win", prof.pay(a, prof.fire[min(made, 6)]), 0)
            return ("lose", 0, 0)
        if kind in ("all_small", "all_tall", "make_em_all"):
            if t == 7:
                return ("lose", 0, 0)
            need = {"all_small": {2, 3, 4, 5, 6}, "all_tall": {8, 9, 10, 11, 12},
                    "make_em_all": {2, 3, 4, 5, 6, 8, 9, 10, 11, 12}}[kind]
            if need <= w["thrown"]:
                return ("win", prof.pay(a, prof.single[kind]), 0)
            return None
        raise NotImplementedError(kind)
