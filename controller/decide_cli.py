"""``craps-table decide``: answer a boxperson call over the table's command socket.

Examples::

    craps-table decide --endpoint tcp://127.0.0.1:5560 --roll-id table-1-00000042 --dice 3 4 --who ann
    craps-table decide --endpoint tcp://127.0.0.1:5560 --roll-id table-1-00000042 --void --who ann
    craps-table decide --endpoint tcp://127.0.0.1:5560 --pending
    craps-table decide --endpoint tcp://127.0.0.1:5560 --decide-only on --who ann
    craps-table decide --endpoint tcp://127.0.0.1:5560 --no-roll dice-not-simultaneous --who sam

9 NYCRR 5324.52(h)(1)(ii)(a): the boxperson determines which face is uppermost or voids the
throw. ``--decide-only on|off``: the boxperson starts or ends the rolls made only to decide the
remaining come and don't come wagers (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)); the table
applies it before its next frame (after the throw in progress is decided), or refuses it with a
``command-refused`` alarm (a point is on).
``--no-roll REASON``: the boxperson or stickperson calls "no roll" on the throw in progress
(9 NYCRR 5324.52(k)(2), (k)(5)(i); whenever possible before both dice come to rest, (k)(3)):
``dice-not-simultaneous`` ((k)(2)(i)), ``far-wall-missed`` ((k)(2)(ii)), ``cheating-device``
((k)(2)(v)), ``improper-throw`` ((k)(2)(vi)) or ``die-off-table`` ((k)(1): a die left the table
and came back onto it); the throw's verdict is then that no roll, or the
call is refused with a ``command-refused`` alarm when no throw is in progress.
The table service's reply to either waits until the service applied it (controller/boxperson.py):
``{"ok": true, "applied": "decide-only", "on": ..., "game": {...}}`` or ``{"ok": true,
"applied": "no-roll", "reason": ..., "who": ..., "phase": ..., "after_roll_id": ...}`` (the call
applies to the verdict of the throw after ``after_roll_id``); the reply is printed as JSON.

Exit status: 0 the decision was taken and committed (printed as JSON; the table service's reply
waits until the decision's verdict is in its state store, ``committed``, and it publishes it
with the roll, before any later throw's verdict), 1 the table refused it (no such call, already
decided, timed out, or superseded: the table decided a later throw first, or its round driver
no longer waits on the call; the error says which), did not confirm the commit in time
(``"pending": true``: the answer is taken and the service applies it when it next runs; if the
service dies first the call is opened again at its restart), or did not answer, 2 bad
arguments. ``--decide-only`` / ``--no-roll``: 0 applied by the table service (or, from a command
socket that does not wait for the service, ``"queued"``: a note on stderr says it is not
confirmed); 1 refused by the table (stderr names why: e.g. ``no-roll refused: no throw in
progress``, ``decide-only refused: ... point ...``, the table service stopping), not applied
(the service did not take it in time: send it again), not confirmed (``"pending": true``: held
until the throw in progress is decided, or not finished in time; the state message or a
``command-refused`` alarm says what happened), or no answer.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from controller.boxperson import CurveClientKeys, send_command
from controller.reasons import STAFF_CALL_REASONS
from camera.argtypes import positive_float


def positive_seconds(text: str) -> float:
    """argparse ``type`` for ``--timeout``: a finite number of seconds > 0
    (:func:`vision.cli.positive_float`).

    Raises:
        argparse.ArgumentTypeError: not a number, not finite (nan, inf), or <= 0.
    """
    return positive_float(text, "seconds")


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table decide``."""
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5560",
                        help="the table's boxperson command socket (default %(default)s)")
    parser.add_argument("--roll-id", help="the roll the call is about (from the roll message)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--dice", nargs=2, type=int, metavar=("D1", "D2"),
                      help="the value of each die, 1..6, left to right as on the evidence frame")
    what.add_argument("--void", action="store_true", help="void the throw: the dice are re-rolled")
    what.add_argument("--pending", action="store_true", help="list the pending calls and exit")
    what.add_argument("--decide-only", choices=("on", "off"),
                      help="start (on) or end (off) the rolls made only to decide the remaining come and "
                           "don't come wagers, 9 NYCRR 5324.52(i)(2) (with --who; no --roll-id)")
    what.add_argument("--no-roll", metavar="REASON", choices=[r.value for r in STAFF_CALL_REASONS],
                      help="call no roll on the throw in progress, 9 NYCRR 5324.52(k)(2): one of "
                           f"{', '.join(r.value for r in STAFF_CALL_REASONS)} (with --who; no --roll-id)")
    parser.add_argument("--who", help="the boxperson's name (logged and published with the roll)")
    parser.add_argument("--timeout", type=positive_seconds, default=5.0, help="seconds to wait for the table (default 5)")
    parser.add_argument("--evidence-out", type=Path,
                        help="with --roll-id and no decision: write the call's evidence PNG here")
    parser.add_argument("--curve-secret", type=Path, help="this client's CURVE .key_secret (bus keys)")
    parser.add_argument("--server-cert", type=Path, help="the table's CURVE public .key")


def _bad(msg: str) -> int:
    print(f"craps-table decide: {msg}", file=sys.stderr)
    return 2


def run(command: str, args: argparse.Namespace) -> int:
    """Send the decision (or the query); print the table's reply as JSON."""
    if (args.curve_secret is None) != (args.server_cert is None):
        return _bad("--curve-secret and --server-cert go together")
    curve = None if args.curve_secret is None else CurveClientKeys(args.curve_secret, args.server_cert)
    if args.timeout <= 0:
        return _bad("--timeout must be > 0")
    if args.pending:
        request = {"cmd": "pending"}
    elif args.decide_only is not None:
        if args.roll_id or args.evidence_out is not None:
            return _bad("--decide-only is about the table, not a roll: no --roll-id or --evidence-out")
        if not args.who or not args.who.strip():
            return _bad("--who (the boxperson's name) is required")
        request = {"cmd": "decide-only", "on": args.decide_only == "on", "who": args.who.strip()}
    elif args.no_roll is not None:
        if args.roll_id or args.evidence_out is not None:
            return _bad("--no-roll is about the throw in progress, not a roll: no --roll-id or --evidence-out")
        if not args.who or not args.who.strip():
            return _bad("--who (the caller's name) is required")
        request = {"cmd": "no-roll", "reason": args.no_roll, "who": args.who.strip()}
    elif args.dice is None and not args.void:
        if not args.roll_id or args.evidence_out is None:
            return _bad("give --roll-id with --dice D1 D2 or --void (or --evidence-out), or --pending, "
                        "or --decide-only on|off")
        request = {"cmd": "evidence", "roll_id": args.roll_id}
    else:
        if not args.roll_id:
            return _bad("--roll-id is required")
        if not args.who or not args.who.strip():
            return _bad("--who (the boxperson's name) is required")
        if args.dice is not None and not all(1 <= v <= 6 for v in args.dice):
            return _bad(f"--dice: each value must be 1..6, got {args.dice}")
        request = {"cmd": "decide", "roll_id": args.roll_id, "who": args.who.strip()}
        if args.void:
            request["void"] = True
        else:
            request["dice"] = list(args.dice)
    try:
        reply = send_command(args.endpoint, request, timeout_s=args.timeout, curve=curve)
    except PermissionError as exc:
        print(f"craps-table decide: {exc}", file=sys.stderr)
        return 1
    except TimeoutError as exc:
        print(f"craps-table decide: {exc} (is a table service running with its [boxperson] endpoint "
              f"there? `craps-table demo` prints its own)", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a bad endpoint or key file is bad input
        return _bad(f"{type(exc).__name__}: {exc}")
    if request["cmd"] == "evidence" and reply.get("ok"):
        import base64

        try:
            args.evidence_out.write_bytes(base64.b64decode(reply["png_b64"]))
        except OSError as exc:
            reason = "is a directory" if isinstance(exc, IsADirectoryError) else (exc.strerror or str(exc))
            return _bad(f"--evidence-out {args.evidence_out}: cannot write the evidence PNG: {reason}")
        print(json.dumps({"ok": True, "roll_id": reply["roll_id"], "evidence": str(args.evidence_out)}))
        return 0
    print(json.dumps(reply, indent=None))
    if not reply.get("ok"):
        what = "not confirmed (pending)" if reply.get("pending") else "refused"
        print(f"craps-table decide: {what}: {reply.get('error')}", file=sys.stderr)
        return 1
    if request["cmd"] in ("decide-only", "no-roll") and "applied" not in reply:
        # an older table service, or a socket without one behind it waiting: handed over only
        print(f"craps-table decide: {request['cmd']} queued, not confirmed: this command socket does not say "
              "whether the table service applied it (the state message or a command-refused alarm does)",
              file=sys.stderr)
    return 0
