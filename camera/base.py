"""The frame-source interface: every camera (picamera2, USB, replay, simulated table) is one.

A source is given to the service by config; the service does not know which it has
(the gpiozero pin-factory pattern, see ../shared/design-notes.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Protocol, runtime_checkable

import numpy as np


class FrameError(ValueError):
    """A frame that cannot be used: wrong dtype, shape, empty or undecodable. The message
    names what is wrong and where the frame came from."""


@dataclass(slots=True)
class Frame:
    """One camera frame.

    Attributes:
        image: numpy ``uint8`` array, ``(H, W, 3)`` BGR or ``(H, W)`` grey.
        t: capture time in seconds (monotonic for live cameras; table time for the simulator).
        index: frame number from the source, starting at 0.
        source: a short name of where it came from (file path, ``usb:0``, ``sim:natural:3``).
        truth: ground truth where the source knows it (simulator), else ``None``.
    """

    image: np.ndarray
    t: float
    index: int
    source: str = ""
    truth: dict | None = field(default=None, repr=False)


def check_image(image: object, where: str = "frame") -> np.ndarray:
    """Validate a frame image and return it.

    Args:
        image: expected numpy ``uint8`` ``(H, W, 3)`` or ``(H, W)``.
        where: a name for the error message.

    Raises:
        FrameError: naming ``where`` and what is wrong (type, dtype, shape, size).
    """
    if not isinstance(image, np.ndarray):
        raise FrameError(f"{where}: expected a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise FrameError(f"{where}: expected dtype uint8, got {image.dtype}")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 3)):
        raise FrameError(f"{where}: expected shape (H, W, 3) or (H, W), got {image.shape}")
    if image.shape[0] < 16 or image.shape[1] < 16:
        raise FrameError(f"{where}: image too small: {image.shape[1]}x{image.shape[0]} pixels")
    return image


@runtime_checkable
class FrameSource(Protocol):
    """Anything that yields frames. ``frames()`` ends when the source is exhausted (replay)
    or closed; a live camera that stops delivering raises ``FrameError`` or stalls, which the
    service's health check notices."""

    def frames(self) -> Iterator[Frame]:
        """Yield frames in capture order."""
        ...

    def close(self) -> None:
        """Release the device. Safe to call twice."""
        ...
