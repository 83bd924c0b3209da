"""The same bad input gives exit status 2 from ``run`` and ``demo`` alike."""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main

PHOTOS = sorted((Path(__file__).resolve().parent / "data" / "dice" / "topdown-tray").glob("*.jpg"))


@pytest.mark.parametrize("command", ["run", "demo"])
def test_missing_replay_path_is_exit_2(command: str, tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nonexist"
    assert main([command, "--source", f"replay:{missing}"]) == 2
    err = capsys.readouterr().err
    assert f"replay {missing}: no such file or folder" in err


def test_demo_on_a_folder_of_only_corrupt_photos_is_exit_2(tmp_path: Path, capsys) -> None:
    if not PHOTOS:
        pytest.skip("tests/data/dice/topdown-tray absent")
    folder = tmp_path / "corrupt"
    folder.mkdir()
    (folder / "half.jpg").write_bytes(PHOTOS[0].read_bytes()[:5000])
    assert main(["demo", "--rolls", "1", "--source", f"replay:{folder}"]) == 2
    err = capsys.readouterr().err
    assert f"replay {folder}: none of its 1 image file(s) can be read" in err


def test_demo_with_a_missing_config_file_is_exit_2(tmp_path: Path, capsys) -> None:
    """A --config typo must not run the demo on the built-in defaults (other players, other
    bets) and exit 0."""
    missing = tmp_path / "nofile.toml"
    assert main(["demo", "--rolls", "1", "--config", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: cannot read the config file" in err


def test_demo_interrupted_prints_its_summary_and_says_so(monkeypatch, capsys) -> None:
    """Ctrl-C during the demo: the summary of what was done and a line saying it was
    interrupted, exit 0 (as `run` stops on it), not a bare exit 130."""
    from controller.service import TableService

    real_run = TableService.run

    def run_then_ctrl_c(self, source, *, max_verdicts=None, **kw):
        real_run(self, source, max_verdicts=1, **kw)     # one verdict, then the user's Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(TableService, "run", run_then_ctrl_c)
    assert main(["demo", "--rolls", "5"]) == 0
    cap = capsys.readouterr()
    assert "done: 1 verdicts" in cap.out and "balances" in cap.out
    assert "craps-table demo: interrupted after 1 of 5 verdicts" in cap.err
