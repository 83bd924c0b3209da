"""A dice offer at a change of shooter, drawn kinematically (no physics).

"The craps stickperson ... shall offer the complete set of five or more dice to the player ...
The first player to accept the dice when offered shall become the new shooter who shall select
and retain two of the dice offered. The remaining dice shall be returned to the dice cup"
(9 NYCRR 5324.52(i)(3), (i)(4); at the start of play (f)(1), (f)(3)).

:func:`offer_motion` gives, frame by frame, the poses of the five dice:

1. ``"slide"``: pushed by the stick (``slide_s``, eased in and out) from just outside the dice
   cup, towards the table's middle, to a spot in front of the player (``target``, table mm);
2. ``"rest"``: at rest there for ``rest_s`` (the shooter chooses);
3. ``"return"``: the two selected dice are gone (in the shooter's hand) and the other three
   slide into the cup's spare slots (``return_s``; the cup's wall is not modelled: they slide
   over it);
4. ``"returned"``: a few frames of the three at rest in the cup, drawn as moving dice are.

After it the three are the cup's spare dice: :func:`after_offer` is the table with them
(``TableGeometry.spare_dice`` = ``default_spares(3)``, the same faces and turns), which draws
them into the empty table's frame and puts them in the physics.
"""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from .dice import quat_with_face_up
from .geometry import TableGeometry, default_spares
from .render import DicePose

#: Offsets (mm) of the five dice from the set's centre: three in a row, two behind (9 mm gaps).
SET_LAYOUT = ((-28.0, -14.0), (0.0, -14.0), (28.0, -14.0), (-14.0, 14.0), (14.0, 14.0))
#: Which of :data:`SET_LAYOUT` the shooter selects (the other three go back to the cup).
SELECTED = (1, 3)
#: The selected dice's faces and turns (degrees).
SELECTED_FACES = ((3, 20.0), (4, 55.0))


def after_offer(geometry: TableGeometry) -> TableGeometry:
    """The table after an offer: the three dice not selected rest in the cup as its spares."""
    return geometry.model_copy(update={"spare_dice": default_spares(3)})


def _ease(u: float) -> float:
    u = min(1.0, max(0.0, u))
    return u * u * (3.0 - 2.0 * u)


def offer_motion(geometry: TableGeometry, *, fps: float, motion_blur: int = 2,
                 target: tuple[float, float] = (180.0, 300.0), slide_s: float = 0.8, rest_s: float = 1.0,
                 return_s: float = 0.5, returned_s: float = 0.1
                 ) -> Iterator[tuple[str, list[int], list[list[DicePose]]]]:
    """The frames of an offer (see the module docstring).

    Args:
        geometry: the table (its cup; its own spare dice are not drawn: they are part of the set).
        fps: frames per second.
        motion_blur: sub-frame poses per frame while the dice move (``CameraConfig.motion_blur``).
        target: where the set comes to rest, its centre in table mm (in front of the player).
        slide_s, rest_s, return_s, returned_s: seconds of each stage.

    Yields:
        ``(stage, values, poses)`` per frame: the stage name, each drawn die's face up, and
        per drawn die its poses during the frame (``Renderer.render``'s argument).

    Raises:
        ValueError: a stage's duration < 0, ``fps`` <= 0, or ``target`` off the felt.
    """
    if fps <= 0 or min(slide_s, rest_s, return_s, returned_s) < 0:
        raise ValueError("offer: fps must be > 0 and every duration >= 0")
    if not (40.0 <= target[0] <= geometry.length - 40.0 and 40.0 <= target[1] <= geometry.width - 40.0):
        raise ValueError(f"offer target {target} mm is not on the felt")
    half = geometry.die_size / 2
    cx, cy = geometry.cup_centre
    start = (cx, cy - geometry.cup_radius - 45.0)          # just outside the cup, towards the middle
    slots = after_offer(geometry).spare_dice_poses()       # ((x, y, z), face, yaw) of the 3 spares
    faces, returned = [], iter(slots)
    for k in range(len(SET_LAYOUT)):
        if k in SELECTED:
            f, yaw = SELECTED_FACES[SELECTED.index(k)]
            faces.append((f, math.radians(yaw), None))
        else:
            pos, f, yaw = next(returned)
            faces.append((f, yaw, np.asarray(pos, float)))
    quats = [quat_with_face_up(f, yaw) for f, yaw, _ in faces]
    sub = max(1, int(motion_blur))
    dt = 1.0 / fps

    def at(centre, k):
        return np.array([centre[0] + SET_LAYOUT[k][0], centre[1] + SET_LAYOUT[k][1], half])

    def frames(seconds):
        return int(round(seconds * fps))

    values = [f for f, _, _ in faces]
    n = frames(slide_s)
    for i in range(n):
        poses = [[] for _ in SET_LAYOUT]
        for j in range(sub):
            u = _ease((i + (j + 1) / sub) * dt / slide_s) if slide_s > 0 else 1.0
            c = (start[0] + (target[0] - start[0]) * u, start[1] + (target[1] - start[1]) * u)
            for k in range(len(SET_LAYOUT)):
                poses[k].append(DicePose(at(c, k), quats[k]))
        yield "slide", values, poses
    still = [[DicePose(at(target, k), quats[k])] for k in range(len(SET_LAYOUT))]
    for _ in range(frames(rest_s)):
        yield "rest", values, still
    back = [k for k in range(len(SET_LAYOUT)) if k not in SELECTED]
    n = frames(return_s)
    for i in range(n):
        poses = []
        for k in back:
            a, b = at(target, k), faces[k][2]
            poses.append([DicePose(a + (b - a) * (_ease((i + (j + 1) / sub) * dt / return_s) if return_s > 0 else 1.0),
                                   quats[k]) for j in range(sub)])
        yield "return", [values[k] for k in back], poses
    for _ in range(frames(returned_s)):
        yield "returned", [values[k] for k in back], [[DicePose(faces[k][2], quats[k])] for k in back]


#: A foreign die's path (seconds since the release): at the far wall at :data:`FOREIGN_HIT_S`,
#: at rest from :data:`FOREIGN_REST_S` (natural throws rest after 1.05 s or more).
FOREIGN_HIT_S = 0.3
FOREIGN_REST_S = 0.9
#: Faces and turns (degrees) of up to four foreign dice.
FOREIGN_FACES = ((1, 10.0), (6, 35.0), (2, 60.0), (5, 80.0))


def foreign_poses(geometry: TableGeometry, n: int, t: float) -> list[DicePose]:
    """``n`` (0..4) foreign dice thrown with the pair (a cheat, 9 NYCRR 5324.52(k)(2)(v)), drawn
    kinematically at ``t`` s after the release: each leaves the shooter's end, strikes the far
    wall at :data:`FOREIGN_HIT_S` and rolls back to rest at :data:`FOREIGN_REST_S`, in a lane
    of its own (``y`` 380 + 30 k mm), at ``x`` 760 + 40 k mm.

    Raises:
        ValueError: ``n`` outside 0..4.
    """
    if not 0 <= n <= len(FOREIGN_FACES):
        raise ValueError(f"foreign dice: {n}, expected 0..{len(FOREIGN_FACES)}")
    half = geometry.die_size / 2
    at_wall = geometry.length - geometry.rubber_depth - half
    out = []
    for k in range(n):
        y, x_rest, x0 = 380.0 + 30.0 * k, 760.0 + 40.0 * k, 100.0
        if t <= FOREIGN_HIT_S:
            x = x0 + (at_wall - x0) * max(0.0, t) / FOREIGN_HIT_S
        else:
            x = at_wall + (x_rest - at_wall) * _ease((t - FOREIGN_HIT_S) / (FOREIGN_REST_S - FOREIGN_HIT_S))
        f, yaw = FOREIGN_FACES[k]
        out.append(DicePose(np.array([x, y, half]), quat_with_face_up(f, math.radians(yaw))))
    return out
