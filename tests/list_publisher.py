"""A stand-in for the bus publisher in the service tests: it records what would go on the bus."""
from __future__ import annotations


class ListPublisher:
    """Records what would go on the bus: ``sent`` [(topic, body)], in order."""

    def __init__(self):
        self.sent: list[tuple[str, dict]] = []

    def publish(self, topic, body):
        self.sent.append((topic, body))
        return {"seq": len(self.sent), "topic": topic, "body": body}

    def close(self):
        pass

    def rolls(self):
        """The bodies published on ``roll``."""
        return [b for t, b in self.sent if t == "roll"]


def alarm_order_lamps(alarms):
    """A lamp driver (``controller.lamps.NullLampDriver``) that notes, at each lamp command, the
    alarm codes already published: ``calls`` [(lamp, mode, [code, ...])]. ``alarms()`` gives
    the alarm bodies published so far."""
    from controller.lamps import NullLampDriver

    class AlarmOrderLamps(NullLampDriver):
        def __init__(self):
            super().__init__()
            self.calls: list[tuple[str, str, list[str]]] = []

        def set_lamp(self, name, mode, brightness=1.0):
            super().set_lamp(name, mode, brightness)
            self.calls.append((name, mode, [b["code"] for b in alarms()]))

    return AlarmOrderLamps()

