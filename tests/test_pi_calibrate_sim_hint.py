"""craps-table calibrate --source sim: the simulated table carries no ArUco markers, so the
command must say so (and where the simulated table's homography comes from) instead of only
"markers not found" and a hint to check the lighting. Found by the new-user pass."""
from __future__ import annotations

import pytest

pytest.importorskip("simulator.source", reason="the simulator is not in this build")

from controller.cli import main  # noqa: E402


def test_calibrate_on_the_simulated_table_explains_there_are_no_markers(tmp_path, capsys):
    out = tmp_path / "calibration.toml"
    assert main(["calibrate", "--source", "sim", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "markers [0, 1, 2, 3, 4, 5] not found" in err
    assert "simulated table" in err and "SimSource.homography" in err
    assert not out.exists()
