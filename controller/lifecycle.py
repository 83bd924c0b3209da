"""Roll lifecycle: from frames to "dice at rest, read now" (motion detection + a pure state machine).

Phases (``RollLifecycle.phase``)::

    settling --rest--> waiting | decided          (start-up, and after a timed-out throw)
    waiting  --motion--> in-motion                (a throw from an empty table; bets closed)
    in-motion --N still frames--> [read] -> verdict -> decided
                                         | offered -> decided  (dice offered to a new shooter:
                                                                no verdict, controller/offer.py)
    in-motion --timeout--> verdict "not-at-rest" -> settling
    decided  --motion--> clearing                 (dice picked up, or thrown again)
    clearing --N still frames--> [read] -> waiting (table empty)
                                         | decided (same dice where they were: no new throw)
                                         | offered -> decided  (after an offer: some of the
                                                                offered dice where they were,
                                                                the shooter selecting two)
                                         | verdict (other dice at rest: a new throw)

A dice offer (9 NYCRR 5324.52(i)(3), (i)(4); (f)(1), (f)(3)): the stickperson pushes the set of
five or more dice to the new shooter, who selects two; the rest go back to the cup. Its motion
from the empty table starts as a throw; at rest the caller, having judged it an offer, reports
``on_read(scene, offer=True)`` and the offered dice are then treated as a verdict's dice: their
selection and return to the cup is clearing, the empty table (or dice only in the cup) after it
is waiting, and the shooter's throw from it an ordinary throw. An armed motion (:meth:`arm`) is
always a throw, never an offer.

"At rest" is 9 NYCRR 5324.52(h)(1) "when the dice come to rest": no motion inside the table area
for ``still_frames`` consecutive frames. Motion is frame differencing on a downscaled, blurred
grey image (:class:`MotionDetector`). A throw from an empty table (or after :meth:`arm`) that
is not at rest within ``rest_timeout_s`` is a no roll (``not-at-rest``, 5324.52(k)(2)(vi)).
Motion after a verdict is not timed: it is usually the stickperson collecting the dice
(5324.52(h)(2)); an automated rig calls :meth:`RollLifecycle.arm` when it throws. This holds
after a verdict that saw no dice too (both dice off the table, or dice the reader could not
find): the next rest on an empty table is "cleared", not a second throw, so a die the reader
missed never turns its pick-up into a spurious no roll. The price: a throw that directly
follows a verdict without an empty table in between is not timed, and a second "both dice off
the table" in a row is taken for the table being cleared.

The state machine takes only times and booleans, and the scenes the caller read; it does no
I/O and holds no frames.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from camera.base import check_image

WAITING = "waiting"
IN_MOTION = "in-motion"
DECIDED = "decided"
CLEARING = "clearing"
SETTLING = "settling"

#: Step kinds returned by :meth:`RollLifecycle.on_frame`.
#: Auto scale of the motion detector: a die this many pixels wide after downscaling, or this
#: image width when the die size is unknown.
AUTO_DIE_PX = 12.0
AUTO_WIDTH = 320

STEP_NONE = "none"
STEP_THROW = "throw-started"
STEP_READ = "read"
STEP_TIMEOUT = "timed-out"

#: Results of :meth:`RollLifecycle.on_read`.
READ_VERDICT = "verdict"
READ_CLEARED = "cleared"
READ_UNCHANGED = "unchanged"
READ_SETTLED = "settled"
READ_OFFERED = "offered"


class MotionDetector:
    """Tells whether anything moved inside the table area since the previous frame.

    Each frame is converted to grey, downscaled (aspect kept), blurred (Gaussian, 5x5) and
    compared with the previous one; a pixel "moves" when its absolute difference exceeds
    ``threshold`` grey levels. A frame is in motion when at least ``min_pixels`` pixels of the
    downscaled image move inside the area.

    The scale follows the die: a die must stay visible after downscaling or a tumbling die is
    missed. With ``die_side_px`` known (calibration, the simulator), ``width=0`` downscales so
    that a die is :data:`AUTO_DIE_PX` pixels wide and ``min_pixels=0`` asks for an eighth of a
    die's area; with the die size unknown they default to 320 pixels wide and 12 pixels.

    Args:
        area: the table area, polygon ``[(x, y), ...]`` in full-frame pixels, or ``None`` for the
            whole frame.
        threshold: grey levels 1..255.
        min_pixels: moving pixels (downscaled image) that make motion; 0 = auto.
        width: the width of the downscaled image in pixels; 0 = auto.
        die_side_px: the expected die side in full-frame pixels, or ``None`` when unknown.

    Defaults were set on simulated throws (1280x720, 30 fps, die 17 px): no frame at rest taken
    for motion, and no run of more than 4 "still" frames while a die was still moving.

    Cost: about 1 ms per 1280x720 frame (one resize dominates).
    """

    def __init__(self, area: Sequence[tuple[float, float]] | None = None, *, threshold: int = 15,
                 min_pixels: int = 0, width: int = 0, die_side_px: float | None = None) -> None:
        self.area = None if area is None or len(area) < 3 else [(float(x), float(y)) for x, y in area]
        self.threshold = int(threshold)
        self.die_side_px = float(die_side_px) if die_side_px else None
        self._width_cfg = int(width)
        self._min_pixels_cfg = int(min_pixels)
        self.min_pixels = max(1, self._min_pixels_cfg) if self._min_pixels_cfg > 0 else 12
        self._prev: np.ndarray | None = None
        self._mask: np.ndarray | None = None
        self._mask_key: tuple[int, int, int, int] | None = None
        self.last_fraction: float = 0.0
        self.last_pixels: int = 0

    def _target_width(self, w: int) -> int:
        if self._width_cfg > 0:
            return min(self._width_cfg, w)
        if self.die_side_px:
            return max(16, min(w, round(w * AUTO_DIE_PX / self.die_side_px)))
        return min(AUTO_WIDTH, w)

    def _small(self, image: np.ndarray) -> np.ndarray:
        grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        h, w = grey.shape
        sw = self._target_width(w)
        sh = max(1, round(h * sw / w))
        if self._min_pixels_cfg <= 0 and self.die_side_px:
            die_small = self.die_side_px * sw / w
            self.min_pixels = max(2, int(die_small * die_small / 8))
        small = grey if sw == w else cv2.resize(grey, (sw, sh), interpolation=cv2.INTER_AREA)
        return cv2.GaussianBlur(small, (5, 5), 0)

    def _area_mask(self, full: tuple[int, int], small: tuple[int, int]) -> np.ndarray:
        key = (full[0], full[1], small[0], small[1])
        if self._mask is None or self._mask_key != key:
            sh, sw = small
            if self.area is None:
                mask = np.ones((sh, sw), dtype=bool)
            else:
                sx, sy = sw / full[1], sh / full[0]
                pts = np.array([[x * sx, y * sy] for x, y in self.area], dtype=np.float32)
                m = np.zeros((sh, sw), dtype=np.uint8)
                cv2.fillPoly(m, [np.round(pts).astype(np.int32)], 1)
                mask = m.astype(bool)
                if not mask.any():
                    mask = np.ones((sh, sw), dtype=bool)
            self._mask, self._mask_key = mask, key
        return self._mask

    def moving(self, image: np.ndarray) -> bool:
        """Return ``True`` when ``image`` differs from the previous frame inside the area.

        The first frame, and a frame whose size differs from the previous one, count as
        motion only when a previous frame existed (a size change is a scene change).

        Args:
            image: ``uint8`` ``(H, W, 3)`` BGR or ``(H, W)`` grey.

        Raises:
            camera.base.FrameError: when ``image`` is not a valid frame.
        """
        image = check_image(image, "motion detector frame")
        small = self._small(image)
        prev, self._prev = self._prev, small
        if prev is None:
            self.last_fraction = 0.0
            return False
        if prev.shape != small.shape:
            self.last_fraction = 1.0
            return True
        mask = self._area_mask(image.shape[:2], small.shape)
        diff = cv2.absdiff(small, prev) > self.threshold
        n = int(np.count_nonzero(diff & mask))
        total = int(np.count_nonzero(mask))
        self.last_fraction = n / total if total else 0.0
        self.last_pixels = n
        return n >= self.min_pixels

    def snapshot(self) -> np.ndarray | None:
        """The last frame seen, downscaled (a reference to compare later frames with)."""
        return None if self._prev is None else self._prev.copy()

    def same_as(self, reference: np.ndarray | None) -> bool:
        """``True`` when the last frame seen does not differ from ``reference`` (a
        :meth:`snapshot`) inside the area by the motion criterion. Used to tell that the table
        is as empty as it was, without reading it."""
        if reference is None or self._prev is None or reference.shape != self._prev.shape:
            return False
        mask = self._mask if self._mask is not None and self._mask.shape == reference.shape \
            else np.ones(reference.shape, dtype=bool)
        n = int(np.count_nonzero((cv2.absdiff(self._prev, reference) > self.threshold) & mask))
        return n < self.min_pixels

    def reset(self) -> None:
        """Forget the previous frame (the next frame is a first frame)."""
        self._prev = None


@dataclass(frozen=True, slots=True)
class SceneDie:
    """A die of a scene, for telling "same dice where they were" from "a new throw".

    Attributes:
        value: face value or ``None``.
        x, y: centre in pixels.
    """

    value: int | None
    x: float
    y: float


Scene = tuple[SceneDie, ...]


def within_scene(a: Scene, b: Scene, tolerance_px: float) -> bool:
    """``True`` when every die of ``a`` is a distinct die of ``b`` (same value, centres within
    ``tolerance_px``), matched greedily by nearest centre: ``a`` is ``b`` with dice taken away.
    An empty ``a`` is within any ``b``."""
    if len(a) > len(b):
        return False
    left = list(b)
    for die in a:
        best, best_d = None, None
        for other in left:
            d = ((die.x - other.x) ** 2 + (die.y - other.y) ** 2) ** 0.5
            if other.value == die.value and (best_d is None or d < best_d):
                best, best_d = other, d
        if best is None or best_d is None or best_d > tolerance_px:
            return False
        left.remove(best)
    return True


def same_scene(a: Scene, b: Scene, tolerance_px: float) -> bool:
    """``True`` when ``a`` and ``b`` have the same dice (values) within ``tolerance_px`` of each
    other's centres, matched greedily by nearest centre (:func:`within_scene` of as many
    dice)."""
    return len(a) == len(b) and within_scene(a, b, tolerance_px)


@dataclass(frozen=True, slots=True)
class Step:
    """What the caller must do after a frame.

    Attributes:
        kind: ``"none"``, ``"throw-started"`` (bets closed), ``"read"`` (read this frame's dice
            and call :meth:`RollLifecycle.on_read`) or ``"timed-out"`` (decide a no roll,
            ``not-at-rest``).
        rest_t: for ``"read"``: the time of the first still frame (when the dice came to rest),
            seconds in the frame clock.
    """

    kind: str
    rest_t: float | None = None


class RollLifecycle:
    """The pure state machine of the module docstring.

    Args:
        still_frames: consecutive still frames that make "at rest" (>= 1).
        rest_timeout_s: seconds from the first motion of a throw to a no roll (> 0).
        same_tolerance_px: centre distance in pixels within which a die "has not moved".
        still_s: and those still frames must span at least this many seconds (>= 0): the
            same rest at any frame rate (8 frames are 0.27 s at 30 fps but 0.13 s at 60 fps,
            where a die still rocking against the other was read, tilted, as resting on it).
    """

    def __init__(self, still_frames: int = 8, rest_timeout_s: float = 10.0,
                 same_tolerance_px: float = 10.0, still_s: float = 0.0) -> None:
        if still_frames < 1:
            raise ValueError(f"still_frames must be >= 1, got {still_frames}")
        if rest_timeout_s <= 0:
            raise ValueError(f"rest_timeout_s must be > 0, got {rest_timeout_s}")
        if not still_s >= 0:
            raise ValueError(f"still_s must be >= 0, got {still_s}")
        self.still_frames = int(still_frames)
        self.still_s = float(still_s)
        self.rest_timeout_s = float(rest_timeout_s)
        self.same_tolerance_px = float(same_tolerance_px)
        self.phase = SETTLING
        self._still = 0
        self._rest_t: float | None = None
        self._motion_t: float | None = None
        self._scene: Scene = ()
        self._armed = False
        self._armed_throw = False      # the motion in progress was started by arm()
        self._offered: Scene = ()      # the dice of an offer still on the table
        self._reading_from: str | None = None

    @property
    def reading_from(self) -> str | None:
        """During a read: the phase the rest was reached in (``"in-motion"``, ``"clearing"``,
        ``"settling"``), else ``None``."""
        return self._reading_from if self.phase == "reading" else None

    @property
    def armed_throw(self) -> bool:
        """The throw in motion (or being read) was started by :meth:`arm`."""
        return self._armed_throw

    @property
    def offer_on_table(self) -> bool:
        """Dice of an offer to a new shooter are on the table (until it is empty again or a
        throw is decided)."""
        return bool(self._offered)

    @property
    def bets_closed(self) -> bool:
        """``True`` while a throw is in motion (dice out, until its verdict)."""
        return self.phase == IN_MOTION

    def arm(self) -> None:
        """Declare that the next motion is a throw (an automated rig's shaker, a "dice out"
        input): it is timed and decided even if dice were on the table."""
        self._armed = True

    def on_frame(self, t: float, moving: bool) -> Step:
        """Advance by one frame.

        Args:
            t: the frame's time in seconds (monotonic within a source).
            moving: the motion detector's answer for this frame.

        Returns:
            the :class:`Step` the caller must take.
        """
        if self.phase in (WAITING, DECIDED):
            if not moving:
                return Step(STEP_NONE)
            self._still, self._motion_t = 0, t
            if self.phase == WAITING or self._armed:
                self._armed_throw, self._armed = self._armed, False
                self.phase = IN_MOTION
                return Step(STEP_THROW)
            self.phase = CLEARING
            return Step(STEP_NONE)
        # in-motion, clearing, settling: wait for rest
        if moving:
            self._still, self._rest_t = 0, None
            if self.phase == IN_MOTION and self._motion_t is not None and t - self._motion_t > self.rest_timeout_s:
                self.phase = SETTLING
                return Step(STEP_TIMEOUT)
            return Step(STEP_NONE)
        if self._still == 0:
            self._rest_t = t
        self._still += 1
        if self.phase == IN_MOTION and self._motion_t is not None and t - self._motion_t > self.rest_timeout_s \
                and self._still < self.still_frames:
            self.phase = SETTLING
            return Step(STEP_TIMEOUT)
        if self._still >= self.still_frames and t - self._rest_t >= self.still_s - 1e-9:
            self._reading_from, self.phase = self.phase, "reading"
            return Step(STEP_READ, rest_t=self._rest_t)
        return Step(STEP_NONE)

    def on_read(self, scene: Scene, *, offer: bool = False) -> str:
        """Report the dice read at rest after a ``"read"`` step.

        Args:
            scene: the dice seen (see :class:`SceneDie`), empty for an empty table.
            offer: the caller judged the dice at rest a set offered to a new shooter
                (controller/offer.py). Taken only at the rest of an unarmed motion from an
                empty table (read from ``"in-motion"``, :attr:`armed_throw` false); ignored
                otherwise.

        Returns:
            ``"verdict"`` (a throw: decide it now), ``"offered"`` (dice offered to a new
            shooter, or some of them left where they were while the shooter selects: no
            verdict), ``"cleared"`` (the table is empty), ``"unchanged"`` (the same dice where
            they were: no new throw) or ``"settled"`` (start-up or after a timeout: the scene
            is recorded, no verdict).

        Raises:
            RuntimeError: when no read was requested.
        """
        if self.phase != "reading":
            raise RuntimeError(f"on_read called in phase {self.phase!r}, not after a 'read' step")
        origin, self._reading_from, self._still = self._reading_from, None, 0
        armed, self._armed_throw = self._armed_throw, False
        scene = tuple(scene)
        if origin == IN_MOTION:
            self._scene, self.phase = scene, DECIDED
            if offer and not armed and scene:
                self._offered = scene
                return READ_OFFERED
            self._offered = ()
            return READ_VERDICT
        if origin == SETTLING:
            self._offered = ()
            self._scene, self.phase = scene, (DECIDED if scene else WAITING)
            return READ_SETTLED
        # clearing
        if not scene:
            self._scene, self._offered, self.phase = (), (), WAITING
            return READ_CLEARED
        if same_scene(scene, self._scene, self.same_tolerance_px):
            self.phase = DECIDED
            return READ_UNCHANGED
        if self._offered and within_scene(scene, self._offered, self.same_tolerance_px):
            # dice of the offer taken away (selected, or returned to the cup), the rest where
            # they were: still the offer, 9 NYCRR 5324.52(i)(4)
            self._scene, self.phase = scene, DECIDED
            return READ_OFFERED
        self._scene, self._offered, self.phase = scene, (), DECIDED
        return READ_VERDICT

    def retry_read(self) -> None:
        """The read after a ``"read"`` step failed (reader error): go back to waiting for rest,
        so that the next ``still_frames`` still frames ask for a read again."""
        if self.phase == "reading" and self._reading_from is not None:
            self.phase, self._reading_from, self._still = self._reading_from, None, 0
