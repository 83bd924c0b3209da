"""Why a throw is not a valid roll: the reason codes of the verdict, each citing its paragraph.

The code (the member's ``value``) is what the roll message carries in ``"reason"`` (see
docs/messages.md) and what a jurisdiction policy maps to an action (controller/policy.py). The
vocabulary is the regulation's: 9 NYCRR 5324.52(k) "Irregularities" and (h)(1) "Point throw".

Where each comes from: the roll lifecycle and the reader (``not-at-rest``, ``dice-off-table``,
``die-off-table``, ``extra-dice``, ``die-outside-area``, ``face-unreadable``, ``die-not-flat``),
the irregularity detectors with a table calibration (controller/irregularity.py: the zone
codes, ``die-on-die``, ``die-on-several-objects``, ``far-wall-missed``), the boxperson
(``boxperson-void``), a person's "no roll" call during the throw (:data:`STAFF_CALLED`), and the
controller's own rules (:data:`CONTROLLER_RULES`).
"""
from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    """A reason code for a no roll or a boxperson call.

    Attributes:
        value: the code published in the roll message (kebab-case string).
        citation: the paragraph of the regulation the reason comes from.
        description: one sentence for logs, lamps and the boxperson's screen.
    """

    citation: str
    description: str

    def __new__(cls, code: str, citation: str, description: str) -> "Reason":
        obj = str.__new__(cls, code)
        obj._value_ = code
        obj.citation = citation
        obj.description = description
        return obj

    DICE_OFF_TABLE = (
        "dice-off-table",
        "9 NYCRR 5324.52(k)(1)",
        "no die at rest on the table: both dice left the table",
    )
    DIE_OFF_TABLE = (
        "die-off-table",
        "9 NYCRR 5324.52(k)(1)",
        "a die left the table: only one die at rest on the table, or a person saw it leave",
    )
    DIE_ON_DIE = (
        "die-on-die",
        "9 NYCRR 5324.52(k)(1)",
        "one die came to rest on top of the other die",
    )
    DIE_OUTSIDE_AREA = (
        "die-outside-area",
        "9 NYCRR 5324.52(k)(1), (k)(2)(iv)",
        "a die came to rest outside the playing surface (off the table or on a rail)",
    )
    DIE_IN_CHIP_BANK = (
        "die-in-chip-bank",
        "9 NYCRR 5324.52(k)(2)(iii)",
        "a die came to rest on the chips of the craps bank",
    )
    DIE_IN_DICE_CUP = (
        "die-in-dice-cup",
        "9 NYCRR 5324.52(k)(2)(iv)",
        "a die came to rest in the dice cup in front of the stickperson",
    )
    DIE_ON_RAIL = (
        "die-on-rail",
        "9 NYCRR 5324.52(k)(2)(iv)",
        "a die came to rest on one of the rails surrounding the table",
    )
    FAR_WALL_MISSED = (
        "far-wall-missed",
        "9 NYCRR 5324.52(k)(2)(ii), (g)",
        "a die failed to strike the end of the table farthest from the shooter",
    )
    EXTRA_DICE = (
        "extra-dice",
        "9 NYCRR 5324.52(k)(2)(v)-(vi), (g), (a)(5)",
        "more than the two selected dice are at rest on the table",
    )
    NOT_AT_REST = (
        "not-at-rest",
        "9 NYCRR 5324.52(k)(2)(vi)",
        "the dice did not come to rest within the configured time",
    )
    DIE_NOT_FLAT = (
        "die-not-flat",
        "9 NYCRR 5324.52(h)(1)(i)",
        "a die does not lie flat (cocked): the face opposite the resting side counts",
    )
    DIE_ON_SEVERAL_OBJECTS = (
        "die-on-several-objects",
        "9 NYCRR 5324.52(h)(1)(i)",
        "more than one side of a die rests on chips or another object: the roll is void",
    )
    FACE_UNREADABLE = (
        "face-unreadable",
        "9 NYCRR 5324.52(h)(1)(ii)",
        "which face of a die is uppermost is in dispute (not read with confidence)",
    )
    BOXPERSON_VOID = (
        "boxperson-void",
        "9 NYCRR 5324.52(h)(1)(ii)(a), (k)(5)(i)",
        "the boxperson voided the throw and ordered the dice re-rolled",
    )

    TABLE_FAULT = (
        "table-fault",
        "9 NYCRR 5324.52(k) (closest paragraph; a controller rule, not the regulation's text)",
        "the table was in its safe state (camera, firmware bridge or bus fault) during the throw: no roll",
    )

    DICE_DID_NOT_MOVE = (
        "dice-did-not-move",
        "9 NYCRR 5324.52(k) (closest paragraph; a house / rig rule of automated rigs, not the regulation's text)",
        "both dice rest where they rested after the previous throw, with the same faces: the result is not used",
    )

    # Called by the boxperson or stickperson during the throw ((k)(2), (k)(5)(i); made, whenever
    # possible, before both dice come to rest, (k)(3)): what a person sees and the camera
    # cannot judge (``craps-table decide --no-roll``; controller/boxperson.py).
    # ``dice-not-simultaneous`` is also the camera's evidence (one die entering the view well
    # after the other, controller/release.py), which a profile maps (boxperson by default); a
    # person's call of it is a no roll whatever the profile says (controller/service.py).
    DICE_NOT_SIMULTANEOUS = (
        "dice-not-simultaneous",
        "9 NYCRR 5324.52(k)(2)(i), (k)(3)",
        "the dice did not leave the shooter's hand simultaneously (a person's no roll call, or "
        "the camera saw one die enter well after the other)",
    )
    CHEATING_DEVICE = (
        "cheating-device",
        "9 NYCRR 5324.52(k)(2)(v)",
        "no roll called: a cheating, crooked or fixed device or technique was used in the roll",
    )
    IMPROPER_THROW = (
        "improper-throw",
        "9 NYCRR 5324.52(k)(2)(vi), (k)(3)",
        "no roll called: another reason rendered the throw improper",
    )

    @classmethod
    def from_code(cls, code: str) -> "Reason":
        """Return the member whose code is ``code``.

        Raises:
            ValueError: naming the unknown code and listing the known ones.
        """
        for member in cls:
            if member.value == code:
                return member
        known = ", ".join(m.value for m in cls)
        raise ValueError(f"unknown reason code {code!r}; known codes: {known}")


#: Reasons that are rules of the controller itself (and, below, the reasons only a person
#: calls), not irregularities a jurisdiction profile maps: a profile need not list them (controller/irregularity_profile.py) and no profile may
#: make them anything but a no roll (controller/policy.py). ``table-fault``: a throw decided
#: while the table was in its safe state (controller/health.py) cannot be trusted to have been
#: seen whole; 9 NYCRR 5324.52(k) is the closest paragraph.
CONTROLLER_RULES: frozenset[Reason] = frozenset({Reason.TABLE_FAULT})
#: ``dice-did-not-move`` (controller/rounds.py): a rig rule, likewise always a no roll.
CONTROLLER_RULES = CONTROLLER_RULES | {Reason.DICE_DID_NOT_MOVE}

#: Reasons only a person calls (9 NYCRR 5324.52(k)(2), (k)(5)(i)): the boxperson or stickperson
#: calls "no roll" during the throw (``no-roll`` command, controller/boxperson.py), and the
#: throw is a no roll whatever the camera sees. ``far-wall-missed`` and ``dice-not-simultaneous``
#: may be called too, but they are also detectors' reasons that profiles map. Always a no roll;
#: profiles need not list them.
STAFF_CALLED: frozenset[Reason] = frozenset({Reason.CHEATING_DEVICE, Reason.IMPROPER_THROW})
#: Detectors' reasons a profile may leave out: they take the built-in policy's action
#: (controller/policy.py ``NY_5324``). ``dice-not-simultaneous`` (the camera's evidence,
#: controller/release.py, since the twenty-fourth session): boxperson, so that profiles written
#: before it still load.
DEFAULTED: frozenset[Reason] = frozenset({Reason.DICE_NOT_SIMULTANEOUS})
#: The reasons a ``no-roll`` call may give. ``die-off-table``: "A roll of the dice shall be invalid
#: whenever either die leaves ... the table" (9 NYCRR 5324.52(k)(1)): a die that leaves the table
#: and is knocked back onto it (off a person, over the rail) comes to rest on the felt, where the
#: camera judges it; a person who saw it leave calls it (always a no roll, every profile).
STAFF_CALL_REASONS: tuple[Reason, ...] = (Reason.DICE_NOT_SIMULTANEOUS, Reason.FAR_WALL_MISSED,
                                          Reason.CHEATING_DEVICE, Reason.IMPROPER_THROW,
                                          Reason.DIE_OFF_TABLE)
CONTROLLER_RULES = CONTROLLER_RULES | STAFF_CALLED
