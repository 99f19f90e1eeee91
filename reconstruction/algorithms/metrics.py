"""Accuracy metrics for reconstructed distributions and query answers.

* :func:`information_loss` -- 001_28af1923c784b480.txt, Section III-B1.
* :func:`reconstruction_error` -- ``(1/n) sqrt(sum (t_hat - t)^2)``, the error formula of
  000_1b7f9a8e281301b4.txt (Section 5) after 003_7fc4d61026dceaec.txt.
* :func:`rmse`, :func:`relative_accuracy`, :func:`d_value` -- 004_594176c10f691dd8.txt,
  Section 5.2.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["d_value", "information_loss", "reconstruction_error", "relative_accuracy", "rmse"]


def _pair(estimate: ArrayLike, truth: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = np.asarray(estimate, dtype=np.float64)
    b = np.asarray(truth, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(
            f"estimate and truth must be non-empty 1-D vectors of one shape, got {a.shape} "
            f"and {b.shape}"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("estimate and truth must be finite")
    return a, b


def _distribution(values: NDArray[np.float64], name: str) -> NDArray[np.float64]:
    total = values.sum()
    if np.any(values < 0) or total <= 0:
        raise ValueError(f"{name} must be non-negative with a positive total")
    return np.asarray(values / total, dtype=np.float64)


def information_loss(estimate: ArrayLike, truth: ArrayLike) -> float:
    """Information loss: half the L1 distance between the distributions.

    001_28af1923c784b480.txt, Section III-B1: ``I(f, f_hat) = 1/2 E[ integral |f - f_hat| ]``;
    for a discrete attribute the integral is a sum over categories. This returns the value
    for one reconstruction (average over simulated surveys for the expectation). Inputs are
    counts or proportions; each is normalised to sum to 1. 0 is a perfect reconstruction,
    1 no overlap.

    The estimate must be non-negative (clip an EQ/NStoPS solution first).
    """
    a, b = _pair(estimate, truth)
    return float(0.5 * np.abs(_distribution(a, "estimate") - _distribution(b, "truth")).sum())


def reconstruction_error(estimate: ArrayLike, truth: ArrayLike) -> float:
    """``(1/n) sqrt(sum_i (t_hat_i - t_i)^2)`` with ``n = sum(truth)``.

    000_1b7f9a8e281301b4.txt, Section 5 (citing 003_7fc4d61026dceaec.txt); the values of
    000's Tables 4-6.
    """
    a, b = _pair(estimate, truth)
    n = b.sum()
    if n <= 0:
        raise ValueError("truth must have a positive total")
    return float(np.sqrt(np.sum((a - b) ** 2)) / n)


def rmse(estimates: ArrayLike, truths: ArrayLike) -> float:
    """Root mean square error over query answers (004, Section 5.2).

    ``sqrt((1/m) sum_i (n_i - t_i)^2)`` with ``n_i`` the estimated and ``t_i`` the true
    answer to query ``i``.
    """
    a, b = _pair(estimates, truths)
    return float(np.sqrt(np.mean((a - b) ** 2)))


def relative_accuracy(estimate: float, truth: float) -> float:
    """Relative accuracy ``RA = 1 - |t - n| / t`` (004, Section 5.2, formula 7).

    004's example: an error of 500 on a true count of 10,000 gives RA = 95%. RA falls below
    0 when the error exceeds the true answer (not clipped).

    Raises
    ------
    ValueError
        If the true answer is not positive (RA is undefined).
    """
    n, t = float(estimate), float(truth)
    if not (np.isfinite(n) and np.isfinite(t)):
        raise ValueError("estimate and truth must be finite")
    if t <= 0:
        raise ValueError(f"relative accuracy needs a positive true answer, got {t!r}")
    return 1.0 - abs(t - n) / t


def d_value(estimate: ArrayLike, truth: ArrayLike) -> float:
    """D-value: the largest gap between the two cumulative distributions.

    004_594176c10f691dd8.txt, Section 5.2 uses the D-value to compare the estimated and the
    true distribution over the (ordered) categories; its definition is lost in this copy.
    We take the Kolmogorov-Smirnov statistic ``D = max_j |F_hat(j) - F(j)|`` on the
    normalised counts, which lies in [0, 1] like 004's reported values (e.g. 0.2857).
    """
    a, b = _pair(estimate, truth)
    gap = np.cumsum(_distribution(a, "estimate")) - np.cumsum(_distribution(b, "truth"))
    return float(np.max(np.abs(gap)))
