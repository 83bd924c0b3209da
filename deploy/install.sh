#!/usr/bin/env bash
# Install the craps table service on a Raspberry Pi (Raspberry Pi OS Bookworm or later), as root:
#
#   sudo deploy/install.sh            # from a checkout of the project
#
# What it does (each step can be re-run; nothing already configured is overwritten):
#   1. apt packages: python3-venv, python3-picamera2 (with libcamera's Python bindings),
#      python3-lgpio, v4l-utils. picamera2 is not installable from PyPI: it comes with the OS.
#   2. a system user `craps-table` in the gpio, video and dialout groups.
#   3. a venv at $PREFIX/venv made with --system-site-packages, so that it sees the apt
#      picamera2 and lgpio, and the project installed into it with pip.
#   4. /etc/craps-table/table.toml and calibration.toml from the examples (if absent).
#   5. the systemd unit and the udev rule example (if absent); the service is enabled but
#      not started: calibrate first (docs/raspberry-pi.md).
#
# Environment: PREFIX (default /opt/craps-table), SKIP_APT=1 (no apt-get), DRY_RUN=1 (print the
# commands instead of running them).
set -euo pipefail

PREFIX="${PREFIX:-/opt/craps-table}"
SERVICE_USER="craps-table"
CONF_DIR="/etc/craps-table"
STATE_DIR="/var/lib/craps-table"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

run() {
    if [[ "${DRY_RUN:-0}" == "1" ]]; then
        printf '+ %s\n' "$*"
    else
        "$@"
    fi
}

if [[ "${DRY_RUN:-0}" != "1" && "$(id -u)" -ne 0 ]]; then
    echo "install.sh: run as root (sudo $0)" >&2
    exit 2
fi
if [[ ! -f "$SRC/pyproject.toml" || ! -f "$SRC/deploy/craps-table.service" ]]; then
    echo "install.sh: $SRC is not a checkout of craps-table (no pyproject.toml)" >&2
    exit 2
fi

echo "== 1. system packages"
if [[ "${SKIP_APT:-0}" != "1" ]]; then
    run apt-get update
    run apt-get install -y --no-install-recommends python3-venv python3-pip python3-picamera2 \
        python3-lgpio v4l-utils
fi

echo "== 2. service user $SERVICE_USER (groups gpio, video, dialout)"
for group in gpio video dialout; do
    run groupadd -f --system "$group"
done
if ! id -u "$SERVICE_USER" >/dev/null 2>&1; then
    run useradd --system --user-group --home-dir "$STATE_DIR" --no-create-home \
        --shell /usr/sbin/nologin --comment "craps table service" "$SERVICE_USER"
fi
run usermod -a -G gpio,video,dialout "$SERVICE_USER"

echo "== 3. venv $PREFIX/venv (--system-site-packages, for picamera2 and lgpio from apt)"
run install -d -m 0755 "$PREFIX"
if [[ ! -x "$PREFIX/venv/bin/python" ]]; then
    run python3 -m venv --system-site-packages "$PREFIX/venv"
fi
run "$PREFIX/venv/bin/pip" install --upgrade pip
run "$PREFIX/venv/bin/pip" install "$SRC"
run install -d -m 0755 "$PREFIX/docs"
run cp -r "$SRC/docs/." "$PREFIX/docs/"
if [[ "${DRY_RUN:-0}" != "1" ]]; then
    # The apt simplejpeg (imported by picamera2) is built against the system numpy 1.x; the venv
    # has its own numpy 2.x ("numpy.dtype size changed, may indicate binary incompatibility").
    # A simplejpeg wheel from PyPI in the venv is built for the venv's numpy.
    err="$(mktemp)"
    if ! "$PREFIX/venv/bin/python" -c "import picamera2" 2>"$err" && grep -q "binary incompatibility" "$err"; then
        echo "   picamera2 fails on the venv's numpy: installing simplejpeg from PyPI into the venv"
        "$PREFIX/venv/bin/pip" install --force-reinstall --no-deps simplejpeg
    fi
    "$PREFIX/venv/bin/python" -c "import picamera2" 2>"$err" \
        && echo "   picamera2 is visible in the venv" \
        || { echo "   note: picamera2 is not importable (no Pi camera stack?); usb/replay sources still work:"; \
             tail -1 "$err"; }
    rm -f "$err"
fi

echo "== 4. configuration in $CONF_DIR"
run install -d -m 0755 "$CONF_DIR"
if [[ ! -e "$CONF_DIR/table.toml" ]]; then
    run install -m 0644 "$SRC/config/table.toml" "$CONF_DIR/table.toml"
    echo "   wrote $CONF_DIR/table.toml: set [source] kind, the serial port and the bus"
fi
if [[ ! -e "$CONF_DIR/calibration.toml" ]]; then
    run install -m 0644 "$SRC/config/calibration.example.toml" "$CONF_DIR/calibration.toml"
    echo "   wrote $CONF_DIR/calibration.toml: set the marker positions, then calibrate"
fi
run install -d -m 0750 -o "$SERVICE_USER" -g "$SERVICE_USER" "$STATE_DIR"

echo "== 5. systemd unit and udev rule"
run install -m 0644 "$SRC/deploy/craps-table.service" /etc/systemd/system/craps-table.service
if [[ ! -e /etc/udev/rules.d/99-craps-table-mcu.rules ]]; then
    run install -m 0644 "$SRC/deploy/99-craps-table-mcu.rules" /etc/udev/rules.d/99-craps-table-mcu.rules
    run udevadm control --reload-rules
    run udevadm trigger --subsystem-match=tty
fi
run systemctl daemon-reload
run systemctl enable craps-table.service

cat <<EOF

Installed. Next (docs/raspberry-pi.md): edit $CONF_DIR/calibration.toml, then
  sudo $PREFIX/venv/bin/craps-table calibrate --source picamera2 \\
       --out $CONF_DIR/calibration.toml --snapshot /tmp/calib.png
  sudo systemctl start craps-table && systemctl status craps-table
  journalctl -u craps-table -f -o cat
EOF
