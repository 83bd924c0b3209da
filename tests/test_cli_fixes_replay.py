"""A replay folder of corrupt photos is bad input (exit 2 naming the folder); in a folder with
some corrupt photos each one is named in a warning and the others are replayed."""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from camera.errors import BadInputError
from camera.replay import ReplaySource
from controller import service_cli
from tableconfig import write_test_config

DATA = Path(__file__).resolve().parent / "data" / "dice"
PHOTOS = sorted((DATA / "topdown-tray").glob("*.jpg"))


def _config(tmp_path: Path) -> Path:
    from bus.config import BusConfig

    return write_test_config(tmp_path, bus_cfg=BusConfig.local(tmp_path / "bus", transport="tcp",
                                                              table_id="t-test"))


def _corrupt_folder(tmp_path: Path, n: int = 2) -> Path:
    folder = tmp_path / "corrupt"
    folder.mkdir()
    for i, p in enumerate(PHOTOS[:n]):
        (folder / f"half_{i}.jpg").write_bytes(p.read_bytes()[:5000])
    return folder


def test_run_on_a_folder_of_only_corrupt_photos_exits_2(tmp_path: Path, capsys) -> None:
    if not PHOTOS:
        pytest.skip("tests/data/dice/topdown-tray absent")
    folder = _corrupt_folder(tmp_path)
    parser = argparse.ArgumentParser()
    service_cli.add_arguments("run", parser)
    args = parser.parse_args(["--config", str(_config(tmp_path)), "--source", f"replay:{folder}",
                              "--log-level", "ERROR"])
    assert service_cli.run("run", args) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and "none of its 2 image file(s) can be read" in err
    assert "half_0.jpg" in err and "half_1.jpg" in err


def test_replay_names_each_corrupt_photo_and_goes_on(tmp_path: Path, caplog) -> None:
    if len(PHOTOS) < 2:
        pytest.skip("tests/data/dice/topdown-tray absent")
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a_good.jpg").symlink_to(PHOTOS[0])
    (folder / "b_half.jpg").write_bytes(PHOTOS[1].read_bytes()[:5000])
    (folder / "c_garbage.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    (folder / "d_good.jpg").symlink_to(PHOTOS[1])
    src = ReplaySource(folder, fps=30, hold_frames=2, empty_frames=1, motion_frames=1)
    with caplog.at_level(logging.WARNING, logger="camera.replay"):
        frames = list(src.frames())
    photos = sorted({f.truth["photo"] for f in frames if f.truth and "photo" in f.truth})
    assert photos == [str(folder / "a_good.jpg"), str(folder / "d_good.jpg")]
    assert src.skipped == [str(folder / "b_half.jpg"), str(folder / "c_garbage.png")]
    warned = caplog.text
    assert "b_half.jpg: truncated or corrupt JPEG" in warned
    assert "c_garbage.png: truncated or corrupt PNG" in warned


def test_replay_source_raises_bad_input_naming_the_folder(tmp_path: Path) -> None:
    if not PHOTOS:
        pytest.skip("tests/data/dice/topdown-tray absent")
    folder = _corrupt_folder(tmp_path, 1)
    with pytest.raises(BadInputError, match=rf"replay {folder}: none of its 1 image file\(s\) can be read"):
        list(ReplaySource(folder).frames())


def test_replay_refuses_a_jpeg_zeroed_in_the_middle(tmp_path: Path, caplog) -> None:
    """Markers and FF D9 intact, entropy data zeroed: refused like a truncated photo."""
    big = DATA / "oblique-webcam" / "five_44.jpg"
    if not big.exists():
        pytest.skip("tests/data/dice/oblique-webcam absent")
    folder = tmp_path / "zeroed"
    folder.mkdir()
    data = bytearray(big.read_bytes())
    data[4000:12000] = bytes(8000)
    (folder / "a_zeroed.jpg").write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="camera.replay"):
        with pytest.raises(BadInputError, match=rf"replay {folder}: none of its 1 image file\(s\) can be read"):
            list(ReplaySource(folder).frames())
    assert "a_zeroed.jpg: corrupt JPEG (libjpeg: Corrupt JPEG data: premature end of data segment)" in caplog.text


def test_run_on_a_video_that_cannot_be_opened_exits_2(tmp_path: Path, capsys) -> None:
    """An empty or broken .mp4 is bad input (exit 2), as a folder of corrupt photos is, not a
    failure of the frame source (exit 1, which systemd would retry for ever)."""
    video = tmp_path / "empty.mp4"
    video.write_bytes(b"")
    parser = argparse.ArgumentParser()
    service_cli.add_arguments("run", parser)
    args = parser.parse_args(["--config", str(_config(tmp_path)), "--source", f"replay:{video}",
                              "--log-level", "ERROR"])
    assert service_cli.run("run", args) == 2
    assert f"replay {video}: cannot open the video" in capsys.readouterr().err
