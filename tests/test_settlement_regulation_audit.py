"""Audit of settlement and the pay-table profiles against the regulation texts
(/work/shared/regulations/: 9 NYCRR 5324.52, 9 NYCRR 4620.3, rules text 002, N.J.A.C.
13:47-20.25). Each test failed on the code as audited (commit d0b96a7) and asserts what the
quoted paragraph requires.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from settlement.engine import Rejected, Table
from settlement.profile import ProfileError, load_profile, profile_from_dict

REPO = Path(__file__).resolve().parents[1]


def _bet(t: Table, player: str, kind: str, amount: int, **kw):
    return t.place({"player": player, "bet": kind, "amount": amount, **kw})


def _settlement_table(name: str) -> dict:
    return tomllib.loads((REPO / "config" / "profiles" / f"{name}.toml").read_text())["settlement"]


def test_ny4620_pass_bet_locked_after_the_point_does_not_cite_the_come_paragraph():
    """9 NYCRR 4620.3(e)(5)(i): "Come bets may not be removed by the player once they have been
    moved into a point box"; (e)(5)(ii) the same for don't come bets. Nothing in 4620.3 speaks of
    removing a pass bet ((e)(1) gives only how it wins and loses and the $5 maximum); the ny-4620
    profile locks it "as 5324.52(c)(3)(i)" (its own comment).

    A refused removal names "the paragraph broken" (docs/wagers.md). The audited code refused the
    pass removal citing "9 NYCRR 4620.3(e)(5)(i)-(ii)", a paragraph about come and don't come bets
    that does not forbid it. The come bet's refusal keeps citing (e)(5)(i)-(ii)."""
    t = Table(load_profile("ny-4620"))
    _bet(t, "p", "pass", 500)
    t.roll((2, 3))                                    # point 5
    with pytest.raises(Rejected) as exc:
        t.remove({"player": "p", "bet": "pass"})
    assert "(e)(5)" not in exc.value.rule
    assert exc.value.rule == "as 9 NYCRR 5324.52(c)(3)(i) (9 NYCRR 4620.3 is silent on the pass bet)"
    _bet(t, "p", "come", 500)
    t.roll((3, 3))                                    # come bet -> 6
    with pytest.raises(Rejected) as exc:
        t.remove({"player": "p", "bet": "come", "number": 6})
    assert exc.value.rule == "9 NYCRR 4620.3(e)(5)(i)-(ii)"


@pytest.mark.parametrize("name, rule", [("ny-5324", "9 NYCRR 5324.52(b)(40)"),
                                         ("rules-002", "rules text 002, 2")])
def test_a_mini_craps_table_does_not_offer_the_fire_bet(name, rule):
    """9 NYCRR 5324.52(b)(40): "Fire bet is a wager that may only be made in the game of craps";
    rules text 002, 2: "... permissible wagers at the games of craps and minicraps, except that the
    fire bet as described in Section 2(nn) shall only be permitted in the game of craps".

    Both profiles cover "craps and mini craps" (their headers) and permit the fire bet, but the
    audited profile schema had no way to say which game a table plays (``game`` was refused as an
    unknown key), so a mini-craps table could only run them with the fire bet offered. A profile
    now says ``game = "craps"`` (the default) or ``"mini-craps"``; a mini-craps profile that
    permits the fire bet is refused naming the paragraph, and one without it settles as before."""
    data = _settlement_table(name)
    data["game"] = "mini-craps"
    with pytest.raises(ProfileError) as exc:
        profile_from_dict(name, data)
    assert "fire" in str(exc.value) and rule in str(exc.value)
    data["permitted"] = [k for k in data["permitted"] if k != "fire"]
    mini = profile_from_dict(name, data)
    t = Table(mini)
    with pytest.raises(Rejected) as rej:
        _bet(t, "p", "fire", 100)
    assert "not a permissible wager" in rej.value.reason
    _bet(t, "p", "place", 600, number=6, working=True)
    assert [(s.kind, s.payout) for s in t.roll((3, 3))] == [("place", 700)]
    assert load_profile(name).s.game == "craps"


def test_a_misspelt_citation_key_is_refused_naming_it():
    """``[settlement.cite]`` keys a citation by rule, wager or ``<rule>.<wager>``
    (``Profile.cite``); a key the engine never asks for (a typo: ``removal_line.pss``) used to
    load and fall back silently to the broader ``removal_line`` citation. It is refused, naming
    the key; every key of the shipped profiles is one the engine asks for."""
    data = _settlement_table("ny-4620")
    assert "5324.52(c)(3)(i)" in data["cite"]["removal_line.pass"]
    data["cite"]["removal_line.pss"] = data["cite"].pop("removal_line.pass")
    with pytest.raises(ProfileError) as exc:
        profile_from_dict("ny-4620", data)
    assert "cite: unknown key" in str(exc.value) and "removal_line.pss" in str(exc.value)
    for name in ("ny-5324", "nj-13-47", "ny-4620", "rules-002"):
        assert load_profile(name).cite("pays") != ""
