"""The tables of ``bench/irregularity_bench.py`` from the verdicts it wrote with ``--rows``, for
runs split over several processes (one per core, or one per seed range) or stopped early.

Reads one or more ``FILE.jsonl`` (one verdict a line: scenario, seed, profile, expected, got,
right, wrong_value, near_line, notes), takes each (scenario, seed, profile) once and prints, per
profile, the bench's table: throws, right, no-roll / boxperson / roll counts, valid rolls
published wrongly, reason agreement, near-line calls, and the natural throws' line (valid rolls
published with other dice than the truth, or where the truth is not a valid roll; the share sent
to the boxperson against issue 5's 0.5 %). Up to ``--show-wrong`` wrong verdicts per scenario
follow, by seed. The reader's figures on flat dice are not in the rows (the bench's own output
has them).

Run::

    .venv/bin/python bench/irregularity_rows.py /tmp/a.jsonl /tmp/b.jsonl [--show-wrong 5]

With no file it says so and exits 0 (``make bench`` runs every script without arguments).
Exit status 2 (and a message naming the file and line) on a line that is not such a verdict, or
on one throw given two different verdicts by two files.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import irregularity_bench as B  # noqa: E402

from controller.irregularity_profile import load_profile  # noqa: E402
from controller.reasons import Reason  # noqa: E402

_KEYS = ("scenario", "seed", "profile", "expected", "got", "right", "wrong_value", "notes")


class RowsError(ValueError):
    """A rows file holds a line that is not a verdict of the bench, or two files disagree."""


def _verdict(v: list) -> tuple:
    kind, reason, dice = v
    return kind, None if reason is None else Reason(reason), None if dice is None else tuple(dice)


def load_rows(paths: list[Path]) -> dict[str, dict[str, list[dict]]]:
    """profile -> scenario -> rows in the form :func:`irregularity_bench.report` takes, in seed
    order, each (scenario, seed, profile) once.

    Raises:
        RowsError: a line is not JSON or lacks a key of the bench's rows (file and line named),
            or two lines give one throw under one profile different verdicts.
        OSError: a file cannot be read.
    """
    seen: dict[tuple, tuple[dict, str]] = {}
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RowsError(f"{where}: not a verdict of irregularity_bench --rows ({exc})") from None
            missing = [k for k in _KEYS if k not in raw] if isinstance(raw, dict) else list(_KEYS)
            if missing:
                raise RowsError(f"{where}: not a verdict of irregularity_bench --rows (no {', '.join(missing)})")
            try:
                expected, got, seed = _verdict(raw["expected"]), _verdict(raw["got"]), int(raw["seed"])
            except (TypeError, ValueError) as exc:
                raise RowsError(f"{where}: not a verdict of irregularity_bench --rows ({exc})") from None
            row = {"scenario": raw["scenario"], "seed": seed, "expected": expected, "got": got,
                   "right": bool(raw["right"]), "wrong_value": bool(raw["wrong_value"]),
                   "near_line": bool(raw.get("near_line", False)), "notes": list(raw["notes"]),
                   "wrong_dice": B.wrong_dice(expected, got), "truth": "(see the bench's output)", "reads": []}
            key = (row["scenario"], row["seed"], raw["profile"])
            if key in seen and (seen[key][0]["got"], seen[key][0]["expected"]) != (got, expected):
                raise RowsError(f"{where}: {key} has another verdict at {seen[key][1]}")
            seen.setdefault(key, (row, where))
    # profiles in the order the files first name them (the bench's), scenarios by name with
    # the natural throws last, throws by seed
    out: dict[str, dict[str, list[dict]]] = {p: {} for p in dict.fromkeys(k[2] for k in seen)}
    for (scenario, _, profile), (row, _) in sorted(seen.items(), key=lambda kv: (kv[0][0] == "natural",
                                                                              kv[0][0], kv[0][1])):
        out[profile].setdefault(scenario, []).append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", nargs="*", type=Path, metavar="FILE.jsonl")
    ap.add_argument("--show-wrong", type=int, default=5, help="print up to N wrong verdicts per scenario")
    args = ap.parse_args(argv)
    if not args.rows:   # `make bench` runs every script without arguments
        print("irregularity rows: no rows files given (irregularity_bench.py --rows FILE.jsonl writes them); "
              "nothing to print")
        return 0
    try:
        by_profile = load_rows(args.rows)
    except (RowsError, OSError) as exc:
        print(f"irregularity rows: {exc}", file=sys.stderr)
        return 2
    first = min((r["seed"] for rows in by_profile.values() for rs in rows.values() for r in rs), default=0)
    shown = argparse.Namespace(mode=f"from {len(args.rows)} rows file(s)", wall_sensor=False, spare_dice=0, far_wall_struck=False,
                               first_seed=first, show_wrong=args.show_wrong)
    for name, rows in by_profile.items():
        B.report(rows, load_profile(name), shown, None, False, reader_stats=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
