"""Choose the learned reader's face threshold on the held-out part of the train data.

Runs :func:`vision.learned.read_dice_learned` with no face threshold on the held-out
topdown-tray and oblique-webcam train photos and sim renders, then prints, per candidate
threshold, recall / wrong values / nulls on each. Usage::

    python -m vision.train.holdout --sim /tmp/vml/sim
"""
from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import numpy as np

import vision.learned as L
from vision.evaluate import Label, match
from vision.train import data as D


def collect(samples: list[D.Sample], side_from_truth: bool = False) -> dict:
    """Per matched die ``(true value, p(7), flat truth, flat prob)``, and counts."""
    rows, n_labels, n_read, n_match = [], 0, 0, 0
    for smp in samples:
        img = smp.load()
        side = smp.side_px if side_from_truth else None
        reads = L.read_dice_learned(img, expected_side_px=side)
        if smp.source == "sim":
            # nearest centre within 0.7 box sides, as simulator.accuracy does
            labs = [d for d in smp.dice]
            used = set()
            n_labels += len(labs)
            n_read += len(reads)
            for d in labs:
                best = None
                for i, r in enumerate(reads):
                    dist = np.hypot(r.centre[0] - d.cx, r.centre[1] - d.cy)
                    if i not in used and dist < 0.7 * d.size and (best is None or dist < best[0]):
                        best = (dist, i)
                if best is None:
                    continue
                used.add(best[1])
                r = reads[best[1]]
                n_match += 1
                rows.append((d.value, r.extra["p"], d.flat, r.flat))
            continue
        labels = []
        for d in smp.dice:
            if smp.source == "oblique":
                h = d.size / 1.6 / 2
            else:
                h = d.size / 2
            labels.append(Label(d.value, (d.cx - h, d.cy - h, d.cx + h, d.cy + h)))
        pairs = match(reads, labels)
        n_labels += len(labels)
        n_read += len(reads)
        n_match += len(pairs)
        for i, j in pairs:
            rows.append((labels[j].value, reads[i].extra["p"], True, reads[i].flat))
    return {"rows": rows, "labels": n_labels, "reads": n_read, "matched": n_match}


def report(name: str, c: dict, thresholds=(0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99)) -> None:
    """Print one source's :func:`collect` counts: recall and precision of the detections, then for
    each face threshold the share of matched dice read right and how many were read wrong or
    left unread (class 6, or top probability below the threshold), then how often the flat
    estimate agrees with the truth.
    """
    print(f"{name}: labels {c['labels']} reads {c['reads']} matched {c['matched']} "
          f"recall {c['matched'] / max(1, c['labels']):.4f} precision {c['matched'] / max(1, c['reads']):.4f}")
    for t in thresholds:
        right = wrong = null = 0
        for v, p, _, _ in c["rows"]:
            k = int(np.argmax(p))
            if k == 6 or p[k] < t:
                null += 1
            elif k + 1 == v:
                right += 1
            else:
                wrong += 1
        n = max(1, len(c["rows"]))
        print(f"  t={t:.2f} right {right / n:.4f} wrong {wrong} null {null}")
    fl = [(f, r) for _, _, f, r in c["rows"] if f is not None]
    if fl:
        agree = sum(1 for f, r in fl if f == r)
        print(f"  flat agreement {agree}/{len(fl)}; truth not flat {sum(1 for f, _ in fl if not f)}, "
              f"of which read not flat {sum(1 for f, r in fl if not f and not r)}")


def main() -> None:
    """``python -m vision.train.holdout [--sim DIR]``: :func:`report` on the held-out topdown,
    oblique and sim samples with the face threshold off (sets ``vision.learned.FACE_MIN`` to 0
    in this process).

    Raises:
        FileNotFoundError: ``../shared/data/dice-photos`` is absent.
    """
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sim", type=Path, default=Path("/tmp/vml/sim"))
    a = ap.parse_args()
    cv2.setNumThreads(1)
    L.FACE_MIN = 0.0
    report("topdown hold", collect(D.topdown("hold")))
    report("oblique hold", collect(D.oblique("hold")))
    report("sim hold", collect(D.sim(a.sim, "hold"), side_from_truth=True))


if __name__ == "__main__":
    main()
