"""craps-table calibrate: bad arguments and output paths are exit 2 with a message naming the
option, never a traceback, and nothing is written."""
from __future__ import annotations

import cv2
import pytest

from controller.cli import main
from test_pi_calibration import EXAMPLE, render  # the synthetic layout renderer


@pytest.fixture(scope="module")
def photo(tmp_path_factory):
    from camera.calibration import load_layout
    image, _ = render(load_layout(EXAMPLE).layout)
    path = tmp_path_factory.mktemp("photo") / "table.png"
    cv2.imwrite(str(path), image)
    return path


def _cli(argv, capsys):
    status = main(["calibrate", *argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


def test_out_or_snapshot_naming_a_directory_is_refused_before_writing(photo, tmp_path, capsys):
    folder = tmp_path / "rw"
    folder.mkdir()
    for layout in (["--layout", str(EXAMPLE)], []):   # without --layout, --out would be read as it
        status, err = _cli(["--source", f"replay:{photo}", *layout, "--out", str(folder)], capsys)
        assert status == 2
        assert f"craps-table calibrate: --out {folder}: is a directory, not a file" in err
    out = tmp_path / "calibration.toml"
    status, err = _cli(["--source", f"replay:{photo}", "--out", str(out), "--snapshot", str(folder)], capsys)
    assert status == 2
    assert f"craps-table calibrate: --snapshot {folder}: is a directory, not a file" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rw"] and not any(folder.iterdir())


def test_snapshot_extension_opencv_cannot_write_is_refused_before_the_toml_is_written(photo, tmp_path, capsys):
    out, snap = tmp_path / "calibration.toml", tmp_path / "calib.txt"
    status, err = _cli(["--source", f"replay:{photo}", "--out", str(out), "--snapshot", str(snap)], capsys)
    assert status == 2
    assert (f"craps-table calibrate: --snapshot {snap}: OpenCV cannot write images with extension '.txt' "
            "(use .png or .jpg)") in err
    assert list(tmp_path.iterdir()) == []
    # a snapshot without an extension is written as PNG, as before
    snap = tmp_path / "calib"
    status, err = _cli(["--source", f"replay:{photo}", "--out", str(out), "--snapshot", str(snap)], capsys)
    assert status == 0, err
    assert cv2.imread(str(snap)) is not None and out.exists()


def test_a_write_that_fails_is_exit_2_naming_the_file(photo, tmp_path, capsys, monkeypatch):
    import camera.calibrate_cli as cli

    def refuse(path, cfile):
        raise PermissionError(13, "Permission denied", str(path.parent / ".calibration.toml.x.tmp"))
    monkeypatch.setattr(cli, "write_calibration", refuse)
    out, snap = tmp_path / "calibration.toml", tmp_path / "calib.png"
    status, err = _cli(["--source", f"replay:{photo}", "--out", str(out), "--snapshot", str(snap)], capsys)
    assert status == 2
    assert f"craps-table calibrate: --out {out}: cannot write: Permission denied" in err
    assert list(tmp_path.iterdir()) == []


def test_an_output_in_a_missing_directory_is_refused_not_made(photo, tmp_path, capsys):
    out, snap = tmp_path / "calibration.toml", tmp_path / "calib.png"
    (tmp_path / "file").write_text("x")
    for option, path, says in (("--out", tmp_path / "nonexist" / "c.toml", "does not exist"),
                               ("--snapshot", tmp_path / "nonexist" / "calib.png", "does not exist"),
                               ("--out", tmp_path / "file" / "c.toml", "is not a directory")):
        argv = {"--out": str(out), "--snapshot": str(snap), option: str(path)}
        status, err = _cli(["--source", f"replay:{photo}", *(x for kv in argv.items() for x in kv)], capsys)
        assert status == 2
        assert f"craps-table calibrate: {option} {path}: directory {path.parent} {says}" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_bad_camera_config_is_refused_whatever_the_source(photo, tmp_path, capsys):
    out = tmp_path / "calibration.toml"
    bad_toml, bad_key = tmp_path / "bad.toml", tmp_path / "key.toml"
    bad_toml.write_text("[camera\n")
    bad_key.write_text("[camera]\nexposure = 80\n")
    for path, says in ((tmp_path / "nofile.toml", "no such file"), (bad_toml, "not valid TOML"),
                       (bad_key, "camera.exposure: Extra inputs are not permitted")):
        for source in (f"replay:{photo}", f"replay:{photo.parent}", "sim"):
            status, err = _cli(["--source", source, "--out", str(out), "--camera-config", str(path)], capsys)
            assert status == 2, (source, path)
            assert f"craps-table calibrate: --camera-config {path}: {says}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml", "key.toml"]


@pytest.mark.parametrize("option, value, says", [
    ("--frames", "0", "must be >= 1, got 0"),
    ("--frames", "two", "expected a whole number, got 'two'"),
    ("--skip", "-1", "must be >= 0, got -1"),
    ("--board", "abc", "expected COLSxROWS inner corners, e.g. 9x6, got 'abc'"),
    ("--board", "2x6", "expected at least 3x3 inner corners, got '2x6'"),
    ("--square-mm", "-1", "must be > 0, got '-1'"),
    ("--square-mm", "nan", "must be a finite number, got 'nan'"),
])
def test_bad_numbers_are_refused_at_argument_parsing(photo, tmp_path, capsys, option, value, says):
    # without --lens-images: --board and --square-mm are checked all the same
    out = tmp_path / "calibration.toml"
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "--source", f"replay:{photo}", "--out", str(out), option, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"craps-table calibrate: error: argument {option}: {says}" in err, err
    assert list(tmp_path.iterdir()) == []


def test_good_numbers_are_taken(photo, tmp_path, capsys):
    out = tmp_path / "calibration.toml"
    status, err = _cli(["--source", f"replay:{photo}", "--out", str(out), "--frames", "1", "--skip", "0",
                        "--board", "9X6", "--square-mm", "24.5"], capsys)
    assert status == 0, err
    assert out.exists()


def test_a_replay_file_that_is_not_an_image_or_video_says_so(tmp_path, capsys):
    # the message of craps-table run for the same source (camera.replay.ReplaySource), not "no such file"
    text = tmp_path / "README.md"
    text.write_text("# not a photo\n")
    out = tmp_path / "calibration.toml"
    status, err = _cli(["--source", f"replay:{text}", "--out", str(out)], capsys)
    assert status == 2
    assert f"craps-table calibrate: replay {text}: not a folder, an image or a video file" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]
