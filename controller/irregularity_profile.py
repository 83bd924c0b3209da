"""Jurisdiction irregularity profiles (``config/irregularities/*.toml``) -> :class:`Policy` + detector options.

A profile says, for **every** irregularity (reason code of :class:`controller.reasons.Reason`),
what the table does: ``"no-roll"``, ``"read"`` (read the dice as the rule says) or
``"boxperson"`` (a person decides, 9 NYCRR 5324.52(h)(1)(ii)(a)). It also says how the
irregularity detector (controller/irregularity.py) reads a cocked die:
``"opposite-resting-side"`` (9 NYCRR 5324.52(h)(1)(i)) or ``"as-read"`` (house practice).

Shipped profiles: ``ny-5324`` (9 NYCRR 5324.52, casino), ``nj-13-47`` (N.J.A.C. 13:47-20.25,
casino night), ``ny-4620`` (9 NYCRR 4620.3, casino night), ``house-practice``. Adding a
jurisdiction is adding a file.

Example::

    from controller.irregularity_profile import load_profile
    prof = load_profile("ny-5324")               # a shipped name, or a path to a .toml file
    prof.policy.action(Reason.DIE_ON_DIE)        # Action.NO_ROLL

Errors: :class:`ProfileError` (a ``ValueError``) naming the file and the key: an unknown key,
a reason code left out, an unknown action, or an action the regulation forbids
(``controller.policy.policy_from_mapping``).
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from controller.policy import Policy, policy_from_mapping
from controller.reasons import CONTROLLER_RULES, DEFAULTED, Reason

#: The folder of the shipped profiles.
PROFILE_DIR = Path(__file__).resolve().parents[1] / "config" / "irregularities"
#: Names of the shipped profiles.
SHIPPED = ("ny-5324", "nj-13-47", "ny-4620", "house-practice")

COCKED_RULE = "opposite-resting-side"
COCKED_AS_READ = "as-read"


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the key."""


class DetectSection(BaseModel):
    """``[detect]``: options of the irregularity detector.

    Attributes:
        cocked: ``"opposite-resting-side"`` (9 NYCRR 5324.52(h)(1)(i)) or ``"as-read"``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    cocked: Literal["opposite-resting-side", "as-read"] = COCKED_RULE


#: When a shooter may pass the dice voluntarily (``ProfileFile.shooter_change``).
SHOOTER_CHANGES = ("any-roll", "decision")


class ProfileFile(BaseModel):
    """The TOML document of one profile (every key checked, unknown keys refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    #: reads a roll the regulation voids (die on die, 9 NYCRR 5324.52(k)(1)): house practice
    departs_from_regulation: bool = False
    #: reason code -> the paragraph of this jurisdiction's text its verdicts cite (published as
    #: the roll message's ``citation``); a reason left out cites its 9 NYCRR 5324.52 paragraph
    #: (controller/reasons.py); before ``actions``, which are checked against it
    citations: dict[str, str] = Field(default_factory=dict)
    actions: dict[str, str]
    detect: DetectSection = Field(default_factory=DetectSection)
    #: when the shooter may pass the dice voluntarily: "any-roll" (9 NYCRR 5324.52(i)(1),
    #: N.J.A.C. 13:69F-1.11(a) "after any roll") or "decision" (9 NYCRR 4620.3(c)(5), N.J.A.C.
    #: 13:47-20.25(g)6 "on completion of a decision": not while a point is pending)
    shooter_change: Literal["any-roll", "decision"] = "any-roll"

    @model_validator(mode="after")
    def _cocked_as_read_is_declared(self) -> "ProfileFile":
        """``detect.cocked = "as-read"`` counts the face seen uppermost of a cocked die, not the
        face opposite the side resting on the object (9 NYCRR 5324.52(h)(1)(i)): like a die on
        die read, a profile must declare ``departs_from_regulation = true`` to do so.

        Raises:
            ValueError: naming ``detect.cocked`` and the declaration it needs.
        """
        if self.detect.cocked == COCKED_AS_READ and not self.departs_from_regulation:
            raise ValueError('detect.cocked = "as-read" departs from 9 NYCRR 5324.52(h)(1)(i) (the face '
                             "opposite the side resting on the object counts): declare "
                             "departs_from_regulation = true in the profile to use it")
        return self

    @field_validator("citations")
    @classmethod
    def _known_codes(cls, v: dict[str, str]) -> dict[str, str]:
        # unknown reason code / empty citation, named by code (the checks policy_from_mapping makes)
        policy_from_mapping("check", citations=v)
        return v

    @field_validator("actions")
    @classmethod
    def _every_reason(cls, v: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        codes = [r.value for r in Reason]
        unknown = [k for k in v if k not in codes]
        if unknown:
            raise ValueError(f"unknown reason code(s) {unknown}; known codes: {', '.join(codes)}")
        # controller rules (table-fault) are not the profile's to choose: always a no roll
        # nor are they a profile's to list; a DEFAULTED reason left out takes NY_5324's action
        missing = [c for c in codes if c not in v and Reason(c) not in CONTROLLER_RULES | DEFAULTED]
        if missing:
            raise ValueError(f"reason code(s) {missing} have no action (every irregularity must be listed)")
        # unknown action / forbidden action, named by code
        policy_from_mapping("check", v, departs_from_regulation=bool(info.data.get("departs_from_regulation")),
                            citations=info.data.get("citations"))
        return v


class IrregularityProfile:
    """A loaded profile: the :class:`Policy` the verdict uses and the detector's options.

    Attributes:
        name: the profile's name (published with every verdict as ``policy``).
        description: one line.
        policy: :class:`controller.policy.Policy`.
        cocked: how the detector reads a cocked die (see the module docstring).
        shooter_change: ``"any-roll"`` or ``"decision"``: when the shooter may pass the dice
            voluntarily (:class:`ProfileFile`).
    """

    __slots__ = ("name", "description", "policy", "cocked", "shooter_change")

    def __init__(self, name: str, policy: Policy, cocked: str = COCKED_RULE, description: str = "",
                 shooter_change: str = "any-roll") -> None:
        if cocked not in (COCKED_RULE, COCKED_AS_READ):
            raise ProfileError(f"cocked: must be {COCKED_RULE!r} or {COCKED_AS_READ!r}, got {cocked!r}")
        if shooter_change not in SHOOTER_CHANGES:
            raise ProfileError(f"shooter_change: must be 'any-roll' or 'decision', got {shooter_change!r}")
        self.name = name
        self.description = description
        self.policy = policy
        self.cocked = cocked
        self.shooter_change = shooter_change

    def __repr__(self) -> str:
        return f"IrregularityProfile({self.name!r}, cocked={self.cocked!r})"


def parse_profile(data: dict, where: str = "profile") -> IrregularityProfile:
    """Validate a parsed TOML document.

    Raises:
        ProfileError: ``WHERE: key: message`` for each problem.
    """
    try:
        doc = ProfileFile.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err.get("loc", ())) or "(top level)"
            msg = err.get("msg", "invalid")
            if err.get("type") == "extra_forbidden":
                msg = "unknown key"
            lines.append(f"{where}: {key}: {msg}")
        raise ProfileError("\n".join(lines)) from None
    policy = policy_from_mapping(doc.name, doc.actions, departs_from_regulation=doc.departs_from_regulation,
                                 citations=doc.citations)
    return IrregularityProfile(doc.name, policy, doc.detect.cocked, doc.description, doc.shooter_change)


def load_profile(name_or_path: str | Path) -> IrregularityProfile:
    """Load a shipped profile by name (``"ny-5324"``, ...) or a profile file by path.

    Raises:
        ProfileError: no such profile or file, not TOML, or a bad key (named).
    """
    text = str(name_or_path)
    path = PROFILE_DIR / f"{text}.toml" if text in SHIPPED else Path(name_or_path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the profile ({exc.strerror or exc}); "
                           f"shipped profiles: {', '.join(SHIPPED)}") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    return parse_profile(data, str(path))
