"""Differential test: the project's settlement (the `craps-table settle` path,
settlement.cli.run_scenario) against the independent oracle of tests/oracle_settle.py.

Random scenarios: a shooter rolls a random dice sequence; before each roll a few wagers are
made at legal moments (line bets on a come-out, come / don't come after it, odds behind a
line or come bet with a point, place / buy / lay / hardways / one-roll bets any time, fire
and bonus craps before a new shooter's first roll), and some on/off lammers are moved.
Every decided wager's result, stake, payout and vig (cents) must agree, roll by roll, and
no generated wager may be refused.
"""
from __future__ import annotations

import json
import os
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from settlement.cli import run_scenario
from settlement.profile import load_profile

from oracle_settle import POINTS, Oracle, OracleProfile

# ORACLE_SCALE=10 multiplies the example counts for a longer hunt (default: a fast run)
SCALE = float(os.environ.get("ORACLE_SCALE", "1"))
PROFILES = ["ny-5324", "nj-13-47", "rules-002", "ny-4620"]
_PROJECT = {name: load_profile(name) for name in PROFILES}
_ORACLE = {name: OracleProfile(name) for name in PROFILES}

ONE_ROLL = ["field", "any7", "any_craps", "craps2", "craps3", "craps12", "eleven",
            "six_seven_eight"]
UNITS = ["c_and_e", "horn", "horn_high", "whirl"]
HOPS = [(a, b) for a in range(1, 7) for b in range(a, 7) if 4 <= a + b <= 10]
NO_SEVEN = [(a, b) for a in range(1, 7) for b in range(1, 7) if a + b != 7]
CALLABLE = {"place", "buy", "hardway", "place_lose", "lay", "odds"}


def run_project(profile, events: list[dict]) -> list[dict]:
    out: list[dict] = []
    prof = _PROJECT[profile] if isinstance(profile, str) else profile
    rc = run_scenario(prof, list(enumerate(events, 1)),
                      emit=lambda s: out.append(json.loads(s)))
    assert rc == 0
    return out


def _norm(o: dict) -> tuple:
    o = dict(o)
    if "dice" in o:
        o["dice"] = sorted(o["dice"])
    return tuple(sorted((k, json.dumps(v)) for k, v in o.items() if v is not None))


def _amount(draw, prof: OracleProfile, kind: str, number=None) -> int:
    lo, hi, step = prof.min_max(kind, number)
    if kind in prof.units:
        m = prof.units[kind] * prof.bet_unit
        k_lo = max(1, -(-lo // m))
        k_hi = max(k_lo, min(hi // m, k_lo + 5))
        return m * draw(st.integers(k_lo, k_hi))
    if step > 1:
        return step * draw(st.integers(-(-lo // step), hi // step))
    return draw(st.integers(lo, min(hi, lo * 20)))


def _odds_max(prof: OracleProfile, base: str, flat: int, n: int) -> int:
    lim = prof.odds_limits
    take = base in ("pass", "come")
    mult = F(lim.get("take_multiple" if take else "lay_multiple", {}).get(str(n), "1"))
    cap = lim.get("take_max_cents" if take else "lay_max_cents", {}).get(str(n))
    hi = int(flat * mult)
    if cap is not None:
        hi = min(hi, int(cap))
    return hi


def _wager_choices(orc: Oracle, prof: OracleProfile) -> list[str]:
    ok = []
    perm = prof.permitted
    if orc.come_out:
        ok += [k for k in ("pass", "dont_pass") if k in perm]
    else:
        ok += [k for k in ("come", "dont_come") if k in perm]
    if "odds" in perm and _odds_candidates(orc):
        ok.append("odds")
    ok += [k for k in ("place", "buy", "place_lose", "lay", "hardway", "big6", "big8", "hop")
           if k in perm]
    ok += [k for k in ONE_ROLL + UNITS if k in perm]
    if orc.shooter_rolls == 0:
        ok += [k for k in ("fire", "all_small", "all_tall", "make_em_all") if k in perm] * 4
    if any(w["bet"] in CALLABLE and w["bet"] in prof.callable_off for w in orc.wagers):
        ok.append("lammer")
    if _removable(orc, prof):
        ok.append("remove")
    if prof.raw.get("shooter_change", "any-roll") == "any-roll" or orc.come_out or orc.shooter_rolls == 0:
        ok.append("shooter")
    if (orc.come_out and not orc.decide_only and orc.come_numbers_left() and orc.point_made_last
            and not any(w["bet"] in ("pass", "dont_pass") for w in orc.wagers)):
        ok.append("decide_only")
    if orc.decide_only:   # no pass or don't pass bet while the shooter rolls only to decide come bets
        ok = [k for k in ok if k not in ("pass", "dont_pass")]
    return ok


def _removable(orc: Oracle, prof: OracleProfile) -> list[dict]:
    rem = prof.raw.get("removal", {})
    locked = set(rem.get("locked_after_point", []))
    fixed = set(rem.get("never_changed", []))
    out = []
    for w in orc.wagers:
        k = w["bet"]
        if k in fixed:
            continue
        if k in locked and (w.get("number") is not None or (k == "pass" and orc.point is not None)):
            continue
        if k == "dont_pass" and orc.point is not None and k in locked:
            continue
        out.append(w)
    return out


def _odds_candidates(orc: Oracle) -> list[dict]:
    have = {(w["player"], w["base"]) for w in orc.wagers if w["bet"] == "odds"}
    c = []
    for w in orc.wagers:
        if (w["player"], w["bet"]) in have:
            continue
        if w["bet"] in ("pass", "dont_pass") and orc.point is not None:
            c.append(w)
        elif w["bet"] in ("come", "dont_come") and w.get("number") is not None:
            c.append(w)
    return c


def draw_bet(draw, orc: Oracle, prof: OracleProfile, new_player) -> dict | None:
    choices = _wager_choices(orc, prof)
    kind = draw(st.sampled_from(choices))
    if kind == "shooter":
        if draw(st.integers(0, 7)) > 0:    # keep shooters long enough for fire / bonus craps
            return None
        return {"type": "shooter", "change": draw(st.sampled_from(["voluntary", "compulsory"]))}
    if kind == "decide_only":
        return {"type": "decide_only", "on": True}
    if kind == "remove":
        w = draw(st.sampled_from(_removable(orc, prof)))
        ev = {"type": "remove", "player": w["player"], "bet": w["bet"]}
        for k in ("number", "base", "dice"):
            if w.get(k) is not None and not (k == "number" and (
                    w["bet"] in ("come", "dont_come")
                    or (w["bet"] == "odds" and w["base"] in ("pass", "dont_pass")))):
                ev[k] = w[k]
        if w["bet"] in ("come", "dont_come") and w.get("number") is not None:
            ev["number"] = w["number"]
        lo = prof.min_max(w["bet"], w.get("number"))[0] if w["bet"] != "odds" else 100
        whole_only = (w["bet"] in prof.units or w["bet"] in prof.raw.get("removal", {}).get("removed_whole_only", [])
                      or w["bet"] == "fire")
        if not whole_only and w["amount"] - lo >= 1 and draw(st.booleans()):
            ev["amount"] = draw(st.integers(1, w["amount"] - lo))
        return ev
    if kind == "lammer":
        ws = [w for w in orc.wagers if w["bet"] in CALLABLE and w["bet"] in prof.callable_off]
        w = draw(st.sampled_from(ws))
        ev = {"type": "working", "player": w["player"], "bet": w["bet"], "on": draw(st.booleans())}
        for k in ("number", "base"):
            if w.get(k) is not None and not (w["bet"] == "odds" and w["base"] in ("pass", "dont_pass")
                                              and k == "number"):
                ev[k] = w[k]
        return ev
    if kind == "odds":
        base = draw(st.sampled_from(_odds_candidates(orc)))
        n = orc.point if base["bet"] in ("pass", "dont_pass") else base["number"]
        hi = _odds_max(prof, base["bet"], base["amount"], n)
        if hi < 100:
            return None
        ev = {"type": "bet", "player": base["player"], "bet": "odds", "base": base["bet"],
              "amount": draw(st.integers(100, hi))}
        if base["bet"] in ("come", "dont_come"):
            ev["number"] = n
            if orc.come_out and base["bet"] == "come" and draw(st.booleans()):
                ev["working"] = True
        return ev
    ev = {"type": "bet", "player": new_player(), "bet": kind}
    number = None
    if kind in ("place", "buy", "place_lose", "lay"):
        nums = [n for n in POINTS if not (prof.place_not_on_point and kind == "place" and n == orc.point)]
        number = draw(st.sampled_from(nums))
    elif kind == "hardway":
        number = draw(st.sampled_from([4, 6, 8, 10]))
    elif kind == "horn_high":
        number = draw(st.sampled_from([2, 3, 11, 12]))
    if number is not None:
        ev["number"] = number
    if kind == "hop":
        ev["dice"] = list(draw(st.sampled_from(HOPS)))
    ev["amount"] = _amount(draw, prof, kind, number)
    if kind in prof.callable_off and kind in CALLABLE:
        wk = draw(st.sampled_from([None, None, True, False]))
        if wk is not None:
            ev["working"] = wk
    return ev


def apply(orc: Oracle, ev: dict) -> None:
    if ev["type"] == "bet":
        orc.bet(ev)
    elif ev["type"] == "remove":
        kw = {k: ev[k] for k in ("number", "base", "dice") if k in ev}
        if "dice" in kw:
            kw["dice"] = sorted(kw["dice"])
        orc.remove(ev["player"], ev["bet"], ev.get("amount"), **kw)
    elif ev["type"] == "shooter":
        orc.shooter_change()
    elif ev["type"] == "decide_only":
        orc.set_decide_only(ev["on"])
    elif ev["type"] == "working":
        kw = {k: ev[k] for k in ("number", "base") if k in ev}
        orc.set_working(ev["player"], ev["bet"], ev["on"], **kw)


def build(data, profile, max_rolls: int = 40, with_oracle: bool = False):
    prof = _ORACLE[profile] if isinstance(profile, str) else profile
    orc = Oracle(prof)
    counter = iter(range(1, 10 ** 6))

    def new_player():
        return f"p{next(counter)}"

    events: list[dict] = []
    expected: list[dict] = []
    n_rolls = data.draw(st.integers(1, max_rolls))
    hot = data.draw(st.booleans())     # a hot shooter: few sevens, so fire and bonus craps win
    for _ in range(n_rolls):
        for _ in range(data.draw(st.integers(0, 3))):
            ev = draw_bet(data.draw, orc, prof, new_player)
            if ev is None:
                continue
            events.append(ev)
            apply(orc, ev)
        if hot and data.draw(st.integers(0, 15)) > 0:
            d = data.draw(st.sampled_from(NO_SEVEN))
        else:
            d = (data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6)))
        events.append({"type": "roll", "dice": list(d)})
        expected += orc.roll(*d)
    if with_oracle:
        return events, expected, orc
    return events, expected


def compare(profile, events: list[dict], expected: list[dict]) -> None:
    same_decisions(run_project(profile, events), expected, f"events: {json.dumps(events)}")


def same_decisions(got: list[dict], expected: list[dict], context: str) -> None:
    """The project's output lines ``got`` hold no refusal and the oracle's decisions exactly
    (each wager's result, stake, payout and vig in cents); ``context`` names the scenario."""
    rejected = [o for o in got if o.get("type") == "rejected"]
    if rejected:
        raise AssertionError(f"refused: {rejected}\n{context}")
    g = sorted(_norm(o) for o in got)
    e = sorted(_norm(o) for o in expected)
    if g != e:
        only_g = [dict(x) for x in g if x not in e]
        only_e = [dict(x) for x in e if x not in g]
        raise AssertionError(f"project only: {only_g}\noracle only: {only_e}\n{context}")


@pytest.mark.parametrize("profile", PROFILES)
@settings(max_examples=int(60 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_settlement_matches_oracle(profile, data):
    events, expected = build(data, profile)
    compare(profile, events, expected)


@pytest.mark.parametrize("profile", PROFILES)
@settings(max_examples=int(25 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_resumed_ledger_matches_oracle(profile, data, tmp_path_factory):
    """The same scenarios cut into pieces, each run on the same --ledger file (a resumed
    session): the decisions are those of the oracle."""
    events, expected, orc = build(data, profile, max_rolls=30, with_oracle=True)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(events)), max_size=4))))
    path = str(tmp_path_factory.mktemp("ledger") / "l.sqlite")
    got: list[dict] = []
    prev = 0
    for c in cuts + [len(events)]:
        chunk = events[prev:c]
        prev = c
        rc = run_scenario(_PROJECT[profile], list(enumerate(chunk, 1)), ledger=path,
                          emit=lambda s: got.append(json.loads(s)))
        assert rc == 0
    same_decisions(got, expected, f"cuts: {cuts}\nevents: {json.dumps(events)}")
    # the ledger's balances: the money of every decision, removal and open wager
    from settlement.ledger import Session
    sess = Session(_PROJECT[profile], path)
    try:
        players = {e["player"] for e in events if "player" in e}
        got_bal = {p: sess.balance(p) for p in players}
    finally:
        sess.close()
    want_bal = {p: orc.balance(p) for p in players}
    assert got_bal == want_bal, (got_bal, want_bal, json.dumps(events))


def _variant(data, base: str):
    """A profile TOML's [settlement] table with the money knobs changed: payout and vig
    rounding units, when and on what the vig is charged, wagers that stay up after a win."""
    import copy
    import tomllib
    from oracle_settle import PROFILES as DIR
    raw = copy.deepcopy(tomllib.loads((DIR / f"{base}.toml").read_text())["settlement"])
    raw["payout_unit_cents"] = data.draw(st.sampled_from([1, 5, 10, 25, 100]), label="payout unit")
    raw["stays_up"] = data.draw(st.lists(st.sampled_from(["place", "place_lose", "hardway"]),
                                         unique=True), label="stays_up")
    if "vig" in raw:
        v = raw["vig"]
        v["unit_cents"] = data.draw(st.sampled_from([1, 5, 25, 100]), label="vig unit")
        v["rate"] = data.draw(st.sampled_from(["5/100", "1/25", "3/100"]), label="vig rate")
        v["buy_when"] = data.draw(st.sampled_from(["placed", "win"]), label="buy vig when")
        v["lay_when"] = data.draw(st.sampled_from(["placed", "win"]), label="lay vig when")
        v["lay_base"] = data.draw(st.sampled_from(["win", "wager"]), label="lay vig base")
    return raw


@pytest.mark.parametrize("base", ["ny-5324", "nj-13-47"])
@settings(max_examples=int(50 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_profile_variants_match_oracle(base, data):
    from settlement.profile import profile_from_dict
    raw = _variant(data, base)
    pprof = profile_from_dict(base, raw)
    events, expected = build(data, OracleProfile(base, raw), max_rolls=30)
    compare(pprof, events, expected)


@pytest.mark.parametrize("profile", ["ny-5324", "nj-13-47"])
@settings(max_examples=int(25 * SCALE), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fastbook_matches_oracle(profile, data):
    """settlement.fast.FastBook (the numpy outcome tables) settles each roll of the scenarios
    as the oracle does: the engine's Table takes the requests, the FastBook settles its open
    wagers before the Table's own roll."""
    from settlement.engine import Table
    from settlement.fast import RESULT_NAMES, FastBook

    events, expected = build(data, profile, max_rolls=30)
    table = Table(_PROJECT[profile])
    got = []
    for ev in events:
        req = {k: v for k, v in ev.items() if k != "type"}
        if ev["type"] == "bet":
            table.place(req)
        elif ev["type"] == "remove":
            table.remove(req)
        elif ev["type"] == "working":
            table.set_working(req, ev["on"])
        elif ev["type"] == "shooter":
            table.shooter_change(ev["change"])
        elif ev["type"] == "decide_only":
            table.decide_only(ev["on"])
        else:
            book = FastBook(_PROJECT[profile])
            book.add(table.wagers)
            by_wid = {w.wid: w for w in table.wagers}
            wid, _pl, code, stake, payout, vig, _ret = book.settle(table.state.point, tuple(ev["dice"]))
            roll_no = table.state.rolls + 1
            for i in range(len(wid)):
                w = by_wid[int(wid[i])]
                o = {"roll": roll_no, "player": w.player, "bet": w.kind, "result": RESULT_NAMES[int(code[i])],
                     "stake": int(stake[i]), "payout": int(payout[i]), "vig": int(vig[i])}
                if w.base is not None:
                    o["base"] = w.base
                if w.number is not None and w.kind not in ("pass", "dont_pass"):
                    o["number"] = w.number
                if w.dice is not None:
                    o["dice"] = list(w.dice)
                got.append(o)
            table.roll(ev["dice"])
    same_decisions(got, expected, f"(project: settlement.fast.FastBook)\nevents: {json.dumps(events)}")
