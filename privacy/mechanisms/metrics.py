"""Privacy metrics of discrete mechanisms.

* :func:`epsilon` -- the level of local differential privacy of a channel.
* :func:`privacy_level` / :func:`privacy_levels` -- the privacy level of negative surveys
  defined in 004_594176c10f691dd8.txt, Section 5.1.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms.channels import validate_stochastic

__all__ = ["epsilon", "privacy_level", "privacy_levels"]


def epsilon(channel: ArrayLike) -> float | None:
    """Local-differential-privacy level ``ln(max_j max_{i,i'} C[i, j] / C[i', j])``.

    (/work/shared/design/api.md, the scheme's ``epsilon``.) Columns that are all zero
    (never reported) are ignored.

    Parameters
    ----------
    channel : array_like of shape (k_true, k_reported)

    Returns
    -------
    float or None
        ``None`` when unbounded: some column has a zero beside a non-zero entry (e.g. every
        negative survey, whose diagonal is 0).
    """
    matrix = validate_stochastic(channel)
    highest = matrix.max(axis=0)
    lowest = matrix.min(axis=0)
    used = highest > 0
    if np.any(lowest[used] == 0):
        return None
    return float(math.log(float(np.max(highest[used] / lowest[used]))))


def _prior(prior: ArrayLike | None, k: int) -> NDArray[np.float64]:
    if prior is None:
        return np.full(k, 1.0 / k)
    weights = np.asarray(prior, dtype=np.float64)
    if weights.shape != (k,):
        raise ValueError(f"prior must have shape ({k},), got {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError("prior must be finite, non-negative and not all zero")
    return np.asarray(weights / weights.sum(), dtype=np.float64)


def privacy_levels(channel: ArrayLike, prior: ArrayLike | None = None) -> NDArray[np.float64]:
    """Privacy level of a participant of true category ``i`` who reports ``j``.

    004_594176c10f691dd8.txt, Section 5.1 (the text is damaged; this is the reading taken):
    the probability that a participant who reports ``j`` actually belongs to category ``i``
    is ``P(i | j) = Pr_{i,j} t_i / sum_k Pr_{k,j} t_k``; 004 takes equal numbers ``n / c``
    of participants per category (Section 4.2, "the number of participants who are in
    category i but report j is Pr_{i,j} n/c"), so ``P(i | j) = Pr_{i,j} / sum_k Pr_{k,j}``.
    The privacy level is ``1 - P(i | j)``: the adversary's chance of being wrong when
    guessing the true category from the report. In 004's example (7 categories; a
    participant of category 3 reports 1, with ``Pr_{k,1}`` = 30.7%, 17.6%, 9%, 3.2%, 1.6%,
    0.5% for ``k = 2..7``) this gives ``1 - 17.6 / 62.6 = 71.9%``.

    Parameters
    ----------
    channel : array_like of shape (k, k_reported)
    prior : array_like of shape (k,), optional
        Share of participants per true category; uniform (004's assumption) by default.

    Returns
    -------
    ndarray of shape (k, k_reported)
        ``1 - P(i | j)``; NaN for reports ``j`` that never occur.
    """
    matrix = validate_stochastic(channel)
    weights = _prior(prior, matrix.shape[0])
    joint = weights[:, None] * matrix
    column = joint.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        posterior = joint / column[None, :]
    levels = 1.0 - posterior
    levels[:, column == 0] = np.nan
    return np.asarray(levels, dtype=np.float64)


def privacy_level(channel: ArrayLike, prior: ArrayLike | None = None) -> float:
    """Privacy level of a survey: the average of :func:`privacy_levels` over participants.

    004_594176c10f691dd8.txt, Section 5.1 ("We measure privacy based on the privacy level
    gained by all participants"): ``sum_{i,j} w_i Pr_{i,j} (1 - P(i | j))`` with ``w`` the
    share of participants per true category (uniform unless ``prior`` is given). It is 0
    when reports reveal the true category (the identity channel) and
    ``(c - 2) / (c - 1)`` for the uniform negative survey.

    Returns
    -------
    float in [0, 1)
    """
    matrix = validate_stochastic(channel)
    weights = _prior(prior, matrix.shape[0])
    levels = np.nan_to_num(privacy_levels(matrix, weights), nan=0.0)
    return float(np.sum(weights[:, None] * matrix * levels))
