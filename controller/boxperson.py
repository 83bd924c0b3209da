"""Boxperson decisions: pending calls, the annotated evidence frame, and a ZeroMQ command server.

When the verdict is ``"boxperson"`` (9 NYCRR 5324.52(h)(1)(ii)(a): "the boxperson shall have
discretion to determine which face is uppermost or shall void the throw and order the dice to be
re-rolled"), the service opens a :class:`BoxpersonCall` in a :class:`CallRegistry`: the roll id,
the reason code, an evidence frame (PNG bytes: each die boxed with its value, see
:func:`annotate_evidence`) and a deadline. The boxperson answers with a value for each die or
void (:meth:`CallRegistry.answer`), over the command socket (:class:`CommandServer`) or with
``craps-table decide``. A call not answered by its deadline is void (:meth:`CallRegistry.expire`);
a call still open when the table service decides a later throw is closed void too
(:meth:`CallRegistry.supersede`, outcome ``"superseded"``). Every :class:`Decision` carries who
and when, is logged, and is returned so that the service publishes it with the roll
(``"decision"`` of the roll body, docs/messages.md).

The registry is pure apart from its injectable clocks (``clock`` for deadlines, ``wall_clock``
for the UTC time stamped on decisions) and is thread-safe (the command server answers from its
own thread): an answer, an expiry and a supersession are each one step, ``on_decision``
included, so a decision is either handed to ``on_decision`` before a supersession or refused
after it, never taken and then lost between the two.

Command protocol (JSON objects from a ZeroMQ REQ socket to the server's ROUTER socket; one reply
per request; a request waiting for the table service does not hold up the other consoles',
:class:`CommandServer`)::

    {"cmd": "decide", "roll_id": "table-1-00000042", "dice": [3, 4], "who": "ann"}
    {"cmd": "decide", "roll_id": "table-1-00000042", "void": true, "who": "ann"}
    {"cmd": "pending"}                       -> {"ok": true, "calls": [{roll_id, reason, ...}]}
    {"cmd": "evidence", "roll_id": "..."}    -> {"ok": true, "png_b64": "..."}
    {"cmd": "decide-only", "on": true, "who": "ann"}
        -> {"ok": true, "applied": "decide-only", "on": true, "game": {game state}}
    {"cmd": "no-roll", "reason": "dice-not-simultaneous", "who": "ann"}
        -> {"ok": true, "applied": "no-roll", "reason": "dice-not-simultaneous", "who": "ann",
            "phase": "in-motion", "after_roll_id": "table-1-00000041"}
    {"cmd": "stop", "reason": "dome cleaning", "who": "tech-7"}   -> {"ok": true, "stopped": {round event}}
    {"cmd": "resume", "who": "tech-7", "abandon": true}           -> {"ok": true, "resumed": {round event}}
    reply: {"ok": true, "decision": {...}, "committed": {"roll_id": ..., "published": true}}
           or {"ok": false, "error": "what is wrong"}
           or {"ok": false, "pending": true, "error": "not confirmed: ..."}
           (decide-only, no-roll, stop, resume: {"ok": false, "error": "CMD refused: why"},
           {"ok": false, "error": "CMD not applied: ..."}, {"ok": false, "pending": true, ...};
           without ``confirm_s``: {"ok": true, "queued": "CMD", "on" | "reason": ...} at once)

``decide`` on the table service's socket (``craps-table run``: ``confirm_s`` =
:data:`CONFIRM_S`): the reply waits until the service has committed the decision's verdict to
its state store (controller/handoff.py ``CommitWaits``; the service applies decisions at every
frame and health tick), so an answer replied ``ok: true`` survives a crash right after it (it
is published from the store's outbox at the restart if the bus had not taken it yet;
``committed.published`` says which). The registry closes the call when it takes the answer,
so the answer is never withdrawn: when the service does not confirm within ``confirm_s`` the
reply is ``ok: false`` with ``pending: true`` (taken, not yet committed: the service applies it
when it next runs; if it dies first, the call is opened again at its restart). An answer the
service then cannot apply (the round driver no longer waits on the call) is replied ``ok:
false`` naming why. Without ``confirm_s`` (a registry standing alone, in-process callers) the
reply is sent at once, as before.

``stop`` / ``resume`` (automated and stadium rigs, controller/automation.py): a technician
stops the table (the round event ``stopped``, cause ``technician-stop``: bets closed, no throw,
no round) or clears a stop (``resumed``: the open round, if any, is abandoned and settlement
returns its wagers; ``abandon: true`` must confirm that when a round has no result). Handed to
the table service (``table_command``) with a :class:`controller.handoff.Handoff`; the reply
waits for the service: applied, refused naming why (not stopped; the cause still present: the
safe state, e.g. the camera still lost, a verdict unpublished, the firmware link down, the
shaker still running, dice moving), or, not taken within ``confirm_s``, withdrawn ("not
applied": the service skips it). The who is checked with :func:`check_who`; each is logged
with who and when and published (round events; a refusal also as a ``command-refused`` alarm).

``decide-only``: the boxperson starts (``on``) or ends the rolls made only to decide the
remaining come and don't come wagers (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)). It is
handed to the table service (``table_command``) with a :class:`controller.handoff.Handoff`, as
``stop`` and ``resume`` are; the service applies it before the next frame and publishes it
(``state`` message ``decide-only``; the reply: ``applied`` with ``on`` and the ``game``
committed), or refuses it naming why (reply ``ok: false``, ``"decide-only refused: ..."``, and
a ``command-refused`` alarm: e.g. a point is on). While a throw is in motion or its boxperson
call is open, the service holds it until that roll is decided (a roll is the shooter's who
threw it, 9 NYCRR 5324.52(i)(1)); a reply that comes first is ``pending: true``, ``held:
true`` (the state message or a ``command-refused`` alarm says what happened then).

``no-roll``: the boxperson or stickperson calls "no roll" on the throw in progress (9 NYCRR
5324.52(k)(2), (k)(5)(i); whenever possible before both dice come to rest, (k)(3)), for what a
person sees and the camera cannot judge, or judges only where it clearly can (the camera's
``dice-not-simultaneous`` comes to the boxperson as a call, controller/release.py):
``dice-not-simultaneous`` ((k)(2)(i)),
``far-wall-missed`` ((k)(2)(ii)), ``cheating-device`` ((k)(2)(v)), ``improper-throw``
((k)(2)(vi)), ``die-off-table`` ((k)(1)). Handed over with a :class:`controller.handoff.Handoff`:
the table service records the call on the throw in progress, whose verdict is then a no roll
with the reason and ``called`` (the reply: ``applied`` with the ``reason``, ``who``, the
lifecycle ``phase`` and ``after_roll_id``, the last verdict committed before it: the call
applies to the next throw's verdict, whose roll id is given when it is decided), or refuses it
naming why (reply ``ok: false``, ``"no-roll refused: ..."``, and a ``command-refused`` alarm:
no throw in progress, a reason the policy reads rather than voids). A motion that ends without
a verdict drops the call afterwards with a ``command-refused`` alarm.

Each of the four with ``confirm_s``: not taken by the service within ``confirm_s`` it is
withdrawn, never applied (``"CMD not applied: ...: send it again"``); taken or held and not
finished within a further ``confirm_s``, ``pending: true``. At its close the service refuses
those still queued or held, and any posted after (``"CMD refused: the table service is
stopping: not applied"``). A command is applied or refused naming why, never replied ``ok`` and
lost.

With CURVE keys (:class:`CurveServerKeys`, the bus's key files, bus/keys.py; the table
service's ``[boxperson] curve = true``) the socket is encrypted, only consoles whose public
certificate is in the allow-list may connect, and each decision records the console's public
key (``console``) beside the name it gives. The allow-list folder is read again when it
changes (looked at most once a second from the socket's own loop, bus/allowwatch.py), and every
command is checked against the list in effect: a console whose certificate was removed is
refused from its next command, on a connection already open too (reply ``ok: false`` naming
its key, nothing applied, nothing shown); a folder that cannot be read then keeps the list in
effect less the removed certificates, logged at ERROR naming the file. Without CURVE any process
that reaches the socket may answer a call, so the service binds such a socket only on loopback
or ipc://.
"""
from __future__ import annotations

import base64
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import cv2
import numpy as np
import zmq

from controller.handoff import COMMITTED, DONE, HELD, PENDING, REFUSED, WITHDRAWN, CommitWaits, Handoff

log = logging.getLogger("controller.boxperson")

OUTCOME_DICE = "dice"
OUTCOME_VOID = "void"
OUTCOME_TIMEOUT = "timeout"
OUTCOME_SUPERSEDED = "superseded"
#: ``who`` of a decision made by the deadline.
WHO_TIMEOUT = "timeout"
#: ``who`` of a call closed because the table service decided a later throw first.
WHO_SUPERSEDED = "superseded"
#: names no person may answer as: the log's "void by timeout" or "superseded" must mean the
#: deadline passed or the game moved on, not a person named so
RESERVED_WHO = (WHO_TIMEOUT, WHO_SUPERSEDED)
#: why a call is superseded, unless the caller says otherwise (:meth:`CallRegistry.supersede`)
SUPERSEDED_WHY = "the table decided a later throw before an answer (the game moved on)"
#: the longest name a console may give as ``who`` (characters): the name goes into the roll
#: message, whose envelope the bus refuses over 1 MiB (bus/envelope.py), which would hold
#: every later verdict in the outbox.
MAX_WHO_CHARS = 100
#: the largest command the command socket reads (bytes, ZMQ_MAXMSGSIZE): a larger one drops
#: the sender's connection, unanswered.
REQUEST_MAX_BYTES = 64 * 1024
#: seconds the table service's command socket waits for the service to confirm an answer's
#: commit, or a resume, stop, decide-only or no-roll (:func:`handle_request` ``confirm_s``): the service acts at
#: its next frame or tick (<= 0.1 s apart); below ``craps-table decide --timeout`` (5 s)
CONFIRM_S = 2.0
#: the most requests a :class:`CommandServer` holds waiting for the table service to confirm
#: them (one per console waiting; a REQ console has one request out at a time): one more is
#: refused naming the bound, nothing applied, while ``pending``, ``evidence`` and requests
#: refused at once are still answered.
MAX_WAITING = 64
#: milliseconds between two looks at the waiting requests while there are some (the service
#: confirms at its next frame or tick, <= 0.1 s apart)
WAITING_POLL_MS = 10
#: how many decided and superseded calls a :class:`CallRegistry` remembers (the newest): enough
#: for "already decided" and "superseded" answers to a console that is late by far more than
#: a shift's calls, while a table that runs for weeks does not keep every call in memory.
KEEP_DONE = 1000


class DecisionError(ValueError):
    """A decision that cannot be taken (no such call, already decided, bad dice, no name)."""


@dataclass(frozen=True)
class BoxpersonCall:
    """A pending boxperson call.

    Attributes:
        roll_id: the roll being decided.
        reason: the reason code (controller/reasons.py), e.g. ``"face-unreadable"``.
        evidence_png: the annotated evidence frame, PNG bytes.
        opened: clock time the call was opened (seconds).
        deadline: clock time after which the roll is void (seconds).
        notes: what the detectors found, one line each.
    """

    roll_id: str
    reason: str
    evidence_png: bytes = field(repr=False)
    opened: float
    deadline: float
    notes: tuple[str, ...] = ()

    def to_json(self, now: float | None = None) -> dict:
        """Summary for the ``pending`` command (no image)."""
        out = {"roll_id": self.roll_id, "reason": self.reason, "notes": list(self.notes),
               "evidence_bytes": len(self.evidence_png)}
        if now is not None:
            out["seconds_left"] = round(max(0.0, self.deadline - now), 3)
        return out


@dataclass(frozen=True)
class Decision:
    """A boxperson's decision on a call.

    Attributes:
        roll_id: the roll decided.
        reason: the reason code of the call.
        outcome: ``"dice"`` (the boxperson gave each die's value), ``"void"`` (re-roll,
            9 NYCRR 5324.52(h)(1)(ii)(a)), ``"timeout"`` (no answer by the deadline: void) or
            ``"superseded"`` (no answer before the table service decided a later throw: void,
            :meth:`CallRegistry.supersede`).
        dice: the two values for ``"dice"``, else ``None``.
        who: the boxperson's name (``"timeout"`` for a timeout, ``"superseded"`` for a call
            superseded).
        at_utc: when, UTC ISO 8601.
        latency_s: seconds from the call to the decision.
        console: the CURVE public key (Z85) of the console the answer came from, as the
            command socket authenticated it; ``None`` on a socket without CURVE, a timeout,
            or an answer given in-process.
    """

    roll_id: str
    reason: str
    outcome: str
    dice: tuple[int, int] | None
    who: str
    at_utc: str
    latency_s: float
    console: str | None = None

    @property
    def void(self) -> bool:
        """The throw is void (re-rolled): a void, a timeout or a call superseded."""
        return self.outcome != OUTCOME_DICE

    def to_json(self) -> dict:
        """The ``"decision"`` object of the roll message."""
        return {"roll_id": self.roll_id, "reason": self.reason, "outcome": self.outcome,
                "dice": None if self.dice is None else list(self.dice), "who": self.who,
                "at": self.at_utc, "latency_s": round(self.latency_s, 3), "console": self.console}


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def check_who(who: object) -> str:
    """The name a person gives as ``who``, stripped: a non-empty string of at most
    :data:`MAX_WHO_CHARS` printable characters (it is logged and published with the roll,
    9 NYCRR 5324.52(h)(1)(ii)(a)).

    Raises:
        DecisionError: not a string, empty, too long, or with control characters (a newline
            would forge a line of the log).
    """
    if not isinstance(who, str) or not who.strip():
        raise DecisionError("who: the boxperson's name is required")
    who = who.strip()
    if len(who) > MAX_WHO_CHARS:
        raise DecisionError(f"who: at most {MAX_WHO_CHARS} characters, got {len(who)}")
    if not who.isprintable():
        raise DecisionError(f"who: printable characters only, got {who[:MAX_WHO_CHARS]!r}")
    return who


def check_dice(dice: Sequence[int] | None) -> tuple[int, int]:
    """Two face values 1..6.

    Raises:
        DecisionError: naming what is wrong.
    """
    if not isinstance(dice, (list, tuple)) or len(dice) != 2:
        raise DecisionError(f"dice: give exactly two values 1..6, got {dice!r}")
    out = []
    for v in dice:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 6:
            raise DecisionError(f"dice: each value must be an integer 1..6, got {v!r}")
        out.append(int(v))
    return out[0], out[1]


class CallRegistry:
    """Pending boxperson calls and their decisions (thread-safe).

    Args:
        timeout_s: seconds a call waits for an answer before the roll is void (> 0).
        clock: monotonic seconds (``time.monotonic``); injectable for tests.
        wall_clock: returns an aware UTC ``datetime`` (for the decision's ``at``).
        on_decision: called with each :class:`Decision` (the service publishes it). Called
            inside the step that takes the decision (:meth:`answer`, :meth:`expire`,
            :meth:`supersede` hold the registry's gate, a re-entrant lock, until it returns),
            outside the lock that guards the calls: it may read the registry, and must not
            wait on another thread that answers.
        keep: decided and superseded calls remembered, the newest (>= 1; default
            :data:`KEEP_DONE`): an answer to one of them is refused naming its decision or why
            it was superseded; an answer to an older one is refused as having no pending call.
            The table service opens a call only for the verdict it has just published (a new
            roll id), so a forgotten call is never opened again.

    Raises:
        ValueError: ``timeout_s`` not > 0, or ``keep`` < 1.
    """

    def __init__(self, timeout_s: float = 120.0, *, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], datetime] = _utc_now,
                 on_decision: Callable[[Decision], None] | None = None, keep: int = KEEP_DONE) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be an int >= 1, got {keep!r}")
        self.keep = keep
        self.timeout_s = float(timeout_s)
        self.clock = clock
        self.wall_clock = wall_clock
        self.on_decision = on_decision
        self._calls: dict[str, BoxpersonCall] = {}
        self._decided: dict[str, Decision] = {}
        self._why: dict[str, str] = {}   # roll id of a call superseded -> why it was closed
        #: the answers' commits, waited on by the command socket (controller/handoff.py)
        self.commits = CommitWaits()
        self._closed: str | None = None   # why answers are no longer taken (:meth:`close_answers`)
        self._lock = threading.Lock()
        # one decision step at a time (answer, expire, supersede), its on_decision included:
        # an answer is handed over before a supersession closes the call, or refused after it
        self._gate = threading.RLock()

    def open(self, roll_id: str, reason: str, evidence_png: bytes, *, notes: Sequence[str] = (),
             timeout_s: float | None = None, elapsed_s: float = 0.0) -> BoxpersonCall:
        """Open a call for ``roll_id``. ``elapsed_s``: seconds the call has already been open
        (a call opened again after a restart, ``ThrowObserver.reopen_call``): it counts as
        opened that long ago, so its deadline and a decision's ``latency_s`` are the original
        call's, and a deadline already passed voids it at the next :meth:`expire`.

        Raises:
            DecisionError: a call for ``roll_id`` is pending or was decided.
            ValueError: ``elapsed_s`` negative or not finite.
        """
        if not roll_id:
            raise DecisionError("roll_id: empty")
        elapsed_s = float(elapsed_s)
        if not 0.0 <= elapsed_s < float("inf"):
            raise ValueError(f"elapsed_s must be a finite number of seconds >= 0, got {elapsed_s}")
        now = self.clock()
        with self._lock:
            if roll_id in self._calls or roll_id in self._decided:
                raise DecisionError(f"roll {roll_id}: a boxperson call was already opened")
            opened = now - elapsed_s
            call = BoxpersonCall(roll_id, str(reason), bytes(evidence_png), opened,
                                 opened + (self.timeout_s if timeout_s is None else float(timeout_s)), tuple(notes))
            self._calls[roll_id] = call
        log.info("boxperson call %s: %s (deadline in %.0f s)", roll_id, reason, call.deadline - now)
        return call

    def pending(self) -> list[BoxpersonCall]:
        """Calls awaiting an answer, oldest first."""
        with self._lock:
            return sorted(self._calls.values(), key=lambda c: c.opened)

    def get(self, roll_id: str) -> BoxpersonCall | None:
        """The pending call for ``roll_id``, or ``None``."""
        with self._lock:
            return self._calls.get(roll_id)

    def decision(self, roll_id: str) -> Decision | None:
        """The decision taken on ``roll_id``, or ``None``."""
        with self._lock:
            return self._decided.get(roll_id)

    def answer(self, roll_id: str, *, who: str, dice: Sequence[int] | None = None,
               void: bool = False, console: str | None = None) -> Decision:
        """The boxperson's answer: ``dice`` (a value for each die) or ``void``; ``console``:
        the authenticated key of the console it came from (see :class:`Decision`). The call is
        decided and the decision handed to ``on_decision`` in one step with respect to
        :meth:`supersede`.

        Raises:
            DecisionError: no name (or one :func:`check_who` refuses, or a reserved one:
                ``"timeout"``, ``"superseded"``), both or neither of dice/void, bad values, no
                pending call for ``roll_id`` (already decided, timed out, superseded by a later
                verdict, or never opened), or the table service is stopping
                (:meth:`close_answers`).

        Each answer taken gets a slot in :attr:`commits` before it is handed over, which the
        table service settles once the decision's verdict is committed.
        """
        who = check_who(who or "")
        if who.lower() in RESERVED_WHO:
            # the log's "void by timeout" / "superseded" must mean the deadline passed or the
            # game moved on, not a person named so
            raise DecisionError(f"who: {who!r} is reserved for a call voided without an answer; "
                                "give the boxperson's name")
        if void == (dice is not None):
            raise DecisionError("give either the dice (a value for each die) or void, not both or neither")
        values = None if void else check_dice(dice)
        with self._gate:
            if self._closed is not None:
                raise DecisionError(f"roll {roll_id}: answer not taken: {self._closed}")
            now = self.clock()
            # one reading of the clock: an answer at or after the deadline finds the call void
            self.expire(now)
            with self._lock:
                call = self._calls.get(roll_id)
                if call is None:
                    done = self._decided.get(roll_id)
                    if done is not None and done.outcome == OUTCOME_SUPERSEDED:
                        raise DecisionError(
                            f"roll {roll_id}: superseded: {self._why.get(roll_id, SUPERSEDED_WHY)}, so the call "
                            f"was closed void at {done.at_utc} (decision outcome \"superseded\"); a decision on "
                            "it would not be applied")
                    if done is not None:
                        raise DecisionError(f"roll {roll_id}: already decided ({done.outcome} by {done.who} "
                                            f"at {done.at_utc})")
                    raise DecisionError(f"roll {roll_id}: no pending boxperson call")
                decision = Decision(roll_id, call.reason, OUTCOME_VOID if void else OUTCOME_DICE, values, who,
                                    self.wall_clock().isoformat(), now - call.opened, console)
                del self._calls[roll_id]
                self._remember(self._decided, roll_id, decision)
            self.commits.expect(roll_id)
            self._done(decision)
        return decision

    def close_answers(self, why: str) -> None:
        """Take no more answers (the table service is stopping: ``TableService.close``); an
        answer after this is refused with ``why``. One step with :meth:`answer` (the gate): an
        answer taken before it is already handed over, so the service still commits it."""
        with self._gate:
            self._closed = str(why)

    def supersede(self, roll_id: str | None = None, *, why: str = "") -> list[Decision]:
        """Close every pending call (but ``roll_id``'s, if given) without an answer: the table
        service is about to commit a later verdict (controller/service.py ``_close_calls``), after
        which a decision on an earlier call could no longer be applied (it applies a decision
        only to the call that is its last verdict, ``_apply_decisions``). A call past its
        deadline is a timeout (:meth:`expire`); each other one gets a decision ``"superseded"``
        (who ``"superseded"``, no dice: the throw is void, as at a timeout, 9 NYCRR
        5324.52(h)(1)(ii)(a)), handed to ``on_decision`` so that the service publishes it, before
        the later verdict, as a no roll ``boxperson-void``. An answer to it after this is refused
        naming why (``why``, default :data:`SUPERSEDED_WHY`; the service also closes a call the
        round driver no longer waits on). The whole is one step with :meth:`answer`: an answer
        taken before it was already handed to ``on_decision``; one after it finds the call
        closed.

        Returns:
            the decisions ``"superseded"``, oldest call first (timeouts are not listed).
        """
        with self._gate:
            now = self.clock()
            self.expire(now)
            out = []
            with self._lock:
                for r, call in sorted(self._calls.items(), key=lambda kv: kv[1].opened):
                    if r == roll_id:
                        continue
                    d = Decision(r, call.reason, OUTCOME_SUPERSEDED, None, WHO_SUPERSEDED,
                                 self.wall_clock().isoformat(), now - call.opened)
                    del self._calls[r]
                    self._remember(self._decided, r, d)
                    self._remember(self._why, r, why or SUPERSEDED_WHY)
                    out.append(d)
            for d in out:
                log.warning("boxperson call %s superseded: %s; void", d.roll_id, why or SUPERSEDED_WHY)
                self._done(d)
        return out

    def expire(self, now: float | None = None) -> list[Decision]:
        """Void every call whose deadline is at or before ``now`` (clock seconds, default the
        clock; who = ``"timeout"``); return those decisions."""
        with self._gate:
            now = self.clock() if now is None else now
            out = []
            with self._lock:
                for roll_id, call in list(self._calls.items()):
                    if now >= call.deadline:
                        d = Decision(roll_id, call.reason, OUTCOME_TIMEOUT, None, WHO_TIMEOUT,
                                     self.wall_clock().isoformat(), now - call.opened)
                        del self._calls[roll_id]
                        self._remember(self._decided, roll_id, d)
                        out.append(d)
            for d in out:
                self._done(d)
        return out

    def _remember(self, done: dict, roll_id: str, value) -> None:
        """Record ``roll_id`` in ``done`` (decided or superseded; under the lock), forgetting
        the oldest beyond :attr:`keep`."""
        done.pop(roll_id, None)
        done[roll_id] = value
        while len(done) > self.keep:
            del done[next(iter(done))]

    def _done(self, d: Decision) -> None:
        log.info("boxperson decision %s: %s %s by %s at %s%s", d.roll_id, d.outcome, d.dice or "", d.who, d.at_utc,
                 f" (console {d.console})" if d.console else "")
        if self.on_decision is not None:
            self.on_decision(d)


# --- evidence frame -----------------------------------------------------------------------------

def annotate_evidence(image: np.ndarray, observations: Sequence, *, title: str = "",
                      notes: Sequence[str] = ()) -> bytes:
    """Draw each die's box and value (and zone / flags) on a copy of ``image``; return PNG bytes.

    Args:
        image: ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey frame.
        observations: ``DieObservation`` s (controller/verdict.py) or ``DieReading`` s.
        title: first line written at the top (e.g. ``"table-1-00000042 face-unreadable"``).
        notes: more lines under it (the detectors' notes).

    Raises:
        ValueError: the image is not a uint8 2-D or 3-channel array, or cannot be encoded.
    """
    img = np.asarray(image)
    if img.dtype != np.uint8 or img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] != 3) or img.size == 0:
        raise ValueError(f"evidence image: expected uint8 (H, W, 3) or (H, W), got {img.dtype} {img.shape}")
    out = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR) if img.ndim == 2 else img.copy()
    scale = max(0.4, out.shape[1] / 1600.0)
    for o in observations:
        r = getattr(o, "reading", o)
        x0, y0, x1, y1 = (int(v) for v in r.bbox)
        flags = []
        zone = getattr(o, "zone", "playing")
        if zone != "playing":
            flags.append(zone)
        if getattr(o, "on_die", False):
            flags.append("on die")
        if not r.flat:
            flags.append("not flat")
        if getattr(o, "sides_resting", 0) > 1:
            flags.append(f"{o.sides_resting} sides")
        ok = r.value is not None and not flags
        colour = (0, 200, 0) if ok else (0, 0, 255)
        cv2.rectangle(out, (x0 - 2, y0 - 2), (x1 + 2, y1 + 2), colour, 2)
        seen = r.extra.get("seen_value") if isinstance(r.extra, dict) else None
        label = ("?" if r.value is None else str(r.value)) + (f" (seen {seen})" if seen is not None else "")
        label += f" {r.confidence:.2f}" + ("" if not flags else " " + ", ".join(flags))
        cv2.putText(out, label, (x0, max(12, y0 - 6)), cv2.FONT_HERSHEY_SIMPLEX, 0.5 * scale, colour,
                    max(1, int(scale)), cv2.LINE_AA)
    y = int(22 * scale)
    for line in ([title] if title else []) + list(notes):
        cv2.putText(out, line[:120], (8, y), cv2.FONT_HERSHEY_SIMPLEX, 0.55 * scale, (255, 255, 255),
                    max(1, int(2 * scale)), cv2.LINE_AA)
        y += int(22 * scale)
    ok, png = cv2.imencode(".png", out)
    if not ok:
        raise ValueError("evidence image: PNG encoding failed")
    return png.tobytes()


# --- command server ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CurveServerKeys:
    """CURVE for the command server, from the bus's key files (bus/keys.py).

    Attributes:
        secret_cert: the server's ``NAME.key_secret``.
        authorized_dir: folder of the client public certificates allowed to connect.
    """

    secret_cert: Path
    authorized_dir: Path


@dataclass(frozen=True)
class CurveClientKeys:
    """CURVE for a command client.

    Attributes:
        secret_cert: the client's ``NAME.key_secret``.
        server_cert: the server's public ``NAME.key``.
    """

    secret_cert: Path
    server_cert: Path


def _error(msg: str) -> dict:
    return {"ok": False, "error": msg}


def _table_request_error(cmd: str, req: dict, keys: set[str],
                         table_command: Callable[..., None] | None) -> dict | None:
    """The error reply of a command meant for the table service (``decide-only``,
    ``no-roll``): a key other than ``cmd``, ``who`` and ``keys``, no name, or no table
    service behind the socket; ``None`` when it may be queued."""
    unknown = sorted(set(req) - {"cmd", "who", *keys})
    if unknown:
        return _error(f"{cmd}: unknown key(s) {unknown}")
    who = req.get("who")
    if not isinstance(who, str) or not who.strip():
        return _error(f"{cmd}: who (the caller's name) is required")
    try:
        check_who(who)
    except DecisionError as exc:
        return _error(f"{cmd}: {exc}")
    if table_command is None:
        return _error(f"{cmd}: this command socket is not connected to a table service")
    return None


class AwaitingReply:
    """The reply to a command that waits for the table service to confirm it, without
    blocking: :class:`CommandServer` parks the request (the console's routing id and this) and
    serves other consoles meanwhile, looking at :meth:`poll` from its loop. The reply is the
    one a blocking wait (:meth:`Handoff.wait`) would give at the same
    moment, with the same bounds (``confirm_s``, controller/handoff.py).

    Args:
        cmd: the command (``decide``, ``decide-only``, ``no-roll``, ``stop``, ``resume``).
        check: ``check(elapsed_s)`` -> the reply once settled or its bound passed, else
            ``None``; ``elapsed_s = inf`` gives the reply at once (the socket is closing).
        clock: monotonic seconds (``time.monotonic``); the wait starts at construction.

    A controller rule for the 9 NYCRR 5324.52(h)(1)(ii)(a) decision (the boxperson's answer is
    not held up behind another console's command); no regulation paragraph speaks of sockets.
    ``check`` raises nothing for a settled or unsettled command (a defect in it is logged and
    replied as an internal error by :class:`CommandServer`).
    """

    def __init__(self, cmd: str, check: Callable[[float], dict | None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cmd = cmd
        self._check = check
        self._clock = clock
        self.started = clock()

    def poll(self, now: float | None = None) -> dict | None:
        """The reply, once the service settled the command or the wait's bound passed
        (``now``: clock seconds, default the clock); ``None`` while it still waits."""
        return self._check((self._clock() if now is None else now) - self.started)

    def close(self) -> dict:
        """The reply now (the command socket is closing): what the service did, or, not
        confirmed yet, ``pending`` (a command not yet taken is withdrawn: never applied)."""
        return self._check(float("inf"))


def _commit_reply(d: Decision, outcome: str, detail, within: str) -> dict:
    """The reply to an answer the table service committed (``ok``), refused (naming why), or
    did not confirm ``within`` (e.g. ``"within 2 s"``: ``pending``, taken, not yet committed)."""
    if outcome == COMMITTED:
        return {"ok": True, "decision": d.to_json(), "committed": detail}
    if outcome == REFUSED:
        return {"ok": False, "decision": d.to_json(),
                "error": f"roll {d.roll_id}: the answer was taken but not applied: {detail}"}
    return {"ok": False, "pending": True, "decision": d.to_json(),
            "error": (f"roll {d.roll_id}: not confirmed: the table service did not commit the answer to its "
                      f"state store {within}. The call is closed and the answer held in memory: "
                      "the service applies it when it next runs (the roll messages show it); if the service "
                      "stops before that, the call is opened again when it starts, to be answered again")}


def _committed_reply(registry: CallRegistry, d: Decision, confirm_s: float) -> AwaitingReply:
    """An :class:`AwaitingReply` giving the reply to an answer once the table service
    committed it, refused it, or did not confirm within ``confirm_s`` seconds (``pending``:
    taken, not yet committed)."""
    within = f"within {confirm_s:g} s"

    def check(elapsed_s: float) -> dict | None:
        settled = registry.commits.check(d.roll_id)
        if settled is not None:
            return _commit_reply(d, *settled, within)
        if elapsed_s == float("inf"):
            return _commit_reply(d, PENDING, None, "before the command socket closed")
        return _commit_reply(d, PENDING, None, within) if elapsed_s >= confirm_s else None
    return AwaitingReply("decide", check)


#: the longest reason a technician may give for a stop (characters; logged and published)
MAX_REASON_CHARS = 200


def _technician_request(cmd: str, req: dict, table_command: Callable[..., None] | None, console: str | None,
                        confirm_s: float | None, full: int | None = None):
    """``resume`` / ``stop``: checked, handed to the table service with a :class:`Handoff`,
    and, with ``confirm_s``, the service's outcome waited for (module docstring; ``full``: see
    :func:`handle_request`)."""
    bad = _table_request_error(cmd, req, {"abandon"} if cmd == "resume" else {"reason"}, table_command)
    if bad is not None:
        return bad
    details: dict = {"who": req["who"].strip(), "console": console}
    if cmd == "resume":
        abandon = req.get("abandon", False)
        if not isinstance(abandon, bool):
            return _error(f"resume: abandon must be true or false, got {abandon!r}")
        details["abandon"] = abandon
    else:
        reason = req.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            return _error("stop: reason (why the table stops, a few words) is required")
        reason = reason.strip()
        if len(reason) > MAX_REASON_CHARS or not reason.isprintable():
            return _error(f"stop: reason: at most {MAX_REASON_CHARS} printable characters")
        details["reason"] = reason
    return _handed_over(cmd, details, table_command, confirm_s, {}, full)


def _handed_over(cmd: str, details: dict, table_command: Callable[..., None], confirm_s: float | None,
                 echo: dict, full: int | None = None):
    """Hand a checked table command to the table service with a :class:`Handoff` and, with
    ``confirm_s``, reply what the service did with it (module docstring): applied (``ok``;
    ``stop``/``resume``: the round event, ``decide-only``/``no-roll``: ``applied`` and what),
    refused naming why, withdrawn (not taken within ``confirm_s``: never applied), or not
    confirmed (``pending``: held until the throw in progress is decided, or taken and not
    finished within a further ``confirm_s``). Without ``confirm_s``: ``{"ok": true, "queued":
    cmd, **echo}`` at once, and no handoff is passed (as before). With ``confirm_s``, an
    :class:`AwaitingReply` giving that reply; ``full``: see :func:`handle_request`."""
    if confirm_s is None:
        table_command(cmd, **details)
        return {"ok": True, "queued": cmd, **echo}
    if full is not None:
        return _full_error(cmd, full)
    handoff = Handoff()
    table_command(cmd, handoff=handoff, **details)

    def check(elapsed_s: float) -> dict | None:
        state = handoff.check(elapsed_s, confirm_s)
        if state is None:
            return None
        return _handoff_reply(cmd, handoff, state, confirm_s, echo, closing=elapsed_s == float("inf"))
    return AwaitingReply(cmd, check)


def _full_error(cmd: str, full: int) -> dict:
    """The reply to a command that would wait while the command socket already holds ``full``
    waiting requests, its bound (:data:`MAX_WAITING`): nothing is applied."""
    return _error(f"{cmd} not taken: {full} requests already wait for the table service to confirm them on this "
                  f"command socket, the most it holds; nothing applied: send it again")


def _handoff_reply(cmd: str, handoff: Handoff, state: str, confirm_s: float, echo: dict,
                   closing: bool = False) -> dict:
    """The reply to a table command whose wait ended in ``state`` (:meth:`Handoff.wait` /
    :meth:`Handoff.check`); ``closing``: it ended because the command socket closes."""
    if state == DONE:
        if cmd in ("resume", "stop"):
            return {"ok": True, "resumed" if cmd == "resume" else "stopped": handoff.result}
        return {"ok": True, **echo, **(handoff.result or {"applied": cmd})}
    if state == REFUSED:
        return _error(f"{cmd} refused: {handoff.error}")
    if state == WITHDRAWN:
        why = ("the command socket closed before the table service took it" if closing else
               f"the table service did not take it within {confirm_s:g} s (busy, or not running)")
        return _error(f"{cmd} not applied: {why}; nothing changed: send it again")
    says = {"resume": "the round events (resumed, stopped)", "stop": "the round events (resumed, stopped)",
            "decide-only": "the state message decide-only", "no-roll": "the roll message's called"}[cmd]
    if state == HELD:
        return {"ok": False, "pending": True, "held": True, **echo,
                "error": (f"{cmd}: not confirmed: the table service {handoff.held}; it is applied then, or "
                          f"refused; {says} or a command-refused alarm say which")}
    when = "before the command socket closed" if closing else f"within {2 * confirm_s:g} s"
    return {"ok": False, "pending": True, **echo,
            "error": (f"{cmd}: not confirmed: the table service took it but did not finish {when}; {says} or "
                      "a command-refused alarm say what it did")}


def handle_request(registry: CallRegistry, raw: bytes,
                   table_command: Callable[..., None] | None = None, console: str | None = None,
                   confirm_s: float | None = None, *,
                   full: int | None = None) -> dict | AwaitingReply:
    """Answer one command (see the module docstring); never raises for bad input.
    ``table_command(event, **details)`` takes the commands meant for the table service
    (``TableService.post``); without it they are refused. ``console``: the CURVE public key
    the socket authenticated the sender by (recorded with a decision), or ``None``.
    ``confirm_s``: seconds the reply to ``decide``, ``decide-only``, ``no-roll``, ``resume`` and
    ``stop`` waits for the table service to confirm (controller/handoff.py): such a command is
    handed over and an :class:`AwaitingReply` returned instead of the reply, which gives it
    without blocking (:class:`CommandServer` holds it and serves others meanwhile); ``None``:
    reply at once (a registry without a table service behind it, or a caller on the service's
    own thread, which would wait on itself). ``full``: the number of
    requests the caller already holds waiting, when that is its bound (:data:`MAX_WAITING`): a
    command that would wait is then refused naming the bound, before anything is taken or
    handed over (nothing applied); ``None``: room for one more."""
    try:
        req = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _error(f"request is not JSON: {exc}")
    except RecursionError:
        return _error("request is not JSON this server reads: nested too deeply")
    if not isinstance(req, dict):
        return _error("request must be a JSON object")
    cmd = req.get("cmd")
    if cmd == "pending":
        now = registry.clock()
        return {"ok": True, "calls": [c.to_json(now) for c in registry.pending()]}
    if cmd == "evidence":
        call = registry.get(str(req.get("roll_id", "")))
        if call is None:
            return _error(f"roll {req.get('roll_id')!r}: no pending boxperson call")
        return {"ok": True, "roll_id": call.roll_id, "png_b64": base64.b64encode(call.evidence_png).decode()}
    if cmd == "decide":
        unknown = sorted(set(req) - {"cmd", "roll_id", "dice", "void", "who"})
        if unknown:
            return _error(f"decide: unknown key(s) {unknown}")
        roll_id = req.get("roll_id")
        if not isinstance(roll_id, str) or not roll_id:
            return _error("decide: roll_id (a string) is required")
        void = req.get("void", False)
        if not isinstance(void, bool):
            return _error(f"decide: void must be true or false, got {void!r}")
        who = req.get("who")
        if not isinstance(who, str):
            return _error("decide: who (the boxperson's name) is required")
        if confirm_s is not None and full is not None:
            return _full_error(cmd, full)
        try:
            d = registry.answer(roll_id, who=who, dice=req.get("dice"), void=void, console=console)
        except DecisionError as exc:
            return _error(str(exc))
        if confirm_s is None:
            return {"ok": True, "decision": d.to_json()}
        return _committed_reply(registry, d, confirm_s)
    if cmd == "decide-only":
        bad = _table_request_error(cmd, req, {"on"}, table_command)
        on = req.get("on")
        if bad is None and not isinstance(on, bool):
            bad = _error(f"decide-only: on must be true or false, got {on!r}")
        if bad is not None:
            return bad
        return _handed_over(cmd, {"on": on, "who": req["who"].strip(), "console": console}, table_command,
                            confirm_s, {"on": on}, full)
    if cmd == "no-roll":
        from controller.reasons import STAFF_CALL_REASONS

        bad = _table_request_error(cmd, req, {"reason"}, table_command)
        reason, codes = req.get("reason"), [r.value for r in STAFF_CALL_REASONS]
        if bad is None and reason not in codes:
            bad = _error(f"no-roll: reason must be one of {', '.join(codes)}, got {reason!r}")
        if bad is not None:
            return bad
        return _handed_over(cmd, {"reason": reason, "who": req["who"].strip(), "console": console},
                            table_command, confirm_s, {"reason": reason}, full)
    if cmd in ("resume", "stop"):
        return _technician_request(cmd, req, table_command, console, confirm_s, full)
    return _error(f"unknown cmd {cmd!r}; commands: decide, pending, evidence, decide-only, no-roll, resume, stop")


class CommandServer:
    """A ZeroMQ ROUTER server answering boxperson commands for a :class:`CallRegistry`; the
    consoles are REQ sockets (:func:`send_command`), one reply per request.

    Args:
        registry: the calls.
        endpoint: where to bind, e.g. ``"tcp://127.0.0.1:5560"``, ``"tcp://127.0.0.1:*"`` (a
            free port: see :attr:`endpoint`) or ``"ipc:///run/craps/boxperson"``.
        curve: CURVE keys, or ``None`` for a plain socket (loopback / ipc only is advised).
        context: a ``zmq.Context`` (default: a new one, terminated by :meth:`close`).
        max_waiting: the most requests held waiting for the table service (>= 1, default
            :data:`MAX_WAITING`).

    ``table_command``, ``confirm_s``: see :func:`handle_request` (the table service's
    socket, ``craps-table run``, waits :data:`CONFIRM_S`).

    A request whose reply waits for the table service to confirm it (``decide``,
    ``decide-only``, ``no-roll``, ``stop``, ``resume`` with ``confirm_s``) is handed over and
    held, not waited on: :meth:`serve_once` replies to it when the service has applied,
    committed or refused it, or when its bound passes (the same replies and bounds as one
    waited on, :class:`AwaitingReply`), and serves the other consoles meanwhile: a
    boxperson's ``decide`` on a disputed throw (9 NYCRR 5324.52(h)(1)(ii)(a)) is not stalled
    behind another console's command, and the calls' deadlines keep being enforced
    (:meth:`CallRegistry.expire`). Beyond ``max_waiting`` requests held, one more that would
    wait is refused naming the bound, nothing applied. A reply to a console that has gone
    meanwhile is dropped (the ROUTER socket does not raise); the command is applied or refused
    all the same, once.

    With ``curve``, the allow-list folder is watched (:attr:`watch`, bus/allowwatch.py): read
    again at most every ``reload_every_s`` seconds from :meth:`serve_once` when it changed, and
    every command is checked against the list in effect, so a console whose certificate was
    removed is refused from its next command, nothing applied (a disputed throw is the
    boxperson's to decide, 9 NYCRR 5324.52(h)(1)(ii)(a), N.J.A.C. 13:47-20.25(d): a console the
    house revoked decides none).

    Raises:
        bus.keys.BusKeyError: ``curve``'s secret certificate, the allow-list folder or a
            certificate in it cannot be read (named).
        zmq.ZMQError: the endpoint cannot be bound.
        ValueError: ``confirm_s`` not a finite number > 0, or ``max_waiting`` < 1.

    Call :meth:`start` to serve from a background thread (it also expires calls past their
    deadline every ``poll_ms``), or :meth:`serve_once` from your own loop.
    """

    def __init__(self, registry: CallRegistry, endpoint: str, *, curve: CurveServerKeys | None = None,
                 context: zmq.Context | None = None, poll_ms: int = 100,
                 table_command: Callable[..., None] | None = None, confirm_s: float | None = None,
                 reload_every_s: float = 1.0, max_waiting: int = MAX_WAITING) -> None:
        if confirm_s is not None and not 0 < confirm_s < float("inf"):
            raise ValueError(f"confirm_s must be a finite number of seconds > 0, got {confirm_s}")
        if isinstance(max_waiting, bool) or not isinstance(max_waiting, int) or max_waiting < 1:
            raise ValueError(f"max_waiting must be an int >= 1, got {max_waiting!r}")
        self.registry = registry
        self.confirm_s = confirm_s
        self.max_waiting = max_waiting
        #: the requests held waiting for the table service: (the console's routing id, its reply)
        self.waiting: list[tuple[bytes, AwaitingReply]] = []
        #: where commands for the table service go (``TableService.post``); may be set later
        self.table_command = table_command
        self._own_ctx = context is None
        self.ctx = context or zmq.Context()
        self._auth = None
        #: the allow-list folder's watch (CURVE), else ``None``
        self.watch = None
        self._refusals_logged: dict[str | None, float] = {}   # removed console -> when last logged
        if curve is not None:
            from bus.allowwatch import AllowListWatch
            from bus.keys import load_curve_secret

            public, secret = load_curve_secret(Path(curve.secret_cert))
            self.watch = AllowListWatch(curve.authorized_dir, "boxperson commands", log, noun="consoles",
                                        reload_every_s=reload_every_s)
        # ROUTER, not REP: a reply that waits for the table service does not hold up the next
        # request; a reply to a routing id that has gone is dropped (no ROUTER_MANDATORY)
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.MAXMSGSIZE, REQUEST_MAX_BYTES)
        if curve is not None:
            from zmq.auth.thread import ThreadAuthenticator

            from bus.keys import RefusalLog

            self._auth = ThreadAuthenticator(self.ctx, log=RefusalLog(log, "boxperson commands"))
            self._auth.start()
            self.watch.attach(self._auth)
            self.sock.curve_server = True
            self.sock.curve_publickey = public
            self.sock.curve_secretkey = secret
        self.sock.bind(endpoint)
        self.endpoint = self.sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self.poll_ms = int(poll_ms)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._malformed_logged = -1e9

    def serve_once(self, timeout_ms: int = 0) -> bool:
        """Take at most one new request, waiting up to ``timeout_ms`` (at most
        :data:`WAITING_POLL_MS` while requests are held waiting), and reply to the held ones
        the table service has settled or whose bound passed; expire due calls; with CURVE,
        read the allow-list folder again if it changed (at most every ``reload_every_s``). A
        command from a console not in the list in effect is refused naming its key, nothing
        applied. Returns ``True`` when a request was taken or a reply sent."""
        self.registry.expire()
        if self.watch is not None:
            self.watch.refresh()
        replied = self._reply_settled()
        if self.waiting:
            timeout_ms = min(timeout_ms, WAITING_POLL_MS)
        if not self.sock.poll(timeout_ms, zmq.POLLIN):
            return self._reply_settled() or replied
        frames = self.sock.recv_multipart(copy=False)
        # a REQ console's request: [routing id, empty delimiter, the command]
        if len(frames) < 3 or frames[1].bytes != b"":
            self._log_malformed(len(frames))
            return replied
        ident = frames[0].bytes
        if len(frames) > 3:
            self._send(ident, _error(f"a request is one message part (the JSON command), got {len(frames) - 2}"))
            return True
        body = frames[2]
        # with CURVE, the ZAP handler's User-Id is the client's public key (Z85)
        console = body.get("User-Id") if self._auth is not None else None
        try:
            refused = self.watch.refusal(console, "command refused, nothing applied") if self.watch else None
            if refused is not None:
                self._log_refusal(console, refused)
                reply = _error(refused)
            else:
                full = len(self.waiting) if len(self.waiting) >= self.max_waiting else None
                reply = handle_request(self.registry, body.bytes, self.table_command, console, self.confirm_s,
                                       full=full)
        except Exception:   # a defect here must not stop the boxperson's console: log, answer, serve on
            log.exception("boxperson command server: a request could not be handled")
            reply = _error("internal error: the request was not handled (see the table service's log)")
        if isinstance(reply, AwaitingReply):
            self.waiting.append((ident, reply))
        else:
            self._send(ident, reply)
        return True

    def _reply_settled(self, closing: bool = False) -> bool:
        """Reply to the held requests that are settled or past their bound (``closing``: to
        every one, :meth:`AwaitingReply.close`); ``True`` when one was replied."""
        if not self.waiting:
            return False
        now, still, replied = time.monotonic(), [], False
        for ident, awaiting in self.waiting:
            try:
                reply = awaiting.close() if closing else awaiting.poll(now)
            except Exception:   # a defect: the console gets an answer, the others are still served
                log.exception("boxperson command server: a %s waiting for the table service could not be "
                              "replied", awaiting.cmd)
                reply = _error(f"internal error: {awaiting.cmd}: the table service's confirmation could not be "
                               "read (see the table service's log)")
            if reply is None:
                still.append((ident, awaiting))
            else:
                self._send(ident, reply)
                replied = True
        self.waiting = still
        return replied

    def _send(self, ident: bytes, reply: dict) -> None:
        """Send ``reply`` to the console ``ident``; one that has gone is dropped silently by
        the ROUTER socket, and a console not reading (its queue full) is skipped, logged."""
        try:
            self.sock.send_multipart([ident, b"", json.dumps(reply).encode()], flags=zmq.NOBLOCK)
        except zmq.Again:
            log.warning("boxperson command server: a reply could not be queued to its console (not reading): "
                        "dropped")

    def _log_malformed(self, parts: int) -> None:
        """A message that is no REQ request (no empty delimiter): dropped unanswered, as a REP
        socket drops it; logged at WARNING at most every 10 s."""
        now = time.monotonic()
        if now - self._malformed_logged >= 10.0:
            log.warning("boxperson command server: a message of %d part(s) without the REQ envelope dropped "
                        "(consoles send with a REQ socket)", parts)
            self._malformed_logged = now

    def _log_refusal(self, console: str | None, msg: str) -> None:
        """Log a removed console's refused command at WARNING, at most every 10 s per key (a
        console sending in a loop must not fill the table's disk with log lines)."""
        now = time.monotonic()
        if now - self._refusals_logged.get(console, -1e9) >= 10.0:
            log.warning("%s", msg)
            self._refusals_logged[console] = now
            if len(self._refusals_logged) > 1024:
                del self._refusals_logged[next(iter(self._refusals_logged))]

    def start(self) -> "CommandServer":
        """Serve from a daemon thread until :meth:`close`."""
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.serve_once(self.poll_ms)
                except zmq.ZMQError:
                    if self._stop.is_set():
                        break
                    log.exception("boxperson command server")
                    time.sleep(0.05)
        self._thread = threading.Thread(target=loop, name="boxperson-commands", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop the thread, reply to every request still held waiting, close the socket (and
        the context if it was made here). A held request is replied with what the service did,
        else ``pending`` (an answer taken, a command held or taken) or ``not applied`` (a
        command not yet taken, withdrawn: never applied). ``TableService.close`` commits the
        answers taken and refuses the commands queued or held before it closes this socket."""
        self._stop.set()
        if self._thread is not None:
            # the thread does not wait for the service; a table_command hand-over is short
            self._thread.join(timeout=2.0 + 2 * (self.confirm_s or 0.0))
        replied = False
        if self._thread is not None and self._thread.is_alive():
            log.error("boxperson command server: the thread did not stop; %d waiting request(s) not replied",
                      len(self.waiting))
        else:
            replied = self._reply_settled(closing=True)
        # the replies just sent get up to 1 s to leave (a console that has gone is not waited for)
        self.sock.close(linger=1000 if replied else 0)
        if self._auth is not None:
            self._auth.stop()
        if self._own_ctx:
            self.ctx.term()


def send_command(endpoint: str, request: dict, *, timeout_s: float = 5.0,
                 curve: CurveClientKeys | None = None) -> dict:
    """Send one command to a :class:`CommandServer` and return its reply.

    Raises:
        PermissionError: no reply, and the server refused the CURVE handshake (this console's
            key is not authorised there, the server key is wrong, or one side uses CURVE and the
            other does not).
        TimeoutError: no reply within ``timeout_s`` (the server is not there).
        ValueError: the reply is not a JSON object.
    """
    from zmq.utils.monitor import recv_monitor_message

    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    failed = zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL \
        | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    mon = sock.get_monitor_socket(failed)
    try:
        if curve is not None:
            from bus.keys import load_curve_public, load_curve_secret

            public, secret = load_curve_secret(Path(curve.secret_cert))
            sock.curve_publickey = public
            sock.curve_secretkey = secret
            sock.curve_serverkey = load_curve_public(Path(curve.server_cert))
        sock.connect(endpoint)
        sock.send(json.dumps(request).encode())
        if not sock.poll(int(timeout_s * 1000), zmq.POLLIN):
            refused = []
            while mon.poll(0):
                refused.append(recv_monitor_message(mon)["event"])
            if refused:
                what = "authentication" if zmq.EVENT_HANDSHAKE_FAILED_AUTH in refused else "protocol"
                raise PermissionError(f"{endpoint} refused the CURVE handshake ({what}): this console's key is "
                                      "not authorised there, the server key is wrong, or only one side uses CURVE")
            raise TimeoutError(f"no reply from {endpoint} within {timeout_s} s")
        reply = json.loads(sock.recv().decode("utf-8"))
        if not isinstance(reply, dict):
            raise ValueError(f"reply from {endpoint} is not a JSON object")
        return reply
    finally:
        sock.disable_monitor()
        mon.close(0)
        sock.close(0)
        ctx.term()
