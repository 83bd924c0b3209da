"""The table service fed bad frames by its source, mid-throw: an unusable time, an (H, W, 1)
image, a frame of another size or colour format, a camera that freezes. Each is named (an
alarm) and the throw in progress gets one verdict, never a roll read from a frame that does not
show the dice at rest, never two verdicts. Synthetic frames and a stand-in reader
(tests/test_controller_service.py), the simulated table for the tracker, real time for the
health monitor (tests/test_health_service.py). Every loop is bounded by its script."""
from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from camera.base import Frame
from controller.service_cli import build_service
from list_publisher import ListPublisher
from test_controller_service import make_service, throw_frames

DICE = [(3, 100, 100), (4, 200, 120)]
REPO = Path(__file__).resolve().parents[1]


def run_frames(service, frames):
    service.start()
    for f in frames:
        service.process(f)


@pytest.mark.parametrize("bad_t", [float("nan"), float("inf"), None, "0.6"])
def test_a_frame_with_an_unusable_time_is_a_frame_fault_and_the_throw_is_kept(tmp_path, bad_t):
    """Before: a NaN time on the first still frame left the rest never reached (``t - NaN``
    compares false), so the throw was lost and the empty table after it decided as a no roll
    ``dice-off-table``; ``None`` or a string crashed ``process`` (TypeError, ValueError)."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    frames, t, i = throw_frames(DICE, 0.0, rest=20)
    after, _, _ = throw_frames([], t, start_index=i)
    # frames 12..17 move, 18 is the last moving one, 19 the first still one
    frames[19] = Frame(frames[19].image, bad_t, frames[19].index, source="cam")
    run_frames(service, frames + after)
    assert [(b["verdict"], b["dice"]) for b in pub.rolls()] == [("roll", [3, 4])]
    alarms = [b for tp, b in pub.sent if tp == "alarm"]
    assert [a["code"] for a in alarms] == ["frame-fault"]
    assert "frame 19 of cam" in alarms[0]["message"] and "time t" in alarms[0]["message"]
    assert service.store.unpublished() == []
    service.close()


def test_h_w_1_frames_are_read_as_grey(tmp_path):
    """``check_image`` takes an (H, W, 1) image as grey; before, only the motion detector saw it
    so: the reader got the (H, W, 1) array, failed at every rest, and the throw was lost (the
    empty table after it decided as a no roll ``dice-off-table``)."""
    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    frames, t, i = throw_frames(DICE, 0.0, rest=20)
    after, _, _ = throw_frames([], t, start_index=i)
    frames = [Frame(cv2.cvtColor(f.image, cv2.COLOR_BGR2GRAY)[:, :, None], f.t, f.index) for f in frames]
    run_frames(service, frames + after)
    assert [(b["verdict"], b["dice"]) for b in pub.rolls()] == [("roll", [3, 4])]
    assert [b for tp, b in pub.sent if tp == "alarm"] == []
    service.close()


@pytest.mark.parametrize("change", ["size", "grey"])
def test_a_frame_of_another_format_mid_throw_is_a_table_fault(tmp_path, change):
    """The shipped config's service (tracker on) on the simulated table: from the 4th frame of
    the first throw, frames of another size (or one grey frame). Before: the tracker raised
    ValueError out of ``process`` (the service crashed). Now: a ``frame-fault`` alarm names both
    formats, the throw is a no roll ``table-fault`` (``faults: ["frame-changed"]``), and the
    next throw, at the size the calibration was made for, is a roll."""
    pytest.importorskip("mujoco")
    from controller.config import load_config
    from controller.lamps import NullLampDriver
    from simulator.source import SimSource

    base = load_config(REPO / "config" / "table.toml")
    cfg = base.model_copy(update={
        "metrics": None, "state": base.state.model_copy(update={"db": tmp_path / "state.sqlite"}),
        "boxperson": base.boxperson.model_copy(update={"endpoint": ""})})
    source = SimSource("natural", seed=2, width=640, height=360, fps=30, throws=2, idle_s=0.4, rest_s=0.6)
    pub = ListPublisher()
    service, _ = build_service(cfg, source, publisher=pub, lamp_driver=NullLampDriver())
    assert service.observe.tracker is not None
    service.start()
    first = None
    try:
        for f in source.frames():
            if f.truth["throw"] == 0 and f.truth["phase"] != "idle":
                first = f.index if first is None else first
                if change == "size" and f.index >= first + 3 and f.truth["phase"] != "rest":
                    f = Frame(cv2.resize(f.image, (800, 450)), f.t, f.index, f.source, f.truth)
                elif change == "grey" and f.index == first + 3:
                    f = Frame(cv2.cvtColor(f.image, cv2.COLOR_BGR2GRAY), f.t, f.index, f.source, f.truth)
            service.process(f)
    finally:
        service.close()
        source.close()
    rolls = pub.rolls()
    assert (rolls[0]["verdict"], rolls[0]["reason"], rolls[0]["faults"]) == ("no-roll", "table-fault", ["frame-changed"])
    assert (rolls[-1]["verdict"], rolls[-1]["dice"]) == ("roll", [5, 5]) and rolls[-1]["faults"] == []
    alarms = [b for tp, b in pub.sent if tp == "alarm"]
    assert alarms and {a["code"] for a in alarms} == {"frame-fault"}
    want = "800x450 BGR during a throw, after 640x360 BGR" if change == "size" else \
        "640x360 grey during a throw, after 640x360 BGR"
    assert want in alarms[0]["message"]


class Scripted:
    """A camera at 30 fps in real time, with sensor noise, playing a script of scenes (dice
    lists); ``"FREEZE"`` repeats the last image byte for byte (a frozen pipeline)."""

    def __init__(self, script) -> None:
        self.script, self.rng, self._closed = script, np.random.default_rng(3), False

    def frames(self):
        from test_health_service import FPS, scene_image

        t, last = 0.0, None
        for i, scene in enumerate(self.script):
            if self._closed:
                return
            time.sleep(1 / FPS)
            t += 1 / FPS
            if scene != "FREEZE":
                last = scene_image(scene, self.rng)
            yield Frame(last, t, i, source="scripted")

    def close(self) -> None:
        self._closed = True


@pytest.mark.parametrize("frozen, verdict", [
    (10, ("roll", None, [3, 4], [])),                               # 0.33 s: too short for camera-frozen
    (40, ("no-roll", "table-fault", None, ["camera-frozen"])),     # 1.3 s: the safe state
])
def test_a_camera_frozen_mid_throw_gives_the_throw_one_verdict(tmp_path, frozen, verdict):
    """With the health monitor (``craps-table run``): the camera repeats a frame of the dice in
    motion, then goes on. Before: the repeated frame was a rest (8 still frames come before the
    0.5 s of ``camera-frozen``), read, and published as a roll; the real rest after it was a
    second verdict for the same throw (a second roll after a 0.33 s freeze)."""
    from test_health_service import fake_reader, table_config

    motion = [[(v, x - 8 * k, y) for v, x, y in DICE] for k in range(6, 0, -1)]
    script = [[]] * 20 + motion[:3] + ["FREEZE"] * frozen + motion[3:] + [DICE] * 30 + [[]] * 20
    pub = ListPublisher()
    source = Scripted(script)
    service, _ = build_service(table_config(tmp_path), source, publisher=pub, reader=fake_reader, health=True)
    try:
        service.run(source)
        assert [(b["verdict"], b["reason"], b["dice"], b["faults"]) for b in pub.rolls()] == [verdict]
        assert service.store.unpublished() == []
    finally:
        service.close()


def test_frames_of_another_size_than_the_calibration_are_refused_naming_both(tmp_path):
    """A calibration file says the frame size it was made for (``image_size``); a camera that
    switched resolution gives frames whose dice its zones and homography place wrong (a die in
    the chip bank placed on the felt is a valid roll). Such frames are a ``frame-fault`` naming
    both sizes and are not used (the throw in them is not read); the service goes on."""
    from types import SimpleNamespace

    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    frames, t, i = throw_frames(DICE, 0.0, rest=20)
    h, w = frames[0].image.shape[:2]
    service.observe.calibration = SimpleNamespace(image_size=(2 * w, 2 * h))   # read by _usable only
    run_frames(service, frames)
    assert pub.rolls() == []
    alarms = [b for tp, b in pub.sent if tp == "alarm"]
    assert [a["code"] for a in alarms] == ["frame-fault"]
    assert f"{w}x{h} pixels, but the calibration is for {2 * w}x{2 * h}" in alarms[0]["message"]
    service.observe.calibration = None      # no calibration (the stand-in reader's): no size to hold to
    more, t, i = throw_frames([(5, 100, 100), (6, 200, 120)], t, start_index=i)
    for f in more:
        service.process(f)
    assert [(b["verdict"], b["dice"]) for b in pub.rolls()] == [("roll", [5, 6])]
    service.close()


def test_a_source_that_ends_mid_throw_says_so(tmp_path):
    """A replay that ends while the dice are moving: before, ``run()`` returned and the throw
    was dropped without a word. Now a ``source-fault`` alarm says the throw has no verdict."""
    class Replay:
        def __init__(self, frames):
            self._frames = frames

        def frames(self):
            yield from self._frames

    pub = ListPublisher()
    service = make_service(tmp_path, pub)
    frames, _, _ = throw_frames(DICE, 0.0, rest=0)          # idle, then motion: no rest
    service.run(Replay(frames))
    assert pub.rolls() == []
    alarms = [b for tp, b in pub.sent if tp == "alarm"]
    assert [a["code"] for a in alarms] == ["source-fault"]
    assert "ended during a throw" in alarms[0]["message"]
    service.close()
