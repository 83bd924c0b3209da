"""craps-table demo: the line-bet settlement subscriber in cents, and the command end to end."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.demo import SettlementThread, cents, roll_line

REPO = Path(__file__).resolve().parents[1]


def test_settlement_thread_settles_published_rolls(tmp_path):
    """Rolls from the table service reach the settlement subscriber over the real bus and the
    test players' line bets are settled in cents."""
    import sys
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_controller_service import make_service, run_throws

    from bus.config import BusConfig
    from bus.publisher import RollPublisher

    bus_cfg = BusConfig.local(tmp_path / "bus", transport="tcp", table_id="t-test")
    lines = []
    players = [{"name": "alice", "bets": [{"bet": "pass", "amount_cents": 1000, "odds_multiple": 2}]},
               {"name": "bob", "bets": [{"bet": "dont-pass", "amount_cents": 600}]}]
    pub = RollPublisher(bus_cfg, "t-test")
    settlement = SettlementThread(bus_cfg, "ny-5324", players, tmp_path, on_line=lines.append).start()
    try:
        service = make_service(tmp_path, pub)
        # natural 7; point 4; point made
        run_throws(service, [[(3, 100, 100), (4, 200, 120)], [(2, 100, 100), (2, 200, 120)],
                             [(1, 100, 100), (3, 200, 120)]])
        last = service.store.verdicts()[-1]["roll_id"]
        service.close()
        deadline = time.monotonic() + 10
        while settlement.settled_rolls < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        settlement.stop()
        pub.close()
    assert settlement.error is None and settlement.settled_rolls == 3 and last == "t-test-00000003"
    settled = [ln for ln in lines if ln.startswith("  settle ")]
    # roll 1: pass wins 1:1, don't pass loses; roll 3: pass and its 2x odds on 4 (2:1) win
    assert any("alice pass stake $10.00 wins $10.00" in ln for ln in settled), lines
    assert any("bob dont_pass stake $6.00 loses" in ln for ln in settled), lines
    assert any("alice odds pass 4 stake $20.00 wins $40.00" in ln for ln in settled), lines
    # balances count the stakes on the layout: a new $10 pass and a new $6 don't pass are up
    assert settlement.balances == {"alice": 1000 + 1000 + 4000 - 1000, "bob": -600 - 600 - 600}


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
    # play starts with the dice offered to the first shooter (9 NYCRR 5324.52(f)(1), (f)(3)): no
    # verdict, no boxperson call (before: "BOXPERSON ... extra-dice" stopped the table)
    assert "1 dice offer (no verdict)" in out[-2] and "extra-dice" not in proc.stdout
    # the shipped table keeps 3 spare dice in the dice cup (9 NYCRR 5324.52(a)(5)): read on the
    # still table before each motion, they are never taken for thrown dice (before: the table
    # cleared by the stickperson, the spares left, was a second throw, "NO ROLL ... die-in-dice-cup")
    assert not any(ln.startswith("NO ROLL") for ln in verdict_lines), proc.stdout
    assert "die-in-dice-cup" not in proc.stdout


def test_demo_wall_sensor_rules():
    """``demo --wall-sensor``: the sensor on, and the far-wall reach from the simulated table
    (rubber 10 mm + half the die's 19.05 mm diagonal) unless the config sets one."""
    from types import SimpleNamespace

    from controller.config import TableConfig
    from controller.demo import _with_wall_sensor
    from simulator.geometry import TableGeometry

    source = SimpleNamespace(geometry=TableGeometry())
    rules = _with_wall_sensor(TableConfig().rules, source)
    assert (rules.wall_sensor, rules.far_wall_reach_mm) == (True, 23.5)
    set_ = TableConfig().rules.model_copy(update={"far_wall_reach_mm": 30.0})
    assert _with_wall_sensor(set_, source).far_wall_reach_mm == 30.0
    assert _with_wall_sensor(TableConfig().rules, object()).far_wall_reach_mm is None
