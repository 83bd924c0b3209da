"""Round driver faults (controller/automation.py, controller/rounds.py): dice that never rest,
motion nobody commanded during a boxperson call, a stale boxperson decision, a bus failure
cleared by resume, ``rethrown`` listing only no rolls, the throw guard interval."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from controller.automation import RoundDriver
from controller.lifecycle import READ_VERDICT, STEP_READ, STEP_THROW, STEP_TIMEOUT, RollLifecycle, SceneDie
from controller.reasons import Reason
from controller.rounds import RoundCycle, RoundsConfig
from controller.verdict import Verdict


class Clock:
    def __init__(self):
        self.t = 0.0


def _rig(cfg, lc):
    clk, ev, faults, starts = Clock(), [], [], []

    class Shaker:
        def start(self, *a):
            starts.append(clk.t)

    cyc = RoundCycle("T1", cfg, mode="automated", clock=lambda: clk.t, publish=ev.append)
    drv = RoundDriver(cyc, lifecycle=lc, shaker=Shaker(), wall=lambda: clk.t,
                      raise_fault=lambda w, m: faults.append((round(clk.t, 3), w, m)))
    return clk, ev, faults, starts, cyc, drv


def _run(clk, drv, lc, starts, until, moving, *, read=lambda: Verdict(kind="roll", reason=None, dice=(4, 2)),
         scene=(SceneDie(4, 100, 100), SceneDie(2, 300, 200)), dt=1 / 30, done_after=1.0):
    """Frames in TableService.process's order, at most (until - t) / dt of them."""
    n = [0]
    done = set()
    for _ in range(int((until - clk.t) / dt) + 1):
        if clk.t >= until:
            break
        for s in starts:
            if s not in done and clk.t >= s + done_after:
                done.add(s)
                drv.shaker_done("completed")
        m = moving(clk.t)
        forced = drv.on_frame(clk.t, m)
        step = lc.on_frame(clk.t, m)
        if forced is not None:
            n[0] += 1
            drv.verdict_published({"roll_id": f"F{n[0]}", "verdict": forced.kind,
                                   "reason": forced.reason.value, "dice": None}, clk.t)
        if step.kind == STEP_THROW:
            drv.throw_started(clk.t)
        elif step.kind == STEP_TIMEOUT:
            n[0] += 1
            drv.verdict_published({"roll_id": f"R{n[0]}", "verdict": "no-roll", "reason": "not-at-rest",
                                   "dice": None}, clk.t)
        elif step.kind == STEP_READ and lc.on_read(scene) == READ_VERDICT:
            v = drv.review(read(), clk.t)
            n[0] += 1
            drv.verdict_published({"roll_id": f"R{n[0]}", "verdict": v.kind,
                                   "reason": v.reason.value if v.reason else None,
                                   "dice": list(v.dice) if v.dice else None}, clk.t)
        clk.t = round(clk.t + dt, 6)


CFG4 = RoundsConfig(bets_open_s=1, min_round_s=0, results_s=0.5, shake_ms=1000, no_motion_s=1.0,
                    max_rethrows=5, throw_timeout_s=20.0)


def test_no_rethrow_while_the_dice_still_settle_after_not_at_rest():
    """r4 (a): after a not-at-rest no roll (9 NYCRR 5324.52(k)(2)(vi)) the lifecycle settles;
    the re-throw waits for it: no false dice-did-not-move, the re-throw's dice decide."""
    lc = RollLifecycle(still_frames=5, rest_timeout_s=3.0)
    clk, ev, faults, starts, cyc, drv = _rig(CFG4, lc)
    # the first throw's dice move until 7.0 s (timeout at ~4.2 s), the re-throw's 1.5 s
    _run(clk, drv, lc, starts, 10.0,
         lambda t: any(s + 0.1 <= t < (7.0 if i == 0 else s + 1.5) for i, s in enumerate(starts)))
    verdicts = [(e["verdict"], e["reason"]) for e in ev if e["event"] == "verdict"]
    assert verdicts[:2] == [("no-roll", "not-at-rest"), ("roll", None)]
    assert len(starts) >= 2 and starts[1] > 7.0      # not re-thrown while the dice still moved
    assert faults == []
    res = [e for e in ev if e["event"] == "results"][0]
    assert res["dice"] == [4, 2] and res["rethrown"] == ["R1"] and res["throw"] == 2


def test_dice_that_never_rest_stop_the_table_at_the_throw_deadline():
    """r4 (b): motion that never stops: the throw's wall-clock deadline stops the table."""
    lc = RollLifecycle(still_frames=5, rest_timeout_s=3.0)
    clk, ev, faults, starts, cyc, drv = _rig(CFG4, lc)
    _run(clk, drv, lc, starts, 40.0, lambda t: bool(starts) and t >= starts[0] + 0.1)
    assert cyc.stopped and len(starts) == 1
    assert [f[1] for f in faults] == ["throw-timeout"]
    assert abs(faults[0][0] - (starts[0] + 20.0)) < 0.05
    assert cyc.stop_cause.startswith("throw-timeout: throw 1 of round T1-000001 not decided within 20.0 s")


def test_motion_nobody_commanded_during_a_boxperson_call_is_no_result():
    """r5: a boxperson call pending (round at verdict), the dice move with no shaker command:
    the reading is a no roll table-fault, the table stops (unscheduled-throw), no results."""
    lc = RollLifecycle(still_frames=3, rest_timeout_s=10)
    lc.phase = "waiting"
    cfg = RoundsConfig(bets_open_s=1, min_round_s=0, results_s=0.5)
    clk, ev, faults, starts, cyc, drv = _rig(cfg, lc)
    kind = {"k": "boxperson"}
    _run(clk, drv, lc, starts, 3.0, lambda t: 1.1 <= t < 2.0, dt=0.05, done_after=1.5,
         read=lambda: Verdict(kind=kind["k"], reason=None, dice=(3, 4) if kind["k"] == "roll" else None),
         scene=(SceneDie(3, 100, 100), SceneDie(4, 200, 100)))
    assert cyc.phase == "verdict" and [e["verdict"] for e in ev if e["event"] == "verdict"] == ["boxperson"]
    kind["k"] = "roll"
    out = []
    real_review = drv.review
    drv.review = lambda v, t: out.append(real_review(v, t)) or out[-1]
    _run(clk, drv, lc, starts, 6.0, lambda t: 4.0 <= t < 4.3, dt=0.05, done_after=1.5,
         read=lambda: Verdict(kind="roll", reason=None, dice=(3, 4)),
         scene=(SceneDie(3, 100, 100), SceneDie(4, 260, 140)))
    assert [(v.kind, v.reason) for v in out] == [("no-roll", Reason.TABLE_FAULT)]
    assert cyc.stopped and cyc.stop_cause.startswith("unscheduled-throw")
    assert [e["event"] for e in ev].count("results") == 0
    assert len(starts) == 1


def test_unscheduled_boxperson_reading_is_a_table_fault_no_roll():
    """r6: a boxperson call is never published for dice the rig did not throw (bets open)."""
    cfg = RoundsConfig(bets_open_s=5, min_round_s=0)

    class LC:
        phase = "waiting"

        def arm(self):
            pass

    clk, ev, faults, starts, cyc, drv = _rig(cfg, LC())
    drv.on_frame(0.0, False)
    drv.throw_started(0.3)
    v = drv.review(Verdict(kind="boxperson", reason=Reason.FACE_UNREADABLE, dice=None), 0.6)
    assert (v.kind, v.reason) == ("no-roll", Reason.TABLE_FAULT)


def _throw_to_a_boxperson_call(throws: list, frame) -> None:
    """Feed the automated rig of :func:`_automated_rig` empty frames until it throws (at most
    15), then a throw whose die 1 is unreadable coming to rest: the service opens a boxperson
    call on it."""
    for _ in range(15):
        if throws:
            break
        frame([])
    assert throws, "the rig threw"
    for k in range(6, 0, -1):
        frame([(0, 100 - 6 * k, 100), (4, 160 - 6 * k, 100)])     # die 1 unreadable
    for _ in range(10):
        frame([(0, 100, 100), (4, 160, 100)])


def _automated_rig(svc):
    """Round driver of an automated rig on ``svc`` (a ``TableService`` fed synthetic frames at
    30 fps): returns ``(driver, throws, frame)``, ``throws`` the frame times the shaker was
    commanded at, ``frame(dice)`` processes one frame of ``dice`` (``[(value, x, y)]``) and
    reports the shaker done 0.1 s after it was commanded."""
    from camera.base import Frame
    from controller.automation import attach_rounds
    from test_controller_service import scene_image

    throws: list[float] = []

    class Shaker:
        def start(self, *a):
            throws.append(svc._now)

    drv = attach_rounds(svc, RoundsConfig(bets_open_s=0.3, min_round_s=0, results_s=0.2, shake_ms=100),
                        mode="automated", shaker=Shaker(), wall=lambda: svc._now, prefix="T1-R")
    st = {"t": 0.0, "i": 0}

    def frame(dice):
        svc.process(Frame(scene_image(dice), st["t"], st["i"]))
        st["t"] += 1 / 30
        st["i"] += 1
        if throws and drv.shaking and st["t"] > throws[-1] + 0.1:
            drv.shaker_done("completed")

    return drv, throws, frame


def test_decision_for_a_call_of_an_abandoned_round_is_stale(tmp_path):
    """r6: a boxperson call, the table stops and a technician resumes, a new round opens: the
    decision that comes after is refused (stale-decision), never a roll settling the new round."""
    from controller.boxperson import Decision
    from controller.verdict import ThrowFacts
    from test_controller_service import make_service

    rolls: list[dict] = []

    class Pub:
        def publish(self, topic, body):
            if topic == "roll":
                rolls.append(body)
            return {"seq": 0}

        def close(self):
            pass

    svc = make_service(Path(tmp_path), Pub())

    class Obs:
        pending: list = []

        def __call__(self, readings, frame):
            return svc._observe(readings), ThrowFacts()

        def decisions(self):
            out, self.pending = self.pending, []
            return out

    svc.observe = obs = Obs()
    faults = []
    real_raise = svc._raise_fault
    svc._raise_fault = lambda w, m: (faults.append(w), real_raise(w, m))
    drv, throws, frame = _automated_rig(svc)
    svc._raise_fault = lambda w, m: (faults.append(w), real_raise(w, m))
    drv._raise = svc._raise_fault
    svc.start()
    _throw_to_a_boxperson_call(throws, frame)
    call = svc.store.verdicts(1)[-1]
    assert call["verdict"] == "boxperson" and drv.awaits_decision(call["roll_id"])
    drv.cycle.stop("technician: test")
    drv.resume("tech-7")
    for _ in range(3):
        frame([(0, 100, 100), (4, 160, 100)])
    assert drv.cycle.phase == "bets-open" and drv.cycle.round.number == 2
    assert not drv.awaits_decision(call["roll_id"])
    obs.pending.append(Decision(roll_id=call["roll_id"], reason="face-unreadable", outcome="dice", dice=(6, 1),
                                who="box-1", at_utc=datetime.now(timezone.utc).isoformat(), latency_s=9.0))
    frame([(0, 100, 100), (4, 160, 100)])
    assert [r["verdict"] for r in rolls] == ["boxperson"]
    assert "stale-decision" in faults


def test_bus_failure_is_cleared_by_resume():
    """r7: after a failed publish and a technician's resume (the bus back), the table runs."""
    clk, ev, fail = Clock(), [], {"n": 1}
    holder = []

    def publish(body):
        try:
            if body["event"] == "no-more-bets" and fail["n"]:
                fail["n"] -= 1
                raise ConnectionError("bus down")
            ev.append(body["event"])
        except ConnectionError as exc:
            holder[0].bus_failed = f"{type(exc).__name__}: {exc}"

    class LC:
        phase = "waiting"

        def arm(self):
            pass

    starts = []
    cyc = RoundCycle("T1", RoundsConfig(bets_open_s=1, min_round_s=0), mode="automated",
                     clock=lambda: clk.t, publish=publish)
    drv = RoundDriver(cyc, lifecycle=LC(), shaker=type("S", (), {"start": lambda s, *a: starts.append(clk.t)})(),
                      wall=lambda: clk.t, raise_fault=lambda w, m: None)
    holder.append(drv)
    for k in range(40):
        clk.t = k * 0.1
        if k == 20:
            drv.resume("tech-7")
        drv.on_frame(clk.t, False)
    assert ev == ["bets-open", "stopped", "resumed", "bets-open", "no-more-bets", "throw"]
    assert drv.bus_failed is None and cyc.phase == "throw" and starts == [3.0]


def test_rethrown_lists_only_no_rolls():
    """r8: results.rethrown: the no rolls re-thrown, not a boxperson call decided with dice."""
    ev = []
    c = RoundCycle("T1", RoundsConfig(), clock=lambda: 0.0, publish=ev.append)
    c.open(); c.close_bets("window"); c.throw("shaker"); c.motion(); c.at_rest()
    assert c.verdict("R1", "no-roll", "die-outside-area") == "rethrow"
    c.throw("shaker")
    assert c.verdict("R2", "boxperson", "face-unreadable") == "wait"
    assert c.verdict("R3", "roll", None, (6, 1)) == "results"
    assert ev[-1]["event"] == "results" and ev[-1]["rethrown"] == ["R1"]


def test_throw_guard_interval_delays_the_shaker():
    """r3 (option): [rounds] throw_guard_s between no-more-bets and the SHAKER command."""
    class LC:
        phase = "waiting"

        def arm(self):
            pass

    cfg = RoundsConfig(bets_open_s=1, min_round_s=0, throw_guard_s=0.25)
    clk, ev, faults, starts, cyc, drv = _rig(cfg, LC())
    for k in range(40):
        clk.t = round(k * 0.05, 6)
        drv.on_frame(clk.t, False)
    closes = [e["t"] for e in ev if e["event"] == "no-more-bets"]
    assert closes == [1.0] and starts == [1.25]
    assert [e["t"] for e in ev if e["event"] == "throw"] == [1.25]


def test_safe_state_closes_bets_and_holds_the_shaker():
    """The table in its safe state (camera frozen or dark, bus or bridge down: BETS CLOSED lit,
    every throw a no roll table-fault): the open round's bets close (settlement refuses wagers
    as the lamp says), no SHAKER is sent and no round opens until the safe state clears; then
    the held throw is made (no re-throws burnt on table-fault no rolls, no technician stop)."""
    from controller.automation import attach_rounds
    from controller.lamps import LampController, NullLampDriver

    class LC:
        phase = "waiting"

        def arm(self):
            pass

    class Svc:
        table_id = "t"
        _now = 0.0
        lifecycle = LC()
        lamps = LampController(NullLampDriver())
        safe_state = False

        def __init__(self):
            self.sent, self.faults = [], []

        def _publish(self, topic, body):
            self.sent.append(body)

        def _raise_fault(self, where, msg):
            self.faults.append(where)

        def _clear_fault(self, where):
            pass

    svc, starts = Svc(), []
    shaker = type("S", (), {"start": lambda self, *a: starts.append(svc._now)})()
    cfg = RoundsConfig(bets_open_s=2, min_round_s=0, results_s=0.5)
    d = attach_rounds(svc, cfg, mode="automated", shaker=shaker, wall=lambda: svc._now, prefix="P")
    for k in range(100):                       # 5 s of frames: safe from 0.5 s to 4.0 s
        svc._now = round(k * 0.05, 6)
        svc.safe_state = 0.5 <= svc._now < 4.0
        d.on_frame(svc._now, False)
        if svc.safe_state:
            assert starts == [] and not d.cycle.bets_open
    events = [(b["event"], b.get("cause")) for b in svc.sent]
    assert events[:2] == [("bets-open", None), ("no-more-bets", "safe-state")]
    assert [b["t"] for b in svc.sent[:2]] == [0.0, 0.5]
    assert starts == [4.0] and events[2:] == [("throw", None)]
    assert not d.cycle.stopped and svc.faults == []
    # in the safe state from the start (camera-no-frame): the first round opens once it clears
    svc2, starts2 = Svc(), []
    shaker2 = type("S", (), {"start": lambda self, *a: starts2.append(svc2._now)})()
    d2 = attach_rounds(svc2, cfg, mode="automated", shaker=shaker2, wall=lambda: svc2._now, prefix="Q")
    for k in range(20):
        svc2._now = round(k * 0.05, 6)
        svc2.safe_state = svc2._now < 0.5
        d2.on_frame(svc2._now, False)
    assert [(b["event"], b["t"]) for b in svc2.sent] == [("bets-open", 0.5)] and d2.cycle.bets_open


def test_no_round_opens_or_throws_while_a_verdict_waits_unpublished(tmp_path):
    """The bus refuses round 1's roll (kept in the outbox, retried about every second) but takes
    the round events: round 2 must not open nor throw before that roll is on the bus, else
    settlement, applying in bus order, settles round 2's wagers with round 1's dice."""
    from test_controller_service import make_service

    sent, fail = [], {"roll": True}

    class Pub:
        def publish(self, topic, body):
            if topic == "roll" and fail["roll"]:
                raise OSError("database is locked")
            sent.append((topic, body))
            return {"seq": len(sent)}

        def close(self):
            pass

    svc = make_service(Path(tmp_path), Pub())
    drv, throws, frame = _automated_rig(svc)
    svc.start()
    for _ in range(15):
        if throws:
            break
        frame([])
    for k in range(6, 0, -1):
        frame([(3, 100 - 6 * k, 100), (4, 160 - 6 * k, 100)])
    for _ in range(40):                      # at rest, results, then results_s and more
        frame([(3, 100, 100), (4, 160, 100)])
    assert drv.rounds_done == 1 and svc._outbox_blocked
    assert drv.cycle.phase == "results" and len(throws) == 1    # held: no round 2, no shaker
    fail["roll"] = False
    svc._last_retry = -1e9                   # the outbox's next retry is due
    for _ in range(3):
        frame([(3, 100, 100), (4, 160, 100)])
    order = [(t, b.get("event") or b.get("verdict"), b.get("round_id") or b.get("roll_id")) for t, b in sent
             if t in ("roll", "round")]
    i_roll = [i for i, o in enumerate(order) if o[0] == "roll"]
    i_open2 = [i for i, o in enumerate(order) if o[1] == "bets-open" and o[2] == "T1-R-000002"]
    assert len(i_roll) == 1 and len(i_open2) == 1 and i_roll[0] < i_open2[0], order
