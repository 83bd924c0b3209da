"""Settlement engine: the pure ``settle`` function and the legality rules around wagers.

Pure core::

    new_state, new_wagers, settlements = settle(state, wagers, (d1, d2), profile, seq=7)

``state`` is a :class:`settlement.game.GameState`, ``wagers`` a tuple of
:class:`settlement.wagers.Wager`; nothing is mutated. :class:`Table` is a thin holder
of those values for a session (place / remove / working / shooter / roll), enforcing
the legality rules; every refusal raises :class:`Rejected` naming the rule it breaks.

Money (integer cents): a win pays ``stake x ratio`` rounded UP to the profile's
``payout_unit_cents``, never below the odds listed (see :mod:`settlement.money`); vigorish is
``floor(rate x base)`` to ``vig.unit_cents``, taken when the bet is placed or only on
a win, per profile (9 NYCRR 5324.52(e)(1)-(2); N.J.A.C. 13:47-20.25(j)-(k)).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .game import GameState, advance, change_shooter, set_decide_only
from .money import floor_to_unit, pay
from .rules import LOSE, PUSH, VOID, WIN, default_off_on_come_out, resolve
from .wagers import BONUS_NUMBERS, HOPS, KINDS, ODDS_BASES, Wager, canonical_kind

__all__ = ["Settlement", "Rejected", "settle", "Table", "vig_for"]

_FIXED = ("fire", "hot_roller", *BONUS_NUMBERS)   # bets made for a shooter (epoch)
#: Citation of the rolls made only to decide come / don't come wagers where a profile names none.
_DECIDE_ONLY = "9 NYCRR 5324.52(i)(2)"


class Rejected(Exception):
    """An illegal wager or request. ``reason`` says what is wrong, ``rule`` the paragraph broken."""

    def __init__(self, reason: str, rule: str):
        super().__init__(f"{reason} [{rule}]")
        self.reason = reason
        self.rule = rule


@dataclass(frozen=True)
class Settlement:
    """One decided wager (an auditable record).

    Attributes (cents): stake = amount wagered; payout = winnings excluding the stake
    (0 unless a win); vig = vigorish charged for this wager (at placement or on the win);
    returned = what goes back to the player now (stake + payout - vig-on-win for a win,
    the stake on a push/void, 0 on a loss; a win on a bet that stays up returns
    payout - vig only). ``rule`` cites the pay table or paragraph applied.
    """

    seq: int
    player: str
    wid: int
    kind: str
    number: int | None
    base: str | None
    dice: tuple[int, int] | None
    result: str
    stake: int
    payout: int
    vig: int
    returned: int
    stays_up: bool
    rule: str

    def output(self, roll: int) -> dict:
        """The ``craps-table settle`` output line (docs/wagers.md)."""
        d = {"roll": roll, "player": self.player, "bet": self.kind}
        if self.base is not None:
            d["base"] = self.base
        if self.number is not None and self.kind not in ("pass", "dont_pass"):
            d["number"] = self.number
        if self.dice is not None:
            d["dice"] = list(self.dice)
        d.update(result=self.result, stake=self.stake, payout=self.payout, vig=self.vig)
        return d


def vig_for(w_kind: str, amount: int, number: int, prof) -> int:
    """Vigorish in cents on a buy or lay of ``amount`` on ``number``, rounded down to the vig unit.

    Buy: rate x amount wagered (5324.52(e)(1)). Lay: rate x amount wagered, or x the amount
    the player could win (N.J.A.C. 13:47-20.25(k)), per ``vig.lay_base``.
    """
    v = prof.s.vig
    if w_kind == "buy":
        base = Fraction(amount)
    else:
        base = Fraction(amount) if v.lay_base == "wager" else amount * prof.pays.lay[number]
    return floor_to_unit(base * v.rate, v.unit_cents)


def _vig_when(kind: str, prof) -> str | None:
    if kind == "buy":
        return prof.s.vig.buy_when
    if kind == "lay":
        return prof.s.vig.lay_when
    return None


def _pay_rule(w: Wager, prof) -> str:
    return prof.cite(f"pays.{w.kind}", prof.cite("pays"))


def settle(state: GameState, wagers: tuple[Wager, ...], dice: tuple[int, int], prof, seq: int = 0):
    """Settle every wager on one roll. Pure.

    Args:
        state: game state before the roll.
        wagers: open wagers.
        dice: (d1, d2), each 1..6.
        prof: a :class:`settlement.profile.Profile`.
        seq: roll sequence number recorded in each :class:`Settlement`.

    Returns:
        (new_state, new_wagers, settlements, outcome) where outcome is the game outcome
        ("natural", "craps", "point-set", "point-made", "seven-out", "no-decision").

    Raises:
        ValueError: dice not two integers 1..6.
    """
    d1, d2 = _check_dice(dice)
    point = state.point
    unit = prof.s.payout_unit_cents
    stays = prof.s.stays_up
    kept: list[Wager] = []
    out: list[Settlement] = []
    for w in wagers:
        res, ratio, nw = resolve(w, point, d1, d2, prof)
        if res is None:
            kept.append(nw if nw is not None else w)
            continue
        vig = w.vig_paid
        payout = 0
        returned = 0
        stay = False
        if res == WIN:
            payout = pay(w.amount, ratio, unit)
            if _vig_when(w.kind, prof) == "win":
                vig = vig_for(w.kind, w.amount, w.number, prof)
            net_vig = vig if _vig_when(w.kind, prof) == "win" else 0
            stay = w.kind in stays
            returned = payout - net_vig + (0 if stay else w.amount)
            if stay:
                kept.append(w)
        elif res in (PUSH, VOID):
            returned = w.amount + w.vig_paid if w.kind in ("buy", "lay") else w.amount
            vig = 0
        elif res == LOSE and ratio < 0:  # a composite wager losing only part of its units
            returned = floor_to_unit(w.amount * (1 + ratio), 1)
        out.append(Settlement(seq, w.player, w.wid, w.kind, w.number, w.base, w.dice, res, w.amount,
                              payout, vig, returned, stay, _pay_rule(w, prof)))
    new_state, outcome = advance(state, d1, d2)
    kept_t = _merge(kept)
    if new_state.decide_only and not _come_numbers(kept_t):
        # "Once the remaining come and/or don't come wagers have been decided ... the game
        # shall proceed", 9 NYCRR 5324.52(i)(2)
        new_state = set_decide_only(new_state, False)
    return new_state, kept_t, out, outcome


def _come_numbers(wagers) -> bool:
    """Some come or don't come wager stands on a come number (9 NYCRR 5324.52(i)(2))."""
    return any(w.kind in ("come", "dont_come") and w.number is not None for w in wagers)


def _merge(wagers: list[Wager]) -> tuple[Wager, ...]:
    """Come bets that travel onto a number where the player already has one merge into it."""
    seen: dict[tuple, int] = {}
    res: list[Wager] = []
    for w in wagers:
        k = w.key()
        if k in seen:
            i = seen[k]
            res[i] = res[i].with_(amount=res[i].amount + w.amount, vig_paid=res[i].vig_paid + w.vig_paid)
        else:
            seen[k] = len(res)
            res.append(w)
    return tuple(res)


def _check_dice(dice) -> tuple[int, int]:
    if (not isinstance(dice, (list, tuple)) or len(dice) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 6 for x in dice)):
        raise ValueError(f"dice must be two integers 1..6, not {dice!r}")
    return int(dice[0]), int(dice[1])


@dataclass
class Table:
    """A session: the game state, the open wagers and the (c)(4) reduction marks.

    Holds plain values and replaces them on every change (no wager is mutated in place).
    Use :meth:`place`, :meth:`remove`, :meth:`set_working`, :meth:`shooter_change`,
    :meth:`roll`. Each refusal raises :class:`Rejected`.
    """

    prof: object
    state: GameState = field(default_factory=GameState)
    wagers: tuple[Wager, ...] = ()
    next_wid: int = 1
    reduced: frozenset = frozenset()   # (player, kind, number) marks of (c)(4)

    def __copy__(self) -> "Table":
        # a copy never shares the wager index (the ledger applies changes to a copy first)
        return Table(self.prof, self.state, self.wagers, self.next_wid, self.reduced)

    # ---- queries -------------------------------------------------------------------
    def _idx(self):
        # index of the current wagers tuple (rebuilt when the tuple is replaced)
        cache = self.__dict__.get("_cache")
        if cache is None or cache[0] is not self.wagers:
            by_key: dict = {}
            by_player: dict = {}
            for w in self.wagers:
                by_key.setdefault(w.key(), w)
                by_player.setdefault(w.player, []).append(w)
            cache = (self.wagers, by_key, by_player)
            self.__dict__["_cache"] = cache
        return cache

    def find(self, key: tuple) -> Wager | None:
        """The open wager whose :meth:`Wager.key` is ``key`` (player, kind, number, base, dice,
        epoch), or ``None``: at most one exists, since bets with one key merge when placed.
        """
        return self._idx()[1].get(key)

    def of_player(self, player: str) -> list[Wager]:
        """The open wagers of ``player``, in layout order (a new list; empty for an unknown player)."""
        return list(self._idx()[2].get(player, ()))

    # ---- requests ------------------------------------------------------------------
    def parse(self, req: dict, *, for_remove: bool = False) -> Wager:
        """Validate the fields of a bet/remove/working request into a (not yet placed) Wager."""
        prof = self.prof
        player = req.get("player")
        if not isinstance(player, str) or not player:
            raise Rejected("missing or empty 'player'", "docs/wagers.md")
        name = req.get("bet")
        kind = canonical_kind(name) if isinstance(name, str) else None
        if kind is None:
            raise Rejected(f"unknown wager {name!r}", prof.cite("permitted"))
        if kind not in prof.permitted:
            raise Rejected(f"{kind} is not a permissible wager under {prof.s.citation}", prof.cite("permitted"))
        spec = KINDS[kind]
        number = req.get("number")
        base = None
        dice = None
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
            raise Rejected(f"'number' must be an integer, not {number!r}", prof.cite(kind, prof.cite("permitted")))
        if kind == "odds":
            base = canonical_kind(req.get("base")) if isinstance(req.get("base"), str) else None
            if base not in ODDS_BASES:
                raise Rejected(f"odds need 'base' one of {list(ODDS_BASES)}, not {req.get('base')!r}", prof.cite("odds"))
            if base in ("come", "dont_come") and number is None:
                raise Rejected(f"odds on a {base} bet need the come point 'number'", prof.cite("odds"))
            if number is not None and number not in spec.numbers:
                raise Rejected(f"odds 'number' must be one of {list(spec.numbers)}, not {number}", prof.cite("odds"))
        elif "number" in spec.fields:
            if number not in spec.numbers:
                raise Rejected(f"{kind} needs 'number' one of {list(spec.numbers)}, not {number!r}",
                               prof.cite(kind, prof.cite("permitted")))
        elif kind in ("come", "dont_come"):
            if number is not None and not for_remove:
                raise Rejected(f"a {kind} bet is made in the come box, without a 'number'", prof.cite(kind))
            if number is not None and number not in (4, 5, 6, 8, 9, 10):
                raise Rejected(f"{kind} 'number' must be a point, not {number}", prof.cite(kind))
        elif number is not None:
            raise Rejected(f"{kind} takes no 'number'", prof.cite(kind, prof.cite("permitted")))
        if kind == "hop":
            dv = req.get("dice")
            if (not isinstance(dv, (list, tuple)) or len(dv) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in dv)):
                raise Rejected(f"hop needs 'dice' [a, b], not {dv!r}", prof.cite("hop"))
            dice = (min(dv), max(dv))
            if dice not in HOPS:
                raise Rejected(f"no hop bet on {list(dice)}; hops are {[list(h) for h in HOPS]}", prof.cite("hop"))
        elif req.get("dice") is not None:
            raise Rejected(f"{kind} takes no 'dice'", prof.cite(kind, prof.cite("permitted")))
        working = req.get("working")
        if working is not None and not isinstance(working, bool):
            raise Rejected(f"'working' must be true or false, not {working!r}", prof.cite("working"))
        amount = req.get("amount")
        if not for_remove or amount is not None:
            if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
                # the input format (docs/wagers.md), as a missing 'player': no regulation or table limit
                raise Rejected(f"'amount' must be a positive integer of cents, not {amount!r}", "docs/wagers.md")
        epoch = self.state.shooter if kind in _FIXED else 0
        return Wager(0, player, kind, amount or 0, number, base, dice, working, 0, frozenset(), epoch)

    def place(self, req: dict) -> Wager:
        """Make a wager (or add to an identical one). Returns the wager as now on the layout.

        Raises:
            Rejected: unknown or impermissible wager, bad field, wrong time ((b)(1)-(4),
                (b)(40)-(41), (j)(1)(i)), odds without a point or over the limit ((e)(4)),
                increase of a fixed bet ((c)(3)(ii)-(iii)) or of a reduced don't bet ((c)(4)),
                bet unit ((b)(20)-(21), (d)(2)-(3)), table minimum/maximum.
        """
        prof = self.prof
        w = self.parse(req)
        st = self.state
        k = w.kind
        if (w.player, k, w.number) in self.reduced or (w.player, k, None) in self.reduced:
            raise Rejected(f"a {k} bet may not be replaced or increased after it was removed or reduced",
                           prof.cite("dont_no_increase"))
        if k in ("pass", "dont_pass") and st.decide_only:
            raise Rejected(f"the shooter is rolling only to decide the remaining come and don't come "
                           f"wagers: a {k} bet is taken once those rolls are ended",
                           prof.cite("decide_only", _DECIDE_ONLY))
        if k in ("pass", "dont_pass") and st.point is not None:
            raise Rejected(f"a {k} bet may be made only immediately prior to the come-out roll "
                           f"(the point is {st.point})", prof.cite(k))
        if k in ("come", "dont_come") and st.point is None:
            raise Rejected(f"a {k} bet may be made only after the come-out roll", prof.cite(k))
        if k == "hot_roller" and prof.pays.hot_roller is None:
            raise Rejected("hot roller is permitted but this profile has no approved hot roller pay table "
                           "(the text gives none)", prof.cite(k))
        if k in _FIXED and st.come_out_thrown:
            raise Rejected(f"a {k} bet may be made only prior to the come-out roll of a new shooter",
                           prof.cite(k))
        if k == "place" and prof.s.place_not_on_point and w.number == st.point:
            raise Rejected(f"place bets may not be made on the established point {st.point}",
                           prof.cite("place_on_point", prof.cite("place")))
        if w.working is not None and w.working is True and not (default_off_on_come_out(w, prof)
                                                               or k in prof.s.working.callable_off):
            raise Rejected(f"{k} takes no lammer: all other wagers are on", prof.cite("working"))
        if w.working is False and k not in prof.s.working.callable_off:
            raise Rejected(f"{k} cannot be called off", prof.cite("working"))
        if k == "odds":
            w = self._check_odds(w)
        existing = self.find(w.key())
        fixed = prof.s.removal.never_changed + prof.s.removal.removed_whole_only
        if existing is not None and k in fixed:
            raise Rejected(f"a {k} bet, once made, shall not be increased", prof.cite("removal_fixed"))
        units = prof.s.units.get(k)
        if units:
            step = units * prof.s.bet_unit_cents
            if w.amount % step:
                raise Rejected(f"a {k} bet is made in multiples of {units} units of {prof.s.bet_unit_cents} "
                               f"cents ({step} cents), not {w.amount}", prof.cite("units"))
        total = w.amount + (existing.amount if existing else 0)
        self._check_limits(w, total)
        vig_paid = 0
        if _vig_when(k, prof) == "placed":
            vig_paid = vig_for(k, total, w.number, prof) - (existing.vig_paid if existing else 0)
        if existing is not None:
            new = existing.with_(amount=total, vig_paid=existing.vig_paid + vig_paid,
                                 working=w.working if w.working is not None else existing.working)
            self.wagers = tuple(new if x is existing else x for x in self.wagers)
            return new
        new = w.with_(wid=self.next_wid, vig_paid=vig_paid)
        self.next_wid += 1
        cache = self.__dict__.get("_cache")
        self.wagers = self.wagers + (new,)
        if cache is not None and cache[0] is not None:  # keep the index current without a rebuild
            old_tuple, by_key, by_player = cache
            if old_tuple is self.wagers[:-1] or old_tuple == self.wagers[:-1]:
                by_key.setdefault(new.key(), new)
                by_player.setdefault(new.player, []).append(new)
                self.__dict__["_cache"] = (self.wagers, by_key, by_player)
        return new

    def _check_odds(self, w: Wager) -> Wager:
        prof = self.prof
        lim = prof.s.odds
        if w.base in ("pass", "dont_pass"):
            flat = self.find((w.player, w.base, self.state.point, None, None, 0)) if self.state.point else None
            if flat is None:
                raise Rejected(f"odds on {w.base} need a {w.base} bet with an established point",
                               prof.cite("odds"))
            if w.number is not None and w.number != flat.number:
                raise Rejected(f"the point is {flat.number}, not {w.number}", prof.cite("odds"))
            w = w.with_(number=flat.number)
        else:
            flat = self.find((w.player, w.base, w.number, None, None, 0))
            if flat is None:
                raise Rejected(f"odds on {w.base} {w.number} need a {w.base} bet moved to {w.number}",
                               prof.cite("odds"))
        light = w.base in ("pass", "come")
        mult = (lim.take_multiple if light else lim.lay_multiple)[w.number]
        cap = (lim.take_max_cents if light else lim.lay_max_cents).get(w.number)
        existing = self.find(w.key())
        total = w.amount + (existing.amount if existing else 0)
        limit = int(flat.amount * mult)
        if cap is not None:
            limit = min(limit, cap)
        if total > limit:
            raise Rejected(f"odds of {total} cents exceed the limit of {limit} cents "
                           f"({mult} x the {w.base} bet of {flat.amount})", prof.cite("odds"))
        return w

    def _check_limits(self, w: Wager, total: int) -> None:
        prof = self.prof
        lim = prof.s.limits
        over = lim.wager.get(w.kind)
        lo = over.min_cents if over and over.min_cents is not None else (None if w.kind == "odds" else lim.min_cents)
        hi = over.max_cents if over and over.max_cents is not None else (None if w.kind == "odds" else lim.max_cents)
        if over and w.number in over.max_cents_by_number:
            hi = over.max_cents_by_number[w.number]
        rule = prof.cite(f"limits.{w.kind}", prof.cite("limits"))
        if lo is not None and total < lo:
            raise Rejected(f"{w.kind} of {total} cents is under the minimum of {lo} cents", rule)
        if hi is not None and total > hi:
            raise Rejected(f"{w.kind} of {total} cents is over the maximum of {hi} cents", rule)
        if over and over.step_cents and w.amount % over.step_cents:
            raise Rejected(f"{w.kind} is made in increments of {over.step_cents} cents", rule)

    def _lookup(self, req: dict) -> Wager:
        w = self.parse(req, for_remove=True)
        key = w.key()
        if w.kind in ("pass", "dont_pass"):
            cands = [x for x in self.wagers if x.player == w.player and x.kind == w.kind]
        elif w.kind == "odds" and w.base in ("pass", "dont_pass") and w.number is None:
            cands = [x for x in self.wagers if x.player == w.player and x.kind == "odds" and x.base == w.base]
        elif w.kind in _FIXED:
            cands = [x for x in self.wagers if x.key()[:5] == key[:5]]
        else:
            cands = [x for x in self.wagers if x.key() == key]
        if not cands:
            raise Rejected(f"{w.player} has no such {w.kind} wager on the layout", self.prof.cite("permitted"))
        return cands[0]

    def remove(self, req: dict) -> tuple[Wager, int]:
        """Remove a wager, or reduce it by ``amount`` cents. Returns (the wager before, cents returned).

        Raises:
            Rejected: no such wager; pass/come after its point ((c)(3)(i)); a fire bet
                ((c)(3)(ii)); a bonus craps bet reduced rather than removed whole ((c)(3)(iii));
                amount larger than the wager (the profile's ``removal`` paragraph, what may be
                reduced: 9 NYCRR 5324.52(c)(3); else its ``removal_line``).
        """
        prof = self.prof
        w = self._lookup(req)
        amount = req.get("amount")
        if w.kind in prof.s.removal.never_changed:
            raise Rejected(f"a {w.kind} bet, once made, shall not be removed or reduced", prof.cite("removal_fixed"))
        if w.kind in prof.s.removal.locked_after_point and w.number is not None:
            raise Rejected(f"a {w.kind} bet may not be removed or reduced after its point ({w.number}) "
                           f"is established", prof.cite(f"removal_line.{w.kind}", prof.cite("removal_line")))
        if w.kind in prof.s.removal.removed_whole_only and amount is not None and amount != w.amount:
            raise Rejected(f"a {w.kind} bet, once made, shall not be reduced (it may be removed whole)",
                           prof.cite("removal_fixed"))
        if amount is not None and amount > w.amount:
            raise Rejected(f"cannot reduce a {w.amount}-cent {w.kind} bet by {amount}",
                           prof.cite("removal", prof.cite("removal_line")))
        left = w.amount - (amount or w.amount)
        vig_left = vig_for(w.kind, left, w.number, prof) if (left and w.vig_paid) else 0
        refund = (w.amount - left) + (w.vig_paid - vig_left)
        dropped = [w] if left == 0 else []
        if left == 0 and w.kind in ("pass", "dont_pass", "come", "dont_come") and w.number is not None:
            for o in self.wagers:  # its odds come down with it
                if o.player == w.player and o.kind == "odds" and o.base == w.kind and o.number == w.number:
                    dropped.append(o)
                    refund += o.amount
        new = tuple(x for x in self.wagers if x not in dropped)
        if left:
            new = tuple(x.with_(amount=left, vig_paid=vig_left) if x is w else x for x in new)
        if w.kind in prof.s.removal.no_increase_after_reduce:   # (c)(4): "at any time", come-out too
            self.reduced = self.reduced | {(w.player, w.kind, w.number if w.kind == "dont_come" else None)}
        self.wagers = new
        return w, refund

    def set_working(self, req: dict, on: bool) -> Wager:
        """Place an "on" (on=True) or "off" (on=False) lammer on a wager ((c)(5))."""
        prof = self.prof
        w = self._lookup(req)
        if not (w.kind in prof.s.working.callable_off or (on and default_off_on_come_out(w, prof))):
            raise Rejected(f"{w.kind} takes no on/off lammer", prof.cite("working"))
        new = w.with_(working=bool(on))
        self.wagers = tuple(new if x is w else x for x in self.wagers)
        return new

    def shooter_change(self, change: str = "voluntary") -> None:
        """A voluntary or compulsory relinquishment of the dice: a new shooter; pending fire
        bets are carried to the successor ((j)(1)(ii)).

        Raises:
            ValueError: ``change`` is neither "voluntary" nor "compulsory".
            Rejected: a voluntary change while a point is pending under a profile whose
                ``shooter_change`` is "decision" (9 NYCRR 4620.3(c)(5)), unless the shooter has
                not thrown yet: "Any player may ... refuse to shoot in the player's turn"
                (4620.3(c)(6); N.J.A.C. 13:47-20.25(g)7).
        """
        if change not in ("voluntary", "compulsory"):
            raise ValueError(f"shooter change must be 'voluntary' or 'compulsory', not {change!r}")
        if change == "voluntary" and self.prof.s.shooter_change == "decision" and self.state.point is not None \
                and self.state.shooter_rolls > 0:
            raise Rejected(f"the shooter passes the dice on completion of a decision, not while the point "
                           f"{self.state.point} is pending", self.prof.cite("shooter_change"))
        self.state = change_shooter(self.state)

    def decide_only(self, on: bool) -> None:
        """Start (``on``) or end the rolls made only to decide the remaining come and don't come
        wagers, the on/off marker OFF on the don't pass line (9 NYCRR 5324.52(i)(2); N.J.A.C.
        13:69F-1.11(b)). While on, no point is established and pass / don't pass bets are
        refused; they end when no come or don't come wager on a number remains (a 7 decides
        them all) or with a new shooter.

        Raises:
            Rejected: started while a point is established, with no come or don't come wager
                on a come number left to decide ("and other wagers remain on the table with
                respect to come and/or don't come numbers", (i)(2)), or with a pass or don't
                pass bet on the layout ("the shooter elects not to place a pass or don't pass
                bet"), or when the shooter's last decision was not a point made ("after making
                the come out point": not after a come-out natural or craps, nor for a new
                shooter; ``GameState.point_made``).
        """
        if on and self.state.point is None and not _come_numbers(self.wagers):
            raise Rejected("no come or don't come wager on a number remains to be decided",
                           self.prof.cite("decide_only", _DECIDE_ONLY))
        if on and any(w.kind in ("pass", "dont_pass") for w in self.wagers):
            # "the shooter elects not to place a pass or don't pass bet": with one on the
            # layout the game proceeds (a decide-only roll would move it onto a number)
            raise Rejected("a pass or don't pass bet is on the layout: the game proceeds",
                           self.prof.cite("decide_only", _DECIDE_ONLY))
        try:
            self.state = set_decide_only(self.state, on)
        except ValueError as exc:
            raise Rejected(str(exc), self.prof.cite("decide_only", _DECIDE_ONLY)) from None

    def roll(self, dice, seq: int | None = None) -> list[Settlement]:
        """Settle a roll; returns the decided wagers."""
        seq = self.state.rolls + 1 if seq is None else seq
        t = sum(_check_dice(dice))
        before = self.state
        self.state, self.wagers, out, outcome = settle(before, self.wagers, tuple(dice), self.prof, seq)
        if self.reduced:  # (c)(4) marks end with the decision of the reduced bet
            keep = set()
            for (p, k, n) in self.reduced:
                if k == "dont_pass" and outcome in ("natural", "craps", "point-made", "seven-out"):
                    continue
                if k == "dont_come" and (n is None or t in (7, n)):   # in the come box: the next roll
                    continue
                keep.add((p, k, n))
            self.reduced = frozenset(keep)
        return out

    # ---- snapshot ------------------------------------------------------------------
    def snapshot(self) -> dict:
        """Plain-JSON state of the session (for the ledger)."""
        s = self.state
        return {"state": {"point": s.point, "shooter": s.shooter, "shooter_rolls": s.shooter_rolls,
                          "rolls": s.rolls, "decide_only": s.decide_only, "point_made": s.point_made,
                          "come_out_thrown": s.come_out_thrown},
                "wagers": [w.to_json() for w in self.wagers], "next_wid": self.next_wid,
                "reduced": [list(r) for r in sorted(self.reduced, key=repr)]}

    @classmethod
    def from_snapshot(cls, prof, snap: dict) -> "Table":
        """The session :meth:`snapshot` wrote, with profile ``prof`` (the ledger reopening a file). A
        snapshot from before ``come_out_thrown`` existed counts the come-out as thrown when the
        shooter has rolled. The values are not validated: the ledger wrote them in a committed
        transaction.

        Raises:
            KeyError: ``state``, ``wagers`` or ``next_wid`` (or a wager's field) is missing.
            TypeError: ``state`` has a key :class:`GameState` does not know.
        """
        state = dict(snap["state"])
        # a snapshot from before ``come_out_thrown``: any roll by the shooter counted as one
        state.setdefault("come_out_thrown", state.get("shooter_rolls", 0) > 0)
        return cls(prof, GameState(**state), tuple(Wager.from_json(w) for w in snap["wagers"]),
                   snap["next_wid"], frozenset(tuple(r) for r in snap.get("reduced", [])))
