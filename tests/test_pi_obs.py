"""JSON log formatter and Prometheus metrics."""
from __future__ import annotations

import io
import json
import logging
import os
import urllib.request

import numpy as np
import pytest

from controller.jsonlog import JsonFormatter, setup_logging, stdout_is_journal
from controller.metrics import MetricsConfig, TableMetrics


def _record(msg="roll %s", args=("r-1",), level=logging.INFO, **extra):
    rec = logging.LogRecord("craps_table.service", level, __file__, 10, msg, args, None)
    rec.created = 1_800_000_000.25  # 2027-01-15T08:00:00.25Z
    for k, v in extra.items():
        setattr(rec, k, v)
    return rec


def test_formatter_output_is_json_with_extras():
    line = JsonFormatter(static={"table_id": "T1"}).format(
        _record(verdict="no-roll", dice=np.array([3, 4]), seq=np.int64(12), frame=b"\x01\xff"))
    obj = json.loads(line)
    assert obj == {
        "ts": "2027-01-15T08:00:00.250000Z", "level": "INFO", "logger": "craps_table.service",
        "msg": "roll r-1", "table_id": "T1", "verdict": "no-roll", "dice": [3, 4], "seq": 12,
        "frame": "01ff",
    }
    assert "\n" not in line


def test_formatter_exception_clashing_keys_and_syslog_prefix():
    try:
        raise RuntimeError("camera gone")
    except RuntimeError:
        import sys
        rec = _record(level=logging.ERROR)
        rec.level = "shadow"  # an extra field that clashes with a standard key
        rec.exc_info = sys.exc_info()
    line = JsonFormatter(syslog_prefix=True).format(rec)
    assert line.startswith("<3>{")
    obj = json.loads(line[3:])
    assert obj["level"] == "ERROR" and obj["_level"] == "shadow"
    assert "RuntimeError: camera gone" in obj["exc"]
    assert JsonFormatter(syslog_prefix=True).format(_record(level=logging.WARNING)).startswith("<4>")
    assert JsonFormatter(syslog_prefix=True).format(_record(level=logging.DEBUG)).startswith("<7>")


def test_setup_logging_writes_json_lines():
    buf = io.StringIO()
    log = setup_logging("debug", stream=buf, logger_name="craps_table.test", syslog_prefix=False)
    log.propagate = False
    log.info("health %s", "bridge-down", extra={"reasons": ["bridge-down"]})
    log.debug("tick")
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert [(x["level"], x["msg"]) for x in lines] == [("INFO", "health bridge-down"), ("DEBUG", "tick")]
    assert lines[0]["reasons"] == ["bridge-down"]
    with pytest.raises(ValueError, match="log level"):
        setup_logging("LOUD", stream=buf, logger_name="craps_table.test")


def test_stdout_is_journal_compares_device_and_inode(tmp_path):
    path = tmp_path / "out.log"
    with open(path, "w") as f:
        st = os.fstat(f.fileno())
        assert stdout_is_journal(f, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
        assert not stdout_is_journal(f, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"})
        assert not stdout_is_journal(f, {})
        assert not stdout_is_journal(f, {"JOURNAL_STREAM": "junk"})


class _NoStr:
    def __str__(self):
        raise RuntimeError("no str")

    def __repr__(self):
        raise RuntimeError("no repr either")


def _strict_json(line: str) -> dict:
    """json.loads as jq reads it: no NaN / Infinity, no lone surrogate escapes."""
    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    obj = json.loads(line, parse_constant=no_constant)
    assert line.isascii()
    assert "\\ud" not in line.replace("\\\\", "")  # a lone surrogate escape: jq refuses it
    return obj


def test_no_line_is_ever_lost(capsys):
    """Every record becomes one line of strict JSON, on an ASCII-only stream (C locale) too:
    lone surrogates, non-string dict keys, NaN / infinities, circular values, objects whose
    str() raises, a bad %-format. None of them gives a "--- Logging error ---"."""
    circular: list = []
    circular.append(circular)
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict", write_through=True)
    log = setup_logging("DEBUG", stream=stream, syslog_prefix=False, logger_name="craps_table.test_lost")
    log.propagate = False
    log.info("file %s", "photo-\udcff.png")  # a file name decoded with surrogateescape
    log.info("déjà vu \u2028", extra={"who": "José"})
    log.info("keys", extra={"d": {(1, 2): 3, 4: "four"}})
    log.info("floats", extra={"nan": float("nan"), "inf": float("inf"), "ninf": -np.float64("inf"),
                               "ok": 0.5})
    log.info("circle", extra={"c": circular})
    log.info("nostr", extra={"x": _NoStr()})
    log.info("badfmt %d", "x")
    stream.flush()
    assert "Logging error" not in capsys.readouterr().err
    lines = raw.getvalue().decode("ascii").splitlines()
    assert len(lines) == 7
    recs = [_strict_json(line) for line in lines]
    assert recs[0]["msg"] == "file photo-\\udcff.png"
    assert recs[1]["msg"] == "déjà vu \u2028" and recs[1]["who"] == "José"
    assert recs[2]["d"] == {"(1, 2)": 3, "4": "four"}
    assert (recs[3]["nan"], recs[3]["inf"], recs[3]["ninf"], recs[3]["ok"]) == ("nan", "inf", "-inf", 0.5)
    assert recs[4]["c"] == ["<circular>"]
    assert recs[5]["x"] == "<unprintable _NoStr>"
    assert recs[6]["msg"].startswith("badfmt %d % ('x',)") and "TypeError" in recs[6]["msg"]


def test_metrics_values_in_a_private_registry():
    m = TableMetrics(fps_window_s=1.0)
    for i in range(90):  # 3 s at 30 fps
        m.frame(100.0 + i / 30.0)
    assert m.value("craps_table_frames_total") == 90
    assert m.value("craps_table_frames_per_second") == 30.0
    for ms in (3.0, 7.0, 12.0, 40.0):
        m.read_ms(ms)
    assert m.value("craps_table_read_ms_count") == 4
    assert m.value("craps_table_read_ms_sum") == 62.0
    assert m.value("craps_table_read_ms_bucket", {"le": "10.0"}) == 2
    assert m.value("craps_table_read_ms_bucket", {"le": "15.0"}) == 3
    m.verdict("roll", None)
    m.verdict("roll", None)
    m.verdict("no-roll", "die-off-table")
    assert m.value("craps_table_verdicts_total", {"verdict": "roll", "reason": "none"}) == 2
    assert m.value("craps_table_verdicts_total", {"verdict": "no-roll", "reason": "die-off-table"}) == 1
    m.sequence(4711)
    assert m.value("craps_table_last_sequence") == 4711
    m.health(True, ["camera-lost"])
    assert m.value("craps_table_safe_state") == 1
    assert m.value("craps_table_faults_total", {"reason": "camera-lost"}) == 1
    m.health(False)
    assert m.value("craps_table_safe_state") == 0
    # a second instance does not clash (private registries)
    assert TableMetrics().value("craps_table_frames_total") == 0


def test_fps_gauge_drops_when_frames_slow_down():
    m = TableMetrics(fps_window_s=1.0)
    for i in range(60):
        m.frame(i / 60.0)
    assert m.value("craps_table_frames_per_second") == 60.0
    for i in range(1, 11):
        m.frame(1.0 + i * 0.2)  # 5 fps
    assert m.value("craps_table_frames_per_second") == 5.0


def test_fps_gauge_falls_to_zero_when_frames_stop():
    """The gauge is computed when scraped: a camera that stops delivering frames shows 0 fps
    within the window, not the rate of the last frame that came."""
    clock = [500.0]
    m = TableMetrics(fps_window_s=1.0, clock=lambda: clock[0])
    for i in range(60):  # 2 s at 30 fps, the clock following
        clock[0] = 500.0 + i / 30.0
        m.frame(clock[0])
    assert m.value("craps_table_frames_per_second") == 30.0
    clock[0] += 0.5  # no frame for 0.5 s: half the window is empty
    assert m.value("craps_table_frames_per_second") == 15.0
    clock[0] += 1.0  # none for 1.5 s
    assert m.value("craps_table_frames_per_second") == 0.0
    assert m.value("craps_table_frames_total") == 60
    assert TableMetrics().value("craps_table_frames_per_second") == 0.0  # no frame yet


def test_metrics_http_endpoint_on_loopback():
    m = TableMetrics()
    port = m.serve(MetricsConfig(port=0))
    try:
        assert port > 0
        m.sequence(99)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert "craps_table_last_sequence 99.0" in body
        assert m.serve() == port  # idempotent
    finally:
        m.close()
        m.close()
    assert MetricsConfig().addr == "127.0.0.1"


def test_documented_jq_commands_work_on_journal_output(tmp_path):
    """docs/raspberry-pi.md §5: each `journalctl ... | jq ...` command, run on the documented
    example lines with a plain-text journal line among them, gives what it promises."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("jq") is None:
        pytest.skip("jq not installed")
    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "raspberry-pi.md").read_text()
    section = doc[doc.index("## 5. Watch"):doc.index("## 6.")]
    examples = re.search(r"```json\n(.*?)```", section, re.S).group(1).splitlines()
    records = [json.loads(x) for x in examples]
    # the example lines are the service's real messages (logger and message start)
    sources = {"controller.service": (root / "controller" / "service.py").read_text(),
               "controller.service_cli": (root / "controller" / "service_cli.py").read_text()}
    for rec in records:
        first_word = rec["msg"].split(" ")[0]
        assert f'log.{rec["level"].lower()}("{first_word} ' in sources[rec["logger"]], rec
    journal = tmp_path / "journal.txt"
    journal.write_text("Started craps-table.service - Craps table controller.\n" + "\n".join(examples) + "\n")
    commands = [line.split("| ", 1)[1] for line in section.splitlines()
                if line.startswith("journalctl") and "| jq" in line]
    assert len(commands) == 4
    outputs = []
    for cmd in commands:
        proc = subprocess.run(f"{cmd} < {journal}", shell=True, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, (cmd, proc.stderr)
        outputs.append(proc.stdout)
    assert outputs[0].count('"ts"') == len(examples) and '"Started craps-table.service' in outputs[0]
    assert outputs[1].count('"msg"') == 1 and "safe state: camera-lost" in outputs[1]
    assert outputs[2].strip().endswith("verdict table-1-00000004 roll [4, 4]")
    assert outputs[3].count('"msg"') == 1 and '"event": "frame-clock-step"' in outputs[3]


def test_a_bad_metrics_address_is_named_as_the_address(tmp_path):
    import socket

    from controller.config import TableConfig
    from controller.service_cli import SetupError, build_metrics

    def cfg(**metrics):
        return TableConfig.model_validate({"metrics": {"port": 0, **metrics}})

    with pytest.raises(SetupError, match=r"^metrics\.addr '192\.0\.2\.1': "):  # not this host's (TEST-NET-1)
        build_metrics(cfg(addr="192.0.2.1"))
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        with pytest.raises(SetupError, match=rf"^metrics\.port {port} \(addr '127.0.0.1'\): "):
            build_metrics(cfg(port=port))
    finally:
        taken.close()
