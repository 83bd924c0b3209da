"""Settlement's end of the roll bus: receive in order, each once; fill gaps; acknowledge.

The subscriber subscribes to the live XPUB stream first, then asks the replay endpoint for
everything after the last sequence number it has applied. Every envelope (live or replayed) is
verified (Ed25519 signature by the table's key, table id, journal id); duplicates (sequence
number already delivered) are dropped; a gap, seen from a later message or from a heartbeat's
``last_seq``, is filled by replay; out-of-order messages wait in a bounded buffer. ``receive``
returns the envelopes strictly in sequence order. After the caller has applied one durably it
calls ``ack(seq)``: the subscriber stores it in its state file (SQLite, WAL, synchronous) and
sends the acknowledgement to the table over the replay channel, so the table knows what it
must keep.
"""
from __future__ import annotations

import collections
import json
import logging
import secrets
import sqlite3
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import zmq

from bus import envelope as envmod
from bus.config import BusConfig
from bus.keys import key_files, load_curve_public, load_curve_secret, load_verify_key
from bus.publisher import REP_BATCH, REP_BUSY, REP_ERROR, REQ_ACK, REQ_REPLAY, set_keepalive
from bus.wallclock import WallClock

log = logging.getLogger("bus.subscriber")

#: Seconds an envelope's ``ts`` may be ahead of this subscriber's own clock (the table stamps at
#: publication, before receipt; the two clocks kept in step by NTP). A stamp further ahead is
#: named (WARNING) and counts, for the journal rollback watch, only up to this far ahead: a table
#: clock that ran ahead (a wrong RTC, a bad time source) and was set right must not leave the
#: newest time seen in the future, where it would hide a journal restored or replaced later.
MAX_TS_AHEAD_S = 5.0


def _parse_ts(text: str | None) -> datetime | None:
    """An envelope's ``ts`` (ISO 8601, UTC) as an aware datetime; ``None`` if absent or unparsable."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


#: Longest wait a table's ``BUSY`` reply can impose before the next replay request (seconds): a
#: holder of the table's CURVE key could otherwise stall a subscriber with one reply.
BUSY_MAX_WAIT_S = 5.0


def _recv_bounded(sock: zmq.Socket, max_frames: int) -> tuple[list[bytes] | None, int]:
    """Receive one message without blocking, keeping at most ``max_frames`` frames.

    Returns ``(frames, n)``: ``n`` the number of frames the message had, ``frames`` ``None``
    when ``n > max_frames`` (the frames past the limit are read and dropped at once, never
    kept, so the socket is at the start of the next message). Each frame is at most
    ``ZMQ_MAXMSGSIZE`` bytes (set on the socket); ZeroMQ itself does not limit the count.

    Raises:
        zmq.Again: no message is waiting.
    """
    frames = [sock.recv(zmq.NOBLOCK)]
    n = 1
    while sock.getsockopt(zmq.RCVMORE):   # the parts of a message arrive together: never blocks
        n += 1
        if n <= max_frames:
            frames.append(sock.recv())
        else:
            sock.recv(copy=False)            # dropped: not copied into a bytes object
    return (frames if n <= max_frames else None), n


class BusError(Exception):
    """The bus cannot deliver in order: the table no longer holds messages this subscriber
    needs, or the table's journal was replaced. Needs an operator."""


class RollSubscriber:
    """Exactly-once, in-order, verified receiver of one table's messages.

    Example::

        sub = RollSubscriber(cfg, Path("/var/lib/settlement/bus-state.sqlite"))
        while running:
            env = sub.receive(1.0)
            if env is None:
                continue
            apply(env)            # durably, recording env["seq"] with the effects
            sub.ack(env["seq"])

    Args:
        cfg: the bus configuration (same endpoints, table id and key names as the table's).
        state_path: SQLite file where the last applied sequence number and the table's
            journal id are kept (created if missing).
        resume_after: if given, the last sequence number the application itself has durably
            applied (e.g. read from its ledger in the same transaction as its effects); the
            subscriber resumes after it instead of after its own state. This closes the window
            between the application's commit and :meth:`ack`; and since the application's
            record is then the authority, the state file is written without an fsync per ack
            (``synchronous=NORMAL``), which halves the disk flushes on settlement's side.
        on_alarm: ``callback(code, details)`` for ``"rejected"`` (bad signature, unknown table,
            malformed, foreign journal) and ``"gap_lost"``.
        clock: this subscriber's own UTC clock (aware datetimes; default a watched
            :class:`bus.wallclock.WallClock`), against which the envelopes' ``ts`` are bounded
            (:data:`MAX_TS_AHEAD_S`).

    Its sockets take frames of at most ``bus.envelope.MAX_ENVELOPE_BYTES`` (ZMQ_MAXMSGSIZE:
    ZeroMQ drops a connection that sends a larger one; the subscriber reconnects and replays)
    and messages of the expected number of frames only (live: 2; a replay batch: 2 +
    ``cfg.replay_batch``, what it asks for): another is rejected, ``malformed``, naming it.

    Raises:
        bus.keys.BusKeyError: a key file is missing; sqlite3.DatabaseError: bad state file.
    """

    #: seconds before a connection whose CURVE handshake was refused is tried again
    AUTH_RETRY_S = 2.0

    def __init__(self, cfg: BusConfig, state_path: Path, *, resume_after: int | None = None,
                 on_alarm: Callable[[str, dict], None] | None = None,
                 clock: Callable[[], datetime] | None = None):
        self.cfg = cfg
        self._on_alarm = on_alarm
        self._clock = clock if clock is not None else WallClock("bus subscriber").now
        self._ahead_named = False     # a stamp ahead of this clock was named (until one is not)
        self.stats = {"delivered": 0, "duplicates": 0, "replay_requests": 0, "replayed": 0,
                      "heartbeats": 0, "rejected": 0, "auth_failures": 0, "replay_busy": 0, "ts_ahead": 0}
        self.rejections: dict[str, int] = {}
        kf_table = key_files(cfg.keys_dir, cfg.table_key)
        kf_sub = key_files(cfg.keys_dir, cfg.subscriber_key)
        server_public = load_curve_public(kf_table.curve_public)
        self._verify = load_verify_key(kf_table.sign_public)
        public, secret = load_curve_secret(kf_sub.curve_secret)
        self._state = self._open_state(Path(state_path), durable=resume_after is None)
        try:
            self.journal_id: str | None = self._get("journal_id")
            applied = int(self._get("last_applied") or 0)
            if applied < 0:
                raise ValueError(f"last_applied {applied} is negative")
        except (sqlite3.DatabaseError, ValueError) as exc:
            self._state.close()
            raise sqlite3.DatabaseError(f"{state_path}: not a usable bus state file: {exc}") from exc
        if resume_after is not None:
            if type(resume_after) is not int or resume_after < 0:
                raise ValueError(f"resume_after must be an int >= 0: {resume_after!r}")
            applied = resume_after
        self._acked = applied
        self._next = applied + 1          # next sequence number to deliver
        self._head = applied              # highest sequence number known to exist
        self._pending: dict[int, dict] = {}
        self._contig = applied            # next.._contig are all in _pending (or delivered)
        # Journal rollback watch. The live stream of one journal never goes back in seq: every
        # live heartbeat or envelope is at or above what was applied before this process
        # connected and what it has seen live since (``_live_floor``). A signed live message
        # below that floor is either an old one sent again (an attacker holding the CURVE key:
        # its time stamp is not newer than every message seen, ``_seen_ts``; dropped) or the
        # table's journal restored from an older copy and reusing sequence numbers (a newer
        # time stamp): its new rolls would be dropped as duplicates, so it stops the subscriber.
        self._live_floor = applied
        self._seen_ts = self._bounded(_parse_ts(self._get("seen_ts")), "the newest time stamp kept in the state file")
        # Journal restored while this subscriber was away: the table's journal, restored from an
        # older copy, has written new messages under sequence numbers this subscriber already
        # applied, and caught up past them before it came back, so no live message is below
        # the floor. The signature of the last applied message is kept with it; the first
        # replay asks from that seq, and the table's message there must be the same one.
        self._sigs: dict[int, str] = {}      # signatures of delivered, not yet acked messages
        stored_sig = self._get("applied_sig")
        same = resume_after is None or resume_after == int(self._get("last_applied") or 0)
        self._check: tuple[int, str] | None = (applied, stored_sig) if applied > 0 and stored_sig and same else None
        self._req_at: float | None = None  # time of the outstanding replay request
        self._req_wait = cfg.replay_timeout_s  # seconds after _req_at before it is sent again
        self._busy_logged = -1e9
        # nonces of the last replay requests: a batch header must carry one of them (a late
        # answer to an earlier request is fine; a header sent again later is not)
        self._nonces: collections.deque[str] = collections.deque(maxlen=8)
        self._closed = False
        self.last_heartbeat: float | None = None
        #: ``time.monotonic()`` when the table was last heard from (see :attr:`last_heard`)
        self._heard: float | None = None

        self._ctx = zmq.Context()
        self._sub = self._client_socket(zmq.SUB, server_public, public, secret)
        self._sub.setsockopt(zmq.RCVHWM, cfg.hwm)
        self._sub.setsockopt(zmq.SUBSCRIBE, b"")
        self._sub.connect(cfg.pub_endpoint)
        self._dealer = self._client_socket(zmq.DEALER, server_public, public, secret)
        self._dealer.setsockopt(zmq.SNDHWM, 1000)
        self._dealer.connect(cfg.replay_endpoint)
        watch = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH \
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_DISCONNECTED
        self._mon_dealer = self._dealer.get_monitor_socket(watch)
        self._mon_sub = self._sub.get_monitor_socket(watch)
        self._auth_warned = 0.0
        self._retry_at: dict[str, float] = {}
        self._dups_logged, self._dups_since_log = 0.0, 0
        self._reject_log: dict[str, tuple[float, int, int]] = {}
        self._poller = zmq.Poller()
        for s in (self._sub, self._dealer, self._mon_dealer, self._mon_sub):
            self._poller.register(s, zmq.POLLIN)
        self._request_replay()  # subscribed first, now replay what we missed

    # -- state file -------------------------------------------------------------------------
    @staticmethod
    def _open_state(path: Path, durable: bool) -> sqlite3.Connection:
        """Open (create) the state file.

        Raises:
            sqlite3.DatabaseError: naming ``path``, when it is not a usable SQLite file.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=10)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # FULL: fsync at every ack. With resume_after the application's own record is the
            # authority on restart, so the state only has to survive a process crash (NORMAL).
            conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            conn.execute("CREATE TABLE IF NOT EXISTS bus_state(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise sqlite3.DatabaseError(f"{path}: not a usable bus state file: {exc}") from exc
        return conn

    @property
    def stored_ack(self) -> int:
        """The highest sequence number this state file recorded as acknowledged (durably
        applied), whatever ``resume_after`` says: an application whose own record is below it
        lost what it had applied (a record restored from an older copy)."""
        return int(self._get("last_applied") or 0)

    def _get(self, key: str) -> str | None:
        row = self._state.execute("SELECT value FROM bus_state WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _put(self, **values: str) -> None:
        self._state.execute("BEGIN IMMEDIATE")
        try:
            for k, v in values.items():
                self._state.execute("INSERT INTO bus_state VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                                    (k, v))
            self._state.execute("COMMIT")
        except BaseException:
            if self._state.in_transaction:   # on a full disk SQLite may have rolled back itself: its error stands
                self._state.execute("ROLLBACK")
            raise

    def _client_socket(self, kind: int, server_public: bytes, public: bytes, secret: bytes) -> zmq.Socket:
        s = self._ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)  # nothing to flush at close: acks are re-sent on reconnection
        # no frame from the table is larger than an envelope: ZeroMQ drops a connection that
        # sends one (the live stream reconnects, and what it missed is replayed)
        s.setsockopt(zmq.MAXMSGSIZE, envmod.MAX_ENVELOPE_BYTES)
        set_keepalive(s)
        s.curve_serverkey = server_public
        s.curve_publickey = public
        s.curve_secretkey = secret
        s.setsockopt(zmq.RECONNECT_IVL, 50)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
        return s

    # -- public API -----------------------------------------------------------------------
    @property
    def last_applied(self) -> int:
        """The last sequence number acknowledged (durably applied)."""
        return self._acked

    @property
    def last_delivered(self) -> int:
        """The last sequence number returned by :meth:`receive`."""
        return self._next - 1

    @property
    def head(self) -> int:
        """The highest sequence number the table is known to have journalled: from every
        message (live or replayed), every heartbeat's ``last_seq`` and every replay header's
        ``head``; the resume point until the table is heard from. ``head - last_delivered``
        messages are still to come (a subscriber catching up after a restart, a slow reader)."""
        return self._head

    @property
    def last_heard(self) -> float | None:
        """``time.monotonic()`` (seconds) when this subscriber last heard from the table, or
        ``None`` since it was made: a verified live message or heartbeat with a time stamp newer
        than every message seen before (an old message sent again does not count), or a
        verified replay header answering one of its requests. The table sends a heartbeat
        every ``heartbeat_s`` seconds while it publishes nothing, so a longer silence means the
        subscriber cannot know :attr:`head`: the table may have published since."""
        return self._heard

    @property
    def sockets(self) -> tuple[zmq.Socket, ...]:
        """The sockets :meth:`receive` reads (the live stream, the replay socket and their
        monitors), for a caller that waits on them together with its own sockets in one
        ``zmq.Poller`` (``settle-service`` with its wager intake): when one is readable, call
        :meth:`receive` (``timeout_s`` 0). Only :meth:`receive` may read them."""
        return (self._sub, self._dealer, self._mon_dealer, self._mon_sub)

    def receive(self, timeout_s: float) -> dict | None:
        """The next envelope in sequence order, or ``None`` if none arrives within ``timeout_s``
        seconds. Heartbeats are consumed here (see :attr:`last_heartbeat`), not returned.

        Raises:
            BusError: the table no longer holds a message this subscriber needs.
            RuntimeError: subscriber closed.
        """
        if self._closed:
            raise RuntimeError("subscriber is closed")
        deadline = time.monotonic() + max(0.0, float(timeout_s))
        polled = False
        while True:
            env = self._pending.pop(self._next, None)
            if env is not None:
                if env.get("sig"):
                    self._sigs[self._next] = env["sig"]
                self._next += 1
                self.stats["delivered"] += 1
                return env
            now = time.monotonic()
            if self._head > self._contig and (self._req_at is None or now - self._req_at >= self._req_wait):
                self._request_replay()
            remaining = deadline - now
            if remaining <= 0 and polled:
                return None
            polled = True  # receive(0) still looks at the sockets once
            events = dict(self._poller.poll(int(min(max(remaining, 0.0), 0.1) * 1000)))
            if self._sub in events:
                self._drain_live()
            if self._dealer in events:
                self._drain_replay()
            for mon in (self._mon_dealer, self._mon_sub):
                if mon in events:
                    self._drain_monitor(mon)
            if self._retry_at:
                self._retry_connections()

    def ack(self, seq: int) -> None:
        """Acknowledge that every message up to ``seq`` has been durably applied (cumulative).

        Stores ``seq`` in the state file (committed, fsync) and sends it to the table.

        Raises:
            ValueError: ``seq`` was not delivered yet or is not an int.
        """
        if type(seq) is not int or seq < 0:
            raise ValueError(f"seq must be an int >= 0: {seq!r}")
        if seq > self.last_delivered:
            raise ValueError(f"cannot ack {seq}: only up to {self.last_delivered} was delivered")
        if seq <= self._acked:
            return
        sig = self._sigs.get(seq)
        self._put(last_applied=str(seq), **({"seen_ts": self._seen_ts.isoformat()} if self._seen_ts else {}),
                  **({"applied_sig": sig} if sig else {}))
        self._acked = seq
        self._sigs = {k: v for k, v in self._sigs.items() if k > seq}
        self._send_ack()

    def close(self) -> None:
        """Close sockets and the state file (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for sock in (self._sub, self._dealer):
            sock.disable_monitor()
        for sock in (self._mon_sub, self._mon_dealer, self._sub, self._dealer):
            sock.close()
        self._ctx.term()
        self._state.close()

    def __enter__(self) -> "RollSubscriber":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------
    def _send_ack(self) -> None:
        if self.journal_id is None:
            return
        try:
            self._dealer.send_multipart([REQ_ACK, json.dumps({"seq": self._acked, "journal_id": self.journal_id}).encode()],
                                        zmq.NOBLOCK)
        except zmq.Again:
            pass  # acks are cumulative: the next one carries this one

    def _request_replay(self) -> None:
        """Ask for everything after the contiguous run we hold (the first missing seq); while
        the last applied message is still to be checked (``_check``), from that message."""
        self._contig = max(self._contig, self._next - 1)
        start = self._contig + 1
        if self._check is not None:
            start = min(start, self._check[0])
        try:
            nonce = secrets.token_hex(8)
            self._dealer.send_multipart([REQ_REPLAY, json.dumps({"from": start, "nonce": nonce,
                                                                 "max": self.cfg.replay_batch}).encode()],
                                        zmq.NOBLOCK)
            self._nonces.append(nonce)
        except zmq.Again:
            pass
        self._req_at = time.monotonic()
        self._req_wait = self.cfg.replay_timeout_s
        self.stats["replay_requests"] += 1

    def _stopped(self, code: str, details: dict, msg: str) -> BusError:
        """Log ``msg`` (CRITICAL), raise the ``code`` alarm and return the :class:`BusError` to
        raise: the subscriber cannot deliver in order and needs an operator."""
        log.critical("bus: %s", msg)
        if self._on_alarm is not None:
            try:
                self._on_alarm(code, details)
            except Exception:
                log.exception("bus alarm callback failed")
        return BusError(msg)

    def _reject(self, reason: str, detail: str) -> None:
        self.stats["rejected"] += 1
        self.rejections[reason] = self.rejections.get(reason, 0) + 1
        # every rejection is counted; the log shows the first 10 of each reason per 10 s and
        # then a summary, so a flood of forgeries cannot fill the disk
        now = time.monotonic()
        window, shown, hidden = self._reject_log.get(reason, (now, 0, 0))
        if now - window >= 10.0:
            if hidden:
                log.warning("bus: %d more message(s) rejected (%s) in the last %.0f s", hidden, reason, now - window)
            window, shown, hidden = now, 0, 0
        if shown < 10:
            log.warning("bus: rejected message (%s): %s", reason, detail)
            shown += 1
        else:
            hidden += 1
        self._reject_log[reason] = (window, shown, hidden)
        if self._on_alarm is not None:
            try:
                self._on_alarm("rejected", {"reason": reason, "detail": detail})
            except Exception:
                log.exception("bus alarm callback failed")

    def _accept(self, wire: bytes, source: str) -> dict | None:
        """Verify one envelope; returns it or None (rejected, logged)."""
        try:
            env = envmod.open_envelope(wire, self._verify)
        except envmod.EnvelopeError as exc:
            self._reject(exc.reason, f"{source}: {exc}")
            return None
        if env["table_id"] != self.cfg.table_id:
            self._reject("unknown_table", f"{source}: table {env['table_id']!r} is not {self.cfg.table_id!r}")
            return None
        if self.journal_id is None:
            self.journal_id = env["journal_id"]
            self._put(journal_id=self.journal_id)
            log.info("bus: following journal %s of table %s", self.journal_id, self.cfg.table_id)
        elif env["journal_id"] != self.journal_id:
            ts = _parse_ts(env.get("ts"))
            if ts is not None and self._seen_ts is not None and ts > self._seen_ts:
                # signed by the table, newer than every message of the journal followed: the
                # table now writes another journal, whose seq 1.. would never be delivered here
                msg = (f"table {self.cfg.table_id} now writes journal {env['journal_id']}, not journal "
                       f"{self.journal_id} this subscriber follows (was the table's journal replaced?); its "
                       f"messages cannot be delivered in order after seq {self._acked} of the old one")
                raise self._stopped("journal_replaced",
                                    {"journal_id": env["journal_id"], "following": self.journal_id}, msg)
            # an old genuine message of another journal sent again: dropped
            self._reject("foreign_journal", f"{source}: journal {env['journal_id']} is not {self.journal_id} "
                                            "(an old message of another journal?)")
            return None
        return env

    def _bounded(self, ts: datetime | None, what: str) -> datetime | None:
        """``ts``, or this subscriber's clock plus :data:`MAX_TS_AHEAD_S` when ``ts`` is further
        ahead (named at WARNING, once until a stamp within it comes; ``stats["ts_ahead"]``)."""
        if ts is None:
            return None
        limit = self._clock() + timedelta(seconds=MAX_TS_AHEAD_S)
        if ts <= limit:
            self._ahead_named = False
            return ts
        self.stats["ts_ahead"] += 1
        if not self._ahead_named:
            self._ahead_named = True
            log.warning("bus: %s of table %s is stamped %s, %.3f s ahead of this subscriber's clock (more than "
                        "%g s: one of the two clocks is wrong); the journal rollback watch takes it as %s",
                        what, self.cfg.table_id, ts.isoformat(), (ts - limit).total_seconds() + MAX_TS_AHEAD_S,
                        MAX_TS_AHEAD_S, limit.isoformat(), extra={"event": "wall-clock-step"})
        return limit

    def _offer(self, env: dict, source: str) -> None:
        seq = env["seq"]
        ts = _parse_ts(env.get("ts"))
        newer = ts is not None and (self._seen_ts is None or ts > self._seen_ts)
        if newer:
            bounded = self._bounded(ts, f"{env['topic']} seq {seq}")
            self._seen_ts = bounded if self._seen_ts is None else max(self._seen_ts, bounded)
        if source == "live":
            if seq < self._live_floor and newer:
                msg = (f"table {self.cfg.table_id}'s journal {env.get('journal_id')} went back: a new {env['topic']} "
                       f"message has seq {seq}, below seq {self._live_floor} already seen or applied (was the "
                       f"journal restored from an older copy?); its new rolls would reuse sequence numbers")
                raise self._stopped("journal_rollback", {"seq": seq, "seen": self._live_floor}, msg)
            self._live_floor = max(self._live_floor, seq)
            if newer:
                self._heard = time.monotonic()
        if self._check is not None and source == "replay" and seq == self._check[0] \
                and env["topic"] != envmod.HEARTBEAT:
            if env.get("sig") != self._check[1]:
                msg = (f"table {self.cfg.table_id}'s journal {env.get('journal_id')} holds another message at "
                       f"seq {seq} than the one this subscriber applied (was the journal restored from an older "
                       f"copy while this subscriber was away?); its new rolls reuse sequence numbers")
                raise self._stopped("journal_rollback", {"seq": seq, "seen": self._acked}, msg)
            self._check = None
        if env["topic"] == envmod.HEARTBEAT:
            self.stats["heartbeats"] += 1
            self.last_heartbeat = time.monotonic()
            self._head = max(self._head, seq)
            return
        if seq < self._next or seq in self._pending:
            self._duplicate(seq, source)
            return
        self._head = max(self._head, seq)
        if len(self._pending) >= self.cfg.max_pending:
            top = max(self._pending)
            if seq > top:
                return  # will come again by replay
            del self._pending[top]
            self._contig = min(self._contig, top - 1)
        self._pending[seq] = env
        self._contig = max(self._contig, self._next - 1)
        while self._contig + 1 in self._pending:
            self._contig += 1

    def _duplicate(self, seq: int, source: str) -> None:
        """A sequence number already delivered (or already held): dropped. Overlap between the
        live stream and a replay makes a few after every (re)connection; they are summed in
        the log at most every 5 s."""
        self.stats["duplicates"] += 1
        self._dups_since_log += 1
        now = time.monotonic()
        if now - self._dups_logged >= 5.0:
            log.info("bus: dropped %d message(s) with an already-delivered sequence number (last: seq %d "
                     "from %s; next expected %d)", self._dups_since_log, seq, source, self._next)
            self._dups_logged, self._dups_since_log = now, 0

    def _drain_live(self) -> None:
        for _ in range(1000):
            try:
                frames, n = _recv_bounded(self._sub, 2)
            except zmq.Again:
                return
            if frames is None or n != 2:
                self._reject("malformed", f"live: a message of {n} frame(s), not 2 (topic, envelope)")
                continue
            env = self._accept(frames[1], "live")
            if env is None:
                continue
            if frames[0] != env["topic"].encode("ascii", "replace"):
                self._reject("malformed", f"live: frame topic {frames[0][:64]!r} != envelope topic {env['topic']!r}")
                continue
            if env["topic"] == envmod.REPLAY_HEADER:
                self._misplaced(env, "live")
                continue
            self._offer(env, "live")

    def _misplaced(self, env: dict, source: str) -> None:
        """Reject (``malformed``) a genuine signed envelope of a bus-only topic where the table
        never sends one: a replay header anywhere but at the head of a batch, a heartbeat inside
        a batch. Its seq is the table's head, so, taken as a message, it would be delivered in
        place of the roll with that seq, and the roll dropped as a duplicate."""
        self._reject("malformed", f"{source}: a {env['topic']!r} envelope (seq {env['seq']}) where the table "
                                  "never sends one (a genuine one sent again?)")

    def _retry_connections(self) -> None:
        now = time.monotonic()
        for which, at in list(self._retry_at.items()):
            if now >= at:
                del self._retry_at[which]
                sock, ep = ((self._sub, self.cfg.pub_endpoint) if which == "live"
                            else (self._dealer, self.cfg.replay_endpoint))
                try:
                    sock.disconnect(ep)
                except zmq.ZMQError:
                    pass
                sock.connect(ep)

    def _drain_monitor(self, mon: zmq.Socket) -> None:
        """Connection events: after a (re)connection to the replay endpoint, re-send the replay
        request and the last ack at once (a restarted table lost the outstanding request);
        log handshake failures (this subscriber's key is not in the table's allow-list, or
        the table is not the one whose key we hold)."""
        from zmq.utils.monitor import recv_monitor_message

        for _ in range(100):
            try:
                ev = recv_monitor_message(mon, zmq.NOBLOCK)
            except zmq.Again:
                return
            kind = ev["event"]
            which = "replay" if mon is self._mon_dealer else "live"
            if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                log.info("bus: %s connection to table %s authenticated", which, self.cfg.table_id)
                self._retry_at.pop(which, None)   # connected again: no re-connect due
                if mon is self._mon_dealer:
                    self._request_replay()
                    self._send_ack()
            elif kind == zmq.EVENT_DISCONNECTED:
                # libzmq reconnects by itself after a lost connection, but not after a protocol
                # error, e.g. a frame over ZMQ_MAXMSGSIZE: that endpoint would stay silent for
                # good. Re-connect it in AUTH_RETRY_S unless it is authenticated again by then.
                log.info("bus: %s connection to table %s lost", which, self.cfg.table_id)
                self._retry_at.setdefault(which, time.monotonic() + self.AUTH_RETRY_S)
            elif kind in (zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
                          zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
                self.stats["auth_failures"] += 1
                now = time.monotonic()
                # libzmq does not reconnect after a refused handshake: try again later, in case
                # the table's allow-list is fixed meanwhile
                self._retry_at[which] = now + self.AUTH_RETRY_S
                if now - self._auth_warned > 10:
                    self._auth_warned = now
                    log.warning("bus: CURVE handshake with %s endpoint %s failed (event %d): is key %r in "
                                "the table's allow-list, and is %r the table's key?", which,
                                ev.get("endpoint"), kind, self.cfg.subscriber_key, self.cfg.table_key)
                    if self._on_alarm is not None:
                        try:
                            self._on_alarm("auth_failed", {"endpoint": which})
                        except Exception:
                            log.exception("bus alarm callback failed")

    def _busy(self, payload: bytes) -> None:
        """The table refused a replay request over this subscriber's rate: ask again after
        the ``retry_after_s`` it gives (at most :data:`BUSY_MAX_WAIT_S`; ``replay_timeout_s``
        if it gives none). Nothing is lost: the table keeps the messages in its journal.
        Counted in ``stats["replay_busy"]``, logged at most every 10 s."""
        self.stats["replay_busy"] += 1
        try:
            body = json.loads(payload.decode("utf-8"))
            wait = body.get("retry_after_s") if isinstance(body, dict) else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            body, wait = None, None
        if type(wait) not in (int, float) or wait != wait:    # absent, not a number, NaN
            wait = self.cfg.replay_timeout_s
        wait = min(max(float(wait), 0.0), BUSY_MAX_WAIT_S)
        now = time.monotonic()
        if now - self._busy_logged >= 10.0:
            self._busy_logged = now
            log.info("bus: the table asks this subscriber to wait %.3g s before its next replay request: %s",
                     wait, str(body.get("error") if isinstance(body, dict) else payload[:200])[:300])
        if self._req_at is not None:   # a request is outstanding: it is sent again after the wait
            self._req_at, self._req_wait = now, float(wait)

    def _replay_header(self, wire: bytes) -> dict | None:
        """The body of a replay batch's header (a signed envelope of topic
        :data:`bus.envelope.REPLAY_HEADER`), or None when it is rejected (logged, counted):
        bad signature or malformed, another table or journal, or a nonce that is none of
        this subscriber's last requests'."""
        env = self._accept(wire, "replay header")
        if env is None:
            return None
        body = env["body"]
        if env["topic"] != envmod.REPLAY_HEADER or not all(
                type(body.get(k)) is int for k in ("from", "first", "head", "count")):
            self._reject("malformed", f"replay: header of topic {env['topic']!r} with body keys {sorted(body)[:8]}")
            return None
        if body.get("nonce") not in self._nonces:
            self._reject("stale_replay", "replay: the header answers no request of this subscriber "
                                         "(an old reply sent again?)")
            return None
        return body

    def _drain_replay(self) -> None:
        limit = 2 + self.cfg.replay_batch   # BATCH, header, at most the replay_batch envelopes asked for
        for _ in range(100):
            try:
                frames, n = _recv_bounded(self._dealer, limit)
            except zmq.Again:
                return
            if frames is None:
                self._reject("malformed", f"replay: a reply of {n} frames, more than {limit} (BATCH, header and "
                                          f"the {self.cfg.replay_batch} envelopes asked for at most)")
                continue     # the request is sent again after replay_timeout_s
            kind = frames[0]
            if kind not in (REP_BATCH, REP_ERROR, REP_BUSY) or n < 2 or (kind != REP_BATCH and n != 2):
                self._reject("malformed", f"replay: unexpected reply {kind[:16]!r} of {n} frame(s)")
                continue
            if kind == REP_ERROR:
                log.warning("bus: table refused a request: %s", bytes(frames[1][:300]).decode("utf-8", "replace"))
                continue
            if kind == REP_BUSY:
                self._busy(frames[1])
                continue
            header = self._replay_header(frames[1])
            if header is None:
                continue     # rejected; the request is sent again after replay_timeout_s
            self._req_at = None
            head, first, start = header["head"], header["first"], header["from"]
            self._head = max(self._head, head)
            self._heard = time.monotonic()   # it answers one of our last requests: the table's head now
            for wire in frames[2:]:
                env = self._accept(wire, "replay")
                if env is not None and env["topic"] in envmod.RESERVED_TOPICS:
                    self._misplaced(env, "replay")
                elif env is not None:
                    self.stats["replayed"] += 1
                    self._offer(env, "replay")
            if self._check is not None and start <= self._check[0] < first:
                self._check = None   # pruned from the table's journal: nothing left to compare with
            missing = max(self._contig, self._next - 1) + 1
            if start <= missing < first:
                msg = (f"table {self.cfg.table_id} no longer holds seq {missing}..{first - 1} "
                       f"(its journal starts at {first})")
                raise self._stopped("gap_lost", {"from": missing, "first": first}, msg)
