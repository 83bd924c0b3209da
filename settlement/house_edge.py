"""Exact house edges (fractions.Fraction) of every wager under a profile.

The edges are computed from the SAME rule function the engine settles with
(:func:`settlement.rules.resolve`), so they are the edges of what is implemented, not of a
separate model:

* wagers whose only state is their own (line bets travelling to a point, place, hardways,
  one-roll bets, bonus craps, hot roller): a Markov chain over the wager's states, solved
  exactly by recursion (every non-absorbing transition moves to a new state or stays put;
  self-loops are divided out), over the 36 equally likely dice;
* the fire bet, whose state includes the table's point: an exact chain over the set of
  different points made, per point cycle (come-out -> point -> made or seven-out).

Edge = expected loss per unit staked, per bet made (pushes included: don't pass 3/220).
Vig: paid at placement costs ``rate`` per unit staked whatever happens; on a win it is
deducted from the win. Rounding to the cent is ignored (the edges are of the exact odds).

Run ``python -m settlement.house_edge`` to print the table; ``--write docs/house-edge.md``
writes it.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from .rules import LOSE, WIN, resolve
from .wagers import HOPS, POINTS, Wager

__all__ = ["Row", "wager_edge", "fire_distribution", "edges", "render", "main"]

DICE = tuple((a, b) for a in range(1, 7) for b in range(1, 7))
_WAYS = {t: sum(1 for a, b in DICE if a + b == t) for t in range(2, 13)}


@dataclass(frozen=True)
class Row:
    """One line of the house-edge table."""

    wager: str
    edge: Fraction
    note: str = ""


def _ev(prof, w: Wager, point: int | None, win_adjust=None) -> Fraction:
    """Exact expected net return per unit staked of wager ``w`` settled to its end.

    ``point`` is the table point held fixed (only the come-out working rules and the fire bet
    look at it; fire is handled by :func:`fire_distribution`). ``win_adjust(ratio)`` maps the
    win ratio to the net return (used for vig on a win).
    """
    memo: dict[Wager, Fraction] = {}

    def value(s: Wager) -> Fraction:
        if s in memo:
            return memo[s]
        acc = Fraction(0)
        stay = Fraction(0)
        for d1, d2 in DICE:
            res, ratio, nw = resolve(s, point, d1, d2, prof)
            if res is None:
                if nw is None or nw == s:
                    stay += 1
                else:
                    acc += value(nw)
            elif res == WIN:
                acc += win_adjust(ratio) if win_adjust else ratio
            elif res == LOSE:
                acc += ratio if ratio < 0 else -1
            # push / void: 0
        if stay == 36:
            raise ValueError(f"wager {s} is never decided")
        memo[s] = acc / (36 - stay)
        return memo[s]

    return value(w)


def wager_edge(prof, kind: str, *, number=None, base=None, dice=None, point=4) -> Fraction:
    """House edge (Fraction, per unit staked) of one wager under ``prof``, vig included."""
    w = Wager(0, "h", kind, 1, number, base, dice, None, 0, frozenset())
    if kind == "odds":
        w = w.with_(number=number)
    adjust = None
    upfront = Fraction(0)
    if kind in ("buy", "lay"):
        v = prof.s.vig
        when = v.buy_when if kind == "buy" else v.lay_when
        base_per_unit = Fraction(1) if (kind == "buy" or v.lay_base == "wager") else prof.pays.lay[number]
        if when == "placed":
            upfront = v.rate * base_per_unit
        else:
            adjust = lambda r, c=v.rate * base_per_unit: r - c  # noqa: E731
    return -(_ev(prof, w, point, adjust) - upfront)


def fire_distribution() -> dict[int, Fraction]:
    """Exact probability that a shooter makes exactly k different points before the loser 7,
    k = 0..6 (9 NYCRR 5324.52(b)(40), (j)(1)(viii): repeats do not count)."""
    est = {p: Fraction(_WAYS[p], 24) for p in POINTS}                    # which point, given one is set
    make = {p: Fraction(_WAYS[p], _WAYS[p] + 6) for p in POINTS}          # point before 7
    a = {p: est[p] * make[p] for p in POINTS}                             # cycle ends with p made
    b = sum(est[p] * (1 - make[p]) for p in POINTS)                       # cycle ends with a seven-out

    @lru_cache(maxsize=None)
    def dist(made: frozenset) -> tuple:
        loop = sum(a[p] for p in made)
        out = [Fraction(0)] * 7
        out[len(made)] += b
        for p in POINTS:
            if p not in made:
                sub = dist(made | {p})
                for k in range(7):
                    out[k] += a[p] * sub[k]
        return tuple(x / (1 - loop) for x in out)

    return dict(enumerate(dist(frozenset())))


def _tier_ev(table: dict[int, Fraction], dist: dict[int, Fraction]) -> Fraction:
    ev = Fraction(0)
    for k, p in dist.items():
        tiers = [c for c in table if c <= k]
        ev += p * (table[max(tiers)] if tiers else -1)
    return ev


def edges(prof) -> list[Row]:
    """Every permitted wager of ``prof`` with its exact house edge."""
    P = prof.permitted
    rows: list[Row] = []
    add = rows.append
    for k, label in (("pass", "pass"), ("dont_pass", "don't pass"), ("come", "come"), ("dont_come", "don't come")):
        if k in P:
            add(Row(label, wager_edge(prof, k)))
    if "odds" in P:
        for p in POINTS:
            add(Row(f"take odds {p}", wager_edge(prof, "odds", number=p, base="pass")))
        for p in POINTS:
            add(Row(f"lay odds {p}", wager_edge(prof, "odds", number=p, base="dont_pass")))
    for k, label in (("place", "place {} to win"), ("place_lose", "place {} to lose"),
                     ("buy", "buy {}"), ("lay", "lay {}")):
        if k in P:
            note = ""
            if k in ("buy", "lay"):
                v = prof.s.vig
                when = v.buy_when if k == "buy" else v.lay_when
                note = f"vig {v.rate} of {'wager' if k == 'buy' or v.lay_base == 'wager' else 'win'}, {when}"
            for p in POINTS:
                add(Row(label.format(p), wager_edge(prof, k, number=p), note))
    for k in ("big6", "big8"):
        if k in P:
            add(Row(k.replace("big", "big "), wager_edge(prof, k)))
    if "hardway" in P:
        for p in (4, 6, 8, 10):
            add(Row(f"hard {p}", wager_edge(prof, "hardway", number=p)))
    simple = (("field", "field"), ("any7", "any 7"), ("any_craps", "any craps"), ("craps2", "craps 2"),
              ("craps3", "craps 3"), ("craps12", "craps 12"), ("eleven", "11"), ("c_and_e", "C and E"),
              ("horn", "horn"), ("whirl", "whirl"), ("six_seven_eight", "6-7-8"))
    for k, label in simple:
        if k in P:
            note = ""
            if k == "field":
                note = f"2 pays {prof.pays.field[2]}:1, 12 pays {prof.pays.field[12]}:1"
            add(Row(label, wager_edge(prof, k), note))
    if "horn_high" in P:
        for n in (2, 3, 11, 12):
            add(Row(f"horn high {n}", wager_edge(prof, "horn_high", number=n)))
    if "hop" in P:
        add(Row("hop, hard (2-2, 3-3, 4-4, 5-5)", wager_edge(prof, "hop", dice=(2, 2))))
        add(Row("hop, easy (13 combinations)", wager_edge(prof, "hop", dice=(1, 3))))
        assert len({wager_edge(prof, "hop", dice=h) for h in HOPS}) == 2
    if "fire" in P:
        t = prof.pays.fire
        add(Row("fire", -_tier_ev(t, fire_distribution()),
                "pays " + "/".join(str(t[k]) for k in sorted(t)) + " to 1 for " +
                "/".join(str(k) for k in sorted(t)) + " points"))
    for k, label in (("all_small", "all small"), ("all_tall", "all tall"), ("make_em_all", "make 'em all")):
        if k in P:
            add(Row(label, wager_edge(prof, k), f"{getattr(prof.pays, k)} to 1"))
    if "hot_roller" in P:
        if prof.pays.hot_roller is None:
            add(Row("hot roller", Fraction(0), "no pay table in the text: not offered"))
        else:
            add(Row("hot roller", wager_edge(prof, "hot_roller")))
    return rows


def hot_roller_distribution() -> dict[int, Fraction]:
    """Exact probability that exactly k points are completed (all their combinations thrown)
    when the first 7 is thrown, k = 0..6 (rules text 002, 2(oo)); k = 6 ends the wager early."""
    from .wagers import HOT_ROLLER_COMBOS
    combos = [c for p in POINTS for c in HOT_ROLLER_COMBOS[p]]
    prob = {c: Fraction(1 if c[0] == c[1] else 2, 36) for c in combos}
    seven = Fraction(6, 36)

    def done(s: frozenset) -> int:
        return sum(1 for p in POINTS if all(c in s for c in HOT_ROLLER_COMBOS[p]))

    memo: dict[frozenset, tuple] = {}

    def dist(s: frozenset) -> tuple:
        if s in memo:
            return memo[s]
        k = done(s)
        out = [Fraction(0)] * 7
        if k == 6:
            out[6] = Fraction(1)
            memo[s] = tuple(out)
            return memo[s]
        new = [c for c in combos if c not in s]
        moving = seven + sum(prob[c] for c in new)
        out[k] += seven / moving
        for c in new:
            sub = dist(s | {c})
            w = prob[c] / moving
            for i in range(7):
                out[i] += w * sub[i]
        memo[s] = tuple(out)
        return memo[s]

    return dict(enumerate(dist(frozenset())))


def render(profiles) -> str:
    """Markdown of the house-edge table of each profile."""
    lines = ["# House edges, exact", "",
             "Generated by `python -m settlement.house_edge --write docs/house-edge.md` from the rule",
             "function the engine settles with (`settlement/rules.py`) and each profile's pay tables.",
             "Edge = expected loss per unit staked, per bet made (pushes count as bets: don't pass",
             "3/220); the exact odds, before rounding to the cent. Vig paid at placement is a cost",
             "per unit staked on every bet; vig on a win is taken from the win. Odds edges are 0.",
             ""]
    for prof in profiles:
        lines += [f"## {prof.name} ({prof.s.citation})", "", "| wager | edge (exact) | edge % | note |",
                  "|---|---|---|---|"]
        for r in edges(prof):
            pct = f"{float(r.edge) * 100:.3f}%"
            lines.append(f"| {r.wager} | {r.edge} | {pct} | {r.note} |")
        lines.append("")
    fd = fire_distribution()
    lines += ["## Fire bet: points made before the loser 7", "",
              "| different points | probability (exact) | ≈ |", "|---|---|---|"]
    lines += [f"| {k} | {p} | {float(p):.6f} |" for k, p in fd.items()]
    lines += ["", "## Hot roller: points completed when the first 7 is thrown (text 002, 2(oo))", "",
              "Text 002 gives no pay table; the probabilities any approved table must be set against:", "",
              "| points completed | probability (exact) | ≈ |", "|---|---|---|"]
    lines += [f"| {k} | {p} | {float(p):.3e} |" for k, p in hot_roller_distribution().items()]
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m settlement.house_edge [--profile NAME]... [--write PATH]``: print the exact house
    edge table (markdown, fractions) of the profiles (default the four of config/profiles) and,
    with ``--write``, write the same text to PATH (docs/house-edge.md). Returns the exit status:
    0; 2 for a profile that does not load or a file that cannot be written (the message on
    stderr); 1 when stdout is a closed pipe.
    """
    from .profile import ProfileError, load_profile
    ap = argparse.ArgumentParser(prog="python -m settlement.house_edge", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", action="append", help="profile(s); default: the four of config/profiles")
    ap.add_argument("--write", type=Path, help="write the markdown table here")
    a = ap.parse_args(argv)
    names = a.profile or ["ny-5324", "ny-4620", "nj-13-47", "rules-002"]
    try:
        text = render([load_profile(n) for n in names])
        if a.write:
            a.write.write_text(text, encoding="utf-8")
    except (ProfileError, OSError) as exc:
        print(f"{ap.prog}: {exc}", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(text)    # the same bytes as the file --write makes
        sys.stdout.flush()
    except BrokenPipeError:       # `... | head`: Python's "Note on SIGPIPE"
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
