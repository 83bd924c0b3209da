"""Soak of the link against the simulated MCU on a faulty line (used by the test and the bench).

:func:`run_soak` sends ``n`` SET_LAMPS commands, each with a different lamp/mode/brightness, over
a pseudo-terminal whose bytes are corrupted at ``corrupt_rate`` in both directions, with the cable
pulled after every ``disconnect_every`` executed commands (before the ACK leaves).  It then
compares what the host believes with what the MCU did: every command must be acknowledged once or
reported failed, no (session, seq) executed twice, every acknowledged command executed with
exactly the payload sent, nothing executed that was not sent.
"""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field

from .config import BridgeConfig
from .link import CommandFailed, FirmwareLink
from .mcu_sim import FaultConfig, SimulatedMcu
from .protocol import LampId, LampMode, LampSetting, SetLamps

#: Link timing for a pseudo-terminal on a busy machine (seconds).
PTY_TIMING = dict(ack_timeout_s=0.02, retries=8, command_deadline_s=5.0, heartbeat_period_s=0.1,
                  link_timeout_s=0.5, hello_timeout_s=0.05, host_timeout_s=1.0, reconnect_initial_s=0.02,
                  reconnect_max_s=0.2)


@dataclass
class SoakReport:
    """Outcome of a soak.  Latencies in seconds (call to return of send_command, acked only)."""

    commands: int
    acked: int = 0
    failed: collections.Counter = field(default_factory=collections.Counter)
    failed_maybe_executed: int = 0
    executed: int = 0
    executed_twice: int = 0
    acked_not_executed: int = 0
    payload_mismatch: int = 0
    executed_not_sent: int = 0
    disconnects: int = 0
    duplicates_suppressed: int = 0
    retransmissions: int = 0
    bad_frames_host: int = 0
    bad_frames_mcu: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        """Latency percentile ``q`` (0..100) in seconds; nan if nothing was acknowledged."""
        if not self.latencies:
            return float("nan")
        s = sorted(self.latencies)
        return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]

    @property
    def ok(self) -> bool:
        """Every invariant held: each command acked or failed, none twice, acked == executed."""
        return (self.acked + sum(self.failed.values()) == self.commands and self.executed_twice == 0
                and self.acked_not_executed == 0 and self.payload_mismatch == 0 and self.executed_not_sent == 0)

    def summary(self) -> str:
        """The report in one line (printed by the bench, shown by the soak test on failure): commands
        and commands per second, acked / failed / executed counts and every invariant's count,
        disconnects, retransmissions, duplicates the MCU suppressed, bad frames host/MCU, and
        latency p50 and p99 in milliseconds (nan when nothing was acknowledged).

        Raises:
            ZeroDivisionError: ``seconds`` is 0 (a report whose soak was not run).
        """
        return (f"{self.commands} commands in {self.seconds:.1f} s ({self.commands / self.seconds:.0f}/s): "
                f"{self.acked} acked, failed {dict(self.failed) or 0}, executed {self.executed}, "
                f"executed twice {self.executed_twice}, acked-not-executed {self.acked_not_executed}, "
                f"payload mismatch {self.payload_mismatch}, executed-not-sent {self.executed_not_sent}; "
                f"{self.disconnects} disconnects, {self.retransmissions} retransmissions, "
                f"{self.duplicates_suppressed} duplicates suppressed by the MCU, bad frames host/MCU "
                f"{self.bad_frames_host}/{self.bad_frames_mcu}; latency p50 {self.percentile(50) * 1e3:.2f} ms "
                f"p99 {self.percentile(99) * 1e3:.2f} ms")


def command_for(i: int) -> SetLamps:
    """The i-th soak command: a distinct lamp/mode/brightness pattern so a mix-up is visible."""
    lamp = LampId(i % len(LampId) + 1)
    return SetLamps((LampSetting(lamp, LampMode(i % 3), i % 256),))


def run_soak(n: int, *, corrupt_rate: float = 0.01, disconnect_every: int | None = 1000, seed: int = 0,
             reconnect_after_s: float = 0.05, time_limit_s: float = 300.0, mcu_options: dict | None = None,
             drop_rate: float = 0.0, insert_rate: float = 0.0, delay_s: float = 0.0, **timing) -> SoakReport:
    """Run the soak (see module docstring).  Stops early (counting the rest as not sent) if
    ``time_limit_s`` passes.  ``mcu_options`` go to :class:`SimulatedMcu`; ``timing`` overrides
    :data:`PTY_TIMING` fields of the config."""
    if not 1 <= n <= 60000:
        raise ValueError(f"n must be 1..60000 (sequence numbers must not wrap within a soak), got {n}")
    faults = FaultConfig(corrupt_rate=corrupt_rate, drop_rate=drop_rate, insert_rate=insert_rate, delay_s=delay_s,
                         disconnect_every=disconnect_every, reconnect_after_s=reconnect_after_s)
    report = SoakReport(commands=n)
    sent: dict[int, tuple[SetLamps, bool]] = {}
    with SimulatedMcu(faults=faults, seed=seed, **(mcu_options or {})) as mcu:
        cfg = BridgeConfig(port=str(mcu.path), **{**PTY_TIMING, **timing})
        link = FirmwareLink(cfg, session_id=0x50AC0000 + seed)
        link.start()
        try:
            if not link.wait_up(5.0):
                raise RuntimeError(f"link did not come up: {link.status().reason}")
            t0 = time.perf_counter()
            for i in range(n):
                if time.perf_counter() - t0 > time_limit_s:
                    report.commands = i
                    break
                msg = command_for(i)
                c0 = time.perf_counter()
                try:
                    r = link.send_command(msg)
                except CommandFailed as exc:
                    report.failed[exc.reason] += 1
                    report.failed_maybe_executed += exc.maybe_executed
                    sent[exc.seq] = (msg, False)
                else:
                    report.latencies.append(time.perf_counter() - c0)
                    report.acked += 1
                    sent[r.seq] = (msg, True)
            report.seconds = time.perf_counter() - t0
            stats = link.stats()
        finally:
            link.close()
        with mcu.frozen():
            executed = list(mcu.executed)
            report.disconnects = mcu.disconnects
            report.duplicates_suppressed = mcu.duplicates
            report.bad_frames_mcu = mcu.bad_frames
    report.retransmissions = stats.retransmissions
    report.bad_frames_host = stats.bad_frames
    counts = collections.Counter(e.seq for e in executed)
    report.executed = len(executed)
    report.executed_twice = sum(1 for c in counts.values() if c > 1)
    by_seq = {e.seq: e.message for e in executed}
    for seq, (msg, acked) in sent.items():
        if seq in by_seq and by_seq[seq] != msg:
            report.payload_mismatch += 1
        if acked and seq not in by_seq:
            report.acked_not_executed += 1
    report.executed_not_sent = len(set(by_seq) - set(sent))
    return report
