"""``craps-table demo``: the table service and a settlement subscriber, with zero setup.

Everything lives in a temporary directory (game state, bus journal, bus keys, subscriber state)
and the bus runs on ``ipc://`` sockets in it, so nothing is configured and nothing is left
behind. The frame source is the simulated table (``simulator.source.SimSource``) when this build
has it, else a replay of dice photos (``tests/data/dice`` or ``../shared/data/dice-photos``).

The settlement side is ``settlement.service.run_settlement_service`` when this build has it,
else :class:`LineBetSubscriber`: a subscriber on the real bus that settles the standing line
bets of the configured test players (``[settlement.players]``) with the settlement engine.

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


class LineBetSubscriber:
    """A settlement subscriber for the demo: settles the test players' line bets as rolls arrive.

    Before each roll it puts up each player's standing bets that are not on the layout: pass and
    don't pass on a come-out roll, come and don't come on a point roll, and odds (taken or laid,
    ``odds_multiple`` x the flat bet) behind a line bet with a point, as the settlement engine
    allows. Money is integer cents. Rejected wagers are printed with the rule they break.

    Args:
        bus_cfg: the bus configuration (same as the table's).
        state_path: the subscriber's SQLite state file.
        players: the test players.
        profile: the settlement profile name.
        on_line: where settled-wager lines go.
    """

    def __init__(self, bus_cfg, state_path: Path, players: list[TestPlayer], profile: str,
                 on_line: Callable[[str], None] = say) -> None:
        from settlement.engine import Table
        from settlement.profile import load_profile

        self.bus_cfg, self.state_path = bus_cfg, state_path
        self.players = players
        self.table = Table(load_profile(profile))
        self.bankroll = {p.name: p.bankroll_cents for p in players}
        self.on_line = on_line
        self.applied_seq = 0
        self.settled = 0
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="demo-settlement", daemon=True)

    def start(self, timeout_s: float = 5.0) -> "LineBetSubscriber":
        """Start the thread and wait until it is subscribed."""
        self.thread.start()
        self._ready.wait(timeout_s)
        return self

    def stop(self) -> None:
        """Stop and join the thread."""
        self._stop.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        from bus.subscriber import RollSubscriber

        try:
            sub = RollSubscriber(self.bus_cfg, self.state_path)
        except BaseException as exc:  # noqa: BLE001 - reported by the demo
            self.error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._stop.is_set():
                env = sub.receive(timeout_s=0.2)
                if env is None:
                    continue
                self.apply(env)
                sub.ack(env["seq"])
                self.applied_seq = env["seq"]
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
            log.exception("demo settlement subscriber failed")
        finally:
            sub.close()

    def apply(self, env: dict) -> None:
        """Apply one envelope: a roll settles wagers; a new shooter is passed to the engine."""
        body = env.get("body") or {}
        if env.get("topic") == "state" and body.get("event") == "new-shooter":
            self.table.shooter_change(body.get("cause", "voluntary"))
            return
        if env.get("topic") != "roll" or body.get("verdict") != "roll":
            return
        self._put_up_bets(come_out=self.table.state.point is None)
        for s in self.table.roll(tuple(body["dice"]), seq=env["seq"]):
            self.bankroll[s.player] += s.returned
            self.settled += 1
            what = s.kind + (f" {s.number}" if s.number is not None and s.kind not in ("pass", "dont_pass") else "")
            if s.base:
                what = f"odds on {s.base}" + (f" {s.number}" if s.number else "")
            won = s.payout - s.vig if s.result == "win" else (-s.stake if s.result == "lose" else 0)
            self.on_line(f"  settled  {s.player:<6} {what:<20} {s.result:<5} stake {cents(s.stake):>8}  "
                         f"{('+' if won >= 0 else '') + cents(won):>9}   bankroll {cents(self.bankroll[s.player])}")
        self._put_up_odds()

    def _place(self, req: dict) -> None:
        from settlement.engine import Rejected

        if self.bankroll[req["player"]] < req["amount"]:
            return
        try:
            self.table.place(req)
        except Rejected as exc:
            self.on_line(f"  rejected {req['player']:<6} {req['bet']}: {exc}")
            return
        self.bankroll[req["player"]] -= req["amount"]

    def _put_up_bets(self, come_out: bool) -> None:
        for p in self.players:
            for bet in p.bets:
                kind = bet.bet.replace("-", "_")
                if come_out != (kind in ("pass", "dont_pass")):
                    continue
                on_layout = [w for w in self.table.of_player(p.name) if w.kind == kind and w.number is None]
                if not on_layout:
                    self._place({"player": p.name, "bet": kind, "amount": bet.amount_cents})

    def _put_up_odds(self) -> None:
        for p in self.players:
            for bet in p.bets:
                kind = bet.bet.replace("-", "_")
                if not bet.odds_multiple:
                    continue
                mine = self.table.of_player(p.name)
                for w in mine:
                    if w.kind != kind:
                        continue
                    number = self.table.state.point if kind in ("pass", "dont_pass") else w.number
                    if number is None:
                        continue
                    has = any(o.kind == "odds" and o.base == kind and (o.number == number) for o in mine)
                    if not has:
                        req = {"player": p.name, "bet": "odds", "base": kind, "amount": bet.amount_cents * bet.odds_multiple}
                        if kind in ("come", "dont_come"):
                            req["number"] = number
                        self._place(req)


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
        # 960x540 at 30 fps: a die is ~13 px, which the reader reads, and the demo stays quick
        return SimSource(cfg.camera.sim_scenario, seed=seed, width=960, height=540, fps=30,
                         throws=args.rolls + 5, idle_s=0.4, rest_s=0.6), \
            f"simulated table ({cfg.camera.sim_scenario}, seed {seed})"
    from camera.replay import ReplaySource

    for folder in (REPO / "tests" / "data" / "dice", SHARED / "data" / "dice-photos" / "topdown-tray" / "images"):
        if folder.is_dir() and any(folder.iterdir()):
            still = cfg.vision.still_frames
            return ReplaySource(folder, fps=30, hold_frames=still + 6, empty_frames=still + 4, limit=args.rolls), \
                f"replay of photos in {folder} (the simulated table is not in this build)"
    raise FileNotFoundError("no frame source: the simulator is not in this build and no dice photos were found "
                            "in tests/data/dice or ../shared/data/dice-photos")


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
        base = load_config(config_path) if config_path.exists() else TableConfig()
    except ConfigError as exc:
        print(f"craps-table demo: {exc}", file=sys.stderr)
        return 2
    players = base.settlement.players or [TestPlayer(name="alice", bets=[{"bet": "pass", "amount_cents": 1000}])]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="craps-demo-") as tmpdir:
        tmp = Path(tmpdir)
        bus_cfg = BusConfig.local(tmp / "bus", transport="ipc", table_id=base.table.id)
        cfg = base.model_copy(update={
            "bus": bus_cfg,
            "state": base.state.model_copy(update={"db": tmp / "state.sqlite"}),
            "lamps": base.lamps.model_copy(update={"driver": "gpiozero", "pin_factory": "mock"}),
        })
        try:
            source, what = _demo_source(cfg, args, tmp)
        except (FileNotFoundError, ValueError) as exc:
            print(f"craps-table demo: {exc}", file=sys.stderr)
            return 1
        say(f"craps-table demo: table {cfg.table.id}, {what}; {args.rolls} verdicts; "
            f"players {', '.join(p.name for p in players)} ({cfg.settlement.profile})")
        publisher = RollPublisher(bus_cfg, cfg.table.id)
        settlement = LineBetSubscriber(bus_cfg, tmp / "settlement.sqlite", players, cfg.settlement.profile).start()

        def on_message(topic: str, body: dict, env: dict) -> None:
            if topic != "roll":
                return
            say(roll_line(body))
            deadline = time.monotonic() + 3.0  # let settlement print this roll's wagers first
            while settlement.applied_seq < env.get("seq", 0) and time.monotonic() < deadline \
                    and settlement.thread.is_alive():
                time.sleep(0.005)

        service = None
        try:
            service, _ = build_service(cfg, source, publisher=publisher, lamp_driver=build_lamp_driver(cfg),
                                       on_message=on_message)
            stats = service.run(source, max_verdicts=args.rolls)
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
            f"no rolls, {stats.verdicts['boxperson']} boxperson calls), {settlement.settled} wagers settled, "
            f"{stats.frames} frames in {time.monotonic() - started:.1f} s; rest-to-published median {med:.1f} ms")
        say("bankrolls: " + ", ".join(f"{n} {cents(c)}" for n, c in settlement.bankroll.items()))
        if stats.total_verdicts < args.rolls:
            print(f"craps-table demo: the source ended after {stats.total_verdicts} of {args.rolls} verdicts",
                  file=sys.stderr)
    return 0
