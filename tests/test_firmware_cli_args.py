"""mcu-sim: a duration or strike interval that is not a positive finite number is bad input
(exit 2 naming the option), not a simulator that stops at once and reports success (or never
stops). Found by the new-user pass (`craps-table mcu-sim --duration -1` exited 0 after serving
nothing)."""
from __future__ import annotations

import subprocess
import sys

import pytest


def _mcu_sim(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller.cli", "mcu-sim", *argv], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=20)


@pytest.mark.parametrize("argv,opt,value", [
    (("--duration", "-1"), "--duration", "-1"),
    (("--duration", "0"), "--duration", "0"),
    (("--duration", "nan"), "--duration", "nan"),
    (("--duration", "inf"), "--duration", "inf"),
    (("--strike-every", "nan", "--duration", "1"), "--strike-every", "nan"),
])
def test_mcu_sim_refuses_non_positive_or_non_finite_times(argv, opt, value):
    try:
        r = _mcu_sim(*argv)
    except subprocess.TimeoutExpired:
        pytest.fail(f"mcu-sim {' '.join(argv)} did not stop")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert opt in r.stderr and value in r.stderr and r.stdout == ""


def test_mcu_sim_short_duration_still_runs():
    r = _mcu_sim("--duration", "0.3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("mcu-sim: pty /dev/pts/") and "stopped" in r.stdout


@pytest.mark.parametrize("argv,opt,value", [
    (("--corrupt", "2"), "--corrupt", "2.0"),
    (("--drop", "nan"), "--drop", "nan"),
    (("--insert", "-0.1"), "--insert", "-0.1"),
    (("--delay-ms", "-5"), "--delay-ms", "-5.0"),
    (("--delay-ms", "inf"), "--delay-ms", "inf"),
    (("--reconnect-after", "-1"), "--reconnect-after", "-1.0"),
    (("--disconnect-every", "0"), "--disconnect-every", "0"),
])
def test_mcu_sim_fault_options_out_of_range_name_the_option(argv, opt, value):
    # the messages named the simulator's parameters (delay_s, corrupt_rate), not the options typed
    r = _mcu_sim(*argv, "--duration", "1")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith(f"craps-table mcu-sim: {opt} ") and value in r.stderr and r.stdout == ""
