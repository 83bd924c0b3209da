"""A CURVE allow-list folder in effect, and the watch that reads it again when it changes.

Three sockets admit clients by an allow-list folder of public certificates ``NAME.key``
(bus/keys.py): the roll bus publisher (bus/publisher.py), the boxperson / technician command
socket (controller/boxperson.py) and settlement's wager intake (settlement/intake.py). Each
holds an :class:`AllowListWatch`, which

- keeps the list in effect (:attr:`AllowListWatch.table`: the keys, by Z85 public key);
- answers the socket's ZAP authenticator from it (:meth:`AllowListWatch.attach`: a key not in
  the list in effect fails the CURVE handshake), so the list in effect is the one truth for new
  connections and, checked by each server per request (:meth:`AllowListWatch.allows`), for
  connections already open;
- reads the folder again when it changed (:meth:`AllowListWatch.refresh`, looked at most once
  per :data:`RELOAD_EVERY_S` from the socket's own loop): a folder read whole replaces the list;
  one that cannot be read (a certificate that is not one, the folder gone) is logged at ERROR
  naming the file, and the list in effect is kept less the keys whose certificate file is gone:
  a reload never widens access, and a removal never waits for a fixed folder.

Ground: a disputed throw is the boxperson's to decide ("the boxperson shall have discretion to
determine which face is uppermost or shall void the throw", 9 NYCRR 5324.52(h)(1)(ii)(a); "The
boxperson shall be responsible for any questions or disputes regarding the conduct of the
game", N.J.A.C. 13:47-20.25(d)), so only the consoles the house allows may decide one; and the
project's rule that nothing is read by anyone not allowed to (the roll stream, the wagers).
Revoking a key is removing its certificate: effective within a second, without a restart.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

__all__ = ["RELOAD_EVERY_S", "AllowList", "AllowListWatch", "Cert", "Reload", "folder_state", "load_allow_list",
           "short_key"]

#: how often a watch looks whether the folder changed (seconds, at most once per)
RELOAD_EVERY_S = 1.0


def short_key(key: str | None) -> str:
    """The short form of a Z85 CURVE public key for messages: its first 8 characters and "..."."""
    return "(none)" if key is None else f"{key[:8]}..."


@dataclass(frozen=True)
class Cert:
    """One allow-listed key.

    Attributes:
        name: the NAME of its certificate ``NAME.key``.
        key: its CURVE public key (Z85, 40 characters: what the socket authenticates).
        cert: the certificate file.
    """

    name: str
    key: str
    cert: Path

    def label(self) -> str:
        """``NAME (key XXXXXXXX...)``: how messages name the key."""
        return f"{self.name} (key {short_key(self.key)})"


@dataclass(frozen=True)
class AllowList:
    """An allow-list folder as read: each key's :class:`Cert` by its Z85 public key.

    Attributes:
        folder: the allow-list folder.
        by_key: each certificate by its Z85 public key.
    """

    folder: Path
    by_key: dict = field(default_factory=dict)

    def without_removed(self) -> "AllowList":
        """This list without the keys whose certificate file is gone (what a reload that failed
        still applies: a removal never waits for a fixed folder)."""
        return dataclasses.replace(self, by_key={k: c for k, c in self.by_key.items() if c.cert.is_file()})

    def allows(self, key: str | None) -> bool:
        """Whether ``key`` (Z85) is in the list."""
        return key is not None and key in self.by_key

    def summary(self) -> str:
        """One line for a service's log: how many certificates, and where."""
        return f"{len(self.by_key)} certificate(s) in {self.folder}"


def load_allow_list(folder: Path) -> AllowList:
    """Read every certificate ``*.key`` of an allow-list folder.

    Raises:
        bus.keys.BusKeyError: the folder does not exist, or a certificate cannot be read (named).
    """
    from bus.keys import check_allow_list, load_curve_public

    folder = Path(folder)
    check_allow_list(folder)
    by_key = {}
    for cert in sorted(folder.glob("*.key")):
        key = load_curve_public(cert).decode("ascii")
        by_key.setdefault(key, Cert(cert.name[:-len(".key")], key, cert))
    return AllowList(folder, by_key)


def folder_state(folder: Path, also: Iterable[str] = ()) -> tuple | None:
    """What changes when the allow-list folder does: each certificate's (and each file named in
    ``also``) (name, inode, size, mtime in ns), and the folder's own mtime; ``None`` if the
    folder is gone."""
    folder, also = Path(folder), frozenset(also)
    try:
        own = folder.stat().st_mtime_ns
        entries = []
        with os.scandir(folder) as it:
            for e in it:
                if e.name.endswith(".key") or e.name in also:
                    try:
                        st = e.stat()
                    except FileNotFoundError:
                        continue
                    entries.append((e.name, st.st_ino, st.st_size, st.st_mtime_ns))
    except (FileNotFoundError, NotADirectoryError):
        return None
    return own, tuple(sorted(entries))


@dataclass(frozen=True)
class Reload:
    """What a :meth:`AllowListWatch.refresh` that saw a change did.

    Attributes:
        ok: the folder was read whole (else it was kept, less the removed certificates).
        removed: the keys no longer allowed (Z85).
        added: the keys newly allowed (Z85; none when not ``ok``).
        line: what was logged.
    """

    ok: bool
    removed: frozenset
    added: frozenset
    line: str


class AllowListWatch:
    """The allow-list in effect of one socket, read again when its folder changes.

    Args:
        folder: the allow-list folder.
        what: the socket, for messages (``"roll bus"``, ``"boxperson commands"``, ``"wager intake"``).
        logger: where reloads (INFO) and failed reloads (ERROR) are logged.
        load: reads the folder into a list (default :func:`load_allow_list`; the intake's
            :func:`settlement.terminals.load_terminals`); it raises one of ``errors``.
        also: other file names of the folder whose change is a change (``terminals.toml``).
        errors: what ``load`` raises for a folder that cannot be used (default
            :class:`bus.keys.BusKeyError`).
        noun: what the keys are, for messages (``"keys"``, ``"terminals"``, ``"subscribers"``).
        reload_every_s: seconds between two looks (:meth:`refresh`).

    Raises:
        whatever ``load`` raises for the folder at start (a missing folder, an unreadable
        certificate: named): a socket does not start on a list it cannot read.
    """

    #: removed keys whose name is remembered for refusal messages, at most
    KEEP = 1024

    def __init__(self, folder: Path, what: str, logger: logging.Logger, *,
                 load: Callable[[Path], AllowList] = load_allow_list, also: Iterable[str] = (),
                 errors: tuple = (), noun: str = "keys", reload_every_s: float = RELOAD_EVERY_S) -> None:
        from bus.keys import BusKeyError

        self.folder = Path(folder)
        self.what, self.log, self.noun = what, logger, noun
        self._load, self._also = load, tuple(also)
        self._errors = (BusKeyError,) + tuple(errors)
        self.reload_every_s = reload_every_s
        self._state = folder_state(self.folder, self._also)
        #: the list in effect (replaced whole, never changed in place: read from other threads)
        self.table = load(self.folder)
        self._next_look = time.monotonic() + reload_every_s
        self._lock = threading.Lock()
        #: why the last reload failed (the exception ``load`` raised), or ``None``
        self.last_error: Exception | None = None
        #: certificate names of keys removed since start, by key (for refusals; at most :attr:`KEEP`)
        self.removed_names: dict[str, str] = {}

    def allows(self, key: str | None) -> bool:
        """Whether the key (Z85; ``None``: no key) is in the list in effect."""
        return self.table.allows(key)

    def refusal(self, key: str | None, action: str) -> str | None:
        """Why ``key`` is refused (it is not in the list in effect), naming it short, or ``None``.
        ``action`` ends the message: what is not done (``"command refused, nothing applied"``)."""
        if self.allows(key):
            return None
        name = self.removed_names.get(key) if key is not None else None
        who = f"{name} (key {short_key(key)})" if name else f"key {short_key(key)}"
        return (f"{self.what}: {who} is not in the allow-list {self.folder} (its certificate was removed): "
                f"{action}")

    def callback(self, domain: str, key: bytes) -> bool:
        """The ZAP authenticator's question (pyzmq ``configure_curve_callback``): whether the
        client's Z85 ``key`` is in the list in effect."""
        try:
            return self.allows(key.decode("ascii"))
        except (AttributeError, UnicodeDecodeError):
            return False

    def attach(self, auth) -> None:
        """Make the ZAP authenticator ``auth`` (a started ``zmq.auth`` authenticator) admit
        exactly the keys of the list in effect, at every handshake."""
        auth.configure_curve_callback(domain="*", credentials_provider=self)

    def refresh(self, now: float | None = None, *, force: bool = False) -> Reload | None:
        """Read the folder again if it changed; looks at most once per ``reload_every_s``
        (``force``: look now, whatever the time and the folder's state).

        A folder read whole replaces the list in effect (logged at INFO). One that cannot be
        read is logged at ERROR naming the file; the list in effect is kept, less the keys whose
        certificate file is gone.

        Args:
            now: ``time.monotonic()`` (default: now).

        Returns:
            what was done (:class:`Reload`), or ``None``: not looked, or unchanged.
        """
        with self._lock:
            return self._refresh(time.monotonic() if now is None else now, force)

    def _refresh(self, now: float, force: bool) -> Reload | None:
        if not force and now < self._next_look:
            return None
        self._next_look = now + self.reload_every_s
        state = folder_state(self.folder, self._also)
        if state == self._state and not force:
            return None
        self._state = state
        old = self.table
        done = self._reload(old)
        for k in done.removed:
            self.removed_names.pop(k, None)
            self.removed_names[k] = old.by_key[k].name
        for k in done.added:
            self.removed_names.pop(k, None)
        while len(self.removed_names) > self.KEEP:
            del self.removed_names[next(iter(self.removed_names))]
        return done

    def _reload(self, old: AllowList) -> Reload:
        try:
            table = self._load(self.folder)
        except self._errors as exc:
            self.last_error = exc
            kept = old.without_removed()
            removed = frozenset(old.by_key) - frozenset(kept.by_key)
            self.table = kept
            gone = ", ".join(sorted(old.by_key[k].name for k in removed))
            line = (f"{self.what}: allow-list {self.folder} not reloaded: {exc}; the list in effect is kept"
                    + (f", less the {self.noun} whose certificate was removed: {gone}" if gone else ""))
            self.log.error("%s", line)
            return Reload(False, removed, frozenset(), line)
        self.table, self.last_error = table, None
        line = f"{self.what}: allow-list reloaded: {table.summary()}"
        self.log.info("%s", line)
        return Reload(True, frozenset(old.by_key) - frozenset(table.by_key),
                      frozenset(table.by_key) - frozenset(old.by_key), line)
