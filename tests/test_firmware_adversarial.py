"""The host link against a hostile or broken MCU on a raw pseudo-terminal: garbage, frames
split across reads, bad CRCs, CRC-valid frames of unknown type or wrong length, a flood with no
delimiter, an MCU that goes silent and comes back. Every loop is bounded in count and time."""
from __future__ import annotations

import logging
import os
import random
import select
import struct
import threading
import time
import tty

import pytest

from firmware_bridge.config import BridgeConfig
from firmware_bridge.link import FirmwareLink
from firmware_bridge.protocol import (
    Capability,
    MAX_ENCODED,
    PROTOCOL_VERSION,
    Ack,
    FrameDecoder,
    Heartbeat,
    Hello,
    InputEvent,
    InputId,
    MsgType,
    Nak,
    NakReason,
    Received,
    Rejected,
    Version,
    encode_frame,
    encode_raw,
)

BOOT = 0x1234ABCD
CAPS = int(Capability.WALL_SENSOR | Capability.SHOOTER_BUTTON)


class RawMcu:
    """A scripted MCU on the master side of a pty: answers HELLO and HEARTBEAT (unless
    ``silent``), records every frame the host sends, and lets a test write raw bytes."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self.slave)
        self.silent = False
        self.rx: list[Received | Rejected] = []
        self._lock = threading.Lock()
        self._dec = FrameDecoder()
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()

    def write(self, data: bytes, chunk: int = 4096) -> None:
        """Write ``data`` to the host, waiting (at most 10 s) while the pty buffer is full."""
        end = time.monotonic() + 10
        view = memoryview(data)
        while view and time.monotonic() < end:
            try:
                n = os.write(self.master, view[:chunk])
                view = view[n:]
            except BlockingIOError:
                time.sleep(0.001)
        assert not view, "the host stopped reading"

    def send(self, msg, seq: int = 0) -> None:
        self.write(b"\x00" + encode_frame(msg, seq))

    def frames(self, kind) -> list:
        with self._lock:
            return [i for i in self.rx if isinstance(i, Received) and isinstance(i.message, kind)]

    def _main(self) -> None:
        while not self._stop.is_set():
            r, _, _ = select.select([self.master], [], [], 0.02)
            if not r:
                continue
            try:
                data = os.read(self.master, 4096)
            except (BlockingIOError, OSError):
                continue
            for item in self._dec.feed(data):
                with self._lock:
                    self.rx.append(item)
                if self.silent or not isinstance(item, Received):
                    continue
                m = item.message
                if isinstance(m, Hello):
                    self.send(Version(item.seq, PROTOCOL_VERSION, 1, 0, 0, BOOT, CAPS, 11, 0))
                elif isinstance(m, Heartbeat):
                    self.send(Heartbeat(int((time.monotonic() - self._t0) * 1000), BOOT, 0))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
def raw():
    mcu = RawMcu()
    events, statuses = [], []
    cfg = BridgeConfig(port=mcu.path, exclusive=False, ack_timeout_s=0.02, heartbeat_period_s=0.1,
                       link_timeout_s=0.6, hello_timeout_s=0.05, reconnect_initial_s=0.02, reconnect_max_s=0.2)
    link = FirmwareLink(cfg, on_event=events.append, on_link=statuses.append, session_id=0xABCD)
    link.start()
    assert link.wait_up(3.0), link.status()
    yield mcu, link, events, statuses
    link.close()
    mcu.close()


def _wait(pred, timeout: float = 3.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.005)
    return bool(pred())


def _event(seq: int, t: int = 1000) -> bytes:
    return b"\x00" + encode_frame(InputEvent(InputId.FAR_WALL_STRIKE, 1, t, 0), seq)


def test_random_garbage_is_counted_nakked_and_the_link_stays_up(raw):
    mcu, link, events, _ = raw
    rng = random.Random(7)
    garbage = bytes(rng.randrange(256) for _ in range(20000))
    for i in range(0, len(garbage), 500):           # 40 bursts over ~0.4 s: heartbeats in between
        mcu.write(garbage[i:i + 500])
        time.sleep(0.01)
    mcu.write(_event(1))
    assert _wait(lambda: len(events) == 1)
    assert link.up and link.stats().bad_frames > 0 and link.stats().naks_tx > 0
    assert [e.seq for e in events] == [1]
    naks = mcu.frames(Nak)
    assert naks and all(n.message.reason is NakReason.BAD_FRAME and n.message.nak_seq == 0 for n in naks)


def test_a_frame_split_byte_by_byte_across_reads_is_delivered_once(raw):
    mcu, link, events, _ = raw
    frame = _event(1)
    for b in frame:
        mcu.write(bytes([b]))
        time.sleep(0.002)
    mcu.write(_event(1))                             # the retransmission: ACKed again, not delivered
    assert _wait(lambda: len(mcu.frames(Ack)) >= 2)
    time.sleep(0.05)
    assert [e.seq for e in events] == [1] and link.stats().duplicate_events == 1


def test_a_frame_with_a_bad_crc_is_not_delivered_and_is_nakked(raw):
    mcu, link, events, _ = raw
    bad = bytearray(encode_frame(InputEvent(InputId.FAR_WALL_STRIKE, 1, 5, 0), 1))
    i = next(k for k in range(5, len(bad) - 3) if bad[k] not in (0x00, 0x01))
    bad[i] ^= 0x01                                   # one bit inside the frame, no 0x00 made
    assert 0 not in bad[:-1]
    before = link.stats().bad_frames
    mcu.write(b"\x00" + bytes(bad))
    assert _wait(lambda: link.stats().bad_frames > before)
    assert _wait(lambda: any(n.message.reason is NakReason.BAD_FRAME for n in mcu.frames(Nak)))
    time.sleep(0.05)
    assert events == [] and link.up


@pytest.mark.parametrize("raw_frame,nak", [
    (encode_raw(1, 0x7F, 0, b"\x01\x02"), None),                          # unknown type, unsequenced
    (encode_raw(1, 0x7F, 9, b"\x01\x02"), None),                          # unknown type: not NAKed
    (encode_raw(1, int(MsgType.INPUT_EVENT), 9, b"\x01\x01\x00"), (9, NakReason.BAD_PAYLOAD)),  # too short
    (encode_raw(1, int(MsgType.INPUT_EVENT), 9, struct.pack("<BBIH", 0x09, 1, 5, 0)), (9, NakReason.BAD_PAYLOAD)),
    (encode_raw(1, int(MsgType.INPUT_EVENT), 0, struct.pack("<BBIH", 1, 1, 5, 0)), None),  # seq 0: dropped
    (encode_raw(2, int(MsgType.INPUT_EVENT), 9, struct.pack("<BBIH", 1, 1, 5, 0)), (9, NakReason.BAD_VERSION)),
    (encode_raw(1, int(MsgType.SET_LAMPS), 9, b"\x01\x01\x01\xff"), (9, NakReason.UNKNOWN_TYPE)),  # wrong direction
])
def test_crc_valid_frames_of_unknown_type_or_wrong_length_are_refused_and_named(raw, caplog, raw_frame, nak):
    """A CRC-valid frame the host cannot accept (unknown type, wrong length, unknown input,
    another version, a host-to-MCU type) is not delivered, is NAKed when sequenced, and is
    logged at WARNING naming what is wrong: it is not line noise (the CRC matched) but an MCU
    speaking another firmware version, whose events would otherwise vanish with only a DEBUG
    line."""
    mcu, link, events, _ = raw
    with caplog.at_level(logging.INFO, logger="firmware_bridge.link"):
        mcu.write(b"\x00" + raw_frame)
        if nak:
            assert _wait(lambda: any((n.message.nak_seq, n.message.reason) == nak for n in mcu.frames(Nak)))
        else:
            time.sleep(0.2)
            assert not any(n.message.nak_seq for n in mcu.frames(Nak))
        assert _wait(lambda: any(r.levelno >= logging.WARNING and "refused a frame from the MCU" in r.getMessage()
                                 for r in caplog.records)), caplog.text
    assert events == [] and link.up


def test_a_flood_without_delimiter_keeps_memory_bounded_and_the_link_recovers(raw):
    mcu, link, events, statuses = raw
    before = link.stats().bad_frames
    peak = 0
    for _ in range(64):                              # 1 MiB, no 0x00 in it
        mcu.write(b"\x55" * 16384)
        peak = max(peak, len(link._decoder._buf))
    mcu.write(b"\x00")
    # one bad frame per run between 0x00 (the MCU's heartbeat answers, written concurrently,
    # cut the flood into a few runs)
    assert _wait(lambda: link.stats().bad_frames > before)
    assert peak <= MAX_ENCODED and len(link._decoder._buf) == 0
    assert _wait(lambda: link.up, 3.0)
    mcu.write(_event(1))
    assert _wait(lambda: [e.seq for e in events] == [1])


def test_an_mcu_silent_then_back_drops_the_link_with_a_reason_and_it_comes_back(raw):
    mcu, link, events, statuses = raw
    mcu.silent = True
    assert _wait(lambda: not link.up, 3.0)
    st = link.status()
    assert "no frame from the MCU" in st.reason or "HELLO" in st.reason, st.reason
    assert st.rolls_allowed is False
    mcu.silent = False
    assert _wait(lambda: link.up, 5.0)
    mcu.write(_event(1))
    assert _wait(lambda: [e.seq for e in events] == [1])
    assert [s.up for s in statuses][-2:] == [False, True]


def test_a_listener_that_does_not_return_holds_events_unacknowledged_not_in_memory(raw, monkeypatch, caplog):
    """A listener stuck on the dispatch thread while the MCU keeps sending: before, every frame
    queued one call per rx listener and every event one per event listener, without bound. Now
    frame arrivals are told once (the newest), and past ``DISPATCH_BACKLOG_MAX`` waiting calls
    an event is not acknowledged (the MCU keeps it and sends it again): once the listener
    returns, each event is delivered once, none lost."""
    import firmware_bridge.link as link_mod

    mcu, link, events, _ = raw
    monkeypatch.setattr(link_mod, "DISPATCH_BACKLOG_MAX", 5)
    release, seen_rx = threading.Event(), []
    link.add_rx_listener(seen_rx.append)
    link.add_event_listener(lambda ev: release.wait(10))      # stuck until released
    with caplog.at_level(logging.ERROR, logger="firmware_bridge.link"):
        for seq in range(1, 41):                             # 40 events and ~40 heartbeats, bounded
            mcu.write(_event(seq, t=1000 + seq))
            time.sleep(0.005)
        assert _wait(lambda: link.stats().held_events > 0)
        waiting = link._dispatch_q.qsize()
        assert waiting <= 5 + 3, waiting                     # the backlog, not one per frame
        assert any("not acknowledged" in r.getMessage() for r in caplog.records)
    acked = {a.message.ack_seq for a in mcu.frames(Ack) if a.message.ack_seq}
    assert len(acked) < 40                                  # some were held back, unacknowledged
    release.set()
    assert _wait(lambda: link._dispatch_q.qsize() == 0, 5.0)
    for seq in sorted(set(range(1, 41)) - acked):           # the MCU sends them again until answered
        for _ in range(20):                                 # every 0.25 s, as the MCU's 50 ms, bounded
            mcu.write(_event(seq, t=1000 + seq))
            if _wait(lambda: seq in {a.message.ack_seq for a in mcu.frames(Ack)}, 0.25):
                break
        assert seq in {a.message.ack_seq for a in mcu.frames(Ack)}, seq
    assert _wait(lambda: len(events) == 40)
    assert sorted(e.seq for e in events) == list(range(1, 41)) and seen_rx
