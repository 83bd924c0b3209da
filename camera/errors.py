"""Errors of camera devices (in addition to ``camera.base.FrameError``)."""
from __future__ import annotations

from camera.base import FrameError


class CameraUnavailable(FrameError):
    """A camera that cannot be opened or set up: no such device, driver missing, a setting the
    device refuses (exposure lock). A ``FrameError`` so that the service treats it as a lost
    camera (safe state) rather than a crash. The message names the device and what to do."""
