"""Test helper: a copy of the shipped config/table.toml that binds only loopback/ephemeral
endpoints and keeps every file under a test's tmp_path (shared by the service tests)."""
from __future__ import annotations

import socket
from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[1] / "config" / "table.toml"


def write_test_config(tmp_path: Path, *, bus_cfg=None, keys_dir: Path | None = None) -> Path:
    """Write ``tmp_path/table.toml`` and return its path.

    Args:
        bus_cfg: a ``bus.config.BusConfig`` whose endpoints, journal and keys replace the
            shipped ``[bus]`` ones; ``None``: the journal (``tmp_path/journal.sqlite``), the
            keys directory (``keys_dir``, default ``tmp_path/keys``) and the two endpoints (free
            loopback ports, not the shipped 5556/5557 a second test process may hold).
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
        swaps = [('"tcp://127.0.0.1:5556"', f'"tcp://127.0.0.1:{_free_port()}"'),
                 ('"tcp://127.0.0.1:5557"', f'"tcp://127.0.0.1:{_free_port()}"'),
                 ('"var/bus/keys"', f'"{keys_dir or tmp_path / "keys"}"'),
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


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
