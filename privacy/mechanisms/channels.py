"""Discrete privacy mechanisms as channel matrices.

Every discrete mechanism is a row-stochastic channel ``C`` with
``C[i, j] = Pr(reported category j | true category i)`` (see
/work/shared/design/architecture.md, "The one idea that keeps the core small").
Categories are integer codes ``0..k-1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms.messages import InputError, Message, Note, gettext_noop

__all__ = [
    "MAX_CONDITION",
    "WIDE_CONDITION",
    "ChannelConditioning",
    "channel_conditioning",
    "custom_channel",
    "manual_negative",
    "negative_gaussian",
    "negative_uniform",
    "randomised_response",
    "require_invertible",
    "validate_channel",
    "validate_stochastic",
]

_ROW_SUM_RTOL = 1e-9

MAX_CONDITION = 100.0
"""Largest accepted condition number of a discrete channel (see :func:`channel_conditioning`)."""

WIDE_CONDITION = 10.0
"""Condition number above which estimates carry a note that the channel widens intervals."""


def validate_stochastic(channel: ArrayLike, *, square: bool = False) -> NDArray[np.float64]:
    """Validate a (possibly rectangular) row-stochastic matrix and return a float copy.

    Parameters
    ----------
    channel : array_like of shape (k_true, k_reported)
        ``channel[i, j] = Pr(reported j | true i)``.
    square : bool, default False
        Require ``k_true == k_reported`` and ``k >= 2`` (a discrete mechanism).

    Returns
    -------
    ndarray of float64
        A C-contiguous copy of the matrix.

    Raises
    ------
    ValueError
        If the matrix is not 2-D, is empty, has non-finite or negative entries, or a row
        does not sum to 1 within a relative tolerance of 1e-9 (the message names the row).
    """
    try:
        matrix = np.array(channel, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise InputError(
            gettext_noop("channel must be a numeric matrix: %(problem)s"), problem=str(exc)
        ) from None
    if matrix.ndim != 2:
        raise InputError(
            gettext_noop("channel must be a 2-D matrix, got an array with shape %(shape)s"),
            shape=str(matrix.shape),
        )
    rows, cols = matrix.shape
    if rows == 0 or cols == 0:
        raise InputError(
            gettext_noop("channel must not be empty, got shape %(shape)s"), shape=str(matrix.shape)
        )
    if square:
        if rows != cols:
            raise InputError(
                gettext_noop("channel must be square, got shape %(shape)s"), shape=str(matrix.shape)
            )
        if rows < 2:
            raise InputError(
                gettext_noop("channel needs at least 2 categories, got k=%(k)s"), k=rows
            )
    if not np.all(np.isfinite(matrix)):
        row = int(np.flatnonzero(~np.all(np.isfinite(matrix), axis=1))[0])
        raise InputError(gettext_noop("channel row %(row)s has a non-finite entry"), row=row)
    if np.any(matrix < 0):
        row = int(np.flatnonzero(np.any(matrix < 0, axis=1))[0])
        raise InputError(gettext_noop("channel row %(row)s has a negative entry"), row=row)
    sums = matrix.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_RTOL * np.maximum(1.0, np.abs(sums)))
    if bad.size:
        row = int(bad[0])
        raise InputError(
            gettext_noop("channel row %(row)s sums to %(total)s, not 1"),
            row=row,
            total=repr(float(sums[row])),
        )
    return np.ascontiguousarray(matrix)


def validate_channel(channel: ArrayLike) -> NDArray[np.float64]:
    """Validate a square channel matrix of a discrete mechanism.

    Parameters
    ----------
    channel : array_like of shape (k, k)
        ``channel[i, j] = Pr(reported j | true i)``; ``k >= 2``.

    Returns
    -------
    ndarray of float64, shape (k, k)
        A validated copy.

    Raises
    ------
    ValueError
        Not 2-D or not square, ``k < 2``, a non-finite or negative entry, or a row that does
        not sum to 1 (relative tolerance 1e-9); the message names the offending row.
    """
    return validate_stochastic(channel, square=True)


def _check_k(k: int, minimum: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InputError(
            gettext_noop("k must be an integer number of categories, got %(k)s"), k=repr(k)
        )
    if k < minimum:
        raise InputError(
            gettext_noop("k must be at least %(minimum)s, got %(k)s"), minimum=minimum, k=k
        )
    return int(k)


def _check_negative_k(k: int) -> int:
    k = _check_k(k, 2)
    if k < 3:
        raise InputError(
            gettext_noop(
                "a negative survey needs k >= 3 categories: with 2 categories the reported "
                "(negative) category reveals the true answer"
            )
        )
    return k


def randomised_response(k: int, retain: float) -> NDArray[np.float64]:
    """Randomised response: keep the true category with probability ``retain``.

    Otherwise one of the other ``k - 1`` categories is reported uniformly, i.e. the
    retain/change matrix of 001_28af1923c784b480.txt (Section IV-A, "distortion with a
    matrix of retaining/changing values") with ``retain`` on the diagonal.

    Parameters
    ----------
    k : int
        Number of categories, ``k >= 2``.
    retain : float
        Probability of reporting the true category, in ``(0, 1]``.

    Returns
    -------
    ndarray of shape (k, k)
        ``retain`` on the diagonal, ``(1 - retain) / (k - 1)`` elsewhere.
    """
    k = _check_k(k, 2)
    retain = float(retain)
    if not (np.isfinite(retain) and 0.0 < retain <= 1.0):
        raise InputError(
            gettext_noop("retain must be in (0, 1], got %(retain)s"), retain=repr(retain)
        )
    matrix = np.full((k, k), (1.0 - retain) / (k - 1))
    np.fill_diagonal(matrix, retain)
    return matrix


def custom_channel(matrix: ArrayLike) -> NDArray[np.float64]:
    """Return a validated copy of a user-given retain/change matrix.

    Parameters
    ----------
    matrix : array_like of shape (k, k)
        Row-stochastic, ``matrix[i, j] = Pr(reported j | true i)``. Note that
        001_28af1923c784b480.txt (Section III-B6) writes the transpose,
        ``a[s, p] = Pr(v_p -> v_s)``.

    Returns
    -------
    ndarray of shape (k, k)
    """
    return validate_channel(matrix)


def negative_uniform(k: int) -> NDArray[np.float64]:
    """Uniform negative survey: report one of the other categories uniformly.

    003_7fc4d61026dceaec.txt, formula (6): ``q_ij = 1/(c-1)`` for ``i != j``, 0 on the
    diagonal.

    Parameters
    ----------
    k : int
        Number of categories, ``k >= 3`` (with 2 categories the negative answer reveals
        the true one, so ``ValueError`` is raised).
    """
    k = _check_negative_k(k)
    matrix = np.full((k, k), 1.0 / (k - 1))
    np.fill_diagonal(matrix, 0.0)
    return matrix


def negative_gaussian(k: int, sigma: float) -> NDArray[np.float64]:
    """Gaussian negative survey (GNS).

    004_594176c10f691dd8.txt, Section 4 and 003_7fc4d61026dceaec.txt, formula (8):
    ``q_ij ∝ exp(-(j - i)^2 / (2 sigma^2))`` for ``j != i``, ``q_ii = 0``, rows
    renormalised. With ``k = 7`` and ``sigma = 2`` this reproduces 004's worked example
    (``Pr_{k,1}`` = 30.7%, 17.6%, 9%, 3.2%, 1.6%, 0.5% for k = 2..7, Section 5.1).

    Parameters
    ----------
    k : int
        Number of (ordered) categories, ``k >= 3``.
    sigma : float
        Standard deviation in category steps, ``> 0`` and finite.

    Notes
    -----
    The weights are computed relative to the nearest neighbour (distance 1), so tiny
    ``sigma`` gives the limit (half the mass on each neighbour) instead of 0/0.
    """
    k = _check_negative_k(k)
    sigma = float(sigma)
    if not (np.isfinite(sigma) and sigma > 0.0):
        raise InputError(
            gettext_noop("sigma must be > 0 and finite, got %(sigma)s"), sigma=repr(sigma)
        )
    index = np.arange(k, dtype=np.float64)
    squared = (index[None, :] - index[:, None]) ** 2
    np.fill_diagonal(squared, np.inf)  # the true category is never reported
    weights = np.exp(-(squared - 1.0) / (2.0 * sigma * sigma))
    return np.asarray(weights / weights.sum(axis=1, keepdims=True), dtype=np.float64)


def _as_codes(codes: ArrayLike, k: int, name: str = "codes") -> NDArray[np.intp]:
    array = np.asarray(codes)
    if array.size and not np.issubdtype(array.dtype, np.integer):
        if np.issubdtype(array.dtype, np.floating) and np.all(array == np.round(array)):
            array = array.astype(np.intp)
        else:
            raise ValueError(f"{name} must be integer category codes, got dtype {array.dtype}")
    array = array.astype(np.intp, copy=False)
    if array.size:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= k:
            bad = low if low < 0 else high
            raise ValueError(f"{name} must lie in 0..{k - 1}, found {bad}")
    return array


def manual_negative(k: int, pairs: ArrayLike | None = None) -> NDArray[np.float64]:
    """Manually selected negative survey, channel estimated from calibration pairs.

    000_1b7f9a8e281301b4.txt, Section 4.1 ("Using Background Knowledge") and the first
    step of Section 4.2: a row ``i`` with calibration pairs is the empirical distribution
    of the negative categories chosen by calibration participants whose true category is
    ``i``; every other row is the uniform negative row (0 on the diagonal, ``1/(k-1)``
    elsewhere). The diagonal is then revised to 0 and the row rescaled to sum to 1
    (``q_ij = q_ij / sum_{j != i} q_ij``).

    Parameters
    ----------
    k : int
        Number of categories, ``k >= 3``.
    pairs : array_like of shape (m, 2), optional
        ``(true, negative)`` integer code pairs from a consenting calibration sample.
        ``None`` or an empty array gives the uniform negative survey.

    Returns
    -------
    ndarray of shape (k, k)
        A row-stochastic channel with a zero diagonal.

    Notes
    -----
    If every pair of a true category lies on the diagonal (the participants reported
    their true category, which 000 Section 3.3 finding (4) observes happens), the revised
    row would be all zeros; that row falls back to the uniform negative row, as if the
    category had no calibration data.
    """
    k = _check_negative_k(k)
    matrix = negative_uniform(k)
    if pairs is None:
        return matrix
    array = np.asarray(pairs)
    if array.size == 0:
        return matrix
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"pairs must have shape (m, 2), got {array.shape}")
    codes = _as_codes(array, k, name="pairs")
    tally = np.bincount(codes[:, 0] * k + codes[:, 1], minlength=k * k).reshape(k, k)
    tally = tally.astype(np.float64)
    np.fill_diagonal(tally, 0.0)
    sums = tally.sum(axis=1)
    has_data = sums > 0
    matrix[has_data] = tally[has_data] / sums[has_data, None]
    return matrix


@dataclass(frozen=True)
class ChannelConditioning:
    """How well a discrete channel can be inverted.

    Attributes
    ----------
    condition : float
        2-norm condition number of ``C`` (ratio of its largest to smallest singular
        value; ``inf`` for a singular channel).
    problem : Message or None
        Why the channel is refused (``None`` when it is accepted); ``str()`` gives the
        English text.
    wide : bool
        Accepted, but the condition number exceeds :data:`WIDE_CONDITION`: intervals are
        that many times wider than those of undistorted answers.
    """

    condition: float
    problem: Message | None
    wide: bool

    def note(self) -> str | None:
        """The remark an estimate carries when the channel makes its intervals wide."""
        if not self.wide:
            return None
        return Note(
            gettext_noop(
                "the channel is poorly conditioned (condition number %(condition)s): its "
                "intervals are up to that many times wider than those of undistorted answers"
            ),
            condition=f"{self.condition:.3g}",
        )


def channel_conditioning(
    channel: ArrayLike, *, retain: float | None = None, max_condition: float = MAX_CONDITION
) -> ChannelConditioning:
    """Whether a discrete channel can be inverted well enough to estimate from.

    Every estimator of 001_28af1923c784b480.txt (EM/AS, Figure 2; EQ, equation (4)) and
    of 003_7fc4d61026dceaec.txt (NStoPS, formula (5)) recovers the true counts from
    ``C^T t = r``. A singular ``C`` (randomised response with ``retain = 1/k`` reports
    every category with the same probability whatever the truth) leaves ``t``
    unidentified: EM then stops at its uniform start and looks converged.

    The bound: the true counts are ``t = C^{-T} r``, so the standard error of an estimated
    proportion is up to ``kappa * sqrt(q (1 - q) / n) <= kappa / (2 sqrt(n))`` with
    ``kappa`` the condition number. At ``kappa = 100`` even the largest surveys this
    platform serves (``n = 10^6`` reports) get a 95% interval of
    ``+-1.96 * 100 / (2 * 1000) = +-0.1`` on a proportion, and a survey of 10,000
    reports ``+-1``: nothing is learnt. Channels past :data:`MAX_CONDITION` = 100 are
    refused; randomised response on 2 categories is refused from ``retain <= 0.505``,
    on 10 categories from ``retain <= 0.109`` (``kappa = (k - 1) / (k retain - 1)``).
    The uniform negative survey has ``kappa = k - 1`` and is accepted.

    Randomised response with ``retain <= 1/k`` is refused as well: at ``1/k`` it is
    singular, and below it reports the true category less often than chance, which is a
    negative survey described as randomised response (use a negative survey mechanism).

    Parameters
    ----------
    channel : array_like of shape (k, k)
        ``C[i, j] = Pr(reported j | true i)``.
    retain : float, optional
        The ``retain`` parameter when the channel is randomised response.
    max_condition : float, default :data:`MAX_CONDITION`

    Returns
    -------
    ChannelConditioning
    """
    matrix = validate_channel(channel)
    k = matrix.shape[0]
    singular = np.linalg.svd(matrix, compute_uv=False)
    smallest = float(singular[-1])
    condition = float(singular[0] / smallest) if smallest > singular[0] * 1e-15 else float("inf")
    problem: Message | None = None
    if retain is not None and float(retain) <= 1.0 / k:
        problem = Message(
            gettext_noop(
                "retain must exceed 1/k = 1/%(k)s = %(chance)s: with retain %(retain)s "
                "the reported answer carries no information about the true one, or reports it "
                "less often than chance (use a negative survey for that)"
            ),
            {"k": k, "chance": f"{1.0 / k:.4g}", "retain": f"{float(retain):g}"},
        )
    elif not condition <= max_condition:
        template = (
            gettext_noop(
                "the channel is singular (condition number %(condition)s, at most "
                "%(limit)s accepted), so the true answers cannot be reconstructed from "
                "the reported ones; keep the true answer more often"
            )
            if math.isinf(condition)
            else gettext_noop(
                "the channel is nearly singular (condition number %(condition)s, at most "
                "%(limit)s accepted), so the true answers cannot be reconstructed from "
                "the reported ones; keep the true answer more often"
            )
        )
        problem = Message(
            template, {"condition": f"{condition:.3g}", "limit": f"{max_condition:g}"}
        )
    return ChannelConditioning(
        condition=condition, problem=problem, wide=problem is None and condition > WIDE_CONDITION
    )


def require_invertible(channel: ArrayLike, *, max_condition: float = MAX_CONDITION) -> float:
    """Raise ``ValueError`` when :func:`channel_conditioning` refuses ``channel``.

    Returns
    -------
    float
        The condition number.
    """
    checked = channel_conditioning(channel, max_condition=max_condition)
    if checked.problem is not None:
        raise InputError(checked.problem.template, **checked.problem.params)
    return checked.condition
