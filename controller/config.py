"""The table service's configuration (``config/table.toml``), validated at start with pydantic.

Every section forbids unknown keys, so a misspelt key stops the service instead of being
ignored, and values are strict (pydantic strict mode): ``"8"`` or ``8.0`` is not an integer,
``"yes"`` or ``0`` not a boolean, ``"0.5"`` not a number, while a TOML integer is taken for a
float and paths and points come from TOML strings and arrays. :func:`load_config` turns any problem into a :class:`ConfigError` whose message names
the file and the dotted key (``vision.still_frames: ...``); the command line exits with status 2.

The documented example with every key is ``config/table.toml``; this module is the reference for
types, ranges and defaults.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (BaseModel, ConfigDict, Field, Strict, ValidationError, ValidationInfo, create_model,
                      field_validator, model_validator)

from camera.sources import CameraConfig
from firmware_bridge.config import BridgeConfig
from controller.health import HealthConfig
from controller.lamps import LAMP_NAMES
from controller.metrics import MetricsConfig
from controller.policy import Policy, policy_from_mapping
from controller.rounds import RoundsConfig
from controller.tolerances import Tolerances

try:  # the BUS helper's model; a bare fallback keeps the controller importable without it
    from bus.config import BusConfig
except ImportError:  # pragma: no cover - only while bus/ is absent
    class BusConfig(BaseModel):  # type: ignore[no-redef]
        """Fallback bus settings (bus/ not installed): endpoints and table id only."""

        model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
        pub_endpoint: str = "tcp://127.0.0.1:5556"
        replay_endpoint: str = "tcp://127.0.0.1:5557"
        journal_path: Annotated[Path, Strict(False)] = Path("var/bus/journal.sqlite")
        keys_dir: Annotated[Path, Strict(False)] = Path("var/bus/keys")
        table_id: str = "table-1"
        heartbeat_s: float = Field(0.5, gt=0, le=60)

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class ConfigError(ValueError):
    """A configuration that cannot be used. The message names the file and the dotted key."""


#: A path given as a TOML string (strict mode alone would want a ``Path`` object).
LaxPath = Annotated[Path, Strict(False)]
#: A point ``[x, y]`` given as a TOML array (strict mode alone would want a tuple); the
#: coordinates themselves stay strict (numbers, not strings or booleans).
Point = Annotated[tuple[float, float], Strict(False)]


class _Section(BaseModel):
    """Base of the sections: unknown keys are refused and values are strict (pydantic strict
    mode): ``"8"`` or ``8.0`` is not an integer, ``"yes"`` or ``0`` is not a boolean,
    ``"0.5"`` is not a number; a TOML integer is taken where a float is expected. Paths
    (:data:`LaxPath`) and points (:data:`Point`) are taken from TOML strings and arrays."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class TableSection(_Section):
    """``[table]``: which table this is.

    Attributes:
        id: the table id, stamped on every bus message (1-64 of letters, digits, ``. _ -``).
    """

    id: str = "table-1"

    @field_validator("id")
    @classmethod
    def _check_id(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"must be 1-64 characters of letters, digits, '.', '_', '-': {v!r}")
        return v


class VisionSection(_Section):
    """``[vision]``: the roll lifecycle and the reading of dice.

    Attributes:
        table_area: the playing area, a polygon ``[[x, y], ...]`` in frame pixels (>= 3
            points). Empty: the source's "playing" zone when it has one (the simulator), else
            the whole frame.
        die_side_px: the expected side of a die lying on the felt, in frame pixels; 0: from the
            source when it knows (the simulator), else unknown. Scales motion detection and is
            passed to the dice reader.
        motion_threshold: grey levels (1..255) a pixel must change by to count as motion.
        motion_min_pixels: moving pixels of the downscaled image that make a frame "in motion";
            0: an eighth of a die's area (die size known), else 12.
        motion_width: width in pixels of the downscaled grey image the motion detector compares;
            0: a die 12 pixels wide (die size known), else 320.
        still_frames: consecutive frames without motion that make "dice at rest".
        still_s: and they must span at least this many seconds (the same rest at any frame
            rate: 8 frames are 0.27 s at 30 fps, 0.13 s at 60 fps).
        rest_timeout_s: seconds from the first motion of a throw after which a throw not at rest
            is a no roll (9 NYCRR 5324.52(k)(2)(vi)).
        max_frame_gap_s: the largest step between two frames' times taken as time passing, s;
            a frame time going back, or forward by more, is a step of the source's clock
            (controller/frame_clock.py): named (WARNING, metric), the service's frame clock
            carried on at the usual interval, and a throw in motion then a no roll
            ``table-fault`` (its timing was not seen). Keep it at or above ``[health]
            frame_timeout_s``.
        min_confidence: a face read with lower confidence (0..1) is in dispute: boxperson
            (5324.52(h)(1)(ii)).
        min_presence: a detection with no value and lower confidence than this (0..1) is not
            taken for a die at all.
        same_die_tolerance_px: after a verdict, dice found again within this many pixels of
            where they were, with the same faces, are "not moved" (no new throw).
        read_crop: read the dice only inside the table area's bounding box (5 % margin): faster
            when the camera sees more than the table; a die beyond it is not seen (it counts as
            off the table). Only with a reader validated on such crops (the reader's background
            model depends on the image); zone detectors that must see dice on the rails or in
            the chip bank outside the table area need it off.
        reader: the dice reader (vision/reader.py): ``"learned"`` (vision/learned.py: two small
            networks through cv2.dnn, the classical reader asked about unsure dice) or
            ``"classical"``; figures of both in docs/vision.md.
    """

    table_area: list[Point] = Field(default_factory=list)
    die_side_px: float = Field(0.0, ge=0, le=2000)
    motion_threshold: int = Field(15, ge=1, le=255)
    motion_min_pixels: int = Field(0, ge=0, le=1_000_000)
    motion_width: int = Field(0, ge=0, le=8192)
    still_frames: int = Field(8, ge=1, le=1000)
    still_s: float = Field(0.2, ge=0.0, le=5.0)
    rest_timeout_s: float = Field(10.0, gt=0, le=600)
    max_frame_gap_s: float = Field(1.0, gt=0, le=600)
    min_confidence: float = Field(0.8, ge=0, le=1)
    min_presence: float = Field(0.3, ge=0, le=1)
    same_die_tolerance_px: float = Field(12.0, gt=0)
    read_crop: bool = False
    reader: Literal["classical", "learned"] = "learned"

    @field_validator("motion_width")
    @classmethod
    def _check_width(cls, v: int) -> int:
        if 0 < v < 16:
            raise ValueError(f"must be 0 (auto) or at least 16 pixels, got {v}")
        return v

    @field_validator("table_area")
    @classmethod
    def _check_area(cls, v: list[Point]) -> list[Point]:
        if v and len(v) < 3:
            raise ValueError(f"a polygon needs at least 3 points [x, y], got {len(v)}")
        return v


#: Bounds of the ``[rules.tolerances]`` keys that are not die-side ratios in 0..5.
_TOLERANCE_BOUNDS = {"sure_flat": (0.0, 1.0), "sure_flat_off_wall": (0.0, 1.0), "sure_flat_wedged": (0.0, 1.0),
                     "sure_flat_on_rim": (0.0, 1.0), "tilt_sure_flat": (0.0, 1.0), "tilt_flat_beside_stacks": (0.0, 1.0),
                     "face_sure_not_flat": (0.0, 1.0),
                     "spare_sure": (0.0, 1.0), "strike_gap_s": (0.0, 1.0), "release_gap_s": (0.0, 1.0)}


def _tolerances_section() -> type[_Section]:
    """``[rules.tolerances]``: one optional key per field of
    :class:`controller.tolerances.Tolerances` (but ``far_wall_reach_mm``, a ``[rules]`` key),
    built from the dataclass so the two cannot drift apart. Ratios are multiples of the die
    side in 0..5, probabilities (``sure_*``, ``tilt_sure_flat``,
    ``tilt_flat_beside_stacks``, ``face_sure_not_flat``, ``spare_sure``) in 0..1, ``strike_gap_s`` and ``release_gap_s``
    seconds in 0..1, the switches true/false. A key left out keeps the detector's default (measured on the
    simulated camera: the dataclass's docstring gives each one's measurement)."""
    spec: dict = {}
    for f in fields(Tolerances):
        if f.name == "far_wall_reach_mm":
            continue
        if f.type in (bool, "bool"):
            spec[f.name] = (bool | None, Field(default=None, strict=True))
        else:
            lo, hi = _TOLERANCE_BOUNDS.get(f.name, (0.0, 5.0))
            spec[f.name] = (float | None, Field(default=None, ge=lo, le=hi, strict=True))
    model = create_model("TolerancesSection", __base__=_Section, **spec)
    model.__doc__ = _tolerances_section.__doc__
    return model


TolerancesSection = _tolerances_section()


class RulesSection(_Section):
    """``[rules]``: the jurisdiction profile of irregularities and the irregularity detectors.

    Attributes:
        profile: the irregularity profile (controller/irregularity_profile.py): a shipped name
            (``"ny-5324"``, ``"nj-13-47"``, ``"ny-4620"``, ``"house-practice"``) or the path of
            a profile TOML file. It gives the policy (what each irregularity makes) and how a
            cocked die is read.
        actions: reason code -> ``"no-roll" | "boxperson" | "read"``, replacing the profile's
            action for that reason (codes: controller/reasons.py, docs/messages.md).
        calibration: the table calibration TOML (``craps-table calibrate``: homography and zones
            in table mm). With it (or a source that knows its table, the simulator) the
            irregularity detectors place each die in its zone (chip bank, dice cup, rails, off
            the table), find a die on the other die, cocked dice and the far-wall strike.
            Without it, a die is in play when its centre is inside ``[vision] table_area``.
        wall_sensor: the rig has a far-wall strike sensor (firmware bridge): its strikes are
            evidence for 9 NYCRR 5324.52(k)(2)(ii), each credited to the dice the track places
            at the wall then (controller/far_wall.py).
        track: follow the dice through the motion frames (needs a calibration) to tell whether
            each struck the far wall (9 NYCRR 5324.52(k)(2)(ii)); off: only the sensor decides.
        far_wall_reach_mm: a tracked die struck the far wall only if its centre came within
            this many millimetres of the wall: the wall's rubber depth plus half the die's
            diagonal (a die touching the rubber with a corner; 10 + 13.5 mm on the simulated
            table). ``None``: anywhere in the calibration's far-wall band counts.
        tolerances: ``[rules.tolerances]``, the irregularity detectors' thresholds
            (:data:`TolerancesSection`, :class:`controller.tolerances.Tolerances`): keys
            left out keep their defaults.
    """

    profile: str = "ny-5324"
    actions: dict[str, str] = Field(default_factory=dict)
    calibration: LaxPath | None = None
    wall_sensor: bool = False
    track: bool = True
    far_wall_reach_mm: float | None = Field(default=None, gt=0.0, le=500.0)
    tolerances: TolerancesSection = Field(default_factory=TolerancesSection)  # type: ignore[valid-type]

    def build_tolerances(self):
        """The detectors' :class:`controller.tolerances.Tolerances`: the defaults, with the
        ``[rules.tolerances]`` keys given and ``far_wall_reach_mm``."""
        given = {k: v for k, v in self.tolerances.model_dump().items() if v is not None}
        return Tolerances(far_wall_reach_mm=self.far_wall_reach_mm, **given)

    def load_profile(self):
        """The :class:`controller.irregularity_profile.IrregularityProfile` (checked at load)."""
        from controller.irregularity_profile import load_profile

        return load_profile(self.profile)

    def build(self) -> Policy:
        """The :class:`~controller.policy.Policy`: the profile's, with ``actions`` applied."""
        base = self.load_profile().policy
        if not self.actions:
            return base
        return policy_from_mapping(f"{base.name}+custom", self.actions, base=base)

    @field_validator("profile")
    @classmethod
    def _check_profile(cls, v: str) -> str:
        from controller.irregularity_profile import load_profile

        load_profile(v)  # raises ProfileError (a ValueError) naming the file and the key
        return v

    @field_validator("actions")
    @classmethod
    def _check_actions(cls, v: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        from controller.irregularity_profile import load_profile

        profile = info.data.get("profile")
        base = load_profile(profile).policy if profile else None
        policy_from_mapping("check", v, base=base)  # raises ValueError naming the code or action
        return v

    @field_validator("calibration")
    @classmethod
    def _check_calibration(cls, v: Path | None) -> Path | None:
        if v is not None and not Path(v).is_file():
            raise ValueError(f"no such calibration file: {v} (make it with `craps-table calibrate`)")
        return v


class BoxpersonSection(_Section):
    """``[boxperson]``: boxperson calls (9 NYCRR 5324.52(h)(1)(ii)(a)).

    Attributes:
        timeout_s: seconds a call waits for the boxperson's answer before the throw is void.
        endpoint: the ZeroMQ endpoint where ``craps-table decide`` reaches the table (a
            ROUTER socket for REQ consoles); ``""``: none. Without ``curve`` it has no authentication, so it must be
            a loopback tcp:// or an ipc:// endpoint; with ``curve`` any tcp:// or ipc://.
        curve: authenticate and encrypt the socket with CURVE (RFC 26/CurveZMQ): the server
            is the table's bus key (``[bus] keys_dir`` / ``table_key``), and only consoles
            whose public certificate is in ``authorized_dir`` may connect; each decision then
            records the console's public key (``console``), not only the name it gives.
        authorized_dir: the folder of the boxperson consoles' public certificates
            (``craps-table keys generate NAME``, then copy ``NAME.key`` here).
    """

    timeout_s: float = Field(120.0, gt=0, le=3600)
    curve: bool = False          # before endpoint: its check reads it
    endpoint: str = ""
    authorized_dir: LaxPath = Path("var/boxperson/consoles")

    @field_validator("endpoint")
    @classmethod
    def _check_endpoint(cls, v: str, info: ValidationInfo) -> str:
        if v and not re.match(r"^(tcp://\S+:(\d+|\*)|ipc://\S+)$", v):
            raise ValueError(f"must be a tcp:// or an ipc:// endpoint, or empty: {v!r}")
        if v and not info.data.get("curve") and not re.match(
                r"^(tcp://(127\.0\.0\.1|localhost|\[::1\]):(\d+|\*)|ipc://\S+)$", v):
            raise ValueError(f"{v!r}: without curve = true the boxperson socket has no authentication, "
                             "so it must be a loopback tcp:// or an ipc:// endpoint")
        return v


_DEFAULT_PINS = {
    "point-4": 5, "point-5": 6, "point-6": 13, "point-8": 19, "point-9": 26, "point-10": 21,
    "puck-on": 20, "no-roll": 16, "call-boxperson": 12, "bets-closed": 25, "fault": 24,
}


class LampsSection(_Section):
    """``[lamps]``: the layout lamps.

    Attributes:
        driver: ``"gpiozero"`` (GPIO pins on the Pi), ``"firmware"`` (the table
            microcontroller over the firmware bridge) or ``"none"``.
        pin_factory: gpiozero pin factory: ``""`` (gpiozero's default, ``GPIOZERO_PIN_FACTORY``),
            ``"lgpio"``, ``"rpigpio"``, ``"pigpio"``, ``"native"`` or ``"mock"`` (no hardware; each
            pin keeps its newest 1,000 level changes, controller/mock_pins.py).
        pins: lamp name -> BCM pin number (lamps left out are not driven).
        active_high: a high level lights the lamp.
        pwm: dim with PWM (``brightness``).
        brightness: 0..1.
        flash_s: seconds the NO ROLL lamp flashes after a no roll.
        flash_on_s, flash_off_s: the flash cadence, seconds.

    ``driver = "firmware"`` needs the ``[firmware]`` section (the serial link,
    ``firmware_bridge.config.BridgeConfig``).
    """

    driver: Literal["gpiozero", "firmware", "none"] = "gpiozero"
    pin_factory: Literal["", "lgpio", "rpigpio", "pigpio", "native", "mock"] = ""
    pins: dict[str, int] = Field(default_factory=lambda: dict(_DEFAULT_PINS))
    active_high: bool = True
    pwm: bool = False
    brightness: float = Field(1.0, ge=0, le=1)
    flash_s: float = Field(3.0, gt=0, le=600)
    flash_on_s: float = Field(0.25, gt=0, le=10)
    flash_off_s: float = Field(0.25, gt=0, le=10)

    @field_validator("pins")
    @classmethod
    def _check_pins(cls, v: dict[str, int]) -> dict[str, int]:
        for name, pin in v.items():
            if name not in LAMP_NAMES:
                raise ValueError(f"unknown lamp {name!r}; lamps: {', '.join(LAMP_NAMES)}")
            if not 0 <= pin <= 27:
                raise ValueError(f"{name}: BCM pin {pin} is outside 0..27")
        pins = list(v.values())
        dup = sorted({p for p in pins if pins.count(p) > 1})
        if dup:
            raise ValueError(f"BCM pin(s) {dup} used by more than one lamp")
        return v


class StateSection(_Section):
    """``[state]``: durable game state.

    Attributes:
        db: the SQLite file of the game state and the verdict outbox (created if missing;
            relative paths are relative to the working directory).
    """

    db: LaxPath = Path("var/state/table.sqlite")


class LineBet(_Section):
    """One standing line bet of a test player (settled by the settlement subscriber).

    Attributes:
        bet: ``"pass"``, ``"dont-pass"``, ``"come"`` or ``"dont-come"`` (9 NYCRR 5324.52(b)(1)-(4)).
        amount_cents: the flat bet, integer cents (> 0).
        odds_multiple: odds taken or laid as a multiple of the flat bet (0: none), 5324.52(e)(4).
    """

    bet: Literal["pass", "dont-pass", "come", "dont-come"]
    amount_cents: int = Field(gt=0)
    odds_multiple: int = Field(0, ge=0, le=100)


class TestPlayer(_Section):
    """A configured test player whose line bets the settlement subscriber re-places each round.

    Attributes:
        name: the player id (1-64 of letters, digits, ``. _ -``).
        bankroll_cents: the starting bankroll, integer cents.
        bets: the player's standing line bets.
    """

    __test__ = False  # not a pytest class

    name: str
    bankroll_cents: int = Field(100_000, ge=0)
    bets: list[LineBet] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"must be 1-64 characters of letters, digits, '.', '_', '-': {v!r}")
        return v


class SettlementSection(_Section):
    """``[settlement]``: what the settlement subscriber of ``craps-table demo`` settles.

    Attributes:
        profile: the settlement profile (pay tables): a shipped name (``"ny-5324"``,
            ``"nj-13-47"``, ``"ny-4620"``, ``"rules-002"``) or the path of a profile TOML file;
            loaded and checked when the config is.
        players: the test players.
        intake_curve: authenticate and encrypt the wager intake with CURVE: the server is
            settlement's bus key (``[bus] keys_dir`` / ``subscriber_key``) and only terminals whose
            public certificate is in ``intake_authorized_dir`` may connect; each wager then records
            the terminal's public key.
        intake_endpoint: where ``craps-table settle-service`` takes the player terminals' wagers
            (settlement/intake.py, a REP socket); ``""``: none. Without ``intake_curve`` it must be
            a loopback tcp:// or an ipc:// endpoint.
        intake_authorized_dir: the folder of the terminals' public certificates and of
            ``terminals.toml``, the players each terminal serves (settlement/terminals.py).
    """

    profile: str = "ny-5324"
    players: list[TestPlayer] = Field(default_factory=list)
    intake_curve: bool = False           # before intake_endpoint: its check reads it
    intake_endpoint: str = ""
    intake_authorized_dir: LaxPath = Path("var/settlement/terminals")

    @field_validator("intake_endpoint")
    @classmethod
    def _check_intake(cls, v: str, info: ValidationInfo) -> str:
        from settlement.intake import check_endpoint

        return check_endpoint(v, bool(info.data.get("intake_curve"))) if v else v

    @field_validator("profile")
    @classmethod
    def _check_profile(cls, v: str) -> str:
        from settlement.profile import load_profile

        load_profile(v)  # raises ProfileError (a ValueError) naming the file and the key
        return v


class TableConfig(_Section):
    """The whole ``table.toml``. ``bus.table_id`` defaults to ``table.id``.

    ``[camera]`` is :class:`camera.sources.CameraConfig` (frame source and camera settings),
    ``[bus]`` is :class:`bus.config.BusConfig`, ``[health]`` is
    :class:`controller.health.HealthConfig` (safe-state thresholds), the optional ``[firmware]`` is
    :class:`firmware_bridge.config.BridgeConfig` (the microcontroller's serial link) and the
    optional ``[metrics]`` is :class:`controller.metrics.MetricsConfig` (Prometheus endpoint);
    the other sections are defined here.
    """

    table: TableSection = Field(default_factory=TableSection)
    camera: CameraConfig = Field(default_factory=CameraConfig)
    vision: VisionSection = Field(default_factory=VisionSection)
    rules: RulesSection = Field(default_factory=RulesSection)
    boxperson: BoxpersonSection = Field(default_factory=BoxpersonSection)
    bus: BusConfig = Field(default_factory=BusConfig)
    lamps: LampsSection = Field(default_factory=LampsSection)
    state: StateSection = Field(default_factory=StateSection)
    settlement: SettlementSection = Field(default_factory=SettlementSection)
    firmware: BridgeConfig | None = None
    metrics: MetricsConfig | None = None
    #: ``[rounds]``: the round cycle of ``craps-table run --mode automated|live`` (controller/rounds.py)
    rounds: RoundsConfig = Field(default_factory=RoundsConfig)
    health: HealthConfig = Field(default_factory=HealthConfig)

    @model_validator(mode="before")
    @classmethod
    def _bus_table_id(cls, data):
        if isinstance(data, dict):
            table = data.get("table") or {}
            bus = data.get("bus")
            if isinstance(table, dict) and "id" in table and (bus is None or isinstance(bus, dict)):
                bus = dict(bus or {})
                bus.setdefault("table_id", table["id"])
                data = {**data, "bus": bus}
        return data

    @model_validator(mode="after")
    def _firmware_lamps(self) -> "TableConfig":
        if self.lamps.driver == "firmware" and self.firmware is None:
            raise ValueError("lamps.driver = 'firmware' needs a [firmware] section with the serial port")
        return self

    @model_validator(mode="after")
    def _same_table(self) -> "TableConfig":
        if self.bus.table_id != self.table.id:
            raise ValueError(f"bus.table_id {self.bus.table_id!r} differs from table.id {self.table.id!r}")
        return self


def _key_of(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and p.startswith("function-")))


def format_validation_error(exc: ValidationError, where: str) -> str:
    """One line per problem: ``WHERE: key.path: message (got VALUE)``."""
    lines = []
    for err in exc.errors():
        key = _key_of(err.get("loc", ())) or "(top level)"
        msg = err.get("msg", "invalid")
        if err.get("type") == "extra_forbidden":
            msg = "unknown key (not one of the documented keys)"
        got = err.get("input")
        shown = "" if err.get("type") in ("missing", "extra_forbidden") or isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"{where}: {key}: {msg}{shown}")
    return "\n".join(lines)


def parse_config(data: dict, where: str = "config") -> TableConfig:
    """Validate an already-parsed TOML document.

    Raises:
        ConfigError: naming ``where`` and each wrong key.
    """
    try:
        return TableConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, where)) from None


def load_config(path: Path) -> TableConfig:
    """Read and validate ``path`` (TOML).

    Raises:
        ConfigError: the file is missing or unreadable, is not TOML (with line and column), or
            a key is unknown or has a wrong value (the dotted key is named).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(data, str(path))
