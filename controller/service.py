"""The table service loop: frame source -> vision -> roll lifecycle -> verdict -> game -> bus -> lamps.

:class:`TableService` is given every edge (a frame source, a dice reader, a publisher, a lamp
controller, a state store) and owns none of their I/O choices: the command line
(controller/service_cli.py) builds them from config. For each frame:

1. the motion detector says whether anything moved inside the table area;
2. the roll lifecycle (controller/lifecycle.py) says "throw started", "read now" or "timed out";
3. at rest the dice are read (``vision.reader.read_dice``), placed in zones, and decided by the
   jurisdiction policy (controller/verdict.py);
4. a valid roll advances the game (controller/game.py); the new state and the roll message
   are committed to SQLite in one transaction (controller/store.py), then published on the bus
   under topic ``"roll"`` and marked published. Verdicts committed but not published (a crash in
   between) are published first on the next start;
5. the lamps are brought to the new state (controller/lamps.py).

Messages: docs/messages.md. Heartbeats come from the bus publisher's own thread while idle.
"""
from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Protocol, Sequence

import cv2
import numpy as np

from camera.base import Frame, FrameError, FrameSource, check_frame
from controller.frame_clock import ClockStep, FrameClock
from controller.game import GameState, advance
from controller.health import HealthMonitor, HealthStatus, frame_digest, frame_level
from controller.lamps import LampController
from controller.lifecycle import (CLEARING, IN_MOTION, READ_OFFERED, READ_SETTLED, READ_VERDICT, STEP_READ, STEP_THROW,
                                  STEP_TIMEOUT, MotionDetector, RollLifecycle, SceneDie)
from controller.offer import OfferFinding, judge_offer
from controller.irregularity_profile import SHOOTER_CHANGES
from controller.policy import NY_5324, Policy
from controller.reasons import Reason
from controller.store import StateStore, StoreError
from controller.table_commands import TableCommands
from controller.verdict import DieObservation, ThrowFacts, Verdict, decide
from vision.types import DieReading

log = logging.getLogger("controller.service")

Reader = Callable[[np.ndarray], Sequence[DieReading]]
Observer = Callable[[Sequence[DieReading], Frame], "tuple[Sequence[DieObservation], ThrowFacts]"]


class Publisher(Protocol):
    """What the service needs of the bus (``bus.publisher.RollPublisher`` is one)."""

    def publish(self, topic: str, body: dict) -> dict:
        """Send one message; return the envelope (with ``"seq"``)."""
        ...

    def close(self) -> None:
        """Release the sockets."""
        ...


def frame_sha256(image: np.ndarray) -> str:
    """SHA-256 (hex) of a frame's pixels: the C-ordered ``uint8`` bytes of the ``(H, W, 3)`` BGR
    or ``(H, W)`` array, as received from the source. Recomputing it over a stored frame proves
    which frame decided a roll."""
    return hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest()


def polygon_from_zones(zones: dict, homography: np.ndarray, name: str = "playing") -> list[tuple[float, float]] | None:
    """Project a zone polygon in table millimetres to frame pixels.

    Args:
        zones: zone name -> polygon ``[(x_mm, y_mm), ...]`` (``SimSource.table_zones``).
        homography: 3x3 float64, pixels -> table mm (``SimSource.homography``).
        name: the zone.

    Returns:
        the polygon in pixels, or ``None`` when the zone is absent or the homography singular.
    """
    poly = zones.get(name) if zones else None
    if not poly or homography is None:
        return None
    try:
        inv = np.linalg.inv(np.asarray(homography, dtype=np.float64))
    except np.linalg.LinAlgError:
        return None
    pts = cv2.perspectiveTransform(np.asarray(poly, dtype=np.float64).reshape(-1, 1, 2), inv).reshape(-1, 2)
    return [(float(x), float(y)) for x, y in pts]


def source_table_area(source: object) -> list[tuple[float, float]] | None:
    """The "playing" polygon in pixels of a source that knows its table (the simulator), else
    ``None``. Reads ``table_zones`` and ``homography`` (attributes or methods)."""
    zones = getattr(source, "table_zones", None)
    hom = getattr(source, "homography", None)
    zones = zones() if callable(zones) else zones
    hom = hom() if callable(hom) else hom
    if not zones or hom is None:
        return None
    return polygon_from_zones(zones, hom)


def journal_roll_ids(journal_path, after_seq: int, limit: int = 10_000) -> dict[str, int]:
    """``{roll_id: seq}`` of the ``"roll"`` messages in the bus journal at ``journal_path`` with a
    sequence number above ``after_seq`` (read-only; empty if the journal does not exist yet).
    The journal is read in pages of ``limit`` messages up to its last sequence number.

    Raises:
        bus.journal.JournalError: the file is not a bus journal.
    """
    import json
    from pathlib import Path

    from bus.journal import Journal

    if not Path(journal_path).exists():
        return {}
    journal = Journal(Path(journal_path), readonly=True)
    try:
        out = {}
        seq, last = max(0, int(after_seq)) + 1, journal.last_seq
        for _ in range((last - seq) // max(1, limit) + 2):  # bounded: each page moves seq on
            page = journal.read_from(seq, limit)
            if not page:
                break
            for s, wire in page:
                env = json.loads(wire)
                if env.get("topic") == "roll" and isinstance(env.get("body"), dict):
                    out[str(env["body"].get("roll_id"))] = s
            seq = page[-1][0] + 1
        return out
    finally:
        journal.close()


def roll_number(roll_id: str | None) -> int | None:
    """The verdict counter in a roll id ``TABLE-NNNNNNNN`` (``None`` when it has none)."""
    tail = str(roll_id or "").rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def journal_last_roll(journal_path) -> tuple[int, str] | None:
    """``(seq, roll_id)`` of the last ``"roll"`` message the bus journal at ``journal_path``
    holds (read-only; ``None`` if the journal does not exist or holds no roll).

    Raises:
        bus.journal.JournalError: the file is not a bus journal.
    """
    import json
    from pathlib import Path

    from bus.journal import Journal

    if not Path(journal_path).exists():
        return None
    journal = Journal(Path(journal_path), readonly=True)
    try:
        last = journal.last_of("roll")
    finally:
        journal.close()
    if last is None:
        return None
    try:
        body = json.loads(last[1]).get("body") or {}
    except (ValueError, AttributeError):
        return None
    return last[0], str(body.get("roll_id"))


def check_store_not_behind_journal(store: StateStore, journal_path) -> None:
    """Refuse a store that is behind the bus journal: the journal's last roll message carries a
    roll number above the store's verdict count (the store was truncated, lost or restored from
    an older copy). Starting would begin again from the store's counter and publish roll ids
    that subscribers have already settled, with other dice.

    Raises:
        StoreError: naming both files and the last roll id each holds.
    """
    last = journal_last_roll(journal_path)
    if last is None:
        return
    seq, roll_id = last
    n = roll_number(roll_id)
    if n is not None and n > store.verdict_count:
        raise StoreError(
            f"state db {store.path} is behind the bus journal {journal_path}: the journal's last roll is "
            f"{roll_id} (seq {seq}), the store's last is {store.last_roll_id() or 'none'} "
            f"({store.verdict_count} verdicts); refusing to start, which would reuse roll ids "
            f"(restore the store's latest copy, or move both files aside to open a new table record)")


@dataclass
class ServiceStats:
    """Counters and timings of a service run.

    Attributes:
        frames: frames processed.
        verdicts: verdicts published, by kind.
        latencies_s: wall seconds from the deciding frame's arrival to its message published
            (the last 10,000).
        faults: faults seen (reader or source errors).
        offers: sets of dice offered to a new shooter (controller/offer.py): no verdict.
        clock_steps: steps of the source's frame clock (a time going back, or jumping forward
            by more than ``max_frame_gap_s``: :meth:`TableService._clock_stepped`).
    """

    frames: int = 0
    verdicts: dict[str, int] = field(default_factory=lambda: {"roll": 0, "no-roll": 0, "boxperson": 0})
    latencies_s: deque = field(default_factory=lambda: deque(maxlen=10_000))
    faults: int = 0
    offers: int = 0
    clock_steps: int = 0

    @property
    def total_verdicts(self) -> int:
        """All verdicts published."""
        return sum(self.verdicts.values())


class TableService(TableCommands):
    """One table's service (see the module docstring).

    Args:
        table_id: the table id (roll ids are ``TABLE-NNNNNNNN``).
        store: the game state store (resumes the game).
        publisher: the bus publisher.
        lamps: the lamp controller.
        reader: ``read_dice``-like: image -> readings.
        lifecycle: the roll lifecycle state machine.
        motion: the motion detector (its area is the table area).
        policy: the jurisdiction policy.
        min_confidence: see ``[vision] min_confidence``.
        min_presence: see ``[vision] min_presence``.
        area: the table area polygon in pixels (``None``: the whole frame).
        on_message: ``callback(topic, body, envelope)`` after each publish (demo printing, tests).
        journalled_rolls: ``f(after_seq) -> {roll_id: seq}`` of the roll messages the bus journal
            holds after ``after_seq`` (see :func:`journal_roll_ids`), so that a verdict published
            just before a crash, but not yet marked, is not published twice on restart.
        observe: ``f(readings, frame) -> (observations, throw_facts)``: places the dice read at
            rest in zones and finds the facts of the throw (the irregularity detectors plug in
            here). Default: inside or outside the table area ``area``, no throw facts. When it
            also has them, the service calls ``throw_started(t)`` on the frame of the first
            motion, then ``on_frame(t, image, phase)`` every frame (after the lifecycle step,
            with the phase after it: the frame of the first motion is tracked, and the last
            still frame before it is the background), ``observe([], t, timed_out=True)`` on a
            timeout, ``verdict_published(roll_id, verdict, image)`` after each verdict and
            ``decisions()`` every frame (boxperson decisions to publish), as
            ``controller.throw_observer.ThrowObserver`` does.
        read_crop: read only the table area's bounding box (with a margin of 5 % of its size):
            faster on a camera that sees more than the table; a die beyond it is not seen.
        metrics: a :class:`controller.metrics.TableMetrics` (frames, read time, verdicts, last
            sequence number), or ``None``.
        health: a :class:`controller.health.HealthMonitor`, or ``None``. With it :meth:`run`
            reads the source through a ``camera.pump.FramePump`` and calls :meth:`tick` at
            least every :attr:`TICK_S`: a frozen or lost camera, a firmware bridge or a bus
            down puts the table in its safe state (``bets-closed`` and ``fault`` lit, an
            ``"alarm"`` published, every throw decided meanwhile a no roll ``table-fault``),
            and it leaves it by itself when the fault clears.
        live: the source is a live camera (the pump keeps only the newest frames).
        shooter_change: ``"any-roll"`` (9 NYCRR 5324.52(i)(1)) or ``"decision"`` (9 NYCRR
            4620.3(c)(5), N.J.A.C. 13:47-20.25(g)6): a voluntary shooter change while a point is
            pending is refused under ``"decision"`` (:meth:`relinquish`).
        max_frame_gap_s: the largest step between two frames' times taken as time passing, s
            (``[vision] max_frame_gap_s``): a frame time going back, or jumping forward by more,
            is a step of the source's clock (:class:`controller.frame_clock.FrameClock`, see
            :meth:`_clock_stepped`).

    Raises:
        ValueError: an unknown ``shooter_change``; ``max_frame_gap_s`` not a number > 0.
    """

    #: seconds between health checks while no frame comes (controller/health.py: <= 0.1 s)
    TICK_S = 0.1

    def __init__(self, *, table_id: str, store: StateStore, publisher: Publisher, lamps: LampController,
                 reader: Reader, lifecycle: RollLifecycle, motion: MotionDetector, policy: Policy = NY_5324,
                 min_confidence: float = 0.8, min_presence: float = 0.3,
                 area: Sequence[tuple[float, float]] | None = None,
                 on_message: Callable[[str, dict, dict], None] | None = None,
                 journalled_rolls: Callable[[int], dict[str, int]] | None = None,
                 observe: Observer | None = None, read_crop: bool = False, metrics=None,
                 health: HealthMonitor | None = None, live: bool = False,
                 shooter_change: str = "any-roll", max_frame_gap_s: float = 1.0) -> None:
        self.table_id = table_id
        if shooter_change not in SHOOTER_CHANGES:
            raise ValueError(f"shooter_change must be 'any-roll' or 'decision', not {shooter_change!r}")
        #: when the shooter may pass the dice voluntarily (the profile's ``shooter_change``)
        self.shooter_change = shooter_change
        self.store = store
        self.publisher = publisher
        self.lamps = lamps
        self.reader = reader
        self.lifecycle = lifecycle
        self.motion = motion
        self.policy = policy
        self.min_confidence = float(min_confidence)
        self.min_presence = float(min_presence)
        self.area = None if area is None else np.asarray(area, dtype=np.float32).reshape(-1, 1, 2)
        self.on_message = on_message
        self.journalled_rolls = journalled_rolls
        self.observe = observe
        self.metrics = metrics
        #: callables run by :meth:`close` (e.g. the boxperson command server)
        self.closers: list[Callable[[], None]] = []
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        #: shooter and decide-only events held while a throw is undecided (:meth:`_drain_inbox`)
        self._deferred: deque = deque()
        #: why the service no longer takes commands (set at close, :meth:`_refuse_queued`), else None
        self._closing: str | None = None
        self._post_lock = threading.Lock()
        self._crop = None
        if read_crop and area is not None:
            pts = np.asarray(area, dtype=np.float64).reshape(-1, 2)
            (ax0, ay0), (ax1, ay1) = pts.min(axis=0), pts.max(axis=0)
            mx, my = 0.05 * (ax1 - ax0), 0.05 * (ay1 - ay0)
            self._crop = (int(ax0 - mx), int(ay0 - my), int(np.ceil(ax1 + mx)), int(np.ceil(ay1 + my)))
        self._empty_ref: np.ndarray | None = None
        self.stats = ServiceStats()
        self._faults: set[str] = set()
        self._started = False
        self._now = 0.0
        self._outbox_blocked = False
        self._last_retry = 0.0
        self.health = health
        self.live = bool(live)
        #: the last health status (``None`` before the first check)
        self.health_status: HealthStatus | None = None
        #: the table is in its safe state (no roll accepted)
        self.safe_state = False
        #: ``callback(HealthStatus)`` when the safe state's reasons change (sd_notify STATUS)
        self.on_health: Callable[[HealthStatus], None] | None = None
        self._taint: set[str] = set()     # safe-state reasons seen since the throw began
        self._called: dict | None = None  # a person's "no roll" call on the throw in progress
        self._held: deque = deque(maxlen=100)  # alarms the bus refused, retried by tick()
        self._grace_until: float | None = None
        self._frame_seen = False
        self._first_read = True  # the first rest after start: dice on the table raise an alarm
        self._shape: tuple[int, ...] | None = None  # the last good frame's image shape
        self._digest: bytes | None = None  # the last frame's digest (with a health monitor)
        self._repeats = 0  # frames in a row identical, byte for byte, to the frame before
        self._clock_ref = (0.0, time.monotonic())
        #: the frame clock: the source's frame times kept rising and free of jumps
        self.frame_times = FrameClock(max_frame_gap_s)
        #: the round driver of an automated / stadium rig (controller/automation.py), or None
        self.rounds = None

    # --- life ---------------------------------------------------------------------------------

    @property
    def verdict_unpublished(self) -> bool:
        """A committed verdict the bus refused waits in the outbox (retried about every second):
        a rig must not open or throw a round before it is out (controller/automation.py)."""
        return self._outbox_blocked

    def start(self) -> None:
        """Publish what a previous run committed but did not publish, then a ``"state"``
        message (``event: "start"``) with the resumed game, and set the lamps. When the last
        verdict is a boxperson call (the previous run stopped with it open), the call is opened
        again (``observe.reopen_call``) with its original deadline (counted from the verdict's
        commit, wall clock; one that passed while the service was down voids it at once) and
        its evidence frame as kept (:meth:`_keep_evidence`), so the boxperson decides it or it
        is void at its deadline (9 NYCRR 5324.52(h)(1)(ii)(a)) instead of being lost.

        Raises:
            controller.store.StoreError: the store cannot be read or written (naming the file).
        """
        if self._started:
            return
        self._started = True
        pending = self.store.unpublished()
        # marks made in another journal (one since replaced, numbered from 1 again) do not
        # count: then the whole of the current journal is searched
        journal_id = getattr(self.publisher, "journal_id", None)
        sent = (self.journalled_rolls(self.store.last_published_seq(journal_id))
                if pending and self.journalled_rolls else {})
        for body in pending:
            if body.get("roll_id") in sent:  # published, but stopped before marking it
                self.store.mark_published(body["roll_id"], sent[body["roll_id"]], journal_id)
                continue
            log.warning("publishing verdict %s committed before a restart", body.get("roll_id"))
            self._publish_verdict_body(body)
        self._publish("state", {"event": "start", "game": self._game_json(self.store.state)})
        last = self.store.verdicts(1)
        if last and last[-1].get("verdict") == "boxperson" and hasattr(self.observe, "reopen_call"):
            # a call open when the last process stopped: decided or voided now, not lost, by
            # its original deadline and on its original evidence frame
            roll_id = str(last[-1].get("roll_id"))
            created = self.store.verdict_created(roll_id)
            elapsed = 0.0 if created is None else max(0.0, time.time() - created)
            if self.observe.reopen_call(last[-1], elapsed_s=elapsed, evidence_png=self.store.evidence(roll_id)):
                self.lamps.verdict("boxperson", self._now)   # CALL BOXPERSON flashes again
        self.lamps.update(self.store.state, self.lifecycle.phase, now=self._now)

    def run(self, source: FrameSource, *, max_verdicts: int | None = None,
            should_stop: Callable[[], bool] | None = None) -> ServiceStats:
        """Process ``source``'s frames until it ends, ``max_verdicts`` verdicts were published,
        or ``should_stop()`` returns true.

        Raises:
            camera.base.FrameError: the source failed (an alarm is published first).
            controller.store.StoreError: the store cannot be written (disk full, I/O error):
                the verdict being committed is not written, nor published.
        """
        self.start()
        target = None if max_verdicts is None else self.stats.total_verdicts + max_verdicts
        if self.health is not None:
            return self._run_watched(source, target, should_stop)
        try:
            for frame in source.frames():
                self.process(frame)
                if target is not None and self.stats.total_verdicts >= target:
                    break
                if should_stop is not None and should_stop():
                    break
            else:
                self._source_ended()
        except FrameError as exc:
            self._raise_fault("source", str(exc))
            raise
        return self.stats

    def _source_ended(self) -> None:
        """The source has no more frames (a replay's end, a camera's stream closed): a throw in
        motion then gets no verdict, which a ``source-fault`` alarm says (before, it ended
        silently)."""
        if self.lifecycle.phase == IN_MOTION:
            message = (f"the frame source ended during a throw (after frame {self.stats.frames}): "
                       "that throw has no verdict")
            log.warning("%s", message)
            self._raise_fault("source", message)

    def _run_watched(self, source: FrameSource, target: int | None,
                     should_stop: Callable[[], bool] | None) -> ServiceStats:
        """:meth:`run` with the health monitor: a ``FramePump`` thread reads the source, so a
        camera that blocks cannot block the checks; each frame is reported to the monitor
        (digest and grey level, controller/health.py) and checked before it is processed, and
        without frames the check runs every :attr:`TICK_S`. The pump (and so the source) is
        closed on the way out."""
        from camera.pump import FramePump

        pump = FramePump(source, drop_old=self.live)
        # the first frame may take up to frame_timeout_s to come before "no frame" is a fault
        self._grace_until = time.monotonic() + self.health.config.frame_timeout_s
        try:
            while True:
                try:
                    frame = pump.get(self.TICK_S)
                except EOFError:
                    self._source_ended()
                    break
                except FrameError as exc:
                    self.health.frame_error(time.monotonic(), str(exc))
                    self._frame_seen = True
                    self.tick()
                    self._raise_fault("source", str(exc))
                    raise
                if frame is not None:
                    try:
                        # only a usable frame tells the monitor the camera lives: a camera sending
                        # nothing but unusable frames is "no frame" (camera-lost) after
                        # frame_timeout_s, not a healthy camera with a frame fault now and then
                        good = self._usable(frame)
                        digest = frame_digest(good.image)
                        self._repeats = self._repeats + 1 if digest == self._digest else 0
                        self._digest = digest
                        self.health.frame(time.monotonic(), digest, frame_level(good.image))
                        self._frame_seen = True
                    except Exception as exc:  # noqa: BLE001 - not usable: process() raises the fault
                        log.debug("health: frame %s not measured: %s", getattr(frame, "index", "?"), exc)
                    self.tick()
                    self.process(frame)
                else:
                    self.tick()
                if target is not None and self.stats.total_verdicts >= target:
                    break
                if should_stop is not None and should_stop():
                    break
        finally:
            pump.close()
        return self.stats

    def tick(self, now: float | None = None) -> HealthStatus | None:
        """Check health (monotonic seconds ``now``, default the clock) and enter or leave the
        safe state: ``fault`` and ``bets-closed`` lit, an ``"alarm"`` published (code
        ``safe-state`` or ``safe-state-cleared`` with :meth:`HealthStatus.alarm_body`), the
        metrics and :attr:`on_health` told. Also applies posted events and retries, about every
        second, the verdicts and alarms the bus refused, and publishes the boxperson decisions
        taken since the last frame (:meth:`_apply_idle_decisions`). Call at least every 100 ms
        (:meth:`run` does); without a monitor only the events and decisions are applied.

        Returns:
            the status, or ``None`` (no monitor, or the first frame not yet due).
        """
        self._drain_inbox()
        self._apply_idle_decisions()
        if self.health is None:
            return None
        now = time.monotonic() if now is None else float(now)
        if (self._outbox_blocked or self._held) and now - self._last_retry >= 1.0:
            self._last_retry = now
            self._send_held()
            if self._outbox_blocked:
                self._flush_outbox()
        if not self._frame_seen and self._grace_until is not None and now < self._grace_until:
            return None
        status = self.health.check(now)
        self.health_status = status
        if status.safe_state:
            self._taint.update(status.reasons)
        if not status.changed:
            return status
        self.safe_state = status.safe_state
        if self.metrics is not None:
            self.metrics.health(status.safe_state, status.entered)
        body = {"code": "safe-state" if status.safe_state else "safe-state-cleared", **status.alarm_body()}
        if status.safe_state:
            log.warning("safe state: %s", "; ".join(f"{r}: {status.details.get(r, '')}" for r in status.reasons))
            self._faults.add("health")
            self.lamps.set_fault(True)
        else:
            log.info("safe state left: %s cleared", ", ".join(status.cleared))
            self._clear_fault("health")
        self._held.append(body)  # in order behind any alarm the bus refused before
        self._send_held()  # the alarm first: the lamps never delay it
        self.lamps.update(self.store.state, self.lifecycle.phase, now=self._now)
        if self.on_health is not None:
            self.on_health(status)
        return status

    def _send_held(self) -> None:
        """Publish the held safe-state alarms, oldest first, until the bus refuses one (it is
        kept, with those after it, for the next try about a second later)."""
        while self._held:
            try:
                self._publish("alarm", self._held[0])
            except Exception as exc:  # noqa: BLE001 - the bus may be the fault: retried
                log.error("could not publish the alarm %s (kept for retry): %s", self._held[0].get("code"), exc)
                return
            self._held.popleft()

    def frame_clock(self) -> float:
        """Now on the frame clock (seconds, ``Frame.t``): the last frame's time plus the
        monotonic time since it arrived. Input events stamped on the monotonic clock (the
        far-wall sensor) are put on it with ``firmware_bridge.events.WallStrikeLog(clock=...)``."""
        t, at = self._clock_ref
        return t + (time.monotonic() - at)

    def close(self) -> None:
        """Take no more boxperson answers (``observe.refuse_answers``), commit and publish those
        taken (their command socket replies wait on it), refuse the table commands still
        queued; then lamps off (safe state) and their driver closed, the closers run (the
        command socket among them), store closed. The publisher and the source belong to the
        caller, and are closed after this."""
        try:
            self._close_commands()
            self.lamps.all_off()
            self.lamps.driver.close()
        finally:
            for close in self.closers:
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing the rest matters more
                    log.exception("error while closing")
            self.store.close()

    def _close_commands(self) -> None:
        """The first step of :meth:`close` (before the command socket closes): answers are
        refused from now on (in one step with taking one), the decisions taken are committed and
        published (an error is logged: their calls open again at the next start), the queued
        commands refused."""
        if hasattr(self.observe, "refuse_answers"):
            self.observe.refuse_answers("the table service is stopping; the call is opened again when it starts")
        try:
            self._apply_idle_decisions()
        except Exception:  # noqa: BLE001 - closing the rest matters more; nothing was replied ok
            log.exception("boxperson decisions not committed at close (their calls open again at the next start)")
        self._refuse_queued("the table service is stopping: not applied")

    # --- per frame ----------------------------------------------------------------------------

    def process(self, frame: Frame) -> dict | None:
        """Take one frame through the pipeline.

        Returns:
            the roll body published for this frame, or ``None``.
        """
        arrived = time.perf_counter()
        self.stats.frames += 1
        if self.metrics is not None:
            self.metrics.frame(time.monotonic())
        try:
            # the image and the time: a NaN or missing time would leave a throw never at rest
            frame = self._usable(frame)
            moving = self.motion.moving(frame.image)
        except FrameError as exc:  # skipped: a frame-fault alarm names what is wrong
            self._raise_fault("frame", str(exc))
            return None
        t, clock_step = self.frame_times.time(frame.t)
        if t != frame.t:  # the source's clock stepped: the frame on the service's frame clock
            frame = replace(frame, t=t)
        self._now = float(frame.t)
        self._clock_ref = (self._now, time.monotonic())
        self._clear_fault("frame")
        shape, self._shape = self._shape, frame.image.shape
        in_throw = self.lifecycle.phase == IN_MOTION
        if clock_step is not None:
            self._clock_stepped(frame, clock_step, in_throw)
        self._drain_inbox()
        if self._outbox_blocked and time.monotonic() - self._last_retry >= 1.0:
            self._last_retry = time.monotonic()
            self._flush_outbox()
        forced = self.rounds.on_frame(frame.t, moving) if self.rounds is not None else None
        step = self.lifecycle.on_frame(frame.t, moving)
        body = None
        if forced is not None:  # rounds: the rig threw and the dice did not move at all
            body = self._commit_and_publish(forced, frame, arrived)
        if step.kind == STEP_THROW:
            self._taint = set(self.health_status.reasons) if self.safe_state and self.health_status else set()
            self.lamps.throw_started()
            if self.rounds is not None:
                self.rounds.throw_started(frame.t)
            if hasattr(self.observe, "throw_started"):
                self.observe.throw_started(frame.t)
        if shape is not None and shape != frame.image.shape and (in_throw or step.kind == STEP_THROW):
            self._frame_changed(frame, shape)
        if hasattr(self.observe, "on_frame"):
            # after the step: the frame that shows the first motion is the first frame of the
            # throw (tracked), and the background is the last still frame before it
            self.observe.on_frame(frame.t, frame.image, self.lifecycle.phase)
        if step.kind == STEP_TIMEOUT:
            if hasattr(self.observe, "observe"):  # the detectors' state ends with the throw
                observed = self.observe.observe([], frame.t, timed_out=True)
                observations, facts = list(observed.observations), observed.facts
            else:
                observations, facts = [], ThrowFacts(timed_out=True)
            verdict = decide(observations, facts, policy=self.policy, min_confidence=self.min_confidence)
            body = self._commit_and_publish(verdict, frame, arrived)
        elif step.kind == STEP_READ and self._frozen_rest():
            # a camera that froze, mid-throw or mid-clearing, shows a rest that is none: wait
            # for a frame that changes, or for the health monitor to call the camera frozen
            log.info("rest of identical frames (%d in a row): not read; the camera may be frozen", self._repeats)
            self.lifecycle.retry_read()
        elif step.kind == STEP_READ:
            body = self._read(frame, arrived)
        if self.rounds is not None and hasattr(self.observe, "close_calls"):
            self._close_call_the_round_left()
        if hasattr(self.observe, "decisions"):
            self._apply_decisions(frame)
        self.lamps.update(self.store.state, self.lifecycle.phase, now=frame.t)
        return body

    def _usable(self, frame: Frame) -> Frame:
        """``frame`` checked (:func:`camera.base.check_frame`) and, where the calibration says
        the frame size it was made for (``image_size``, a calibration file's), of that size: the
        zones and the homography of a calibration made for another size place every die wrong
        (a camera that switched resolution).

        Raises:
            FrameError: naming what is wrong (both sizes, for a size the calibration is not for).
        """
        frame = check_frame(frame)
        size = getattr(getattr(self.observe, "calibration", None), "image_size", None)
        if size is not None:
            h, w = frame.image.shape[:2]
            if (w, h) != tuple(size):
                raise FrameError(f"frame {frame.index} of {frame.source or 'the source'}: {w}x{h} pixels, but the "
                                 f"calibration is for {size[0]}x{size[1]}: calibrate again for this size "
                                 "(craps-table calibrate) or set the camera back to it")
        return frame

    def _frozen_rest(self) -> bool:
        """The still frames of the rest just reached are all byte-identical to the frame before
        them, with a health monitor that checks for a frozen camera (a live sensor's noise never
        repeats a frame: controller/health.py): not a rest but a camera that stopped, maybe
        mid-tumble (read, its frame would give a verdict, and the dice at rest after it a second
        one for the same throw). Such a rest is never read: a throw in progress is decided at its
        next rest of live frames, or timed out, a no roll ``table-fault`` if the camera was
        called frozen (``camera-frozen``) meanwhile."""
        if self.health is None or self.health.config.frozen_after_s is None:
            return False
        return self._repeats >= self.lifecycle.still_frames

    def _clock_stepped(self, frame: Frame, step: ClockStep, in_throw: bool) -> None:
        """The source's frame time went back, or jumped forward by more than ``max_frame_gap_s``
        (:class:`controller.frame_clock.FrameClock`): the frame is already on the service's frame
        clock, carried on at the usual frame interval, so no rest, rest timeout (9 NYCRR
        5324.52(k)(2)(vi)) or round time is cut short or made endless by it. Named: a WARNING
        (event ``frame-clock-step``), :attr:`ServiceStats.clock_steps` and the metric
        ``craps_table_clock_jumps_total{clock="frame"}``. During a throw the throw's timing was
        not seen (its rest, its track's speeds, its far-wall window): its verdict is a no roll
        ``table-fault`` (``frame-clock`` in its ``faults``, as ``frame-changed``) and a
        ``frame-fault`` alarm names the step."""
        where = frame.source or "the source"
        then = "; during a throw: the throw is a no roll table-fault" if in_throw else ""
        message = f"frame {frame.index} of {where}: {step.describe()}{then}"
        log.warning("frame %d of %s: %s%s", frame.index, where, step.describe(), then,
                    extra={"event": "frame-clock-step", "kind": step.kind, "gap_s": step.gap_s})
        self.stats.clock_steps += 1
        if self.metrics is not None and hasattr(self.metrics, "clock_jump"):
            self.metrics.clock_jump("frame")
        if in_throw:
            self._taint.add("frame-clock")
            self._raise_fault("frame", message)

    def _frame_changed(self, frame: Frame, before: tuple[int, ...]) -> None:
        """A frame of another size or colour format than the one before it, during a throw (a
        camera that switched mode): what the throw's frames showed cannot be compared, nor
        placed with a calibration made for the other size, so the throw's verdict is a no roll
        ``table-fault`` (reason ``frame-changed`` in its ``faults``), and a ``frame-fault``
        alarm names both formats."""
        def fmt(shape: tuple[int, ...]) -> str:
            return f"{shape[1]}x{shape[0]} {'grey' if len(shape) == 2 else 'BGR'}"

        message = (f"frame {frame.index} of {frame.source or 'the source'}: {fmt(frame.image.shape)} during a "
                   f"throw, after {fmt(before)} frames: the throw is a no roll table-fault")
        log.warning("%s", message)
        self._taint.add("frame-changed")
        self._raise_fault("frame", message)

    def _read(self, frame: Frame, arrived: float) -> dict | None:
        if self.lifecycle.reading_from == CLEARING and self.motion.same_as(self._empty_ref):
            # the table looks as it did when last seen empty: cleared, no need to read it
            self.lifecycle.on_read(())
            return None
        try:
            t_read = time.perf_counter()
            readings = self._read_dice(frame.image)
            if self.metrics is not None:
                self.metrics.read_ms((time.perf_counter() - t_read) * 1000.0)
        except Exception as exc:  # noqa: BLE001 - any reader failure is a fault, never a verdict
            log.exception("dice reader failed on frame %d of %s", frame.index, frame.source)
            self.lifecycle.retry_read()
            self._raise_fault("reader", f"{type(exc).__name__}: {exc}")
            return None
        self._clear_fault("reader")
        if self.observe is not None:
            observations, facts = self.observe(readings, frame)
            observations = list(observations)
        else:
            observations, facts = self._observe(readings), ThrowFacts()
        origin = self.lifecycle.reading_from
        if origin == CLEARING and observations and \
                all(o.zone == "dice_cup" for o in observations):
            # after a verdict, the table cleared and the dice put in the cup (the stickperson
            # returns dice there, 9 NYCRR 5324.52(a)(5), (f)(3)): a cleared table, not a throw
            # of dice at rest in the cup
            observations = []
        on_table = observations
        if origin == CLEARING and self.lifecycle.offer_on_table:
            # an offer's dice not selected go back to the cup, (i)(4): those already there are
            # off the table, the rest are compared with the offer
            on_table = [o for o in observations if o.zone != "dice_cup"]
        scene = tuple(SceneDie(o.reading.value, float(o.reading.centre[0]), float(o.reading.centre[1]))
                      for o in on_table)
        offer = self._judge_offer(observations, facts) if origin == IN_MOTION else None
        outcome = self.lifecycle.on_read(scene, offer=offer is not None and offer.offered)
        first, self._first_read = self._first_read, False
        if first and outcome == READ_SETTLED:
            self._dice_at_rest_at_start(on_table)
        if not scene:
            self._empty_ref = self.motion.snapshot()
        if outcome == READ_OFFERED and offer is not None and offer.offered:
            self._dice_offered(offer, frame)
        if outcome != READ_VERDICT:
            self._drop_call(f"the motion was not a throw ({outcome})")
            return None
        verdict = decide(observations, facts, policy=self.policy, min_confidence=self.min_confidence)
        if self.rounds is not None:  # at rest; dice resting where they rested: a no roll
            verdict = self.rounds.review(verdict, frame.t)
        return self._commit_and_publish(verdict, frame, arrived)

    def _dice_at_rest_at_start(self, on_table: Sequence[DieObservation]) -> None:
        """The first scene settled after start shows dice on the table (not in the cup): the
        process may have stopped between the dice coming to rest and the verdict's commit, so
        the last throw may be undecided. Nothing is decided from them (they did not move in
        this run); an alarm ``dice-at-rest-at-start`` tells the boxperson to check the last
        verdict. A bus that refuses it is logged, never raised."""
        dice = [o for o in on_table if o.zone != "dice_cup"]
        if not dice:
            return
        last = self.store.last_roll_id() or "none"
        values = ", ".join("?" if o.reading.value is None else str(o.reading.value) for o in dice)
        message = (f"dice at rest at start: the last throw may be undecided (last verdict {last}; "
                   f"dice on the table: {values})")
        log.warning("%s", message, extra={"event": "dice-at-rest-at-start"})
        try:
            self._publish("alarm", {"code": "dice-at-rest-at-start", "message": message[:500]})
        except Exception:  # noqa: BLE001 - an alarm that cannot be sent is logged, not raised
            log.exception("could not publish the alarm dice-at-rest-at-start")

    def _judge_offer(self, observations: Sequence[DieObservation], facts: ThrowFacts) -> OfferFinding | None:
        """Whether the dice at rest after a motion from the empty table were offered to a new
        shooter (controller/offer.py), or ``None`` where no offer is possible: an armed motion
        (a rig's shaker throws) or a table with a round driver (automated and stadium rigs
        offer no dice)."""
        if self.lifecycle.armed_throw or self.rounds is not None:
            return None
        state = self.store.state
        # a new shooter's first roll, or a point just made: the set is then offered to the
        # player left of the shooter (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b))
        awaiting = state.shooter_roll == 0 or (state.last_outcome == "point-made" and not state.decide_only)
        finding = judge_offer(observations, facts, awaiting_new_shooter=awaiting)
        if not finding.offered and finding.dice >= 3:
            log.info("more than two dice at rest, decided as a throw: %s", finding.why)
        return finding

    def _dice_offered(self, offer: OfferFinding, frame: Frame) -> None:
        """Dice offered to the new shooter (9 NYCRR 5324.52(i)(3), (i)(4)): no verdict, nothing
        published; counted in :attr:`stats` (``offers``) and logged (event ``dice-offered``)."""
        self.stats.offers += 1
        log.info("dice offered to shooter %d: %s", self.store.state.shooter, offer.why,
                 extra={"event": "dice-offered", "dice": offer.dice, "shooter": self.store.state.shooter,
                        "frame_index": frame.index})

    def _read_dice(self, image: np.ndarray) -> list[DieReading]:
        """Read the dice, only inside the table area's bounding box (plus a margin) when
        ``read_crop`` is set; the readings are given back in full-frame pixels."""
        if self._crop is None:
            return list(self.reader(image))
        h, w = image.shape[:2]
        x0, y0, x1, y1 = self._crop
        x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
        if x1 - x0 < 16 or y1 - y0 < 16:
            return list(self.reader(image))
        return [r.moved(x0, y0) for r in self.reader(image[y0:y1, x0:x1])]

    def _observe(self, readings: Iterable[DieReading]) -> list[DieObservation]:
        """Readings -> observations without an ``observe`` hook: drop non-dice (no value,
        confidence < min_presence), place each die in the playing area or outside it by its
        centre. A die read not flat comes back unread (``extra["seen_value"]`` its face seen):
        no detector found the side it rests on, whose opposite face is the one that counts,
        9 NYCRR 5324.52(h)(1)(i), so which face is uppermost is in dispute, (h)(1)(ii) (the
        seen face would otherwise be read as the roll where a profile reads a cocked die)."""
        out = []
        for r in readings:
            if r.value is None and r.confidence < self.min_presence:
                continue
            if not r.flat and r.value is not None:
                r = replace(r, value=None, confidence=0.0, extra={**r.extra, "seen_value": r.value})
            zone = "playing"
            if self.area is not None:
                inside = cv2.pointPolygonTest(self.area, (float(r.centre[0]), float(r.centre[1])), False)
                zone = "playing" if inside >= 0 else "outside"
            out.append(DieObservation(r, zone=zone))
        return out

    # --- verdict -> state -> bus --------------------------------------------------------------

    def _commit_and_publish(self, verdict: Verdict, frame: Frame, arrived: float, *,
                            frame_info: dict | None = None, frame_hash: str | None = None,
                            decision: dict | None = None) -> dict:
        if decision is None and hasattr(self.observe, "close_calls"):
            self._close_calls(frame)   # the open calls' decisions go out before this verdict
        faults: list[str] = []
        called = None
        if decision is None:  # a throw, not a boxperson's decision on an earlier one
            faults = sorted(self._taint | (set(self.health_status.reasons)
                                           if self.safe_state and self.health_status else set()))
            self._taint = set(self.health_status.reasons) if self.safe_state and self.health_status else set()
            if faults:
                verdict = self._table_fault(verdict, faults)
            called, self._called = self._called, None
            if called is not None:
                verdict = self._called_no_roll(verdict, called)
        before = self.store.state
        if verdict.kind == "roll" and verdict.dice is not None:
            after, outcome = advance(before, verdict.dice)
        else:
            after, outcome = before, None
        n = self.store.verdict_count + 1
        body = {
            "roll_id": f"{self.table_id}-{n:08d}",
            "verdict": verdict.kind,
            "reason": None if verdict.reason is None else verdict.reason.value,
            "citation": None if verdict.reason is None else self.policy.citation(verdict.reason),
            "dice": None if verdict.dice is None else list(verdict.dice),
            "total": verdict.total,
            "game": {
                "shooter": before.shooter,
                "shooter_roll": before.shooter_roll + (1 if outcome is not None else 0),
                "come_out": before.come_out,
                "point": after.point,
                "puck": after.puck,
                "outcome": outcome,
                "next_shooter": after.shooter,
            },
            "irregularities": [r.value for r in verdict.irregularities],
            "readings": [{**o.reading.to_json(), "zone": o.zone} for o in verdict.observations],
            "policy": self.policy.name,
            "frame": frame_info or {"index": frame.index, "source": frame.source, "t": round(float(frame.t), 4),
                                    "width": int(frame.image.shape[1]), "height": int(frame.image.shape[0])},
            "frame_sha256": frame_hash or frame_sha256(frame.image),
            "decision": decision,
            "called": called,
            "faults": faults,
        }
        self.store.commit(after, body)
        self._publish_verdict_body(body)
        self.stats.verdicts[verdict.kind] = self.stats.verdicts.get(verdict.kind, 0) + 1
        self.stats.latencies_s.append(time.perf_counter() - arrived)
        self.lamps.verdict(verdict.kind, frame.t)
        if self.metrics is not None:
            self.metrics.verdict(verdict.kind, body["reason"])
        log.info("verdict %s %s %s", body["roll_id"], verdict.kind, body["reason"] or body["dice"])
        if hasattr(self.observe, "verdict_published"):
            self.observe.verdict_published(body["roll_id"], verdict, frame.image)
        if verdict.kind == "boxperson" and hasattr(self.observe, "call_evidence"):
            self._keep_evidence(body["roll_id"])
        if self.rounds is not None:
            self.rounds.verdict_published(body, frame.t)
        return body

    def _keep_evidence(self, roll_id: str) -> None:
        """Keep the evidence frame of the boxperson call just opened in the store
        (``StateStore.keep_evidence``), so that a restart opens the call again with it
        (:meth:`start`). One that cannot be kept is logged: the call is open; only a restart
        would show a blank frame with the published readings instead."""
        png = self.observe.call_evidence(roll_id)
        if not png:
            return
        try:
            self.store.keep_evidence(roll_id, png)
        except StoreError:
            log.exception("boxperson call %s: its evidence frame could not be kept for a restart", roll_id)

    @staticmethod
    def _table_fault(verdict: Verdict, faults: Sequence[str]) -> Verdict:
        """The verdict of a throw decided while (or after) the table was in its safe state: a
        no roll ``table-fault`` (a controller rule; 9 NYCRR 5324.52(k) is the closest
        paragraph), keeping what was found as irregularities."""
        found = ((verdict.reason,) if verdict.reason is not None else ()) + tuple(verdict.irregularities)
        log.warning("throw decided in the safe state (%s): %s %s -> no roll table-fault", ", ".join(faults),
                    verdict.kind, verdict.reason.value if verdict.reason else list(verdict.dice or ()))
        return Verdict(kind="no-roll", reason=Reason.TABLE_FAULT, dice=None,
                       irregularities=tuple(dict.fromkeys(found)), observations=verdict.observations)

    @staticmethod
    def _called_no_roll(verdict: Verdict, called: dict) -> Verdict:
        """The verdict of a throw a person called "no roll" on (:meth:`call_no_roll`): a no roll
        with the call's reason, keeping what the camera found as irregularities."""
        found = ((verdict.reason,) if verdict.reason is not None else ()) + tuple(verdict.irregularities)
        log.info("no roll called by %s (%s): %s %s -> no roll", called["who"], called["reason"], verdict.kind,
                 verdict.reason.value if verdict.reason else list(verdict.dice or ()))
        return Verdict(kind="no-roll", reason=Reason.from_code(called["reason"]), dice=None,
                       irregularities=tuple(dict.fromkeys(found)), observations=verdict.observations)

    def _drop_call(self, why: str) -> None:
        """A "no roll" call whose motion ended without a verdict (the table was cleared, the dice
        were not moved): dropped, with a ``command-refused`` alarm."""
        if self._called is None:
            return
        c, self._called = self._called, None
        log.warning("no-roll call %s by %s dropped: %s", c["reason"], c["who"], why)
        self._publish("alarm", {"code": "command-refused",
                                "message": f"no-roll by {c['who']}: {why}; nothing was called"[:500]})

    def _close_calls(self, frame: Frame) -> None:
        """Before a throw's verdict is committed (9 NYCRR 5324.52(h)(1)(ii)(a): a call decides
        the throw it was made on): close the boxperson calls still open (``observe.close_calls``,
        one step with the command socket's answers: an answer is taken before it, or refused
        after it naming why) and publish every decision taken until then, each on its call,
        which is still the last verdict: an answer or a timeout as usual, a call closed
        unanswered as a no roll ``boxperson-void`` with decision outcome ``"superseded"``.
        Before, a call stayed open until after the commit: an answer in between, or one taken
        but not yet published when the verdict came, was replied ``ok`` and then dropped as a
        ``stale-decision``; and nothing said that the call had closed undecided."""
        self.observe.close_calls()
        if hasattr(self.observe, "decisions"):
            self._apply_decisions(frame)

    def _apply_idle_decisions(self) -> None:
        """Between frames (:meth:`tick`): publish the boxperson decisions taken since the last
        frame (answers, and timeouts: ``observe.decisions`` expires the calls due). Before, they
        waited for the next frame: while none came (a camera lost, a stalled live source) an
        answer replied ``ok`` was held in memory only, and lost if the service stopped
        meanwhile (the call was reopened at the restart and had to be answered again). A
        decision's verdict carries its call's frame; its time is the frame clock."""
        if not hasattr(self.observe, "decisions"):
            return
        self._apply_decisions(Frame(np.zeros((1, 1, 3), np.uint8), self.frame_clock(), -1, "tick"))

    def _close_call_the_round_left(self) -> None:
        """With a round driver: a boxperson call, the last verdict, that the round no longer
        waits on (the table stopped; a technician's resume abandons the round,
        ``RoundDriver.awaits_decision``) can no longer be applied, so it is closed now
        (``observe.close_calls``): an answer after this is refused naming why, instead of being
        replied ``ok`` and then dropped as a ``stale-decision`` at the next frame; the closing
        itself raises the ``stale-decision`` alarm (:meth:`_apply_decisions`), its record."""
        last = self.store.verdicts(1)
        if not last or last[-1].get("verdict") != "boxperson":
            return
        if not self.rounds.awaits_decision(str(last[-1].get("roll_id"))):
            self.observe.close_calls(why="the round driver no longer waits on it (the table stopped; "
                                         "a resume abandons the round)")

    def _apply_decisions(self, frame: Frame) -> None:
        """Publish the boxperson's decisions (9 NYCRR 5324.52(h)(1)(ii)(a)) that the observer
        hands over: the dice given make a valid roll that moves the game; a void, a timeout or
        a call superseded (:meth:`_close_calls`) is a no roll ``boxperson-void``. Either is a new
        verdict (a new ``roll_id``) carrying the call's deciding frame and ``decision`` (who,
        when, outcome, the call's roll id). A
        decision on a call that is no longer the last verdict (the game moved on), or, with a
        round driver, on a call the current round is not waiting on (the table stopped and
        resumed, a new round opened: ``RoundDriver.awaits_decision``), is not applied: it is
        logged and raised as an alarm ``stale-decision``."""
        settle = getattr(self.observe, "decision_applied", lambda roll_id, **outcome: None)
        for d in self.observe.decisions():
            last = self.store.verdicts(1)
            call = last[-1] if last else None
            if (call is None or call.get("roll_id") != d.roll_id or call.get("verdict") != "boxperson"
                    or (self.rounds is not None and not self.rounds.awaits_decision(d.roll_id))):
                log.warning("boxperson decision on %s (%s) ignored: it is not the open call", d.roll_id, d.outcome)
                what = ("call closed without an answer" if d.outcome == "superseded" else "decision")
                stale = f"{what} on {d.roll_id} after a newer verdict, or on a call the round no longer waits on"
                settle(d.roll_id, error=f"{stale} (stale-decision)")
                self._raise_fault("stale-decision", f"{stale}: not applied")
                self._faults.discard("stale-decision")
                continue
            decision = {"call": d.roll_id, "reason": d.reason, "outcome": d.outcome, "who": d.who,
                        "at_utc": d.at_utc, "latency_s": round(float(d.latency_s), 3), "console": d.console}
            try:
                irregular = (Reason.from_code(d.reason),)
            except ValueError:
                irregular = ()
            if d.outcome == "dice" and d.dice is not None:
                verdict = Verdict(kind="roll", reason=None, dice=(int(d.dice[0]), int(d.dice[1])),
                                  irregularities=irregular)
            else:
                verdict = Verdict(kind="no-roll", reason=Reason.BOXPERSON_VOID, dice=None,
                                  irregularities=irregular)
            self.lamps.boxperson_answered()
            try:
                body = self._commit_and_publish(verdict, frame, time.perf_counter(), frame_info=call.get("frame"),
                                                frame_hash=call.get("frame_sha256"), decision=decision)
            except Exception as exc:  # StoreError above all: not committed; the caller stops the service
                settle(d.roll_id, error=f"the table could not commit it ({type(exc).__name__}: {exc}); the call is "
                                        "opened again when the service starts")
                raise
            # committed (the answer survives a crash now); the command socket may reply ok
            settle(d.roll_id, committed={"roll_id": body["roll_id"], "published": not self._outbox_blocked})

    def _publish_verdict_body(self, body: dict) -> bool:
        """Publish a committed verdict and mark it. On a bus error the verdict stays in the
        outbox (committed, unpublished), the fault lamp is lit, and :meth:`_flush_outbox`
        retries it about every second; later verdicts queue behind it, in order."""
        if self._outbox_blocked:
            return False
        try:
            env = self._publish("roll", body)
        except Exception as exc:  # noqa: BLE001 - the bus is an edge; the verdict is safe in the store
            log.error("could not publish verdict %s (kept for retry): %s", body.get("roll_id"), exc)
            self._outbox_blocked = True
            self.stats.faults += 1
            self.lamps.set_fault(True)
            return False
        env = env if isinstance(env, dict) else {}
        self.store.mark_published(body["roll_id"], env.get("seq"),
                                  env.get("journal_id") or getattr(self.publisher, "journal_id", None))
        return True

    def _flush_outbox(self) -> None:
        """Retry the verdicts the bus refused, oldest first."""
        self._outbox_blocked = False
        for body in self.store.unpublished():
            if not self._publish_verdict_body(body):
                return
        self.lamps.set_fault(bool(self._faults))

    def _publish(self, topic: str, body: dict) -> dict:
        try:
            env = self.publisher.publish(topic, body)
        except Exception as exc:
            if self.health is not None:  # a bus that refuses messages is down (safe state)
                self.health.bus(time.monotonic(), False, f"publish {topic!r}: {type(exc).__name__}: {exc}"[:300])
            raise
        if self.health is not None:
            self.health.bus(time.monotonic(), True)
        if self.metrics is not None and isinstance(env, dict) and isinstance(env.get("seq"), int):
            self.metrics.sequence(env["seq"])
        if self.on_message is not None:
            self.on_message(topic, body, env)
        return env

    def _clear_fault(self, where: str) -> None:
        if where in self._faults:
            self._faults.discard(where)
            log.info("%s fault cleared", where)
            self.lamps.set_fault(bool(self._faults) or self._outbox_blocked)

    def _raise_fault(self, where: str, message: str) -> None:
        """Count the fault, light the fault lamp, and publish an ``alarm`` when this kind of
        fault starts (not on every bad frame: a broken camera must not flood the bus)."""
        self.stats.faults += 1
        new = where not in self._faults
        self._faults.add(where)
        self.lamps.set_fault(True)
        if new:  # the alarm first: the lamps never delay it
            try:
                self._publish("alarm", {"code": f"{where}-fault", "message": message[:500]})
            except Exception:  # noqa: BLE001 - an alarm that cannot be sent is logged, not raised
                log.exception("could not publish the alarm %s-fault", where)
        self.lamps.update(self.store.state, self.lifecycle.phase, now=self._now)

    @staticmethod
    def _game_json(state: GameState) -> dict:
        return {"shooter": state.shooter, "shooter_roll": state.shooter_roll, "come_out": state.come_out,
                "point": state.point, "puck": state.puck, "rolls": state.rolls,
                "points_made": list(state.points_made), "decide_only": state.decide_only}
