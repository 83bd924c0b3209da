"""The roll bus: table -> settlement over ZeroMQ, journalled, replayable, CURVE-authenticated,
Ed25519-signed, exactly-once and in order.

    from bus.config import BusConfig
    from bus.publisher import RollPublisher
    from bus.subscriber import RollSubscriber
    from bus.keys import ensure_keys

See docs/bus.md.
"""
