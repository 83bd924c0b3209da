"""One die on top of the other, 9 NYCRR 5324.52(k)(1) (pure but for the reader asked again).

Two dice lying on the felt are at least a side apart, so two dice read closer than
``on_die_ratio`` x side, or a die not flat within ``leaning_ratio`` x side of the other, rest one
on the other; unless the motion track saw them settle apart (side by side: ``tracks_apart``), or
the die not flat leans on the side of a die whose face nothing covers (:func:`leans_beside`).
One die region much larger than a die (``merged_area_ratio``), or the other die's track ending
under the one die seen (controller/missed_dice.py), hides the lower die: a hidden die with no
value is added so that the verdict sees two dice. Run by ``controller.irregularity.observe_throw``.
"""
from __future__ import annotations

import math
from typing import Sequence

from controller.missed_dice import ends_apart, pushed_out
from controller.scene import ThrowScene, flat_by_either
from vision.types import DieReading

#: The face of a die lying flat beside a leaning one, read at least this sure, is not covered
#: by it (:func:`leans_beside`).
UNCOVERED_FACE_CONFIDENCE = 0.9

#: A die of two read side by side (their tracks settled a side apart) below this confidence is
#: read again a side and a tenth out from the other die (``missed_dice.pushed_out``): the
#: geometry outputs pull a window on two touching dice towards the pair's middle.
SECOND_READ_BELOW = 0.9


def leans_beside(leaning: DieReading, other: DieReading) -> bool:
    """``leaning`` leans on the side of ``other``, not on top of it (9 NYCRR 5324.52(k)(1) is a
    die "on top of the other die"): both flatness estimates call ``leaning`` not flat (the
    reader's ``flat`` and the tilt classifier's ``extra["p_flat_tilt"]`` below 0.5), and
    ``other`` is called flat by the tilt classifier with its face read at
    :data:`UNCOVERED_FACE_CONFIDENCE` or more, so nothing lies on its top face. A die leaning
    ~40 degrees on the other die shows its upper face tilted towards it, and its centre was
    placed 0.70-0.80 sides from the other's (simulated camera, cocked-on-die seeds 2100-2299:
    7 such pairs, each a lean), inside the 0.8 sides at which a die lying on the other die is
    told by distance. A die lying on the other die is seen flat, and the lower die's face is
    covered (die-on-die, 200 throws: the reader never found two dice closer than one side).
    Without a tilt classifier's estimate, ``False``."""
    t_lean, t_other = leaning.extra.get("p_flat_tilt"), other.extra.get("p_flat_tilt")
    if t_lean is None or t_other is None or other.value is None:
        return False
    return (not leaning.flat and float(t_lean) < 0.5 and float(t_other) >= 0.5
            and float(other.confidence) >= UNCOVERED_FACE_CONFIDENCE)


def find_dice_on_dice(scene: ThrowScene, in_play: Sequence[int], settled: Sequence[tuple[float, float]],
                      stacked: tuple[float, float] | None) -> tuple[list[bool], list[DieReading]]:
    """Which dice in play rest on the other die, (k)(1).

    Args:
        scene: the placed dice; ``scene.values`` must be set (a die of two read side by side
            that is read again replaces its reading there too).
        in_play: indices of the dice in the playing area.
        settled: the settled track ends (mm, ``missed_dice.settled_on_table``).
        stacked: ``missed_dice.other_die_under``'s finding (the other die under the one seen).

    Returns:
        ``(on_die, hidden)``: per die whether it rests on the other, and the hidden lower dice
        to add (no value).
    """
    dice, tol, geo, notes = scene.dice, scene.tol, scene.geo, scene.notes
    on_die = [False] * len(dice)
    hidden: list[DieReading] = []
    for a_i, a in enumerate(in_play):
        for b in in_play[a_i + 1:]:
            if dice[a].extra.get("from") or dice[b].extra.get("from"):
                # a track's end is a blob centroid, too rough to say one die is on another; a die
                # read again there (or beside the die seen) was taken for another die beside it
                # by its distance from the die read (``reread_apart_flat``), its window pulled
                # towards that die by the geometry outputs (simulated camera, cocked-on-die seed
                # 2188: two flat dice against the rail, placed 14.9 mm apart)
                continue
            s = scene.side_of(a)
            pa, pb = scene.where(a), scene.where(b)
            d = math.hypot(pa[0] - pb[0], pa[1] - pb[1])
            leaning = (not flat_by_either(dice[a]) or not flat_by_either(dice[b])) and d < tol.leaning_ratio * s
            if (d < tol.on_die_ratio * s or leaning) and tol.tracks_apart and geo is not None and \
                    (te := ends_apart(settled, pa, pb, geo.size, tol)) is not None and te >= tol.tracks_apart * geo.size:
                notes.append(f"dice read {d:.1f} apart (side {s:.1f}), but their tracks settled {te:.1f} mm apart: "
                             "side by side, neither on the other")
                for i, j in ((a, b), (b, a)):
                    # a die read unsurely there: its window was pulled towards the other die
                    # (seed 4202: a flat 2 against the rail read at p 0.74 six px off its centre)
                    if dice[i].confidence >= SECOND_READ_BELOW or dice[i].extra.get("from"):
                        continue
                    s_px = geo.expected_side_px(pa if i == a else pb) or 10.0
                    again = pushed_out(scene, dice[i], s_px, away_from=dice[j])
                    if again is not dice[i] and again.confidence > dice[i].confidence:
                        notes.append(f"die {again.value} read again a side out from the other die: p "
                                     f"{dice[i].confidence:.2f} -> {again.confidence:.2f}")
                        dice[i] = scene.values[i] = again
                        scene.positions[i], scene.zones[i] = scene.place(again)
                continue
            if (d < tol.on_die_ratio * s or leaning) and not (leans_beside(dice[a], dice[b])
                                                               or leans_beside(dice[b], dice[a])):
                upper = a if (not dice[a].flat, dice[a].side_px) >= (not dice[b].flat, dice[b].side_px) else b
                on_die[upper] = True
                notes.append(f"dice {d:.1f} apart (side {s:.1f}): die {dice[upper].value} rests on the other, (k)(1)")
    if len(in_play) == 1:
        i = in_play[0]
        exp = scene.expected_px(i)
        merged = bool(exp) and dice[i].side_px ** 2 > tol.merged_area_ratio * exp ** 2
        if stacked is not None or merged:
            on_die[i] = True
            r = dice[i]
            hidden.append(DieReading(value=None, bbox=r.bbox, centre=r.centre, confidence=0.0, flat=True,
                                     side_px=0.0, extra={"hidden": True}))
        if stacked is None and merged:
            notes.append(f"one die region of {dice[i].side_px:.1f} px side (die {exp:.1f} px): "
                         "a die on the other die, the lower one hidden, (k)(1)")
    return on_die, hidden
