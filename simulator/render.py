"""CPU renderer of the top-down table camera (no OpenGL, no display, no GPU).

A pinhole camera ``CameraConfig.height_mm`` above the middle of the table looks straight
down. The static scene (floor, felt, layout lines, rails and their inner walls, the far wall's
rubber, chip stacks, the chip bank and the dice cup) is drawn once per table into a background
image; each frame copies it and draws the two dice: the visible faces of each cube projected in
painter's order (far first) with Lambert shading, the pips as filled projected circles, and a
soft shadow, all in a 4x supersampled window around the die. Optical blur, sensor noise and
motion blur (averaged sub-frame poses) are configurable.

Image convention: ``uint8 (H, W, 3)`` BGR. Pixel ``(u, v)``: ``u`` grows with table ``x``
(towards the far wall), ``v`` grows as table ``y`` falls (the boxperson's side is at the
bottom), so the picture is the table seen from above, not mirrored.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from .dice import NORMALS, PIP_GRID, PIP_RADIUS, PIP_SPACING, VALUES, face_axes, quat_to_mat, quat_with_face_up
from .geometry import CHIP_DIAMETER_MM, CHIP_THICKNESS_MM, CameraConfig, TableGeometry

_SS = 4            # supersampling factor of the dice windows
_SHIFT = 4         # fractional bits for cv2 polygon coordinates
_CIRCLE = 16       # vertices of a projected circle


class Camera:
    """Pinhole camera straight above the table centre.

    Args:
        geometry: the table (mm).
        config: image size, height and margin.

    Attributes:
        centre_mm: ``(x, y)`` of the point under the camera, table mm.
        focal_px: focal length in pixels.
    """

    def __init__(self, geometry: TableGeometry, config: CameraConfig) -> None:
        self.g, self.c = geometry, config
        R, m = geometry.rail_width, config.margin_mm
        self.centre_mm = (geometry.length / 2, geometry.width / 2)
        span_x = geometry.length + 2 * R + 2 * m
        span_y = geometry.width + 2 * R + 2 * m
        # fit the rail tops (nearer the camera than the felt) inside the image
        zr = config.height_mm - geometry.wall_height
        self.focal_px = min(config.width / span_x, config.height / span_y) * zr
        self.cam_pos = np.array([self.centre_mm[0], self.centre_mm[1], config.height_mm])

    def project(self, pts_mm: np.ndarray) -> np.ndarray:
        """Project table points to pixels.

        Args:
            pts_mm: float ``(N, 3)`` table millimetres (``z`` below the camera).

        Returns:
            float64 ``(N, 2)`` pixel coordinates ``(u, v)``.
        """
        p = np.asarray(pts_mm, dtype=np.float64).reshape(-1, 3)
        k = self.focal_px / np.maximum(self.c.height_mm - p[:, 2], 1.0)
        out = np.empty((len(p), 2))
        out[:, 0] = k * (p[:, 0] - self.centre_mm[0]) + self.c.width / 2
        out[:, 1] = -k * (p[:, 1] - self.centre_mm[1]) + self.c.height / 2
        return out

    @property
    def homography(self) -> np.ndarray:
        """float64 ``(3, 3)`` mapping pixels ``(u, v, 1)`` to felt-plane mm ``(x, y, 1)``.

        Valid for points on the felt (``z = 0``); a point ``z`` mm higher appears displaced
        away from the image centre by the factor ``H / (H - z)``.
        """
        s = self.c.height_mm / self.focal_px
        return np.array([
            [s, 0.0, self.centre_mm[0] - s * self.c.width / 2],
            [0.0, -s, self.centre_mm[1] + s * self.c.height / 2],
            [0.0, 0.0, 1.0],
        ])

    @property
    def mm_per_px(self) -> float:
        """Felt-plane millimetres per pixel."""
        return self.c.height_mm / self.focal_px


def _shade(colour, normal: np.ndarray, light: np.ndarray, c: CameraConfig) -> tuple[int, int, int]:
    k = (c.ambient + c.diffuse * max(0.0, float(normal @ light))) * c.brightness
    return tuple(int(min(255, max(0, v * k))) for v in colour)  # type: ignore[return-value]


def _fix(pts_px: np.ndarray, scale: float = 1.0, origin=(0.0, 0.0)) -> np.ndarray:
    q = (pts_px - np.asarray(origin)) * scale * (1 << _SHIFT)
    return np.round(q).astype(np.int32).reshape(-1, 1, 2)


def _circle(centre: np.ndarray, u: np.ndarray, v: np.ndarray, r: float, n: int = _CIRCLE) -> np.ndarray:
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return centre + r * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * v)


FELT = (48, 105, 28)          # BGR casino green
FLOOR = (52, 56, 60)
RAIL_TOP = (38, 52, 78)       # padded brown leather
WALL = (36, 72, 22)           # felt-covered inner wall, in shadow
RUBBER = (30, 30, 34)
LINE = (200, 215, 220)
DIE_COLOURS = {"red": ((38, 32, 178), (245, 245, 245)), "white": ((236, 238, 240), (25, 25, 25))}


def _still(poses: list["DicePose"]) -> bool:
    """True when sub-frame poses differ by less than 0.3 mm and about 2 degrees."""
    p0, q0 = poses[0].pos_mm, poses[0].quat
    return all(np.linalg.norm(p.pos_mm - p0) < 0.3 and abs(float(np.dot(p.quat, q0))) > 0.99985 for p in poses[1:])


@dataclass(slots=True)
class DicePose:
    """Pose of one die for drawing: centre ``pos_mm`` (3,) and quaternion ``quat`` (4,)."""

    pos_mm: np.ndarray
    quat: np.ndarray


class Renderer:
    """Draws frames of the table from dice poses.

    Args:
        geometry: the table.
        config: the camera (size, lighting, noise, blur).
        seed: seeds the felt texture and the sensor noise.
        noise_from: reuse this renderer's sensor-noise patterns (same camera config), which
            saves making them again for a table that differs only by a chip stack.

    Raises:
        ValueError: if ``config.light_dir`` is the zero vector.
    """

    def __init__(self, geometry: TableGeometry, config: CameraConfig | None = None, seed: int = 0,
                 noise_from: "Renderer | None" = None) -> None:
        self.g = geometry
        self.c = config or CameraConfig()
        self.cam = Camera(geometry, self.c)
        light = np.asarray(self.c.light_dir, dtype=float)
        if not np.linalg.norm(light) > 0:
            raise ValueError("camera light_dir must not be the zero vector")
        self.light = light / np.linalg.norm(light)
        self.rng = np.random.default_rng(seed)
        self.die_body, self.pip_colour = DIE_COLOURS[self.c.die_colour]
        self._build_die_model()
        self._cache: dict = {}
        self.background, self.table_mask = self._draw_background()
        same = noise_from is not None and noise_from.c == self.c
        self._noise = noise_from._noise if same else self._noise_bank(6)
        self._noisy = [cv2.subtract(cv2.add(self.background, pos), neg) for pos, neg in self._noise] or [self.background]

    # ---- static scene --------------------------------------------------------------------
    def _poly(self, img, pts_mm, colour) -> None:
        cv2.fillPoly(img, [_fix(self.cam.project(pts_mm))], colour, cv2.LINE_AA, _SHIFT)

    def _cylinder(self, img, x, y, z0, z1, r, side, top, stripes: tuple | None = None) -> None:
        ring0 = _circle(np.array([x, y, z0]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), r, 36)
        ring1 = _circle(np.array([x, y, z1]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), r, 36)
        hull = cv2.convexHull(self.cam.project(np.vstack([ring0, ring1])).astype(np.float32))
        cv2.fillPoly(img, [_fix(hull.reshape(-1, 2))], side, cv2.LINE_AA, _SHIFT)
        self._poly(img, ring1, top)
        if stripes is not None:       # edge spots of a casino chip, seen on its top face
            for k in range(6):
                a = 2 * math.pi * k / 6
                c = np.array([x + 0.8 * r * math.cos(a), y + 0.8 * r * math.sin(a), z1])
                quad = np.array([c + 0.18 * r * np.array([math.cos(a), math.sin(a), 0]) + 0.12 * r * np.array([-math.sin(a), math.cos(a), 0]),
                                 c + 0.18 * r * np.array([math.cos(a), math.sin(a), 0]) - 0.12 * r * np.array([-math.sin(a), math.cos(a), 0]),
                                 c - 0.18 * r * np.array([math.cos(a), math.sin(a), 0]) - 0.12 * r * np.array([-math.sin(a), math.cos(a), 0]),
                                 c - 0.18 * r * np.array([math.cos(a), math.sin(a), 0]) + 0.12 * r * np.array([-math.sin(a), math.cos(a), 0])])
                self._poly(img, quad, stripes)
            inner = _circle(np.array([x, y, z1]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), 0.62 * r, 24)
            cv2.polylines(img, [_fix(self.cam.project(inner))], True, stripes, 1, cv2.LINE_AA, _SHIFT)

    def _chip_colours(self, colour) -> tuple[tuple, tuple, tuple]:
        top = tuple(int(min(255, v * self.c.brightness * (self.c.ambient + self.c.diffuse * self.light[2]))) for v in colour)
        side = tuple(int(v * 0.7) for v in top)
        stripe = (235, 235, 235) if sum(colour) < 500 else (60, 60, 200)
        return top, side, tuple(int(min(255, v * self.c.brightness)) for v in stripe)

    def _lit(self, colour, normal=(0.0, 0.0, 1.0)) -> tuple[int, int, int]:
        return _shade(colour, np.asarray(normal, dtype=float), self.light, self.c)

    def _draw_background(self) -> tuple[np.ndarray, np.ndarray]:
        g, c = self.g, self.c
        L, W, R, H = g.length, g.width, g.rail_width, g.wall_height
        img = np.empty((c.height, c.width, 3), np.uint8)
        img[:] = self._lit(FLOOR)
        # floor texture
        tex = self.rng.normal(0, 4, (c.height // 4 + 1, c.width // 4 + 1)).astype(np.float32)
        tex = cv2.resize(tex, (c.width, c.height), interpolation=cv2.INTER_LINEAR)
        img = np.clip(img.astype(np.float32) + tex[..., None], 0, 255).astype(np.uint8)
        mask = np.zeros((c.height, c.width), np.uint8)
        outer = np.array([[-R, -R, H], [L + R, -R, H], [L + R, W + R, H], [-R, W + R, H]])
        cv2.fillPoly(mask, [_fix(self.cam.project(outer))], 255, cv2.LINE_8, _SHIFT)
        # table body seen outside the rails (the apron) and the rail tops
        self._poly(img, outer, self._lit(RAIL_TOP))
        # felt with a woven texture
        felt = np.array([[0, 0, 0], [L, 0, 0], [L, W, 0], [0, W, 0]], float)
        fmask = np.zeros((c.height, c.width), np.uint8)
        cv2.fillPoly(fmask, [_fix(self.cam.project(felt))], 255, cv2.LINE_8, _SHIFT)
        felt_img = np.empty_like(img)
        felt_img[:] = self._lit(FELT)
        ftex = self.rng.normal(0, 3.0, (c.height, c.width)).astype(np.float32)
        ftex = cv2.GaussianBlur(ftex, (0, 0), 0.8) * 1.6
        felt_img = np.clip(felt_img.astype(np.float32) + ftex[..., None], 0, 255).astype(np.uint8)
        img[fmask > 0] = felt_img[fmask > 0]
        # layout lines (pass line band, come box, field) in thin off-white
        lc = self._lit(LINE)
        for y in () if not c.layout_lines else (g.bank_depth + 20, g.bank_depth + 60, W - 2 * g.cup_radius - 50):
            p = self.cam.project(np.array([[60.0, y, 0], [L - 120.0, y, 0]]))
            cv2.line(img, tuple(np.round(p[0] * 16).astype(int)), tuple(np.round(p[1] * 16).astype(int)),
                     lc, 2, cv2.LINE_AA, _SHIFT)
        for x in () if not c.layout_lines else (60.0, L * 0.35, L * 0.65, L - 120.0):
            p = self.cam.project(np.array([[x, g.bank_depth + 20, 0], [x, W - 2 * g.cup_radius - 50, 0]]))
            cv2.line(img, tuple(np.round(p[0] * 16).astype(int)), tuple(np.round(p[1] * 16).astype(int)),
                     lc, 2, cv2.LINE_AA, _SHIFT)
        # inner walls (visible in perspective): quads from the felt edge up to the rail top
        walls = [
            (np.array([[0, 0, 0], [L, 0, 0], [L, 0, H], [0, 0, H]]), (0, 1, 0)),
            (np.array([[0, W, 0], [L, W, 0], [L, W, H], [0, W, H]]), (0, -1, 0)),
            (np.array([[0, 0, 0], [0, W, 0], [0, W, H], [0, 0, H]]), (1, 0, 0)),
            (np.array([[L, 0, 0], [L, W, 0], [L, W, H], [L, 0, H]]), (-1, 0, 0)),
        ]
        for quad, n in walls:
            colour = RUBBER if n[0] < 0 else WALL
            self._poly(img, quad.astype(float), self._lit(colour, n))
        # far-wall rubber pyramids: alternating lit and shaded facets
        n = max(1, int(W // g.rubber_pitch))
        off = (W - (n - 1) * g.rubber_pitch) / 2
        zr = 0.7 * H
        for k in range(n):
            y = off + k * g.rubber_pitch
            d = g.rubber_depth
            for sgn in (-1, 1):
                quad = np.array([[L - d, y, 0], [L, y + sgn * d, 0], [L, y + sgn * d, zr], [L - d, y, zr]])
                nrm = np.array([-1.0, sgn * 1.0, 0]) / math.sqrt(2)
                self._poly(img, quad, self._lit((40, 40, 46), nrm))
        # rail tops again over the walls' top edges (they are nearer the camera)
        for quad in (
            [[-R, -R, H], [L + R, -R, H], [L + R, 0, H], [-R, 0, H]],
            [[-R, W, H], [L + R, W, H], [L + R, W + R, H], [-R, W + R, H]],
            [[-R, -R, H], [0, -R, H], [0, W + R, H], [-R, W + R, H]],
            [[L, -R, H], [L + R, -R, H], [L + R, W + R, H], [L, W + R, H]],
        ):
            self._poly(img, np.array(quad, float), self._lit(RAIL_TOP))
        # chip bank: tray and columns
        bx0, by0, bx1, by1 = g.bank_rect
        self._poly(img, np.array([[bx0, by0, 3], [bx1, by0, 3], [bx1, by1, 3], [bx0, by1, 3]]), self._lit((30, 30, 30)))
        bank_h = 3.0 + g.bank_chips * CHIP_THICKNESS_MM
        palette = [(40, 40, 200), (70, 140, 40), (40, 40, 40), (200, 200, 200), (160, 60, 60), (40, 140, 220)]
        r = CHIP_DIAMETER_MM / 2
        for k, (x, y) in enumerate(sorted(g.bank_stacks, key=lambda p: -math.hypot(p[0] - self.cam.centre_mm[0], p[1] - self.cam.centre_mm[1]))):
            top, side, stripe = self._chip_colours(palette[k % len(palette)])
            self._cylinder(img, x, y, 3.0, bank_h, r, side, top, stripe)
        # chip stacks on the layout
        for st in sorted(g.stacks, key=lambda s: s.height):
            top, side, stripe = self._chip_colours(st.colour)
            self._cylinder(img, st.x, st.y, 0.0, st.height, r, side, top, stripe)
        # dice cup: outer side, rim, dark interior
        cx, cy = g.cup_centre
        cup = (70, 70, 74)
        self._cylinder(img, cx, cy, 0.0, g.cup_height, g.cup_radius, self._lit(cup, (0.7, 0, 0.7)), self._lit((95, 95, 100)))
        self._poly(img, _circle(np.array([cx, cy, g.cup_height]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]),
                                g.cup_radius - g.cup_wall, 36), self._lit((45, 45, 48)))
        self._poly(img, _circle(np.array([cx, cy, 3.0]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]),
                                g.cup_radius - g.cup_wall, 36), self._lit((35, 35, 38)))
        # spare dice resting in the cup (9 NYCRR 5324.52(a)(5)): part of the empty table
        for pos, face, yaw in g.spare_dice_poses():
            pose = DicePose(np.asarray(pos, float), quat_with_face_up(face, yaw))
            win = self._die_window([pose])
            if win is not None:
                x0, y0, x1, y1 = win
                img[y0:y1, x0:x1] = self._drawn(img, win, [pose])
        if c.blur_sigma > 0:
            img = cv2.GaussianBlur(img, (0, 0), c.blur_sigma)
        return img, mask

    def _noise_bank(self, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if self.c.noise_sigma <= 0:
            return []
        out = []
        for _ in range(n):
            z = self.rng.normal(0, self.c.noise_sigma, (self.c.height, self.c.width, 3)).astype(np.float32)
            out.append((np.clip(z, 0, 255).astype(np.uint8), np.clip(-z, 0, 255).astype(np.uint8)))
        return out

    # ---- dice ----------------------------------------------------------------------------
    def _support_height(self, x: float, y: float) -> float:
        g = self.g
        if not (0 <= x <= g.length and 0 <= y <= g.width):
            if -g.rail_width <= x <= g.length + g.rail_width and -g.rail_width <= y <= g.width + g.rail_width:
                return g.wall_height
            return -g.table_height
        bx0, by0, bx1, by1 = g.bank_rect
        if bx0 <= x <= bx1 and by0 <= y <= by1:
            return 3.0 + g.bank_chips * CHIP_THICKNESS_MM
        cx, cy = g.cup_centre
        if math.hypot(x - cx, y - cy) <= g.cup_radius:
            return 3.0
        for st in g.stacks:
            if math.hypot(x - st.x, y - st.y) <= CHIP_DIAMETER_MM / 2:
                return st.height
        return 0.0

    def _die_geometry(self, pose: DicePose):
        a = self.g.die_size
        rot = quat_to_mat(pose.quat)
        centre = np.asarray(pose.pos_mm, dtype=float)
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
        corners = centre + (signs * (a / 2)) @ rot.T
        return rot, centre, corners

    def _build_die_model(self) -> None:
        """Precompute, in die units (side 1), every point drawn on a die: per face its quad,
        the inner glow quad and the pip circles."""
        pts: list[np.ndarray] = []
        self._face_slices: list[tuple[int, np.ndarray, slice, slice, list[slice]]] = []
        n0 = 0

        def add(a: np.ndarray) -> slice:
            nonlocal n0
            pts.append(a)
            sl = slice(n0, n0 + len(a))
            n0 += len(a)
            return sl

        corners = ((-1, -1), (1, -1), (1, 1), (-1, 1))
        for k, value in enumerate(VALUES):
            n, u, v = face_axes(value)
            fc = n * 0.5
            quad = add(np.array([fc + 0.5 * (su * u + sv * v) for su, sv in corners]))
            glow = add(np.array([fc + 0.39 * (su * u + sv * v) for su, sv in corners]))
            pips = [add(_circle(fc + n * 0.003 + (gu * u + gv * v) * PIP_SPACING, u, v, PIP_RADIUS))
                    for gu, gv in PIP_GRID[value]]
            self._face_slices.append((value, NORMALS[k], quad, glow, pips))
        self._die_pts = np.vstack(pts)

    def _draw_die(self, canvas: np.ndarray, origin, scale: float, pose: DicePose) -> None:
        """Draw one die (shadow, faces, pips) into ``canvas`` whose pixel (0, 0) is image
        point ``origin`` and which is ``scale`` times finer than the image."""
        a = self.g.die_size
        rot, centre, corners = self._die_geometry(pose)
        # shadow on whatever is under the die, along the light
        zs = self._support_height(centre[0], centre[1])
        t = (corners[:, 2] - zs) / max(self.light[2], 0.2)
        shadow = corners - t[:, None] * self.light
        shadow[:, 2] = zs
        hull = cv2.convexHull(self.cam.project(shadow).astype(np.float32)).reshape(-1, 2)
        h1, w1 = canvas.shape[0] // _SS, canvas.shape[1] // _SS
        sh = np.zeros((h1, w1), np.uint8)           # drawn and blurred at image scale (soft anyway)
        cv2.fillPoly(sh, [_fix(hull, scale / _SS, origin)], 255, cv2.LINE_AA, _SHIFT)
        sh = cv2.resize(cv2.GaussianBlur(sh, (3, 3), 0), (canvas.shape[1], canvas.shape[0]),
                        interpolation=cv2.INTER_LINEAR)
        height = max(0.0, centre[2] - a / 2 - zs)
        strength = 0.22 * math.exp(-height / 60.0)   # diffuse casino lighting: faint shadows
        dark = cv2.multiply(canvas, cv2.merge([sh, sh, sh]), scale=strength / 255.0)
        cv2.subtract(canvas, dark, dst=canvas)
        # all face, glow and pip points at once
        world = centre + (self._die_pts * a) @ rot.T
        fixed = _fix(self.cam.project(world), scale, origin)
        eye = self.cam.cam_pos
        faces = []
        for value, n_local, quad, glow, pips in self._face_slices:
            n_w = rot @ n_local
            fc = centre + n_w * (a / 2)
            if float(n_w @ (eye - fc)) <= 0:
                continue
            faces.append((float(np.linalg.norm(eye - fc)), n_w, quad, glow, pips))
        faces.sort(key=lambda f: -f[0])           # painter's order: far first
        red = self.c.die_colour == "red"
        for _, n_w, quad, glow, pips in faces:
            colour = _shade(self.die_body, n_w, self.light, self.c)
            cv2.fillConvexPoly(canvas, fixed[quad], colour, cv2.LINE_AA, _SHIFT)
            if red:   # translucent body: a lighter inner glow
                cv2.fillConvexPoly(canvas, fixed[glow], tuple(min(255, int(cv * 1.12)) for cv in colour),
                                   cv2.LINE_AA, _SHIFT)
            pip = _shade(self.pip_colour, n_w, self.light, self.c)
            for sl in pips:
                cv2.fillConvexPoly(canvas, fixed[sl], pip, cv2.LINE_AA, _SHIFT)

    def _drawn(self, base: np.ndarray, win: tuple[int, int, int, int], poses: list[DicePose]) -> np.ndarray:
        """The window ``win`` ``(x0, y0, x1, y1)`` of ``base`` with one die drawn in it, 4x
        supersampled: uint8 ``(y1 - y0, x1 - x0, 3)``, the mean over ``poses`` (sub-frame poses
        of one exposure: motion blur)."""
        x0, y0, x1, y1 = win
        big = cv2.resize(base[y0:y1, x0:x1], ((x1 - x0) * _SS, (y1 - y0) * _SS), interpolation=cv2.INTER_LINEAR)
        acc = None
        for p in poses:
            canvas = big.copy()
            self._draw_die(canvas, (x0, y0), _SS, p)
            acc = canvas.astype(np.float32) if acc is None else acc + canvas
        return cv2.resize((acc / len(poses)).astype(np.uint8), (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)

    def _die_window(self, poses: list[DicePose]) -> tuple[int, int, int, int] | None:
        pts = []
        for p in poses:
            _, centre, corners = self._die_geometry(p)
            zs = self._support_height(centre[0], centre[1])
            t = (corners[:, 2] - zs) / max(self.light[2], 0.2)
            shadow = corners - t[:, None] * self.light
            shadow[:, 2] = zs
            pts.append(self.cam.project(corners))
            pts.append(self.cam.project(shadow))
        p = np.vstack(pts)
        x0, y0 = np.floor(p.min(0)).astype(int) - 4
        x1, y1 = np.ceil(p.max(0)).astype(int) + 5
        x0, y0 = max(0, x0), max(0, y0)
        x1, y1 = min(self.c.width, x1), min(self.c.height, y1)
        if x1 - x0 < 2 or y1 - y0 < 2 or (x1 - x0) * (y1 - y0) > self.c.width * self.c.height // 4:
            return None
        return int(x0), int(y0), int(x1), int(y1)

    def render(self, dice: list[list[DicePose]], frame_index: int = 0) -> np.ndarray:
        """Draw one frame.

        Args:
            dice: for each die, its poses during the frame's exposure (one pose, or several
                sub-frame poses averaged for motion blur), table mm.
            frame_index: selects the noise pattern.

        Returns:
            uint8 ``(H, W, 3)`` BGR image.
        """
        k_noise = frame_index % len(self._noisy)
        img = self._noisy[k_noise].copy()
        items = []
        for i in sorted(range(len(dice)), key=lambda i: dice[i][-1].pos_mm[2]):   # lower die first
            poses = dice[i]
            if len(poses) > 1 and _still(poses):
                poses = poses[-1:]
            win = self._die_window(poses)
            if win is not None:
                items.append((i, poses, win))
        overlap = any(a[2][0] < b[2][2] and b[2][0] < a[2][2] and a[2][1] < b[2][3] and b[2][1] < a[2][3]
                      for n, a in enumerate(items) for b in items[n + 1:])
        # where windows overlap, each die is drawn over a clean (noiseless) image that already
        # holds the dice drawn before it, so the later window does not erase the earlier die
        clean = self.background.copy() if overlap else self.background
        for i, poses, (x0, y0, x1, y1) in items:
            key = None if overlap else (x0, y0, x1, y1, b"".join(p.pos_mm.tobytes() + p.quat.tobytes() for p in poses))
            out = self._cache.get(key) if key is not None else None
            if out is None:
                out = self._drawn(clean, (x0, y0, x1, y1), poses)
                if self.c.blur_sigma > 0:
                    out = cv2.GaussianBlur(out, (0, 0), self.c.blur_sigma)
                if key is not None:
                    if len(self._cache) >= 8:
                        self._cache.clear()
                    self._cache[key] = out
            if overlap:
                clean[y0:y1, x0:x1] = out
            if self._noise:
                pos, neg = self._noise[(k_noise + 1 + i) % len(self._noise)]
                out = cv2.subtract(cv2.add(out, pos[y0:y1, x0:x1]), neg[y0:y1, x0:x1])
            else:
                out = out.copy()
            if poses[-1].pos_mm[2] < -self.g.die_size:   # off the table, on the floor: hidden by it
                keep = self.table_mask[y0:y1, x0:x1] > 0
                out[keep] = img[y0:y1, x0:x1][keep]
            img[y0:y1, x0:x1] = out
        return img

    def die_centre_px(self, pose: DicePose) -> tuple[float, float]:
        """Pixel ``(u, v)`` of the centre of the die's upper face."""
        rot = quat_to_mat(pose.quat)
        up = NORMALS[int(np.argmax(NORMALS @ rot[2]))]
        p = np.asarray(pose.pos_mm, float) + (rot @ up) * (self.g.die_size / 2)
        u, v = self.cam.project(p[None, :])[0]
        return float(u), float(v)

    def die_bbox_px(self, pose: DicePose) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` pixels (x1/y1 exclusive) covering the projected die."""
        _, _, corners = self._die_geometry(pose)
        p = self.cam.project(corners)
        x0, y0 = np.floor(p.min(0)).astype(int)
        x1, y1 = np.ceil(p.max(0)).astype(int)
        return int(x0), int(y0), int(x1), int(y1)
