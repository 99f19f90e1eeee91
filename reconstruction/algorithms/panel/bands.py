"""Bands tightened for the variance of the realised true count (``max_outside``).

Pure module: numpy and scipy only.

A panel's true count in a quota is a Poisson-binomial variable given the reports; keeping
only its *expected* count in the band lets the realised count fall outside it.
:func:`_expected_outside` is the expected number of seats outside a band (normal
approximation), :func:`_tightened` turns a bound on it into one more linear row per quota
(the margin's tangent in the variance), and :func:`_tighten` searches the lowest level
each quota admits. Beyond Flanigan et al. (Nature 2021), whose counts are exact.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq
from scipy.special import ndtr

from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.panel import limits
from reconstruction.algorithms.panel.problem import _Problem
from reconstruction.algorithms.panel.results import PanelOptions, Quota
from reconstruction.algorithms.queries import ConditionPosterior

# Levels of expected seats outside a band tried, as multiples of ``max_outside``, before a
# quota keeps its plain band (:func:`_tighten`).
_OUTSIDE_STEPS = (1.0, 1.5, 2.0, 3.0, 5.0)


def _shortfall(z: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """``E[(Z - z)+]`` for a standard normal ``Z``: ``phi(z) - z (1 - Phi(z))``."""
    z = np.asarray(z, dtype=np.float64)
    return np.asarray(np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) - z * ndtr(-z))


def _margin(tau: float, variance: float) -> float:
    """Distance inside a band edge at which a count has ``tau`` expected seats beyond it.

    A count ``C`` with mean ``mu`` and variance ``s`` has ``E[(L - C)+] = sigma *
    psi((mu - L) / sigma)`` expected seats below ``L`` (:func:`_expected_outside`: the
    normal approximation, continuity corrected); ``mu - L >= _margin(tau, s)`` keeps that
    at most ``tau``.
    """
    sigma = math.sqrt(variance)
    target = tau / sigma
    z = brentq(lambda v: float(_shortfall(v)) - target, -target - 10.0, 40.0, xtol=1e-10)
    return sigma * float(z)


def _margin_line(tau: float, variance: float) -> tuple[float, float]:
    """``(a, b)`` of the tangent ``a + b s`` to ``_margin(tau, s)`` at ``s = variance``.

    The margin is concave in the variance where it matters, so the tangent lies above it
    and the linear row built from it is conservative; it is exact at ``variance``.
    """
    h = 1e-4 * variance
    slope = (_margin(tau, variance + h) - _margin(tau, variance - h)) / (2.0 * h)
    return _margin(tau, variance) - slope * variance, slope


def _expected_outside(expected: float, variance: float, low: int, high: int, size: int) -> float:
    """Expected seats of an integer count outside ``[low, high]`` (normal approximation).

    For an integer count ``C`` with mean ``mu`` and standard deviation ``sigma``,
    ``E[(L - C)+] = sum_{k >= 1} P(C <= L - k)``. With the continuity-corrected normal
    ``P(C <= m) ~ Phi((m + 1/2 - mu) / sigma)`` and the sum over ``k`` taken as the
    integral from ``k = 1/2`` (the midpoint rule), this is ``sigma * psi((mu - L) /
    sigma)``, ``psi(z) = E[(Z - z)+]`` (:func:`_shortfall`); above ``U`` likewise
    ``sigma * psi((U - mu) / sigma)``. The form used before (``mu - L + 1/2``) applied
    the half-seat correction the wrong way: on Poisson-binomial counts of 30 seats with
    variance 1.6-6.7 and the mean inside a band of +-2 seats (exact 0.06-1.13 seats
    outside) it gave 0.50-0.78 times the exact figure, this form gives 1.01-1.26 times it
    (conservative, most at small variance; tests/reconstruction/algorithms/test_panel.py
    checks it against the exact convolution).
    """
    if variance <= 1e-12:
        return max(low - expected, 0.0) + max(expected - high, 0.0)
    sigma = math.sqrt(variance)
    total = 0.0
    if low > 0:
        total += sigma * float(_shortfall((expected - low) / sigma))
    if high < size:
        total += sigma * float(_shortfall((high - expected) / sigma))
    return total


def _shared_variances(
    posteriors: Sequence[ConditionPosterior],
    candidates: NDArray[np.intp],
    type_of: NDArray[np.intp],
    sizes: NDArray[np.float64],
    size: int,
) -> NDArray[np.float64]:
    """Per type and quota, each seat's share of the variance of a panel's expected count
    over the reconstruction's bootstrap replicates.

    ``Var_r(sum_i p_ri)`` over a panel is quadratic in the seats; its tangent at a panel
    drawn at random from the ``N`` candidates (weights ``size / N``) is linear:
    ``sum_i x_i c_i`` with ``c_i = (size / N) Cov_r(p_ri, S_r)``, ``S_r`` the pool's sum
    of replicate ``r``, and it equals the variance at that panel. ``c`` is averaged over a
    type's members. Without replicates (``n_boot`` below 2), zeros.
    """
    shared = np.zeros((sizes.size, len(posteriors)))
    n = max(int(candidates.size), 1)
    for j, post in enumerate(posteriors):
        replicates = post.cell_replicates
        if replicates.shape[0] < 2:
            continue
        cells = post.cell_of[candidates]
        weights = np.bincount(cells, minlength=replicates.shape[1]).astype(np.float64)
        totals = replicates @ weights
        centred = replicates - replicates.mean(axis=0)
        covariance = centred.T @ (totals - totals.mean()) / (replicates.shape[0] - 1)
        per_candidate = (size / n) * covariance[cells]
        shared[:, j] = np.bincount(type_of, weights=per_candidate, minlength=sizes.size) / (
            np.maximum(sizes, 1.0)
        )
    return shared


def _tightened(problem: _Problem, levels: NDArray[np.float64]) -> _Problem:
    """The problem with each quota's band tightened for its realised count's variance.

    Given the reported answers, a panel's true count in quota ``j`` is a sum of
    independent Bernoulli variables: mean ``mu = sum_t x_t p_tj`` and variance ``s =
    sum_t x_t p_tj (1 - p_tj)``, both linear in the seats ``x``. The posteriors are
    estimates themselves: with ``problem.shared`` the variance of ``mu`` over the
    reconstruction's replicates, linearised (``sum_t x_t shared_tj``), is added, by the
    law of total variance as in the result's intervals (:func:`_count_interval`); without
    it, a reconstruction error shared by the whole pool (a band's share off by 5-10% at
    n = 1,000 from noisy ages) moved the realised counts outside bands the Bernoulli
    variance alone kept them in. Keeping the expected
    seats outside the band at most ``levels[j]`` (split between the two edges) asks
    ``mu - L >= margin(s)`` and ``U - mu >= margin(s)`` (:func:`_expected_outside`'s
    approximation); the margin is
    replaced by its tangent at the variance of a panel drawn at random from the pool
    (:func:`_margin_line`), which turns each edge into one linear row of the MILPs.
    Infinite levels leave a quota's band as it is.
    """
    variances = problem.posteriors * (1.0 - problem.posteriors)
    if problem.shared is not None:
        variances = variances + problem.shared
    rows: list[NDArray[np.float64]] = []
    lows: list[float] = []
    highs: list[float] = []
    total = float(problem.sizes.sum())
    for j, level in enumerate(levels):
        if not math.isfinite(level):
            continue
        sides = int(problem.lower[j] > 0) + int(problem.upper[j] < problem.size)
        typical = problem.size * float(problem.sizes @ variances[:, j]) / total
        if sides == 0 or typical <= 1e-9:
            continue
        a, b = _margin_line(float(level) / sides, typical)
        if problem.lower[j] > 0:
            rows.append(problem.posteriors[:, j] - b * variances[:, j])
            lows.append(float(problem.lower[j]) + a)
            highs.append(math.inf)
        if problem.upper[j] < problem.size:
            rows.append(problem.posteriors[:, j] + b * variances[:, j])
            lows.append(-math.inf)
            highs.append(float(problem.upper[j]) - a)
    if not rows:
        return problem
    return dataclasses.replace(
        problem,
        tight=np.vstack(rows),
        tight_lower=np.asarray(lows),
        tight_upper=np.asarray(highs),
    )


def _tighten(
    problem: _Problem, max_outside: float, deadline: float | None = None
) -> tuple[_Problem, NDArray[np.float64], bool]:
    """The tightest bands (per quota, on a ladder of levels) that still admit a panel.

    First every quota at ``max_outside``; when no panel meets them all, each quota alone
    finds the lowest level of ``max_outside * _OUTSIDE_STEPS`` that admits a panel, then
    all tightened quotas are loosened one step at a time until a panel exists (infinite
    level: the plain band, which is feasible by then).

    ``deadline`` (``limits.now()``, from ``max_seconds``): a level whose feasibility
    is not decided in time counts as infeasible, and once the deadline has passed no
    further level is tried (the quotas not reached keep their plain bands; if the levels
    found so far do not admit a panel either, every band is plain). The third value says
    whether the deadline cut the search short.
    """
    q = problem.lower.size
    levels = np.full(q, float(max_outside))
    candidate = _tightened(problem, levels)
    if candidate.decide(deadline=deadline):
        return candidate, levels, False

    def late() -> bool:
        return deadline is not None and limits.now() > deadline

    stopped = False
    ladder = [max_outside * step for step in _OUTSIDE_STEPS] + [math.inf]
    steps = np.full(q, len(ladder) - 1)
    for j in range(q):
        for k, level in enumerate(ladder[:-1]):
            if late():
                stopped = True
                break
            trial = np.full(q, math.inf)
            trial[j] = level
            if _tightened(problem, trial).decide(deadline=deadline):
                steps[j] = k
                break
    while True:
        levels = np.array([ladder[k] for k in steps])
        if not np.isfinite(levels).any():
            return problem, levels, stopped
        if late():
            return problem, np.full(q, math.inf), True
        candidate = _tightened(problem, levels)
        if candidate.decide(deadline=deadline):
            return candidate, levels, stopped
        steps = np.minimum(steps + 1, len(ladder) - 1)


def _tightened_bands(
    problem: _Problem,
    posteriors: Sequence[ConditionPosterior],
    candidates: NDArray[np.intp],
    type_of: NDArray[np.intp],
    quotas: Sequence[Quota],
    size: int,
    options: PanelOptions,
    deadline: float | None,
) -> tuple[_Problem, NDArray[np.float64], bool, list[str]]:
    """The ``max_outside`` stage: the problem with tightened bands, each quota's level,
    whether the safety net cut the search, and the notes that say so."""
    max_outside, max_seconds = options.max_outside, options.max_seconds
    levels = np.full(len(quotas), math.inf)
    notes: list[str] = []
    if max_outside is None or not quotas:
        return problem, levels, False, notes
    problem = dataclasses.replace(
        problem,
        shared=_shared_variances(posteriors, candidates, type_of, problem.sizes, int(size)),
    )
    problem, levels, cut = _tighten(problem, float(max_outside), deadline)
    if cut:
        notes.append(
            Note(
                gettext_noop(
                    "the search for tightened bands stopped after "
                    "max_seconds=%(max_seconds)s; the quotas not reached by then keep "
                    "their plain bands"
                ),
                max_seconds=f"{max_seconds:g}",
            )
        )
    for quota, level in zip(quotas, levels, strict=True):
        if level != max_outside:
            if math.isfinite(level):
                notes.append(
                    Note(
                        gettext_noop(
                            "%(quota)s: no panel keeps the expected seats outside the band "
                            "below %(max_outside)s; bound %(level)s used"
                        ),
                        quota=quota.label,
                        max_outside=f"{max_outside:g}",
                        level=f"{level:g}",
                    )
                )
            else:
                notes.append(
                    Note(
                        gettext_noop(
                            "%(quota)s: no panel keeps the expected seats outside the band "
                            "below %(max_outside)s; plain band used"
                        ),
                        quota=quota.label,
                        max_outside=f"{max_outside:g}",
                    )
                )
    return problem, levels, cut, notes
