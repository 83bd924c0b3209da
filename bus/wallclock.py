"""The UTC wall clock of recorded stamps, watched for steps against the monotonic clock.

Stamps that are records (an envelope's ``ts``, docs/messages.md; settlement's receipt time of a
wager) come from the wall clock, and the wall clock steps: NTP corrects it by a step at boot, an
operator sets it, and a Raspberry Pi has no battery-backed clock: it boots at 1970, or at the
time ``fake-hwclock`` saved last (before the power cut), until NTP answers. A duration is never
measured on it (the table's timeouts and deadlines run on ``time.monotonic``); but a stamp that
goes back, or leaps hours ahead, is a record that lies about order and time, so a step is named:

* :meth:`WallClock.now` compares each reading with the previous one: the wall clock moved by
  more than the monotonic clock did (or less), beyond ``tolerance_s`` plus 0.1 % of the time
  between them (NTP's slewing is at most 0.05 %), is a step (time going back, or jumping);
* :meth:`WallClock.not_before` records a stamp already written (the journal's last ``ts``): a
  reading before it (the clock behind the record, e.g. after a reboot without a clock) is
  named once, until the clock passes it.

Each is logged at WARNING, counted (:attr:`WallClock.steps`) and told to the step listeners
(the table service's metric ``craps_table_clock_jumps_total{clock="wall"}``). The stamp
itself is the clock's reading, not altered: it is what the clock said, and the warning says it
is wrong.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from datetime import datetime, timezone
from typing import Callable

__all__ = ["WallClock", "RATE"]

log = logging.getLogger("bus.wallclock")

#: Disagreement per second between the wall and monotonic clocks taken as drift or NTP's
#: slewing, not a step (0.1 %; NTP slews at most 500 ppm).
RATE = 0.001


class WallClock:
    """A watched UTC wall clock (see the module docstring). Thread-safe.

    Args:
        name: what the clock stamps, for the warnings (e.g. ``"bus publisher"``).
        tolerance_s: the largest disagreement between the wall and monotonic clocks between two
            readings taken as no step, s (plus :data:`RATE` of the time between them).
        wall: the wall clock, seconds since the epoch (``time.time``; tests inject one).
        mono: the monotonic clock, seconds (``time.monotonic``).

    Attributes:
        steps: steps named (time going back or jumping, a reading behind a recorded stamp).
        last_step_s: the last step, s (negative: the clock went back), or ``None``.

    Raises:
        ValueError: ``tolerance_s`` not a finite number >= 0.
    """

    def __init__(self, name: str, *, tolerance_s: float = 1.0, wall: Callable[[], float] = time.time,
                 mono: Callable[[], float] = time.monotonic) -> None:
        if not (isinstance(tolerance_s, (int, float)) and math.isfinite(tolerance_s) and tolerance_s >= 0):
            raise ValueError(f"tolerance_s must be a finite number of seconds >= 0, got {tolerance_s!r}")
        self.name = name
        self.tolerance_s = float(tolerance_s)
        self._wall, self._mono = wall, mono
        self._lock = threading.Lock()
        self._ref: tuple[float, float] | None = None      # (wall, mono) of the last reading
        self._floor: tuple[float, str] | None = None       # a recorded stamp (epoch s) and what it is
        self._behind = False                               # the floor's warning given
        self._listeners: list[Callable[[float], None]] = []
        self.steps = 0
        self.last_step_s: float | None = None

    def add_step_listener(self, fn: Callable[[float], None]) -> None:
        """Call ``fn(step_s)`` (negative: back) at each step named, from the reading's thread;
        a listener that raises is logged, never raised into the stamping."""
        self._listeners.append(fn)

    def not_before(self, stamp: datetime | str, what: str) -> None:
        """Record ``stamp`` (an aware datetime or an ISO 8601 string with a time zone), a time
        already written as ``what``: a later reading before it is named (once, until the clock
        passes it). A stamp that cannot be read is ignored (logged)."""
        try:
            t = stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp))
            if t.tzinfo is None:
                raise ValueError("no time zone")
        except ValueError as exc:
            log.warning("%s: recorded stamp %r of %s not read (%s): not watched", self.name, stamp, what, exc)
            return
        with self._lock:
            self._floor, self._behind = (t.timestamp(), what), False

    def now(self) -> datetime:
        """Now, UTC (aware), the wall clock's reading; a step since the last reading, or a
        reading behind the recorded stamp, is named first (see the module docstring)."""
        w, m = float(self._wall()), float(self._mono())
        named: list[tuple[float, str]] = []
        with self._lock:
            if self._ref is not None:
                rw, rm = self._ref
                step = (w - rw) - (m - rm)
                if abs(step) > self.tolerance_s + RATE * max(0.0, m - rm):
                    what = "went back" if step < 0 else "jumped forward"
                    named.append((step, f"{self.name}: the wall clock {what} by {abs(step):.3f} s against the "
                                        f"monotonic clock (an NTP step or a clock set by hand?): stamps from "
                                        f"{_iso(w)} on are {'earlier than' if step < 0 else 'ahead of'} "
                                        f"those before ({_iso(rw)})"))
            self._ref = (w, m)
            if self._floor is not None:
                floor, what = self._floor
                if w < floor - self.tolerance_s and not self._behind:
                    self._behind = True
                    named.append((w - floor, f"{self.name}: the wall clock ({_iso(w)}) is {floor - w:.3f} s behind "
                                             f"{what} ({_iso(floor)}) (a clock without a battery that booted "
                                             "before NTP answered?): new stamps go back"))
                elif w >= floor:
                    self._floor = None
            for step, _ in named:
                self.steps += 1
                self.last_step_s = step
        for step, message in named:
            log.warning("%s", message, extra={"event": "wall-clock-step", "clock": self.name, "step_s": step})
            for fn in list(self._listeners):
                try:
                    fn(step)
                except Exception:  # noqa: BLE001 - a listener must not break the stamping
                    log.exception("%s: wall clock step listener failed", self.name)
        return datetime.fromtimestamp(w, timezone.utc)

    def iso(self) -> str:
        """:meth:`now` as ISO 8601 with microseconds (an envelope's ``ts``)."""
        return self.now().isoformat(timespec="microseconds")


def _iso(epoch_s: float) -> str:
    try:
        return datetime.fromtimestamp(epoch_s, timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{epoch_s!r} s since the epoch"
