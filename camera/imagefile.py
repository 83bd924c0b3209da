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

A JPEG whose container is complete may still hold corrupt entropy-coded data (bytes zeroed or
overwritten in the middle, a truncated file with ``FF D9`` appended): libjpeg then fills the rest
of the picture with grey and only prints a warning such as "Corrupt JPEG data: premature end of
data segment" on the C-level stderr (file descriptor 2), which OpenCV gives no way to see. JPEGs
are therefore decoded by :func:`decode_jpeg_checked`, which points fd 2 at a temporary file for
the length of the ``cv2.imdecode`` call and refuses the image when libjpeg warned of corrupt data.
Any other text written to fd 2 during that time (by libjpeg or by another thread) is copied to
the real stderr afterwards. Redirecting fd 2 is process-wide: the decodes that capture it are
serialised by a lock (so concurrent ``load_image`` calls, e.g. from a replay source thread, are
safe), and output other threads write to fd 2 meanwhile is delayed, not lost. A JPEG whose data
is damaged in a way libjpeg does not notice (e.g. coefficients changed but still valid Huffman
codes) decodes without a warning and cannot be told from a good one here.

Example::

    image = load_image(Path("throw_001.jpg"))  # uint8 (H, W, 3) BGR, or FrameError
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path

import cv2
import numpy as np

from camera.base import FrameError, check_image

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Markers without a length field: TEM, RST0..7, SOI, EOI (T.81 Table B.1).
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8), 0xD8, 0xD9})
# libjpeg's warnings that the data decoded were damaged (jerror.h: JWRN_HIT_MARKER,
# JWRN_HUFF_BAD_CODE, JWRN_MUST_RESYNC, JWRN_EXTRANEOUS_DATA, JWRN_ARITH_BAD_CODE all start with
# "Corrupt JPEG data"; JWRN_JPEG_EOF is "Premature end of JPEG file").
CORRUPT_JPEG_WARNINGS = ("Corrupt JPEG data", "Premature end of JPEG file")
_FD2_LOCK = threading.Lock()


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


def _decode_capturing_fd2(buf: np.ndarray, flags: int) -> tuple[np.ndarray | None, str]:
    """``cv2.imdecode(buf, flags)`` with file descriptor 2 redirected to a temporary file;
    returns the image (or ``None``) and the text written to fd 2 meanwhile. Falls back to a
    plain decode (empty text) when fd 2 or a temporary file is not available."""
    with _FD2_LOCK:
        try:
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
        try:
            saved = os.dup(2)
        except OSError:
            return cv2.imdecode(buf, flags), ""
        try:
            try:
                tmp = tempfile.TemporaryFile()
            except OSError:
                return cv2.imdecode(buf, flags), ""
            with tmp:
                os.dup2(tmp.fileno(), 2)
                try:
                    image = cv2.imdecode(buf, flags)
                finally:
                    os.dup2(saved, 2)
                tmp.seek(0)
                text = tmp.read().decode("utf-8", "replace")
        finally:
            os.close(saved)
    return image, text


def decode_jpeg_checked(data: bytes, name: str, flags: int = cv2.IMREAD_COLOR) -> np.ndarray | None:
    """Decode the JPEG bytes ``data``, refusing them when libjpeg warns of corrupt data.

    libjpeg's warning goes to the C-level stderr; it is captured (see the module docstring)
    and not shown when the image is refused. Other text written to fd 2 during the decode is
    copied to stderr.

    Args:
        data: the whole JPEG file.
        name: the file name, for the error message.
        flags: ``cv2.imdecode`` flags.

    Returns:
        The decoded image, or ``None`` when OpenCV cannot decode it at all.

    Raises:
        FrameError: naming ``name`` and quoting libjpeg's warning, e.g. "Corrupt JPEG data:
            premature end of data segment".
    """
    image, text = _decode_capturing_fd2(np.frombuffer(data, dtype=np.uint8), flags)
    lines = text.splitlines()
    warning = next((ln.strip() for ln in lines if ln.strip().startswith(CORRUPT_JPEG_WARNINGS)), None)
    others = [ln for ln in lines if not ln.strip().startswith(CORRUPT_JPEG_WARNINGS)]
    if others:
        try:
            sys.stderr.write("\n".join(others) + "\n")
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
    if warning is not None:
        raise FrameError(f"{name}: corrupt JPEG (libjpeg: {warning})")
    return image


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
            cannot be read (permissions), truncated or corrupt JPEG/PNG (including a complete
            JPEG whose data libjpeg reports as corrupt), not a readable image,
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
    if data[:2] == b"\xff\xd8":
        image = decode_jpeg_checked(data, str(path), flags)
    else:
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), flags)
    if image is None:
        raise FrameError(f"{path}: not a readable image (corrupt, or a format OpenCV cannot decode)")
    return check_image(image, str(path))
