"""Bus key files: a missing file is reported as missing (not as an "invalid certificate"), and
the CLI names its own option. Found by the new-user pass: `craps-table run` before any
`craps-table keys generate` said "Invalid certificate file" for a file that did not exist."""
from __future__ import annotations

import pytest

from bus import keys as keymod
from controller.cli import main


@pytest.mark.parametrize("loader", [keymod.load_curve_public, keymod.load_curve_secret])
def test_missing_curve_certificate_is_named_missing(tmp_path, loader):
    path = tmp_path / "nokeys" / "table.key_secret"
    with pytest.raises(keymod.BusKeyError) as ei:
        loader(path)
    msg = str(ei.value)
    assert str(path) in msg and "no such file" in msg and "Invalid certificate" not in msg


def test_malformed_curve_certificate_still_named_malformed(tmp_path):
    path = tmp_path / "table.key"
    path.write_bytes(b"\x00garbage\xff")
    with pytest.raises(keymod.BusKeyError) as ei:
        keymod.load_curve_public(path)
    assert str(path) in str(ei.value) and "no such file" not in str(ei.value)


def test_keys_generate_twice_names_the_force_option(tmp_path, capsys):
    assert main(["keys", "generate", "table", "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["keys", "generate", "table", "--dir", str(tmp_path)]) == 2
    assert "--force" in capsys.readouterr().err
