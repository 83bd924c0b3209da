"""Second audit of the game state and the irregularity verdict policy against the regulation texts
(/work/shared/regulations/: 000 = 9 NYCRR 5324.52, 001 = 9 NYCRR 4620.3, 003 = N.J.A.C.
13:69F-1.11, 004 = N.J.A.C. 13:47-20.25). tests/test_rules_audit.py is the first audit; each test
here failed on the code as audited (commit d0b96a7) and passes since.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.config import TableConfig
from controller.irregularity_profile import load_profile
from controller.lamps import NullLampDriver
from controller.reasons import Reason
from controller.service_cli import build_service

ROOT = Path(__file__).resolve().parents[1]


def _service(tmp_path, publisher, profile: str):
    from test_controller_service import fake_reader

    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = TableConfig.model_validate({
        "table": {"id": "t-test"},
        "vision": {"still_frames": 5, "still_s": 0.0, "rest_timeout_s": 2.0},
        "lamps": {"driver": "none"},
        "rules": {"profile": profile},
        "state": {"db": str(tmp_path / "state.sqlite")},
        "bus": {"journal_path": str(tmp_path / "bus" / "journal.sqlite")},
    })
    service, _ = build_service(cfg, source=None, publisher=publisher, lamp_driver=NullLampDriver(),
                               reader=fake_reader)
    return service


# --- 1. a no roll under a casino-night profile cites the casino-night rule ------------------------

@pytest.mark.parametrize("profile, citation", [
    ("ny-4620", "9 NYCRR 4620.3(c)(1)"),
    ("nj-13-47", "N.J.A.C. 13:47-20.25(g)3, (e)4"),
    ("ny-5324", "9 NYCRR 5324.52(k)(1)"),
])
def test_a_die_off_the_table_cites_the_paragraph_of_the_profiles_own_regulation(tmp_path, profile, citation):
    """9 NYCRR 4620.3(c)(1) "the two numbers, added together, that face upward when the dice come
    to rest are the deciding numbers"; N.J.A.C. 13:47-20.25(g)3 "After the dice come to rest, the
    numbers on the upward faces of the dice are added together" and (e)4 (the sum is called "after
    a valid throw"). These are the paragraphs the ny-4620 and nj-13-47 profiles make a die that
    left the table a no roll by (their comments say so). The roll message's ``citation`` ("the
    paragraph the reason comes from", docs/messages.md) was always the reason's 9 NYCRR
    5324.52(k)(1), a rule of New York casinos that governs neither a New York nor a New Jersey
    casino night."""
    from test_controller_service import ListPublisher, run_throws

    pub = ListPublisher()
    service = _service(tmp_path / profile, pub, profile)
    bodies, _ = run_throws(service, [[(3, 100, 100)]])
    service.close()
    b = bodies[0]
    assert (b["verdict"], b["reason"], b["citation"], b["policy"]) == ("no-roll", "die-off-table", citation, profile)


@pytest.mark.parametrize("profile, prefix", [("ny-4620", "9 NYCRR 4620.3"), ("nj-13-47", "N.J.A.C. 13:47-20.25")])
def test_every_reason_a_casino_night_profile_maps_cites_that_profiles_regulation(profile, prefix):
    """The same for every irregularity the profile maps (the ``[actions]`` keys): a boxperson call
    ``die-on-die`` under nj-13-47 cited 9 NYCRR 5324.52(k)(1) ("shall be invalid"), the opposite
    of what that profile does with it (N.J.A.C. 13:47-20.25(d): the boxperson decides)."""
    import tomllib

    from controller.irregularity_profile import PROFILE_DIR

    prof = load_profile(profile)
    codes = tomllib.loads((PROFILE_DIR / f"{profile}.toml").read_text())["actions"]
    got = {code: prof.policy.citation(Reason(code)).startswith(prefix) for code in codes}
    assert got == {code: True for code in codes}
    assert load_profile("ny-5324").policy.citation(Reason.DIE_ON_DIE) == "9 NYCRR 5324.52(k)(1)"


# --- 2. docs/messages.md: what ny-5324 does with a cocked die ------------------------------------

def _messages_reason_table() -> dict[str, str]:
    text = (ROOT / "docs" / "messages.md").read_text()
    section = text.split("### Reason codes", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `([a-z-]+)` \|[^|]*\|[^|]*\| ([a-z-]+)", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_the_reason_code_table_of_docs_messages_gives_the_ny5324_profiles_actions():
    """9 NYCRR 5324.52(h)(1)(i): "When either die does not ... land flat on the table ..., the
    side directly opposite the side that is resting on the chips or other object shall be
    considered uppermost and skyward": a cocked die is read as the rule says, which is what the
    shipped ny-5324 profile (the default ``[rules] profile``) does (``die-not-flat = "read"``;
    the detector withdraws the value, ``face-unreadable``, when it cannot find the resting side).
    docs/messages.md, whose table "is ``ny-5324``" ("The action of each is the profile's"), said
    ``boxperson``: the action of the fallback policy of controller/policy.py, used only where no
    profile is given, which publishes the same policy name."""
    rows = _messages_reason_table()
    pol = load_profile("ny-5324").policy
    assert {code: act for code, act in rows.items()} == {code: pol.action(Reason(code)).value for code in rows}
    assert rows["die-not-flat"] == "read"


def test_the_roll_message_documents_every_game_outcome():
    """9 NYCRR 5324.52(i)(2) (N.J.A.C. 13:69F-1.11(b)): a roll made "only for the purpose of
    effecting a decision on the remaining come and/or don't come wagers" sets no point; the
    service publishes it as ``game.outcome = "decide-only"`` (controller/game.py ``Outcome``).
    The roll message's field table in docs/messages.md listed every outcome but that one."""
    from typing import get_args

    from controller.game import Outcome

    line = next(x for x in (ROOT / "docs" / "messages.md").read_text().splitlines()
                if x.startswith("| `game.outcome` |"))
    listed = set(re.findall(r'`"([a-z-]+)"`', line))
    assert listed == set(get_args(Outcome))


@pytest.mark.parametrize("citations, named", [
    ({"die-of-table": "9 NYCRR 4620.3(c)(1)"}, "unknown reason code 'die-of-table'"),
    ({"die-off-table": "  "}, "die-off-table: a citation must be a non-empty string"),
])
def test_a_bad_citations_table_is_refused_naming_the_code(citations, named):
    """A misspelt reason code or an empty paragraph in a profile's ``[citations]`` is refused at
    load with the code named, not published as a roll's citation."""
    import tomllib

    from controller.irregularity_profile import ProfileError, parse_profile

    data = tomllib.loads((Path(__file__).resolve().parents[1] / "config" / "irregularities" / "ny-4620.toml").read_text())
    data["citations"] = citations
    with pytest.raises(ProfileError, match=named):
        parse_profile(data, "ny-4620.toml")
