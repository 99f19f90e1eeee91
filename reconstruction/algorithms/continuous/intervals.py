"""Intervals of a continuous attribute and the bins its reported values fall in.

Pure module: numpy and scipy only.

001_28af1923c784b480.txt, Section III-B2 cuts the declared range into intervals (the
complexity reduction of its [10]); Section IV-A1 asks for intervals that begin and end
at a query's thresholds: :func:`interval_edges` always includes them, with a count of
intervals from ``n`` and the noise's scale (:func:`interval_count`). Reported values are
counted in :func:`reported_edges` bins (outer bins open) by :func:`bin_values`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms import NoiseModel

_MIN_INTERVALS = 20

_MAX_INTERVALS = 40


def _check_range(low: float, high: float) -> tuple[float, float]:
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        raise ValueError(f"low and high must be numbers, got {low!r}, {high!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"the declared range needs finite low < high, got [{low!r}, {high!r}]")
    return lo, hi


def noise_scale(noise: NoiseModel) -> float | None:
    """Standard deviation of an additive noise model, ``None`` when it has none.

    Retention replacement is not additive; its resolution is not limited by a noise
    width, so it returns ``None``.
    """
    std = getattr(noise, "std", None)
    if std is None:
        return None
    return float(std)


def interval_count(
    low: float, high: float, *, n: int | None = None, noise_scale: float | None = None
) -> int:
    """Default number of intervals over ``[low, high]``.

    Rice's rule ``ceil(2 n^(1/3))`` for ``n`` reports, capped by the resolution the noise
    allows (intervals no narrower than half the noise's standard deviation), then clipped
    to 20..40 intervals.

    Parameters
    ----------
    low, high : float
        The declared range.
    n : int, optional
        Number of reports (no cap from ``n`` when omitted).
    noise_scale : float, optional
        Standard deviation of the noise (no cap from the noise when omitted or 0).

    Returns
    -------
    int
        Between 20 and 40.
    """
    lo, hi = _check_range(low, high)
    count = _MAX_INTERVALS
    if n is not None:
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        count = min(count, math.ceil(2.0 * max(n, 1) ** (1.0 / 3.0)))
    if noise_scale is not None and noise_scale > 0:
        count = min(count, math.ceil((hi - lo) / (0.5 * noise_scale)))
    return int(min(max(count, _MIN_INTERVALS), _MAX_INTERVALS))


def interval_edges(
    low: float,
    high: float,
    *,
    thresholds: Sequence[float] | NDArray[np.float64] = (),
    n_intervals: int | None = None,
    n: int | None = None,
    noise_scale: float | None = None,
) -> NDArray[np.float64]:
    """Edges of intervals over ``[low, high]`` that always include the given thresholds.

    001_28af1923c784b480.txt, Section IV-A1: "we can choose intervals in a way that
    their end/begin in points t1 and t2 ... The number of intervals need not to be limited
    to 3". Starts from ``n_intervals`` equal intervals (default :func:`interval_count`),
    adds every threshold strictly inside the range as an edge and drops the regular edges
    closer than half an interval to a threshold, so no sliver intervals appear.

    Parameters
    ----------
    low, high : float
        The declared range.
    thresholds : sequence of float
        Points that must be edges; those outside ``(low, high)`` are ignored (a condition
        there selects all or nothing).
    n_intervals : int, optional
        Number of regular intervals before the thresholds are added.
    n, noise_scale : optional
        Passed to :func:`interval_count` when ``n_intervals`` is omitted.

    Returns
    -------
    ndarray of shape (m + 1,)
        Strictly increasing edges, ``edges[0] == low``, ``edges[-1] == high``.
    """
    lo, hi = _check_range(low, high)
    cuts = np.asarray(thresholds, dtype=np.float64).ravel()
    if not np.all(np.isfinite(cuts)):
        raise ValueError("thresholds must be finite numbers")
    if n_intervals is None:
        n_intervals = interval_count(lo, hi, n=n, noise_scale=noise_scale)
    if n_intervals < 1:
        raise ValueError(f"n_intervals must be >= 1, got {n_intervals}")
    regular = np.linspace(lo, hi, int(n_intervals) + 1)
    cuts = np.unique(cuts[(cuts > lo) & (cuts < hi)])
    if cuts.size:
        width = (hi - lo) / n_intervals
        inner = regular[1:-1]
        distance = np.min(np.abs(inner[:, None] - cuts[None, :]), axis=1)
        regular = np.concatenate([[lo], inner[distance >= 0.5 * width], [hi]])
    return np.asarray(np.unique(np.concatenate([regular, cuts])), dtype=np.float64)


def reported_edges(
    edges: ArrayLike, noise: NoiseModel, low: float, high: float
) -> NDArray[np.float64]:
    """Bins for the reported values: the true edges, extended over the reported range.

    The true edges are kept inside ``[low, high]``; beyond them, bins of the median true
    width continue up to ``noise.reported_bounds(low, high)`` (noise pushes values out of
    the declared range). The outer bins count as open (``interval_channel`` convention).
    """
    true_edges = np.asarray(edges, dtype=np.float64)
    lo, hi = noise.reported_bounds(low, high)
    width = float(np.median(np.diff(true_edges)))
    below = math.ceil((true_edges[0] - lo) / width - 1e-9) if lo < true_edges[0] else 0
    above = math.ceil((hi - true_edges[-1]) / width - 1e-9) if hi > true_edges[-1] else 0
    left = true_edges[0] - width * np.arange(below, 0, -1)
    right = true_edges[-1] + width * np.arange(1, above + 1)
    return np.asarray(np.concatenate([left, true_edges, right]), dtype=np.float64)


def bin_values(values: ArrayLike, edges: ArrayLike) -> NDArray[np.intp]:
    """Bin index of each value; bins are ``[e_i, e_{i+1})`` and the outer two are open."""
    array = np.asarray(values, dtype=np.float64)
    inner = np.asarray(edges, dtype=np.float64)[1:-1]
    return np.asarray(np.searchsorted(inner, array, side="right"), dtype=np.intp)
