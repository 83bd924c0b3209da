"""``craps-table mcu-sim``: run a simulated table microcontroller on a pseudo-terminal.

Prints the pty path and the stable symlink path (give the symlink to the bridge as its ``port``),
then serves until interrupted or ``--duration`` seconds.  Commands typed on stdin, one a line:

    strike [ZONE]      far-wall strike            button        shooter button press/release
    door open|closed   door switch                tilt on|off   tilt switch
    wall-fault on|off  far-wall sensor fault      error CODE [TEXT]
    disconnect [S]     unplug for S seconds (default 1)            reboot    MCU restart
    faults K=V ...     e.g. faults corrupt_rate=0.01 delay_s=0.005
    lamps              print the lamp states      stats         counters    quit
"""
from __future__ import annotations

import argparse
import math
import select
import signal
import sys
import time
from pathlib import Path

from .mcu_sim import FaultConfig, SimulatedMcu
from .protocol import ErrorCode


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table mcu-sim``."""
    parser.add_argument("--link", type=Path, default=None,
                        help="path of the stable symlink to the pty (default: a new temp dir)")
    parser.add_argument("--corrupt", type=float, default=0.0, help="probability a byte is corrupted (0..1)")
    parser.add_argument("--drop", type=float, default=0.0, help="probability a byte is dropped (0..1)")
    parser.add_argument("--insert", type=float, default=0.0, help="probability a random byte is inserted (0..1)")
    parser.add_argument("--direction", choices=("both", "to-host", "to-mcu"), default="both",
                        help="which direction the byte faults apply to")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="extra delay before each frame the MCU sends")
    parser.add_argument("--disconnect-every", type=int, default=None,
                        help="unplug the cable after every N executed commands")
    parser.add_argument("--reconnect-after", type=float, default=0.5, help="seconds unplugged (default 0.5)")
    parser.add_argument("--reboot-on-disconnect", action="store_true", help="the MCU restarts on each unplug")
    parser.add_argument("--no-wall-sensor", action="store_true", help="report no far-wall sensor")
    parser.add_argument("--strike-every", type=float, default=None, help="emit a far-wall strike every S seconds")
    parser.add_argument("--duration", type=float, default=None, help="stop after S seconds (default: until interrupted)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault injector and boot ids")


def _faults(args: argparse.Namespace) -> FaultConfig:
    return FaultConfig(
        corrupt_rate=args.corrupt, drop_rate=args.drop, insert_rate=args.insert, direction=args.direction,
        delay_s=args.delay_ms / 1000.0, disconnect_every=args.disconnect_every,
        reconnect_after_s=args.reconnect_after, reboot_on_disconnect=args.reboot_on_disconnect,
    )


def _command(mcu: SimulatedMcu, line: str) -> bool:
    """Run one stdin command.  Returns False on quit."""
    words = line.split()
    if not words:
        return True
    cmd, rest = words[0].lower(), words[1:]
    try:
        if cmd in ("quit", "exit"):
            return False
        if cmd == "strike":
            mcu.strike_far_wall(int(rest[0]) if rest else 0)
        elif cmd == "button":
            mcu.press_shooter_button()
        elif cmd == "door":
            mcu.set_door(rest[:1] == ["open"])
        elif cmd == "tilt":
            mcu.set_tilt(rest[:1] == ["on"])
        elif cmd == "wall-fault":
            mcu.set_wall_sensor_fault(rest[:1] == ["on"])
        elif cmd == "error":
            mcu.report_error(ErrorCode[rest[0].upper()], 0, " ".join(rest[1:]))
        elif cmd == "disconnect":
            mcu.disconnect(float(rest[0]) if rest else 1.0)
        elif cmd == "reboot":
            mcu.reboot()
        elif cmd == "faults":
            changes = {}
            for kv in rest:
                k, _, v = kv.partition("=")
                changes[k] = v if k == "direction" else float(v)
            mcu.set_faults(**changes)
        elif cmd == "lamps":
            for name, (mode, b) in mcu.lamps().items():
                print(f"  {name:15s} {mode:5s} {b}")
        elif cmd == "stats":
            print(f"  session={mcu.session} boot_id={mcu.boot_id:08X} executed={len(mcu.executed)} "
                  f"duplicates={mcu.duplicates} bad_frames={mcu.bad_frames} disconnects={mcu.disconnects} "
                  f"failsafe={mcu.failsafe}")
        else:
            print(f"mcu-sim: unknown command {cmd!r}", file=sys.stderr)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        print(f"mcu-sim: bad command {line.strip()!r}: {exc}", file=sys.stderr)
    sys.stdout.flush()
    return True


def run(command: str, args: argparse.Namespace) -> int:
    """Run the simulator.  Exit status 0, or 2 for bad arguments (the message names the option)."""
    bad = None
    for opt, value in (("--corrupt", args.corrupt), ("--drop", args.drop), ("--insert", args.insert)):
        if not 0.0 <= value <= 1.0:  # NaN fails too
            bad = bad or f"{opt} must be a probability within 0..1, not {value}"
    for opt, value, unit in (("--delay-ms", args.delay_ms, "milliseconds"),
                             ("--reconnect-after", args.reconnect_after, "seconds")):
        if not (math.isfinite(value) and value >= 0):
            bad = bad or f"{opt} must be a finite number of {unit} >= 0, not {value}"
    if args.disconnect_every is not None and args.disconnect_every < 1:
        bad = bad or f"--disconnect-every must be a number of commands >= 1, not {args.disconnect_every}"
    if bad:
        print(f"craps-table mcu-sim: {bad}", file=sys.stderr)
        return 2
    try:
        faults = _faults(args)
    except ValueError as exc:
        print(f"craps-table mcu-sim: {exc}", file=sys.stderr)
        return 2
    from .mcu_sim import ALL_CAPABILITIES
    from .protocol import Capability
    caps = ALL_CAPABILITIES & ~Capability.WALL_SENSOR if args.no_wall_sensor else ALL_CAPABILITIES
    if args.link is not None and args.link.exists() and not args.link.is_symlink():
        print(f"craps-table mcu-sim: --link {args.link} exists and is not a symlink", file=sys.stderr)
        return 2
    if args.link is not None and not args.link.parent.is_dir():
        print(f"craps-table mcu-sim: --link {args.link}: directory {args.link.parent} does not exist", file=sys.stderr)
        return 2
    for opt, value in (("--duration", args.duration), ("--strike-every", args.strike_every)):
        if value is not None and not (math.isfinite(value) and value > 0):
            print(f"craps-table mcu-sim: {opt} must be a finite number of seconds > 0, not {value}",
                  file=sys.stderr)
            return 2
    mcu = SimulatedMcu(args.link, faults=faults, seed=args.seed, capabilities=int(caps))
    stop = False

    def _stop(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    mcu.start()
    print(f"mcu-sim: pty {mcu.pty_path} link {mcu.path}", flush=True)
    end = None if args.duration is None else time.monotonic() + args.duration
    next_strike = None if not args.strike_every else time.monotonic() + args.strike_every
    stdin_open = True
    try:
        while not stop and (end is None or time.monotonic() < end):
            wait = 0.1
            if stdin_open:
                try:
                    readable, _, _ = select.select([sys.stdin], [], [], wait)
                except (OSError, ValueError):
                    stdin_open, readable = False, []
                if readable:
                    line = sys.stdin.readline()
                    if not line:
                        stdin_open = False
                    elif not _command(mcu, line):
                        break
            else:
                time.sleep(wait)
            if next_strike is not None and time.monotonic() >= next_strike:
                mcu.strike_far_wall()
                next_strike += args.strike_every
    except KeyboardInterrupt:
        pass
    finally:
        mcu.stop()
    print(f"mcu-sim: stopped; executed {len(mcu.executed)} commands, {mcu.duplicates} duplicates suppressed", flush=True)
    return 0
