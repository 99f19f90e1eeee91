"""Client-side distortion: vectorised sampling of reported answers.

The portal distorts every answer on the resident's device before anything is sent
(/work/shared/design/architecture.md, "What flows through the system", step 2). Discrete
answers go through a channel matrix, continuous ones through a noise model
(:mod:`privacy.mechanisms.noise`). Nothing here loops over people in Python.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms.channels import _as_codes, validate_stochastic
from privacy.mechanisms.noise import NoiseModel

__all__ = ["distort_codes", "distort_values"]


def distort_codes(
    codes: ArrayLike, channel: ArrayLike, rng: np.random.Generator
) -> NDArray[np.intp]:
    """Distort true category codes through a channel, vectorised.

    Each code ``i`` is replaced by ``j`` drawn from row ``i`` of the channel by inverting
    the row's cumulative distribution with one uniform draw per code. The rows' CDFs are
    offset by the row index and flattened so that a single ``searchsorted`` serves all
    rows (no Python loop over people).

    Parameters
    ----------
    codes : array_like of int
        True categories in ``0..k_true-1``.
    channel : array_like of shape (k_true, k_reported)
        Row-stochastic channel.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    ndarray of intp, same shape as ``codes``
        Reported categories.
    """
    matrix = validate_stochastic(channel)
    k_true, k_reported = matrix.shape
    array = _as_codes(codes, k_true)
    cdf = np.cumsum(matrix, axis=1)
    # A category of probability 0 (the true one in a negative survey) must never be
    # reported, whatever the rounding: the CDF is exactly 1 from the last possible
    # category on, and results are capped at that category.
    last_possible = k_reported - 1 - np.argmax(matrix[:, ::-1] > 0, axis=1)
    cdf[np.arange(k_reported)[None, :] >= last_possible[:, None]] = 1.0
    flat = (cdf + np.arange(k_true, dtype=np.float64)[:, None]).ravel()
    flat_codes = array.ravel()
    uniform = rng.random(flat_codes.shape[0])
    position = np.searchsorted(flat, flat_codes + uniform, side="right")
    reported = position - flat_codes * k_reported
    np.minimum(reported, last_possible[flat_codes], out=reported)
    return np.asarray(reported.reshape(array.shape), dtype=np.intp)


def distort_values(
    values: ArrayLike, model: NoiseModel, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Distort continuous answers with a noise model (vectorised).

    Parameters
    ----------
    values : array_like of float
        True values.
    model : NoiseModel
        E.g. ``noise_model("additive_uniform", half_width=10)``; additive perturbation or
        retention replacement (001_28af1923c784b480.txt, Section IV-A).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of float64
        Reported values, same shape as ``values``.
    """
    if not isinstance(model, NoiseModel):
        raise ValueError(f"model must be a noise model, got {type(model).__name__}")
    return model.distort(values, rng)
