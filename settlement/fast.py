"""Vectorised settlement of many open wagers: per-wager outcome tables indexed by the dice.

Every distinct wager state (kind, number, base, dice, lammer, progress) is a *row*. For
each row the outcome of each of the 36 dice under each of the 7 table phases (come-out,
point 4, 5, 6, 8, 9, 10) is tabulated ONCE by calling the reference rule function
:func:`settlement.rules.resolve` (so the two cannot disagree), as int8 codes plus the win
ratio as an integer numerator/denominator. Settling a roll is then a handful of numpy
gathers over the open wagers::

    book = FastBook(profile)
    book.add(wagers)                       # Wager values (see settlement.wagers)
    res = book.settle(point, (d1, d2))     # arrays over the decided wagers, book updated

Rows appear lazily (a come bet travelling to 6 is a new row; a bonus craps bet's progress
is a new row) and are cached. Money follows settlement.engine exactly (payout rounded
up to the profile's unit, vig down to the vig unit); tests check equality with the engine.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .rules import LOSE, PUSH, VOID, WIN, resolve
from .wagers import Wager

__all__ = ["FastBook", "PHASES", "NONE", "WIN_C", "LOSE_C", "PUSH_C", "VOID_C", "CHANGE"]

PHASES = (None, 4, 5, 6, 8, 9, 10)
_PHASE = {p: i for i, p in enumerate(PHASES)}
NONE, WIN_C, LOSE_C, PUSH_C, VOID_C, CHANGE = 0, 1, 2, 3, 4, 5
_CODE = {WIN: WIN_C, LOSE: LOSE_C, PUSH: PUSH_C, VOID: VOID_C}
RESULT_NAMES = {WIN_C: "win", LOSE_C: "lose", PUSH_C: "push", VOID_C: "void"}


def _row_key(w: Wager) -> tuple:
    return (w.kind, w.number, w.base, w.dice, w.working, w.progress)


class FastBook:
    """Open wagers as numpy arrays (amount, vig paid, row), settled by table lookup.

    Attributes:
        row: int32 (N,) row index of each open wager.
        amount: int64 (N,) stake in cents.
        vig_paid: int64 (N,) vig taken at placement, cents.
        wid: int64 (N,) wager ids; player: int32 (N,) player index into ``players``.
    """

    def __init__(self, prof, capacity: int = 64):
        self.prof = prof
        self.unit = prof.s.payout_unit_cents
        self._keys: list[tuple] = []
        self._proto: list[Wager] = []
        self._index: dict[tuple, int] = {}
        self._next: dict[tuple, Wager] = {}
        self.code = np.zeros((capacity, 7, 36), np.int8)
        self.num = np.zeros((capacity, 7, 36), np.int64)
        self.den = np.ones((capacity, 7, 36), np.int64)
        self.stays = np.zeros(capacity, bool)
        self.vig_win_num = np.zeros(capacity, np.int64)   # vig on a win = amount * num // (den * vig unit)
        self.vig_win_den = np.ones(capacity, np.int64)
        self.players: list[str] = []
        self._pidx: dict[str, int] = {}
        self.row = np.zeros(0, np.int32)
        self.amount = np.zeros(0, np.int64)
        self.vig_paid = np.zeros(0, np.int64)
        self.wid = np.zeros(0, np.int64)
        self.player = np.zeros(0, np.int32)
        self.epoch = np.zeros(0, np.int32)

    # ---- rows --------------------------------------------------------------------------
    def row_of(self, w: Wager) -> int:
        """Row index of a wager state (tabulated on first sight)."""
        k = _row_key(w)
        r = self._index.get(k)
        if r is not None:
            return r
        r = len(self._keys)
        if r >= self.code.shape[0]:
            self._grow()
        proto = Wager(0, "", w.kind, 1, w.number, w.base, w.dice, w.working, 0, w.progress)
        self._keys.append(k)
        self._proto.append(proto)
        self._index[k] = r
        prof = self.prof
        for pi, point in enumerate(PHASES):
            for di in range(36):
                d1, d2 = divmod(di, 6)
                res, ratio, nw = resolve(proto, point, d1 + 1, d2 + 1, prof)
                if res is None:
                    if nw is not None and nw != proto:
                        self.code[r, pi, di] = CHANGE
                        self._next[(r, pi, di)] = nw
                    continue
                self.code[r, pi, di] = _CODE[res]
                if res == LOSE and ratio < 0:
                    raise ValueError(f"partial losses are not tabulated ({w.kind})")
                f = Fraction(ratio)
                self.num[r, pi, di] = f.numerator
                self.den[r, pi, di] = f.denominator
        self.stays[r] = w.kind in prof.s.stays_up
        if w.kind in ("buy", "lay"):
            v = prof.s.vig
            when = v.buy_when if w.kind == "buy" else v.lay_when
            if when == "win":
                per = v.rate if (w.kind == "buy" or v.lay_base == "wager") else v.rate * prof.pays.lay[w.number]
                self.vig_win_num[r] = per.numerator
                self.vig_win_den[r] = per.denominator * v.unit_cents
        return r

    def _grow(self) -> None:
        n = self.code.shape[0] * 2
        for name, fill in (("code", 0), ("num", 0), ("den", 1)):
            a = getattr(self, name)
            b = np.full((n, 7, 36), fill, a.dtype)
            b[: a.shape[0]] = a
            setattr(self, name, b)
        for name, fill in (("stays", False), ("vig_win_num", 0), ("vig_win_den", 1)):
            a = getattr(self, name)
            b = np.full(n, fill, a.dtype)
            b[: a.shape[0]] = a
            setattr(self, name, b)

    # ---- wagers ------------------------------------------------------------------------
    def add(self, wagers) -> None:
        """Append Wager values to the book."""
        wagers = list(wagers)
        if not wagers:
            return
        for w in wagers:
            if w.player not in self._pidx:
                self._pidx[w.player] = len(self.players)
                self.players.append(w.player)
        self.row = np.concatenate([self.row, np.fromiter((self.row_of(w) for w in wagers), np.int32, len(wagers))])
        self.amount = np.concatenate([self.amount, np.fromiter((w.amount for w in wagers), np.int64, len(wagers))])
        self.vig_paid = np.concatenate([self.vig_paid, np.fromiter((w.vig_paid for w in wagers), np.int64, len(wagers))])
        self.wid = np.concatenate([self.wid, np.fromiter((w.wid for w in wagers), np.int64, len(wagers))])
        self.player = np.concatenate([self.player, np.fromiter((self._pidx[w.player] for w in wagers), np.int32,
                                                               len(wagers))])
        self.epoch = np.concatenate([self.epoch, np.fromiter((w.epoch for w in wagers), np.int32, len(wagers))])

    def wagers(self) -> list[Wager]:
        """The open wagers as Wager values."""
        out = []
        for i in range(len(self.row)):
            p = self._proto[int(self.row[i])]
            out.append(Wager(int(self.wid[i]), self.players[int(self.player[i])], p.kind, int(self.amount[i]),
                             p.number, p.base, p.dice, p.working, int(self.vig_paid[i]), p.progress,
                             int(self.epoch[i])))
        return out

    # ---- settling ----------------------------------------------------------------------
    def outcome(self, point: int | None, dice: tuple[int, int]):
        """Settle without changing the book. Returns (idx, code, payout, vig, returned, keep, new_rows):
        idx int64 (M,) indices of decided wagers; code int8 (M,) 1 win 2 lose 3 push 4 void;
        payout/vig/returned int64 (M,) cents; keep bool (N,) wagers still open; new_rows int32 (N,)."""
        pi = _PHASE[point]
        di = (dice[0] - 1) * 6 + (dice[1] - 1)
        rows = self.row
        code = self.code[rows, pi, di]
        decided = (code >= WIN_C) & (code <= VOID_C)
        idx = np.flatnonzero(decided)
        c = code[idx]
        r = rows[idx]
        amt = self.amount[idx]
        win = c == WIN_C
        unit = self.unit
        payout = np.where(win, -((-amt * self.num[r, pi, di]) // (self.den[r, pi, di] * unit)) * unit, 0)   # up
        vwin = np.where(win, (amt * self.vig_win_num[r]) // self.vig_win_den[r], 0)
        vwin = vwin * self.prof.s.vig.unit_cents if self.prof.s.vig is not None else vwin
        has_win_vig = self.vig_win_num[r] > 0
        vp = self.vig_paid[idx]
        stays = win & self.stays[r]
        vig = np.where(has_win_vig, vwin, np.where((c == PUSH_C) | (c == VOID_C), 0, vp))
        returned = np.where(win, payout - np.where(has_win_vig, vwin, 0) + np.where(stays, 0, amt),
                            np.where(c == LOSE_C, 0, amt + vp))
        keep = ~decided
        keep[idx[stays]] = True
        new_rows = rows
        changed = np.flatnonzero(code == CHANGE)
        if changed.size:
            new_rows = rows.copy()
            uniq, inv = np.unique(rows[changed], return_inverse=True)
            targets = np.fromiter((self.row_of(self._next[(int(u), pi, di)]) for u in uniq), np.int32, len(uniq))
            new_rows[changed] = targets[inv]
        return idx, c, payout, vig, returned, keep, new_rows

    def settle(self, point: int | None, dice: tuple[int, int]):
        """Settle a roll and update the book. Returns (wid, player, code, stake, payout, vig, returned)
        arrays over the decided wagers."""
        idx, c, payout, vig, returned, keep, new_rows = self.outcome(point, dice)
        out = (self.wid[idx], self.player[idx], c, self.amount[idx], payout, vig, returned)
        self.row = new_rows[keep]
        self.amount = self.amount[keep]
        self.vig_paid = self.vig_paid[keep]
        self.wid = self.wid[keep]
        self.player = self.player[keep]
        self.epoch = self.epoch[keep]
        return out


def mixed_wagers(prof, n: int, point: int | None = 6, seed: int = 0) -> list[Wager]:
    """A workload of ``n`` open wagers of mixed types legal under ``prof`` at table ``point``
    (bench and tests): line bets and odds at their points, come bets in the box and on numbers,
    place/buy/lay/hardways, every one-roll wager, hops, fire and bonus craps with progress."""
    rng = np.random.default_rng(seed)
    P = prof.permitted
    pts = (4, 5, 6, 8, 9, 10)
    makers = []
    if point is not None:
        makers += [lambda: ("pass", point, None, None, None), lambda: ("dont_pass", point, None, None, None)]
        if "odds" in P:
            makers += [lambda: ("odds", point, "pass", None, None), lambda: ("odds", point, "dont_pass", None, None)]
        makers += [lambda: ("come", None, None, None, None), lambda: ("dont_come", None, None, None, None),
                   lambda: ("come", int(rng.choice(pts)), None, None, None),
                   lambda: ("dont_come", int(rng.choice(pts)), None, None, None)]
        if "odds" in P:
            makers += [lambda: ("odds", int(rng.choice(pts)), str(rng.choice(["come", "dont_come"])), None, None)]
    else:
        makers += [lambda: ("pass", None, None, None, None), lambda: ("dont_pass", None, None, None, None)]
    for k in ("place", "place_lose", "buy", "lay"):
        if k in P:
            makers.append(lambda k=k: (k, int(rng.choice(pts)), None, None, None))
    if "hardway" in P:
        makers.append(lambda: ("hardway", int(rng.choice((4, 6, 8, 10))), None, None,
                               bool(rng.integers(2)) or None))
    for k in ("field", "any7", "any_craps", "craps2", "craps3", "craps12", "eleven", "c_and_e", "horn",
              "whirl", "six_seven_eight", "big6", "big8"):
        if k in P:
            makers.append(lambda k=k: (k, None, None, None, None))
    if "horn_high" in P:
        makers.append(lambda: ("horn_high", int(rng.choice((2, 3, 11, 12))), None, None, None))
    if "hop" in P:
        from .wagers import HOPS
        makers.append(lambda: ("hop", None, None, HOPS[int(rng.integers(len(HOPS)))], None))
    for k in ("fire", "all_small", "all_tall", "make_em_all"):
        if k in P:
            makers.append(lambda k=k: (k, None, None, None, None))
    from .wagers import BONUS_NUMBERS
    out = []
    for i in range(n):
        kind, number, base, dice, working = makers[int(rng.integers(len(makers)))]()
        prog = frozenset()
        if kind == "fire":
            prog = frozenset(int(x) for x in rng.choice(pts, size=int(rng.integers(0, 5)), replace=False))
        elif kind in BONUS_NUMBERS:
            need = sorted(BONUS_NUMBERS[kind])
            prog = frozenset(int(x) for x in rng.choice(need, size=int(rng.integers(0, len(need))), replace=False))
        units = {"horn": 4, "horn_high": 5, "whirl": 5, "c_and_e": 2}.get(kind, 1)
        amount = int(rng.integers(1, 21)) * 100 * units
        vig = 0
        if kind in ("buy", "lay") and prof.s.vig is not None:
            from .engine import vig_for
            when = prof.s.vig.buy_when if kind == "buy" else prof.s.vig.lay_when
            vig = vig_for(kind, amount, number, prof) if when == "placed" else 0
        out.append(Wager(i + 1, f"p{i}", kind, amount, number, base, dice, working, vig, prog))
    return out
