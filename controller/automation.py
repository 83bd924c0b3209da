"""The round driver of automated and stadium rigs: runs :class:`controller.rounds.RoundCycle`
inside the table service, commands the shaker through the firmware bridge, and turns dice that
did not move into a no roll.

The table service (controller/service.py) calls the driver at four points (``service.rounds``):

- :meth:`RoundDriver.on_frame` before each frame's lifecycle step: events from other threads
  (the shaker's "done", a "dice out" input, a technician's resume) are applied, the bets window
  is closed when due, the shaker is commanded, the next round is opened when due; while the
  table is in its safe state or a verdict waits unpublished in the outbox, bets close at once
  and neither a throw nor a new round happens. It returns a
  :class:`~controller.verdict.Verdict` the service must publish now when the shaker ran and the
  layout never moved (the dice did not move at all);
- :meth:`RoundDriver.throw_started` on the lifecycle's "throw started" (first motion): in
  motion; in live mode, bets close here (9 NYCRR 5324.52(c)(1));
- :meth:`RoundDriver.review` on a verdict read at rest, before it is committed: at rest, and a
  valid-looking result from dice resting where they rested last time with the same faces becomes a
  no roll ``dice-did-not-move`` (a rig rule, see controller/rounds.py);
- :meth:`RoundDriver.verdict_published` after a verdict is published: the round's verdict,
  then results, a re-throw or a stop (technician).

Automated throw: ``SHAKER(action, shake_ms, intensity)`` through :class:`FirmwareShaker`
(``FirmwareLink.send_command``; its ACK means started), the lifecycle armed
(:meth:`controller.lifecycle.RollLifecycle.arm`: the next motion is a throw), then the shaker's
``INPUT_EVENT SHAKER_DONE`` is awaited (docs/firmware-protocol.md). The "done" is tied to its
command: it carries ``cmd_seq``, the frame ``seq`` of the SHAKER it answers (4.9; the id
:meth:`ShakerPort.start` returns), and a "done" that answers no outstanding command (a late one
from an earlier shake, one the MCU sent again after a link reset, one naming no command) is
refused and logged, naming it: it never ends the current shake nor releases the next throw.
A microcontroller whose "done" carries no command (no ``SHAKER_DONE_SEQ`` capability) is never
sent a SHAKER: the table stops with a ``shaker`` fault saying so. A command refused or not
acknowledged, a "done" that reports a jam or the failsafe, or no "done" within
``shake_ms + shaker_done_timeout_s`` stops the table with a fault: a SHAKER is never blindly
repeated (firmware_bridge.link.CommandFailed). A new throw waits for the previous "done", for
``[rounds] throw_guard_s`` after no more bets, and for the lifecycle to be ``waiting`` or
``decided`` (after a not-at-rest no roll the dice must settle first: a throw commanded while they
still move would never be timed). Each throw has a wall-clock deadline (``throw_timeout_s`` from
its command to its verdict): exceeded, the table stops with a fault (``throw-timeout``).

Dice that move when no throw was commanded (bets open, no more bets, results, a boxperson call
pending at ``verdict``) stop the table (``unscheduled-throw``), and their reading is never a
result nor a boxperson call: a no roll ``table-fault``.

A restart during a throw: each automated throw is recorded in the state store before its SHAKER
is sent and cleared when its verdict is published or the table stops
(:meth:`controller.store.StateStore.set_throw`). A service that starts with one recorded (it
was killed, crashed or restarted while the shaker ran or the dice rolled) starts stopped,
``restart-during-throw``: a ``stopped`` round event naming that throw, the alarm
``restart-during-throw-fault``, FAULT and BETS CLOSED lit, no round opened and no SHAKER sent.
The microcontroller itself stops the shaker when the old process's heartbeats stop
(FAILSAFE) or the new process says HELLO (docs/firmware-protocol.md 5.4). The stop clears the
record: a technician checks the rig and clears the stop (``craps-table resume``, below) or
restarts the service; either opens rounds again.

A technician stops and resumes the table over the command socket (``craps-table stop`` /
``craps-table resume``; controller/table_commands.py calls :meth:`RoundDriver.technician_stop`
and :meth:`RoundDriver.technician_resume` on the service thread): a stop is the ``stopped``
round event (cause ``technician-stop``); a resume is refused naming why while the table is not
stopped or the cause is still present (the service's safe state, an unpublished verdict, the
firmware link down, the shaker running, dice moving), or when it would abandon a round without
the technician's ``abandon``; applied, it publishes ``resumed`` (``who``, ``abandoned``,
``cleared``, ``console``) and clears the stop's faults.
The shaker's "done" tie and this stop are rig rules (no regulation paragraph speaks of
shakers); the interrupted round's wagers are returned by settlement on the ``state`` ``start``
message, since no throw will decide them (9 NYCRR 5324.52(c)(1): wagers are made before the
dice are rolled, so none may ride the next round's throw).

Every round event is published on the bus under topic ``"round"`` (docs/messages.md#round); the
``bets-closed`` lamp is lit whenever bets are not open (:class:`RoundLamps`).
"""
from __future__ import annotations

import logging
import queue
import time
from datetime import datetime, timezone
from typing import Callable, Protocol, Sequence

from controller.lifecycle import (DECIDED as LIFECYCLE_DECIDED, IN_MOTION as LIFECYCLE_IN_MOTION,
                                  WAITING as LIFECYCLE_WAITING)
from controller.reasons import Reason
from controller.rounds import (AT_REST, BETS_OPEN, IN_MOTION, NEXT_RETHROW, NEXT_STOP, NO_MORE_BETS, RESULTS,
                               THROW, VERDICT, RestDie, RoundCycle, RoundsConfig)
from controller.verdict import Verdict

log = logging.getLogger("controller.automation")

#: Shaker "done" results that end a throw normally (the others are faults).
DONE_OK = ("completed",)


class ShakerPort(Protocol):
    """What the driver needs of the rig's actuator."""

    def start(self, action: str, duration_ms: int, intensity: int) -> int | None:
        """Start the shaker (``action`` ``"shake"``) or blower (``"blow"``); return once the
        microcontroller accepted it, with the command's id (:class:`FirmwareShaker`: the
        SHAKER's frame ``seq``), which its "done" must name (:meth:`RoundDriver.shaker_done`
        ``command``); ``None``: a port without command ids (its "done" is accepted while a
        shake is outstanding). Raises on refusal or no acknowledgement."""
        ...


#: how many refused "done" events the driver keeps (:attr:`RoundDriver.refused_dones`)
REFUSED_DONES_KEPT = 100


class FirmwareShaker:
    """The shaker and blower of the table microcontroller (docs/firmware-protocol.md SHAKER,
    INPUT_EVENT SHAKER_DONE).

    Args:
        link: a started :class:`firmware_bridge.link.FirmwareLink`.
        on_done: called with ``(result, action, command)`` for each SHAKER_DONE event (on the
            link's dispatch thread): ``result`` is ``"completed"``, ``"stopped"``, ``"jammed"``
            or ``"failsafe"``; ``command`` the ``seq`` of the SHAKER it answers (the event's
            ``cmd_seq``), or ``None`` when the event names none (older firmware).
        timeout_s: the command's deadline, seconds (default: the link's ``command_deadline_s``).
    """

    def __init__(self, link, on_done: Callable[[str, str, int | None], None], timeout_s: float | None = None) -> None:
        from firmware_bridge.protocol import InputId

        self.link, self.on_done, self.timeout_s = link, on_done, timeout_s
        self._input = InputId.SHAKER_DONE
        link.add_event_listener(self._on_event)

    def _on_event(self, ev) -> None:
        if ev.input != self._input:
            return
        from firmware_bridge.protocol import ShakerAction, ShakerResult

        try:
            result = ShakerResult(int(ev.detail)).name.lower()
        except ValueError:
            result = f"unknown-{ev.detail}"
        try:
            action = ShakerAction(int(ev.value)).name.lower()
        except ValueError:
            action = f"unknown-{ev.value}"
        self.on_done(result, action, ev.cmd_seq)

    def start(self, action: str, duration_ms: int, intensity: int) -> int:
        """Send SHAKER and wait for its ACK (docs/firmware-protocol.md 4.8).

        Returns:
            the SHAKER's frame ``seq``: its SHAKER_DONE carries it as ``cmd_seq`` (4.9).

        Raises:
            firmware_bridge.link.CommandFailed: the link is not up within the deadline
                (``link-down``), or the SHAKER was refused (NAK, e.g. BUSY) or not acknowledged;
            ShakerUnsupported: the microcontroller's "done" does not name its command (no
                ``SHAKER_DONE_SEQ`` capability, older firmware): nothing is sent, since the end
                of the shake could not be told from a late or replayed "done";
            ValueError: an unknown action.
        """
        from firmware_bridge.link import CommandFailed
        from firmware_bridge.protocol import Capability, Shaker, ShakerAction

        if action not in ("shake", "blow"):
            raise ValueError(f"shaker action must be 'shake' or 'blow', got {action!r}")
        deadline = self.timeout_s if self.timeout_s is not None else self.link.config.command_deadline_s
        if not self.link.wait_up(deadline):
            raise CommandFailed("link-down", 0, 0, False)
        mcu = self.link.status().mcu
        if mcu is None or not mcu.capabilities & Capability.SHAKER_DONE_SEQ:
            fw = "unknown" if mcu is None else f"{mcu.fw_major}.{mcu.fw_minor}.{mcu.fw_patch}"
            raise ShakerUnsupported(
                f"the microcontroller (firmware {fw}, capabilities 0x{0 if mcu is None else mcu.capabilities:02X}) "
                f"does not name the SHAKER command in its SHAKER_DONE (capability SHAKER_DONE_SEQ 0x40, "
                f"docs/firmware-protocol.md 4.9): no SHAKER sent; update the firmware")
        result = self.link.send_command(Shaker(ShakerAction.SHAKE if action == "shake" else ShakerAction.BLOW,
                                               int(duration_ms), int(intensity)), timeout=self.timeout_s)
        return result.seq

    def close(self) -> None:
        """Stop listening to the link."""
        self.link.remove_event_listener(self._on_event)


class ShakerUnsupported(RuntimeError):
    """The microcontroller cannot tie a shaker "done" to its command (older firmware)."""


class RoundLamps:
    """A :class:`controller.lamps.LampController` seen through the round cycle: ``bets-closed``
    is lit whenever the round's bets are not open (as well as while dice are in motion and on a
    fault). Every other attribute is the controller's."""

    def __init__(self, lamps, cycle: RoundCycle) -> None:
        self._lamps, self._cycle = lamps, cycle

    def update(self, state, phase: str, now: float):
        """See ``LampController.update``; the lifecycle phase shows as "in motion" (bets-closed
        lit) while the round's bets are closed."""
        return self._lamps.update(state, LIFECYCLE_IN_MOTION if self._cycle.bets_closed else phase, now)

    def __getattr__(self, name):
        return getattr(self._lamps, name)


def scene_of(verdict: Verdict) -> tuple[RestDie, ...]:
    """The dice of a verdict's observations as :class:`RestDie` (value, centre in pixels)."""
    out = []
    for o in verdict.observations:
        r = o.reading
        out.append(RestDie(r.value, float(r.centre[0]), float(r.centre[1])))
    return tuple(out)


class RoundDriver:
    """Runs a :class:`RoundCycle` in the service (see the module docstring).

    Args:
        cycle: the round cycle (its clock must be the service's frame clock).
        lifecycle: the service's :class:`controller.lifecycle.RollLifecycle` (armed before a
            shake; in live mode a round opens only while it is ``waiting``: table empty, still).
        shaker: a :class:`ShakerPort` (automated mode), or ``None`` (live mode).
        trigger: called right after the shaker started (the simulated table's
            ``SimSource.throw``), or ``None``.
        raise_fault, clear_fault: ``(where, message)`` / ``(where)``: the service's fault
            handling (alarm on the bus, fault lamp).
        wall: the wall clock of the shaker's timeouts (``time.monotonic``; tests inject one).
        held: ``() -> str | None``: why the rig must hold, or ``None``: ``"safe-state"`` (the
            table's safe state, controller/health.py: a throw would only be a no roll
            ``table-fault``), ``"verdict-unpublished"`` (a committed verdict the bus refused
            waits in the outbox: a round opened or thrown before it is published would let
            settlement settle the next round's wagers with its dice). While held the open
            round's bets close (``cause``: the reason), no SHAKER is sent and no round opens.
        record: where the automated throw in progress is recorded (``set_throw(str | None)``,
            ``throw_in_progress()``: the service's :class:`controller.store.StateStore`), or
            ``None``. One found recorded when the driver is made: the table starts stopped
            (``restart-during-throw``, see the module docstring).
    """

    def __init__(self, cycle: RoundCycle, *, lifecycle, shaker: ShakerPort | None = None,
                 trigger: Callable[[], None] | None = None,
                 raise_fault: Callable[[str, str], None] | None = None,
                 clear_fault: Callable[[str], None] | None = None,
                 wall: Callable[[], float] = time.monotonic,
                 held: Callable[[], str | None] | None = None, record=None) -> None:
        if cycle.mode == "automated" and shaker is None:
            raise ValueError("automated mode needs a shaker (the firmware bridge)")
        self.cycle, self.lifecycle, self.shaker, self.trigger = cycle, lifecycle, shaker, trigger
        self._raise = raise_fault or (lambda where, msg: log.error("%s: %s", where, msg))
        self._clear = clear_fault or (lambda where: None)
        self.wall = wall
        self._held = held or (lambda: None)
        self._record = record
        #: the throw a previous run recorded and never decided (it stopped during it), or None
        self.interrupted_throw: str | None = record.throw_in_progress() if record is not None else None
        self._throw_recorded = self.interrupted_throw is not None
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.shaking = False
        #: the outstanding shake's command id (what :meth:`ShakerPort.start` returned)
        self.shake_command: int | None = None
        #: "done" events refused (they answered no outstanding command): the last
        #: :data:`REFUSED_DONES_KEPT`, each a line naming it
        self.refused_dones: list[str] = []
        self._shake_deadline = 0.0
        self._done_t: float | None = None
        self._throw_pending = False
        self._scene: tuple[RestDie, ...] = ()
        self.stray_verdicts: list[str] = []
        #: set (to the error) when a round event could not be published: the table stops;
        #: cleared on resume (the next publish tells again)
        self.bus_failed: str | None = None
        self._refused_in_shake = False            # a "done" was refused during this shake
        self._throw_at = 0.0                      # frame time the pending throw may start
        self._throw_deadline: float | None = None  # wall clock: the current throw's verdict by then
        self.rounds_done = 0
        self._stop_faults: set[str] = set()       # the faults raised by stops, cleared on resume

    # --- other threads ------------------------------------------------------------------------

    def post(self, event: str, **details) -> None:
        """Hand the driver an event from another thread: ``"shaker-done"`` (``result``,
        ``action``), ``"dice-out"`` (live: the dice left the shooter's hand), ``"resume"``
        (``who``: a technician cleared a stop)."""
        self._inbox.put((event, details))

    def shaker_done(self, result: str, action: str = "shake", command: int | None = None) -> None:
        """The shaker's "done" event (any thread); see :class:`FirmwareShaker`. ``command``:
        the id of the command it answers (the SHAKER's ``seq``, the event's ``cmd_seq``), or
        ``None`` when the event names none. It ends the outstanding shake only when it answers
        it (a shake is outstanding and, when :meth:`ShakerPort.start` gave an id, ``command`` is
        that id); any other "done" is refused and logged (:attr:`refused_dones`)."""
        self.post("shaker-done", result=result, action=action, command=command)

    def dice_out(self) -> None:
        """The "dice out" input (any thread): bets close now (live mode)."""
        self.post("dice-out")

    def resume(self, who: str = "technician") -> None:
        """A technician cleared the stop (any thread; in-process, unchecked: the command
        socket's ``resume`` goes through :meth:`technician_resume`)."""
        self.post("resume", who=who)

    # --- a technician, on the service thread (controller/table_commands.py) --------------------

    def technician_stop(self, who: str, reason: str, *, console: str | None = None) -> dict:
        """Stop the table now (the service thread): the ``stopped`` round event, cause
        ``technician-stop: stopped by WHO: REASON``, and the alarm ``technician-stop-fault``.
        A shake in progress runs out (its "done" is still awaited); the dice it throws are a
        no roll ``table-fault``.

        Returns:
            the ``stopped`` round event.

        Raises:
            ValueError: the table is already stopped (its cause named).
        """
        c = self.cycle
        if c.stopped:
            raise ValueError(f"the table is already stopped ({c.stop_cause})")
        by = f"stopped by {who}" + (f" (console {console})" if console else "")
        return self._stop("technician-stop", f"{by}: {reason}")

    def technician_resume(self, who: str, *, abandon: bool = False, console: str | None = None,
                          present: Sequence[str] = ()) -> dict:
        """Clear the stop now (the service thread): the ``resumed`` round event with ``who``,
        ``abandoned`` (the round left without a result, or null), ``cleared`` (the stop's
        cause) and ``console``; the stop's faults are cleared and the next round opens when
        due.

        Args:
            who: the technician's name.
            abandon: the technician confirms that the open round without a result is abandoned
                (settlement returns its wagers).
            console: the CURVE key the command socket authenticated the technician by.
            present: what the caller sees that keeps the table stopped (the service: its safe
                state, a verdict unpublished, the firmware link down).

        Raises:
            ValueError: the table is not stopped; a cause is still present (``present``, a
                shake still running within its deadline, dice moving on the layout); a round
                without a result and not ``abandon``; or the bus refused the ``resumed`` event
                (the table stops again, ``rounds-bus``). Nothing changed but in the last case.
        """
        c = self.cycle
        if not c.stopped:
            raise ValueError(f"the table is not stopped (round phase {c.phase}): nothing to resume")
        present = list(present)
        if self.shaking and self.wall() <= self._shake_deadline:
            present.append(f"the shaker is running (command {self.shake_command}; its 'done' is due within "
                           f"{self._shake_deadline - self.wall():.1f} s)")
        if self.lifecycle.phase == LIFECYCLE_IN_MOTION:
            present.append("dice are moving on the layout")
        if present:
            raise ValueError(f"the cause of the stop is still present: {'; '.join(present)} (stopped: {c.stop_cause})")
        r = c.round
        if r is not None and r.final is None and not abandon:
            raise ValueError(f"round {r.round_id} has no result: resuming abandons it (settlement returns its "
                             "wagers; no throw decides it): confirm with abandon (craps-table resume --abandon)")
        if self.shaking:     # its "done" is overdue: the shake is over, as a stop for no "done" says
            log.warning("resume: the shake of command %s never reported 'done' (overdue): forgotten",
                        self.shake_command)
            self.shaking, self.shake_command = False, None
        body = self._resume(who, console=console)
        if self.bus_failed is not None:
            self._stop("rounds-bus", f"round events cannot be published ({self.bus_failed})")
            raise ValueError(f"the bus refused the resumed event ({self.bus_failed}): the table stopped again")
        return body

    def _resume(self, who: str, *, console: str | None = None) -> dict:
        """Clear the stop: ``resumed`` published, the faults of the stop cleared."""
        c = self.cycle
        self.bus_failed = None     # the next publish tells whether the bus is back
        body = c.resume(who, cleared=c.stop_cause, console=console)
        self._throw_pending, self._throw_deadline = False, None
        for where in sorted(self._stop_faults | {"technician", "shaker", "dice-did-not-move"}):
            self._clear(where)
        self._stop_faults.clear()
        return body

    # --- service hooks ------------------------------------------------------------------------

    def on_frame(self, t: float, moving: bool) -> Verdict | None:
        """Before the lifecycle step of the frame at ``t`` (frame clock, seconds). Returns a no
        roll ``dice-did-not-move`` to publish now when the shaker ran and nothing moved for
        ``no_motion_s`` after its "done", else ``None``.

        Stops the table (a fault, no exception) when a round event could not be published, the
        shaker's "done" is late, or the throw's ``throw_timeout_s`` deadline (wall clock) passed."""
        c, cfg = self.cycle, self.cycle.config
        self._drain(t)
        if self.interrupted_throw is not None and c.phase is None:
            self._stop("restart-during-throw",
                       f"the service stopped during {self.interrupted_throw} (the shaker may have run, "
                       f"its dice were never read): check the dice and the shaker, then resume "
                       f"(craps-table resume) or restart the service")
        if self.bus_failed is not None and not c.stopped:
            self._stop("rounds-bus", f"round events cannot be published ({self.bus_failed})")
        held = self._held()
        if c.phase is None and not held:
            c.open()
        if c.stopped:
            return None
        if self.shaking and self.wall() > self._shake_deadline:
            self.shaking = False
            cmd, self.shake_command = self.shake_command, None
            self._stop("shaker", "no shaker 'done'" + ("" if cmd is None else f" for command {cmd}")
                                 + f" within {cfg.shake_ms / 1000 + cfg.shaker_done_timeout_s:.1f} s"
                                 + (f" (last refused: {self.refused_dones[-1]})" if self._refused_in_shake else ""))
            return None
        if self._throw_deadline is not None and self.wall() > self._throw_deadline:
            self._throw_deadline = None
            self._stop("throw-timeout", f"throw {c.round.throws if c.round else 0} of round "
                                        f"{c.round.round_id if c.round else None} not decided within "
                                        f"{cfg.throw_timeout_s:.1f} s (dice not coming to rest?)")
            return None
        if held and c.phase == BETS_OPEN:     # settlement must refuse wagers too
            c.close_bets(held)
            if c.mode == "automated":
                self._throw_pending, self._throw_at = True, t + cfg.throw_guard_s
        if c.mode == "automated":
            if c.close_due(t):
                c.close_bets("window")
                self._throw_pending, self._throw_at = True, t + cfg.throw_guard_s
            if (self._throw_pending and not held and not self.shaking and t >= self._throw_at
                    and self.lifecycle.phase in (LIFECYCLE_WAITING, LIFECYCLE_DECIDED)):
                self._throw(t)
            if c.open_due(t) and not self.shaking and not held:
                c.open()
            if (c.phase == THROW and not self.shaking and self._done_t is not None and not moving
                    and t - self._done_t >= cfg.no_motion_s):
                self._done_t = None
                return Verdict(kind="no-roll", reason=Reason.DICE_DID_NOT_MOVE, dice=None,
                               irregularities=(Reason.DICE_DID_NOT_MOVE,))
        elif c.open_due(t) and self.lifecycle.phase == LIFECYCLE_WAITING and not held:
            c.open()
        return None

    def throw_started(self, t: float) -> None:
        """The lifecycle saw a throw start (first motion of a throw) at ``t``."""
        c = self.cycle
        if c.stopped:
            return
        if c.mode == "live":
            self._live_out("first-motion")
            return
        if c.phase == THROW:
            c.motion()
        elif c.phase in (BETS_OPEN, NO_MORE_BETS, RESULTS, VERDICT):
            # motion on the layout of a closed automated rig that the controller did not cause
            # (at verdict: a boxperson call pending, or a re-throw not yet commanded)
            if c.phase == BETS_OPEN:
                c.close_bets("first-motion")
            self._stop("unscheduled-throw", f"dice moved at t={t:.3f} s without a shaker command")

    def review(self, verdict: Verdict, t: float) -> Verdict:
        """A verdict read at rest, before it is committed (``t``: frame clock, seconds).

        Returns the verdict to commit: the same, or

        * automated: dice at rest after motion the rig did not cause (the round not at ``throw``
          or ``at-rest``: bets open, no more bets, results, stopped, or a boxperson call pending
          at ``verdict``): any reading but a no roll becomes a no roll ``table-fault`` (never a
          result, never a boxperson call); at ``verdict`` the table also stops
          (``unscheduled-throw``, a fault);
        * a result from dice that rest where they rested at the end of the previous throw, with
          the same faces: a no roll ``dice-did-not-move``.

        The observations are kept as evidence."""
        c = self.cycle
        if c.phase == IN_MOTION:
            c.at_rest()
        scene = scene_of(verdict)
        self._scene = scene
        if c.mode == "automated" and c.phase not in (THROW, AT_REST) and verdict.kind != "no-roll":
            # dice at rest after motion the rig did not cause (stopped table, tampering, a cocked
            # die dropping while the boxperson decides): never a result
            if c.phase == VERDICT:
                self._stop("unscheduled-throw", f"dice moved at t={t:.3f} s without a shaker command "
                                                f"(round {c.round.round_id if c.round else None} at verdict)")
            return Verdict(kind="no-roll", reason=Reason.TABLE_FAULT, dice=None,
                           irregularities=verdict.irregularities, observations=verdict.observations)
        if verdict.kind != "boxperson" and c.dice_did_not_move(scene):
            return Verdict(kind="no-roll", reason=Reason.DICE_DID_NOT_MOVE, dice=None,
                           irregularities=(Reason.DICE_DID_NOT_MOVE, *verdict.irregularities),
                           observations=verdict.observations)
        return verdict

    def verdict_published(self, body: dict, t: float) -> None:
        """A verdict was published (``body``: the roll message body)."""
        c = self.cycle
        if c.mode == "live" and c.phase == RESULTS:  # a throw the layout did not show starting
            c.begin_closed("verdict-without-throw")
            c.throw("shooter")
        if c.phase not in (THROW, IN_MOTION, AT_REST, VERDICT):
            self.stray_verdicts.append(str(body.get("roll_id")))
            log.warning("verdict %s outside a throw of a round (phase %s)", body.get("roll_id"), c.phase)
            return
        reason = body.get("reason")
        scene, self._scene = self._scene, ()
        nxt = c.verdict(str(body.get("roll_id")), str(body.get("verdict")), reason, body.get("dice"), scene)
        self._clear_throw()                 # the throw is decided (a re-throw records itself again)
        if reason == Reason.DICE_DID_NOT_MOVE.value:
            self._raise("dice-did-not-move", f"{body.get('roll_id')}: the dice did not move "
                                             f"({c.stuck_run} in a row)")
        elif body.get("verdict") != "boxperson":
            self._clear("dice-did-not-move")
        if nxt != NEXT_RETHROW:    # a result, a boxperson call (its own timeout), a stop
            self._throw_deadline = None
        if nxt == NEXT_RETHROW:
            self._throw_pending, self._throw_at = True, t
        elif nxt == NEXT_STOP:
            self._raise("technician", c.stop_cause or "table stopped")
        elif c.phase == RESULTS:
            self.rounds_done += 1

    # --- internals ----------------------------------------------------------------------------

    def _drain(self, t: float) -> None:
        c = self.cycle
        while True:
            try:
                event, d = self._inbox.get_nowait()
            except queue.Empty:
                return
            if event == "shaker-done":
                command = d.get("command")
                if not self.shaking or (self.shake_command is not None and command != self.shake_command):
                    self._refuse_done(d)
                    continue
                self.shaking, self.shake_command = False, None
                self._done_t = t
                if d.get("result") not in DONE_OK and not c.stopped:
                    self._stop("shaker", f"shaker {d.get('action')} (command {command}) ended: {d.get('result')}")
            elif event == "dice-out":
                if c.mode == "live" and not c.stopped:
                    self._live_out("dice-out")
            elif event == "resume":
                if c.stopped:
                    self._resume(str(d.get("who") or "technician"))
            else:
                log.warning("unknown round driver event %r ignored", event)

    def _refuse_done(self, d: dict) -> None:
        """A shaker "done" that answers no outstanding command: logged (WARNING) naming it and
        what is outstanding, kept in :attr:`refused_dones`; nothing else changes."""
        command = d.get("command")
        why = ("it names no command (firmware without SHAKER_DONE_SEQ?)" if command is None else
               "no shake is outstanding" if not self.shaking else
               f"the outstanding shake is command {self.shake_command}")
        line = (f"shaker 'done' {d.get('result')} of {d.get('action')} for command {command} refused: "
                f"it answers no outstanding command ({why})")
        log.warning("%s", line)
        self.refused_dones.append(line)
        del self.refused_dones[:-REFUSED_DONES_KEPT]
        if self.shaking:
            self._refused_in_shake = True

    def _live_out(self, cause: str) -> None:
        """Live mode: the dice left the shooter's hand (first motion or the input)."""
        c = self.cycle
        if c.phase == RESULTS:       # thrown again before bets re-opened: a round with no window
            c.begin_closed(cause)
        if c.phase == BETS_OPEN:
            c.close_bets(cause)
        if c.phase in (NO_MORE_BETS, VERDICT):
            c.throw("shooter")
        if c.phase == THROW and cause == "first-motion":
            c.motion()

    def _throw(self, t: float) -> None:
        c, cfg = self.cycle, self.cycle.config
        self._throw_pending = False
        if c.phase not in (NO_MORE_BETS, VERDICT):
            return
        if self.bus_failed is not None:    # terminals may not know bets closed: never throw
            self._stop("rounds-bus", f"round events cannot be published ({self.bus_failed})")
            return
        if self._record is not None:     # before the SHAKER: a restart during the throw must see it
            try:
                self._record.set_throw(f"round {c.round.round_id} throw {c.round.throws + 1}")
            except Exception as exc:  # noqa: BLE001 - StoreError: no shake the store does not know of
                self._stop("shaker", f"throw not recorded in the state store, no SHAKER sent: {exc}")
                return
            self._throw_recorded = True
        self.lifecycle.arm()
        try:
            command = self.shaker.start(cfg.action, cfg.shake_ms, cfg.intensity)
        except Exception as exc:  # noqa: BLE001 - CommandFailed and link errors: never repeated blindly
            self._stop("shaker", f"shaker command failed: {exc}")
            return
        self.shaking, self._done_t = True, None
        self.shake_command, self._refused_in_shake = command, False
        self._shake_deadline = self.wall() + cfg.shake_ms / 1000.0 + cfg.shaker_done_timeout_s
        self._throw_deadline = self.wall() + cfg.throw_timeout_s
        c.throw("blower" if cfg.action == "blow" else "shaker")
        if self.trigger is not None:
            self.trigger()

    def awaits_decision(self, roll_id: str) -> bool:
        """``True`` when the current round is waiting on the boxperson's decision of the call
        ``roll_id`` (phase ``verdict``, that call its last verdict, the table not stopped): a
        decision on any other call is stale (9 NYCRR 5324.52(h)(1)(ii)(a): the call decides the
        throw it was made on, not a later round's)."""
        c = self.cycle
        return (c.phase == VERDICT and c.round is not None and bool(c.round.verdicts)
                and c.round.verdicts[-1] == roll_id and c.round.final is None)

    def _stop(self, where: str, message: str) -> dict | None:
        """Stop the table (a fault ``where``, cleared by a resume); the ``stopped`` event, or
        ``None`` when it was stopped already."""
        self._throw_deadline = None
        log.error("table stopped: %s: %s", where, message)
        body = None
        if not self.cycle.stopped:
            body = self.cycle.stop(f"{where}: {message}")
        self._stop_faults.add(where)
        self._raise(where, message)
        self.interrupted_throw = None
        self._clear_throw()                 # the stop is the technician's state now
        return body

    def _clear_throw(self) -> None:
        """Clear the recorded throw (if this driver recorded one or found one). A store that
        cannot be written is logged: the record stays, and a restart starts stopped."""
        if not self._throw_recorded or self._record is None:
            return
        try:
            self._record.set_throw(None)
        except Exception as exc:  # noqa: BLE001 - StoreError: the safe side (a stop on restart)
            log.error("the throw in progress could not be cleared in the state store: %s", exc)
            return
        self._throw_recorded = False


def round_prefix(table_id: str, now: datetime | None = None) -> str:
    """Round id prefix: the table id and the UTC start time to the second, e.g.
    ``"table-1-20261130T000512"``. For reading only: a clock set back (an NTP step, a Pi
    without RTC booting at its last saved time) can give a prefix an earlier start gave; the
    round number after it, taken from the state store (:meth:`controller.store.StateStore.
    next_round_number`, see :func:`attach_rounds`), is what makes a round id unique."""
    now = now or datetime.now(timezone.utc)
    return f"{table_id}-{now.strftime('%Y%m%dT%H%M%S')}"


def attach_rounds(service, config: RoundsConfig, *, mode: str, shaker: ShakerPort | None = None,
                  trigger: Callable[[], None] | None = None, wall: Callable[[], float] = time.monotonic,
                  prefix: str | None = None) -> RoundDriver:
    """Run the round cycle inside ``service`` (a :class:`controller.service.TableService`):
    round events are published on its bus under topic ``"round"`` (through the service, so
    ``on_message`` sees them), its lamps show bets closed, its faults raise alarms.

    Args:
        service: the table service (``service.rounds`` is set).
        config: ``[rounds]``.
        mode: ``"automated"`` or ``"live"``.
        shaker: automated mode: the actuator (e.g. :class:`FirmwareShaker`; its "done" events
            must reach :meth:`RoundDriver.shaker_done`).
        trigger: called after each shake starts (the simulated table's ``SimSource.throw``).
        wall: clock of the shaker timeouts.
        prefix: the round id prefix (default :func:`round_prefix`).

    Round numbers come from the service's state store (``service.store.next_round_number``):
    the table's round count, rising across restarts and clock steps, so a round id
    ``PREFIX-NNNNNN`` never repeats and settlement's round gate never mixes two rounds
    (docs/messages.md#round). A service without a store (test doubles) numbers from 1.

    Returns:
        the driver.

    A throw recorded in the store and never decided (the previous run stopped during it)
    makes the table start stopped (``restart-during-throw``; see the module docstring).

    Raises:
        controller.store.StoreError: the store cannot be read (at once), or (later, from
            ``on_frame``) a round number cannot be written: no round opens.
    """
    holder: list[RoundDriver] = []

    def publish(body: dict) -> None:
        try:
            service._publish("round", body)
        except Exception as exc:  # noqa: BLE001 - the bus is an edge: the table stops (no throws)
            log.error("round event %s of %s not published: %s", body.get("event"), body.get("round_id"), exc)
            if holder:
                holder[0].bus_failed = f"{type(exc).__name__}: {exc}"

    store = getattr(service, "store", None)
    cycle = RoundCycle(prefix or round_prefix(service.table_id), config, mode=mode,
                       clock=lambda: service._now, publish=publish,
                       numbers=getattr(store, "next_round_number", None))
    driver = RoundDriver(cycle, lifecycle=service.lifecycle, shaker=shaker, trigger=trigger,
                         raise_fault=service._raise_fault, clear_fault=service._clear_fault, wall=wall,
                         record=store if hasattr(store, "set_throw") else None,
                         held=lambda: ("safe-state" if getattr(service, "safe_state", False) else
                                       "verdict-unpublished" if getattr(service, "verdict_unpublished", False)
                                       else None))
    holder.append(driver)
    service.lamps = RoundLamps(service.lamps, cycle)
    service.rounds = driver
    return driver


def attach_simulated_rig(service, config: RoundsConfig, *, mode: str, source=None, link=None,
                         mcu_seed: int = 0) -> tuple[RoundDriver, list[Callable[[], None]]]:
    """:func:`attach_rounds` with the rig in software: in automated mode a
    :class:`firmware_bridge.mcu_sim.SimulatedMcu` (shaker included) on a pseudo-terminal and a
    :class:`firmware_bridge.link.FirmwareLink` to it (unless ``link`` is given), and the simulated
    table (``source``, a ``SimSource``) told to throw when the shaker starts.

    Returns:
        ``(driver, closers)``: call the closers (in order) when done.

    Raises:
        RuntimeError: the simulated microcontroller's link did not come up within 5 s.
    """
    closers: list[Callable[[], None]] = []
    shaker = None
    trigger = None
    if source is not None and hasattr(source, "throw_on_command") and mode == "automated":
        source.throw_on_command()
        trigger = source.throw
    if mode == "automated":
        if link is None:
            from firmware_bridge.config import BridgeConfig
            from firmware_bridge.link import FirmwareLink
            from firmware_bridge.mcu_sim import SimulatedMcu

            mcu = SimulatedMcu(seed=mcu_seed)
            path = mcu.start()
            link = FirmwareLink(BridgeConfig(port=str(path), exclusive=False, require_wall_sensor=False)).start()
            closers.extend([link.close, mcu.stop])
            if not link.wait_up(5.0):
                for close in closers:
                    close()
                raise RuntimeError("the simulated microcontroller's link did not come up within 5 s")
        holder: list[RoundDriver] = []
        shaker = FirmwareShaker(link, lambda result, action, command: holder[0].shaker_done(result, action, command))
        closers.insert(0, shaker.close)
    driver = attach_rounds(service, config, mode=mode, shaker=shaker, trigger=trigger)
    if shaker is not None:
        holder.append(driver)
    return driver, closers


def wait_rounds(driver: RoundDriver, rounds: int) -> Callable[[], bool]:
    """A ``should_stop`` for ``TableService.run``: true after ``rounds`` rounds have results, or
    once the table stopped."""
    return lambda: driver.rounds_done >= rounds or driver.cycle.stopped


__all__ = ["RoundDriver", "RoundLamps", "FirmwareShaker", "ShakerPort", "ShakerUnsupported", "attach_rounds",
           "attach_simulated_rig", "round_prefix", "scene_of", "wait_rounds"]


def attach_for_run(service, cfg, source, mode: str) -> RoundDriver:
    """``craps-table run --mode automated|live``: attach the round cycle of ``cfg.rounds`` to
    ``service``. Automated: the shaker of the table's own firmware link when the lamps use it
    (``lamps.driver = "firmware"``), else a simulated microcontroller (shaker included) on a
    pseudo-terminal; the simulated table throws when the shaker starts. The closers are added
    to ``service.closers`` (run by ``service.close()``).

    Raises:
        RuntimeError: the simulated microcontroller's link did not come up.
    """
    link = getattr(getattr(service.lamps, "driver", None), "link", None)
    driver, closers = attach_simulated_rig(service, cfg.rounds, mode=mode, source=source, link=link)
    service.closers.extend(closers)
    return driver
