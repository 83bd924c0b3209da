"""Issue #5 item 6: the real dice beside the tray's wall in ../shared/data/dice-photos/topdown-tray
(``bench/tray_wall_report.py``). Looked at one by one (fifteenth session, docs/vision.md item 7),
they lie on the tray's floor against the wall, so the reader must mark them flat: a reader that
called them not flat would send real throws beside a wall to the boxperson (or void them).
Skipped where ../shared is absent."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.shared, pytest.mark.slow]

BENCH = Path(__file__).resolve().parents[1] / "bench" / "tray_wall_report.py"


def _report():
    spec = importlib.util.spec_from_file_location("tray_wall_report", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not (mod.TRAY / "images").is_dir():
        pytest.skip(f"labelled photos absent: {mod.TRAY}")
    return mod


def test_dice_against_the_tray_wall_are_marked_flat() -> None:
    rows, photos, dice = _report().measure()
    assert (photos, dice) == (250, 1795)
    assert len(rows) == 144                       # beside the tray's dark rim (125 in train photos)
    found = [r for *_, r in rows if r is not None]
    assert len(found) >= 140
    assert all(r.flat for r in found)
    assert min(r.extra["p_flat"] for r in found) >= 0.8
    assert min(r.extra["p_flat_tilt"] for r in found) >= 0.9
    right = sum(r is not None and r.value == value for _, _, value, *_, r in rows)
    wrong = sum(r is not None and r.value is not None and r.value != value for _, _, value, *_, r in rows)
    assert right >= 138 and wrong <= 1
