"""Irregularity verdicts measured on the simulated table (9 NYCRR 5324.52(h)(1), (k)).

For each scenario of simulator/scenarios.py and each seed: the throw is simulated (MuJoCo), the
expected verdict is worked out from the simulator's ground truth under the profile
(:func:`expected_verdict`, independent of the detectors), and the controller's verdict is made
from what a camera gives:

* ``--mode camera``: the frame at rest is rendered and read by ``vision.reader.read_dice``; the
  far-wall strike comes from :class:`controller.track.ThrowTracker` on rendered motion frames
  (``--fps``, default 60);
* ``--mode truth``: an ideal reader (values, centres, flatness from the ground truth) and the
  physics centres as the track: this measures the detectors and the policy alone.

``--wall-sensor``: the rig has a far-wall strike sensor; every far-wall contact in the physics
(each die's first strike, its rattle on the rubber and any later strike) is a strike (times
only; a sensor cannot tell the dice apart: the detectors
credit each strike to the dice the track places at the wall then, controller/far_wall.py). In
camera mode a die the reader did not find where the track saw one come to rest is read there
(``vision.reader.read_die_at``). ``--first-seed``: seeds from there (held-out seeds).

Targets (issue 5): per scenario >= 99 % right over 200 seeded throws; over 3,000 natural throws
no valid roll with a wrong value, and <= 0.5 % to the boxperson.

Run::

    .venv/bin/python bench/irregularity_bench.py --mode truth --throws 200 --natural 3000
    .venv/bin/python bench/irregularity_bench.py --mode camera --throws 20 --natural 100 --budget-s 900

``--budget-s`` stops early and prints what was actually run. ``--profile all`` (or a list
separated by commas) simulates and reads each throw once and decides it under every profile
given, one table each.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from camera.calibration import Calibration  # noqa: E402
from controller.dice_cup import spares_and_change  # noqa: E402
from controller.irregularity import TableObject, Tolerances, judge  # noqa: E402
from controller.irregularity_profile import SHIPPED, IrregularityProfile, load_profile  # noqa: E402
from controller.policy import Action  # noqa: E402
from controller.reasons import Reason  # noqa: E402
from controller.track import ThrowTracker  # noqa: E402
from controller.verdict import decide  # noqa: E402
from simulator.dice import NORMALS, quat_to_mat, quat_with_face_up  # noqa: E402
from simulator.geometry import CHIP_DIAMETER_MM, CameraConfig, TableGeometry, default_spares  # noqa: E402
from simulator.physics import DieState, TableSim  # noqa: E402
from simulator.render import DicePose, Renderer  # noqa: E402
from simulator.scenarios import EXTRA_SCENARIOS, LATE_RELEASE_S, SCENARIOS, plan_throw  # noqa: E402
from vision.types import DieReading  # noqa: E402

_PLACE = {"off-table": None, "die": Reason.DIE_ON_DIE, "bank": Reason.DIE_IN_CHIP_BANK,
          "cup": Reason.DIE_IN_DICE_CUP, "rail": Reason.DIE_ON_RAIL}


@dataclass
class Throw:
    """One simulated throw: final states, whether still moving, the physics track, frames."""

    scenario: str
    seed: int
    plan: object
    states: list[DieState]
    moving: bool
    track: list[list[tuple[float, float, float]]]
    poses: list[list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    wall_hits: list[tuple[float, int]] = field(default_factory=list)
    wall_contacts: list[tuple[float, int]] = field(default_factory=list)


def simulate(scenario: str, seed: int, sims: dict, fps: float = 60.0, keep_poses: bool = False,
             spare_dice: int = 0) -> Throw:
    """Run one throw, recording each die's centre (and pose, for rendering) every ``1/fps`` s;
    ``spare_dice`` (0..3) spare dice rest in the dice cup (the ``*-spares`` scenarios set their
    own)."""
    plan = plan_throw(scenario, seed, geometry=TableGeometry(spare_dice=default_spares(spare_dice)) if spare_dice else None)
    key = plan.geometry
    sim = sims.get(key)
    if sim is None:
        sims.clear()
        sim = sims[key] = TableSim(plan.geometry)
    sim.reset(plan.starts, plan.agitate_s, plan.seed)
    dt = 1.0 / fps
    track: list[list[tuple[float, float, float]]] = [[], []]
    poses, times = [], []
    while sim.t < plan.timeout_s - 1e-9:
        sim.advance(min(dt, plan.timeout_s - sim.t))
        ps = sim.poses()
        for i, (pos, _) in enumerate(ps):
            if not sim.held(i):   # a die still in the shooter's hand is nowhere on the layout
                track[i].append((sim.t, float(pos[0]), float(pos[1])))
        if keep_poses:
            poses.append([(p.copy(), q.copy()) for p, q in ps])
            times.append(sim.t)
        if not sim.moving():
            break
    return Throw(scenario, seed, plan, sim.die_states(), sim.moving(), track, poses, times, list(sim.wall_hits),
                 list(sim.wall_contacts))


def truth_reasons(states: list[DieState], moving: bool, release_gap_s: float = 0.0) -> list[Reason]:
    """The irregularities the ground truth shows, in the verdict's precedence order;
    ``release_gap_s``: seconds between the dice leaving the shooter's hand
    (``ThrowPlan.release_gap_s``): from :data:`simulator.scenarios.LATE_RELEASE_S`'s lower end on,
    they did not leave it simultaneously, (k)(2)(i)."""
    found: list[Reason] = []
    if moving:
        return [Reason.NOT_AT_REST]
    on_table = [s for s in states if s.rests_on != "off-table"]
    # a die that left the table is void by (k)(1) whether or not it struck the far wall first
    if not all(s.struck_far_wall for s in on_table):
        found.append(Reason.FAR_WALL_MISSED)
    if release_gap_s >= LATE_RELEASE_S[0] - 1e-9:
        found.append(Reason.DICE_NOT_SIMULTANEOUS)
    places = [_PLACE[s.rests_on] for s in on_table if s.rests_on in _PLACE and s.rests_on != "die"]
    if len(on_table) < 2 or places:
        found.extend(dict.fromkeys(places))
        if not places:
            found.append(Reason.DICE_OFF_TABLE if not on_table else Reason.DIE_OFF_TABLE)
    if any(s.rests_on == "die" for s in on_table):
        found.append(Reason.DIE_ON_DIE)
    # a die in the bank, the cup or on a rail is judged by where it is ((k)(2)(iii)-(iv)); the
    # cocked-die rule (h)(1)(i) is for dice on the layout
    on_layout = [s for s in on_table if s.rests_on in ("felt", "chips", "die")]
    # (h)(1)(i) is about a die that does not land flat: a flat die pressed sideways against
    # the rail and the cup rests on the felt
    if any(len(s.objects_under()) > 1 and not s.flat for s in on_layout):
        found.append(Reason.DIE_ON_SEVERAL_OBJECTS)
    if any(not s.flat for s in on_layout):
        found.append(Reason.DIE_NOT_FLAT)
    return found


def counted_value(s: DieState, profile: IrregularityProfile) -> int:
    """The face that counts: (h)(1)(i) the face opposite the one side resting on an object; the
    face most nearly up otherwise (and always under ``cocked = "as-read"``)."""
    under = s.objects_under()
    if profile.cocked == "opposite-resting-side" and not s.flat and len(under) == 1:
        return 7 - next(iter(under))
    return s.value


#: A die whose two faces most nearly up make angles with the vertical differing by less than
#: this many degrees (a lean of more than 40 degrees about an edge: the other face then under
#: 50) is in dispute as to which face is uppermost, 9 NYCRR 5324.52(h)(1)(ii), under every
#: profile (twenty-sixth session; before, only under the regulations' profiles and only where
#: the counted face was not the face most nearly up).
DISPUTE_MARGIN_DEG = 10.0


#: A boxperson call on a lean whose face margin is under :data:`DISPUTE_MARGIN_DEG` + this
#: (a lean of 38.5-40 degrees, just short of the dispute line) is counted wrong, but also shown
#: in the table's ``near line`` column: 1.5 degrees of lean change a face's projected area by
#: only ~2 %, which a camera above cannot be counted on to resolve.
NEAR_LINE_DEG = 3.0


def near_dispute_line(states: list[DieState]) -> bool:
    """Whether a die not lying flat on the layout leans within :data:`NEAR_LINE_DEG` above the
    dispute line (face margin in ``[DISPUTE_MARGIN_DEG, DISPUTE_MARGIN_DEG + NEAR_LINE_DEG)``)."""
    return any(not st.flat and st.rests_on in ("felt", "chips", "die")
               and DISPUTE_MARGIN_DEG <= face_margin_deg(st) < DISPUTE_MARGIN_DEG + NEAR_LINE_DEG
               for st in states)


def face_margin_deg(st: DieState) -> float:
    """How much nearer the vertical the face most nearly up is than the next face, degrees
    (90 for a die lying flat, 0 for one balanced on an edge at 45 degrees)."""
    up = NORMALS @ quat_to_mat(np.asarray(st.quat, dtype=np.float64))[2]   # each face normal's z
    a = np.sort(np.degrees(np.arccos(np.clip(up, -1.0, 1.0))))
    return float(a[1] - a[0])


def dispute_is_right(states: list[DieState], profile: IrregularityProfile, size_mm: float = 19.05) -> bool:
    """A boxperson call (``face-unreadable``) is right too where the face that counts cannot be
    seen: a cocked die on the layout whose counted face ((h)(1)(i), the one opposite the side
    resting on an object) is not its face most nearly up (it leans on a wall, the cup or the
    other die), or that rests on no object at all (balanced on an edge): the text gives the
    boxperson the decision of a disputed face, (h)(1)(ii)(a). So is a die whose upper face is
    covered by the other die lying on it (a profile that reads a die on a die needs the lower
    die's face, which no camera above the table sees). So is, under every profile, a die not
    lying flat whose two faces most nearly up are within :data:`DISPUTE_MARGIN_DEG` of being
    equally up (a lean of 40-45 degrees: which face is uppermost is in dispute, (h)(1)(ii))."""
    if any(not st.flat and st.rests_on in ("felt", "chips", "die") and face_margin_deg(st) < DISPUTE_MARGIN_DEG
           for st in states):
        return True
    for st in states:
        if any(o is not st and o.rests_on == "die"
               and math.hypot(o.pos_mm[0] - st.pos_mm[0], o.pos_mm[1] - st.pos_mm[1]) < size_mm
               for o in states):
            return True
    if profile.cocked != "opposite-resting-side":
        return False
    for st in states:
        if st.flat or st.rests_on not in ("felt", "chips", "die"):
            continue
        if len(st.objects_under()) != 1 or counted_value(st, profile) != st.value:
            return True
    return False


def expected_verdict(states: list[DieState], moving: bool, profile: IrregularityProfile,
                     release_gap_s: float = 0.0):
    """``(kind, reason | None, sorted dice | None)`` the profile gives for the ground truth
    (``release_gap_s``: see :func:`truth_reasons`)."""
    found = truth_reasons(states, moving, release_gap_s)
    for action in (Action.NO_ROLL, Action.BOXPERSON):
        for r in found:
            if profile.policy.action(r) is action:
                return action.value, r, None
    return "roll", None, tuple(sorted(counted_value(s, profile) for s in states))


def calibration_for(renderer: Renderer, geometry) -> Calibration:
    """What a calibrated table gives the controller: homography, zones, camera height and the
    felt point below the camera (the centre of parallax)."""
    return Calibration.from_homography(renderer.cam.homography, geometry.zones(),
                                       camera_height_mm=renderer.c.height_mm,
                                       camera_nadir_mm=tuple(renderer.cam.centre_mm))


def tolerances_for(geometry) -> Tolerances:
    """Detector settings a calibrated table gives: the far-wall reach from the wall's rubber
    depth and the die's half diagonal (a die touching the rubber with a corner)."""
    return Tolerances(far_wall_reach_mm=geometry.far_wall_reach_mm)


def objects_for(geometry) -> list[TableObject]:
    """The chip stacks on the layout (wagers), table mm."""
    return [TableObject(s.x, s.y, CHIP_DIAMETER_MM / 2, s.height) for s in geometry.stacks]


def _ideal_reading(pose: DicePose, value: int, flat: bool, renderer: Renderer, cal: Calibration) -> DieReading | None:
    """What an ideal reader gives for a die at ``pose``: its value, flatness, the pixel centre of
    its upper face and the side the calibration expects there (larger the higher it lies);
    ``None`` for a die out of the frame."""
    cx, cy = renderer.die_centre_px(pose)
    if not (0 <= cx < renderer.c.width and 0 <= cy < renderer.c.height):
        return None
    D = renderer.c.height_mm
    top = float(pose.pos_mm[2]) + 19.05 / 2
    exp = cal.die_side_px(cal.to_mm([[cx, cy]])[0]) * (D - 19.05) / max(1.0, D - top)
    return DieReading(value=int(value), bbox=renderer.die_bbox_px(pose), centre=(cx, cy), confidence=1.0,
                      flat=bool(flat), side_px=float(exp))


def truth_readings(states: list[DieState], renderer: Renderer, cal: Calibration) -> list[DieReading]:
    """An ideal reader: each die in view with its face most nearly up, flatness and pixel centre."""
    out = [_ideal_reading(DicePose(s.pos_mm, s.quat), s.value, s.flat, renderer, cal)
           for s in states if s.pos_mm[2] >= -19.05]   # below the felt (on the floor): hidden by the table
    return [r for r in out if r is not None]


def spare_readings(geometry, renderer: Renderer, cal: Calibration) -> list[DieReading]:
    """An ideal reader's dice of the spare dice resting in the dice cup (9 NYCRR 5324.52(a)(5)):
    seen before the throw and at rest alike."""
    out = [_ideal_reading(DicePose(np.asarray(pos, float), quat_with_face_up(face, yaw)), face, True, renderer, cal)
           for pos, face, yaw in geometry.spare_dice_poses()]
    return [r for r in out if r is not None]


def render(throw: Throw, renderer: Renderer, index: int) -> np.ndarray:
    """The frame of pose sample ``index`` (-1: at rest)."""
    ps = throw.poses[index]
    return renderer.render([[DicePose(p, q)] for p, q in ps], frame_index=index % 6)


class Bench:
    """Runs throws and tallies verdicts per scenario."""

    def __init__(self, profile: IrregularityProfile, mode: str, fps: float = 60.0,
                 wall_sensor: bool = False, far_wall_struck: bool = False, spare_dice: int = 0) -> None:
        self.profile, self.mode, self.fps = profile, mode, fps
        self.spare_dice = spare_dice
        self.wall_sensor = wall_sensor
        #: judge the resting place alone: the far wall counts as struck for the truth and the
        #: controller (a forced scenario's die is placed, never thrown at the far wall, so
        #: far-wall-missed would be the verdict of every such throw and hide the others)
        self.far_wall_struck = far_wall_struck
        self.sims: dict = {}
        self.renderers: dict = {}

    def renderer(self, geometry) -> Renderer:
        r = self.renderers.get(geometry)
        if r is None:
            if len(self.renderers) > 4:
                self.renderers.clear()
            r = self.renderers[geometry] = Renderer(geometry, CameraConfig(), seed=0)
        return r

    def observe(self, scenario: str, seed: int) -> dict:
        """Simulate one throw and collect what the camera gives (readings, track)."""
        camera = self.mode == "camera"
        th = simulate(scenario, seed, self.sims, self.fps, keep_poses=camera, spare_dice=self.spare_dice)
        g = th.plan.geometry
        ren = self.renderer(g)
        cal = calibration_for(ren, g)
        if camera:
            from vision.reader import read_dice, read_die_at

            side = cal.die_side_px((g.length / 2, g.width / 2))
            tracker = ThrowTracker(cal, die_side_px=side)
            tracker.set_background(ren.background)
            for k in range(len(th.poses) - 1):
                tracker.add(th.times[k], render(th, ren, k))
            track = tracker.tracks()
            shared = tracker.shared()
            copied = tracker.copied()
            at_rest = render(th, ren, -1)
            readings = read_dice(at_rest, expected_side_px=side)
            reread = functools.partial(read_die_at, at_rest)
            # the table before the throw: the dice in the cup then are the spares (read where
            # the cup changed, as the table service does)
            spares, cup_changed = spares_and_change(functools.partial(read_dice, expected_side_px=side), cal,
                                                    ren.render([], frame_index=0), at_rest, readings)
        else:
            track = th.track
            shared = None
            copied = [[False] * len(t) for t in track]   # the physics track: each die's own
            spares = spare_readings(g, ren, cal)
            readings = truth_readings(th.states, ren, cal) + spares
            cup_changed = any(st.rests_on == "cup" for st in th.states)
            reread = None
        # each die at rest on the felt: the reading nearest its upper face's centre (value, confidence)
        reads = []
        size = th.plan.geometry.die_size
        for st in th.states:
            if st.rests_on != "felt" or not st.flat:
                continue
            if any(o is not st and o.rests_on == "die" and math.hypot(o.pos_mm[0] - st.pos_mm[0], o.pos_mm[1] - st.pos_mm[1]) < size
                   for o in th.states):
                continue   # the other die lies on it: hidden from the camera
            cx, cy = ren.die_centre_px(DicePose(st.pos_mm, st.quat))
            near = min(readings, key=lambda r: (r.centre[0] - cx) ** 2 + (r.centre[1] - cy) ** 2, default=None)
            if near is None or (near.centre[0] - cx) ** 2 + (near.centre[1] - cy) ** 2 > 100:
                reads.append((st.value, None, 0.0))
            else:
                reads.append((st.value, near.value, float(near.confidence)))
        return {"throw": th, "calibration": cal, "readings": readings, "track": track, "reads": reads,
                "reread": reread, "shared": shared, "copied": copied, "spares": spares, "cup_changed": cup_changed}

    def decide(self, seen: dict, profile: IrregularityProfile | None = None) -> dict:
        """Decide an observed throw under ``profile`` (default the bench's) and compare."""
        profile = profile or self.profile
        th = seen["throw"]
        g = th.plan.geometry
        states = th.states
        if self.far_wall_struck:
            states = [dataclasses.replace(st, struck_far_wall=True) for st in states]
        expected = expected_verdict(states, th.moving, profile, th.plan.release_gap_s)
        verdict, observed = judge(seen["readings"], calibration=seen["calibration"], profile=profile,
                                  objects=objects_for(g), track=seen["track"], timed_out=th.moving,
                                  wall_height_mm=g.wall_height, tolerances=tolerances_for(g),
                                  reread=seen.get("reread"), track_shared=seen.get("shared"),
                                  track_copied=seen.get("copied"),
                                  spares=seen.get("spares"), cup_changed=seen.get("cup_changed"),
                                  wall_strikes=[t for t, _ in th.wall_contacts] if self.wall_sensor else None,
                                  window=(0.0, th.times[-1] if th.times else 1e9))
        if self.far_wall_struck:
            verdict = decide(observed.observations, dataclasses.replace(observed.facts, struck_far_wall=True),
                             policy=profile.policy, min_confidence=0.8)
        got = (verdict.kind, verdict.reason, None if verdict.dice is None else tuple(sorted(verdict.dice)))
        right = got[0] == expected[0] and got[2] == expected[2]
        dispute_call = got[:2] == ("boxperson", Reason.FACE_UNREADABLE) and expected[0] == "roll"
        if not right and dispute_call:
            right = dispute_is_right(states, profile, g.die_size)
        near_line = not right and dispute_call and near_dispute_line(states)
        wrong_value = got[0] == "roll" and (expected[0] != "roll" or got[2] != expected[2])
        return {"wrong_dice": wrong_dice(expected, got), "scenario": th.scenario, "seed": th.seed, "expected": expected, "got": got, "right": right,
                "near_line": near_line, "wrong_value": wrong_value, "notes": observed.notes,
                "truth": [(s.value, s.rests_on, s.flat, s.struck_far_wall) for s in th.states],
                "reads": seen.get("reads", [])}

    def one(self, scenario: str, seed: int) -> dict:
        """Simulate, decide, compare: a result row."""
        return self.decide(self.observe(scenario, seed))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("truth", "camera"), default="truth")
    ap.add_argument("--profile", default="ny-5324",
                    help="irregularity profile, several separated by commas, or 'all' (each throw is "
                         "simulated and read once, and decided under every profile given)")
    ap.add_argument("--throws", type=int, default=200, help="seeded throws per irregularity scenario")
    ap.add_argument("--natural", type=int, default=3000, help="natural throws")
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS[1:]),
                    help=f"separated by spaces or commas; default: {' '.join(SCENARIOS[1:])}; "
                         f"more: {' '.join(EXTRA_SCENARIOS)}")
    ap.add_argument("--fps", type=float, default=60.0)
    ap.add_argument("--wall-sensor", action="store_true",
                    help="the rig has a far-wall strike sensor: every far-wall contact is a strike "
                         "(times only), credited to the dice the track places at the wall then")
    ap.add_argument("--far-wall-struck", action="store_true",
                    help="judge where the dice rest alone: the far wall counts as struck for the truth and "
                         "the controller (the forced scenarios' die never travels to the far wall, so "
                         "far-wall-missed otherwise decides them all)")
    ap.add_argument("--spare-dice", type=int, default=0, choices=range(4),
                    help="spare dice resting in the dice cup in every throw (9 NYCRR 5324.52(a)(5)); "
                         "the *-spares scenarios set their own")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seed of the first throw of each scenario (seeds first-seed .. first-seed + N - 1)")
    ap.add_argument("--budget-s", type=float, default=0.0, help="stop after this many seconds (0: no limit)")
    ap.add_argument("--show-wrong", type=int, default=5,
                    help="print up to N wrong verdicts (or right ones with another reason) per scenario")
    ap.add_argument("--progress", type=float, default=0.0, metavar="SECONDS",
                    help="every SECONDS, a line on stderr: throws done and right so far per profile (0: none)")
    ap.add_argument("--rows", type=Path, default=None, metavar="FILE.jsonl",
                    help="append every verdict as it is made (scenario, seed, profile, expected, got, right, "
                         "notes), one JSON object a line, so that a run stopped early keeps what it measured")
    args = ap.parse_args(argv)
    args.scenarios = [n.strip() for arg in args.scenarios for n in arg.split(",") if n.strip()]
    unknown = [n for n in args.scenarios if n not in SCENARIOS + EXTRA_SCENARIOS or n == "natural"]
    if unknown:
        # before any throw is simulated (a typo used to stop the run at its first throw)
        ap.error(f"unknown scenario(s) {', '.join(map(repr, unknown))} (natural throws: --natural N); "
                 f"known: {' '.join(SCENARIOS[1:] + EXTRA_SCENARIOS)}")
    names = list(SHIPPED) if args.profile == "all" else [n.strip() for n in args.profile.split(",") if n.strip()]
    profiles = [load_profile(n) for n in names]
    bench = Bench(profiles[0], args.mode, args.fps, wall_sensor=args.wall_sensor,
                  far_wall_struck=args.far_wall_struck, spare_dice=args.spare_dice)
    t_start = time.perf_counter()
    plan = [(s, args.throws) for s in args.scenarios] + [("natural", args.natural)]
    by_profile: list[dict[str, list[dict]]] = [{} for _ in profiles]
    stopped = False
    # interleave scenarios so that a budget stop leaves every scenario measured
    seeds = {s: args.first_seed for s, _ in plan}
    last_progress = t_start
    rows_out = args.rows.open("a", encoding="utf-8") if args.rows is not None else None
    todo = {s: args.first_seed + n for s, n in plan}
    while any(seeds[s] < todo[s] for s in todo) and not stopped:
        for s in todo:
            if seeds[s] >= todo[s]:
                continue
            batch = 10 if s == "natural" else 1
            for _ in range(batch):
                if seeds[s] >= todo[s]:
                    break
                seen = bench.observe(s, seeds[s])
                for rows, profile in zip(by_profile, profiles):
                    row = bench.decide(seen, profile)
                    rows.setdefault(s, []).append(row)
                    if rows_out is not None:
                        rows_out.write(json.dumps(_row_json(row, profile.name)) + "\n")
                        rows_out.flush()
                seeds[s] += 1
            if args.progress and time.perf_counter() - last_progress >= args.progress:
                last_progress = time.perf_counter()
                done = sum(len(v) for v in by_profile[0].values())
                print(f"[{last_progress - t_start:.0f} s] {done} throws; right: " + ", ".join(
                    f"{p.name} {sum(r['right'] for v in rows.values() for r in v)}"
                    for rows, p in zip(by_profile, profiles)), file=sys.stderr, flush=True)
            if args.budget_s and time.perf_counter() - t_start > args.budget_s:
                stopped = True
                break
    elapsed = time.perf_counter() - t_start
    if rows_out is not None:
        rows_out.close()
    for k, (rows, profile) in enumerate(zip(by_profile, profiles)):
        report(rows, profile, args, elapsed, stopped, reader_stats=k == 0)
    return 0


def wrong_dice(expected: tuple, got: tuple) -> bool:
    """A valid roll published with other dice than the truth's valid roll (verdicts as
    ``(kind, reason, dice)``)."""
    return got[0] == "roll" and expected[0] == "roll" and got[2] != expected[2]


def _row_json(row: dict, profile: str) -> dict:
    """A :meth:`Bench.decide` row as plain JSON types (``--rows``): reasons by their codes."""
    def verdict(v: tuple) -> list:
        kind, reason, dice = v
        return [kind, None if reason is None else reason.value, None if dice is None else list(dice)]
    return {"scenario": row["scenario"], "seed": row["seed"], "profile": profile,
            "expected": verdict(row["expected"]), "got": verdict(row["got"]), "right": bool(row["right"]),
            "wrong_value": bool(row["wrong_value"]), "near_line": bool(row["near_line"]), "notes": list(row["notes"])}


def report(rows: dict[str, list[dict]], profile: IrregularityProfile, args: argparse.Namespace,
           elapsed: float | None, stopped: bool, reader_stats: bool = True) -> None:
    """Print the table of one profile's verdicts (``rows``: scenario -> result rows of
    :meth:`Bench.decide`), the natural throws' figures and up to ``args.show_wrong`` wrong
    verdicts per scenario; ``reader_stats``: also the reader's figures on flat dice (the same
    for every profile); ``elapsed`` (seconds) ``None``: not known (tables made from ``--rows``
    files by bench/irregularity_rows.py)."""
    print(f"irregularity bench: profile {profile.name}, mode {args.mode}"
          f"{', far-wall sensor' if args.wall_sensor else ''}"
          f"{f', {args.spare_dice} spare dice in the cup' if args.spare_dice else ''}"
          f"{', far wall counted as struck' if args.far_wall_struck else ''}, seeds from {args.first_seed}"
          f"{'' if elapsed is None else f', {elapsed:.0f} s'}"
          + (" (stopped by --budget-s: counts below are what was run)" if stopped else ""))
    print(f"{'scenario':20s} {'throws':>6s} {'right':>6s} {'right %':>8s} {'no-roll':>7s} {'boxp':>5s} "
          f"{'roll':>5s} {'wrong value':>11s} {'reason ok':>9s} {'near line':>9s}  expected kinds")
    for s, rs in rows.items():
        n = len(rs)
        right = sum(r["right"] for r in rs)
        kinds = Counter(r["got"][0] for r in rs)
        exp = Counter(r["expected"][0] for r in rs)
        wrong_values = sum(r["wrong_value"] for r in rs)
        reason_ok = sum(r["got"][1] == r["expected"][1] for r in rs)
        near = sum(r.get("near_line", False) for r in rs)
        print(f"{s:20s} {n:6d} {right:6d} {100 * right / max(1, n):7.2f}% {kinds['no-roll']:7d} "
              f"{kinds['boxperson']:5d} {kinds['roll']:5d} {wrong_values:11d} {reason_ok:9d} {near:9d}  {dict(exp)}")
    nat = rows.get("natural", [])
    if nat:
        n = len(nat)
        box = sum(r["got"][0] == "boxperson" for r in nat)
        wrong = sum(r["wrong_value"] for r in nat)
        wrong_dice = sum(r["wrong_dice"] for r in nat)
        print(f"natural: {n} throws, {wrong} valid rolls published wrongly: {wrong_dice} with other dice than "
              f"the truth, {wrong - wrong_dice} where the truth is not a valid roll; {box} to the boxperson "
              f"({100 * box / n:.2f} %; target <= 0.5 %)")
    reads = [x for rs in rows.values() for r in rs for x in r["reads"]]
    if reads and args.mode == "camera" and reader_stats:
        print("reader on flat dice at rest on the felt (all scenarios): confidence bin -> read, right, wrong")
        for lo, hi in ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)):
            b = [x for x in reads if lo <= x[2] < hi]
            right = sum(1 for t, v, _ in b if v == t)
            wrong = sum(1 for t, v, _ in b if v is not None and v != t)
            print(f"  [{lo:.1f}, {min(hi, 1.0):.1f}): {len(b):5d} {right:5d} {wrong:5d}")
        print(f"  not found: {sum(1 for x in reads if x[1] is None and x[2] == 0.0)} of {len(reads)}")
    for s, rs in rows.items():
        bad = [r for r in rs if not r["right"] or r["got"][1] != r["expected"][1]][: args.show_wrong]
        for r in bad:
            exp_r = r["expected"][1].value if r["expected"][1] else None
            got_r = r["got"][1].value if r["got"][1] else None
            tag = "wrong" if not r["right"] else "right, reason differs:"
            print(f"  {tag} {s} seed {r['seed']}: expected {r['expected'][0]} {exp_r} {r['expected'][2]}, "
                  f"got {r['got'][0]} {got_r} {r['got'][2]}; truth {r['truth']}; {'; '.join(r['notes'])[:300]}")


if __name__ == "__main__":
    sys.exit(main())
