"""95% intervals for the discrete estimators.

Two kinds of interval:

* ``linear_ci``: for the linear estimators (EQ, NStoPS) the covariance of
  ``t_hat = n C^{-T} r / n`` is exact given the multinomial covariance of the reported
  counts, so a normal (Wald) interval is used.
* ``bootstrap_ci``: a parametric bootstrap on the counts for the non-linear estimators
  (EM/AS, NStoPS-I/II, NStoPS-MLE). Reported count vectors are drawn from
  ``Multinomial(n, p_hat C)``, the estimator is run on the whole ``(B, k)`` batch at once
  (vectorised over replicates), and percentile intervals are taken
  (:func:`percentile_interval`, the rule every bootstrap percentile interval shares).
* ``boundary_ci``: for the maximum-likelihood estimators (EM/AS, NStoPS-I,
  NStoPS-MLE) on an invertible square channel with a known channel. Where the
  unconstrained solution ``C^{-T} r`` lies inside the simplex it *is* the
  maximum-likelihood estimate, and it is unbiased with the exact covariance of
  ``linear_ci``; its Wald interval, clipped to ``[0, n]``, therefore covers the truth as
  often as the Wald interval does, also for a category at or near 0 where percentile
  bootstraps of the boundary estimate collapse or under-cover (a 2% category: 87.5%).
  The upper bound is never below :func:`likelihood_upper_bounds`, so a category
  estimated at 0 keeps an honest upper bound, and the interval always contains the
  estimate. It needs no replicates, so it costs O(k^3).
* ``calibrated_bootstrap_ci``: the same when rows of the channel were themselves
  estimated from a calibration sample of ``(true, reported)`` pairs, as the manually
  selected negative survey of 000_1b7f9a8e281301b4.txt, Section 4.1: each replicate
  also redraws those rows from the pairs' multinomial, so the interval carries the
  calibration's uncertainty as well as the survey's.

Randomness comes only from ``rng``; by default a generator with a fixed seed is used, so
the same input always gives the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from privacy.mechanisms.messages import InputError, gettext_noop

__all__ = [
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "PERCENTILE_RULE",
    "bootstrap_ci",
    "boundary_ci",
    "calibrated_bootstrap_ci",
    "calibration_sizes",
    "default_rng",
    "likelihood_upper_bounds",
    "linear_ci",
    "percentile_interval",
    "resample_channels",
    "simulate_reported_counts",
]

DEFAULT_SEED = 20_160_418
DEFAULT_REPLICATES = 1000

PercentileRule = Literal["interpolated", "order"]
#: The product's bootstrap percentile rule (:func:`percentile_interval`).
PERCENTILE_RULE: PercentileRule = "interpolated"

BatchEstimator = Callable[[NDArray[np.float64]], NDArray[np.float64]]
ChannelBatchEstimator = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


def default_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Return ``rng`` or, if None, a generator seeded with :data:`DEFAULT_SEED`."""
    if rng is None:
        return np.random.default_rng(DEFAULT_SEED)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def percentile_interval(
    replicates: ArrayLike,
    level: float = 0.95,
    *,
    axis: int = 0,
    rule: PercentileRule | None = None,
) -> NDArray[np.float64]:
    """Bootstrap percentile interval of ``level`` from ``B`` replicates, along ``axis``.

    Every bootstrap percentile interval of the product is taken here (counts, means,
    distributions, the discrete estimators' parametric bootstraps, panel posteriors'
    ``ci95``); only the model-averaged count's weighted replicates have their own rule
    (``queries._weighted_percentiles``). Two rules, ``alpha = (1 - level) / 2``:

    * ``"interpolated"`` (the product's, :data:`PERCENTILE_RULE`): the ``alpha`` and
      ``1 - alpha`` sample quantiles interpolated linearly at position ``1 + (B-1) p``
      (Hyndman and Fan 1996, The American Statistician 50(4), 361-365, definition 7;
      numpy's default).
    * ``"order"``: the ``(B+1) alpha``-th and ``(B+1)(1 - alpha)``-th order statistics
      (Davison and Hinkley 1997, *Bootstrap Methods and their Application*, Cambridge
      University Press, Section 5.2: the ``k``-th smallest of ``B`` replicates estimates
      the ``k / (B+1)`` quantile; R's ``boot`` package, ``norm.inter``, does the same). When
      ``(B+1) alpha`` is not whole, ``k = floor((B+1) alpha)`` and the bound is
      interpolated between the ``k``-th and ``(k+1)``-th order statistics on the normal
      quantile scale (their equation 5.8)::

          t*_(k) + (z_alpha - z_{k/(B+1)}) / (z_{(k+1)/(B+1)} - z_{k/(B+1)}) (t*_(k+1) - t*_(k))

      with ``z_p = Phi^{-1}(p)``; below ``(B+1) alpha = 1`` (fewer than 39 replicates at
      95%) the extreme replicate is taken.

    ``"order"`` sits about one order statistic outside ``"interpolated"`` on each side
    (about ``2 / (B+1)`` more coverage when the bootstrap distribution is right; intervals
    about 4% wider at ``B = 200``). It is not the product's rule: measured on the same
    replicates (2026-11-25, README "The bootstrap percentile rule, measured"), it lifted
    whole-year ages under Laplace noise into 93-97% (91.6% -> 94.4% at eps 2, B = 100)
    but pushed intervals that already cover often above 97% (staircase ages at eps 4
    96.9% -> 97.3%; bench_accuracy's n = 30,000 real-valued control 96.7% -> 97.2% over
    900 surveys): those over-cover because the participant bootstrap holds the variance
    of the table's true count, the Laplace ones under-cover from the reconstruction's
    bias, and one percentile rule cannot correct both.

    Parameters
    ----------
    replicates : array_like
        Bootstrap replicates along ``axis`` (callers drop non-finite ones first).
    level : float, default 0.95
    axis : int, default 0
    rule : {"interpolated", "order"}, optional
        Defaults to :data:`PERCENTILE_RULE`, read at each call.

    Returns
    -------
    ndarray of shape ``replicates.shape`` without ``axis``, plus a last axis of 2
        Lower and upper bounds. A slice holding NaN, or no replicates, gives NaN bounds.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if rule is None:
        rule = PERCENTILE_RULE
    if rule not in ("interpolated", "order"):
        raise ValueError(f"rule must be 'interpolated' or 'order', got {rule!r}")
    values = np.moveaxis(np.asarray(replicates, dtype=np.float64), axis, 0)
    count = values.shape[0]
    if count == 0:
        return np.full((*values.shape[1:], 2), np.nan)
    alpha = round(0.5 * (1.0 - level), 12)  # 0.025, not 0.025000000000000022
    if rule == "interpolated":
        low, high = np.percentile(values, [100.0 * alpha, 100.0 - 100.0 * alpha], axis=0)
        return np.asarray(np.stack([low, high], axis=-1), dtype=np.float64)
    ordered = np.sort(values, axis=0)
    bounds = [_order_statistic(ordered, p) for p in (alpha, 1.0 - alpha)]
    result = np.stack(bounds, axis=-1)
    missing = np.isnan(values).any(axis=0)
    result[missing] = np.nan
    return np.asarray(result, dtype=np.float64)


def _order_statistic(ordered: NDArray[np.float64], p: float) -> NDArray[np.float64]:
    """The ``(B+1) p``-th order statistic of sorted ``ordered`` (axis 0), interpolated on
    the normal scale between neighbours (Davison and Hinkley 1997, eq. 5.8)."""
    count = ordered.shape[0]
    position = (count + 1) * p
    k = math.floor(position + 1e-9)
    if k < 1:
        return np.asarray(ordered[0], dtype=np.float64)
    if k >= count:
        return np.asarray(ordered[count - 1], dtype=np.float64)
    below, above = ordered[k - 1], ordered[k]
    if abs(position - k) < 1e-9:
        return np.asarray(below, dtype=np.float64)
    z_k, z_next = stats.norm.ppf([k / (count + 1), (k + 1) / (count + 1)])
    share = (stats.norm.ppf(p) - z_k) / (z_next - z_k)
    return np.asarray(below + share * (above - below), dtype=np.float64)


def simulate_reported_counts(
    n: int,
    proportions: NDArray[np.float64],
    channel: NDArray[np.float64],
    *,
    replicates: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Draw ``replicates`` reported count vectors from ``Multinomial(n, proportions @ C)``."""
    reported = np.clip(proportions @ channel, 0.0, None)
    reported = reported / reported.sum()
    return rng.multinomial(n, reported, size=replicates).astype(np.float64)


def bootstrap_ci(
    counts: NDArray[np.float64],
    channel: NDArray[np.float64],
    proportions: NDArray[np.float64],
    estimator: BatchEstimator,
    *,
    replicates: int = DEFAULT_REPLICATES,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
) -> NDArray[np.float64]:
    """Parametric-bootstrap percentile interval for the estimated true counts.

    Parameters
    ----------
    counts : ndarray of shape (k_reported,)
        Observed reported counts (their total ``n`` is rounded to an integer for sampling).
    channel : ndarray of shape (k_true, k_reported)
        The mechanism's channel.
    proportions : ndarray of shape (k_true,)
        The fitted true distribution ``p_hat``; replicates are drawn from ``p_hat C``.
    estimator : callable
        Maps a ``(B, k_reported)`` batch of count vectors to the ``(B, k_true)`` batch of
        estimated true counts, vectorised over the batch.
    replicates : int, default 1000
    level : float, default 0.95
    rng : numpy.random.Generator, optional
        Defaults to a generator with a fixed seed (:data:`DEFAULT_SEED`).

    Returns
    -------
    ndarray of shape (k_true, 2)
        Lower and upper bounds, scaled to the observed total ``sum(counts)``.
    """
    if replicates < 2:
        raise ValueError(f"replicates must be at least 2, got {replicates}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    generator = default_rng(rng)
    total = float(counts.sum())
    n = max(round(total), 1)
    batch = simulate_reported_counts(n, proportions, channel, replicates=replicates, rng=generator)
    estimates = estimator(batch) * (total / n)
    return percentile_interval(estimates, level)


def calibration_sizes(pairs: ArrayLike, k: int, *, negative: bool) -> NDArray[np.int64]:
    """Number of calibration pairs behind each estimated row of a channel.

    Parameters
    ----------
    pairs : array_like of shape (m, 2)
        ``(true, reported)`` integer code pairs of the calibration sample (000, Section
        4.1); ``None``-like empty input gives zeros.
    k : int
        Number of true categories.
    negative : bool
        For a negative survey the pairs on the diagonal are discarded before a row is
        estimated (000, Section 4.2: ``q_ii`` revised to 0), so they are not counted.

    Returns
    -------
    ndarray of int64, shape (k,)
        0 for a row that was not estimated (assumed known, e.g. the uniform negative row).
    """
    array = np.asarray(pairs)
    if array.size == 0:
        return np.zeros(k, dtype=np.int64)
    if array.ndim != 2 or array.shape[1] != 2:
        raise InputError(
            gettext_noop("calibration pairs must have shape (m, 2), got %(shape)s"),
            shape=str(array.shape),
        )
    if not np.issubdtype(array.dtype, np.integer):
        if not np.all(array == np.round(array)):
            raise InputError(gettext_noop("calibration pairs must be integer category codes"))
        array = array.astype(np.int64)
    if array.min() < 0 or array.max() >= k:
        raise InputError(gettext_noop("calibration pairs must lie in 0..%(last)s"), last=k - 1)
    if negative:
        array = array[array[:, 0] != array[:, 1]]
    return np.asarray(np.bincount(array[:, 0], minlength=k), dtype=np.int64)


def resample_channels(
    channel: NDArray[np.float64],
    sizes: NDArray[np.int64],
    *,
    replicates: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Channels as another calibration sample of the same sizes could have estimated them.

    Row ``i`` with ``sizes[i] = m_i > 0`` pairs was estimated as the empirical
    distribution of ``m_i`` reported categories; a replicate redraws it as
    ``Multinomial(m_i, channel[i]) / m_i`` (the parametric bootstrap of the calibration;
    with ``channel`` the empirical rows this is resampling the pairs within each row).
    Rows with no pairs are kept as they are.

    Returns
    -------
    ndarray of shape (replicates, k_true, k_reported)
    """
    matrix = np.asarray(channel, dtype=np.float64)
    out = np.broadcast_to(matrix, (replicates, *matrix.shape)).copy()
    for row in np.flatnonzero(sizes > 0):
        m = int(sizes[row])
        probabilities = np.clip(matrix[row], 0.0, None)
        draws = rng.multinomial(m, probabilities / probabilities.sum(), size=replicates)
        out[:, row, :] = draws / m
    return out


def calibrated_bootstrap_ci(
    counts: NDArray[np.float64],
    channel: NDArray[np.float64],
    proportions: NDArray[np.float64],
    estimator: ChannelBatchEstimator,
    *,
    sizes: NDArray[np.int64],
    replicates: int = DEFAULT_REPLICATES,
    level: float = 0.95,
    rng: np.random.Generator | None = None,
) -> NDArray[np.float64]:
    """Percentile interval that includes the uncertainty of a calibrated channel.

    000_1b7f9a8e281301b4.txt, Section 4.1 estimates rows of ``Q`` from a paired
    calibration sample of 50-100 participants per category; the estimate then inherits
    that sample's error, which :func:`bootstrap_ci` (channel taken as known) leaves out.
    Each replicate here mimics both samples around the fitted model: reported counts
    ``~ Multinomial(n, p_hat C)`` as in :func:`bootstrap_ci`, and a channel re-estimated
    from a fresh calibration sample of the same sizes (:func:`resample_channels`); the
    estimator is run on each (counts, channel) pair, vectorised over replicates.

    Parameters
    ----------
    counts : ndarray of shape (k_reported,)
    channel : ndarray of shape (k_true, k_reported)
        The channel the estimate used (calibrated rows as estimated).
    proportions : ndarray of shape (k_true,)
        The fitted true distribution ``p_hat``.
    estimator : callable
        Maps ``(B, k_reported)`` count vectors and ``(B, k_true, k_reported)`` channels to
        the ``(B, k_true)`` estimated true counts.
    sizes : ndarray of int, shape (k_true,)
        Calibration pairs behind each row (:func:`calibration_sizes`); 0 = known row.
    replicates, level, rng
        As :func:`bootstrap_ci`.

    Returns
    -------
    ndarray of shape (k_true, 2)
    """
    if replicates < 2:
        raise ValueError(f"replicates must be at least 2, got {replicates}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    sizes = np.asarray(sizes)
    if sizes.shape != (channel.shape[0],) or np.any(sizes < 0):
        raise ValueError(f"sizes must be {channel.shape[0]} non-negative pair counts")
    generator = default_rng(rng)
    total = float(counts.sum())
    n = max(round(total), 1)
    batch = simulate_reported_counts(n, proportions, channel, replicates=replicates, rng=generator)
    channels = resample_channels(channel, sizes, replicates=replicates, rng=generator)
    estimates = estimator(batch, channels) * (total / n)
    return percentile_interval(estimates, level)


def linear_ci(
    counts: NDArray[np.float64],
    inverse_transpose: NDArray[np.float64],
    *,
    level: float = 0.95,
) -> NDArray[np.float64]:
    """Normal interval for a linear estimator ``t_hat = A r`` with ``A = C^{-T}``.

    With ``r ~ Multinomial(n, q)`` and ``q`` estimated by ``r / n``,
    ``Cov(t_hat) = A n (diag(q) - q q^T) A^T`` exactly (001_28af1923c784b480.txt,
    Section III-B6, equation (4) solved for ``X``; 003_7fc4d61026dceaec.txt, formula (5)).

    Returns
    -------
    ndarray of shape (k, 2)
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = float(counts.sum())
    q = counts / n
    covariance_r = n * (np.diag(q) - np.outer(q, q))
    covariance = inverse_transpose @ covariance_r @ inverse_transpose.T
    sd = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    estimate = inverse_transpose @ counts
    z = float(stats.norm.ppf(0.5 + 0.5 * level))
    return np.stack([estimate - z * sd, estimate + z * sd], axis=1)


_CHI2_95_1DF = 3.841458820694124


def likelihood_upper_bounds(
    counts: NDArray[np.float64],
    channel: NDArray[np.float64],
    proportions: NDArray[np.float64],
    *,
    level: float = 0.95,
) -> NDArray[np.float64]:
    """Likelihood-ratio upper bound of each true count along one path: a floor for intervals.

    For category ``i`` the fitted distribution is moved towards category ``i``,
    ``p_s = (1 - s) p_hat + s e_i``, until the likelihood ratio statistic
    ``2 (l(p_hat) - l(p_s))`` reaches the chi-square(1) quantile of ``level``; the bound is
    ``n (p_s)_i``. The profile likelihood (which re-fits the other categories) falls
    more slowly along any path, so this bound lies inside the profile-likelihood
    interval: it is a lower bound for any honest upper bound. With the identity channel
    and a never-reported category it is ``-n log(1 - 1.92 / n) ~ 1.92`` participants
    (at least the count that would give a reported share of ``1/n``), where a
    parametric bootstrap from the estimate gives 0.

    Parameters
    ----------
    counts : ndarray of shape (k_reported,)
    channel : ndarray of shape (k_true, k_reported)
    proportions : ndarray of shape (k_true,)
        The maximum-likelihood estimate ``p_hat``.

    Returns
    -------
    ndarray of shape (k_true,)
        Bounds in counts (scaled to ``sum(counts)``).
    """
    total = float(counts.sum())
    k = channel.shape[0]
    critical = float(stats.chi2.ppf(level, 1)) if level != 0.95 else _CHI2_95_1DF
    seen = counts > 0

    def loglik(p: NDArray[np.float64]) -> NDArray[np.float64]:
        predicted = np.clip(p @ channel, 1e-300, None)
        return np.asarray(np.where(seen, counts * np.log(predicted), 0.0).sum(axis=-1))

    best = float(loglik(proportions[None, :])[0])
    eye = np.eye(k)
    low = np.zeros(k)
    high = np.ones(k)

    def at(s: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray((1.0 - s[:, None]) * proportions[None, :] + s[:, None] * eye)

    reaches = 2.0 * (best - loglik(at(high))) >= critical
    for _ in range(60):
        middle = 0.5 * (low + high)
        inside = 2.0 * (best - loglik(at(middle))) < critical
        low = np.where(inside, middle, low)
        high = np.where(inside, high, middle)
    s = np.where(reaches, low, 1.0)
    return np.asarray(total * ((1.0 - s) * proportions + s), dtype=np.float64)


def boundary_ci(
    counts: NDArray[np.float64],
    channel: NDArray[np.float64],
    estimate: NDArray[np.float64],
    *,
    level: float = 0.95,
) -> NDArray[np.float64]:
    """Interval of a maximum-likelihood estimate on an invertible square channel.

    The Wald interval of the unbiased linear solution ``C^{-T} r`` (:func:`linear_ci`),
    clipped to ``[0, n]``, its upper bound raised to :func:`likelihood_upper_bounds` and
    the whole widened to contain ``estimate`` (see the module docstring for why).

    Parameters
    ----------
    counts : ndarray of shape (k,)
        Reported counts.
    channel : ndarray of shape (k, k)
        Invertible channel.
    estimate : ndarray of shape (k,)
        The maximum-likelihood estimate in counts (on the simplex, summing to ``n``).

    Returns
    -------
    ndarray of shape (k, 2)
    """
    total = float(counts.sum())
    inverse_transpose = np.asarray(np.linalg.inv(channel.T), dtype=np.float64)
    interval = np.clip(linear_ci(counts, inverse_transpose, level=level), 0.0, total)
    floor = likelihood_upper_bounds(counts, channel, estimate / total, level=level)
    interval[:, 1] = np.maximum(interval[:, 1], floor)
    interval[:, 0] = np.minimum(interval[:, 0], estimate)
    interval[:, 1] = np.maximum(interval[:, 1], estimate)
    return interval
