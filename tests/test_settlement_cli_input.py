"""Settlement CLI: malformed scenario lines stop the run before anything is printed or written.

Found by the new-user pass: a misspelt field ("workng") was silently ignored, so the wager was
settled as if the player had not asked for it; and a roll seq out of order was found only after
earlier rolls had been printed and committed to the ledger file.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from controller.cli import main


def _write(path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_misspelt_field_on_a_bet_line_exits_2_naming_line_and_key(tmp_path, capsys):
    scen = _write(tmp_path / "s.jsonl", [
        {"type": "bet", "player": "p", "bet": "pass", "amount": 1000},
        {"type": "roll", "dice": [3, 3]},
        {"type": "bet", "player": "p", "bet": "place", "number": 8, "amount": 600, "workng": True},
        {"type": "roll", "dice": [4, 4]},
    ])
    assert main(["settle", "--profile", "ny-5324", str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "s.jsonl:3" in cap.err and "'workng'" in cap.err


def test_misspelt_seq_on_a_roll_line_exits_2(tmp_path, capsys):
    scen = _write(tmp_path / "s.jsonl", [{"type": "roll", "dice": [3, 4], "sequence": 7}])
    assert main(["settle", "--profile", "ny-5324", str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "s.jsonl:1" in cap.err and "'sequence'" in cap.err


def test_known_fields_still_accepted(tmp_path, capsys):
    scen = _write(tmp_path / "s.jsonl", [
        {"type": "bet", "player": "p", "bet": "pass", "amount": 1000, "comment": "line bet"},
        {"type": "roll", "dice": [3, 3], "seq": 4},
        {"type": "bet", "player": "p", "bet": "place", "number": 8, "amount": 600, "working": True},
        {"type": "working", "player": "p", "bet": "place", "number": 8, "on": False},
        {"type": "bet", "player": "q", "bet": "hop", "dice": [2, 6], "amount": 100},
        {"type": "remove", "player": "p", "bet": "place", "number": 8},
        {"type": "shooter", "change": "voluntary"},
        {"type": "roll", "dice": [2, 6], "seq": 5},
    ])
    assert main(["settle", "--profile", "ny-5324", str(scen)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    hop = [x for x in lines if x.get("bet") == "hop"]
    assert hop == [{"roll": 5, "player": "q", "bet": "hop", "dice": [2, 6], "result": "win",
                    "stake": 100, "payout": 1500, "vig": 0}]


def test_seq_out_of_order_exits_2_before_printing_or_writing(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite"
    scen = _write(tmp_path / "s.jsonl", [
        {"type": "bet", "player": "p", "bet": "field", "amount": 500},
        {"type": "roll", "dice": [6, 6], "seq": 3},
        {"type": "roll", "dice": [1, 1], "seq": 2},
    ])
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(ledger), str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "s.jsonl:3" in cap.err and "seq 2" in cap.err
    if ledger.exists():
        db = sqlite3.connect(ledger)
        try:
            rows = db.execute("SELECT COUNT(*) FROM rolls").fetchone()[0]
        except sqlite3.OperationalError:
            rows = 0
        assert rows == 0


def test_seq_below_a_resumed_ledger_exits_2_before_printing(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite"
    first = _write(tmp_path / "a.jsonl", [{"type": "roll", "dice": [3, 4], "seq": 10}])
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(ledger), str(first)]) == 0
    capsys.readouterr()
    again = _write(tmp_path / "b.jsonl", [
        {"type": "bet", "player": "p", "bet": "field", "amount": 500},
        {"type": "roll", "dice": [6, 6], "seq": 11},
        {"type": "roll", "dice": [1, 1], "seq": 9},
    ])
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(ledger), str(again)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "b.jsonl:3" in cap.err
    db = sqlite3.connect(ledger)
    assert db.execute("SELECT MAX(seq) FROM rolls").fetchone()[0] == 10
    # a repeated seq (already applied) is idempotent, not an error
    rep = _write(tmp_path / "c.jsonl", [{"type": "roll", "dice": [3, 4], "seq": 10}])
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(ledger), str(rep)]) == 0


def test_a_ledger_that_is_not_a_database_exits_2_naming_it(tmp_path, capsys):
    scen = _write(tmp_path / "s.jsonl", [{"type": "roll", "dice": [3, 4]}])
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(bytes(range(256)) * 16)
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(bad), str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert f"craps-table settle: ledger {bad}: file is not a database" in cap.err


def test_a_ledger_in_a_missing_directory_exits_2_naming_it(tmp_path, capsys):
    scen = _write(tmp_path / "s.jsonl", [{"type": "roll", "dice": [3, 4]}])
    path = tmp_path / "missing" / "ledger.sqlite"
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(path), str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert f"craps-table settle: ledger {path}: unable to open database file" in cap.err


def test_a_seq_beyond_the_ledgers_integer_exits_2_before_anything_is_written(tmp_path, capsys):
    """A seq of 2**63 or more cannot be stored (SQLite's INTEGER): it used to print and commit
    the rolls before it, then end in an OverflowError traceback."""
    ledger = tmp_path / "l.sqlite"
    scen = _write(tmp_path / "s.jsonl", [
        {"type": "bet", "player": "p", "bet": "pass", "amount": 1000},
        {"type": "roll", "dice": [3, 4]},
        {"type": "roll", "dice": [1, 2], "seq": 2**63},
    ])
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(ledger), str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert f"s.jsonl:3: roll 'seq' must be an integer 1..{2**63 - 1}, not {2**63}" in cap.err
    assert not ledger.exists() or sqlite3.connect(ledger).execute("SELECT COUNT(*) FROM rolls").fetchone()[0] == 0


def test_a_roll_without_seq_after_the_largest_seq_exits_2(tmp_path, capsys):
    scen = _write(tmp_path / "s.jsonl", [
        {"type": "roll", "dice": [3, 3], "seq": 2**63 - 1},
        {"type": "roll", "dice": [1, 2]},
    ])
    assert main(["settle", "--profile", "ny-5324", str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "s.jsonl:2: roll without a seq after seq 9223372036854775807" in cap.err


@pytest.mark.parametrize("line", [
    {"type": "bet", "player": "p", "bet": "place", "number": 8, "amount": 600, "working": "yes"},
    {"type": "bet", "player": "p", "bet": "place", "number": 8, "amount": 600, "working": 1},
    {"type": "bet", "player": "p", "bet": "place", "number": 8, "amount": 600, "working": None},
    {"type": "working", "player": "p", "bet": "place", "number": 8, "on": True, "working": "on"},
    {"type": "remove", "player": "p", "bet": "place", "number": 8, "working": 0},
])
def test_a_working_value_not_true_or_false_exits_2_on_any_line_before_printing_or_writing(tmp_path, capsys, line):
    """A bad 'working' on a bet line was a "rejected" record while a bad 'on' on a working line
    stopped the run: both are malformed input, exit 2 naming file:line, nothing printed or written."""
    ledger = tmp_path / "ledger.sqlite"
    scen = _write(tmp_path / "s.jsonl", [
        {"type": "bet", "player": "p", "bet": "pass", "amount": 1000},
        {"type": "roll", "dice": [3, 3]},
        line,
        {"type": "roll", "dice": [4, 4]},
    ])
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(ledger), str(scen)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and not ledger.exists()
    assert f"craps-table settle: {scen}:3: {line['type']} 'working' must be true or false, not " \
           f"{line['working']!r}" in cap.err
