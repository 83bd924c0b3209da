"""Money and payout odds: integer cents, exact ratios, documented rounding.

Every amount in this package is an ``int`` number of cents. Payout odds are
``fractions.Fraction`` values meaning "to 1" (profit per unit staked): 9 to 5 is
``Fraction(9, 5)``. The texts write odds two ways:

* "to" odds (9 NYCRR 5324.52(d)(1), N.J.A.C. 13:47-20.25(i)1): "9 to 5", "9:5" -> 9/5.
* "for" odds (9 NYCRR 4620.3(e)(8)-(11)): "5 for 1" returns 5 including the unit
  staked, which is 4 to 1 -> 4/1.

Rounding rules: a payout that does not divide evenly is rounded UP to a whole
multiple of the profile's ``payout_unit_cents`` (1 = to the cent, 25 = to the
quarter, 100 = to the dollar), so it is never below the odds listed (9 NYCRR
5324.52(d)(1): "at no less than the odds listed"; N.J.A.C. 13:47-20.25(i)2). The
vigorish is rounded DOWN to ``vig.unit_cents`` so that it never exceeds the five
percent cap of 9 NYCRR 5324.52(e)(1)-(2) and N.J.A.C. 13:47-20.25(j)-(k).
"""
from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["parse_ratio", "pay", "floor_to_unit", "ceil_to_unit", "format_ratio"]

_RATIO = re.compile(r"^\s*(\d+)\s*(:|to|for|-)\s*(\d+)\s*$", re.IGNORECASE)


def parse_ratio(text: str | int, style: str = "to") -> Fraction:
    """Parse payout odds as written in a regulation into a "to 1" Fraction.

    Args:
        text: "9:5", "9 to 5", "9-5", "5 for 1", or an int (n to 1).
        style: how "A:B"/"A-B" are read when the text does not say: "to" or "for".
            An explicit "to" or "for" in the text wins.

    Returns:
        Fraction: profit per unit staked (e.g. "5 for 1" -> 4, "7:6" -> 7/6).

    Raises:
        ValueError: the text is not odds, odds that pay nothing ("0:1", 0), or a "for" ratio
            that does not return more than the stake.
    """
    if isinstance(text, bool):
        raise ValueError(f"not payout odds: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"negative payout odds: {text!r}")
        if text == 0:
            raise ValueError(f"payout odds of 0 pay nothing on a win: {text!r}")
        return Fraction(text)
    m = _RATIO.match(str(text))
    if not m:
        raise ValueError(f"not payout odds (want 'A:B', 'A to B' or 'A for B'): {text!r}")
    a, sep, b = int(m.group(1)), m.group(2).lower(), int(m.group(3))
    if b == 0:
        raise ValueError(f"payout odds with a zero denominator: {text!r}")
    kind = sep if sep in ("to", "for") else style
    if kind == "for":
        if a <= b:
            raise ValueError(f"'for' odds must return more than the stake: {text!r}")
        return Fraction(a - b, b)
    if kind != "to":
        raise ValueError(f"odds style must be 'to' or 'for', not {style!r}")
    if a == 0:
        raise ValueError(f"payout odds of 0 pay nothing on a win: {text!r}")
    return Fraction(a, b)


def floor_to_unit(value: Fraction | int, unit_cents: int) -> int:
    """Round a non-negative amount of cents DOWN to a multiple of ``unit_cents``."""
    if unit_cents < 1:
        raise ValueError(f"unit must be >= 1 cent, not {unit_cents}")
    v = Fraction(value)
    return int((v.numerator // (v.denominator * unit_cents)) * unit_cents)


def ceil_to_unit(value: Fraction | int, unit_cents: int) -> int:
    """Round a non-negative amount of cents UP to a multiple of ``unit_cents``."""
    if unit_cents < 1:
        raise ValueError(f"unit must be >= 1 cent, not {unit_cents}")
    v = Fraction(value)
    return int(-((-v.numerator) // (v.denominator * unit_cents)) * unit_cents)


def pay(stake_cents: int, ratio: Fraction, unit_cents: int = 1) -> int:
    """Winnings (excluding the stake) of ``stake_cents`` at ``ratio`` to 1, in cents, rounded UP
    to ``unit_cents``: a gaming facility "shall pay out winning wagers ... at no less than the
    odds listed" (9 NYCRR 5324.52(d)(1), (e)(1)-(2) for buy and lay; N.J.A.C. 13:47-20.25(i)2:
    not "at less than the odds listed"), so a payout that does not divide evenly is never cut.

    >>> pay(500, Fraction(7, 6))       # $5 place 6 at 7:6 -> $5.83 1/3, paid 584 cents
    584
    >>> pay(600, Fraction(7, 6))       # $6 place 6 -> $7.00 exactly
    700
    >>> pay(500, Fraction(7, 6), 100)  # paid in whole dollars -> $6
    600
    """
    return ceil_to_unit(Fraction(stake_cents) * ratio, unit_cents)


def format_ratio(r: Fraction) -> str:
    """'9:5' style text of a to-1 ratio."""
    return f"{r.numerator}:{r.denominator}"
