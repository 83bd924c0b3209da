"""craps-table settle-service: where the bus is (--bus-dir of a table's local bus, --config of a
table's table.toml) and --max-rolls. A subscriber never makes the table's keys: a mistyped
--bus-dir made a new directory with a whole key set (the table's secret signing key included)
and waited for rolls from a table that could not exist."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


# ---- --config: the bus of a table started with craps-table run --config PATH ----------------

def _roll(d1: int, d2: int) -> dict:
    return {"roll_id": f"r{d1}{d2}", "verdict": "roll", "reason": None, "dice": [d1, d2], "total": d1 + d2,
            "game": {"shooter": 1, "shooter_roll": 1, "come_out": True, "point": None, "puck": "OFF",
                     "outcome": None}, "frame_sha256": "0" * 64, "decision": None}


def test_settle_service_with_the_table_config_settles_a_roll_of_that_table(tmp_path: Path):
    from bus.keys import ensure_keys
    from bus.publisher import RollPublisher
    from controller.config import load_config
    from tableconfig import write_test_config

    config = write_test_config(tmp_path)          # [bus]: loopback tcp endpoints, tmp_path/keys
    bus = load_config(config).bus
    assert bus.pub_endpoint.startswith("tcp://127.0.0.1:")
    ensure_keys(bus.keys_dir, table=bus.table_key, subscriber=bus.subscriber_key, authorized_dir=bus.allow_dir)
    ledger = tmp_path / "ledger.sqlite"
    pub = RollPublisher(bus)                      # the table's side of that bus
    try:
        pub.publish("roll", _roll(5, 6))          # a natural 11; journalled: replayed to a late subscriber
        p = settle_service("--config", str(config), "--ledger", str(ledger), "--max-rolls", "1")
    finally:
        pub.close()
    assert p.returncode == 0, p.stderr
    assert f"bus {bus.pub_endpoint}, ledger {ledger}: waiting for rolls" in p.stderr
    settled = [x for x in p.stdout.splitlines() if x.startswith("settle seq=1 dice=5-6 ")]
    # the config's own [settlement.players] (alice, bob), not the service's four default bettors
    assert any("alice pass stake $10.00 wins $10.00" in x for x in settled), p.stdout
    assert any("bob dont_pass stake $5.00 loses" in x for x in settled), p.stdout
    assert "p1 " not in p.stdout
    assert "profile ny-5324," in p.stderr


def test_settle_service_with_a_config_settles_on_its_profile_unless_given(tmp_path: Path):
    """A table configured for nj-13-47 ([settlement] profile) is settled on nj-13-47's pay
    tables by `settle-service --config`, not on the default ny-5324's; --profile still wins."""
    from bus.keys import ensure_keys
    from bus.publisher import RollPublisher
    from controller.config import load_config
    from tableconfig import write_test_config

    config = write_test_config(tmp_path)
    text = config.read_text()
    head, sep, tail = text.partition("[settlement]\n")
    assert sep and 'profile = "ny-5324"' in tail
    config.write_text(head + sep + tail.replace('profile = "ny-5324"', 'profile = "nj-13-47"', 1))
    bus = load_config(config).bus
    ensure_keys(bus.keys_dir, table=bus.table_key, subscriber=bus.subscriber_key, authorized_dir=bus.allow_dir)
    pub = RollPublisher(bus)
    try:
        pub.publish("roll", _roll(5, 6))          # journalled: each subscriber below settles it
        p = settle_service("--config", str(config), "--ledger", str(tmp_path / "a.sqlite"), "--max-rolls", "1")
        q = settle_service("--config", str(config), "--profile", "ny-4620", "--ledger", str(tmp_path / "b.sqlite"),
                           "--max-rolls", "1")
    finally:
        pub.close()
    assert p.returncode == 0 and q.returncode == 0, p.stderr + q.stderr
    assert "craps-table settle-service: profile nj-13-47," in p.stderr
    assert "craps-table settle-service: profile ny-4620," in q.stderr


def test_settle_service_config_without_keys_is_exit_2_naming_the_config_and_the_keys_dir(tmp_path: Path):
    from tableconfig import write_test_config

    keys = tmp_path / "my keys"
    config = write_test_config(tmp_path, keys_dir=keys)
    ledger = tmp_path / "ledger.sqlite"
    p = settle_service("--config", str(config), "--ledger", str(ledger))
    assert p.returncode == 2
    assert f"craps-table settle-service: {config}: bus.keys_dir {keys} does not exist; make the keys with " \
           f"`craps-table keys generate table --dir {keys}`" in p.stderr
    assert not keys.exists() and not ledger.exists() and "waiting for rolls" not in p.stderr


def test_settle_service_names_a_bad_config_key(tmp_path: Path):
    from tableconfig import write_test_config

    config = write_test_config(tmp_path)
    config.write_text(config.read_text().replace("hwm = 1000", "hwm = 0"))
    p = settle_service("--config", str(config), "--ledger", str(tmp_path / "l.sqlite"))
    assert p.returncode == 2 and "bus.hwm" in p.stderr and "Traceback" not in p.stderr


def test_bus_dir_and_config_are_one_or_the_other(tmp_path: Path):
    p = settle_service("--bus-dir", str(tmp_path), "--config", str(tmp_path / "t.toml"), "--ledger", "l.sqlite")
    assert p.returncode == 2
    assert "argument --config: not allowed with argument --bus-dir" in p.stderr
    p = settle_service("--ledger", "l.sqlite")
    assert p.returncode == 2 and "one of the arguments --bus-dir --config is required" in p.stderr


# ---- --max-rolls --------------------------------------------------------------------------

@pytest.mark.parametrize("value, says", [("0", "must be >= 1, got 0"), ("-1", "must be >= 1, got -1"),
                                         ("two", "expected a whole number, got 'two'")])
def test_max_rolls_below_one_is_exit_2_naming_the_option(tmp_path: Path, value: str, says: str):
    bus_dir = tmp_path / "bus"
    BusConfig.local(bus_dir)   # a usable bus: only the option is wrong
    p = settle_service("--bus-dir", str(bus_dir), "--ledger", str(tmp_path / "l.sqlite"), f"--max-rolls={value}")
    assert p.returncode == 2
    assert f"argument --max-rolls: {says}" in p.stderr
    assert "waiting for rolls" not in p.stderr and not (tmp_path / "l.sqlite").exists()
