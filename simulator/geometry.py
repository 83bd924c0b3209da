"""Geometry of the simulated craps table, in millimetres, and its zones.

Table frame (millimetres, right-handed, z up):

* origin at the inner corner of the playing surface at the **shooter's end**, on the boxperson's
  side; ``x`` runs along the table towards the **far wall** (the end the dice must strike,
  9 NYCRR 5324.52(g)), ``y`` across it towards the stickperson's side; the felt is ``z = 0``.
* the playing surface is ``0 <= x <= length``, ``0 <= y <= width``; rails (high walled sides,
  N.J.A.C. 13:47-20.25(b)1) of ``rail_width`` surround it, their tops ``wall_height`` above
  the felt; the far wall (``x = length``) carries rubber pyramids.
* the chip bank lies on the felt in front of the boxperson (middle of the ``y = 0`` side), the
  dice cup in front of the stickperson (middle of the ``y = width`` side), 9 NYCRR
  5324.52(b)(5) and (k)(2)(iii)-(iv).
* the floor is ``table_height`` below the felt: a die that leaves the table ends there
  (9 NYCRR 5324.52(k)(1)).

Configured with pydantic models so that a wrong key or value is a clear error.
"""
from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Side of a casino die in millimetres: 0.75 in, N.J.A.C. 13:47-20.25(b)2i (0.75 to 0.775 in).
DIE_SIZE_MM = 19.05
#: Thickness and diameter of a casino chip in millimetres (the common 39 mm x 3.3 mm chip).
CHIP_THICKNESS_MM = 3.3
CHIP_DIAMETER_MM = 39.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChipStack(_Strict):
    """A stack of chips standing on the layout (a wager).

    Attributes:
        x, y: centre in table millimetres.
        chips: number of chips, 1..40 (height = chips x 3.3 mm).
        colour: BGR colour of the chips (0..255 each).
    """

    x: float
    y: float
    chips: int = Field(ge=1, le=40)
    colour: tuple[int, int, int] = (40, 40, 200)

    @property
    def height(self) -> float:
        """Height of the stack in millimetres."""
        return self.chips * CHIP_THICKNESS_MM


class SpareDie(_Strict):
    """A spare die resting in the dice cup: "the stickperson ... shall retain all dice, except
    those in active play, in a dice cup at the table", 9 NYCRR 5324.52(a)(5); the shooter's
    remaining dice "shall be returned to the dice cup", (f)(3).

    Attributes:
        face: the face up, 1..6.
        yaw_deg: turn about the vertical, degrees.
    """

    face: int = Field(ge=1, le=6)
    yaw_deg: float = Field(0.0, ge=-360.0, le=360.0)


#: Where spare dice lie in the cup: up to three slots, this far (mm) from the cup's centre.
SPARE_SLOT_RADIUS_MM = 16.0


def default_spares(n: int) -> tuple[SpareDie, ...]:
    """``n`` (0..3) spare dice for the dice cup, faces and turns fixed (the demo's table).

    Raises:
        ValueError: ``n`` outside 0..3.
    """
    if not 0 <= int(n) <= 3:
        raise ValueError(f"spare dice: {n!r}, expected 0..3 (three slots in the cup)")
    return tuple(SpareDie(face=f, yaw_deg=y) for f, y in ((5, 12.0), (2, 40.0), (6, 71.0))[:int(n)])


def _default_stacks() -> tuple[ChipStack, ...]:
    return (
        ChipStack(x=330.0, y=70.0, chips=3, colour=(60, 60, 200)),      # pass line, red $5
        ChipStack(x=620.0, y=60.0, chips=2, colour=(70, 140, 40)),      # pass line, green $25
        ChipStack(x=300.0, y=500.0, chips=4, colour=(40, 40, 40)),      # don't pass, black $100
        ChipStack(x=420.0, y=470.0, chips=1, colour=(200, 200, 200)),   # field, white $1
        ChipStack(x=820.0, y=90.0, chips=5, colour=(60, 60, 200)),      # place bets
        ChipStack(x=850.0, y=500.0, chips=2, colour=(160, 60, 60)),     # blue
    )


class TableGeometry(_Strict):
    """The table, dice and fittings, all in millimetres (see the module docstring for axes).

    Defaults describe a small automated-rig table (1100 x 560 mm playing surface) that a
    1280x720 top-down camera sees whole at about 1 px/mm.

    Raises:
        pydantic.ValidationError: on an unknown key, a non-positive size, or fittings that do
            not fit on the playing surface.
    """

    length: float = Field(1100.0, gt=200.0, le=5000.0, description="playing surface along x, mm")
    width: float = Field(560.0, gt=150.0, le=3000.0, description="playing surface across y, mm")
    rail_width: float = Field(50.0, gt=10.0, le=300.0, description="rail (wall) thickness, mm")
    wall_height: float = Field(200.0, gt=20.0, le=400.0, description="rail top above the felt, mm")
    rubber_depth: float = Field(10.0, gt=1.0, le=40.0, description="depth of the far-wall pyramids, mm")
    rubber_pitch: float = Field(25.0, gt=5.0, le=100.0, description="spacing of the far-wall pyramids, mm")
    table_height: float = Field(800.0, gt=100.0, le=1500.0, description="felt above the floor, mm")
    die_size: float = Field(DIE_SIZE_MM, ge=19.05, le=19.69, description="die side, mm (0.75-0.775 in)")
    far_wall_band: float = Field(50.0, gt=5.0, le=300.0, description="depth of the far-wall zone, mm")
    bank_length: float = Field(260.0, gt=50.0, description="chip bank along x, mm")
    bank_depth: float = Field(90.0, gt=30.0, description="chip bank across y, mm")
    bank_chips: int = Field(12, ge=1, le=40, description="chips per stack in the bank")
    cup_radius: float = Field(38.0, gt=15.0, le=120.0, description="dice cup outer radius, mm")
    cup_height: float = Field(60.0, gt=20.0, le=200.0, description="dice cup height, mm")
    cup_wall: float = Field(3.0, gt=0.5, le=10.0, description="dice cup wall thickness, mm")
    stacks: tuple[ChipStack, ...] = Field(default_factory=_default_stacks)
    spare_dice: tuple[SpareDie, ...] = Field((), max_length=3,
                                             description="spare dice resting in the dice cup (0..3)")

    @model_validator(mode="after")
    def _fits(self) -> "TableGeometry":
        if self.bank_length > self.length * 0.8 or self.bank_depth > self.width * 0.4:
            raise ValueError("chip bank does not fit on the playing surface")
        if 2 * self.cup_radius > self.width * 0.4:
            raise ValueError("dice cup does not fit on the playing surface")
        if self.spare_dice and self.cup_radius - self.cup_wall < SPARE_SLOT_RADIUS_MM + self.die_size / math.sqrt(2):
            raise ValueError("spare dice do not fit in the dice cup")
        r = CHIP_DIAMETER_MM / 2
        for s in self.stacks:
            if not (r <= s.x <= self.length - r and r <= s.y <= self.width - r):
                raise ValueError(f"chip stack at ({s.x}, {s.y}) mm is off the playing surface")
        return self

    # ---- derived places (mm) -------------------------------------------------------------
    @property
    def bank_rect(self) -> tuple[float, float, float, float]:
        """Chip bank ``(x0, y0, x1, y1)`` in mm: middle of the boxperson's (``y = 0``) side."""
        x0 = (self.length - self.bank_length) / 2
        return (x0, 0.0, x0 + self.bank_length, self.bank_depth)

    @property
    def cup_centre(self) -> tuple[float, float]:
        """Dice cup centre ``(x, y)`` in mm: middle of the stickperson's (``y = width``) side."""
        return (self.length / 2, self.width - self.cup_radius - 15.0)

    def spare_dice_poses(self) -> list[tuple[tuple[float, float, float], int, float]]:
        """Each spare die's centre ``(x, y, z)`` (mm, resting on the cup's 3 mm bottom), face up
        and yaw (radians): slot ``k`` of three at :data:`SPARE_SLOT_RADIUS_MM` from the cup's
        centre, 120 degrees apart."""
        cx, cy = self.cup_centre
        out = []
        for k, d in enumerate(self.spare_dice):
            a = math.pi / 2 + 2 * math.pi * k / 3
            out.append(((cx + SPARE_SLOT_RADIUS_MM * math.cos(a), cy + SPARE_SLOT_RADIUS_MM * math.sin(a),
                         3.0 + self.die_size / 2), d.face, math.radians(d.yaw_deg)))
        return out

    @property
    def far_wall_reach_mm(self) -> float:
        """Farthest a die's centre can be from the far wall's line and still touch the wall:
        the rubber's depth plus the die's half diagonal (a corner on the rubber), mm
        (``controller.irregularity.Tolerances.far_wall_reach_mm``)."""
        return self.rubber_depth + self.die_size / math.sqrt(2)

    @property
    def bank_stacks(self) -> list[tuple[float, float]]:
        """Centres ``(x, y)`` in mm of the chip columns filling the bank (a packed grid)."""
        x0, y0, x1, y1 = self.bank_rect
        d = CHIP_DIAMETER_MM + 1.0
        nx = max(1, int((x1 - x0 - 6) // d))
        ny = max(1, int((y1 - y0 - 6) // d))
        ox = x0 + (x1 - x0 - nx * d) / 2 + d / 2
        oy = y0 + (y1 - y0 - ny * d) / 2 + d / 2
        return [(ox + i * d, oy + j * d) for j in range(ny) for i in range(nx)]

    def zones(self) -> dict[str, list[tuple[float, float]]]:
        """Zone polygons in table mm (counter-clockwise, felt plane ``z = 0``).

        Returns:
            ``{"playing", "far_wall_band", "chip_bank", "dice_cup", "rails"}`` to lists of
            ``(x, y)`` vertices. ``rails`` is the outer boundary of the rail tops traced round
            and then back along the inner boundary (a ring as one polygon with a slit);
            ``dice_cup`` is a 24-gon.
        """
        L, W, R = self.length, self.width, self.rail_width
        bx0, by0, bx1, by1 = self.bank_rect
        cx, cy = self.cup_centre
        cup = [(cx + self.cup_radius * math.cos(2 * math.pi * k / 24),
                cy + self.cup_radius * math.sin(2 * math.pi * k / 24)) for k in range(24)]
        outer = [(-R, -R), (L + R, -R), (L + R, W + R), (-R, W + R), (-R, -R)]
        inner = [(0.0, 0.0), (0.0, W), (L, W), (L, 0.0), (0.0, 0.0)]
        return {
            "playing": [(0.0, 0.0), (L, 0.0), (L, W), (0.0, W)],
            "far_wall_band": [(L - self.far_wall_band, 0.0), (L, 0.0), (L, W), (L - self.far_wall_band, W)],
            "chip_bank": [(bx0, by0), (bx1, by0), (bx1, by1), (bx0, by1)],
            "dice_cup": cup,
            "rails": outer + inner,
        }


class CameraConfig(_Strict):
    """The top-down camera over the table.

    Attributes:
        width, height: image size in pixels.
        fps: frames per second of table time.
        height_mm: camera height above the felt (pinhole, looking straight down at the table
            centre); the focal length is chosen so that the table and rails fit with ``margin_mm``.
        margin_mm: border around the rails kept in view.
        light_dir: direction *towards* the light (x, y, z), any length.
        ambient, diffuse: shading weights (0..1.5).
        brightness: overall gain (0.2..2).
        noise_sigma: Gaussian sensor noise, grey levels (0..40).
        blur_sigma: Gaussian optical blur, pixels (0..5).
        motion_blur: sub-frame samples averaged for moving dice (1 = none, up to 8).
        die_colour: ``"red"`` (translucent casino die, white pips) or ``"white"`` (black pips).
        layout_lines: draw the layout's off-white lines on the felt.
    """

    width: int = Field(1280, ge=64, le=7680)
    height: int = Field(720, ge=48, le=4320)
    fps: float = Field(60.0, gt=1.0, le=1000.0)
    height_mm: float = Field(1800.0, gt=300.0, le=10000.0)
    margin_mm: float = Field(20.0, ge=0.0, le=2000.0)
    light_dir: tuple[float, float, float] = (-0.3, -0.4, 1.0)
    ambient: float = Field(0.45, ge=0.0, le=1.5)
    diffuse: float = Field(0.6, ge=0.0, le=1.5)
    brightness: float = Field(1.0, ge=0.2, le=2.0)
    noise_sigma: float = Field(2.0, ge=0.0, le=40.0)
    blur_sigma: float = Field(0.6, ge=0.0, le=5.0)
    motion_blur: int = Field(2, ge=1, le=8)
    die_colour: str = Field("red", pattern="^(red|white)$")
    layout_lines: bool = True
