"""Choose and open a frame source from config or a short spec (the pin-factory pattern).

The service is given one frame source and does not know which it is. Config (TOML)::

    [camera]
    source = "picamera2"            # picamera2 | usb | replay | sim

    [camera.picamera2]
    exposure_us = 4000
    analogue_gain = 2.0
    colour_gains = [1.8, 1.6]

    [camera.usb]
    device = "/dev/v4l/by-id/usb-046d_C922_Pro_Stream_Webcam-video-index0"
    exposure = 80

or on the command line a spec: ``picamera2``, ``picamera2:1``, ``usb:0``,
``usb:/dev/video2``, ``replay:PATH`` (folder of images or a video), ``sim:natural``.

Sources other than the two cameras are imported only when chosen: ``replay`` from
``camera.replay`` and ``sim`` from ``simulator.source``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

from camera.base import FrameSource
from camera.picamera2_source import PiCameraConfig
from camera.usb import UsbCameraConfig

__all__ = ["CameraConfig", "parse_source_spec", "open_source"]


class CameraConfig(BaseModel):
    """TOML table ``[camera]``.

    Attributes:
        source: which kind of source.
        picamera2: settings of the Raspberry Pi camera.
        usb: settings of a USB camera.
        replay_path: folder of images or video file for ``replay``.
        replay_fps: frames per second of a replay.
        sim_scenario, sim_seed: the simulated table's scenario and seed for ``sim``.
        sim_spare_dice: spare dice resting in the simulated table's dice cup, 0..3 (a table
            has at least five dice, the shooter selects two and the rest go back to the cup,
            9 NYCRR 5324.52(a)(5), (f)(3)).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    source: Literal["picamera2", "usb", "replay", "sim"] = "sim"
    picamera2: PiCameraConfig = PiCameraConfig()
    usb: UsbCameraConfig = UsbCameraConfig()
    replay_path: Annotated[Path, Strict(False)] | None = None   # strict, but from a TOML string
    replay_fps: float = Field(30.0, gt=0)
    sim_scenario: str = "natural"
    sim_seed: int = 0
    sim_spare_dice: int = Field(0, ge=0, le=3)


def parse_source_spec(spec: str, base: CameraConfig | None = None) -> CameraConfig:
    """A command-line spec -> ``CameraConfig``, keeping the other settings of ``base``.

    Raises:
        ValueError: an unknown kind or a malformed argument, naming the spec.
    """
    base = base or CameraConfig()
    kind, _, arg = spec.partition(":")
    if kind == "picamera2":
        num = 0
        if arg:
            if not arg.isdigit():
                raise ValueError(f"source {spec!r}: picamera2 takes a camera number, e.g. picamera2:0")
            num = int(arg)
        return base.model_copy(update={"source": "picamera2",
                                       "picamera2": base.picamera2.model_copy(update={"camera_num": num})})
    if kind == "usb":
        if not arg:
            raise ValueError(f"source {spec!r}: give a device, e.g. usb:0 or usb:/dev/video2")
        device: int | str = int(arg) if arg.isdigit() else arg
        return base.model_copy(update={"source": "usb", "usb": base.usb.model_copy(update={"device": device})})
    if kind == "replay":
        if not arg:
            raise ValueError(f"source {spec!r}: give a path, e.g. replay:frames/ or replay:throw.mp4")
        return base.model_copy(update={"source": "replay", "replay_path": Path(arg)})
    if kind == "sim":
        return base.model_copy(update={"source": "sim", "sim_scenario": arg or base.sim_scenario})
    raise ValueError(f"source {spec!r}: expected picamera2[:N], usb:N|usb:PATH, replay:PATH or sim[:SCENARIO]")


def open_source(config: CameraConfig) -> FrameSource:
    """Open the frame source ``config`` names.

    Raises:
        camera.errors.CameraUnavailable: a camera that cannot be opened.
        ValueError: ``replay`` without ``replay_path``.
    """
    if config.source == "picamera2":
        from camera.picamera2_source import Picamera2Source
        return Picamera2Source(config.picamera2)
    if config.source == "usb":
        from camera.usb import UsbSource
        return UsbSource(config.usb)
    if config.source == "replay":
        if config.replay_path is None:
            raise ValueError("camera.source = 'replay' needs camera.replay_path")
        from camera.replay import ReplaySource
        return ReplaySource(config.replay_path, fps=config.replay_fps)
    from simulator.source import SimSource
    return SimSource(config.sim_scenario, seed=config.sim_seed, spare_dice=config.sim_spare_dice)
