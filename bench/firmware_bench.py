"""Firmware bridge bench: command round trip over a pseudo-terminal, and the full soak.

Prints (never asserts):
  1. ack round-trip latency p50/p99 and commands/s of SET_LAMPS over a pty, clean line, with the
     simulated MCU in its own process (``craps-table mcu-sim``: as on a table, the MCU does not
     share the host's interpreter) and in a thread of the host process;
  2. the soak of docs/firmware-protocol.md: 10,000 commands, 1 % of bytes corrupted both ways,
     the cable pulled after every 1,000th command (before its ACK): acked / failed / executed
     twice, commands/s, latency p50/p99.

Usage: python bench/firmware_bench.py [--commands 3000] [--soak 10000]
Target (issue 6): p99 <= 5 ms on the clean line.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from firmware_bridge.config import BridgeConfig
from firmware_bridge.link import FirmwareLink
from firmware_bridge.mcu_sim import SimulatedMcu
from firmware_bridge.soak import PTY_TIMING, command_for, run_soak

REPO = Path(__file__).resolve().parents[1]


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def measure(link_path: Path, n: int) -> tuple[float, float, float]:
    """(commands/s, p50 s, p99 s) of n SET_LAMPS round trips on a clean line."""
    link = FirmwareLink(BridgeConfig(port=str(link_path), **PTY_TIMING)).start()
    try:
        if not link.wait_up(5.0):
            raise SystemExit(f"link did not come up: {link.status().reason}")
        for i in range(200):  # warm-up
            link.send_command(command_for(i))
        lat = []
        t0 = time.perf_counter()
        for i in range(n):
            c0 = time.perf_counter()
            link.send_command(command_for(i))
            lat.append(time.perf_counter() - c0)
        dt = time.perf_counter() - t0
    finally:
        link.close()
    return n / dt, _pct(lat, 50), _pct(lat, 99)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", type=int, default=3000, help="clean-line round trips per mode")
    ap.add_argument("--soak", type=int, default=10000, help="soak commands (0 to skip)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="fw-bench-") as tmp:
        path = Path(tmp) / "ttyMCU"
        proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "mcu-sim", "--link", str(path),
                                 "--duration", "300"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
        try:
            proc.stdout.readline()
            rate, p50, p99 = measure(path, args.commands)
            print(f"clean pty, MCU in its own process: {args.commands} SET_LAMPS, {rate:.0f} commands/s, "
                  f"ack round trip p50 {p50 * 1e3:.3f} ms p99 {p99 * 1e3:.3f} ms")
        finally:
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            proc.wait(timeout=10)

    with SimulatedMcu() as mcu:
        rate, p50, p99 = measure(mcu.path, args.commands)
    print(f"clean pty, MCU in a thread (shares the GIL): {args.commands} SET_LAMPS, {rate:.0f} commands/s, "
          f"ack round trip p50 {p50 * 1e3:.3f} ms p99 {p99 * 1e3:.3f} ms")

    if args.soak:
        r = run_soak(args.soak, corrupt_rate=0.01, disconnect_every=1000, seed=1)
        print(f"soak (1 % bytes corrupted both ways, disconnect every 1,000): {r.summary()}")
        print(f"soak invariants {'HOLD' if r.ok else 'BROKEN'}: every command acked once or failed "
              f"({r.acked} + {sum(r.failed.values())} = {r.commands}), executed twice: {r.executed_twice}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
