"""craps-table settle-service says what it is waiting for (stderr), and stops cleanly on
SIGTERM. Found by the new-user pass: started before any table, it printed nothing at all, so an
operator could not tell a waiting subscriber from a hung one."""
from __future__ import annotations

import select
import signal
import subprocess
import sys
import time


def test_settle_service_announces_what_it_waits_for_and_stops_on_sigterm(tmp_path):
    from bus.config import BusConfig

    bus_dir = tmp_path / "bus"
    BusConfig.local(bus_dir)   # the table's local bus and its keys (settle-service makes none)
    ledger = tmp_path / "ledger.sqlite"
    p = subprocess.Popen([sys.executable, "-m", "controller.cli", "settle-service", "--bus-dir", str(bus_dir),
                          "--ledger", str(ledger)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        ready, _, _ = select.select([p.stderr], [], [], 30)
        assert ready, "settle-service printed nothing within 30 s"
        line = p.stderr.readline()
        assert "waiting for rolls" in line and "ny-5324" in line and str(ledger) in line
        assert f"ipc://{bus_dir.resolve()}" in line
        p.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        assert p.wait(timeout=20) == 0
        assert time.monotonic() - t0 < 20
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
