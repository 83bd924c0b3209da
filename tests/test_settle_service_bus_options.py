"""craps-table settle-service: where the bus is (--bus-dir of a table's local bus, --config of a
table's table.toml) and --max-rolls. A subscriber never makes the table's keys: a mistyped
--bus-dir made a new directory with a whole key set (the table's secret signing key included)
and waited for rolls from a table that could not exist."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bus.config import BusConfig
from controller.cli import main


def settle_service(*args: str) -> subprocess.CompletedProcess:
    """``craps-table settle-service ARGS`` in a process, bounded in time (a service that does
    not refuse its arguments waits for rolls: killed after 60 s, the test fails)."""
    return subprocess.run([sys.executable, "-m", "controller.cli", "settle-service", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)


def test_a_bus_dir_that_does_not_exist_is_refused_and_nothing_is_created(tmp_path: Path):
    bus_dir = tmp_path / "x" / "typo-dir"
    ledger = tmp_path / "l.sqlite"
    p = settle_service("--bus-dir", str(bus_dir), "--ledger", str(ledger))
    assert p.returncode == 2
    err = p.stderr
    keys = bus_dir / "keys"
    assert f"craps-table settle-service: bus directory {bus_dir} does not exist" in err
    assert f"`craps-table keys generate table --dir {keys}`" in err
    assert f"`craps-table keys generate settlement --dir {keys} --authorize`" in err
    assert "waiting for rolls" not in err and "Traceback" not in err
    assert not (tmp_path / "x").exists() and not ledger.exists()


def test_a_bus_dir_without_keys_is_refused_naming_the_missing_files(tmp_path: Path):
    bus_dir = tmp_path / "bus"
    bus_dir.mkdir()
    ledger = tmp_path / "l.sqlite"
    p = settle_service("--bus-dir", str(bus_dir), "--ledger", str(ledger))
    assert p.returncode == 2
    err = p.stderr
    keys = bus_dir / "keys"
    assert f"craps-table settle-service: bus directory {bus_dir}: bus.keys_dir {keys} does not exist" in err
    assert f"`craps-table keys generate table --dir {keys}`" in err
    assert list(bus_dir.iterdir()) == [] and not ledger.exists()


def test_only_the_missing_key_set_is_named_and_its_command_makes_it(tmp_path: Path, capsys):
    bus_dir = tmp_path / "bus"
    keys = bus_dir / "keys"
    assert main(["keys", "generate", "table", "--dir", str(keys)]) == 0   # the table's, not the subscriber's
    capsys.readouterr()
    before = sorted(p.name for p in keys.iterdir())
    p = settle_service("--bus-dir", str(bus_dir), "--ledger", str(tmp_path / "l.sqlite"))
    assert p.returncode == 2
    err = p.stderr
    assert f"bus directory {bus_dir}: bus.keys_dir {keys}: missing settlement.key_secret; make the keys with " \
           f"`craps-table keys generate settlement --dir {keys} --authorize`" in err
    assert "keys generate table" not in err
    assert sorted(p.name for p in keys.iterdir()) == before   # nothing made
    assert main(["keys", "generate", "settlement", "--dir", str(keys), "--authorize"]) == 0
    BusConfig.local(bus_dir, make_keys=False)   # what settle-service reads: now complete


def test_the_demo_s_local_bus_still_makes_its_keys(tmp_path: Path):
    cfg = BusConfig.local(tmp_path / "demo-bus")
    assert (cfg.keys_dir / "table.ed25519").is_file() and (cfg.keys_dir / "settlement.key_secret").is_file()
    assert BusConfig.local(tmp_path / "demo-bus", make_keys=False) == cfg
