"""``craps-table stop`` and ``craps-table resume``: a rig technician stops an automated or
stadium table, or clears its stop, over the table's command socket (controller/boxperson.py).

Examples::

    craps-table stop --endpoint tcp://127.0.0.1:5560 --who tech-7 --reason "shaker dome open"
    craps-table resume --endpoint tcp://127.0.0.1:5560 --who tech-7
    craps-table resume --endpoint tcp://127.0.0.1:5560 --who tech-7 --abandon

``stop``: the round cycle stops (round event ``stopped``, cause ``technician-stop``): bets stay
closed, no throw is commanded and no round opens; the service keeps running. ``resume``: the
stop is cleared (round event ``resumed``) and the next round opens when due; a stop of any cause
(a shaker jam, ``throw-timeout``, ``restart-during-throw``, a technician's stop...) is cleared so,
without restarting the service. The table refuses a resume, naming why, while it is not stopped
or the cause of the stop is still there (its safe state: e.g. the camera still lost; a verdict
the bus refused; the firmware link down; the shaker still running; dice moving). A round left
without a result is abandoned by the resume and settlement returns its wagers (wagers are made
before the dice are rolled, 9 NYCRR 5324.52(c)(1), so none may ride another round's throw):
``--abandon`` confirms that, and without it such a resume is refused naming the round. The
stop and resume rules are the rig's (no regulation paragraph speaks of shakers).

The table replies once it has applied or refused the command (within 2 s,
``controller.boxperson.CONFIRM_S``); a command it did not take by then is withdrawn, never
applied later. Each is logged with who and when, and published (round events; a refusal also as
a ``command-refused`` alarm).

Exit status: 0 applied (the round event printed as JSON), 1 refused (the reason printed), not
confirmed, or no reply, 2 bad arguments.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from controller.boxperson import MAX_REASON_CHARS, CurveClientKeys, send_command
from controller.decide_cli import positive_seconds


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table stop`` / ``craps-table resume``."""
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5560",
                        help="the table's command socket, [boxperson] endpoint (default %(default)s)")
    parser.add_argument("--who", help="the technician's name (required; logged and published)")
    if command == "stop":
        parser.add_argument("--reason", help=f"why the table stops (required), at most {MAX_REASON_CHARS} "
                                             "characters (published)")
    else:
        parser.add_argument("--abandon", action="store_true",
                            help="confirm that the round without a result is abandoned (settlement returns its "
                                 "wagers); needed when the table stopped during a round")
    parser.add_argument("--timeout", type=positive_seconds, default=5.0,
                        help="seconds to wait for the table's reply (default 5)")
    parser.add_argument("--curve-secret", type=Path, help="this client's CURVE .key_secret (bus keys)")
    parser.add_argument("--server-cert", type=Path, help="the table's CURVE public .key")


def _bad(command: str, msg: str) -> int:
    print(f"craps-table {command}: {msg}", file=sys.stderr)
    return 2


def run(command: str, args: argparse.Namespace) -> int:
    """Send the stop or resume; print the table's reply as JSON (see the module docstring)."""
    if (args.curve_secret is None) != (args.server_cert is None):
        return _bad(command, "--curve-secret and --server-cert go together")
    if not args.who or not args.who.strip():
        return _bad(command, "--who (the technician's name) is required")
    request = {"cmd": command, "who": args.who.strip()}
    if command == "stop":
        if not args.reason or not args.reason.strip():
            return _bad(command, "--reason (why the table stops) is required")
        request["reason"] = args.reason.strip()
    else:
        request["abandon"] = bool(args.abandon)
    curve = None if args.curve_secret is None else CurveClientKeys(args.curve_secret, args.server_cert)
    try:
        reply = send_command(args.endpoint, request, timeout_s=args.timeout, curve=curve)
    except (PermissionError, TimeoutError) as exc:
        print(f"craps-table {command}: {exc} (is the table service running, with its [boxperson] endpoint "
              "there?)", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a bad endpoint or key file is bad input
        return _bad(command, f"{type(exc).__name__}: {exc}")
    print(json.dumps(reply))
    if not reply.get("ok"):
        what = "not confirmed" if reply.get("pending") else "refused"
        print(f"craps-table {command}: {what}: {reply.get('error')}", file=sys.stderr)
        return 1
    return 0
