"""Replay frame source: a folder of photos (each one throw at rest) or a video file.

A folder of photos is turned into the frames a camera would have seen of one throw per photo,
so that the table service's roll lifecycle runs on it unchanged::

    empty table (empty_frames) -> dice in motion (motion_frames) -> dice at rest (hold_frames)

The "empty table" of a photo is a uniform image of the photo's median colour (no dice); the
"motion" frames are the photo shifted by a few pixels per frame (the dice moving in); the photo
is then held unchanged, long enough for the lifecycle to see the dice at rest (``hold_frames``
must exceed the service's ``still_frames``). After the last photo the table is emptied again.

Photos are read in name order with :func:`camera.imagefile.load_image` (a truncated or corrupt
JPEG/PNG is refused, not replayed half grey); a file that cannot be read is skipped with a
warning naming it and what is wrong (``ReplaySource.skipped``), and the others are replayed.
When no photo at all can be read, :meth:`ReplaySource.frames` raises
:class:`camera.errors.BadInputError` naming the folder (bad input, exit status 2).
A video file is replayed frame by frame as recorded.

Example::

    src = ReplaySource(Path("../shared/data/dice-photos/topdown-tray/images"), fps=30)
    for frame in src.frames():
        ...  # frame.truth == {"throw": 0, "phase": "rest", "photo": ".../img_001.jpg"}
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Iterator

import cv2
import numpy as np

from camera.base import Frame, FrameError, check_image
from camera.errors import BadInputError
from camera.imagefile import load_image

log = logging.getLogger("camera.replay")

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})
VIDEO_SUFFIXES = frozenset({".mp4", ".avi", ".mkv", ".mov", ".m4v", ".webm"})


class ReplaySource:
    """Frames from a folder of photos or a video file (a :class:`camera.base.FrameSource`).

    Args:
        path: a folder of photos, one photo, or a video file.
        fps: frames per second of the replay; frame times are ``index / fps`` seconds.
        hold_frames: frames each photo is held still (> the service's ``still_frames``).
        empty_frames: frames of the empty table before each photo (> ``still_frames`` too, so
            that the table is seen cleared between throws).
        motion_frames: frames of the dice moving in.
        realtime: sleep so that frames come at ``fps`` in wall time (default: as fast as used).
        limit: replay at most this many photos (``None``: all).

    Raises:
        FrameError: ``path`` does not exist, is not a folder/image/video, holds no image, or
            the video cannot be opened.
    """

    def __init__(self, path: Path, fps: float = 30.0, *, hold_frames: int = 14, empty_frames: int = 12,
                 motion_frames: int = 3, realtime: bool = False, limit: int | None = None) -> None:
        self.path = Path(path)
        if fps <= 0:
            raise FrameError(f"replay {self.path}: fps must be > 0, got {fps}")
        if min(hold_frames, empty_frames, motion_frames) < 1:
            raise FrameError(f"replay {self.path}: hold, empty and motion frame counts must be >= 1")
        self.fps = float(fps)
        self.hold_frames, self.empty_frames, self.motion_frames = int(hold_frames), int(empty_frames), int(motion_frames)
        self.realtime = bool(realtime)
        self.skipped: list[str] = []
        self._closed = False
        self._video: cv2.VideoCapture | None = None
        self._is_video = self.path.is_file() and self.path.suffix.lower() in VIDEO_SUFFIXES
        if not self.path.exists():
            raise FrameError(f"replay {self.path}: no such file or folder")
        if self.path.is_dir():
            self.photos = sorted(p for p in self.path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            if not self.photos:
                raise FrameError(f"replay {self.path}: no image files ({', '.join(sorted(IMAGE_SUFFIXES))})")
        elif self.path.suffix.lower() in IMAGE_SUFFIXES:
            self.photos = [self.path]
        elif self.path.suffix.lower() in VIDEO_SUFFIXES:
            self.photos = []
        else:
            raise FrameError(f"replay {self.path}: not a folder, an image or a video file")
        if limit is not None:
            self.photos = self.photos[: max(0, int(limit))]

    @property
    def name(self) -> str:
        """``replay:PATH``."""
        return f"replay:{self.path}"

    def frames(self) -> Iterator[Frame]:
        """Yield the frames (see the module docstring). Ends after the last photo or video frame.

        Raises:
            FrameError: the video cannot be opened.
            camera.errors.BadInputError: none of the photos can be read (each one is named
                in a warning and in ``skipped``).
        """
        gen = self._video_frames() if self._is_video else self._photo_frames()
        start = time.monotonic()
        for frame in gen:
            if self._closed:
                return
            if self.realtime:
                delay = start + frame.t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            yield frame

    def _photo_frames(self) -> Iterator[Frame]:
        index = 0
        empty: np.ndarray | None = None
        for throw, photo in enumerate(self.photos):
            image = self._load(photo)
            if image is None:
                continue
            empty = np.empty_like(image)
            empty[...] = np.median(image.reshape(-1, image.shape[2] if image.ndim == 3 else 1), axis=0).astype(np.uint8)
            empty.flags.writeable = False
            image.flags.writeable = False
            src = str(photo)
            for _ in range(self.empty_frames):
                yield Frame(empty, index / self.fps, index, src, {"throw": throw, "phase": "idle", "photo": src})
                index += 1
            step = max(4, min(image.shape[:2]) // 40)
            for k in range(self.motion_frames, 0, -1):
                moving = np.roll(image, shift=(k * step, -k * step), axis=(0, 1))
                yield Frame(moving, index / self.fps, index, src, {"throw": throw, "phase": "motion", "photo": src})
                index += 1
            for _ in range(self.hold_frames):
                yield Frame(image, index / self.fps, index, src, {"throw": throw, "phase": "rest", "photo": src})
                index += 1
        if empty is None and self.photos and not self._closed:
            names = ", ".join(Path(p).name for p in self.skipped[:5]) + (", ..." if len(self.skipped) > 5 else "")
            raise BadInputError(f"replay {self.path}: none of its {len(self.photos)} image file(s) can be read "
                                f"(truncated, corrupt or not an image: {names})")
        if empty is not None:
            for _ in range(self.empty_frames):
                yield Frame(empty, index / self.fps, index, str(self.path), {"throw": None, "phase": "idle"})
                index += 1

    def _load(self, photo: Path) -> np.ndarray | None:
        try:
            return load_image(photo)
        except FrameError as exc:
            log.warning("replay: skipped %s", exc)
            self.skipped.append(str(photo))
            return None

    def _video_frames(self) -> Iterator[Frame]:
        cap = cv2.VideoCapture(str(self.path))
        if not cap.isOpened():
            raise BadInputError(f"replay {self.path}: cannot open the video "
                                f"(not a video OpenCV can decode, or unreadable)")
        self._video = cap
        index = 0
        try:
            while not self._closed:
                ok, image = cap.read()
                if not ok or image is None:
                    return
                yield Frame(check_image(image, f"{self.path} frame {index}"), index / self.fps, index,
                            str(self.path), None)
                index += 1
        finally:
            cap.release()
            self._video = None

    def close(self) -> None:
        """Stop the replay (the iterator ends at its next frame). Safe to call twice."""
        self._closed = True
        if self._video is not None:
            self._video.release()
