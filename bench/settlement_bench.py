"""Settlement throughput: one roll against 10,000 open wagers of mixed types.

Prints wager settlements per second (every open wager evaluated against the roll, and the
number actually decided) for:
  * settlement.fast.FastBook  (outcome tables indexed by the dice, numpy gathers; the hot path),
  * settlement.engine.settle  (the pure-Python reference the tables are built from),
  * crapssim 0.4.1            (Bet.get_result on the same wagers where it has them),
and the ratio FastBook / crapssim. One core (rates per second of process CPU time), the same
36 dice cycled.

Usage: python bench/settlement_bench.py [--wagers 10000] [--seconds 2]
"""
from __future__ import annotations

import argparse
import time

from settlement.engine import settle
from settlement.fast import FastBook, mixed_wagers
from settlement.game import GameState
from settlement.profile import load_profile

DICE = [(a, b) for a in range(1, 7) for b in range(1, 7)]


def _timeit(fn, seconds: float) -> tuple[int, float]:
    """Calls of fn over the 36 dice for ``seconds`` of this process's CPU time (the machine is
    shared: CPU time, not wall time, is the one-core figure)."""
    n = 0
    t0 = time.process_time()
    while True:
        fn(DICE[n % 36])
        n += 1
        dt = time.process_time() - t0
        if dt >= seconds and n >= 36:
            return n, dt


def _crapssim_bets(wagers):
    from crapssim import bet as B
    out = []
    simple = {"field": B.Field, "any7": B.Any7, "any_craps": B.AnyCraps, "craps2": B.Two, "craps3": B.Three,
              "craps12": B.Boxcars, "eleven": B.Yo, "c_and_e": B.CAndE, "horn": B.Horn, "whirl": B.World,
              "pass": B.PassLine, "dont_pass": B.DontPass}
    for w in wagers:
        a = w.amount / 100
        k = w.kind
        if k in simple:
            out.append(simple[k](a))
        elif k in ("come", "dont_come"):
            out.append((B.Come if k == "come" else B.DontCome)(a, w.number))
        elif k == "odds":
            base = {"pass": B.PassLine, "dont_pass": B.DontPass, "come": B.Come, "dont_come": B.DontCome}[w.base]
            out.append(B.Odds(base, w.number, a))
        elif k in ("place", "buy"):
            out.append((B.Place if k == "place" else B.Buy)(w.number, a))
        elif k == "lay":
            out.append(B.Lay(w.number, a, always_working=True))
        elif k == "hardway":
            out.append(B.HardWay(w.number, a))
        elif k == "hop":
            out.append(B.Hop(w.dice, a))
        elif k == "fire":
            f = B.Fire(a)
            f.points_made = set(w.progress)
            out.append(f)
        elif k in ("all_small", "all_tall", "make_em_all"):
            b = {"all_small": B.Small, "all_tall": B.Tall, "make_em_all": B.All}[k](a)
            b.rolled_numbers = set(w.progress)
            out.append(b)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wagers", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--point", type=int, default=6)
    a = ap.parse_args(argv)
    prof = load_profile("ny-5324")
    wagers = mixed_wagers(prof, a.wagers, point=a.point, seed=1)
    kinds = sorted({w.kind for w in wagers})
    print(f"{a.wagers} open wagers of {len(kinds)} types under ny-5324, point {a.point}: {', '.join(kinds)}")

    t0 = time.perf_counter()
    book = FastBook(prof)
    book.add(wagers)
    for d in DICE:  # tabulate every row a roll can lead to (travel, progress) before timing
        book.outcome(a.point, d)
    print(f"FastBook build (outcome tables for {len(book._keys)} wager states): {time.perf_counter() - t0:.2f} s")
    decided = [0]

    def fast(d):
        decided[0] += len(book.outcome(a.point, d)[0])
    n, dt = _timeit(fast, a.seconds)
    fast_rate = n * a.wagers / dt
    print(f"FastBook:           {n / dt:10.1f} rolls/s  {fast_rate:14,.0f} wager settlements/s "
          f"({decided[0] / n:.0f} decided per roll on average)")

    state = GameState(point=a.point)
    tw = tuple(wagers)
    n, dt = _timeit(lambda d: settle(state, tw, d, prof), a.seconds)
    ref_rate = n * a.wagers / dt
    print(f"reference settle(): {n / dt:10.1f} rolls/s  {ref_rate:14,.0f} wager settlements/s")

    try:
        from crapssim.table import Table as CsTable
    except ImportError:
        print("crapssim not installed: no ratio")
        return 0
    cs_bets = _crapssim_bets(wagers)
    cs = CsTable(seed=0)
    cs.settings.update({"field_payouts": {2: 2, 3: 1, 4: 1, 9: 1, 10: 1, 11: 1, 12: 3},
                        "vig_rounding": "none"})
    cs.point.number = a.point

    def crapssim(d):
        cs.dice.fixed_roll(d)
        for b in cs_bets:
            b.get_result(cs)
    n, dt = _timeit(crapssim, a.seconds)
    cs_rate = n * len(cs_bets) / dt
    print(f"crapssim 0.4.1:     {n / dt:10.1f} rolls/s  {cs_rate:14,.0f} wager settlements/s "
          f"({len(cs_bets)} of the wagers; it has no place-to-lose, horn high or 6-7-8)")
    ours_same = FastBook(prof)
    same = [w for w in wagers if w.kind not in ("place_lose", "horn_high", "six_seven_eight")]
    ours_same.add(same)
    for d in DICE:
        ours_same.outcome(a.point, d)
    n, dt = _timeit(lambda d: ours_same.outcome(a.point, d), a.seconds)
    same_rate = n * len(same) / dt
    print(f"FastBook on the same {len(same)} wagers: {same_rate:,.0f} /s -> ratio vs crapssim {same_rate / cs_rate:.1f}x"
          f" (reference settle() vs crapssim {ref_rate / cs_rate:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
