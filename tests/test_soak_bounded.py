"""Long-run bounds: what the table service keeps per throw, per call or per message must stay
bounded after many of them (the Pi runs the service for weeks; bench/soak_memory.py measures the
whole process). Each test makes many more operations than the structure may hold and asserts its
size."""
from __future__ import annotations

import pytest

from controller.boxperson import CallRegistry, DecisionError


def _decided_calls(registry: CallRegistry, n: int) -> None:
    for i in range(n):
        rid = f"table-1-{i:08d}"
        registry.open(rid, "face-unreadable", b"png")
        registry.answer(rid, who="ann", dice=[3, 4])


def test_call_registry_keeps_a_bounded_number_of_decided_calls():
    registry = CallRegistry(timeout_s=60.0, clock=lambda: 0.0)
    _decided_calls(registry, 1500)
    assert len(registry._decided) == 1000   # controller.boxperson.KEEP_DONE
    assert registry.pending() == []
    # the newest are still known: an answer to one is refused naming its decision
    with pytest.raises(DecisionError, match=r"table-1-00001499: already decided \(dice by ann"):
        registry.answer("table-1-00001499", who="bob", void=True)
    assert registry.decision("table-1-00000500").dice == (3, 4)
    # the oldest are forgotten: refused all the same, with no decision taken
    assert registry.decision("table-1-00000499") is None
    with pytest.raises(DecisionError, match="table-1-00000000: no pending boxperson call"):
        registry.answer("table-1-00000000", who="bob", void=True)


def test_call_registry_keeps_a_bounded_number_of_timed_out_and_superseded_calls():
    now = [0.0]
    registry = CallRegistry(timeout_s=1.0, clock=lambda: now[0], keep=20)
    for i in range(100):           # each call times out
        registry.open(f"t-{i:08d}", "face-unreadable", b"")
        now[0] += 2.0
        assert [d.outcome for d in registry.expire()] == ["timeout"]
    for i in range(100, 200):      # each call superseded by the next verdict
        registry.open(f"t-{i:08d}", "face-unreadable", b"")
        assert [d.roll_id for d in registry.supersede(f"t-{i + 1:08d}")] == [f"t-{i:08d}"]
    assert len(registry._decided) == 20 and len(registry._why) == 20
    assert list(registry._decided)[0] == "t-00000180" and list(registry._why)[0] == "t-00000180"
    assert registry.decision("t-00000199").outcome == "superseded"
    with pytest.raises(DecisionError, match="t-00000199: superseded: "):
        registry.answer("t-00000199", who="ann", dice=[1, 1])
    with pytest.raises(DecisionError, match="t-00000179: no pending boxperson call"):
        registry.answer("t-00000179", who="ann", dice=[1, 1])
    # a call still pending is never forgotten, however many are decided after it
    registry.open("t-00000300", "face-unreadable", b"")
    _decided_calls(registry, 50)
    assert [c.roll_id for c in registry.pending()] == ["t-00000300"]


@pytest.mark.parametrize("keep", [0, -1, 1.5, True, "10"])
def test_call_registry_refuses_a_bad_keep(keep):
    with pytest.raises(ValueError, match="keep must be an int >= 1"):
        CallRegistry(keep=keep)


def test_mock_pin_lamps_keep_a_bounded_history():
    """[lamps] pin_factory = "mock" (the demo, a bench machine without a Pi): gpiozero's mock pins
    append every level change to ``states``; the service's pins keep the newest 1,000."""
    from controller.config import parse_config
    from controller.service_cli import build_lamp_driver

    cfg = parse_config({"lamps": {"driver": "gpiozero", "pin_factory": "mock"}})
    driver = build_lamp_driver(cfg)
    try:
        for _ in range(1500):      # 3,000 level changes of one lamp's pin
            driver.set_lamp("point-4", "on")
            driver.set_lamp("point-4", "off")
        pin = driver._board.point_4.pin
        assert len(pin.states) == 1000   # controller.mock_pins.MOCK_PIN_HISTORY
        assert [s.state for s in list(pin.states)[-2:]] == [True, False]
        pin.assert_states([True, False, True, False])  # the newest, as gpiozero's tests read them
    finally:
        driver.close()


def test_bounded_mock_factory_refuses_a_bad_history():
    from controller.mock_pins import BoundedMockFactory

    for bad in (0, -5, 2.0, True):
        with pytest.raises(ValueError, match="history must be an int >= 1"):
            BoundedMockFactory(history=bad)


def test_refusal_log_remembers_a_bounded_number_of_refused_keys(monkeypatch, caplog):
    """The CURVE refusal log (bus/keys.py) keeps one entry per refusal message, and each refused
    client key makes its own: a stream of keys must not grow it for as long as the table runs."""
    import logging

    import bus.keys as keys

    now = {"t": 100.0}
    monkeypatch.setattr(keys.time, "monotonic", lambda: now["t"])
    caplog.set_level(logging.WARNING, logger="test.auth")
    log = keys.RefusalLog(logging.getLogger("test.auth"), "roll bus", every_s=60.0)
    for i in range(1000):                  # 1,000 keys within a minute
        log.debug("%s (CURVE auth_callback) domain=%s client_key=%s", "DENIED", "*", f"k{i}".encode())
        now["t"] += 0.01
    assert len(log._last) == 256           # RefusalLog.KEEP
    assert len([r for r in caplog.records if r.levelname == "WARNING"]) == 1000   # each new key warned
    log.debug("%s (CURVE auth_callback) domain=%s client_key=%s", "DENIED", "*", b"k999")   # the newest:
    assert len(caplog.records) == 1000    # held back, as before
    now["t"] += 120.0                      # later: the old entries go first
    for i in range(1000, 1010):
        log.debug("%s (CURVE auth_callback) domain=%s client_key=%s", "DENIED", "*", f"k{i}".encode())
    assert len(log._last) == 10 and len(caplog.records) == 1010
