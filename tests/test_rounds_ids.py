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


class _CountingShaker:
    def __init__(self):
        self.starts = 0

    def start(self, *a):
        self.starts += 1
        return self.starts


def _service_run(tmp_path, frames: int):
    """A table service on the state db in ``tmp_path`` with the round driver of an automated
    rig; ``frames`` frames of a still, empty table (no dice ever move), then the service is
    closed as a killed process would leave it (no verdict, nothing cleared)."""
    from camera.base import Frame
    from test_controller_service import scene_image

    pub, shaker = ListPublisher(), _CountingShaker()
    svc = make_service(tmp_path, pub)
    drv = attach_rounds(svc, CFG, mode="automated", shaker=shaker, wall=lambda: svc._now, prefix="T1-R")
    svc.start()
    empty = scene_image([])
    for k in range(frames):
        svc.process(Frame(empty, k / 30, k))
    lamps = dict(svc.lamps.driver.modes)
    svc.store.close()                      # killed: no lamps off, no closers
    return pub, shaker, drv, lamps


def test_a_restart_during_a_throw_starts_the_table_stopped_with_lamps_and_shaker_safe(tmp_path):
    """The service is killed while the shaker runs (SHAKER acknowledged, no verdict yet). The
    restarted service must not open a round nor shake: it starts stopped, named
    ``restart-during-throw``, FAULT and BETS CLOSED lit; after that stop a technician's restart
    opens rounds again."""
    pub1, shaker1, drv1, _ = _service_run(tmp_path, 12)      # bets open 0.3 s, then the SHAKER
    assert shaker1.starts == 1 and drv1.shaking and drv1.cycle.phase == "throw"
    pub2, shaker2, drv2, lamps2 = _service_run(tmp_path, 30)
    rounds2 = [b for t, b in pub2.sent if t == "round"]
    assert [(b["event"], b["round_id"]) for b in rounds2] == [("stopped", None)]
    assert rounds2[0]["cause"] == ("restart-during-throw: the service stopped during round T1-R-000001 throw 1 "
                                   "(the shaker may have run, its dice were never read): check the dice and "
                                   "the shaker, then resume (craps-table resume) or restart the service")
    alarms = [b["code"] for t, b in pub2.sent if t == "alarm"]
    assert "restart-during-throw-fault" in alarms
    assert shaker2.starts == 0 and drv2.cycle.stopped
    assert lamps2.get("fault") == "on" and lamps2.get("bets-closed") == "on"
    # the technician restarts the service: the stop cleared the record, rounds open again
    pub3, shaker3, drv3, _ = _service_run(tmp_path, 12)
    assert [b["event"] for t, b in pub3.sent if t == "round"][:3] == ["bets-open", "no-more-bets", "throw"]
    assert shaker3.starts == 1 and not drv3.cycle.stopped


def test_a_decided_throw_is_not_taken_for_an_interrupted_one(tmp_path):
    store = StateStore(tmp_path / "state.sqlite")
    try:
        assert store.throw_in_progress() is None
        store.set_throw("round T1-R-000001 throw 1")
        assert store.throw_in_progress() == "round T1-R-000001 throw 1"
        assert store.next_round_number() == 1              # the counter and the throw are separate
        assert store.throw_in_progress() == "round T1-R-000001 throw 1"
        store.set_throw(None)
        assert store.throw_in_progress() is None
    finally:
        store.close()
