"""gpiozero's mock pins with a bounded history, for ``[lamps] pin_factory = "mock"`` (no hardware:
``craps-table demo``, a bench machine without a Pi).

gpiozero's ``MockPin`` appends every change of level to its ``states`` list, for tests to assert
on, and never drops one: a table service driving the lamps on mock pins (a few changes per
throw, a lamp flashing at 2 Hz even more) grows without bound while it runs. The pins of
:class:`BoundedMockFactory` keep the newest :data:`MOCK_PIN_HISTORY` states only (a ``deque``:
``assert_states`` and the rest of ``MockPin`` work on it unchanged). A controller rule (the
service's memory), no regulation paragraph; what the lamps show is controller/lamps.py.
"""
from __future__ import annotations

from collections import deque

from gpiozero.pins.mock import MockFactory

#: level changes each mock pin keeps, the newest.
MOCK_PIN_HISTORY = 1000

_BOUNDED: dict[tuple[type, int], type] = {}


def bounded_pin_class(pin_class: type, history: int = MOCK_PIN_HISTORY) -> type:
    """``pin_class`` (a gpiozero ``MockPin`` class) whose ``states`` keeps the newest ``history``
    level changes (one class per ``(pin_class, history)``, made once).

    Raises:
        ValueError: ``history`` is not an int >= 1.
    """
    if isinstance(history, bool) or not isinstance(history, int) or history < 1:
        raise ValueError(f"history must be an int >= 1, got {history!r}")
    key = (pin_class, history)
    if key not in _BOUNDED:
        def clear_states(self) -> None:
            pin_class.clear_states(self)
            self.states = deque(self.states, maxlen=history)

        _BOUNDED[key] = type(f"Bounded{pin_class.__name__}", (pin_class,), {
            "clear_states": clear_states,
            "__doc__": f"{pin_class.__name__} keeping the newest {history} states (controller/mock_pins.py)."})
    return _BOUNDED[key]


class BoundedMockFactory(MockFactory):
    """gpiozero's ``MockFactory`` whose pins keep the newest ``history`` level changes (default
    :data:`MOCK_PIN_HISTORY`); ``revision`` and ``pin_class`` as ``MockFactory`` takes them.

    Raises:
        ValueError: ``history`` is not an int >= 1, or ``pin_class`` is not a mock pin class.
    """

    def __init__(self, revision=None, pin_class=None, history: int = MOCK_PIN_HISTORY) -> None:
        super().__init__(revision=revision, pin_class=pin_class)
        self.pin_class = bounded_pin_class(self.pin_class, history)
