"""Plain values the dice reader returns.

Data flows camera -> vision -> controller: these types carry no behaviour beyond
conversion to JSON, so that the controller and tests can build them freely.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True, slots=True)
class DieReading:
    """One die found in a frame.

    Attributes:
        value: the upper face 1..6, or ``None`` when the reader cannot tell. A wrong number
            becomes a wrong payout, so an unsure read is ``None`` with a low ``confidence``.
        bbox: ``(x0, y0, x1, y1)`` in pixels, integer, x1/y1 exclusive, covering the whole die.
        centre: ``(x, y)`` in pixels (float) of the upper face's centre.
        confidence: 0.0 .. 1.0, the reader's belief that ``value`` is right (for a ``None``
            value: that a die is there at all).
        flat: ``True`` when the upper face is seen square-on (the die rests flat on the
            surface); ``False`` for a die tilted against a wall, a chip or another die
            (a candidate cocked die, 9 NYCRR 5324.52(h)(1)(i)).
        side_px: the upper face's side length in pixels (float), used by the stacked and
            cocked checks against the size expected from calibration.
        angle_deg: rotation of the upper face in the image, degrees in [0, 90).
    """

    value: int | None
    bbox: tuple[int, int, int, int]
    centre: tuple[float, float]
    confidence: float
    flat: bool
    side_px: float = 0.0
    angle_deg: float = 0.0
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def moved(self, dx: int, dy: int) -> "DieReading":
        """The same reading with its ``bbox`` and ``centre`` moved by ``(dx, dy)`` pixels: a
        reading of a crop whose pixel (0, 0) is frame pixel ``(dx, dy)``, in frame pixels."""
        b = self.bbox
        return replace(self, bbox=(b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy),
                       centre=(self.centre[0] + dx, self.centre[1] + dy))

    def to_json(self) -> dict:
        """Return the reading as the JSON object of ``craps-table read --json``."""
        return {
            "value": self.value,
            "bbox": [int(v) for v in self.bbox],
            "centre": [round(float(self.centre[0]), 1), round(float(self.centre[1]), 1)],
            "confidence": round(float(self.confidence), 4),
            "flat": bool(self.flat),
        }
