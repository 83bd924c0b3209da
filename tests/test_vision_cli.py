"""The ``craps-table read`` and ``eval`` commands, through the real dispatcher."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2

from controller.cli import main

DATA = Path(__file__).resolve().parent / "data" / "dice"
PHOTO = DATA / "oblique-webcam" / "five_44.jpg"


def test_read_json_and_annotate_with_an_unreadable_file(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "garbage.jpg"
    bad.write_bytes(b"\x00not a jpeg at all")
    out_dir = tmp_path / "ann"
    status = main(["read", str(bad), str(PHOTO), "--json", "--annotate", str(out_dir)])
    cap = capsys.readouterr()
    assert status == 2
    assert "garbage.jpg" in cap.err
    lines = [json.loads(ln) for ln in cap.out.splitlines() if ln.strip()]
    assert len(lines) == 1
    obj = lines[0]
    assert obj["image"] == str(PHOTO)
    assert (obj["width"], obj["height"]) == (640, 480)
    assert isinstance(obj["ms"], float)
    assert [d["value"] for d in obj["dice"]] == [5, 5, 5, 5, 5]
    for d in obj["dice"]:
        assert set(d) >= {"value", "bbox", "confidence", "flat"}
        x0, y0, x1, y1 = d["bbox"]
        assert 0 <= x0 < x1 <= 640 and 0 <= y0 < y1 <= 480
        assert 0.0 <= d["confidence"] <= 1.0
        assert isinstance(d["flat"], bool)
    png = out_dir / "five_44.png"
    assert cv2.imread(str(png)).shape == (480, 640, 3)


def test_read_missing_file_exit_2(capsys) -> None:
    assert main(["read", "/nonexistent/dice.png"]) == 2
    assert "/nonexistent/dice.png" in capsys.readouterr().err


def test_eval_prints_the_report(tmp_path: Path, capsys) -> None:
    for p in (DATA / "oblique-webcam").glob("*"):
        shutil.copy(p, tmp_path / p.name)
    assert main(["eval", str(tmp_path), str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "recall            100.00 %" in out
    assert "face accuracy     100.00 %" in out
    assert "confusion" in out and "median ms/image" in out


def test_eval_bad_label_exit_2(tmp_path: Path, capsys) -> None:
    shutil.copy(PHOTO, tmp_path / "a.jpg")
    (tmp_path / "a.txt").write_text("7 0.5 0.5 0.1 0.1\n")
    assert main(["eval", str(tmp_path), str(tmp_path)]) == 2
    assert "a.txt:1" in capsys.readouterr().err
