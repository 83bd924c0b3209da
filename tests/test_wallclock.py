"""The wall clock of the bus's stamps (bus/wallclock.py): a step (an NTP step, a clock set by
hand, a Pi that booted without a battery-backed clock, behind the journal's last stamp) is
named: a WARNING, a count, the step listeners (the table's metric). Fake clocks; the publisher
on loopback (ipc) with its own journal in tmp_path."""
from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bus.config import BusConfig
from bus.journal import Journal
from bus.publisher import RollPublisher
from bus.wallclock import WallClock
from controller.metrics import TableMetrics

T0 = datetime(2026, 12, 4, 5, 0, tzinfo=timezone.utc).timestamp()


class FakeClocks:
    """A wall clock and a monotonic clock moved by hand."""

    def __init__(self, wall: float = T0, mono: float = 100.0) -> None:
        self.w, self.m = wall, mono

    def pass_(self, s: float) -> None:
        self.w += s
        self.m += s

    def clock(self, **kw) -> WallClock:
        return WallClock("test stamps", wall=lambda: self.w, mono=lambda: self.m, **kw)


def test_time_passing_and_slewing_are_not_steps():
    c = FakeClocks()
    wc = c.clock()
    assert wc.now() == datetime.fromtimestamp(T0, timezone.utc)
    c.pass_(0.5)
    wc.now()
    c.pass_(3600.0)
    c.w += 2.0                 # 2 s of slewing over an hour: under 1 s + 0.1 % of 3600 s
    wc.now()
    assert wc.steps == 0 and wc.last_step_s is None


@pytest.mark.parametrize("step", [-3600.0, -1.5, 1.5, 1e6])
def test_a_step_is_named_and_the_stamp_is_the_clocks(step, caplog):
    """Before: ``utc_now_iso`` stamped whatever the clock said and nothing noticed a step."""
    c = FakeClocks()
    wc = c.clock()
    seen = []
    wc.add_step_listener(seen.append)
    wc.now()
    c.pass_(0.1)
    c.w += step
    with caplog.at_level(logging.WARNING, logger="bus.wallclock"):
        got = wc.now()
    assert got == datetime.fromtimestamp(c.w, timezone.utc)   # not altered
    assert wc.steps == 1 and wc.last_step_s == pytest.approx(step) and seen == [pytest.approx(step)]
    word = "went back" if step < 0 else "jumped forward"
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert f"test stamps: the wall clock {word} by {abs(step):.3f} s" in caplog.records[0].getMessage()
    c.pass_(0.1)
    wc.now()                   # once per step
    assert wc.steps == 1


def test_a_clock_behind_a_recorded_stamp_is_named_once_until_it_passes_it(caplog):
    """A Pi without a clock battery boots at 1970, or at fake-hwclock's last saved time, until NTP
    answers: its first stamps are behind those it wrote before the reboot."""
    c = FakeClocks(wall=0.0)     # 1970
    wc = c.clock()
    wc.not_before(datetime.fromtimestamp(T0, timezone.utc).isoformat(), "the journal's last message")
    with caplog.at_level(logging.WARNING, logger="bus.wallclock"):
        wc.now()
        c.pass_(1.0)
        wc.now()
    assert wc.steps == 1 and wc.last_step_s == pytest.approx(-T0)
    assert len(caplog.records) == 1
    assert "behind the journal's last message" in caplog.records[0].getMessage()
    c.w = T0 + 5                 # NTP steps it forward: the step itself is named, the floor passed
    c.m += 1
    wc.now()
    assert wc.steps == 2


def test_a_bad_tolerance_or_recorded_stamp(caplog):
    with pytest.raises(ValueError, match="tolerance_s"):
        WallClock("x", tolerance_s=float("nan"))
    wc = FakeClocks().clock()
    with caplog.at_level(logging.WARNING, logger="bus.wallclock"):
        wc.not_before("yesterday", "a stamp")
    assert "not read" in caplog.text and wc.now() is not None and wc.steps == 0


def _cfg(tmp_path: Path) -> BusConfig:
    return BusConfig.local(tmp_path / "bus", heartbeat_s=0.1)


def test_publisher_names_a_clock_behind_its_journal_and_a_step(tmp_path, caplog):
    """Before: a publisher restarted on a clock behind its journal (a reboot without a clock
    battery) stamped envelopes earlier than those already journalled, and a step of the clock
    while it ran went by, both without a word. Now: each is a WARNING, counted in
    ``stats["clock_steps"]``, and told to the clock's listeners (the table's metric)."""
    cfg = _cfg(tmp_path)
    with RollPublisher(cfg, auto_heartbeat=False) as pub:
        env = pub.publish("state", {"event": "start"})
    c = FakeClocks(wall=datetime.fromisoformat(env["ts"]).timestamp() - 3600.0)   # an hour behind
    metrics = TableMetrics()
    clock = c.clock()
    clock.add_step_listener(lambda s: metrics.clock_jump("wall"))
    with caplog.at_level(logging.WARNING, logger="bus.wallclock"):
        with RollPublisher(cfg, auto_heartbeat=False, clock=clock) as pub:
            assert pub.stats["clock_steps"] == 1
            assert "behind the last message of journal" in caplog.text and "(seq 1)" in caplog.text
            c.pass_(0.2)
            env2 = pub.publish("state", {"event": "x"})
            assert env2["ts"] < env["ts"]                    # the clock's own reading, named
            c.pass_(0.2)
            c.w += 7200.0                                    # NTP steps it forward
            env3 = pub.publish("state", {"event": "y"})
            assert pub.stats["clock_steps"] == 2 and "jumped forward by 7200.000 s" in caplog.text
            assert env3["ts"] > env["ts"]
    assert metrics.registry.get_sample_value("craps_table_clock_jumps_total", {"clock": "wall"}) == 2.0
    j = Journal(cfg.journal_path, readonly=True)
    try:
        assert j.last_ts() == env3["ts"]
    finally:
        j.close()


def test_a_table_clock_that_ran_ahead_does_not_hide_a_journal_restored_later(tmp_path, caplog):
    """The table's clock ran a year ahead (a wrong RTC) while it published seq 4..8, and was set
    right; then its journal was restored from a copy at seq 3. Before: the subscriber kept the
    year-ahead stamp as the newest seen, so the restored journal's new seq 4 (stamped now) was
    taken for an old message sent again and dropped as a duplicate: the new roll lost, nothing
    named. Now the stamps a year ahead are named (WARNING, ``stats["ts_ahead"]``) and count only
    up to 5 s ahead of the subscriber's clock, and the new seq 4 stops it (journal_rollback)."""
    import time

    from bus.subscriber import BusError, RollSubscriber
    from test_bus_basic import _backup_at_3_then_8_delivered

    year = 365 * 86400.0
    ahead = WallClock("table ahead", wall=lambda: time.time() + year)
    stats: dict = {}
    with caplog.at_level(logging.WARNING, logger="bus.subscriber"):
        cfg, state, restore = _backup_at_3_then_8_delivered(tmp_path, clock=ahead, stats=stats)
    assert stats["ts_ahead"] >= 1
    assert "ahead of this subscriber's clock" in caplog.text
    restore()
    alarms = []
    # the restore some time later (30 s here), on the clock set right
    later = WallClock("table set right", wall=lambda: time.time() + 30.0)
    with RollPublisher(cfg, clock=later) as pub:
        assert pub.last_seq == 3
        with RollSubscriber(cfg, state, on_alarm=lambda c, d: alarms.append((c, d))) as sub:
            pub.publish("roll", {"n": 100})                      # seq 4 again, a new roll
            with pytest.raises(BusError, match="went back"):
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    sub.receive(0.1)
    assert alarms and alarms[0][0] == "journal_rollback" and alarms[0][1]["seen"] == 8
