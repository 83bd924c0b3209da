"""Glue between the table service and the irregularity detectors: one object per table.

:class:`ThrowObserver` keeps what the detectors need across the frames of a throw (the table
before the throw, the motion track, the far-wall sensor's strikes) and the boxperson calls, so
that the service loop (controller/service.py) needs only a few calls:

================================  ==============================================================
service event                     call
================================  ==============================================================
every frame                       ``observer.on_frame(frame.t, frame.image, phase)`` (before the
                                  lifecycle step: ``phase`` is ``lifecycle.phase``)
lifecycle step "throw-started"    ``observer.throw_started(frame.t)``
far-wall sensor event             ``observer.wall_strike(t)`` (any thread)
read at rest                      ``TableService(observe=observer, policy=observer.policy)``:
                                  the service calls ``observer(readings, frame)`` ->
                                  ``(observations, facts)`` (or call ``observer.observe``)
timed out                         ``observed = observer.observe([], frame.t, timed_out=True)``
before a throw's verdict commit    ``observer.close_calls()`` (the calls still open are closed
                                  void: ``"superseded"`` decisions), then the decisions published
verdict published                 ``observer.verdict_published(roll_id, verdict, frame.image,
                                  observed)`` (opens the boxperson call for a boxperson verdict)
every frame / idle tick           ``for d in observer.decisions(): publish d`` (answers and
                                  timeouts, each a :class:`controller.boxperson.Decision`)
decision committed / not applied  ``observer.decision_applied(call_id, committed=... | error=...)``
                                  (the command socket's reply to the answer waits on it)
service closing                   ``observer.refuse_answers(why)``, then the decisions published
================================  ==============================================================

All the rules are in controller/irregularity.py (9 NYCRR 5324.52(h)(1), (k)); this module only
keeps state.
"""
from __future__ import annotations

import functools
import logging
import threading
from types import SimpleNamespace
from typing import Sequence

import numpy as np

from controller.boxperson import CallRegistry, Decision, annotate_evidence
from controller.dice_cup import spares_and_change
from controller.irregularity import ObservedThrow, TableObject, Tolerances, observe_throw
from controller.irregularity_profile import IrregularityProfile, load_profile
from controller.lifecycle import CLEARING, DECIDED, IN_MOTION, WAITING
from controller.policy import Policy
from controller.track import ThrowTracker
from controller.verdict import Verdict
from vision.types import DieReading

log = logging.getLogger(__name__)


class ThrowObserver:
    """Per-table state of the irregularity detectors and boxperson calls.

    Args:
        profile: the jurisdiction profile (default ``ny-5324``).
        calibration: ``camera.calibration.Calibration`` or ``None`` (no zones, no track).
        objects: chip stacks on the layout (table mm).
        registry: the boxperson calls (``None``: boxperson verdicts open no call).
        track: follow the dice in motion frames for the far-wall strike (needs a calibration).
        wall_sensor: the rig has a far-wall strike sensor (its strikes are then evidence; without
            one, ``wall_strike`` calls are still recorded but ignored).
        min_presence: see ``controller.irregularity.observe_throw``.
        tolerances: detector thresholds.
        reread: ``(image, centre_px, side_px) -> DieReading | None``: the reader asked about
            one place of the frame at rest (``vision.reader.read_die_at``), for a die the
            track saw come to rest that the reader did not find (``None``: such a die's face is
            in dispute).
        read_spares: ``image -> readings`` (``vision.reader.read_dice``): run, when the dice come
            to rest, on the dice cup's part of the last frame of a still table before the motion
            (the table waiting for a throw, or the last verdict's dice at rest), where the cup's
            interior changed since (``controller.dice_cup.spares_and_change``); the dice in the
            cup then are the spares kept there, 9 NYCRR 5324.52(a)(5), not taken for thrown
            dice (``observe_throw(spares=..., cup_changed=...)``), nor, for the lifecycle, for
            dice left on the table when the stickperson has cleared it. Where the cup did not
            change, or with no frame before (start-up, a timed-out throw), the dice in the cup
            at rest are the spares. ``None``: every die in the cup counts as seen.
    """

    def __init__(self, profile: IrregularityProfile | None = None, *, calibration=None,
                 objects: Sequence[TableObject] = (), registry: CallRegistry | None = None,
                 track: bool = True, wall_sensor: bool = False, min_presence: float = 0.3,
                 tolerances: Tolerances = Tolerances(), reread=None, read_spares=None) -> None:
        self.reread = reread
        self.read_spares = read_spares
        self._still: np.ndarray | None = None    # the last frame of a still table
        self._before: np.ndarray | None = None   # ... before the motion now being followed
        self.profile = profile or load_profile("ny-5324")
        self.calibration = calibration
        self.objects = tuple(objects)
        self.registry = registry
        self.wall_sensor = bool(wall_sensor)
        self.min_presence = float(min_presence)
        self.tolerances = tolerances
        self.tracker: ThrowTracker | None = None
        if track and calibration is not None:
            zones = getattr(calibration, "zones", {})
            playing = np.asarray(zones.get("playing")) if "playing" in zones else None
            centre = tuple(playing.mean(axis=0)) if playing is not None else (0.0, 0.0)
            self.tracker = ThrowTracker(calibration, die_side_px=float(calibration.die_side_px(centre)))
        self._idle: np.ndarray | None = None
        self._t0: float | None = None
        self._tracking = False
        self._strikes: list[float] = []
        self._decisions: list[Decision] = []
        self._lock = threading.Lock()
        self.last: ObservedThrow | None = None
        if registry is not None:
            previous = registry.on_decision

            def keep(d: Decision) -> None:
                with self._lock:
                    self._decisions.append(d)
                if previous is not None:
                    previous(d)
            registry.on_decision = keep

    @property
    def policy(self) -> Policy:
        """The profile's policy, for ``controller.verdict.decide``."""
        return self.profile.policy

    def on_frame(self, t: float, image: np.ndarray, phase: str) -> None:
        """Every frame, with the lifecycle phase after this frame's step (the service calls it
        after ``RollLifecycle.on_frame``): keeps the last frame of a still table (waiting, or a
        verdict's dice at rest) and, at the first frame of a motion, holds it as the table before
        it (its dice cup is compared and read at rest); keeps the last idle frame (the tracker's
        background) and feeds a throw's motion frames to the tracker."""
        if phase in (WAITING, DECIDED):
            self._still = image
        elif phase in (IN_MOTION, CLEARING) and self._before is None:
            self._before = self._still   # the spares in the cup are read on it at rest
        if phase == WAITING:
            self._idle = image
        elif phase == IN_MOTION and self._tracking and self.tracker is not None:
            try:
                self.tracker.add(t, image)
            except ValueError as exc:  # another frame size or format than the background's
                log.warning("throw no longer tracked: %s", exc)
                self._tracking = False

    def throw_started(self, t: float) -> None:
        """The lifecycle's "throw-started" step: a new track from the last idle frame."""
        self._t0 = float(t)
        with self._lock:
            self._strikes = [s for s in self._strikes if s >= t - 0.5]
        self._tracking = self.tracker is not None and self._idle is not None
        if self._tracking:
            self.tracker.set_background(self._idle)

    def use_strike_log(self, strikes) -> None:
        """Take the far-wall sensor's strikes from ``strikes`` (a
        ``firmware_bridge.events.WallStrikeLog`` recording on the frame clock) instead of
        :meth:`wall_strike` calls: the throw's window (its start, less 0.5 s of motion-detection
        latency, to its rest) is asked with ``strikes_between`` (9 NYCRR 5324.52(k)(2)(ii))."""
        self._strike_log = strikes

    def wall_strike(self, t: float) -> None:
        """A far-wall strike from the sensor (seconds, the frame clock). Thread-safe."""
        with self._lock:
            self._strikes.append(float(t))

    def observe(self, readings: Sequence[DieReading], t: float, *, timed_out: bool = False,
                image: np.ndarray | None = None) -> ObservedThrow:
        """The observations of the throw now at rest (or timed out) at time ``t``; ``image``
        (the frame at rest) lets :attr:`reread` read a die the track saw but the reader missed."""
        window = None if self._t0 is None else (self._t0 - 0.5, float(t))
        log_ = getattr(self, "_strike_log", None)
        with self._lock:
            strikes = list(self._strikes) if self.wall_sensor else None
        if self.wall_sensor and log_ is not None:
            strikes = log_.strikes_between(*window) if window is not None else log_.times()
        tracking = self._tracking and self.tracker is not None
        track = self.tracker.tracks() if tracking else None
        shared = self.tracker.shared() if tracking else None
        copied = self.tracker.copied() if tracking else None
        seen = self.tracker.seen() if tracking else None
        reread = None
        if self.reread is not None and image is not None:
            reread = functools.partial(self.reread, image)
        spares = changed = None
        if self.read_spares is not None:
            # the dice in the cup on the table last seen still, before this motion
            try:
                spares, changed = spares_and_change(self.read_spares, self.calibration, self._before, image,
                                                    readings)
            except Exception:  # noqa: BLE001 - a reader failure must not lose the throw: every die counts
                log.exception("reading the dice cup before the throw failed; every die in the cup counts as seen")
                spares = changed = None
        observed = observe_throw(readings, calibration=self.calibration, profile=self.profile,
                                 objects=self.objects, track=track, wall_strikes=strikes, window=window,
                                 timed_out=timed_out, min_presence=self.min_presence,
                                 tolerances=self.tolerances, reread=reread, track_shared=shared, track_copied=copied,
                                 spares=spares, cup_changed=changed, track_seen=seen)
        self._tracking = False
        self._before = None
        return observed

    def __call__(self, readings: Sequence[DieReading], frame) -> tuple[list, object]:
        """The service's ``observe`` hook (``TableService(observe=...)``): ``(observations,
        throw_facts)`` for the readings of ``frame`` (a ``camera.base.Frame``); the full
        :class:`ObservedThrow` is kept in :attr:`last` (its notes go with a boxperson call)."""
        observed = self.observe(readings, float(frame.t), image=getattr(frame, "image", None))
        self.last = observed
        return list(observed.observations), observed.facts

    def verdict_published(self, roll_id: str, verdict: Verdict, image: np.ndarray | None,
                          observed: ObservedThrow | None = None) -> None:
        """After a verdict is published: a boxperson verdict opens a call with the evidence
        frame (``image`` annotated; a blank frame when ``None``) and the detectors' notes of
        ``observed`` (default: :attr:`last`); a call still pending from before ``roll_id`` is
        superseded (:meth:`CallRegistry.supersede`; the table service closes them before it
        commits the verdict, :meth:`close_calls`, so that their decisions are published before
        it: one still pending here is superseded too, its decision stale). An evidence frame that cannot be made (the
        annotation or the PNG encoding raised) does not keep the call from opening: the call
        gets a blank frame naming the failure, so the boxperson still decides it or it is
        void at its deadline (9 NYCRR 5324.52(h)(1)(ii)(a)); the verdict is already published."""
        if self.registry is not None:
            self.registry.supersede(roll_id)  # a call before this verdict cannot be applied now
        if verdict.kind != "boxperson" or self.registry is None:
            return
        if observed is None:
            observed = self.last  # the throw the service's observe hook saw last
        notes = () if observed is None else tuple(observed.notes)
        reason = verdict.reason.value if verdict.reason is not None else "face-unreadable"
        frame = image if image is not None else np.zeros((120, 160, 3), np.uint8)
        try:
            png = annotate_evidence(frame, verdict.observations, title=f"{roll_id} {reason}", notes=notes)
        except Exception as exc:  # noqa: BLE001 - the call must open whatever the evidence frame
            log.exception("boxperson call %s: the evidence frame could not be made", roll_id)
            notes = (*notes, f"evidence frame not made: {type(exc).__name__}: {exc}"[:200])
            try:
                png = annotate_evidence(np.zeros((120, 160, 3), np.uint8), (), title=f"{roll_id} {reason}",
                                        notes=notes)
            except Exception:  # noqa: BLE001 - no image at all: the call opens without one
                png = b""
        self.registry.open(roll_id, reason, png, notes=notes)

    def reopen_call(self, body: dict, *, elapsed_s: float = 0.0, evidence_png: bytes | None = None) -> bool:
        """After a restart, open again the boxperson call of ``body`` (the last verdict the
        store holds, a ``"boxperson"`` roll message): the calls of the process that stopped
        were in its memory only, so the call could be neither answered nor voided and the roll
        was never decided (9 NYCRR 5324.52(h)(1)(ii)(a)). ``elapsed_s``: seconds since the call
        was made (since its verdict was committed): the call keeps its original deadline, and
        one that passed while the service was down voids the call at once (a timeout), as it
        would have had the service run on; a restart never extends it. ``evidence_png``: the
        call's evidence frame as it was kept (``StateStore.keep_evidence``); without it the
        evidence is a blank frame of the frame's size with the published readings boxed.
        Returns ``False`` (nothing opened) without a registry, for another verdict, or when a
        call for it is already open or decided."""
        if self.registry is None or body.get("verdict") != "boxperson" or not body.get("roll_id"):
            return False
        roll_id, reason = str(body["roll_id"]), str(body.get("reason") or "face-unreadable")
        if self.registry.get(roll_id) is not None or self.registry.decision(roll_id) is not None:
            return False
        if evidence_png:
            notes = ("call opened again after a restart, with its original evidence frame and deadline",)
            png = bytes(evidence_png)
        else:
            notes = ("call opened again after a restart: the evidence frame was not kept; the boxes are "
                     "the published readings",)
            info = body.get("frame") or {}
            try:
                size = (int(info.get("height") or 120), int(info.get("width") or 160))
                readings = [SimpleNamespace(bbox=r["bbox"], value=r.get("value"), flat=bool(r.get("flat", True)),
                                            confidence=float(r.get("confidence") or 0.0), extra={},
                                            zone=r.get("zone", "playing"))
                            for r in body.get("readings") or ()]
                png = annotate_evidence(np.zeros((*size, 3), np.uint8), readings, title=f"{roll_id} {reason}",
                                        notes=notes)
            except Exception:  # noqa: BLE001 - the call must open whatever the evidence frame
                log.exception("boxperson call %s: the evidence frame could not be drawn again", roll_id)
                png = b""
        call = self.registry.open(roll_id, reason, png, notes=notes, elapsed_s=max(0.0, float(elapsed_s)))
        log.warning("boxperson call %s (%s) opened again after a restart, %.0f s after it was made "
                    "(deadline in %.0f s)", roll_id, reason, elapsed_s, call.deadline - self.registry.clock())
        return True

    def call_evidence(self, roll_id: str) -> bytes | None:
        """The evidence frame (PNG bytes) of the pending call ``roll_id``, or ``None`` (no such
        call, or no registry): the table service keeps it in its store for a restart."""
        call = None if self.registry is None else self.registry.get(roll_id)
        return None if call is None else call.evidence_png

    def close_calls(self, why: str = "") -> list[Decision]:
        """Before the table service commits a throw's verdict (or when its round driver no
        longer waits on the call): close every call still pending (:meth:`CallRegistry.supersede`,
        in one step with the answers; ``why`` is what a later answer's refusal says), so that
        each has a decision (an answer taken before, a timeout, or ``"superseded"``) in
        :meth:`decisions` to publish, and an answer after it is refused. Returns the
        ``"superseded"`` decisions (none without a registry)."""
        return [] if self.registry is None else self.registry.supersede(why=why)

    def decision_applied(self, roll_id: str, *, committed: dict | None = None, error: str | None = None) -> None:
        """The table service committed the decision on call ``roll_id`` (``committed``: the
        verdict's ``roll_id`` and ``published``) or did not apply it (``error``): the command
        socket's reply to the answer waits on this (``CallRegistry.commits``)."""
        if self.registry is not None:
            self.registry.commits.settle(roll_id, committed=committed, error=error)

    def refuse_answers(self, why: str) -> None:
        """The table service is stopping: answers from now on are refused with ``why``
        (``CallRegistry.close_answers``); those taken before are still handed over."""
        if self.registry is not None:
            self.registry.close_answers(why)

    def decisions(self) -> list[Decision]:
        """Decisions taken since the last call (answers and timeouts), oldest first."""
        if self.registry is not None:
            self.registry.expire()
        with self._lock:
            out, self._decisions = self._decisions, []
        return out
