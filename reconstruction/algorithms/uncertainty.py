"""95% intervals for the discrete estimators.

Two kinds of interval:

* ``linear_ci``: for the linear estimators (EQ, NStoPS) the covariance of
  ``t_hat = n C^{-T} r / n`` is exact given the multinomial covariance of the reported
  counts, so a normal (Wald) interval is used.
* ``bootstrap_ci``: a parametric bootstrap on the counts for the non-linear estimators
  (EM/AS, NStoPS-I/II, NStoPS-MLE). Reported count vectors are drawn from
  ``Multinomial(n, p_hat C)``, the estimator is run on the whole ``(B, k)`` batch at once
  (vectorised over replicates), and percentile intervals are taken.

Randomness comes only from ``rng``; by default a generator with a fixed seed is used, so
the same input always gives the same interval.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import stats

__all__ = [
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "bootstrap_ci",
    "default_rng",
    "linear_ci",
    "simulate_reported_counts",
]

DEFAULT_SEED = 20_160_418
DEFAULT_REPLICATES = 1000

BatchEstimator = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def default_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Return ``rng`` or, if None, a generator seeded with :data:`DEFAULT_SEED`."""
    if rng is None:
        return np.random.default_rng(DEFAULT_SEED)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


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
    alpha = 0.5 * (1.0 - level)
    low, high = np.quantile(estimates, [alpha, 1.0 - alpha], axis=0)
    return np.stack([low, high], axis=1)


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
