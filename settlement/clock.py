"""Settlement's own UTC clock: the receipt time of a terminal's wager (checked against its stamp,
settlement/rounds.py ``MAX_STAMP_AGE_S``) and the ledger's record times.

One :class:`bus.wallclock.WallClock` for the process: a step of the wall clock (an NTP step, a
clock set by hand, a machine without a clock battery booted before NTP answered) is logged at
WARNING by the first reading after it (logger ``bus.wallclock``, event ``wall-clock-step``),
naming why the wagers received meanwhile are refused as too old or too far ahead (9 NYCRR
5324.52(c)(1): the stamp must vouch that the wager came before no more bets). The times are the
clock's readings, not altered.
"""
from __future__ import annotations

from datetime import datetime

from bus.wallclock import WallClock

__all__ = ["CLOCK", "utc_now"]

#: the process's watched clock (tests may replace it)
CLOCK = WallClock("settlement")


def utc_now() -> datetime:
    """Now, UTC (aware), from :data:`CLOCK` (a step since its last reading is named first)."""
    return CLOCK.now()
