"""craps-table sim: a bad numeric option is named by its option, without a pydantic dump.
Found by the new-user pass: `craps-table sim --width -5` printed "1 validation error for
CameraConfig ... For further information visit https://errors.pydantic.dev/..."."""
from __future__ import annotations

import pytest

from controller.cli import main


@pytest.mark.parametrize("opt,value", [("--width", "-5"), ("--height", "10"), ("--fps", "0"),
                                       ("--noise", "-1"), ("--blur", "-2")])
def test_bad_numeric_option_is_named(tmp_path, capsys, opt, value):
    out = tmp_path / "out"
    assert main(["sim", "--out", str(out), opt, value]) == 2
    err = capsys.readouterr().err
    assert f"{opt} {value}" in err or f"{opt}: " in err, err
    assert "pydantic" not in err and "validation error" not in err and "\n" == err[-1] and err.count("\n") == 1
    assert not out.exists()


def test_negative_seed_is_named(tmp_path, capsys):
    from simulator.source import SimSource
    with pytest.raises(ValueError, match=r"seed must be >= 0, got -3"):
        SimSource("natural", seed=-3)
    assert main(["sim", "--out", str(tmp_path / "out"), "--seed", "-3"]) == 2
    err = capsys.readouterr().err
    assert "seed must be >= 0, got -3" in err and not (tmp_path / "out").exists()
