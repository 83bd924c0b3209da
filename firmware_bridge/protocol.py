"""Wire protocol between the table controller (host) and the table microcontroller (MCU).

Byte layouts, endianness, CRC parameters, timing numbers and the state machines are specified in
``docs/firmware-protocol.md``; this module is the reference implementation of that document and
must stay byte-identical to it (``tests/test_firmware_protocol.py`` checks the worked example).

A frame on the wire is::

    COBS( ver:u8 | type:u8 | seq:u16le | payload:0..240 bytes | crc:u16le ) | 0x00

* framing: Consistent Overhead Byte Stuffing (Cheshire and Baker, IEEE/ACM Trans. Networking
  7(2), 1999), via the ``cobs`` package; the 0x00 byte never occurs inside an encoded frame and
  ends every frame.
* integrity: CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, xorout 0x0000,
  check("123456789") = 0x29B1), defined by the ``crc`` package's CRC-16/IBM-3740 and computed
  with the standard library's ``binascii.crc_hqx`` (checked equal), over ver..payload, appended
  little-endian.
* every message type has a payload whose length is fully determined by its own fields, so a
  frame whose length disagrees with its type is rejected even if its CRC matches.

All multi-byte integers are little-endian.  Nothing in this module raises on bad *input bytes*:
:class:`FrameDecoder` turns every malformed frame into a :class:`Rejected` record.  Building a
message from bad *Python values* (a lamp id of 300, say) raises :class:`ProtocolError`.
"""
from __future__ import annotations

import binascii
import enum
import struct
from dataclasses import dataclass
from typing import ClassVar, Union

from cobs import cobs
from crc import Calculator, Crc16

#: Protocol version carried in byte 0 of every frame.
PROTOCOL_VERSION = 1
#: Largest payload, in bytes.  Decoded frame <= 246 bytes, encoded frame <= 248 bytes with 0x00.
MAX_PAYLOAD = 240
#: Header (ver, type, seq) plus CRC, in bytes.
OVERHEAD = 6
#: Largest decoded frame (header + payload + CRC), in bytes.
MAX_DECODED = OVERHEAD + MAX_PAYLOAD
#: Largest COBS-encoded frame, excluding the 0x00 delimiter (one code byte per 254 data bytes).
MAX_ENCODED = MAX_DECODED + 1 + MAX_DECODED // 254
#: Sequence numbers of reliable messages run 1..65535 and wrap to 1; 0 means "unsequenced".
SEQ_MAX = 0xFFFF
#: Longest text in an ERROR_REPORT, in bytes (ASCII).
MAX_ERROR_TEXT = 64

#: The ``crc`` package's CRC-16/IBM-3740 (== CRC-16/CCITT-FALSE) is the definition of the CRC.
_CRC_REFERENCE = Calculator(Crc16.IBM_3740.value, optimized=True)


def crc16_reference(data: bytes) -> int:
    """CRC-16/CCITT-FALSE by the ``crc`` package (the definition; about 5 us per byte)."""
    return int(_CRC_REFERENCE.checksum(bytes(data)))


def crc16_ccitt_false(data: bytes) -> int:
    """CRC-16/CCITT-FALSE of ``data`` (poly 0x1021, init 0xFFFF, refin/refout false, xorout 0).

    Returns an int in 0..0xFFFF.  ``crc16_ccitt_false(b"123456789") == 0x29B1`` (the catalogue
    check value; RevEng CRC catalogue, CRC-16/IBM-3740).  Computed with the standard library's
    C ``binascii.crc_hqx(data, 0xFFFF)`` (same polynomial, no reflection, init passed in), about
    150 times faster than the pure-Python ``crc`` package; equality with :func:`crc16_reference`
    is checked at import and property-tested in tests/test_firmware_protocol.py.
    """
    return binascii.crc_hqx(data, 0xFFFF)


def _self_check() -> None:
    for vector in (b"123456789", b"", b"\x00", bytes(range(256))):
        if crc16_ccitt_false(vector) != crc16_reference(vector):
            raise RuntimeError("binascii.crc_hqx disagrees with the crc package's CRC-16/IBM-3740")


_self_check()


def next_seq(seq: int) -> int:
    """The sequence number after ``seq`` (1..65535, wrapping 65535 -> 1; 0 is never used)."""
    return seq % SEQ_MAX + 1


class ProtocolError(ValueError):
    """A message cannot be built or parsed: a field is out of range or a payload is malformed."""


class MsgType(enum.IntEnum):
    """Message types (byte 1 of a frame).  Direction and reliability in docs/firmware-protocol.md."""

    HELLO = 0x01          # host -> MCU, answered by VERSION
    VERSION = 0x02        # MCU -> host, answer to HELLO
    HEARTBEAT = 0x03      # both ways, unsequenced
    ACK = 0x06            # both ways, unsequenced
    NAK = 0x15            # both ways, unsequenced
    SET_LAMPS = 0x20      # host -> MCU, reliable
    SHAKER = 0x21         # host -> MCU, reliable
    INPUT_EVENT = 0x40    # MCU -> host, reliable
    ERROR_REPORT = 0x41   # MCU -> host, reliable


#: Types that carry a sequence number and are acknowledged (ACK or NAK) by the receiver.
RELIABLE_TYPES = frozenset({MsgType.SET_LAMPS, MsgType.SHAKER, MsgType.INPUT_EVENT, MsgType.ERROR_REPORT})
#: Types whose seq must be 1..65535 (the reliable ones and HELLO); all others carry seq 0.
SEQUENCED_TYPES = RELIABLE_TYPES | {MsgType.HELLO}
HOST_TO_MCU = frozenset({MsgType.HELLO, MsgType.HEARTBEAT, MsgType.ACK, MsgType.NAK, MsgType.SET_LAMPS, MsgType.SHAKER})
MCU_TO_HOST = frozenset({MsgType.VERSION, MsgType.HEARTBEAT, MsgType.ACK, MsgType.NAK, MsgType.INPUT_EVENT, MsgType.ERROR_REPORT})


class LampId(enum.IntEnum):
    """Firmware lamp ids, one per lamp name of the lamp interface (CONTRACTS.md)."""

    POINT_4 = 0x01
    POINT_5 = 0x02
    POINT_6 = 0x03
    POINT_8 = 0x04
    POINT_9 = 0x05
    POINT_10 = 0x06
    PUCK_ON = 0x07
    NO_ROLL = 0x08
    CALL_BOXPERSON = 0x09
    BETS_CLOSED = 0x0A
    FAULT = 0x0B


#: Lamp name (the lamp interface's vocabulary) -> firmware lamp id.
LAMP_IDS: dict[str, LampId] = {
    "point-4": LampId.POINT_4,
    "point-5": LampId.POINT_5,
    "point-6": LampId.POINT_6,
    "point-8": LampId.POINT_8,
    "point-9": LampId.POINT_9,
    "point-10": LampId.POINT_10,
    "puck-on": LampId.PUCK_ON,
    "no-roll": LampId.NO_ROLL,
    "call-boxperson": LampId.CALL_BOXPERSON,
    "bets-closed": LampId.BETS_CLOSED,
    "fault": LampId.FAULT,
}
LAMP_NAMES: dict[int, str] = {int(v): k for k, v in LAMP_IDS.items()}


class LampMode(enum.IntEnum):
    """Lamp modes.  FLASH is 500 ms period, 50 % duty, all flashing lamps in phase."""

    OFF = 0
    ON = 1
    FLASH = 2


LAMP_MODES: dict[str, LampMode] = {"off": LampMode.OFF, "on": LampMode.ON, "flash": LampMode.FLASH}


class InputId(enum.IntEnum):
    """Inputs reported in INPUT_EVENT."""

    FAR_WALL_STRIKE = 0x01   # value 1; detail = sensor zone index (0 = whole wall)
    SHOOTER_BUTTON = 0x02    # value 1 pressed, 0 released
    SHAKER_DONE = 0x03       # value = ShakerAction that ended; detail = ShakerResult; cmd_seq = its SHAKER's seq
    DOOR = 0x04              # value 1 open, 0 closed; detail = door index
    TILT = 0x05              # value 1 tilted, 0 level


class ShakerAction(enum.IntEnum):
    """SHAKER command actions."""

    STOP = 0
    SHAKE = 1
    BLOW = 2


class ShakerResult(enum.IntEnum):
    """Detail of a SHAKER_DONE event."""

    COMPLETED = 0
    STOPPED = 1      # by a SHAKER STOP command
    JAMMED = 2       # motor stall / blower fault
    FAILSAFE = 3     # stopped because the host was lost


class NakReason(enum.IntEnum):
    """Reason byte of a NAK."""

    BAD_FRAME = 1      # unreadable frame (COBS, length or CRC); nak_seq = 0: resend outstanding
    BAD_VERSION = 2    # protocol version not supported
    UNKNOWN_TYPE = 3   # type unknown or not valid in this direction
    BAD_PAYLOAD = 4    # payload length or a field out of range
    BUSY = 5           # SHAKER while the shaker or blower runs
    NOT_READY = 6      # no session: the sender must HELLO first
    BAD_LAMP = 7       # lamp id not fitted on this table


class ErrorCode(enum.IntEnum):
    """ERROR_REPORT codes."""

    LAMP_DRIVER_FAULT = 1      # detail = lamp id
    WALL_SENSOR_FAULT = 2      # detail = sensor zone
    SHAKER_JAM = 3
    BROWN_OUT = 4
    WATCHDOG_RESET = 5
    EVENT_QUEUE_OVERFLOW = 6   # detail = number of events lost
    HOST_LOST = 7              # failsafe was entered; detail = 0 (docs/firmware-protocol.md section 3)
    RX_OVERRUN = 8             # UART overrun; detail = count


class Capability(enum.IntFlag):
    """Capabilities byte of VERSION: which inputs and actuators this table has."""

    WALL_SENSOR = 0x01
    SHOOTER_BUTTON = 0x02
    SHAKER = 0x04
    BLOWER = 0x08
    DOOR_SWITCH = 0x10
    TILT_SWITCH = 0x20
    #: SHAKER_DONE events carry ``cmd_seq``, the ``seq`` of the SHAKER command they answer
    #: (docs/firmware-protocol.md 4.9): a host drives an automated rig's shaker only with it
    SHAKER_DONE_SEQ = 0x40


class McuStatus(enum.IntFlag):
    """Status flags of the MCU (VERSION.inputs and HEARTBEAT.flags sent by the MCU)."""

    DOOR_OPEN = 0x01
    TILTED = 0x02
    SHAKER_BUSY = 0x04
    WALL_SENSOR_FAULT = 0x08
    FAILSAFE = 0x10
    NO_SESSION = 0x20


# ---------------------------------------------------------------------------------------------
# messages


def _u8(name: str, v: int) -> int:
    if not isinstance(v, int) or not 0 <= v <= 0xFF:
        raise ProtocolError(f"{name} must be an integer 0..255, got {v!r}")
    return v


def _u16(name: str, v: int) -> int:
    if not isinstance(v, int) or not 0 <= v <= 0xFFFF:
        raise ProtocolError(f"{name} must be an integer 0..65535, got {v!r}")
    return v


def _u32(name: str, v: int) -> int:
    if not isinstance(v, int) or not 0 <= v <= 0xFFFFFFFF:
        raise ProtocolError(f"{name} must be an integer 0..4294967295, got {v!r}")
    return v


def _enum(cls, name: str, v: int):
    try:
        return cls(v)
    except ValueError:
        raise ProtocolError(f"{name} {v!r} is not one of {[int(m) for m in cls]}") from None


def _fixed(cls, payload: bytes, fmt: str) -> tuple:
    size = struct.calcsize(fmt)
    if len(payload) != size:
        raise ProtocolError(f"{cls.__name__} payload must be {size} bytes, got {len(payload)}")
    return struct.unpack(fmt, payload)


@dataclass(frozen=True)
class Hello:
    """HELLO (host -> MCU): open or resume a session.

    session_id: u32 random per host process; a new value resets the MCU's duplicate filter.
    heartbeat_period_ms: the host's heartbeat period.  host_timeout_ms: silence after which the
    MCU enters failsafe.
    """

    TYPE: ClassVar[MsgType] = MsgType.HELLO
    FMT: ClassVar[str] = "<IHH"
    session_id: int
    heartbeat_period_ms: int = 200
    host_timeout_ms: int = 1000

    def __post_init__(self) -> None:
        _u32("session_id", self.session_id)
        if self.session_id == 0:
            raise ProtocolError("HELLO session_id must be non-zero (docs/firmware-protocol.md 4.1): 0 is no session")
        _u16("heartbeat_period_ms", self.heartbeat_period_ms)
        _u16("host_timeout_ms", self.host_timeout_ms)

    def payload(self) -> bytes:
        """The 8-byte HELLO payload (docs/firmware-protocol.md 4.1): u32 ``session_id``, u16
        ``heartbeat_period_ms``, u16 ``host_timeout_ms``, little-endian. The fields were range-checked
        when the message was built, so this does not raise.
        """
        return struct.pack(self.FMT, self.session_id, self.heartbeat_period_ms, self.host_timeout_ms)

    @classmethod
    def parse(cls, payload: bytes) -> "Hello":
        """A HELLO from its payload (docs/firmware-protocol.md 4.1: u32 ``session_id``, u16
        ``heartbeat_period_ms``, u16 ``host_timeout_ms``, little-endian; periods in ms).

        Raises:
            ProtocolError: the payload is not exactly 8 bytes, or ``session_id`` is 0.
        """
        return cls(*_fixed(cls, payload, cls.FMT))


@dataclass(frozen=True)
class Version:
    """VERSION (MCU -> host): the answer to HELLO ``ack_seq``; firmware identity and state."""

    TYPE: ClassVar[MsgType] = MsgType.VERSION
    FMT: ClassVar[str] = "<HBBBBIBBB"
    ack_seq: int
    protocol: int
    fw_major: int
    fw_minor: int
    fw_patch: int
    boot_id: int
    capabilities: int
    lamp_count: int
    status: int

    def __post_init__(self) -> None:
        _u16("ack_seq", self.ack_seq)
        for n in ("protocol", "fw_major", "fw_minor", "fw_patch", "capabilities", "lamp_count", "status"):
            _u8(n, getattr(self, n))
        _u32("boot_id", self.boot_id)

    def payload(self) -> bytes:
        """The 13-byte VERSION payload (docs/firmware-protocol.md 4.2): u16 ``ack_seq``, u8
        ``protocol``, ``fw_major``, ``fw_minor``, ``fw_patch``, u32 ``boot_id``, u8 ``capabilities``
        (4.11), ``lamp_count``, ``status`` (4.12), little-endian.
        """
        return struct.pack(self.FMT, self.ack_seq, self.protocol, self.fw_major, self.fw_minor,
                           self.fw_patch, self.boot_id, self.capabilities, self.lamp_count, self.status)

    @classmethod
    def parse(cls, payload: bytes) -> "Version":
        """A VERSION from its payload (docs/firmware-protocol.md 4.2, the layout of :meth:`payload`).
        Every field may take any value of its size, so only the length is checked here (a
        ``protocol`` other than 1 is the link's to refuse, section 6.1).

        Raises:
            ProtocolError: the payload is not exactly 13 bytes.
        """
        return cls(*_fixed(cls, payload, cls.FMT))


@dataclass(frozen=True)
class Heartbeat:
    """HEARTBEAT (both ways): ``time_ms`` sender uptime (ms, wraps), ``ident`` (host: session id;
    MCU: boot id), ``flags`` (host: 0; MCU: :class:`McuStatus`)."""

    TYPE: ClassVar[MsgType] = MsgType.HEARTBEAT
    FMT: ClassVar[str] = "<IIB"
    time_ms: int
    ident: int
    flags: int = 0

    def __post_init__(self) -> None:
        _u32("time_ms", self.time_ms)
        _u32("ident", self.ident)
        _u8("flags", self.flags)

    def payload(self) -> bytes:
        """The 9-byte HEARTBEAT payload (docs/firmware-protocol.md 4.3): u32 ``time_ms`` (sender
        uptime, ms), u32 ``ident`` (session id or boot id), u8 ``flags``, little-endian.
        """
        return struct.pack(self.FMT, self.time_ms, self.ident, self.flags)

    @classmethod
    def parse(cls, payload: bytes) -> "Heartbeat":
        """A HEARTBEAT from its payload (docs/firmware-protocol.md 4.3: u32 ``time_ms``, u32
        ``ident``, u8 ``flags``, little-endian).

        Raises:
            ProtocolError: the payload is not exactly 9 bytes.
        """
        return cls(*_fixed(cls, payload, cls.FMT))


@dataclass(frozen=True)
class Ack:
    """ACK (both ways): the reliable message ``ack_seq`` of type ``acked_type`` was acted on."""

    TYPE: ClassVar[MsgType] = MsgType.ACK
    FMT: ClassVar[str] = "<HB"
    ack_seq: int
    acked_type: int

    def __post_init__(self) -> None:
        _u16("ack_seq", self.ack_seq)
        _u8("acked_type", self.acked_type)

    def payload(self) -> bytes:
        """The 3-byte ACK payload (docs/firmware-protocol.md 4.4): u16 ``ack_seq``, u8 ``acked_type``,
        little-endian.
        """
        return struct.pack(self.FMT, self.ack_seq, self.acked_type)

    @classmethod
    def parse(cls, payload: bytes) -> "Ack":
        """An ACK from its payload (docs/firmware-protocol.md 4.4: u16 ``ack_seq``, u8 ``acked_type``).
        ``acked_type`` is not checked against the known types: the receiver matches it with what it
        has outstanding.

        Raises:
            ProtocolError: the payload is not exactly 3 bytes.
        """
        return cls(*_fixed(cls, payload, cls.FMT))


@dataclass(frozen=True)
class Nak:
    """NAK (both ways): message ``nak_seq`` of type ``nak_type`` was refused for ``reason``;
    ``nak_seq == 0`` and reason BAD_FRAME: an unreadable frame arrived (resend what is
    outstanding)."""

    TYPE: ClassVar[MsgType] = MsgType.NAK
    FMT: ClassVar[str] = "<HBB"
    nak_seq: int
    nak_type: int
    reason: NakReason

    def __post_init__(self) -> None:
        _u16("nak_seq", self.nak_seq)
        _u8("nak_type", self.nak_type)
        object.__setattr__(self, "reason", _enum(NakReason, "NAK reason", self.reason))

    def payload(self) -> bytes:
        """The 4-byte NAK payload (docs/firmware-protocol.md 4.5): u16 ``nak_seq``, u8 ``nak_type``,
        u8 ``reason`` (4.10), little-endian.
        """
        return struct.pack(self.FMT, self.nak_seq, self.nak_type, int(self.reason))

    @classmethod
    def parse(cls, payload: bytes) -> "Nak":
        """A NAK from its payload (docs/firmware-protocol.md 4.5: u16 ``nak_seq``, u8 ``nak_type``, u8
        ``reason``).

        Raises:
            ProtocolError: the payload is not exactly 4 bytes, or ``reason`` is not a
                :class:`NakReason` (1..7, section 4.10).
        """
        return cls(*_fixed(cls, payload, cls.FMT))


@dataclass(frozen=True)
class LampSetting:
    """One lamp in SET_LAMPS: firmware ``lamp`` id, ``mode``, ``brightness`` 0..255 (PWM duty)."""

    lamp: LampId
    mode: LampMode
    brightness: int = 255

    def __post_init__(self) -> None:
        object.__setattr__(self, "lamp", _enum(LampId, "lamp id", self.lamp))
        object.__setattr__(self, "mode", _enum(LampMode, "lamp mode", self.mode))
        _u8("brightness", self.brightness)


@dataclass(frozen=True)
class SetLamps:
    """SET_LAMPS (host -> MCU, reliable): 1..16 lamp settings applied atomically, in order."""

    TYPE: ClassVar[MsgType] = MsgType.SET_LAMPS
    MAX_LAMPS: ClassVar[int] = 16
    lamps: tuple[LampSetting, ...]

    def __post_init__(self) -> None:
        lamps = tuple(self.lamps)
        if not 1 <= len(lamps) <= self.MAX_LAMPS:
            raise ProtocolError(f"SET_LAMPS takes 1..{self.MAX_LAMPS} lamps, got {len(lamps)}")
        if not all(isinstance(s, LampSetting) for s in lamps):
            raise ProtocolError("SET_LAMPS lamps must be LampSetting values")
        object.__setattr__(self, "lamps", lamps)

    def payload(self) -> bytes:
        """The SET_LAMPS payload (docs/firmware-protocol.md 4.6), 1 + 3 x count bytes (4..49): u8
        ``count``, then per lamp u8 ``lamp_id`` (4.7), u8 ``mode`` (0 off, 1 on, 2 flash), u8
        ``brightness`` (PWM duty 0..255), in the order given.
        """
        out = bytearray([len(self.lamps)])
        for s in self.lamps:
            out += bytes([int(s.lamp), int(s.mode), s.brightness])
        return bytes(out)

    @classmethod
    def parse(cls, payload: bytes) -> "SetLamps":
        """A SET_LAMPS from its payload (docs/firmware-protocol.md 4.6: u8 ``count``, then ``count``
        triples lamp id, mode, brightness). Whether a lamp is fitted is not checked here: that is
        the MCU's ``NAK(BAD_LAMP)``.

        Raises:
            ProtocolError: an empty payload, a length other than 1 + 3 x ``count``, a count of 0 or
                above 16, a lamp id that is not a :class:`LampId` (0x01..0x0B, 4.7) or a mode other
                than 0..2.
        """
        if not payload:
            raise ProtocolError("SET_LAMPS payload is empty")
        n = payload[0]
        if len(payload) != 1 + 3 * n:
            raise ProtocolError(f"SET_LAMPS with count {n} must be {1 + 3 * n} bytes, got {len(payload)}")
        return cls(tuple(LampSetting(payload[1 + 3 * i], payload[2 + 3 * i], payload[3 + 3 * i]) for i in range(n)))


@dataclass(frozen=True)
class Shaker:
    """SHAKER (host -> MCU, reliable): start the dice shaker or blower for ``duration_ms``
    (1..10000) at ``intensity`` 0..255, or STOP (duration 0).  ACK means started; the end is an
    INPUT_EVENT SHAKER_DONE."""

    TYPE: ClassVar[MsgType] = MsgType.SHAKER
    FMT: ClassVar[str] = "<BHB"
    MAX_DURATION_MS: ClassVar[int] = 10000
    action: ShakerAction
    duration_ms: int = 0
    intensity: int = 255

    def __post_init__(self) -> None:
        object.__setattr__(self, "action", _enum(ShakerAction, "shaker action", self.action))
        _u16("duration_ms", self.duration_ms)
        _u8("intensity", self.intensity)
        if self.action == ShakerAction.STOP:
            if self.duration_ms != 0:
                raise ProtocolError("SHAKER STOP must have duration_ms 0")
        elif not 1 <= self.duration_ms <= self.MAX_DURATION_MS:
            raise ProtocolError(f"SHAKER duration_ms must be 1..{self.MAX_DURATION_MS}, got {self.duration_ms}")

    def payload(self) -> bytes:
        """The 4-byte SHAKER payload (docs/firmware-protocol.md 4.8): u8 ``action`` (0 STOP, 1 SHAKE,
        2 BLOW), u16 ``duration_ms``, u8 ``intensity`` (PWM duty 0..255), little-endian.
        """
        return struct.pack(self.FMT, int(self.action), self.duration_ms, self.intensity)

    @classmethod
    def parse(cls, payload: bytes) -> "Shaker":
        """A SHAKER from its payload (docs/firmware-protocol.md 4.8: u8 ``action``, u16
        ``duration_ms``, u8 ``intensity``).

        Raises:
            ProtocolError: the payload is not exactly 4 bytes, the action is not 0..2, a STOP has a
                duration other than 0, or a SHAKE or BLOW a duration outside 1..10000 ms.
        """
        return cls(*_fixed(cls, payload, cls.FMT))


@dataclass(frozen=True)
class InputEvent:
    """INPUT_EVENT (MCU -> host, reliable): ``input`` changed to ``value`` at MCU uptime
    ``time_ms`` (ms, wraps at 2**32); ``detail`` depends on the input (see :class:`InputId`).

    ``cmd_seq`` (SHAKER_DONE only, firmware with :attr:`Capability.SHAKER_DONE_SEQ`): the
    ``seq`` of the SHAKER command whose run ended (1..65535), sent as two more payload bytes
    (10 instead of 8; docs/firmware-protocol.md 4.9), so the host can tie the "done" to the
    command it answers. ``None``: the 8-byte form (older firmware, and every other input).

    Raises:
        ProtocolError: a field out of range, or ``cmd_seq`` on an input other than SHAKER_DONE.
    """

    TYPE: ClassVar[MsgType] = MsgType.INPUT_EVENT
    FMT: ClassVar[str] = "<BBIH"
    #: the SHAKER_DONE form with ``cmd_seq``
    FMT_SEQ: ClassVar[str] = "<BBIHH"
    input: InputId
    value: int
    time_ms: int
    detail: int = 0
    cmd_seq: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", _enum(InputId, "input id", self.input))
        _u8("value", self.value)
        _u32("time_ms", self.time_ms)
        _u16("detail", self.detail)
        if self.cmd_seq is not None:
            if self.input is not InputId.SHAKER_DONE:
                raise ProtocolError(f"only SHAKER_DONE carries cmd_seq, not {self.input.name}")
            if _u16("cmd_seq", self.cmd_seq) == 0:
                raise ProtocolError("SHAKER_DONE cmd_seq must be 1..65535 (the seq of a SHAKER), got 0")

    def payload(self) -> bytes:
        """The INPUT_EVENT payload (docs/firmware-protocol.md 4.9): u8 ``input``, u8 ``value``, u32
        ``time_ms`` (MCU uptime, ms), u16 ``detail``, little-endian: 8 bytes, or 10 with u16
        ``cmd_seq`` appended when it is set (SHAKER_DONE from firmware with ``SHAKER_DONE_SEQ``).
        """
        if self.cmd_seq is None:
            return struct.pack(self.FMT, int(self.input), self.value, self.time_ms, self.detail)
        return struct.pack(self.FMT_SEQ, int(self.input), self.value, self.time_ms, self.detail, self.cmd_seq)

    @classmethod
    def parse(cls, payload: bytes) -> "InputEvent":
        """An INPUT_EVENT from its payload (docs/firmware-protocol.md 4.9): the 8-byte form (``cmd_seq``
        None) or the 10-byte SHAKER_DONE form with u16 ``cmd_seq``.

        Raises:
            ProtocolError: a length other than 8 or 10, an input that is not an :class:`InputId`
                (0x01..0x05), or a 10-byte payload whose input is not SHAKER_DONE or whose
                ``cmd_seq`` is 0.
        """
        if len(payload) == struct.calcsize(cls.FMT_SEQ):
            return cls(*struct.unpack(cls.FMT_SEQ, payload))
        if len(payload) != struct.calcsize(cls.FMT):
            raise ProtocolError(f"InputEvent payload must be 8 bytes (10 for SHAKER_DONE with cmd_seq), "
                                f"got {len(payload)}")
        return cls(*struct.unpack(cls.FMT, payload))


@dataclass(frozen=True)
class ErrorReport:
    """ERROR_REPORT (MCU -> host, reliable): ``code`` (:class:`ErrorCode`), ``detail``, and up to
    64 bytes of printable ASCII ``text``."""

    TYPE: ClassVar[MsgType] = MsgType.ERROR_REPORT
    code: ErrorCode
    detail: int = 0
    text: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", _enum(ErrorCode, "error code", self.code))
        _u16("detail", self.detail)
        if not isinstance(self.text, str) or len(self.text) > MAX_ERROR_TEXT or not all(0x20 <= ord(c) < 0x7F for c in self.text):
            raise ProtocolError(f"ERROR_REPORT text must be printable ASCII of at most {MAX_ERROR_TEXT} characters, got {self.text!r}")

    def payload(self) -> bytes:
        """The ERROR_REPORT payload (docs/firmware-protocol.md 4.11), 4 + n bytes: u8 ``code``, u16
        ``detail``, u8 ``text_len`` n (0..64), then the n ASCII bytes of ``text`` (no NUL),
        little-endian.
        """
        t = self.text.encode("ascii")
        return struct.pack("<BHB", int(self.code), self.detail, len(t)) + t

    @classmethod
    def parse(cls, payload: bytes) -> "ErrorReport":
        """An ERROR_REPORT from its payload (docs/firmware-protocol.md 4.11: u8 ``code``, u16
        ``detail``, u8 ``text_len``, ``text_len`` bytes of text).

        Raises:
            ProtocolError: fewer than 4 bytes, a length other than 4 + ``text_len``, a code that is
                not an :class:`ErrorCode` (1..8), or text that is not printable ASCII (0x20..0x7E)
                of at most 64 bytes.
        """
        if len(payload) < 4:
            raise ProtocolError(f"ERROR_REPORT payload must be at least 4 bytes, got {len(payload)}")
        code, detail, n = struct.unpack_from("<BHB", payload)
        if len(payload) != 4 + n:
            raise ProtocolError(f"ERROR_REPORT with text length {n} must be {4 + n} bytes, got {len(payload)}")
        try:
            text = payload[4:].decode("ascii")
        except UnicodeDecodeError:
            raise ProtocolError("ERROR_REPORT text is not ASCII") from None
        return cls(code, detail, text)


Message = Union[Hello, Version, Heartbeat, Ack, Nak, SetLamps, Shaker, InputEvent, ErrorReport]
MESSAGE_CLASSES: dict[MsgType, type] = {
    cls.TYPE: cls for cls in (Hello, Version, Heartbeat, Ack, Nak, SetLamps, Shaker, InputEvent, ErrorReport)
}


# ---------------------------------------------------------------------------------------------
# frames


@dataclass(frozen=True)
class Frame:
    """A frame whose COBS, length and CRC checked out: header fields and raw payload bytes."""

    version: int
    type: int
    seq: int
    payload: bytes


@dataclass(frozen=True)
class Received:
    """A fully valid frame: version 1, known type, payload parsed into ``message``."""

    seq: int
    message: Message

    @property
    def type(self) -> MsgType:
        """The message's type (:class:`MsgType`, byte 1 of the frame): ``message.TYPE``."""
        return self.message.TYPE


@dataclass(frozen=True)
class Rejected:
    """A frame that was refused.  ``frame`` is set when the CRC matched but the content is bad
    (the peer can be told which seq was refused); ``reason`` is the NAK reason to give."""

    reason: NakReason
    detail: str
    frame: Frame | None = None


def encode_frame(message: Message, seq: int = 0, *, version: int = PROTOCOL_VERSION) -> bytes:
    """Encode ``message`` with sequence number ``seq`` into wire bytes (COBS, ending in 0x00).

    Raises :class:`ProtocolError` if ``seq`` is out of 0..65535 or the payload is too long.
    """
    _u16("seq", seq)
    _u8("version", version)
    payload = message.payload()
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    body = struct.pack("<BBH", version, int(message.TYPE), seq) + payload
    body += struct.pack("<H", crc16_ccitt_false(body))
    return cobs.encode(body) + b"\x00"


def encode_raw(version: int, type_: int, seq: int, payload: bytes) -> bytes:
    """Encode an arbitrary header and payload (for tests of the receivers' rejection paths)."""
    body = struct.pack("<BBH", version, type_, seq) + bytes(payload)
    body += struct.pack("<H", crc16_ccitt_false(body))
    return cobs.encode(body) + b"\x00"


def parse_frame(encoded: bytes) -> Frame | Rejected:
    """Check one COBS-encoded frame (without its 0x00): COBS, length 6..246, CRC.  Never raises."""
    if len(encoded) > MAX_ENCODED:
        return Rejected(NakReason.BAD_FRAME, f"frame of {len(encoded)} encoded bytes exceeds {MAX_ENCODED}")
    try:
        body = cobs.decode(bytes(encoded))
    except cobs.DecodeError as exc:
        return Rejected(NakReason.BAD_FRAME, f"COBS: {exc}")
    if not OVERHEAD <= len(body) <= MAX_DECODED:
        return Rejected(NakReason.BAD_FRAME, f"frame of {len(body)} bytes is outside {OVERHEAD}..{MAX_DECODED}")
    (crc_rx,) = struct.unpack_from("<H", body, len(body) - 2)
    crc_calc = crc16_ccitt_false(body[:-2])
    if crc_rx != crc_calc:
        return Rejected(NakReason.BAD_FRAME, f"CRC 0x{crc_rx:04X} != computed 0x{crc_calc:04X}")
    version, type_, seq = struct.unpack_from("<BBH", body)
    return Frame(version, type_, seq, bytes(body[4:-2]))


def decode_frame(frame: Frame) -> Received | Rejected:
    """Check a CRC-valid frame's version, type, seq rule and payload layout.  Never raises."""
    if frame.version != PROTOCOL_VERSION:
        return Rejected(NakReason.BAD_VERSION, f"protocol version {frame.version} is not {PROTOCOL_VERSION}", frame)
    try:
        mtype = MsgType(frame.type)
    except ValueError:
        return Rejected(NakReason.UNKNOWN_TYPE, f"unknown message type 0x{frame.type:02X}", frame)
    if (mtype in SEQUENCED_TYPES) != (frame.seq != 0):
        want = "1..65535" if mtype in SEQUENCED_TYPES else "0"
        return Rejected(NakReason.BAD_PAYLOAD, f"{mtype.name} must have seq {want}, got {frame.seq}", frame)
    try:
        message = MESSAGE_CLASSES[mtype].parse(frame.payload)
    except ProtocolError as exc:
        return Rejected(NakReason.BAD_PAYLOAD, f"{mtype.name}: {exc}", frame)
    return Received(frame.seq, message)


def decode_one(encoded: bytes) -> Received | Rejected:
    """:func:`parse_frame` then :func:`decode_frame`.  Never raises."""
    f = parse_frame(encoded)
    return f if isinstance(f, Rejected) else decode_frame(f)


class FrameDecoder:
    """Streaming receiver: feed it bytes as they arrive, get back whole frames.

    ``feed(data) -> list[Received | Rejected]``.  Bytes are split on 0x00; empty frames (two
    0x00 in a row, or line idle fill) are skipped silently; a run of more than
    :data:`MAX_ENCODED` bytes without a 0x00 is discarded up to the next 0x00 and reported once as
    a BAD_FRAME.  Never raises on any input bytes (property-tested in
    tests/test_firmware_protocol.py).
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._overlong = False

    def reset(self) -> None:
        """Forget any partial frame (call after a reconnect)."""
        self._buf.clear()
        self._overlong = False

    def feed(self, data: bytes) -> list[Received | Rejected]:
        """Take the next bytes read from the line (any length, frames split anywhere) and return the
        frames they complete, in arrival order: a :class:`Received` per valid frame, a
        :class:`Rejected` per refused one (docs/firmware-protocol.md 2.4: BAD_FRAME for COBS,
        length or CRC errors and for a run of more than :data:`MAX_ENCODED` bytes without 0x00;
        BAD_VERSION, UNKNOWN_TYPE or BAD_PAYLOAD, with the frame, for a CRC-valid frame whose
        content is wrong). Bytes after the last 0x00 are kept for the next call. Never raises on any
        input bytes.
        """
        out: list[Received | Rejected] = []
        parts = bytes(data).split(b"\x00")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if not self._overlong:
                self._buf += part
                if len(self._buf) > MAX_ENCODED:
                    self._overlong = True
                    self._buf.clear()
            if last:
                break
            # a 0x00 ends the current frame
            if self._overlong:
                out.append(Rejected(NakReason.BAD_FRAME, f"more than {MAX_ENCODED} bytes without a frame delimiter"))
                self._overlong = False
            elif self._buf:
                out.append(decode_one(bytes(self._buf)))
            self._buf.clear()
        return out
