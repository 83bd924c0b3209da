"""The table service's commands from other threads: the boxperson command socket, the
firmware bridge's inputs, a rig technician.

:class:`TableCommands` is a part of :class:`controller.service.TableService` (its base class):
another thread hands an event to :meth:`TableCommands.post`; the service thread applies it before
its next frame and at every health tick (:meth:`TableCommands._drain_inbox`), publishes what it
changed and raises a ``command-refused`` alarm for what it refuses. The events:

- ``shooter-button``: the shooter passes the dice (9 NYCRR 5324.52(i)(1), (i)(3);
  N.J.A.C. 13:69F-1.11(a), (c));
- ``decide-only``: rolls only to decide the remaining come and don't come wagers (9 NYCRR
  5324.52(i)(2); N.J.A.C. 13:69F-1.11(b));
- ``no-roll``: a person calls "no roll" on the throw in progress (9 NYCRR 5324.52(k)(2),
  (k)(3), (k)(5)(i));
- ``stop`` / ``resume``: a technician stops an automated or stadium table or clears its stop
  (controller/automation.py; a rig rule: no regulation paragraph speaks of shakers; the
  abandoned round's wagers are returned because wagers are made before the dice are rolled,
  9 NYCRR 5324.52(c)(1), so none may ride another round's throw). These carry a
  :class:`controller.handoff.Handoff`, so the command socket's reply says what the service did;
  a handoff withdrawn before the service took it is skipped;
- ``link``: the microcontroller link went down or came back.

``decide-only``, ``no-roll``, ``stop`` and ``resume`` from the command socket carry a
:class:`controller.handoff.Handoff`: the service finishes it with what it applied (the socket
replies ``ok``) or refuses it naming why (the socket replies ``ok: false``, and a
``command-refused`` alarm is published); a ``decide-only`` held until the throw in progress is
decided is marked held (:meth:`controller.handoff.Handoff.hold`). At close
(:meth:`TableCommands._refuse_queued`) those still queued or held are refused, and a command
posted after that is refused at once: a command is applied or refused, never acknowledged and
lost.
"""
from __future__ import annotations

import logging
import queue
from datetime import datetime, timezone

from controller.game import GameState, new_shooter, set_decide_only
from controller.lifecycle import CLEARING, IN_MOTION
from controller.policy import Action
from controller.reasons import STAFF_CALL_REASONS, Reason

log = logging.getLogger("controller.service")

#: The staff calls 9 NYCRR 5324.52(k)(3) asks to be made before both dice come to rest:
#: (k)(2)(i), (ii) and (vi).
_CALLED_BEFORE_REST = frozenset({Reason.DICE_NOT_SIMULTANEOUS, Reason.FAR_WALL_MISSED, Reason.IMPROPER_THROW})
#: why a ``decide-only`` (or a shooter change) is held (:meth:`TableCommands._drain_inbox`): the
#: roll is the shooter's who threw it, 9 NYCRR 5324.52(i)(1)
HELD_UNTIL_DECIDED = ("held until the throw in progress is decided (the dice are moving, or its boxperson call "
                      "is open): a roll is the shooter's who threw it, 9 NYCRR 5324.52(i)(1)")


class TableCommands:
    """The command handling of :class:`controller.service.TableService` (see the module
    docstring); it uses the service's inbox, store, lifecycle, round driver and publisher."""

    def post(self, event: str, **details) -> None:
        """Hand the service an event from another thread (the firmware bridge's dispatch
        thread, the boxperson command socket); it is applied before the next frame, except a
        shooter change or ``"decide-only"``, held until the throw in progress is decided
        (:meth:`_drain_inbox`). Events:
        ``"shooter-button"`` (the shooter passes the dice: :meth:`relinquish`), ``"decide-only"``
        with ``on`` and ``who`` (:meth:`decide_only`; refused with a ``command-refused`` alarm
        while a point is on), ``"no-roll"`` with ``reason``, ``who`` and ``console``
        (:meth:`call_no_roll`; refused with a ``command-refused`` alarm when no throw is in
        progress), ``"link"`` with ``up`` and ``reason`` (the microcontroller link: a
        fault and an alarm while it is down), ``"stop"`` with ``who``, ``reason``, ``console``
        (:meth:`technician_stop`) and ``"resume"`` with ``who``, ``abandon``, ``console``
        (:meth:`technician_resume`). ``handoff``: a :class:`controller.handoff.Handoff` the
        service takes before applying the event (one withdrawn is skipped) and finishes with
        what it published or refuses with why. After :meth:`_refuse_queued` (the service is
        closing) an event is not queued: its handoff is refused at once."""
        with self._post_lock:
            if self._closing is None:
                self._inbox.put((event, details))
                return
        self._not_applied(event, details, self._closing)

    def _throw_undecided(self) -> bool:
        """A throw is in motion, or its boxperson call is still open: the roll is the current
        shooter's until it is decided."""
        if self.lifecycle.phase == IN_MOTION:
            return True
        last = self.store.verdicts(1)
        return bool(last) and last[-1].get("verdict") == "boxperson"

    def _drain_inbox(self) -> None:
        """Apply the posted events in order. A shooter change or the start or end of rolls
        only to decide come wagers waits until the throw in progress is decided: the shooter
        may pass the dice "after any roll" (9 NYCRR 5324.52(i)(1); N.J.A.C. 13:69F-1.11(a)),
        and a roll is published as the shooter's who threw it."""
        while self._deferred and not self._throw_undecided():
            self._apply_event(*self._deferred.popleft())
        while True:
            try:
                event, details = self._inbox.get_nowait()
            except queue.Empty:
                return
            if event in ("shooter-button", "decide-only") and (self._deferred or self._throw_undecided()):
                handoff = details.get("handoff")
                if handoff is not None and not handoff.hold(HELD_UNTIL_DECIDED):
                    log.warning("%s from %s withdrawn by the command socket before it was applied (not confirmed "
                                "in time): not applied", event, details.get("who"))
                    continue
                log.info("%s held until the throw in progress is decided", event)
                self._deferred.append((event, details))
                continue
            self._apply_event(event, details)

    def _apply_event(self, event: str, details: dict) -> None:
        """Apply one event of :meth:`post`."""
        details = dict(details)
        handoff = details.pop("handoff", None)
        if handoff is not None and not handoff.take():
            log.warning("%s from %s withdrawn by the command socket before it was applied (not confirmed in "
                        "time): not applied", event, details.get("who"))
            return
        if event in ("stop", "resume"):
            self._technician_event(event, details, handoff)
        elif event == "shooter-button":
            log.info("shooter button: the shooter passes the dice")
            try:
                self.relinquish()
            except ValueError as exc:
                log.warning("shooter button refused: %s", exc)
                self._publish("alarm", {"code": "command-refused", "message": f"shooter-button: {exc}"[:500]})
        elif event == "no-roll":
            reason = str(details.get("reason"))
            try:
                self.call_no_roll(reason, str(details.get("who") or ""), console=details.get("console"))
            except ValueError as exc:
                self._command_refused(event, details, handoff, exc)
                return
            if handoff is not None:
                handoff.finish({"applied": "no-roll", "reason": reason, "who": self._called["who"],
                                "phase": self.lifecycle.phase, "after_roll_id": self.store.last_roll_id()})
        elif event == "decide-only":
            on = bool(details.get("on"))
            try:
                state = self.decide_only(on)
            except ValueError as exc:
                self._command_refused(event, details, handoff, exc)
                return
            log.info("rolls only to decide come/don't come wagers %s (%s, console %s)",
                     "start" if on else "end", details.get("who"), details.get("console"))
            if handoff is not None:
                handoff.finish({"applied": "decide-only", "on": on, "game": self._game_json(state)})
        elif event == "link":
            if details.get("up"):
                self._clear_fault("bridge")
            else:
                self._raise_fault("bridge", f"firmware link down: {details.get('reason') or 'no reason given'}")
        else:
            log.warning("unknown service event %r ignored", event)

    def _command_refused(self, event: str, details: dict, handoff, exc: Exception, *,
                         label: str | None = None) -> None:
        """``event`` (``decide-only``, ``no-roll``, ``stop``, ``resume``) not applied because
        ``exc``: logged, ``handoff`` refused with why (the command socket replies so), a
        ``command-refused`` alarm published, its message ``"<label>: <why>"`` (``label``
        default ``event``; an alarm the bus refuses is logged: the refusal is already replied)."""
        log.warning("%s from %s refused: %s", event, details.get("who"), exc)
        if handoff is not None:
            handoff.refuse(str(exc))
        try:
            self._publish("alarm", {"code": "command-refused", "message": f"{label or event}: {exc}"[:500]})
        except Exception:  # noqa: BLE001 - the refusal is logged and replied; the bus may be the cause
            log.exception("could not publish the alarm command-refused")

    def relinquish(self, compulsory: bool = False) -> GameState:
        """The shooter passes the dice (voluntary) or is ordered to (compulsory): the next
        shooter takes over; published as a ``"state"`` message (``event: "new-shooter"``).
        9 NYCRR 5324.52(i)(1), (i)(3); N.J.A.C. 13:69F-1.11(a), (c).

        Raises:
            ValueError: a voluntary change while a point is pending where the profile passes
                the dice only "on completion of a decision" (``shooter_change = "decision"``:
                9 NYCRR 4620.3(c)(5), N.J.A.C. 13:47-20.25(g)6); nothing changed. A shooter who
                has not thrown yet may always pass: "Any player may ... refuse to shoot in the
                player's turn, and pass the dice to the next player" (4620.3(c)(6); N.J.A.C.
                13:47-20.25(g)7), e.g. after a compulsory change while a point is pending.
        """
        state = self.store.state
        if not compulsory and self.shooter_change == "decision" and state.point is not None \
                and state.shooter_roll > 0:
            raise ValueError(f"the shooter passes the dice on completion of a decision, not while the point "
                             f"{state.point} is pending (9 NYCRR 4620.3(c)(5); N.J.A.C. 13:47-20.25(g)6)")
        state = new_shooter(state)
        self.store.commit(state, None)
        self._publish("state", {"event": "new-shooter", "cause": "compulsory" if compulsory else "voluntary",
                                "game": self._game_json(state)})
        return state

    def call_no_roll(self, reason: str, who: str, *, console: str | None = None) -> None:
        """The boxperson or stickperson calls "no roll" on the throw in progress (9 NYCRR
        5324.52(k)(2), (k)(5)(i); made, whenever possible, before both dice come to rest,
        (k)(3)): the throw's verdict is then a no roll with ``reason`` whatever the camera sees
        (what it found is kept in ``irregularities``), and the roll message's ``called`` names
        who called it (``who``, ``console``, ``at_utc``). For what a person sees and the camera
        cannot judge: dice not leaving the hand together ((k)(2)(i); the camera sees a die
        entering well after the other only, and sends that to the boxperson), a cheating device
        ((k)(2)(v)), any other improper throw ((k)(2)(vi)), a die that missed the far end
        ((k)(2)(ii)), or a die that left the table and came back onto it (``die-off-table``: the
        roll "shall be invalid whenever either die leaves ... the table", (k)(1); the camera
        judges only where the dice come to rest).

        Args:
            reason: a code of :data:`controller.reasons.STAFF_CALL_REASONS`.
            who: the caller's name (required).
            console: the CURVE key the command socket authenticated the caller by, if any.

        Raises:
            ValueError: an unknown reason or no name; a reason the policy reads rather than
                voids (``far-wall-missed`` under ny-4620 and nj-13-47); no throw in progress (the
                dice are not moving, or the throw was already decided): nothing is changed.
        """
        codes = [r.value for r in STAFF_CALL_REASONS]
        if reason not in codes:
            raise ValueError(f"reason {reason!r} cannot be called; one of: {', '.join(codes)}")
        from controller.boxperson import check_who

        who = check_who(who)   # DecisionError (a ValueError): empty, too long, control characters
        if self.policy.action(Reason(reason)) is Action.READ:
            # e.g. far-wall-missed under 9 NYCRR 4620.3 or N.J.A.C. 13:47-20.25: the game's
            # rules do not void such a throw, so a person cannot call it void for it either
            raise ValueError(f"the policy {self.policy.name} reads a throw with {reason}: it is not a no roll here")
        if self.lifecycle.phase not in (IN_MOTION, CLEARING):
            if Reason(reason) in _CALLED_BEFORE_REST:
                raise ValueError(f"no throw in progress (phase {self.lifecycle.phase}): a no roll for {reason} is "
                                 "called, whenever possible, before both dice come to rest, 9 NYCRR 5324.52(k)(3)")
            # (k)(1) and (k)(2)(v) set no time, but the throw's verdict is already published and
            # settled: the table service does not take a roll back
            raise ValueError(f"no throw in progress (phase {self.lifecycle.phase}): the last throw's verdict is "
                             f"already published; the table service calls a no roll for {reason} "
                             f"({Reason(reason).citation}) only on a throw in progress and does not undo a "
                             "published roll")
        if self._called is not None:
            log.info("no-roll call on the throw in progress replaced: %s by %s", self._called["reason"],
                     self._called["who"])
        self._called = {"reason": reason, "who": who.strip(), "console": console,
                        "at_utc": datetime.now(timezone.utc).isoformat()}
        log.info("no roll called on the throw in progress: %s by %s%s", reason, who.strip(),
                 f" (console {console})" if console else "")

    def decide_only(self, on: bool) -> GameState:
        """The boxperson starts (``on``) or ends the rolls made only to decide the remaining come
        and don't come wagers (9 NYCRR 5324.52(i)(2); N.J.A.C. 13:69F-1.11(b)): no point is set
        while they last, and a 7 ends them. Published as a ``"state"`` message (``event:
        "decide-only"``, ``on``).

        Raises:
            ValueError: started while a point is established (nothing changed or published).
        """
        state = set_decide_only(self.store.state, on)
        self.store.commit(state, None)
        self._publish("state", {"event": "decide-only", "on": bool(on), "game": self._game_json(state)})
        return state

    # --- a rig technician's stop and resume (controller/automation.py) ---------------------------

    def _technician_event(self, event: str, details: dict, handoff) -> None:
        """Apply ``stop`` or ``resume``: finish ``handoff`` with the round event published, or
        refuse it (and publish a ``command-refused`` alarm) naming why."""
        who, console = str(details.get("who") or ""), details.get("console")
        try:
            if event == "stop":
                body = self.technician_stop(who, str(details.get("reason") or ""), console=console)
            else:
                body = self.technician_resume(who, abandon=bool(details.get("abandon")), console=console)
        except ValueError as exc:
            self._command_refused(event, details, handoff, exc, label=f"{event} by {who}")
            return
        if handoff is not None:
            handoff.finish(body)

    def technician_stop(self, who: str, reason: str, *, console: str | None = None) -> dict:
        """A technician stops the table's rounds (automated or stadium rig): the round event
        ``stopped`` (cause ``technician-stop: stopped by WHO: REASON``), the alarm
        ``technician-stop-fault``, BETS CLOSED and FAULT lit, no throw and no round until
        :meth:`technician_resume`. A rig rule (no regulation paragraph speaks of shakers); bets
        stay closed, 9 NYCRR 5324.52(c)(1). Logged with who, console and when (UTC).

        Returns:
            the ``stopped`` round event published.

        Raises:
            ValueError: no round driver (``craps-table run --mode table``), the table already
                stopped (its cause named), a name :func:`controller.boxperson.check_who`
                refuses, or no reason; nothing changed.
        """
        from controller.boxperson import check_who

        who = check_who(who)
        if self.rounds is None:
            raise ValueError("this table runs no rounds (craps-table run --mode automated|live): there is no round "
                             "cycle to stop")
        if not reason.strip():
            raise ValueError("a reason for the stop is required")
        at = datetime.now(timezone.utc).isoformat()
        body = self.rounds.technician_stop(who, reason.strip(), console=console)
        log.warning("table stopped by %s%s at %s: %s", who, f" (console {console})" if console else "", at,
                    reason.strip(), extra={"event": "technician-stop", "who": who, "at_utc": at})
        return body

    def technician_resume(self, who: str, *, abandon: bool = False, console: str | None = None) -> dict:
        """A technician clears the stop of an automated or stadium table: the round event
        ``resumed`` (``who``, ``abandoned``, ``cleared``: the stop's cause, ``console``), the
        stop's faults cleared, and the next round opens when due. The open round without a
        result is abandoned (settlement returns its wagers: wagers are made before the dice
        are rolled, 9 NYCRR 5324.52(c)(1), so none rides a later round's throw); ``abandon``
        must say so. Logged with who, console and when (UTC).

        Returns:
            the ``resumed`` round event published.

        Raises:
            ValueError: naming why, nothing changed: no round driver; the table is not stopped;
                the cause of the stop is still present (:meth:`_stop_causes_present`, and the
                driver's own: the shaker still running, dice moving); a round without a result
                and not ``abandon``; a name :func:`controller.boxperson.check_who` refuses; or
                the bus refused the ``resumed`` event (the table stops again, ``rounds-bus``).
        """
        from controller.boxperson import check_who

        who = check_who(who)
        if self.rounds is None:
            raise ValueError("this table runs no rounds (craps-table run --mode automated|live): there is no stop "
                             "to clear")
        at = datetime.now(timezone.utc).isoformat()
        body = self.rounds.technician_resume(who, abandon=abandon, console=console,
                                             present=self._stop_causes_present())
        log.warning("table resumed by %s%s at %s: cleared %s; round abandoned: %s", who,
                    f" (console {console})" if console else "", at, body.get("cleared"), body.get("abandoned"),
                    extra={"event": "technician-resume", "who": who, "at_utc": at})
        return body

    def _stop_causes_present(self) -> list[str]:
        """What the table service sees that keeps a rig stopped: its safe state (the health
        monitor's reasons, e.g. ``camera-lost``), a verdict the bus refused waiting in the
        outbox, the firmware link down. Empty when none."""
        out = []
        if self.safe_state:
            status = self.health_status
            reasons = [f"{r} ({status.details.get(r, '')})" if status.details.get(r) else r
                       for r in status.reasons] if status is not None else []
            out.append("the table is in its safe state: " + (", ".join(reasons) or "a health fault"))
        if self.verdict_unpublished:
            out.append("a verdict the bus refused waits unpublished in the outbox")
        if "bridge" in self._faults:
            out.append("the firmware link is down")
        return out

    def _refuse_queued(self, why: str) -> None:
        """At close: the events still queued, and those held until the throw in progress is
        decided (a shooter change, a ``decide-only``), are not applied; those with a handoff
        are refused with ``why`` (the command socket replies so). An event posted from now on
        is refused the same way (:meth:`post`)."""
        with self._post_lock:
            self._closing = why
        while self._deferred:
            self._not_applied(*self._deferred.popleft(), why)
        while True:
            try:
                event, details = self._inbox.get_nowait()
            except queue.Empty:
                break
            self._not_applied(event, details, why)

    @staticmethod
    def _not_applied(event: str, details: dict, why: str) -> None:
        """An event the closing service does not apply: its handoff, if any, refused with
        ``why``; logged."""
        handoff = details.get("handoff")
        if handoff is not None and handoff.take():
            handoff.refuse(why)
        log.warning("%s from %s not applied: %s", event, details.get("who"), why)
