"""Settlement ledger: per-player balances in SQLite, idempotent per roll seq, audit records."""
from __future__ import annotations

import sqlite3

import pytest

from settlement.engine import Rejected, Table, settle
from settlement.game import GameState
from settlement.ledger import Session
from settlement.profile import ProfileError, load_profile, profile_from_dict
from settlement.wagers import Wager


@pytest.fixture()
def prof():
    return load_profile("ny-5324")


def test_balances_and_idempotent_roll(prof, tmp_path):
    db = tmp_path / "ledger.sqlite"
    s = Session(prof, db)
    s.place({"player": "p1", "bet": "pass", "amount": 1000})
    s.place({"player": "p2", "bet": "field", "amount": 500})
    out, applied = s.roll([6, 5], seq=10)
    assert applied and sorted((o.player, o.returned) for o in out) == [("p1", 2000), ("p2", 1000)]
    assert (s.balance("p1"), s.balance("p2")) == (1000, 500)
    again, applied = s.roll([6, 5], seq=10)
    assert not applied and [r["returned"] for r in again] == [2000, 1000]
    assert (s.balance("p1"), s.balance("p2")) == (1000, 500)
    with pytest.raises(ValueError, match="not after"):
        s.roll([1, 1], seq=5)
    s.close()
    # a restart resumes the same session, and the same seq still changes nothing
    s2 = Session(prof, db)
    assert s2.last_seq == 10
    s2.roll([6, 5], seq=10)
    assert s2.balance("p1") == 1000
    rows = sqlite3.connect(db).execute(
        "SELECT seq, player, bet, result, stake, payout, vig, returned, balance_after, rule FROM settlements "
        "ORDER BY id").fetchall()
    assert rows == [(10, "p1", "pass", "win", 1000, 1000, 0, 2000, 1000, "9 NYCRR 5324.52(d)(1)"),
                    (10, "p2", "field", "win", 500, 500, 0, 1000, 500, "9 NYCRR 5324.52(d)(1)")]
    s2.close()


def test_open_wagers_survive_restart(prof, tmp_path):
    db = tmp_path / "l.sqlite"
    s = Session(prof, db)
    s.place({"player": "p", "bet": "pass", "amount": 1000})
    s.roll([3, 3], seq=1)
    s.place({"player": "p", "bet": "odds", "base": "pass", "amount": 5000})
    s.close()
    s = Session(prof, db)
    assert s.table.state.point == 6
    out, _ = s.roll([4, 2], seq=2)
    assert sorted((o.kind, o.payout) for o in out) == [("odds", 6000), ("pass", 1000)]
    assert s.balance("p") == 7000
    s.close()


def test_rejection_is_recorded_and_changes_nothing(prof):
    s = Session(prof)
    with pytest.raises(Rejected) as exc:
        s.place({"player": "p", "bet": "come", "amount": 500})
    assert exc.value.rule == "9 NYCRR 5324.52(b)(3)"
    assert s.balance("p") == 0 and s.table.wagers == ()
    kinds = [r[0] for r in s.db.execute("SELECT kind FROM events")]
    assert kinds == ["rejected"]


def test_buy_vig_debited_at_placement_and_refunded_on_removal(prof):
    s = Session(prof)
    s.place({"player": "x", "bet": "pass", "amount": 500})
    s.roll([2, 3])
    s.place({"player": "p", "bet": "buy", "number": 4, "amount": 2000})
    assert s.balance("p") == -2100
    s.remove({"player": "p", "bet": "buy", "number": 4})
    assert s.balance("p") == 0


def test_settle_is_pure(prof):
    w = (Wager(1, "p", "pass", 1000),)
    st = GameState()
    st2, w2, out, outcome = settle(st, w, (2, 2), prof, seq=1)
    assert st == GameState() and w[0].number is None          # inputs unchanged
    assert st2.point == 4 and w2[0].number == 4 and out == [] and outcome == "point-set"
    st3, w3, out, outcome = settle(st2, w2, (3, 4), prof, seq=2)
    assert outcome == "seven-out" and st3.shooter == 2 and w3 == ()
    assert [(s.result, s.returned) for s in out] == [("lose", 0)]


def test_table_snapshot_roundtrip(prof):
    t = Table(prof)
    t.place({"player": "p", "bet": "fire", "amount": 100})
    t.place({"player": "p", "bet": "pass", "amount": 500})
    t.roll((2, 2))
    t.roll((3, 1))
    t2 = Table.from_snapshot(prof, t.snapshot())
    assert t2.wagers == t.wagers and t2.state == t.state
    assert t2.find(("p", "fire", None, None, None, 1)).progress == frozenset({4})


def test_profile_errors_name_the_key():
    import tomllib
    from pathlib import Path
    data = tomllib.loads((Path(__file__).resolve().parents[1] / "config/profiles/ny-5324.toml").read_text())
    bad = dict(data["settlement"], pays=dict(data["settlement"]["pays"], plce={4: "9:5"}))
    with pytest.raises(ProfileError, match=r"settlement\.pays\.plce"):
        profile_from_dict("x", bad)
    bad = dict(data["settlement"], pays=dict(data["settlement"]["pays"], any7="four to one"))
    with pytest.raises(ProfileError, match=r"pays\.any7"):
        profile_from_dict("x", bad)
    bad = dict(data["settlement"], permitted=data["settlement"]["permitted"] + ["big6"])
    with pytest.raises(ProfileError, match=r"pays\.big6"):
        profile_from_dict("x", bad)
    with pytest.raises(ProfileError, match="not found"):
        load_profile("no-such-profile")


def test_a_file_that_is_not_a_database_is_a_value_error_naming_the_ledger(prof, tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(ValueError) as info:
        Session(prof, bad)
    assert str(info.value) == f"ledger {bad}: file is not a database"


def test_a_ledger_in_a_missing_directory_is_a_value_error_naming_the_ledger(prof, tmp_path):
    path = tmp_path / "no" / "such" / "ledger.sqlite"
    with pytest.raises(ValueError) as info:
        Session(prof, path)
    assert str(info.value) == (f"ledger {path}: unable to open database file: its directory {path.parent} "
                               "does not exist")
    assert not (tmp_path / "no").exists()


def test_one_session_owns_a_ledger_file(prof, tmp_path):
    """A second session on a ledger in use (a second settle-service) is refused naming the lock:
    two would apply the same rolls and wagers from their own layouts (bets placed twice, payouts
    settled twice). Closing the first releases it."""
    path = tmp_path / "ledger.sqlite"
    first = Session(prof, path)
    with pytest.raises(ValueError) as info:
        Session(prof, path)
    assert str(info.value).startswith(f"ledger {path}: in use by another settle-service or settle session "
                                      f"(lock {path}.lock held)")
    first.close()
    again = Session(prof, path)
    assert again.last_bus_seq == 0
    again.close()
