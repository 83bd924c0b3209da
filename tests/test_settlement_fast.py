"""Settlement: the vectorised FastBook settles exactly as the reference engine."""
from __future__ import annotations

import pytest

from settlement.engine import settle
from settlement.fast import RESULT_NAMES, FastBook, mixed_wagers
from settlement.game import GameState
from settlement.profile import load_profile


@pytest.mark.parametrize("name,point", [("ny-5324", None), ("ny-5324", 6), ("nj-13-47", 4)])
def test_fast_equals_reference_on_every_dice(name, point):
    prof = load_profile(name)
    wagers = mixed_wagers(prof, 200, point=point, seed=point or 0)
    book = FastBook(prof)
    book.add(wagers)
    by_wid = {w.wid: w for w in wagers}
    for d1 in range(1, 7):
        for d2 in range(1, 7):
            idx, code, payout, vig, returned, keep, new_rows = book.outcome(point, (d1, d2))
            fast = sorted(zip(book.wid[idx].tolist(), [RESULT_NAMES[int(c)] for c in code],
                              book.amount[idx].tolist(), payout.tolist(), vig.tolist(), returned.tolist()))
            _, kept, out, _ = settle(GameState(point=point), tuple(wagers), (d1, d2), prof)
            ref = sorted((s.wid, s.result, s.stake, s.payout, s.vig, s.returned) for s in out)
            assert fast == ref, (name, point, d1, d2)
            left = sorted((int(book.wid[i]), book._proto[int(new_rows[i])].kind, book._proto[int(new_rows[i])].number,
                           int(book.amount[i]), book._proto[int(new_rows[i])].progress)
                          for i in range(len(book.row)) if keep[i])
            assert left == sorted((w.wid, w.kind, w.number, w.amount, w.progress) for w in kept)
    assert len(by_wid) == 200


def test_fast_settle_updates_the_book():
    prof = load_profile("ny-5324")
    ws = mixed_wagers(prof, 100, point=6, seed=1)
    book = FastBook(prof)
    book.add(ws)
    n0 = len(book.row)
    wid, pl, code, stake, payout, vig, returned = book.settle(6, (3, 4))      # seven-out
    assert len(wid) == n0 and len(book.row) == 0          # a loser 7 decides every one of these wagers
    more = mixed_wagers(prof, 50, point=6, seed=2)
    book.add(more)
    wid, pl, code, stake, payout, vig, returned = book.settle(6, (2, 4))   # point 6 made with a 6
    # come / don't come bets in the box travel to the 6 rolled; those already on 6 are decided
    # (come wins, don't come loses); those on other numbers stay where they are
    come = [w for w in more if w.kind in ("come", "dont_come")]
    assert any(w.number is None for w in come) and any(w.number == 6 for w in come)    # both cases occur
    assert sorted((w.wid, w.kind, w.number) for w in book.wagers() if w.kind in ("come", "dont_come")) == sorted(
        (w.wid, w.kind, 6 if w.number is None else w.number) for w in come if w.number != 6)
    decided = {int(i): (RESULT_NAMES[int(c)], int(p)) for i, c, p in zip(wid, code, payout)}
    for w in come:
        if w.number == 6:
            assert decided[w.wid] == (("win", w.amount) if w.kind == "come" else ("lose", 0))
