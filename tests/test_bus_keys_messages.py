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


def test_refusal_log_raises_denials_to_warning_at_most_once_a_period(caplog, monkeypatch):
    """pyzmq's ZAP authenticator logs a refused CURVE key ("DENIED ...") at DEBUG: the serving
    side kept no trace of a console or subscriber with the wrong key. ``RefusalLog`` logs it at
    WARNING, once per period per message (a refused client retries every 0.1 s), then says how
    many were held back; other messages stay at DEBUG."""
    import logging

    import bus.keys as keys

    now = {"t": 100.0}
    monkeypatch.setattr(keys.time, "monotonic", lambda: now["t"])
    caplog.set_level(logging.DEBUG, logger="test.auth")
    adapter = keys.RefusalLog(logging.getLogger("test.auth"), "roll bus", every_s=60.0)
    for _ in range(5):
        adapter.debug("%s (CURVE auth_callback) domain=%s client_key=%s", "DENIED", "*", b"k1")
        now["t"] += 1.0
    adapter.debug("PASSED (allowed) address=%s", "127.0.0.1")
    now["t"] += 60.0
    adapter.debug("%s (CURVE auth_callback) domain=%s client_key=%s", "DENIED", "*", b"k1")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "roll bus: a client was refused by CURVE authentication: DENIED (CURVE auth_callback) domain=* client_key=b'k1'",
        "roll bus: a client was refused by CURVE authentication: DENIED (CURVE auth_callback) domain=* client_key=b'k1'"
        " (4 more refusals like it held back)"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "DEBUG"] == ["PASSED (allowed) address=127.0.0.1"]



def test_an_unreadable_allow_list_certificate_stops_the_table_naming_it(tmp_path, capsys):
    """Found by the new-user pass: one damaged ``authorized/*.key`` made pyzmq's authenticator
    drop the whole allow-list (an ERROR log line) and ``craps-table run`` served on, refusing
    every subscriber, the good ones too. It is now bad input: exit 2 naming the file."""
    from tableconfig import write_test_config

    keys = tmp_path / "keys"
    assert main(["keys", "generate", "table", "--dir", str(keys)]) == 0
    assert main(["keys", "generate", "settlement", "--dir", str(keys), "--authorize"]) == 0
    bad = keys / "authorized" / "console.key"
    bad.write_text("not a certificate\n")
    cfg = write_test_config(tmp_path, keys_dir=keys)
    capsys.readouterr()
    assert main(["run", "--config", str(cfg), "--max-verdicts", "1"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "allow-list" in err
    assert not (tmp_path / "journal.sqlite").exists()
