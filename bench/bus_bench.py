"""Roll bus bench: publish-to-applied latency and throughput on loopback TCP (real processes).

Runs ``python -m bus.soak publish`` (the table: journal fsync, Ed25519 signature, CURVE XPUB)
and ``python -m bus.soak settle`` (settlement stand-in: verify, apply in an SQLite transaction
with fsync, ack with fsync) as two processes on 127.0.0.1.

* latency: rolls at a fixed rate (default 100/s); latency = CLOCK_MONOTONIC at the moment the
  settlement's transaction holding the roll has committed, minus CLOCK_MONOTONIC just before
  ``RollPublisher.publish`` was called (so it includes the table's journal fsync).
* throughput: rolls published as fast as possible; rolls per second applied by settlement
  (first to last application) and published by the table.
* soak (``--soak N``): N rolls with SIGKILL of the subscriber every 500 and of the publisher
  every 700 applied/journalled rolls (the full-size run of tests/test_bus_soak.py).

    python bench/bus_bench.py [--rate 100] [--seconds 10] [--burst 3000] [--soak 10000] [--no-tmpfs]

Target (issue 7): p99 <= 2 ms at 100 rolls per second.
"""
from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bus.config import BusConfig  # noqa: E402


def _spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bus.soak", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _percentile(sorted_vals: list[float], q: float) -> float:
    i = min(len(sorted_vals) - 1, max(0, round(q / 100 * (len(sorted_vals) - 1))))
    return sorted_vals[i]


def run(work: Path, count: int, rate: float | None, warmup: float) -> dict:
    """One run. Returns latencies in ms (sorted): ``publish`` (the publish() call: journal
    fsync, signature, send), ``received`` (publish() called -> settlement's receive() returned),
    ``applied`` (publish() called -> settlement's transaction committed); and rates in rolls/s:
    ``applied_rate``, ``published_rate``."""
    import json

    cfg = BusConfig.local(work, transport="tcp")
    cfg_file = work / "bus.json"
    cfg_file.write_text(cfg.model_dump_json())
    db = work / "applied.sqlite"
    stats = work / "publish-stats.json"
    sub = _spawn("settle", "--config", str(cfg_file), "--db", str(db), "--count", str(count), "--timeout", "300")
    pub_args = ["publish", "--config", str(cfg_file), "--count", str(count), "--warmup", str(warmup),
                "--linger", "60", "--stats", str(stats)]
    if rate:
        pub_args += ["--rate", str(rate)]
    pub = _spawn(*pub_args)
    try:
        sub.wait(timeout=300)
        deadline = time.monotonic() + 10
        while not stats.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        _stop(sub)
        _stop(pub)
    conn = sqlite3.connect(str(db))
    rows = conn.execute("SELECT t_pub_ns, t_received_ns, t_applied_ns FROM applied ORDER BY seq").fetchall()
    conn.close()
    if len(rows) != count:
        raise SystemExit(f"settlement applied {len(rows)} of {count} rolls")
    published = json.loads(stats.read_text())["publish_ns"] if stats.exists() else []
    return {
        "publish": sorted(d / 1e6 for d in published),
        "received": sorted((r - p) / 1e6 for p, r, _ in rows),
        "applied": sorted((a - p) / 1e6 for p, _, a in rows),
        "applied_rate": (count - 1) / max((rows[-1][2] - min(a for _, _, a in rows)) / 1e9, 1e-9),
        "published_rate": (count - 1) / max((rows[-1][0] - rows[0][0]) / 1e9, 1e-9),
    }


def _pp(vals: list[float], digits: int = 2) -> str:
    if not vals:
        return "n/a"
    return f"p50 {_percentile(vals, 50):.{digits}f} ms p99 {_percentile(vals, 99):.{digits}f} ms"


def _fsync_probe(directory: Path, n: int = 200) -> str:
    """p50/p99 of one small SQLite WAL commit with synchronous=FULL in ``directory``."""
    with tempfile.TemporaryDirectory(dir=directory) as d:
        conn = sqlite3.connect(str(Path(d) / "probe.sqlite"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE t(i INTEGER PRIMARY KEY, b BLOB)")
        ts = []
        for i in range(n):
            t = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t VALUES(?, ?)", (i, b"x" * 400))
            conn.execute("COMMIT")
            ts.append((time.perf_counter() - t) * 1e3)
        conn.close()
    ts.sort()
    return f"p50 {_percentile(ts, 50):.2f} ms p99 {_percentile(ts, 99):.2f} ms"


def soak(work: Path, count: int) -> None:
    """The soak of tests/test_bus_soak.py at full size; prints its duration and outcome."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_bus_soak

    test_bus_soak.SOAK_ROLLS = count
    t0 = time.monotonic()
    test_bus_soak.test_soak_sigkill_subscriber_and_publisher(work)
    print(f"soak: {count} rolls, subscriber SIGKILLed every 500, publisher every 700: all applied once, "
          f"in order, in {time.monotonic() - t0:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=100.0, help="rolls per second for the latency run")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the latency run")
    ap.add_argument("--burst", type=int, default=3000, help="rolls for the throughput run (0: skip)")
    ap.add_argument("--soak", type=int, default=10000, help="rolls for the SIGKILL soak (0: skip)")
    ap.add_argument("--no-tmpfs", action="store_true", help="skip the run with journals on /dev/shm")
    args = ap.parse_args()
    print(f"fsync of one SQLite WAL commit on this disk now: {_fsync_probe(Path(tempfile.gettempdir()))}")
    with tempfile.TemporaryDirectory(prefix="bus-bench-") as tmp:
        n = max(10, int(args.rate * args.seconds))
        places = [("disk", Path(tmp))]
        if not args.no_tmpfs and Path("/dev/shm").is_dir():
            places.append(("tmpfs", Path(tempfile.mkdtemp(prefix="bus-bench-", dir="/dev/shm"))))
        for where, base in places:
            r = run(base / "latency", n, args.rate, warmup=1.5)
            lat = r["applied"]
            what = ("journal and settlement on disk, fsync both ends" if where == "disk" else
                    "journal and settlement on tmpfs (the bus without disk latency)")
            print(f"[{where}] {r['published_rate']:.0f} rolls/s, {n} rolls, loopback TCP, CURVE, Ed25519, {what}:")
            print(f"    publish-to-applied   {_pp(lat)}  max {lat[-1]:.2f} ms  "
                  f"(target p99 <= 2 ms: {'met' if _percentile(lat, 99) <= 2.0 else 'NOT met'})")
            print(f"    publish() call       {_pp(r['publish'])}   (journal commit + signature + send)")
            print(f"    publish-to-received  {_pp(r['received'])}")
        if len(places) > 1:
            import shutil
            shutil.rmtree(places[1][1], ignore_errors=True)
        if args.burst:
            r = run(Path(tmp) / "burst", args.burst, None, warmup=1.5)
            print(f"throughput over {args.burst} rolls (disk): published {r['published_rate']:.0f} rolls/s, "
                  f"applied {r['applied_rate']:.0f} rolls/s (settlement batches up to 100 per transaction); "
                  f"publish() {_pp(r['publish'])}; publish-to-applied under backlog {_pp(r['applied'], 1)}")
        if args.soak:
            (Path(tmp) / "soak").mkdir()
            soak(Path(tmp) / "soak", args.soak)
    return 0


if __name__ == "__main__":
    sys.exit(main())
