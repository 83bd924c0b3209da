"""A ledger file emptied, truncated or damaged while settlement was stopped is refused, naming the
file; it is never taken for a new, empty ledger (which would forget every open wager and
balance, and settle the table's next rolls from scratch)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bus.config import BusConfig
from settlement.ledger import Session
from settlement.profile import load_profile


@pytest.fixture()
def prof():
    return load_profile("ny-5324")


def _ledger(prof, path: Path, rolls: int = 60) -> Path:
    s = Session(prof, path)
    for seq in range(1, rolls + 1):
        for player, bet in (("p1", "pass"), ("p2", "dont_pass")):
            if not any(w.player == player for w in s.table.wagers) and s.table.state.point is None:
                s.place({"player": player, "bet": bet, "amount": 1000})
        s.roll([seq % 6 + 1, (seq * 5) % 6 + 1], seq)
    s.close()
    return path


def _refused(prof, path: Path, says: str) -> None:
    before = path.read_bytes()
    with pytest.raises(ValueError) as info:
        Session(prof, path)
    assert str(info.value).startswith(f"ledger {path}: ") and says in str(info.value), str(info.value)
    assert path.read_bytes() == before          # left as found, for the operator


def test_an_emptied_ledger_file_is_refused_not_taken_for_a_new_ledger(prof, tmp_path):
    path = _ledger(prof, tmp_path / "ledger.sqlite")
    path.write_bytes(b"")
    _refused(prof, path, "not a settlement ledger")


def test_a_truncated_ledger_file_is_refused(prof, tmp_path):
    path = _ledger(prof, tmp_path / "ledger.sqlite")
    data = path.read_bytes()
    assert len(data) > 3 * 4096
    path.write_bytes(data[:len(data) // 2])
    _refused(prof, path, "malformed")


def test_a_ledger_whose_balances_disagree_with_its_records_is_refused(prof, tmp_path):
    path = _ledger(prof, tmp_path / "ledger.sqlite")
    db = sqlite3.connect(path)
    db.execute("UPDATE balances SET cents = cents + 100000 WHERE player='p1'")   # a flipped bit, say
    db.commit()
    db.close()
    _refused(prof, path, "damaged: player 'p1' has balance")


def test_a_ledger_with_an_unreadable_snapshot_is_refused_naming_the_file(prof, tmp_path):
    path = _ledger(prof, tmp_path / "ledger.sqlite")
    db = sqlite3.connect(path)
    db.execute("UPDATE snapshot SET json = '{\"wagers\": [' WHERE id=1")
    db.commit()
    db.close()
    _refused(prof, path, "")


def test_another_program_s_sqlite_file_is_refused_and_left_alone(prof, tmp_path):
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    _refused(prof, path, "not a settlement ledger")
    db = sqlite3.connect(path)
    assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["t"]
    db.close()


def test_a_new_ledger_is_made_whole_and_a_creation_killed_half_way_leaves_no_ledger(prof, tmp_path):
    path = tmp_path / "ledger.sqlite"
    (tmp_path / "ledger.sqlite.new").write_bytes(b"")     # what a kill during the creation leaves
    s = Session(prof, path)
    s.close()
    assert not (tmp_path / "ledger.sqlite.new").exists()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='profile'").fetchone() == ("ny-5324",)
    db.close()
    Session(prof, path).close()      # and it opens again


def test_settle_service_refuses_an_emptied_ledger_with_exit_2_naming_it(tmp_path: Path):
    """Run as a process (bounded): a service that took the empty file for a new ledger would
    wait for rolls instead."""
    import subprocess
    import sys

    ledger = _ledger(load_profile("ny-5324"), tmp_path / "ledger.sqlite")
    ledger.write_bytes(b"")
    bus_dir = tmp_path / "bus"
    BusConfig.local(bus_dir)
    p = subprocess.Popen([sys.executable, "-m", "controller.cli", "settle-service", "--bus-dir", str(bus_dir),
                          "--ledger", str(ledger), "--max-rolls", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    assert p.returncode == 2, err
    assert f"craps-table settle-service: ledger {ledger}: not a settlement ledger" in err
    assert "waiting for rolls" not in err
    assert ledger.read_bytes() == b""


def test_settle_refuses_a_truncated_ledger_with_exit_2_naming_it(tmp_path: Path, capsys):
    from controller.cli import main

    ledger = _ledger(load_profile("ny-5324"), tmp_path / "ledger.sqlite")
    ledger.write_bytes(ledger.read_bytes()[:4096])
    scenario = tmp_path / "s.jsonl"
    scenario.write_text('{"type": "roll", "dice": [3, 4]}\n')
    assert main(["settle", "--profile", "ny-5324", "--ledger", str(ledger), str(scenario)]) == 2
    assert f"craps-table settle: ledger {ledger}: " in capsys.readouterr().err


def test_a_ledger_behind_what_was_acknowledged_is_refused(tmp_path):
    """Every ack follows the ledger's commit, so a ledger holding fewer bus messages than its
    state file acknowledged lost settled rolls (restored from an older copy, or its -wal file
    lost after a crash): bets placed since are not in it. Before, settlement resumed from the
    ledger's last seq and settled the rolls again from the journal, those bets forgotten. Now
    it is refused, naming both files and both seqs (exit status 2 from settle-service)."""
    import shutil
    import threading
    import time

    from bus.config import BusConfig
    from bus.publisher import RollPublisher
    from settlement.service import LedgerBehindError, run_settlement_service

    from test_settlement_service import PLAYERS, body, run_service

    cfg = BusConfig.local(tmp_path / "bus")
    ledger = tmp_path / "ledger.sqlite"
    with RollPublisher(cfg) as pub:
        lines: list[str] = []
        def settle_until_acked(seq: int) -> None:
            t, stop = run_service(cfg, ledger, lines, None)
            deadline = time.monotonic() + 20
            while max(pub.acks().values(), default=0) < seq and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.set()
            t.join(10)
            assert not t.is_alive() and max(pub.acks().values()) == seq

        pub.publish("roll", body(2, 2, point=4))
        settle_until_acked(1)
        shutil.copy(ledger, tmp_path / "old.sqlite")              # a copy after seq 1
        pub.publish("roll", body(3, 3, point=4))
        pub.publish("roll", body(2, 2, point=None))
        settle_until_acked(3)
        shutil.copy(tmp_path / "old.sqlite", ledger)              # restored: behind the acks
        for suffix in ("-wal", "-shm"):
            Path(f"{ledger}{suffix}").unlink(missing_ok=True)
        with pytest.raises(LedgerBehindError, match=r"up to seq 1, but .*ledger\.sqlite\.bus acknowledged them up to seq 3"):
            run_settlement_service(cfg, "ny-5324", PLAYERS, ledger, threading.Event(), on_line=lines.append,
                                   max_rolls=1, receive_timeout_s=0.05)
