"""Assigning reconstructed values to samples (ARVeSNA and the sorted assignment).

Pure module: numpy only. Per-participant work is vectorised; the only Python loops run
over categories or intervals, never over people.

* :func:`arvesna`: 001_28af1923c784b480.txt, Section III-B7, for binary, nominal and
  ordinal attributes.
* :func:`sorted_assignment`: 001_28af1923c784b480.txt, Section III-B4 (from [10]), for
  continuous attributes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["arvesna", "arvesna_transfers", "round_counts", "sorted_assignment"]


def round_counts(counts: ArrayLike, total: int) -> NDArray[np.int64]:
    """Round non-negative estimated counts to integers that sum to ``total``.

    Largest-remainder rounding of ``counts`` rescaled to ``total`` (ties go to the lower
    index), so the assignment algorithms can hand out whole samples.

    Raises
    ------
    ValueError
        Negative or non-finite counts, a negative total, or all-zero counts with a
        positive total.
    """
    values = np.asarray(counts, dtype=np.float64)
    if values.ndim != 1 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("counts must be a 1-D array of finite non-negative numbers")
    if total < 0:
        raise ValueError(f"total must be >= 0, got {total}")
    if total == 0:
        return np.zeros(values.size, dtype=np.int64)
    mass = values.sum()
    if mass <= 0:
        raise ValueError("counts are all zero but the total is positive")
    scaled = (values / mass) * total
    floors = np.floor(scaled).astype(np.int64)
    short = int(total - floors.sum())
    if short > 0:
        order = np.argsort(-(scaled - floors), kind="stable")
        floors[order[:short]] += 1
    return np.asarray(floors, dtype=np.int64)


def arvesna_transfers(
    reported_counts: ArrayLike, target_counts: ArrayLike, channel: ArrayLike
) -> NDArray[np.int64]:
    """How many samples reported as ``i`` ARVeSNA reassigns to ``j``.

    001_28af1923c784b480.txt, Section III-B7: with ``delta(v_i) = n_Z(v_i) - n_X(v_i)``,
    a sample of a value with ``delta > 0`` is given the value ``v_j`` with ``delta < 0``
    that has the highest probability ``Pr(v_j -> v_i)`` of being distorted to ``v_i``,
    until every ``delta`` is 0. 001 does not fix the order in which surplus values are
    visited; this implements one admissible order, not the only one: all (surplus ``i``,
    deficit ``j``) pairs are visited globally by decreasing
    ``C[j, i] = Pr(reported i | true j)``, moving ``min(delta_i, -delta_j)`` at once (a
    loop over category pairs, not over people). Other admissible orders (e.g. taking
    surplus values one after the other) can give different transfers and a different
    share of correctly assigned samples (a counter-example in the issue tracker: 0.7
    against 0.4), so results are those of this order.

    Parameters
    ----------
    reported_counts : array_like of int, shape (k,)
        ``n_Z``: samples per reported value.
    target_counts : array_like of int, shape (k,)
        ``n_X``: reconstructed samples per value, same total (see :func:`round_counts`).
    channel : array_like of shape (k, k)
        ``C[i, j] = Pr(reported j | true i)``.

    Returns
    -------
    ndarray of int64, shape (k, k)
        ``M[i, j]``: samples reported ``i`` that are assigned ``j`` (``i != j``).
    """
    reported = np.asarray(reported_counts, dtype=np.int64)
    target = np.asarray(target_counts, dtype=np.int64)
    matrix = np.asarray(channel, dtype=np.float64)
    k = reported.size
    if reported.shape != (k,) or target.shape != (k,) or matrix.shape != (k, k):
        raise ValueError(
            f"need reported_counts and target_counts of shape (k,) and a (k, k) channel, got "
            f"{reported.shape}, {target.shape}, {matrix.shape}"
        )
    if np.any(reported < 0) or np.any(target < 0):
        raise ValueError("counts must be non-negative")
    if reported.sum() != target.sum():
        raise ValueError(
            f"reported_counts sum to {reported.sum()} but target_counts to {target.sum()}"
        )
    delta = reported - target
    moves = np.zeros((k, k), dtype=np.int64)
    surplus = np.flatnonzero(delta > 0)
    deficit = np.flatnonzero(delta < 0)
    if surplus.size == 0:
        return moves
    # Pairs (i, j) by decreasing Pr(v_j -> v_i) = C[j, i]; ties by (i, j) for determinism.
    grid_src, grid_dst = np.meshgrid(surplus, deficit, indexing="ij")
    src, dst = grid_src.ravel(), grid_dst.ravel()
    order = np.lexsort((dst, src, -matrix[dst, src]))
    for i, j in zip(src[order].tolist(), dst[order].tolist(), strict=True):
        amount = min(int(delta[i]), int(-delta[j]))
        if amount > 0:
            moves[i, j] += amount
            delta[i] -= amount
            delta[j] += amount
    return moves


def arvesna(
    reported_codes: ArrayLike,
    estimated_counts: ArrayLike,
    channel: ArrayLike,
    *,
    rng: np.random.Generator,
) -> NDArray[np.intp]:
    """Assign reconstructed values to samples of a nominal attribute (ARVeSNA).

    001_28af1923c784b480.txt, Section III-B7. The estimated counts are rounded to whole
    samples (:func:`round_counts`), the transfers between values come from
    :func:`arvesna_transfers`, and the samples that change value are drawn at random
    (through ``rng``) from those reported with the surplus value. Afterwards the samples
    carry values "assigned according to an original (reconstructed) probability
    distribution".

    Parameters
    ----------
    reported_codes : array_like of int, shape (n,)
        Reported categories ``0..k-1``.
    estimated_counts : array_like of shape (k,)
        Reconstructed counts (e.g. ``em_as(...).counts``); rescaled to ``n``.
    channel : array_like of shape (k, k)
        The channel the codes went through.
    rng : numpy.random.Generator
        Chooses which samples change value; the same seed gives the same assignment.

    Returns
    -------
    ndarray of intp, shape (n,)
        Assigned categories; ``bincount`` equals the rounded estimate.

    Raises
    ------
    ValueError
        Codes outside ``0..k-1``, mismatched shapes, negative counts.
    """
    codes = np.asarray(reported_codes)
    estimate = np.asarray(estimated_counts, dtype=np.float64)
    if codes.ndim != 1:
        raise ValueError(f"reported_codes must be 1-D, got shape {codes.shape}")
    if estimate.ndim != 1:
        raise ValueError(f"estimated_counts must be 1-D, got shape {estimate.shape}")
    k = estimate.size
    if codes.size and (
        not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() >= k
    ):
        raise ValueError(f"reported_codes must be integers in 0..{k - 1}")
    n = codes.size
    reported = np.bincount(codes, minlength=k).astype(np.int64)
    target = round_counts(estimate, n)
    moves = arvesna_transfers(reported, target, channel)
    assigned = np.array(codes, dtype=np.intp, copy=True)
    for i in np.flatnonzero(moves.sum(axis=1)).tolist():
        members = np.flatnonzero(codes == i)
        leaving = int(moves[i].sum())
        chosen = members[rng.choice(members.size, size=leaving, replace=False)]
        assigned[chosen] = np.repeat(np.arange(k, dtype=np.intp), moves[i])
    return assigned


def sorted_assignment(
    values: ArrayLike,
    interval_counts: ArrayLike,
    *,
    rng: np.random.Generator | None = None,
) -> NDArray[np.intp]:
    """Assign samples of a continuous attribute to reconstructed intervals by rank.

    001_28af1923c784b480.txt, Section III-B4: samples are sorted in ascending order and
    the first ``N(I_1)`` go to the first interval, the next ``N(I_2)`` to the second, and
    so on. ``N`` is rounded to whole samples (:func:`round_counts`). Ties between equal
    reported values are broken at random through ``rng`` (deterministically by position
    when ``rng`` is omitted).

    Parameters
    ----------
    values : array_like of shape (n,)
        Reported values.
    interval_counts : array_like of shape (m,)
        Reconstructed counts per interval, in ascending order of the intervals.
    rng : numpy.random.Generator, optional

    Returns
    -------
    ndarray of intp, shape (n,)
        Interval index ``0..m-1`` of each sample.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise ValueError("values must be a 1-D array of finite numbers")
    n = array.size
    sizes = round_counts(interval_counts, n)
    if rng is None:
        order = np.argsort(array, kind="stable")
    else:
        shuffle = rng.permutation(n)
        order = shuffle[np.argsort(array[shuffle], kind="stable")]
    assigned = np.empty(n, dtype=np.intp)
    assigned[order] = np.repeat(np.arange(sizes.size, dtype=np.intp), sizes)
    return assigned
