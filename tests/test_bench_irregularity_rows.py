"""``bench/irregularity_rows.py``: the bench's tables from ``--rows`` files of runs split over
processes (made here by hand: three throws, two profiles, two files)."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from bench_module import irregularity_bench

irregularity_bench()  # registered first: the rows script imports it by name
_spec = importlib.util.spec_from_file_location(
    "irregularity_rows", Path(__file__).resolve().parents[1] / "bench" / "irregularity_rows.py")
R = importlib.util.module_from_spec(_spec)
sys.modules["irregularity_rows"] = R
_spec.loader.exec_module(R)


def _row(scenario, seed, profile, expected, got, right, wrong_value=False):
    return {"scenario": scenario, "seed": seed, "profile": profile, "expected": expected, "got": got,
            "right": right, "wrong_value": wrong_value, "near_line": False, "notes": ["n"]}


ROLL_34 = ["roll", None, [3, 4]]


def _files(tmp_path: Path) -> list[Path]:
    a = [_row("natural", 10, "ny-5324", ROLL_34, ROLL_34, True),
         _row("natural", 10, "nj-13-47", ROLL_34, ROLL_34, True),
         # a far-wall miss credited: published, the truth a no roll
         _row("natural", 11, "ny-5324", ["no-roll", "far-wall-missed", None], ROLL_34, False, True),
         _row("natural", 11, "nj-13-47", ROLL_34, ROLL_34, True)]
    b = [_row("on-rail", 10, "ny-5324", ["no-roll", "die-on-rail", None], ["no-roll", "die-on-rail", None], True),
         _row("on-rail", 10, "nj-13-47", ["boxperson", "die-on-rail", None], ["boxperson", "die-on-rail", None], True),
         # a roll published with other dice than the truth
         _row("natural", 12, "ny-5324", ROLL_34, ["roll", None, [3, 5]], False, True),
         _row("natural", 12, "nj-13-47", ROLL_34, ["boxperson", "face-unreadable", None], False),
         # the same throw again (a file given twice, or runs that overlap): counted once
         _row("natural", 10, "ny-5324", ROLL_34, ROLL_34, True)]
    paths = []
    for name, rows in (("a.jsonl", a), ("b.jsonl", b)):
        p = tmp_path / name
        p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        paths.append(p)
    return paths


def test_tables_merge_the_files_per_profile_each_throw_once(tmp_path, capsys):
    assert R.main([str(p) for p in _files(tmp_path)] + ["--show-wrong", "1"]) == 0
    out = capsys.readouterr().out
    tables = out.split("irregularity bench: profile ")[1:]
    assert [t.split(",")[0] for t in tables] == ["ny-5324", "nj-13-47"]
    lines = {t.split(",")[0]: {ln.split()[0]: ln.split()[1:8] for ln in t.splitlines()
                               if ln.startswith(("natural ", "on-rail "))} for t in tables}
    # throws, right, right %, no-roll, boxp, roll, wrong value
    assert lines["ny-5324"]["natural"] == ["3", "1", "33.33%", "0", "0", "3", "2"]
    assert lines["ny-5324"]["on-rail"] == ["1", "1", "100.00%", "1", "0", "0", "0"]
    assert lines["nj-13-47"]["natural"] == ["3", "2", "66.67%", "0", "1", "2", "0"]
    assert "natural: 3 throws, 2 valid rolls published wrongly: 1 with other dice than the truth, 1 where " \
           "the truth is not a valid roll; 0 to the boxperson" in tables[0]
    assert "1 to the boxperson (33.33 %; target <= 0.5 %)" in tables[1]
    # --show-wrong 1: the first wrong natural verdict by seed, under ny-5324 seed 11
    assert "wrong natural seed 11: expected no-roll far-wall-missed None, got roll None (3, 4)" in tables[0]
    assert "seed 12" not in tables[0]


def test_two_verdicts_for_one_throw_or_a_foreign_line_refused_naming_where(tmp_path, capsys):
    a, b = _files(tmp_path)
    c = tmp_path / "c.jsonl"
    c.write_text(json.dumps(_row("natural", 10, "ny-5324", ROLL_34, ["no-roll", "not-at-rest", None], False)) + "\n",
                 encoding="utf-8")
    assert R.main([str(a), str(c)]) == 2
    err = capsys.readouterr().err
    assert f"{c}:1: ('natural', 10, 'ny-5324') has another verdict at {a}:1" in err
    c.write_text('{"scenario": "natural"}\nnot json\n', encoding="utf-8")
    assert R.main([str(c)]) == 2
    assert f"{c}:1: not a verdict of irregularity_bench --rows (no seed, profile, expected" in capsys.readouterr().err
    c.write_text(json.dumps(_row("natural", 1, "ny-5324", ["roll", "no-such-reason", None], ROLL_34, True)) + "\n",
                 encoding="utf-8")
    assert R.main([str(c)]) == 2
    assert f"{c}:1: not a verdict of irregularity_bench --rows ('no-such-reason' is not a valid Reason)" \
        in capsys.readouterr().err
    assert R.main([]) == 0     # `make bench` runs it without arguments
    assert "no rows files given" in capsys.readouterr().out
