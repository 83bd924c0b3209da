"""Key files of the roll bus: CURVE certificates (transport) and Ed25519 signing keys (messages).

For a key set named ``NAME`` in a directory ``DIR``:

============================  ===============================================================
``DIR/NAME.key``              CURVE public certificate (ZeroMQ ``zmq.auth`` format, Z85)
``DIR/NAME.key_secret``       CURVE secret certificate (mode 0600)
``DIR/NAME.ed25519``          Ed25519 signing key: 32-byte seed, hex, one line (mode 0600)
``DIR/NAME.ed25519.pub``      Ed25519 verify key, hex, one line
``DIR/authorized/NAME.key``   copy of a subscriber's CURVE public certificate: the allow-list
                              the table's ZAP authenticator reads
============================  ===============================================================

The table needs its own ``.key_secret`` and ``.ed25519`` and the allow-list; a subscriber needs
its own ``.key_secret``, the table's ``.key`` (to authenticate the server) and the table's
``.ed25519.pub`` (to verify signatures). CURVE is Curve25519 + XSalsa20-Poly1305 (ZMTP CURVE,
RFC 26/CurveZMQ); signatures are Ed25519 (RFC 8032) via PyNaCl.
"""
from __future__ import annotations

import logging
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import nacl.exceptions
import nacl.signing
import zmq
import zmq.auth


class BusKeyError(Exception):
    """A key file is missing or unreadable (the message names the file)."""


@dataclass(frozen=True)
class KeyFiles:
    """Paths of one key set (see module docstring)."""

    curve_public: Path
    curve_secret: Path
    sign_secret: Path
    sign_public: Path


def key_files(directory: Path, name: str) -> KeyFiles:
    """The four paths of key set ``name`` in ``directory`` (files need not exist)."""
    d = Path(directory)
    return KeyFiles(d / f"{name}.key", d / f"{name}.key_secret", d / f"{name}.ed25519", d / f"{name}.ed25519.pub")


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def generate_keys(directory: Path, name: str, *, force: bool = False) -> KeyFiles:
    """Generate a CURVE key pair and an Ed25519 signing key named ``name`` in ``directory``.

    Args:
        directory: created if missing.
        name: file stem (letters, digits, '.', '_', '-').
        force: overwrite existing files; without it an existing key set is an error.
    Returns:
        the :class:`KeyFiles` written.
    Raises:
        FileExistsError: a file of the set exists and ``force`` is false.
        ValueError: bad name.
    """
    from bus.config import _NAME

    if not _NAME.match(name):
        raise ValueError(f"key name must be 1-64 characters of letters, digits, '.', '_', '-': {name!r}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    kf = key_files(d, name)
    existing = [p for p in (kf.curve_public, kf.curve_secret, kf.sign_secret, kf.sign_public) if p.exists()]
    if existing and not force:
        raise FileExistsError(f"key files exist (overwrite with force=True, craps-table keys generate --force): "
                              f"{', '.join(map(str, existing))}")
    for p in existing:
        p.unlink()
    old_umask = os.umask(0o077)  # the secret certificate is never readable by others, not even briefly
    try:
        pub, sec = zmq.auth.create_certificates(str(d), name)
    finally:
        os.umask(old_umask)
    os.chmod(sec, 0o600)
    os.chmod(pub, 0o644)
    sk = nacl.signing.SigningKey.generate()
    _write_private(kf.sign_secret, sk.encode().hex() + "\n")
    kf.sign_public.write_text(sk.verify_key.encode().hex() + "\n")
    return kf


def authorize(cert: Path, authorized_dir: Path) -> Path:
    """Add a subscriber's CURVE public certificate to the allow-list directory.

    Raises:
        BusKeyError: ``cert`` is missing or not a public certificate.
    """
    cert = Path(cert)
    load_curve_public(cert)
    Path(authorized_dir).mkdir(parents=True, exist_ok=True)
    dest = Path(authorized_dir) / cert.name
    shutil.copyfile(cert, dest)
    return dest


def ensure_keys(directory: Path, *, table: str = "table", subscriber: str = "settlement",
                authorized_dir: Path | None = None) -> dict[str, KeyFiles]:
    """Zero-setup key set for a demo or test: generate what is missing, leave the rest.

    Makes key set ``table`` (the table's CURVE server key and signing key) and ``subscriber``
    (the settlement subscriber's CURVE client key) in ``directory`` if absent, and puts the
    subscriber's public certificate in the allow-list ``authorized_dir`` (default
    ``directory / "authorized"``). Idempotent.

    Returns:
        ``{"table": KeyFiles, "subscriber": KeyFiles}``.
    """
    d = Path(directory)
    out = {}
    for role, name in (("table", table), ("subscriber", subscriber)):
        kf = key_files(d, name)
        if not (kf.curve_public.exists() and kf.curve_secret.exists()
                and kf.sign_secret.exists() and kf.sign_public.exists()):
            kf = generate_keys(d, name, force=True)
        out[role] = kf
    allow = Path(authorized_dir) if authorized_dir is not None else d / "authorized"
    if not (allow / out["subscriber"].curve_public.name).exists():
        authorize(out["subscriber"].curve_public, allow)
    return out


def subscriber_key_steps(bus_cfg, *, table: bool, subscriber: bool) -> str:
    """The ``craps-table keys`` commands (bus/cli.py) that make the table's key set (``table``)
    and the subscriber's, put into the allow-list (``subscriber``), in ``bus_cfg.keys_dir``."""
    keys_dir = Path(bus_cfg.keys_dir)
    steps = []
    if table:
        steps.append(f"`craps-table keys generate {bus_cfg.table_key} --dir {keys_dir}`")
    if subscriber:
        steps.append(f"`craps-table keys generate {bus_cfg.subscriber_key} --dir {keys_dir} --authorize`")
    return " and then ".join(steps)


def missing_subscriber_keys(bus_cfg) -> str | None:
    """What a subscriber of the bus ``bus_cfg`` (a :class:`bus.config.BusConfig`) lacks of the key
    files it reads (the table's CURVE public certificate and Ed25519 verify key, its own CURVE
    secret certificate) and the commands that make them; ``None`` when nothing is missing.

    Nothing is created: a subscriber never makes the table's keys (a new table key would match
    no running table, and a subscriber would hold the table's secret signing key).
    """
    keys_dir = Path(bus_cfg.keys_dir)
    if not keys_dir.is_dir():
        return (f"bus.keys_dir {keys_dir} does not exist; make the keys with "
                + subscriber_key_steps(bus_cfg, table=True, subscriber=True))
    table = key_files(keys_dir, bus_cfg.table_key)
    sub = key_files(keys_dir, bus_cfg.subscriber_key)
    no_table = [p.name for p in (table.curve_public, table.sign_public) if not p.is_file()]
    no_sub = [p.name for p in (sub.curve_secret,) if not p.is_file()]
    if not no_table and not no_sub:
        return None
    return (f"bus.keys_dir {keys_dir}: missing {', '.join(no_table + no_sub)}; make the keys with "
            + subscriber_key_steps(bus_cfg, table=bool(no_table), subscriber=bool(no_sub)))


def load_curve_public(path: Path) -> bytes:
    """The Z85 CURVE public key (40 bytes) in a certificate file.

    Raises:
        BusKeyError: missing or malformed file.
    """
    if not Path(path).is_file():
        raise BusKeyError(f"cannot read CURVE public certificate {path}: no such file")
    try:
        public, _ = zmq.auth.load_certificate(str(path))
    except (OSError, ValueError) as exc:
        raise BusKeyError(f"cannot read CURVE public certificate {path}: {exc}") from exc
    if not public or len(public) != 40:
        raise BusKeyError(f"no CURVE public key in {path}")
    return public


def check_allow_list(folder: Path) -> int:
    """Read every public certificate (``*.key``) of a CURVE allow-list folder; returns how many.

    ZeroMQ's authenticator (``zmq.auth``, ``configure_curve``) drops the whole allow-list when one
    certificate in the folder cannot be read: it logs an error and then lets no client connect,
    the good ones included. So a folder is checked before it is given to the authenticator.

    Raises:
        BusKeyError: the folder does not exist, or a certificate in it cannot be read (named).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise BusKeyError(f"CURVE allow-list folder {folder} does not exist")
    certs = sorted(folder.glob("*.key"))
    for cert in certs:
        try:
            load_curve_public(cert)
        except BusKeyError as exc:
            raise BusKeyError(f"CURVE allow-list {folder}: {exc} (ZeroMQ would then refuse every client); "
                              "remove it, or copy the client's public certificate there again") from None
    return len(certs)


def load_curve_secret(path: Path) -> tuple[bytes, bytes]:
    """(public, secret) Z85 CURVE keys from a secret certificate file.

    Raises:
        BusKeyError: missing or malformed file, or no secret key in it.
    """
    if not Path(path).is_file():
        raise BusKeyError(f"cannot read CURVE secret certificate {path}: no such file")
    try:
        public, secret = zmq.auth.load_certificate(str(path))
    except (OSError, ValueError) as exc:
        raise BusKeyError(f"cannot read CURVE secret certificate {path}: {exc}") from exc
    if not secret or len(secret) != 40 or not public or len(public) != 40:
        raise BusKeyError(f"no CURVE secret key in {path} (is it the .key_secret file?)")
    return public, secret


def load_signing_key(path: Path) -> nacl.signing.SigningKey:
    """The Ed25519 signing key from a ``.ed25519`` file (hex seed).

    Raises:
        BusKeyError: missing or malformed file.
    """
    try:
        seed = bytes.fromhex(Path(path).read_text().strip())
        return nacl.signing.SigningKey(seed)
    except (OSError, ValueError, nacl.exceptions.CryptoError, TypeError) as exc:
        raise BusKeyError(f"cannot read Ed25519 signing key {path}: {exc}") from exc


def load_verify_key(path: Path) -> nacl.signing.VerifyKey:
    """The Ed25519 verify key from a ``.ed25519.pub`` file (hex).

    Raises:
        BusKeyError: missing or malformed file.
    """
    try:
        raw = bytes.fromhex(Path(path).read_text().strip())
        return nacl.signing.VerifyKey(raw)
    except (OSError, ValueError, nacl.exceptions.CryptoError, TypeError) as exc:
        raise BusKeyError(f"cannot read Ed25519 verify key {path}: {exc}") from exc


class RefusalLog(logging.LoggerAdapter):
    """The logger to give pyzmq's ZAP authenticator (``ThreadAuthenticator(ctx, log=...)``): it
    logs a refused client ("DENIED ...", a CURVE key not in the allow-list) at DEBUG only, so a
    console or subscriber with the wrong key left no trace on the serving side. This adapter
    logs those at WARNING, at most once per ``every_s`` seconds per message (a refused client
    reconnects every 0.1 s), with how many were held back; everything else as pyzmq logs it.

    Args:
        logger: where to log (e.g. ``logging.getLogger("bus.auth")``).
        what: the server, for the message (e.g. ``"roll bus"``, ``"boxperson commands"``).
        every_s: seconds between two warnings of one message.

    At most :attr:`KEEP` messages are remembered (each refused key makes its own): past that,
    those last warned more than ``every_s`` ago are forgotten (their next refusal is warned
    about anyway), then the oldest, so a stream of refused keys cannot grow the service's
    memory while it runs for weeks.
    """

    #: refusal messages remembered at most
    KEEP = 256

    def __init__(self, logger: logging.Logger, what: str, every_s: float = 60.0) -> None:
        super().__init__(logger, {})
        self.what = what
        self.every_s = every_s
        self._last: dict[str, tuple[float, int]] = {}

    def debug(self, msg, *args, **kwargs) -> None:
        """pyzmq's DEBUG call. A message starting ``"DENIED"`` (after ``msg % args``) is logged at
        WARNING on :attr:`logger`, naming :attr:`what`, at most once per ``every_s`` seconds per
        distinct text and with how many were held back since; any other message goes on at DEBUG
        unchanged. A ``msg`` whose ``args`` do not fit is taken as ``str(msg)``, not raised on.
        """
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = str(msg)
        if not text.startswith("DENIED"):
            self.logger.debug(msg, *args, **kwargs)
            return
        now = time.monotonic()
        last, held = self._last.get(text, (-math.inf, 0))
        if now - last < self.every_s:
            self._last[text] = (last, held + 1)
            return
        more = f" ({held} more refusals like it held back)" if held else ""
        self.logger.warning("%s: a client was refused by CURVE authentication: %s%s", self.what, text, more)
        self._last.pop(text, None)
        if len(self._last) >= self.KEEP:
            self._last = {k: v for k, v in self._last.items() if now - v[0] < self.every_s}
            while len(self._last) >= self.KEEP:
                del self._last[next(iter(self._last))]
        self._last[text] = (now, 0)

