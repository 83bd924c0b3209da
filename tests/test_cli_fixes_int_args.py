"""Counts and seeds are checked by argparse: exit status 2 naming the option."""
from __future__ import annotations

import pytest

from controller.cli import main


@pytest.mark.parametrize("argv, option, says", [
    (["demo", "--seed", "-3"], "--seed", "must be >= 0, got -3"),
    (["demo", "--rolls", "0"], "--rolls", "must be >= 1, got 0"),
    (["demo", "--rolls", "two"], "--rolls", "expected a whole number, got 'two'"),
    (["run", "--max-verdicts", "-1"], "--max-verdicts", "must be >= 1, got -1"),
    (["run", "--max-rounds", "0"], "--max-rounds", "must be >= 1, got 0"),
])
def test_bad_count_or_seed_exit_2_naming_the_option(argv, option, says, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {says}" in err


def test_good_values_are_parsed() -> None:
    import argparse

    from controller import service_cli

    p = argparse.ArgumentParser()
    service_cli.add_arguments("demo", p)
    args = p.parse_args(["--seed", "0", "--rolls", "3"])
    assert (args.seed, args.rolls) == (0, 3)
    p = argparse.ArgumentParser()
    service_cli.add_arguments("run", p)
    args = p.parse_args(["--max-verdicts", "1", "--max-rounds", "7"])
    assert (args.max_verdicts, args.max_rounds) == (1, 7)


@pytest.mark.parametrize("mode", [[], ["--mode", "table"]])
def test_max_rounds_without_a_round_mode_is_exit_2(tmp_path, capsys, mode) -> None:
    """--max-rounds with --mode table (the default) was ignored: the service ran until
    interrupted. Refused before anything starts."""
    from pathlib import Path

    from tableconfig import write_test_config

    config = write_test_config(tmp_path)
    folder = Path(__file__).resolve().parent / "data" / "dice" / "topdown-tray"
    assert main(["run", "--config", str(config), "--source", f"replay:{folder}", "--max-verdicts", "1",
                 "--max-rounds", "2", *mode]) == 2
    err = capsys.readouterr().err
    assert "craps-table run: --max-rounds needs --mode automated or live" in err
    assert "bus.keys_dir" not in err and not (tmp_path / "state.sqlite").exists()
