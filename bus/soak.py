"""Processes for soak tests and the bench: a roll publisher and a settlement stand-in.

    python -m bus.soak publish --config CFG.json --count N [--rate R] [--linger S]
    python -m bus.soak settle  --config CFG.json --db APPLIED.sqlite --count N [--state S]

``publish`` continues the journal: it publishes rolls ``last_seq+1 .. N`` (body ``{"roll_id":
"r<n>", "n": n, "t_ns": CLOCK_MONOTONIC ns}``), at ``R`` per second if given, then keeps the bus
up (heartbeats, replays) for ``S`` seconds. Killing it at any moment and starting it again
loses nothing: what was journalled is replayed, the rest is published afterwards.

``settle`` applies each roll once: in one SQLite transaction (the rolls already waiting, up to
``--batch``) it records ``seq``, ``n`` and the CLOCK_MONOTONIC time of application in
``applied``, then acks the last one (acks are cumulative). It resumes after the highest
``seq`` in its own table (``resume_after``), so a kill between its commit and the ack cannot
apply a roll twice. Out-of-order or repeated deliveries would be recorded in ``violations``.
It exits 0 once ``applied`` holds N rolls.
"""
from __future__ import annotations

import argparse
import json
import logging
import sqlite3
import sys
import time
from pathlib import Path

from bus.config import BusConfig


def _publish(cfg: BusConfig, count: int, rate: float | None, linger: float, warmup: float,
             stats: Path | None = None) -> int:
    from bus.publisher import RollPublisher

    durations: list[int] = []

    with RollPublisher(cfg) as pub:
        time.sleep(warmup)
        n = pub.last_seq + 1
        period = 1.0 / rate if rate else 0.0
        t_next = time.monotonic()
        while n <= count:
            if period:
                delay = t_next - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                t_next += period
            t0 = time.monotonic_ns()
            env = pub.publish("roll", {"roll_id": f"r{n}", "n": n, "t_ns": t0})
            durations.append(time.monotonic_ns() - t0)
            if env["seq"] != n:
                print(f"journal seq {env['seq']} != roll {n}", file=sys.stderr)
                return 1
            n += 1
        if stats is not None:
            stats.write_text(json.dumps({"publish_ns": durations, "hwm_alarms": pub.stats["hwm_alarms"]}))
        end = time.monotonic() + linger
        while time.monotonic() < end:
            time.sleep(0.05)
    return 0


def open_applied(path: Path) -> sqlite3.Connection:
    """The settlement stand-in's database (WAL, synchronous=FULL)."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=10)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS applied(seq INTEGER PRIMARY KEY, n INTEGER NOT NULL, "
                 "t_pub_ns INTEGER NOT NULL, t_received_ns INTEGER NOT NULL, t_applied_ns INTEGER NOT NULL)")
    conn.execute("CREATE TABLE IF NOT EXISTS violations(what TEXT NOT NULL, seq INTEGER)")
    return conn


def _settle(cfg: BusConfig, db: Path, state: Path, count: int, timeout_s: float, batch_max: int) -> int:
    from bus.subscriber import RollSubscriber

    conn = open_applied(db)
    last = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM applied").fetchone()[0]
    end = time.monotonic() + timeout_s
    with RollSubscriber(cfg, state, resume_after=last) as sub:
        while last < count and time.monotonic() < end:
            env = sub.receive(0.5)
            if env is None:
                continue
            batch = [(env, time.monotonic_ns())]  # what else is already here joins the transaction
            while len(batch) < batch_max and (env := sub.receive(0.0)) is not None:
                batch.append((env, time.monotonic_ns()))
            conn.execute("BEGIN IMMEDIATE")
            rows = []
            for env, t_received in batch:
                seq = env["seq"]
                if seq != last + 1:
                    conn.execute("INSERT INTO violations VALUES('out_of_order', ?)", (seq,))
                rows.append((seq, env["body"]["n"], env["body"]["t_ns"], t_received))
                last = max(last, seq)
            try:
                conn.executemany("INSERT INTO applied VALUES(?,?,?,?,0)", rows)
            except sqlite3.IntegrityError:
                conn.execute("ROLLBACK")
                conn.execute("BEGIN IMMEDIATE")
                for row in rows:
                    try:
                        conn.execute("INSERT INTO applied VALUES(?,?,?,?,0)", row)
                    except sqlite3.IntegrityError:
                        conn.execute("INSERT INTO violations VALUES('applied_twice', ?)", (row[0],))
            conn.execute("COMMIT")
            # the time the rolls became durable: recorded after the commit, in a second
            # (non-synchronous) statement that does not hold up the next roll
            done = time.monotonic_ns()
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("UPDATE applied SET t_applied_ns=? WHERE seq BETWEEN ? AND ?", (done, rows[0][0], rows[-1][0]))
            conn.execute("PRAGMA synchronous=FULL")
            sub.ack(last)  # cumulative
        if last < count:
            print(f"settle: timed out at seq {last} of {count}; subscriber stats {sub.stats} "
                  f"rejections {sub.rejections} head {sub._head} contig {sub._contig} "
                  f"pending {len(sub._pending)} next {sub._next}", file=sys.stderr)
    conn.close()
    return 0 if last >= count else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point; see the module docstring. Returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m bus.soak")
    sub = p.add_subparsers(dest="role", required=True)
    a = sub.add_parser("publish")
    a.add_argument("--config", type=Path, required=True)
    a.add_argument("--count", type=int, required=True)
    a.add_argument("--rate", type=float, default=None)
    a.add_argument("--linger", type=float, default=3600.0)
    a.add_argument("--warmup", type=float, default=0.0, help="seconds to wait after binding before publishing")
    a.add_argument("--stats", type=Path, default=None, help="write publish() durations (JSON) here when done")
    b = sub.add_parser("settle")
    b.add_argument("--config", type=Path, required=True)
    b.add_argument("--db", type=Path, required=True)
    b.add_argument("--state", type=Path, default=None)
    b.add_argument("--count", type=int, required=True)
    b.add_argument("--timeout", type=float, default=600.0)
    b.add_argument("--batch", type=int, default=100, help="rolls applied per transaction at most")
    args = p.parse_args(argv)
    logging.basicConfig(level=getattr(logging, __import__("os").environ.get("BUS_LOG", "WARNING")), format="%(asctime)s %(process)d %(name)s %(message)s")
    cfg = BusConfig.model_validate_json(args.config.read_text())
    if args.role == "publish":
        return _publish(cfg, args.count, args.rate, args.linger, args.warmup, args.stats)
    state = args.state or args.db.with_suffix(".bus-state.sqlite")
    return _settle(cfg, args.db, state, args.count, args.timeout, max(1, args.batch))


if __name__ == "__main__":
    sys.exit(main())
