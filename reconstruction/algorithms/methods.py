"""Choosing a discrete estimator by the name analysts use in the API.

One entry point, :func:`reconstruct`, so the API, the jobs and the reports
accept the same method names and reject a method that does not fit the
channel with the same message.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privacy.mechanisms import negative_uniform, validate_channel
from privacy.mechanisms.messages import InputError, gettext_noop, note_json
from reconstruction.algorithms.discrete import em_as, eq, nstops, nstops_i, nstops_ii, nstops_mle
from reconstruction.algorithms.result import Reconstruction

DISCRETE_METHODS: tuple[str, ...] = ("em_as", "eq", "nstops", "nstops_i", "nstops_ii", "mle")
"""Method names accepted by :func:`reconstruct`; ``em_as`` is the default."""

_UNIFORM_NEGATIVE_ONLY = ("nstops", "nstops_ii")
_NEGATIVE_ONLY = ("nstops_i", "mle")


def _is_uniform_negative(channel: np.ndarray[Any, np.dtype[np.float64]]) -> bool:
    k = channel.shape[0]
    return k >= 3 and bool(np.allclose(channel, negative_uniform(k), atol=1e-9))


def _is_negative(channel: np.ndarray[Any, np.dtype[np.float64]]) -> bool:
    """A negative survey: the true category is reported no more often than by chance.

    000 revises the diagonal of such a channel to 0 (a participant who picked their own
    category made a mistake); doing that to, say, randomised response would destroy it.
    """
    return bool(np.all(np.diag(channel) <= 1.0 / channel.shape[0]))


def check_method(channel: ArrayLike, method: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Whether the named estimator fits the channel, decided on the channel alone.

    ``nstops`` and ``nstops_ii`` (003_7fc4d61026dceaec.txt) need the uniform negative
    survey; ``nstops_i`` (003, formula (12)) and ``mle`` (000_1b7f9a8e281301b4.txt,
    Section 4.2) a negative survey; ``em_as`` and ``eq`` take any valid channel. No
    estimator runs, so callers can refuse a request before any count exists.

    Returns
    -------
    ndarray
        The validated channel.

    Raises
    ------
    ValueError
        Unknown method, invalid channel, or a method that does not fit the channel.
    """
    if method not in DISCRETE_METHODS:
        raise InputError(
            gettext_noop("unknown method %(method)s; choose one of %(methods)s"),
            method=repr(method),
            methods=", ".join(DISCRETE_METHODS),
        )
    matrix = validate_channel(channel)
    if method in _UNIFORM_NEGATIVE_ONLY and not _is_uniform_negative(matrix):
        raise InputError(
            gettext_noop("method %(method)s applies only to the uniform negative survey"),
            method=repr(method),
        )
    if method in _NEGATIVE_ONLY and not _is_negative(matrix):
        raise InputError(
            gettext_noop("method %(method)s applies only to negative surveys"), method=repr(method)
        )
    return matrix


def reconstruct(
    counts: ArrayLike,
    channel: ArrayLike,
    *,
    method: str = "em_as",
    ci: bool = True,
    calibration_pairs: ArrayLike | None = None,
) -> Reconstruction:
    """Reconstruct true counts from reported counts with the named method.

    Parameters
    ----------
    counts : array_like of shape (k,)
        Reported counts.
    channel : array_like of shape (k, k)
        ``C[i, j] = Pr(reported j | true i)``.
    method : {"em_as", "eq", "nstops", "nstops_i", "nstops_ii", "mle"}
        ``em_as`` (001, Figure 2) works for every channel; ``eq`` (001, system of
        equations) for invertible ones; ``nstops`` and ``nstops_ii``
        (003_7fc4d61026dceaec.txt) only for the uniform negative survey;
        ``nstops_i`` (003, formula (12)) and ``mle`` (000, Section 4.2) for
        negative surveys (a channel whose answer is never, or rarely, the true one).
    calibration_pairs : array_like of shape (m, 2), optional
        The (true, negative) pairs the channel was estimated from (000, Section 4.1);
        ``em_as`` and ``mle`` then widen their intervals by the calibration's own
        uncertainty. The linear methods' intervals treat the channel as known.

    Raises
    ------
    ValueError
        Unknown method, or a method that does not fit the channel.
    """
    matrix = check_method(channel, method)
    pairs = None
    if calibration_pairs is not None and np.asarray(calibration_pairs).size:
        pairs = calibration_pairs
    if method == "em_as":
        return em_as(counts, matrix, ci=ci, calibration_pairs=pairs)
    if method == "eq":
        return eq(counts, matrix, ci=ci)
    if method == "nstops":
        return nstops(counts, ci=ci)
    if method == "nstops_i":
        return nstops_i(counts, matrix, ci=ci)
    if method == "nstops_ii":
        return nstops_ii(counts, ci=ci)
    return nstops_mle(counts, matrix, ci=ci, calibration_pairs=pairs)


def reconstruction_as_dict(result: Reconstruction) -> dict[str, Any]:
    """A JSON-ready view of a :class:`Reconstruction` (NaN and inf become ``None``)."""

    def clean(values: np.ndarray[Any, np.dtype[np.float64]]) -> Any:
        return np.where(np.isfinite(values), values, np.nan).tolist() if values.size else []

    def finite(x: Any) -> Any:
        if isinstance(x, list):
            return [finite(v) for v in x]
        return None if isinstance(x, float) and not np.isfinite(x) else x

    return {
        "counts": finite(clean(np.asarray(result.counts, dtype=np.float64))),
        "proportions": finite(clean(np.asarray(result.proportions, dtype=np.float64))),
        "ci95": finite(clean(np.asarray(result.ci95, dtype=np.float64))),
        "method": result.method,
        "iterations": int(result.iterations),
        "converged": bool(result.converged),
        "notes": [note_json(note) for note in result.notes],
    }
