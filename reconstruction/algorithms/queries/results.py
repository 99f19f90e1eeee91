"""The results of queries: counts, means and samples (frozen dataclasses).

Pure module: numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class CountResult:
    """Estimated number of participants that meet a condition.

    Attributes
    ----------
    estimate : float
    ci95 : (float, float)
        95% interval (bootstrap over participants); NaN when not computed.
    population : int
        Number of participants in the table.
    method : str
        ``"joint"``, ``"figure3"`` or ``"naive"``.
    notes : tuple of str
    """

    estimate: float
    ci95: tuple[float, float]
    population: int
    method: str
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class MeanResult:
    """Estimated mean of a continuous attribute, overall or within a group.

    Attributes
    ----------
    estimate : float
    ci95 : (float, float)
    group_size : float
        Estimated number of participants in the group (``n`` without a condition).
    method : str
        ``"overall"``, ``"unbiased"``, ``"reconstructed"``, ``"figure3"`` or ``"naive"``.
    notes : tuple of str
    """

    estimate: float
    ci95: tuple[float, float]
    group_size: float
    method: str
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class SampleResult:
    """Participants drawn for a deliberative consultation (001, Section IV-B).

    Attributes
    ----------
    rows : ndarray of intp
        Row indices of the chosen candidates, ascending.
    pool_estimate : float
        Estimated number of candidates that truly meet the condition (joint count).
    expected_precision : float
        Expected share of the chosen candidates that truly meet the *whole* condition of
        their stratum (``where`` and the stratum's own condition): the mean posterior
        probability ``Pr(whole condition | reported values)`` over the chosen rows.
    strata_rows : tuple of ndarray
        The rows chosen for each stratum (one entry without strata).
    method : str
    subcondition_precision : tuple of (str, float)
        For each subcondition (``"age between [18.0, 40.0)"``), the expected share of the
        chosen candidates it applies to that truly meet it alone.
    """

    rows: NDArray[np.intp]
    pool_estimate: float
    expected_precision: float
    strata_rows: tuple[NDArray[np.intp], ...]
    method: str
    subcondition_precision: tuple[tuple[str, float], ...] = ()
