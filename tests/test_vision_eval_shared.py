"""The reader measured on the labelled photographs in ../shared/data/dice-photos (the
report splits: topdown-tray test.txt and oblique-webcam/valid). Skipped where absent.

Two kinds of floor:
- regression floors, just under what the reader measures today, that must hold;
- the targets of issue 2 (topdown test recall >= 98 %, face accuracy >= 99 % of matched
  dice; oblique valid face accuracy >= 97 %). The oblique target is met by the default
  (learned) reader; the topdown face accuracy is not (96 %), and that test is a strict xfail
  so the day it is met the marker must be removed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from vision.evaluate import evaluate, image_pairs

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "dice-photos"

pytestmark = [pytest.mark.shared, pytest.mark.slow]


@pytest.fixture(scope="module")
def topdown():
    d = SHARED / "topdown-tray"
    if not (d / "test.txt").is_file():
        pytest.skip(f"labelled photos absent: {d}")
    return evaluate(image_pairs(d / "images", d / "labels", (d / "test.txt").read_text().split()))


@pytest.fixture(scope="module")
def oblique():
    d = SHARED / "oblique-webcam" / "valid"
    if not d.is_dir():
        pytest.skip(f"labelled photos absent: {d}")
    return evaluate(image_pairs(d, d))


def test_topdown_regression_floors(topdown) -> None:
    assert topdown.n_labels == 308
    assert topdown.recall >= 0.98
    assert topdown.face_accuracy >= 0.95
    # A wrong number is far worse than a null: at most 2.5 % of matched dice.
    assert topdown.wrong_values <= 0.025 * topdown.n_matched


def test_oblique_regression_floors(oblique) -> None:
    assert oblique.n_labels == 255
    assert oblique.recall >= 0.97
    assert oblique.face_accuracy >= 0.98
    assert oblique.wrong_values <= 0.01 * oblique.n_matched


@pytest.mark.xfail(strict=True, reason="issue 2 target not yet met (see docs/vision.md)")
def test_topdown_issue_targets(topdown) -> None:
    assert topdown.recall >= 0.98
    assert topdown.face_accuracy >= 0.99


def test_oblique_issue_target(oblique) -> None:
    assert oblique.face_accuracy >= 0.97
