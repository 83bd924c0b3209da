"""Errors of camera devices (in addition to ``camera.base.FrameError``)."""
from __future__ import annotations

from camera.base import FrameError


class CameraUnavailable(FrameError):
    """A camera that cannot be opened or set up: no such device, driver missing, a setting the
    device refuses (exposure lock). A ``FrameError`` so that the service treats it as a lost
    camera (safe state) rather than a crash. The message names the device and what to do."""


class BadInputError(FrameError):
    """Frame input given by the user that cannot be used at all: a replay folder whose image
    files are all truncated or corrupt, a replay photo that cannot be read. A ``FrameError``
    (the service raises its "source" fault as for any source failure), but commands report it
    as bad input (exit status 2) rather than as a failed camera (1). The message names the
    path and what is wrong."""
