"""Game state per 9 NYCRR 5324.52(b)(1), (i) and N.J.A.C. 13:69F-1.11; persistence and resume."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.game import GameState, advance, classify, new_shooter, set_decide_only, state_from_json
from controller.store import StateStore, StoreError

ALL_DICE = list(itertools.product(range(1, 7), repeat=2))


@pytest.mark.parametrize("dice", ALL_DICE)
def test_every_come_out_roll(dice):
    total = sum(dice)
    after, outcome = advance(GameState(), dice)
    if total in (7, 11):
        assert outcome == "natural" and after.point is None and after.puck == "OFF"
    elif total in (2, 3, 12):
        assert outcome == "craps" and after.point is None and after.puck == "OFF"
    else:
        assert outcome == "point-set" and after.point == total and after.puck == "ON"
    assert after.shooter == 1 and after.shooter_roll == 1 and after.rolls == 1
    assert after.last_outcome == outcome


@pytest.mark.parametrize("point", [4, 5, 6, 8, 9, 10])
@pytest.mark.parametrize("dice", ALL_DICE)
def test_every_point_roll(point, dice):
    total = sum(dice)
    before = GameState(shooter=3, shooter_roll=5, point=point, rolls=40, points_made=(6,))
    after, outcome = advance(before, dice)
    assert after.rolls == 41
    if total == point:
        assert outcome == "point-made"
        assert after.point is None and after.puck == "OFF" and after.come_out
        assert after.shooter == 3 and after.shooter_roll == 6
        assert after.points_made == tuple(sorted({6, point}))
    elif total == 7:
        assert outcome == "seven-out"
        # 9 NYCRR 5324.52(i)(1)(i): the shooter passes the dice on a loser 7
        assert after.point is None and after.puck == "OFF"
        assert after.shooter == 4 and after.shooter_roll == 0 and after.points_made == ()
    else:
        assert outcome == "no-decision"
        assert after.point == point and after.puck == "ON" and after.shooter == 3 and after.shooter_roll == 6


def test_a_shooters_hand():
    s = GameState()
    seq = [((3, 4), "natural", None), ((1, 1), "craps", None), ((2, 2), "point-set", 4),
           ((5, 6), "no-decision", 4), ((1, 3), "point-made", None), ((4, 5), "point-set", 9),
           ((3, 4), "seven-out", None)]
    for dice, outcome, point in seq:
        s, got = advance(s, dice)
        assert (got, s.point) == (outcome, point)
    assert s.shooter == 2 and s.shooter_roll == 0 and s.rolls == 7


def test_voluntary_relinquish_keeps_point():
    s, _ = advance(GameState(), (3, 3))
    s = new_shooter(s)  # N.J.A.C. 13:69F-1.11(a), (c)
    assert s.shooter == 2 and s.shooter_roll == 0 and s.point == 6 and s.puck == "ON"
    s, outcome = advance(s, (1, 5))
    assert outcome == "point-made" and s.shooter == 2 and s.shooter_roll == 1


def test_rolls_only_to_decide_come_and_dont_come_wagers():
    """9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b): no point is set while they last (puck OFF),
    the shooter keeps the dice, and a 7 (which decides every come / don't come on a number)
    ends them; they cannot start while a point is established."""
    s, _ = advance(GameState(), (2, 2))
    with pytest.raises(ValueError, match=r"point is 4 .*5324.52\(i\)\(2\)"):
        set_decide_only(s, True)
    s, outcome = advance(s, (1, 3))
    assert outcome == "point-made" and s.points_made == (4,)
    s = set_decide_only(s, True)
    s, outcome = advance(s, (3, 3))
    assert (outcome, s.point, s.puck, s.decide_only) == ("decide-only", None, "OFF", True)
    s, outcome = advance(s, (6, 5))
    assert (outcome, s.decide_only) == ("decide-only", True)
    s, outcome = advance(s, (3, 4))
    assert (outcome, s.decide_only, s.shooter, s.shooter_roll) == ("decide-only", False, 1, 5)
    s, outcome = advance(s, (3, 3))
    assert (outcome, s.point) == ("point-set", 6)                  # the game proceeds
    made = GameState(last_outcome="point-made", shooter_roll=2)
    assert state_from_json(set_decide_only(made, True).to_json()).decide_only is True
    assert set_decide_only(set_decide_only(made, True), False).decide_only is False
    # "after making the come out point": not at the session's start, nor after a come-out
    # natural or craps (N.J.A.C. 13:69F-1.11(b) says the same); settlement refuses them too
    for last in (None, "natural", "craps", "decide-only"):
        with pytest.raises(ValueError, match=r"follow a point made .*5324.52\(i\)\(2\)"):
            set_decide_only(GameState(last_outcome=last, shooter_roll=3), True)
    # a new shooter (the dice taken by another player) has made no point
    with pytest.raises(ValueError, match=r"not a new shooter"):
        set_decide_only(new_shooter(made), True)
    s, outcome = advance(made, (5, 6))
    assert outcome == "natural"
    with pytest.raises(ValueError, match=r"not a natural"):
        set_decide_only(s, True)


def test_bad_input():
    with pytest.raises(ValueError, match="1..6"):
        advance(GameState(), (0, 7))
    with pytest.raises(ValueError, match="2..12"):
        classify(GameState(), 13)
    with pytest.raises(ValueError, match="point 7"):
        state_from_json({"shooter": 1, "shooter_roll": 0, "point": 7, "rolls": 0})


def test_state_json_round_trip():
    s = GameState(shooter=7, shooter_roll=2, point=8, rolls=99, points_made=(4, 10), last_outcome="point-set")
    assert state_from_json(s.to_json()) == s


def test_store_resumes_exactly(tmp_path):
    db = tmp_path / "state.sqlite"
    store = StateStore(db)
    assert store.state == GameState() and store.verdict_count == 0
    s, _ = advance(GameState(), (2, 3))
    store.commit(s, {"roll_id": "t-000001", "verdict": "roll", "dice": [2, 3]})
    store.mark_published("t-000001", 1)
    s2, _ = advance(s, (6, 6))
    store.commit(s2, {"roll_id": "t-000002", "verdict": "roll", "dice": [6, 6]})
    store.close()  # "crash" before publishing the second verdict
    again = StateStore(db)
    assert again.state == s2 and again.state.point == 5 and again.state.shooter_roll == 2
    assert again.verdict_count == 2
    assert [b["roll_id"] for b in again.unpublished()] == ["t-000002"]
    assert [b["dice"] for b in again.verdicts()] == [[2, 3], [6, 6]]
    again.close()


def test_store_commit_is_atomic(tmp_path):
    store = StateStore(tmp_path / "s.sqlite")
    s, _ = advance(GameState(), (4, 4))
    store.commit(s, {"roll_id": "dup", "verdict": "roll"})
    s2, _ = advance(s, (4, 4))
    with pytest.raises(StoreError, match="commit failed"):
        store.commit(s2, {"roll_id": "dup", "verdict": "roll"})  # UNIQUE roll_id: rolled back
    store.close()
    again = StateStore(tmp_path / "s.sqlite")
    assert again.state == s and again.verdict_count == 1
    again.close()


def test_store_rejects_garbage_file(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="bad.sqlite"):
        StateStore(bad)


dice_st = st.tuples(st.integers(1, 6), st.integers(1, 6))


@settings(max_examples=200, deadline=None)
@given(st.lists(dice_st, max_size=200))
def test_game_invariants(rolls):
    """Over any sequence of rolls: the shooter changes exactly on seven-outs, the puck is ON
    exactly while a point is set, and the roll counters add up."""
    s = GameState()
    sevens_out = 0
    for dice in rolls:
        before = s
        s, outcome = advance(s, dice)
        assert (s.puck == "ON") == (s.point is not None)
        if outcome == "seven-out":
            sevens_out += 1
            assert before.point is not None and sum(dice) == 7
            assert s.shooter == before.shooter + 1 and s.shooter_roll == 0
        else:
            assert s.shooter == before.shooter and s.shooter_roll == before.shooter_roll + 1
        if outcome == "point-set":
            assert before.point is None and s.point == sum(dice)
    assert s.shooter == 1 + sevens_out and s.rolls == len(rolls)


@pytest.mark.parametrize("field, value, match", [
    ("shooter", 1.9, "shooter 1.9 is not an integer"),
    ("shooter", True, "shooter True is not an integer"),
    ("rolls", "3", "rolls '3' is not an integer"),
    ("point", 5.7, "point 5.7 is not one of"),
    ("point", 7, "point 7 is not one of"),
    ("points_made", "49", "points_made '49' is not a list"),
    ("points_made", [4, 7], "points_made holds 7"),
    ("last_outcome", "banana", "last_outcome 'banana' is not one of"),
    ("decide_only", "yes", "decide_only 'yes' is not a boolean"),
])
def test_state_from_json_rejects_malformed_fields(field, value, match):
    good = GameState(shooter=2, shooter_roll=1, point=5, rolls=3, points_made=(4,), last_outcome="point-set").to_json()
    assert state_from_json(good).points_made == (4,)
    with pytest.raises(ValueError, match=match):
        state_from_json({**good, field: value})


def _sql(db, *stmts):
    import sqlite3

    c = sqlite3.connect(db)
    for s in stmts:
        c.execute(s)
    c.commit()
    c.close()


def _two_verdicts(db):
    store = StateStore(db)
    s, _ = advance(GameState(), (2, 3))
    store.commit(s, {"roll_id": "t-00000001", "verdict": "roll", "dice": [2, 3]})
    store.mark_published("t-00000001", 4, "journal-a")
    store.commit(s, {"roll_id": "t-00000002", "verdict": "no-roll", "dice": None})
    store.close()


@pytest.mark.parametrize("stmts, match", [
    (["INSERT INTO verdicts (n, roll_id, body_json, created) VALUES (3, 't-00000003', '{\"roll_id\": \"t-', 0)",
      "UPDATE game SET verdicts = 3"], r"corrupt outbox row n=3 \(t-00000003\)"),
    (["""UPDATE game SET state_json = '{"shooter": Infinity, "shooter_roll": 1, "point": 5, "rolls": 1}'"""],
     "corrupt game record .*shooter inf is not an integer"),
    (["UPDATE game SET verdicts = 1"], "counts 1 verdicts but the verdicts table holds verdict 2"),
    (["ALTER TABLE verdicts RENAME COLUMN published_seq TO bus_seq"], "verdicts lacks column.*published_seq"),
])
def test_store_refuses_a_damaged_record_naming_the_file(tmp_path, stmts, match):
    db = tmp_path / "state.sqlite"
    _two_verdicts(db)
    _sql(db, *stmts)
    with pytest.raises(StoreError, match=match) as err:
        store = StateStore(db)
        store.unpublished()  # the outbox row is read at start
    assert str(db) in str(err.value)


def test_store_verdicts_names_a_damaged_row(tmp_path):
    """``verdicts()`` (the boxperson's decisions read the last one) on a row that is not JSON:
    a StoreError naming the file and the row, not a bare json error."""
    db = tmp_path / "state.sqlite"
    _two_verdicts(db)
    _sql(db, "UPDATE verdicts SET body_json = '{\"roll_id\": ' WHERE n = 2")
    store = StateStore(db)
    try:
        with pytest.raises(StoreError, match=r"verdict row n=2 is not JSON") as err:
            store.verdicts(1)
        assert str(db) in str(err.value)
    finally:
        store.close()


def test_store_schema_version(tmp_path):
    import sqlite3

    db = tmp_path / "state.sqlite"
    _two_verdicts(db)
    c = sqlite3.connect(db)
    assert c.execute("PRAGMA user_version").fetchone()[0] == 1
    c.close()
    _sql(db, "PRAGMA user_version = 7")
    with pytest.raises(StoreError, match="schema version 7 is newer than this controller's \\(1\\)") as err:
        StateStore(db)
    assert str(db) in str(err.value)
    # a file of the first schema (no version, no journal_id column) is upgraded, data kept
    old = tmp_path / "old.sqlite"
    _sql(old, "CREATE TABLE game (id INTEGER PRIMARY KEY CHECK (id = 1), state_json TEXT NOT NULL, "
              "verdicts INTEGER NOT NULL, updated REAL NOT NULL)",
         "CREATE TABLE verdicts (n INTEGER PRIMARY KEY, roll_id TEXT NOT NULL UNIQUE, body_json TEXT NOT NULL, "
         "created REAL NOT NULL, published_seq INTEGER)",
         """INSERT INTO game VALUES (1, '{"shooter": 1, "shooter_roll": 1, "point": 6, "rolls": 1}', 1, 0)""",
         """INSERT INTO verdicts VALUES (1, 't-00000001', '{"roll_id": "t-00000001"}', 0, 7)""")
    store = StateStore(old)
    assert store.state.point == 6 and store.verdict_count == 1
    assert store.last_published_seq() == 7 and store.last_published_seq("journal-a") == 0
    store.close()
    c = sqlite3.connect(old)
    assert c.execute("PRAGMA user_version").fetchone()[0] == 1
    c.close()


def test_store_marks_carry_the_journal_and_errors_name_the_file(tmp_path):
    db = tmp_path / "state.sqlite"
    _two_verdicts(db)
    store = StateStore(db)
    assert store.last_published_seq("journal-a") == 4 and store.last_published_seq("journal-b") == 0
    assert store.last_roll_id() == "t-00000002"
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    store.mark_published("t-00000002", 2, "journal-b")
    store._db.set_trace_callback(None)
    assert not any("synchronous" in s.lower() for s in statements)  # the mark is fsync'd (FULL)
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2
    assert store.last_published_seq("journal-b") == 2
    store._db.execute("PRAGMA query_only = ON")  # every write fails, as on a full disk
    with pytest.raises(StoreError, match="cannot mark t-00000002 published") as err:
        store.mark_published("t-00000002", 3, "journal-b")
    assert str(db) in str(err.value)
    store.close()


def test_store_is_locked_to_one_service(tmp_path):
    db = tmp_path / "state.sqlite"
    first = StateStore(db)
    with pytest.raises(StoreError, match="in use by another service") as err:
        StateStore(db)
    assert f"{db}.lock" in str(err.value)
    first.close()
    first.close()  # twice is fine
    again = StateStore(db)  # the lock is released on close
    assert again.verdict_count == 0
    again.close()
