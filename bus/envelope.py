"""The signed envelope every bus message travels in.

Wire form: a two-frame ZeroMQ message ``[topic, envelope]`` where ``envelope`` is UTF-8 JSON
(the canonical bytes of the signed fields with ``"sig"`` appended last)::

    {"v": 1, "journal_id": str, "seq": int, "ts": str, "table_id": str, "topic": str,
     "body": {...}, "sig": str}

* ``seq``: the journal's sequence number, 1, 2, 3... rising across publisher restarts; for a
  ``heartbeat`` it is the last journalled sequence number (heartbeats are not journalled).
* ``ts``: UTC ISO 8601 time of publication, microseconds.
* ``journal_id``: random id of the table's journal; a subscriber refuses a different one (a
  wiped journal would restart the sequence numbers).
* ``sig``: Ed25519 signature (RFC 8032, hex) by the table's signing key over the canonical
  JSON of all the other fields: ``json.dumps(sort_keys=True, separators=(",", ":"),
  ensure_ascii=False, allow_nan=False).encode("utf-8")``.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import nacl.exceptions
import nacl.signing

VERSION = 1
HEARTBEAT = "heartbeat"
#: Topic of the signed header of a replay batch (never journalled, never delivered): its
#: ``seq`` is the journal's last sequence number and its body ``{"from", "first", "head",
#: "count", "nonce"}`` (``nonce``: the subscriber's, from its REPLAY request).
REPLAY_HEADER = "replay-header"
#: Topics the publisher refuses to journal (they are the bus's own).
RESERVED_TOPICS = (HEARTBEAT, REPLAY_HEADER)
_FIELDS = {"v", "journal_id", "seq", "ts", "table_id", "topic", "body", "sig"}
MAX_ENVELOPE_BYTES = 1 << 20


class EnvelopeError(ValueError):
    """A message that is not a well-formed, correctly signed envelope. ``reason`` is a code:
    ``"malformed"``, ``"bad_signature"``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def canonical(fields: dict[str, Any]) -> bytes:
    """Canonical JSON bytes of ``fields`` (sorted keys, no spaces, UTF-8, no NaN/Infinity).

    Raises:
        ValueError / TypeError: a value JSON cannot represent exactly (NaN, a set, bytes...).
    """
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def utc_now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds, e.g. ``2026-11-29T22:57:46.123456+00:00``."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def check_topic(topic: str) -> str:
    """Validate a topic: 1-64 printable ASCII characters without spaces. Returns it.

    Raises:
        ValueError: naming what is wrong.
    """
    if not isinstance(topic, str) or not (1 <= len(topic) <= 64) or not topic.isascii() \
            or not topic.isprintable() or " " in topic:
        raise ValueError(f"topic must be 1-64 printable ASCII characters without spaces: {topic!r}")
    return topic


def seal(key: nacl.signing.SigningKey, *, journal_id: str, seq: int, table_id: str, topic: str,
         body: dict, ts: str | None = None) -> tuple[dict, bytes]:
    """Build and sign an envelope. Returns ``(envelope dict, wire bytes)``.

    Raises:
        TypeError: ``body`` is not a dict; ValueError: body not JSON-representable, bad topic.
    """
    if not isinstance(body, dict):
        raise TypeError(f"body must be a dict, not {type(body).__name__}")
    check_topic(topic)
    fields = {"v": VERSION, "journal_id": journal_id, "seq": int(seq), "ts": ts or utc_now_iso(),
              "table_id": table_id, "topic": topic, "body": body}
    try:
        unsigned = canonical(fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"body of topic {topic!r} is not plain JSON (dict/list/str/int/float/bool/None, "
                         f"no NaN): {exc}") from exc
    sig = key.sign(unsigned).signature.hex()
    env = json.loads(unsigned)  # a copy with the exact values the subscriber will see
    env["sig"] = sig
    wire = unsigned[:-1] + b',"sig":"' + sig.encode("ascii") + b'"}'
    if len(wire) > MAX_ENVELOPE_BYTES:
        raise ValueError(f"envelope of {len(wire)} bytes exceeds {MAX_ENVELOPE_BYTES}")
    return env, wire


def open_envelope(wire: bytes, verify_key: nacl.signing.VerifyKey) -> dict:
    """Parse, validate and verify wire bytes. Returns the envelope dict (with ``sig``).

    Raises:
        EnvelopeError: ``reason="malformed"`` (not JSON, missing/extra/mistyped field) or
            ``reason="bad_signature"`` (signature does not verify with ``verify_key``).
    """
    if not isinstance(wire, (bytes, bytearray, memoryview)) or len(wire) > MAX_ENVELOPE_BYTES:
        raise EnvelopeError("malformed", "not bytes or too large")
    try:
        env = json.loads(bytes(wire).decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:   # RecursionError: nested too deep
        raise EnvelopeError("malformed", f"not UTF-8 JSON: {type(exc).__name__}: {exc}") from None
    if not isinstance(env, dict) or set(env) != _FIELDS:
        got = sorted(env) if isinstance(env, dict) else type(env).__name__
        raise EnvelopeError("malformed", f"fields must be {sorted(_FIELDS)}, got {got}")
    if env["v"] != VERSION:
        raise EnvelopeError("malformed", f"unsupported envelope version {env['v']!r}")
    if type(env["seq"]) is not int or env["seq"] < 0:
        raise EnvelopeError("malformed", f"seq must be a non-negative int: {env['seq']!r}")
    for f in ("journal_id", "ts", "table_id", "topic", "sig"):
        if not isinstance(env[f], str):
            raise EnvelopeError("malformed", f"{f} must be a string")
    if not isinstance(env["body"], dict):
        raise EnvelopeError("malformed", "body must be an object")
    try:
        sig = bytes.fromhex(env["sig"])
    except ValueError:
        raise EnvelopeError("malformed", "sig is not hex") from None
    if len(sig) != 64:
        raise EnvelopeError("malformed", "sig is not 64 bytes")
    unsigned = {k: v for k, v in env.items() if k != "sig"}
    try:
        verify_key.verify(canonical(unsigned), sig)
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        raise EnvelopeError("bad_signature", f"seq {env['seq']} topic {env['topic']!r} "
                                             f"table {env['table_id']!r}") from None
    return env


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")

