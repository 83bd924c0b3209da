"""deploy/: the systemd unit, the udev rule and the install script say what the docs promise."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def unit_entries(path: Path) -> list[tuple[str, str, str]]:
    """(section, key, value) of a systemd unit file, continuation lines joined."""
    out, section, pending = [], "", ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def test_unit_is_notify_with_watchdog_dedicated_user_and_config():
    entries = unit_entries(DEPLOY / "craps-table.service")
    svc = {}
    for section, k, v in entries:
        if section == "Service":
            svc.setdefault(k, []).append(v)
    assert svc["Type"] == ["notify"]
    assert svc["WatchdogSec"] == ["5s"]
    assert svc["User"] == ["craps-table"]
    assert set(svc["SupplementaryGroups"][0].split()) == {"gpio", "video", "dialout"}
    assert "LG_WD=/run/craps-table" in svc["Environment"]
    assert svc["RuntimeDirectory"] == ["craps-table"]  # LG_WD exists and is writable
    assert svc["ExecStart"] == ["/opt/craps-table/venv/bin/craps-table run --config /etc/craps-table/table.toml"]
    assert svc["Restart"] == ["on-failure"]
    assert ("Install", "WantedBy", "multi-user.target") in entries


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_unit_passes_systemd_analyze_verify(tmp_path):
    unit = tmp_path / "craps-table.service"
    # verify checks that ExecStart exists: point it at a binary that does
    text = (DEPLOY / "craps-table.service").read_text().replace(
        "/opt/craps-table/venv/bin/craps-table", "/bin/true")
    unit.write_text(text)
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True,
                          text=True, timeout=60)
    problems = [line for line in (proc.stdout + proc.stderr).splitlines()
                if "craps-table.service:" in line]  # "FILE:LINE: Unknown key ..." and the like
    assert problems == [], proc.stdout + proc.stderr


def test_udev_rule_gives_a_stable_serial_name():
    entries = " ".join(line.strip().rstrip("\\") for line in (DEPLOY / "99-craps-table-mcu.rules").read_text()
                       .splitlines() if line.strip() and not line.lstrip().startswith("#"))
    assert 'SUBSYSTEM=="tty"' in entries
    assert 'SYMLINK+="serial/by-id/craps-table-mcu"' in entries
    assert 'GROUP="dialout"' in entries
    assert 'ENV{ID_MM_DEVICE_IGNORE}="1"' in entries


def test_install_script_dry_run(tmp_path):
    script = DEPLOY / "install.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    env = dict(os.environ, DRY_RUN="1", SKIP_APT="1", PREFIX=str(tmp_path / "opt"))
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"+ python3 -m venv --system-site-packages {tmp_path / 'opt'}/venv" in out
    assert "+ usermod -a -G gpio,video,dialout craps-table" in out
    assert f"+ {tmp_path / 'opt'}/venv/bin/pip install {ROOT}" in out
    assert "+ install -m 0644 " + str(ROOT / "deploy/craps-table.service") in out
    assert "+ systemctl enable craps-table.service" in out
    assert "apt-get" not in out
    assert not (tmp_path / "opt").exists()  # a dry run changes nothing
