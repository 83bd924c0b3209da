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
        app = EnvelopeApplier(sess, LineBettor([]), lines.append)
        assert app.apply(env(1, "bets-open", "2026-11-30T00:00:00+00:00")) == 0
        placed = app.place_for_round(wager("2026-11-30T00:00:03+00:00"))
        assert placed.amount == 1000 and placed.kind == "pass"
        app.apply(env(2, "no-more-bets", "2026-11-30T00:00:10+00:00"))
        with pytest.raises(Rejected, match="after round"):
            app.place_for_round({**wager("2026-11-30T00:00:11+00:00"), "player": "p2"})
        assert [w.player for w in sess.table.wagers] == ["p1"]
    finally:
        sess.close()
