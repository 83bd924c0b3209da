"""Configuration of the firmware bridge (the ``[firmware]`` table of the table's TOML config).

Example (config/table.toml)::

    [firmware]
    port = "/dev/serial/by-id/usb-Raspberry_Pi_Pico_E660583883265427-if00"
    baud = 115200
    require_wall_sensor = true

Every field has a default except ``port``; unknown keys are refused with their name
(``extra="forbid"``), so a typo such as ``hearbeat_period_s`` is an error, not a silent default.
Timing defaults follow docs/firmware-protocol.md section "Timing".
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class BridgeConfig(BaseModel):
    """Serial link to the table microcontroller.

    Times are in seconds.  ``port`` is a device path; on the Raspberry Pi use the stable
    ``/dev/serial/by-id/...`` symlink (``/dev/ttyACM0`` numbering changes across re-plugs).

    Raises ``pydantic.ValidationError`` naming the offending field on a bad value or key.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    port: str = Field(min_length=1, description="serial device path, e.g. /dev/serial/by-id/usb-...-if00")
    baud: int = Field(115200, gt=0, description="UART baud rate (ignored by USB CDC and pseudo-terminals)")
    exclusive: bool = Field(True, description="take an exclusive lock (flock) on the device")
    ack_timeout_s: float = Field(0.05, gt=0, le=5, description="first wait for ACK before retransmitting (doubles per transmission, up to 8x)")
    retries: int = Field(5, ge=0, le=100, description="retransmissions after the first transmission")
    command_deadline_s: float = Field(2.0, gt=0, le=60, description="longest send_command() may take, link outages included")
    heartbeat_period_s: float = Field(0.2, gt=0, le=10, description="host heartbeat period")
    link_timeout_s: float = Field(0.6, gt=0, le=30, description="no valid frame for this long: link down")
    hello_timeout_s: float = Field(0.2, gt=0, le=10, description="wait for VERSION after HELLO")
    hello_retries: int = Field(4, ge=0, le=100, description="HELLO retransmissions before the port is reopened")
    host_timeout_s: float = Field(1.0, gt=0, le=60, description="told to the MCU: no host frame for this long -> failsafe")
    reconnect_initial_s: float = Field(0.05, gt=0, le=60, description="first reconnect delay")
    reconnect_max_s: float = Field(2.0, gt=0, le=600, description="reconnect delay cap (doubles from the initial)")
    write_timeout_s: float = Field(0.5, gt=0, le=10, description="a blocked write longer than this drops the link")
    require_wall_sensor: bool = Field(True, description="refuse rolls unless the link is up and the far-wall sensor works")

    @model_validator(mode="after")
    def _check_timing(self) -> "BridgeConfig":
        if self.link_timeout_s < 2 * self.heartbeat_period_s:
            raise ValueError(f"link_timeout_s ({self.link_timeout_s}) must be at least twice heartbeat_period_s ({self.heartbeat_period_s})")
        if self.host_timeout_s < 2 * self.heartbeat_period_s:
            raise ValueError(f"host_timeout_s ({self.host_timeout_s}) must be at least twice heartbeat_period_s ({self.heartbeat_period_s})")
        if self.reconnect_max_s < self.reconnect_initial_s:
            raise ValueError("reconnect_max_s must be >= reconnect_initial_s")
        if self.heartbeat_period_s * 1000 > 0xFFFF or self.host_timeout_s * 1000 > 0xFFFF:
            raise ValueError("heartbeat_period_s and host_timeout_s must be below 65.535 s (sent as u16 ms)")
        return self


def load_bridge_config(path: Path, section: str = "firmware") -> BridgeConfig:
    """Read ``[section]`` of the TOML file ``path`` into a :class:`BridgeConfig`.

    Raises ``ValueError`` with the file, section and field named if the file is unreadable, the
    section is missing, or a key is unknown or out of range.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: cannot read firmware config: {exc}") from exc
    table = data.get(section)
    if not isinstance(table, dict):
        raise ValueError(f"{path}: no [{section}] table")
    try:
        return BridgeConfig.model_validate(table)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or section}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{path} [{section}]: {problems}") from exc
