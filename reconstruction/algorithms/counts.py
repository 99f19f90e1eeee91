"""Counting reported categories: the sufficient statistics of every discrete estimator."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["reported_counts", "validate_counts"]


def reported_counts(codes: ArrayLike, k: int) -> NDArray[np.int64]:
    """Count reported category codes in one pass.

    Every estimator consumes only these counts and the channel
    (/work/shared/design/architecture.md, "The one idea that keeps the core small").

    Parameters
    ----------
    codes : array_like of int
        Reported categories in ``0..k-1``.
    k : int
        Number of reported categories, ``k >= 1``.

    Returns
    -------
    ndarray of int64, shape (k,)
        ``counts[j]`` = number of codes equal to ``j``. Empty data gives ``k`` zeros (the
        estimators then refuse the zero total with a ``ValueError``).

    Raises
    ------
    ValueError
        Non-integer codes, or a code outside ``0..k-1``.

    Notes
    -----
    A single ``numpy.bincount(codes, minlength=k)`` pass: bincount itself rejects negative
    codes, and a code above ``k - 1`` shows up as a result longer than ``k``, so no
    separate min/max pass over the data is needed.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    array = np.asarray(codes)
    if array.size == 0:
        return np.zeros(k, dtype=np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"codes must be integer category codes, got dtype {array.dtype}")
    if array.ndim != 1:
        array = array.ravel()
    if array.dtype.itemsize > np.dtype(np.intp).itemsize or array.dtype == np.uint64:
        if int(array.max()) >= k:
            raise ValueError(f"codes must lie in 0..{k - 1}, found {int(array.max())}")
        array = array.astype(np.intp)
    try:
        counts = np.bincount(array, minlength=k)
    except ValueError:
        raise ValueError(
            f"codes must lie in 0..{k - 1}, found a negative code {int(array.min())}"
        ) from None
    except TypeError:
        raise ValueError(f"codes must be integer category codes, got dtype {array.dtype}") from None
    if counts.shape[0] > k:
        raise ValueError(f"codes must lie in 0..{k - 1}, found {counts.shape[0] - 1}")
    return counts.astype(np.int64, copy=False)


def validate_counts(counts: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
    """Validate a vector of reported counts and return it as float64.

    Counts may be real (e.g. the percentages of 000_1b7f9a8e281301b4.txt, Table 1), but
    must be finite, non-negative, and not all zero.

    Raises
    ------
    ValueError
        Not 1-D, wrong length, non-finite or negative entries, or a zero total (empty data).
    """
    try:
        array = np.array(counts, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"counts must be numbers: {exc}") from None
    if array.ndim != 1:
        raise ValueError(f"counts must be a 1-D vector, got shape {array.shape}")
    if k is not None and array.shape[0] != k:
        raise ValueError(
            f"counts has {array.shape[0]} entries but the channel has {k} reported categories"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError("counts must be finite")
    if np.any(array < 0):
        raise ValueError(f"counts must be non-negative, found {float(array.min())!r}")
    if array.sum() <= 0:
        raise ValueError("counts are empty: no reports to reconstruct from")
    return array
