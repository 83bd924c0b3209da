"""End to end: the table service with the round driver, the simulated table (SimSource, throwing
on command) and the simulated microcontroller's shaker over a pseudo-terminal, on a real bus."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("mujoco")

from bus.config import BusConfig  # noqa: E402
from bus.publisher import RollPublisher  # noqa: E402
from controller.automation import attach_simulated_rig  # noqa: E402
from controller.config import load_config  # noqa: E402
from controller.lamps import NullLampDriver  # noqa: E402
from controller.rounds import DICE_DID_NOT_MOVE, RoundsConfig  # noqa: E402
from controller.service_cli import build_service  # noqa: E402
from firmware_bridge.config import BridgeConfig  # noqa: E402
from firmware_bridge.link import FirmwareLink  # noqa: E402
from firmware_bridge.mcu_sim import SimulatedMcu  # noqa: E402
from firmware_bridge.protocol import Shaker  # noqa: E402
from simulator.source import SimSource  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


class RecordingLamps(NullLampDriver):
    """Remembers every bets-closed change."""

    def __init__(self) -> None:
        super().__init__()
        self.bets_closed: list[str] = []

    def set_lamp(self, name, mode, brightness=1.0):
        super().set_lamp(name, mode, brightness)
        if name == "bets-closed":
            self.bets_closed.append(mode)


def test_automated_rounds_end_to_end(tmp_path):
    base = load_config(REPO / "config" / "table.toml")
    bus = BusConfig.local(tmp_path / "bus", transport="ipc", table_id=base.table.id)
    cfg = base.model_copy(update={
        "bus": bus, "metrics": None,
        "state": base.state.model_copy(update={"db": tmp_path / "state.sqlite"}),
        "boxperson": base.boxperson.model_copy(update={"endpoint": "", "timeout_s": 0.5}),
        "rounds": RoundsConfig(bets_open_s=0.3, min_round_s=0, results_s=0.2, shake_ms=200, no_motion_s=0.8,
                               stuck_limit=2, max_rethrows=4)})
    source = SimSource("natural", seed=3, width=960, height=540, fps=30, idle_s=0.4, rest_s=0.6)
    publisher = RollPublisher(bus, cfg.table.id)
    mcu = SimulatedMcu(seed=1)
    link = FirmwareLink(BridgeConfig(port=str(mcu.start()), exclusive=False, require_wall_sensor=False)).start()
    msgs: list[tuple[str, dict, dict]] = []
    lamps = RecordingLamps()
    service = None
    try:
        assert link.wait_up(5.0)
        service, _ = build_service(cfg, source, publisher=publisher, lamp_driver=lamps,
                                   on_message=lambda topic, body, env: msgs.append((topic, body, env)))
        driver, closers = attach_simulated_rig(service, cfg.rounds, mode="automated", source=source, link=link)
        service.closers.extend(closers)
        real_throw = source.throw
        stuck = {"on": False}
        source_throws = []

        def trigger():
            source_throws.append(stuck["on"])
            real_throw(stuck=stuck["on"])

        driver.trigger = trigger
        t0 = time.monotonic()

        def should_stop():
            if driver.rounds_done >= 2:
                stuck["on"] = True       # from now on the rig runs but the dice do not move
            return driver.cycle.stopped or time.monotonic() - t0 > 90

        service.run(source, should_stop=should_stop)
    finally:
        if service is not None:
            service.close()
        publisher.close()
        source.close()
        link.close()
        mcu.stop()

    rounds = [(b, e) for t, b, e in msgs if t == "round"]
    rolls = [b for t, b, e in msgs if t == "roll"]
    events = [b["event"] for b, _ in rounds]
    results = [b for b, _ in rounds if b["event"] == "results"]
    assert len(results) == 2, events
    # round 1 and 2: the full cycle, in order, each with exactly one result naming a published verdict
    for rid in {b["round_id"] for b in results}:
        mine = [b for b, _ in rounds if b["round_id"] == rid]
        names = [b["event"] for b in mine]
        assert names[:3] == ["bets-open", "no-more-bets", "throw"] and names[-1] == "results"
        assert names.count("results") == 1 and "in-motion" in names
        assert mine[-1]["roll_id"] == [b for b in mine if b["event"] == "verdict"][-1]["roll_id"]
        assert mine[-1]["roll_id"] in {r["roll_id"] for r in rolls}
    # the stuck throws: a no roll dice-did-not-move each, an alarm, then the table stops
    stuck_rolls = [r for r in rolls if r["reason"] == DICE_DID_NOT_MOVE]
    assert len(stuck_rolls) == 2 and all(r["verdict"] == "no-roll" and r["dice"] is None for r in stuck_rolls)
    assert events[-1] == "stopped" and driver.cycle.stop_cause.startswith("dice-did-not-move x2")
    alarms = [b["code"] for t, b, e in msgs if t == "alarm"]
    assert "dice-did-not-move-fault" in alarms and "technician-fault" in alarms
    # every verdict is in a round's verdict events exactly once
    verdict_ids = [b["roll_id"] for b, _ in rounds if b["event"] == "verdict"]
    assert sorted(verdict_ids) == sorted(r["roll_id"] for r in rolls) and not driver.stray_verdicts
    # one SHAKER per throw reached the microcontroller, one simulated throw per SHAKER
    shakes = [c for c in mcu.executed if isinstance(c.message, Shaker)]
    assert len(shakes) == events.count("throw") == len(source_throws)
    assert all(c.message.duration_ms == 200 for c in shakes)
    # the bus order: a round's no-more-bets precedes its throw's verdict (sequence numbers)
    seq = {(b["round_id"], b["event"]): e["seq"] for b, e in rounds}
    for b in results:
        assert seq[(b["round_id"], "no-more-bets")] < seq[(b["round_id"], "results")]
    # the bets-closed lamp: off while bets are open, on from no-more-bets to the next round
    changes = [m for i, m in enumerate(lamps.bets_closed) if i == 0 or m != lamps.bets_closed[i - 1]]
    assert changes[:5] == ["on", "off", "on", "off", "on"], lamps.bets_closed   # closed until round 1 opens
