"""config/table.toml: the shipped file is valid; wrong keys/values are named; exit status 2."""
from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import pytest

from controller.config import ConfigError, load_config, parse_config

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "config" / "table.toml"


def shipped() -> dict:
    return tomllib.loads(SHIPPED.read_text())


def test_shipped_config_is_valid():
    cfg = load_config(SHIPPED)
    assert cfg.table.id == "table-1" and cfg.bus.table_id == "table-1"
    assert cfg.vision.still_frames == 8 and cfg.lamps.pins["point-10"] == 21
    assert [p.name for p in cfg.settlement.players] == ["alice", "bob"]
    assert cfg.settlement.players[0].bets[0].amount_cents == 1000


def test_every_key_is_documented():
    """Each key of the shipped file has a comment line right above it or in its section."""
    text = SHIPPED.read_text().splitlines()
    for i, line in enumerate(text):
        s = line.strip()
        if not s or s.startswith("#") or s.startswith("[") or s.startswith("bets"):
            continue
        key = s.split("=")[0].strip()
        above = [t.strip() for t in text[max(0, i - 12):i]]
        assert any(t.startswith("#") for t in above), f"key {key} has no comment"


@pytest.mark.parametrize("edit, key", [
    (lambda d: d["vision"].update(still_framez=3), "vision.still_framez"),
    (lambda d: d["vision"].update(still_frames=0), "vision.still_frames"),
    (lambda d: d["vision"].update(min_confidence=1.5), "vision.min_confidence"),
    (lambda d: d["vision"].update(table_area=[[0, 0], [1, 1]]), "vision.table_area"),
    (lambda d: d["camera"].update(source="webcam"), "camera.source"),
    (lambda d: d["camera"]["usb"].update(exposur=3), "camera.usb.exposur"),
    (lambda d: d["lamps"].update(driver="relay"), "lamps.driver"),
    (lambda d: d["lamps"]["pins"].update({"point-7": 4}), "lamps.pins"),
    (lambda d: d["lamps"]["pins"].update({"fault": 5}), "lamps.pins"),
    (lambda d: d["bus"].update(pub_endpoint="http://x"), "bus.pub_endpoint"),
    (lambda d: d["rules"]["actions"].update({"dice-off-table": "read"}), "rules.actions"),
    (lambda d: d["settlement"]["players"][0]["bets"][0].update(amount_cents=-5),
     "settlement.players.0.bets.0.amount_cents"),
    (lambda d: d.update(tabel={"id": "x"}), "tabel"),
    (lambda d: d["table"].update(id="bad id!"), "table.id"),
])
def test_wrong_key_or_value_is_named(edit, key):
    data = shipped()
    edit(data)
    with pytest.raises(ConfigError) as err:
        parse_config(data, "t.toml")
    assert f"t.toml: {key}:" in str(err.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\nid = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_run_exits_2_naming_the_key(tmp_path, capsys):
    from controller import service_cli

    text = SHIPPED.read_text().replace("still_frames = 8", "still_frames = -1")
    cfg = tmp_path / "table.toml"
    cfg.write_text(text)
    parser = argparse.ArgumentParser()
    service_cli.add_arguments("run", parser)
    args = parser.parse_args(["--config", str(cfg)])
    assert service_cli.run("run", args) == 2
    assert "vision.still_frames" in capsys.readouterr().err


def test_rules_profile_and_boxperson_section(tmp_path):
    cfg = parse_config({"rules": {"profile": "house-practice", "actions": {"extra-dice": "no-roll"}}})
    policy = cfg.rules.build()
    from controller.reasons import Reason

    assert policy.name == "house-practice+custom" and policy.action(Reason.EXTRA_DICE).value == "no-roll"
    assert policy.action(Reason.DIE_NOT_FLAT).value == "read"  # house practice: a cocked die as read
    for data, key in [({"rules": {"profile": "atlantis"}}, "rules.profile"),
                      ({"rules": {"calibration": str(tmp_path / "none.toml")}}, "rules.calibration"),
                      ({"boxperson": {"endpoint": "tcp://0.0.0.0:5560"}}, "boxperson.endpoint"),
                      ({"boxperson": {"timeout_s": 0}}, "boxperson.timeout_s")]:
        with pytest.raises(ConfigError) as err:
            parse_config(data, "t.toml")
        assert f"t.toml: {key}:" in str(err.value)
    # with CURVE the socket is authenticated, so it may listen beyond loopback
    cfg = parse_config({"boxperson": {"curve": True, "endpoint": "tcp://0.0.0.0:5560"}})
    assert cfg.boxperson.curve and cfg.boxperson.endpoint == "tcp://0.0.0.0:5560"
    with pytest.raises(ConfigError, match="without curve = true"):
        parse_config({"boxperson": {"endpoint": "tcp://192.168.1.20:5560"}}, "t.toml")


def test_settlement_profile_is_loaded_at_config_load(tmp_path, capsys):
    with pytest.raises(ConfigError) as err:
        parse_config({"settlement": {"profile": "bogus"}}, "t.toml")
    msg = str(err.value)
    assert msg.startswith("t.toml: settlement.profile: ") and "profile not found: " in msg
    assert msg.endswith("bogus.toml (got 'bogus')")
    # a profile file with a wrong key: its file and dotted key are named too
    bad = tmp_path / "bad-profile.toml"
    bad.write_text('[settlement]\nnamee = "x"\n')
    with pytest.raises(ConfigError) as err:
        parse_config({"settlement": {"profile": str(bad)}}, "t.toml")
    assert f"t.toml: settlement.profile: Value error, {bad}: settlement." in str(err.value)
    for name in ("ny-5324", "nj-13-47", "ny-4620"):
        assert parse_config({"settlement": {"profile": name}}).settlement.profile == name
    # craps-table demo --config: exit 2 at load, before the table runs
    from controller.cli import main

    cfg = tmp_path / "table.toml"
    head, tail = SHIPPED.read_text().split("\n[settlement]\n")
    cfg.write_text(head + "\n[settlement]\n" + tail.replace('profile = "ny-5324"', 'profile = "bogus"', 1))
    assert "bogus" in cfg.read_text()
    assert main(["demo", "--config", str(cfg), "--rolls", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{cfg}: settlement.profile: Value error, profile not found: " in err


def _toml_value(text: str):
    return tomllib.loads(f"v = {text}")["v"]


@pytest.mark.parametrize("section, key, value, message", [
    ("vision", "still_frames", '"8"', "Input should be a valid integer (got '8')"),
    ("vision", "still_frames", "8.0", "Input should be a valid integer (got 8.0)"),
    ("vision", "still_frames", "true", "Input should be a valid integer (got True)"),
    ("vision", "read_crop", '"yes"', "Input should be a valid boolean (got 'yes')"),
    ("vision", "min_confidence", '"0.8"', "Input should be a valid number (got '0.8')"),
    ("vision", "table_area", '[[0, 0], [100, "0"], [100, 100]]', "Input should be a valid number (got '0')"),
    ("rules", "track", '"no"', "Input should be a valid boolean (got 'no')"),
    ("rules", "far_wall_reach_mm", "true", "Input should be a valid number (got True)"),
    ("bus", "hwm", '"1000"', "Input should be a valid integer (got '1000')"),
    ("bus", "prune_acked", "1", "Input should be a valid boolean (got 1)"),
    ("lamps", "active_high", "0", "Input should be a valid boolean (got 0)"),
    ("lamps", "brightness", '"0.5"', "Input should be a valid number (got '0.5')"),
    ("camera", "sim_seed", '"3"', "Input should be a valid integer (got '3')"),
    ("metrics", "port", "9108.0", "Input should be a valid integer (got 9108.0)"),
    ("health", "require_bus", '"false"', "Input should be a valid boolean (got 'false')"),
    ("rounds", "shake_ms", '"1500"', "Input should be a valid integer (got '1500')"),
])
def test_a_scalar_of_the_wrong_type_is_not_converted(section, key, value, message):
    data = shipped()
    data.setdefault(section, {})[key] = _toml_value(value)
    with pytest.raises(ConfigError) as err:
        parse_config(data, "t.toml")
    where = f"{section}.{key}" + (".1.1" if key == "table_area" else "")
    assert str(err.value) == f"t.toml: {where}: {message}"


@pytest.mark.parametrize("edit, key, message", [
    (lambda d: d["settlement"]["players"][0]["bets"][0].update(amount_cents="1000"),
     "settlement.players.0.bets.0.amount_cents", "Input should be a valid integer (got '1000')"),
    (lambda d: d["camera"]["usb"].update(width=1280.0), "camera.usb.width", "Input should be a valid integer (got 1280.0)"),
    (lambda d: d["camera"]["picamera2"].update(colour_gains=["1.8", 1.6]), "camera.picamera2.colour_gains.0",
     "Input should be a valid number (got '1.8')"),
    (lambda d: d["lamps"]["pins"].update({"fault": "24"}), "lamps.pins.fault", "Input should be a valid integer (got '24')"),
    (lambda d: d.update(firmware={"port": "/dev/ttyACM0", "baud": "115200"}), "firmware.baud",
     "Input should be a valid integer (got '115200')"),
])
def test_a_nested_value_of_the_wrong_type_is_not_converted(edit, key, message):
    data = shipped()
    edit(data)
    with pytest.raises(ConfigError) as err:
        parse_config(data, "t.toml")
    assert str(err.value) == f"t.toml: {key}: {message}"


def test_toml_integers_paths_and_arrays_are_still_taken(tmp_path):
    data = shipped()
    data["lamps"].update(brightness=1, flash_s=3)                        # integers where floats go
    data["vision"].update(still_s=1, table_area=[[0, 0], [640, 0], [640, 480]])
    data["camera"].update(source="replay", replay_path=str(tmp_path), replay_fps=30)
    data["camera"]["picamera2"].update(colour_gains=[2, 1.5])
    data["bus"].update(journal_path=str(tmp_path / "j.sqlite"), heartbeat_s=1)
    data["state"].update(db=str(tmp_path / "t.sqlite"))
    data["firmware"] = {"port": "/dev/ttyACM0", "ack_timeout_s": 1}
    cfg = parse_config(data, "t.toml")
    assert cfg.lamps.brightness == 1.0 and isinstance(cfg.lamps.brightness, float)
    assert cfg.vision.still_s == 1.0 and cfg.vision.table_area == [(0.0, 0.0), (640.0, 0.0), (640.0, 480.0)]
    assert cfg.camera.replay_path == tmp_path and cfg.camera.picamera2.colour_gains == (2.0, 1.5)
    assert cfg.bus.journal_path == tmp_path / "j.sqlite" and cfg.bus.heartbeat_s == 1.0
    assert cfg.state.db == tmp_path / "t.sqlite" and cfg.firmware.ack_timeout_s == 1.0
    assert cfg.boxperson.authorized_dir == Path("var/boxperson/consoles")


def test_run_exits_2_on_a_quoted_number(tmp_path, capsys):
    from controller import service_cli

    cfg = tmp_path / "table.toml"
    cfg.write_text(SHIPPED.read_text().replace("still_frames = 8", 'still_frames = "8"'))
    parser = argparse.ArgumentParser()
    service_cli.add_arguments("run", parser)
    assert service_cli.run("run", parser.parse_args(["--config", str(cfg)])) == 2
    assert f"{cfg}: vision.still_frames: Input should be a valid integer (got '8')" in capsys.readouterr().err
