"""Configuration of the roll bus (table -> settlement), a pydantic model.

One bus carries the messages of one table to its subscribers (settlement). The table binds two
sockets, both CURVE servers:

* ``pub_endpoint``: XPUB, the live stream (``XPUB_NODROP``, bounded high-water mark ``hwm``);
* ``replay_endpoint``: ROUTER, replays journalled messages since a sequence number and takes
  the subscribers' acknowledgements.

Key files live in ``keys_dir`` (see :mod:`bus.keys`); the CURVE allow-list of subscriber public
keys is ``authorized_dir`` (default ``keys_dir / "authorized"``).

Zero-setup example (demo, tests)::

    cfg = BusConfig.local(Path("/tmp/demo-bus"))   # ipc:// endpoints, journal, keys generated
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator

_ENDPOINT = re.compile(r"^(tcp://[^\s]+:(\d+|\*)|ipc://[^\s]+|inproc://[^\s]+)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class BusConfig(BaseModel):
    """Endpoints, journal, keys and limits of the roll bus.

    Unknown keys are an error (``extra="forbid"``), so a misspelt config key is named in the
    ``pydantic.ValidationError`` rather than silently ignored. Values are strict (``"1000"`` or
    ``1000.0`` is not an integer, ``0`` not a boolean); the paths are taken from strings.

    Attributes:
        pub_endpoint: ZeroMQ endpoint of the live XPUB socket (table binds, subscribers connect),
            e.g. ``"tcp://127.0.0.1:5556"`` or ``"ipc:///run/craps-table/bus.pub"``.
        replay_endpoint: endpoint of the ROUTER replay/ack socket (table binds).
        journal_path: SQLite file of the table's durable journal (WAL, ``synchronous=FULL``).
        keys_dir: directory of key files (:mod:`bus.keys`).
        authorized_dir: directory of the subscriber CURVE public certificates the table
            accepts (the allow-list); ``None`` means ``keys_dir / "authorized"``.
        table_id: the table this bus carries; the publisher stamps it in every envelope and a
            subscriber rejects any other.
        table_key: file stem of the table's CURVE certificate and Ed25519 signing key.
        subscriber_key: file stem of the subscriber's CURVE certificate.
        hwm: send/receive high-water mark in messages (bounded; ``zmq.Again`` at the table's
            XPUB raises an alarm, the message stays journalled and is replayed).
        heartbeat_s: seconds between heartbeats when idle (seconds, > 0).
        replay_batch: messages per replay reply, at most (the table also stops a reply at
            :data:`bus.publisher.REPLY_MAX_BYTES` of envelopes; the subscriber asks again from
            where it got to).
        replay_rate: replay requests per second the table answers from one subscriber (its
            CURVE key), on average; past it the request is refused with a ``BUSY`` reply
            saying when to ask again (requests per second, > 0).
        replay_burst: replay requests the table answers from one subscriber at once after a
            quiet spell (requests, >= 1).
        replay_timeout_s: seconds before an unanswered replay request is sent again.
        max_pending: out-of-order messages a subscriber buffers while it fills a gap.
        prune_acked: if true the table deletes journalled messages acknowledged by every
            subscriber in the allow-list (never unacknowledged ones). Default keeps everything.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    pub_endpoint: str = "tcp://127.0.0.1:5556"
    replay_endpoint: str = "tcp://127.0.0.1:5557"
    journal_path: Annotated[Path, Strict(False)] = Path("var/bus/journal.sqlite")
    keys_dir: Annotated[Path, Strict(False)] = Path("var/bus/keys")
    authorized_dir: Annotated[Path, Strict(False)] | None = None
    table_id: str = "table-1"
    table_key: str = "table"
    subscriber_key: str = "settlement"
    hwm: int = Field(1000, ge=1, le=1_000_000)
    heartbeat_s: float = Field(0.5, gt=0, le=60)
    replay_batch: int = Field(500, ge=1, le=100_000)
    replay_rate: float = Field(10.0, gt=0, le=10_000)
    replay_burst: int = Field(20, ge=1, le=10_000)
    replay_timeout_s: float = Field(1.0, gt=0, le=60)
    max_pending: int = Field(10_000, ge=1)
    prune_acked: bool = False

    @field_validator("pub_endpoint", "replay_endpoint")
    @classmethod
    def _check_endpoint(cls, v: str) -> str:
        if not _ENDPOINT.match(v):
            raise ValueError(f"not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH): {v!r}")
        return v

    @field_validator("table_id", "table_key", "subscriber_key")
    @classmethod
    def _check_name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"must be 1-64 characters of letters, digits, '.', '_', '-': {v!r}")
        return v

    @property
    def allow_dir(self) -> Path:
        """The CURVE allow-list directory (``authorized_dir`` or ``keys_dir / "authorized"``)."""
        return self.authorized_dir if self.authorized_dir is not None else self.keys_dir / "authorized"

    @classmethod
    def local(cls, directory: Path, *, transport: str = "ipc", make_keys: bool = True,
              **overrides) -> "BusConfig":
        """A ready-to-use config for a demo or test: everything under ``directory``.

        Creates ``directory``, generates the table and settlement keys there if absent
        (:func:`bus.keys.ensure_keys`) and returns a config whose journal and keys live in it.

        Args:
            directory: a writable directory (created if missing).
            transport: ``"ipc"`` (sockets ``directory/bus.pub``, ``directory/bus.replay``) or
                ``"tcp"`` (two free ports on 127.0.0.1, chosen now).
            make_keys: false for a subscriber joining a table's existing bus directory: nothing
                is created (never the table's keys), and ``directory`` must exist and hold the
                keys a subscriber needs (:func:`bus.keys.missing_subscriber_keys`).
            overrides: any other field of :class:`BusConfig`.
        Raises:
            ValueError: unknown transport, or a directory too deep for ipc socket paths;
                pydantic.ValidationError: bad override; bus.keys.BusKeyError (``make_keys``
                false): ``directory`` does not exist or lacks keys (the message names what is
                missing and the ``craps-table keys`` commands that make it).
        """
        from bus.keys import ensure_keys

        directory = Path(directory)
        if transport == "ipc":
            eps = {"pub_endpoint": f"ipc://{directory.resolve() / 'bus.pub'}",
                   "replay_endpoint": f"ipc://{directory.resolve() / 'bus.replay'}"}
            longest = max(len(e) - len("ipc://") for e in eps.values())
            if longest > 100:  # sun_path holds 107 bytes on Linux
                raise ValueError(f"directory {directory} is too deep for ipc:// sockets ({longest} > 100 "
                                 "characters); use a shorter path or transport='tcp'")
        elif transport == "tcp":
            p1, p2 = free_tcp_ports(2)
            eps = {"pub_endpoint": f"tcp://127.0.0.1:{p1}", "replay_endpoint": f"tcp://127.0.0.1:{p2}"}
        else:
            raise ValueError(f"transport must be 'ipc' or 'tcp', not {transport!r}")
        fields = {"journal_path": directory / "journal.sqlite", "keys_dir": directory / "keys", **eps}
        fields.update(overrides)
        cfg = cls(**fields)
        if not make_keys:
            from bus.keys import BusKeyError, missing_subscriber_keys, subscriber_key_steps

            if not directory.is_dir():
                raise BusKeyError(f"bus directory {directory} does not exist (a local bus directory holds the "
                                  f"table's ipc sockets, journal and keys/); make its keys with "
                                  f"{subscriber_key_steps(cfg, table=True, subscriber=True)}")
            problem = missing_subscriber_keys(cfg)
            if problem is not None:
                raise BusKeyError(f"bus directory {directory}: {problem}")
            return cfg
        directory.mkdir(parents=True, exist_ok=True)
        ensure_keys(cfg.keys_dir, table=cfg.table_key, subscriber=cfg.subscriber_key,
                    authorized_dir=cfg.allow_dir)
        return cfg


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_tcp_ports(n: int = 1) -> list[int]:
    """``n`` distinct TCP ports on 127.0.0.1, free now and outside the kernel's ephemeral range.

    Outside the ephemeral range because a listening port taken from it can be handed, while its
    server is down (restarting), to a client's outgoing connection, and a client reconnecting
    to 127.0.0.1:P from local port P connects to itself: the server then cannot bind again.
    """
    import random
    import socket

    lo, hi = _ephemeral_range()
    candidates = list(range(20000, lo)) if lo > 21000 else list(range(hi + 1, 65536))
    random.SystemRandom().shuffle(candidates)
    found: list[int] = []
    for port in candidates:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
        if len(found) == n:
            return found
    raise OSError("no free TCP port outside the ephemeral range on 127.0.0.1")
