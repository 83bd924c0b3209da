"""[rules] far_wall_reach_mm: validated, and it reaches the far-wall detector of the service."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from controller.config import ConfigError, parse_config

SHIPPED = Path(__file__).resolve().parents[1] / "config" / "table.toml"


def _cfg(**rules):
    data = tomllib.loads(SHIPPED.read_text())
    data["rules"].update(rules)
    return parse_config(data, "test.toml")


def test_shipped_reach_is_rubber_plus_half_diagonal():
    assert _cfg().rules.far_wall_reach_mm == 23.5


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
