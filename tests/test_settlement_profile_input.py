"""Settlement profiles (``config/profiles/*.toml``): a wrong value stops ``craps-table settle``
with exit status 2 and a message naming the file and the key, before anything is settled.

Found by the new-user pass (audit-user): a don't bar whose ``comeout_wins`` left out a craps
number crashed settlement with a traceback on the first don't pass bet that met it; a table
minimum above the table maximum, a pay of nothing ("0:1"), strings for integers and switches
("500", "yes") were taken; a bad pay string was named by the file's stem, not its path.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from settlement.profile import PROFILES_DIR, ProfileError, load_profile

NY = (PROFILES_DIR / "ny-5324.toml").read_text(encoding="utf-8")


def _profile(tmp_path: Path, old: str, new: str) -> Path:
    assert old in NY, old
    path = tmp_path / "bad.toml"
    path.write_text(NY.replace(old, new, 1), encoding="utf-8")
    return path


def _scenario(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _settle(tmp_path, prof, capsys, dice=(1, 2)):
    scen = _scenario(tmp_path, [{"type": "bet", "player": "p", "bet": "dont_pass", "amount": 1000},
                                {"type": "roll", "dice": list(dice)}])
    rc = main(["settle", "--profile", str(prof), str(scen)])
    return rc, capsys.readouterr()


@pytest.mark.parametrize("wins", ["[2]", "[2, 3, 12]", "[2, 3, 7]", "[2, 3, 99]"])
def test_a_bar_that_does_not_split_the_craps_numbers_exits_2_naming_the_key(tmp_path, capsys, wins):
    prof = _profile(tmp_path, "comeout_wins = [2, 3]", f"comeout_wins = {wins}")
    rc, cap = _settle(tmp_path, prof, capsys)
    assert rc == 2
    assert cap.out == ""
    assert str(prof) in cap.err and "settlement.bar" in cap.err and "comeout_wins" in cap.err
    assert "Traceback" not in cap.err


def test_table_minimum_above_maximum_exits_2_naming_the_key(tmp_path, capsys):
    prof = _profile(tmp_path, "min_cents = 500\n", "min_cents = 600000\n")
    rc, cap = _settle(tmp_path, prof, capsys)
    assert rc == 2 and cap.out == ""
    assert str(prof) in cap.err and "settlement.limits" in cap.err and "600000" in cap.err


def test_wager_minimum_above_its_maximum_is_refused(tmp_path):
    prof = _profile(tmp_path, "min_cents = 100\nmax_cents = 500\nstep_cents = 100",
                    "min_cents = 1000\nmax_cents = 500\nstep_cents = 100")
    with pytest.raises(ProfileError, match=r"settlement\.limits\.wager\.fire.*1000.*500"):
        load_profile(prof)


@pytest.mark.parametrize("old,new,key", [
    ('line = "1:1"', 'line = "0:1"', "settlement.pays.line"),
    ('any7 = "4:1"', "any7 = 0", "settlement.pays.any7"),
])
def test_a_pay_of_nothing_exits_2_naming_the_file_and_key(tmp_path, capsys, old, new, key):
    prof = _profile(tmp_path, old, new)
    rc, cap = _settle(tmp_path, prof, capsys)
    assert rc == 2 and cap.out == ""
    assert str(prof) in cap.err and key in cap.err


def test_a_bad_pay_string_names_the_profile_path(tmp_path, capsys):
    prof = _profile(tmp_path, 'any7 = "4:1"', 'any7 = "abc"')
    rc, cap = _settle(tmp_path, prof, capsys)
    assert rc == 2
    assert cap.err.startswith(f"craps-table settle: {prof}: settlement.pays.any7: ")


@pytest.mark.parametrize("old,new,key", [
    ("place_not_on_point = false", 'place_not_on_point = "yes"', "settlement.place_not_on_point"),
    ("min_cents = 500\n", 'min_cents = "500"\n', "settlement.limits.min_cents"),
    ("payout_unit_cents = 1 ", "payout_unit_cents = 1.0 ", "settlement.payout_unit_cents"),
    ("\nunit_cents = 1 ", "\nunit_cents = true ", "settlement.vig.unit_cents"),
    ("units = { horn = 4,", 'units = { horn = "4",', "settlement.units.horn"),
])
def test_a_value_of_the_wrong_type_exits_2_naming_the_key(tmp_path, capsys, old, new, key):
    _refused_naming(tmp_path, capsys, old, new, key)


@pytest.mark.parametrize("name", ["ny-5324", "ny-4620", "nj-13-47", "rules-002"])
def test_the_shipped_profiles_still_load(name):
    prof = load_profile(name)
    assert prof.s.bar.number in (2, 3, 12)
    assert prof.s.limits.min_cents <= prof.s.limits.max_cents


@pytest.mark.parametrize("old,new,key", [
    ("units = { horn = 4,", "units = { horn = 0,", "settlement.units.horn"),
    ("units = { horn = 4,", "units = { horn = -4,", "settlement.units.horn"),
    ('take_multiple = { 4 = "3"', 'take_multiple = { 4 = "-3"', "settlement.odds"),
    ('lay_multiple = { 4 = "6"', 'lay_multiple = { 4 = "0"', "settlement.odds"),
])
def test_a_zero_or_negative_unit_or_odds_multiple_exits_2_naming_the_key(tmp_path, capsys, old, new, key):
    # units 0 silently turned the multiples rule off; a negative odds multiple refused every odds bet
    _refused_naming(tmp_path, capsys, old, new, key)


def _refused_naming(tmp_path, capsys, old: str, new: str, key: str) -> None:
    """The shipped profile with ``old`` replaced by ``new``: settle exits 2, prints nothing on
    stdout, and names the profile file and ``key`` on stderr."""
    prof = _profile(tmp_path, old, new)
    rc, cap = _settle(tmp_path, prof, capsys)
    assert rc == 2 and cap.out == ""
    assert str(prof) in cap.err and key in cap.err
