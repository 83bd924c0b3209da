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
#   4. /etc/craps-table/table.toml and calibration.toml from the examples (if absent); the
#      table.toml copy is set for the Pi (deploy/pi-config.sed): [camera] source = "picamera2",
#      [lamps] pin_factory = "lgpio", [rules] calibration = /etc/craps-table/calibration.toml.
#   5. the roll bus keys in /var/lib/craps-table/var/bus/keys (if absent), made as the service
#      user: the table's key set, and a settlement key set put in the allow-list.
#   6. the systemd unit and the udev rule example (if absent); the service is enabled but
#      not started: calibrate first (docs/raspberry-pi.md).
#
# Environment: PREFIX (default /opt/craps-table), SKIP_APT=1 (no apt-get), DRY_RUN=1 (print the
# commands instead of running them).
set -euo pipefail

PREFIX="${PREFIX:-/opt/craps-table}"
SERVICE_USER="craps-table"
CONF_DIR="/etc/craps-table"
STATE_DIR="/var/lib/craps-table"
# [bus] keys_dir = "var/bus/keys" of table.toml, relative to the unit's WorkingDirectory=$STATE_DIR
KEYS_DIR="$STATE_DIR/var/bus/keys"
CRAPS_TABLE="$PREFIX/venv/bin/craps-table"
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
    run sed -i -f "$SRC/deploy/pi-config.sed" "$CONF_DIR/table.toml"
    echo "   wrote $CONF_DIR/table.toml with [camera] source = \"picamera2\", [lamps] pin_factory = \"lgpio\""
    echo "   and [rules] calibration = \"$CONF_DIR/calibration.toml\"; check [camera] (source = \"usb\" and"
    echo "   [camera.usb] device for a USB camera), [lamps.pins], the [bus] endpoints and, with a"
    echo "   microcontroller, [firmware] port = \"/dev/serial/by-id/craps-table-mcu\""
fi
if [[ ! -e "$CONF_DIR/calibration.toml" ]]; then
    run install -m 0644 "$SRC/config/calibration.example.toml" "$CONF_DIR/calibration.toml"
    echo "   wrote $CONF_DIR/calibration.toml: set the marker positions, then calibrate"
fi
run install -d -m 0750 -o "$SERVICE_USER" -g "$SERVICE_USER" "$STATE_DIR"

echo "== 5. roll bus keys in $KEYS_DIR (as $SERVICE_USER)"
# The service refuses to start without them (controller/service_cli.py missing_bus_keys).
if [[ ! -e "$KEYS_DIR/table.key_secret" ]]; then
    run runuser -u "$SERVICE_USER" -- "$CRAPS_TABLE" keys generate table --dir "$KEYS_DIR"
fi
if [[ ! -d "$KEYS_DIR/authorized" ]]; then
    if [[ -e "$KEYS_DIR/settlement.key" ]]; then
        run runuser -u "$SERVICE_USER" -- "$CRAPS_TABLE" keys authorize "$KEYS_DIR/settlement.key" --dir "$KEYS_DIR"
    else
        run runuser -u "$SERVICE_USER" -- "$CRAPS_TABLE" keys generate settlement --dir "$KEYS_DIR" --authorize
    fi
fi

echo "== 6. systemd unit and udev rule"
run install -m 0644 "$SRC/deploy/craps-table.service" /etc/systemd/system/craps-table.service
if [[ ! -e /etc/udev/rules.d/99-craps-table-mcu.rules ]]; then
    run install -m 0644 "$SRC/deploy/99-craps-table-mcu.rules" /etc/udev/rules.d/99-craps-table-mcu.rules
    run udevadm control --reload-rules
    run udevadm trigger --subsystem-match=tty
fi
run systemctl daemon-reload
run systemctl enable craps-table.service

cat <<EOF

Installed; the service is enabled, not started. Next (docs/raspberry-pi.md):
  1. check $CONF_DIR/table.toml: [camera] source (picamera2; usb and [camera.usb] device for a
     USB camera), [lamps.pins], the [bus] endpoints, [firmware] port with a microcontroller.
  2. settlement on another host: copy settlement.key_secret, table.key and table.ed25519.pub
     from $KEYS_DIR to it (docs/bus.md).
  3. put the markers on the felt, edit $CONF_DIR/calibration.toml, then calibrate:
       sudo $CRAPS_TABLE calibrate --source picamera2 \\
            --out $CONF_DIR/calibration.toml --snapshot /tmp/calib.png
  4. sudo systemctl start craps-table && systemctl status craps-table
     journalctl -u craps-table -f -o cat
EOF
