"""``craps-table wager``: a technician's (or test) terminal for settle-service's wager intake.

Examples::

    craps-table wager --endpoint tcp://127.0.0.1:5570 --round
    craps-table wager --endpoint tcp://127.0.0.1:5570 --player p1 --bet pass --amount 1000
    craps-table wager --endpoint tcp://127.0.0.1:5570 --player p1 --bet place --number 6 --amount 1200
    craps-table wager --endpoint tcp://127.0.0.1:5570 --balance p1

A wager is stamped with the current round (``--round-id``, else the intake's answer to
``{"cmd": "round"}``) and now (UTC), and sent under ``--wager-id`` (default: a new random id);
sending the same command again with that ``--wager-id`` and ``--placed-at`` is a retry: the same
reply, the wager placed once (settlement/intake.py; 9 NYCRR 5324.52(c)(1)). The reply is printed
as JSON.

Exit status: 0 accepted (or answered), 1 refused or no answer, 2 bad arguments.
"""
from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

from camera.argtypes import positive_float, positive_int


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table wager``."""
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5570",
                        help="settle-service's wager intake (its --intake; default %(default)s)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--round", action="store_true", help="show the current round and exit")
    what.add_argument("--balance", metavar="PLAYER", help="show PLAYER's balance (cents) and open wagers and exit")
    what.add_argument("--player", help="the player the wager is for")
    parser.add_argument("--bet", help="the wager's name (docs/wagers.md), e.g. pass, place, hardway")
    parser.add_argument("--amount", type=positive_int, help="the stake, integer cents (> 0)")
    parser.add_argument("--number", type=int, help="the wager's number (place, buy, lay, hardway, odds...)")
    parser.add_argument("--base", help="odds: pass, dont_pass, come or dont_come")
    parser.add_argument("--dice", nargs=2, type=int, metavar=("A", "B"), help="hop: the two faces")
    parser.add_argument("--round-id", help="the round (default: the intake's current round)")
    parser.add_argument("--wager-id", help="the idempotency key (default: a new random id; reuse it to retry)")
    parser.add_argument("--placed-at", help="the stamp, ISO 8601 UTC (default: now; give the first one to retry)")
    parser.add_argument("--timeout", type=lambda t: positive_float(t, "seconds"), default=5.0,
                        help="seconds to wait for the reply (default 5)")
    parser.add_argument("--curve-secret", type=Path, help="this terminal's CURVE .key_secret")
    parser.add_argument("--server-cert", type=Path, help="settlement's CURVE public .key (bus keys_dir)")


def _bad(msg: str) -> int:
    print(f"craps-table wager: {msg}", file=sys.stderr)
    return 2


def run(command: str, args: argparse.Namespace) -> int:
    """Send the request; print the reply as JSON. Returns the exit status."""
    from controller.boxperson import CurveClientKeys, send_command

    if (args.curve_secret is None) != (args.server_cert is None):
        return _bad("--curve-secret and --server-cert go together")
    curve = None if args.curve_secret is None else CurveClientKeys(args.curve_secret, args.server_cert)

    def send(request: dict) -> dict:
        return send_command(args.endpoint, request, timeout_s=args.timeout, curve=curve)

    try:
        if args.round:
            reply = send({"cmd": "round"})
        elif args.balance is not None:
            reply = send({"cmd": "balance", "player": args.balance})
        else:
            if not args.player or not args.bet or args.amount is None:
                return _bad("a wager needs --player, --bet and --amount (or give --round or --balance)")
            round_id = args.round_id
            if round_id is None:
                now = send({"cmd": "round"})
                if not now.get("ok") or not now.get("open"):
                    print(json.dumps(now))
                    print(f"craps-table wager: no round is open for bets (round {now.get('round_id')})",
                          file=sys.stderr)
                    return 1
                round_id = now["round_id"]
            req = {"cmd": "wager", "wager_id": args.wager_id or uuid.uuid4().hex, "player": args.player,
                   "bet": args.bet, "amount": args.amount, "round_id": round_id,
                   "placed_at": args.placed_at or datetime.now(timezone.utc).isoformat(timespec="milliseconds")}
            for key in ("number", "base", "dice"):
                if getattr(args, key) is not None:
                    req[key] = getattr(args, key)
            reply = send(req)
    except (PermissionError, TimeoutError) as exc:
        print(f"craps-table wager: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a bad endpoint or key file is bad input
        return _bad(f"{type(exc).__name__}: {exc}")
    print(json.dumps(reply))
    if not reply.get("ok"):
        print(f"craps-table wager: refused: {reply.get('error')}", file=sys.stderr)
        return 1
    return 0
