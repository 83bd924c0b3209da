"""USB and Pi camera sources with fake devices (no camera here), and the source spec parser."""
from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from pydantic import ValidationError

from camera.base import FrameError, FrameSource
from camera.errors import CameraUnavailable
from camera.picamera2_source import Picamera2Source, PiCameraConfig, load_picamera2
from camera.sources import CameraConfig, parse_source_spec
from camera.usb import UsbCameraConfig, UsbSource


class FakeCapture:
    """Looks like cv2.VideoCapture."""

    def __init__(self, device, api, frames=(), opened=True, refuse=()):
        self.device, self.api = device, api
        self.frames = list(frames)
        self.opened = opened
        self.refuse = set(refuse)
        self.props: dict[int, float] = {}
        self.released = 0

    def isOpened(self):
        return self.opened

    def set(self, prop, value):
        if prop in self.refuse:
            return False
        self.props[prop] = value
        return True

    def get(self, prop):
        return self.props.get(prop, 0.0)

    def read(self):
        if not self.frames:
            return False, None
        return True, self.frames.pop(0)

    def release(self):
        self.released += 1


def _img(h=72, w=128, value=0):
    return np.full((h, w, 3), value, np.uint8)


def _usb(frames=(), **kw):
    made = {}
    refuse = kw.pop("refuse", ())
    opened = kw.pop("opened", True)

    def factory(device, api):
        made["cap"] = FakeCapture(device, api, frames, opened, refuse)
        return made["cap"]

    clock = iter(float(i) for i in range(100))
    cfg = UsbCameraConfig(width=128, height=72, **kw)
    return UsbSource(cfg, capture_factory=factory, clock=lambda: next(clock)), made


def test_usb_locks_exposure_and_yields_frames():
    src, made = _usb([_img(value=1), _img(value=2)], device="/dev/video2", exposure=50, gain=4,
                     wb_temperature=4500, focus=10)
    cap = made["cap"]
    assert cap.device == "/dev/video2" and cap.api == cv2.CAP_V4L2
    assert cap.props[cv2.CAP_PROP_AUTO_EXPOSURE] == 1.0
    assert cap.props[cv2.CAP_PROP_EXPOSURE] == 50
    assert cap.props[cv2.CAP_PROP_GAIN] == 4
    assert cap.props[cv2.CAP_PROP_AUTO_WB] == 0
    assert cap.props[cv2.CAP_PROP_WB_TEMPERATURE] == 4500
    assert cap.props[cv2.CAP_PROP_AUTOFOCUS] == 0
    assert cap.props[cv2.CAP_PROP_FRAME_WIDTH] == 128 and cap.props[cv2.CAP_PROP_FRAME_HEIGHT] == 72
    assert cap.props[cv2.CAP_PROP_FOURCC] == cv2.VideoWriter_fourcc(*"MJPG")
    assert src.settings()["exposure"] == 50.0
    assert isinstance(src, FrameSource)
    it = src.frames()
    f0, f1 = next(it), next(it)
    assert (f0.index, f0.t, f0.source, int(f0.image[0, 0, 0])) == (0, 0.0, "usb:/dev/video2", 1)
    assert (f1.index, f1.t, int(f1.image[0, 0, 0])) == (1, 1.0, 2)
    with pytest.raises(FrameError, match=r"usb:/dev/video2: read failed after 2 frames"):
        next(it)
    src.close()
    src.close()
    assert cap.released == 1
    with pytest.raises(FrameError, match="after close"):
        src.read()


def test_usb_refusing_exposure_lock_is_refused_and_released():
    with pytest.raises(CameraUnavailable, match=r"usb:0: the camera refused manual exposure.*lock_exposure"):
        _usb(refuse={cv2.CAP_PROP_AUTO_EXPOSURE})
    src, made = _usb(refuse={cv2.CAP_PROP_AUTO_EXPOSURE}, lock_exposure=False)
    assert cv2.CAP_PROP_EXPOSURE not in made["cap"].props
    src.close()


def test_usb_camera_that_stays_on_auto_exposure_is_refused():
    class Stubborn(FakeCapture):
        def get(self, prop):
            return 3.0 if prop == cv2.CAP_PROP_AUTO_EXPOSURE else super().get(prop)

    made = {}

    def factory(device, api):
        made["cap"] = Stubborn(device, api)
        return made["cap"]

    with pytest.raises(CameraUnavailable, match=r"reports auto exposure \(CAP_PROP_AUTO_EXPOSURE=3\)"):
        UsbSource(UsbCameraConfig(), capture_factory=factory)
    assert made["cap"].released == 1


def test_usb_not_opened_names_the_device():
    with pytest.raises(CameraUnavailable, match=r"usb:3: cannot open the camera.*'video' group"):
        _usb(device=3, opened=False)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((72, 128, 3), np.float32), "dtype uint8"),
    (np.zeros((72, 128, 4), np.uint8), r"shape \(H, W, 3\)"),
    (np.zeros((8, 8, 3), np.uint8), "too small"),
    (np.zeros((100, 128, 3), np.uint8), "size 128x100, configured 128x72"),
])
def test_usb_bad_frames_raise_frame_error_naming_the_device(bad, match):
    src, _ = _usb([bad])
    with pytest.raises(FrameError, match=match) as info:
        src.read()
    assert "usb:0 frame 0" in str(info.value)


class FakePicamera2:
    instances: list["FakePicamera2"] = []

    def __init__(self, num, frames=None, fail_start=False):
        self.num = num
        self.frames = frames if frames is not None else [_img(value=v) for v in range(10)]
        self.fail_start = fail_start
        self.calls = []
        FakePicamera2.instances.append(self)

    def create_video_configuration(self, main, controls, buffer_count):
        self.calls.append(("create", main, controls, buffer_count))
        return {"main": main, "controls": controls}

    def configure(self, cfg):
        self.calls.append(("configure", cfg))

    def set_controls(self, controls):
        self.calls.append(("set_controls", dict(controls)))

    def start(self):
        if self.fail_start:
            raise RuntimeError("Camera in use")
        self.calls.append(("start",))

    def capture_array(self, name="main"):
        if not self.frames:
            raise RuntimeError("timeout waiting for a frame")
        return self.frames.pop(0)

    def stop(self):
        self.calls.append(("stop",))

    def close(self):
        self.calls.append(("close",))


def test_picamera2_fixes_exposure_gain_and_white_balance():
    cfg = PiCameraConfig(width=128, height=72, fps=50, exposure_us=3000, analogue_gain=1.5,
                         colour_gains=(2.0, 1.5), warmup_frames=2)
    src = Picamera2Source(cfg, camera_factory=FakePicamera2, clock=lambda: 7.0)
    cam = FakePicamera2.instances[-1]
    kind, main, controls, buffers = cam.calls[0]
    assert main == {"size": (128, 72), "format": "RGB888"}
    assert controls == {"AeEnable": False, "AwbEnable": False, "ExposureTime": 3000, "AnalogueGain": 1.5,
                        "ColourGains": (2.0, 1.5), "FrameDurationLimits": (20000, 20000)}
    assert ("set_controls", controls) in cam.calls and ("start",) in cam.calls
    f = src.read()  # 2 warm-up frames were discarded
    assert (f.index, f.t, f.source, int(f.image[0, 0, 0])) == (0, 7.0, "picamera2:0", 2)
    src.close(); src.close()
    assert cam.calls[-2:] == [("stop",), ("close",)]


def test_picamera2_errors():
    with pytest.raises(ValueError, match="does not fit in a frame"):
        Picamera2Source(PiCameraConfig(fps=60, exposure_us=20000), camera_factory=FakePicamera2)
    with pytest.raises(CameraUnavailable, match="picamera2:0: cannot start.*Camera in use"):
        Picamera2Source(PiCameraConfig(width=128, height=72),
                        camera_factory=lambda n: FakePicamera2(n, fail_start=True))
    assert FakePicamera2.instances[-1].calls[-1] == ("close",)
    src = Picamera2Source(PiCameraConfig(width=128, height=72, warmup_frames=0),
                          camera_factory=lambda n: FakePicamera2(n, frames=[_img(h=60)]))
    with pytest.raises(FrameError, match=r"picamera2:0 frame 0: shape \(60, 128, 3\)"):
        src.read()
    with pytest.raises(FrameError, match="picamera2:0: capture failed after 0 frames"):
        src.read()


def test_picamera2_absent_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "picamera2", None)  # import now raises ImportError
    with pytest.raises(CameraUnavailable, match=r"apt install python3-picamera2.*--system-site-packages"):
        load_picamera2()
    with pytest.raises(CameraUnavailable, match="picamera2"):
        Picamera2Source(PiCameraConfig())


def test_source_specs():
    assert parse_source_spec("usb:0").usb.device == 0
    c = parse_source_spec("usb:/dev/v4l/by-id/cam-video-index0")
    assert (c.source, c.usb.device) == ("usb", "/dev/v4l/by-id/cam-video-index0")
    assert parse_source_spec("picamera2").picamera2.camera_num == 0
    assert parse_source_spec("picamera2:1").picamera2.camera_num == 1
    assert parse_source_spec("replay:frames/").replay_path == Path("frames/")
    assert parse_source_spec("sim:cocked").sim_scenario == "cocked"
    base = CameraConfig(usb=UsbCameraConfig(exposure=33))
    assert parse_source_spec("usb:2", base).usb.exposure == 33
    for bad in ("usb", "webcam:0", "picamera2:x", "replay:"):
        with pytest.raises(ValueError, match="source"):
            parse_source_spec(bad)
    with pytest.raises(ValidationError):
        CameraConfig.model_validate({"source": "usb", "usb": {"exposur": 10}})


def test_open_source_replay_of_a_folder(tmp_path):
    from camera.sources import open_source
    for i in range(2):
        cv2.imwrite(str(tmp_path / f"p{i}.png"), _img(h=64, w=96, value=40 + 100 * i))
    src = open_source(parse_source_spec(f"replay:{tmp_path}"))
    try:
        frames = [f for _, f in zip(range(200), src.frames())]
    finally:
        src.close()
    assert frames and all(f.image.shape[:2] == (64, 96) for f in frames)
    levels = {int(f.image[0, 0, 0]) for f in frames}
    assert {40, 140} <= levels  # both photos were shown
    with pytest.raises(ValueError, match="replay_path"):
        open_source(CameraConfig(source="replay"))


def test_usb_source_over_a_real_cv2_videocapture(tmp_path):
    """The real cv2.VideoCapture path (a video file stands in for the device: it has no
    exposure control, so the lock is off here)."""
    path = tmp_path / "cam.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (128, 72))
    assert writer.isOpened()
    for v in (30, 130, 230):
        writer.write(_img(value=v))
    writer.release()
    src = UsbSource(UsbCameraConfig(device=str(path), backend="any", width=128, height=72,
                                    fourcc=None, lock_exposure=False, buffer_size=None))
    frames = []
    with pytest.raises(FrameError, match=f"usb:{path}: read failed after 3 frames"):
        for f in src.frames():
            frames.append(f)
    src.close()
    assert [f.index for f in frames] == [0, 1, 2]
    assert [round(float(f.image.mean()) / 10) for f in frames] == [3, 13, 23]
    assert frames[0].image.shape == (72, 128, 3) and frames[0].image.dtype == np.uint8
    assert frames[0].t <= frames[1].t <= frames[2].t
