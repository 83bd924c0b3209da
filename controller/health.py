"""Health monitor: decides, from timestamps of events, whether the table must be in a safe state.

Pure: no clock of its own, no I/O. The service feeds it what it sees and asks it, on every
loop (at least every 100 ms), what state the table must be in::

    from controller.health import HealthConfig, HealthMonitor, frame_digest, frame_level

    health = HealthMonitor(HealthConfig())            # or HealthConfig(**cfg["health"])
    # the camera
    health.frame(now, frame_digest(frame.image), frame_level(frame.image))  # every frame read
    health.frame_error(now, "usb:0: read failed")     # FrameError from the source
    # the firmware bridge (serial link to the table microcontroller)
    health.bridge(now, up=True)                       # link came up (or rolls allowed again)
    health.bridge(now, up=False, detail="serial port closed")
    health.bridge_traffic(now)                        # any frame received from the microcontroller
    # the roll bus
    health.bus(now, up=True)                          # a publish succeeded
    health.bus(now, up=False, detail="publish timed out")
    health.bus_traffic(now)                           # a heartbeat was sent
    status = health.check(now)                        # -> HealthStatus
    if status.changed:                                # a fault entered or cleared
        publisher.publish("alarm", status.alarm_body())
        lamps: bets-closed and fault on while status.safe_state, off when it clears

While ``status.safe_state`` is true the service shows the ``bets-closed`` (and ``fault``) lamp,
accepts no roll (a throw in progress gets the verdict "no-roll" with the fault as reason, in the
spirit of 9 NYCRR 5324.52(k)(2)(vi): "any other reason that renders the throw improper") and
publishes an ``alarm`` with ``status.reasons``. The table also starts in a safe state until the
first frame arrives (reason ``camera-no-frame``) and the bridge and bus have reported up, when
``require_bridge`` / ``require_bus`` are set.

Timing: a fault that is *reported* (``frame_error``, ``bridge(up=False)``, ``bus(up=False)``)
is a fault at once; a fault that is *silence* (no frame, frames identical, no bridge or bus
traffic) is a fault after its timeout. With the defaults (frames within 0.5 s, frozen after
0.5 s) and a check every 100 ms the safe state is entered within 0.6 s of the fault. A fault
clears after ``recover_after_s`` of good health (hysteresis, so a flapping link does not flap the
lamps); then ``safe_state`` returns to false by itself.

Reason codes (``HealthStatus.reasons``, sorted): ``camera-no-frame`` (none yet),
``camera-lost`` (no frame for ``frame_timeout_s``), ``camera-frozen`` (the same frame digest for
``frozen_after_s``), ``camera-error`` (the source raised), ``camera-dark`` / ``camera-blinded``
(mean grey level outside ``[dark_below, blinded_above]`` for ``level_after_s``: the table light
failed, the lens is covered, or the camera is dazzled), ``bridge-down`` (reported or never
up), ``bridge-silent`` (no traffic for ``bridge_timeout_s``), ``bus-down``, ``bus-silent``.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CameraGiveUp", "HealthConfig", "HealthMonitor", "HealthStatus", "frame_digest", "frame_level",
           "REASONS"]

REASONS = ("camera-no-frame", "camera-lost", "camera-frozen", "camera-error", "camera-dark", "camera-blinded",
           "bridge-down", "bridge-silent", "bus-down", "bus-silent")


class HealthConfig(BaseModel):
    """Thresholds of the health monitor (TOML table ``[health]``), all in seconds.

    Attributes:
        frame_timeout_s: no frame for this long -> ``camera-lost``.
        frozen_after_s: identical frame digests for this long -> ``camera-frozen``; ``None``
            turns the check off (a simulated table that renders byte-identical idle frames).
        dark_below, blinded_above: mean grey level (0..255) of a frame below / above which the
            picture is useless (``frame(..., level=...)``, :func:`frame_level`); ``None`` = off.
        level_after_s: how long the level must stay out of range (a hand over the lens for a
            moment is not a fault).
        bridge_timeout_s: no bridge traffic for this long -> ``bridge-silent``; ``None`` = off.
        bus_timeout_s: no successful publish or heartbeat for this long -> ``bus-silent``;
            ``None`` = off.
        require_bridge: the firmware bridge must have reported up (a table without one: false).
        require_bus: the roll bus must have reported up.
        recover_after_s: a fault must be gone this long before it clears.
        restart_after_lost_s: the camera lost (``camera-lost``, or ``camera-no-frame`` since
            start) for this long -> the service stops pinging systemd's watchdog and exits with
            status 1, so that systemd restarts it and the camera is opened afresh (a hung read
            never ends by itself; :class:`CameraGiveUp`). ``None`` = never.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    frame_timeout_s: float = Field(0.5, gt=0, le=1.0)
    frozen_after_s: float | None = Field(0.5, gt=0, le=1.0)
    dark_below: float | None = Field(8.0, ge=0, le=255)
    blinded_above: float | None = Field(248.0, ge=0, le=255)
    level_after_s: float = Field(0.5, ge=0, le=1.0)
    bridge_timeout_s: float | None = Field(None, gt=0)
    bus_timeout_s: float | None = Field(None, gt=0)
    require_bridge: bool = True
    require_bus: bool = True
    recover_after_s: float = Field(0.5, ge=0)
    restart_after_lost_s: float | None = Field(30.0, gt=0)


@dataclass(frozen=True, slots=True)
class HealthStatus:
    """What :meth:`HealthMonitor.check` found.

    Attributes:
        safe_state: the table must be safe (bets-closed lamp, no roll accepted).
        reasons: active fault reason codes, sorted (empty when healthy).
        details: reason -> a human sentence (what was seen, for the alarm and the log).
        entered: reasons that became active at this check.
        cleared: reasons that cleared at this check.
        since: time (the caller's clock, s) the current safe state began, or ``None``.
    """

    safe_state: bool
    reasons: tuple[str, ...]
    details: dict[str, str] = field(default_factory=dict)
    entered: tuple[str, ...] = ()
    cleared: tuple[str, ...] = ()
    since: float | None = None

    @property
    def changed(self) -> bool:
        """Whether a reason entered or cleared at this check (publish an alarm, set lamps)."""
        return bool(self.entered or self.cleared)

    def alarm_body(self) -> dict:
        """The body of an ``"alarm"`` bus message for this change::

            {"alarm": "health", "safe_state": true, "reasons": ["camera-lost"],
             "entered": ["camera-lost"], "cleared": [], "details": {"camera-lost": "no frame for 0.53 s ..."}}
        """
        return {"alarm": "health", "safe_state": self.safe_state, "reasons": list(self.reasons),
                "entered": list(self.entered), "cleared": list(self.cleared), "details": dict(self.details)}


def frame_level(image: np.ndarray, row_step: int = 8) -> float:
    """Mean grey level (0..255) of a frame, from every ``row_step``-th row (all channels).

    Args:
        image: ``uint8`` array ``(H, W, 3)`` or ``(H, W)``.
    """
    return float(np.asarray(image)[::row_step].mean())


def frame_digest(image: np.ndarray, row_step: int = 8) -> bytes:
    """A 16-byte BLAKE2b digest of a frame's pixels, to tell a frozen camera.

    Args:
        image: ``uint8`` array ``(H, W, 3)`` or ``(H, W)``.
        row_step: hash every ``row_step``-th row (all columns); 1 = every pixel.

    A live sensor's noise changes every row on every frame, so a sample of rows tells a live
    camera from a frozen pipeline (which repeats the frame byte for byte) at 1/8 of the cost
    (bench/pi_bench.py prints it).
    """
    arr = np.ascontiguousarray(image[::row_step])
    h = hashlib.blake2b(digest_size=16)
    h.update(str(image.shape).encode())
    h.update(memoryview(arr).cast("B"))
    return h.digest()


class HealthMonitor:
    """Safe-state decision from event timestamps. See the module docstring for the API.

    Args:
        config: thresholds (:class:`HealthConfig`).

    All ``now`` arguments are seconds on one monotonic clock chosen by the caller
    (``time.monotonic()`` in the service, a fake in tests). Events may come from other threads
    (the firmware link's listener thread): every method holds a lock, and a time up to
    ``MAX_REORDER_S`` older than the latest seen (two threads that read the clock in one order
    and call in the other) is taken as the latest. Further back raises ``ValueError`` (a wrong
    clock).

    Wiring the firmware bridge (``firmware_bridge.link.FirmwareLink``) and the bus publisher
    (``bus.publisher.RollPublisher``)::

        link.add_link_listener(lambda st: health.bridge(time.monotonic(), st.up and st.rolls_allowed,
                                                        st.reason))
        link.add_rx_listener(lambda t: health.bridge_traffic(time.monotonic()))   # every frame
        publisher.add_heartbeat_listener(lambda sent: sent and health.bus_traffic(time.monotonic()))

    (``controller.service_cli.build_service`` does this.)
    """

    MAX_REORDER_S = 1.0

    def __init__(self, config: HealthConfig | None = None) -> None:
        self._lock = threading.RLock()
        self.config = config or HealthConfig()
        self._last_frame_t: float | None = None
        self._digest: bytes | str | None = None
        self._digest_since: float | None = None
        self._camera_error: str | None = None
        self._level: float | None = None
        self._level_bad_since: float | None = None
        self._bridge_up: bool | None = None
        self._bridge_detail = ""
        self._bridge_seen: float | None = None
        self._bus_up: bool | None = None
        self._bus_detail = ""
        self._bus_seen: float | None = None
        self._started: float | None = None
        self._last_now: float | None = None
        self._active: dict[str, float] = {}      # reason -> since
        self._clear_since: dict[str, float] = {}  # active reason not seen since
        self._safe_since: float | None = None

    def _time(self, now: float) -> float:
        if self._last_now is not None and now < self._last_now:
            if self._last_now - now > self.MAX_REORDER_S:
                raise ValueError(f"health: time went backwards ({now} < {self._last_now})")
            now = self._last_now
        self._last_now = now
        if self._started is None:
            self._started = now
        return now

    # -- events --------------------------------------------------------------------------
    def frame(self, now: float, digest: bytes | str, level: float | None = None) -> None:
        """A frame was read at ``now`` with pixel digest ``digest`` (:func:`frame_digest`, or
        the frame's SHA-256 hex the controller computes anyway) and, optionally, its mean grey
        ``level`` (:func:`frame_level`) for the dark / blinded checks."""
        with self._lock:
            now = self._time(now)
            self._last_frame_t = now
            self._camera_error = None
            if level is not None:
                c = self.config
                bad = ((c.dark_below is not None and level < c.dark_below)
                       or (c.blinded_above is not None and level > c.blinded_above))
                if not bad:
                    self._level_bad_since = None
                elif self._level_bad_since is None:
                    self._level_bad_since = now
                self._level = level
            if digest != self._digest:
                self._digest = digest
                self._digest_since = now

    def frame_error(self, now: float, detail: str) -> None:
        """The frame source raised (``camera.base.FrameError``): ``camera-error`` until the
        next good frame."""
        with self._lock:
            self._time(now)
            self._camera_error = detail or "frame source error"

    def bridge(self, now: float, up: bool, detail: str = "") -> None:
        """The firmware bridge link is up (any message from the microcontroller counts) or
        down (``detail`` says why)."""
        with self._lock:
            now = self._time(now)
            self._bridge_up = up
            self._bridge_detail = detail
            if up:
                self._bridge_seen = now

    def bridge_traffic(self, now: float) -> None:
        """A message (a heartbeat, an event, an acknowledgement) came from the microcontroller at
        ``now``: restarts the ``bridge_timeout_s`` clock. Does not change whether the bridge is
        up (only :meth:`bridge` does), so a link that is down or refuses rolls stays a fault."""
        with self._lock:
            self._bridge_seen = self._time(now)

    def bus_traffic(self, now: float) -> None:
        """The bus publisher sent a heartbeat at ``now``: restarts the ``bus_timeout_s`` clock of
        an idle table (no roll for minutes is no fault). Does not change whether the bus is up
        (only :meth:`bus` does: a publish that failed stays ``bus-down``)."""
        with self._lock:
            self._bus_seen = self._time(now)

    def bus(self, now: float, up: bool, detail: str = "") -> None:
        """A publish or heartbeat on the roll bus succeeded (``up``) or failed."""
        with self._lock:
            now = self._time(now)
            self._bus_up = up
            self._bus_detail = detail
            if up:
                self._bus_seen = now

    # -- decision ------------------------------------------------------------------------
    def faults(self, now: float) -> dict[str, str]:
        """The faults present at ``now`` (before hysteresis): reason -> detail."""
        with self._lock:
            return self._faults(max(now, self._last_now or now))

    def _faults(self, now: float) -> dict[str, str]:
        c = self.config
        out: dict[str, str] = {}
        lost = True
        if self._last_frame_t is None:
            out["camera-no-frame"] = "no frame received yet"
        elif now - self._last_frame_t > c.frame_timeout_s:
            out["camera-lost"] = f"no frame for {now - self._last_frame_t:.2f} s (limit {c.frame_timeout_s} s)"
        else:
            lost = False
        if self._camera_error is not None:
            out["camera-error"] = self._camera_error
        if (not lost and self._level_bad_since is not None and self._level is not None
                and now - self._level_bad_since >= c.level_after_s):
            dark = c.dark_below is not None and self._level < c.dark_below
            out["camera-dark" if dark else "camera-blinded"] = (
                f"mean grey level {self._level:.0f} for {now - self._level_bad_since:.2f} s "
                f"(allowed {c.dark_below if c.dark_below is not None else 0:g}.."
                f"{c.blinded_above if c.blinded_above is not None else 255:g})")
        if (not lost and c.frozen_after_s is not None and self._digest_since is not None
                and now - self._digest_since > c.frozen_after_s):
            out["camera-frozen"] = (f"identical frames for {now - self._digest_since:.2f} s "
                                    f"(limit {c.frozen_after_s} s)")
        for name, up, detail, seen, timeout, required in (
            ("bridge", self._bridge_up, self._bridge_detail, self._bridge_seen,
             c.bridge_timeout_s, c.require_bridge),
            ("bus", self._bus_up, self._bus_detail, self._bus_seen, c.bus_timeout_s, c.require_bus),
        ):
            if up is False:
                out[f"{name}-down"] = detail or f"{name} reported down"
            elif up is None and required:
                out[f"{name}-down"] = f"{name} has not reported up yet"
            elif up and timeout is not None and seen is not None and now - seen > timeout:
                out[f"{name}-silent"] = f"no {name} traffic for {now - seen:.2f} s (limit {timeout} s)"
        return out

    def check(self, now: float) -> HealthStatus:
        """Decide the table's state at ``now``. Call at least every 100 ms.

        A reason becomes active as soon as its fault is present and clears once the fault has
        been absent for ``recover_after_s``.
        """
        with self._lock:
            now = self._time(now)
            present = self._faults(now)
            entered = []
            for reason in present:
                self._clear_since.pop(reason, None)
                if reason not in self._active:
                    self._active[reason] = now
                    entered.append(reason)
            cleared = []
            for reason in list(self._active):
                if reason in present:
                    continue
                gone_since = self._clear_since.setdefault(reason, now)
                if now - gone_since >= self.config.recover_after_s:
                    del self._active[reason]
                    del self._clear_since[reason]
                    cleared.append(reason)
            if self._active and self._safe_since is None:
                self._safe_since = now
            elif not self._active:
                self._safe_since = None
            details = {r: present.get(r, "clearing") for r in self._active}
            return HealthStatus(
                safe_state=bool(self._active),
                reasons=tuple(sorted(self._active)),
                details=details,
                entered=tuple(sorted(entered)),
                cleared=tuple(sorted(cleared)),
                since=self._safe_since,
            )


class CameraGiveUp:
    """Tells when a lost camera has lasted long enough that the service should give up and be
    restarted (``[health] restart_after_lost_s``).

    The frame source is read in a thread (``camera.pump.FramePump``), so a read that hangs for
    ever does not stop the service loop, and the loop's watchdog pings would keep systemd from
    ever restarting it: the table would stay in its safe state for good. The service asks
    :meth:`update` on every loop and, once it returns true, stops pinging the watchdog and
    exits with a non-zero status (``Restart=on-failure``).

    Args:
        after_s: seconds of ``camera-lost`` / ``camera-no-frame``; ``None`` = never give up.
    """

    REASONS = ("camera-lost", "camera-no-frame")

    def __init__(self, after_s: float | None) -> None:
        self.after_s = after_s
        self.since: float | None = None

    def update(self, now: float, status: HealthStatus | None) -> bool:
        """Whether to give up at ``now`` (monotonic s), given the last :class:`HealthStatus`
        (``None``: not checked yet). The clock starts at the first status with one of
        :attr:`REASONS` and resets at a status without them."""
        lost = status is not None and any(r in status.reasons for r in self.REASONS)
        if not lost:
            self.since = None
            return False
        if self.since is None:
            self.since = now
        return self.after_s is not None and now - self.since >= self.after_s

    def lost_for(self, now: float) -> float:
        """Seconds the camera has been lost at ``now`` (0 when it is not)."""
        return 0.0 if self.since is None else max(0.0, now - self.since)
