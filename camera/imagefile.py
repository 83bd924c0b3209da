"""Loading a photograph from a file, refusing truncated or corrupt files by name.

``cv2.imread`` decodes a JPEG cut short (a copy interrupted, a card pulled out) into an image
whose lower part is grey, printing only libjpeg's "Premature end of JPEG file" on stderr; the
reader then finds no dice in it and nothing says the file was bad. :func:`load_image` reads
the bytes, checks that the container is complete before decoding:

* JPEG (starts ``FF D8``): the marker segments are walked (lengths skip EXIF thumbnails, whose
  own ``FF D9`` must not count) and the entropy-coded data of every scan is searched for the
  next marker; the file is complete when the End Of Image marker ``FF D9`` is reached
  (ITU-T T.81, B.1.1.2 and B.2.1).
* PNG (starts with the 8-byte PNG signature): the chunks are walked by their lengths; the
  file is complete when the ``IEND`` chunk is reached (ISO/IEC 15948, 5.3 and 11.2.5).
* Anything else is handed to ``cv2.imdecode`` as is.

Example::

    image = load_image(Path("throw_001.jpg"))  # uint8 (H, W, 3) BGR, or FrameError
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from camera.base import FrameError, check_image

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Markers without a length field: TEM, RST0..7, SOI, EOI (T.81 Table B.1).
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8), 0xD8, 0xD9})


def jpeg_complete(data: bytes) -> bool:
    """Whether the JPEG bytes ``data`` run from SOI to an End Of Image marker ``FF D9``.

    Marker segments are skipped by their 2-byte big-endian length; after each Start Of Scan
    the entropy-coded data is scanned for the next marker that is not a stuffed ``FF 00`` nor
    a restart marker ``FF D0``..``FF D7`` (ITU-T T.81, B.1.1.2, B.1.1.5).

    Returns:
        ``False`` when the data end before EOI (truncated) or a segment length points past
        the end; ``True`` when EOI is reached (bytes after EOI are allowed).
    """
    n = len(data)
    if n < 4 or data[0] != 0xFF or data[1] != 0xD8:
        return False
    pos = 2
    while True:
        # Find the next marker: FF, then any fill FFs, then the marker code.
        while pos < n and data[pos] != 0xFF:
            pos += 1  # tolerate stray bytes between segments (libjpeg does, with a warning)
        while pos < n and data[pos] == 0xFF:
            pos += 1
        if pos >= n:
            return False
        code = data[pos]
        pos += 1
        if code == 0xD9:
            return True
        if code in _STANDALONE or code == 0x00:
            continue
        if pos + 2 > n:
            return False
        length = int.from_bytes(data[pos:pos + 2], "big")
        if length < 2 or pos + length > n:
            return False
        pos += length
        if code == 0xDA:  # SOS: entropy-coded data follows until the next real marker
            while True:
                pos = data.find(b"\xff", pos)
                if pos < 0 or pos + 1 >= n:
                    return False
                nxt = data[pos + 1]
                if nxt == 0x00 or 0xD0 <= nxt <= 0xD7 or nxt == 0xFF:
                    pos += 1 if nxt == 0xFF else 2
                    continue
                break


def png_complete(data: bytes) -> bool:
    """Whether the PNG bytes ``data`` hold every chunk up to and including ``IEND``.

    Each chunk is a 4-byte big-endian length, a 4-byte type, the data and a 4-byte CRC
    (ISO/IEC 15948, 5.3); the chunks are walked by length until ``IEND`` (11.2.5).

    Returns:
        ``False`` when the signature is wrong or the data end before ``IEND``'s CRC.
    """
    if not data.startswith(PNG_SIGNATURE):
        return False
    pos, n = len(PNG_SIGNATURE), len(data)
    while pos + 8 <= n:
        length = int.from_bytes(data[pos:pos + 4], "big")
        ctype = data[pos + 4:pos + 8]
        end = pos + 12 + length
        if end > n:
            return False
        if ctype == b"IEND":
            return True
        pos = end
    return False


def load_image(path: Path | str, flags: int = cv2.IMREAD_COLOR) -> np.ndarray:
    """Read and decode one image file, refusing a truncated or corrupt one.

    Args:
        path: the image file.
        flags: ``cv2.imdecode`` flags (default: 3-channel BGR).

    Returns:
        numpy ``uint8`` ``(H, W, 3)`` BGR (``(H, W)`` for grey flags), validated by
        :func:`camera.base.check_image`.

    Raises:
        FrameError: naming ``path`` and saying what is wrong: no such file, is a directory,
            cannot be read (permissions), truncated or corrupt JPEG/PNG, not a readable image,
            or too small / wrong shape.
    """
    path = Path(path)
    if not path.exists():
        raise FrameError(f"{path}: no such file")
    if path.is_dir():
        raise FrameError(f"{path}: is a directory, not an image file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FrameError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    if not data:
        raise FrameError(f"{path}: empty file, not an image")
    if data[:2] == b"\xff\xd8" and not jpeg_complete(data):
        raise FrameError(f"{path}: truncated or corrupt JPEG (no End Of Image marker FF D9; "
                         f"{len(data)} bytes)")
    if data[:8] == PNG_SIGNATURE and not png_complete(data):
        raise FrameError(f"{path}: truncated or corrupt PNG (no IEND chunk; {len(data)} bytes)")
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), flags)
    if image is None:
        raise FrameError(f"{path}: not a readable image (corrupt, or a format OpenCV cannot decode)")
    return check_image(image, str(path))
