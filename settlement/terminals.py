"""Which players each player terminal of the wager intake serves (settlement/intake.py).

The intake's CURVE allow-list folder (``--intake-allow DIR``, ``[settlement]
intake_authorized_dir``) holds the terminals' public certificates ``NAME.key`` (bus/keys.py)
and one file, :data:`BINDINGS_FILE` (``terminals.toml``), that binds each terminal, by the NAME
of its certificate, to the player ids it serves::

    # terminal (certificate NAME.key) = the players it wagers for and reads the balance of
    terminal-1 = ["p1"]
    terminal-2 = ["p3", "p4"]
    "bar.7" = []            # a NAME with a dot is quoted; [] serves no player

A terminal may place wagers and read balances only for its players; a terminal with no line (or
no ``terminals.toml`` at all) serves no player. A line whose NAME has no certificate in the
folder is ignored (logged): removing ``NAME.key`` is how a terminal is revoked, whatever the
file says. Player ids are what the wagers carry (``"player"``), at most 100 printable
characters. Ground: a wager is made by the player at their own position (9 NYCRR
5324.52(a)(2)(i): areas that "correspond to player positions at the table"; (c)(6): "Only
players who are seated at a mini-craps table may place a wager"): a terminal is a position,
and what may be done from it is the house's control, which surveillance reviews in this file.

:func:`load_terminals` reads the folder as a whole (every certificate, then the bindings). The
watch of the folder is the one the other allow-listed sockets use (bus/allowwatch.py, with
``terminals.toml`` among the files whose change is a change).
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bus.allowwatch import AllowList, Cert, short_key

__all__ = ["BINDINGS_FILE", "BindingError", "Terminal", "TerminalTable", "load_terminals",
           "short_key"]

#: the bindings file in the allow-list folder
BINDINGS_FILE = "terminals.toml"
#: the longest player id a binding names (characters; as a wager's ``player``)
MAX_PLAYER_CHARS = 100
_LINE = re.compile(r"\(at line (\d+), column \d+\)")


class BindingError(ValueError):
    """``terminals.toml`` cannot be used: not TOML, or a value that is not a list of player ids
    (the message names the file and the line)."""


@dataclass(frozen=True)
class Terminal(Cert):
    """One allow-listed terminal (a :class:`bus.allowwatch.Cert` with its players).

    Attributes:
        name: the NAME of its certificate ``NAME.key``.
        key: its CURVE public key (Z85, 40 characters: what the intake socket authenticates).
        cert: the certificate file.
        players: the player ids it serves (empty: none).
    """

    players: frozenset[str]


@dataclass(frozen=True)
class TerminalTable(AllowList):
    """The allow-list folder as read: terminals by key, and the bindings' stray names (a
    :class:`bus.allowwatch.AllowList`; ``without_removed`` keeps ``stray``).

    Attributes:
        folder: the allow-list folder.
        by_key: each terminal by its Z85 public key.
        stray: names in ``terminals.toml`` with no certificate in the folder (ignored).
    """

    stray: tuple[str, ...] = ()

    @property
    def bindings(self) -> Path:
        """The bindings file's path."""
        return self.folder / BINDINGS_FILE

    def refusal(self, key: str | None, player: str | None) -> str | None:
        """Why the terminal of ``key`` may not act for ``player`` (``None``: any command not about
        a player), or ``None`` if it may."""
        t = self.by_key.get(key) if key is not None else None
        if t is None:
            return (f"terminal key {short_key(key)} is not in the allow-list {self.folder} (its certificate was "
                    "removed): request refused, nothing written")
        if player is not None and player not in t.players:
            serves = ", ".join(sorted(t.players)) or "no player"
            return (f"terminal {t.label()} is not bound to player {player!r} (it serves {serves}: {self.bindings}): "
                    "request refused, nothing written")
        return None

    def summary(self) -> str:
        """One line for the service's log: how many terminals, and those that serve no player."""
        idle = sorted(t.name for t in self.by_key.values() if not t.players)
        out = f"{len(self.by_key)} terminal certificate(s) in {self.folder}"
        if idle:
            out += f"; serving no player (no line in {BINDINGS_FILE}, or []): {', '.join(idle)}"
        if self.stray:
            out += f"; {BINDINGS_FILE} names terminals without a certificate (ignored): {', '.join(self.stray)}"
        return out


def _line_of(text: str, name: str) -> int:
    """The line of ``terminals.toml`` that binds ``name`` (1-based; 0 if not found)."""
    n = re.escape(name)
    key = re.compile(r'^\s*(' + n + r'|"' + n + r'"|\'' + n + r'\')\s*[=.]')       # NAME = ..., NAME.x = ...
    table = re.compile(r'^\s*\[+\s*(' + n + r'|"' + n + r'"|\'' + n + r'\')\s*[\].]')   # [NAME], [NAME.x]
    for i, line in enumerate(text.splitlines(), 1):
        if key.match(line) or table.match(line):
            return i
    return 0


def read_bindings(path: Path) -> dict[str, frozenset[str]]:
    """The bindings in ``path`` (a missing file: none).

    Raises:
        BindingError: unreadable, not UTF-8 TOML, or a value not a list of player ids (non-empty
            printable strings of at most :data:`MAX_PLAYER_CHARS` characters); the message names
            the file and the line.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BindingError(f"{path}: cannot read it: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _LINE.search(str(exc))
        last = len(text.splitlines()) or 1
        where = f" line {m.group(1)}" if m else f" line {last}" if "(at end of document)" in str(exc) else ""
        raise BindingError(f"{path}{where}: not TOML: {exc}") from None
    out: dict[str, frozenset[str]] = {}
    for name, players in data.items():
        line = _line_of(text, name)
        where = f"{path} line {line}" if line else f"{path} (terminal {name!r})"
        if not isinstance(players, list):
            raise BindingError(f"{where}: {name} must be a list of player ids, e.g. {name} = [\"p1\"], got "
                               f"{players!r}" + (" (a TOML table: write NAME = [...] at the top level, a NAME with a "
                                                 "dot in quotes)" if isinstance(players, dict) else ""))
        for p in players:
            if not isinstance(p, str) or not p.strip() or len(p) > MAX_PLAYER_CHARS or not p.isprintable():
                raise BindingError(f"{where}: {name}: a player id must be a non-empty string of at most "
                                   f"{MAX_PLAYER_CHARS} printable characters, got {p!r}")
        out[name] = frozenset(players)
    return out


def load_terminals(folder: Path) -> TerminalTable:
    """Read the allow-list folder: every certificate ``*.key`` (as the ZAP authenticator will)
    and ``terminals.toml``.

    Raises:
        bus.keys.BusKeyError: the folder does not exist, or a certificate cannot be read (named).
        BindingError: ``terminals.toml`` is malformed (file and line named), or two certificates
            hold the same public key (one terminal would have two bindings).
    """
    from bus.keys import check_allow_list, load_curve_public

    folder = Path(folder)
    check_allow_list(folder)
    bindings = read_bindings(folder / BINDINGS_FILE)
    by_key: dict[str, Terminal] = {}
    names = set()
    for cert in sorted(folder.glob("*.key")):
        key = load_curve_public(cert).decode("ascii")
        name = cert.name[:-len(".key")]
        names.add(name)
        if key in by_key:
            raise BindingError(f"{cert} and {by_key[key].cert} hold the same public key {short_key(key)}: one "
                               "terminal, one certificate (remove one of them)")
        by_key[key] = Terminal(name, key, cert, bindings.get(name, frozenset()))
    stray = tuple(sorted(set(bindings) - names))
    return TerminalTable(folder, by_key, stray)
