"""The ``craps-table read`` and ``eval`` commands, through the real dispatcher."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import pytest

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


@pytest.mark.parametrize("line, fragment", [
    ("1 nan 0.5 0.1 0.1", "a.txt:2: cx must be a finite number, got nan"),
    ("1 0.5 inf 0.1 0.1", "a.txt:2: cy must be a finite number, got inf"),
    ("2.7 0.5 0.5 0.1 0.1", "a.txt:2: class must be an integer 0..5, got 2.7"),
    ("1 5.0 -3 0.1 0.1", "a.txt:2: cx 5.0 outside [0, 1]"),
    ("1 0.5 -3 0.1 0.1", "a.txt:2: cy -3.0 outside [0, 1]"),
    ("1 0.5 0.5 -0.1 0.1", "a.txt:2: w -0.1 outside (0, 1]"),
    ("1 0.5 0.5 0.1 0", "a.txt:2: h 0.0 outside (0, 1]"),
    ("1 0.5 0.5 0.1 0.1 9", "a.txt:2: expected 5 fields 'class cx cy w h', got 6"),
    ("1 0.5 0.5 0.1", "a.txt:2: expected 5 fields 'class cx cy w h', got 4"),
])
def test_eval_rejects_bad_label_values_by_file_and_line(tmp_path: Path, capsys, line: str, fragment: str) -> None:
    shutil.copy(PHOTO, tmp_path / "a.jpg")
    (tmp_path / "a.txt").write_text(f"4 0.5 0.5 0.1 0.1\n{line}\n")
    assert main(["eval", str(tmp_path), str(tmp_path)]) == 2
    cap = capsys.readouterr()
    assert f"craps-table eval: {tmp_path / 'a.txt'}:2: " in cap.err
    assert fragment in cap.err
    assert "Traceback" not in cap.err and cap.out == ""


def test_eval_integral_float_class_still_accepted(tmp_path: Path, capsys) -> None:
    shutil.copy(PHOTO, tmp_path / "a.jpg")
    shutil.copy(PHOTO.with_suffix(".txt"), tmp_path / "a.txt")
    text = (tmp_path / "a.txt").read_text().splitlines()
    (tmp_path / "a.txt").write_text("\n".join(f"{ln.split()[0]}.0 {' '.join(ln.split()[1:])}" for ln in text) + "\n")
    assert main(["eval", str(tmp_path), str(tmp_path)]) == 0
    assert "face accuracy     100.00 % of 5 matched dice" in capsys.readouterr().out


def test_eval_non_utf8_label_file_and_list_exit_2(tmp_path: Path, capsys) -> None:
    shutil.copy(PHOTO, tmp_path / "a.jpg")
    (tmp_path / "a.txt").write_bytes(b"\xff\xfe1 0.5 0.5 0.1 0.1\n")
    assert main(["eval", str(tmp_path), str(tmp_path)]) == 2
    assert f"{tmp_path / 'a.txt'}: not a UTF-8 text label file" in capsys.readouterr().err
    (tmp_path / "a.txt").unlink()
    names = tmp_path / "names.bin"
    names.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xff")
    assert main(["eval", str(tmp_path), str(tmp_path), "--list", str(names)]) == 2
    assert f"craps-table eval: --list {names}: not a UTF-8 text file" in capsys.readouterr().err


def test_eval_label_path_that_is_a_directory_exit_2(tmp_path: Path, capsys) -> None:
    shutil.copy(PHOTO, tmp_path / "a.jpg")
    (tmp_path / "a.txt").mkdir()
    assert main(["eval", str(tmp_path), str(tmp_path)]) == 2
    assert f"{tmp_path / 'a.txt'}: cannot read the label file" in capsys.readouterr().err


def test_eval_with_a_labels_dir_holding_no_label_of_these_images_exit_2(capsys) -> None:
    """A wrong LABELS_DIR measured every image as holding no dice: "recall 100.00 %", exit 0."""
    images, labels = DATA / "topdown-tray", DATA / "oblique-webcam"
    assert main(["eval", str(images), str(labels)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    n = len(list(images.glob("*.jpg")))
    assert f"{labels}: no label file for any of the {n} image(s)" in cap.err


def test_eval_list_names_matching_no_image_exit_2_and_a_stem_is_a_name(tmp_path: Path, capsys) -> None:
    folder = DATA / "topdown-tray"
    stem = sorted(folder.glob("*.jpg"))[0].stem
    lst = tmp_path / "list.txt"
    lst.write_text(f"{stem}\nnothere.jpg\n")
    assert main(["eval", str(folder), str(folder), "--list", str(lst)]) == 2
    assert f"1 name(s) of the list match no image in {folder}: nothere.jpg" in capsys.readouterr().err
    lst.write_text(f"{stem}\n")           # the stem alone names the image
    assert main(["eval", str(folder), str(folder), "--list", str(lst)]) == 0
    assert "images            1\n" in capsys.readouterr().out


@pytest.mark.parametrize("side, warned", [(100, True), (20, True), (45, False)])
def test_read_warns_when_side_px_disagrees_with_the_dice(side: int, warned: bool, capsys) -> None:
    """five_44.jpg's dice are ~43 px: given 100 the windows span two dice (a 5 read as a 6 at
    p 0.96), given 20 they see pips; the reader cannot tell, so the command says so."""
    assert main(["read", "--side-px", str(side), str(PHOTO)]) == 0
    err = capsys.readouterr().err
    assert ("warning: --side-px" in err) == warned
    if warned:
        assert f"{PHOTO}: warning: --side-px {side} but the dice read without it measure about 4" in err
