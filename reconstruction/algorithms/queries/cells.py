"""The joint model over reported cells: the one estimator core of the queries.

Pure module: numpy and scipy only.

Every estimator of this package except Figure 3's assignment and the naive count reads
only the *sufficient statistics* of the reported data: how many participants reported
each joint cell (discrete codes x continuous values cut into the model's reported bins)
and, for a mean, the sum and the sum of squares of the target's values in each cell
(001_28af1923c784b480.txt, Sections III-B and IV-A: the EM/AS fixed point reads the
reported counts only). Those tables can be counted where the data live (SQL ``GROUP BY``
with ``width_bucket``), so a fit does not grow with the number of participants.

The flow, shared by the array API (a table of rows) and the service (tables counted in
SQL):

1. :func:`plan_cells` turns specifications (:class:`~.conditions.DiscreteSpec`,
   :class:`~.conditions.ContinuousSpec`), the condition and ``n`` into a
   :class:`CellPlan`: one axis per attribute (:class:`_Axis`, the channel of
   001's Figure 2 per attribute; continuous attributes cut into intervals that include
   the thresholds, Section IV-A1, or on their lattice).
2. The cells are counted: :func:`cell_table` (numpy, also the reference for SQL: a value
   ``v`` falls in reported bin ``#{inner edges e : e <= v}``, ``width_bucket``), giving a
   :class:`CellTable`. The array API does this for its rows in :func:`_row_cells`,
   deciding first whether an undeclared continuous attribute holds whole numbers.
3. :func:`_trimmed` drops empty outer reported bins (exact) and :func:`_fit` runs the EM
   fixed point of 001, Figure 2 over the product channel
   (:func:`~reconstruction.algorithms.continuous.fixed_point`); :class:`_JointFit` holds
   the estimate, its participant bootstrap and Bayes' posteriors.

The estimators (:mod:`.counts`, :mod:`.means`, :mod:`.distributions`,
:mod:`.posteriors`, :mod:`.sampling`) start from a plan and a table.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.continuous import (
    axis_model,
    default_smoothing,
    fixed_point,
    smoothing_matrix,
    whole_number_step,
)
from reconstruction.algorithms.continuous.em import _forward
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    ContinuousSpec,
    DiscreteAttribute,
    DiscreteSpec,
    Spec,
    _as_attributes,
    _continuous_mask,
    _discrete_set,
    _group,
    condition_cuts,
    table_size,
)
from reconstruction.algorithms.uncertainty import percentile_interval

Resolution = Literal["fine", "thresholds"]

_JOINT_MAX_CELLS = 20_000


# Replicates start at the estimate and must only move by their sampling error (about
# n^-1/2 per cell), so a tolerance of 1e-5 on a cell's proportion is ample.
_BOOTSTRAP_TOL = 1e-5


# EMS strength on the target axis of a conditional mean (see _plan): on simulated
# incomes 0.05 (the default elsewhere) biased the mean by about 1%, 0.01 by little more than
# plain EM does, while keeping EM's iterations few (bench/bench_queries.py).
_TARGET_SMOOTHING = 0.01


@dataclass(frozen=True)
class _Axis:
    """One attribute of a joint reconstruction: its channel, reported cells and mask."""

    name: str
    channel: NDArray[np.float64]
    cells: NDArray[np.intp]
    mask: NDArray[np.bool_]
    edges: NDArray[np.float64] | None = None
    reported_edges: NDArray[np.float64] | None = None
    smoother: NDArray[np.float64] | None = None
    whole_numbers: bool = False


def _whole_number_note(name: str) -> str:
    return Note(
        gettext_noop(
            "the reports of %(name)s show whole numbers: its true values were modelled on "
            "the lattice of whole numbers (declare step to make this explicit)"
        ),
        name=name,
    )


def _whole_number_notes(axes: Sequence[_Axis]) -> tuple[str, ...]:
    """Notes for the axes whose whole-number truths were detected (no declared step)."""
    return tuple(_whole_number_note(ax.name) for ax in axes if ax.whole_numbers)


def _joint_mask(axes: Sequence[_Axis]) -> NDArray[np.bool_]:
    mask = np.ones((), dtype=bool)
    for ax in axes:
        mask = np.multiply.outer(mask, ax.mask)
    return np.asarray(mask, dtype=bool)


@dataclass(frozen=True)
class _JointFit:
    axes: list[_Axis]
    counts: NDArray[np.float64]
    theta: NDArray[np.float64]
    iterations: int
    converged: bool

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def smoothing(self) -> list[NDArray[np.float64] | None] | None:
        smoothers = [ax.smoother for ax in self.axes]
        return smoothers if any(m is not None for m in smoothers) else None

    def draws(self, n_boot: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """Joint reported cell counts of ``n_boot`` resamples of the participants.

        Resampling participants with replacement only moves them between reported
        cells, so each replicate is one multinomial draw over the cells: no work per
        participant.
        """
        flat = self.counts.ravel()
        draws = rng.multinomial(self.n, flat / flat.sum(), size=n_boot).astype(np.float64)
        return draws.reshape((n_boot, *self.counts.shape))

    def refit(
        self, draws: NDArray[np.float64], tol: float | None, max_iter: int
    ) -> NDArray[np.float64]:
        """Joint estimates of a batch of reported tables, started afresh.

        Each replicate starts half way between the estimate and the uniform start of
        001_28af1923c784b480.txt, Figure 2 (as :func:`~.discrete.em_as` does). EM's
        update is multiplicative, so replicates started at the estimate could never
        move a true cell it puts at (about) 0, and without smoothing (only discrete
        attributes) the interval of a count whose truth is 0 collapsed: (0.02, 0.33) for
        two yes/no questions under RR 0.8 at n = 2,000. With smoothing the fixed point
        does not depend on the start, and at n = 1,000 (the joint count of issue 10)
        coverage over 400 surveys was the same from either start (93.2%).
        """
        channels = [ax.channel for ax in self.axes]
        start = 0.5 * (self.theta + 1.0 / self.theta.size)
        theta, _, _ = fixed_point(
            draws,
            channels,
            stopping="em",
            tol=_BOOTSTRAP_TOL if tol is None else tol,
            max_iter=max_iter,
            initial=start,
            smoothing=self.smoothing,
        )
        return theta

    def bootstrap(
        self, n_boot: int, rng: np.random.Generator, tol: float | None, max_iter: int
    ) -> NDArray[np.float64]:
        """Joint estimates of ``n_boot`` participant-bootstrap replicates (vectorised)."""
        return self.refit(self.draws(n_boot, rng), tol, max_iter)

    def posterior(self, theta: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """``Pr(true cell meets the condition | reported cell)`` for every reported cell.

        ``theta`` may be one joint estimate or a batch ``(B, t1, ..., td)``; the result
        has the matching reported shape. A reported cell that a replicate gives no mass
        (a bootstrap resample without anyone there, common with one cell per lattice
        point) takes the estimate's posterior, not 0: Bayes' rule says nothing there.
        """
        estimate = self.theta if theta is None else theta
        single = estimate.ndim == len(self.axes)
        batch = estimate[None] if single else estimate
        channels = [ax.channel for ax in self.axes]
        inside = _forward(batch * _joint_mask(self.axes), channels)
        total = _forward(batch, channels)
        result = np.where(total > 0, inside / np.where(total > 0, total, 1.0), 0.0)
        if theta is not None and np.any(total <= 0):
            result = np.where(total > 0, result, self.posterior()[None])
        return np.asarray(result[0] if single else result, dtype=np.float64)


def _percentiles(replicates: NDArray[np.float64]) -> tuple[float, float]:
    """95% bootstrap percentile interval of one quantity's replicates
    (:func:`~.uncertainty.percentile_interval`, the rule every percentile interval shares)."""
    low, high = percentile_interval(replicates)
    return float(low), float(high)


@dataclass(frozen=True)
class CellPlan:
    """The reported cells to count: one axis per attribute, in :attr:`names` order.

    Attributes
    ----------
    names : tuple of str
    reported_edges : tuple of (ndarray or None)
        For a continuous axis the edges of its reported bins (outer bins open: a value
        below the second edge is in bin 0, at or above the last-but-one in the last);
        ``None`` for a discrete axis (its cells are the codes ``0..k-1``).
    shape : tuple of int
        Number of reported cells per axis.
    n : int
        The number of participants the intervals were chosen for.
    """

    names: tuple[str, ...]
    reported_edges: tuple[NDArray[np.float64] | None, ...]
    shape: tuple[int, ...]
    n: int
    axes: tuple[_Axis, ...]
    groups: Mapping[str, Sequence[Condition]]
    target: str | None
    specs: Mapping[str, Spec]

    def inner_edges(self, name: str) -> NDArray[np.float64] | None:
        """The thresholds of ``width_bucket(value, inner_edges)`` for axis ``name``."""
        edges = self.reported_edges[self.names.index(name)]
        return None if edges is None else edges[1:-1]


@dataclass(frozen=True)
class CellTable:
    """Counts of reported cells (shape :attr:`CellPlan.shape`) and a target's moments.

    ``sums`` and ``squares`` hold, per cell, the sum and the sum of squares of the
    target's *reported* values (for a mean); ``None`` otherwise.
    """

    counts: NDArray[np.float64]
    sums: NDArray[np.float64] | None = None
    squares: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.float64)
        if np.any(counts < 0) or not np.all(np.isfinite(counts)):
            raise ValueError("cell counts must be finite and non-negative")
        object.__setattr__(self, "counts", counts)
        for name in ("sums", "squares"):
            value = getattr(self, name)
            if value is not None:
                array = np.asarray(value, dtype=np.float64)
                if array.shape != counts.shape:
                    raise ValueError(f"{name} must have the counts' shape {counts.shape}")
                object.__setattr__(self, name, array)

    @property
    def n(self) -> int:
        return round(float(self.counts.sum()))


def _plan_axis(
    name: str,
    spec: Spec,
    conditions: Sequence[Condition],
    *,
    n: int,
    n_intervals: int | None,
    resolution: Resolution = "fine",
    channels: dict[tuple[object, ...], NDArray[np.float64]] | None = None,
) -> _Axis:
    """The model of one axis (:func:`~reconstruction.algorithms.continuous.axis_model`
    for a continuous attribute); ``channels``: this attribute's channels already computed
    for other models of the same request."""
    empty = np.zeros(0, dtype=np.intp)
    if isinstance(spec, DiscreteSpec):
        mask = np.ones(spec.k, dtype=bool)
        if conditions:
            mask[:] = False
            mask[list(_discrete_set(conditions))] = True
        return _Axis(name, spec.channel, empty, mask)
    model = axis_model(
        spec.noise,
        spec.low,
        spec.high,
        cuts=condition_cuts(conditions),
        step=spec.step,
        thresholds_only=resolution == "thresholds",
        n_intervals=n_intervals,
        n=n,
        channels=channels,
    )
    edges, bins, channel = model.edges, model.reported_edges, model.channel
    mask = _continuous_mask(model.representatives, conditions)
    strength = model.smoothing
    smoother = smoothing_matrix(edges, strength) if strength > 0 else None
    return _Axis(name, channel, empty, mask, edges, bins, smoother)


def plan_cells(
    specs: Mapping[str, Spec],
    where: Sequence[Condition] = (),
    *,
    n: int,
    target: str | None = None,
    resolution: Resolution = "fine",
) -> CellPlan:
    """Plan the joint reported cells of a condition's attributes (and a target).

    The axes are those :func:`~.counts.count_joint` and :func:`~.means.mean` build for
    ``n`` participants: continuous attributes on 20-40 regular intervals (fewer when
    several meet, so the joint table stays below 20,000 true cells) with the
    condition's thresholds as edges (001_28af1923c784b480.txt, Section IV-A1), their
    reported bins extending over the noise's reach.

    Parameters
    ----------
    specs : mapping of name -> DiscreteSpec | ContinuousSpec
    where : sequence of Condition
        The conjunction (may be empty).
    n : int
        Number of participants (chooses the interval count, Rice's rule).
    target : str, optional
        An attribute analysed beyond the condition (a mean's or a distribution's); it
        gets its own axis, lightly smoothed, unless the condition names it.
    resolution : {"fine", "thresholds"}
        ``fine`` (default): continuous attributes on a regular grid of 20-40 intervals
        plus the thresholds; ``thresholds``: only the 2-3 intervals the thresholds cut.

    Raises
    ------
    ValueError
        Unknown attributes, conditions that do not fit them, ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    groups = _group(_as_attributes(specs), where) if where else {}
    return _plan(specs, groups, n=n, target=target, resolution=resolution)


def _plan(
    specs: Mapping[str, Spec],
    groups: Mapping[str, Sequence[Condition]],
    *,
    n: int,
    target: str | None,
    resolution: Resolution = "fine",
    channels: dict[str, dict[tuple[object, ...], NDArray[np.float64]]] | None = None,
) -> CellPlan:
    """:func:`plan_cells` for a condition already checked and grouped by attribute.

    ``channels``: per attribute, the channels already computed for other models of the
    same request (filled in here), so that they are computed once.

    A continuous ``target`` axis (of a conditional mean or distribution) is smoothed
    much more lightly than the condition's axes (:data:`_TARGET_SMOOTHING`): the mean's
    weights rest on how the target varies with the condition, which stronger smoothing
    flattens.
    """
    names = list(groups)
    if target is not None:
        if target not in specs:
            raise ValueError(f"unknown attribute {target!r}; known: {sorted(specs)}")
        if target not in groups:
            names.append(target)
    if not names:
        raise ValueError("nothing to plan: give a condition or a target")
    discrete_cells = math.prod(
        spec.k for spec in (specs[name] for name in names) if isinstance(spec, DiscreteSpec)
    )
    n_continuous = sum(isinstance(specs[name], ContinuousSpec) for name in names)
    n_intervals: int | None = None
    if n_continuous:
        per_axis = int((_JOINT_MAX_CELLS / discrete_cells) ** (1.0 / n_continuous))
        if per_axis < 40:
            n_intervals = max(per_axis, 2)
    axes = [
        _plan_axis(
            name,
            specs[name],
            groups.get(name, ()),
            n=n,
            n_intervals=n_intervals,
            resolution=resolution,
            channels=None if channels is None else channels.setdefault(name, {}),
        )
        for name in names
    ]
    if target is not None and target not in groups and axes[-1].edges is not None:
        spec = specs[target]
        assert isinstance(spec, ContinuousSpec)
        strength = _TARGET_SMOOTHING if default_smoothing(spec.noise) > 0 else 0.0
        smoother = smoothing_matrix(axes[-1].edges, strength) if strength > 0 else None
        axes[-1] = dataclasses.replace(axes[-1], smoother=smoother)
    return CellPlan(
        names=tuple(names),
        reported_edges=tuple(ax.reported_edges for ax in axes),
        shape=tuple(int(ax.channel.shape[1]) for ax in axes),
        n=int(n),
        axes=tuple(axes),
        groups=groups,
        target=target,
        specs=dict(specs),
    )


# --------------------------------------------------------------------------- counting


def cell_index(values: ArrayLike, reported: NDArray[np.float64]) -> NDArray[np.intp]:
    """Reported bin of each value: the number of inner edges at or below it.

    The numpy twin of PostgreSQL's ``width_bucket(value, inner_edges)``.
    """
    inner = np.asarray(reported, dtype=np.float64)[1:-1]
    return np.asarray(
        np.searchsorted(inner, np.asarray(values, dtype=np.float64), side="right"),
        dtype=np.intp,
    )


def _cell_indices(plan: CellPlan, columns: Mapping[str, ArrayLike]) -> list[NDArray[np.intp]]:
    """Each participant's reported cell on every axis of the plan."""
    indices = []
    for name, edges in zip(plan.names, plan.reported_edges, strict=True):
        column = np.asarray(columns[name])
        indices.append(
            column.astype(np.intp) if edges is None else cell_index(column, edges)
        )  # fmt: skip
    return indices


def flat_cells(plan: CellPlan, columns: Mapping[str, ArrayLike]) -> NDArray[np.intp]:
    """Each participant's reported cell of the plan, as a flat index into ``plan.shape``.

    ``columns`` holds reported codes of discrete axes and reported values of continuous
    ones (aligned, any number of participants: a chunk of a stream will do).
    """
    indices = _cell_indices(plan, columns)
    return np.asarray(np.ravel_multi_index(tuple(indices), plan.shape), dtype=np.intp)


def cell_table(
    plan: CellPlan,
    columns: Mapping[str, ArrayLike],
    target_values: ArrayLike | None = None,
) -> CellTable:
    """Count the plan's cells from aligned columns (the reference for SQL counting).

    Parameters
    ----------
    columns : mapping of name -> array of shape (n,)
        Reported codes of discrete axes, reported values of continuous ones.
    target_values : array of shape (n,), optional
        Reported values whose per-cell sums and sums of squares are wanted.
    """
    return _count_cells(plan, flat_cells(plan, columns), target_values)


def _count_cells(
    plan: CellPlan, flat: NDArray[np.intp], target_values: ArrayLike | None
) -> CellTable:
    """The cell table of participants in the flat cells ``flat`` (one pass of bincount)."""
    size = math.prod(plan.shape)
    counts = np.bincount(flat, minlength=size).reshape(plan.shape).astype(np.float64)
    if target_values is None:
        return CellTable(counts)
    y = np.asarray(target_values, dtype=np.float64)
    sums = np.bincount(flat, weights=y, minlength=size).reshape(plan.shape).astype(np.float64)
    squares: NDArray[np.float64] = np.asarray(
        np.bincount(flat, weights=y * y, minlength=size).reshape(plan.shape), dtype=np.float64
    )
    return CellTable(counts, sums, squares)


def _trimmed(plan: CellPlan, table: CellTable) -> tuple[list[_Axis], CellTable, list[int]]:
    """Drop empty outer reported bins of continuous axes (exact for EM and posteriors).

    Returns the trimmed axes and table, and each axis's first kept reported cell.
    """
    if table.counts.shape != plan.shape:
        raise ValueError(f"the table's shape {table.counts.shape} is not the plan's {plan.shape}")
    axes: list[_Axis] = []
    slices: list[slice] = []
    offsets: list[int] = []
    for position, ax in enumerate(plan.axes):
        if ax.edges is None or ax.reported_edges is None:
            axes.append(ax)
            slices.append(slice(None))
            offsets.append(0)
            continue
        others = tuple(a for a in range(len(plan.axes)) if a != position)
        margin = table.counts.sum(axis=others) if others else table.counts
        occupied = np.flatnonzero(margin > 0)
        first, last = (
            (int(occupied[0]), int(occupied[-1])) if occupied.size else (0, margin.size - 1)
        )
        channel = np.ascontiguousarray(ax.channel[:, first : last + 1])
        bins = ax.reported_edges[first : last + 2]
        axes.append(dataclasses.replace(ax, channel=channel, reported_edges=bins))
        slices.append(slice(first, last + 1))
        offsets.append(first)
    index = tuple(slices)

    def cut(array: NDArray[np.float64] | None) -> NDArray[np.float64] | None:
        return None if array is None else np.ascontiguousarray(array[index])

    counts = cut(table.counts)
    assert counts is not None
    return axes, CellTable(counts, cut(table.sums), cut(table.squares)), offsets


def _fit(
    axes: list[_Axis], counts: NDArray[np.float64], tol: float | None, max_iter: int
) -> _JointFit:
    """The EM fixed point of 001_28af1923c784b480.txt, Figure 2 over the product channel
    of ``axes`` (EMS where an axis is smoothed), on a table of reported cells."""
    smoothers = [ax.smoother for ax in axes]
    theta, iterations, converged = fixed_point(
        counts,
        [ax.channel for ax in axes],
        stopping="em",
        tol=tol,
        max_iter=max_iter,
        smoothing=smoothers if any(m is not None for m in smoothers) else None,
    )
    return _JointFit(axes, counts, theta, iterations, converged)


def _require_rows(table: CellTable) -> int:
    n = table.n
    if n < 1:
        raise ValueError("the table has no rows")
    return n


# --------------------------------------------------------------------------- rows


def _row_specs(
    table: Mapping[str, Attribute],
    names: Sequence[str],
    lattice: Mapping[str, bool] | None,
) -> tuple[dict[str, Spec], frozenset[str]]:
    """The specifications of a table's attributes, with the cells of each undeclared
    continuous attribute decided, and the names whose whole numbers were detected.

    ``lattice[name]`` True/False forces whole numbers or intervals on a continuous
    attribute without a declared step; otherwise the reports decide
    (:func:`~reconstruction.algorithms.continuous.whole_number_step`).
    """
    specs: dict[str, Spec] = {}
    detected: set[str] = set()
    for name in names:
        attr = table[name]
        if isinstance(attr, DiscreteAttribute):
            specs[name] = DiscreteSpec(attr.channel)
            continue
        step = attr.step
        forced = None if lattice is None else lattice.get(name)
        if step is None and forced is None:
            step = whole_number_step(attr.values, attr.noise, attr.low, attr.high)
        elif step is None and forced:
            step = 1.0
        specs[name] = ContinuousSpec(attr.noise, attr.low, attr.high, step)
        if attr.step is None and step is not None:
            detected.add(name)
    return specs, frozenset(detected)


def _row_cells(
    table: Mapping[str, Attribute],
    groups: Mapping[str, Sequence[Condition]],
    *,
    target: str | None = None,
    target_values: NDArray[np.float64] | None = None,
    resolution: Resolution = "fine",
    lattice: Mapping[str, bool] | None = None,
    channels: dict[str, dict[tuple[object, ...], NDArray[np.float64]]] | None = None,
) -> tuple[CellPlan, CellTable, list[NDArray[np.intp]]]:
    """The plan and cell table of a table's rows: how the array API enters the core.

    ``groups`` is a condition checked against ``table`` (:func:`~.conditions._group`);
    ``target_values`` are summed per cell (a mean's values). Axes whose whole numbers the
    reports showed are marked (``_Axis.whole_numbers``), so results can say so. Also
    returns each row's reported cell on every axis.
    """
    names = list(groups)
    if target is not None and target not in groups:
        names.append(target)
    specs, detected = _row_specs(table, names, lattice)
    plan = _plan(
        specs,
        groups,
        n=table_size(table),
        target=target,
        resolution=resolution,
        channels=channels,
    )
    if detected:
        axes = tuple(
            dataclasses.replace(ax, whole_numbers=True) if ax.name in detected else ax
            for ax in plan.axes
        )
        plan = dataclasses.replace(plan, axes=axes)
    columns = {
        name: attr.codes if isinstance(attr, DiscreteAttribute) else attr.values
        for name, attr in ((name, table[name]) for name in names)
    }
    indices = _cell_indices(plan, columns)
    flat = np.asarray(np.ravel_multi_index(tuple(indices), plan.shape), dtype=np.intp)
    return plan, _count_cells(plan, flat, target_values), indices


def _row_axes(
    table: Mapping[str, Attribute],
    groups: Mapping[str, Sequence[Condition]],
    *,
    resolution: Resolution = "fine",
    lattice: Mapping[str, bool] | None = None,
    channels: dict[str, dict[tuple[object, ...], NDArray[np.float64]]] | None = None,
) -> tuple[list[_Axis], NDArray[np.float64]]:
    """The trimmed axes of a table's rows, each holding its rows' cells, and the counts.

    :func:`_row_cells` then :func:`_trimmed`: what :func:`_fit` reads, and what maps a
    row to its cell's posterior (``_Axis.cells``).
    """
    plan, cells, indices = _row_cells(
        table, groups, resolution=resolution, lattice=lattice, channels=channels
    )
    axes, trimmed, offsets = _trimmed(plan, cells)
    located = [
        dataclasses.replace(ax, cells=np.asarray(index - offset, dtype=np.intp))
        for ax, index, offset in zip(axes, indices, offsets, strict=True)
    ]
    return located, trimmed.counts


def _row_fit(
    table: Mapping[str, Attribute],
    groups: Mapping[str, Sequence[Condition]],
    tol: float | None,
    max_iter: int,
) -> _JointFit:
    """The joint reconstruction of a table's rows (:func:`_row_axes`, :func:`_fit`)."""
    axes, counts = _row_axes(table, groups)
    return _fit(axes, counts, tol, max_iter)
