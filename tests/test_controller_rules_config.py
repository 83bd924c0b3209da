"""[rules] far_wall_reach_mm and [rules.tolerances]: validated, and they reach the irregularity
detectors of the service."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from controller.config import ConfigError, parse_config

SHIPPED = Path(__file__).resolve().parents[1] / "config" / "table.toml"


def _cfg(**rules):
    data = tomllib.loads(SHIPPED.read_text())
    data["rules"].update(rules)
    return parse_config(data, "test.toml")


def test_shipped_reach_is_the_whole_band():
    """A 30 fps camera track may not see a bouncing die's closest approach: left out."""
    assert _cfg().rules.far_wall_reach_mm is None
    assert _cfg(far_wall_reach_mm=23.5).rules.far_wall_reach_mm == 23.5


@pytest.mark.parametrize("bad", [0, -5, 1000])
def test_bad_reach_is_named(bad):
    with pytest.raises(ConfigError, match="rules.far_wall_reach_mm"):
        _cfg(far_wall_reach_mm=bad)


def test_reach_reaches_the_observer():
    from controller.service_cli import build_observer

    cfg = _cfg(far_wall_reach_mm=17.0)
    cfg = cfg.model_copy(update={"boxperson": cfg.boxperson.model_copy(update={"endpoint": ""})})
    hook, closers = build_observer(cfg, source=object(), area=None)
    try:
        observer = getattr(hook, "observer", hook)
        assert observer.tolerances.far_wall_reach_mm == 17.0
    finally:
        for close in closers:
            close()


def test_tolerances_are_optional_validated_and_reach_the_observer():
    from dataclasses import fields

    from controller.irregularity import Tolerances
    from controller.service_cli import build_observer

    assert _cfg().rules.build_tolerances() == Tolerances()
    # every detector threshold is a key (far_wall_reach_mm is one of [rules] itself)
    from controller.config import TolerancesSection
    assert set(TolerancesSection.model_fields) == {f.name for f in fields(Tolerances)} - {"far_wall_reach_mm"}
    cfg = _cfg(far_wall_reach_mm=17.0, tolerances={"sure_flat_off_wall": 0.9, "tilt_decides_off_walls": False})
    cfg = cfg.model_copy(update={"boxperson": cfg.boxperson.model_copy(update={"endpoint": ""})})
    hook, closers = build_observer(cfg, source=object(), area=None)
    try:
        tol = getattr(hook, "observer", hook).tolerances
        assert (tol.sure_flat_off_wall, tol.tilt_decides_off_walls, tol.far_wall_reach_mm) == (0.9, False, 17.0)
        assert tol.sure_flat == Tolerances().sure_flat
    finally:
        for close in closers:
            close()


@pytest.mark.parametrize("bad, key", [({"sure_flatt": 0.7}, "rules.tolerances.sure_flatt"),
                                      ({"sure_flat": 1.5}, "rules.tolerances.sure_flat"),
                                      ({"tilt_sure_flat": 1.2}, "rules.tolerances.tilt_sure_flat"),
                                      ({"leaning_ratio": -0.1}, "rules.tolerances.leaning_ratio"),
                                      ({"open_felt_is_flat": "yes"}, "rules.tolerances.open_felt_is_flat"),
                                      ({"sure_flat": True}, "rules.tolerances.sure_flat")])
def test_a_bad_tolerance_is_named(bad, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _cfg(tolerances=bad)


def test_reader_choice_is_validated_and_used():
    assert _cfg().vision.reader == "learned"
    data = tomllib.loads(SHIPPED.read_text())
    data["vision"]["reader"] = "neural"
    with pytest.raises(ConfigError, match="vision.reader"):
        parse_config(data, "test.toml")


def test_read_dice_method_overrides_the_environment(monkeypatch):
    import numpy as np

    from vision import learned, reader

    calls = []
    monkeypatch.setattr(learned, "read_dice_learned", lambda img, **kw: calls.append("learned") or [])
    monkeypatch.setattr(reader, "read_dice_classical", lambda img, **kw: calls.append("classical") or [])
    monkeypatch.setenv("CRAPS_VISION", "classical")
    img = np.zeros((64, 64, 3), np.uint8)
    reader.read_dice(img, method="learned")
    reader.read_dice(img)
    assert calls == ["learned", "classical"]
    with pytest.raises(ValueError, match="method='neural'"):
        reader.read_dice(img, method="neural")


class _SensorSource:
    """A frame source that simulates a far-wall sensor (as ``SimSource.on_wall_strike``)."""

    def __init__(self) -> None:
        self.sinks = []

    def on_wall_strike(self, callback) -> None:
        self.sinks.append(callback)


@pytest.mark.parametrize("wall_sensor", [True, False])
def test_simulated_wall_sensor_reaches_the_observer_only_when_the_rig_has_one(wall_sensor):
    from controller.service_cli import build_observer

    cfg = _cfg(wall_sensor=wall_sensor)
    cfg = cfg.model_copy(update={"boxperson": cfg.boxperson.model_copy(update={"endpoint": ""})})
    source = _SensorSource()
    hook, closers = build_observer(cfg, source=source, area=None)
    try:
        observer = getattr(hook, "observer", hook)
        assert len(source.sinks) == (1 if wall_sensor else 0)
        for sink in source.sinks:
            sink(1.25)
        assert observer._strikes == ([1.25] if wall_sensor else [])
    finally:
        for close in closers:
            close()


def test_boxperson_socket_with_curve_admits_only_authorized_consoles(tmp_path, capsys):
    """``[boxperson] curve = true``: the service's command socket is CURVE (the bus's table
    key); ``craps-table decide`` from an authorized console is answered, a client without keys
    is not; a missing allow-list folder is named at start-up."""
    from bus.keys import authorize, generate_keys
    from controller.cli import main as cli_main
    from controller.service_cli import SetupError, build_observer

    keys = tmp_path / "keys"
    table = generate_keys(keys, "table")
    console = generate_keys(keys, "console-1")
    cfg = _cfg()
    box = {"endpoint": "tcp://127.0.0.1:*", "curve": True, "authorized_dir": tmp_path / "consoles"}
    cfg = cfg.model_copy(update={"boxperson": cfg.boxperson.model_copy(update=box),
                                 "bus": cfg.bus.model_copy(update={"keys_dir": keys})})
    with pytest.raises(SetupError, match="boxperson.authorized_dir"):
        build_observer(cfg, source=object(), area=None)
    authorize(console.curve_public, tmp_path / "consoles")
    hook, closers = build_observer(cfg, source=object(), area=None)
    try:
        server = closers[0].__self__
        assert cli_main(["decide", "--endpoint", server.endpoint, "--pending", "--timeout", "0.5"]) == 1
        capsys.readouterr()
        assert cli_main(["decide", "--endpoint", server.endpoint, "--pending", "--curve-secret",
                         str(console.curve_secret), "--server-cert", str(table.curve_public)]) == 0
        assert json.loads(capsys.readouterr().out) == {"ok": True, "calls": []}
    finally:
        for close in closers:
            close()


def test_boxperson_allow_list_with_an_unreadable_certificate_is_named_at_start(tmp_path):
    """One damaged certificate in ``boxperson.authorized_dir`` made ZeroMQ's authenticator drop
    the whole allow-list: every console, the good ones too, was refused while the service ran
    on. It is refused at start-up, naming the file."""
    from bus.keys import authorize, generate_keys
    from controller.service_cli import SetupError, build_observer

    keys = tmp_path / "keys"
    generate_keys(keys, "table")
    console = generate_keys(keys, "console-1")
    authorize(console.curve_public, tmp_path / "consoles")
    bad = tmp_path / "consoles" / "console-2.key"
    bad.write_text("not a certificate\n")
    cfg = _cfg()
    box = {"endpoint": "tcp://127.0.0.1:*", "curve": True, "authorized_dir": tmp_path / "consoles"}
    cfg = cfg.model_copy(update={"boxperson": cfg.boxperson.model_copy(update=box),
                                 "bus": cfg.bus.model_copy(update={"keys_dir": keys})})
    with pytest.raises(SetupError, match="boxperson.authorized_dir") as err:
        build_observer(cfg, source=object(), area=None)
    assert str(bad) in str(err.value)
