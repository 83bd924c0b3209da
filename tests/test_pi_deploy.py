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


def test_unit_does_not_restart_a_setup_error():
    """Exit status 2 (bad config, missing keys or calibration) is not restarted in a loop."""
    svc = {k: v for section, k, v in unit_entries(DEPLOY / "craps-table.service") if section == "Service"}
    assert svc["RestartPreventExitStatus"] == "2"


def test_install_script_makes_the_bus_keys_and_sets_the_pi_config(tmp_path):
    env = dict(os.environ, DRY_RUN="1", SKIP_APT="1", PREFIX=str(tmp_path / "opt"))
    out = subprocess.run(["bash", str(DEPLOY / "install.sh")], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout
    keys = "/var/lib/craps-table/var/bus/keys"
    ct = f"{tmp_path / 'opt'}/venv/bin/craps-table"
    assert f"+ runuser -u craps-table -- {ct} keys generate table --dir {keys}" in out
    assert f"+ runuser -u craps-table -- {ct} keys generate settlement --dir {keys} --authorize" in out
    assert f"+ sed -i -f {ROOT / 'deploy/pi-config.sed'} /etc/craps-table/table.toml" in out
    assert "[source] kind" not in out  # no such key: it is [camera] source
    # the keys come before the service is enabled
    assert out.index("keys generate table") < out.index("systemctl enable")


def test_pi_config_sets_camera_lamps_and_calibration(tmp_path):
    """The sed script install.sh applies turns the shipped table.toml into the Pi's."""
    from controller.config import load_config

    shipped = load_config(ROOT / "config" / "table.toml")
    assert (shipped.camera.source, shipped.lamps.pin_factory, shipped.rules.calibration) == ("sim", "mock", None)
    pi = tmp_path / "table.toml"
    pi.write_text((ROOT / "config" / "table.toml").read_text())
    subprocess.run(["sed", "-i", "-f", str(DEPLOY / "pi-config.sed"), str(pi)], check=True, timeout=30)
    import tomllib

    data = tomllib.loads(pi.read_text())
    assert data["camera"]["source"] == "picamera2"
    assert data["lamps"]["pin_factory"] == "lgpio"
    assert data["rules"]["calibration"] == "/etc/craps-table/calibration.toml"
    # and the edited file is still a valid config (the calibration file must exist to load it)
    calib = tmp_path / "calibration.toml"
    calib.write_text((ROOT / "config" / "calibration.example.toml").read_text())
    pi.write_text(pi.read_text().replace("/etc/craps-table/calibration.toml", str(calib)))
    cfg = load_config(pi)
    assert (cfg.camera.source, cfg.lamps.pin_factory, cfg.rules.calibration) == ("picamera2", "lgpio", calib)


def test_docs_call_the_venv_craps_table_under_sudo():
    """`sudo craps-table ...` finds no craps-table on root's PATH: the venv's path is given."""
    text = (ROOT / "docs" / "raspberry-pi.md").read_text()
    bare = [line for line in text.splitlines()
            if ("sudo craps-table" in line or "-u craps-table craps-table" in line
                or "-- craps-table" in line)]
    assert bare == []
    assert "keys generate table --dir /var/lib/craps-table/var/bus/keys" in text.replace("\\\n     ", "")
    assert 'calibration = "/etc/craps-table/calibration.toml"' in text


def test_firmware_port_example_is_the_udev_name():
    text = (ROOT / "config" / "table.toml").read_text()
    assert '# port = "/dev/serial/by-id/craps-table-mcu"' in text
