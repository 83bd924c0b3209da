"""Round cycle (controller/rounds.py) and round driver (controller/automation.py) on a fake rig:
fake clock, fake shaker, fake dice and verdicts, and settlement's round gate (settlement/rounds.py)
fed the same round envelopes. 1,000 automated rounds run in a few seconds."""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone

import pytest

from controller.automation import RoundDriver, RoundLamps
from controller.lamps import LampController, NullLampDriver
from controller.game import GameState
from controller.reasons import Reason
from controller.rounds import (DICE_DID_NOT_MOVE, RestDie, RoundCycle, RoundError, RoundsConfig, same_rest)
from controller.verdict import DieObservation, Verdict
from settlement.rounds import RoundGate
from vision.types import DieReading

EPOCH = datetime(2026, 11, 30, 0, 0, 0, tzinfo=timezone.utc)
DT = 0.05


def iso(t: float) -> str:
    return (EPOCH + timedelta(seconds=t)).isoformat()


def reading(value: int, x: float, y: float) -> DieReading:
    return DieReading(value=value, confidence=0.99, centre=(x, y), bbox=(int(x) - 8, int(y) - 8, int(x) + 8, int(y) + 8),
                      flat=True, side_px=16.0)


class FakeLifecycle:
    def __init__(self) -> None:
        self.phase = "waiting"
        self.armed = 0

    def arm(self) -> None:
        self.armed += 1


class FakeShaker:
    def __init__(self, rig: "Rig") -> None:
        self.rig, self.starts = rig, []

    def start(self, action: str, duration_ms: int, intensity: int) -> None:
        assert not self.rig.shaker_running, "a SHAKER was sent while the shaker still ran"
        self.starts.append(self.rig.t)
        self.rig.shaker_running = True
        self.rig.at(self.rig.t + duration_ms / 1000.0, self.rig.shaker_done)


class Rig:
    """The fake automated rig: the service's hook calls in the service's order, a scheduler for
    the dice, the bus as envelopes (fed to settlement's gate), and terminals placing wagers."""

    def __init__(self, cfg: RoundsConfig, seed: int, *, p_no_roll=0.15, p_box=0.02, p_frozen=0.02,
                 p_same=0.02, p_wager=0.3) -> None:
        self.rng = random.Random(seed)
        self.cfg = cfg
        self.p = dict(no_roll=p_no_roll, box=p_box, frozen=p_frozen, same=p_same)
        self.p_wager = p_wager
        self.t = 0.0
        self.seq = 0
        self.envs: list[dict] = []
        self.opened: list[str] = []
        self.gate = RoundGate(keep=5000)
        self.faults: list[tuple[str, str, float]] = []
        self.cleared: list[str] = []
        self.jobs: list[tuple[float, int, object]] = []
        self._n = 0
        self.moving = False
        self.shaker_running = False
        self.rest = (RestDie(3, 100.0, 100.0), RestDie(5, 140.0, 100.0))
        self.pending_read: tuple | None = None
        self.accepted: list[dict] = []
        self.refused: Counter = Counter()
        self.outcomes: list[str] = []
        self.lc = FakeLifecycle()
        self.cycle = RoundCycle("T1-TEST", cfg, mode="automated", clock=lambda: self.t,
                                publish=lambda body: self.envelope("round", body))
        self.driver = RoundDriver(self.cycle, lifecycle=self.lc, shaker=FakeShaker(self), trigger=self.thrown,
                                  raise_fault=lambda w, m: self.faults.append((w, m, self.t)),
                                  clear_fault=self.cleared.append, wall=lambda: self.t)

    # --- plumbing ---
    def envelope(self, topic: str, body: dict) -> None:
        self.seq += 1
        env = {"seq": self.seq, "ts": iso(self.t), "topic": topic, "body": dict(body)}
        self.envs.append(env)
        self.gate.observe(env)
        if topic == "round" and body["event"] == "bets-open":
            self.opened.append(body["round_id"])

    def at(self, t: float, fn) -> None:
        self._n += 1
        self.jobs.append((t, self._n, fn))

    def shaker_done(self) -> None:
        self.shaker_running = False
        self.driver.shaker_done("completed")

    def publish_verdict(self, v: Verdict) -> None:
        self.n_rolls = getattr(self, "n_rolls", 0) + 1
        rid = f"T1-{self.n_rolls:08d}"
        body = {"roll_id": rid, "verdict": v.kind, "reason": None if v.reason is None else v.reason.value,
                "dice": None if v.dice is None else list(v.dice)}
        self.envelope("roll", body)
        self.driver.verdict_published(body, self.t)

    # --- the dice ---
    def thrown(self) -> None:
        """The shaker started: decide what the dice do."""
        r = self.rng.random()
        if r < self.p["frozen"]:
            self.outcomes.append("frozen")        # nothing moves at all
            return
        self.outcomes.append("moved")
        t0 = self.t + 0.1
        self.at(t0, self.motion_start)
        self.at(t0 + self.rng.uniform(1.0, 2.5), self.come_to_rest)

    def motion_start(self) -> None:
        self.moving = True
        self.driver.throw_started(self.t)

    def come_to_rest(self) -> None:
        self.moving = False
        r = self.rng.random()
        p = self.p
        if r < p["same"]:                       # moved, but landed where they were, same faces
            dice = self.rest
            kind = "roll"
        else:
            dice = (RestDie(self.rng.randint(1, 6), self.rng.uniform(50, 900), self.rng.uniform(50, 500)),
                    RestDie(self.rng.randint(1, 6), self.rng.uniform(50, 900), self.rng.uniform(50, 500)))
            kind = "no-roll" if r < p["same"] + p["no_roll"] else (
                "boxperson" if r < p["same"] + p["no_roll"] + p["box"] else "roll")
        obs = tuple(DieObservation(reading(d.value, d.x, d.y), zone="playing") for d in dice)
        if kind == "roll":
            v = Verdict("roll", None, (dice[0].value, dice[1].value), (), obs)
        elif kind == "no-roll":
            v = Verdict("no-roll", Reason.DIE_OUTSIDE_AREA, None, (Reason.DIE_OUTSIDE_AREA,), obs)
        else:
            v = Verdict("boxperson", Reason.FACE_UNREADABLE, None, (Reason.FACE_UNREADABLE,), obs)
        self.rest = dice
        v = self.driver.review(v, self.t)
        self.publish_verdict(v)
        if v.kind == "boxperson":   # the boxperson decides 1.5 s later: a valid roll
            self.at(self.t + 1.5, lambda: self.publish_verdict(
                Verdict("roll", None, (dice[0].value, dice[1].value), (), obs)))

    # --- terminals ---
    def terminal(self) -> None:
        """A terminal places a wager on the last round it saw open, stamped now, or (a cheat)
        stamped up to 3 s in the past."""
        if self.rng.random() >= self.p_wager:
            return
        opened = self.opened
        if not opened:
            return
        rid = opened[-1]
        if self.rng.random() < 0.1 and len(opened) > 1:
            rid = opened[-2]
        placed = self.t - (self.rng.uniform(0, 3) if self.rng.random() < 0.2 else 0.0)
        w = {"player": "p", "bet": "pass", "amount": 500, "round_id": rid, "placed_at": iso(placed)}
        ok, why = self.gate.accepts(w)
        if ok:
            self.accepted.append({**w, "received_seq": self.seq, "received_t": self.t})
        else:
            self.refused[why.split(" ")[0]] += 1

    # --- the loop ---
    def step(self) -> None:
        self.terminal()
        forced = self.driver.on_frame(self.t, self.moving)
        if forced is not None:
            self.publish_verdict(forced)
        due = sorted(j for j in self.jobs if j[0] <= self.t + 1e-9)
        for j in due:
            self.jobs.remove(j)
            j[2]()
        self.terminal()
        self.t = round(self.t + DT, 9)

    def run(self, rounds: int, max_t: float, technician=True) -> None:
        while self.driver.rounds_done < rounds and self.t < max_t:
            self.step()
            if self.cycle.stopped and technician:
                self.t = round(self.t + 5.0, 9)     # the technician comes
                self.driver.resume("tech")


def round_events(envs):
    by_round = defaultdict(list)
    for e in envs:
        if e["topic"] == "round" and e["body"].get("round_id") and e["body"]["event"] not in ("stopped", "resumed"):
            by_round[e["body"]["round_id"]].append(e)
    return by_round


FAST = RoundsConfig(bets_open_s=3.0, min_round_s=7.2, results_s=1.0, max_rethrows=3, stuck_limit=3,
                    shake_ms=800, shaker_done_timeout_s=2.0, no_motion_s=1.0)

ALLOWED = {None: {"bets-open"}, "bets-open": {"no-more-bets"}, "no-more-bets": {"throw"},
           "throw": {"in-motion", "verdict"}, "in-motion": {"at-rest", "verdict"}, "at-rest": {"verdict"},
           "verdict": {"throw", "results", "verdict"}, "results": set()}


def test_thousand_automated_rounds():
    rig = Rig(FAST, seed=12345, p_frozen=0.04, p_same=0.04)
    rig.run(1000, max_t=50 * 3600)
    envs = rig.envs
    by_round = round_events(envs)
    stops = [e["body"] for e in envs if e["topic"] == "round" and e["body"]["event"] == "stopped"]
    abandoned = {e["body"]["abandoned"] for e in envs if e["topic"] == "round" and e["body"]["event"] == "resumed"}
    results = [e for e in envs if e["topic"] == "round" and e["body"]["event"] == "results"]
    assert len(results) == 1000 == rig.driver.rounds_done
    rolls = {e["body"]["roll_id"]: e["body"] for e in envs if e["topic"] == "roll"}

    owner: dict[str, str] = {}
    for rid, evs in by_round.items():
        names = [e["body"]["event"] for e in evs]
        prev = None
        for n in names:                         # every transition is one the cycle allows
            assert n in ALLOWED[prev], (rid, names)
            prev = n
        assert len(set(e["body"]["round"] for e in evs)) == 1
        n_results = names.count("results")
        if rid in abandoned:
            assert n_results == 0
        else:
            assert n_results == 1 and names[-1] == "results", (rid, names)   # exactly one result
        verdicts = [e["body"] for e in evs if e["body"]["event"] == "verdict"]
        for v in verdicts:
            assert v["roll_id"] in rolls and v["roll_id"] not in owner
            owner[v["roll_id"]] = rid
        if n_results:
            res = evs[-1]["body"]
            final = verdicts[-1]
            assert res["roll_id"] == final["roll_id"] and final["verdict"] in ("roll",)
            # rethrown: the no rolls only (a boxperson call is decided, not re-thrown)
            assert res["rethrown"] == [v["roll_id"] for v in verdicts[:-1] if v["verdict"] == "no-roll"]
            # every earlier verdict is a no roll re-thrown (or a boxperson call then decided)
            assert all(v["verdict"] in ("no-roll", "boxperson") for v in verdicts[:-1])
            throws = names.count("throw")
            no_rolls = sum(1 for v in verdicts if v["verdict"] == "no-roll")
            assert throws == 1 + no_rolls <= FAST.max_rethrows + 1
    # every verdict published belongs to exactly one round
    assert set(owner) == set(rolls)

    # stuck dice: every "did not move" throw is a no roll with its own reason and a fault
    stuck = [b for b in rolls.values() if b["reason"] == DICE_DID_NOT_MOVE]
    n_stuck_throws = rig.outcomes.count("frozen")
    assert len(stuck) >= n_stuck_throws > 10
    assert sum(1 for f in rig.faults if f[0] == "dice-did-not-move") == len(stuck)
    for b in stuck:
        assert b["verdict"] == "no-roll" and b["dice"] is None
    # stops: only for N stuck in a row or re-throws exhausted, each with the technician fault
    for s in stops:
        assert s["technician"] is True
        assert s["cause"].startswith(f"{DICE_DID_NOT_MOVE} x{FAST.stuck_limit}") or "max_rethrows 3" in s["cause"]
    assert sum(1 for f in rig.faults if f[0] == "technician") == len(stops)
    # with stuck_limit 3: a stop for stuck dice comes exactly after 3 in a row
    seq = [e["body"] for e in envs if e["topic"] == "round" and e["body"]["event"] in ("verdict", "stopped")]
    run = 0
    for b in seq:
        if b["event"] == "verdict":
            run = run + 1 if b["reason"] == DICE_DID_NOT_MOVE else (run if b["verdict"] == "boxperson" else 0)
            assert b["stuck_run"] == run
        elif b["cause"].startswith(DICE_DID_NOT_MOVE):
            assert run == FAST.stuck_limit
            run = 0
        else:
            run = 0

    # pace: successive rounds open at least min_round_s apart
    opens = [e["body"]["t"] for e in envs if e["topic"] == "round" and e["body"]["event"] == "bets-open"]
    gaps = [b - a for a, b in zip(opens, opens[1:])]
    assert min(gaps) >= FAST.min_round_s - 1e-6
    # no wager after "no more bets" is ever accepted
    closes = {e["body"]["round_id"]: e for e in envs if e["topic"] == "round" and e["body"]["event"] == "no-more-bets"}
    assert len(rig.accepted) > 1000 and sum(rig.refused.values()) > 500
    for w in rig.accepted:
        close = closes.get(w["round_id"])
        if close is not None:
            assert w["received_seq"] < close["seq"]
            assert w["placed_at"] <= close["ts"]  # placed no later than the close, received before it


def test_rethrows_then_technician():
    """Every throw a no roll: re-thrown max_rethrows times, then the table stops; resumed, the
    abandoned round gets no result and the next round opens."""
    cfg = FAST.model_copy(update={"max_rethrows": 2})
    rig = Rig(cfg, seed=1, p_no_roll=1.0, p_box=0.0, p_frozen=0.0, p_same=0.0)
    rig.run(1, max_t=60, technician=False)
    c = rig.cycle
    assert c.stopped and "no roll after 3 throws (max_rethrows 2)" in c.stop_cause
    names = [e["body"]["event"] for e in rig.envs if e["topic"] == "round"]
    assert names == ["bets-open", "no-more-bets"] + ["throw", "in-motion", "at-rest", "verdict"] * 3 + ["stopped"]
    assert len(rig.driver.shaker.starts) == 3 and rig.lc.armed == 3
    assert [f[0] for f in rig.faults] == ["technician"]
    t_stop = rig.t
    for _ in range(200):                    # stopped: nothing is thrown, bets stay closed
        rig.step()
    assert len(rig.driver.shaker.starts) == 3 and c.bets_closed
    rig.driver.resume("tech-7")
    rig.step()
    assert rig.t > t_stop
    resumed = [e["body"] for e in rig.envs if e["topic"] == "round" and e["body"]["event"] == "resumed"]
    assert resumed[0]["abandoned"].endswith("-000001") and resumed[0]["who"] == "tech-7"
    assert c.phase == "bets-open" and c.round.round_id.endswith("-000002")
    assert "technician" in rig.cleared
    # a wager for the abandoned round is refused
    ok, why = rig.gate.accepts({"round_id": resumed[0]["abandoned"], "placed_at": iso(0.5)})
    assert not ok and "abandoned" in why


def test_stuck_dice_stop_after_n_in_a_row():
    cfg = FAST.model_copy(update={"stuck_limit": 2, "max_rethrows": 5})
    rig = Rig(cfg, seed=2, p_frozen=1.0)
    rig.run(1, max_t=60, technician=False)
    rolls = [e["body"] for e in rig.envs if e["topic"] == "roll"]
    assert [r["reason"] for r in rolls] == [DICE_DID_NOT_MOVE, DICE_DID_NOT_MOVE]
    assert rig.cycle.stopped and rig.cycle.stop_cause.startswith("dice-did-not-move x2")
    assert [f[0] for f in rig.faults] == ["dice-did-not-move", "dice-did-not-move", "technician"]
    # the forced no roll comes no_motion_s after the shaker's done
    shake = rig.driver.shaker.starts[0]
    first_ts = [e for e in rig.envs if e["topic"] == "roll"][0]["ts"]
    assert iso(shake + 0.8 + 1.0 - 1e-6) <= first_ts <= iso(shake + 0.8 + 1.0 + 2 * DT)


def test_same_rest_scene_becomes_no_roll():
    cfg = FAST.model_copy(update={"stuck_limit": 5})
    rig = Rig(cfg, seed=3, p_same=1.0, p_frozen=0.0)
    rig.rest = (RestDie(2, 300.0, 200.0), RestDie(6, 340.0, 210.0))
    rig.cycle._last_rest = rig.rest
    rig.run(1, max_t=30, technician=False)
    first = [e["body"] for e in rig.envs if e["topic"] == "roll"][0]
    assert first["verdict"] == "no-roll" and first["reason"] == DICE_DID_NOT_MOVE


def test_same_rest_rule():
    a = (RestDie(3, 100, 100), RestDie(5, 140, 100))
    assert same_rest(a, (RestDie(5, 145, 103), RestDie(3, 98, 99)), 12.0)
    assert not same_rest(a, (RestDie(5, 145, 103), RestDie(4, 98, 99)), 12.0)      # a face differs
    assert not same_rest(a, (RestDie(5, 160, 100), RestDie(3, 100, 100)), 12.0)    # moved 20 px
    assert not same_rest(a[:1], a[:1], 12.0)                                       # not two dice
    assert not same_rest((RestDie(None, 1, 1), a[1]), (RestDie(None, 1, 1), a[1]), 12.0)


def test_shaker_failures_stop_the_table():
    rig = Rig(FAST, seed=4)

    def refuse(action, duration_ms, intensity):
        raise RuntimeError("command seq 9 failed: nak:BUSY after 1 transmission(s)")

    rig.driver.shaker.start = refuse
    rig.run(1, max_t=10, technician=False)
    assert rig.cycle.stopped and "shaker command failed" in rig.cycle.stop_cause
    assert rig.faults[0][0] == "shaker"
    # no "done" ever: stopped after shake_ms + shaker_done_timeout_s
    rig2 = Rig(FAST, seed=5)
    rig2.shaker_done = lambda: None
    rig2.run(2, max_t=20, technician=False)
    assert rig2.cycle.stopped and "no shaker 'done'" in rig2.cycle.stop_cause
    # a jam reported by the MCU
    rig3 = Rig(FAST, seed=6)
    rig3.shaker_done = lambda: (setattr(rig3, "shaker_running", False), rig3.driver.shaker_done("jammed"))
    rig3.run(2, max_t=20, technician=False)
    assert rig3.cycle.stopped and "ended: jammed" in rig3.cycle.stop_cause


def test_live_mode_bets_close_at_first_motion_and_dice_out():
    t = [0.0]
    events = []
    cfg = RoundsConfig(bets_open_s=2.0, min_round_s=0, results_s=0.5)
    cycle = RoundCycle("L", cfg, mode="live", clock=lambda: t[0], publish=events.append)
    lc = FakeLifecycle()
    d = RoundDriver(cycle, lifecycle=lc)
    d.on_frame(0.0, False)
    assert cycle.bets_open and cycle.accepts_wager("L-000001") == (True, None)
    t[0] = 0.7
    d.throw_started(0.7)                       # the dice leave the hand: first motion
    assert [e["event"] for e in events] == ["bets-open", "no-more-bets", "throw", "in-motion"]
    assert events[1]["cause"] == "first-motion"
    ok, why = cycle.accepts_wager("L-000001")
    assert not ok and "no more bets" in why
    obs = (DieObservation(reading(4, 10, 10), "playing"), DieObservation(reading(3, 60, 10), "playing"))
    v = d.review(Verdict("roll", None, (4, 3), (), obs), 2.0)
    assert v.kind == "roll"
    d.verdict_published({"roll_id": "L-1", "verdict": "roll", "reason": None, "dice": [4, 3]}, 2.0)
    assert cycle.phase == "results"
    lc.phase = "clearing"
    t[0] = 3.0
    d.on_frame(3.0, True)                      # dice being collected: bets stay closed
    assert cycle.phase == "results"
    lc.phase = "waiting"
    d.on_frame(3.1, False)
    assert cycle.bets_open and cycle.round.round_id == "L-000002"
    d.dice_out()                               # the "dice out" input
    t[0] = 3.2
    d.on_frame(3.2, False)
    assert [e["event"] for e in events[-2:]] == ["no-more-bets", "throw"] and events[-2]["cause"] == "dice-out"
    d.throw_started(3.3)
    assert cycle.phase == "in-motion"
    # a no roll ends a live round (it decides nothing); a throw before bets re-open: no window
    d.verdict_published({"roll_id": "L-2", "verdict": "no-roll", "reason": "die-off-table", "dice": None}, 4.0)
    assert cycle.phase == "results"
    lc.phase = "decided"
    d.throw_started(4.2)
    assert events[-3]["event"] == "no-more-bets" and events[-3]["opened"] is False
    assert cycle.round.round_id == "L-000003" and not cycle.bets_open


def test_round_lamps_show_bets_closed():
    t = [0.0]
    cycle = RoundCycle("X", FAST, mode="automated", clock=lambda: t[0], publish=lambda b: None)
    driver = NullLampDriver()
    lamps = RoundLamps(LampController(driver), cycle)
    cycle.open()
    lamps.update(GameState(), "waiting", 0.0)
    assert driver.modes["bets-closed"] == "off"
    cycle.close_bets("window")
    lamps.update(GameState(), "waiting", 0.1)
    assert driver.modes["bets-closed"] == "on"
    assert lamps.shown["bets-closed"] == "on"      # the controller's own attributes pass through


def test_bad_transitions_and_config():
    cycle = RoundCycle("X", FAST, clock=lambda: 0.0, publish=lambda b: None)
    with pytest.raises(RoundError, match="no-more-bets in phase None"):
        cycle.close_bets("window")
    with pytest.raises(ValueError, match="mode must be one of"):
        RoundCycle("X", FAST, mode="stadium", clock=lambda: 0.0, publish=lambda b: None)
    with pytest.raises(ValueError, match="bets_open_s"):
        RoundsConfig(bets_open_s=-1)
    with pytest.raises(ValueError, match="extra"):
        RoundsConfig(bets_open=3)
    assert RoundsConfig(min_round_s=72).rounds_per_hour_cap == 50.0
    with pytest.raises(ValueError, match="automated mode needs a shaker"):
        RoundDriver(cycle, lifecycle=FakeLifecycle())


def test_bus_failure_stops_the_table():
    """A round event the bus refuses: the table stops (no throw), with a fault."""
    from controller.automation import attach_rounds

    class Svc:
        table_id = "t"
        _now = 0.0
        lifecycle = FakeLifecycle()
        lamps = LampController(NullLampDriver())

        def __init__(self):
            self.faults, self.sent, self.fail = [], [], False

        def _publish(self, topic, body):
            if self.fail:
                raise OSError("bus down")
            self.sent.append(body["event"])

        def _raise_fault(self, where, msg):
            self.faults.append(where)

        def _clear_fault(self, where):
            pass

    svc = Svc()
    shaker = type("S", (), {"starts": 0, "start": lambda self, *a: setattr(self, "starts", self.starts + 1)})()
    d = attach_rounds(svc, FAST, mode="automated", shaker=shaker, prefix="P")
    d.on_frame(0.0, False)
    assert svc.sent == ["bets-open"] and svc.rounds is d
    svc.fail = True
    svc._now = 3.0
    d.on_frame(3.0, False)                  # no-more-bets refused by the bus
    d.on_frame(3.05, False)
    assert d.cycle.stopped and "rounds-bus" in svc.faults and d.cycle.stop_cause.startswith("rounds-bus")
    assert shaker.starts == 0
