"""Past-posting within the stamp tolerance: settlement refuses a terminal's round wager while it
is behind the table's bus (or has not heard from the table lately), since it may not have applied
the round's no-more-bets, nor the throw's result (9 NYCRR 5324.52(c)(1); N.J.A.C. 13:47-20.25(h)1).
settlement/rounds.py BusView, settlement/service.py EnvelopeApplier.heard_from_bus,
bus/subscriber.py RollSubscriber.head / last_heard."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from settlement.engine import Rejected
from settlement.rounds import RULE, SILENT_HEARTBEATS, BusView, RoundGate

RID = "table-1-20261130T000000-000001"
R2 = "table-1-20261130T000000-000002"
T0 = datetime(2026, 11, 30, 0, 0, 0, tzinfo=timezone.utc)


def at(s: float) -> str:
    return (T0 + timedelta(seconds=s)).isoformat()


def env(seq, event, s, rid=RID):
    return {"seq": seq, "topic": "round", "ts": at(s), "body": {"round_id": rid, "event": event}}


def roll(seq, dice, s):
    return {"seq": seq, "topic": "roll", "ts": at(s),
            "body": {"roll_id": f"T1-{seq:08d}", "verdict": "roll", "dice": list(dice),
                     "game": {"shooter": 1, "point": None}}}


def wager(player, placed, rid=RID):
    return {"player": player, "bet": "pass", "amount": 1000, "round_id": rid, "placed_at": placed}


def test_gate_refuses_while_behind_or_not_heard_from():
    """The pure gate: the caller says what settlement knows of the bus; the gate judges."""
    g = RoundGate()
    g.observe(env(1, "bets-open", 0))
    caught_up = BusView(applied=1, head=1, silent_s=0.3, max_silent_s=1.0)
    assert g.check(wager("p1", at(3)), received_at=T0 + timedelta(seconds=3.5), bus=caught_up).round_id == RID
    # the table has published seq 2..4 (close, throw, roll); settlement applied only seq 1
    with pytest.raises(Rejected) as exc:
        g.check(wager("p2", at(9.9)), received_at=T0 + timedelta(seconds=11.5),
                bus=BusView(applied=1, head=4, silent_s=0.1, max_silent_s=1.0))
    assert exc.value.reason == (f"round {RID}: settlement is behind the table's bus by 3 messages (applied seq 1, "
                                "the table's head seq 4): still catching up, it may not have seen the round's no "
                                "more bets")
    assert exc.value.rule == RULE
    with pytest.raises(Rejected, match=r"behind the table's bus by 1 message \(applied"):
        g.check(wager("p2", at(3)), bus=BusView(applied=1, head=2, silent_s=0.0, max_silent_s=1.0))
    with pytest.raises(Rejected, match=r"has not heard from the table's bus for 1\.2 s \(more than 1 s, 2 heartbeat "
                                       r"periods\): it cannot know whether it is behind"):
        g.check(wager("p2", at(3)), bus=BusView(applied=1, head=1, silent_s=1.2, max_silent_s=1.0))
    for head, silent in ((None, 0.1), (1, None)):
        with pytest.raises(Rejected, match="has not heard from the table's bus since it started: still catching up"):
            g.check(wager("p2", at(3)), bus=BusView(applied=1, head=head, silent_s=silent, max_silent_s=1.0))
    # at the bound itself it still knows the head; the gate's other rules still apply
    assert g.check(wager("p2", at(3)), bus=BusView(applied=1, head=1, silent_s=1.0, max_silent_s=1.0)).round_id == RID
    with pytest.raises(Rejected, match="unknown round"):
        g.check(wager("p2", at(3), rid="other"), bus=caught_up)
    assert SILENT_HEARTBEATS == 2


def _applier(tmp_path, clock, mono, **kw):
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    lines: list[str] = []
    sess = Session(load_profile("ny-5324"), tmp_path / "ledger.sqlite")
    return sess, EnvelopeApplier(sess, LineBettor([]), lines.append, clock=clock, monotonic=mono, **kw), lines


def test_a_wager_stamped_before_the_close_is_refused_while_settlement_is_behind(tmp_path):
    """The gap: settlement behind the bus (a restart, a slow consumer, a replay) has not applied
    the round's no-more-bets nor the roll. A wager received 1.6 s after the close (within the 2 s
    stamp tolerance), stamped 0.1 s before it, was accepted and rode the seven already thrown.
    It is now refused, nothing written; caught up, wagers are accepted again (cents)."""
    now = {"t": T0 + timedelta(seconds=3.5)}
    mono = {"t": 100.0}
    sess, app, lines = _applier(tmp_path, lambda: now["t"], lambda: mono["t"], heartbeat_s=0.5)
    try:
        app.apply(env(1, "bets-open", 0))
        # started, never heard from the table: it cannot know it is caught up
        with pytest.raises(Rejected, match="has not heard from the table's bus since it started"):
            app.place_for_round(wager("p1", at(3)))
        app.heard_from_bus(1, mono["t"])           # a heartbeat: last_seq 1, all applied
        assert app.place_for_round(wager("p1", at(3))).amount == 1000
        assert sess.balance("p1") == -1000 and [w.player for w in sess.table.wagers] == ["p1"]

        # the table: no-more-bets (seq 2) at 10 s, the throw (3), a seven (4) at 11 s. Settlement
        # heard the heartbeat saying so (head 4) but is still behind: it applied seq 1 only.
        now["t"] = T0 + timedelta(seconds=11.5)
        mono["t"] += 0.2
        app.heard_from_bus(4, mono["t"])
        with pytest.raises(Rejected) as exc:
            app.place_for_round(wager("p2", at(9.9)))    # 1.6 s old: within MAX_STAMP_AGE_S
        assert exc.value.reason == (f"round {RID}: settlement is behind the table's bus by 3 messages (applied seq 1, "
                                    "the table's head seq 4): still catching up, it may not have seen the round's "
                                    "no more bets")
        assert exc.value.rule == RULE
        assert sess.balance("p2") == 0 and [w.player for w in sess.table.wagers] == ["p1"]
        assert sess.db.execute("SELECT COUNT(*) FROM round_wagers").fetchone()[0] == 1

        # caught up: the close and the seven applied; p1's pass wins $10
        app.apply(env(2, "no-more-bets", 10))
        app.apply(env(3, "throw", 10))
        assert app.apply(roll(4, (6, 1), 11)) == 1
        assert app.applied_seq == 4 and (sess.balance("p1"), sess.balance("p2")) == (1000, 0)
        with pytest.raises(Rejected, match=r"received after round .* closed"):   # the gate itself now knows
            app.place_for_round(wager("p2", at(9.9)))

        # the next round, settlement caught up and hearing the table: wagers are accepted again
        app.apply(env(5, "results", 11))
        app.apply(env(6, "bets-open", 15, rid=R2))
        now["t"] = T0 + timedelta(seconds=16)
        mono["t"] += 0.4
        app.heard_from_bus(6, mono["t"])
        assert app.place_for_round(wager("p2", at(15.5), rid=R2)).amount == 1000
        assert sess.balance("p2") == -1000

        # silent for more than 2 heartbeat periods (1 s): the table may have closed the round
        mono["t"] += 1.1
        with pytest.raises(Rejected, match=r"has not heard from the table's bus for 1\.1 s \(more than 1 s"):
            app.place_for_round(wager("p3", at(16), rid=R2))
        app.heard_from_bus(6, mono["t"])           # the next heartbeat: nothing new
        assert app.place_for_round(wager("p3", at(16), rid=R2)).amount == 1000
        assert (sess.balance("p1"), sess.balance("p2"), sess.balance("p3")) == (1000, -1000, -1000)
        assert [w.player for w in sess.table.wagers] == ["p2", "p3"]
    finally:
        sess.close()


def test_heartbeat_period_sets_the_silence_bound(tmp_path):
    """The bound is SILENT_HEARTBEATS x the bus's heartbeat_s; a resumed ledger's last seq is
    the applied position; a heartbeat period that is not > 0 is refused."""
    mono = {"t": 5.0}
    sess, app, _ = _applier(tmp_path, None, lambda: mono["t"], heartbeat_s=2.0)
    try:
        assert app.max_bus_silence_s == 4.0 and app.applied_seq == 0
        app.heard_from_bus(0, 1.5)
        assert app.bus_view() == BusView(applied=0, head=0, silent_s=3.5, max_silent_s=4.0)
        from settlement.service import EnvelopeApplier, LineBettor

        sess.mark_seen(7)                           # a resumed ledger: applied up to seq 7
        again = EnvelopeApplier(sess, LineBettor([]), print, monotonic=lambda: mono["t"])
        assert (again.applied_seq, again.max_bus_silence_s) == (7, 1.0)
        again.heard_from_bus(9, 5.0)
        assert again.bus_view().behind().startswith("settlement is behind the table's bus by 2 messages")
        with pytest.raises(ValueError, match="heartbeat_s must be > 0 seconds: 0"):
            EnvelopeApplier(sess, LineBettor([]), print, heartbeat_s=0)
    finally:
        sess.close()


def test_real_bus_head_and_silence_reach_the_gate(tmp_path):
    """On a real bus (ipc://): the subscriber learns the table's head from the messages it has
    read but settlement not yet applied, and from heartbeats; the service's wiring
    (heard_from_bus after every receive) refuses a wager then, and accepts once caught up."""
    from bus.config import BusConfig
    from bus.publisher import RollPublisher
    from bus.subscriber import RollSubscriber

    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=0.5)
    pub = RollPublisher(cfg, cfg.table_id, auto_heartbeat=False)
    sub = RollSubscriber(cfg, tmp_path / "state.sqlite")
    sess, app, lines = _applier(tmp_path, lambda: datetime.now(timezone.utc), time.monotonic,
                                heartbeat_s=cfg.heartbeat_s)

    def receive(deadline_s=5.0):
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            got = sub.receive(0.05)
            app.heard_from_bus(sub.head, sub.last_heard)       # as run_settlement_service does
            if got is not None:
                return got
        raise AssertionError("no envelope within the deadline")

    try:
        assert (sub.head, sub.last_heard) == (0, None)
        opened = pub.publish("round", {"round_id": RID, "event": "bets-open"})
        assert app.apply(receive()) == 0 and sub.last_heard is not None
        placed = datetime.fromisoformat(opened["ts"]) + timedelta(microseconds=1)
        assert app.place_for_round(wager("p1", placed.isoformat())).amount == 1000
        close = pub.publish("round", {"round_id": RID, "event": "no-more-bets"})
        pub.publish("round", {"round_id": RID, "event": "throw"})
        pub.publish("roll", {"roll_id": "T1-00000004", "verdict": "roll", "dice": [6, 1],
                             "game": {"shooter": 1, "point": None}})
        held = [receive(), receive(), receive()]     # read, not applied yet (a slow consumer)
        assert [e["seq"] for e in held] == [2, 3, 4] and sub.head == 4 and app.applied_seq == 1
        late = (datetime.fromisoformat(close["ts"]) - timedelta(milliseconds=1)).isoformat()
        with pytest.raises(Rejected, match=r"behind the table's bus by 3 messages \(applied seq 1, the table's head seq 4\)"):
            app.place_for_round(wager("p2", late))
        assert sess.balance("p2") == 0
        assert [app.apply(e) for e in held] == [0, 0, 1] and sess.balance("p1") == 1000
        pub.publish("round", {"round_id": RID, "event": "results"})
        app.apply(receive())
        opened = pub.publish("round", {"round_id": R2, "event": "bets-open"})
        app.apply(receive())
        pub.heartbeat()
        end = time.monotonic() + 5.0
        while sub.stats["heartbeats"] < 1 and time.monotonic() < end:
            assert sub.receive(0.05) is None
        app.heard_from_bus(sub.head, sub.last_heard)
        assert sub.head == app.applied_seq == 6
        placed = datetime.fromisoformat(opened["ts"]) + timedelta(microseconds=1)
        assert app.place_for_round(wager("p2", placed.isoformat(), rid=R2)).amount == 1000
        assert (sess.balance("p1"), sess.balance("p2")) == (1000, -1000)
    finally:
        sub.close()
        pub.close()
        sess.close()


def test_settle_service_tells_the_applier_the_bus_head(tmp_path, monkeypatch):
    """run_settlement_service wires it: the applier hears the table's head and heartbeats after
    every receive, with the silence bound from the bus config's heartbeat_s."""
    import threading

    import settlement.service as service
    from bus.config import BusConfig
    from bus.publisher import RollPublisher

    made = []

    class Recording(service.EnvelopeApplier):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(service, "EnvelopeApplier", Recording)
    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=0.2)
    pub = RollPublisher(cfg)
    stop = threading.Event()
    t = threading.Thread(target=service.run_settlement_service, args=(cfg, "ny-5324", [], tmp_path / "l.sqlite", stop),
                         kwargs={"on_line": lambda s: None}, daemon=True)
    t.start()
    try:
        pub.publish("round", {"round_id": RID, "event": "bets-open"})
        end = time.monotonic() + 10.0
        while time.monotonic() < end and not (made and made[0].applied_seq == 1 and made[0].bus_head == 1
                                              and made[0].bus_heard_at is not None):
            time.sleep(0.05)
        app = made[0]
        assert (app.applied_seq, app.bus_head, app.max_bus_silence_s) == (1, 1, 0.4)
        assert app.rounds.current == RID
        heard = app.bus_heard_at
        end = time.monotonic() + 10.0
        while time.monotonic() < end and app.bus_heard_at == heard:     # the table's heartbeats
            time.sleep(0.05)
        assert app.bus_heard_at > heard and app.bus_head == 1
    finally:
        stop.set()
        t.join(10)
        pub.close()
    assert not t.is_alive()
