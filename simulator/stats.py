"""Pearson's chi-square test of uniformity, for checking that simulated dice are fair.

Written out here (regularized incomplete gamma by series and continued fraction, Numerical
Recipes 3rd ed. section 6.2) so that tests and benches need no SciPy.
"""
from __future__ import annotations

import math
from typing import Sequence


def _gamma_p_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    ap = a
    for _ in range(1000):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * 1e-15:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q_fraction(a: float, x: float) -> float:
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square distributed with ``dof`` degrees of freedom.

    Raises:
        ValueError: if ``dof`` < 1 or ``x`` < 0.
    """
    if dof < 1 or x < 0:
        raise ValueError(f"chi2_sf needs dof >= 1 and x >= 0, got dof={dof}, x={x}")
    if x == 0:
        return 1.0
    a, hx = dof / 2.0, x / 2.0
    if hx < a + 1.0:
        return max(0.0, 1.0 - _gamma_p_series(a, hx))
    return _gamma_q_fraction(a, hx)


def chi2_uniform(counts: Sequence[int], probs: Sequence[float] | None = None) -> tuple[float, float]:
    """Pearson's chi-square statistic and p-value of ``counts`` against ``probs``.

    Args:
        counts: observed count per category.
        probs: expected probability per category (uniform when ``None``); must sum to 1.

    Returns:
        ``(statistic, p_value)``.

    Raises:
        ValueError: fewer than two categories, no observations, or ``probs`` of another length.
    """
    n = sum(counts)
    k = len(counts)
    if k < 2 or n <= 0:
        raise ValueError("chi-square needs at least two categories and one observation")
    p = list(probs) if probs is not None else [1.0 / k] * k
    if len(p) != k:
        raise ValueError(f"{k} counts but {len(p)} probabilities")
    stat = sum((c - n * q) ** 2 / (n * q) for c, q in zip(counts, p))
    return stat, chi2_sf(stat, k - 1)


#: Probabilities of the totals 2..12 of two fair dice.
SUM_PROBS: tuple[float, ...] = tuple((6 - abs(t - 7)) / 36.0 for t in range(2, 13))
