"""``craps-table ... | head``: the reader of the output going away ends the command with
exit 1 and one line on stderr, not a traceback (Python's "Note on SIGPIPE")."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_settle_into_a_closed_pipe_exits_1_without_traceback(tmp_path: Path) -> None:
    lines = []
    for _ in range(3000):    # ~3,000 output lines, far more than a pipe's buffer
        lines += [{"type": "bet", "player": "p", "bet": "field", "amount": 500}, {"type": "roll", "dice": [2, 2]}]
    scen = tmp_path / "many.jsonl"
    scen.write_text("".join(json.dumps(e) + "\n" for e in lines))
    proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "settle", "--profile", "ny-5324", str(scen)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()                  # as `head -1` does after its line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert first["bet"] == "field" and first["payout"] == 500
    assert "Traceback" not in err
    assert "craps-table settle: output closed by its reader (broken pipe)" in err
