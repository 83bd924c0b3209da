"""The one check of a lamp brightness, shared by every lamp driver (GPIO, null, firmware).

Kept free of imports beyond the standard library so that ``firmware_bridge.lamps`` can use it
without pulling in the controller's vision stack.
"""
from __future__ import annotations

import math
import numbers


def check_brightness(name: str, brightness: object) -> float:
    """Validate the brightness asked for lamp ``name``.

    Args:
        name: the lamp name (only used in the error message).
        brightness: a fraction of full brightness, 0.0..1.0 (an ``int`` or ``float``, not a
            ``bool``: ``True`` is a mistake, not "full").

    Returns:
        the brightness as a ``float`` in 0.0..1.0.

    Raises:
        ValueError: naming the lamp and the value, when ``brightness`` is not a finite real
            number within 0..1 (a string, ``None``, a bool, NaN, an infinity, < 0 or > 1).
    """
    if isinstance(brightness, bool) or not isinstance(brightness, numbers.Real):
        raise ValueError(f"lamp {name}: brightness {brightness!r} is not a number within 0..1")
    value = float(brightness)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"lamp {name}: brightness {brightness!r} is outside 0..1")
    return value
