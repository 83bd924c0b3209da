"""Wager types as data: canonical names, the fields each needs, and the open-wager record.

The catalogue follows 9 NYCRR 5324.52(b)(1)-(41) (and the same wagers in the other
texts); ``docs/wagers.md`` is the user-facing list. A wager on the layout is a frozen
:class:`Wager` value; settling returns new values, never mutates.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

__all__ = ["KINDS", "POINTS", "HOPS", "HOT_ROLLER_COMBOS", "Wager", "canonical_kind", "Kind",
           "BONUS_NUMBERS", "ODDS_BASES"]

POINTS = (4, 5, 6, 8, 9, 10)
#: hop bets listed in 9 NYCRR 5324.52(b)(22)-(38): 4 hard + 13 easy (the issue says "15";
#: the text lists 17 - the other 4 combinations are craps 2, craps 3, 11 and craps 12).
HOPS = ((2, 2), (3, 3), (4, 4), (5, 5),
        (1, 3), (1, 4), (2, 3), (1, 5), (2, 4), (1, 6), (2, 5), (3, 4), (2, 6), (3, 5), (3, 6), (4, 5), (4, 6))
ODDS_BASES = ("pass", "dont_pass", "come", "dont_come")
#: bonus craps numbers, 9 NYCRR 5324.52(b)(41)
BONUS_NUMBERS = {
    "all_small": frozenset((2, 3, 4, 5, 6)),
    "all_tall": frozenset((8, 9, 10, 11, 12)),
    "make_em_all": frozenset((2, 3, 4, 5, 6, 8, 9, 10, 11, 12)),
}
#: every combination (unordered dice) of each point, for the hot roller wager (rules text 002, 2(oo))
HOT_ROLLER_COMBOS = {
    p: tuple((a, p - a) for a in range(1, 7) if 1 <= p - a <= 6 and a <= p - a) for p in POINTS
}


@dataclass(frozen=True)
class Kind:
    """One wager type: its canonical name, required fields, allowed numbers, source paragraph."""

    name: str
    fields: tuple[str, ...]          # subset of ("number", "base", "dice")
    numbers: tuple[int, ...] = ()     # allowed values of "number" (odds: checked against the base)
    source: str = ""                  # 9 NYCRR 5324.52 paragraph (or other text)
    one_roll: bool = False


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("pass", (), source="5324.52(b)(1)"),
    Kind("dont_pass", (), source="5324.52(b)(2)"),
    Kind("come", (), source="5324.52(b)(3)"),
    Kind("dont_come", (), source="5324.52(b)(4)"),
    Kind("odds", ("base",), POINTS, source="5324.52(e)(4)"),
    Kind("place", ("number",), POINTS, source="5324.52(b)(5)"),
    Kind("place_lose", ("number",), POINTS, source="5324.52(b)(6)"),
    Kind("buy", ("number",), POINTS, source="5324.52(e)(1)"),
    Kind("lay", ("number",), POINTS, source="5324.52(e)(2)"),
    Kind("big6", (), source="4620.3(e)(7)"),
    Kind("big8", (), source="4620.3(e)(7)"),
    Kind("hardway", ("number",), (4, 6, 8, 10), source="5324.52(b)(7)-(10)"),
    Kind("field", (), source="5324.52(b)(11)", one_roll=True),
    Kind("any7", (), source="5324.52(b)(12)", one_roll=True),
    Kind("any_craps", (), source="5324.52(b)(13)", one_roll=True),
    Kind("craps2", (), source="5324.52(b)(14)", one_roll=True),
    Kind("craps3", (), source="5324.52(b)(15)", one_roll=True),
    Kind("craps12", (), source="5324.52(b)(16)", one_roll=True),
    Kind("eleven", (), source="5324.52(b)(17)", one_roll=True),
    Kind("c_and_e", (), source="5324.52(b)(18)", one_roll=True),
    Kind("horn", (), source="5324.52(b)(19)", one_roll=True),
    Kind("horn_high", ("number",), (2, 3, 11, 12), source="5324.52(b)(20)", one_roll=True),
    Kind("whirl", (), source="5324.52(b)(21)", one_roll=True),
    Kind("hop", ("dice",), source="5324.52(b)(22)-(38)", one_roll=True),
    Kind("six_seven_eight", (), source="5324.52(b)(39)", one_roll=True),
    Kind("fire", (), source="5324.52(b)(40)"),
    Kind("all_small", (), source="5324.52(b)(41)"),
    Kind("all_tall", (), source="5324.52(b)(41)"),
    Kind("make_em_all", (), source="5324.52(b)(41)"),
    Kind("hot_roller", (), source="rules text 002, 2(oo)"),
)}

_ALIASES = {
    "dontpass": "dont_pass", "dont_pass_line": "dont_pass", "pass_line": "pass", "dontcome": "dont_come",
    "place_to_win": "place", "place_win": "place", "place_to_lose": "place_lose", "placelose": "place_lose",
    "big_6": "big6", "big_8": "big8", "big_six": "big6", "big_eight": "big8",
    "hard": "hardway", "hardways": "hardway", "hard_way": "hardway",
    "any_seven": "any7", "any_7": "any7", "seven": "any7", "big_red": "any7",
    "anycraps": "any_craps", "craps": "any_craps",
    "craps_2": "craps2", "craps_two": "craps2", "two": "craps2", "aces": "craps2", "ace_ace": "craps2",
    "craps_3": "craps3", "craps_three": "craps3", "three": "craps3", "ace_deuce": "craps3",
    "craps_12": "craps12", "craps_twelve": "craps12", "twelve": "craps12", "boxcars": "craps12",
    "11": "eleven", "yo": "eleven", "eleven_in_one_roll": "eleven", "11_in_one_roll": "eleven",
    "ce": "c_and_e", "c&e": "c_and_e", "c_e": "c_and_e", "craps_eleven": "c_and_e", "craps_11": "c_and_e",
    "hornhigh": "horn_high", "world": "whirl",
    "6_7_8": "six_seven_eight", "678": "six_seven_eight",
    "fire_bet": "fire", "small": "all_small", "tall": "all_tall", "all": "make_em_all",
    "make_them_all": "make_em_all", "makeemall": "make_em_all", "hotroller": "hot_roller",
}


def canonical_kind(name: str) -> str | None:
    """The canonical wager name for a name as typed (case, '-', ' ' and apostrophes ignored); None if unknown."""
    if not isinstance(name, str):
        return None
    n = re.sub(r"[\s\-]+", "_", name.strip().lower().replace("'", "").replace("\u2019", ""))
    if n in KINDS:
        return n
    return _ALIASES.get(n)


@dataclass(frozen=True)
class Wager:
    """A wager on the layout (plain value).

    Attributes:
        wid: unique id within a table session (int).
        player: player id.
        kind: canonical wager name (a key of :data:`KINDS`).
        amount: stake in cents (> 0).
        number: place/buy/lay/hardway/horn-high number; for pass/come/don't the point the
            bet travelled to (None while on the line / in the come box); for odds the point.
        base: for odds: "pass", "dont_pass", "come" or "dont_come".
        dice: for hop bets: the (low, high) combination.
        working: None = the profile default for the come-out; True = "on" lammer; False = "off".
        vig_paid: vigorish already collected at placement (cents).
        progress: fire: points made; bonus craps: numbers thrown; hot roller: combinations thrown.
        epoch: fire / bonus craps / hot roller: the shooter the bet was made for (a bet carried
            to a successor shooter, 5324.52(j)(1)(ii), keeps its epoch).
    """

    wid: int
    player: str
    kind: str
    amount: int
    number: int | None = None
    base: str | None = None
    dice: tuple[int, int] | None = None
    working: bool | None = None
    vig_paid: int = 0
    progress: frozenset = field(default_factory=frozenset)
    epoch: int = 0

    def key(self) -> tuple:
        """Identity on the layout: bets with the same key merge (e.g. two place-6 bets)."""
        return (self.player, self.kind, self.number, self.base, self.dice, self.epoch)

    def with_(self, **kw) -> "Wager":
        """A copy with the fields in ``kw`` replaced (``dataclasses.replace``); the wager is not changed.

        Raises:
            TypeError: a name in ``kw`` that is not a field.
        """
        return replace(self, **kw)

    def to_json(self) -> dict:
        """The wager as plain JSON values for the ledger's snapshot (``Table.snapshot``): every field
        by name, ``amount`` and ``vig_paid`` in cents, ``dice`` and each ``progress`` combination as
        lists (``progress`` sorted). :meth:`from_json` reverses it.
        """
        d = {"wid": self.wid, "player": self.player, "kind": self.kind, "amount": self.amount,
             "number": self.number, "base": self.base, "dice": list(self.dice) if self.dice else None,
             "working": self.working, "vig_paid": self.vig_paid,
             "progress": sorted(list(x) if isinstance(x, tuple) else x for x in self.progress),
             "epoch": self.epoch}
        return d

    @staticmethod
    def from_json(d: dict) -> "Wager":
        """The wager :meth:`to_json` wrote (lists back to tuples; ``number``, ``base``, ``dice``,
        ``working``, ``vig_paid``, ``progress`` and ``epoch`` default when absent, as in snapshots
        written before they existed). The values are not validated: the ledger wrote them.

        Raises:
            KeyError: ``wid``, ``player``, ``kind`` or ``amount`` is missing.
            TypeError: ``dice`` or ``progress`` is not iterable.
        """
        prog = frozenset(tuple(x) if isinstance(x, list) else x for x in d.get("progress", []))
        return Wager(d["wid"], d["player"], d["kind"], d["amount"], d.get("number"), d.get("base"),
                     tuple(d["dice"]) if d.get("dice") else None, d.get("working"), d.get("vig_paid", 0), prog,
                     d.get("epoch", 0))
