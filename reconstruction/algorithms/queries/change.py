"""How the same participants' answers changed: the joint (before, after) table.

Pure module: numpy and scipy only.

A deliberative consultation asks the same residents one discrete question before and
after they deliberate. Each answer is distorted on its own, independently of the other
given the truth, so the pair of reported answers has the Kronecker product of the two
questions' channels, ``C_before (x) C_after``: the joint model of :mod:`.cells` with two
axes, which a joint count of two attributes already fits (EM of
001_28af1923c784b480.txt, Figure 2 over the product channel, :func:`.cells._fit`). No
estimator of its own: :func:`plan_change` plans the (before, after) axes and any
condition's axes, :func:`change_from_table` fits the cell table once, restricts it to the
true cells that meet the condition (as a grouped distribution does) and takes every
interval from the same participant bootstrap (multinomial redraws of the cells, each
replicate refitted, :meth:`.cells._JointFit.bootstrap`).

The test of change is the bootstrap's share of replicates in which the net shift toward
a category (its share after minus its share before) is positive: ``Pr(shift > 0)``
under the bootstrap distribution, read like a one-sided p-value's complement.

What the intervals estimate: the participant bootstrap redraws the paired residents, so
its spread is the sampling distribution over residents (and their distortion) of the
estimate. Its estimand is the transition shares of the population the paired residents
are drawn from, times the number paired (the issue's "is the net shift real?" is a
question about that population); the residents' own realised table varies less (no
sampling of residents), and the same intervals cover it conservatively (about 97% of
the time at 1,000 pairs; bench/bench_accuracy.py ``change_coverage``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.queries.cells import (
    CellPlan,
    CellTable,
    _fit,
    _joint_mask,
    _plan,
    _require_rows,
    _trimmed,
    cell_table,
)
from reconstruction.algorithms.queries.conditions import (
    Condition,
    DiscreteAttribute,
    DiscreteSpec,
    Spec,
    _as_attributes,
    _check_options,
    _group,
)
from reconstruction.algorithms.uncertainty import default_rng, percentile_interval

N_BOOT = 1000
"""Participant-bootstrap replicates of a change. The refits are vectorised over the
replicates and cost little (25 cells for k = 5); with the 200 of the other kinds the
percentile endpoints' own Monte Carlo error lowered k = 5's coverage of the diagonal
to 93.1% (94.9% with 1,000; bench/results/bench_accuracy_change.md)."""


@dataclass(frozen=True)
class ChangeResult:
    """The reconstructed (before, after) table of a group and what follows from it.

    Attributes
    ----------
    transitions : ndarray of shape (k, k)
        Estimated number of participants with true answer ``i`` before and ``j`` after
        (within the condition's group); sums to :attr:`group_size`.
    transitions_ci95 : ndarray of shape (k, k, 2)
    group_size, group_ci95
        The group's estimated size (``n`` without a condition) and its 95% interval.
    before, after, net_change : ndarray of shape (k,)
        Shares of each category before and after, and ``after - before``.
    before_ci95, after_ci95, net_change_ci95 : ndarray of shape (k, 2)
    positive : ndarray of shape (k,)
        Share of bootstrap replicates in which the net shift toward the category is
        positive (NaN without intervals).
    n : int
        Participants in the table (answered both surveys and every condition's question).
    """

    transitions: NDArray[np.float64]
    transitions_ci95: NDArray[np.float64]
    group_size: float
    group_ci95: tuple[float, float]
    before: NDArray[np.float64]
    after: NDArray[np.float64]
    net_change: NDArray[np.float64]
    before_ci95: NDArray[np.float64]
    after_ci95: NDArray[np.float64]
    net_change_ci95: NDArray[np.float64]
    positive: NDArray[np.float64]
    n: int
    iterations: int
    converged: bool
    notes: tuple[str, ...] = field(default=())


def plan_change(
    specs: Mapping[str, Spec],
    before: str,
    after: str,
    where: Sequence[Condition] = (),
    *,
    n: int,
) -> CellPlan:
    """The cells of a change: the ``before`` and ``after`` axes, then the condition's.

    ``specs[before]`` and ``specs[after]`` must be discrete with the same number of
    categories; ``where`` may restrict them too (e.g. only those against before).
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    for name in (before, after):
        if not isinstance(specs.get(name), DiscreteSpec):
            raise ValueError(f"{name!r} must be a discrete attribute of specs")
    k_before, k_after = (specs[name].k for name in (before, after))  # type: ignore[union-attr]
    if k_before != k_after:
        raise ValueError(f"before has {k_before} categories, after {k_after}")
    if before == after:
        raise ValueError("before and after must be two attributes")
    checked = _group(_as_attributes(specs), where) if where else {}
    groups: dict[str, list[Condition]] = {
        before: list(checked.pop(before, [])),
        after: list(checked.pop(after, [])),
    }
    groups.update(checked)
    return _plan(specs, groups, n=n, target=None)


def change_from_table(
    plan: CellPlan,
    table: CellTable,
    *,
    ci: bool = True,
    n_boot: int = N_BOOT,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> ChangeResult:
    """The (before, after) table of :func:`plan_change`'s plan from its cell table.

    One joint EM over the product channel (:func:`.cells._fit`), restricted to the true
    cells meeting the plan's condition and summed over the condition's axes; every
    interval is the percentile interval of the same ``n_boot`` participant-bootstrap
    refits (:func:`~reconstruction.algorithms.uncertainty.percentile_interval`).
    """
    _check_options(n_boot, max_iter)
    n = _require_rows(table)
    axes, trimmed, _ = _trimmed(plan, table)
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    inside = _joint_mask(fit.axes)
    extra = tuple(range(2, len(fit.axes)))
    joint = n * (fit.theta * inside).sum(axis=extra)
    k = joint.shape[0]
    size = float(joint.sum())
    before, after = _shares(joint)
    nan2 = np.full((k, 2), math.nan)
    cells_ci, before_ci, after_ci, net_ci = np.full((k, k, 2), math.nan), nan2, nan2, nan2
    group_ci = (math.nan, math.nan)
    positive = np.full(k, math.nan)
    if ci:
        boot = fit.bootstrap(n_boot, default_rng(rng), tol, max_iter)
        joints = n * (boot * inside).sum(axis=tuple(a + 1 for a in extra))
        cells_ci = percentile_interval(joints)
        boot_before, boot_after = _shares(joints)
        before_ci = percentile_interval(boot_before)
        after_ci = percentile_interval(boot_after)
        net_ci = percentile_interval(boot_after - boot_before)
        low, high = percentile_interval(joints.sum(axis=(1, 2)))
        group_ci = (float(low), float(high))
        positive = np.mean(boot_after - boot_before > 0, axis=0)
    notes: tuple[str, ...] = ()
    if not fit.converged:
        notes = (Note(gettext_noop("the joint EM did not meet its stopping rule")),)
    return ChangeResult(
        transitions=np.asarray(joint, dtype=np.float64),
        transitions_ci95=np.asarray(cells_ci, dtype=np.float64).reshape(k, k, 2),
        group_size=size,
        group_ci95=group_ci,
        before=before,
        after=after,
        net_change=after - before,
        before_ci95=before_ci,
        after_ci95=after_ci,
        net_change_ci95=net_ci,
        positive=np.asarray(positive, dtype=np.float64),
        n=n,
        iterations=fit.iterations,
        converged=fit.converged,
        notes=notes,
    )


def _shares(joint: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Before (row) and after (column) shares of one ``(k, k)`` table or a batch."""
    total = joint.sum(axis=(-2, -1), keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    shares = joint / safe
    return shares.sum(axis=-1), shares.sum(axis=-2)


def change(
    before: DiscreteAttribute,
    after: DiscreteAttribute,
    *,
    ci: bool = True,
    n_boot: int = N_BOOT,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> ChangeResult:
    """The array API: the change of one question between two aligned answer columns.

    Row ``r`` of both columns is the same participant. Counts the pairs' cells
    (:func:`.cells.cell_table`, the reference of the SQL ``GROUP BY``) and calls
    :func:`change_from_table`.
    """
    if before.codes.shape != after.codes.shape:
        raise ValueError("before and after must hold the same participants, row by row")
    specs = {"before": DiscreteSpec(before.channel), "after": DiscreteSpec(after.channel)}
    plan = plan_change(specs, "before", "after", n=max(int(before.codes.size), 1))
    table = cell_table(plan, {"before": before.codes, "after": after.codes})
    return change_from_table(plan, table, ci=ci, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=rng)
