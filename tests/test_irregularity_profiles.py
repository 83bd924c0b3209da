"""Jurisdiction irregularity profiles: every shipped file loads, says what the regulation says, and
bad files are refused with the key named. Verdicts per profile with exact reason codes."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from controller.irregularity_profile import PROFILE_DIR, SHIPPED, ProfileError, load_profile, parse_profile
from controller.policy import Action
from controller.reasons import Reason
from controller.verdict import DieObservation, ThrowFacts, decide
from vision.types import DieReading

N, B, R = Action.NO_ROLL, Action.BOXPERSON, Action.READ

#: reason -> expected action in (ny-5324, nj-13-47, ny-4620, house-practice)
EXPECTED = {
    Reason.DICE_OFF_TABLE: (N, N, N, N),
    Reason.DIE_OFF_TABLE: (N, N, N, N),
    Reason.DIE_ON_DIE: (N, B, B, R),
    Reason.DIE_OUTSIDE_AREA: (N, N, N, N),
    Reason.DIE_IN_CHIP_BANK: (N, B, B, N),
    Reason.DIE_IN_DICE_CUP: (N, B, B, N),
    Reason.DIE_ON_RAIL: (N, B, B, N),
    Reason.FAR_WALL_MISSED: (N, R, R, N),
    Reason.EXTRA_DICE: (B, B, B, B),
    Reason.NOT_AT_REST: (N, N, N, N),
    Reason.DIE_NOT_FLAT: (R, B, B, R),
    Reason.DIE_ON_SEVERAL_OBJECTS: (N, N, N, N),
    Reason.FACE_UNREADABLE: (B, B, B, B),
    Reason.BOXPERSON_VOID: (N, N, N, N),
    Reason.TABLE_FAULT: (N, N, N, N),  # controller rule, not in the profile files
    Reason.DICE_DID_NOT_MOVE: (N, N, N, N),  # rig rule (controller/rounds.py), not in the profile files
    # the camera's evidence of (k)(2)(i) (controller/release.py): a person decides in every
    # profile (a person's own call of it stays a no roll: test_controller_service)
    Reason.DICE_NOT_SIMULTANEOUS: (B, B, B, B),
    # a person's "no roll" call during the throw ((k)(2)(v), (vi)), not in the profile files
    Reason.CHEATING_DEVICE: (N, N, N, N),
    Reason.IMPROPER_THROW: (N, N, N, N),
}
ORDER = ("ny-5324", "nj-13-47", "ny-4620", "house-practice")


def data(name: str) -> dict:
    return tomllib.loads((PROFILE_DIR / f"{name}.toml").read_text())


@pytest.mark.parametrize("k, name", list(enumerate(ORDER)))
def test_profile_actions(k, name):
    prof = load_profile(name)
    assert prof.name == name
    assert {r: prof.policy.action(r) for r in Reason} == {r: acts[k] for r, acts in EXPECTED.items()}
    assert prof.cocked == ("as-read" if name == "house-practice" else "opposite-resting-side")


def test_every_reason_is_covered_by_the_table():
    assert set(EXPECTED) == set(Reason) and set(SHIPPED) == set(ORDER)


@pytest.mark.parametrize("name", ORDER)
def test_every_action_line_has_a_citing_comment(name):
    lines = (PROFILE_DIR / f"{name}.toml").read_text().splitlines()
    start = lines.index("[actions]")
    for i, line in enumerate(lines[start + 1:], start + 1):
        if line.startswith("["):
            break
        if "=" in line and not line.startswith("#"):
            above = lines[i - 1]
            j = i - 1
            while not above.startswith("#") and "=" in above:  # a group shares one comment
                j -= 1
                above = lines[j]
            assert above.startswith("#"), f"{name}: {line} has no comment"


def _obs(value, x, **kw):
    flat = kw.pop("flat", True)
    r = DieReading(value=value, bbox=(0, 0, 1, 1), centre=(x, 0.0), confidence=0.95, flat=flat, side_px=19.0)
    return DieObservation(r, **kw)


@pytest.mark.parametrize("name, obs, facts, want", [
    ("ny-5324", [_obs(3, 10), _obs(4, 50)], ThrowFacts(struck_far_wall=False), ("no-roll", "far-wall-missed", None)),
    ("nj-13-47", [_obs(3, 10), _obs(4, 50)], ThrowFacts(struck_far_wall=False), ("roll", None, (3, 4))),
    ("ny-4620", [_obs(3, 10), _obs(4, 50)], ThrowFacts(struck_far_wall=False), ("roll", None, (3, 4))),
    ("house-practice", [_obs(3, 10), _obs(4, 50)], ThrowFacts(struck_far_wall=False),
     ("no-roll", "far-wall-missed", None)),
    ("ny-5324", [_obs(3, 10), _obs(6, 12, on_die=True)], ThrowFacts(), ("no-roll", "die-on-die", None)),
    ("house-practice", [_obs(3, 10), _obs(6, 12, on_die=True, flat=False)], ThrowFacts(), ("roll", None, (3, 6))),
    ("ny-4620", [_obs(3, 10), _obs(6, 12, on_die=True)], ThrowFacts(), ("boxperson", "die-on-die", None)),
    ("ny-5324", [_obs(3, 10), _obs(5, 50, flat=False, sides_resting=1)], ThrowFacts(), ("roll", None, (3, 5))),
    ("nj-13-47", [_obs(3, 10), _obs(5, 50, flat=False, sides_resting=1)], ThrowFacts(),
     ("boxperson", "die-not-flat", None)),
    ("house-practice", [_obs(3, 10), _obs(5, 50, flat=False, sides_resting=2)], ThrowFacts(),
     ("no-roll", "die-on-several-objects", None)),
    ("nj-13-47", [_obs(3, 10), _obs(5, 50, zone="rail")], ThrowFacts(), ("boxperson", "die-on-rail", None)),
    ("ny-5324", [_obs(3, 10), _obs(5, 50, zone="rail")], ThrowFacts(), ("no-roll", "die-on-rail", None)),
    ("ny-4620", [], ThrowFacts(timed_out=True), ("no-roll", "not-at-rest", None)),
    ("nj-13-47", [_obs(3, 10), _obs(4, 50), _obs(2, 90)], ThrowFacts(), ("boxperson", "extra-dice", None)),
])
def test_verdict_per_profile(name, obs, facts, want):
    v = decide(obs, facts, policy=load_profile(name).policy)
    assert (v.kind, None if v.reason is None else v.reason.value, v.dice) == want


def test_unknown_key_is_named():
    d = data("ny-5324")
    d["detect"]["cockd"] = "as-read"
    with pytest.raises(ProfileError, match=r"detect\.cockd: unknown key"):
        parse_profile(d, "x.toml")
    d = data("ny-5324")
    d["colour"] = "red"
    with pytest.raises(ProfileError, match=r"x\.toml: colour: unknown key"):
        parse_profile(d, "x.toml")


def test_unknown_reason_and_missing_reason_are_named():
    d = data("ny-5324")
    d["actions"]["die-on-dei"] = "no-roll"
    with pytest.raises(ProfileError, match="die-on-dei"):
        parse_profile(d)
    d = data("ny-5324")
    del d["actions"]["die-on-rail"]
    with pytest.raises(ProfileError, match="die-on-rail.*no action"):
        parse_profile(d)


def test_bad_and_forbidden_actions_are_named():
    d = data("ny-5324")
    d["actions"]["die-on-rail"] = "ignore"
    with pytest.raises(ProfileError, match="die-on-rail: unknown action 'ignore'"):
        parse_profile(d)
    d = data("ny-5324")
    d["actions"]["dice-off-table"] = "read"
    with pytest.raises(ProfileError, match="dice-off-table"):
        parse_profile(d)
    d = data("ny-5324")
    d["detect"]["cocked"] = "guess"
    with pytest.raises(ProfileError, match="detect.cocked"):
        parse_profile(d)


def test_missing_file_and_bad_toml(tmp_path: Path):
    with pytest.raises(ProfileError, match="cannot read the profile"):
        load_profile(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profile(bad)
    good = tmp_path / "mine.toml"
    good.write_text((PROFILE_DIR / "house-practice.toml").read_text().replace('"house-practice"', '"mine"'))
    assert load_profile(good).name == "mine"


@pytest.mark.parametrize("name, obs, lamp", [
    ("ny-5324", [_obs(3, 10), _obs(6, 12, on_die=True)], "no-roll"),
    ("nj-13-47", [_obs(3, 10), _obs(6, 12, on_die=True)], "call-boxperson"),
    ("ny-5324", [_obs(3, 10), _obs(None, 50)], "call-boxperson"),
])
def test_verdicts_light_no_roll_or_call_boxperson(name, obs, lamp):
    """The verdict kinds the profiles give are the ones the lamp controller shows (controller/lamps.py)."""
    from controller.game import GameState
    from controller.lamps import LampController, NullLampDriver

    v = decide(obs, ThrowFacts(), policy=load_profile(name).policy)
    drv = NullLampDriver()
    ctl = LampController(drv, flash_s=3.0)
    ctl.verdict(v.kind, 10.0)
    ctl.update(GameState(), "decided", 10.5)
    lit = {n for n, m in drv.modes.items() if m == "flash"}
    assert lit == {lamp}


def test_reading_a_die_on_the_other_die_must_be_declared():
    """9 NYCRR 5324.52(k)(1): a roll with one die on top of the other "shall be invalid". A profile
    may read it (house practice) only by declaring departs_from_regulation; a [rules] override
    on a profile that does not is refused as well."""
    d = data("house-practice")
    assert parse_profile(d).policy.departs_from_regulation is True
    del d["departs_from_regulation"]
    with pytest.raises(ProfileError, match=r"die-on-die: .*5324.52\(k\)\(1\).*departs_from_regulation"):
        parse_profile(d)
    d = data("ny-5324")
    d["actions"]["die-on-die"] = "read"
    with pytest.raises(ProfileError, match="die-on-die"):
        parse_profile(d)
    d["departs_from_regulation"] = True
    assert parse_profile(d).policy.action(Reason.DIE_ON_DIE).value == "read"
    # a boxperson call on a 5324.52 profile too (the boxperson's dice would make it valid)
    d = data("ny-5324")
    d["actions"]["die-on-die"] = "boxperson"
    with pytest.raises(ProfileError, match=r"die-on-die: .*'boxperson' departs"):
        parse_profile(d)
    # the casino-night profiles cite their own text for it, which has no such rule
    assert parse_profile(data("nj-13-47")).policy.action(Reason.DIE_ON_DIE).value == "boxperson"
    assert parse_profile(data("ny-4620")).policy.action(Reason.DIE_ON_DIE).value == "boxperson"


def test_die_on_die_read_citing_5324_52_in_other_words_still_needs_the_declaration() -> None:
    """9 NYCRR 5324.52(k)(1) "shall be invalid": a profile reading a die on the other die
    without departs_from_regulation is refused however it cites the paragraph (it was let
    through by "see 9 NYCRR 5324.52(k)(1)" or a lower-case "9 nycrr 5324.52(k)(1)")."""
    from controller.policy import policy_from_mapping

    for cite in ("see 9 NYCRR 5324.52(k)(1)", "9 nycrr 5324.52(k)(1)", "cf. 5324.52(k)(1)"):
        with pytest.raises(ValueError, match="die-on-die: .*departs_from_regulation"):
            policy_from_mapping("x", {"die-on-die": "boxperson"}, citations={"die-on-die": cite})
    # its own jurisdiction's paragraph, no such rule there: allowed
    p = policy_from_mapping("x", {"die-on-die": "boxperson"}, citations={"die-on-die": "N.J.A.C. 13:47-20.25(d)"})
    assert p.action(Reason.DIE_ON_DIE).value == "boxperson"


def test_a_cocked_die_read_as_seen_must_be_declared_a_departure():
    """detect.cocked = "as-read" counts the face seen uppermost, not the face opposite the side
    resting on the object (9 NYCRR 5324.52(h)(1)(i)): without departs_from_regulation = true the
    profile is refused, naming the key (as a die on die read is); house practice declares it."""
    d = data("ny-5324")
    d["detect"]["cocked"] = "as-read"
    with pytest.raises(ProfileError, match=r"x\.toml: .*detect\.cocked = \"as-read\" departs from 9 NYCRR 5324\.52\(h\)\(1\)\(i\)"):
        parse_profile(d, "x.toml")
    d["departs_from_regulation"] = True
    assert parse_profile(d, "x.toml").cocked == "as-read"
    assert load_profile("house-practice").cocked == "as-read"
