"""Serial edge to the table microcontroller: lamps, far-wall strike sensor, shooter button, door
and tilt switches, dice shaker and blower.  Protocol: docs/firmware-protocol.md.

Main entry points::

    from firmware_bridge import BridgeConfig, FirmwareLink, FirmwareLampDriver, SimulatedMcu
"""
from .config import BridgeConfig, load_bridge_config
from .link import CommandFailed, CommandResult, FirmwareLink, LinkEvent, LinkState, LinkStatus, McuError
from .lamps import FirmwareLampDriver
from .mcu_sim import FaultConfig, SimulatedMcu
from .protocol import (
    ErrorCode,
    InputId,
    LampId,
    LampMode,
    LampSetting,
    SetLamps,
    Shaker,
    ShakerAction,
)

__all__ = [
    "BridgeConfig", "load_bridge_config", "CommandFailed", "CommandResult", "FirmwareLink", "LinkEvent",
    "LinkState", "LinkStatus", "McuError", "FirmwareLampDriver", "FaultConfig", "SimulatedMcu", "ErrorCode",
    "InputId", "LampId", "LampMode", "LampSetting", "SetLamps", "Shaker", "ShakerAction",
]
