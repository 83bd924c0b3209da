"""The frame-source interface: every camera (picamera2, USB, replay, simulated table) is one.

A source is given to the service by config; the service does not know which it has
(the gpiozero pin-factory pattern, see ../shared/design-notes.md).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
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
            The table service takes a time going back, or jumping forward by more than
            ``[vision] max_frame_gap_s``, for a step of the source's clock
            (controller/frame_clock.py): named, and carried over on its own frame clock.
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


def check_frame(frame: object) -> Frame:
    """Validate a frame a source yielded: a :class:`Frame` whose image passes
    :func:`check_image` and whose ``t`` is a finite real number of seconds.

    Args:
        frame: expected a :class:`Frame`.

    Returns:
        ``frame``, or a copy of it whose image is the ``(H, W)`` view of an ``(H, W, 1)``
        image (what :func:`check_image` returns: readers take ``(H, W, 3)`` or ``(H, W)``).

    Raises:
        FrameError: not a ``Frame``, an unusable image, or a time that is not a finite real
            number (``None``, a string, NaN, infinity: a throw would never time out or come to
            rest); the message names the frame's index and source.
    """
    if not isinstance(frame, Frame):
        raise FrameError(f"expected a camera.base.Frame from the source, got {type(frame).__name__}")
    where = f"frame {frame.index} of {frame.source or 'the source'}"
    t = frame.t
    if isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(float(t)):
        raise FrameError(f"{where}: time t must be a finite number of seconds, got {t!r}")
    image = check_image(frame.image, where)
    return frame if image is frame.image else replace(frame, image=image)


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
