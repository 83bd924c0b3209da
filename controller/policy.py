"""Jurisdiction policy: for each irregularity, what the table does (data, not code).

A policy maps every :class:`~controller.reasons.Reason` to one action:

- ``"no-roll"``: the throw is invalid and is not counted (9 NYCRR 5324.52(k));
- ``"boxperson"``: a person must decide (9 NYCRR 5324.52(h)(1)(ii)(a), (k)(5)(i)); the table
  publishes a boxperson call and the game state does not move;
- ``"read"``: the irregularity does not void the throw; the dice are read as seen (only for the
  reasons in :data:`READABLE`, e.g. "house practice" dealing a cocked die as read).

The built-in policy :data:`NY_5324` follows 9 NYCRR 5324.52 for a casino table. Profiles in
``config/`` (another issue) load the same mapping from TOML with :func:`policy_from_mapping`,
so adding a jurisdiction is a new file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Mapping

from controller.reasons import STAFF_CALLED, Reason


class Action(str, Enum):
    """What the table does about one irregularity."""

    NO_ROLL = "no-roll"
    BOXPERSON = "boxperson"
    READ = "read"


#: Reasons for which "read" (deal the throw as seen) is a meaningful action. For the others the
#: dice cannot be read as a valid roll (a die is missing, there are too many, the face is unknown,
#: or the regulation makes the roll void without discretion, 9 NYCRR 5324.52(k)(1)).
READABLE: frozenset[Reason] = frozenset({Reason.DIE_NOT_FLAT, Reason.DIE_ON_DIE, Reason.FAR_WALL_MISSED})

#: Reasons the regulation itself voids: no policy may send them to "read".
#: 9 NYCRR 5324.52(k)(1) "shall be invalid"; (h)(1)(i) "more than one side ... shall be void".
_ALWAYS_VOID: frozenset[Reason] = frozenset(
    {Reason.DICE_OFF_TABLE, Reason.DIE_OFF_TABLE, Reason.DIE_ON_SEVERAL_OBJECTS, Reason.BOXPERSON_VOID,
     Reason.TABLE_FAULT}
)
_ALWAYS_VOID = _ALWAYS_VOID | {Reason.DICE_DID_NOT_MOVE}  # rig rule (controller/rounds.py)
_ALWAYS_VOID = _ALWAYS_VOID | STAFF_CALLED  # a person's "no roll" call, (k)(2), (k)(5)(i)


@dataclass(frozen=True)
class Policy:
    """An immutable mapping Reason -> Action, with a name for logs and messages.

    Build one with :func:`policy_from_mapping`; :data:`NY_5324` is the default.
    """

    name: str
    actions: Mapping[Reason, Action] = field(repr=False)
    #: the policy reads a roll the regulation voids without discretion where a house deals it
    #: as valid (die on die, 9 NYCRR 5324.52(k)(1)); declared, never implied (house-practice)
    departs_from_regulation: bool = False
    #: the paragraph of the jurisdiction's own text for a reason, where it is not the reason's
    #: own 9 NYCRR 5324.52 citation (a profile's ``[citations]``, e.g. 9 NYCRR 4620.3(c)(1))
    citations: Mapping[Reason, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)

    def action(self, reason: Reason) -> Action:
        """Return the action for ``reason`` (every reason has one)."""
        return self.actions[reason]

    def citation(self, reason: Reason) -> str:
        """The paragraph a verdict for ``reason`` cites under this policy: the profile's own
        citation when it gives one, else the reason's (:attr:`Reason.citation`)."""
        return self.citations.get(reason) or reason.citation


_NY_5324_ACTIONS: dict[Reason, Action] = {
    Reason.DICE_OFF_TABLE: Action.NO_ROLL,  # (k)(1)
    Reason.DIE_OFF_TABLE: Action.NO_ROLL,  # (k)(1)
    Reason.DIE_ON_DIE: Action.NO_ROLL,  # (k)(1)
    Reason.DIE_OUTSIDE_AREA: Action.NO_ROLL,  # (k)(1), (k)(2)(iv)
    Reason.DIE_IN_CHIP_BANK: Action.NO_ROLL,  # (k)(2)(iii)
    Reason.DIE_IN_DICE_CUP: Action.NO_ROLL,  # (k)(2)(iv)
    Reason.DIE_ON_RAIL: Action.NO_ROLL,  # (k)(2)(iv)
    Reason.FAR_WALL_MISSED: Action.NO_ROLL,  # (k)(2)(ii)
    Reason.EXTRA_DICE: Action.BOXPERSON,  # (k)(2)(v)-(vi): a foreign die needs a person
    Reason.NOT_AT_REST: Action.NO_ROLL,  # (k)(2)(vi)
    # (h)(1)(i): the face opposite the resting side counts; until the camera finds that side
    # a person decides.
    Reason.DIE_NOT_FLAT: Action.BOXPERSON,
    Reason.DIE_ON_SEVERAL_OBJECTS: Action.NO_ROLL,  # (h)(1)(i)
    Reason.FACE_UNREADABLE: Action.BOXPERSON,  # (h)(1)(ii)(a)
    Reason.BOXPERSON_VOID: Action.NO_ROLL,  # (h)(1)(ii)(a)
    # controller rule (closest: (k)): a throw decided in the table's safe state is never accepted
    Reason.TABLE_FAULT: Action.NO_ROLL,
    # rig rule (controller/rounds.py; closest: (k)): dice that did not move give no result
    Reason.DICE_DID_NOT_MOVE: Action.NO_ROLL,
    # (k)(2)(i): the camera saw one die enter the layout well after the other
    # (controller/release.py): evidence for a person, who has the "authority to invalidate"
    # ((k)(2)); a person's own call of it is a no roll (controller/service.py)
    Reason.DICE_NOT_SIMULTANEOUS: Action.BOXPERSON,
    # called by the boxperson or stickperson during the throw ((k)(2)(v), (vi); (k)(5)(i))
    Reason.CHEATING_DEVICE: Action.NO_ROLL,
    Reason.IMPROPER_THROW: Action.NO_ROLL,
}


#: Reasons the regulation voids ("shall be invalid", 9 NYCRR 5324.52(k)(1)) that some houses deal
#: as valid: "read" only in a policy that declares ``departs_from_regulation``.
_HOUSE_ONLY_READ: frozenset[Reason] = frozenset({Reason.DIE_ON_DIE})


def policy_from_mapping(name: str, overrides: Mapping[str, str] | None = None,
                        base: "Policy | None" = None, departs_from_regulation: bool | None = None,
                        citations: Mapping[str, str] | None = None) -> Policy:
    """Build a policy from ``base`` (default :data:`NY_5324`) with some actions replaced.

    Args:
        name: the policy's name (published with boxperson calls, logged).
        overrides: reason code -> action string, e.g. ``{"die-not-flat": "read"}``.
        base: the policy whose actions are kept where not overridden.
        departs_from_regulation: the policy may read a die resting on the other die, which
            9 NYCRR 5324.52(k)(1) makes invalid (house practice); default: as ``base``.
        citations: reason code -> the paragraph of the jurisdiction's text that verdicts for
            it cite (added to ``base``'s); e.g. ``{"die-off-table": "9 NYCRR 4620.3(c)(1)"}``.

    Raises:
        ValueError: naming the unknown reason code, the unknown action, or a reason the
            regulation voids (``"read"`` for ``dice-off-table``; anything but ``"no-roll"`` for
            ``die-on-die`` under 9 NYCRR 5324.52(k)(1) unless the policy departs from the
            regulation or cites another jurisdiction's paragraph for it) / one that cannot be
            read.
    """
    base = base or NY_5324
    departs = base.departs_from_regulation if departs_from_regulation is None else departs_from_regulation
    actions = dict(base.actions)
    cites = dict(base.citations)
    for code, text in (citations or {}).items():
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{code}: a citation must be a non-empty string, got {text!r}")
        cites[Reason.from_code(code)] = text.strip()
    for code, action_text in (overrides or {}).items():
        reason = Reason.from_code(code)
        try:
            action = Action(action_text)
        except ValueError:
            known = ", ".join(a.value for a in Action)
            raise ValueError(f"{code}: unknown action {action_text!r}; known actions: {known}") from None
        if action is Action.READ and reason not in READABLE:
            raise ValueError(f"{code}: action 'read' is not possible for this reason "
                             f"({reason.citation}); use 'no-roll' or 'boxperson'")
        if reason in _ALWAYS_VOID and action is not Action.NO_ROLL:
            raise ValueError(f"{code}: {reason.citation} makes this roll void; the action must be 'no-roll'")
        if reason in _HOUSE_ONLY_READ and action is not Action.NO_ROLL and not departs \
                and "5324.52" in cites.get(reason, reason.citation):
            # "shall be invalid", (k)(1): a boxperson could answer with dice and make it valid
            # too; a casino-night text that cites its own paragraph (no such rule) may. Any
            # citation naming 5324.52 ("see 9 NYCRR 5324.52(k)(1)", any case) is that rule
            raise ValueError(f"{code}: {reason.citation} makes this roll invalid; {action.value!r} departs from "
                             f"the regulation: declare departs_from_regulation = true in the profile "
                             f"(as house-practice does), or use 'no-roll'")
        actions[reason] = action
    return Policy(name=name, actions=MappingProxyType(actions), departs_from_regulation=departs,
                  citations=MappingProxyType(cites))


#: The built-in policy: 9 NYCRR 5324.52 at a casino table.
NY_5324: Policy = Policy(name="ny-5324", actions=MappingProxyType(dict(_NY_5324_ACTIONS)))
