"""The dice reader (vision.reader.read_dice) on rendered natural throws.

Issue 4 asks that the reader read >= 99.5 % of the flat dice of rendered natural throws right.
Measured on seeds 0..399 (800 flat dice, docs/simulator.md): 797 right, 0 wrong, 3 not found
(two 6s lying on chip stacks, one 2 on a layout line). Here the first 20 seeds (60 with
``CRAPS_FULL_COUNTS=1``, as ``make test`` sets): no wrong value at all (a wrong number is a wrong
payout; an unread die is a boxperson call) and the issue's rate.
"""
from __future__ import annotations

import os

import pytest

import vision.reader  # noqa: F401 - a project module: an import error fails here, not a skip
from simulator.accuracy import reader_accuracy

N_THROWS = 60 if os.environ.get("CRAPS_FULL_COUNTS") == "1" else 20


@pytest.fixture(scope="module")
def accuracy():
    return reader_accuracy(N_THROWS)


@pytest.mark.slow
def test_reader_never_misreads_a_rendered_die(accuracy):
    assert accuracy.total >= 1.8 * N_THROWS          # nearly all natural throws end flat
    assert accuracy.wrong == 0, accuracy.failures


@pytest.mark.slow
def test_reader_reads_rendered_flat_dice_to_issue_target(accuracy):
    assert accuracy.rate >= 0.995, accuracy.failures
