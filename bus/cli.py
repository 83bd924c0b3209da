"""``craps-table keys``: make and manage the roll bus's key files (:mod:`bus.keys`).

    craps-table keys generate NAME [--dir DIR] [--force] [--authorize]
    craps-table keys authorize CERT [--dir DIR]
    craps-table keys show NAME [--dir DIR]

``generate`` writes ``NAME.key``, ``NAME.key_secret`` (CURVE) and ``NAME.ed25519``,
``NAME.ed25519.pub`` (signing) into DIR (default ``var/bus/keys``); ``--authorize`` also puts
``NAME.key`` into ``DIR/authorized`` (the table's allow-list of subscribers). ``authorize``
copies a subscriber's public certificate into the allow-list. ``show`` prints the public keys.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bus import keys as keymod

DEFAULT_DIR = Path("var/bus/keys")


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table keys``."""
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    g = sub.add_parser("generate", help="generate a CURVE key pair and an Ed25519 signing key")
    g.add_argument("name", help="file stem, e.g. 'table' or 'settlement'")
    g.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"key directory (default {DEFAULT_DIR})")
    g.add_argument("--force", action="store_true", help="overwrite an existing key set")
    g.add_argument("--authorize", action="store_true", help="also add NAME.key to DIR/authorized")
    a = sub.add_parser("authorize", help="add a subscriber's CURVE public certificate to the allow-list")
    a.add_argument("cert", type=Path, help="a NAME.key public certificate")
    a.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"key directory (default {DEFAULT_DIR})")
    s = sub.add_parser("show", help="print the public keys of a key set")
    s.add_argument("name")
    s.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"key directory (default {DEFAULT_DIR})")


def run(command: str, args: argparse.Namespace) -> int:
    """Run ``craps-table keys ACTION``. Returns 0, or 2 for bad input (existing keys without
    --force, a missing or malformed file, a bad name)."""
    try:
        if args.action == "generate":
            kf = keymod.generate_keys(args.dir, args.name, force=args.force)
            print(f"CURVE public  {kf.curve_public}")
            print(f"CURVE secret  {kf.curve_secret}")
            print(f"Ed25519 key   {kf.sign_secret}")
            print(f"Ed25519 pub   {kf.sign_public}")
            if args.authorize:
                print(f"authorized    {keymod.authorize(kf.curve_public, args.dir / 'authorized')}")
            return 0
        if args.action == "authorize":
            print(f"authorized    {keymod.authorize(args.cert, args.dir / 'authorized')}")
            return 0
        if args.action == "show":
            kf = keymod.key_files(args.dir, args.name)
            print(f"curve_public  {keymod.load_curve_public(kf.curve_public).decode('ascii')}")
            print(f"ed25519_pub   {keymod.load_verify_key(kf.sign_public).encode().hex()}")
            return 0
    except (FileExistsError, ValueError, keymod.BusKeyError, OSError) as exc:
        print(f"craps-table keys: {exc}", file=sys.stderr)
        return 2
    print(f"craps-table keys: unknown action {args.action!r}", file=sys.stderr)
    return 2
