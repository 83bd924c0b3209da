"""Round ids never repeat across restarts and clock steps (controller/rounds.py,
controller/automation.py, controller/store.py): the round number comes from the state store."""
from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

import pytest

import controller.automation as automation
from controller.automation import attach_rounds
from controller.rounds import RoundCycle, RoundsConfig
from controller.store import StateStore, StoreError
from list_publisher import ListPublisher
from test_controller_service import make_service

CFG = RoundsConfig(bets_open_s=0.3, min_round_s=0, results_s=0.2, shake_ms=100)


class _Shaker:
    def start(self, *a):
        return None


def _clock_at(monkeypatch, when: datetime) -> None:
    """Set the wall clock the round id prefix is read from (``datetime.now`` in automation)."""

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return when

    monkeypatch.setattr(automation, "datetime", Clock)


def _run_once(tmp_path, monkeypatch, when: datetime) -> list[str]:
    """Start the table service with the round driver at wall time ``when`` (no ``prefix``: the
    default, the start time), let it open its first round, stop it; the round ids published."""
    _clock_at(monkeypatch, when)
    pub = ListPublisher()
    svc = make_service(tmp_path, pub)
    try:
        drv = attach_rounds(svc, CFG, mode="automated", shaker=_Shaker(), wall=lambda: svc._now)
        svc.start()
        drv.on_frame(0.0, False)
        assert drv.cycle.bets_open
    finally:
        svc.close()
    return [body["round_id"] for topic, body in pub.sent if topic == "round"]


def test_round_ids_stay_unique_when_the_clock_is_set_back_across_a_restart(tmp_path, monkeypatch):
    """The service starts at 00:05:12, opens round 1; the clock is stepped back (NTP, or a Pi
    without RTC restoring its last saved time) and the service restarts in the same second:
    the start-time prefix repeats, the round id must not (settlement gates wagers by round id,
    and two rounds with one id would mix their wagers)."""
    t = datetime(2026, 11, 30, 0, 5, 12, tzinfo=timezone.utc)
    first = _run_once(tmp_path, monkeypatch, t)
    second = _run_once(tmp_path, monkeypatch, t)                       # same second again
    third = _run_once(tmp_path, monkeypatch, datetime(2026, 11, 29, 23, 0, 0, tzinfo=timezone.utc))
    assert first == ["t-test-20261130T000512-000001"]
    assert second == ["t-test-20261130T000512-000002"]
    assert third == ["t-test-20261129T230000-000003"]


def test_store_round_numbers_are_durable_and_a_corrupt_counter_is_named(tmp_path):
    db = tmp_path / "state.sqlite"
    store = StateStore(db)
    assert [store.next_round_number() for _ in range(3)] == [1, 2, 3]
    store.close()
    store = StateStore(db)
    assert store.next_round_number() == 4
    store.close()
    c = sqlite3.connect(db)
    c.execute("UPDATE rounds SET last_number = 'x' WHERE id = 1")
    c.commit()
    c.close()
    store = StateStore(db)
    try:
        with pytest.raises(StoreError, match=r"corrupt rounds record \(id 1\): last_number 'x' is not a count") as err:
            store.next_round_number()
        assert str(db) in str(err.value)
    finally:
        store.close()


def test_a_round_number_that_cannot_be_written_opens_no_round():
    """``numbers`` failing (the store's disk full): the error propagates, nothing is published
    and no round is current; the next try takes a number again."""
    sent, calls = [], []

    def numbers():
        calls.append(1)
        if len(calls) == 1:
            raise StoreError("state db x: cannot take the next round number: disk I/O error")
        return 41

    cyc = RoundCycle("T1", CFG, clock=lambda: 0.0, publish=sent.append, numbers=numbers)
    with pytest.raises(StoreError, match="disk I/O error"):
        cyc.open()
    assert sent == [] and cyc.round is None and cyc.phase is None
    cyc.open()
    assert [b["round_id"] for b in sent] == ["T1-000041"] and sent[0]["round"] == 41
