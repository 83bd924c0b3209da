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
