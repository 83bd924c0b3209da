"""Prometheus metrics of the table service (prometheus-client).

Metrics (namespace ``craps_table``):

=====================================  =========  ==========================================
``craps_table_frames_total``           counter    frames read from the camera
``craps_table_frames_per_second``      gauge      frames in the last ``fps_window_s``, per s
                                                  (counted when scraped: 0 once frames stop)
``craps_table_read_ms``                histogram  time to read the dice in one frame, ms
``craps_table_verdicts_total``         counter    labels ``verdict`` (roll, no-roll,
                                                  boxperson) and ``reason`` ("none" if null)
``craps_table_last_sequence``          gauge      ``seq`` of the last envelope published
``craps_table_safe_state``             gauge      1 while the table is in its safe state
``craps_table_faults_total``           counter    label ``reason``: health faults entered
``craps_table_clock_jumps_total``      counter    label ``clock``: steps of a clock named:
                                                  ``frame`` (the source's frame times,
                                                  controller/frame_clock.py), ``wall`` (the
                                                  UTC clock of the bus's stamps,
                                                  bus/wallclock.py)
=====================================  =========  ==========================================

Example::

    from controller.metrics import MetricsConfig, TableMetrics
    metrics = TableMetrics()                       # its own CollectorRegistry
    metrics.serve(MetricsConfig(port=9108))        # http://127.0.0.1:9108/metrics
    metrics.frame(time.monotonic())
    metrics.read_ms(7.5)
    metrics.verdict("no-roll", "die-off-table")
    metrics.sequence(env["seq"])
    metrics.health(status.safe_state, status.entered)

The HTTP endpoint binds 127.0.0.1 by default: Prometheus on the Pi (or an SSH tunnel) scrapes
it; set ``addr = "0.0.0.0"`` only on a closed network.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MetricsConfig", "TableMetrics", "READ_MS_BUCKETS"]

#: Histogram buckets of the read time, ms (a 60 fps camera gives 16.7 ms per frame).
READ_MS_BUCKETS = (1, 2, 5, 10, 15, 20, 30, 50, 75, 100, 200, 500, 1000)


class MetricsConfig(BaseModel):
    """TOML table ``[metrics]``.

    Attributes:
        enabled: serve the metrics over HTTP.
        port: TCP port (0 = any free port, for tests).
        addr: address to bind, loopback by default.
        fps_window_s: window of the frames-per-second gauge, s.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    enabled: bool = True
    port: int = Field(9108, ge=0, le=65535)
    addr: str = "127.0.0.1"
    fps_window_s: float = Field(1.0, gt=0, le=60)


class TableMetrics:
    """The service's metrics in one registry.

    Args:
        registry: where to register (default: a new private ``CollectorRegistry``, so two
            services or tests in one process do not clash).
        fps_window_s: window of the frames-per-second gauge, s.
        clock: the monotonic clock (seconds) of the times given to :meth:`frame`.

    The frames-per-second gauge is computed when it is read (a scrape, :meth:`value`): over the
    window that ends *then*, so it falls to 0 when the camera stops delivering frames instead of
    keeping the rate of the last frame that came.
    """

    def __init__(self, registry: CollectorRegistry | None = None, fps_window_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = CollectorRegistry() if registry is None else registry
        self.fps_window_s = fps_window_s
        self._clock = clock
        self._fps_lock = threading.Lock()  # frame() in the service loop, scrapes in the HTTP thread
        self._last_t: tuple[float, float] | None = None  # (the last frame's time, clock() then)
        r = self.registry
        self.frames_total = Counter("craps_table_frames", "Frames read from the camera.", registry=r)
        self.fps = Gauge("craps_table_frames_per_second",
                         "Frames read in the last window, per second.", registry=r)
        self.read_ms_hist = Histogram("craps_table_read_ms", "Time to read the dice in one frame, ms.",
                                      buckets=READ_MS_BUCKETS, registry=r)
        self.verdicts = Counter("craps_table_verdicts", "Verdicts published.",
                                ["verdict", "reason"], registry=r)
        self.last_sequence = Gauge("craps_table_last_sequence",
                                   "Sequence number of the last envelope published.", registry=r)
        self.safe_state = Gauge("craps_table_safe_state", "1 while the table is in its safe state.",
                                registry=r)
        self.faults = Counter("craps_table_faults", "Health faults entered.", ["reason"], registry=r)
        self.clock_jumps = Counter("craps_table_clock_jumps", "Clock steps named (time going back or jumping).",
                                   ["clock"], registry=r)
        self._times: deque[float] = deque()
        self.fps.set_function(self.frames_per_second)
        self._server = None
        self._thread = None

    def frame(self, t: float) -> None:
        """One frame read at ``t`` (monotonic seconds)."""
        self.frames_total.inc()
        with self._fps_lock:
            self._times.append(t)
            self._last_t = (t, self._clock())
            self._prune(t)

    def frames_per_second(self, now: float | None = None) -> float:
        """Frames in the ``fps_window_s`` ending at ``now`` (default: the time of the last frame
        plus the time passed on :attr:`clock` since), per second: the gauge's value."""
        with self._fps_lock:
            if now is None:
                if self._last_t is None:
                    return 0.0
                t, seen = self._last_t
                now = t + max(0.0, self._clock() - seen)
            self._prune(now)
            return len(self._times) / self.fps_window_s

    def _prune(self, now: float) -> None:
        times = self._times
        while times and now - times[0] >= self.fps_window_s:
            times.popleft()

    def read_ms(self, ms: float) -> None:
        """Time spent reading the dice in one frame, milliseconds."""
        self.read_ms_hist.observe(ms)

    def verdict(self, verdict: str, reason: str | None) -> None:
        """A verdict was published (``reason`` ``None`` is counted as ``"none"``)."""
        self.verdicts.labels(verdict=verdict, reason=reason or "none").inc()

    def clock_jump(self, clock: str) -> None:
        """A step of ``clock`` (``"frame"`` or ``"wall"``) was named: its time went back or
        jumped (controller/frame_clock.py, bus/wallclock.py)."""
        self.clock_jumps.labels(clock=clock).inc()

    def sequence(self, seq: int) -> None:
        """The ``seq`` of the last envelope published on the bus."""
        self.last_sequence.set(seq)

    def health(self, safe_state: bool, entered: Iterable[str] = ()) -> None:
        """The health monitor's state and the fault reasons that became active."""
        self.safe_state.set(1 if safe_state else 0)
        for reason in entered:
            self.faults.labels(reason=reason).inc()

    def value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """A sample's current value from this registry (for tests and the status line)."""
        return self.registry.get_sample_value(name, labels or {})

    def serve(self, config: MetricsConfig | None = None) -> int:
        """Start the HTTP endpoint ``/metrics`` in a daemon thread. Returns the bound port.

        Raises:
            OSError: the port is taken or the address is not local.
        """
        config = config or MetricsConfig()
        if self._server is not None:
            return self._server.server_port
        self._server, self._thread = start_http_server(config.port, addr=config.addr, registry=self.registry)
        return self._server.server_port

    def close(self) -> None:
        """Stop the HTTP endpoint. Safe to call twice."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            self._thread = None
