"""Settlement's round gate (settlement/rounds.py): a wager stamped or received after its round
closed is refused with the reason; through EnvelopeApplier.place_for_round on a real ledger."""
from __future__ import annotations

import pytest

from settlement.engine import Rejected
from settlement.rounds import RULE, RoundGate

RID = "table-1-20261130T000000-000001"


def env(seq, event, ts, rid=RID, **extra):
    return {"seq": seq, "topic": "round", "ts": ts, "body": {"round_id": rid, "event": event, **extra}}


def wager(placed, rid=RID):
    return {"player": "p1", "bet": "pass", "amount": 1000, "round_id": rid, "placed_at": placed}


def test_gate_accepts_only_inside_the_window():
    g = RoundGate()
    with pytest.raises(Rejected, match="unknown round") as exc:
        g.check(wager("2026-11-30T00:00:01+00:00"))
    assert exc.value.rule == RULE
    g.observe(env(1, "bets-open", "2026-11-30T00:00:00.000000+00:00"))
    assert g.check(wager("2026-11-30T00:00:05.5+00:00")).round_id == RID
    with pytest.raises(Rejected, match="before round .* opened"):
        g.check(wager("2026-11-29T23:59:59+00:00"))
    # a wager stamped after the close, received before the gate heard of the close
    g2 = RoundGate()
    g2.observe(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
    g2.observe(env(2, "no-more-bets", "2026-11-30T00:00:10+00:00"))
    with pytest.raises(Rejected, match=r"placed at 2026-11-30T00:00:10\.500000\+00:00, after round .* closed"):
        g2.check(wager("2026-11-30T00:00:10.5+00:00"))
    with pytest.raises(Rejected, match="placed at .* after round"):   # at the close instant: too late
        g2.check(wager("2026-11-30T00:00:10+00:00"))
    # stamped before the close but received after it: refused too (the stamp is the terminal's word)
    with pytest.raises(Rejected, match="received after round .* closed"):
        g2.check(wager("2026-11-30T00:00:09+00:00"))
    # the same instant in another time zone is the same instant
    with pytest.raises(Rejected, match="after round"):
        g2.check(wager("2026-11-30T01:00:11+01:00"))
    g2.observe(env(3, "results", "2026-11-30T00:00:13+00:00", roll_id="table-1-00000001"))
    with pytest.raises(Rejected, match="is decided"):
        g2.check(wager("2026-11-30T00:00:09+00:00"))


def test_gate_refuses_malformed_and_abandoned():
    g = RoundGate()
    g.observe(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
    with pytest.raises(Rejected, match="no round id"):
        g.check({"placed_at": "2026-11-30T00:00:01+00:00"})
    with pytest.raises(Rejected, match="placed_at missing"):
        g.check({"round_id": RID})
    with pytest.raises(Rejected, match="has no time zone"):
        g.check(wager("2026-11-30T00:00:01"))
    with pytest.raises(Rejected, match="not an ISO 8601 time"):
        g.check(wager("yesterday"))
    g.observe({"seq": 2, "topic": "round", "ts": "2026-11-30T00:00:02+00:00",
               "body": {"round_id": RID, "event": "stopped", "cause": "shaker: jam"}})
    g.observe({"seq": 3, "topic": "round", "ts": "2026-11-30T00:00:09+00:00",
               "body": {"round_id": RID, "event": "resumed", "abandoned": RID}})
    assert g.accepts(wager("2026-11-30T00:00:01+00:00")) == (False, f"round {RID} was abandoned (table stopped)")
    with pytest.raises(ValueError, match="needs 'round_id' and 'event'"):
        g.observe({"seq": 4, "topic": "round", "ts": "2026-11-30T00:00:09+00:00", "body": {"event": "bets-open"}})
    # a round that opened without a window (live: thrown before bets re-opened) is never open
    g.observe(env(5, "no-more-bets", "2026-11-30T00:00:20+00:00", rid="R2", opened=False))
    assert g.accepts(wager("2026-11-30T00:00:19+00:00", rid="R2"))[0] is False


def test_envelope_applier_places_round_wagers(tmp_path):
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    lines = []
    sess = Session(load_profile("ny-5324"), tmp_path / "ledger.sqlite")
    try:
        app = EnvelopeApplier(sess, LineBettor([]), lines.append, clock=None, monotonic=None)
        assert app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00")) == 0
        placed = app.place_for_round(wager("2026-11-30T00:00:03+00:00"))
        assert placed.amount == 1000 and placed.kind == "pass"
        app.apply(env(2, "no-more-bets", "2026-11-30T00:00:10+00:00"))
        with pytest.raises(Rejected, match="after round"):
            app.place_for_round({**wager("2026-11-30T00:00:11+00:00"), "player": "p2"})
        assert [w.player for w in sess.table.wagers] == ["p1"]
    finally:
        sess.close()


def _applier(tmp_path):
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    lines: list[str] = []
    sess = Session(load_profile("ny-5324"), tmp_path / "ledger.sqlite")
    return sess, EnvelopeApplier(sess, LineBettor([]), lines.append, clock=None, monotonic=None), lines


def _roll(seq, dice):
    return {"seq": seq, "topic": "roll", "ts": "2026-11-30T00:01:00+00:00",
            "body": {"roll_id": f"T1-{seq:08d}", "verdict": "roll", "dice": list(dice),
                     "game": {"shooter": 1, "point": None}}}


def test_round_left_open_by_a_restart_is_refused_and_its_wagers_returned(tmp_path):
    """r1: a restarted table opens round B while round A (its previous process) never closed:
    a wager for A is refused and A's wager is returned before B's roll (9 NYCRR 5324.52(c)(1))."""
    sess, app, lines = _applier(tmp_path)
    a, b = "T1-20261130T000000-000001", "T1-20261130T000030-000001"
    try:
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00", rid=a))
        app.place_for_round(wager("2026-11-30T00:00:02+00:00", rid=a))
        assert sess.balance("p1") == -1000
        app.apply(env(2, "bets-open", "2026-11-30T00:00:30+00:00", rid=b))
        assert sess.balance("p1") == 0 and sess.table.wagers == ()
        assert lines == [f"round {a} abandoned: round {b} opened (seq=2): p1 pass wid 1 returned $10.00, "
                         f"balance $0.00 [{RULE}]"]
        with pytest.raises(Rejected, match=f"round {a} was abandoned .*round {b} opened") as exc:
            app.place_for_round({**wager("2026-11-30T00:00:31+00:00", rid=a), "player": "p2"})
        assert exc.value.rule == RULE
        app.apply(env(3, "no-more-bets", "2026-11-30T00:00:40+00:00", rid=b))
        assert app.apply(_roll(4, (6, 1))) == 1
        assert sess.balance("p1") == 0 and sess.balance("p2") == 0
        # replayed: nothing returned twice
        app.apply(env(2, "bets-open", "2026-11-30T00:00:30+00:00", rid=b))
        assert sess.balance("p1") == 0 and len(lines) == 1
    finally:
        sess.close()


def test_not_the_current_round_is_refused():
    """A round still undecided but not the last bets-open seen is not open for wagers."""
    g = RoundGate()
    g.observe(env(1, "bets-open", "2026-11-30T00:00:00+00:00", rid="A"))
    g.observe(env(2, "results", "2026-11-30T00:00:05+00:00", rid="A"))
    g.observe(env(3, "bets-open", "2026-11-30T00:00:06+00:00", rid="B"))
    g.current = "C"     # e.g. forgotten: only the current round is accepted
    assert g.accepts(wager("2026-11-30T00:00:07+00:00", rid="B")) == (False, "round B is not the current round (C)")


def test_table_start_abandons_the_open_round(tmp_path):
    """The table's "state" "start" envelope: its earlier round can no longer be decided."""
    sess, app, lines = _applier(tmp_path)
    try:
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
        app.place_for_round(wager("2026-11-30T00:00:02+00:00"))
        app.apply({"seq": 2, "topic": "state", "ts": "2026-11-30T00:00:20+00:00",
                   "body": {"event": "start", "game": {"shooter": 1, "point": None}}})
        assert sess.balance("p1") == 0 and sess.table.wagers == ()
        assert app.rounds.current is None
        assert app.rounds.accepts(wager("2026-11-30T00:00:03+00:00"))[1] == \
            f"round {RID} was abandoned (the table restarted)"
        rows = sess.db.execute("SELECT status, seq, why FROM round_wagers").fetchall()
        assert rows == [("returned", 2, "abandoned: the table restarted")]
    finally:
        sess.close()


def test_resumed_abandoned_round_returns_its_wagers_once(tmp_path):
    """r2: RoundCycle.resume names the abandoned round; its wagers are returned (one ledger
    transaction, logged), not settled by the next round's roll; idempotent on replay."""
    sess, app, lines = _applier(tmp_path)
    try:
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
        app.place_for_round(wager("2026-11-30T00:00:02+00:00"))
        app.place_for_round({**wager("2026-11-30T00:00:03+00:00"), "player": "p2", "bet": "dont_pass",
                             "amount": 500})
        app.apply(env(2, "no-more-bets", "2026-11-30T00:00:10+00:00"))
        app.apply(env(3, "stopped", "2026-11-30T00:00:20+00:00", cause="no roll after 2 throws"))
        resumed = {"seq": 4, "topic": "round", "ts": "2026-11-30T00:01:20+00:00",
                   "body": {"round_id": RID, "event": "resumed", "who": "tech-1", "abandoned": RID}}
        app.apply(resumed)
        assert (sess.balance("p1"), sess.balance("p2")) == (0, 0) and sess.table.wagers == ()
        assert [ln.split(":")[0] for ln in lines] == [f"round {RID} abandoned"] * 2
        assert "p2 dont_pass wid 2 returned $5.00" in lines[1]
        app.apply(resumed)
        assert len(lines) == 2 and sess.balance("p1") == 0
        ev = sess.db.execute("SELECT player, cents FROM events WHERE kind='round-return' ORDER BY id").fetchall()
        assert ev == [("p1", 1000), ("p2", 500)]
        app.apply(env(5, "bets-open", "2026-11-30T00:01:21+00:00", rid="R2"))
        app.apply(env(6, "no-more-bets", "2026-11-30T00:01:30+00:00", rid="R2"))
        app.apply(_roll(7, (5, 2)))
        assert (sess.balance("p1"), sess.balance("p2")) == (0, 0)
    finally:
        sess.close()


def test_wager_stamped_after_the_close_but_received_before_it_is_returned(tmp_path):
    """r3: no-more-bets and the throw are published in one frame; a wager stamped after the close
    that reached settlement first is returned when the close arrives; one stamped before stays."""
    sess, app, lines = _applier(tmp_path)
    try:
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
        app.place_for_round(wager("2026-11-30T00:00:09.99+00:00"))
        app.place_for_round({**wager("2026-11-30T00:00:10.02+00:00"), "player": "p9"})
        app.place_for_round({**wager("2026-11-30T00:00:10+00:00"), "player": "p8"})
        app.apply(env(2, "no-more-bets", "2026-11-30T00:00:10+00:00"))
        assert [w.player for w in sess.table.wagers] == ["p1"]
        assert (sess.balance("p1"), sess.balance("p9"), sess.balance("p8")) == (-1000, 0, 0)
        assert len(lines) == 2 and all("placed at or after no more bets (seq=2)" in ln for ln in lines)
        app.apply(env(3, "throw", "2026-11-30T00:00:10+00:00"))
        app.apply(_roll(4, (6, 1)))
        assert sess.balance("p1") == 1000
        # the roll rode p1's wager: a later bets-open returns nothing
        app.apply(env(5, "results", "2026-11-30T00:00:12+00:00"))
        app.apply(env(6, "bets-open", "2026-11-30T00:00:15+00:00", rid="R2"))
        assert sess.balance("p1") == 1000 and len(lines) == 3 and lines[2].startswith("settle seq=4")
    finally:
        sess.close()


def test_live_no_roll_result_keeps_the_wagers_for_the_next_round(tmp_path):
    """A live round ended by a no roll decides nothing (9 NYCRR 5324.52(k)): its wagers stay on
    the layout when the next round opens (not returned)."""
    sess, app, lines = _applier(tmp_path)
    try:
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
        app.place_for_round(wager("2026-11-30T00:00:02+00:00"))
        app.apply(env(2, "no-more-bets", "2026-11-30T00:00:05+00:00"))
        app.apply(env(3, "results", "2026-11-30T00:00:08+00:00", verdict="no-roll"))
        app.apply(env(4, "bets-open", "2026-11-30T00:00:09+00:00", rid="R2"))
        assert [w.player for w in sess.table.wagers] == ["p1"] and lines == []
    finally:
        sess.close()


def test_round_envelope_with_a_bad_ts_is_a_roll_message_error(tmp_path):
    """A round envelope settlement cannot apply stops the service with RollMessageError naming
    the seq (no traceback from RoundGate.observe's ValueError), nothing changed."""
    from settlement.service import RollMessageError

    sess, app, lines = _applier(tmp_path)
    try:
        with pytest.raises(RollMessageError, match=r"seq 7 \(round\): round envelope seq 7: envelope ts 'noon'"):
            app.apply(env(7, "bets-open", "noon"))
        with pytest.raises(RollMessageError, match="seq 8 .*needs 'round_id' and 'event'"):
            app.apply({"seq": 8, "topic": "round", "ts": "2026-11-30T00:00:00+00:00", "body": {"event": "throw"}})
        assert app.rounds.rounds == {} and sess.last_bus_seq == 0
    finally:
        sess.close()


def test_restart_mid_round_still_returns_a_wager_stamped_after_the_close(tmp_path):
    """settle-service restarted between a wager's acceptance and its round's no-more-bets (the
    gate is rebuilt empty): the wager stamped after the close is still returned when the close
    arrives, never ridden on the roll; the one stamped before stays."""
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    sess, app, lines = _applier(tmp_path)
    try:
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
        sess.mark_seen(1)
        app.place_for_round(wager("2026-11-30T00:00:09.99+00:00"))
        app.place_for_round({**wager("2026-11-30T00:00:10.02+00:00"), "player": "p9"})
    finally:
        sess.close()
    sess = Session(load_profile("ny-5324"), tmp_path / "ledger.sqlite")      # the restart
    try:
        assert sess.last_bus_seq == 1 and [w.player for w in sess.table.wagers] == ["p1", "p9"]
        app = EnvelopeApplier(sess, LineBettor([]), lines.append, clock=None, monotonic=None)
        app.apply(env(2, "no-more-bets", "2026-11-30T00:00:10+00:00"))
        assert [w.player for w in sess.table.wagers] == ["p1"]
        app.apply(_roll(3, (6, 1)))
        assert (sess.balance("p1"), sess.balance("p9")) == (1000, 0)
        assert any("p9 pass wid 2 returned $10.00" in ln and "placed at or after no more bets" in ln for ln in lines)
    finally:
        sess.close()


def test_a_stamp_far_from_its_receipt_is_refused(tmp_path):
    """A terminal stamps its own wagers. Settlement catching up on the bus has not yet seen the
    round's no-more-bets (nor the roll): a wager stamped before the close but received long
    after it (held back, or backdated once the dice were at rest) was accepted and rode the
    roll. Settlement's own clock at receipt now bounds the stamp: at most 2 s older, 2 s newer."""
    from datetime import datetime, timedelta

    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.rounds import MAX_STAMP_AGE_S
    from settlement.service import EnvelopeApplier, LineBettor

    now = {"t": datetime.fromisoformat("2026-11-30T00:00:03.500+00:00")}
    sess = Session(load_profile("ny-5324"), tmp_path / "ledger.sqlite")
    try:
        app = EnvelopeApplier(sess, LineBettor([]), lambda s: None, clock=lambda: now["t"],
                              monotonic=None)
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
        assert app.place_for_round(wager("2026-11-30T00:00:03+00:00")).amount == 1000    # 0.5 s old
        now["t"] += timedelta(seconds=30)                   # the close and the roll not applied yet
        with pytest.raises(Rejected, match=r"a stamp 29\.5 s old \(more than 2 s\) cannot vouch"):
            app.place_for_round({**wager("2026-11-30T00:00:04+00:00"), "player": "p2"})
        with pytest.raises(Rejected, match=r"the terminal's clock is wrong"):
            app.place_for_round({**wager("2026-11-30T00:00:40+00:00"), "player": "p3"})
        assert MAX_STAMP_AGE_S == 2.0 and [w.player for w in sess.table.wagers] == ["p1"]
    finally:
        sess.close()


def test_a_step_of_settlements_clock_is_named_when_wagers_are_refused_by_it(tmp_path, monkeypatch, caplog):
    """Settlement's own clock (the receipt time of a wager, the ledger's times) stepped back an
    hour (an NTP step, a machine without a clock battery booted at its saved time): every wager
    is then refused as "placed ... s after it was received" with nothing saying why. Now the
    step is named at WARNING by settlement's watched clock (settlement/clock.py); the refusal
    stands (the stamp cannot be vouched for)."""
    import logging
    from datetime import datetime

    import settlement.clock
    from bus.wallclock import WallClock
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    clocks = {"w": datetime.fromisoformat("2026-11-30T00:00:03.500+00:00").timestamp(), "m": 50.0}
    monkeypatch.setattr(settlement.clock, "CLOCK", WallClock("settlement", wall=lambda: clocks["w"],
                                                             mono=lambda: clocks["m"]))
    sess = Session(load_profile("ny-5324"), tmp_path / "ledger.sqlite")
    try:
        app = EnvelopeApplier(sess, LineBettor([]), lambda s: None, monotonic=None)  # settlement's own clock; no bus view
        app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00"))
        assert app.place_for_round(wager("2026-11-30T00:00:03+00:00")).amount == 1000
        clocks["w"] += 0.5 - 3600.0                                      # 0.5 s later, an hour back
        clocks["m"] += 0.5
        with caplog.at_level(logging.WARNING, logger="bus.wallclock"):
            with pytest.raises(Rejected, match=r"the terminal's clock is wrong"):
                app.place_for_round({**wager("2026-11-30T00:00:04+00:00"), "player": "p2"})
        assert "settlement: the wall clock went back by 3600.000 s" in caplog.text
        assert settlement.clock.CLOCK.steps == 1 and [w.player for w in sess.table.wagers] == ["p1"]
    finally:
        sess.close()
