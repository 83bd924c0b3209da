"""Wager intake: the player terminals' socket of ``craps-table settle-service``.

A ZeroMQ REP socket that settle-service answers from its own loop, between two reads of the
roll bus (settlement/service.py ``run_settlement_service``: one ``zmq.Poller`` waits on both),
so a wager is checked by the round gate right after the latest bus messages are applied, and
the ledger session is used by one thread only. One JSON request, one JSON reply
(docs/wagers.md "Terminal intake")::

    {"cmd": "round"}                     -> {"ok": true, "round_id": "...", "open": true, ...}
    {"cmd": "wager", "wager_id": "t1-0001", "player": "p1", "bet": "pass", "amount": 1000,
     "round_id": "...", "placed_at": "2026-12-04T06:00:01.250+00:00"}
                                         -> {"ok": true, "wager_id": "t1-0001", "wid": 3, ...}
    {"cmd": "balance", "player": "p1"}   -> {"ok": true, "balance_cents": -1000, "wagers": [...]}
    refused or malformed                 -> {"ok": false, "error": "what is wrong"[, "rule": "..."]}

A wager is a round wager (settlement/rounds.py; "Wagers shall be made before the dice are
rolled", 9 NYCRR 5324.52(c)(1); "All bets shall be made before the dice are thrown", N.J.A.C.
13:47-20.25(h)1), placed with :meth:`settlement.service.EnvelopeApplier.place_for_round`.
Its ``wager_id`` is an idempotency key kept in the ledger (table ``intake``): the placement and
its reply are committed in ONE transaction before the reply is sent, so a terminal that
retries after a lost reply (or a settle-service killed after the commit) gets the same reply
and the wager is placed once; a refusal is recorded too (a retry gets the same refusal). A
``wager_id`` already used for another request, or by another terminal, is refused naming it.
A malformed request (not JSON, wrong types, an unknown or duplicated key, a float amount, more
than :data:`REQUEST_MAX_BYTES`) gets an error naming what is wrong and changes nothing. Money
is integer cents.

Security as the boxperson command socket (controller/boxperson.py): with :class:`IntakeCurve`
the socket is CURVE-encrypted (RFC 26/CurveZMQ), the server is settlement's own bus key (the
subscriber's ``.key_secret``) and only terminals whose public certificate is in the allow-list
folder connect (checked first with :func:`bus.keys.check_allow_list`); each wager records the
terminal's public key. Each terminal acts only for the players ``terminals.toml`` in that folder
binds it to (settlement/terminals.py): a wager or balance for another player, or any request
from a terminal whose certificate was removed, is refused naming the terminal and the player,
nothing written. The folder is read again when it changes (:meth:`WagerIntake.refresh`, at
most once a second, from the service's loop); a folder that cannot be read then keeps the list
in effect (less the certificates removed) and is logged at ERROR. Without CURVE there is no
terminal identity to bind: any local process could wager for any player, so the socket binds
only a loopback tcp:// or an ipc:// endpoint (:func:`check_endpoint`): a test or technician mode.
"""
from __future__ import annotations

import json
import logging
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import zmq

from bus.allowwatch import RELOAD_EVERY_S as _RELOAD_EVERY_S

from .engine import Rejected
from .ledger import IntakeEntry
from .terminals import BindingError, TerminalTable, load_terminals

__all__ = ["WagerIntake", "IntakeConfig", "IntakeCurve", "IntakeSetupError", "check_endpoint", "handle_request",
           "intake_config",
           "REQUEST_MAX_BYTES", "MAX_AMOUNT_CENTS", "RELOAD_EVERY_S"]

log = logging.getLogger("settlement.intake")

#: the largest request answered (bytes); a larger one up to :data:`HARD_MAX_BYTES` gets an error
REQUEST_MAX_BYTES = 64 * 1024
#: ZMQ_MAXMSGSIZE of the socket: a larger message drops the sender's connection, unanswered
HARD_MAX_BYTES = 1024 * 1024
#: the longest ``wager_id``, ``player`` or ``round_id`` (characters)
MAX_ID_CHARS = 100
#: the largest ``amount`` the intake takes (cents, $100,000,000): above the table limits of every
#: profile, below what the ledger's 64-bit integers could overflow on
MAX_AMOUNT_CENTS = 10_000_000_000
#: how often the service's loop looks whether the allow-list folder changed (seconds, at most)
RELOAD_EVERY_S = _RELOAD_EVERY_S
_ENDPOINT = re.compile(r"^(tcp://\S+:(\d+|\*)|ipc://\S+)$")
_LOCAL = re.compile(r"^(tcp://(127\.0\.0\.1|localhost|\[::1\]):(\d+|\*)|ipc://\S+)$")
_WAGER_KEYS = ("cmd", "wager_id", "player", "bet", "amount", "round_id", "placed_at",
               "number", "base", "dice", "working")
_REQUIRED = ("wager_id", "player", "bet", "amount", "round_id", "placed_at")


class IntakeSetupError(ValueError):
    """The intake cannot be set up: a bad endpoint (or a non-local one without CURVE), an
    unreadable key or allow-list, a socket that cannot bind (the message names it)."""


class BadRequest(ValueError):
    """A malformed request (the message names what is wrong; nothing is changed)."""


@dataclass(frozen=True)
class IntakeCurve:
    """CURVE for the intake socket, from the bus's key files (bus/keys.py).

    Attributes:
        secret_cert: the server's ``NAME.key_secret`` (settle-service: its subscriber key).
        authorized_dir: folder of the terminals' public certificates (``NAME.key``) allowed in,
            and of ``terminals.toml``, the players each serves (settlement/terminals.py).
    """

    secret_cert: Path
    authorized_dir: Path


@dataclass(frozen=True)
class IntakeConfig:
    """Where settle-service serves wagers: ``endpoint`` and, for CURVE, ``curve``."""

    endpoint: str
    curve: IntakeCurve | None = None


def check_endpoint(endpoint: str, curve: bool) -> str:
    """``endpoint`` if the intake may bind it: a tcp:// or ipc:// endpoint; without ``curve``
    only loopback tcp:// (127.0.0.1, localhost, [::1]) or ipc://.

    Raises:
        IntakeSetupError: naming the endpoint and why.
    """
    if not isinstance(endpoint, str) or not _ENDPOINT.match(endpoint):
        raise IntakeSetupError(f"wager intake endpoint {endpoint!r}: must be tcp://HOST:PORT or ipc://PATH")
    if not curve and not _LOCAL.match(endpoint):
        raise IntakeSetupError(
            f"wager intake endpoint {endpoint!r}: without CURVE (an allow-list of terminal certificates) the "
            "intake has no authentication, so any process that reaches it could place wagers for any player; "
            "it binds only a loopback tcp:// (127.0.0.1, localhost, [::1]) or an ipc:// endpoint")
    return endpoint


def intake_config(endpoint: str | None, allow_dir: Path | None, settlement=None, bus_cfg=None) -> IntakeConfig | None:
    """The intake settle-service's options ask for (``--intake ENDPOINT``, ``--intake-allow
    DIR``), each defaulting to the table config's ``[settlement]`` ``intake_endpoint`` and, with
    ``intake_curve``, ``intake_authorized_dir`` (``settlement``: that section, or ``None``); the
    CURVE server key is settlement's bus key (``bus_cfg`` ``keys_dir`` / ``subscriber_key``).
    ``None``: no intake (the default).

    Raises:
        IntakeSetupError: ``--intake-allow`` without an endpoint, an endpoint not allowed
            (:func:`check_endpoint`), an allow-list folder missing or with an unreadable certificate,
            a malformed ``terminals.toml`` (file and line named).
    """
    from bus.keys import BusKeyError, key_files

    endpoint = endpoint or (settlement.intake_endpoint if settlement is not None else "")
    allow = allow_dir or (settlement.intake_authorized_dir if settlement is not None and settlement.intake_curve
                          else None)
    if not endpoint:
        if allow_dir is not None:
            raise IntakeSetupError("--intake-allow needs a wager intake endpoint (--intake ENDPOINT)")
        return None
    check_endpoint(endpoint, allow is not None)
    if allow is None:
        return IntakeConfig(endpoint)
    try:
        load_terminals(allow)
    except (BusKeyError, BindingError) as exc:
        raise IntakeSetupError(f"wager intake: {exc}") from None
    return IntakeConfig(endpoint, IntakeCurve(key_files(bus_cfg.keys_dir, bus_cfg.subscriber_key).curve_secret,
                                              Path(allow)))


def _error(msg: str, **extra) -> dict:
    return {"ok": False, "error": msg, **extra}


def _refuse_constant(name: str):
    raise BadRequest(f"request is not JSON this server reads: {name} is not a number")


def _no_duplicates(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise BadRequest(f"request has the key {k!r} twice")
        out[k] = v
    return out


def parse_request(raw: bytes) -> dict:
    """The request object in ``raw`` (UTF-8 JSON, at most :data:`REQUEST_MAX_BYTES`).

    Raises:
        BadRequest: too large, not UTF-8, not JSON (``NaN``/``Infinity`` included), a key twice,
            not an object, no ``cmd``.
    """
    if len(raw) > REQUEST_MAX_BYTES:
        raise BadRequest(f"request is {len(raw)} bytes, over the limit of {REQUEST_MAX_BYTES} bytes (64 KiB)")
    try:
        req = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except BadRequest:
        raise
    except UnicodeDecodeError as exc:
        raise BadRequest(f"request is not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(f"request is not JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:   # an integer of thousands of digits, nesting too deep
        raise BadRequest(f"request is not JSON this server reads: {exc or 'nested too deeply'}") from None
    if not isinstance(req, dict):
        raise BadRequest(f"request must be a JSON object, not {type(req).__name__}")
    if not isinstance(req.get("cmd"), str):
        raise BadRequest("request needs \"cmd\": \"wager\", \"balance\" or \"round\"")
    return req


def _text(req: dict, key: str, cmd: str, longest: int = MAX_ID_CHARS) -> str:
    v = req.get(key)
    if not isinstance(v, str) or not v.strip():
        raise BadRequest(f"{cmd}: {key} must be a non-empty string, got {v!r}")
    if len(v) > longest or not v.isprintable():
        raise BadRequest(f"{cmd}: {key} must be at most {longest} printable characters, got {v[:40]!r}"
                         + ("..." if len(v) > 40 else ""))
    return v


def _only(req: dict, cmd: str, keys) -> None:
    unknown = sorted(set(req) - set(keys))
    if unknown:
        raise BadRequest(f"{cmd}: unknown key(s) {unknown}; keys: {', '.join(keys)}")


def _cents(v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        kind = "a boolean" if isinstance(v, bool) else "a float: money is integer cents, never a float" \
            if isinstance(v, float) else f"a {type(v).__name__}"
        raise BadRequest(f"wager: amount must be integer cents (a JSON integer), got {v!r} ({kind})")
    if not 0 < v <= MAX_AMOUNT_CENTS:
        raise BadRequest(f"wager: amount must be 1..{MAX_AMOUNT_CENTS} cents, got {v}")
    return v


def check_wager(req: dict) -> None:
    """Check a ``wager`` request's keys and types (the wager's legality is the engine's and the
    round gate's).

    Raises:
        BadRequest: an unknown or missing key, a wrong type, an amount not integer cents > 0.
    """
    _only(req, "wager", _WAGER_KEYS)
    missing = [k for k in _REQUIRED if k not in req]
    if missing:
        raise BadRequest(f"wager: missing key(s) {missing}")
    for key in ("wager_id", "player", "round_id"):
        _text(req, key, "wager")
    _text(req, "bet", "wager", 40)
    _text(req, "placed_at", "wager", 64)
    _cents(req["amount"])
    number, base, dice, working = (req.get(k) for k in ("number", "base", "dice", "working"))
    if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
        raise BadRequest(f"wager: number must be an integer, got {number!r}")
    if base is not None and not isinstance(base, str):
        raise BadRequest(f"wager: base must be a string, got {base!r}")
    if dice is not None and (not isinstance(dice, list) or len(dice) != 2 or any(
            isinstance(d, bool) or not isinstance(d, int) for d in dice)):
        raise BadRequest(f"wager: dice must be two integers [a, b], got {dice!r}")
    if working is not None and not isinstance(working, bool):
        raise BadRequest(f"wager: working must be true or false, got {working!r}")


def _wager(applier, req: dict, terminal: str | None, terminals: TerminalTable | None) -> dict:
    check_wager(req)
    sess, wid = applier.sess, req["wager_id"]
    refused = terminals.refusal(terminal, req["player"]) if terminals is not None else None
    if refused is not None:     # before the wager_id is looked up: nothing of another player is shown
        return _error(refused, wager_id=wid)
    request = json.dumps(req, sort_keys=True, separators=(",", ":"))
    prior = sess.intake_answer(wid)
    if prior is not None:
        if prior["request"] == request and prior["terminal"] == terminal:
            return prior["reply"]      # a retry: the reply given, nothing placed again
        what = "by another terminal" if prior["terminal"] != terminal else f"for another request {prior['request']}"
        return _error(f"wager_id {wid!r} was used {what}: a wager_id names one wager; nothing placed (a new wager "
                      "needs a new wager_id)", wager_id=wid)
    amount = req["amount"]

    def reply(w, debited: int, balance: int) -> dict:
        return {"ok": True, "wager_id": wid, "wid": w.wid, "player": w.player, "bet": w.kind, "amount": amount,
                "vig": debited - amount, "on_layout": w.amount, "balance_cents": balance,
                "round_id": req["round_id"], "placed_at": req["placed_at"], "terminal": terminal}

    wager = {k: v for k, v in req.items() if k not in ("cmd", "wager_id")}
    try:
        applier.place_for_round(wager, intake=IntakeEntry(wid, terminal, request, reply))
    except Rejected as exc:
        out = _error(exc.reason, rule=exc.rule, wager_id=wid)
        sess.intake_refused(wid, terminal, request, out)
        return out
    return sess.intake_answer(wid)["reply"]


def _balance(applier, req: dict, terminal: str | None, terminals: TerminalTable | None) -> dict:
    _only(req, "balance", ("cmd", "player"))
    player = _text(req, "player", "balance")
    refused = terminals.refusal(terminal, player) if terminals is not None else None
    if refused is not None:
        return _error(refused)
    wagers = [{"wid": w.wid, "bet": w.kind, "amount": w.amount, "number": w.number, "base": w.base,
               "dice": list(w.dice) if w.dice else None, "working": w.working, "vig_paid": w.vig_paid}
              for w in applier.sess.table.wagers if w.player == player]
    return {"ok": True, "player": player, "balance_cents": applier.sess.balance(player), "wagers": wagers}


def _round(applier, req: dict) -> dict:
    _only(req, "round", ("cmd",))
    gate = applier.rounds
    info = gate.rounds.get(gate.current) if gate.current else None
    view = applier.bus_view()
    return {"ok": True, "round_id": gate.current,
            "open": info is not None and info.closed is None and not info.decided and not info.abandoned,
            "opened_at": info.opened.isoformat() if info is not None else None,
            "behind": view.behind() if view is not None else None}


def handle_request(applier, raw: bytes, terminal: str | None = None, terminals: TerminalTable | None = None) -> dict:
    """Answer one request (see the module docstring) against ``applier`` (the service's
    :class:`settlement.service.EnvelopeApplier`: its ledger session and round gate).

    Args:
        raw: the request bytes.
        terminal: the CURVE public key (Z85) the socket authenticated the sender by, or ``None``.
        terminals: the allow-list in effect (CURVE), or ``None`` (no CURVE: no terminal is
            bound, any player is served). With it, a request from a key not in it is refused, and
            a ``wager`` or ``balance`` for a player the terminal is not bound to too (reason
            naming the terminal and the player; nothing written).

    Returns:
        the reply (a dict): never raises for bad input.

    Raises:
        sqlite3.Error: the ledger cannot be written (nothing placed; the caller stops).
    """
    try:
        req = parse_request(raw)
        cmd = req["cmd"]
        refused = terminals.refusal(terminal, None) if terminals is not None else None
        if refused is not None:     # a terminal whose certificate was removed: nothing for it
            return _error(refused)
        if cmd == "wager":
            return _wager(applier, req, terminal, terminals)
        if cmd == "balance":
            return _balance(applier, req, terminal, terminals)
        if cmd == "round":
            return _round(applier, req)
        raise BadRequest(f"unknown cmd {cmd!r}; commands: wager, balance, round")
    except BadRequest as exc:
        return _error(str(exc))


class WagerIntake:
    """The intake socket (ZeroMQ REP), served by the caller's loop with :meth:`serve_one`.

    Args:
        endpoint: where to bind (``tcp://127.0.0.1:5570``, ``ipc:///run/craps/intake``; any
            tcp:// only with ``curve``; ``tcp://127.0.0.1:*``: a free port, see :attr:`endpoint`).
        curve: CURVE keys (:class:`IntakeCurve`), or ``None`` (loopback / ipc only).
        context: a ``zmq.Context`` (default: a new one, terminated by :meth:`close`).
        reload_every_s: seconds between two looks at the allow-list folder (:meth:`refresh`).

    Raises:
        IntakeSetupError: a bad endpoint, a non-local one without CURVE, an unreadable secret
            certificate or allow-list certificate, a missing allow-list folder, a malformed
            ``terminals.toml`` (file and line named), a bind failure.
    """

    def __init__(self, endpoint: str, *, curve: IntakeCurve | None = None,
                 context: zmq.Context | None = None, reload_every_s: float = RELOAD_EVERY_S) -> None:
        from bus.allowwatch import AllowListWatch
        from bus.keys import BusKeyError, RefusalLog, load_curve_secret

        from .terminals import BINDINGS_FILE

        check_endpoint(endpoint, curve is not None)
        self.curve = curve
        self.reload_every_s = reload_every_s
        #: the allow-list folder's watch (CURVE), else ``None`` (bus/allowwatch.py)
        self.watch: AllowListWatch | None = None
        self._auth = None
        self._own_ctx = context is None
        self.ctx = context or zmq.Context()
        self.sock = None
        try:
            if curve is not None:
                from zmq.auth.thread import ThreadAuthenticator

                self.watch = AllowListWatch(curve.authorized_dir, "wager intake", log, load=load_terminals,
                                            also=(BINDINGS_FILE,), errors=(BindingError,), noun="terminals",
                                            reload_every_s=reload_every_s)
                public, secret = load_curve_secret(Path(curve.secret_cert))
                self._auth = ThreadAuthenticator(self.ctx, log=RefusalLog(log, "wager intake"))
                self._auth.start()
                self.watch.attach(self._auth)
            self.sock = self.ctx.socket(zmq.REP)
            self.sock.setsockopt(zmq.LINGER, 0)
            self.sock.setsockopt(zmq.MAXMSGSIZE, HARD_MAX_BYTES)
            if curve is not None:
                self.sock.curve_server = True
                self.sock.curve_publickey = public
                self.sock.curve_secretkey = secret
            self.sock.bind(endpoint)
        except (BusKeyError, BindingError, zmq.ZMQError) as exc:
            self.close()
            raise IntakeSetupError(f"wager intake {endpoint}: {exc}") from None
        self.endpoint = self.sock.getsockopt_string(zmq.LAST_ENDPOINT)

    @property
    def table(self) -> TerminalTable | None:
        """The allow-list in effect: terminals and the players each serves (CURVE), else ``None``."""
        return self.watch.table if self.watch is not None else None

    @property
    def terminals(self) -> int | None:
        """Terminal certificates in the allow-list in effect (CURVE), else ``None``."""
        return len(self.watch.table.by_key) if self.watch is not None else None

    def refresh(self, now: float | None = None) -> str | None:
        """Read the allow-list folder again if it changed (a certificate or ``terminals.toml``
        added, removed or rewritten: :func:`bus.allowwatch.folder_state`); looks at most
        once per ``reload_every_s``. Called by the service's loop, between two requests, so a
        removed terminal is refused from its next request after the look (within a second).

        A folder read whole replaces the list in effect, which the authenticator asks at every
        handshake (bus/allowwatch.py). One that cannot be read (a malformed ``terminals.toml``
        or certificate, the folder gone) is logged at ERROR naming the file; the list in effect
        is kept, less the terminals whose certificate file is gone: a reload never opens access
        wider.

        Args:
            now: ``time.monotonic()`` (default: now).

        Returns:
            a line saying what was reloaded, or ``None`` (no CURVE, not looked, unchanged, failed).
        """
        if self.watch is None or self._auth is None:
            return None
        done = self.watch.refresh(now)
        return done.line if done is not None and done.ok else None

    def serve_one(self, applier) -> bool:
        """Answer one waiting request, if any (never waits). Returns whether one was answered.
        The reply is sent after the ledger commit (:func:`handle_request`).

        Raises:
            sqlite3.Error: the ledger cannot be written (the request is left unanswered).
        """
        if not self.sock.poll(0, zmq.POLLIN):
            return False
        frames = self.sock.recv_multipart(copy=False)
        # with CURVE, the ZAP handler's User-Id is the terminal's public key (Z85)
        terminal = frames[0].get("User-Id") if self.curve is not None else None
        if len(frames) != 1:
            reply = _error(f"request must be one message frame, got {len(frames)}")
        else:
            try:
                reply = handle_request(applier, frames[0].bytes, terminal, self.table)
            except sqlite3.Error:
                raise
            except Exception:   # a defect: logged and answered; a retry with the wager_id tells what happened
                log.exception("wager intake: a request could not be handled")
                reply = _error("internal error: the request was not handled (see settle-service's log); retry with "
                               "the same wager_id to learn whether the wager was placed")
        self.sock.send(json.dumps(reply).encode())
        return True

    def close(self) -> None:
        """Close the socket and the authenticator (and the context if it was made here)."""
        if self.sock is not None:
            self.sock.close(0)
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        if self._own_ctx:
            self.ctx.term()
            self._own_ctx = False
