"""Settlement service: settles line bets from the roll bus, acks after applying, idempotent on restart."""
from __future__ import annotations

import re
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from bus.config import BusConfig
from bus.publisher import RollPublisher
from bus.subscriber import RollSubscriber  # noqa: F401 - a project module: an import error fails here
from settlement.service import run_settlement_service

PLAYERS = [{"name": "p1", "bet": "pass", "amount": 1000, "odds": 2},
           {"name": "p2", "bet": "dont_pass", "amount": 1000, "odds": 0}]


def body(d1, d2, shooter=1, point=None):
    return {"roll_id": f"r{d1}{d2}", "verdict": "roll", "reason": None, "dice": [d1, d2], "total": d1 + d2,
            "game": {"shooter": shooter, "shooter_roll": 1, "come_out": True, "point": point, "puck": "OFF",
                     "outcome": None}, "frame_sha256": "0" * 64, "decision": None}


def run_service(cfg, ledger, lines, n_rolls):
    stop = threading.Event()
    t = threading.Thread(target=run_settlement_service,
                         args=(cfg, "ny-5324", PLAYERS, ledger, stop),
                         kwargs={"on_line": lines.append, "max_rolls": n_rolls}, daemon=True)
    t.start()
    return t, stop


def test_service_settles_line_bets_and_acks(tmp_path: Path):
    cfg = BusConfig.local(tmp_path / "bus")
    ledger = tmp_path / "ledger.sqlite"
    pub = RollPublisher(cfg)
    try:
        lines: list[str] = []
        t, stop = run_service(cfg, ledger, lines, 3)
        time.sleep(0.5)
        pub.publish("roll", body(2, 2, point=4))
        pub.publish("roll", {**body(1, 1), "verdict": "no-roll", "dice": None})
        pub.publish("roll", body(3, 1, point=None))
        pub.publish("roll", body(6, 6))
        t.join(20)
        stop.set()
        assert not t.is_alive()
        settled = [x for x in lines if x.startswith("settle")]
        assert any("p1 pass stake $10.00 wins $10.00" in x for x in settled), lines
        assert any("p1 odds pass 4 stake $20.00 wins $40.00" in x for x in settled), lines
        assert any("p2 dont_pass stake $10.00 loses" in x for x in settled), lines
        assert any("p2 dont_pass stake $10.00 push" in x for x in settled), lines        # 12: bar
        assert any("p1 pass stake $10.00 loses" in x for x in settled), lines             # craps 12
        db = sqlite3.connect(ledger)
        bal = dict(db.execute("SELECT player, cents FROM balances"))
        assert bal == {"p1": 3000, "p2": -2000}             # net, open bets included
        assert pub.acks() and max(pub.acks().values()) == 4
        # a restart replays nothing already settled: balances unchanged, then one new roll settles
        lines2: list[str] = []
        t, stop = run_service(cfg, ledger, lines2, 1)
        time.sleep(0.5)
        pub.publish("roll", body(5, 6))
        t.join(20)
        stop.set()
        bal = dict(sqlite3.connect(ledger).execute("SELECT player, cents FROM balances"))
        assert bal == {"p1": 4000, "p2": -3000}
        # only the new roll is settled (seq 5, 5-6: a natural 11): p1's pass wins even money,
        # p2's don't pass loses; nothing of seq 1..4 again
        settled2 = [x for x in lines2 if x.startswith("settle")]
        assert len(settled2) == 2 and all(x.startswith("settle seq=5 dice=5-6 ") for x in settled2), lines2
        assert any("p1 pass stake $10.00 wins $10.00" in x for x in settled2), lines2
        assert any("p2 dont_pass stake $10.00 loses" in x for x in settled2), lines2
    finally:
        pub.close()


def test_envelope_applier_tracks_shooter_and_skips_no_rolls():
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    sess = Session(load_profile("ny-5324"))
    lines: list[str] = []
    ap = EnvelopeApplier(sess, LineBettor([{"name": "p", "bet": "pass", "amount": 1000, "odds": 0}]), lines.append)
    ap.bet()
    env = lambda seq, b: {"seq": seq, "topic": "roll", "body": b}  # noqa: E731
    assert ap.apply(env(1, body(3, 3, shooter=1, point=6))) == 1
    assert ap.apply({"seq": 2, "topic": "heartbeat", "body": {}}) == 0
    assert ap.apply(env(3, {**body(1, 1), "verdict": "no-roll", "dice": None})) == 0
    assert ap.apply(env(4, body(2, 2, shooter=2, point=6))) == 1       # voluntary change, point stays
    assert sess.table.state.shooter == 2 and sess.table.state.point == 6
    assert ap.apply(env(5, body(3, 4, shooter=3, point=None))) == 1    # seven-out reported as shooter 3
    assert sess.table.state.shooter == 3
    assert ap.apply(env(5, body(3, 4, shooter=3))) == 0                # the same seq again: nothing
    assert ap.apply(env(6, body(1, 1, shooter=3, point=4))) == 1       # table says point 4: a warning
    assert any(x.startswith("shooter change (voluntary) before seq=4") for x in lines)
    assert any("p pass stake $10.00 loses" in x and "seq=5" in x for x in lines)
    assert any(x.startswith("warning: table reports point 4") for x in lines)
    assert sess.balance("p") == -3000                                  # two $10 losses and the $10 bet now up


def test_applier_takes_state_new_shooter_once_and_controller_player_format():
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    sess = Session(load_profile("ny-5324"))
    players = [{"name": "q", "bankroll_cents": 100000,
                "bets": [{"bet": "dont-pass", "amount_cents": 1000, "odds_multiple": 1}]}]
    lines: list[str] = []
    ap = EnvelopeApplier(sess, LineBettor(players), lines.append)
    ap.bet()
    assert [(w.player, w.kind, w.amount) for w in sess.table.wagers] == [("q", "dont_pass", 1000)]
    ap.apply({"seq": 1, "topic": "roll", "body": body(2, 3, shooter=1, point=5)})
    assert any(w.kind == "odds" and w.amount == 1000 for w in sess.table.wagers)   # laid 1x
    st = {"seq": 2, "topic": "state", "body": {"event": "new-shooter", "cause": "voluntary",
                                                "game": {"shooter": 2}}}
    ap.apply(st)
    ap.apply(st)                                                                    # replayed: once
    assert sess.table.state.shooter == 2 and sess.table.state.point == 5
    assert ap.apply({"seq": 3, "topic": "roll", "body": body(4, 3, shooter=2)}) == 1   # no extra change
    assert sess.table.state.shooter == 3
    assert sum(1 for x in lines if x.startswith("shooter change")) == 1
    assert any("q odds dont_pass 5 stake $10.00 wins $6.67" in x for x in lines)   # 2:3, rounded up


def test_applier_takes_the_decide_only_state_once():
    """The table's "decide-only" state message (9 NYCRR 5324.52(i)(2)) is applied once per seq:
    the 6 that follows sets no point, the test player's pass bet is refused until a 7 ends it;
    a start while a point is on is refused and logged, nothing else lost."""
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    sess = Session(load_profile("ny-5324"))
    lines: list[str] = []
    ap = EnvelopeApplier(sess, LineBettor([{"name": "p", "bet": "come", "amount": 500, "odds": 0}]), lines.append)
    env = lambda seq, b: {"seq": seq, "topic": "roll", "body": b}  # noqa: E731
    state = lambda seq, on: {"seq": seq, "topic": "state", "body": {"event": "decide-only", "on": on}}  # noqa: E731
    sess.place({"player": "p", "bet": "pass", "amount": 500})
    assert ap.apply(env(1, body(2, 2, point=4))) == 1                  # point 4
    assert ap.apply(state(2, True)) == 0
    assert any(x.startswith("decide-only seq=2 refused") and "5324.52(i)(2)" in x for x in lines)
    ap.bet()                                                            # the come bet
    assert ap.apply(env(3, body(3, 3, point=4))) == 1                   # the come bet goes to 6
    assert ap.apply(env(4, body(1, 3))) == 1                            # point made: the pass wins
    assert ap.apply(state(5, True)) == 0 and ap.apply(state(5, True)) == 0
    assert sess.table.state.decide_only
    assert sum(x.startswith("rolls only to decide") for x in lines) == 1
    n = len(lines)
    assert ap.apply(env(6, body(5, 1))) == 1                            # 6: the come bet on 6 wins
    assert any("p come 6 stake $5.00 wins $5.00" in x for x in lines[n:]), lines[n:]
    assert sess.table.state.point is None and sess.table.state.decide_only
    assert LineBettor([{"name": "r", "bet": "pass", "amount": 500}]).requests(sess.table) == []   # no pass bet now
    assert ap.apply(env(7, body(3, 4))) == 1 and not sess.table.state.decide_only   # a 7 ends them
    assert LineBettor([{"name": "r", "bet": "pass", "amount": 500}]).requests(sess.table) == [
        {"player": "r", "bet": "pass", "amount": 500}]


def test_applier_tells_the_crew_when_settlement_ends_the_decide_only_rolls_itself():
    """When the last come or don't come wager on a number is decided, "the game shall proceed"
    (9 NYCRR 5324.52(i)(2)): settlement ends the rolls only to decide them, which the table's
    game cannot see (it knows no wagers), and says so, naming the command that ends them on
    the table; a 7 that ends them on both sides says nothing."""
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor

    sess = Session(load_profile("ny-5324"))
    lines: list[str] = []
    ap = EnvelopeApplier(sess, LineBettor([]), lines.append)
    env = lambda seq, b: {"seq": seq, "topic": "roll", "body": b}  # noqa: E731
    state = lambda seq, on: {"seq": seq, "topic": "state", "body": {"event": "decide-only", "on": on}}  # noqa: E731
    assert ap.apply(env(1, body(3, 3, point=6))) == 1                   # point 6
    sess.place({"player": "p", "bet": "come", "amount": 500})
    assert ap.apply(env(2, body(4, 4, point=6))) == 1                   # the come bet goes to 8
    assert ap.apply(env(3, body(2, 4))) == 1                            # point made
    assert ap.apply(state(4, True)) == 0 and sess.table.state.decide_only
    assert ap.apply(env(5, body(5, 3))) == 1                            # 8: the come bet wins
    assert any("p come 8 stake $5.00 wins $5.00" in x for x in lines), lines
    assert not sess.table.state.decide_only
    ended = [x for x in lines if x.startswith("no come or don't come wager remains on a number after seq=5")]
    assert len(ended) == 1 and "5324.52(i)(2)" in ended[0] and "--decide-only off" in ended[0]
    # a 7 ends them on both sides: nothing to tell
    sess2 = Session(load_profile("ny-5324"))
    lines2: list[str] = []
    ap2 = EnvelopeApplier(sess2, LineBettor([]), lines2.append)
    ap2.apply(env(1, body(3, 3, point=6)))
    sess2.place({"player": "p", "bet": "come", "amount": 500})
    ap2.apply(env(2, body(4, 4, point=6)))
    ap2.apply(env(3, body(2, 4)))
    ap2.apply(state(4, True))
    assert ap2.apply(env(5, body(3, 4))) == 1 and not sess2.table.state.decide_only
    assert not any(x.startswith("no come or don't come wager remains") for x in lines2), lines2


@pytest.mark.parametrize("change, says", [
    ({"game": "x"}, "game is str, not an object"),
    ({"dice": [7, 1]}, "dice [7, 1] are not two faces 1..6"),
    ({"dice": [3]}, "dice [3] are not two faces 1..6"),
    ({"dice": [True, 2]}, "dice [True, 2] are not two faces 1..6"),
])
def test_a_roll_settlement_cannot_apply_stops_it_unacknowledged(change, says):
    """A roll signed by the table whose body settlement cannot use (a table defect) raised
    AttributeError (a crash at every restart) or was "refused" in a line and then acknowledged:
    a roll never settled. Now it raises RollMessageError naming the seq and what is wrong, and
    nothing is recorded: the restarted service meets it again."""
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor, RollMessageError

    sess = Session(load_profile("ny-5324"))
    ap = EnvelopeApplier(sess, LineBettor([]), lambda s: None)
    sess.place({"player": "p", "bet": "pass", "amount": 500})
    assert ap.apply({"seq": 1, "topic": "roll", "body": body(2, 2, point=4)}) == 1
    bad = {**body(3, 4), **change}
    with pytest.raises(RollMessageError, match=r"seq 2 \(roll\): " + re.escape(says)):
        ap.apply({"seq": 2, "topic": "roll", "body": bad})
    assert sess.last_bus_seq == 1 and sess.table.state.point == 4
    assert [w.kind for w in sess.table.wagers] == ["pass"]
    # a state message too
    with pytest.raises(RollMessageError, match="game is list"):
        ap.apply({"seq": 2, "topic": "state", "body": {"event": "new-shooter", "game": []}})
    assert sess.table.state.shooter == 1


def test_a_roll_the_table_publishes_again_is_not_settled_twice():
    """The table publishes a roll again under a new seq (it stopped between publishing the roll
    and recording it, and the journal had pruned it: controller/store.py). Settlement applies
    per seq, so the same roll id paid twice. Now the ledger keeps the table's roll ids: the same
    roll id with the same dice is a warning, nothing settled; with other dice (a roll id
    reused) settlement stops, unacknowledged."""
    from settlement.ledger import Session
    from settlement.profile import load_profile
    from settlement.service import EnvelopeApplier, LineBettor, RollMessageError

    sess = Session(load_profile("ny-5324"))
    lines: list[str] = []
    ap = EnvelopeApplier(sess, LineBettor([]), lines.append)
    sess.place({"player": "p", "bet": "pass", "amount": 500})
    first = {**body(3, 4), "roll_id": "table-1-00000001"}
    assert ap.apply({"seq": 1, "topic": "roll", "body": first}) == 1
    assert sess.balance("p") == 500                                 # the natural paid even money
    assert ap.apply({"seq": 2, "topic": "roll", "body": first}) == 0
    assert sess.balance("p") == 500 and sess.table.state.rolls == 1
    assert lines[-1] == ("warning: seq=2: roll table-1-00000001 was settled at seq 1 with dice [3, 4]: published "
                         "again by the table, not settled twice")
    with pytest.raises(RollMessageError, match="the table reused a roll id"):
        ap.apply({"seq": 3, "topic": "roll", "body": {**body(2, 2), "roll_id": "table-1-00000001"}})
    assert sess.table.state.point is None and sess.balance("p") == 500


def test_restart_after_the_table_pruned_acked_envelopes_that_settled_nothing(tmp_path: Path):
    """The service acks every envelope (a no roll, an alarm too) and the table prunes what every
    subscriber acked (prune_acked). The ledger records those seqs as seen, so a restart resumes
    after them: before, it resumed after the last roll and stopped with "no longer holds seq"."""
    cfg = BusConfig.local(tmp_path / "bus", heartbeat_s=0.1, prune_acked=True)
    ledger = tmp_path / "ledger.sqlite"
    with RollPublisher(cfg) as pub:
        lines: list[str] = []
        t, stop = run_service(cfg, ledger, lines, None)
        time.sleep(0.5)
        pub.publish("roll", body(3, 4))                                       # seq 1: a natural
        pub.publish("alarm", {"code": "door-open", "message": "x"})         # seq 2
        pub.publish("roll", {**body(1, 1), "verdict": "no-roll", "dice": None})   # seq 3
        deadline = time.monotonic() + 10
        while max(pub.acks().values(), default=0) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        t.join(20)
        assert not t.is_alive() and max(pub.acks().values()) == 3
        from settlement.ledger import Session
        from settlement.profile import load_profile
        s = Session(load_profile("ny-5324"), ledger)
        assert s.last_bus_seq == 3
        s.close()
        pub.publish("roll", body(6, 5))                                       # seq 4
        time.sleep(0.5)                                                        # the table prunes 1..3
        lines2: list[str] = []
        t, stop = run_service(cfg, ledger, lines2, 1)
        t.join(20)
        stop.set()
        assert not t.is_alive()
        assert not any("gap_lost" in x or "no longer holds" in x for x in lines2), lines2
        assert any(x.startswith("settle seq=4") for x in lines2), lines2


# ---- the test players and the ledger are checked before anything starts -------------------

def _players_file(tmp_path: Path, players) -> Path:
    import json

    f = tmp_path / "players.json"
    f.write_text(json.dumps(players))
    return f


@pytest.mark.parametrize("entry, fragment", [
    ({"name": "p1", "bet": "pass", "amount": 1000, "odds": "2"}, "player 0 ('p1'): odds: Input should be a valid integer (got '2')"),
    ({"name": "p1", "bet": "pass", "amount": 1000, "odds": "abc"}, "player 0 ('p1'): odds: Input should be a valid integer (got 'abc')"),
    ({"name": "p1", "bet": "pass", "amount": 1000, "odd": 2}, "player 0 ('p1'): odd: unknown key"),
    ({"name": "p1", "bet": "pass", "amount": 1000, "odds": -2}, "player 0 ('p1'): odds: Input should be greater than or equal to 0 (got -2)"),
    ({"name": "p1", "bet": "pass", "amount": 1000, "odds": 101}, "player 0 ('p1'): odds: Input should be less than or equal to 100 (got 101)"),
    ({"name": "p1", "bet": "pass", "amount": True}, "player 0 ('p1'): amount: Input should be a valid integer (got True)"),
    ({"name": "p1", "bet": "pass", "amount": 10.0}, "player 0 ('p1'): amount: Input should be a valid integer (got 10.0)"),
    ({"name": "p1", "bet": "pass", "amount": 0}, "player 0 ('p1'): amount: Input should be greater than 0 (got 0)"),
    ({"name": "p1", "bet": "place", "amount": 500}, "player 0 ('p1'): bet: Input should be 'pass', 'dont_pass', 'come' or 'dont_come' (got 'place')"),
    ({"name": "p1", "bets": [5]}, "player 0 ('p1'): bets.0: Input should be a valid dictionary"),
    ({"name": "p1", "bets": [{"bet": "pass", "amount_cents": 1000, "odds_multiple": "2"}]},
     "player 0 ('p1'): bets.0.odds_multiple: Input should be a valid integer (got '2')"),
])
def test_a_wrong_player_entry_is_refused_naming_the_entry_and_field(entry, fragment):
    from settlement.service import LineBettor

    with pytest.raises(ValueError) as info:
        LineBettor([entry])
    assert str(info.value).startswith(f"players: {fragment}")


def test_the_second_entry_is_named_by_its_index():
    from settlement.service import normalize_players

    with pytest.raises(ValueError) as info:
        normalize_players([{"name": "a", "bet": "pass", "amount": 500},
                           {"name": "b", "bet": "come", "amount": "500"}], "f.json")
    assert str(info.value) == "f.json: player 1 ('b'): amount: Input should be a valid integer (got '500')"


def test_both_player_forms_still_normalize():
    from settlement.service import DEFAULT_PLAYERS, normalize_players

    assert normalize_players(DEFAULT_PLAYERS) == DEFAULT_PLAYERS
    assert normalize_players([{"name": "q", "bet": "dont-pass", "amount": 500},
                              {"name": "r", "bankroll_cents": 5000,
                               "bets": [{"bet": "dont-come", "amount_cents": 1000, "odds_multiple": 2},
                                        {"bet": "pass", "amount_cents": 300}]}]) == [
        {"name": "q", "bet": "dont_pass", "amount": 500, "odds": 0},
        {"name": "r", "bet": "dont_come", "amount": 1000, "odds": 2},
        {"name": "r", "bet": "pass", "amount": 300, "odds": 0}]


def test_settle_service_refuses_a_wrong_players_file_with_exit_2_before_starting(tmp_path: Path, capsys):
    from controller.cli import main

    f = _players_file(tmp_path, [{"name": "p1", "bet": "pass", "amount": 1000, "odds": "2"}])
    ledger, bus_dir = tmp_path / "ledger.sqlite", tmp_path / "bus"
    assert main(["settle-service", "--bus-dir", str(bus_dir), "--ledger", str(ledger), "--players", str(f),
                 "--max-rolls", "1"]) == 2
    err = capsys.readouterr().err
    assert f"craps-table settle-service: {f}: player 0 ('p1'): odds: Input should be a valid integer (got '2')" in err
    assert "waiting for rolls" not in err
    assert not ledger.exists() and not bus_dir.exists()


def test_settle_service_names_a_players_file_that_is_not_json(tmp_path: Path, capsys):
    from controller.cli import main

    f = tmp_path / "players.json"
    f.write_text('[{"name": "p1",')
    assert main(["settle-service", "--bus-dir", str(tmp_path / "bus"), "--ledger", str(tmp_path / "l.sqlite"),
                 "--players", str(f), "--max-rolls", "1"]) == 2
    assert f"craps-table settle-service: {f}: not valid JSON: " in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["not-a-database", "missing-directory"])
def test_settle_service_refuses_an_unusable_ledger_with_exit_2(tmp_path: Path, capsys, kind):
    from controller.cli import main

    if kind == "not-a-database":
        ledger = tmp_path / "bad.sqlite"
        ledger.write_bytes(bytes(range(256)) * 16)
        why = "file is not a database"
    else:
        ledger = tmp_path / "missing" / "ledger.sqlite"
        why = "unable to open database file"
    bus_dir = tmp_path / "bus"
    BusConfig.local(bus_dir)   # the table's local bus, with its keys
    before = sorted(p.relative_to(bus_dir) for p in bus_dir.rglob("*"))
    assert main(["settle-service", "--bus-dir", str(bus_dir), "--ledger", str(ledger), "--max-rolls", "1"]) == 2
    err = capsys.readouterr().err
    assert f"craps-table settle-service: ledger {ledger}: {why}" in err
    assert "waiting for rolls" not in err
    assert sorted(p.relative_to(bus_dir) for p in bus_dir.rglob("*")) == before
