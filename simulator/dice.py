"""The casino die: which face carries which number, where its pips are, which face is up.

Pips follow N.J.A.C. 13:47-20.25(b)2viii: one opposite six, two opposite five, three opposite
four. In the die's own frame the faces are ``+z = 1``, ``-z = 6``, ``+x = 2``, ``-x = 5``,
``+y = 3``, ``-y = 4``; 1, 2 and 3 run counter-clockwise round their shared corner, as on
Western casino dice.
"""
from __future__ import annotations

import numpy as np

#: Face value -> outward unit normal in the die frame, float64 (3,).
FACE_NORMALS: dict[int, np.ndarray] = {
    1: np.array([0.0, 0.0, 1.0]),
    6: np.array([0.0, 0.0, -1.0]),
    2: np.array([1.0, 0.0, 0.0]),
    5: np.array([-1.0, 0.0, 0.0]),
    3: np.array([0.0, 1.0, 0.0]),
    4: np.array([0.0, -1.0, 0.0]),
}
#: Values in the order of the rows of :data:`NORMALS`.
VALUES: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
#: Outward normals, float64 (6, 3), row k for value ``VALUES[k]``.
NORMALS = np.stack([FACE_NORMALS[v] for v in VALUES])


def opposite(value: int) -> int:
    """The value on the face opposite ``value`` (they sum to 7), N.J.A.C. 13:47-20.25(b)2viii.

    Raises:
        ValueError: if ``value`` is not 1..6.
    """
    if value not in FACE_NORMALS:
        raise ValueError(f"die face value must be 1..6, got {value!r}")
    return 7 - value


def face_axes(value: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(n, u, v)`` for a face: outward normal and two in-face unit axes (die frame).

    ``u x v = n``, so pip offsets ``(a, b)`` placed at ``a*u + b*v`` read the same way on
    every face when the face is seen from outside.
    """
    n = FACE_NORMALS[value]
    helper = np.array([0.0, 0.0, 1.0]) if abs(n[2]) < 0.5 else np.array([1.0, 0.0, 0.0])
    u = np.cross(helper, n)
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    return n, u, v


#: Pip offsets on a face, in units of the pip spacing (``-1, 0, +1`` grid), per value.
PIP_GRID: dict[int, tuple[tuple[int, int], ...]] = {
    1: ((0, 0),),
    2: ((-1, -1), (1, 1)),
    3: ((-1, -1), (0, 0), (1, 1)),
    4: ((-1, -1), (1, -1), (-1, 1), (1, 1)),
    5: ((-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)),
    6: ((-1, -1), (-1, 0), (-1, 1), (1, -1), (1, 0), (1, 1)),
}
#: Pip spacing and pip radius as fractions of the die side (casino dice: about 5.3 mm and
#: 1.9 mm on a 19.05 mm die).
PIP_SPACING = 0.28
PIP_RADIUS = 0.10


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3) float64 from a unit quaternion ``(w, x, y, z)`` (MuJoCo order)."""
    w, x, y, z = (float(c) for c in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def value_up(rot: np.ndarray) -> tuple[int, float]:
    """The face most nearly up and its tilt.

    Args:
        rot: die-to-world rotation matrix, float (3, 3).

    Returns:
        ``(value, tilt_deg)``: the value whose outward normal has the largest world ``z``
        (9 NYCRR 5324.52(h)(1): "only one face on each die shall be considered skyward"), and the
        angle in degrees between that normal and the vertical.
    """
    z = NORMALS @ rot[2]          # world-z component of each face normal
    k = int(np.argmax(z))
    tilt = float(np.degrees(np.arccos(np.clip(z[k], -1.0, 1.0))))
    return VALUES[k], tilt


def face_towards(rot: np.ndarray, direction: np.ndarray) -> int:
    """The value of the face whose outward normal is most nearly along ``direction`` (world).

    Args:
        rot: die-to-world rotation, (3, 3).
        direction: world vector, (3,), any length.
    """
    local = rot.T @ np.asarray(direction, dtype=float)
    return VALUES[int(np.argmax(NORMALS @ local))]


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random unit quaternion ``(w, x, y, z)``, float64 (4,) (Shoemake's method)."""
    u1, u2, u3 = rng.random(3)
    a, b = np.sqrt(1 - u1), np.sqrt(u1)
    q = np.array([a * np.sin(2 * np.pi * u2), a * np.cos(2 * np.pi * u2),
                  b * np.sin(2 * np.pi * u3), b * np.cos(2 * np.pi * u3)])
    return q[[3, 0, 1, 2]] if q[3] >= 0 else -q[[3, 0, 1, 2]]


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of quaternions ``(w, x, y, z)``: rotation ``a`` after ``b``."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])


def axis_angle(axis: tuple[float, float, float], angle_rad: float) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)`` rotating by ``angle_rad`` about ``axis`` (world)."""
    ax = np.asarray(axis, dtype=float)
    ax = ax / np.linalg.norm(ax)
    s = np.sin(angle_rad / 2)
    return np.array([np.cos(angle_rad / 2), *(ax * s)])


def quat_with_face_up(value: int, yaw_rad: float = 0.0) -> np.ndarray:
    """Quaternion placing face ``value`` straight up, then turned by ``yaw_rad`` about z."""
    n = FACE_NORMALS[value]
    up = np.array([0.0, 0.0, 1.0])
    if np.allclose(n, up):
        q = np.array([1.0, 0.0, 0.0, 0.0])
    elif np.allclose(n, -up):
        q = axis_angle((1.0, 0.0, 0.0), np.pi)
    else:
        axis = np.cross(n, up)
        q = axis_angle(tuple(axis), np.arccos(np.clip(n @ up, -1, 1)))
    return quat_mul(axis_angle((0.0, 0.0, 1.0), yaw_rad), q)
