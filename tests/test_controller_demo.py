"""craps-table demo: the line-bet settlement subscriber in cents, and the command end to end."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.config import TestPlayer
from controller.demo import LineBetSubscriber, cents, roll_line

REPO = Path(__file__).resolve().parents[1]


def roll_env(seq, dice, come_out=True, verdict="roll"):
    return {"seq": seq, "topic": "roll", "table_id": "table-1",
            "body": {"roll_id": f"table-1-{seq:08d}", "verdict": verdict, "dice": list(dice),
                     "total": sum(dice), "reason": None,
                     "game": {"shooter": 1, "shooter_roll": seq, "come_out": come_out, "point": None,
                              "puck": "OFF", "outcome": None}}}


def test_line_bets_settle_in_cents():
    lines = []
    players = [TestPlayer(name="alice", bankroll_cents=10_000,
                          bets=[{"bet": "pass", "amount_cents": 1000, "odds_multiple": 2}]),
               TestPlayer(name="bob", bankroll_cents=10_000, bets=[{"bet": "dont-pass", "amount_cents": 500}])]
    sub = LineBetSubscriber(None, Path("/nonexistent"), players, "ny-5324", on_line=lines.append)
    sub.apply(roll_env(1, (3, 4)))  # natural: pass wins 1:1, don't pass loses
    assert sub.bankroll == {"alice": 11_000, "bob": 9_500}
    sub.apply(roll_env(2, (2, 2)))  # point 4: alice takes 2x odds ($20)
    assert sub.bankroll == {"alice": 10_000 - 2_000, "bob": 9_500 - 500}
    sub.apply(roll_env(3, (1, 3), come_out=False))  # point made: pass 1:1, odds 2:1 (5324.52(e)(4)(i))
    assert sub.bankroll["alice"] == 8_000 + 1_000 + 1_000 + 2_000 + 4_000
    assert sub.bankroll["bob"] == 9_000
    assert sub.settled == 5
    assert any("odds on pass 4" in ln and "win" in ln and "+$40.00" in ln for ln in lines)
    sub.apply(roll_env(4, (6, 6), verdict="no-roll"))  # no roll: nothing happens
    assert sub.settled == 5


def test_lines():
    assert cents(-1050) == "-$10.50" and cents(7) == "$0.07"
    body = {"roll_id": "t-1", "verdict": "roll", "dice": [4, 2], "total": 6, "reason": None,
            "game": {"shooter": 1, "shooter_roll": 2, "come_out": True, "point": 6, "puck": "ON",
                     "outcome": "point-set"}}
    line = roll_line(body)
    assert "4+2 =  6" in line and "point-set" in line and "puck ON 6" in line
    nr = roll_line({**body, "verdict": "no-roll", "reason": "die-off-table", "citation": "9 NYCRR 5324.52(k)(1)"})
    assert nr.startswith("NO ROLL") and "die-off-table" in nr and "(k)(1)" in nr


@pytest.mark.slow
def test_demo_command_exits_0():
    proc = subprocess.run([sys.executable, "-m", "controller.cli", "demo", "--rolls", "3"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout.splitlines()
    verdict_lines = [ln for ln in out if ln.split(" ")[0] in ("ROLL", "NO", "BOXPERSON")]
    assert len(verdict_lines) == 3, proc.stdout
    assert out[-2].startswith("done: 3 verdicts")
