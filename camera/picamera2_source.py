"""Raspberry Pi camera frame source (``picamera2`` on libcamera), exposure, gain and colour fixed.

picamera2 is not on PyPI in a usable form: on Raspberry Pi OS it comes from apt
(``sudo apt install python3-picamera2``) with libcamera's Python bindings, so the service's
venv is made with ``python3 -m venv --system-site-packages`` (deploy/install.sh) to see it.
It is imported only when a ``Picamera2Source`` is made, so every other part of the project
(and its tests) runs without it.

Settings are fixed from config and applied before the first frame: auto exposure and auto
white balance off (``AeEnable``/``AwbEnable`` false), ``ExposureTime`` (us), ``AnalogueGain``,
``ColourGains`` (red, blue) and a fixed frame duration, so that every frame of a throw has the
same brightness and colour (Picamera2 manual, "Camera controls"). Frames come as ``RGB888``,
which libcamera lays out in memory as [B, G, R]: OpenCV's BGR with no conversion.

Example::

    from camera.picamera2_source import PiCameraConfig, Picamera2Source
    src = Picamera2Source(PiCameraConfig(width=1280, height=720, fps=60, exposure_us=4000,
                                         analogue_gain=2.0, colour_gains=(1.9, 1.6)))
    for frame in src.frames():       # Frame(image uint8 (720, 1280, 3) BGR)
        ...
    src.close()
"""
from __future__ import annotations

import importlib
import time
from typing import Annotated, Callable, Iterator

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict

from camera.base import Frame, FrameError, check_image
from camera.errors import CameraUnavailable

__all__ = ["PiCameraConfig", "Picamera2Source", "load_picamera2"]

INSTALL_HINT = ("install it with `sudo apt install python3-picamera2` (Raspberry Pi OS) and make the "
                "venv with `python3 -m venv --system-site-packages` so it can see it (deploy/install.sh)")


class PiCameraConfig(BaseModel):
    """TOML table ``[camera.picamera2]``.

    Attributes:
        camera_num: which camera (0 = the first CSI camera).
        width, height: frame size, pixels.
        fps: frames per second (fixes ``FrameDurationLimits``); the exposure must fit in a frame.
        exposure_us: ``ExposureTime``, microseconds (short, to freeze a tumbling die).
        analogue_gain: ``AnalogueGain`` (1.0 = none).
        colour_gains: ``ColourGains`` (red, blue), fixed white balance.
        buffer_count: frame buffers of the video configuration.
        warmup_frames: frames discarded after start while the controls take effect.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    camera_num: int = Field(0, ge=0)
    width: int = Field(1280, ge=16)
    height: int = Field(720, ge=16)
    fps: float = Field(60.0, gt=0, le=240)
    exposure_us: int = Field(4000, gt=0)
    analogue_gain: float = Field(2.0, ge=1.0, le=64.0)
    colour_gains: Annotated[tuple[float, float], Strict(False)] = (1.8, 1.6)   # from a TOML array
    buffer_count: int = Field(4, ge=2)
    warmup_frames: int = Field(3, ge=0)

    def controls(self) -> dict[str, object]:
        """The libcamera controls applied from the first frame."""
        frame_us = int(round(1e6 / self.fps))
        if self.exposure_us > frame_us:
            raise ValueError(f"camera.picamera2: exposure_us={self.exposure_us} does not fit in a frame "
                             f"of {frame_us} us at {self.fps} fps")
        return {
            "AeEnable": False,
            "AwbEnable": False,
            "ExposureTime": int(self.exposure_us),
            "AnalogueGain": float(self.analogue_gain),
            "ColourGains": (float(self.colour_gains[0]), float(self.colour_gains[1])),
            "FrameDurationLimits": (frame_us, frame_us),
        }


def load_picamera2() -> type:
    """Import and return the ``Picamera2`` class.

    Raises:
        CameraUnavailable: picamera2 (or libcamera under it) is not importable; the message
            says how to install it.
    """
    try:
        module = importlib.import_module("picamera2")
    except ImportError as exc:
        raise CameraUnavailable(f"picamera2: cannot import the picamera2 module ({exc}); {INSTALL_HINT}") from exc
    return module.Picamera2


class Picamera2Source:
    """Frames from a Raspberry Pi camera (``camera.base.FrameSource``).

    Args:
        config: the camera settings.
        camera_factory: ``camera_num -> Picamera2-like object``; default imports picamera2
            (tests pass a fake with ``create_video_configuration``, ``configure``,
            ``set_controls``, ``start``, ``capture_array``, ``stop``, ``close``).
        clock: capture-time clock, seconds (default ``time.monotonic``).

    Raises:
        CameraUnavailable: picamera2 missing, or the camera fails to open or start.
        ValueError: the exposure does not fit in one frame at the configured fps.
    """

    def __init__(self, config: PiCameraConfig | None = None,
                 camera_factory: Callable[[int], object] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = c = config or PiCameraConfig()
        self.name = f"picamera2:{c.camera_num}"
        self._clock = clock
        controls = c.controls()
        factory = camera_factory or load_picamera2()
        try:
            self._cam = factory(c.camera_num)
        except (RuntimeError, IndexError, OSError) as exc:
            raise CameraUnavailable(f"{self.name}: cannot open the camera ({exc}); is it connected and "
                                    "enabled, and is the service user in the 'video' group?") from exc
        try:
            video = self._cam.create_video_configuration(
                main={"size": (c.width, c.height), "format": "RGB888"},
                controls=controls, buffer_count=c.buffer_count)
            self._cam.configure(video)
            self._cam.set_controls(controls)
            self._cam.start()
        except (RuntimeError, ValueError, OSError) as exc:
            self._cam.close()
            raise CameraUnavailable(f"{self.name}: cannot start the camera with {c.width}x{c.height} "
                                    f"at {c.fps} fps ({exc})") from exc
        self._index = 0
        self._closed = False
        for _ in range(c.warmup_frames):
            self._capture()

    def _capture(self) -> np.ndarray:
        try:
            return self._cam.capture_array("main")
        except (RuntimeError, OSError, TimeoutError) as exc:
            raise FrameError(f"{self.name}: capture failed after {self._index} frames ({exc})") from exc

    def read(self) -> Frame:
        """Capture one frame.

        Returns:
            ``Frame`` with ``image`` ``uint8`` ``(height, width, 3)`` BGR, ``t`` the monotonic time
            the capture returned, ``index`` counting from 0.

        Raises:
            FrameError: the capture failed or the array is not a valid ``(height, width, 3)``
                frame. The message names the camera.
        """
        if self._closed:
            raise FrameError(f"{self.name}: read after close")
        image = self._capture()
        t = self._clock()
        where = f"{self.name} frame {self._index}"
        image = check_image(image, where)
        c = self.config
        if image.ndim != 3 or image.shape[:2] != (c.height, c.width):
            raise FrameError(f"{where}: shape {image.shape}, configured ({c.height}, {c.width}, 3)")
        frame = Frame(image=image, t=t, index=self._index, source=self.name)
        self._index += 1
        return frame

    def frames(self) -> Iterator[Frame]:
        """Yield frames until closed."""
        while not self._closed:
            yield self.read()

    def close(self) -> None:
        """Stop and release the camera. Safe to call twice."""
        if not getattr(self, "_closed", True):
            self._closed = True
            try:
                self._cam.stop()
            finally:
                self._cam.close()
