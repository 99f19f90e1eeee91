"""Posterior probabilities of meeting a condition, row by row and cell by cell.

Pure module: numpy and scipy only.

Bayes' rule on the joint reconstruction (001_28af1923c784b480.txt, Figure 2's EM over
the product channel of the condition's attributes, :mod:`.cells`) gives every reported
cell's probability that its true values meet the condition: :func:`condition_posterior`
(rows, with bootstrap replicates; :func:`condition_posteriors` fits each joint model once
for several conditions, as a panel's quotas need) and :func:`posterior_from_table` (a
plan's cells, for sampling from tables counted elsewhere). Section IV-B's participant
sampling ranks candidates by it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reconstruction.algorithms.continuous import whole_number_step
from reconstruction.algorithms.queries.cells import (
    CellPlan,
    CellTable,
    _Axis,
    _fit,
    _joint_mask,
    _JointFit,
    _percentiles,
    _require_rows,
    _row_axes,
    _trimmed,
)
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    ContinuousAttribute,
    _check_options,
    _group,
    table_size,
)
from reconstruction.algorithms.uncertainty import default_rng


@dataclass(frozen=True)
class ConditionPosterior:
    """Every row's posterior probability of truly meeting a condition, with replicates.

    Attributes
    ----------
    cell_of : ndarray of intp, shape (n,)
        Each row's joint reported cell (rows in one cell share their posterior).
    cell_values : ndarray, shape (cells,)
        ``Pr(true values meet the condition | reported cell)`` from the joint estimate.
    cell_replicates : ndarray, shape (n_boot, cells)
        The same from each participant-bootstrap replicate of the reconstruction.
    estimate : float
        Estimated number of rows that truly meet the condition (the joint count).
    ci95 : (float, float)
        Bootstrap percentile interval of ``estimate``.
    """

    cell_of: NDArray[np.intp]
    cell_values: NDArray[np.float64]
    cell_replicates: NDArray[np.float64]
    estimate: float
    ci95: tuple[float, float]

    @property
    def values(self) -> NDArray[np.float64]:
        """Per-row posterior probabilities, shape ``(n,)``."""
        return np.asarray(self.cell_values[self.cell_of], dtype=np.float64)

    def replicates(self, rows: NDArray[np.intp]) -> NDArray[np.float64]:
        """Bootstrap replicates of the posteriors of ``rows``, shape ``(n_boot, len(rows))``."""
        return np.asarray(self.cell_replicates[:, self.cell_of[rows]], dtype=np.float64)


def condition_posterior(
    table: Mapping[str, Attribute],
    where: Sequence[Condition],
    *,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> ConditionPosterior:
    """``Pr(true values meet where | reported values)`` for every row, with replicates.

    The joint reconstruction of :func:`count_joint` and ``sample(method="posterior")``
    (001_28af1923c784b480.txt, Figure 2's EM over the product channel of the condition's
    attributes; continuous attributes cut into intervals that include the thresholds):
    Bayes' rule on the estimated joint distribution gives each joint reported cell's
    probability of a true cell meeting the condition. The replicates refit the
    reconstruction on multinomial resamples of the reported cells (participant bootstrap),
    so a caller can add the posteriors' own uncertainty to an interval.

    Parameters
    ----------
    table : mapping of name -> DiscreteAttribute | ContinuousAttribute
    where : sequence of Condition
        A non-empty conjunction.
    n_boot, tol, max_iter, rng
        Bootstrap replicates (>= 2), EM tolerance, iteration cap, randomness.

    Returns
    -------
    ConditionPosterior

    Raises
    ------
    ValueError
        Empty or contradictory condition, unknown attribute, an op that does not fit the
        attribute's type, mismatched lengths, bad options.
    """
    return condition_posteriors(table, [where], n_boot=n_boot, tol=tol, max_iter=max_iter, rng=rng)[
        0
    ]


def _same_model(a: Sequence[_Axis], b: Sequence[_Axis]) -> bool:
    """Whether two joint models have the same axes, cells, channels and smoothing (the
    masks may differ): one reconstruction then serves both conditions."""

    def same(x: object, y: object) -> bool:
        if x is None or y is None:
            return x is y
        return bool(np.array_equal(np.asarray(x), np.asarray(y)))

    return len(a) == len(b) and all(
        p.name == q.name
        and same(p.channel, q.channel)
        and same(p.cells, q.cells)
        and same(p.edges, q.edges)
        and same(p.smoother, q.smoother)
        for p, q in zip(a, b, strict=True)
    )


def condition_posteriors(
    table: Mapping[str, Attribute],
    wheres: Sequence[Sequence[Condition]],
    *,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
    given: Sequence[Condition] = (),
) -> list[ConditionPosterior]:
    """:func:`condition_posterior` for several conditions, each reconstruction fitted once.

    Conditions whose joint models coincide (the same attributes in the same order, with
    the same cells: discrete attributes, and continuous ones on their lattice of whole
    numbers, where a threshold only picks the points) share one reconstruction and one
    bootstrap; only the masks of the true cells differ. So the four age bands of a panel
    request cost one fit, not four. Each condition's posteriors and estimate are exactly
    :func:`condition_posterior`'s; its replicates come from the shared bootstrap (the
    first condition's replicates are :func:`condition_posterior`'s with the same ``rng``).
    Whether a continuous attribute without a declared ``step`` holds whole numbers is
    decided once per attribute (:func:`~.continuous.whole_number_step`). Conditions
    whose thresholds give different intervals (no lattice) get their own fits.

    ``given`` (a conjunction, e.g. a panel's eligibility): every joint model also holds
    the attributes of ``given`` that its condition does not name, cut at ``given``'s
    thresholds and admitting every value, so each posterior is the probability of the
    condition given the row's reports on those attributes too. Rows selected by those
    reports (the candidates ``given`` makes eligible) then keep calibrated posteriors:
    with the condition's attributes alone, a category that goes with the eligibility
    (a minority living mostly outside the eligible districts) takes the whole table's
    prior, and its expected count over the candidates is biased (the pool's 95%
    interval covered 29-64% of such counts on bench_panel's pools; 2026-11-25).

    Parameters and errors as :func:`condition_posterior`; ``wheres`` is a sequence of
    non-empty conjunctions.
    """
    if any(not where for where in wheres):
        raise ValueError("empty condition: give at least one subcondition")
    table_size(table)
    grouped = [_group(table, where) for where in wheres]
    given_groups = _group(table, given) if given else {}
    _check_options(n_boot, max_iter)
    generator = default_rng(rng)
    lattice: dict[str, bool] = {}
    for groups in [*grouped, given_groups]:
        for name in groups:
            attr = table[name]
            if name not in lattice and isinstance(attr, ContinuousAttribute) and attr.step is None:
                step = whole_number_step(attr.values, attr.noise, attr.low, attr.high)
                lattice[name] = step is not None
    fits: list[tuple[_JointFit, NDArray[np.float64]]] = []
    result: list[ConditionPosterior] = []
    # Each attribute's noise channels, computed once per cells and reported bins: the
    # quotas' models repeat them (an eligibility's axis in every model, the bands of a
    # lattice); the channel was most of the posterior step's time without a where.
    channels: dict[str, dict[tuple[object, ...], NDArray[np.float64]]] = {}
    for own in grouped:
        opened = [name for name in given_groups if name not in own]
        groups = {**own, **{name: given_groups[name] for name in opened}}
        located, reported = _row_axes(table, groups, lattice=lattice, channels=channels)
        axes = [
            dataclasses.replace(ax, mask=np.ones_like(ax.mask)) if ax.name in opened else ax
            for ax in located
        ]
        shared = next((f for f in fits if _same_model(f[0].axes, axes)), None)
        if shared is None:
            fit = _fit(axes, reported, tol, max_iter)
            thetas = fit.bootstrap(n_boot, generator, tol, max_iter)
            fits.append((fit, thetas))
        else:
            fit, thetas = dataclasses.replace(shared[0], axes=axes), shared[1]
        flat = np.ravel_multi_index(tuple(ax.cells for ax in fit.axes), fit.counts.shape)
        mask = _joint_mask(fit.axes)
        n = fit.n
        counts = n * thetas[:, mask].sum(axis=1)
        result.append(
            ConditionPosterior(
                np.asarray(flat, dtype=np.intp),
                np.asarray(fit.posterior().ravel(), dtype=np.float64),
                np.asarray(fit.posterior(thetas).reshape(n_boot, -1), dtype=np.float64),
                float(n * fit.theta[mask].sum()),
                _percentiles(counts),
            )
        )
    return result


def posterior_from_table(
    plan: CellPlan,
    table: CellTable,
    *,
    tol: float | None = None,
    max_iter: int = 10_000,
) -> tuple[NDArray[np.float64], float]:
    """``Pr(true values meet the condition | reported cell)`` for every cell of the plan.

    The posterior :func:`~.sampling.sample` ranks candidates by (001_28af1923c784b480.txt,
    Section IV-B, drawing from the joint reconstruction of Section IV-A1), from one fit
    of the table; returns it with shape ``plan.shape`` and the joint count of the
    condition. Cells outside the occupied range get their posterior all the same (a
    participant who arrives there after the table was counted is still ranked).
    """
    if not plan.groups:
        raise ValueError("empty condition: give at least one subcondition")
    n = _require_rows(table)
    axes, trimmed, _ = _trimmed(plan, table)
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    estimate = float(n * fit.theta[_joint_mask(fit.axes)].sum())
    full = _JointFit(list(plan.axes), table.counts, fit.theta, fit.iterations, fit.converged)
    return full.posterior(), estimate
