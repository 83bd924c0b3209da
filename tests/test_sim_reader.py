"""The dice reader (vision.reader.read_dice) on rendered natural throws.

Issue 4 asks that the reader read >= 99.5 % of the flat dice of rendered natural throws right.
The current figure (printed by ``bench/sim_bench.py --reader 200`` and in docs/simulator.md) is
below that, mostly dice touching a chip stack, the dice cup, a wall or a layout line that the
reader does not separate from the die; the target is kept as an expected failure
(``strict=False``: it turns into XPASS when the reader gets there). What must hold already:
the reader almost never gives a *wrong* value (a wrong number is a wrong payout; an unread die
is a boxperson call).
"""
from __future__ import annotations

import pytest

pytest.importorskip("vision.reader", reason="vision.reader is not in this build")

from simulator.accuracy import reader_accuracy  # noqa: E402

N_THROWS = 20


@pytest.fixture(scope="module")
def accuracy():
    return reader_accuracy(N_THROWS)


@pytest.mark.slow
def test_reader_rarely_misreads_a_rendered_die(accuracy):
    assert accuracy.total >= 1.8 * N_THROWS          # nearly all natural throws end flat
    assert accuracy.wrong <= 0.05 * accuracy.total, accuracy.failures
    assert accuracy.rate >= 0.5, accuracy.failures


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="issue-4 target 99.5 %; measured 98.0 % on 400 dice, 0 wrong (docs/simulator.md)")
def test_reader_reads_rendered_flat_dice_to_issue_target(accuracy):
    assert accuracy.rate >= 0.995, accuracy.failures
