"""Reconstructed distributions of an attribute, overall or within a group.

Pure module: numpy and scipy only.

Overall: EM/AS (001_28af1923c784b480.txt, Figure 2) for a discrete attribute, EM or AS
over intervals (Sections III-B2/3, :mod:`reconstruction.algorithms.continuous`) for a
continuous one. Within a group: the joint reconstruction of :mod:`.cells` restricted to
the true cells that meet the condition (:func:`distribution_from_table`, which the array
API's :func:`distribution` calls with its rows' cell table).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.continuous import (
    LATTICE_SMOOTHING,
    IntervalReconstruction,
    default_smoothing,
    reconstruct_bins,
    reconstruct_continuous,
    whole_number_step,
)
from reconstruction.algorithms.counts import reported_counts
from reconstruction.algorithms.discrete import em_as
from reconstruction.algorithms.queries.cells import (
    CellPlan,
    CellTable,
    _Axis,
    _fit,
    _joint_mask,
    _require_rows,
    _row_cells,
    _trimmed,
    _whole_number_note,
    _whole_number_notes,
)
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    ContinuousSpec,
    DiscreteAttribute,
    _check_options,
    _group,
    table_size,
)
from reconstruction.algorithms.result import Reconstruction
from reconstruction.algorithms.uncertainty import default_rng, percentile_interval


def distribution(
    table: Mapping[str, Attribute],
    attribute: str,
    where: Sequence[Condition] = (),
    *,
    method: str | None = None,
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> Reconstruction | IntervalReconstruction:
    """Reconstructed distribution of an attribute, overall or within a group.

    Overall: EM/AS (001_28af1923c784b480.txt, Figure 2) for a discrete attribute, EM or
    AS over intervals (001, Sections III-B2/3) for a continuous one. Within a group
    (beyond the document): the joint reconstruction of :func:`count_joint` over the
    attribute and the condition's attributes, restricted to the true cells that meet the
    condition and summed over the other attributes; counts then sum to the estimated
    group size. Intervals are bootstrap percentiles. A continuous attribute without a
    declared ``step`` whose reports show whole numbers is modelled on the lattice of
    whole numbers, as in :func:`count_joint` (:func:`~.continuous.whole_number_step`),
    and the result says so. Where the reports cannot settle it, the interval model
    stays: unlike a count, a distribution cannot average the two models, whose cells
    differ.

    Parameters
    ----------
    method : str, optional
        Overall only: ``"em_as"`` for a discrete attribute; ``"em"`` (default) or
        ``"as"`` for a continuous one. Within a group the joint EM is used.

    Returns
    -------
    Reconstruction or IntervalReconstruction
        ``method`` is ``"em_as"``, ``"em"``, ``"as"`` or ``"joint_em"``.
    """
    table_size(table)
    target = table.get(attribute)
    if target is None:
        raise ValueError(f"unknown attribute {attribute!r}; known: {sorted(table)}")
    _check_options(n_boot, max_iter)
    generator = default_rng(rng)
    if not where:
        if isinstance(target, DiscreteAttribute):
            if method not in (None, "em_as"):
                raise ValueError(f"unknown method {method!r} for a discrete attribute; use em_as")
            return em_as(
                reported_counts(target.codes, target.channel.shape[1]),
                target.channel,
                tol=1e-8 if tol is None else tol,
                max_iter=max_iter,
                ci=ci,
                rng=generator,
            )
        chosen = "em" if method is None else method
        if chosen not in ("em", "as"):
            raise ValueError(f"unknown method {method!r} for a continuous attribute; use em or as")
        # As count_joint: without a declared step, reports that show whole numbers put
        # the cells on the lattice of whole numbers (and the result says so).
        step = target.step
        if step is None:
            step = whole_number_step(target.values, target.noise, target.low, target.high)
        overall = reconstruct_continuous(
            target.values,
            target.noise,
            target.low,
            target.high,
            method=cast(Literal["em", "as"], chosen),
            tol=tol,
            max_iter=max_iter,
            ci=ci,
            n_boot=n_boot,
            rng=generator,
            step=step,
        )
        if target.step is None and step is not None:
            inner = overall.reconstruction
            notes = (*inner.notes, _whole_number_note(attribute))
            overall = dataclasses.replace(
                overall, reconstruction=dataclasses.replace(inner, notes=notes)
            )
        return overall
    if method not in (None, "joint_em"):
        raise ValueError("within a group the distribution comes from the joint EM")
    groups = _group(table, where)
    plan, cells, _ = _row_cells(table, groups, target=attribute)
    return distribution_from_table(
        plan, cells, ci=ci, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=generator
    )


def distribution_from_table(
    plan: CellPlan,
    table: CellTable,
    *,
    method: Literal["em", "as"] | None = None,
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> Reconstruction | IntervalReconstruction:
    """The distribution of the plan's target, overall or within the plan's condition.

    Overall (no condition) for a continuous target: EM (EMS) or AS over intervals
    (001_28af1923c784b480.txt, Sections III-B2/3), as
    :func:`~.continuous.reconstruct_continuous`. Within a group: the joint EM of
    :func:`distribution`. A discrete target without a condition needs no plan:
    use :func:`~.methods.reconstruct` on its reported counts.
    """
    attribute = plan.target
    if attribute is None:
        raise ValueError("the plan has no target: plan_cells(..., target=attribute)")
    _check_options(n_boot, max_iter)
    _require_rows(table)
    generator = default_rng(rng)
    if not plan.groups:
        (axis,) = plan.axes
        if axis.edges is None or axis.reported_edges is None:
            raise ValueError("use methods.reconstruct for a discrete attribute's distribution")
        chosen = "em" if method is None else method
        if chosen not in ("em", "as"):
            raise ValueError(f"unknown method {method!r} for a continuous attribute; use em or as")
        spec = plan.specs[attribute]
        assert isinstance(spec, ContinuousSpec)
        strength = default_smoothing(spec.noise, chosen)
        if strength > 0 and spec.step is not None and np.allclose(np.diff(axis.edges), spec.step):
            strength = LATTICE_SMOOTHING  # one cell per lattice point, as axis_model says
        return _overall_intervals(
            axis, table.counts, chosen, strength, ci, n_boot, tol, max_iter, generator
        )
    if method is not None:
        raise ValueError("within a group the distribution comes from the joint EM")
    axes, trimmed, _ = _trimmed(plan, table)
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    position = [ax.name for ax in fit.axes].index(attribute)
    others = tuple(a for a in range(len(fit.axes)) if a != position)
    inside = _joint_mask(fit.axes)
    counts = fit.n * (fit.theta * inside).sum(axis=others)
    size = counts.sum()
    proportions = counts / size if size > 0 else np.full(counts.shape, math.nan)
    if ci:
        boot = fit.bootstrap(n_boot, generator, tol, max_iter)
        per_cell = fit.n * (boot * inside).sum(axis=tuple(a + 1 for a in others))
        interval = percentile_interval(per_cell)
    else:
        interval = np.full((counts.size, 2), math.nan)
    result = Reconstruction(
        counts=np.asarray(counts, dtype=np.float64),
        proportions=np.asarray(proportions, dtype=np.float64),
        ci95=np.asarray(interval, dtype=np.float64),
        iterations=fit.iterations,
        converged=fit.converged,
        method="joint_em",
        notes=(
            Note(gettext_noop("counts within the group; they sum to the estimated group size")),
            *_whole_number_notes(fit.axes),
        ),
    )
    axis = fit.axes[position]
    if axis.edges is None:
        return result
    assert axis.reported_edges is not None
    return IntervalReconstruction(result, axis.edges, axis.reported_edges)


def _overall_intervals(
    axis: _Axis,
    counts: NDArray[np.float64],
    method: str,
    strength: float,
    ci: bool,
    n_boot: int,
    tol: float | None,
    max_iter: int,
    generator: np.random.Generator,
) -> IntervalReconstruction:
    """:func:`~reconstruction.algorithms.continuous.reconstruct_bins` on the axis's
    reported bin counts (AS or EM/EMS, 001_28af1923c784b480.txt, Sections III-B2/3)."""
    assert axis.edges is not None and axis.reported_edges is not None
    return reconstruct_bins(
        counts,
        axis.channel,
        axis.edges,
        axis.reported_edges,
        method=cast(Literal["em", "as"], method),
        strength=strength,
        tol=tol,
        max_iter=max_iter,
        ci=ci,
        n_boot=n_boot,
        rng=generator,
    )
