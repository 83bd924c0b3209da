"""A start without bus keys names every step at once, with the configured keys directory."""
from __future__ import annotations

import argparse
from pathlib import Path

from controller import service_cli
from controller.cli import main
from controller.config import load_config
from tableconfig import write_test_config



def _config(tmp_path: Path) -> Path:
    return write_test_config(tmp_path, keys_dir=tmp_path / "my keys")


def _run(config: Path) -> int:
    parser = argparse.ArgumentParser()
    service_cli.add_arguments("run", parser)
    folder = Path(__file__).resolve().parent / "data" / "dice" / "topdown-tray"
    return service_cli.run("run", parser.parse_args(["--config", str(config), "--source", f"replay:{folder}",
                                                    "--log-level", "ERROR"]))


def test_missing_keys_message_gives_both_steps_once(tmp_path: Path, capsys) -> None:
    config = _config(tmp_path)
    keys = tmp_path / "my keys"
    assert _run(config) == 2
    err = capsys.readouterr().err
    first = f"`craps-table keys generate table --dir {keys}`"
    second = f"`craps-table keys generate settlement --dir {keys} --authorize`"
    assert first in err and second in err
    assert err.index(first) < err.index(second)
    assert err.count("craps-table keys") == 2  # each step once, no second hint
    assert f"bus.keys_dir {keys}: missing" in err
    # the two steps, as printed, are all that is needed
    assert main(["keys", "generate", "table", "--dir", str(keys)]) == 0
    assert main(["keys", "generate", "settlement", "--dir", str(keys), "--authorize"]) == 0
    assert service_cli.missing_bus_keys(load_config(config).bus) is None


def test_only_the_allow_list_missing_gives_only_that_step(tmp_path: Path, capsys) -> None:
    config = _config(tmp_path)
    keys = tmp_path / "my keys"
    assert main(["keys", "generate", "table", "--dir", str(keys)]) == 0
    capsys.readouterr()
    assert _run(config) == 2
    err = capsys.readouterr().err
    assert f"missing the allow-list {keys / 'authorized'}" in err
    assert f"`craps-table keys generate settlement --dir {keys} --authorize`" in err
    assert "keys generate table" not in err
