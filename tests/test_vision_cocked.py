"""The cocked-die reader (vision.learned.cocked_faces, ``DieReading.extra["p_cocked"]``): the
upper face of a die both flatness estimates call not flat, 9 NYCRR 5324.52(h)(1)(i).

Unit tests of how its answer combines with the face classifier's (stubbed networks), and
rendered throws of the simulator (seeds never trained on: its renders are seeds 40000-42499)."""
from __future__ import annotations

import numpy as np
import pytest

import vision.learned as L
import vision.tilted as tilted


def _p(face: int | None, p_face: float, p_flat: float) -> np.ndarray:
    """A face classifier output (7 classes, P(flat)) sure of ``face`` (None: "not a die")."""
    p = np.full(8, (1 - p_face) / 6, np.float32)
    p[(face or 7) - 1] = p_face
    p[7] = p_flat
    return p


def _cocked(face: int | None, prob: float) -> np.ndarray:
    q = np.full(7, (1 - prob) / 6, np.float32)
    q[(face or 7) - 1] = prob
    return q


@pytest.fixture
def stub(monkeypatch):
    """Replace the cocked-die network by answers given per candidate (by its x)."""
    answers: dict[float, np.ndarray] = {}
    monkeypatch.setattr(L, "cocked_faces", lambda img, found: np.stack([answers[f[0]] for f in found]) if found else None)
    return answers


IMG = np.zeros((50, 50, 3), np.uint8)


def test_a_die_both_estimates_call_not_flat_is_read_by_the_cocked_reader(stub) -> None:
    stub[1.0] = _cocked(3, 0.97)
    (f, p, value, conf, tilt, pc), = L._read_cocked(IMG, [((1.0, 2.0, 20.0, 0.9), _p(None, 0.4, 0.1), None, 0.08, 0.2)])
    assert (value, round(conf, 2)) == (3, 0.97)
    assert pc.argmax() == 2


def test_the_face_classifiers_agreeing_read_stays_and_takes_the_cocked_readers_confidence(stub) -> None:
    stub[1.0] = _cocked(4, 0.95)
    (_, _, value, conf, _, _), = L._read_cocked(IMG, [((1.0, 2.0, 20.0, 0.9), _p(4, 0.7, 0.0), 4, 0.7, 0.0)])
    assert (value, round(conf, 2)) == (4, 0.95)


def test_disagreement_and_cannot_tell_leave_the_face_unread_agreement_keeps_it(stub) -> None:
    """Dice both estimates call not flat: the face classifier's value stands only where the
    cocked-die reader gives it at least COCKED_AGREE (fifteenth session; before, "cannot tell"
    and unsure answers left it standing: a lean of 43.5 degrees on the cup was published as
    the 6 the face classifier read at p 0.996, the cocked-die reader 6 at 0.53, it was a 2),
    0.9 since the twenty-sixth session (0.6 before: a 1 leaning 42 degrees on a tall stack,
    read 4 at p 0.93 by the face classifier and 4 at 0.76 by the cocked-die reader, was
    published as a 4 under house practice).
    Where the cocked-die reader is sure (COCKED_MIN) of another face, its face is read
    (twentieth session; before, unread): cocked-on-chips seed 1510, a 1 cocked 27 degrees,
    the face classifier 4 at p 0.60, the cocked-die reader 1 at 0.98; of 80 such
    disagreements on rendered cocked dice (seeds 2100-2299, 2600-2799) it was right in 80."""
    stub[1.0] = _cocked(1, 0.99)     # sure of 1, the face classifier read 4 (seed 1510's case)
    stub[2.0] = _cocked(5, 0.95)     # sure of the face classifier's 5: it stands
    stub[6.0] = _cocked(4, 0.76)     # leaning to the face classifier's 4, not sure: unread
    stub[3.0] = _cocked(None, 0.95)  # cannot tell (leans ~45 degrees): unread, (h)(1)(ii)
    stub[4.0] = _cocked(2, 0.99)     # the face classifier calls it not a die: still unread
    stub[5.0] = _cocked(6, 0.55)     # below COCKED_AGREE: unread
    kept = [((1.0, 0, 20, 0.9), _p(4, 0.6, 0.0), 4, 0.6, 0.1),
            ((2.0, 0, 20, 0.9), _p(5, 0.9, 0.2), 5, 0.9, 0.3),
            ((3.0, 0, 20, 0.9), _p(2, 0.8, 0.1), 2, 0.8, 0.0),
            ((4.0, 0, 20, 0.9), _p(None, 0.8, 0.1), None, 0.2, 0.0),
            ((5.0, 0, 20, 0.9), _p(6, 0.996, 0.0), 6, 0.996, 0.29),
            ((6.0, 0, 20, 0.9), _p(4, 0.93, 0.36), 4, 0.93, 0.0)]
    out = L._read_cocked(IMG, kept)
    assert [(o[2], round(o[3], 2)) for o in out] == [(1, 0.99), (5, 0.95), (None, 0.2), (None, 0.2), (None, 0.2),
                                                      (None, 0.2)]
    assert [int(np.argmax(o[5])) for o in out] == [0, 4, 6, 1, 5, 3]


def test_a_die_read_surely_is_asked_only_where_one_flatness_estimate_calls_it_not_flat(stub) -> None:
    """A die read at >= SECOND_OPINION_BELOW that one flatness estimate calls not flat keeps its
    value only where the cocked-die reader gives it at least COCKED_AGREE (twenty-sixth session:
    a 1 leaning 40 degrees on a tall stack, face classifier 2 at p 0.90 and P(flat) 0.64, tilt
    classifier 0.0, cocked-die reader 1 at 0.92, was published as a 2 under house practice).
    Both estimates calling it flat, or no tilt classifier: not asked."""
    stub[1.0] = _cocked(6, 0.95)    # agrees surely: stands, at the face classifier's confidence
    stub[2.0] = _cocked(2, 0.7)     # leans to the same face, not sure: unread
    stub[5.0] = _cocked(1, 0.92)    # sure of another face: unread (not read as the 1)
    kept = [((1.0, 0, 20, 0.9), _p(6, 0.99, 0.9), 6, 0.99, 0.1),    # face classifier: flat; tilt: not
            ((2.0, 0, 20, 0.9), _p(2, 0.99, 0.1), 2, 0.99, 0.8),    # tilt classifier: flat; face: not
            ((3.0, 0, 20, 0.9), _p(3, 0.99, 0.1), 3, 0.99, None),   # no tilt weights
            ((4.0, 0, 20, 0.9), _p(4, 0.99, 0.9), 4, 0.99, 0.9),    # both: flat
            ((5.0, 0, 20, 0.9), _p(2, 0.90, 0.64), 2, 0.90, 0.0)]   # seed 5611's die
    out = L._read_cocked(IMG, kept)
    assert [(o[2], round(o[3], 2)) for o in out] == [(6, 0.99), (None, 0.2), (3, 0.99), (4, 0.99), (None, 0.2)]
    assert [o[5] is None for o in out] == [False, False, True, True, False]


def test_second_opinion_on_a_flat_die_the_face_classifier_is_unsure_of(stub) -> None:
    """A face read below SECOND_OPINION_BELOW (or unread) is shown to the cocked-die reader: its
    sure agreement reads the face at its confidence; sure of another face leaves it unread;
    unsure leaves the reading as it was. A die read surely is not asked."""
    stub[1.0] = _cocked(5, 0.99)    # agrees with the face classifier's 5 at p 0.73
    stub[2.0] = _cocked(5, 0.98)    # agrees with its most likely face, below its threshold
    stub[3.0] = _cocked(4, 0.99)    # sure of another face: a wrong number is worse than none
    stub[4.0] = _cocked(6, 0.7)     # unsure: the reading stands
    stub[5.0] = _cocked(3, 0.99)    # sure of another face, the face classifier read none
    kept = [((1.0, 0, 20, 0.9), _p(5, 0.73, 0.9), 5, 0.73, 1.0),
            ((2.0, 0, 20, 0.9), _p(5, 0.5, 0.9), None, 0.1, 1.0),
            ((3.0, 0, 20, 0.9), _p(5, 0.8, 0.9), 5, 0.8, 1.0),
            ((4.0, 0, 20, 0.9), _p(6, 0.85, 0.9), 6, 0.85, 1.0),
            ((5.0, 0, 20, 0.9), _p(5, 0.5, 0.9), None, 0.1, 1.0),
            ((6.0, 0, 20, 0.9), _p(2, 0.95, 0.9), 2, 0.95, 1.0)]    # sure: not asked (no stub)
    out = L._read_cocked(IMG, kept)
    assert [(o[2], round(o[3], 2)) for o in out] == [(5, 0.99), (5, 0.98), (None, 0.2), (6, 0.85), (None, 0.1), (2, 0.95)]
    assert out[5][5] is None and out[0][5] is not None


# --- rendered throws ------------------------------------------------------------------------

def _bench():
    pytest.importorskip("mujoco")
    pytest.importorskip("simulator.scenarios")
    from bench_module import irregularity_bench

    return irregularity_bench()


def _scene(scenario: str, seed: int) -> tuple[np.ndarray, list, float]:
    """The simulated throw at rest on the simulated camera: (uint8 BGR frame, ``[(truth state,
    its upper face's centre (x, y) px)]``, the calibrated die side, px)."""
    from simulator.render import DicePose

    B = _bench()
    th = B.simulate(scenario, seed, {}, 60.0, keep_poses=True)
    g = th.plan.geometry
    ren = B.Bench(None, "camera").renderer(g)
    side = B.calibration_for(ren, g).die_side_px((g.length / 2, g.width / 2))
    dice = [(st, ren.die_centre_px(DicePose(st.pos_mm, st.quat))) for st in th.states]
    return B.render(th, ren, -1), dice, side


def _rendered(scenario: str, seed: int) -> list:
    """The simulated throw's dice at rest, read by the learned reader on its rendered frame:
    ``[(truth state, the reading nearest its upper face's centre)]`` (within a die side)."""
    import math

    from vision.reader import read_dice

    frame, dice, side = _scene(scenario, seed)
    readings = read_dice(frame, expected_side_px=side, method="learned")
    out = []
    for st, (cx, cy) in dice:
        near = min(readings, key=lambda r: math.hypot(r.centre[0] - cx, r.centre[1] - cy))
        assert math.hypot(near.centre[0] - cx, near.centre[1] - cy) < side
        out.append((st, near))
    return out


def _cocked_on_chips(seed: int):
    """(the cocked die's truth state, the reading nearest it, the flat die's reading)."""
    out = {"flat" if st.flat else "cocked": (st, r) for st, r in _rendered("cocked-on-chips", seed)}
    return out["cocked"][0], out["cocked"][1], out["flat"][1]


def test_cocked_weights_are_shipped_small_and_agree_across_runtimes() -> None:
    assert L.COCKED_ONNX.is_file()
    assert L.COCKED_ONNX.stat().st_size < 600_000
    x = np.random.default_rng(4).standard_normal((3, 3, L.CROP, L.CROP)).astype(np.float32)
    a = L.OnnxNet(L.COCKED_ONNX)
    out = a(x)
    assert out.shape == (3, 7)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)
    if a.runtime == "onnxruntime":
        np.testing.assert_allclose(out, L.OnnxNet(L.COCKED_ONNX, "cv2")(x).reshape(out.shape), atol=1e-4)


@pytest.mark.parametrize("seed, up", [(1503, 3), (1505, 1), (1515, 3)])
def test_die_cocked_on_a_chip_stack_edge_is_read_by_its_upper_face(seed: int, up: int) -> None:
    """cocked-on-chips seeds 1503, 1505 and 1515: the face classifier read the cocked die's 3
    below the verdict's confidence (p 0.71, 0.77) or left its 1 unread (p 0.43); the
    cocked-die reader reads them at p >= 0.9, so ny-5324 counts the face opposite the side
    resting on the chip, (h)(1)(i), without the boxperson. The flat die on the felt is not
    asked."""
    st, r, flat = _cocked_on_chips(seed)
    assert st.rests_on == "chips" and not st.flat and st.value == up
    assert r.extra["p_flat"] < 0.5 and r.extra["p_flat_tilt"] < 0.5
    assert r.value == up and r.confidence >= L.COCKED_MIN
    assert int(np.argmax(r.extra["p_cocked"])) == up - 1
    assert flat.flat and "p_cocked" not in flat.extra


def test_without_cocked_weights_the_face_classifiers_reading_stands(monkeypatch) -> None:
    monkeypatch.setattr(tilted, "_cocked_net", lambda: None)
    st, r, _ = _cocked_on_chips(1505)
    assert "p_cocked" not in r.extra
    assert r.value is None and r.confidence <= 0.2     # the face classifier's: unsure


def test_read_die_at_reads_a_cocked_die_where_the_caller_says_it_is() -> None:
    """cocked-on-chips seed 1618: the reader's candidate for the cocked die was more than half
    a side off, so the controller re-reads the place the track saw it stop; the cocked-die
    reader reads its 2 there (in the window the face classifier's geometry outputs moved, p 0.85:
    unread)."""
    from vision.reader import read_die_at

    frame, dice, side = _scene("cocked-on-chips", 1618)
    (st, c), = [(st, c) for st, c in dice if not st.flat]
    r = read_die_at(frame, c, side)
    assert st.rests_on == "chips" and st.value == 2
    assert r is not None and not r.flat
    assert r.value == 2 and r.confidence >= L.COCKED_MIN


@pytest.mark.parametrize("seed, value", [(1820, 5), (1834, 5), (1847, 1)])
def test_flat_die_on_a_chip_is_read_surely_with_the_second_opinion(seed: int, value: int) -> None:
    """flat-on-one-chip seeds 1820, 1834, 1847: the face classifier read the die lying on a chip
    (whose white inserts look like pips beside it) at p 0.67-0.74, below the verdict's 0.8, so
    the throw went to the boxperson; the cocked-die reader agrees at p >= 0.98."""
    (st, r), = [(st, r) for st, r in _rendered("flat-on-one-chip", seed) if st.rests_on == "chips"]
    assert st.flat and st.value == value
    assert max(r.extra["p"][:6]) < L.SECOND_OPINION_BELOW     # the face classifier alone: unsure
    assert r.value == value and r.confidence >= 0.9


def test_read_die_at_keeps_the_window_that_read_the_die_beside_another() -> None:
    """cocked-on-die seed 1953, the dice ended flat side by side and the reader found only the
    5: read at a point 3.5 px beyond the 2 (away from the 5), the first window reads the 2 at
    p 0.99, then the geometry outputs walk the window towards the pair's middle (before, it
    ended 8.5 px from the 2's centre, or unread from 3.5 px further along the line). The window
    that read it surely is kept."""
    import math

    from vision.reader import read_die_at

    frame, dice, side = _scene("cocked-on-die", 1953)
    (two, c2), (five, c5) = sorted(dice, key=lambda d: d[0].value)
    assert (two.value, five.value, two.flat, five.flat) == (2, 5, True, True)
    d = math.hypot(c2[0] - c5[0], c2[1] - c5[1])
    at = (c2[0] + 3.5 * (c2[0] - c5[0]) / d, c2[1] + 3.5 * (c2[1] - c5[1]) / d)
    r = read_die_at(frame, at, side)
    assert r is not None and r.value == 2 and r.confidence >= 0.9
    assert math.hypot(r.centre[0] - c2[0], r.centre[1] - c2[1]) < 0.25 * side


def test_an_unread_die_one_estimate_calls_not_flat_takes_the_cocked_readers_sure_face(stub) -> None:
    """A lean the face classifier reads as another face, unsure (a 2 leaning ~40 degrees on the
    rail's wall read a 6 at p 0.45): the cocked-die reader's sure face is read where the face
    classifier gives it at least FALLBACK_MIN_P; not where it gives it less, not where both
    estimates call the die flat, not where the cocked-die reader is unsure."""
    def p(face6: float, face2: float, p_flat: float) -> np.ndarray:
        q = np.array([0.01, face2, 0.1, 0.1, 0.04, face6, 0.0, p_flat], np.float32)
        q[6] = 1.0 - q[:6].sum()
        return q

    stub[1.0] = _cocked(2, 0.98)    # face classifier's P(flat) 0.38: read 2
    stub[2.0] = _cocked(2, 0.98)    # tilt classifier's P(flat) 0.27: read 2
    stub[3.0] = _cocked(2, 0.98)    # the face classifier gives 2 only 0.05: unread
    stub[4.0] = _cocked(2, 0.98)    # both estimates call it flat: unread
    stub[5.0] = _cocked(2, 0.8)     # the cocked-die reader unsure: unread
    kept = [((1.0, 0, 20, 0.9), p(0.45, 0.2, 0.38), None, 0.09, 0.86),
            ((2.0, 0, 20, 0.9), p(0.45, 0.2, 0.7), None, 0.09, 0.27),
            ((3.0, 0, 20, 0.9), p(0.45, 0.05, 0.38), None, 0.09, 0.86),
            ((4.0, 0, 20, 0.9), p(0.45, 0.2, 0.7), None, 0.09, 0.86),
            ((5.0, 0, 20, 0.9), p(0.45, 0.2, 0.38), None, 0.09, 0.86)]
    out = L._read_cocked(IMG, kept)
    assert [(o[2], round(o[3], 2)) for o in out] == [(2, 0.98), (2, 0.98), (None, 0.09), (None, 0.09), (None, 0.09)]


def test_a_die_leaning_40_degrees_on_the_rail_is_read_by_its_face_most_up() -> None:
    """cocked-on-rail-wall seed 1904: the 2 leans 38.5 degrees on the rail's wall and the
    reader did not find it. Read where it lies, the face classifier calls it a 6 at p 0.46
    (its upper face and the side beside it), unsure; the cocked-die reader, which since the
    fifteenth session learned leans up to 42 degrees by the face most nearly up, reads the 2
    (before it said "cannot tell" from 40 degrees on, and house practice, which reads a cocked
    die as it lies, sent the throw to the boxperson)."""
    from vision.reader import read_die_at

    frame, dice, side = _scene("cocked-on-rail-wall", 1904)
    (st, c), = [(st, c) for st, c in dice if not st.flat]
    assert st.value == 2 and 38 < st.tilt_deg < 42
    r = read_die_at(frame, c, side)
    assert r is not None and r.value == 2 and r.confidence >= L.COCKED_MIN
    assert int(np.argmax(r.extra["p"])) == 5      # the face classifier's own guess: a 6


def test_read_die_at_places_a_die_leaning_on_the_other_where_the_caller_says() -> None:
    """cocked-on-die seed 1928: the 1 leans 39 degrees on the flat 6, which the reader found; the
    track saw the 1 stop 1.4 sides from the 6. The face classifier's geometry outputs walked
    the window 0.45 side towards the 6, where the controller took it for the 6 again; a die
    both estimates call not flat is now placed where it was asked for (where the cocked-die
    reader looked), and read 1."""
    import math

    from vision.reader import read_die_at

    frame, dice, side = _scene("cocked-on-die", 1928)
    (lean, c1), = [(st, c) for st, c in dice if not st.flat]
    (flat, c6), = [(st, c) for st, c in dice if st.flat]
    assert (lean.value, flat.value) == (1, 6)
    r = read_die_at(frame, c1, side)
    assert r is not None and r.value == 1 and not r.flat
    assert r.centre == (float(c1[0]), float(c1[1]))
    assert math.hypot(r.centre[0] - c6[0], r.centre[1] - c6[1]) > side


def test_a_tilted_die_whose_face_the_cocked_reader_gives_to_another_is_unread(stub) -> None:
    """cocked-on-cup seed 1986: a 2 leaning on the cup, read a 6 at p 0.89 (P(flat) 0.13, tilt
    0.60), the cocked-die reader 2 at 0.74: house practice published the 6. A die one estimate
    calls not flat is unread where the cocked-die reader gives another face >= DISAGREE_TILTED;
    not where it says "cannot tell", gives the other face less, or both estimates call it flat."""
    stub[1.0] = _cocked(2, 0.74)
    stub[2.0] = _cocked(None, 0.74)     # cannot tell: the reading stands
    stub[3.0] = _cocked(2, 0.45)        # below DISAGREE_TILTED: stands
    stub[4.0] = _cocked(2, 0.74)        # flat by both estimates (a second opinion, unsure): stands
    kept = [((1.0, 0, 20, 0.9), _p(6, 0.89, 0.13), 6, 0.89, 0.60),
            ((2.0, 0, 20, 0.9), _p(6, 0.89, 0.13), 6, 0.89, 0.60),
            ((3.0, 0, 20, 0.9), _p(6, 0.89, 0.13), 6, 0.89, 0.60),
            ((4.0, 0, 20, 0.9), _p(6, 0.85, 0.9), 6, 0.85, 0.95)]
    out = L._read_cocked(IMG, kept)
    assert [(o[2], round(o[3], 2)) for o in out] == [(None, 0.2), (6, 0.89), (6, 0.89), (6, 0.85)]


def test_tilt_classifier_judges_the_window_the_reader_puts_on_a_die() -> None:
    """The tilt classifier runs on the reader's window, which for a die leaning on something is
    walked toward it; since the sixteenth session it learned from such windows too
    (``vision.train.tilt.reader_crops``). cocked-on-bank-side seed 2248: the 2 leaning 39
    degrees on the bank's side was called flat (P(flat) 0.97, the face classifier 0.64), so
    ny-5324 published the throw as a valid roll where the die rests on the bank (k)(2)(iii);
    now not flat. cocked-on-die seed 2270: two 5s lying flat side by side against the rail,
    one called not flat (0.16); now flat."""
    bank = _rendered("cocked-on-bank-side", 2248)
    (st, r), = [(st, r) for st, r in bank if not st.flat]
    assert st.value == 2 and st.rests_on == "bank"
    assert r.extra["p_flat_tilt"] < 0.1
    pair = _rendered("cocked-on-die", 2270)
    assert [st.flat for st, _ in pair] == [True, True]
    assert sorted(r.value for _, r in pair) == [5, 5]
    assert min(r.extra["p_flat_tilt"] for _, r in pair) > 0.9
