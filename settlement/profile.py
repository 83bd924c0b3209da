"""Jurisdiction profiles: the ``[settlement]`` table of ``config/profiles/<name>.toml``.

Everything that differs between the regulations is data here: which wagers are
permitted, pay tables (as the text writes them, "to" or "for"), the don't bar,
what works on the come-out (9 NYCRR 5324.52(c)(5)), what may be removed
((c)(3)-(4)), odds limits ((e)(4)), table limits, bet units, vig and rounding.
Other top-level tables of the same file (e.g. ``[irregularities]``) are ignored.

Usage::

    from settlement.profile import load_profile
    prof = load_profile("ny-5324")          # config/profiles/ny-5324.toml
    prof.pays.place[6]                      # Fraction(7, 6)

Errors: :class:`ProfileError` naming the file and the offending key
(e.g. ``settlement.pays.plce: Extra inputs are not permitted``).
"""
from __future__ import annotations

import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError, model_validator

from .money import parse_ratio
from .wagers import KINDS, POINTS

__all__ = ["Profile", "ProfileError", "load_profile", "profile_path", "PROFILES_DIR"]

PROFILES_DIR = Path(__file__).resolve().parents[1] / "config" / "profiles"


class ProfileError(ValueError):
    """A profile file is missing, unreadable or has a wrong key or value (message names it)."""


def _frac(v):
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (int, str)) and not isinstance(v, bool):
        try:
            return Fraction(v)
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"not a fraction: {v!r}") from exc
    raise ValueError(f"not a fraction: {v!r}")


Frac = Annotated[Fraction, BeforeValidator(_frac)]
# pay strings are kept as text here and parsed with the profile's odds_style after load
PayText = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, int) and not isinstance(v, bool) else v)]


#: a dice total as a table key: TOML writes keys as strings ("6" in ``place = { 6 = "7:6" }``)
Number = Annotated[int, Strict(False)]
#: a positive whole number (cents, units): 0 or less would turn a rule off or make it refuse everything
Positive = Annotated[int, Field(ge=1)]


class _Strict(BaseModel):
    # values are not converted: 500, not "500" or 500.0; true, not "yes" (as config/table.toml)
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, strict=True)


class Bar(_Strict):
    """Don't pass / don't come bar (9 NYCRR 5324.52(b)(2)(v), (b)(4)(v); 4620.3(e)(2))."""

    number: Literal[2, 3, 12]
    comeout_wins: list[int] = Field(description="come-out totals on which don't pass / don't come win")
    dont_pass_result: Literal["push", "void"]
    dont_come_result: Literal["push", "void"]

    @model_validator(mode="after")
    def _split_craps(self):
        """Every come-out craps total (2, 3, 12) is either a win of the don't or the bar, once: a
        total left out has no come-out result for the don't (``settlement.rules._line``).

        Raises:
            ValueError: naming ``comeout_wins`` and ``number`` as given.
        """
        wins = set(self.comeout_wins)
        if len(wins) != len(self.comeout_wins) or self.number in wins or wins | {self.number} != {2, 3, 12}:
            raise ValueError(f"comeout_wins {self.comeout_wins} and the bar number {self.number} must split "
                             f"the craps totals 2, 3 and 12 between them, each once "
                             f"(e.g. comeout_wins = [2, 3] with number = 12)")
        return self


class Pays(_Strict):
    """Pay tables as written in the text ("to" or "for" per ``odds_style``). Absent = not offered."""

    line: PayText | None = None
    place: dict[Number, PayText] | None = None
    place_lose: dict[Number, PayText] | None = None
    buy: dict[Number, PayText] | None = None
    lay: dict[Number, PayText] | None = None
    take_odds: dict[Number, PayText] | None = None
    lay_odds: dict[Number, PayText] | None = None
    hardway: dict[Number, PayText] | None = None
    field: dict[Number, PayText] | None = None
    any7: PayText | None = None
    any_craps: PayText | None = None
    craps2: PayText | None = None
    craps3: PayText | None = None
    craps12: PayText | None = None
    eleven: PayText | None = None
    big6: PayText | None = None
    big8: PayText | None = None
    hop_hard: PayText | None = None
    hop_easy: PayText | None = None
    six_seven_eight: PayText | None = None
    six_seven_eight_hard: PayText | None = None
    fire: dict[Number, PayText] | None = None
    all_small: PayText | None = None
    all_tall: PayText | None = None
    make_em_all: PayText | None = None
    hot_roller: dict[Number, PayText] | None = None


class WagerLimit(_Strict):
    """Limits of one wager (``[settlement.limits.wager.<name>]``), in cents, over the table's
    (:class:`Limits`). ``min_cents`` / ``max_cents`` replace the table minimum / maximum for it
    (odds have neither unless given here: their limit is the odds multiple, :class:`OddsLimits`);
    ``max_cents_by_number`` replaces the maximum on those numbers (place 6 and 8 up to $6, 9 NYCRR
    4620.3(e)(4)); ``step_cents``: each amount placed must be a multiple of it (the fire bet in
    whole dollars, 5324.52(j)(1)(vii)). The minimum and maximum apply to the wager's total
    (merged bets); every value >= 1.

    Raises:
        pydantic.ValidationError: a value below 1, an unknown key, or ``min_cents`` above
            ``max_cents`` (:func:`load_profile` reports it as :class:`ProfileError` naming the key).
    """

    min_cents: int | None = Field(default=None, ge=1)
    max_cents: int | None = Field(default=None, ge=1)
    step_cents: int | None = Field(default=None, ge=1)
    max_cents_by_number: dict[Number, Positive] = {}

    @model_validator(mode="after")
    def _min_not_above_max(self):
        """Raises ValueError when ``min_cents`` is above ``max_cents`` (no wager could be placed)."""
        if self.min_cents is not None and self.max_cents is not None and self.min_cents > self.max_cents:
            raise ValueError(f"min_cents {self.min_cents} is above max_cents {self.max_cents}")
        return self


class Limits(_Strict):
    """Table minimum and maximum (per wager, cents) and per-wager overrides."""

    min_cents: int = Field(ge=1)
    max_cents: int = Field(ge=1)
    wager: dict[str, WagerLimit] = {}

    @model_validator(mode="after")
    def _min_not_above_max(self):
        """Raises ValueError when the table minimum is above its maximum (every wager refused)."""
        if self.min_cents > self.max_cents:
            raise ValueError(f"min_cents {self.min_cents} is above max_cents {self.max_cents}")
        return self


class OddsLimits(_Strict):
    """Odds limits (9 NYCRR 5324.52(e)(4)): max odds = multiple x flat bet, optional cap in cents."""

    take_multiple: dict[Number, Frac]
    lay_multiple: dict[Number, Frac]
    take_max_cents: dict[Number, Positive] = {}
    lay_max_cents: dict[Number, Positive] = {}

    @model_validator(mode="after")
    def _positive_multiples(self):
        """Raises ValueError naming the table and the number whose multiple is not above 0."""
        for fld in ("take_multiple", "lay_multiple"):
            bad = {n: str(m) for n, m in getattr(self, fld).items() if m <= 0}
            if bad:
                raise ValueError(f"{fld}: the odds multiple must be above 0, got {bad}")
        return self


class Vig(_Strict):
    """Vigorish on buy and lay bets (9 NYCRR 5324.52(e)(1)-(3); N.J.A.C. 13:47-20.25(j)-(l))."""

    rate: Frac
    buy_when: Literal["placed", "win"]
    lay_when: Literal["placed", "win"]
    lay_base: Literal["wager", "win"]
    unit_cents: int = Field(default=1, ge=1)


class Removal(_Strict):
    """Removal and reduction (9 NYCRR 5324.52(c)(3)-(4))."""

    locked_after_point: list[str]
    #: never reduced, increased or removed before their decision ((c)(3)(ii): the fire bet)
    never_changed: list[str]
    no_increase_after_reduce: list[str]
    #: never reduced or increased, but may be removed whole before a roll that decides them
    #: ((c)(3)(iii): bonus craps; unlike the fire bet, the text does not forbid removal)
    removed_whole_only: list[str] = []


class Working(_Strict):
    """On/off lammers (9 NYCRR 5324.52(c)(5))."""

    off_on_come_out: list[str]
    callable_off: list[str]


class Settlement(_Strict):
    """The ``[settlement]`` table of a profile file, validated strictly (no unknown key, no
    conversion: ``500``, not ``"500"``). ``citation`` names the regulation (9 NYCRR 5324.52,
    9 NYCRR 4620.3, N.J.A.C. 13:47-20.25 or rules text 002); ``permitted`` the wagers offered;
    ``pays`` the pay tables as the text writes them (``odds_style`` "to" or "for"); amounts
    (``payout_unit_cents``, ``bet_unit_cents``, limits) in cents; ``units`` wagers made in
    multiples of that many bet units; ``bar``, ``odds``, ``vig``, ``removal``, ``working``,
    ``shooter_change`` and ``game`` the rules of the text (see each model); ``cite`` the
    paragraph given with each refusal and settlement record.

    Raises:
        pydantic.ValidationError: a wrong key or value, or (checked together) an unknown wager
            name in any list, the fire bet permitted in mini-craps (5324.52(b)(40)), a permitted
            wager without its pay table, odds without ``[settlement.odds]``, buy or lay without
            ``[settlement.vig]``, or a required ``cite`` key missing or an unknown one;
            :func:`load_profile` reports it as :class:`ProfileError` naming the file and key.
    """

    citation: str
    odds_style: Literal["to", "for"] = "to"
    permitted: list[str]
    payout_unit_cents: int = Field(default=1, ge=1)
    bet_unit_cents: int = Field(default=100, ge=1)
    units: dict[str, Positive] = {}
    place_not_on_point: bool = False
    #: when a shooter may pass the dice voluntarily: "any-roll" (9 NYCRR 5324.52(i)(1),
    #: N.J.A.C. 13:69F-1.11(a) "after any roll") or "decision" (9 NYCRR 4620.3(c)(5),
    #: N.J.A.C. 13:47-20.25(g)6 "on completion of a decision": not while a point is pending)
    shooter_change: Literal["any-roll", "decision"] = "any-roll"
    #: the game the table plays: the fire bet "may only be made in the game of craps"
    #: (9 NYCRR 5324.52(b)(40); rules text 002, 2), so a "mini-craps" profile may not permit it
    game: Literal["craps", "mini-craps"] = "craps"
    stays_up: list[str] = []
    bar: Bar
    pays: Pays
    limits: Limits
    odds: OddsLimits | None = None
    vig: Vig | None = None
    removal: Removal
    working: Working
    cite: dict[str, str]

    @model_validator(mode="after")
    def _check(self):
        unknown = [k for k in self.permitted if k not in KINDS]
        if unknown:
            raise ValueError(f"permitted: unknown wager name(s) {unknown}; known: {sorted(KINDS)}")
        for group, names in (("units", self.units), ("stays_up", self.stays_up),
                             ("limits.wager", self.limits.wager),
                             ("removal.locked_after_point", self.removal.locked_after_point),
                             ("removal.never_changed", self.removal.never_changed),
                             ("removal.removed_whole_only", self.removal.removed_whole_only),
                             ("removal.no_increase_after_reduce", self.removal.no_increase_after_reduce),
                             ("working.callable_off", self.working.callable_off)):
            bad = [k for k in names if k not in KINDS]
            if bad:
                raise ValueError(f"{group}: unknown wager name(s) {bad}")
        if self.game == "mini-craps" and "fire" in self.permitted:
            raise ValueError("permitted: the fire bet may only be made in the game of craps, not mini-craps "
                             "(9 NYCRR 5324.52(b)(40); rules text 002, 2)")
        bad = [k for k in self.working.off_on_come_out if k not in KINDS and k != "come_odds"]
        if bad:
            raise ValueError(f"working.off_on_come_out: unknown wager name(s) {bad}")
        need = {"odds": ("take_odds", "lay_odds"), "big6": ("big6",), "big8": ("big8",),
                "pass": ("line",), "dont_pass": ("line",), "come": ("line",), "dont_come": ("line",),
                "hop": ("hop_hard", "hop_easy"), "six_seven_eight": ("six_seven_eight", "six_seven_eight_hard"),
                "c_and_e": ("any_craps", "eleven"), "horn": ("craps2", "craps3", "eleven", "craps12"),
                "horn_high": ("craps2", "craps3", "eleven", "craps12"),
                "whirl": ("craps2", "craps3", "eleven", "craps12", "any7")}
        for k in self.permitted:
            if k == "hot_roller":  # may be permitted without a pay table (text 002 gives none): refused at placement
                continue
            for attr in need.get(k, (k,)):
                if getattr(self.pays, attr, None) is None:
                    raise ValueError(f"pays.{attr}: missing, but wager {k!r} is permitted")
        if "odds" in self.permitted and self.odds is None:
            raise ValueError("odds: missing [settlement.odds] limits, but 'odds' is permitted")
        if ("buy" in self.permitted or "lay" in self.permitted) and self.vig is None:
            raise ValueError("vig: missing [settlement.vig], but buy or lay is permitted")
        missing = [k for k in REQUIRED_CITES if k not in self.cite]
        if missing:
            raise ValueError(f"cite: missing citation(s) for {missing}")
        unknown = [k for k in self.cite if k not in CITE_KEYS]
        if unknown:
            # a misspelt key would fall back silently to the broader citation (Profile.cite)
            raise ValueError(f"cite: unknown key(s) {unknown}; keys: the rules {sorted(_CITE_RULES)}, "
                             f"a wager name, or pays.<wager>, limits.<wager>, removal_line.<wager>")
        return self


#: rule names every profile must cite (used in rejection reasons and settlement records)
REQUIRED_CITES = ("permitted", "limits", "units", "odds", "removal_line", "removal_fixed",
                  "dont_no_increase", "working", "pays")
#: every rule the engine cites (``Profile.cite``): the required ones and these
_CITE_RULES = frozenset(REQUIRED_CITES) | {"decide_only", "hop", "place", "place_on_point", "shooter_change",
                                           "removal"}
#: every key a ``[settlement.cite]`` table may give: a rule, a wager name, or a rule of one wager
#: (``pays.<wager>``, ``limits.<wager>``, ``removal_line.<wager>``)
CITE_KEYS = _CITE_RULES | set(KINDS) | {f"{rule}.{k}" for rule in ("pays", "limits", "removal_line") for k in KINDS}


class Profile:
    """A validated profile with pay tables parsed into exact "to 1" Fractions.

    Attributes:
        name: profile name (file stem).
        s: the validated :class:`Settlement` model (raw text pay tables, limits, rules).
        pays: namespace-like dict access: ``pays.place[6] == Fraction(7, 6)``.
    """

    def __init__(self, name: str, settlement: Settlement, source: Path | None = None):
        self.name = name
        self.s = settlement
        self.source = source
        style = settlement.odds_style
        # messages name the file when there is one (as load_profile's do), else the name
        name = str(source) if source is not None else name
        parsed: dict[str, object] = {}
        for field, value in settlement.pays:
            if value is None:
                parsed[field] = None
            elif isinstance(value, dict):
                try:
                    parsed[field] = {int(k): parse_ratio(v, style) for k, v in value.items()}
                except ValueError as exc:
                    raise ProfileError(f"{name}: settlement.pays.{field}: {exc}") from exc
            else:
                try:
                    parsed[field] = parse_ratio(value, style)
                except ValueError as exc:
                    raise ProfileError(f"{name}: settlement.pays.{field}: {exc}") from exc
        self.pays = _Pays(parsed)
        # Tables that must list exactly these numbers: every point for place, place-to-lose, buy,
        # lay and odds; the four hardways; the field wins on every one of 2, 3, 4, 9, 10, 11 and 12
        # (9 NYCRR 5324.52(b)(11), 4620.3(e)(6); N.J.A.C. 13:47-20.25(h)1.xi; rules text 002, 2(k)):
        # a number missing would settle as a loss; the fire bet wins with at least four different
        # points, paid for the highest of four, five or six (5324.52(b)(40), (d)(4) tables A and B;
        # rules text 002, 2(nn)).
        points = set(POINTS)
        for fld, table, exact, cite in (("place", self.pays.place, points, ""),
                                        ("place_lose", self.pays.place_lose, points, ""),
                                        ("buy", self.pays.buy, points, ""), ("lay", self.pays.lay, points, ""),
                                        ("take_odds", self.pays.take_odds, points, ""),
                                        ("lay_odds", self.pays.lay_odds, points, ""),
                                        ("hardway", self.pays.hardway, {4, 6, 8, 10}, ""),
                                        ("field", self.pays.field, {2, 3, 4, 9, 10, 11, 12},
                                         " (the field wins on each: 9 NYCRR 5324.52(b)(11))"),
                                        ("fire", self.pays.fire, {4, 5, 6}, " (9 NYCRR 5324.52(b)(40), (d)(4))")):
            if table is not None and set(table) != exact:
                raise ProfileError(f"{name}: settlement.pays.{fld}: needs exactly the numbers {sorted(exact)}{cite}")
        # the hot roller needs at least two points completed (rules text 002, 2(oo))
        if self.pays.hot_roller is not None and not set(self.pays.hot_roller) <= {2, 3, 4, 5, 6}:
            raise ProfileError(f"{name}: settlement.pays.hot_roller: numbers "
                               f"{sorted(set(self.pays.hot_roller) - {2, 3, 4, 5, 6})} are not allowed "
                               f"(allowed: [2, 3, 4, 5, 6])")
        if settlement.odds is not None:
            for fld in ("take_multiple", "lay_multiple"):
                if set(getattr(settlement.odds, fld)) != set(POINTS):
                    raise ProfileError(f"{name}: settlement.odds.{fld}: needs exactly the numbers {POINTS}")
        self.permitted = frozenset(settlement.permitted)
        if settlement.vig is not None:
            _check_vig_cap(name, settlement, self.pays)

    def cite(self, key: str, default: str | None = None) -> str:
        """The citation string for a rule or wager key (falls back to the profile citation)."""
        return self.s.cite.get(key) or default or self.s.citation

    def __repr__(self) -> str:
        return f"Profile({self.name!r})"


#: the most vigorish a buy or lay may cost, as a share of the wager
VIG_CAP = Fraction(5, 100)


def _check_vig_cap(name: str, settlement: Settlement, pays) -> None:
    """Refuse a vig that could exceed five percent of a wager: "a percentage of the amount wagered
    that shall not exceed five percent of such wager" (9 NYCRR 5324.52(e)(1)-(2); N.J.A.C.
    13:47-20.25(j)); a lay's "percentage of the amount the player could win ... which in no event
    shall exceed five percent of such wager" (N.J.A.C. 13:47-20.25(k)), so a vig on the win is
    checked on the lay's largest win per unit staked.

    Raises:
        ProfileError: naming the wager, the number and the share of the wager charged.
    """
    v = settlement.vig
    rule = "9 NYCRR 5324.52(e)(1)-(2); N.J.A.C. 13:47-20.25(j)-(k)"
    if v.rate < 0:
        raise ProfileError(f"{name}: settlement.vig.rate: {v.rate} is negative")
    checks = []
    if "buy" in settlement.permitted:
        checks.append(("buy", None, v.rate))
    if "lay" in settlement.permitted:
        if v.lay_base == "wager" or pays.lay is None:
            checks.append(("lay", None, v.rate))
        else:
            checks += [("lay", n, v.rate * pays.lay[n]) for n in sorted(pays.lay)]
    for kind, n, share in checks:
        if share > VIG_CAP:
            on = f" of {n}" if n is not None else ""
            raise ProfileError(f"{name}: settlement.vig.rate: {v.rate} charges {share} of a {kind}{on}'s wager; "
                               f"the vig shall not exceed five percent of the wager ({rule})")


class _Pays:
    def __init__(self, d):
        self.__dict__.update(d)


def profile_path(name_or_path: str | Path) -> Path:
    """Resolve a profile NAME (config/profiles/NAME.toml of this repo) or a path to a file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists() or "/" in str(name_or_path):
        return p
    return PROFILES_DIR / f"{name_or_path}.toml"


def load_profile(name_or_path: str | Path) -> Profile:
    """Load and validate a profile's ``[settlement]`` table.

    Raises:
        ProfileError: file missing/unreadable, TOML syntax error, no ``[settlement]`` table,
            unknown or wrong key (the message gives its dotted path), bad pay string.
    """
    path = profile_path(name_or_path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProfileError(f"profile not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"cannot read profile {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: TOML syntax error: {exc}") from exc
    if "settlement" not in data or not isinstance(data["settlement"], dict):
        raise ProfileError(f"{path}: no [settlement] table")
    try:
        model = Settlement.model_validate(data["settlement"])
    except ValidationError as exc:
        msgs = []
        for e in exc.errors():
            loc = ".".join(str(x) for x in ("settlement", *e["loc"]))
            msgs.append(f"{loc}: {e['msg']}")
        raise ProfileError(f"{path}: " + "; ".join(msgs)) from None
    return Profile(path.stem, model, path)


def profile_from_dict(name: str, settlement: dict) -> Profile:
    """Build a profile from a plain dict of the ``[settlement]`` table (tests, overrides)."""
    try:
        return Profile(name, Settlement.model_validate(settlement))
    except ValidationError as exc:
        msgs = [".".join(str(x) for x in ("settlement", *e["loc"])) + f": {e['msg']}" for e in exc.errors()]
        raise ProfileError(f"{name}: " + "; ".join(msgs)) from None
