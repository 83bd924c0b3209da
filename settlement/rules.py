"""The decision of one wager on one roll: pure function of (wager, point, dice, profile).

:func:`resolve` says whether a wager wins (and at what net "to 1" ratio), loses, pushes,
is void, or is undecided (possibly with new progress: a come bet travelling to its
point, a fire bet counting a point made). Money is computed by :mod:`settlement.engine`.

Sources, per wager (9 NYCRR 5324.52 unless stated):
pass (b)(1); don't pass (b)(2) and the bar (b)(2)(v), 4620.3(e)(2) (ace-deuce);
come (b)(3); don't come (b)(4); odds (e)(4)(i)-(iv); place to win (b)(5); place to lose
(b)(6); buy/lay (e)(1)-(2); big 6/8 4620.3(e)(7); hardways (b)(7)-(10); field (b)(11);
one-roll (b)(12)-(17); C and E (b)(18), (d)(3); horn (b)(19), (d)(2); horn high (b)(20),
(d)(2); whirl (b)(21); hops (b)(22)-(38); 6-7-8 (b)(39), (d)(1); fire (b)(40), (d)(4),
(j)(1)(v),(viii); bonus craps (b)(41), (d)(5); hot roller rules text 002, 2(oo);
what works on the come-out (c)(5).
"""
from __future__ import annotations

from fractions import Fraction

from .wagers import BONUS_NUMBERS, HOT_ROLLER_COMBOS, POINTS, Wager

__all__ = ["WIN", "LOSE", "PUSH", "VOID", "resolve", "is_active", "default_off_on_come_out"]

WIN, LOSE, PUSH, VOID = "win", "lose", "push", "void"
_ZERO = Fraction(0)
_HORN = (2, 3, 11, 12)


def default_off_on_come_out(w: Wager, prof) -> bool:
    """Whether the wager is inactive on a come-out roll unless an "on" lammer is placed
    (9 NYCRR 5324.52(c)(5): buy and place to win bets, come odds and hardways)."""
    off = prof.s.working.off_on_come_out
    if w.kind == "odds":
        return "odds" in off or (w.base == "come" and "come_odds" in off)
    return w.kind in off


def is_active(w: Wager, point: int | None, prof) -> bool:
    """Whether the wager works on this roll: an "off" lammer (working=False) turns it off on
    every roll; on a come-out roll the (c)(5) wagers are off unless working=True."""
    if w.working is False:
        return False
    if point is None and w.working is not True and default_off_on_come_out(w, prof):
        return False
    return True


def _single(total: int, pays) -> Fraction:
    return {2: pays.craps2, 3: pays.craps3, 11: pays.eleven, 12: pays.craps12}[total]


def _line(w: Wager, t: int, prof, dark: bool):
    """pass / come (dark=False) and don't pass / don't come (dark=True)."""
    pays = prof.pays
    n = w.number
    if n is None:  # the come-out roll of this bet
        if not dark:
            if t in (7, 11):
                return WIN, pays.line, None
            if t in (2, 3, 12):
                return LOSE, _ZERO, None
        else:
            bar = prof.s.bar
            if t in bar.comeout_wins:
                return WIN, pays.line, None
            if t == bar.number:
                res = bar.dont_pass_result if w.kind == "dont_pass" else bar.dont_come_result
                return res, _ZERO, None
            if t in (7, 11):
                return LOSE, _ZERO, None
        if t in POINTS:
            return None, _ZERO, w.with_(number=t)  # travels to its point
        raise AssertionError(f"uncovered come-out total {t} for {w.kind}")
    if t == n:
        return (LOSE, _ZERO, None) if dark else (WIN, pays.line, None)
    if t == 7:
        return (WIN, pays.line, None) if dark else (LOSE, _ZERO, None)
    return None, _ZERO, None


def resolve(w: Wager, point: int | None, d1: int, d2: int, prof):
    """Decide ``w`` on the roll (d1, d2) thrown with the table ``point`` (None = come-out).

    Returns:
        (result, ratio, new_wager): result is "win", "lose", "push", "void" or None
        (undecided); ratio is the net winnings per unit staked (Fraction, >= 0 for a win);
        new_wager is the wager's new value when undecided but changed (travel, progress),
        else None.
    """
    t = d1 + d2
    k = w.kind
    pays = prof.pays
    if k in ("pass", "come"):
        return _line(w, t, prof, dark=False)
    if k in ("dont_pass", "dont_come"):
        return _line(w, t, prof, dark=True)
    if k == "odds":
        n = w.number
        if t != n and t != 7:
            return None, _ZERO, None
        if not is_active(w, point, prof):
            return PUSH, _ZERO, None  # off: returned with the decision of its line bet
        light = w.base in ("pass", "come")
        if light:
            return (WIN, pays.take_odds[n], None) if t == n else (LOSE, _ZERO, None)
        return (WIN, pays.lay_odds[n], None) if t == 7 else (LOSE, _ZERO, None)
    if k in ("place", "buy", "place_lose", "lay", "big6", "big8"):
        n = 6 if k == "big6" else 8 if k == "big8" else w.number
        if t != n and t != 7:
            return None, _ZERO, None
        if not is_active(w, point, prof):
            return None, _ZERO, None
        if k in ("place_lose", "lay"):
            table = pays.place_lose if k == "place_lose" else pays.lay
            return (WIN, table[n], None) if t == 7 else (LOSE, _ZERO, None)
        ratio = {"place": pays.place, "buy": pays.buy}[k][n] if k in ("place", "buy") else getattr(pays, k)
        return (WIN, ratio, None) if t == n else (LOSE, _ZERO, None)
    if k == "hardway":
        n = w.number
        if t != n and t != 7:
            return None, _ZERO, None
        if not is_active(w, point, prof):
            return None, _ZERO, None
        if d1 == d2 == n // 2:
            return WIN, pays.hardway[n], None
        return LOSE, _ZERO, None
    if k == "field":
        r = pays.field.get(t)
        return (WIN, r, None) if r is not None else (LOSE, _ZERO, None)
    if k == "any7":
        return (WIN, pays.any7, None) if t == 7 else (LOSE, _ZERO, None)
    if k == "any_craps":
        return (WIN, pays.any_craps, None) if t in (2, 3, 12) else (LOSE, _ZERO, None)
    if k in ("craps2", "craps3", "craps12", "eleven"):
        want = {"craps2": 2, "craps3": 3, "craps12": 12, "eleven": 11}[k]
        return (WIN, getattr(pays, k), None) if t == want else (LOSE, _ZERO, None)
    if k == "c_and_e":  # half on any craps, half on 11: (d)(3)
        if t in (2, 3, 12):
            return _net((pays.any_craps - 1) / 2)
        if t == 11:
            return _net((pays.eleven - 1) / 2)
        return LOSE, _ZERO, None
    if k == "horn":  # four separate wagers on 2, 3, 11, 12: (d)(2)
        if t in _HORN:
            return _net((_single(t, pays) - 3) / 4)
        return LOSE, _ZERO, None
    if k == "horn_high":  # five units: one on each horn number plus one more on `number`: (b)(20)
        if t in _HORN:
            units_on_t = 2 if t == w.number else 1
            return _net((units_on_t * _single(t, pays) - (5 - units_on_t)) / 5)
        return LOSE, _ZERO, None
    if k == "whirl":  # a horn bet and an any 7 bet, five units: (b)(21)
        if t in _HORN:
            return _net((_single(t, pays) - 4) / 5)
        if t == 7:
            return _net((pays.any7 - 4) / 5)
        return LOSE, _ZERO, None
    if k == "hop":
        if (min(d1, d2), max(d1, d2)) == w.dice:
            return WIN, (pays.hop_hard if d1 == d2 else pays.hop_easy), None
        return LOSE, _ZERO, None
    if k == "six_seven_eight":
        if t in (6, 7, 8):
            hard = d1 == d2 and t in (6, 8)
            return WIN, (pays.six_seven_eight_hard if hard else pays.six_seven_eight), None
        return LOSE, _ZERO, None
    if k == "fire":
        if point is None:
            return None, _ZERO, None  # a come-out 7 is not a loser 7
        if t == point:
            if point in w.progress:  # the same point again does not count, (j)(1)(viii)
                return None, _ZERO, None
            return None, _ZERO, w.with_(progress=w.progress | {point})
        if t == 7:  # settled upon a loser 7, (j)(1)(v); paid once for the highest count, (d)(4)
            return _tiered(pays.fire, len(w.progress))
        return None, _ZERO, None
    if k in BONUS_NUMBERS:
        if t == 7:
            return LOSE, _ZERO, None
        need = BONUS_NUMBERS[k]
        if t in need and t not in w.progress:
            prog = w.progress | {t}
            if prog == need:
                return WIN, getattr(pays, k), None
            return None, _ZERO, w.with_(progress=prog)
        return None, _ZERO, None
    if k == "hot_roller":
        if t == 7:
            return _tiered(pays.hot_roller, _hot_points(w.progress))
        combo = (min(d1, d2), max(d1, d2))
        if t in POINTS and combo not in w.progress:
            prog = w.progress | {combo}
            if _hot_points(prog) == len(POINTS):
                return _tiered(pays.hot_roller, len(POINTS))
            return None, _ZERO, w.with_(progress=prog)
        return None, _ZERO, None
    raise AssertionError(f"unknown wager kind {k!r}")


def _hot_points(progress) -> int:
    """Points all of whose combinations have been thrown (rules text 002, 2(oo))."""
    return sum(1 for p in POINTS if all(c in progress for c in HOT_ROLLER_COMBOS[p]))


def _tiered(table: dict[int, Fraction], count: int):
    """Pay the highest tier reached (fire: (d)(4)); below the lowest tier the bet loses."""
    tiers = [c for c in table if c <= count]
    if not tiers:
        return LOSE, _ZERO, None
    return WIN, table[max(tiers)], None


def _net(ratio: Fraction):
    """A composite wager's net result per unit staked: > 0 win, 0 push, < 0 a (partial) loss."""
    if ratio > 0:
        return WIN, ratio, None
    if ratio == 0:
        return PUSH, _ZERO, None
    return LOSE, ratio, None
