"""Settlement: exact house edges (Fractions) computed from the engine's own rules reproduce
the published figures (issue 8, item 7a)."""
from __future__ import annotations

from fractions import Fraction as F

import pytest

from settlement.house_edge import _tier_ev, fire_distribution, wager_edge
from settlement.profile import load_profile


@pytest.fixture(scope="module")
def ny():
    return load_profile("ny-5324")


def test_published_line_and_place_edges(ny):
    assert wager_edge(ny, "pass") == F(7, 495)                 # 1.414%
    assert wager_edge(ny, "dont_pass") == F(3, 220)            # 1.364% per bet
    assert wager_edge(ny, "come") == F(7, 495)
    assert wager_edge(ny, "dont_come") == F(3, 220)
    assert wager_edge(ny, "place", number=6) == F(1, 66)       # 1.515%
    assert wager_edge(ny, "place", number=5) == F(1, 25)
    assert wager_edge(ny, "place", number=4) == F(1, 15)
    assert wager_edge(ny, "place_lose", number=4) == F(1, 33)
    for p in (4, 5, 6, 8, 9, 10):
        assert wager_edge(ny, "odds", number=p, base="come") == 0
        assert wager_edge(ny, "odds", number=p, base="dont_come") == 0


def test_published_prop_edges(ny):
    assert wager_edge(ny, "field") == F(1, 36)                 # 2:1 / 3:1 -> 2.778%
    assert wager_edge(load_profile("nj-13-47"), "field") == F(1, 18)
    assert wager_edge(ny, "hardway", number=6) == F(1, 11)
    assert wager_edge(ny, "hardway", number=4) == F(1, 9)
    assert wager_edge(ny, "any7") == F(1, 6)
    assert wager_edge(ny, "horn") == F(1, 8)
    assert wager_edge(ny, "whirl") == F(2, 15)
    assert wager_edge(ny, "c_and_e") == F(1, 9)
    assert wager_edge(ny, "hop", dice=(3, 3)) == F(5, 36)
    assert wager_edge(ny, "hop", dice=(1, 6)) == F(1, 9)
    assert wager_edge(ny, "six_seven_eight") == F(1, 18)


def test_vig_edges(ny):
    assert wager_edge(ny, "buy", number=4) == F(1, 20)         # vig at placement: 5% per unit staked
    assert wager_edge(ny, "lay", number=4) == F(1, 60)         # 5% of the win, on a win only
    nj = load_profile("nj-13-47")
    assert wager_edge(nj, "lay", number=4) == F(1, 40)         # 5% of the win, at placement


def test_bonus_and_fire(ny):
    small = wager_edge(ny, "all_small")
    assert small == wager_edge(ny, "all_tall") == F(1687, 21736)
    assert round(float(small) * 100, 2) == 7.76                # all small / all tall at 34:1
    assert round(float(wager_edge(ny, "make_em_all")) * 100, 2) == 7.46   # make 'em all at 175:1
    dist = fire_distribution()
    assert sum(dist.values()) == 1
    assert dist[0] == F(98, 165)                                # the first point is not made
    fire = -_tier_ev(ny.pays.fire, dist)
    assert round(float(fire) * 100, 2) == 20.76                 # 24/249/999 to 1


def test_ny4620_for_odds_and_ace_deuce_bar():
    p = load_profile("ny-4620")
    assert wager_edge(p, "any7") == F(1, 6)                     # "5 for 1"
    assert wager_edge(p, "craps2") == F(1, 6)                   # "30 for 1"
    assert wager_edge(p, "hardway", number=6) == F(1, 11)       # "10 for 1"
    assert wager_edge(p, "dont_pass") == F(41, 990)             # barred on 3, wins on 12
    assert wager_edge(p, "big6") == F(1, 11)


def test_the_command_prints_docs_house_edge_md_byte_for_byte_and_refuses_a_bad_profile(capsys) -> None:
    from pathlib import Path

    from settlement.house_edge import main

    assert main([]) == 0
    doc = Path(__file__).resolve().parents[1] / "docs" / "house-edge.md"
    assert capsys.readouterr().out == doc.read_text(encoding="utf-8")
    assert main(["--profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert "python -m settlement.house_edge: profile not found" in err and "nope.toml" in err
