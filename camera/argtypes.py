"""argparse ``type`` functions shared by the command lines of every package (``craps-table run``,
``demo``, ``read``, ``decide``, ``calibrate``): a bad value is reported by argparse naming the
option, exit status 2. Here, in the package the data flow starts from, so that no command line
imports another package's command line."""
from __future__ import annotations

import argparse
import math

__all__ = ["non_negative_int", "positive_float", "positive_int"]


def _int_at_least(low: int, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse ``type`` for an integer >= 0 (a seed); a bad value is reported by argparse
    naming the option, exit status 2.

    Raises:
        argparse.ArgumentTypeError: not a whole number, or negative.
    """
    return _int_at_least(0, text)


def positive_int(text: str) -> int:
    """argparse ``type`` for an integer >= 1 (a count of rolls, verdicts, rounds); a bad
    value is reported by argparse naming the option, exit status 2.

    Raises:
        argparse.ArgumentTypeError: not a whole number, or < 1.
    """
    return _int_at_least(1, text)


def positive_float(text: str, unit: str = "") -> float:
    """argparse ``type`` for a finite number > 0 (``--side-px``; ``craps-table decide
    --timeout`` with ``unit="seconds"``); a bad value is reported by argparse naming the
    option, exit status 2.

    Raises:
        argparse.ArgumentTypeError: not a number, not finite (nan, inf), or <= 0.
    """
    what = f"number of {unit}" if unit else "number"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a {what}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite {what}, got {text!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value
