"""Handing a request from the command socket's thread to the table service's thread, and
waiting, bounded, for what the service did with it.

The boxperson command socket (controller/boxperson.py ``CommandServer``) answers from its own
thread; the table service (controller/service.py) commits and publishes from its own, at its
next frame or health tick (at most ``TableService.TICK_S`` = 0.1 s apart under ``craps-table
run``). A reply sent before the service acted could say ``ok`` about something a crash then
lost. Two handshakes make the reply wait for the service instead; neither ever tells the
person more than what happened:

- :class:`Handoff`: a table command (``resume``, ``stop``, ``decide-only``, ``no-roll``)
  posted to the service (``TableService.post(..., handoff=h)``). The service takes it
  (:meth:`Handoff.take`) before it applies it and then finishes or refuses it. When the wait
  ends with the command still not taken, the waiter withdraws it (:meth:`Handoff.wait`): the
  service then skips it, so a reply "not applied" stays true. One the service holds for later
  (:meth:`Handoff.hold`: a ``decide-only`` waits until the throw in progress is decided) is
  no longer withdrawn; held or taken but not finished within a second bound, it is reported
  ``pending`` (not confirmed). At its close the service refuses those still queued or held.
- :class:`CommitWaits`: the boxperson's answers (controller/boxperson.py
  ``CallRegistry.answer``). The registry has closed the call when it takes the answer, so an
  answer is never withdrawn: the reply waits for the service to commit the decision's verdict
  to the state store (:meth:`CommitWaits.settle`), and says ``pending`` (taken, not yet
  committed) when the wait ends first.

These are controller rules for the 9 NYCRR 5324.52(h)(1)(ii)(a) decision (the boxperson
decides the throw; the decision is recorded with the roll) and for a rig's technician; no
regulation paragraph speaks of threads. Every wait is bounded by the caller's seconds. The
command socket does not block on them: it parks the request and looks at :meth:`Handoff.check`
/ :meth:`CommitWaits.check` from its loop, serving other consoles meanwhile.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

#: states of a :class:`Handoff` and outcomes of a wait
QUEUED = "queued"
TAKEN = "taken"
HELD = "held"
DONE = "done"
REFUSED = "refused"
WITHDRAWN = "withdrawn"
#: outcomes of :meth:`CommitWaits.check` (and :data:`REFUSED`)
COMMITTED = "committed"
PENDING = "pending"


class Handoff:
    """One table command handed to the service thread, and its outcome (thread-safe).

    The service thread calls :meth:`take` before applying the command (``False``: it was
    withdrawn, skip it), then :meth:`finish` with what it published or :meth:`refuse` with why;
    it may first :meth:`hold` it (keep it to apply later); the command thread calls :meth:`wait`
    (or :meth:`check`, which does not block).
    States: :data:`QUEUED` -> :data:`HELD` (optional) -> :data:`TAKEN` -> :data:`DONE` or
    :data:`REFUSED`; :data:`QUEUED` -> :data:`WITHDRAWN` (the waiter gave up first).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settled = threading.Event()
        self.state = QUEUED
        #: what the service published (e.g. the ``resumed`` round event), after :meth:`finish`
        self.result: dict | None = None
        #: why the service refused it, after :meth:`refuse`
        self.error: str | None = None
        #: until when the service holds it, after :meth:`hold`
        self.held: str | None = None

    def take(self) -> bool:
        """The service thread starts applying the command (queued or held): ``True``, or
        ``False`` when the waiter withdrew it (then it must not be applied)."""
        with self._lock:
            if self.state not in (QUEUED, HELD):
                return False
            self.state = TAKEN
            return True

    def hold(self, why: str) -> bool:
        """The service thread keeps the queued command to apply later (``why``: until when,
        reported by a wait that ends first): ``True``, or ``False`` when the waiter withdrew it
        (then it must not be kept). A held command is not withdrawn: it is applied (then
        :meth:`take`) or refused."""
        with self._lock:
            if self.state != QUEUED:
                return self.state == HELD
            self.state, self.held = HELD, str(why)
            return True

    def finish(self, result: dict | None = None) -> None:
        """Applied; ``result``: what was published."""
        with self._lock:
            self.state, self.result = DONE, result
        self._settled.set()

    def refuse(self, error: str) -> None:
        """Not applied, because ``error`` (or withdrawn from the queue by :meth:`close`)."""
        with self._lock:
            if self.state in (DONE, WITHDRAWN):
                return
            self.state, self.error = REFUSED, str(error)
        self._settled.set()

    def wait(self, timeout_s: float, taken_s: float | None = None) -> str:
        """Wait up to ``timeout_s`` seconds for the outcome; a command not taken by then is
        withdrawn (:data:`WITHDRAWN`: never applied); one taken or held is waited for up to
        ``taken_s`` more seconds (default ``timeout_s``), then :data:`TAKEN` (being applied, not
        confirmed) or :data:`HELD` (kept by the service to apply later, :attr:`held` says until
        when). Else :data:`DONE` or :data:`REFUSED`."""
        if self._settled.wait(max(0.0, float(timeout_s))):
            return self.state
        with self._lock:
            if self.state == QUEUED:
                self.state = WITHDRAWN
                return WITHDRAWN
        self._settled.wait(max(0.0, float(timeout_s if taken_s is None else taken_s)))
        return self.state

    def check(self, elapsed_s: float, timeout_s: float, taken_s: float | None = None) -> str | None:
        """:meth:`wait` without blocking, for a waiter that serves others meanwhile (the
        command socket parks the request, controller/boxperson.py ``CommandServer``):
        ``elapsed_s`` seconds after the command was handed over, of a wait of ``timeout_s``
        (and ``taken_s``, default ``timeout_s``) seconds. Returns :data:`DONE` or
        :data:`REFUSED` as soon as the service settled it; once ``timeout_s`` has elapsed, a
        command still queued is withdrawn (:data:`WITHDRAWN`: never applied); once ``timeout_s +
        taken_s`` has elapsed, :data:`TAKEN` or :data:`HELD`; ``None`` meanwhile (still waiting).
        ``elapsed_s = inf``: the wait ends now (the socket is closing)."""
        with self._lock:
            if self.state in (DONE, REFUSED, WITHDRAWN):
                return self.state
            if elapsed_s < timeout_s:
                return None
            if self.state == QUEUED:
                self.state = WITHDRAWN
                return WITHDRAWN
            if elapsed_s < timeout_s + (timeout_s if taken_s is None else taken_s):
                return None
            return self.state


class _Slot:
    __slots__ = ("settled", "outcome", "detail")

    def __init__(self) -> None:
        self.settled = threading.Event()
        self.outcome: str = PENDING
        self.detail: dict | str | None = None


class CommitWaits:
    """Waiters for the commit of the boxperson's answers, one per call answered (thread-safe).

    The registry calls :meth:`expect` for an answer before it hands the decision over; the
    service calls :meth:`settle` once the decision's verdict is committed (or not applied);
    the command socket looks at :meth:`check` (it bounds the wait itself). Settled slots are
    kept (a look after the settle still sees it), the oldest dropped beyond ``keep``.

    Args:
        keep: how many answers' outcomes to keep (>= 1).
    """

    def __init__(self, keep: int = 256) -> None:
        self._lock = threading.Lock()
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self.keep = max(1, int(keep))

    def expect(self, roll_id: str) -> None:
        """An answer on call ``roll_id`` is about to be handed to the service."""
        with self._lock:
            self._slots[roll_id] = _Slot()
            self._slots.move_to_end(roll_id)
            while len(self._slots) > self.keep:
                self._slots.popitem(last=False)

    def settle(self, roll_id: str, *, committed: dict | None = None, error: str | None = None) -> None:
        """The service committed the decision on ``roll_id`` (``committed``: the verdict's
        ``roll_id`` and ``published``), or did not apply it (``error``: why). A call no answer
        waits on (a timeout, a supersession) is ignored."""
        with self._lock:
            slot = self._slots.get(roll_id)
            if slot is None or slot.settled.is_set():
                return
            slot.outcome, slot.detail = (REFUSED, str(error)) if error is not None else (COMMITTED, committed or {})
            slot.settled.set()

    def release(self) -> None:
        """End every wait still open: :meth:`check` reports :data:`PENDING` for each answer not
        settled yet."""
        with self._lock:
            slots = list(self._slots.values())
        for slot in slots:
            slot.settled.set()

    def check(self, roll_id: str) -> tuple[str, dict | str | None] | None:
        """The outcome of the answer on ``roll_id``, without blocking (the command socket parks
        the request and serves others meanwhile; it bounds the wait itself): ``(COMMITTED,
        {"roll_id": ..., "published": ...})``, ``(REFUSED,
        why)``, ``(PENDING, None)`` (released, or no answer expected on ``roll_id``), or ``None``
        while the service has not settled it yet."""
        with self._lock:
            slot = self._slots.get(roll_id)
            if slot is None:
                return PENDING, None
            if not slot.settled.is_set():
                return None
            return slot.outcome, slot.detail
