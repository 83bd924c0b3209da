# Edits deploy/install.sh makes to its copy of config/table.toml (/etc/craps-table/table.toml):
# the shipped example runs anywhere (a simulated camera, mock GPIO pins, no calibration); on the
# Pi the service reads the Pi camera, drives the GPIO pins through lgpio and places the dice with
# the calibration that `craps-table calibrate` writes. Only the exact shipped lines are changed,
# so a file already edited by hand is left as it is. tests/test_pi_deploy.py checks the result.
s|^source = "sim"$|source = "picamera2"|
s|^pin_factory = "mock"$|pin_factory = "lgpio"|
s|^# calibration = "config/calibration.toml"$|calibration = "/etc/craps-table/calibration.toml"|
