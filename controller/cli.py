"""``craps-table``: the one command line of the project.

Each sub-command lives in the package that does the work; this module only dispatches, and
imports a package when its command is run, so ``craps-table read`` does not load ZeroMQ and
``craps-table settle`` does not load OpenCV.

A command module provides two functions::

    def add_arguments(command: str, parser: argparse.ArgumentParser) -> None
    def run(command: str, args: argparse.Namespace) -> int   # the exit status

Exit status: 0 success, 1 failure of the job, 2 bad input (unreadable file, wrong config key,
bad arguments), as argparse does.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

#: command -> (module, one-line help). Order is the order of ``craps-table --help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("controller.service_cli", "run the table service on the simulated table with a settlement subscriber"),
    "run": ("controller.service_cli", "run the table service: frames -> verdicts -> bus -> lamps"),
    "read": ("vision.cli", "read the dice in photographs"),
    "eval": ("vision.cli", "measure the dice reader on YOLO-labelled photographs"),
    "sim": ("simulator.cli", "simulate a throw and write its frames and ground truth"),
    "decide": ("controller.decide_cli", "answer a boxperson call (a value for each die, or void); "
                                        "start or end decide-only rolls"),
    "stop": ("controller.technician_cli", "stop an automated or stadium rig's rounds until resume (technician)"),
    "resume": ("controller.technician_cli", "clear a stopped automated or stadium rig (technician)"),
    "settle": ("settlement.cli", "settle a JSONL scenario of wagers and rolls (test-bench interface)"),
    "settle-service": ("settlement.service", "subscribe to the roll bus and settle wagers"),
    "wager": ("settlement.wager_cli", "send a wager to settle-service's wager intake (a test terminal)"),
    "keys": ("bus.cli", "generate CURVE and signing keys for the roll bus"),
    "mcu-sim": ("firmware_bridge.cli", "a simulated table microcontroller on a pseudo-terminal"),
    "calibrate": ("camera.calibrate_cli", "find the ArUco markers and write the table homography"),
}


def _usage() -> str:
    width = max(len(c) for c in COMMANDS)
    lines = ["usage: craps-table COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {c.ljust(width)}  {h}" for c, (_, h) in COMMANDS.items()]
    lines += ["", "craps-table COMMAND --help gives the arguments of a command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``craps-table`` console script. Returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"craps-table: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, help_text = COMMANDS[command]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            print(f"craps-table: command {command!r} is not available in this build ({exc})", file=sys.stderr)
            return 2
        raise
    parser = argparse.ArgumentParser(prog=f"craps-table {command}", description=help_text)
    module.add_arguments(command, parser)
    args = parser.parse_args(rest)
    try:
        return int(module.run(command, args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of the output went away (``craps-table eval ... | head``). Python's
        # documentation, "Note on SIGPIPE" (signal module): point stdout at /dev/null so the
        # interpreter's last flush does not raise again, and exit 1.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"craps-table {command}: output closed by its reader (broken pipe)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
