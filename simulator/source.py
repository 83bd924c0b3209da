"""``SimSource``: the simulated table as a camera frame source with ground truth.

Each throw is played as a sequence of frames at ``fps`` frames per second of table time:

1. ``idle`` for ``idle_s``: the empty table (the dice are in the shooter's hand);
2. ``motion``: from the release until both dice have kept still for 0.15 s (or the throw's
   cut-off), with motion blur from sub-frame poses;
3. ``rest`` for ``rest_s``: the dice lie still;
4. pick-up: the dice vanish (the stickperson collects them) and the next throw's ``idle``
   frames begin.

Before a throw listed in ``offers`` (a change of shooter), ``idle_s`` of empty table and a dice
offer are played first (:mod:`simulator.offer`, 9 NYCRR 5324.52(i)(3), (i)(4)): five dice slid
by the stick from the dice cup to a player, at rest, two picked up and three returned to the
cup, where they stay as the spare dice from then on. Its frames' truth has ``"phase":
"offer"``, ``"stage"`` (``"slide"``, ``"rest"``, ``"return"``, ``"returned"``) and per die
``value``, ``centre_mm`` and ``centre_px``.

Every :class:`camera.base.Frame` carries ``truth``::

    {"throw": int, "phase": "idle" | "motion" | "rest", "t": float, "scenario": str,
     "seed": int,                       # the seed of this throw (SimSource seed + throw)
     "stacks": [{"x_mm", "y_mm", "radius_mm", "height_mm"}],   # chip stacks the scenario
                                        # added for this throw (beyond SimSource.chip_stacks)
     "dice": [                          # empty while idle
        {"value": 1..6,                 # face most nearly up
         "tilt_deg": float,             # of that face from level
         "pose": {"pos_mm": [x, y, z], "quat": [w, x, y, z]},
         "rests_on": "felt" | "chips" | "bank" | "cup" | "rail" | "off-table" | "die",
         "sides": [{"face": 1..6, "on": "felt" | "chips" | ...}],   # which side rests on what
         "flat": bool, "struck_far_wall": bool, "moving": bool,
         "centre_px": [u, v],           # upper-face centre in the image
         "bbox_px": [x0, y0, x1, y1],   # the projected cube, x1/y1 exclusive
         "centre_mm": [x, y]}, ...]}    # table millimetres (see simulator.geometry)

Motion and rest frames also carry ``truth["throw_t"]``, seconds since the release. On the last
frame of a throw's ``motion`` and each ``rest`` frame, ``truth["irregularities"]`` lists what
the final state shows (see :func:`simulator.scenarios.irregularities`), counting
``still-moving`` when a die still moved at the timeout (``timeout_s``, 8 s by default).
"""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from camera.base import Frame

from .geometry import CHIP_DIAMETER_MM, CameraConfig, TableGeometry, default_spares
from .offer import FOREIGN_FACES, FOREIGN_REST_S, after_offer, foreign_poses, offer_motion
from .physics import TableSim
from .render import DicePose, Renderer
from .scenarios import DEFAULT_TIMEOUT_S, SCENARIOS, irregularities, plan_throw


def _stacks_json(stacks) -> list[dict]:
    r = CHIP_DIAMETER_MM / 2
    return [{"x_mm": s.x, "y_mm": s.y, "radius_mm": r, "height_mm": round(s.height, 3)} for s in stacks]


class SimSource:
    """Frames of successive simulated throws (a :class:`camera.base.FrameSource`).

    Args:
        scenario: one of :data:`simulator.scenarios.SCENARIOS` (``"natural"`` by default).
        seed: seed of the first throw; throw ``k`` uses ``seed + k`` (so
            ``craps-table sim --seed N`` writes the first throw of ``SimSource(..., seed=N)``).
        width, height: image size in pixels.
        fps: frames per second of table time.
        throws: number of throws, or ``None`` for endless.
        geometry: the table (default :class:`TableGeometry`).
        camera: camera settings; ``width``, ``height`` and ``fps`` override its fields.
        idle_s, rest_s: seconds of empty table before each throw and of dice at rest after it.
        timeout_s: table seconds after which a throw whose dice still move is cut off (the
            ``still-moving`` scenario keeps its dice moving past it).
        realtime: sleep so frames come no faster than ``fps`` (for a live service); tests
            leave it off.
        spare_dice: spare dice resting in the dice cup, 0..3 (:func:`default_spares`, in
            place of ``geometry``'s), 9 NYCRR 5324.52(a)(5).
        offers: indices of the throws before which the stickperson offers the dice to a new
            shooter (:mod:`simulator.offer`; e.g. ``(0,)``, the start of play). From the first
            offer on, the cup holds the three dice returned to it. Not played with
            :meth:`throw_on_command` (an automated rig offers no dice).
        foreign: throw index -> foreign dice (1..4) thrown with the pair, drawn kinematically
            (:func:`simulator.offer.foreign_poses`: they strike the far wall and roll back to
            rest on the layout; the physics does not know them), in ``truth["foreign"]``
            (``value``, ``centre_mm``) of that throw's motion and rest frames.

    A simulated far-wall strike sensor: :meth:`on_wall_strike` registers a callback that is
    given, before the frame in which it happens, the start of every contact of a die with the
    far wall in the physics (a die's later strikes and its rattle on the rubber too, as a real
    sensor rings at each impact), as a time on the frame clock (``Frame.t``, s; a frame's time
    is the middle of its exposure, the mean time of its motion-blur sub-steps). A sensor
    cannot tell the dice apart: the callback gets the time only.

    Raises:
        ValueError: unknown scenario, ``throws`` < 0, ``seed`` < 0, or bad camera/geometry values
            (pydantic.ValidationError is a ValueError).
    """

    def __init__(self, scenario: str = "natural", seed: int = 0, *, width: int = 1280,
                 height: int = 720, fps: float = 60.0, throws: int | None = None,
                 geometry: TableGeometry | None = None, camera: CameraConfig | None = None,
                 idle_s: float = 0.5, rest_s: float = 1.0, timeout_s: float = DEFAULT_TIMEOUT_S,
                 realtime: bool = False, spare_dice: int = 0, offers=(),
                 foreign: dict[int, int] | None = None) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
        if throws is not None and throws < 0:
            raise ValueError(f"throws must be >= 0 or None, got {throws}")
        if int(seed) < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        self.scenario, self.seed, self.throws = scenario, int(seed), throws
        self.geometry = geometry or TableGeometry()
        if spare_dice:
            self.geometry = self.geometry.model_copy(update={"spare_dice": default_spares(spare_dice)})
        base = camera or CameraConfig()
        self.camera_config = base.model_copy(update={"width": int(width), "height": int(height), "fps": float(fps)})
        CameraConfig.model_validate(self.camera_config.model_dump())   # re-check the overrides
        self.idle_s, self.rest_s, self.timeout_s = float(idle_s), float(rest_s), float(timeout_s)
        self.offers = frozenset(int(k) for k in offers)
        self.foreign = {int(k): int(n) for k, n in (foreign or {}).items()}
        if any(not 0 <= n <= len(FOREIGN_FACES) for n in self.foreign.values()):
            raise ValueError(f"foreign dice per throw must be 0..{len(FOREIGN_FACES)}, got {self.foreign}")
        if any(k < 0 for k in self.offers):
            raise ValueError(f"offers must be throw indices >= 0, got {sorted(self.offers)}")
        self.realtime = realtime
        self._closed = False
        self._renderers: dict[TableGeometry, Renderer] = {}
        self._sims: dict[TableGeometry, TableSim] = {}
        self._base = self._renderer(self.geometry)
        self._strike_sinks: list = []

    def on_wall_strike(self, callback) -> None:
        """Call ``callback(t_s)`` at every simulated far-wall strike (see the class docstring):
        the sensor of a rig that has one (``[rules] wall_sensor``), e.g.
        ``ThrowObserver.wall_strike``."""
        self._strike_sinks.append(callback)

    # ---- what the controller needs for its zones ---------------------------------------------
    @property
    def table_zones(self) -> dict[str, list[tuple[float, float]]]:
        """Zone polygons in table mm: ``playing``, ``far_wall_band``, ``chip_bank``,
        ``dice_cup``, ``rails`` (see :meth:`TableGeometry.zones`)."""
        return self.geometry.zones()

    @property
    def homography(self) -> np.ndarray:
        """float64 ``(3, 3)``: pixel ``(u, v, 1)`` -> felt-plane mm ``(x, y, 1)``."""
        return self._base.cam.homography.copy()

    @property
    def homography_mm_to_px(self) -> np.ndarray:
        """float64 ``(3, 3)``: felt-plane mm ``(x, y, 1)`` -> pixel ``(u, v, 1)`` (the inverse
        of :attr:`homography`)."""
        return np.linalg.inv(self._base.cam.homography)

    @property
    def die_side_px(self) -> float:
        """Expected side of a die lying on the felt, in pixels (for ``read_dice``)."""
        return self.geometry.die_size / self._base.cam.mm_per_px

    @property
    def camera_height_mm(self) -> float:
        """Height of the camera above the felt, mm (for parallax of raised dice)."""
        return float(self.camera_config.height_mm)

    @property
    def camera_nadir_mm(self) -> tuple[float, float]:
        """The felt point straight below the camera, mm (it looks straight down at the table's
        centre): the centre of parallax for raised dice."""
        return (float(self._base.cam.centre_mm[0]), float(self._base.cam.centre_mm[1]))

    @property
    def chip_stacks(self) -> list[dict]:
        """The chip stacks on the layout of the base table: ``[{"x_mm", "y_mm", "radius_mm",
        "height_mm"}]``. Scenario stacks added for one throw are in that throw's truth
        (``truth["stacks"]``)."""
        return _stacks_json(self.geometry.stacks)

    def _renderer(self, g: TableGeometry) -> Renderer:
        if g not in self._renderers:
            if len(self._renderers) >= 3:       # base table + the latest scenario tables only
                del self._renderers[next(k for k in self._renderers if k != self.geometry)]
            base = self._renderers.get(self.geometry)
            self._renderers[g] = Renderer(g, self.camera_config, seed=self.seed, noise_from=base)
        return self._renderers[g]

    def _sim(self, g: TableGeometry) -> TableSim:
        if g not in self._sims:
            if len(self._sims) >= 3:
                del self._sims[next(k for k in self._sims if k != self.geometry)]
            self._sims[g] = TableSim(g)
        return self._sims[g]

    # ---- frames ------------------------------------------------------------------------------
    def frames(self) -> Iterator[Frame]:
        """Yield frames until ``throws`` throws are done (forever if ``None``) or
        :meth:`close` is called."""
        fps = self.camera_config.fps
        dt = 1.0 / fps
        index = 0
        t_table = 0.0
        wall0 = time.monotonic()
        k = 0
        table = self.geometry
        src = ""

        def emit(image, truth):
            nonlocal index, t_table
            if self.realtime:
                lag = wall0 + t_table - time.monotonic()
                if lag > 0:
                    time.sleep(lag)
            f = Frame(image=image, t=round(t_table, 6), index=index, source=src, truth=truth)
            index += 1
            t_table += dt
            return f

        while not self._closed and (self.throws is None or k < self.throws):
            gate = getattr(self, "_throw_gate", None)   # throw_on_command(): see there
            if k in self.offers and gate is None:
                src = f"sim:offer:{k}"
                r = self._renderer(table)
                for _ in range(int(round(self.idle_s * fps))):     # the empty table before it
                    if self._closed:
                        return
                    yield emit(r.render([], index), {"throw": k, "phase": "idle", "t": round(t_table, 6),
                                                     "scenario": self.scenario, "seed": self.seed + k,
                                                     "dice": [], "stacks": []})
                r = self._renderer(table.model_copy(update={"spare_dice": ()}))
                for stage, values, poses in offer_motion(table, fps=fps, motion_blur=self.camera_config.motion_blur):
                    if self._closed:
                        return
                    truth = {"throw": k, "phase": "offer", "stage": stage, "t": round(t_table, 6),
                             "scenario": self.scenario, "seed": self.seed + k, "stacks": [],
                             "dice": [{"value": v, "centre_mm": [round(float(p[-1].pos_mm[0]), 2),
                                                                 round(float(p[-1].pos_mm[1]), 2)],
                                       "centre_px": [round(c, 2) for c in r.die_centre_px(p[-1])]}
                                      for v, p in zip(values, poses)]}
                    yield emit(r.render(poses, index), truth)
                table = after_offer(table)
            plan = plan_throw(self.scenario, self.seed + k, table, self.timeout_s)
            r = self._renderer(plan.geometry)
            sim = self._sim(plan.geometry)
            src = f"sim:{self.scenario}:{plan.seed}"
            n_foreign = self.foreign.get(k, 0)

            extra_stacks = _stacks_json(plan.geometry.stacks[len(self.geometry.stacks):])

            def base_truth(phase):
                return {"throw": k, "phase": phase, "t": round(t_table, 6), "scenario": self.scenario,
                        "seed": plan.seed, "dice": [], "stacks": extra_stacks}

            for _ in range(0 if gate is not None and k > 0 else int(round(self.idle_s * fps))):
                if self._closed:
                    return
                yield emit(r.render([], index), base_truth("idle"))
            while gate is not None and k == 0 and not gate.wait(0):
                if self._closed:
                    return
                yield emit(r.render([], index), base_truth("idle"))
            if gate is not None:
                gate.clear()
            sim.reset(plan.starts, plan.agitate_s, plan.seed)
            rung = 0                    # wall hits already given to the strike sinks
            cap = max(plan.timeout_s, plan.agitate_s + 4.0)
            sub = self.camera_config.motion_blur
            late = False        # still moving when the timeout expired
            while True:
                if self._closed:
                    return
                poses: list[list[DicePose]] = [[], []] + [[] for _ in range(n_foreign)]
                for _ in range(sub):
                    sim.advance(dt / sub)
                    for i, (p, q) in enumerate(sim.poses()):
                        poses[i].append(DicePose(p, q))
                    for i, pose in enumerate(foreign_poses(table, n_foreign, sim.t)):
                        poses[2 + i].append(pose)
                # the frame at t_table shows the poses of its sub-steps, whose mean time is
                # mid_t: a strike at t_hit is at t_table + (t_hit - mid_t) on the frame clock
                mid_t = sim.t - dt * (sub - 1) / (2 * sub)
                for t_hit, _ in sim.wall_contacts[rung:]:
                    for sink in self._strike_sinks:
                        sink(round(t_table + (t_hit - mid_t), 6))
                rung = len(sim.wall_contacts)
                if sim.t >= plan.timeout_s - 1e-9 and sim.t - dt < plan.timeout_s - 1e-9:
                    late = sim.moving()
                moving = (sim.moving() or sim.t < FOREIGN_REST_S and n_foreign > 0) and sim.t < cap
                truth = base_truth("motion")
                truth["throw_t"] = round(sim.t, 6)
                truth["dice"] = self._dice_truth(r, sim)
                if n_foreign:
                    truth["foreign"] = self._foreign_truth(table, n_foreign, sim.t)
                if not moving:
                    truth["irregularities"] = sorted(irregularities(sim.die_states(), late or sim.moving()))
                yield emit(r.render(poses, index), truth)
                if not moving:
                    break
            still_moving = sim.moving()
            extra = [[p] for p in foreign_poses(table, n_foreign, sim.t)]
            final = [[DicePose(p, q)] for p, q in sim.poses()] + extra
            for _ in range(int(round(self.rest_s * fps))):
                if self._closed:
                    return
                if still_moving:       # cut off while moving: keep simulating, no rest phase
                    sim.advance(dt)
                    final = [[DicePose(p, q)] for p, q in sim.poses()] + extra
                truth = base_truth("motion" if still_moving and sim.moving() else "rest")
                truth["throw_t"] = round(sim.t, 6)
                truth["dice"] = self._dice_truth(r, sim)
                if n_foreign:
                    truth["foreign"] = self._foreign_truth(table, n_foreign, sim.t)
                truth["irregularities"] = sorted(irregularities(sim.die_states(), late or sim.moving()))
                yield emit(r.render(final, index), truth)
            gate = getattr(self, "_throw_gate", None)
            if gate is not None:        # the dice stay at rest (in the dome) until throw()
                while not self._closed and (not gate.wait(0) or self._stuck_next):
                    if gate.is_set():   # throw(stuck=True): the rig ran, the dice did not move
                        self._stuck_next = False
                        gate.clear()
                    truth = {**truth, "t": round(t_table, 6), "held": True}
                    yield emit(r.render(final, index), truth)   # sensor noise as on any frame
            k += 1

    @staticmethod
    def _foreign_truth(table: TableGeometry, n: int, t: float) -> list[dict]:
        return [{"value": FOREIGN_FACES[i][0],
                 "centre_mm": [round(float(p.pos_mm[0]), 2), round(float(p.pos_mm[1]), 2)]}
                for i, p in enumerate(foreign_poses(table, n, t))]

    @staticmethod
    def _dice_truth(r: Renderer, sim: TableSim) -> list[dict]:
        out = []
        for s in sim.die_states():
            d = s.to_json()
            pose = DicePose(s.pos_mm, s.quat)
            u, v = r.die_centre_px(pose)
            d["centre_px"] = [round(u, 2), round(v, 2)]
            d["bbox_px"] = list(r.die_bbox_px(pose))
            out.append(d)
        return out

    # ---- throws on command (an automated rig's shaker) ---------------------------------------
    def throw_on_command(self) -> "SimSource":
        """Throw only when :meth:`throw` is called, as an automated rig's shaker or blower does:
        the first throw waits on the empty table (``idle`` frames) after its ``idle_s``; after a
        throw the dice stay at rest (``rest`` frames, ``truth["held"]``) until the next
        :meth:`throw`, which starts from them without idle frames (no pick-up). Call before
        :meth:`frames`. Returns ``self``."""
        import threading

        self._throw_gate = threading.Event()
        self._stuck_next = False
        return self

    def throw(self, stuck: bool = False) -> None:
        """Release the next throw (thread-safe; after :meth:`throw_on_command`, else no effect).
        ``stuck=True``: the rig runs but the dice do not move (they stay where they rest, same
        faces), to test the controller's "dice did not move" check."""
        gate = getattr(self, "_throw_gate", None)
        if gate is not None:
            self._stuck_next = bool(stuck)
            gate.set()

    def close(self) -> None:
        """Stop the frame iterator at the next frame. Safe to call twice."""
        self._closed = True

    def __enter__(self) -> "SimSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
