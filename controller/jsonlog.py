"""Structured logs: one JSON object per line on stdout, for journald (and ``jq``).

Under systemd, stdout goes to the journal; ``journalctl -u craps-table -o cat | jq`` reads the
objects back. When stdout *is* the journal (``JOURNAL_STREAM`` matches stdout's device and
inode, systemd.exec(5)), each line is prefixed with its syslog priority ``<N>`` so that
``journalctl -p warning`` filters by level (journald strips the prefix, ``SyslogLevelPrefix=``
is on by default).

Example::

    from controller.jsonlog import setup_logging
    log = setup_logging("INFO")
    log.info("roll", extra={"roll_id": "r-12", "verdict": "roll", "dice": [3, 4]})
    # {"ts": "2026-11-29T23:10:01.123456Z", "level": "INFO", "logger": "craps_table",
    #  "msg": "roll", "roll_id": "r-12", "verdict": "roll", "dice": [3, 4]}
"""
from __future__ import annotations

import json
import logging
import math
import os
import sys
from datetime import datetime, timezone
from typing import IO, Mapping

__all__ = ["JsonFormatter", "setup_logging", "stdout_is_journal"]

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_RECORD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}

#: Python level -> syslog priority (RFC 5424): 2 crit, 3 err, 4 warning, 6 info, 7 debug.
_PRIORITY = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4, logging.INFO: 6, logging.DEBUG: 7}


def _priority(levelno: int) -> int:
    for level in sorted(_PRIORITY, reverse=True):
        if levelno >= level:
            return _PRIORITY[level]
    return 7


def _jsonable(value: object) -> object:
    """Fallback for ``json.dumps``: numpy scalars/arrays, paths, bytes, anything else as str."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def _safe_str(value: object) -> str:
    """``str(value)``, else ``repr(value)``, else ``<unprintable TYPE>``: never raises."""
    for fn in (str, repr):
        try:
            return fn(value)
        except Exception:  # noqa: BLE001 - a value's own __str__ / __repr__ failing
            continue
    return f"<unprintable {type(value).__name__}>"


def _text(text: str) -> str:
    """``text`` without lone surrogates (a file name or bytes decoded with ``surrogateescape``):
    each is written as the text ``\\udcff``. JSON allows them as escapes, but jq and other
    strict readers refuse them."""
    if any("\ud800" <= c <= "\udfff" for c in text):
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _sanitize(value: object, seen: frozenset[int] = frozenset(), depth: int = 0) -> object:
    """``value`` made plain JSON: dict keys as strings, NaN and infinities as the strings
    ``"nan"``, ``"inf"``, ``"-inf"``, a container inside itself as ``"<circular>"``, anything
    :func:`_jsonable` cannot convert as its ``str`` / ``repr``, lone surrogates as text
    (:func:`_text`)."""
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if depth > 64:
        return "<too deep>"
    if id(value) in seen:
        return "<circular>"
    inner = seen | {id(value)}
    if isinstance(value, dict):
        return {_text(k if isinstance(k, str) else _safe_str(k)): _sanitize(v, inner, depth + 1)
                for k, v in list(value.items())}
    if isinstance(value, (list, tuple)):
        return [_sanitize(v, inner, depth + 1) for v in list(value)]
    try:
        converted = _jsonable(value)
    except Exception:  # noqa: BLE001 - str() or tolist() raising
        return _text(_safe_str(value))
    if isinstance(converted, str):
        return _text(converted)
    return _sanitize(converted, inner, depth + 1)


def _dumps(obj: object) -> str:
    # ASCII only: a lone surrogate (a file name decoded with surrogateescape) or any non-ASCII
    # text cannot fail to encode on a C-locale stdout; \uXXXX escapes are read back by jq.
    return json.dumps(obj, default=_jsonable, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON.

    Keys: ``ts`` (UTC ISO 8601 with microseconds and ``Z``), ``level``, ``logger``, ``msg``
    (the message with its ``%`` arguments applied), every ``extra=`` field, ``exc`` (the
    traceback text) when there is an exception, and ``stack`` with ``stack_info``.
    Extra fields that clash with these keys are stored with a leading ``_``.

    A line is never lost: the output is ASCII (other characters, lone surrogates included, as
    ``\\uXXXX`` escapes); an extra that is not plain JSON (dict keys that are not strings, NaN
    or infinities, a value that contains itself, an object whose ``str()`` raises) is written
    as near to it as JSON allows (:func:`_sanitize`); a message whose ``%`` arguments do not fit
    is written with its arguments' ``repr``.

    Args:
        syslog_prefix: put ``<N>`` (syslog priority) before the JSON, for journald.
        static: fields added to every line (e.g. ``{"table_id": "T1"}``).
    """

    def __init__(self, syslog_prefix: bool = False, static: Mapping[str, object] | None = None) -> None:
        super().__init__()
        self.syslog_prefix = syslog_prefix
        self.static = dict(static or {})

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON (with the ``<N>`` priority prefix when set)."""
        ts = datetime.fromtimestamp(record.created, tz=timezone.utc)
        try:
            msg = record.getMessage()
        except Exception as exc:  # noqa: BLE001 - "%d" given a str, too few arguments...
            msg = f"{_safe_str(record.msg)} % {_safe_str(record.args)} ({type(exc).__name__}: {exc})"
        obj: dict[str, object] = {
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "level": record.levelname,
            "logger": record.name,
            "msg": msg,
        }
        for key, value in self.static.items():
            obj[key if key not in obj else f"_{key}"] = value
        for key, value in vars(record).items():
            if key in _RECORD_ATTRS or key.startswith("_"):
                continue
            obj[key if key not in obj else f"_{key}"] = value
        if record.exc_info:
            obj["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            obj["exc"] = record.exc_text
        if record.stack_info:
            obj["stack"] = self.formatStack(record.stack_info)
        try:
            line = _dumps(obj)
            if "\\ud" in line:  # perhaps a lone surrogate: the slow path writes it as text
                line = _dumps(_sanitize(obj))
        except Exception:  # noqa: BLE001 - not plain JSON: the same, made plain
            try:
                line = _dumps(_sanitize(obj))
            except Exception as exc:  # noqa: BLE001 - last resort: the fixed keys, the rest as text
                line = _dumps({k: _text(_safe_str(v)) for k, v in obj.items()}
                              | {"_format_error": _text(_safe_str(exc))})
        return f"<{_priority(record.levelno)}>{line}" if self.syslog_prefix else line


def stdout_is_journal(stream: IO | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` (default stdout) is connected to journald: ``JOURNAL_STREAM`` is
    ``DEVICE:INODE`` of the stream's file (systemd.exec(5))."""
    env = os.environ if env is None else env
    value = env.get("JOURNAL_STREAM", "")
    if not value:
        return False
    stream = sys.stdout if stream is None else stream
    try:
        st = os.fstat(stream.fileno())
        dev, ino = (int(x) for x in value.split(":"))
    except (OSError, ValueError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def setup_logging(level: str | int = "INFO", stream: IO | None = None,
                  syslog_prefix: bool | None = None, static: Mapping[str, object] | None = None,
                  logger_name: str = "") -> logging.Logger:
    """Send the logger ``logger_name`` (default: the root logger) as JSON lines to ``stream``
    (default ``sys.stdout``), replacing its handlers. Returns the logger.

    Args:
        level: ``"DEBUG"``, ``"INFO"``, ... or a number.
        syslog_prefix: ``None`` = on when stdout is the journal (:func:`stdout_is_journal`).
        static: fields added to every line.

    Raises:
        ValueError: an unknown level name.
    """
    stream = sys.stdout if stream is None else stream
    if isinstance(level, str):
        number = logging.getLevelName(level.upper())
        if not isinstance(number, int):
            raise ValueError(f"log level {level!r}: expected DEBUG, INFO, WARNING, ERROR or CRITICAL")
        level = number
    if syslog_prefix is None:
        syslog_prefix = stdout_is_journal(stream)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter(syslog_prefix=syslog_prefix, static=static))
    logger = logging.getLogger(logger_name)
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(level)
    return logger
