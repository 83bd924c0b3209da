"""The service's frame clock: the source's frame times, kept rising and free of jumps.

Every duration of a throw is measured on the frames' times (``Frame.t``): the rest (still
frames spanning ``still_s``), the rest timeout (``rest_timeout_s``, 9 NYCRR 5324.52(k)(2)(vi)),
the track's velocities, the far-wall strike window, the round cycle's bets-open time. A live
camera stamps frames on ``time.monotonic()``, but a source may not: a sensor's own timestamps
reset when the camera restarts, a replay or a custom source may step. A time going backwards
would keep a throw from ever timing out (and bets from ever closing); a jump forward of
1e6 s would time a throw out at once (a wrong ``not-at-rest`` no roll) or close bets at once.

:class:`FrameClock` takes each frame's source time and returns the time the service uses:
the source's time plus an offset that is 0 until the source's clock goes backwards or jumps
forward by more than ``max_gap_s`` between two frames. At such a step the offset changes so
that the frame comes one usual frame interval after the previous one, and the step is
returned (:class:`ClockStep`) for the service to name (a WARNING, the
``craps_table_clock_jumps_total`` metric; during a throw, a ``frame-fault`` alarm and a no roll
``table-fault``: the throw's timing was not seen; docs/raspberry-pi.md "Clocks").

Pure: no I/O, no clock of its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

#: The frame interval assumed before two frames were seen, s (30 fps).
DEFAULT_INTERVAL_S = 1.0 / 30.0


@dataclass(frozen=True, slots=True)
class ClockStep:
    """A step of the source's frame clock.

    Attributes:
        kind: ``"backwards"`` (the time went back) or ``"jump"`` (forward by more than the
            largest gap allowed).
        before: the previous frame's source time, s.
        after: this frame's source time, s.
        gap_s: ``after - before``, s (negative going back).
        offset_s: the offset the service's frame clock now adds to the source's times, s.
    """

    kind: str
    before: float
    after: float
    gap_s: float
    offset_s: float

    def describe(self) -> str:
        """One line for the log and the alarm."""
        what = "went back" if self.kind == "backwards" else "jumped forward"
        return (f"frame time {what} by {abs(self.gap_s):.6g} s (from {self.before:.6f} to {self.after:.6f} s); "
                f"the service's frame clock continues at the usual frame interval (offset {self.offset_s:+.6g} s)")


class FrameClock:
    """Keeps the frame clock rising and without jumps (see the module docstring).

    Args:
        max_gap_s: the largest forward step between two frames taken as time passing, s (> 0).
            A larger one is a jump. Keep it above the camera's frame interval and at or above
            ``[health] frame_timeout_s`` (a camera that stops that long is lost anyway).

    Raises:
        ValueError: ``max_gap_s`` not a finite number > 0.
    """

    def __init__(self, max_gap_s: float = 1.0) -> None:
        if not (isinstance(max_gap_s, (int, float)) and math.isfinite(max_gap_s) and max_gap_s > 0):
            raise ValueError(f"max_gap_s must be a finite number of seconds > 0, got {max_gap_s!r}")
        self.max_gap_s = float(max_gap_s)
        #: seconds added to the source's times (0 until the first step)
        self.offset_s = 0.0
        #: steps seen
        self.steps = 0
        self._last: float | None = None      # the previous frame's source time
        self._interval = DEFAULT_INTERVAL_S   # the last good interval between frames

    def reset(self) -> None:
        """Forget the previous frame (a new source): its first frame is not compared."""
        self._last = None

    def time(self, t: float) -> tuple[float, ClockStep | None]:
        """The service's time of a frame whose source time is ``t`` (seconds, finite: the
        frame was checked by ``camera.base.check_frame``), and the step of the source's
        clock since the previous frame, or ``None``."""
        t = float(t)
        last, self._last = self._last, t
        if last is None:
            return t + self.offset_s, None
        gap = t - last
        if 0.0 <= gap <= self.max_gap_s:
            if gap > 0.0:
                self._interval = gap
            return t + self.offset_s, None
        # the previous frame was at last + offset: this one a usual interval after it
        self.offset_s = last + self.offset_s + self._interval - t
        self.steps += 1
        step = ClockStep("backwards" if gap < 0 else "jump", last, t, gap, self.offset_s)
        return t + self.offset_s, step
