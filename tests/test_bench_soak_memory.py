"""bench/soak_memory.py (the long-run memory, fd and thread soak): a short run of its fast
source prints the table and the growth lines; bad arguments are refused."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "soak_memory", Path(__file__).resolve().parents[1] / "bench" / "soak_memory.py")
soak_memory = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("soak_memory", soak_memory)  # its dataclass looks its module up
_spec.loader.exec_module(soak_memory)


def test_short_synthetic_soak_prints_the_table():
    # in a process of its own: the descriptors and threads counted are the soak's alone, not
    # those a test run before it leaves closing in the background (seen once: fds 63 -> 62)
    run = subprocess.run([sys.executable, str(Path(soak_memory.__file__)), "--source", "synthetic", "--throws", "6",
                          "--every", "2", "--top", "3"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert "soak: 6 verdicts (6 rolls, 0 no rolls, 0 boxperson calls)" in out
    rows = re.findall(r"^\s+(\d+|closed)\s+[\d.]+\s+[\d.]+\s", out, re.M)
    assert rows == ["0", "2", "4", "6", "closed"]
    assert re.search(r"RSS\s+[+-][\d.]+ MiB\s+[+-][\d.]+ MiB per 1,000 verdicts", out)
    assert re.search(r"fds\s+(\d+) -> \1 \(\+0\)", out)           # no descriptor opened per verdict
    assert re.search(r"threads\s+(\d+) -> \1 \(\+0;", out)
    assert "tracemalloc: top 3 growth sites from verdict 2 to 6" in out


def test_synthetic_reader_reads_the_values_drawn():
    src = soak_memory.SyntheticSource(seed=5, still=2)
    frames = src.frames()
    first = [next(frames) for _ in range(9)]   # 4 empty, 1 moving, 4 at rest
    src.close()
    assert soak_memory.synthetic_reader(first[0].image) == []
    values = [r.value for r in soak_memory.synthetic_reader(first[-1].image)]
    assert len(values) == 2 and all(1 <= v <= 6 for v in values)
    assert len({f.image[0, :4, 0].tobytes() for f in first}) == 9   # no frame repeats byte for byte


@pytest.mark.parametrize("argv, message", [
    (["--throws", "0"], "must be >= 1, got 0"),
    (["--every", "x"], "not a whole number: 'x'"),
    (["--max-s", "0"], "--max-s must be > 0"),
    (["--seed", "-1"], "--seed must be >= 0"),
    (["--source", "camera"], "invalid choice: 'camera'"),
])
def test_bad_arguments_exit_2_naming_them(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        soak_memory.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_the_soak_leaves_tracemalloc_off(capsys):
    import tracemalloc

    assert soak_memory.main(["--source", "synthetic", "--throws", "2", "--every", "1"]) == 0
    assert not tracemalloc.is_tracing()   # the rest of a test run is not slowed
