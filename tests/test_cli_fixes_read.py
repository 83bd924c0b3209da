"""``craps-table read`` refuses truncated/corrupt photos and directories by name, and
``camera.imagefile`` checks JPEG/PNG containers for completeness."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from camera.base import FrameError
from camera.imagefile import jpeg_complete, load_image, png_complete
from controller.cli import main

DATA = Path(__file__).resolve().parent / "data" / "dice"
PHOTO = DATA / "oblique-webcam" / "five_44.jpg"


def _noise(h: int = 96, w: int = 128) -> np.ndarray:
    return np.random.default_rng(7).integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_read_truncated_jpeg_exit_2_others_still_read(tmp_path: Path, capfd) -> None:
    half = tmp_path / "half.jpg"
    half.write_bytes(PHOTO.read_bytes()[:5000])
    status = main(["read", str(half), str(PHOTO)])
    cap = capfd.readouterr()
    assert status == 2
    assert str(half) in cap.err and "truncated" in cap.err
    assert "Premature end of JPEG" not in cap.err  # never handed to libjpeg
    assert str(half) not in cap.out
    assert f"{PHOTO}: 5 dice: 5 5 5 5 5" in cap.out


def test_read_directory_says_is_a_directory(tmp_path: Path, capsys) -> None:
    assert main(["read", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}: is a directory" in err
    assert "not a readable image" not in err


@pytest.mark.parametrize("progressive", [0, 1])
def test_jpeg_complete_whole_and_cut(progressive: int) -> None:
    ok, buf = cv2.imencode(".jpg", _noise(), [cv2.IMWRITE_JPEG_PROGRESSIVE, progressive,
                                               cv2.IMWRITE_JPEG_RST_INTERVAL, 3])
    data = buf.tobytes()
    assert ok and jpeg_complete(data)
    assert jpeg_complete(data + b"\x00" * 16)  # trailing bytes after EOI are allowed
    for cut in (3, 200, len(data) // 2, len(data) - 1):
        assert not jpeg_complete(data[:cut]), cut


def test_jpeg_exif_thumbnail_eoi_does_not_count() -> None:
    """An APP1 segment holding a whole embedded JPEG (thumbnail with its own FF D9) is
    skipped by length: the file cut right after it is still truncated."""
    thumb = cv2.imencode(".jpg", _noise(16, 16))[1].tobytes()
    main_jpeg = cv2.imencode(".jpg", _noise())[1].tobytes()
    payload = b"Exif\x00\x00" + thumb
    app1 = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    data = main_jpeg[:2] + app1 + main_jpeg[2:]
    assert jpeg_complete(data)
    assert not jpeg_complete(data[: 4 + len(app1) + 40])
    assert cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR).shape == (96, 128, 3)


def test_png_complete_and_load_image_errors(tmp_path: Path) -> None:
    data = cv2.imencode(".png", _noise())[1].tobytes()
    assert png_complete(data) and not png_complete(data[:-4])
    good, cut = tmp_path / "a.png", tmp_path / "b.png"
    good.write_bytes(data)
    cut.write_bytes(data[: len(data) - 20])
    assert load_image(good).shape == (96, 128, 3)
    with pytest.raises(FrameError, match=r"b\.png: truncated or corrupt PNG"):
        load_image(cut)
    bmp = tmp_path / "c.bmp"  # other formats: decoded as is
    bmp.write_bytes(cv2.imencode(".bmp", _noise())[1].tobytes())
    assert load_image(bmp).shape == (96, 128, 3)
    empty = tmp_path / "d.jpg"
    empty.write_bytes(b"")
    with pytest.raises(FrameError, match=r"d\.jpg: empty file"):
        load_image(empty)
    with pytest.raises(FrameError, match="no such file"):
        load_image(tmp_path / "none.jpg")
