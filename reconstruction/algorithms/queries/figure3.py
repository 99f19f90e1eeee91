"""Figure 3 of 001: the list and the number of participants meeting a condition.

Pure module: numpy and scipy only.

001_28af1923c784b480.txt, Section IV-A1, Figure 3: for each subcondition in turn the
attribute's distribution is reconstructed within the current set (EM/AS, Figure 2, for
discrete attributes; EM over intervals for continuous ones), participants are assigned
reconstructed values (ARVeSNA, Section III-B7, :func:`~..assignment.arvesna`; the sorted
assignment, Section III-B4, :func:`~..assignment.sorted_assignment`) and those whose
value meets the subcondition form the next set. :func:`figure3_rows` gives the list
(Section IV-B draws from it), :func:`count_figure3` the count with a bootstrap interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from reconstruction.algorithms.assignment import arvesna, sorted_assignment
from reconstruction.algorithms.continuous import (
    reconstruct_continuous,
    whole_number_step,
)
from reconstruction.algorithms.counts import reported_counts
from reconstruction.algorithms.discrete import em_as
from reconstruction.algorithms.queries.cells import _percentiles
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    DiscreteAttribute,
    _check_options,
    _continuous_mask,
    _discrete_set,
    _group,
    condition_cuts,
    table_size,
)
from reconstruction.algorithms.queries.results import CountResult
from reconstruction.algorithms.uncertainty import default_rng


def _stage_distribution(
    attr: Attribute,
    conds: Sequence[Condition],
    rows: NDArray[np.intp],
    tol: float | None,
    max_iter: int,
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64] | None]:
    """One stage of Figure 3: reconstruct the attribute within ``rows``."""
    if isinstance(attr, DiscreteAttribute):
        codes = attr.codes[rows]
        rec = em_as(
            reported_counts(codes, attr.channel.shape[1]),
            attr.channel,
            tol=1e-8 if tol is None else tol,
            max_iter=max_iter,
            ci=False,
        )
        mask = np.zeros(attr.k, dtype=bool)
        mask[list(_discrete_set(conds))] = True
        return rec.counts, mask, None
    values = attr.values[rows]
    cuts = [t for cond in conds for t in cond.thresholds]
    # A declared step (or whole numbers the reports show) puts the cells on the lattice
    # and the thresholds between lattice points, as in the joint model (issue 10).
    step = attr.step
    if step is None:
        step = whole_number_step(values, attr.noise, attr.low, attr.high)
    result = reconstruct_continuous(
        values,
        attr.noise,
        attr.low,
        attr.high,
        thresholds=cuts,
        ci=False,
        tol=tol,
        max_iter=max_iter,
        step=step,
        cuts=condition_cuts(conds) if step is not None else None,
    )
    return result.counts, _continuous_mask(result.midpoints, conds), values


def figure3_rows(
    table: Mapping[str, Attribute],
    where: Sequence[Condition],
    *,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> tuple[NDArray[np.intp], float]:
    """The list and the number of participants that meet a condition (001, Figure 3).

    001_28af1923c784b480.txt, Section IV-A1, Figure 3: for each subcondition in turn
    (subconditions on the same attribute are taken together) the attribute's distribution
    is reconstructed within the current set ``P`` (EM/AS, Figure 2, for discrete
    attributes; EM over intervals that include the thresholds for continuous ones), the
    participants of ``P`` are assigned reconstructed values (ARVeSNA, Section III-B7, or
    the sorted assignment, Section III-B4) and those whose assigned value meets the
    subcondition form the next ``P``. The last stage's assignment gives the list used for
    participant sampling (Section IV-B); the count is the last stage's reconstructed count.

    Returns
    -------
    rows : ndarray of intp
        Participants assigned values that meet every subcondition.
    estimate : float
        The estimated number ``N_{c_1 and ... and c_m}``.
    """
    if not where:
        raise ValueError("empty condition: give at least one subcondition")
    n = table_size(table)
    groups = _group(table, where)
    generator = default_rng(rng)
    rows = np.arange(n, dtype=np.intp)
    estimate = 0.0
    for name, conds in groups.items():
        if rows.size == 0:
            return rows, 0.0
        attr = table[name]
        counts, mask, values = _stage_distribution(attr, conds, rows, tol, max_iter)
        estimate = float(counts[mask].sum())
        if values is None:
            assert isinstance(attr, DiscreteAttribute)
            assigned = arvesna(attr.codes[rows], counts, attr.channel, rng=generator)
        else:
            assigned = sorted_assignment(values, counts, rng=generator)
        rows = rows[mask[assigned]]
    return rows, estimate


def _figure3_estimate(
    table: Mapping[str, Attribute],
    groups: Mapping[str, Sequence[Condition]],
    rows: NDArray[np.intp],
    generator: np.random.Generator,
    tol: float | None,
    max_iter: int,
) -> float:
    """Figure 3's count (the last stage needs no assignment) on the given rows."""
    names = list(groups)
    for position, name in enumerate(names):
        if rows.size == 0:
            return 0.0
        attr = table[name]
        counts, mask, values = _stage_distribution(attr, groups[name], rows, tol, max_iter)
        if position == len(names) - 1:
            return float(counts[mask].sum())
        if values is None:
            assert isinstance(attr, DiscreteAttribute)
            assigned = arvesna(attr.codes[rows], counts, attr.channel, rng=generator)
        else:
            assigned = sorted_assignment(values, counts, rng=generator)
        rows = rows[mask[assigned]]
    return 0.0


def count_figure3(
    table: Mapping[str, Attribute],
    where: Sequence[Condition],
    *,
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """Count participants meeting a conjunction exactly as 001, Figure 3 defines it.

    See :func:`figure3_rows` for the algorithm (001_28af1923c784b480.txt, Section IV-A1,
    Figure 3); the last subcondition needs no assignment. The 95% interval comes from a
    bootstrap over participants: ``n_boot`` resamples of the rows, each run through the
    whole procedure (a loop over replicates, each vectorised over participants).

    Returns
    -------
    CountResult
        ``method="figure3"``.
    """
    if not where:
        raise ValueError("empty condition: give at least one subcondition")
    n = table_size(table)
    groups = _group(table, where)
    _check_options(n_boot, max_iter)
    generator = default_rng(rng)
    rows = np.arange(n, dtype=np.intp)
    estimate = _figure3_estimate(table, groups, rows, generator, tol, max_iter)
    interval = (math.nan, math.nan)
    if ci:
        boot = np.array(
            [
                _figure3_estimate(
                    table,
                    groups,
                    np.sort(generator.integers(0, n, size=n)),
                    generator,
                    tol,
                    max_iter,
                )
                for _ in range(n_boot)
            ]
        )
        interval = _percentiles(boot)
    return CountResult(estimate, interval, n, "figure3")
