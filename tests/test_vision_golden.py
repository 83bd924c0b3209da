"""Golden tests: real photographs (tests/data/dice, with their licences) whose every die
must be found and read right, and where nothing else may be given a number."""
from __future__ import annotations

from pathlib import Path

import cv2
import pytest

from vision.evaluate import load_labels, match
from vision.reader import read_dice

DATA = Path(__file__).resolve().parent / "data" / "dice"
PHOTOS = sorted(DATA.glob("*/*.jpg"))


def test_sample_is_present_with_licences() -> None:
    assert len(PHOTOS) >= 8
    for d in {p.parent for p in PHOTOS}:
        assert (d / "LICENSE").is_file(), d
    assert sum(p.stat().st_size for p in DATA.rglob("*")) < 1_500_000


@pytest.mark.parametrize("photo", PHOTOS, ids=[f"{p.parent.name}/{p.name}" for p in PHOTOS])
def test_every_die_read_right(photo: Path) -> None:
    img = cv2.imread(str(photo))
    h, w = img.shape[:2]
    labels = load_labels(photo.with_suffix(".txt"), w, h)
    assert labels, "a golden photo has labelled dice"
    readings = read_dice(img)
    pairs = match(readings, labels)
    got = sorted((labels[j].value, readings[i].value) for i, j in pairs)
    want = sorted((lb.value, lb.value) for lb in labels)
    assert got == want
    # Anything not matched to a die (tray corners, cables) must not carry a number.
    matched = {i for i, _ in pairs}
    assert [r.value for i, r in enumerate(readings) if i not in matched and r.value is not None] == []
