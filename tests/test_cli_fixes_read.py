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


def _zeroed_middle(src: Path, dst: Path) -> Path:
    """``src`` with bytes 4000:12000 zeroed: the markers and ``FF D9`` are intact, the
    entropy-coded data is not (libjpeg: "Corrupt JPEG data: premature end of data segment")."""
    data = bytearray(src.read_bytes())
    data[4000:12000] = bytes(8000)
    dst.write_bytes(bytes(data))
    return dst


def test_read_jpeg_zeroed_in_the_middle_exit_2_others_still_read(tmp_path: Path, capfd) -> None:
    zeroed = _zeroed_middle(PHOTO, tmp_path / "zeroed.jpg")
    assert jpeg_complete(zeroed.read_bytes())  # the container check alone lets it through
    status = main(["read", str(zeroed), str(PHOTO)])
    cap = capfd.readouterr()
    assert status == 2
    assert f"craps-table read: {zeroed}: corrupt JPEG (libjpeg: Corrupt JPEG data: premature end of data segment)" in cap.err
    assert cap.err.count("Corrupt JPEG data") == 1  # libjpeg's own line is not printed as well
    assert str(zeroed) not in cap.out
    assert f"{PHOTO}: 5 dice: 5 5 5 5 5" in cap.out


def test_read_truncated_jpeg_with_eoi_appended_is_refused(tmp_path: Path, capfd) -> None:
    data = PHOTO.read_bytes()
    cut = tmp_path / "cut_eoi.jpg"
    cut.write_bytes(data[: len(data) // 2] + b"\xff\xd9")
    assert main(["read", "--json", str(cut)]) == 2
    cap = capfd.readouterr()
    assert f"{cut}: corrupt JPEG" in cap.err and "premature end of data segment" in cap.err
    assert cap.out == ""


def test_load_image_corrupt_jpeg_from_threads(tmp_path: Path) -> None:
    """The fd-2 capture is serialised: concurrent loads each get their own verdict."""
    from concurrent.futures import ThreadPoolExecutor

    zeroed = _zeroed_middle(PHOTO, tmp_path / "zeroed.jpg")
    expected = cv2.imread(str(PHOTO), cv2.IMREAD_COLOR)

    def load(path: Path) -> str:
        try:
            image = load_image(path)
        except FrameError as exc:
            return str(exc)
        return "same" if np.array_equal(image, expected) else "different"

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(load, [PHOTO, zeroed] * 6))
    assert results[0::2] == ["same"] * 6
    assert all(r.startswith(f"{zeroed}: corrupt JPEG (libjpeg: Corrupt JPEG data") for r in results[1::2])


def test_load_image_valid_jpegs_decode_as_imread() -> None:
    """Good photographs decode bit for bit as ``cv2.imread`` does, with nothing on stderr."""
    for photo in sorted(DATA.glob("*/*.jpg")):
        assert np.array_equal(load_image(photo), cv2.imread(str(photo), cv2.IMREAD_COLOR)), photo


@pytest.mark.parametrize("value, says", [
    ("nan", "must be a finite number, got 'nan'"),
    ("inf", "must be a finite number, got 'inf'"),
    ("-5", "must be > 0, got '-5'"),
    ("0", "must be > 0, got '0'"),
    ("big", "expected a number, got 'big'"),
])
def test_read_side_px_must_be_finite_and_positive(value: str, says: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["read", str(PHOTO), "--side-px", value])
    assert exc.value.code == 2
    cap = capsys.readouterr()
    assert f"argument --side-px: {says}" in cap.err
    assert cap.out == ""


def test_read_side_px_good_value_still_reads(capsys) -> None:
    assert main(["read", str(PHOTO), "--side-px", "40"]) == 0
    assert f"{PHOTO}: 5 dice: 5 5 5 5 5" in capsys.readouterr().out


def test_read_annotate_folder_that_cannot_be_made_exit_2(tmp_path: Path, capsys) -> None:
    afile = tmp_path / "existing_file.png"
    afile.write_bytes(b"x")
    for target, reason in ((afile, "exists and is not a folder"),
                           (afile / "sub", "Not a directory")):
        assert main(["read", str(PHOTO), "--annotate", str(target)]) == 2
        cap = capsys.readouterr()
        assert f"craps-table read: --annotate {target}: cannot create the output folder: {reason}" in cap.err
        assert "Traceback" not in cap.err


def test_read_annotate_png_that_cannot_be_written_exit_2_others_still_written(tmp_path: Path, capfd) -> None:
    out_dir = tmp_path / "ann"
    (out_dir / "five_44.png").mkdir(parents=True)  # a folder where the PNG should go
    other = tmp_path / "other.jpg"
    other.write_bytes(PHOTO.read_bytes())
    status = main(["read", str(PHOTO), str(other), "--annotate", str(out_dir)])
    cap = capfd.readouterr()
    assert status == 2
    assert f"craps-table read: --annotate: cannot write {out_dir / 'five_44.png'}" in cap.err
    assert f"{PHOTO}: 5 dice: 5 5 5 5 5" in cap.out and f"{other}: 5 dice" in cap.out
    assert cv2.imread(str(out_dir / "other.png")).shape == (480, 640, 3)
