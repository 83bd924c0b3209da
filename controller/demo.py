"""``craps-table demo``: the table service and a settlement subscriber, with zero setup.

Everything lives in a temporary directory (game state, bus journal, bus keys, subscriber state)
and the bus runs on ``ipc://`` sockets in it, so nothing is configured and nothing is left
behind. The frame source is the simulated table (``simulator.source.SimSource``) when this build
has it, else a replay of dice photos (``tests/data/dice`` or ``../shared/data/dice-photos``).

The settlement side is ``craps-table settle-service``'s logic (``settlement.service``) in a
thread, on the real bus: it settles the standing line bets of the configured test players
(``[settlement.players]``) in a SQLite ledger.

Output: one line per verdict (from the table) and one line per settled wager (from settlement),
in bus order; the demo waits for settlement to apply each roll before the next is printed.
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from camera.base import FrameError
from camera.errors import BadInputError
from controller.config import ConfigError, TableConfig, TestPlayer, load_config

log = logging.getLogger("controller.demo")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
_print_lock = threading.Lock()


def say(line: str) -> None:
    """Print one line (thread-safe, flushed)."""
    with _print_lock:
        print(line, flush=True)


def cents(amount: int) -> str:
    """Format integer cents as dollars, e.g. ``-1050`` -> ``-$10.50``."""
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount) // 100}.{abs(amount) % 100:02d}"


def roll_line(body: dict) -> str:
    """The human-readable line of one roll message body."""
    g = body["game"]
    head = f"{body['roll_id']}  shooter {g['shooter']} roll {g['shooter_roll']:<3}"
    if body["verdict"] == "roll":
        d1, d2 = body["dice"]
        what = f"{d1}+{d2} = {body['total']:>2}  {'come-out' if g['come_out'] else 'point   '}  {g['outcome']}"
        puck = f"puck ON {g['point']}" if g["puck"] == "ON" else "puck OFF"
        return f"ROLL      {head}  {what:<32} {puck}"
    label = "NO ROLL" if body["verdict"] == "no-roll" else "BOXPERSON"
    return f"{label:<9} {head}  {body['reason']} ({body.get('citation') or ''})"


class SettlementThread:
    """The settlement subscriber of the demo, in a thread: ``craps-table settle-service``'s
    logic (``settlement.service``: ledger session, line-bet strategy, envelope applier) on the
    real bus, with the last applied sequence number exposed so the demo can print each roll's
    settlements right under it.

    Args:
        bus_cfg: the bus configuration (same as the table's).
        profile: the settlement profile name.
        players: the test players (``[settlement.players]``).
        directory: where the ledger and the subscriber state go.
        on_line: where settlement lines go.
    """

    def __init__(self, bus_cfg, profile: str, players, directory: Path,
                 on_line: Callable[[str], None] = say) -> None:
        self.bus_cfg, self.profile, self.players = bus_cfg, profile, players
        self.ledger_path = Path(directory) / "ledger.sqlite"
        self.on_line = on_line
        self.applied_seq = 0
        self.settled_rolls = 0
        self.wagers = 0
        self.balances: dict[str, int] = {}
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="demo-settlement", daemon=True)

    def start(self, timeout_s: float = 5.0) -> "SettlementThread":
        """Start the thread and wait until it is subscribed."""
        self.thread.start()
        self._ready.wait(timeout_s)
        return self

    def stop(self) -> None:
        """Stop and join the thread."""
        self._stop.set()
        self.thread.join(timeout=10)

    def _line(self, text: str) -> None:
        if text.startswith("settle "):
            self.wagers += 1
        self.on_line("  " + text)

    def _run(self) -> None:
        from bus.subscriber import RollSubscriber
        from settlement.ledger import Session
        from settlement.profile import load_profile
        from settlement.service import EnvelopeApplier, LineBettor, normalize_players

        sub = sess = None
        try:
            players = normalize_players(self.players)
            sess = Session(load_profile(self.profile), self.ledger_path)
            sub = RollSubscriber(self.bus_cfg, Path(str(self.ledger_path) + ".bus"), resume_after=sess.last_bus_seq)
            applier = EnvelopeApplier(sess, LineBettor(players), self._line)
            self._ready.set()
            applier.bet()
            while not self._stop.is_set():
                env = sub.receive(timeout_s=0.2)
                if env is None:
                    continue
                self.settled_rolls += applier.apply(env)
                sub.ack(env["seq"])  # after the ledger commit
                self.applied_seq = env["seq"]
            self.balances = {p["name"]: sess.balance(p["name"]) for p in players}
        except BaseException as exc:  # noqa: BLE001 - reported by the demo
            self.error = exc
            log.exception("demo settlement subscriber failed")
        finally:
            self._ready.set()
            if sub is not None:
                sub.close()
            if sess is not None:
                sess.close()


def _demo_source(cfg: TableConfig, args, tmp: Path):
    from controller.service_cli import open_frame_source

    if args.source:
        return open_frame_source(cfg, args.source), args.source
    try:
        from simulator.source import SimSource
    except ImportError:
        SimSource = None
    if SimSource is not None:
        seed = cfg.camera.sim_seed if args.seed is None else args.seed
        # 960x540 at 60 fps: a die is ~13 px, which the reader reads; the far-wall track needs
        # the 60 fps (at 30 fps a die crosses 130 mm a frame and good throws were called
        # far-wall-missed, 2 in 20). Play starts with the stickperson offering the dice to the
        # first shooter (9 NYCRR 5324.52(f)(1), (f)(3); simulator/offer.py): no verdict. (The
        # simulator cannot offer at later changes of shooter: it does not know the game.)
        return SimSource(cfg.camera.sim_scenario, seed=seed, width=960, height=540, fps=60,
                         throws=args.rolls + 5, idle_s=0.4, rest_s=0.6,
                         spare_dice=cfg.camera.sim_spare_dice, offers=(0,)), \
            f"simulated table ({cfg.camera.sim_scenario}, seed {seed}, dice offered to the first shooter)"
    from camera.replay import ReplaySource

    for folder in (REPO / "tests" / "data" / "dice", SHARED / "data" / "dice-photos" / "topdown-tray" / "images"):
        if folder.is_dir() and any(folder.iterdir()):
            still = cfg.vision.still_frames
            return ReplaySource(folder, fps=30, hold_frames=still + 6, empty_frames=still + 4, limit=args.rolls), \
                f"replay of photos in {folder} (the simulated table is not in this build)"
    raise FileNotFoundError("no frame source: the simulator is not in this build and no dice photos were found "
                            "in tests/data/dice or ../shared/data/dice-photos")


def _with_wall_sensor(rules, source):
    """``[rules]`` of a rig with a far-wall strike sensor: ``wall_sensor`` on and, unless the
    config sets it, ``far_wall_reach_mm`` from the simulated table (the rubber's depth + the
    die's half diagonal: a die whose centre comes no nearer did not touch the wall), so that
    a strike is credited only to a die at the wall (controller/far_wall.py)."""
    update = {"wall_sensor": True}
    g = getattr(source, "geometry", None)
    if rules.far_wall_reach_mm is None and g is not None:
        update["far_wall_reach_mm"] = round(g.far_wall_reach_mm, 1)
    return rules.model_copy(update=update)


def run_demo(args: argparse.Namespace) -> int:
    """Run the demo (see the module docstring). Returns the exit status."""
    from bus.config import BusConfig
    from bus.publisher import RollPublisher
    from controller.service_cli import build_lamp_driver, build_service

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.rolls < 1:
        print("craps-table demo: --rolls must be >= 1", file=sys.stderr)
        return 2
    config_path = args.config or (REPO / "config" / "table.toml")
    try:
        # a --config given must be read (a typo must not run the demo on other settings); the
        # shipped file may be absent from an installed copy: then the built-in defaults
        base = load_config(config_path) if args.config or config_path.exists() else TableConfig()
    except ConfigError as exc:
        print(f"craps-table demo: {exc}", file=sys.stderr)
        return 2
    players = base.settlement.players or [TestPlayer(name="alice", bets=[{"bet": "pass", "amount_cents": 1000}])]
    players = [p.model_dump() for p in players]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="craps-demo-") as tmpdir:
        tmp = Path(tmpdir)
        bus_cfg = BusConfig.local(tmp / "bus", transport="ipc", table_id=base.table.id)
        cfg = base.model_copy(update={
            "bus": bus_cfg,
            "state": base.state.model_copy(update={"db": tmp / "state.sqlite"}),
            "lamps": base.lamps.model_copy(update={"driver": "gpiozero", "pin_factory": "mock"}),
            "boxperson": base.boxperson.model_copy(update={"endpoint": f"ipc://{tmp / 'boxperson'}"}),
        })
        try:
            source, what = _demo_source(cfg, args, tmp)
        except ValueError as exc:  # a bad --source, a replay path that is not usable: bad input
            print(f"craps-table demo: {exc}", file=sys.stderr)
            return 2
        except FileNotFoundError as exc:  # this build has no frame source at all
            print(f"craps-table demo: {exc}", file=sys.stderr)
            return 1
        if args.wall_sensor:
            cfg = cfg.model_copy(update={"rules": _with_wall_sensor(cfg.rules, source)})
            what += ", far-wall sensor"
        say(f"craps-table demo: table {cfg.table.id}, {what}; {args.rolls} verdicts; "
            f"players {', '.join(p['name'] for p in players)} ({cfg.settlement.profile})")
        say(f"craps-table demo: boxperson commands while it runs: craps-table decide --endpoint "
            f"{cfg.boxperson.endpoint} (--pending | --roll-id ID ... | --decide-only on|off --who NAME)")
        publisher = RollPublisher(bus_cfg, cfg.table.id)
        settlement = SettlementThread(bus_cfg, cfg.settlement.profile, players, tmp).start()

        def on_message(topic: str, body: dict, env: dict) -> None:
            if topic != "roll":
                return
            say(roll_line(body))
            deadline = time.monotonic() + 3.0  # let settlement print this roll's wagers first
            while settlement.applied_seq < env.get("seq", 0) and time.monotonic() < deadline \
                    and settlement.thread.is_alive():
                time.sleep(0.005)

        service, interrupted = None, False
        try:
            service, _ = build_service(cfg, source, publisher=publisher, lamp_driver=build_lamp_driver(cfg),
                                       on_message=on_message)
            stats = service.run(source, max_verdicts=args.rolls)
        except KeyboardInterrupt:  # Ctrl-C: the summary of what was done, as `run` stops on it
            if service is None:
                return 130
            stats, interrupted = service.stats, True
        except BadInputError as exc:  # e.g. a replay folder of only corrupt photos
            print(f"craps-table demo: bad input: {exc}", file=sys.stderr)
            return 2
        except FrameError as exc:
            print(f"craps-table demo: frame source failed: {exc}", file=sys.stderr)
            return 1
        finally:
            if service is not None:
                service.close()
            settlement.stop()
            publisher.close()
            source.close()
        if settlement.error is not None:
            print(f"craps-table demo: settlement subscriber failed: {settlement.error}", file=sys.stderr)
            return 1
        lat = sorted(stats.latencies_s)
        med = lat[len(lat) // 2] * 1000 if lat else float("nan")
        say(f"done: {stats.total_verdicts} verdicts ({stats.verdicts['roll']} rolls, {stats.verdicts['no-roll']} "
            f"no rolls, {stats.verdicts['boxperson']} boxperson calls), "
            f"{stats.offers} dice offer{'' if stats.offers == 1 else 's'} (no verdict), "
            f"{settlement.wagers} wagers settled, "
            f"{stats.frames} frames in {time.monotonic() - started:.1f} s; rest-to-published median {med:.1f} ms")
        say("balances (stakes still on the layout counted as paid in): "
            + ", ".join(f"{n} {cents(c)}" for n, c in settlement.balances.items()))
        if interrupted:
            print(f"craps-table demo: interrupted after {stats.total_verdicts} of {args.rolls} verdicts",
                  file=sys.stderr)
        elif stats.total_verdicts < args.rolls:
            print(f"craps-table demo: the source ended after {stats.total_verdicts} of {args.rolls} verdicts",
                  file=sys.stderr)
    return 0
