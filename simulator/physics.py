"""MuJoCo model of the craps table and the state of its two dice.

The MJCF model is generated from a :class:`~simulator.geometry.TableGeometry` (millimetres in,
SI units inside MuJoCo). Everything but the dice is static: felt, rails (walls), the rubber
pyramids of the far wall, chip stacks on the layout, the chip bank (a tray of chip columns) and
the dice cup (a hollow cylinder). Each die is a 19.05 mm cube of cellulose (1.3 g/cm^3,
about 9 g) on a free joint.

Contact parameters were tuned by eye and by the settling time: dice bounce a little on felt,
more on the rubber, tumble, and come to rest 1.1-1.8 s after leaving the shooter's hand on the
default 1.1 m table (1.7-2.7 s on a 2.4 m one; docs/simulator.md, "Physics").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import mujoco
import numpy as np

from .dice import face_towards, quat_to_mat, quat_with_face_up, value_up
from .geometry import CHIP_DIAMETER_MM, TableGeometry

#: Physics timestep, seconds. Coarse enough for thousands of throws per minute, fine enough for
#: 4 m/s dice against 10 mm walls (see docs/simulator.md).
TIMESTEP = 0.002
#: A die is at rest when, for :data:`REST_WINDOW_S`, its centre stays within this many mm ...
REST_MOVE_MM = 0.6
#: ... and its orientation within this many degrees (soft contacts let a resting die tremble
#: by a few hundredths of a millimetre, so rest is judged by displacement, not velocity).
REST_TURN_DEG = 1.0
#: Seconds a die must keep still to count as at rest.
REST_WINDOW_S = 0.15
#: A die is flat when its upper face is within this many degrees of level.
FLAT_TILT_DEG = 3.0
#: A contact bears on a flat die (counts in :attr:`DieState.sides`) when its normal force is at
#: least this share of the die's weight (a flat die grazing a wall rests on the felt alone).
CONTACT_FORCE_CUT = 0.02
#: The same for a die not lying flat: whatever holds it tilted bears on it, and a lean carried
#: mostly by the felt's friction pushes on what it leans on with 1-2 % of its weight.
LEAN_FORCE_CUT = 0.001

_M = 0.001  # millimetres -> metres
#: Where a die not yet released (:attr:`DieStart.release_s`) is parked, table mm (die ``i``
#: ``100 * i`` mm further along x): 3 m behind the shooter's end, 300 mm below the felt's
#: level and 500 mm above the floor, where no geom is and no camera over the table sees it
#: (the renderer draws nothing outside the frame): the die closed in the shooter's hand.
HELD_POS_MM = (-3000.0, -3000.0, -300.0)

#: Object classes of the geoms, by name prefix.
CLASSES = ("felt", "floor", "rail", "far_wall", "chips", "bank", "cup", "die")


def _box(name: str, cls: str, centre, half, extra: str = "") -> str:
    c = " ".join(f"{v * _M:.6f}" for v in centre)
    h = " ".join(f"{v * _M:.6f}" for v in half)
    return f'<geom name="{name}" class="{cls}" type="box" pos="{c}" size="{h}" {extra}/>'


def _cyl(name: str, cls: str, x, y, z0, z1, r, extra: str = "") -> str:
    return (f'<geom name="{name}" class="{cls}" type="cylinder" pos="{x * _M:.6f} {y * _M:.6f} '
            f'{(z0 + z1) / 2 * _M:.6f}" size="{r * _M:.6f} {(z1 - z0) / 2 * _M:.6f}" {extra}/>')


def build_mjcf(g: TableGeometry, timestep: float = TIMESTEP) -> str:
    """Return the MJCF XML (str) of the table described by ``g`` with two dice ``die0``, ``die1``.

    Geom names start with their class (see :data:`CLASSES`): ``felt``, ``floor``,
    ``rail_*``, ``far_wall_*`` (the far rail and its rubber pyramids), ``chips_*``, ``bank_*``,
    ``cup_*``, ``die*``.
    """
    L, W, R, H = g.length, g.width, g.rail_width, g.wall_height
    half_die = g.die_size / 2
    geoms: list[str] = [
        f'<geom name="floor" class="floor" type="plane" pos="0 0 {-g.table_height * _M:.4f}" size="6 6 0.1"/>',
        _box("felt", "felt", (L / 2, W / 2, -10), (L / 2 + R, W / 2 + R, 10)),
        _box("rail_near", "rail", (-R / 2, W / 2, H / 2), (R / 2, W / 2 + R, H / 2)),
        _box("far_wall_rail", "far_wall", (L + R / 2, W / 2, H / 2), (R / 2, W / 2 + R, H / 2)),
        _box("rail_box", "rail", (L / 2, -R / 2, H / 2), (L / 2, R / 2, H / 2)),
        _box("rail_stick", "rail", (L / 2, W + R / 2, H / 2), (L / 2, R / 2, H / 2)),
    ]
    # rubber pyramids on the far wall: vertical diamond prisms half sunk into the wall
    s = g.rubber_depth / math.sqrt(2)
    n = max(1, int(W // g.rubber_pitch))
    off = (W - (n - 1) * g.rubber_pitch) / 2
    zr = 0.7 * H
    q45 = f"{math.cos(math.pi / 8):.6f} 0 0 {math.sin(math.pi / 8):.6f}"
    for k in range(n):
        geoms.append(_box(f"far_wall_rubber{k}", "rubber", (L, off + k * g.rubber_pitch, zr / 2),
                          (s, s, zr / 2), f'quat="{q45}"'))
    r = CHIP_DIAMETER_MM / 2
    for k, st in enumerate(g.stacks):
        geoms.append(_cyl(f"chips_{k}", "chips", st.x, st.y, 0.0, st.height, r))
    # chip bank: a tray (floor plate and four low walls) full of chip columns
    bx0, by0, bx1, by1 = g.bank_rect
    bank_h = g.bank_chips * 3.3
    geoms.append(_box("bank_plate", "bank", ((bx0 + bx1) / 2, (by0 + by1) / 2, 1.5),
                      ((bx1 - bx0) / 2, (by1 - by0) / 2, 1.5)))
    wall_h = 0.6 * bank_h
    for name, c, h in (
        ("bank_wall_w", (bx0 + 1.5, (by0 + by1) / 2, wall_h / 2), (1.5, (by1 - by0) / 2, wall_h / 2)),
        ("bank_wall_e", (bx1 - 1.5, (by0 + by1) / 2, wall_h / 2), (1.5, (by1 - by0) / 2, wall_h / 2)),
        ("bank_wall_n", ((bx0 + bx1) / 2, by1 - 1.5, wall_h / 2), ((bx1 - bx0) / 2, 1.5, wall_h / 2)),
    ):
        geoms.append(_box(name, "bank", c, h))
    for k, (x, y) in enumerate(g.bank_stacks):
        geoms.append(_cyl(f"bank_chips{k}", "bank", x, y, 3.0, 3.0 + bank_h, r))
    # dice cup: bottom disc and a ring of wall staves
    cx, cy = g.cup_centre
    geoms.append(_cyl("cup_bottom", "cup", cx, cy, 0.0, 3.0, g.cup_radius))
    staves = 20
    rc = g.cup_radius - g.cup_wall / 2
    half_w = rc * math.tan(math.pi / staves) + 0.3
    for k in range(staves):
        a = 2 * math.pi * k / staves
        q = f"{math.cos(a / 2):.6f} 0 0 {math.sin(a / 2):.6f}"
        geoms.append(_box(f"cup_wall{k}", "cup", (cx + rc * math.cos(a), cy + rc * math.sin(a),
                                                  g.cup_height / 2),
                          (g.cup_wall / 2, half_w, g.cup_height / 2), f'quat="{q}"'))
    # spare dice resting in the cup (static: part of the cup, 9 NYCRR 5324.52(a)(5))
    for k, (c, face, yaw) in enumerate(g.spare_dice_poses()):
        q = " ".join(f"{v:.6f}" for v in quat_with_face_up(face, yaw))
        geoms.append(_box(f"cup_spare{k}", "cup", c, (half_die, half_die, half_die), f'quat="{q}"'))
    dice = []
    for i in range(2):
        dice.append(
            f'<body name="die{i}" pos="{(100 + 40 * i) * _M} 0.1 0.2"><freejoint name="die{i}"/>'
            f'<geom name="die{i}" class="die" type="box" size="{half_die * _M:.6f} {half_die * _M:.6f} '
            f'{half_die * _M:.6f}"/></body>')
    body = "\n    ".join(geoms + dice)
    return f"""<mujoco model="craps-table">
  <option timestep="{timestep}" integrator="implicitfast" cone="elliptic" gravity="0 0 -9.81"/>
  <default>
    <geom condim="3" solimp="0.9 0.95 0.001 0.5 2" solref="0.01 0.7" friction="0.3 0.005 0.0001"/>
    <default class="felt"><geom friction="0.12 0.005 0.0001" solref="0.01 0.6"/></default>
    <default class="floor"><geom friction="0.6 0.005 0.0001" solref="0.01 1"/></default>
    <default class="rail"><geom friction="0.3 0.005 0.0001" solref="0.01 0.5"/></default>
    <default class="far_wall"><geom friction="0.3 0.005 0.0001" solref="0.01 0.4"/></default>
    <default class="rubber"><geom friction="0.7 0.005 0.0001" solref="0.01 0.1"/></default>
    <default class="chips"><geom friction="0.5 0.005 0.0001" solref="0.01 0.8"/></default>
    <default class="bank"><geom friction="0.5 0.005 0.0001" solref="0.01 0.9"/></default>
    <default class="cup"><geom friction="0.5 0.005 0.0001" solref="0.01 0.9"/></default>
    <default class="die"><geom friction="0.1 0.005 0.0001" density="1300" solref="0.01 0.5"/></default>
  </default>
  <worldbody>
    {body}
  </worldbody>
</mujoco>
"""


@dataclass(slots=True)
class DieStart:
    """Initial state of a die, table frame.

    Attributes:
        pos_mm: centre ``(x, y, z)`` in millimetres.
        quat: orientation ``(w, x, y, z)``, die to table.
        vel_mm_s: linear velocity in mm/s.
        spin_rad_s: angular velocity (world frame) in rad/s.
        release_s: table seconds after :meth:`TableSim.reset` at which the die leaves the
            shooter's hand in this state (0: at once). Until then it is held (closed in the
            hand, out of the camera's sight): parked still at :data:`HELD_POS_MM`, where nothing
            touches it and the camera does not see it (the ``late-release`` scenario,
            9 NYCRR 5324.52(k)(2)(i)).
    """

    pos_mm: tuple[float, float, float]
    quat: tuple[float, float, float, float]
    vel_mm_s: tuple[float, float, float] = (0.0, 0.0, 0.0)
    spin_rad_s: tuple[float, float, float] = (0.0, 0.0, 0.0)
    release_s: float = 0.0


@dataclass(slots=True)
class DieState:
    """The state of one die at an instant (ground truth).

    Attributes:
        pos_mm: centre ``(x, y, z)`` in mm, float64 (3,).
        quat: ``(w, x, y, z)``, float64 (4,).
        value: the face most nearly up (1..6).
        tilt_deg: angle between that face's normal and the vertical, degrees.
        flat: upper face level within :data:`FLAT_TILT_DEG`.
        rests_on: ``"felt" | "chips" | "bank" | "cup" | "rail" | "off-table" | "die"``.
        sides: load-bearing contacts as ``[{"face": 1..6, "on": class}]``, one per (face,
            object) pair: which side of the die rests on what (normal force at least
            :data:`CONTACT_FORCE_CUT` of the die's weight, :data:`LEAN_FORCE_CUT` for a die
            not lying flat).
        struck_far_wall: the die has touched the far wall or its rubber since the throw began.
        speed_mm_s, spin_rad_s: magnitudes of the linear and angular velocity.
        at_rest: the die has kept still for :data:`REST_WINDOW_S`.
    """

    pos_mm: np.ndarray
    quat: np.ndarray
    value: int
    tilt_deg: float
    flat: bool
    rests_on: str
    sides: list[dict] = field(default_factory=list)
    struck_far_wall: bool = False
    speed_mm_s: float = 0.0
    spin_rad_s: float = 0.0
    at_rest: bool = False

    def objects_under(self) -> set[int]:
        """Faces (values) resting on an object other than the felt or the floor."""
        return {s["face"] for s in self.sides if s["on"] not in ("felt", "floor")}

    def to_json(self) -> dict:
        """JSON-ready truth (without the pixel centre, which the renderer adds)."""
        return {
            "value": int(self.value),
            "tilt_deg": round(self.tilt_deg, 2),
            "pose": {"pos_mm": [round(float(v), 3) for v in self.pos_mm],
                     "quat": [round(float(v), 6) for v in self.quat]},
            "rests_on": self.rests_on,
            "sides": list(self.sides),
            "flat": bool(self.flat),
            "struck_far_wall": bool(self.struck_far_wall),
            "moving": not self.at_rest,
            "centre_mm": [round(float(self.pos_mm[0]), 2), round(float(self.pos_mm[1]), 2)],
        }


class TableSim:
    """The physics of one table: set the dice going, advance time, read their state.

    Args:
        geometry: the table (mm).
        timestep: physics step in seconds.

    Raises:
        ValueError: if the generated model does not compile (a geometry MuJoCo rejects).
    """

    def __init__(self, geometry: TableGeometry, timestep: float = TIMESTEP) -> None:
        self.geometry = geometry
        self.xml = build_mjcf(geometry, timestep)
        try:
            self.model = mujoco.MjModel.from_xml_string(self.xml)
        except Exception as exc:  # mujoco raises ValueError with the compiler's message
            raise ValueError(f"table model does not compile: {exc}") from exc
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._cls = np.array([self._class_of(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, i) or "")
                              for i in range(m.ngeom)])
        self.die_geoms = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"die{i}") for i in range(2)]
        bodies = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"die{i}") for i in range(2)]
        self._qadr = [int(m.jnt_qposadr[m.body_jntadr[b]]) for b in bodies]
        self._vadr = [int(m.jnt_dofadr[m.body_jntadr[b]]) for b in bodies]
        self._far = np.isin(self._cls, ["far_wall"])
        self._weight = float(m.body_mass[bodies[0]]) * 9.81
        self.wall_contacts: list[tuple[float, int]] = []
        self._touching = [False, False]
        self._force = np.zeros(6)
        self._ref: list[tuple[np.ndarray, np.ndarray]] = []
        self._still_since = [0.0, 0.0]
        self._agitate_until = 0.0
        self._next_kick = 0.0
        self._rng = np.random.default_rng(0)
        self._starts: list[DieStart] = []
        self._held = [False, False]

    @staticmethod
    def _class_of(name: str) -> str:
        if name.startswith("die"):
            return "die"
        if name.startswith("far_wall"):
            return "far_wall"
        for c in ("felt", "floor", "rail", "chips", "bank", "cup"):
            if name.startswith(c):
                return c
        return "felt"

    @property
    def t(self) -> float:
        """Simulated time since :meth:`reset`, seconds."""
        return float(self.data.time)

    def reset(self, starts: Sequence[DieStart], agitate_s: float = 0.0, seed: int = 0) -> None:
        """Place both dice and set them going; clears the far-wall flags and the clock.

        Args:
            starts: the two dice's initial states.
            starts: the two dice's initial states; a die with ``release_s > 0`` is held (see
                :class:`DieStart`) and set going in its state at that time.
            agitate_s: for this many table seconds the bed shaker runs (an automated rig's
                shaker left on): every 40-80 ms each die on the felt gets a random kick of
                0.25-0.5 m/s up and spin, so the dice keep moving (the ``still-moving``
                scenario). 0 for an ordinary throw.
            seed: seeds the kicks.

        Raises:
            ValueError: unless exactly two starts are given.
        """
        if len(starts) != 2:
            raise ValueError(f"need a start for each of the two dice, got {len(starts)}")
        mujoco.mj_resetData(self.model, self.data)
        self._starts = list(starts)
        self._held = [float(s.release_s) > 0 for s in starts]
        for i, s in enumerate(starts):
            self._place(i, s)
        self.wall_contacts = []
        self._touching = [False, False]
        mujoco.mj_forward(self.model, self.data)
        self._note_strikes()
        self._ref = self.poses()
        self._still_since = [0.0, 0.0]
        self._agitate_until = float(agitate_s)
        self._next_kick = 0.0
        self._rng = np.random.default_rng(seed)

    def _place(self, i: int, s: DieStart) -> None:
        """Put die ``i`` in state ``s`` (or, held, parked still at :data:`HELD_POS_MM`)."""
        d = self.data
        qa, va = self._qadr[i], self._vadr[i]
        q = np.asarray(s.quat, dtype=float)
        d.qpos[qa + 3:qa + 7] = q / np.linalg.norm(q)
        if self._held[i]:
            d.qpos[qa:qa + 3] = (np.array(HELD_POS_MM) + np.array([100.0 * i, 0.0, 0.0])) * _M
            d.qvel[va:va + 6] = 0.0
            return
        d.qpos[qa:qa + 3] = np.asarray(s.pos_mm, dtype=float) * _M
        d.qvel[va:va + 3] = np.asarray(s.vel_mm_s, dtype=float) * _M
        d.qvel[va + 3:va + 6] = np.asarray(s.spin_rad_s, dtype=float)

    def held(self, i: int) -> bool:
        """True while die ``i`` has not yet left the shooter's hand (:attr:`DieStart.release_s`)."""
        return self._held[i]

    def _release_due(self) -> None:
        """Hold the held dice still; release those whose time has come (before a step)."""
        for i, s in enumerate(self._starts):
            if not self._held[i]:
                continue
            if self.t >= float(s.release_s) - 1e-9:
                self._held[i] = False
                self._still_since[i] = self.t
            self._place(i, s)
        mujoco.mj_forward(self.model, self.data)

    @property
    def struck(self) -> list[bool]:
        """Per die: it has touched the far wall or its rubber."""
        return [any(d == i for _, d in self.wall_contacts) for i in range(2)]

    @property
    def wall_hits(self) -> list[tuple[float, int]]:
        """Each die's first far-wall contact ``(t_s, die)``, in time order (the truth of
        "struck")."""
        first: dict[int, float] = {}
        for t, d in self.wall_contacts:
            first.setdefault(d, t)
        return [(t, d) for d, t in sorted(first.items(), key=lambda dt: dt[1])]

    def _note_strikes(self) -> None:
        """Notes the start of every far-wall contact in ``wall_contacts`` as ``(t_s, die)``
        (what a far-wall sensor reports: each impact, a die striking again after it left the
        wall included; the die's identity is the simulator's, a sensor does not give it).
        Runs every other physics step."""
        n = self.data.ncon
        pairs = self.data.contact.geom[:n]
        far = pairs[self._far[pairs[:, 0]] | self._far[pairs[:, 1]]] if n else pairs
        for i, g in enumerate(self.die_geoms):
            hit = bool(len(far)) and bool((far == g).any())
            if hit and not self._touching[i]:
                self.wall_contacts.append((float(self.t), i))
            self._touching[i] = hit

    def advance(self, seconds: float) -> None:
        """Advance the physics by ``seconds`` (rounded to whole steps), noting far-wall strikes.

        Contacts are inspected every other step (4 ms), shorter than any contact lasts with
        these contact parameters, so no strike is missed.
        """
        steps = max(1, int(round(seconds / self.model.opt.timestep)))
        while steps > 0:
            if self.t < self._agitate_until and self.t >= self._next_kick:
                self._kick()
            if any(self._held):
                self._release_due()
            k = min(2, steps)
            mujoco.mj_step(self.model, self.data, nstep=k)
            steps -= k
            self._note_strikes()
        self._track_rest()

    def _kick(self) -> None:
        rng = self._rng
        for i, va in enumerate(self._vadr):
            z = self.data.qpos[self._qadr[i] + 2] / _M
            if -1.0 < z < self.geometry.die_size * 0.9:     # resting or rolling on the bed
                self.data.qvel[va:va + 3] += np.array([rng.uniform(-0.15, 0.15), rng.uniform(-0.15, 0.15),
                                                      rng.uniform(0.25, 0.5)])
                self.data.qvel[va + 3:va + 6] += rng.uniform(-15.0, 15.0, 3)
        self._next_kick = self.t + rng.uniform(0.04, 0.08)

    def _track_rest(self) -> None:
        now = self.poses()
        for i, (pos, quat) in enumerate(now):
            rpos, rquat = self._ref[i]
            turn = 2 * math.degrees(math.acos(min(1.0, abs(float(np.dot(quat, rquat))))))
            if np.linalg.norm(pos - rpos) > REST_MOVE_MM or turn > REST_TURN_DEG:
                self._ref[i] = (pos, quat)
                self._still_since[i] = self.t

    def at_rest(self, i: int) -> bool:
        """True when die ``i`` has kept still (within :data:`REST_MOVE_MM` and
        :data:`REST_TURN_DEG`) for :data:`REST_WINDOW_S` seconds of table time (never while
        held in the shooter's hand)."""
        if self._held[i]:
            return False
        return self.t - self._still_since[i] >= REST_WINDOW_S

    def _velocities(self, i: int) -> tuple[float, float]:
        va = self._vadr[i]
        v = self.data.qvel[va:va + 6]
        return float(np.linalg.norm(v[:3]) / _M), float(np.linalg.norm(v[3:]))

    def moving(self) -> bool:
        """True until both dice are at rest (see :meth:`at_rest`)."""
        return not (self.at_rest(0) and self.at_rest(1))

    def poses(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(pos_mm (3,), quat (4,)), ...]`` for both dice (copies)."""
        out = []
        for qa in self._qadr:
            q = self.data.qpos[qa:qa + 7]
            out.append((q[:3] / _M, q[3:].copy()))
        return out

    def die_states(self) -> list[DieState]:
        """The ground-truth state of both dice now (see :class:`DieState`)."""
        m, d = self.model, self.data
        g = self.geometry
        contacts: list[list[tuple[str, np.ndarray]]] = [[], []]
        poses = self.poses()
        rots = [quat_to_mat(q) for _, q in poses]
        ups = [value_up(r) for r in rots]          # (value, tilt_deg) per die
        # A die not lying flat counts every object pressing on it, however lightly: at rest
        # 42 degrees against the chip bank's side, friction on the felt carries it and the
        # bank's push is 1.7-2.0 % of its weight, on either side of the flat dice's cut.
        tilted = [tilt > FLAT_TILT_DEG for _, tilt in ups]
        for c in range(d.ncon):
            con = d.contact[c]
            g1, g2 = int(con.geom[0]), int(con.geom[1])
            for i, dg in enumerate(self.die_geoms):
                if dg not in (g1, g2):
                    continue
                other = g2 if g1 == dg else g1
                mujoco.mj_contactForce(m, d, c, self._force)
                if self._force[0] < (LEAN_FORCE_CUT if tilted[i] else CONTACT_FORCE_CUT) * self._weight:
                    continue
                normal = np.array(con.frame[:3]) * (1.0 if g1 == dg else -1.0)  # die -> other
                contacts[i].append((str(self._cls[other]), normal))
        out = []
        for i, ((pos, quat), rot, (value, tilt)) in enumerate(zip(poses, rots, ups)):
            sides: list[dict] = []
            for cls, normal in contacts[i]:
                entry = {"face": face_towards(rot, normal), "on": cls if cls != "far_wall" else "rail"}
                if entry not in sides:
                    sides.append(entry)
            speed, spin = self._velocities(i)
            rests_on = self._rests_on(pos, contacts[i], g)
            out.append(DieState(
                pos_mm=pos, quat=quat, value=value, tilt_deg=tilt,
                flat=bool(tilt <= FLAT_TILT_DEG), at_rest=self.at_rest(i),
                rests_on=rests_on, sides=sides, struck_far_wall=self.struck[i],
                speed_mm_s=speed, spin_rad_s=spin))
        return out

    @staticmethod
    def _rests_on(pos: np.ndarray, contacts: list[tuple[str, np.ndarray]], g: TableGeometry) -> str:
        """Where the die rests, by priority (9 NYCRR 5324.52(k)(1), (k)(2)(iii)-(iv))."""
        x, y, z = pos
        R = g.rail_width
        classes = {c for c, _ in contacts}
        below = {c for c, n in contacts if n[2] < -0.3}    # objects under the die
        if "floor" in classes or z < -g.die_size or not (-R <= x <= g.length + R and -R <= y <= g.width + R):
            return "off-table"
        if "cup" in classes:
            # in the cup, or on its rim; a die on the felt against the cup's outside is on the
            # layout with a side touching the cup, as one against a rail
            cx, cy = g.cup_centre
            if math.hypot(x - cx, y - cy) < g.cup_radius or "cup" in below:
                return "cup"
        if "bank" in classes:
            return "bank"
        if ("rail" in below or "far_wall" in below) and z > g.wall_height * 0.5:
            return "rail"
        if "die" in below:
            return "die"
        if "chips" in classes:
            return "chips"
        return "felt"
