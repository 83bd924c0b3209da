"""Property test of the subscriber's ordering logic: whatever order and repetition messages
arrive in (live stream and replays interleaved), ``receive`` yields 1, 2, 3... each once."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bus.config import BusConfig
from bus.subscriber import RollSubscriber


_ids = itertools.count()


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[BusConfig, Path]:
    tmp = tmp_path_factory.mktemp("ordering")
    return BusConfig.local(tmp, transport="tcp"), tmp  # nothing listens on these endpoints


@st.composite
def arrivals(draw):
    n = draw(st.integers(1, 40))
    order = draw(st.permutations(list(range(1, n + 1))))
    dups = draw(st.lists(st.integers(1, n), max_size=20))
    seq = list(order) + dups
    seq = draw(st.permutations(seq))
    # after how many arrivals the application calls receive(0) (repeatedly until None)
    polls = draw(st.sets(st.integers(0, len(seq)), max_size=10))
    return n, seq, polls


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=arrivals(), heartbeat_at=st.integers(0, 60))
def test_any_arrival_order_delivers_each_once_in_order(base, case, heartbeat_at):
    n, seq, polls = case
    cfg, tmp = base
    delivered: list[int] = []
    with RollSubscriber(cfg, tmp / f"s{next(_ids)}.sqlite") as sub:
        def drain():
            while (env := sub.receive(0)) is not None:
                delivered.append(env["seq"])
        for i, s in enumerate(seq):
            if i in polls:
                drain()
            if i == heartbeat_at:
                sub._offer({"seq": n, "topic": "heartbeat", "body": {"last_seq": n}}, "live")
            sub._offer({"seq": s, "topic": "roll", "body": {}}, "live" if i % 2 else "replay")
            assert delivered == list(range(1, len(delivered) + 1))  # never out of order or twice
        drain()
        assert delivered == list(range(1, n + 1))
        assert sub.stats["duplicates"] == len(seq) - n


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=arrivals(), cap=st.integers(1, 5))
def test_bounded_buffer_never_breaks_order(base, case, cap):
    """With a tiny out-of-order buffer some messages are shed (they would come again by
    replay); what is delivered is still 1, 2, 3... each once, and the next message needed is
    never the one shed: once it arrives it is delivered (a buffer that shed everything when
    full delivered nothing and passed the first check)."""
    n, seq, polls = case
    cfg, tmp = base
    cfg = cfg.model_copy(update={"max_pending": cap})
    delivered: list[int] = []
    with RollSubscriber(cfg, tmp / f"c{next(_ids)}.sqlite") as sub:
        for i, s in enumerate(seq):
            needed = s == len(delivered) + 1
            sub._offer({"seq": s, "topic": "roll", "body": {}}, "live")
            if needed or i in polls or i == len(seq) - 1:
                while (env := sub.receive(0)) is not None:
                    delivered.append(env["seq"])
            if needed:
                assert len(delivered) >= s, (s, delivered)
        assert delivered == list(range(1, len(delivered) + 1))
        assert len(sub._pending) <= cap
    assert 1 not in seq or delivered[:1] == [1]


def test_a_full_buffer_keeps_the_next_message_needed(base):
    """``max_pending`` 1, messages 2, 1, 3 arrive: 2 is held, then shed for 1 (the next
    needed), which is delivered; 3 is held until 2 comes again by replay."""
    cfg, tmp = base
    cfg = cfg.model_copy(update={"max_pending": 1})
    delivered: list[int] = []
    with RollSubscriber(cfg, tmp / f"f{next(_ids)}.sqlite") as sub:
        for s in (2, 1, 3):
            sub._offer({"seq": s, "topic": "roll", "body": {}}, "live")
            while (env := sub.receive(0)) is not None:
                delivered.append(env["seq"])
        assert delivered == [1] and sorted(sub._pending) == [3]
