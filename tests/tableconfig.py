"""Test helper: a copy of the shipped config/table.toml that binds only loopback/ephemeral
endpoints and keeps every file under a test's tmp_path (shared by the service tests)."""
from __future__ import annotations

from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[1] / "config" / "table.toml"


def write_test_config(tmp_path: Path, *, bus_cfg=None, keys_dir: Path | None = None) -> Path:
    """Write ``tmp_path/table.toml`` and return its path.

    Args:
        bus_cfg: a ``bus.config.BusConfig`` whose endpoints, journal and keys replace the
            shipped ``[bus]`` ones; ``None``: only the journal (``tmp_path/journal.sqlite``) and
            the keys directory (``keys_dir``, default ``tmp_path/keys``) are replaced.
        keys_dir: the keys directory when ``bus_cfg`` is ``None``.

    Raises:
        AssertionError: the shipped file no longer holds a value this helper replaces.
    """
    text = SHIPPED.read_text()
    if bus_cfg is not None:
        swaps = [('"tcp://127.0.0.1:5556"', f'"{bus_cfg.pub_endpoint}"'),
                 ('"tcp://127.0.0.1:5557"', f'"{bus_cfg.replay_endpoint}"'),
                 ('"var/bus/journal.sqlite"', f'"{bus_cfg.journal_path}"'),
                 ('"var/bus/keys"', f'"{bus_cfg.keys_dir}"')]
    else:
        swaps = [('"var/bus/keys"', f'"{keys_dir or tmp_path / "keys"}"'),
                 ('"var/bus/journal.sqlite"', f'"{tmp_path / "journal.sqlite"}"')]
    swaps += [('"var/state/table.sqlite"', f'"{tmp_path / "state.sqlite"}"'),
              ("port = 9108", "port = 0"),
              ('endpoint = "tcp://127.0.0.1:5560"', 'endpoint = "tcp://127.0.0.1:*"')]
    for old, new in swaps:
        assert old in text, f"config/table.toml no longer holds {old}"
        text = text.replace(old, new)
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path
