"""How the reader marks the real dice beside the tray's wall (issue #5, item 6).

In ``../shared/data/dice-photos/topdown-tray`` some dice rest on or against the tray's wall: the
one real case of a die that may not lie flat on the playing surface. The labels give no
flatness, so this script finds the dice beside the wall and prints how the reader marks them:
``flat``, the face classifier's P(flat) (``extra["p_flat"]``) and the tilt classifier's
(``extra["p_flat_tilt"]``), with the lowest listed for a look (``--tiles OUT.png`` writes
their crops).

A die is "beside the wall" when at least ``--dark`` (default 4 %) of the pixels 0.7-1.6 box
sides from its labelled centre, outside every labelled die, are the tray's dark rim (grey
< 70, HSV saturation < 90). Run: ``python bench/tray_wall_report.py [--tiles OUT.png]``.
Prints nothing but a note when ../shared is absent.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TRAY = ROOT.parent / "shared" / "data" / "dice-photos" / "topdown-tray"


def labelled_dice(path: Path, w: int, h: int) -> list[tuple[int, float, float, float]]:
    """``[(value, cx, cy, box side)]`` (pixels) from a YOLO label file (class 0..5 = face 1..6)."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            c, x, y, bw, bh = (float(v) for v in line.split())
            out.append((int(c) + 1, x * w, y * h, max(bw * w, bh * h)))
    return out


def beside_wall(img: np.ndarray, dice: list[tuple[int, float, float, float]], dark_share: float) -> list[int]:
    """Indices of the dice with at least ``dark_share`` of the tray's dark rim around them."""
    h, w = img.shape[:2]
    grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    sat = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)[..., 1]
    dark = (grey < 70) & (sat < 90)
    covered = np.zeros((h, w), bool)
    for _, x, y, s in dice:
        covered[int(max(0, y - 0.6 * s)):int(y + 0.6 * s), int(max(0, x - 0.6 * s)):int(x + 0.6 * s)] = True
    yy, xx = np.mgrid[0:h, 0:w]
    out = []
    for k, (_, x, y, s) in enumerate(dice):
        d = np.hypot(xx - x, yy - y)
        ring = (d > 0.7 * s) & (d < 1.6 * s) & ~covered
        if ring.any() and float(dark[ring].mean()) >= dark_share:
            out.append(k)
    return out


def measure(dark_share: float = 0.04) -> tuple[list[tuple], int, int]:
    """Read every topdown-tray photo with a labelled die beside the tray's rim.

    Returns:
        ``(rows, photos, dice)``: one row per labelled die beside the rim, ``(image name, in
        the train split, labelled value, cx, cy, box side (px), the reading nearest it within
        half a box or None)``, and the numbers of photos and labelled dice looked at.

    Raises:
        FileNotFoundError: ../shared's topdown-tray photos are absent.
    """
    if not (TRAY / "images").is_dir():
        raise FileNotFoundError(f"tray wall report: {TRAY} absent")
    from vision.reader import read_dice

    train = set((TRAY / "train.txt").read_text().split())
    rows = []
    n_photos = n_dice = 0
    for path in sorted((TRAY / "images").glob("*.jpg")):
        img = cv2.imread(str(path))
        labels = TRAY / "labels" / (path.stem + ".txt")
        if img is None or not labels.is_file():
            continue
        dice = labelled_dice(labels, img.shape[1], img.shape[0])
        n_photos += 1
        n_dice += len(dice)
        near = beside_wall(img, dice, dark_share)
        if not near:
            continue
        reads = read_dice(img)
        for k in near:
            value, x, y, s = dice[k]
            r = min(reads, key=lambda r: np.hypot(r.centre[0] - x, r.centre[1] - y), default=None)
            if r is not None and np.hypot(r.centre[0] - x, r.centre[1] - y) > 0.5 * s:
                r = None
            rows.append((path.name, path.name in train, value, x, y, s, r))
    return rows, n_photos, n_dice


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dark", type=float, default=0.04, help="share of dark rim pixels around a die (default 0.04)")
    ap.add_argument("--list", type=int, default=10, help="how many of the least flat to list (default 10)")
    ap.add_argument("--tiles", type=Path, help="write the listed dice's crops to this PNG")
    args = ap.parse_args(argv)
    if not (TRAY / "images").is_dir():
        print(f"tray wall report: {TRAY} absent, nothing measured")
        return 0
    cv2.setNumThreads(1)
    rows, n_photos, n_dice = measure(args.dark)
    found = [t for t in rows if t[6] is not None]
    pf = np.array([t[6].extra.get("p_flat", np.nan) for t in found])
    pt = np.array([t[6].extra.get("p_flat_tilt", np.nan) for t in found])
    print(f"tray wall: {len(rows)} of {n_dice} labelled dice in {n_photos} photos beside the tray's dark rim "
          f"({sum(t[1] for t in rows)} in train photos); {len(found)} found by the reader")
    print(f"tray wall: marked flat {sum(t[6].flat for t in found)}, not flat {sum(not t[6].flat for t in found)}; "
          f"P(flat) face classifier min {np.nanmin(pf):.3f} median {np.nanmedian(pf):.3f}, "
          f"tilt classifier min {np.nanmin(pt):.3f} median {np.nanmedian(pt):.3f}")
    print(f"tray wall: read right {sum(t[6].value == t[2] for t in found)}, wrong "
          f"{sum(t[6].value is not None and t[6].value != t[2] for t in found)}, unread {sum(t[6].value is None for t in found)}")
    found.sort(key=lambda t: min(t[6].extra.get("p_flat", 1.0), t[6].extra.get("p_flat_tilt", 1.0)))
    tiles = []
    for name, is_train, value, x, y, s, r in found[:args.list]:
        print(f"  {name} ({'train' if is_train else 'test'}) die {value} at ({x:.0f}, {y:.0f}): read {r.value}, "
              f"flat {r.flat}, P(flat) {r.extra.get('p_flat')}, tilt {r.extra.get('p_flat_tilt')}")
        if args.tiles:
            img = cv2.imread(str(TRAY / "images" / name))
            m = int(1.4 * s)
            p = cv2.copyMakeBorder(img, m, m, m, m, cv2.BORDER_CONSTANT)[int(y):int(y) + 2 * m, int(x):int(x) + 2 * m]
            tiles.append(cv2.resize(p, (200, 200), interpolation=cv2.INTER_CUBIC))
    if args.tiles and tiles:
        tiles += [np.zeros_like(tiles[0])] * ((-len(tiles)) % 5)
        cv2.imwrite(str(args.tiles), np.vstack([np.hstack(tiles[a:a + 5]) for a in range(0, len(tiles), 5)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
