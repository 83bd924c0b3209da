"""The ledger's disk fills (SQLITE_FULL, made here with ``PRAGMA max_page_count``): the change is
not written, not half written, the error says the disk is full (not "cannot rollback"), the
service stops with exit status 1 without acknowledging, and once there is room the roll is
settled once."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path


from bus.config import BusConfig
from bus.publisher import RollPublisher
from settlement.ledger import Session
from settlement.profile import load_profile

from test_settlement_service import body


def _full(db: sqlite3.Connection) -> None:
    """No page more for this connection's database: the next growth is SQLITE_FULL."""
    db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")


def test_a_full_disk_is_reported_as_such_and_leaves_the_ledger_as_it_was(tmp_path: Path):
    prof = load_profile("ny-5324")
    s = Session(prof, tmp_path / "ledger.sqlite")
    _full(s.db)
    seq, error = 0, None
    for i in range(2000):          # bounded: the pages fill within a few hundred rolls
        if s.table.state.point is None and not s.table.wagers:
            try:
                s.place({"player": "p1", "bet": "pass", "amount": 1000})
            except sqlite3.Error as exc:
                error = exc
                break
        before = (s.last_seq, s.balance("p1"), s.table.snapshot(),
                  s.db.execute("SELECT COUNT(*) FROM settlements").fetchone()[0])
        try:
            s.roll([i % 6 + 1, (i * 5) % 6 + 1], seq + 1)
        except sqlite3.Error as exc:
            error = exc
            assert (s.last_seq, s.balance("p1"), s.table.snapshot(),
                    s.db.execute("SELECT COUNT(*) FROM settlements").fetchone()[0]) == before
            break
        seq += 1
    assert error is not None and "full" in str(error), repr(error)
    assert not s.db.in_transaction
    s.db.execute("PRAGMA max_page_count=1000000")     # room again
    if s.table.state.point is None and not s.table.wagers:
        s.place({"player": "p1", "bet": "pass", "amount": 1000})
    out, applied = s.roll([3, 4], seq + 1)
    assert applied and s.roll([3, 4], seq + 1)[1] is False
    s.close()
    Session(prof, tmp_path / "ledger.sqlite").close()    # sound: it opens again


def test_settle_service_stops_with_exit_1_on_a_full_disk_and_settles_the_roll_after(tmp_path: Path, capsys,
                                                                                     monkeypatch):
    from controller.cli import main
    import settlement.service as service

    bus_dir = tmp_path / "bus"
    cfg = BusConfig.local(bus_dir)
    ledger = tmp_path / "ledger.sqlite"
    argv = ["settle-service", "--bus-dir", str(bus_dir), "--ledger", str(ledger), "--max-rolls", "1"]
    with RollPublisher(cfg) as pub:
        pub.publish("roll", body(3, 4))       # journalled: the service takes it by replay
        real = service.Session

        class FullDisk(real):
            """The disk fills while the roll's transaction is written (its rows and, here, a
            100 kB row that never becomes durable: the whole transaction is undone)."""

            def roll(self, *a, **kw):
                _full(self.db)
                commit = self._commit

                def growing(table, fn):
                    def more():
                        out = fn()
                        self.db.execute("INSERT INTO meta VALUES('filler', ?)", ("x" * 100_000,))
                        return out
                    return commit(table, more)
                self._commit = growing
                try:
                    return super().roll(*a, **kw)
                finally:
                    del self._commit

        monkeypatch.setattr(service, "Session", FullDisk)
        t0 = time.monotonic()
        assert main(argv) == 1
        assert time.monotonic() - t0 < 60
        err = capsys.readouterr().err
        assert f"craps-table settle-service: stopped: ledger {ledger}: database or disk is full" in err, err
        assert "cannot rollback" not in err and "Traceback" not in err
        db = sqlite3.connect(ledger)
        assert db.execute("SELECT COUNT(*) FROM rolls").fetchone()[0] == 0
        db.close()
        assert max(pub.acks().values(), default=0) == 0
        monkeypatch.setattr(service, "Session", real)
        assert main(argv) == 0                # room again: the same roll, settled once
        db = sqlite3.connect(ledger)
        assert db.execute("SELECT seq, d1, d2 FROM rolls").fetchall() == [(1, 3, 4)]
        assert db.execute("SELECT COUNT(*) FROM settlements WHERE seq=1").fetchone()[0] > 0
        db.close()
        deadline = time.monotonic() + 10
        while max(pub.acks().values(), default=0) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert max(pub.acks().values(), default=0) == 1
