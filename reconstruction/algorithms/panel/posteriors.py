"""Posteriors of the quota categories, candidate types and the intervals of counts.

Pure module: numpy only.

Every candidate's posterior probability of each quota category (and of eligibility)
comes from the joint reconstruction of 001_28af1923c784b480.txt (Figure 2's EM over the
product channel, as Section IV-B's participant sampling uses it;
:func:`~reconstruction.algorithms.queries.condition_posteriors`). Candidates with equal
(or, merged, near-equal) posterior vectors form one type (:func:`_merge_types`), and
:func:`_count_interval` gives the expected true count of a set of rows with a 95%
interval (Poisson-binomial variance plus the replicates', the law of total variance).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reconstruction.algorithms.panel.bands import _expected_outside
from reconstruction.algorithms.panel.results import PanelOptions, Quota, QuotaOutcome
from reconstruction.algorithms.queries import (
    Attribute,
    Condition,
    ConditionPosterior,
    condition_posteriors,
    table_size,
)

_Z95 = 1.959963984540054


# Posterior vectors that agree to this many decimals form one type.
_TYPE_DECIMALS = 10


def _count_interval(
    values: NDArray[np.float64], replicates: NDArray[np.float64], upper: float
) -> tuple[float, float, float]:
    """Expected true count of a set of rows and a 95% interval for the realised count.

    ``Var = sum p (1 - p)`` (the count given the posteriors is Poisson-binomial) ``+
    Var_boot(sum p)`` (the posteriors' own uncertainty): the law of total variance.
    """
    expected = float(values.sum())
    variance = float((values * (1.0 - values)).sum())
    if replicates.shape[0] > 1:
        variance += float(replicates.sum(axis=1).var(ddof=1))
    half = _Z95 * math.sqrt(max(variance, 0.0))
    return expected, max(0.0, expected - half), min(upper, expected + half)


def _merge_types(
    matrix: NDArray[np.float64], spread: float
) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Group candidates into types whose posteriors differ by at most ``spread`` per quota.

    Candidates with equal posterior vectors (the same reported cells) are one type, as in
    Flanigan et al.'s symmetry argument. With ``spread > 0``, those exact types are also
    merged by leader clustering (in lexicographic order, each joins the nearest leader
    within ``spread / 2`` in every quota, else leads a new type), which matters for
    continuous attributes: every noisy age has its own posterior of every age band.
    Returns ``type_of`` per candidate, the members' mean, smallest and largest posterior
    per type and quota. The optimisation imposes a band's lower edge on the smallest and
    its upper edge on the largest (:class:`_Problem`), so a merged type can cost some
    fairness but never a band: any members filling a panel's seats keep its expected
    counts within the bands.
    """
    n, q = matrix.shape
    if q == 0:
        zero = np.zeros((1, 0))
        return np.zeros(n, dtype=np.intp), zero, zero, zero
    keys = np.round(matrix, _TYPE_DECIMALS)
    unique, exact = np.unique(keys, axis=0, return_inverse=True)
    exact = np.asarray(exact, dtype=np.intp).ravel()
    if spread > 0 and unique.shape[0] > 1:
        radius = spread / 2.0
        leaders = np.empty_like(unique)
        group = np.empty(unique.shape[0], dtype=np.intp)
        count = 0
        for u in range(unique.shape[0]):  # np.unique's rows are in lexicographic order
            if count:
                distance = np.abs(leaders[:count] - unique[u]).max(axis=1)
                nearest = int(np.argmin(distance))
                if distance[nearest] <= radius:
                    group[u] = nearest
                    continue
            leaders[count] = unique[u]
            group[u] = count
            count += 1
        type_of = group[exact]
    else:
        type_of = exact
    t = int(type_of.max()) + 1
    sizes = np.bincount(type_of, minlength=t).astype(np.float64)
    mean = np.stack(
        [np.bincount(type_of, weights=matrix[:, j], minlength=t) / sizes for j in range(q)],
        axis=1,
    )
    least = np.full((t, q), np.inf)
    most = np.full((t, q), -np.inf)
    np.minimum.at(least, type_of, matrix)
    np.maximum.at(most, type_of, matrix)
    return type_of, mean, least, most


@dataclass(frozen=True)
class _Pool:
    """The eligible candidates and their posteriors of every quota category.

    ``posteriors[j]`` is quota ``j``'s :class:`ConditionPosterior` over the whole table
    and ``matrix[i, j]`` its value for the ``i``-th candidate (rows of ``candidates``).
    """

    candidates: NDArray[np.intp]
    eligibility: ConditionPosterior | None
    posteriors: list[ConditionPosterior]
    matrix: NDArray[np.float64]
    estimate: float
    ci95: tuple[float, float]


def _candidate_pool(
    table: Mapping[str, Attribute],
    size: int,
    quotas: Sequence[Quota],
    where: Sequence[Condition],
    options: PanelOptions,
    generator: np.random.Generator,
) -> _Pool:
    """The posteriors stage: eligibility, the pool and the quota categories' posteriors.

    One reconstruction (and bootstrap) per joint model, shared by the conditions on it
    (the bands of one attribute), as :func:`condition_posteriors` says. The quotas'
    posteriors also condition on the reports that decide eligibility (``given``):
    candidates are chosen by those reports, and a category that goes with them would
    otherwise take the whole table's prior.
    """
    n = table_size(table)
    wheres = ([list(where)] if where else []) + [list(q.where) for q in quotas]
    shared = condition_posteriors(
        table,
        wheres,
        n_boot=options.n_boot,
        tol=options.tol,
        max_iter=options.max_iter,
        rng=generator,
        given=where,
    )
    eligibility: ConditionPosterior | None
    if where:
        eligibility = shared[0]
        threshold = options.eligibility_threshold
        candidates = np.flatnonzero(eligibility.values >= threshold).astype(np.intp)
        estimate, ci95 = eligibility.estimate, eligibility.ci95
    else:
        eligibility = None
        candidates = np.arange(n, dtype=np.intp)
        estimate, ci95 = float(n), (float(n), float(n))
    reserves = options.reserves
    if candidates.size < size + reserves:
        raise ValueError(
            f"a panel of {size} with {reserves} reserves is larger than the eligible pool "
            f"of {candidates.size} candidates"
        )
    posteriors = shared[1:] if where else shared
    matrix = (
        np.column_stack([p.values[candidates] for p in posteriors])
        if quotas
        else np.zeros((candidates.size, 0))
    )
    return _Pool(candidates, eligibility, posteriors, matrix, estimate, ci95)


def _quota_outcomes(
    quotas: Sequence[Quota],
    pool: _Pool,
    rows: NDArray[np.intp],
    levels: NDArray[np.float64],
    size: int,
) -> list[QuotaOutcome]:
    """What the drawn panel (table ``rows``) and the pool hold for each quota."""
    candidates = pool.candidates
    outcomes: list[QuotaOutcome] = []
    for quota, post, level in zip(quotas, pool.posteriors, levels, strict=True):
        values = post.values
        expected, low, high = _count_interval(values[rows], post.replicates(rows), float(size))
        # The realised count's variance as the interval takes it: Bernoulli plus the
        # posteriors' own (replicate) variance, the law of total variance.
        variance = float((values[rows] * (1.0 - values[rows])).sum())
        replicates = post.replicates(rows)
        if replicates.shape[0] > 1:
            variance += float(replicates.sum(axis=1).var(ddof=1))
        pool_expected, pool_low, pool_high = _count_interval(
            values[candidates], post.replicates(candidates), float(candidates.size)
        )
        outcomes.append(
            QuotaOutcome(
                quota.label,
                quota.min,
                quota.max,
                expected,
                (low, high),
                pool_expected,
                (pool_low, pool_high),
                _expected_outside(expected, variance, quota.min, quota.max, int(size)),
                float(level),
            )
        )
    return outcomes
