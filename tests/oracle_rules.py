"""An independent oracle for the throw verdict and the game state, written from the regulation text.

It does not import controller.verdict, controller.policy or controller.game: it reads the shipped
profile TOML itself (the jurisdiction's choice of action per irregularity is data) and implements
what the regulations say about *which* irregularities a throw shows, which face counts and how the
game moves. See tests/test_rules_oracle.py for the reading of the regulations this encodes.

Inputs are plain values (duck-typed): an observation has ``zone``, ``on_die``, ``sides_resting``
and ``reading`` (``value``, ``confidence``, ``flat``, ``centre``); facts have ``timed_out``,
``struck_far_wall``, ``released_apart``.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

PROFILE_DIR = Path(__file__).resolve().parent.parent / "config" / "irregularities"
PROFILES = ("ny-5324", "nj-13-47", "ny-4620", "house-practice")

# The zones a die can come to rest in.
PLAYING, OUTSIDE, CHIP_BANK, DICE_CUP, RAIL, OFF_TABLE = (
    "playing", "outside", "chip_bank", "dice_cup", "rail", "off-table")

# reason codes (the regulation's vocabulary)
NOT_AT_REST = "not-at-rest"                    # (h)(1) "come to rest"; (k)(2)(vi)
FAR_WALL_MISSED = "far-wall-missed"            # (k)(2)(ii), (g)
NOT_SIMULTANEOUS = "dice-not-simultaneous"     # (k)(2)(i)
DICE_OFF_TABLE = "dice-off-table"              # (k)(1) both dice leave
DIE_OFF_TABLE = "die-off-table"                # (k)(1) either die leaves
DIE_IN_CHIP_BANK = "die-in-chip-bank"          # (k)(2)(iii)
DIE_IN_DICE_CUP = "die-in-dice-cup"            # (k)(2)(iv)
DIE_ON_RAIL = "die-on-rail"                    # (k)(2)(iv)
DIE_OUTSIDE_AREA = "die-outside-area"          # (k)(1)
EXTRA_DICE = "extra-dice"                      # (k)(2)(v)-(vi), (f)(3) "two of the dice"
DIE_ON_DIE = "die-on-die"                      # (k)(1) "one die comes to rest on top of the other"
SEVERAL_OBJECTS = "die-on-several-objects"     # (h)(1)(i) "more than one side ... void"
NOT_FLAT = "die-not-flat"                      # (h)(1)(i) "does not ... land flat"
FACE_UNREADABLE = "face-unreadable"            # (h)(1)(ii) "dispute as to which face is uppermost"

ZONE_REASON = {CHIP_BANK: DIE_IN_CHIP_BANK, DICE_CUP: DIE_IN_DICE_CUP, RAIL: DIE_ON_RAIL,
               OUTSIDE: DIE_OUTSIDE_AREA, OFF_TABLE: DIE_OUTSIDE_AREA}


@dataclass(frozen=True)
class Profile:
    name: str
    actions: dict
    cocked: str  # "opposite-resting-side" | "as-read"


def load(name: str) -> Profile:
    data = tomllib.loads((PROFILE_DIR / f"{name}.toml").read_text())
    return Profile(name, dict(data["actions"]), data.get("detect", {}).get("cocked", "opposite-resting-side"))


@dataclass(frozen=True)
class OracleVerdict:
    kind: str                 # "roll" | "no-roll" | "boxperson"
    reason: str | None
    dice: tuple | None
    irregularities: tuple = field(default=())


def is_face(value) -> bool:
    """(h)(1): "the numbers on the high or uppermost sides": a face is a whole number 1..6."""
    return value is not None and not isinstance(value, bool) and value in range(1, 7)


# 5324.52(h)(1)(i) for a cocked die whose resting side is unknown (sides_resting 0): True = a
# dispute (my reading); False = its value is read as given (the project; see the test module).
COCKED_UNKNOWN_SIDE_IS_DISPUTE = False


def irregularities(observations, facts, *, cocked: str, min_confidence: float = 0.8) -> list[str]:
    """Every irregularity of the throw, in precedence order."""
    found: list[str] = []
    if facts.timed_out:
        found.append(NOT_AT_REST)
    if facts.struck_far_wall is False:
        found.append(FAR_WALL_MISSED)
    if facts.released_apart is True:
        found.append(NOT_SIMULTANEOUS)

    in_play = [o for o in observations if o.zone == PLAYING]
    # Every die seen counts as on the table for (k)(1): a die in the cup here is a thrown die (the
    # spares are only ignored when both thrown dice are in play), and a die seen beyond the table
    # ("off-table") names die-outside-area like a die "outside" (both (k)(1), no roll everywhere).
    seen = list(observations)
    if len(in_play) < 2:
        if len(seen) == 0 and not facts.timed_out:
            # (timed out: nothing at rest was seen because the dice never came to rest)
            found.append(DICE_OFF_TABLE)
        elif len(seen) == 1:
            found.append(DIE_OFF_TABLE)
        for o in seen:
            if o.zone != PLAYING and ZONE_REASON[o.zone] not in found:
                found.append(ZONE_REASON[o.zone])
    # More than the two selected dice outside the cup with both in play (spares live in the cup,
    # (a)(5), (f)(3)); a die seen beyond the table is not counted.
    elif sum(1 for o in observations if o.zone in (PLAYING, CHIP_BANK, RAIL)) > 2:
        found.append(EXTRA_DICE)

    per_die = []
    if len(in_play) < 2:
        # (h)(1)(i) "more than one side ... resting on ... other object ... void": a thrown die
        # resting outside the playing area (on the chip bank and a chip stack) too
        per_die += [SEVERAL_OBJECTS for o in seen if o.zone != PLAYING and o.sides_resting > 1]
    for o in in_play:
        r = o.reading
        if o.on_die:
            per_die.append(DIE_ON_DIE)
        if o.sides_resting > 1:
            per_die.append(SEVERAL_OBJECTS)
        if not r.flat:
            per_die.append(NOT_FLAT)
        if not is_face(r.value) or not r.confidence >= min_confidence:
            per_die.append(FACE_UNREADABLE)
        elif (COCKED_UNKNOWN_SIDE_IS_DISPUTE and not r.flat and cocked == "opposite-resting-side" and o.sides_resting == 0
              and not o.on_die):
            # (h)(1)(i): the face that counts is opposite the side resting on the object; a cocked
            # die with no resting side known has no counted face: a dispute, (h)(1)(ii).
            per_die.append(FACE_UNREADABLE)
    order = (DIE_ON_DIE, SEVERAL_OBJECTS, NOT_FLAT, FACE_UNREADABLE)
    found.extend(code for code in order if code in per_die)
    return found


def decide(observations, facts, profile: Profile, *, min_confidence: float = 0.8) -> OracleVerdict:
    found = irregularities(observations, facts, cocked=profile.cocked, min_confidence=min_confidence)
    for code in found:
        if profile.actions[code] == "no-roll":
            return OracleVerdict("no-roll", code, None, tuple(found))
    for code in found:
        if profile.actions[code] == "boxperson":
            return OracleVerdict("boxperson", code, None, tuple(found))
    in_play = [o for o in observations if o.zone == PLAYING]
    if len(in_play) != 2:  # cannot happen without a reason above
        raise AssertionError(f"no reason yet {len(in_play)} dice in play")
    left, right = sorted(in_play, key=lambda o: o.reading.centre[0])
    return OracleVerdict("roll", None, (left.reading.value, right.reading.value), tuple(found))


# ---------------------------------------------------------------- game state

POINTS = (4, 5, 6, 8, 9, 10)


@dataclass(frozen=True)
class Game:
    shooter: int = 1
    shooter_roll: int = 0
    point: int | None = None
    rolls: int = 0
    points_made: tuple = ()
    decide_only: bool = False


def game_roll(g: Game, dice: tuple[int, int]) -> tuple[Game, str]:
    total = dice[0] + dice[1]
    rolls, shooter_roll = g.rolls + 1, g.shooter_roll + 1
    if g.decide_only:
        # 13:69F-1.11(b), 5324.52(i)(2): the roll only decides come / don't come wagers; no point.
        # A 7 decides every come wager on a number: the game proceeds (decide-only ends).
        return Game(g.shooter, shooter_roll, None, rolls, g.points_made, total != 7), "decide-only"
    if g.point is None:
        if total in (7, 11):
            return Game(g.shooter, shooter_roll, None, rolls, g.points_made), "natural"
        if total in (2, 3, 12):
            return Game(g.shooter, shooter_roll, None, rolls, g.points_made), "craps"
        return Game(g.shooter, shooter_roll, total, rolls, g.points_made), "point-set"
    if total == g.point:
        made = tuple(sorted(set(g.points_made) | {total}))
        return Game(g.shooter, shooter_roll, None, rolls, made), "point-made"
    if total == 7:
        # (i)(1)(i) "shall pass the dice upon throwing a loser 7"; fire bets settle, (j)(1)(v)
        return Game(g.shooter + 1, 0, None, rolls, ()), "seven-out"
    return Game(g.shooter, shooter_roll, g.point, rolls, g.points_made), "no-decision"


def game_new_shooter(g: Game) -> Game:
    return Game(g.shooter + 1, 0, g.point, g.rolls, g.points_made, False)
