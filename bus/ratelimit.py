"""Per-peer token buckets: how often each subscriber may ask the table for a replay.

The table's replay server runs in the publisher's background thread (with the heartbeats and
the acks); each reply reads up to ``replay_batch`` messages from the journal and sends them.
An allow-listed subscriber asking again and again would keep that thread (and, through the
interpreter lock, the publishing thread) busy, so each peer (its CURVE public key) gets a
token bucket: ``rate`` requests per second on average, at most ``burst`` at once.
"""
from __future__ import annotations

import time
from typing import Callable


class PeerRateLimiter:
    """Token bucket per peer.

    Each peer's bucket holds at most ``burst`` tokens and refills at ``rate`` tokens per
    second; a request takes one token, or is refused when the bucket holds less than one.

    Args:
        rate: tokens added per second (requests per second on average), > 0.
        burst: bucket size (requests allowed at once after a quiet spell), >= 1.
        max_peers: buckets kept; past it the bucket idle longest is dropped (a dropped peer
            starts again with a full bucket; peers are the table's allow-list, a handful).
        clock: monotonic clock in seconds (tests pass their own).
    Raises:
        ValueError: ``rate`` not > 0, ``burst`` below 1 or ``max_peers`` below 1.

    Source: the token bucket with a committed rate and burst size (RFC 2697, section 3:
    "Committed Information Rate" and "Committed Burst Size").
    """

    def __init__(self, rate: float, burst: int, *, max_peers: int = 1024,
                 clock: Callable[[], float] = time.monotonic):
        if not rate > 0 or burst < 1 or max_peers < 1:
            raise ValueError(f"rate must be > 0, burst and max_peers >= 1: {rate!r}, {burst!r}, {max_peers!r}")
        self.rate = float(rate)
        self.burst = int(burst)
        self._max_peers = max_peers
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}   # peer -> (tokens, time of last update)

    def take(self, peer: str) -> float:
        """Take one token for ``peer``. Returns 0.0 if it was granted, else the seconds until
        a token is available (the request is refused; nothing is taken)."""
        now = self._clock()
        tokens, at = self._buckets.pop(peer, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + max(0.0, now - at) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        if len(self._buckets) >= self._max_peers:
            del self._buckets[next(iter(self._buckets))]      # the least recently seen peer
        self._buckets[peer] = (tokens, now)                    # re-inserted last: most recent
        return wait
