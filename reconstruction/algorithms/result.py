"""The result every estimator returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Reconstruction:
    """A reconstructed distribution of true categories (or intervals).

    Attributes
    ----------
    counts : ndarray of shape (k,)
        Estimated number of participants whose true value is in each category;
        sums to the number of reports ``n`` (except for the raw NStoPS and EQ
        solutions, which may leave the simplex).
    proportions : ndarray of shape (k,)
        ``counts / n``.
    ci95 : ndarray of shape (k, 2)
        95% interval for each entry of ``counts``.
    iterations : int
        Iterations the method ran (0 for closed forms).
    converged : bool
        Whether the stopping rule was met before ``max_iter``.
    method : str
        The method's name as the papers call it (``"em_as"``, ``"eq"``, ...).
    notes : tuple of str
        Human-readable remarks (e.g. "the EQ solution left the simplex").
    """

    counts: NDArray[np.float64]
    proportions: NDArray[np.float64]
    ci95: NDArray[np.float64]
    iterations: int
    converged: bool
    method: str
    notes: tuple[str, ...] = field(default=())

    @property
    def n(self) -> float:
        return float(self.counts.sum())
