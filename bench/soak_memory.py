"""Long-run memory, file-descriptor and thread growth of the table service (a soak).

The Pi runs the table service for weeks: a slow leak ends with the OOM killer mid-shift. This
runs the main job in software, as ``craps-table demo`` does (controller/demo.py): the simulated
table (``simulator.source.SimSource``, 960x540 at 60 fps) -> the dice reader and the
irregularity detectors -> the table service (SQLite game state) -> the roll bus (a real
``RollPublisher`` on ``ipc://`` sockets in a temporary directory: journalled, signed, CURVE) ->
the demo's settlement subscriber (``settlement.service`` in a thread, SQLite ledger), with the
boxperson command socket bound (``ipc://``) and gpiozero's mock pins, for ``--throws`` verdicts.

Every ``--every`` verdicts it samples the process's resident memory (``VmRSS`` of
``/proc/self/status``), its open file descriptors (``/proc/self/fd``), its threads (``Threads``
of ``/proc/self/status``: Python's, ZeroMQ's and the native libraries'; and Python's alone) and
the memory ``tracemalloc`` traces; at the end it prints them as a table, the growth per 1,000
verdicts (least-squares slope from the first sample on: the first ``--every`` verdicts are the
warm-up: the reader's model loaded, SQLite's page caches filled), and tracemalloc's top growth
sites between the first and the last sample.

``--source prerendered`` feeds the service frames rendered once before the soak (``--cycle``
throws of the simulated table, kept JPEG-encoded in memory and decoded per frame, replayed in a
loop with a continuing clock): the renderer and the physics are then out of the measurement,
which tells the service's growth from the simulator's. ``--source synthetic`` takes out vision
too (flat frames, a stand-in reader: :class:`SyntheticSource`), for tens of thousands of verdicts
in minutes through the controller, the bus and settlement.

Bounded: at most ``--throws`` verdicts and ``--max-s`` wall seconds (default 40 verdicts,
about 2 to 3 minutes on 2 cores). Exit status: 0 done, 1 the run failed (the service or the
settlement subscriber), 2 bad arguments.

Usage: ``.venv/bin/python bench/soak_memory.py [--throws N] [--every K]
[--source sim|prerendered|synthetic] [--cycle N] [--seed N] [--health] [--max-s S] [--top N]
[--trace-frames N] [--no-trace]``.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import cv2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bus.config import BusConfig  # noqa: E402
from bus.publisher import RollPublisher  # noqa: E402
from camera.base import Frame  # noqa: E402
from controller.config import TableConfig, TestPlayer, load_config  # noqa: E402
from controller.demo import SettlementThread, _demo_source  # noqa: E402
from controller.service_cli import build_lamp_driver, build_service  # noqa: E402

MB = 1024 * 1024


@dataclass
class Sample:
    """One sample: after ``verdicts`` verdicts, ``wall_s`` seconds into the soak."""

    verdicts: int
    wall_s: float
    rss_mb: float
    traced_mb: float
    tracer_mb: float
    fds: int
    threads: int
    py_threads: int


def proc_status() -> dict[str, str]:
    """``/proc/self/status`` as ``{field: value}`` (Linux)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def rss_mb() -> float:
    """Resident set size of this process, MiB (``VmRSS``)."""
    return int(proc_status()["VmRSS"].split()[0]) / 1024


def open_fds() -> int:
    """Open file descriptors of this process (entries of ``/proc/self/fd``, less the one the
    listing itself opens)."""
    return len(os.listdir("/proc/self/fd")) - 1


def take_sample(verdicts: int, t0: float) -> Sample:
    """Sample the process now (after a full garbage collection, so that what is counted is
    what is still referenced)."""
    gc.collect()
    tracing = tracemalloc.is_tracing()
    traced = tracemalloc.get_traced_memory()[0] / MB if tracing else float("nan")
    tracer = tracemalloc.get_tracemalloc_memory() / MB if tracing else 0.0
    return Sample(verdicts, time.monotonic() - t0, rss_mb(), traced, tracer, open_fds(),
                  int(proc_status()["Threads"]), threading.active_count())


class SyntheticSource:
    """Flat synthetic frames (``--source synthetic``, 640x360): for each throw the empty table,
    one frame of motion, then two white squares at rest whose grey levels carry the two dice's
    values (drawn from ``seed``), read back by :func:`synthetic_reader` in place of the dice
    reader, and each frame's number in its first four pixels (the health monitor's frozen-camera
    check would otherwise take the repeated frames for a frozen camera): the controller, the bus and settlement without the renderer and without vision,
    many times faster. Frames are ``1 / 30`` s apart; ``still`` frames are the lifecycle's
    ``still_frames``."""

    SPOTS = ((100, 100), (300, 100))  # top-left corners of the two 40 px dice

    def __init__(self, seed: int, still: int) -> None:
        import numpy as np

        self._np = np
        self._rng = np.random.default_rng(seed)
        self._still = int(still)
        self._empty = np.full((360, 640, 3), 70, np.uint8)
        self._closed = False

    def frames(self):
        """Throws until :meth:`close`."""
        np = self._np
        index = 0
        while not self._closed:
            dice = self._empty.copy()
            for (x, y), v in zip(self.SPOTS, self._rng.integers(1, 7, size=2)):
                dice[y:y + 40, x:x + 40] = 200 + 5 * int(v)
            moving = np.roll(dice, 37, axis=1)
            for image in [self._empty] * (self._still + 2) + [moving] + [dice] * (self._still + 2):
                if self._closed:
                    return
                image = image.copy()  # the frame's number in its first pixels: a live camera never
                image[0, :4, 0] = np.frombuffer(index.to_bytes(4, "little"), np.uint8)  # repeats a frame
                yield Frame(image, round(index / 30, 6), index, "synthetic")
                index += 1

    def close(self) -> None:
        """Stop at the next frame."""
        self._closed = True


def synthetic_reader(image):
    """The dice of a :class:`SyntheticSource` frame: a die wherever a square is white, its value
    from its grey level."""
    from vision.types import DieReading

    out = []
    for x, y in SyntheticSource.SPOTS:
        level = int(image[y + 20, x + 20, 0])
        if level > 200:
            out.append(DieReading((level - 200) // 5, (x, y, x + 40, y + 40), (x + 20.0, y + 20.0), 0.99, True, 40.0))
    return out


class PrerenderedSource:
    """The simulated table's frames rendered once and replayed in a loop (``--source
    prerendered``): ``cycle`` throws of ``sim`` (a ``SimSource``, which must be finite), each
    frame kept JPEG-encoded (quality 95) and decoded as it is replayed; frame times and indices
    go on across the loops (``1 / fps`` apart). Everything the service asks of its source
    (zones, homography, die size, camera height) is the ``SimSource``'s."""

    def __init__(self, sim, fps: float) -> None:
        self._sim = sim
        self._dt = 1.0 / float(fps)
        self._jpegs = []
        for frame in sim.frames():
            ok, buf = cv2.imencode(".jpg", frame.image, [cv2.IMWRITE_JPEG_QUALITY, 95])
            if not ok:
                raise RuntimeError(f"frame {frame.index}: JPEG encoding failed")
            self._jpegs.append(buf)
        if not self._jpegs:
            raise ValueError("the simulated table gave no frames to replay")
        self._closed = False

    @property
    def stored_mb(self) -> float:
        """The encoded frames' size, MiB."""
        return sum(b.nbytes for b in self._jpegs) / MB

    def __getattr__(self, name):
        return getattr(self._sim, name)

    def frames(self):
        """The stored frames, in a loop, until :meth:`close`."""
        index = 0
        while not self._closed:
            for buf in self._jpegs:
                if self._closed:
                    return
                yield Frame(cv2.imdecode(buf, cv2.IMREAD_COLOR), round(index * self._dt, 6), index,
                            "prerendered")
                index += 1

    def close(self) -> None:
        """Stop the replay at the next frame."""
        self._closed = True


def _short(name: str) -> str:
    for root in (str(REPO) + os.sep, sys.prefix + os.sep):
        if name.startswith(root):
            return name[len(root):]
    return name


def _site(trace: tracemalloc.Trace, ours: bool) -> tuple[str, int]:
    """Where a block was allocated: its innermost frame, or with ``ours`` the innermost frame in
    this project's code (not the virtual environment's), else the innermost."""
    frames = list(trace.traceback)   # oldest first
    if ours:
        for f in reversed(frames):
            if f.filename.startswith(str(REPO) + os.sep) and not f.filename.startswith(sys.prefix + os.sep):
                return _short(f.filename), f.lineno
    return _short(frames[-1].filename), frames[-1].lineno


def growth_sites(first, last, ours: bool) -> list:
    """``[((file, line), (bytes, blocks)), ...]``: what the traced blocks allocated at each site
    grew by from snapshot ``first`` to ``last``, the largest growth (bytes) first."""
    def totals(snap):
        out: dict = {}
        for tr in snap.traces:
            key = _site(tr, ours)
            size, count = out.get(key, (0, 0))
            out[key] = (size + tr.size, count + 1)
        return out

    a, b = totals(first), totals(last)
    diff = {k: (b.get(k, (0, 0))[0] - a.get(k, (0, 0))[0], b.get(k, (0, 0))[1] - a.get(k, (0, 0))[1])
            for k in set(a) | set(b)}
    return sorted(((k, v) for k, v in diff.items() if v != (0, 0)), key=lambda kv: -kv[1][0])


def slope_per_1000(samples: list[Sample], attr: str) -> float:
    """Least-squares slope of ``attr`` over the samples' verdict counts, per 1,000 verdicts."""
    xs = [s.verdicts for s in samples]
    ys = [getattr(s, attr) for s in samples]
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return float("nan")
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def soak(args: argparse.Namespace) -> int:
    """Run the soak (see the module docstring) and print its table. Returns the exit status.
    tracemalloc is stopped and OpenCV's thread count restored on the way out."""
    threads = cv2.getNumThreads()
    try:
        return _soak(args)
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        cv2.setNumThreads(threads)


def _soak(args: argparse.Namespace) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cv2.setNumThreads(1)
    base = load_config(REPO / "config" / "table.toml")
    players = base.settlement.players or [TestPlayer(name="alice", bets=[{"bet": "pass", "amount_cents": 1000}])]
    players = [p.model_dump() for p in players]
    if args.trace:
        tracemalloc.start(args.trace_frames)
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="craps-soak-") as tmpdir:
        tmp = Path(tmpdir)
        # as run_demo (controller/demo.py): everything in the temporary directory, bus on ipc://
        bus_cfg = BusConfig.local(tmp / "bus", transport="ipc", table_id=base.table.id)
        cfg: TableConfig = base.model_copy(update={
            "bus": bus_cfg,
            "state": base.state.model_copy(update={"db": tmp / "state.sqlite"}),
            "lamps": base.lamps.model_copy(update={"driver": "gpiozero", "pin_factory": "mock"}),
            "boxperson": base.boxperson.model_copy(update={"endpoint": f"ipc://{tmp / 'boxperson'}"}),
        })
        if args.source == "sim":  # the demo's own source: SimSource, the dice offered first
            source, what = _demo_source(cfg, argparse.Namespace(source=None, seed=args.seed, rolls=args.throws), tmp)
        elif args.source == "synthetic":
            source = SyntheticSource(0 if args.seed is None else args.seed, cfg.vision.still_frames)
            what = "synthetic frames read by a stand-in reader (no renderer, no vision)"
        else:
            from simulator.source import SimSource

            sim = SimSource(cfg.camera.sim_scenario, seed=cfg.camera.sim_seed if args.seed is None else args.seed,
                            width=960, height=540, fps=60, throws=args.cycle, idle_s=0.4, rest_s=0.6,
                            spare_dice=cfg.camera.sim_spare_dice)
            t = time.monotonic()
            source = PrerenderedSource(sim, fps=60)
            what = (f"{args.cycle} throws of the simulated table pre-rendered ({len(source._jpegs)} frames, "
                    f"{source.stored_mb:.1f} MiB as JPEG, {time.monotonic() - t:.1f} s), replayed in a loop")
        print(f"soak: {what}; {args.throws} verdicts, a sample every {args.every}"
              f"{', health monitor on' if args.health else ''}"
              f"{', tracemalloc on' if args.trace else ', tracemalloc off'}", flush=True)

        publisher = RollPublisher(bus_cfg, cfg.table.id)
        settlement = SettlementThread(bus_cfg, cfg.settlement.profile, players, tmp,
                                      on_line=lambda line: None).start()

        def on_message(topic: str, body: dict, env: dict) -> None:
            if topic != "roll":
                return
            deadline = time.monotonic() + 3.0  # as the demo: settlement applies each roll first
            while settlement.applied_seq < env.get("seq", 0) and time.monotonic() < deadline \
                    and settlement.thread.is_alive():
                time.sleep(0.005)

        samples: list[Sample] = []
        snapshots = []
        t0 = time.monotonic()
        deadline = t0 + args.max_s
        service = None
        stopped_by_time = False

        def sample_now(n: int) -> None:
            samples.append(take_sample(n, t0))
            s = samples[-1]
            print(f"  {s.verdicts:>7} verdicts {s.wall_s:8.1f} s  RSS {s.rss_mb:8.1f} MiB  fds {s.fds:>4}  "
                  f"threads {s.threads:>3}", flush=True)
            if args.trace and n > 0:
                snap = tracemalloc.take_snapshot().filter_traces((
                    tracemalloc.Filter(False, tracemalloc.__file__),
                    tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
                    tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
                    tracemalloc.Filter(False, "<unknown>")))
                snapshots[:] = snapshots[:1] + [snap]

        next_at = [args.every]

        def should_stop() -> bool:
            nonlocal stopped_by_time
            n = service.stats.total_verdicts
            if n >= next_at[0]:
                sample_now(n)
                next_at[0] = (n // args.every + 1) * args.every
            if time.monotonic() > deadline:
                stopped_by_time = True
                return True
            return n >= args.throws  # here, not max_verdicts: the last sample is taken with all running

        try:
            service, _ = build_service(cfg, source, publisher=publisher, lamp_driver=build_lamp_driver(cfg),
                                       on_message=on_message, health=True if args.health else None,
                                       reader=synthetic_reader if args.source == "synthetic" else None)
            sample_now(0)
            service.run(source, should_stop=should_stop)
            n = service.stats.total_verdicts
            if not samples or samples[-1].verdicts != n:
                sample_now(n)
        finally:
            if service is not None:
                service.close()
            settlement.stop()
            publisher.close()
            source.close()
        stats = service.stats
        wall = time.monotonic() - t0
        after_close = take_sample(stats.total_verdicts, t0)
    if settlement.error is not None:
        print(f"soak: the settlement subscriber failed: {settlement.error}", file=sys.stderr)
        return 1

    print()
    print(f"soak: {stats.total_verdicts} verdicts ({stats.verdicts['roll']} rolls, {stats.verdicts['no-roll']} no "
          f"rolls, {stats.verdicts['boxperson']} boxperson calls), {stats.frames} frames, {settlement.wagers} "
          f"wagers settled, in {wall:.1f} s ({stats.frames / wall:.0f} frames/s)"
          f"{'; stopped at --max-s' if stopped_by_time else ''}; {time.monotonic() - t_start:.0f} s in all")
    print(f"{'verdicts':>9} {'wall s':>8} {'RSS MiB':>9} {'tracer MiB':>11} {'traced MiB':>11} {'fds':>5} "
          f"{'threads':>8} {'py threads':>11}")
    for s in samples + [after_close]:
        print(f"{'closed' if s is after_close else s.verdicts:>9} {s.wall_s:>8.1f} {s.rss_mb:>9.1f} "
              f"{s.tracer_mb:>11.1f} {s.traced_mb:>11.2f} {s.fds:>5} {s.threads:>8} {s.py_threads:>11}"
              + ("   (service, bus, settlement closed)" if s is after_close else ""))
    print("(RSS: the process's resident memory, tracemalloc's own included; tracer: tracemalloc's own memory; "
          "traced: the Python allocations it traces)")
    warm = [s for s in samples if s.verdicts > 0]
    if len(warm) >= 2:
        first, last = warm[0], warm[-1]
        print(f"growth from verdict {first.verdicts} to {last.verdicts} (least squares over {len(warm)} samples):")
        print(f"  RSS         {last.rss_mb - first.rss_mb:+8.2f} MiB   {slope_per_1000(warm, 'rss_mb'):+8.2f} MiB "
              f"per 1,000 verdicts")
        late = warm[len(warm) // 2:]
        if len(late) >= 2 and len(late) < len(warm):
            print(f"  RSS late    {late[-1].rss_mb - late[0].rss_mb:+8.2f} MiB   "
                  f"{slope_per_1000(late, 'rss_mb'):+8.2f} MiB per 1,000 verdicts (from verdict {late[0].verdicts}: past the "
                  "warm-up of caches and allocator arenas)")
        if args.trace:
            print(f"  RSS - tracer {(last.rss_mb - last.tracer_mb) - (first.rss_mb - first.tracer_mb):+7.2f} MiB   "
                  f"{slope_per_1000(warm, 'rss_mb') - slope_per_1000(warm, 'tracer_mb'):+8.2f} MiB per 1,000 verdicts")
        if args.trace:
            print(f"  traced      {last.traced_mb - first.traced_mb:+8.2f} MiB   "
                  f"{slope_per_1000(warm, 'traced_mb'):+8.2f} MiB per 1,000 verdicts")
        print(f"  fds         {first.fds} -> {last.fds} ({last.fds - first.fds:+d}); after close {after_close.fds}")
        print(f"  threads     {first.threads} -> {last.threads} ({last.threads - first.threads:+d}; Python "
              f"{first.py_threads} -> {last.py_threads}); after close {after_close.threads}")
    else:
        print("growth: fewer than 2 samples after the warm-up (raise --throws or lower --every)")
    if args.trace and len(snapshots) == 2:
        print(f"tracemalloc: top {args.top} growth sites from verdict {warm[0].verdicts} to {warm[-1].verdicts}"
              + (f" (by the innermost line of this project's code among {args.trace_frames} frames)"
                 if args.trace_frames > 1 else ""))
        for (name, line), (size, count) in growth_sites(snapshots[0], snapshots[1], args.trace_frames > 1)[:args.top]:
            print(f"  {size / 1024:+10.1f} KiB {count:+8d} blocks  {name}:{line}")
    return 0


def positive(text: str) -> int:
    """An ``int`` >= 1 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--throws", type=positive, default=40, help="verdicts to run (default 40: ~3 min on 2 cores)")
    ap.add_argument("--every", type=positive, default=10, help="sample every K verdicts (default 10)")
    ap.add_argument("--source", choices=("sim", "prerendered", "synthetic"), default="sim",
                    help="sim: the simulated table rendered live, as the demo; prerendered: --cycle throws "
                         "rendered once and replayed (the service without the renderer); synthetic: flat "
                         "frames and a stand-in reader (no renderer, no vision: fast)")
    ap.add_argument("--cycle", type=positive, default=4, help="throws pre-rendered for --source prerendered")
    ap.add_argument("--seed", type=int, default=None, help="the simulated table's seed (default: the config's)")
    ap.add_argument("--health", action="store_true",
                    help="run with the [health] monitor and its frame pump thread, as `craps-table run`")
    ap.add_argument("--max-s", type=float, default=600.0, help="stop after this many wall seconds (default 600)")
    ap.add_argument("--top", type=positive, default=10, help="tracemalloc growth sites shown")
    ap.add_argument("--trace-frames", type=positive, default=1, help="tracemalloc frames kept per allocation")
    ap.add_argument("--no-trace", dest="trace", action="store_false", help="without tracemalloc")
    args = ap.parse_args(argv)
    if not args.max_s > 0:
        ap.error(f"--max-s must be > 0, got {args.max_s}")
    if args.seed is not None and args.seed < 0:
        ap.error(f"--seed must be >= 0, got {args.seed}")
    return soak(args)


if __name__ == "__main__":
    sys.exit(main())
