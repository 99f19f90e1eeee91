"""Two-sided checks of interval coverage, so that intervals too narrow AND too wide fail.

A nominal 95% interval that is honest covers the truth in each of ``n`` independent
simulated surveys with probability 0.95, so the number of hits is Binomial(n, 0.95). The
acceptance region is the central ``1 - alpha`` part of that distribution: fewer hits mean
intervals too narrow, more mean intervals too wide. The upper side can only fail when
``0.95 ** n < alpha / 2``, that is from about 150 simulations at alpha = 0.001;
:func:`coverage_bounds` refuses smaller ``n`` unless ``two_sided=False`` is asked for.

For a single survey (an API test on one simulated consultation) :func:`assert_covers` checks
the truth against the interval widened from 95% to ``1 - alpha`` (normal scaling): an
honest interval fails that with probability about ``alpha``, and a far-off estimate fails.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

NOMINAL = 0.95
ALPHA = 0.001


def coverage_bounds(
    n: int, nominal: float = NOMINAL, alpha: float = ALPHA, *, two_sided: bool = True
) -> tuple[float, float]:
    """Acceptance region (as shares) for the hit count of ``n`` nominal intervals.

    Returns ``(low, high)``: an honest interval's hit share lies in it with probability at
    least ``1 - alpha``. With ``two_sided=False`` only the lower side is tested (``high``
    is 1.0); with ``two_sided=True`` ``n`` must be large enough for the upper side to fail.
    """
    distribution = stats.binom(n, nominal)
    tail = alpha / 2 if two_sided else alpha
    low = int(distribution.ppf(tail))  # P(X < low) <= tail
    if not two_sided:
        return low / n, 1.0
    high = int(distribution.isf(tail))  # P(X > high) <= tail
    if high >= n:
        raise ValueError(
            f"{n} simulations cannot show intervals too wide at alpha={alpha}: "
            f"P(all {n} cover) = {nominal**n:.2g} > {tail:.2g}; use more simulations"
        )
    return low / n, high / n


def assert_coverage(
    hits: Sequence[bool] | np.ndarray,
    nominal: float = NOMINAL,
    alpha: float = ALPHA,
    *,
    two_sided: bool = True,
    label: str = "",
) -> None:
    """Fail unless the share of covering intervals lies in the binomial acceptance region."""
    hits = np.asarray(hits, dtype=bool)
    low, high = coverage_bounds(hits.size, nominal, alpha, two_sided=two_sided)
    share = float(hits.mean())
    assert low <= share <= high, (
        f"{label + ': ' if label else ''}coverage {share:.3f} of {hits.size} nominal "
        f"{nominal:.0%} intervals is outside [{low:.3f}, {high:.3f}] (binomial, alpha={alpha})"
    )


def widened(ci95: Sequence[float], alpha: float = 1e-4) -> tuple[float, float]:
    """The 95% interval ``ci95`` widened about its centre to a ``1 - alpha`` interval."""
    low, high = float(ci95[0]), float(ci95[1])
    scale = stats.norm.isf(alpha / 2) / stats.norm.isf(0.025)
    centre, half = (low + high) / 2, (high - low) / 2
    return centre - scale * half, centre + scale * half


def assert_covers(ci95: Sequence[float], truth: float, alpha: float = 1e-4) -> None:
    """One survey: the truth lies in the 95% interval widened to ``1 - alpha``.

    An honest interval fails this with probability about ``alpha`` (for a normal
    estimator); ``alpha`` is fixed in advance, not tuned to a seed.
    """
    low, high = widened(ci95, alpha)
    assert low <= truth <= high, (
        f"truth {truth:.6g} outside the 95% interval {list(ci95)} widened to "
        f"{1 - alpha:.4%}: [{low:.6g}, {high:.6g}]"
    )
