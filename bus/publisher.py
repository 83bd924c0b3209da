"""The table's end of the roll bus: journal, sign, publish; serve replays; take acks.

``RollPublisher.publish`` appends the message to the durable journal (:mod:`bus.journal`)
before anything is sent, then sends it on the XPUB socket without blocking. ``XPUB_NODROP`` is
set and the high-water mark is bounded, so a slow or stuck subscriber makes the send fail with
``zmq.Again`` instead of a silent drop: the publisher logs it, calls the alarm callback, and the
message, being journalled, reaches the subscriber by replay (the subscriber sees the gap from the
next message or heartbeat). A background thread serves the ROUTER replay/ack endpoint and sends
heartbeats carrying the last sequence number.

Both sockets are CURVE servers; a ZAP authenticator (``zmq.auth.thread.ThreadAuthenticator``)
admits only clients whose public certificate is in the allow-list directory, as in effect
(bus/allowwatch.py). The background thread looks at the folder once a second and reads it again
when it changed (or :meth:`RollPublisher.reload_allow_list` at once). When a key is removed:

- the replay ROUTER checks every request against the list in effect: the removed subscriber's
  requests (replays, acks) are refused naming its key, on a connection already open too;
- the PUB stream cannot drop one peer (ZeroMQ's XPUB has no per-peer disconnect), so the
  publisher unbinds its PUB endpoint and binds it again, at once: every subscriber's
  connection closes, and reconnects through the authenticator. An allowed one reconnects
  (within its reconnect interval) and replays from the journal what it missed while away
  (seen from the next message or heartbeat): nothing lost, nothing twice. A removed one is
  refused at the handshake and reads nothing published after the reload.

A folder that cannot be read at a reload keeps the list in effect less the removed certificates
(logged at ERROR naming the file): a reload never widens access.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable

import zmq
from zmq.auth.thread import ThreadAuthenticator

from bus import envelope as envmod
from bus.allowwatch import AllowListWatch, Reload, short_key
from bus.config import BusConfig
from bus.filelock import LockHeld, take_exclusive
from bus.journal import AckStore, Journal, acks_path
from bus.keys import BusKeyError, RefusalLog, key_files, load_curve_secret, load_signing_key
from bus.ratelimit import PeerRateLimiter
from bus.wallclock import WallClock

log = logging.getLogger("bus.publisher")

AlarmCallback = Callable[[str, dict], None]

#: replay protocol frames (DEALER -> ROUTER)
REQ_REPLAY = b"REPLAY"   # [b"REPLAY", json {"from": int, "nonce": str (optional, <= 64 chars),
                         #                   "max": int >= 1 (optional: envelopes wanted at most)}]
REQ_ACK = b"ACK"         # [b"ACK", json {"seq": int, "journal_id": str}]
#: replies (ROUTER -> DEALER)
REP_BATCH = b"BATCH"     # [b"BATCH", signed envelope of topic "replay-header", env...]
REP_ERROR = b"ERROR"     # [b"ERROR", json {"error": str}]
REP_BUSY = b"BUSY"       # [b"BUSY", json {"error": str, "retry_after_s": float}]: ask again later
#: Envelope bytes one replay reply carries at most (and at least one envelope, which is at most
#: ``bus.envelope.MAX_ENVELOPE_BYTES``): with ``replay_batch`` envelopes of up to 1 MiB a reply
#: could otherwise be hundreds of MiB in the table's memory and on the wire.
REPLY_MAX_BYTES = 2 * 1024 * 1024
#: Largest frame the table's sockets take from a subscriber (bytes): a request or a subscription
#: is a few hundred bytes. ZeroMQ drops the connection of a peer that sends a larger one, so an
#: allow-listed subscriber cannot fill the table's memory with one huge frame (ZMQ_MAXMSGSIZE;
#: it limits each frame, not the number of frames in a message).
REQUEST_MAX_BYTES = 256 * 1024
#: Messages a table's socket queues from its subscribers before ZeroMQ stops reading them.
REQUEST_HWM = 100


def set_keepalive(sock: zmq.Socket) -> None:
    """ZMTP heartbeats (PING every 1 s, peer dropped after 3 s of silence), so a peer that
    vanished without closing its TCP connection (cable pulled, host frozen) does not keep a
    full pipe that would make every send on the XPUB fail with ``zmq.Again``."""
    sock.setsockopt(zmq.HEARTBEAT_IVL, 1000)
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3000)
    sock.setsockopt(zmq.HEARTBEAT_TTL, 3000)


class RollPublisher:
    """Journalled, signed, authenticated publisher of one table's messages.

    Example::

        cfg = BusConfig.local(Path("/tmp/bus"))
        pub = RollPublisher(cfg, "table-1")
        env = pub.publish("roll", {"roll_id": "r1", "verdict": "roll", "dice": [3, 4], ...})
        pub.close()

    Args:
        cfg: the bus configuration.
        table_id: stamped in every envelope; must equal ``cfg.table_id`` (the id subscribers
            accept), default ``cfg.table_id``.
        on_alarm: ``callback(code, details)`` called (from the publishing or background thread)
            on an alarm: ``"hwm"`` (a send hit the high-water mark; details ``{"seq"}``),
            ``"replay_error"``, ``"pub_rebind"`` (the PUB endpoint could not be bound again after
            an allow-list change: tried every 50 ms, alarmed once a second; details
            ``{"endpoint", "error", "tries"}``).
        auto_heartbeat: run the heartbeat in the background thread every ``cfg.heartbeat_s``
            when idle (default). With it off, call :meth:`heartbeat` at least every second.
        on_heartbeat: ``callback(sent)`` after each heartbeat (:meth:`add_heartbeat_listener`).
        clock: the watched UTC clock of the envelopes' ``ts`` (default a
            :class:`bus.wallclock.WallClock` on ``time.time``): a step of it (time going back
            or jumping, or a clock behind the journal's last ``ts`` at start) is logged at
            WARNING and counted in ``stats["clock_steps"]`` (:attr:`clock`'s step listeners
            for more); the stamps stay the clock's readings.
    Raises:
        ValueError: ``table_id`` differs from ``cfg.table_id``.
        bus.keys.BusKeyError: the table's key files are missing (run ``craps-table keys
            generate`` or ``bus.keys.ensure_keys``), or a certificate of the allow-list cannot
            be read (named).
        bus.journal.JournalError: unusable journal; RuntimeError: another publisher holds it.
        zmq.ZMQError: an endpoint cannot be bound.

    Source: exactly-once delivery by durable journal + sequence numbers + replay + cumulative
    acknowledgement (the "Clone"/"Titanic" patterns of the ZeroMQ Guide, ch. 4-5).
    """

    def __init__(self, cfg: BusConfig, table_id: str | None = None, *,
                 on_alarm: AlarmCallback | None = None, auto_heartbeat: bool = True,
                 on_heartbeat: Callable[[bool], None] | None = None, clock: WallClock | None = None):
        table_id = cfg.table_id if table_id is None else table_id
        if table_id != cfg.table_id:
            raise ValueError(f"table_id {table_id!r} differs from BusConfig.table_id {cfg.table_id!r}; "
                             "subscribers would reject every message")
        self.cfg = cfg
        self.table_id = table_id
        self._on_alarm = on_alarm
        self._hb_listeners: list[Callable[[bool], None]] = [on_heartbeat] if on_heartbeat else []
        self.stats = {"published": 0, "hwm_alarms": 0, "heartbeats": 0, "replayed": 0, "acks": 0,
                      "replay_refused": 0, "clock_steps": 0, "pub_rebinds": 0}
        self._limiter = PeerRateLimiter(cfg.replay_rate, cfg.replay_burst)
        self._refusals_logged: dict[str, tuple[float, int]] = {}   # peer -> (time logged, refused since)
        #: the watched clock of the envelopes' ``ts`` (bus/wallclock.py)
        self.clock = clock if clock is not None else WallClock("bus publisher")
        self.clock.add_step_listener(self._clock_stepped)
        kf = key_files(cfg.keys_dir, cfg.table_key)
        self._public, self._secret = load_curve_secret(kf.curve_secret)
        self._signer = load_signing_key(kf.sign_secret)
        if not cfg.allow_dir.is_dir():
            raise BusKeyError(f"CURVE allow-list directory {cfg.allow_dir} does not exist "
                              "(bus.keys.authorize or craps-table keys authorize)")
        # one unreadable certificate: refuse to start (named), rather than serve an unknown list
        #: the allow-list in effect, read again when its folder changes (bus/allowwatch.py)
        self.allow = AllowListWatch(cfg.allow_dir, "roll bus", log, noun="subscribers")
        self._revoked_logged: dict[str, float] = {}   # removed key -> when its refusal was logged
        self._rebind_due: str | None = None   # "unbind", then "bind": the PUB endpoint's re-bind to finish
        self._rebind_tries = 0
        self._lockfile = self._take_lock(Path(str(cfg.journal_path) + ".lock"))
        self._closed = False
        self._journal = None
        self._ctx = zmq.Context()
        self._auth = None
        self._xpub = None
        try:
            self._journal = Journal(cfg.journal_path, autocheckpoint=False)  # the thread checkpoints
            self.journal_id = self._journal.journal_id
            self._last_seq = self._journal.last_seq
            last_ts = self._journal.last_ts()
            if last_ts is not None:  # new stamps must not go back behind the journal's (named if they do)
                self.clock.not_before(last_ts, f"the last message of journal {cfg.journal_path} "
                                               f"(seq {self._last_seq})")
                self.clock.now()
            self._auth = ThreadAuthenticator(self._ctx, log=RefusalLog(logging.getLogger("bus.auth"), "roll bus"))
            self._auth.start()
            self.allow.attach(self._auth)
            if not any(cfg.allow_dir.glob("*.key")):
                log.warning("bus: the CURVE allow-list %s is empty: no subscriber can connect", cfg.allow_dir)
            self._xpub = self._server_socket(zmq.XPUB)
            self._xpub.setsockopt(zmq.XPUB_NODROP, 1)
            self._xpub.setsockopt(zmq.SNDHWM, cfg.hwm)
            self._xpub.setsockopt(zmq.SNDTIMEO, 0)
            self._xpub.bind(cfg.pub_endpoint)
            self.pub_endpoint = self._xpub.getsockopt_string(zmq.LAST_ENDPOINT)
            # the ROUTER is bound here so a bind error is raised to the caller, then handed over
            self._router = self._server_socket(zmq.ROUTER)
            self._router.setsockopt(zmq.ROUTER_MANDATORY, 1)
            self._router.setsockopt(zmq.SNDHWM, max(cfg.hwm, 100))
            self._router.bind(cfg.replay_endpoint)
            self.replay_endpoint = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
        except BaseException:
            self._teardown()
            raise
        self._send_lock = threading.Lock()
        self._pub_lock = threading.Lock()
        self._last_send = 0.0
        self._last_checkpoint = 0.0
        self._prune_due = False
        self._stop = threading.Event()
        self._auto_hb = auto_heartbeat
        self._thread = threading.Thread(target=self._serve, name="bus-replay", daemon=True)
        self._thread.start()
        log.info("bus publisher table=%s journal=%s last_seq=%d pub=%s replay=%s", table_id,
                 cfg.journal_path, self._last_seq, self.pub_endpoint, self.replay_endpoint)

    # -- set-up ---------------------------------------------------------------------------
    @staticmethod
    def _take_lock(path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return take_exclusive(path)
        except LockHeld:
            raise RuntimeError(f"journal {path.with_suffix('')} is in use by another publisher (lock {path})") from None

    def _server_socket(self, kind: int) -> zmq.Socket:
        s = self._ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 200)
        s.setsockopt(zmq.MAXMSGSIZE, REQUEST_MAX_BYTES)
        s.setsockopt(zmq.RCVHWM, REQUEST_HWM)
        set_keepalive(s)
        s.curve_secretkey = self._secret
        s.curve_publickey = self._public
        s.curve_server = True
        return s

    # -- public API -----------------------------------------------------------------------
    @property
    def last_seq(self) -> int:
        """The last sequence number journalled (0 if none)."""
        return self._last_seq

    def publish(self, topic: str, body: dict) -> dict:
        """Journal, sign and send one message. Returns the envelope sent (with ``seq``, ``ts``,
        ``table_id``, ``journal_id``, ``sig``).

        The message is committed to the journal (fsync) before the send. If the send hits the
        high-water mark (``zmq.Again``) an ``"hwm"`` alarm is raised (log + callback) and the
        message stays journalled for replay; it is never dropped silently.

        Raises:
            ValueError: reserved or malformed topic, body not plain JSON; TypeError: body not a
                dict; RuntimeError: publisher closed; bus.journal.JournalError: the journal
                cannot be written (disk full, I/O error). Nothing is journalled or sent then.
        """
        if self._closed:
            raise RuntimeError("publisher is closed")
        envmod.check_topic(topic)
        if topic in envmod.RESERVED_TOPICS:
            raise ValueError(f"topic {topic!r} is reserved for the bus")
        out: dict = {}

        def build(seq: int, journal_id: str) -> tuple[str, bytes]:
            env, wire = envmod.seal(self._signer, journal_id=journal_id, seq=seq, table_id=self.table_id,
                                    topic=topic, body=body, ts=self.clock.iso())
            out["env"] = env
            return env["ts"], wire

        with self._pub_lock:
            seq, wire = self._journal.append(topic, build)
            self._last_seq = seq
            self.stats["published"] += 1
            self._send(topic, wire, seq)
        return out["env"]

    def heartbeat(self) -> None:
        """Send a signed heartbeat carrying the last sequence number (not journalled)."""
        if self._closed:
            raise RuntimeError("publisher is closed")
        with self._pub_lock:
            seq = self._last_seq
            _, wire = envmod.seal(self._signer, journal_id=self.journal_id, seq=seq, table_id=self.table_id,
                                  topic=envmod.HEARTBEAT, body={"last_seq": seq}, ts=self.clock.iso())
            self.stats["heartbeats"] += 1
            sent = self._send(envmod.HEARTBEAT, wire, None)
        for fn in list(self._hb_listeners):
            try:
                fn(sent)
            except Exception:  # a listener must not break the heartbeat (or the replay thread)
                log.exception("bus heartbeat listener failed")

    def _clock_stepped(self, step_s: float) -> None:
        """A step of :attr:`clock` was named (logged by it): counted."""
        self.stats["clock_steps"] += 1

    def add_heartbeat_listener(self, fn: Callable[[bool], None]) -> None:
        """Call ``fn(sent)`` after every heartbeat (usually from the background thread):
        ``sent`` is true when the XPUB took it, false when it hit the high-water mark. A
        liveness signal for an idle table (``controller.health.HealthMonitor.bus_traffic``)."""
        self._hb_listeners.append(fn)

    def reload_allow_list(self) -> int:
        """Re-read the CURVE allow-list directory now (after ``craps-table keys authorize`` or
        the removal of a certificate; the background thread also does it within a second of a
        change). New handshakes use it at once; if a key was removed, its replay requests are
        refused and the PUB endpoint is bound again so that every subscriber reconnects through
        the authenticator (module docstring). Returns how many keys it holds.

        Raises:
            RuntimeError: the publisher is closed.
            bus.keys.BusKeyError: a certificate in the folder cannot be read (named), or the
                folder is gone: the allow-list in effect is kept, less the removed certificates
                (logged at ERROR).
        """
        if self._closed:
            raise RuntimeError("publisher is closed")
        done = self.allow.refresh(force=True)
        self._applied(done)
        if done is not None and not done.ok and self.allow.last_error is not None:
            raise self.allow.last_error
        return len(self.allow.table.by_key)

    def acks(self) -> dict[str, int]:
        """Acknowledged sequence number per subscriber (its CURVE public key, Z85)."""
        store = AckStore(acks_path(self.cfg.journal_path), self.journal_id)
        try:
            return store.acks()
        finally:
            store.close()

    def close(self) -> None:
        """Stop the background thread, close sockets and the journal (idempotent). Messages
        not yet sent stay in the journal for replay."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._thread.join(timeout=5)
        self._teardown()

    def __enter__(self) -> "RollPublisher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------
    def _send(self, topic: str, wire: bytes, seq: int | None) -> bool:
        """Send without blocking; ``False`` when the high-water mark refused it."""
        with self._send_lock:
            try:
                self._xpub.send_multipart([topic.encode("ascii"), wire], flags=zmq.NOBLOCK)
                self._last_send = time.monotonic()
                return True
            except zmq.Again:
                if seq is not None:
                    self.stats["hwm_alarms"] += 1
                    self._alarm("hwm", {"seq": seq, "topic": topic})
                return False

    def _alarm(self, code: str, details: dict) -> None:
        log.warning("bus alarm %s %s", code, details)
        if self._on_alarm is not None:
            try:
                self._on_alarm(code, details)
            except Exception:  # an alarm callback must not break publishing
                log.exception("bus alarm callback failed")

    def _teardown(self) -> None:
        for s in (getattr(self, "_xpub", None), getattr(self, "_router", None)):
            if s is not None:
                s.close()
        if self._auth is not None:
            self._auth.stop()
        self._ctx.term()
        if self._journal is not None:
            self._journal.close()
        self._lockfile.close()

    def _serve(self) -> None:
        """Background thread: replay requests, acks, heartbeats, XPUB subscription events."""
        journal = Journal(self.cfg.journal_path)  # reads replays (and prunes, if asked)
        acks = AckStore(acks_path(self.cfg.journal_path), journal.journal_id)
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)  # never the XPUB: see _drain_subscriptions
        try:
            while not self._stop.is_set():
                try:
                    self._serve_once(journal, acks, poller)
                except Exception as exc:  # logged; the loop goes on serving replays
                    if self._stop.is_set():
                        break
                    log.exception("bus replay thread error")
                    self._alarm("replay_error", {"error": repr(exc)})
                    time.sleep(0.05)
        finally:
            journal.close()
            acks.close()

    def _serve_once(self, journal: Journal, acks: AckStore, poller: zmq.Poller) -> None:
        hb = self.cfg.heartbeat_s
        wait = 0.05
        if self._auto_hb:
            wait = min(wait, max(0.0, self._last_send + hb - time.monotonic()))
        events = dict(poller.poll(int(wait * 1000)))
        if self._router in events:
            for _ in range(100):
                try:
                    frames = self._router.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                self._handle_request(journal, acks, frames)
        self._drain_subscriptions()
        self._applied(self.allow.refresh())
        if self._rebind_due:
            self._rebind_pub()
        if self._auto_hb and not self._closed and time.monotonic() - self._last_send >= hb:
            self.heartbeat()
        if time.monotonic() - self._last_checkpoint >= 1.0:
            journal.checkpoint()
            self._last_checkpoint = time.monotonic()
            if self.cfg.prune_acked and self._prune_due:
                self._prune(journal, acks)
                self._prune_due = False

    def _applied(self, done: Reload | None) -> None:
        """After a reload: a key removed cuts the PUB stream's connections (:meth:`_rebind_pub`)."""
        if done is not None and done.removed:
            log.warning("bus: subscriber key(s) %s removed from the allow-list %s: their replay requests are "
                        "refused, and the PUB endpoint %s is bound again (every subscriber reconnects through "
                        "the authenticator; the removed ones are refused)",
                        ", ".join(sorted(short_key(k) for k in done.removed)), self.cfg.allow_dir, self.pub_endpoint)
            with self._send_lock:
                self._rebind_due = "unbind"
            self._rebind_pub()

    def _rebind_pub(self) -> None:
        """Unbind the PUB endpoint and bind it again (under the send lock): libzmq closes the
        connections accepted on it, and every subscriber reconnects through the ZAP
        authenticator. Published messages are journalled first, so one that went out while no
        subscriber was connected is replayed to it. A bind that fails (the port not yet
        released) is tried again from the background thread's next loop (every 50 ms), with a
        ``"pub_rebind"`` alarm once a second while it fails."""
        with self._send_lock:
            if self._rebind_due is None:
                return
            try:
                if self._rebind_due == "unbind":
                    self._xpub.unbind(self.pub_endpoint)
                    self._rebind_due = "bind"
                self._xpub.bind(self.pub_endpoint)
            except zmq.ZMQError as exc:
                self._rebind_tries += 1
                if self._rebind_tries % 20 == 0:
                    self._alarm("pub_rebind", {"endpoint": self.pub_endpoint, "error": str(exc),
                                               "tries": self._rebind_tries})
                return
            self._rebind_due, self._rebind_tries = None, 0
            self.stats["pub_rebinds"] += 1
        log.info("bus: PUB endpoint %s bound again after an allow-list change", self.pub_endpoint)

    def _revoked(self, ident: bytes, subscriber: str) -> None:
        """Refuse a request from a key not in the allow-list in effect (removed while its
        connection was open): ``[ERROR, {"error"}]`` naming the key, nothing read or recorded;
        logged at most every 10 s per key."""
        msg = self.allow.refusal(subscriber, "request refused, nothing read or recorded")
        now = time.monotonic()
        if now - self._revoked_logged.get(subscriber, -1e9) >= 10.0:
            log.warning("bus: %s", msg)
            self._revoked_logged[subscriber] = now
            if len(self._revoked_logged) > 1024:
                self._revoked_logged.pop(next(iter(self._revoked_logged)))
        try:
            self._router.send_multipart([ident, REP_ERROR, json.dumps({"error": msg}).encode()], flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def _drain_subscriptions(self) -> None:
        """Read the XPUB's subscription messages, under the send lock.

        The XPUB is shared with the publishing thread, so every use of it, including the
        ``ZMQ_EVENTS`` check a poll makes, must hold ``_send_lock``: polling it from this thread
        while the other sends corrupts libzmq's pipe state (``pipe.cpp`` assertion, seen in the
        soak test). So it is never in the poller; this non-blocking read runs every loop.
        """
        with self._send_lock:
            for _ in range(100):
                try:
                    ev = self._xpub.recv(zmq.NOBLOCK)
                except zmq.Again:
                    return
                if ev[:1] == b"\x01":
                    log.info("bus subscriber joined (filter %r)", ev[1:])
                elif ev[:1] == b"\x00":
                    log.info("bus subscriber left (filter %r)", ev[1:])

    def _handle_request(self, journal: Journal, acks: AckStore, frames: list) -> None:
        ident = frames[0].bytes
        subscriber = (frames[0].get("User-Id") if len(frames) > 1 else None) or f"identity {ident.hex()}"
        parts = [f.bytes for f in frames[1:]]
        if not self.allow.allows(subscriber):
            self._revoked(ident, subscriber)
            return
        try:
            if not (len(parts) == 2 and parts[0] == REQ_ACK):
                # every request but an ack reads the journal or is logged: rate-limited per
                # subscriber key, checked before its JSON is even parsed
                wait = self._limiter.take(subscriber)
                if wait > 0:
                    self._refuse(ident, subscriber, wait)
                    return
            if len(parts) != 2:
                raise ValueError(f"expected 2 frames, got {len(parts)}")
            req = json.loads(parts[1].decode("utf-8"))
            if not isinstance(req, dict):
                raise ValueError("request is not an object")
            if parts[0] == REQ_REPLAY:
                start, nonce = req.get("from"), req.get("nonce", "")
                want = req.get("max", self.cfg.replay_batch)
                if type(start) is not int or start < 1:
                    raise ValueError(f"'from' must be an int >= 1: {start!r}")
                if not isinstance(nonce, str) or len(nonce) > 64:
                    raise ValueError(f"'nonce' must be a string of at most 64 characters: {str(nonce)[:80]!r}")
                if type(want) is not int or want < 1:
                    raise ValueError(f"'max' must be an int >= 1: {str(want)[:80]!r}")
                # bounded: at most replay_batch envelopes (or fewer if asked) and REPLY_MAX_BYTES;
                # the subscriber asks again from where the reply ends
                # rows, first and head from one snapshot (Journal.replay_view): read apart, an
                # append in between made "first" say messages the rows had not seen were gone
                rows, first, head = journal.replay_view(start, min(want, self.cfg.replay_batch),
                                                        max_bytes=REPLY_MAX_BYTES)
                # The header is signed like every envelope and carries the subscriber's nonce:
                # "first" (where the journal starts) makes a subscriber stop with gap_lost, so a
                # holder of the CURVE key without the signing key must not be able to forge it,
                # nor send an old one again.
                _, header = envmod.seal(self._signer, journal_id=journal.journal_id, seq=head,
                                        table_id=self.table_id, topic=envmod.REPLAY_HEADER,
                                        body={"from": start, "first": first, "head": head,
                                              "count": len(rows), "nonce": nonce}, ts=self.clock.iso())
                # NOBLOCK: a subscriber that asks and does not read fills its queue (SNDHWM); the
                # reply is then dropped (it asks again) rather than blocking this thread, which
                # also sends the heartbeats and serves every other subscriber
                self._router.send_multipart([ident, REP_BATCH, header] + [w for _, w in rows], flags=zmq.NOBLOCK)
                self.stats["replayed"] += len(rows)
            elif parts[0] == REQ_ACK:
                seq = req.get("seq")
                if type(seq) is not int or seq < 0:
                    raise ValueError(f"'seq' must be an int >= 0: {seq!r}")
                if req.get("journal_id") != journal.journal_id:
                    raise ValueError("ack for another journal")
                # one read: read again for the message, a message appended in between made the
                # refusal name a last sequence number at or above the ack it refused
                last = journal.last_seq
                if seq > last:
                    raise ValueError(f"ack {seq} beyond the last sequence number {last}")
                acks.record(subscriber, seq, self.clock.iso())
                self.stats["acks"] += 1
                self._prune_due = True
            else:
                raise ValueError(f"unknown request {parts[0][:16]!r}")
        except (ValueError, UnicodeDecodeError, sqlite3.Error, OverflowError, RecursionError) as exc:
            # OverflowError: a seq past SQLite's 64-bit integers; RecursionError: JSON nested too deep
            log.warning("bus: rejected request from subscriber %s: %s: %s", subscriber, type(exc).__name__, exc)
            try:
                self._router.send_multipart([ident, REP_ERROR, json.dumps({"error": str(exc)}).encode()],
                                            flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
        except zmq.ZMQError as exc:  # peer vanished (ROUTER_MANDATORY) or its queue is full
            log.info("bus: cannot reply to subscriber %s: %s", subscriber, exc)

    def _refuse(self, ident: bytes, subscriber: str, wait: float) -> None:
        """Answer a request over the subscriber's rate (``cfg.replay_rate`` per second, burst
        ``cfg.replay_burst``) with ``[BUSY, {"error", "retry_after_s"}]``: the subscriber asks
        again after ``retry_after_s`` seconds; nothing is lost, the journal keeps every
        message. Counted in ``stats["replay_refused"]``; logged at most every 10 s per
        subscriber (a flood of requests must not fill the table's disk with log lines)."""
        self.stats["replay_refused"] += 1
        retry = round(max(wait, 0.01), 3)
        msg = (f"replay requests from this subscriber over {self.cfg.replay_rate:g} per second "
               f"(burst {self.cfg.replay_burst}): ask again in {retry:g} s")
        now = time.monotonic()
        logged, since = self._refusals_logged.get(subscriber, (-1e9, 0))
        if now - logged >= 10.0:
            log.warning("bus: refused a replay request from subscriber %s: %s (%d more refused since the last "
                        "report)", subscriber, msg, since)
            logged, since = now, 0
        else:
            since += 1
        self._refusals_logged[subscriber] = (logged, since)
        if len(self._refusals_logged) > 1024:
            self._refusals_logged.pop(next(iter(self._refusals_logged)))
        try:
            self._router.send_multipart([ident, REP_BUSY, json.dumps({"error": msg, "retry_after_s": retry}).encode()],
                                        flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass   # the subscriber's queue is full or it left; its request times out and it asks again

    def _prune(self, journal: Journal, store: AckStore) -> None:
        """Delete messages acknowledged by every subscriber of the allow-list in effect
        (:attr:`allow`; at most once a second, from the background thread). The list in effect,
        not the folder as it reads now: a certificate that cannot be read keeps its key allowed
        (bus/allowwatch.py), so its subscriber's unacknowledged messages must be kept too."""
        allowed = list(self.allow.table.by_key)
        acks = store.acks()
        if allowed and all(a in acks for a in allowed):
            journal.prune(min(acks[a] for a in allowed))
