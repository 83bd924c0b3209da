"""USB (UVC) camera frame source: ``cv2.VideoCapture`` with exposure, gain and white balance locked.

A dice reader needs the same brightness on every frame: auto-exposure hunting while a hand
passes over the table changes pip contrast, and auto white balance drifts on the green felt.
So exposure is set to manual with a fixed value, auto white balance is off, and autofocus is
off; a camera that refuses the exposure lock is refused (``lock_exposure = true``), rather
than run with a picture that changes under the reader.

Give the device by a stable name where possible: ``/dev/v4l/by-id/usb-...-video-index0``
(udev makes it) rather than ``0``, which can change with plugging order.

Example::

    from camera.usb import UsbCameraConfig, UsbSource
    src = UsbSource(UsbCameraConfig(device="/dev/v4l/by-id/usb-046d_C922-video-index0",
                                    width=1280, height=720, fps=60, exposure=80))
    for frame in src.frames():       # Frame(image uint8 (720, 1280, 3) BGR, t=monotonic s)
        ...
    src.close()

V4L2 notes (through OpenCV's V4L2 backend): ``CAP_PROP_AUTO_EXPOSURE`` takes the V4L2 menu
value, 1 = manual (``V4L2_EXPOSURE_MANUAL``), 3 = aperture priority (auto); some OpenCV
builds want 0.25 for manual, hence ``manual_exposure_value``. ``CAP_PROP_EXPOSURE`` is
``exposure_time_absolute`` in units of 100 microseconds. ``v4l2-ctl -d DEVICE -l`` lists what
the camera accepts.
"""
from __future__ import annotations

import time
from typing import Callable, Iterator, Literal

import cv2
from pydantic import BaseModel, ConfigDict, Field

from camera.base import Frame, FrameError, check_image
from camera.errors import CameraUnavailable

__all__ = ["UsbCameraConfig", "UsbSource"]

#: ``V4L2_CID_EXPOSURE_AUTO`` menu value of auto exposure (aperture priority), videodev2.h.
V4L2_EXPOSURE_APERTURE_PRIORITY = 3.0


class UsbCameraConfig(BaseModel):
    """TOML table ``[camera.usb]``.

    Attributes:
        device: V4L2 index (``0`` = ``/dev/video0``) or a device path.
        backend: ``"v4l2"`` (Linux) or ``"any"`` (let OpenCV choose).
        width, height: frame size, pixels; frames of another size are refused when
            ``require_size`` (the calibration's homography is for one size).
        fps: frames per second asked of the camera.
        fourcc: pixel format asked of the camera (``"MJPG"`` reaches 60 fps at 720p on most
            UVC cameras; ``"YUYV"`` is uncompressed); ``None`` leaves the default.
        lock_exposure: set manual exposure; refuse a camera that does not accept it.
        manual_exposure_value: the ``CAP_PROP_AUTO_EXPOSURE`` value meaning manual.
        exposure: ``CAP_PROP_EXPOSURE``, V4L2 units of 100 us (``80`` = 8 ms).
        gain: ``CAP_PROP_GAIN`` in the camera's units, ``None`` = leave.
        wb_temperature: white balance in kelvin (auto white balance off), ``None`` = leave auto.
        focus: manual focus in the camera's units (autofocus off), ``None`` = leave.
        buffer_size: ``CAP_PROP_BUFFERSIZE``; 1 keeps the newest frame, not a stale queue.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    device: int | str = 0
    backend: Literal["v4l2", "any"] = "v4l2"
    width: int = Field(1280, ge=16)
    height: int = Field(720, ge=16)
    fps: float = Field(60.0, gt=0)
    fourcc: str | None = Field("MJPG", min_length=4, max_length=4)
    require_size: bool = True
    lock_exposure: bool = True
    manual_exposure_value: float = 1.0
    exposure: float = Field(80.0, gt=0)
    gain: float | None = None
    wb_temperature: int | None = Field(None, ge=1000, le=15000)
    focus: float | None = None
    buffer_size: int | None = Field(1, ge=1)


class UsbSource:
    """Frames from a USB camera (``camera.base.FrameSource``).

    Args:
        config: the camera settings.
        capture_factory: ``(device, api_preference) -> capture``; default ``cv2.VideoCapture``
            (tests pass a fake with ``isOpened``, ``set``, ``get``, ``read``, ``release``).
        clock: capture-time clock, seconds (default ``time.monotonic``).

    Raises:
        CameraUnavailable: the device does not open, or refuses the exposure lock.
    """

    def __init__(self, config: UsbCameraConfig | None = None,
                 capture_factory: Callable[[int | str, int], object] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config or UsbCameraConfig()
        self.name = f"usb:{self.config.device}"
        self._clock = clock
        api = cv2.CAP_V4L2 if self.config.backend == "v4l2" else cv2.CAP_ANY
        factory = capture_factory or cv2.VideoCapture
        self._cap = factory(self.config.device, api)
        if not self._cap.isOpened():
            self._cap.release()
            raise CameraUnavailable(
                f"{self.name}: cannot open the camera (no such device, in use, or no permission: "
                "the service user must be in the 'video' group)")
        try:
            self._configure()
        except CameraUnavailable:
            self._cap.release()
            raise
        self._index = 0
        self._closed = False

    def _set(self, prop: int, value: float, what: str, required: bool = False) -> bool:
        ok = bool(self._cap.set(prop, value))
        if not ok and required:
            raise CameraUnavailable(f"{self.name}: the camera refused {what}={value}")
        return ok

    def _configure(self) -> None:
        c = self.config
        if c.fourcc is not None:
            self._set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*c.fourcc), "fourcc")
        self._set(cv2.CAP_PROP_FRAME_WIDTH, c.width, "width")
        self._set(cv2.CAP_PROP_FRAME_HEIGHT, c.height, "height")
        self._set(cv2.CAP_PROP_FPS, c.fps, "fps")
        if c.buffer_size is not None:
            self._set(cv2.CAP_PROP_BUFFERSIZE, c.buffer_size, "buffer size")
        if c.lock_exposure:
            hint = " (set lock_exposure = false to run this camera on auto exposure, not advised)"
            try:
                self._set(cv2.CAP_PROP_AUTO_EXPOSURE, c.manual_exposure_value,
                          "manual exposure (CAP_PROP_AUTO_EXPOSURE)", required=True)
                self._set(cv2.CAP_PROP_EXPOSURE, c.exposure, "exposure (CAP_PROP_EXPOSURE)", required=True)
                mode = float(self._cap.get(cv2.CAP_PROP_AUTO_EXPOSURE))
                if mode == V4L2_EXPOSURE_APERTURE_PRIORITY and c.manual_exposure_value != mode:
                    raise CameraUnavailable(f"{self.name}: the camera accepted manual exposure but reports "
                                            f"auto exposure (CAP_PROP_AUTO_EXPOSURE={mode:g})")
            except CameraUnavailable as exc:
                raise CameraUnavailable(str(exc) + hint) from None
        if c.gain is not None:
            self._set(cv2.CAP_PROP_GAIN, c.gain, "gain", required=True)
        if c.wb_temperature is not None:
            self._set(cv2.CAP_PROP_AUTO_WB, 0, "auto white balance off", required=True)
            self._set(cv2.CAP_PROP_WB_TEMPERATURE, c.wb_temperature, "white balance temperature", required=True)
        if c.focus is not None:
            self._set(cv2.CAP_PROP_AUTOFOCUS, 0, "autofocus off", required=True)
            self._set(cv2.CAP_PROP_FOCUS, c.focus, "focus", required=True)

    def settings(self) -> dict[str, float]:
        """What the driver reports now: width, height, fps, auto_exposure, exposure, gain."""
        props = {"width": cv2.CAP_PROP_FRAME_WIDTH, "height": cv2.CAP_PROP_FRAME_HEIGHT,
                 "fps": cv2.CAP_PROP_FPS, "auto_exposure": cv2.CAP_PROP_AUTO_EXPOSURE,
                 "exposure": cv2.CAP_PROP_EXPOSURE, "gain": cv2.CAP_PROP_GAIN}
        return {k: float(self._cap.get(p)) for k, p in props.items()}

    def read(self) -> Frame:
        """Read one frame.

        Returns:
            ``Frame`` with ``image`` ``uint8`` ``(height, width, 3)`` BGR (or ``(H, W)`` grey),
            ``t`` the monotonic time the read returned, ``index`` counting from 0.

        Raises:
            FrameError: the read failed (device unplugged, timeout), the image is not a valid
                frame, or its size is not ``width`` x ``height`` (``require_size``). The message
                names the device.
        """
        if self._closed:
            raise FrameError(f"{self.name}: read after close")
        ok, image = self._cap.read()
        t = self._clock()
        if not ok or image is None:
            raise FrameError(f"{self.name}: read failed after {self._index} frames "
                             "(camera unplugged, or no frame within the driver's timeout)")
        image = check_image(image, f"{self.name} frame {self._index}")
        c = self.config
        if c.require_size and image.shape[:2] != (c.height, c.width):
            raise FrameError(f"{self.name} frame {self._index}: size {image.shape[1]}x{image.shape[0]}, "
                             f"configured {c.width}x{c.height} (the camera does not offer that mode)")
        frame = Frame(image=image, t=t, index=self._index, source=self.name)
        self._index += 1
        return frame

    def frames(self) -> Iterator[Frame]:
        """Yield frames until closed; a failed read raises ``FrameError`` (see :meth:`read`)."""
        while not self._closed:
            yield self.read()

    def close(self) -> None:
        """Release the camera. Safe to call twice."""
        if not getattr(self, "_closed", True):
            self._closed = True
            self._cap.release()
