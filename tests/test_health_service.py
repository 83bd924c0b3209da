"""Health wired into the running service: a frozen or lost camera, a firmware bridge down or a
far-wall sensor down put the table in its safe state within 1 s (BETS CLOSED and FAULT lamps,
an "alarm" on the bus, every throw decided meanwhile a no roll "table-fault"), and it reopens
by itself. Real threads, a real bus on loopback, gpiozero MockFactory pins, the simulated MCU on
a pseudo-terminal. Frames are synthetic: bright squares whose grey level is the face value,
read by a stand-in reader (these tests check the service, not the dice reader).
"""
from __future__ import annotations

import threading
import time

import cv2
import numpy as np
import pytest

from camera.base import Frame
from controller.config import TableConfig
from controller.lifecycle import IN_MOTION
from controller.service_cli import build_service
from vision.types import DieReading

FPS = 30.0
PINS = {"point-4": 5, "point-5": 6, "point-6": 13, "point-8": 19, "point-9": 26, "point-10": 21,
        "puck-on": 20, "no-roll": 16, "call-boxperson": 12, "bets-closed": 25, "fault": 24}


def scene_image(dice, rng, w=320, h=240):
    """An empty table with sensor noise (so a live camera's frames differ) and square "dice"."""
    img = np.full((h, w, 3), 60, np.uint8)
    img += rng.integers(0, 3, img.shape, dtype=np.uint8)
    for value, x, y in dice:
        img[y - 8:y + 8, x - 8:x + 8] = 150 + 15 * value
    return img


def fake_reader(image):
    grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    n, labels, st, cents = cv2.connectedComponentsWithStats((grey > 140).astype(np.uint8))
    out = []
    for i in range(1, n):
        x, y, w, h, _ = st[i]
        value = int(round((float(grey[labels == i].mean()) - 150) / 15))
        out.append(DieReading(value=value, bbox=(x, y, x + w, y + h), centre=(float(cents[i][0]), float(cents[i][1])),
                              confidence=0.99, flat=True, side_px=float(w)))
    return out


class LiveSource:
    """A camera in real time (30 fps) whose frame clock starts at 0 (like the simulator), that
    a test can freeze (the same frame again and again), stall (no frame at all) or make throw.

    ``mode``: ``"ok"``, ``"frozen"``, ``"stalled"``, ``"garbage"`` (unusable frames)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.rng = np.random.default_rng(7)
        self._closed = False
        self._script: list[list] = []
        self._scene: list = []
        self._lock = threading.Lock()

    def throw(self, dice) -> None:
        """Dice roll in from the left (6 motion frames), then lie still; the table is cleared
        first (10 empty frames)."""
        with self._lock:
            self._script += [[]] * 10 + [[(v, x - 8 * k, y) for v, x, y in dice] for k in range(6, 0, -1)] + [list(dice)]

    def frames(self):
        t, i, last = 0.0, 0, None
        while not self._closed:
            time.sleep(1 / FPS)
            if self.mode == "stalled":
                continue
            t += 1 / FPS
            i += 1
            if self.mode == "frozen" and last is not None:
                yield Frame(last, t, i, source="live")
                continue
            if self.mode == "garbage":      # frames no reader can use: float pixels
                yield Frame(self.rng.random((48, 64, 3), dtype=np.float32), t, i, source="live")
                continue
            with self._lock:
                if self._script:
                    self._scene = self._script.pop(0)
            last = scene_image(self._scene, self.rng)
            yield Frame(last, t, i, source="live")

    def close(self) -> None:
        self._closed = True


class Running:
    """``service.run(source)`` in a thread, stopped by :meth:`stop`. With ``open_bus`` the bus
    publisher is made in that thread (its journal belongs to the thread that publishes) and
    closed there with the service."""

    def __init__(self, service, source, open_bus=None) -> None:
        self.service, self.source, self._open_bus = service, source, open_bus
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()

    def _main(self) -> None:
        pub = None
        try:
            if self._open_bus is not None:
                pub = self.service.publisher = self._open_bus()
            self.service.run(self.source, should_stop=self._stop.is_set)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            if pub is not None:
                self.service.close()
                pub.close()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive() and self.error is None, self.error


class ListPublisher:
    def __init__(self):
        self.sent: list[tuple[str, dict]] = []
        self.lock = threading.Lock()

    def publish(self, topic, body):
        with self.lock:
            self.sent.append((topic, body))
            return {"seq": len(self.sent), "topic": topic, "body": body}

    def close(self):
        pass

    def bodies(self, topic):
        with self.lock:
            return [b for t, b in self.sent if t == topic]


def wait_for(pred, timeout_s=5.0, step_s=0.01):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(step_s)
    return pred()


def table_config(tmp_path, **sections) -> TableConfig:
    data = {"table": {"id": "t-health"}, "vision": {"still_frames": 5, "rest_timeout_s": 3.0},
            "lamps": {"driver": "none"}, "state": {"db": str(tmp_path / "state.sqlite")},
            "bus": {"journal_path": str(tmp_path / "bus" / "journal.sqlite")},
            "boxperson": {"endpoint": ""}}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return TableConfig.model_validate(data)


def entered_safe_after(service, t0: float, timeout_s: float = 3.0) -> float:
    """Seconds from ``t0`` (monotonic) to the safe state the service entered."""
    assert wait_for(lambda: service.safe_state, timeout_s), "no safe state"
    return service.health_status.since - t0


def test_frozen_and_lost_camera_safe_state_alarm_on_the_bus_and_recovery(tmp_path):
    from gpiozero.pins.mock import MockFactory

    from bus.config import BusConfig
    from bus.publisher import RollPublisher
    from bus.subscriber import RollSubscriber
    from controller.lamps import GpioLampDriver

    bus_cfg = BusConfig.local(tmp_path / "bus", transport="tcp", table_id="t-health")
    cfg = table_config(tmp_path, bus={"journal_path": str(bus_cfg.journal_path)})
    factory = MockFactory()
    source = LiveSource()
    service, _ = build_service(cfg, source, publisher=ListPublisher(), lamp_driver=GpioLampDriver(PINS, pin_factory=factory),
                               reader=fake_reader, health=True)

    def lit():
        return {n for n, p in PINS.items() if factory.pin(p).state}

    alarms: list[dict] = []
    done = threading.Event()

    def listen():
        sub = RollSubscriber(bus_cfg, tmp_path / "sub.sqlite")
        try:
            while not done.is_set():
                env = sub.receive(timeout_s=0.1)
                if env is not None:
                    if env["topic"] == "alarm":
                        alarms.append(env["body"])
                    sub.ack(env["seq"])
        finally:
            sub.close()

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    run = Running(service, source, open_bus=lambda: RollPublisher(bus_cfg, "t-health"))
    try:
        assert wait_for(lambda: service.health_status is not None and service.stats.frames > 10)
        assert not service.safe_state and "fault" not in lit()
        timings = {}
        for mode, reason in (("frozen", "camera-frozen"), ("stalled", "camera-lost")):
            t0 = time.monotonic()
            source.mode = mode
            timings[mode] = entered_safe_after(service, t0)
            assert service.health_status.reasons == (reason,)
            assert wait_for(lambda: {"bets-closed", "fault"} <= lit(), 1.0), lit()
            assert wait_for(lambda: any(a["code"] == "safe-state" and a["reasons"] == [reason] for a in alarms))
            t1 = time.monotonic()
            source.mode = "ok"  # the fault clears: the table reopens by itself
            assert wait_for(lambda: not service.safe_state, 3.0)
            timings[mode + "-recovered"] = time.monotonic() - t1
            assert wait_for(lambda: not ({"bets-closed", "fault"} & lit()), 1.0), lit()
            assert wait_for(lambda: any(a["code"] == "safe-state-cleared" and reason in a["cleared"] for a in alarms))
        print("seconds to the safe state / back:", {k: round(v, 3) for k, v in timings.items()})
        assert timings["frozen"] < 1.0 and timings["stalled"] < 1.0
    finally:
        run.stop()  # closes the service (lamps off) and the publisher
        done.set()
        listener.join(5)
    assert lit() == set()  # close: every lamp off
    factory.close()


def test_a_camera_sending_only_unusable_frames_is_lost_not_healthy(tmp_path):
    """A camera that keeps sending frames no reader can use (float pixels here): before, every
    one told the health monitor the camera lived (its digest changes), so the table stayed open
    with a frame-fault alarm now and then. Only usable frames count: after frame_timeout_s the
    camera is lost (safe state), and it clears when good frames come back."""
    cfg = table_config(tmp_path)
    source = LiveSource()
    service, _ = build_service(cfg, source, publisher=ListPublisher(), lamp_driver=None,
                               reader=fake_reader, health=True)
    run = Running(service, source)
    try:
        assert wait_for(lambda: service.health_status is not None and service.stats.frames > 10)
        assert not service.safe_state
        source.mode = "garbage"
        assert entered_safe_after(service, time.monotonic()) < 1.5
        assert service.health_status.reasons == ("camera-lost",)
        source.mode = "ok"
        assert wait_for(lambda: not service.safe_state, 3.0)
    finally:
        run.stop()


def test_bridge_down_and_wall_sensor_down_refuse_rolls_with_table_fault(tmp_path):
    from firmware_bridge.mcu_sim import SimulatedMcu

    with SimulatedMcu() as mcu:
        cfg = table_config(tmp_path, lamps={"driver": "firmware"}, firmware={"port": str(mcu.path)},
                           rules={"wall_sensor": True})
        assert cfg.firmware.require_wall_sensor
        pub = ListPublisher()
        source = LiveSource()
        service, _ = build_service(cfg, source, publisher=pub, reader=fake_reader, health=True)
        run = Running(service, source)

        def throw(dice, strikes=0):
            n = len(pub.bodies("roll"))
            source.throw(dice)
            if strikes:  # the far-wall sensor, while the dice fly
                assert wait_for(lambda: service.lifecycle.phase == IN_MOTION, 3.0)
                for _ in range(strikes):
                    mcu.strike_far_wall()
                    time.sleep(0.01)
            assert wait_for(lambda: len(pub.bodies("roll")) > n, 5.0), "no verdict"
            return pub.bodies("roll")[-1]

        try:
            assert wait_for(lambda: service.health_status is not None and not service.safe_state, 5.0)
            # the far-wall check from the sensor's strikes between the throw's start and its rest
            # (9 NYCRR 5324.52(k)(2)(ii)): none -> no roll; struck -> a roll
            body = throw([(3, 100, 100), (4, 200, 120)])
            assert (body["verdict"], body["reason"]) == ("no-roll", "far-wall-missed")
            body = throw([(3, 100, 100), (4, 200, 120)], strikes=2)
            assert (body["verdict"], body["dice"], body["faults"]) == ("roll", [3, 4], [])
            assert wait_for(lambda: mcu.lamp("bets-closed")[0] == "off", 2.0)

            # the cable pulled: safe state, alarm, and the throw is refused
            t0 = time.monotonic()
            mcu.disconnect(reconnect_after_s=None)
            bridge_s = entered_safe_after(service, t0)
            assert "bridge-down" in service.health_status.reasons
            assert service.lamps.shown["fault"] == "on" and service.lamps.shown["bets-closed"] == "on"
            assert wait_for(lambda: [a for a in pub.bodies("alarm") if a.get("code") == "safe-state"], 2.0)
            alarm = [a for a in pub.bodies("alarm") if a.get("code") == "safe-state"][-1]
            assert "bridge-down" in alarm["reasons"] and alarm["safe_state"] is True
            body = throw([(5, 100, 100), (5, 200, 120)], strikes=0)
            assert (body["verdict"], body["reason"], body["dice"]) == ("no-roll", "table-fault", None)
            assert "bridge-down" in body["faults"] and "far-wall-missed" in body["irregularities"]
            assert body["citation"].startswith("9 NYCRR 5324.52(k)") and "controller rule" in body["citation"]
            assert service.store.state.point is None  # the game did not move

            # plugged back: the table reopens by itself and takes the next roll
            mcu.reconnect()
            assert wait_for(lambda: not service.safe_state, 5.0)
            assert wait_for(lambda: pub.bodies("alarm")[-1]["code"] == "safe-state-cleared", 2.0)
            assert wait_for(lambda: mcu.lamp("fault")[0] == "off", 3.0)
            body = throw([(2, 100, 100), (2, 200, 120)], strikes=2)
            assert (body["verdict"], body["dice"]) == ("roll", [2, 2]) and service.store.state.point == 4

            # the far-wall sensor fails while the link stays up: required, so no roll either
            t0 = time.monotonic()
            mcu.set_wall_sensor_fault(True)
            sensor_s = entered_safe_after(service, t0)
            assert service.health_status.reasons == ("bridge-down",)
            assert "far-wall sensor" in service.health_status.details["bridge-down"]
            body = throw([(6, 100, 100), (5, 200, 120)], strikes=2)
            assert (body["verdict"], body["reason"]) == ("no-roll", "table-fault")
            mcu.set_wall_sensor_fault(False)
            assert wait_for(lambda: not service.safe_state, 5.0)
            print(f"seconds to the safe state: bridge unplugged {bridge_s:.3f}, wall sensor fault {sensor_s:.3f}")
            assert bridge_s < 1.0 and sensor_s < 1.0
        finally:
            run.stop()
            service.close()


def test_bus_down_is_a_safe_state_and_the_held_alarm_goes_out_when_it_is_back(tmp_path):
    class FlakyPublisher(ListPublisher):
        down = False

        def publish(self, topic, body):
            if self.down:
                raise OSError("journal: disk I/O error")
            return super().publish(topic, body)

    pub = FlakyPublisher()
    source = LiveSource()
    service, _ = build_service(table_config(tmp_path), source, publisher=pub, reader=fake_reader, health=True)
    run = Running(service, source)
    try:
        assert wait_for(lambda: service.health_status is not None and service.stats.frames > 5)
        pub.down = True
        source.throw([(3, 100, 100), (3, 200, 120)])  # the verdict cannot be published: bus down
        assert wait_for(lambda: service.store.unpublished(), 5.0)  # committed, kept in the outbox
        held = service.store.unpublished()[0]
        assert wait_for(lambda: service.safe_state, 5.0)
        assert "bus-down" in service.health_status.reasons
        assert service.lamps.shown["fault"] == "on"
        pub.down = False  # back: the verdict and the held alarm go out, the table reopens
        assert wait_for(lambda: not service.safe_state, 5.0)
        assert wait_for(lambda: [a["code"] for a in pub.bodies("alarm")][-2:] == ["safe-state", "safe-state-cleared"], 2.0)
        assert wait_for(lambda: pub.bodies("roll"), 2.0)
        assert [b["roll_id"] for b in pub.bodies("roll")] == [held["roll_id"]] and held["dice"] == [3, 3]
        assert service.store.unpublished() == []
    finally:
        run.stop()
        service.close()


def test_metrics_follow_frames_verdicts_and_safe_state(tmp_path):
    from controller.metrics import TableMetrics

    metrics = TableMetrics()
    pub = ListPublisher()
    source = LiveSource()
    service, _ = build_service(table_config(tmp_path), source, publisher=pub, reader=fake_reader, metrics=metrics,
                               health=True)
    run = Running(service, source)
    try:
        source.throw([(1, 100, 100), (1, 200, 120)])
        assert wait_for(lambda: pub.bodies("roll"), 5.0)
        source.mode = "stalled"
        assert wait_for(lambda: metrics.value("craps_table_safe_state") == 1.0, 3.0)
        assert metrics.value("craps_table_faults_total", {"reason": "camera-lost"}) == 1.0
        assert metrics.value("craps_table_verdicts_total", {"verdict": "roll", "reason": "none"}) == 1.0
        assert metrics.value("craps_table_frames_total") == service.stats.frames > 10
        assert metrics.value("craps_table_last_sequence") == len(pub.sent)
        source.mode = "ok"
        assert wait_for(lambda: metrics.value("craps_table_safe_state") == 0.0, 3.0)
    finally:
        run.stop()
        service.close()


def test_gpio_lamps_with_the_bridge_for_inputs_show_the_fault_when_the_link_is_down(tmp_path):
    """[firmware] configured, lamps on GPIO: the link is opened for its inputs, and when it goes
    down the GPIO lamps show the fault and bets closed (issue 6: the lamps show a fault)."""
    from gpiozero.pins.mock import MockFactory

    from controller.lamps import GpioLampDriver
    from firmware_bridge.mcu_sim import SimulatedMcu

    factory = MockFactory()
    with SimulatedMcu() as mcu:
        cfg = table_config(tmp_path, firmware={"port": str(mcu.path)})
        source = LiveSource()
        service, _ = build_service(cfg, source, publisher=ListPublisher(), reader=fake_reader, health=True,
                                   lamp_driver=GpioLampDriver(PINS, pin_factory=factory))
        run = Running(service, source)
        try:
            assert wait_for(lambda: service.health_status is not None and not service.safe_state, 5.0)
            mcu.disconnect(reconnect_after_s=None)
            assert wait_for(lambda: factory.pin(PINS["fault"]).state and factory.pin(PINS["bets-closed"]).state, 2.0)
            mcu.reconnect()
            assert wait_for(lambda: not factory.pin(PINS["fault"]).state, 5.0)
        finally:
            run.stop()
            service.close()
    factory.close()


def test_source_error_publishes_the_safe_state_then_stops(tmp_path):
    """A camera that fails (FrameError) puts the table in its safe state with "camera-error" and
    the service stops (exit status 1 in `craps-table run`, systemd restarts it)."""
    from camera.base import FrameError

    class Failing(LiveSource):
        def frames(self):
            for k, frame in enumerate(super().frames()):
                if k == 10:
                    raise FrameError("usb:0: read failed (device unplugged)")
                yield frame

    pub = ListPublisher()
    source = Failing()
    service, _ = build_service(table_config(tmp_path), source, publisher=pub, reader=fake_reader, health=True)
    try:
        with pytest.raises(FrameError, match="unplugged"):
            service.run(source)
        alarms = pub.bodies("alarm")
        assert [a["code"] for a in alarms] == ["safe-state", "source-fault"]
        assert alarms[0]["reasons"] == ["camera-error"] and "unplugged" in alarms[0]["details"]["camera-error"]
        assert service.lamps.shown["fault"] == "on" and service.lamps.shown["bets-closed"] == "on"
    finally:
        service.close()


def test_the_safe_state_alarm_is_published_before_the_lamps_change(tmp_path):
    """Entering the safe state publishes the ``safe-state`` alarm first and only then lights the
    fault lamp: a lamp driver (a slow MCU) can never delay the alarm."""
    from list_publisher import alarm_order_lamps

    pub = ListPublisher()
    driver = alarm_order_lamps(lambda: pub.bodies("alarm"))
    service, _ = build_service(table_config(tmp_path, health={"frame_timeout_s": 0.2}), None, publisher=pub,
                               lamp_driver=driver, reader=fake_reader, health=True)
    try:
        service.start()
        time.sleep(0.3)                                   # no frame for longer than frame_timeout_s
        status = service.tick()
        assert status is not None and status.safe_state and status.reasons == ("camera-no-frame",)
        lit = [c for c in driver.calls if c[:2] == ("fault", "on")]
        assert lit == [("fault", "on", ["safe-state"])], driver.calls
    finally:
        service.close()


def test_heartbeats_keep_the_bridge_and_bus_timeouts_from_closing_an_idle_table(tmp_path):
    """[health] bridge_timeout_s and bus_timeout_s: an idle table (no link change, no roll) on a
    real bus (the RollPublisher build_service makes, with its heartbeats) and the simulated MCU
    (its heartbeats) stays open past both timeouts; once the bus's heartbeats stop, the table
    closes with bus-silent."""
    from bus.config import BusConfig
    from firmware_bridge.mcu_sim import SimulatedMcu

    bus = BusConfig.local(tmp_path / "roll-bus", transport="tcp", table_id="t-health")  # keys made
    got: dict = {}
    stop = threading.Event()
    source = LiveSource()

    def main(cfg) -> None:  # the journal belongs to the thread that publishes: build it there
        service = pub = None
        try:
            service, pub = build_service(cfg, source, reader=fake_reader, health=True)
            got["service"], got["pub"] = service, pub
            service.run(source, should_stop=stop.is_set)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            got["error"] = exc
        finally:
            if service is not None:
                service.close()
            if pub is not None:
                pub.close()

    with SimulatedMcu() as mcu:
        cfg = table_config(tmp_path, lamps={"driver": "firmware"}, firmware={"port": str(mcu.path)},
                           bus=bus.model_dump(exclude={"table_id"}),
                           health={"bridge_timeout_s": 0.6, "bus_timeout_s": 0.6})
        thread = threading.Thread(target=main, args=(cfg,), daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: "service" in got or "error" in got, 10.0) and "error" not in got, got
            service, pub = got["service"], got["pub"]
            assert wait_for(lambda: service.health_status is not None and not service.safe_state, 5.0)
            opened = time.monotonic()
            while time.monotonic() - opened < 2.0:  # > 3 x both timeouts, nothing published
                assert not service.safe_state, service.health_status.reasons
                time.sleep(0.05)
            assert pub.stats["heartbeats"] >= 3 and pub.stats["published"] == 1  # the start message
            pub._auto_hb = False  # the bus's heartbeats stop: bus-silent
            assert wait_for(lambda: "bus-silent" in service.health_status.reasons, 3.0)
            assert "bridge-silent" not in service.health_status.reasons  # the MCU still talks
        finally:
            stop.set()
            thread.join(10)
    assert not thread.is_alive() and "error" not in got, got.get("error")
