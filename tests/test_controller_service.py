"""The table service end to end: frames -> verdicts -> SQLite -> bus (real sockets on loopback).

Synthetic frames carry "dice" as bright squares whose grey level encodes the face value, read
by a stand-in reader, so these tests check the service and not the dice reader. The replay test
on shared photos uses the real reader.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from camera.base import Frame
from controller.config import TableConfig
from controller.lamps import NullLampDriver
from controller.reasons import Reason
from controller.service_cli import build_service
from controller.verdict import decide
from vision.types import DieReading
from tableconfig import write_test_config
from list_publisher import ListPublisher, alarm_order_lamps

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRAY = SHARED / "data" / "dice-photos" / "topdown-tray"


def scene_image(dice, w=320, h=240):
    img = np.full((h, w, 3), 60, np.uint8)
    for value, x, y in dice:
        img[y - 8:y + 8, x - 8:x + 8] = 150 + 15 * value
    return img


def fake_reader(image):
    grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    n, labels, st, cents = cv2.connectedComponentsWithStats((grey > 140).astype(np.uint8))
    out = []
    for i in range(1, n):
        x, y, w, h, area = st[i]
        level = float(grey[labels == i].mean())
        value = int(round((level - 150) / 15))
        unsure = value == 0  # grey level 150: "cannot tell"
        out.append(DieReading(value=None if unsure else value, bbox=(x, y, x + w, y + h),
                              centre=(float(cents[i][0]), float(cents[i][1])),
                              confidence=0.5 if unsure else 0.99, flat=True, side_px=float(w)))
    return out


def throw_frames(dice, t0, fps=30.0, idle=12, motion=6, rest=14, start_index=0):
    """Frames of one throw: empty table, dice moving in, dice at rest."""
    frames, t, i = [], t0, start_index
    for _ in range(idle):
        frames.append(Frame(scene_image([]), t, i)); t += 1 / fps; i += 1
    for k in range(motion, 0, -1):
        frames.append(Frame(scene_image([(v, x - 6 * k, y) for v, x, y in dice]), t, i)); t += 1 / fps; i += 1
    for _ in range(rest):
        frames.append(Frame(scene_image(dice), t, i)); t += 1 / fps; i += 1
    return frames, t, i


def make_service(tmp_path, publisher, **vision):
    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = TableConfig.model_validate({
        "table": {"id": "t-test"},
        # rest after 5 still frames whatever their span (still_s 0): these synthetic throws
        # count frames; test_controller_lifecycle covers still_s
        "vision": {"still_frames": 5, "still_s": 0.0, "rest_timeout_s": 2.0, **vision},
        "lamps": {"driver": "none"},
        "state": {"db": str(tmp_path / "state.sqlite")},
        "bus": {"journal_path": str(tmp_path / "bus" / "journal.sqlite")},
    })
    service, _ = build_service(cfg, source=None, publisher=publisher, lamp_driver=NullLampDriver(),
                               reader=fake_reader)
    return service


def run_throws(service, throws, t0=0.0):
    t, i = t0, 0
    bodies = []
    service.start()
    for dice in throws:
        frames, t, i = throw_frames(dice, t, start_index=i)
        for f in frames:
            b = service.process(f)
            if b is not None:
                bodies.append(b)
    return bodies, t


def test_throws_become_rolls_and_game_state(tmp_path):
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    throws = [[(3, 100, 100), (4, 200, 120)],  # 7 natural
              [(2, 100, 100), (2, 200, 120)],  # point 4
              [(6, 100, 100), (5, 200, 120)],  # no decision
              [(3, 100, 100), (1, 200, 120)],  # point made
              [(5, 100, 100), (5, 200, 120)],  # point 10
              [(1, 100, 100), (6, 200, 120)]]  # seven-out
    bodies, _ = run_throws(service, throws)
    assert [b["dice"] for b in bodies] == [[3, 4], [2, 2], [6, 5], [3, 1], [5, 5], [1, 6]]
    assert [b["game"]["outcome"] for b in bodies] == ["natural", "point-set", "no-decision", "point-made",
                                                       "point-set", "seven-out"]
    assert [b["game"]["point"] for b in bodies] == [None, 4, 4, None, 10, None]
    assert [b["game"]["puck"] for b in bodies] == ["OFF", "ON", "ON", "OFF", "ON", "OFF"]
    assert [b["game"]["come_out"] for b in bodies] == [True, True, False, False, True, False]
    assert [b["game"]["shooter_roll"] for b in bodies] == [1, 2, 3, 4, 5, 6]
    assert bodies[-1]["game"]["shooter"] == 1 and bodies[-1]["game"]["next_shooter"] == 2
    assert [b["roll_id"] for b in bodies][:2] == ["t-test-00000001", "t-test-00000002"]
    assert pub.sent[0][0] == "state" and pub.sent[0][1]["event"] == "start"
    # the deciding frame's hash is of the frame at rest
    expected = hashlib.sha256(scene_image([(1, 100, 100), (6, 200, 120)]).tobytes()).hexdigest()
    assert bodies[-1]["frame_sha256"] == expected
    assert service.store.state.shooter == 2 and service.store.state.point is None
    service.close()


@pytest.mark.parametrize("dice, verdict, reason, paragraph", [
    # (k)(1) "whenever either die leaves ... the table"
    ([(3, 100, 100)], "no-roll", "die-off-table", "9 NYCRR 5324.52(k)(1)"),
    # (k)(2)(v)-(vi): more than the two selected dice (docs/messages.md adds (g), (a)(5))
    ([(3, 100, 100), (4, 200, 120), (6, 250, 60)], "boxperson", "extra-dice", "9 NYCRR 5324.52(k)(2)(v)-(vi)"),
    # (h)(1)(ii): which face is uppermost is in dispute
    ([(3, 100, 100), (0, 200, 120)], "boxperson", "face-unreadable", "9 NYCRR 5324.52(h)(1)(ii)"),
])
def test_irregular_throws_publish_reason(tmp_path, dice, verdict, reason, paragraph):
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    bodies, _ = run_throws(service, [dice])
    assert len(bodies) == 1
    b = bodies[0]
    assert (b["verdict"], b["reason"], b["dice"], b["total"]) == (verdict, reason, None, None)
    assert b["citation"] == paragraph or b["citation"].startswith(paragraph + ", "), b["citation"]
    assert b["game"]["outcome"] is None and b["game"]["shooter_roll"] == 0
    lamps = service.lamps.shown
    assert lamps["no-roll" if verdict == "no-roll" else "call-boxperson"] == "flash"
    service.close()


def test_die_outside_table_area(tmp_path):
    pub = ListPublisher()
    service = make_service(tmp_path, pub, table_area=[[0, 0], [250, 0], [250, 240], [0, 240]], read_crop=False)
    bodies, _ = run_throws(service, [[(3, 100, 100), (4, 290, 120)]])
    assert bodies[0]["verdict"] == "no-roll" and bodies[0]["reason"] == "die-outside-area"
    assert [r["zone"] for r in bodies[0]["readings"]] == ["playing", "outside"]
    service.close()
    # reading only the table area, the die beyond it is not seen at all
    service = make_service(tmp_path / "crop", pub, table_area=[[0, 0], [250, 0], [250, 240], [0, 240]],
                           read_crop=True)
    bodies, _ = run_throws(service, [[(3, 100, 100), (4, 290, 120)]])
    assert bodies[0]["verdict"] == "no-roll" and bodies[0]["reason"] == "die-off-table"
    service.close()


def test_throw_not_at_rest_in_time_is_a_no_roll(tmp_path):
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.start()
    frames, t, i = throw_frames([], 0.0, idle=10, motion=0, rest=0)
    rng = np.random.default_rng(1)
    for f in frames:
        service.process(f)
    bodies = []
    for k in range(100):  # 3.3 s of tumbling dice at 30 fps; timeout is 2 s
        x = int(rng.integers(30, 290))
        b = service.process(Frame(scene_image([(2, x, 100), (5, 320 - x, 150)]), t + k / 30, i + k))
        if b:
            bodies.append(b)
    assert len(bodies) == 1 and bodies[0]["verdict"] == "no-roll" and bodies[0]["reason"] == "not-at-rest"
    assert service.lamps.shown["no-roll"] == "flash"
    # the dice then settle: no second verdict for the same throw
    for k in range(20):
        assert service.process(Frame(scene_image([(2, 50, 100), (5, 250, 150)]), t + 4 + k / 30, i + 200 + k)) is None
    service.close()


def test_restart_resumes_exactly_and_republishes(tmp_path):
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    bodies, t = run_throws(service, [[(2, 100, 100), (3, 200, 120)], [(6, 100, 100), (3, 200, 120)]])
    assert bodies[-1]["game"]["point"] == 5
    # simulate a crash between the commit and the publish of a third verdict
    state = service.store.state
    service.store.commit(state, {**bodies[-1], "roll_id": "t-test-00000003", "verdict": "no-roll"})
    service.close()
    pub2 = ListPublisher()
    again = make_service(tmp_path, pub2)
    assert again.store.state.point == 5 and again.store.state.shooter_roll == 2
    bodies2, _ = run_throws(again, [[(4, 100, 100), (1, 200, 120)]], t0=t + 1)
    assert pub2.sent[0] == ("roll", pub2.sent[0][1]) and pub2.sent[0][1]["roll_id"] == "t-test-00000003"
    assert pub2.sent[1][1]["event"] == "start" and pub2.sent[1][1]["game"]["point"] == 5
    assert bodies2[0]["roll_id"] == "t-test-00000004"
    assert bodies2[0]["game"]["outcome"] == "point-made" and bodies2[0]["game"]["shooter_roll"] == 3
    assert again.store.unpublished() == []
    again.close()


def test_voluntary_relinquish(tmp_path):
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    run_throws(service, [[(4, 100, 100), (4, 200, 120)]])
    state = service.relinquish()
    assert state.shooter == 2 and state.point == 8 and state.shooter_roll == 0
    assert pub.sent[-1][0] == "state" and pub.sent[-1][1]["event"] == "new-shooter"
    assert pub.sent[-1][1]["cause"] == "voluntary"
    service.close()


def test_decide_only_rolls_are_published(tmp_path):
    """9 NYCRR 5324.52(i)(2): the boxperson's start of the rolls made only to decide come /
    don't come wagers is published as a state message, and the next 6 sets no point."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    bodies, t = run_throws(service, [[(4, 100, 100), (4, 200, 120)]])          # point 8
    with pytest.raises(ValueError, match="point is 8"):
        service.decide_only(True)
    assert pub.sent[-1][0] == "roll"                                             # nothing published
    more, i = [], 10_000

    def throw(dice, t):
        nonlocal i
        frames, t, i = throw_frames(dice, t, start_index=i)
        more.extend(b for b in map(service.process, frames) if b is not None)
        return t

    service.post("decide-only", on=True, who="ann")                              # from the command socket
    t = throw([(5, 100, 100), (3, 200, 120)], t)                                 # applied first: refused
    alarms = [b for topic, b in pub.sent if topic == "alarm"]
    assert alarms and alarms[-1]["code"] == "command-refused" and "point is 8" in alarms[-1]["message"]
    state = service.decide_only(True)
    assert state.decide_only and state.point is None
    assert pub.sent[-1][0] == "state" and pub.sent[-1][1]["event"] == "decide-only"
    assert pub.sent[-1][1]["on"] is True and pub.sent[-1][1]["game"]["decide_only"] is True
    throw([(4, 100, 100), (2, 200, 120)], t)                                     # 6: no point
    assert [(b["game"]["outcome"], b["game"]["point"]) for b in more] == [("point-made", None), ("decide-only", None)]
    service.close()


def _real_bus(tmp_path):
    from bus.config import BusConfig

    return BusConfig.local(tmp_path / "bus", transport="tcp", table_id="t-test")


def _drain(cfg, tmp_path, want, timeout_s=10.0):
    from bus.subscriber import RollSubscriber

    got = []
    sub = RollSubscriber(cfg, tmp_path / "sub.sqlite")
    try:
        deadline = time.monotonic() + timeout_s
        while len([e for e in got if e["topic"] == "roll"]) < want and time.monotonic() < deadline:
            env = sub.receive(timeout_s=0.5)
            if env is not None:
                got.append(env)
                sub.ack(env["seq"])
    finally:
        sub.close()
    return got


def test_messages_over_the_real_bus(tmp_path):
    from bus.publisher import RollPublisher

    bus_cfg = _real_bus(tmp_path)
    pub = RollPublisher(bus_cfg, "t-test")
    try:
        service = make_service(tmp_path, pub)
        bodies, _ = run_throws(service, [[(6, 100, 100), (5, 200, 120)], [(1, 100, 100)]])
        service.close()
        envs = _drain(bus_cfg, tmp_path, want=2)
    finally:
        pub.close()
    rolls = [e for e in envs if e["topic"] == "roll"]
    assert [e["body"]["roll_id"] for e in rolls] == [b["roll_id"] for b in bodies]
    assert rolls[0]["body"]["dice"] == [6, 5] and rolls[0]["body"]["game"]["outcome"] == "natural"
    assert rolls[1]["body"]["verdict"] == "no-roll" and rolls[1]["body"]["reason"] == "die-off-table"
    assert all(e["table_id"] == "t-test" for e in envs)
    seqs = [e["seq"] for e in envs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_restart_after_publish_before_mark_sends_no_duplicate(tmp_path):
    import sqlite3

    from bus.publisher import RollPublisher

    bus_cfg = _real_bus(tmp_path)
    pub = RollPublisher(bus_cfg, "t-test")
    service = make_service(tmp_path, pub)
    bodies, t = run_throws(service, [[(2, 100, 100), (2, 200, 120)], [(5, 100, 100), (6, 200, 120)]])
    service.close()
    pub.close()
    db = sqlite3.connect(tmp_path / "state.sqlite")  # the crash: published, mark not written
    with db:
        db.execute("UPDATE verdicts SET published_seq = NULL WHERE roll_id = ?", (bodies[-1]["roll_id"],))
    db.close()
    pub = RollPublisher(bus_cfg, "t-test")
    try:
        again = make_service(tmp_path, pub)
        again.start()
        assert again.store.unpublished() == []
        run_throws(again, [[(1, 100, 100), (3, 200, 120)]], t0=t + 1)
        again.close()
        envs = _drain(bus_cfg, tmp_path, want=3)
    finally:
        pub.close()
    ids = [e["body"]["roll_id"] for e in envs if e["topic"] == "roll"]
    assert ids == ["t-test-00000001", "t-test-00000002", "t-test-00000003"]
    assert envs[-1]["body"]["game"]["outcome"] == "point-made"


def _labels(photo: Path) -> list[int]:
    lab = TRAY / "labels" / (photo.stem + ".txt")
    return sorted(int(line.split()[0]) + 1 for line in lab.read_text().split("\n") if line.strip())


@pytest.mark.shared
def test_replay_of_shared_photos_publishes_a_verdict_per_photo(tmp_path):
    if not (TRAY / "images").is_dir():
        pytest.skip(f"shared photos absent: {TRAY}")
    from camera.replay import ReplaySource
    from bus.publisher import RollPublisher
    from vision.reader import read_dice

    photos = sorted((TRAY / "images").glob("*.jpg"))
    two = [p for p in photos if len(_labels(p)) == 2][:5]
    others = [p for p in photos if len(_labels(p)) in (1, 3)][:3]
    folder = tmp_path / "photos"
    folder.mkdir()
    chosen = sorted(two + others)
    for p in chosen:
        (folder / p.name).symlink_to(p)
    bus_cfg = _real_bus(tmp_path)
    cfg = TableConfig.model_validate({"table": {"id": "t-test"}, "lamps": {"driver": "none"},
                                      "state": {"db": str(tmp_path / "state.sqlite")}})
    source = ReplaySource(folder, fps=30, hold_frames=cfg.vision.still_frames + 6,
                          empty_frames=cfg.vision.still_frames + 4)
    pub = RollPublisher(bus_cfg, "t-test")
    try:
        service, _ = build_service(cfg, source, publisher=pub, lamp_driver=NullLampDriver(), reader=read_dice)
        service.run(source)
        n = service.stats.total_verdicts
        service.close()
        envs = _drain(bus_cfg, tmp_path, want=n)
    finally:
        pub.close()
    every = [e["body"] for e in envs if e["topic"] == "roll"]
    # a boxperson call still open when the next photo is decided is closed void just before it
    closes = [b for b in every if (b["decision"] or {}).get("outcome") == "superseded"]
    calls = [b["roll_id"] for b in every if b["verdict"] == "boxperson"]
    assert [b["decision"]["call"] for b in closes] == calls[:len(closes)] and len(closes) >= len(calls) - 1
    rolls = [b for b in every if b not in closes]
    assert len(rolls) == len(chosen)
    assert [Path(b["frame"]["source"]).name for b in rolls] == [p.name for p in chosen]
    from controller.reasons import Reason

    for body, photo in zip(rolls, chosen):
        image = cv2.imread(str(photo), cv2.IMREAD_COLOR)
        assert body["frame_sha256"] == hashlib.sha256(image.tobytes()).hexdigest()
        assert body["verdict"] in ("roll", "no-roll", "boxperson")
        if body["verdict"] == "roll":
            # never a valid roll with a wrong value: only from a two-dice photo, with its values
            assert sorted(body["dice"]) == _labels(photo), photo.name
        else:
            assert Reason.from_code(body["reason"]) is not None and body["dice"] is None
    n_roll = sum(b["verdict"] == "roll" for b in rolls)
    print(f"\nreplay: {len(chosen)} photos, {n_roll} valid rolls, "
          f"{[b['reason'] for b in rolls if b['verdict'] != 'roll']}")


def test_service_drives_gpio_lamps(tmp_path):
    from gpiozero.pins.mock import MockFactory

    from controller.lamps import GpioLampDriver

    pins = {"point-4": 5, "point-5": 6, "point-6": 13, "point-8": 19, "point-9": 26, "point-10": 21,
            "puck-on": 20, "no-roll": 16, "call-boxperson": 12, "bets-closed": 25, "fault": 24}
    factory = MockFactory()
    cfg = TableConfig.model_validate({
        "table": {"id": "t-test"}, "vision": {"still_frames": 5},
        "state": {"db": str(tmp_path / "state.sqlite")},
        "bus": {"journal_path": str(tmp_path / "bus" / "journal.sqlite")}})
    driver = GpioLampDriver(pins, pin_factory=factory)
    service, _ = build_service(cfg, None, publisher=ListPublisher(), lamp_driver=driver, reader=fake_reader)

    def lit():
        return {n for n, p in pins.items() if factory.pin(p).state}

    service.start()
    frames, t, i = throw_frames([(4, 100, 100), (4, 200, 120)], 0.0)
    seen_closed = False
    for f in frames:
        service.process(f)
        seen_closed |= "bets-closed" in lit()
    assert seen_closed  # while the dice were in motion
    assert lit() == {"point-8", "puck-on"}
    frames, t, i = throw_frames([(4, 100, 100)], t, start_index=i)  # one die: no roll
    for f in frames:
        service.process(f)
    assert service.lamps.shown["no-roll"] == "flash" and {"point-8", "puck-on"} <= lit()
    service.close()
    assert lit() == set()  # safe state on close
    factory.close()


@pytest.mark.shared
def test_run_command_on_a_replay(tmp_path, capsys):
    import argparse
    import json
    import sqlite3

    from controller import service_cli

    photos = sorted((TRAY / "images").glob("*.jpg"))[:2] if (TRAY / "images").is_dir() else []
    if not photos:
        pytest.skip(f"shared photos absent: {TRAY}")
    folder = tmp_path / "photos"
    folder.mkdir()
    for p in photos:
        (folder / p.name).symlink_to(p)
    bus_cfg = _real_bus(tmp_path)
    config = write_test_config(tmp_path, bus_cfg=bus_cfg)
    import os
    import socket

    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # a fake systemd (Type=notify)
    notify.bind(str(tmp_path / "notify.sock"))
    notify.settimeout(5)
    os.environ["NOTIFY_SOCKET"] = str(tmp_path / "notify.sock")
    parser = argparse.ArgumentParser()
    service_cli.add_arguments("run", parser)
    args = parser.parse_args(["--config", str(tmp_path / "table.toml"), "--source", f"replay:{folder}",
                              "--log-level", "WARNING"])
    try:
        assert service_cli.run("run", args) == 0
    finally:
        del os.environ["NOTIFY_SOCKET"]
    said = []
    notify.settimeout(0.5)
    try:
        while True:
            said.append(notify.recv(4096).decode())
    except socket.timeout:
        pass
    notify.close()
    assert said[0].startswith("READY=1") and "shooter 1" in said[0]
    assert any(m.startswith("STOPPING=1") for m in said)
    db = sqlite3.connect(tmp_path / "state.sqlite")
    rows = db.execute("SELECT roll_id, published_seq, body_json FROM verdicts ORDER BY n").fetchall()
    db.close()
    # one verdict per photo, and a boxperson call on the first closed void before the second's
    kinds = [(json.loads(r[2])["verdict"], (json.loads(r[2])["decision"] or {}).get("outcome")) for r in rows]
    expected = 3 if kinds[0][0] == "boxperson" else 2
    assert [r[0] for r in rows] == [f"table-1-{n:08d}" for n in range(1, expected + 1)]
    if expected == 3:
        assert kinds[1] == ("no-roll", "superseded")
    assert all(r[1] is not None and r[1] > 0 for r in rows)
    # missing keys: exit 2 naming bus.keys_dir
    config.write_text(config.read_text().replace(str(bus_cfg.keys_dir), str(tmp_path / "nokeys")))
    args = parser.parse_args(["--config", str(tmp_path / "table.toml"), "--source", f"replay:{folder}"])
    assert service_cli.run("run", args) == 2
    assert "bus.keys_dir" in capsys.readouterr().err


def test_table_area_from_simulator_zones():
    from controller.service import polygon_from_zones, source_table_area

    # pixels -> mm: x_mm = 2 * x_px + 10, y_mm = 2 * y_px
    h = np.array([[2.0, 0, 10], [0, 2.0, 0], [0, 0, 1]])
    zones = {"playing": [(10, 0), (210, 0), (210, 100), (10, 100)]}
    poly = polygon_from_zones(zones, h)
    assert np.allclose(poly, [(0, 0), (100, 0), (100, 50), (0, 50)])
    assert polygon_from_zones({}, h) is None and polygon_from_zones(zones, np.zeros((3, 3))) is None

    class FakeSim:
        table_zones = zones
        homography = h

    assert np.allclose(source_table_area(FakeSim()), poly)
    assert source_table_area(object()) is None


def test_bus_failure_keeps_verdicts_and_retries_in_order(tmp_path, monkeypatch):
    class FlakyPublisher(ListPublisher):
        down = False

        def publish(self, topic, body):
            if self.down and topic == "roll":
                raise OSError("bus down")
            return super().publish(topic, body)

    pub = FlakyPublisher()
    service = make_service(tmp_path, pub)
    pub.down = True
    bodies, t = run_throws(service, [[(3, 100, 100), (4, 200, 120)], [(2, 100, 100), (2, 200, 120)]])
    assert len(bodies) == 2 and pub.rolls() == []
    assert [b["roll_id"] for b in service.store.unpublished()] == ["t-test-00000001", "t-test-00000002"]
    assert service.lamps.shown["fault"] == "on"
    pub.down = False
    clock = [time.monotonic() + 5.0]  # more than the 1 s retry interval later
    monkeypatch.setattr("controller.service.time.monotonic", lambda: clock[0])
    run_throws(service, [[(5, 100, 100), (5, 200, 120)]], t0=t + 1)
    assert [b["roll_id"] for b in pub.rolls()] == ["t-test-00000001", "t-test-00000002", "t-test-00000003"]
    assert service.store.unpublished() == [] and service.lamps.shown["fault"] == "off"
    assert pub.rolls()[-1]["game"]["outcome"] == "no-decision"  # point 4 kept, then 10
    service.close()


def test_faults_raise_one_alarm_and_clear(tmp_path):
    calls = {"n": 0}

    def broken_then_fine(image):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("model file unreadable")
        return fake_reader(image)

    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.reader = broken_then_fine
    service.start()
    frames, t, i = throw_frames([(6, 100, 100), (6, 200, 120)], 0.0, rest=20)
    bodies = [b for f in frames if (b := service.process(f))]
    # the read failed once (fault, one alarm), was retried at the next rest and decided
    alarms = [b for tp, b in pub.sent if tp == "alarm"]
    assert [a["code"] for a in alarms] == ["reader-fault"] and "model file" in alarms[0]["message"]
    assert len(bodies) == 1 and bodies[0]["dice"] == [6, 6]
    assert service.lamps.shown["fault"] == "off"
    for k in range(3):  # bad frames: one alarm for the run of them
        service.process(Frame(np.zeros((4, 4), np.float64), t + k, i + k))
    assert [b["code"] for tp, b in pub.sent if tp == "alarm"] == ["reader-fault", "frame-fault"]
    assert service.lamps.shown["fault"] == "on"
    service.process(Frame(scene_image([(6, 100, 100), (6, 200, 120)]), t + 5, i + 5))
    assert service.lamps.shown["fault"] == "off"
    service.close()


def test_read_crop_and_cleared_table_without_reading(tmp_path):
    calls = []

    def counting_reader(image):
        calls.append(image.shape)
        return fake_reader(image)

    pub = ListPublisher()
    service = make_service(tmp_path, pub, table_area=[[50, 50], [260, 50], [260, 200], [50, 200]],
                           read_crop=True)
    service.reader = counting_reader
    bodies, _ = run_throws(service, [[(3, 100, 100), (4, 200, 120)], [(6, 100, 100), (6, 200, 120)]])
    assert [b["dice"] for b in bodies] == [[3, 4], [6, 6]]
    # full-frame centres although only the area's box (+5 %) was read
    assert [r["centre"] for r in bodies[0]["readings"]] == [[99.5, 99.5], [199.5, 119.5]]
    assert all(shape == (166, 232, 3) for shape in calls)
    # reads: start-up (empty), throw 1, clearing (skipped: same as the empty table), throw 2
    assert len(calls) == 3
    service.close()


def test_metrics_count_frames_verdicts_and_sequence(tmp_path):
    from controller.metrics import TableMetrics

    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.metrics = TableMetrics()
    run_throws(service, [[(3, 100, 100), (4, 200, 120)], [(3, 100, 100)]])
    m = service.metrics
    assert m.value("craps_table_verdicts_total", {"verdict": "roll", "reason": "none"}) == 1
    assert m.value("craps_table_verdicts_total", {"verdict": "no-roll", "reason": "die-off-table"}) == 1
    assert m.value("craps_table_frames_total") == service.stats.frames
    assert m.value("craps_table_last_sequence") == len(pub.sent)
    service.close()


def _observer_service(tmp_path, pub, timeout_s=60.0):
    from controller.boxperson import CallRegistry
    from controller.throw_observer import ThrowObserver

    registry = CallRegistry(timeout_s=timeout_s)
    observer = ThrowObserver(registry=registry)
    service = make_service(tmp_path, pub)
    service.observe = observer
    return service, registry


def test_boxperson_decision_with_dice_moves_the_game(tmp_path):
    pub = ListPublisher()
    service, registry = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [[(2, 100, 100), (0, 200, 120)]])  # one face unreadable
    call = bodies[0]
    assert (call["verdict"], call["reason"]) == ("boxperson", "face-unreadable")
    assert [c.roll_id for c in registry.pending()] == [call["roll_id"]]
    assert service.lamps.shown["call-boxperson"] == "flash"
    registry.answer(call["roll_id"], who="boxperson-ann", dice=[2, 5])
    service.process(Frame(scene_image([(2, 100, 100), (0, 200, 120)]), t, 999))
    decided = pub.rolls()[-1]
    assert decided["roll_id"] == "t-test-00000002" and decided["verdict"] == "roll"
    assert decided["dice"] == [2, 5] and decided["game"]["outcome"] == "natural"
    assert decided["decision"]["who"] == "boxperson-ann" and decided["decision"]["call"] == call["roll_id"]
    assert decided["decision"]["outcome"] == "dice"
    assert decided["frame_sha256"] == call["frame_sha256"] and decided["frame"] == call["frame"]
    assert service.store.state.shooter_roll == 1
    assert service.lamps.shown["call-boxperson"] == "off"
    service.close()


def test_boxperson_void_and_stale_decision(tmp_path):
    pub = ListPublisher()
    service, registry = _observer_service(tmp_path, pub)
    bodies, t = run_throws(service, [[(2, 100, 100), (0, 200, 120)]])
    registry.answer(bodies[0]["roll_id"], who="ann", void=True)  # void: re-roll
    service.process(Frame(scene_image([(2, 100, 100), (0, 200, 120)]), t, 999))
    void = pub.rolls()[-1]
    assert (void["verdict"], void["reason"], void["decision"]["outcome"]) == ("no-roll", "boxperson-void", "void")
    assert service.store.state.rolls == 0
    # a call answered after the game moved on is refused (the next verdict superseded it)
    from controller.boxperson import DecisionError

    bodies2, t = run_throws(service, [[(4, 100, 100), (0, 200, 120)], [(3, 100, 100), (3, 200, 120)]], t0=t + 1)
    assert [b["verdict"] for b in bodies2] == ["boxperson", "roll"]
    closed = pub.rolls()[-2]   # closed void before the next throw's verdict
    assert (closed["decision"]["call"], closed["decision"]["outcome"]) == (bodies2[0]["roll_id"], "superseded")
    with pytest.raises(DecisionError, match="superseded: the table decided a later throw before an answer"):
        registry.answer(bodies2[0]["roll_id"], who="late", dice=[4, 4])
    n = len(pub.rolls())
    service.process(Frame(scene_image([(3, 100, 100), (3, 200, 120)]), t + 1, 2000))
    assert len(pub.rolls()) == n
    assert [b["code"] for tp, b in pub.sent if tp == "alarm"] == []
    assert service.store.state.point == 6
    service.close()


def test_decide_command_reaches_the_service(tmp_path):
    """`craps-table decide` -> the table's command server -> the decision published as a roll.
    The reply waits for the service to commit it (the service thread here: this test's loop,
    ticking while the command runs in another thread, bounded)."""
    import argparse
    import threading

    from controller import decide_cli

    cfg = TableConfig.model_validate({
        "table": {"id": "t-test"}, "vision": {"still_frames": 5}, "lamps": {"driver": "none"},
        "state": {"db": str(tmp_path / "state.sqlite")},
        "bus": {"journal_path": str(tmp_path / "bus" / "journal.sqlite")},
        "boxperson": {"endpoint": f"ipc://{tmp_path / 'box'}"}})
    pub = ListPublisher()
    service, _ = build_service(cfg, None, publisher=pub, lamp_driver=NullLampDriver(), reader=fake_reader)
    try:
        bodies, t = run_throws(service, [[(5, 100, 100), (0, 200, 120)]])
        assert bodies[0]["verdict"] == "boxperson"
        parser = argparse.ArgumentParser()
        decide_cli.add_arguments("decide", parser)
        args = parser.parse_args(["--endpoint", f"ipc://{tmp_path / 'box'}", "--roll-id", bodies[0]["roll_id"],
                                  "--dice", "5", "6", "--who", "ann"])
        status = []
        command = threading.Thread(target=lambda: status.append(decide_cli.run("decide", args)))
        command.start()
        for _ in range(500):            # the service's loop: a frame now and then, ticks between
            service.tick()
            command.join(0.01)
            if not command.is_alive():
                break
        assert status == [0]
        service.process(Frame(scene_image([(5, 100, 100), (0, 200, 120)]), t, 999))
        decided = pub.rolls()[-1]
        assert decided["dice"] == [5, 6] and decided["game"]["outcome"] == "natural"
        assert decided["decision"]["who"] == "ann" and decided["decision"]["call"] == bodies[0]["roll_id"]
    finally:
        service.close()


def _firmware_lamp_service(tmp_path, mcu, pub, **vision):
    """A table service with ``lamps.driver = "firmware"`` on the simulated MCU ``mcu``, the
    fake reader and ``pub`` for the bus (``vision``: more ``[vision]`` keys)."""
    cfg = TableConfig.model_validate({
        "table": {"id": "t-test"}, "vision": {"still_frames": 5, **vision},
        "lamps": {"driver": "firmware"}, "firmware": {"port": str(mcu.path)},
        "state": {"db": str(tmp_path / "state.sqlite")},
        "bus": {"journal_path": str(tmp_path / "bus" / "journal.sqlite")}})
    service, _ = build_service(cfg, None, publisher=pub, reader=fake_reader)
    return service


def test_firmware_shooter_button_and_link_fault(tmp_path):
    """lamps.driver = "firmware" on the simulated MCU: the shooter button passes the dice, the
    lamps follow the game on the MCU, a link going down raises a fault."""
    from firmware_bridge.mcu_sim import SimulatedMcu

    with SimulatedMcu() as mcu:
        pub = ListPublisher()
        service = _firmware_lamp_service(tmp_path, mcu, pub)
        try:
            bodies, t = run_throws(service, [[(5, 100, 100), (5, 200, 120)]])  # point 10
            assert mcu.wait_until(lambda: mcu.lamp("point-10")[0] == "on", 5)
            mcu.press_shooter_button()
            deadline = time.monotonic() + 5
            k = 0
            while service.store.state.shooter == 1 and time.monotonic() < deadline:
                service.process(Frame(scene_image([(5, 100, 100), (5, 200, 120)]), t + k / 30, 500 + k))
                k += 1
                time.sleep(0.01)
            assert service.store.state.shooter == 2 and service.store.state.point == 10
            assert pub.sent[-1][1]["event"] == "new-shooter"
            mcu.disconnect(reconnect_after_s=None)
            deadline = time.monotonic() + 5
            while service.lamps.shown.get("fault") != "on" and time.monotonic() < deadline:
                service.process(Frame(scene_image([(5, 100, 100), (5, 200, 120)]), t + k / 30, 500 + k))
                k += 1
                time.sleep(0.02)
            assert service.lamps.shown["fault"] == "on"
            assert [b["code"] for tp, b in pub.sent if tp == "alarm"][-1:] == ["bridge-fault"]
        finally:
            service.close()


def test_default_observation_without_observer(tmp_path):
    """TableService without an observe hook places dice by the table area alone."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub, table_area=[[0, 0], [250, 0], [250, 240], [0, 240]])
    service.observe = None
    bodies, _ = run_throws(service, [[(3, 100, 100), (4, 290, 120)], [(3, 100, 100), (4, 200, 120)]])
    assert [(b["verdict"], b["reason"]) for b in bodies] == [("no-roll", "die-outside-area"), ("roll", None)]
    service.close()


def test_a_no_roll_called_during_the_throw_voids_it(tmp_path):
    """9 NYCRR 5324.52(k)(2)(i), (k)(3), (k)(5)(i): the stickperson calls "no roll" while the
    dice are moving (they did not leave the hand together): the throw that the camera would
    read as a 7 is published as a no roll ``dice-not-simultaneous`` naming the caller, and the
    game does not move; a call with no throw in progress is refused with an alarm and the next
    throw is a roll."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.start()
    frames, t, i = throw_frames([(3, 100, 100), (4, 200, 120)], 0.0)
    bodies = []
    for k, f in enumerate(frames):
        if k == 14:                                  # dice in motion (frames 12..17)
            service.post("no-roll", reason="dice-not-simultaneous", who="sam", console=None)
        b = service.process(f)
        if b is not None:
            bodies.append(b)
    assert len(bodies) == 1
    b = bodies[0]
    assert (b["verdict"], b["reason"], b["dice"]) == ("no-roll", "dice-not-simultaneous", None)
    assert b["citation"] == "9 NYCRR 5324.52(k)(2)(i), (k)(3)"
    assert b["called"]["who"] == "sam" and b["called"]["reason"] == "dice-not-simultaneous"
    assert b["game"]["outcome"] is None and service.store.state.come_out and service.store.state.shooter_roll == 0
    # at rest, no throw in progress: refused, nothing called on the next throw
    service.post("no-roll", reason="improper-throw", who="sam")
    service.process(Frame(scene_image([(3, 100, 100), (4, 200, 120)]), t, i))
    alarms = [m for topic, m in pub.sent if topic == "alarm"]
    assert alarms[-1]["code"] == "command-refused" and "no throw in progress" in alarms[-1]["message"]
    assert "improper-throw is called, whenever possible, before both dice come to rest" in alarms[-1]["message"]
    assert "(k)(3)" in alarms[-1]["message"]
    # (k)(3) sets no time for a cheating device ((k)(2)(v)): the refusal says why, not (k)(3)
    with pytest.raises(ValueError, match=r"cheating-device \(9 NYCRR 5324.52\(k\)\(2\)\(v\).*does not undo a published roll") as exc:
        service.call_no_roll("cheating-device", "sam")
    assert "(k)(3)" not in str(exc.value)
    with pytest.raises(ValueError, match="cannot be called"):
        service.call_no_roll("die-on-die", "sam")
    # the name goes into the roll message: the in-process call holds it to the socket's rule
    with pytest.raises(ValueError, match="at most 100 characters"):
        service.call_no_roll("improper-throw", "s" * 101)
    with pytest.raises(ValueError, match="printable characters only"):
        service.call_no_roll("improper-throw", "sam\nFAKE LOG LINE")
    frames, t, i = throw_frames([(6, 100, 100), (5, 200, 120)], t + 0.1, start_index=i + 1)
    more = [b for b in map(service.process, frames) if b is not None]
    assert [(m["verdict"], m["dice"], m["called"]) for m in more] == [("roll", [6, 5], None)]
    service.close()


def test_no_roll_command_over_the_socket_reaches_the_service(tmp_path, capsys):
    """``craps-table decide --no-roll improper-throw --who sam`` is queued for the service; a
    reason a person cannot call, or no name, is refused at the command line or the socket."""
    from controller.boxperson import CallRegistry, CommandServer, handle_request
    from controller.cli import main as cli_main

    posted = []
    server = CommandServer(CallRegistry(60.0), "tcp://127.0.0.1:*",
                           table_command=lambda e, **d: posted.append((e, d))).start()
    try:
        assert cli_main(["decide", "--endpoint", server.endpoint, "--no-roll", "improper-throw", "--who", "sam"]) == 0
        assert '"queued": "no-roll"' in capsys.readouterr().out
        assert posted == [("no-roll", {"reason": "improper-throw", "who": "sam", "console": None})]
        assert cli_main(["decide", "--endpoint", server.endpoint, "--no-roll", "improper-throw"]) == 2  # no --who
    finally:
        server.close()
    bad = handle_request(CallRegistry(60.0), b'{"cmd": "no-roll", "reason": "die-on-die", "who": "sam"}',
                         lambda e, **d: posted.append(e))
    assert not bad["ok"] and "reason must be one of" in bad["error"] and len(posted) == 1


def test_dice_put_back_in_the_cup_after_a_verdict_clear_the_table(tmp_path):
    """After a verdict the stickperson collects the dice and puts them in the dice cup (9 NYCRR
    5324.52(a)(5), (f)(3)): the table at rest shows dice only in the cup. That is a cleared
    table, not a new throw whose dice rest in the cup (before: a "die-in-dice-cup" verdict);
    the next throw is decided as usual."""
    from controller.verdict import DieObservation, ThrowFacts

    def observe(readings, frame):   # x > 240: the dice cup
        return [DieObservation(r, zone="dice_cup" if r.centre[0] > 240 else "playing") for r in readings], ThrowFacts()
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.observe = observe
    bodies, t = run_throws(service, [[(3, 100, 100), (4, 200, 120)]])
    i = 1000
    for x in range(6):   # the dice pushed to the cup, then still there
        for f in [Frame(scene_image([(3, 100 + 30 * x, 100), (4, 200 + 8 * x, 120)]), t + k / 30, i + k) for k in range(2)]:
            assert service.process(f) is None
        t, i = t + 2 / 30, i + 2
    for k in range(14):
        assert service.process(Frame(scene_image([(3, 250, 100), (4, 250, 140)]), t + k / 30, i + k)) is None
    t, i = t + 14 / 30, i + 14
    cup = [(3, 250, 100), (4, 250, 140)]
    frames, _, _ = throw_frames([(6, 100, 100), (5, 200, 120)], t, start_index=i)
    more = [b for f in frames if (b := service.process(Frame(scene_image(cup + [d for d in _dice_of(f)]), f.t, f.index)))]
    assert [sorted(b["dice"]) for b in bodies + more] == [[3, 4], [5, 6]]
    assert [b["verdict"] for b in pub.rolls()] == ["roll", "roll"]
    service.close()


def _dice_of(frame):
    """The dice drawn in a ``scene_image`` frame, as ``(value, x, y)`` (read back by the fake reader)."""
    return [(r.value, int(round(r.centre[0])), int(round(r.centre[1]))) for r in fake_reader(frame.image)]


def test_a_new_fault_publishes_its_alarm_before_the_lamps_change(tmp_path):
    """A fault's alarm goes on the bus before the fault lamp is lit (a slow lamp driver never
    delays it)."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    driver = alarm_order_lamps(lambda: [b for t, b in pub.sent if t == "alarm"])
    service.lamps.driver = driver
    service.start()
    service.process(Frame(np.zeros((4, 4), np.float64), 0.0, 0))           # unusable frame
    lit = [c for c in driver.calls if c[:2] == ("fault", "on")]
    assert lit == [("fault", "on", ["frame-fault"])], driver.calls
    service.close()


def test_a_silent_mcu_does_not_hold_up_the_service(tmp_path):
    """lamps.driver = "firmware" and an MCU that answers nothing (its loop frozen, the port
    open): every frame of a throw, the verdict's included, is processed without waiting for the
    MCU (the old driver waited up to 0.25 s per changed lamp on the service thread), and the
    lamps reach the MCU once it answers again."""
    from firmware_bridge.mcu_sim import SimulatedMcu

    with SimulatedMcu() as mcu:
        pub = ListPublisher()
        service = _firmware_lamp_service(tmp_path, mcu, pub, still_s=0.0)
        try:
            service.start()
            assert mcu.wait_until(lambda: service.lamps.driver.link.up, 5)
            time.sleep(0.3)                          # the initial lamp state is through
            frames, _, _ = throw_frames([(5, 100, 100), (5, 200, 120)], 0.0)   # point 10
            driver, in_lamps = service.lamps.driver, []
            real_set_lamp = driver.set_lamp

            def timed_set_lamp(*args, **kw):
                t0 = time.monotonic()
                try:
                    return real_set_lamp(*args, **kw)
                finally:
                    in_lamps.append(time.monotonic() - t0)

            driver.set_lamp = timed_set_lamp
            bodies = []
            with mcu.frozen():
                for f in frames:
                    b = service.process(f)
                    if b is not None:
                        bodies.append(b)
                assert mcu.lamp("point-10")[0] == "off"      # nothing reached the frozen MCU
            driver.set_lamp = real_set_lamp
            assert [b["dice"] for b in bodies] == [[5, 5]]
            # bets-closed on, then off with point-10 and puck-on on: 4 lamp commands
            assert len(in_lamps) >= 4
            assert sum(in_lamps) < 0.1, f"the service thread waited {sum(in_lamps):.3f} s in set_lamp"
            assert mcu.wait_until(lambda: mcu.lamp("point-10")[0] == "on" and mcu.lamp("puck-on")[0] == "on"
                                  and mcu.lamp("bets-closed")[0] == "off", 5), mcu.lamps()
        finally:
            service.close()
        assert mcu.wait_until(lambda: all(m == "off" for m, _ in mcu.lamps().values()), 3), mcu.lamps()


def _journal_messages(journal_path):
    """``[(seq, topic, body)]`` of the bus journal file, in order."""
    import json
    import sqlite3

    db = sqlite3.connect(journal_path)
    rows = db.execute("SELECT seq, envelope FROM messages ORDER BY seq").fetchall()
    db.close()
    return [(s, json.loads(bytes(w))["topic"], json.loads(bytes(w))["body"]) for s, w in rows]


def _remove_db(path):
    for ext in ("", "-wal", "-shm"):
        p = Path(str(path) + ext)
        if p.exists():
            p.unlink()


def test_store_behind_the_journal_is_refused(tmp_path):
    import shutil

    from bus.publisher import RollPublisher
    from controller.store import StoreError

    bus_cfg = _real_bus(tmp_path)
    pub = RollPublisher(bus_cfg, "t-test")
    try:
        service = make_service(tmp_path, pub)
        _, t = run_throws(service, [[(2, 100, 100), (3, 200, 120)]])
        service.close()
        shutil.copy(tmp_path / "state.sqlite", tmp_path / "state.copy")  # a backup after roll 1
        service = make_service(tmp_path, pub)
        run_throws(service, [[(6, 100, 100), (3, 200, 120)]], t0=t + 1)
        service.close()
        _remove_db(tmp_path / "state.sqlite")
        shutil.copy(tmp_path / "state.copy", tmp_path / "state.sqlite")  # the old copy restored
        with pytest.raises(StoreError) as err:
            make_service(tmp_path, pub)
        msg = str(err.value)
        assert str(tmp_path / "state.sqlite") in msg and str(bus_cfg.journal_path) in msg
        assert "t-test-00000002" in msg and "t-test-00000001" in msg
        _remove_db(tmp_path / "state.sqlite")  # the store lost altogether
        with pytest.raises(StoreError, match="the store's last is none"):
            make_service(tmp_path, pub)
    finally:
        pub.close()
    rolls = [(b["roll_id"], b["dice"]) for _, topic, b in _journal_messages(bus_cfg.journal_path) if topic == "roll"]
    assert rolls == [("t-test-00000001", [2, 3]), ("t-test-00000002", [6, 3])]  # no roll id reused


def test_journal_replaced_then_crash_before_mark_sends_no_duplicate(tmp_path, monkeypatch):
    from bus.publisher import RollPublisher
    from controller.store import StateStore

    bus_cfg = _real_bus(tmp_path)
    pub = RollPublisher(bus_cfg, "t-test")
    service = make_service(tmp_path, pub)
    _, t = run_throws(service, [[(2, 100, 100), (2, 200, 120)], [(5, 100, 100), (6, 200, 120)]])
    service.close()
    pub.close()
    old_id = pub.journal_id
    _remove_db(bus_cfg.journal_path)  # a new journal: its seqs start at 1 again
    pub = RollPublisher(bus_cfg, "t-test")
    assert pub.journal_id != old_id
    service = make_service(tmp_path, pub)
    real_mark = StateStore.mark_published
    monkeypatch.setattr(StateStore, "mark_published", lambda self, *a, **k: None)  # "crash" before the mark
    run_throws(service, [[(1, 100, 100), (1, 200, 120)]], t0=t + 1)
    service.close()
    pub.close()
    monkeypatch.setattr(StateStore, "mark_published", real_mark)
    pub = RollPublisher(bus_cfg, "t-test")
    try:
        again = make_service(tmp_path, pub)
        again.start()
        assert again.store.unpublished() == []
        run_throws(again, [[(1, 100, 100), (3, 200, 120)]], t0=t + 50)
        rolls = [b["roll_id"] for _, topic, b in _journal_messages(bus_cfg.journal_path) if topic == "roll"]
        assert rolls == ["t-test-00000003", "t-test-00000004"]  # roll 3 not published twice
        assert again.store.last_published_seq(pub.journal_id) == 4  # states at 1 and 3, rolls at 2 and 4
        again.close()
    finally:
        pub.close()


def _cli_run(tmp_path, monkeypatch, patch=None):
    """``craps-table run`` on a stub source, ``patch(service)`` applied to the built service."""
    import argparse

    from controller import service_cli

    class StubSource:
        def frames(self):
            return iter(())

        def close(self):
            pass

    bus_cfg = _real_bus(tmp_path)
    write_test_config(tmp_path, bus_cfg=bus_cfg)
    monkeypatch.setattr(service_cli, "open_frame_source", lambda cfg, spec: StubSource())
    real_build = service_cli.build_service

    def build(*a, **k):
        service, publisher = real_build(*a, **k)
        if patch is not None:
            patch(service)
        return service, publisher

    monkeypatch.setattr(service_cli, "build_service", build)
    parser = argparse.ArgumentParser()
    service_cli.add_arguments("run", parser)
    args = parser.parse_args(["--config", str(tmp_path / "table.toml"), "--log-level", "ERROR"])
    return service_cli.run("run", args), bus_cfg


def test_run_exits_1_with_an_alarm_when_the_store_cannot_be_written(tmp_path, monkeypatch, capsys):
    def full_disk(service):
        def run(source, **kw):
            service.start()
            service.store._db.execute("PRAGMA query_only = ON")  # every write fails, as on a full disk
            service.store.commit(service.store.state, {"roll_id": "t-test-00000001", "verdict": "no-roll"})
        service.run = run

    rc, bus_cfg = _cli_run(tmp_path, monkeypatch, full_disk)
    assert rc == 1
    err = capsys.readouterr().err
    assert "state store failed" in err and str(tmp_path / "state.sqlite") in err and "commit failed" in err
    msgs = _journal_messages(bus_cfg.journal_path)
    assert [(t, b.get("event") or b.get("code")) for _, t, b in msgs] == [("state", "start"), ("alarm", "store-fault")]
    assert str(tmp_path / "state.sqlite") in msgs[-1][2]["message"]


def test_run_exits_2_when_the_store_is_behind_the_journal(tmp_path, monkeypatch, capsys):
    import sqlite3

    def one_roll(service):
        def run(source, **kw):
            service.start()
            service.store.commit(service.store.state, {"roll_id": "t-test-00000001", "verdict": "no-roll"})
            service._publish_verdict_body(service.store.unpublished()[0])
            return service.stats
        service.run = run

    assert _cli_run(tmp_path, monkeypatch, one_roll)[0] == 0
    capsys.readouterr()
    db = sqlite3.connect(tmp_path / "state.sqlite")  # an older copy of the store: before the roll
    with db:
        db.execute("DELETE FROM verdicts")
        db.execute("UPDATE game SET verdicts = 0")
    db.close()
    rc, bus_cfg = _cli_run(tmp_path, monkeypatch)
    assert rc == 2
    err = capsys.readouterr().err
    assert "is behind the bus journal" in err and "t-test-00000001" in err and str(bus_cfg.journal_path) in err


def test_dice_at_rest_at_start_raise_an_alarm(tmp_path):
    pub = ListPublisher()
    service = make_service(tmp_path / "a", pub)
    bodies, t = run_throws(service, [[(2, 100, 100), (3, 200, 120)]])
    service.close()
    assert [b["roll_id"] for b in bodies] == ["t-test-00000001"]
    pub = ListPublisher()
    again = make_service(tmp_path / "a", pub)  # restarted with dice lying on the table
    again.start()
    outs = [again.process(Frame(scene_image([(6, 100, 100), (3, 200, 120)]), t + 1 + k / 30, 9000 + k))
            for k in range(60)]
    assert [o for o in outs if o] == []  # nothing decided from dice that did not move
    alarms = [b for topic, b in pub.sent if topic == "alarm"]
    assert [a["code"] for a in alarms] == ["dice-at-rest-at-start"]
    assert "last verdict t-test-00000001" in alarms[0]["message"] and "6, 3" in alarms[0]["message"]
    run_throws(again, [[(4, 100, 100), (1, 200, 120)]], t0=t + 10)  # later rests raise nothing
    assert [b["code"] for topic, b in pub.sent if topic == "alarm"] == ["dice-at-rest-at-start"]
    assert [b["dice"] for b in pub.rolls()] == [[4, 1]]
    again.close()
    pub = ListPublisher()
    empty = make_service(tmp_path / "b", pub)  # an empty table at start: no alarm
    empty.start()
    for k in range(60):
        empty.process(Frame(scene_image([]), k / 30, k))
    assert [topic for topic, _ in pub.sent] == ["state"]
    empty.close()


def test_without_observer_a_cocked_die_s_seen_face_is_not_read(tmp_path):
    """9 NYCRR 5324.52(h)(1)(i)-(ii): without the detectors (no ``observe`` hook) nothing finds
    the side a die read not flat rests on, so its seen face is no counted face: the die comes
    back unread and the throw goes to the boxperson, not published as a roll with the seen 6."""
    from vision.types import DieReading

    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    service.observe = None

    def reading(value, x, flat):
        return DieReading(value=value, bbox=(x - 9, 91, x + 9, 109), centre=(float(x), 100.0), confidence=0.99,
                          flat=flat, side_px=18.0, angle_deg=0.0, extra={})

    obs = service._observe([reading(3, 100, True), reading(6, 200, False)])
    assert [(o.reading.value, o.reading.extra.get("seen_value")) for o in obs] == [(3, None), (None, 6)]
    verdict = decide(obs, policy=service.policy, min_confidence=0.8)
    assert (verdict.kind, verdict.reason) == ("boxperson", Reason.FACE_UNREADABLE)
    service.close()
