"""``craps-table settle --profile NAME SCENARIO.jsonl``: the black-box settlement interface.

Input: one JSON object a line (blank lines ignored)::

    {"type": "bet", "player": "p1", "bet": "place", "number": 6, "amount": 1200}
    {"type": "remove", "player": "p1", "bet": "place", "number": 6}            # optional "amount": reduce by
    {"type": "working", "player": "p1", "bet": "place", "number": 6, "on": true}
    {"type": "roll", "dice": [3, 4]}                                            # optional "seq": int
    {"type": "shooter", "change": "voluntary"}                                  # or "compulsory"
    {"type": "decide_only", "on": true}       # rolls only to decide come/don't come, 5324.52(i)(2)

Output (stdout), one JSON line per decided wager::

    {"roll": n, "player": "p1", "bet": "place", "number": 6, "result": "win",
     "stake": 1200, "payout": 1400, "vig": 0}

and ``{"type": "rejected", "line": k, "player": ..., "bet": ..., "reason": ..., "rule": ...}``
for an illegal request. ``n`` is the roll's sequence number (its "seq", else 1, 2, ...); a
roll whose seq was already applied settles nothing (idempotent). See docs/wagers.md.

Exit status: 0; 2 for bad input (profile missing or wrong key, a line that is not a JSON
object, an unknown line type, dice that are not two integers 1..6, a bad shooter change, a
``working`` or ``decide_only`` line whose ``on`` is not true/false, a ``working`` key that is not
true/false on any line, a seq out of order). The whole file is checked before anything is printed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["add_arguments", "run", "run_scenario"]

_TYPES = ("bet", "remove", "working", "roll", "shooter", "decide_only")

#: The largest roll seq the ledger stores (SQLite's INTEGER is a signed 64-bit integer).
MAX_SEQ = 2**63 - 1

#: the keys each line type may carry ("comment" is free text, ignored). Anything else is refused
#: (exit 2): a misspelt "workng" or "sequence" must not be dropped silently.
_WAGER_KEYS = frozenset({"type", "player", "bet", "amount", "number", "base", "dice", "working", "comment"})
_KEYS = {
    "bet": _WAGER_KEYS,
    "remove": _WAGER_KEYS,
    "working": _WAGER_KEYS | {"on"},
    "roll": frozenset({"type", "dice", "seq", "comment"}),
    "shooter": frozenset({"type", "change", "comment"}),
    "decide_only": frozenset({"type", "on", "comment"}),
}


def add_arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Arguments of ``craps-table settle``."""
    parser.add_argument("--profile", required=True,
                        help="profile NAME (config/profiles/NAME.toml) or path to a profile TOML file")
    parser.add_argument("scenario", help="JSONL scenario file ('-' for stdin)")
    parser.add_argument("--ledger", default=":memory:",
                        help="SQLite ledger file (default: in memory); an existing file resumes its session")


class ScenarioError(ValueError):
    """A structural error in the scenario (message names the line)."""


def parse_scenario(lines, name: str = "scenario") -> list[tuple[int, dict]]:
    """Parse and structurally check every line. Returns [(line_no, event)].

    Raises:
        ScenarioError: naming ``name:line`` and what is wrong.
    """
    events = []
    for i, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text:
            continue
        try:
            ev = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{name}:{i}: not JSON: {exc.msg}") from None
        if not isinstance(ev, dict):
            raise ScenarioError(f"{name}:{i}: want a JSON object, got {type(ev).__name__}")
        typ = ev.get("type")
        if typ not in _TYPES:
            raise ScenarioError(f"{name}:{i}: 'type' must be one of {list(_TYPES)}, not {typ!r}")
        unknown = sorted(set(ev) - _KEYS[typ])
        if unknown:
            raise ScenarioError(f"{name}:{i}: unknown key {unknown[0]!r} in a {typ} line "
                                f"(allowed: {', '.join(sorted(_KEYS[typ] - {'type'}))})")
        if typ == "roll":
            d = ev.get("dice")
            if (not isinstance(d, list) or len(d) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 6 for x in d)):
                raise ScenarioError(f"{name}:{i}: roll 'dice' must be two integers 1..6, not {d!r}")
            seq = ev.get("seq")
            if seq is not None:
                if not isinstance(seq, int) or isinstance(seq, bool) or not 1 <= seq <= MAX_SEQ:
                    raise ScenarioError(f"{name}:{i}: roll 'seq' must be an integer 1..{MAX_SEQ}, not {seq!r}")
        if typ == "shooter" and ev.get("change", "voluntary") not in ("voluntary", "compulsory"):
            raise ScenarioError(f"{name}:{i}: shooter 'change' must be 'voluntary' or 'compulsory', "
                                f"not {ev.get('change')!r}")
        if typ in ("working", "decide_only") and not isinstance(ev.get("on"), bool):
            raise ScenarioError(f"{name}:{i}: {typ} 'on' must be true or false, not {ev.get('on')!r}")
        if "working" in ev and not isinstance(ev["working"], bool):   # as 'on' above: malformed, not a rejection
            raise ScenarioError(f"{name}:{i}: {typ} 'working' must be true or false, not {ev['working']!r}")
        events.append((i, ev))
    return events


def _seq_error(sess, events) -> str | None:
    """The first roll whose seq the session would refuse (below the last applied seq and never
    applied, or a roll without a seq after :data:`MAX_SEQ`), as a message naming its line;
    None if every roll can be applied."""
    last = sess.last_bus_seq
    seen: set[int] = set()
    for line_no, ev in events:
        if ev.get("type") != "roll":
            continue
        seq = ev.get("seq")
        if seq is None:
            seq = last + 1
            if seq > MAX_SEQ:
                return f"{line_no}: roll without a seq after seq {last}: the next seq {seq} is beyond {MAX_SEQ}"
        if seq <= last:
            if seq in seen or sess.db.execute("SELECT 1 FROM rolls WHERE seq=?", (seq,)).fetchone():
                continue  # already applied: idempotent, settles nothing
            return f"{line_no}: roll seq {seq} is not after the last applied seq {last}"
        last = seq
        seen.add(seq)
    return None


def run_scenario(prof, events, ledger: str = ":memory:", emit=print, name: str | None = None) -> int:
    """Apply parsed events to a ledger-backed session, emitting output lines (dicts -> JSON).

    ``name`` (the scenario file) prefixes the line number in messages.

    Returns 0, or 2 if a roll seq is out of order (a message naming the line is written to
    stderr; the seqs are checked against the ledger before anything is applied or printed).
    """
    from .engine import Rejected
    from .ledger import Session

    sess = Session(prof, ledger)
    try:
        bad = _seq_error(sess, events)
        if bad is not None:  # checked before anything is applied, printed or written
            print(f"craps-table settle: {name + ':' if name else 'line '}{bad}", file=sys.stderr)
            return 2
        for line_no, ev in events:
            typ = ev["type"]
            req = {k: v for k, v in ev.items() if k != "type"}
            try:
                if typ == "bet":
                    sess.place(req)
                elif typ == "remove":
                    sess.remove(req)
                elif typ == "working":
                    sess.set_working(req, ev["on"])
                elif typ == "shooter":
                    sess.shooter_change(ev.get("change", "voluntary"))
                elif typ == "decide_only":
                    sess.decide_only(ev["on"])
                elif typ == "roll":
                    try:
                        out, applied = sess.roll(ev["dice"], ev.get("seq"))
                    except ValueError as exc:
                        print(f"craps-table settle: {name + ':' if name else 'line '}{line_no}: {exc}",
                              file=sys.stderr)
                        return 2
                    if applied:
                        for s in out:
                            emit(json.dumps(s.output(s.seq)))
            except Rejected as exc:
                rej = {"type": "rejected", "line": line_no}
                if isinstance(ev.get("player"), str):
                    rej["player"] = ev["player"]
                if "bet" in ev:
                    rej["bet"] = ev["bet"]
                rej.update(reason=f"{exc.reason} ({exc.rule})", rule=exc.rule)
                emit(json.dumps(rej))
    finally:
        sess.close()
    return 0


def run(command: str, args: argparse.Namespace) -> int:
    """Entry point of ``craps-table settle``. Returns the exit status."""
    from .profile import ProfileError, load_profile

    try:
        prof = load_profile(args.profile)
    except ProfileError as exc:
        print(f"craps-table settle: {exc}", file=sys.stderr)
        return 2
    try:
        if args.scenario == "-":
            lines = sys.stdin.read().splitlines()
            name = "<stdin>"
        else:
            path = Path(args.scenario)
            lines = path.read_text(encoding="utf-8").splitlines()
            name = str(path)
        events = parse_scenario(lines, name)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"craps-table settle: cannot read {args.scenario}: {exc}", file=sys.stderr)
        return 2
    except ScenarioError as exc:
        print(f"craps-table settle: {exc}", file=sys.stderr)
        return 2
    try:
        return run_scenario(prof, events, args.ledger, name=name)
    except ValueError as exc:  # e.g. a ledger file of another profile
        print(f"craps-table settle: {exc}", file=sys.stderr)
        return 2
