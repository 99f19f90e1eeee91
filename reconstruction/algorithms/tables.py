"""Queries from tables of reported cells: the engine's entry points for data held elsewhere.

Pure module: numpy and scipy only.

Every estimator of :mod:`reconstruction.algorithms.queries` except Figure 3's assignment
and the naive count needs only the *sufficient statistics* of the reported data: how many
participants reported each joint cell (discrete codes x continuous values cut into the
model's reported bins) and, for a mean, the sum and the sum of squares of the target's
reported values in each cell (001_28af1923c784b480.txt, Sections III-B and IV-A: the
EM/AS fixed point reads the reported counts only). Those tables can be computed where
the data live (SQL ``GROUP BY`` with ``width_bucket``), so the cost of a fit does not
grow with the number of participants.

The flow:

1. :func:`plan_cells` turns attribute specifications (:class:`DiscreteSpec`,
   :class:`ContinuousSpec`; no data), the condition and the number of participants ``n``
   into a :class:`CellPlan`: one axis per attribute, with the reported bins of every
   continuous axis (:attr:`CellPlan.reported_edges`), the same intervals the array API
   would use for ``n`` participants.
2. The caller counts the cells: :func:`cell_index` (numpy reference) or SQL:
   a value ``v`` falls in reported bin ``#{inner edges e : e <= v}`` (``width_bucket(v,
   inner_edges)`` in PostgreSQL), a discrete answer in its code. It builds a
   :class:`CellTable` (``counts``, optionally ``sums`` and ``squares`` of a target).
3. :func:`count_from_table`, :func:`mean_from_table` and
   :func:`distribution_from_table` fit once and return the same result types as the
   array API (:func:`~.queries.count_joint`, :func:`~.queries.mean` with
   ``method="unbiased"``, :func:`~.queries.distribution`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms import NoiseModel, validate_stochastic
from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.continuous import (
    LATTICE_SMOOTHING,
    IntervalReconstruction,
    axis_model,
    default_smoothing,
    fixed_point,
    smoothing_matrix,
)
from reconstruction.algorithms.queries import (
    _JOINT_MAX_CELLS,
    _TARGET_SMOOTHING,
    _Z95,
    NAIVE_MEAN_NOTE,
    Attribute,
    Condition,
    ContinuousAttribute,
    CountResult,
    DiscreteAttribute,
    MeanResult,
    _Axis,
    _check_options,
    _continuous_mask,
    _discrete_set,
    _group,
    _joint_mask,
    _JointFit,
    _percentiles,
    averaged_count,
    condition_cuts,
    linear_noise,
    moments_mean,
)
from reconstruction.algorithms.result import Reconstruction
from reconstruction.algorithms.uncertainty import default_rng, percentile_interval

__all__ = [
    "CellPlan",
    "CellTable",
    "ContinuousSpec",
    "DiscreteSpec",
    "TopCandidates",
    "averaged_count_from_tables",
    "cell_index",
    "cell_table",
    "count_from_table",
    "distribution_from_table",
    "flat_cells",
    "mean_from_table",
    "naive_mean_from_moments",
    "plan_cells",
    "posterior_from_table",
    "spec_of",
]


@dataclass(frozen=True)
class DiscreteSpec:
    """A discrete attribute without its data: the channel ``C[i, j] = Pr(j | i)``."""

    channel: NDArray[np.float64]

    def __post_init__(self) -> None:
        object.__setattr__(self, "channel", validate_stochastic(self.channel))

    @property
    def k(self) -> int:
        return int(self.channel.shape[0])


@dataclass(frozen=True)
class ContinuousSpec:
    """A continuous attribute without its data: noise model and declared range."""

    noise: NoiseModel
    low: float
    high: float
    step: float | None = None

    def __post_init__(self) -> None:
        low, high = float(self.low), float(self.high)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"the declared range needs low < high, got [{self.low}, {self.high}]")
        if not isinstance(self.noise, NoiseModel):
            raise ValueError("noise must be a privacy.mechanisms noise model")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)


Spec = DiscreteSpec | ContinuousSpec


def spec_of(attribute: Attribute) -> Spec:
    """The specification of an array attribute (its data left out)."""
    if isinstance(attribute, DiscreteAttribute):
        return DiscreteSpec(attribute.channel)
    return ContinuousSpec(attribute.noise, attribute.low, attribute.high, attribute.step)


def _as_attributes(specs: Mapping[str, Spec]) -> dict[str, Attribute]:
    table: dict[str, Attribute] = {}
    for name, spec in specs.items():
        if isinstance(spec, DiscreteSpec):
            table[name] = DiscreteAttribute(np.zeros(0, dtype=np.intp), spec.channel)
        else:
            table[name] = ContinuousAttribute(
                np.zeros(0), spec.noise, spec.low, spec.high, step=spec.step
            )
    return table


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
) -> _Axis:
    """The model of one axis (the array API's ``_axis`` without binning the data)."""
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
        n_intervals=n_intervals,
        n=n,
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
) -> CellPlan:
    """Plan the joint reported cells of a condition's attributes (and a target).

    The axes are those :func:`~.queries.count_joint` and :func:`~.queries.mean` build for
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

    Raises
    ------
    ValueError
        Unknown attributes, conditions that do not fit them, ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    groups = _group(_as_attributes(specs), where) if where else {}
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
        _plan_axis(name, specs[name], groups.get(name, ()), n=n, n_intervals=n_intervals)
        for name in names
    ]
    if target is not None and target not in groups and axes[-1].edges is not None:
        spec = specs[target]
        assert isinstance(spec, ContinuousSpec)
        strength = _TARGET_SMOOTHING if default_smoothing(spec.noise) > 0 else 0.0
        smoother = smoothing_matrix(axes[-1].edges, strength) if strength > 0 else None
        last = axes[-1]
        axes[-1] = _Axis(
            last.name, last.channel, last.cells, last.mask, last.edges, last.reported_edges,
            smoother,
        )  # fmt: skip
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


def flat_cells(plan: CellPlan, columns: Mapping[str, ArrayLike]) -> NDArray[np.intp]:
    """Each participant's reported cell of the plan, as a flat index into ``plan.shape``.

    ``columns`` holds reported codes of discrete axes and reported values of continuous
    ones (aligned, any number of participants: a chunk of a stream will do).
    """
    indices = []
    for name, edges in zip(plan.names, plan.reported_edges, strict=True):
        column = np.asarray(columns[name])
        indices.append(
            column.astype(np.intp) if edges is None else cell_index(column, edges)
        )  # fmt: skip
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
    size = math.prod(plan.shape)
    flat = flat_cells(plan, columns)
    counts = np.bincount(flat, minlength=size).reshape(plan.shape).astype(np.float64)
    if target_values is None:
        return CellTable(counts)
    y = np.asarray(target_values, dtype=np.float64)
    sums = np.bincount(flat, weights=y, minlength=size).reshape(plan.shape).astype(np.float64)
    squares: NDArray[np.float64] = np.asarray(
        np.bincount(flat, weights=y * y, minlength=size).reshape(plan.shape), dtype=np.float64
    )
    return CellTable(counts, sums, squares)


# --------------------------------------------------------------------------- fitting


def _trimmed(plan: CellPlan, table: CellTable) -> tuple[list[_Axis], CellTable]:
    """Drop empty outer reported bins of continuous axes (exact for EM and posteriors)."""
    if table.counts.shape != plan.shape:
        raise ValueError(f"the table's shape {table.counts.shape} is not the plan's {plan.shape}")
    axes: list[_Axis] = []
    slices: list[slice] = []
    for position, ax in enumerate(plan.axes):
        if ax.edges is None or ax.reported_edges is None:
            axes.append(ax)
            slices.append(slice(None))
            continue
        others = tuple(a for a in range(len(plan.axes)) if a != position)
        margin = table.counts.sum(axis=others) if others else table.counts
        occupied = np.flatnonzero(margin > 0)
        first, last = (
            (int(occupied[0]), int(occupied[-1])) if occupied.size else (0, margin.size - 1)
        )
        channel = np.ascontiguousarray(ax.channel[:, first : last + 1])
        bins = ax.reported_edges[first : last + 2]
        axes.append(_Axis(ax.name, channel, ax.cells, ax.mask, ax.edges, bins, ax.smoother))
        slices.append(slice(first, last + 1))
    index = tuple(slices)

    def cut(array: NDArray[np.float64] | None) -> NDArray[np.float64] | None:
        return None if array is None else np.ascontiguousarray(array[index])

    counts = cut(table.counts)
    assert counts is not None
    return axes, CellTable(counts, cut(table.sums), cut(table.squares))


def _fit(
    axes: list[_Axis], counts: NDArray[np.float64], tol: float | None, max_iter: int
) -> _JointFit:
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


def count_from_table(
    plan: CellPlan,
    table: CellTable,
    *,
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """The joint count of :func:`~.queries.count_joint` from a table of reported cells.

    Same model and interval (bootstrap over participants as multinomial redraws of the
    cells, each replicate refitted); ``population`` is the table's total.
    """
    if not plan.groups:
        raise ValueError("empty condition: give at least one subcondition")
    _check_options(n_boot, max_iter)
    n = _require_rows(table)
    axes, trimmed = _trimmed(plan, table)
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    mask = _joint_mask(fit.axes)
    estimate = float(n * fit.theta[mask].sum())
    interval = (math.nan, math.nan)
    if ci:
        boot = fit.bootstrap(n_boot, default_rng(rng), tol, max_iter)
        interval = _percentiles(n * boot[:, mask].sum(axis=1))
    notes = (
        ()
        if fit.converged
        else (Note(gettext_noop("the joint EM did not meet its stopping rule")),)
    )
    return CountResult(estimate, interval, n, "joint", notes)


def averaged_count_from_tables(
    weights: Mapping[str, float],
    read: Callable[[Mapping[str, bool]], tuple[CellPlan, CellTable]],
    *,
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """:func:`~.queries.count_joint`'s average of whole numbers and intervals, from
    tables of reported cells.

    ``weights`` holds the weight of whole numbers of each undeclared continuous
    attribute the reports cannot settle (:func:`~.queries.whole_number_weight` of
    :func:`~.continuous.half_unit_evidence`); ``read(choice)`` returns the plan with
    ``step=1`` on the attributes ``choice`` puts on whole numbers (``True``), none on
    the others, and that plan's table. Each model is fitted as :func:`count_from_table`
    fits it, and the models are averaged by :func:`~.queries.averaged_count` (the array
    API's own averaging, interval and note): on the same reports the result equals
    :func:`~.queries.count_joint`'s.
    """
    _check_options(n_boot, max_iter)

    def fit(choice: Mapping[str, bool]) -> _JointFit:
        plan, table = read(choice)
        if not plan.groups:
            raise ValueError("empty condition: give at least one subcondition")
        _require_rows(table)
        axes, trimmed = _trimmed(plan, table)
        return _fit(axes, trimmed.counts, tol, max_iter)

    return averaged_count(weights, fit, ci=ci, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=rng)


def posterior_from_table(
    plan: CellPlan,
    table: CellTable,
    *,
    tol: float | None = None,
    max_iter: int = 10_000,
) -> tuple[NDArray[np.float64], float]:
    """``Pr(true values meet the condition | reported cell)`` for every cell of the plan.

    The posterior :func:`~.queries.sample` ranks candidates by (001_28af1923c784b480.txt,
    Section IV-B, drawing from the joint reconstruction of Section IV-A1), from one fit
    of the table; returns it with shape ``plan.shape`` and the joint count of the
    condition. Cells outside the occupied range get their posterior all the same (a
    participant who arrives there after the table was counted is still ranked).
    """
    if not plan.groups:
        raise ValueError("empty condition: give at least one subcondition")
    n = _require_rows(table)
    axes, trimmed = _trimmed(plan, table)
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    estimate = float(n * fit.theta[_joint_mask(fit.axes)].sum())
    full = _JointFit(list(plan.axes), table.counts, fit.theta, fit.iterations, fit.converged)
    return full.posterior(), estimate


class TopCandidates:
    """The ``quota`` best candidates of a stream, in bounded memory (``quota + chunk``).

    Candidates are ranked as :func:`~.queries.sample` ranks them: highest score
    (posterior) first, ties broken by a uniform random key. Offer chunks of any size;
    with the keys drawn in stream order from one seeded generator the result does not
    depend on the chunking, so a seed reproduces the draw.
    """

    def __init__(self, quota: int, width: int = 0) -> None:
        if quota < 1:
            raise ValueError(f"quota must be >= 1, got {quota}")
        self.quota = int(quota)
        self.ids = np.zeros(0, dtype=np.int64)
        self.scores = np.zeros(0, dtype=np.float64)
        self.keys = np.zeros(0, dtype=np.float64)
        self.rows = np.zeros((0, width), dtype=np.float64)
        self.offered = 0

    def offer(
        self,
        ids: ArrayLike,
        scores: ArrayLike,
        keys: ArrayLike,
        rows: ArrayLike | None = None,
    ) -> None:
        """Consider a chunk: ``ids``, ``scores``, random ``keys`` and optional ``rows``
        (one row of values per candidate, kept alongside the chosen ones)."""
        new_ids = np.asarray(ids, dtype=np.int64)
        self.offered += int(new_ids.size)
        block = (
            np.zeros((new_ids.size, self.rows.shape[1]))
            if rows is None
            else np.asarray(rows, dtype=np.float64).reshape(new_ids.size, self.rows.shape[1])
        )
        all_ids = np.concatenate([self.ids, new_ids])
        all_scores = np.concatenate([self.scores, np.asarray(scores, dtype=np.float64)])
        all_keys = np.concatenate([self.keys, np.asarray(keys, dtype=np.float64)])
        all_rows = np.concatenate([self.rows, block])
        order = np.lexsort((all_keys, -all_scores))[: self.quota]
        self.ids, self.scores = all_ids[order], all_scores[order]
        self.keys, self.rows = all_keys[order], all_rows[order]


def mean_from_table(
    plan: CellPlan,
    table: CellTable,
    specs: Mapping[str, Spec],
    *,
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> MeanResult:
    """The unbiased mean of :func:`~.queries.mean` from cell counts, sums and squares.

    The plan's ``target`` is the continuous attribute averaged. Without a condition the
    mean of the mean-corrected reported values (001, Section IV-A2); a condition on
    discrete attributes only uses the exactly unbiased weights ``g(r)``; otherwise the
    posterior-weighted mean over the joint reconstruction, with the same multinomial /
    normal-within-cell bootstrap as the array API; a condition on the target itself
    gives the mean over interval midpoints of the joint reconstruction.
    """
    attribute = plan.target
    if attribute is None:
        raise ValueError("the plan has no target: plan_cells(..., target=attribute)")
    spec = specs[attribute]
    if not isinstance(spec, ContinuousSpec):
        raise ValueError(f"a mean needs a continuous attribute; {attribute!r} is discrete")
    if table.sums is None or table.squares is None:
        raise ValueError("a mean needs the cells' sums and sums of squares of the target")
    _check_options(n_boot, max_iter)
    _require_rows(table)
    generator = default_rng(rng)
    scale, shift = linear_noise(spec.noise)
    counts = table.counts
    # Moments of the mean-corrected values y = (v - shift) / scale, per cell.
    sums = (table.sums - shift * counts) / scale
    squares = (table.squares - 2 * shift * table.sums + shift * shift * counts) / (scale * scale)
    if not plan.groups:
        return moments_mean(float(counts.sum()), float(sums.sum()), float(squares.sum()), "overall")
    if attribute in plan.groups:
        return _reconstructed_mean(plan, table, attribute, ci, n_boot, tol, max_iter, generator)
    exact = _deconvolution_mean(plan, counts, sums, squares)
    if exact is not None:
        centre, interval, size = exact
    else:
        centre, interval, size = _posterior_mean(
            plan, CellTable(counts, sums, squares), ci, n_boot, tol, max_iter, generator
        )
    if not size > 0 or not math.isfinite(centre):
        return MeanResult(
            math.nan, (math.nan, math.nan), size, "unbiased", ("the estimated group is empty",)
        )
    return MeanResult(centre, interval, size, "unbiased")


def naive_mean_from_moments(
    spec: ContinuousSpec, count: float, total: float, squares: float
) -> MeanResult:
    """:func:`~.queries.mean` with ``method="naive"`` from the selected rows' moments.

    ``count``, ``total`` and ``squares`` are the number of participants whose *reported*
    answers meet the condition and the sum and sum of squares of their reported target
    values (one SQL aggregate); the values are mean-corrected as the array API does.
    """
    scale, shift = linear_noise(spec.noise)
    sums = (total - shift * count) / scale
    second = (squares - 2 * shift * total + shift * shift * count) / (scale * scale)
    return moments_mean(count, sums, second, "naive", (NAIVE_MEAN_NOTE,))


def _deconvolution_mean(
    plan: CellPlan,
    counts: NDArray[np.float64],
    sums: NDArray[np.float64],
    squares: NDArray[np.float64],
) -> tuple[float, tuple[float, float], float] | None:
    """``g(r) = prod_a (C_a^{-1} 1_{S_a})[r_a]`` per cell (see the array API's twin)."""
    weights = np.ones(())
    for ax in plan.axes:
        if ax.name == plan.target:
            weights = np.multiply.outer(weights, np.ones(ax.channel.shape[1]))
            continue
        if ax.edges is not None or ax.channel.shape[0] != ax.channel.shape[1]:
            return None
        if np.linalg.cond(ax.channel) > 1e8:
            return None
        indicator = ax.mask.astype(np.float64)
        weights = np.multiply.outer(weights, np.linalg.solve(ax.channel, indicator))
    total = float((weights * counts).sum())
    if not total > 0:
        return None
    centre = float((weights * sums).sum()) / total
    spread = squares - 2 * centre * sums + centre * centre * counts
    half = _Z95 * math.sqrt(max(float((weights * weights * spread).sum()), 0.0)) / total
    return centre, (centre - half, centre + half), total


def _posterior_mean(
    plan: CellPlan,
    moments: CellTable,
    ci: bool,
    n_boot: int,
    tol: float | None,
    max_iter: int,
    generator: np.random.Generator,
) -> tuple[float, tuple[float, float], float]:
    """Posterior-weighted mean from cell moments (the array API's ``_posterior_mean``)."""
    axes, trimmed = _trimmed(plan, moments)
    assert trimmed.sums is not None and trimmed.squares is not None
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    counts = fit.counts.ravel()
    sums = trimmed.sums.ravel()
    size = float(fit.n * fit.theta[_joint_mask(fit.axes)].sum())
    weight = fit.posterior().ravel()
    denominator = float(weight @ counts)
    if not denominator > 0:
        return math.nan, (math.nan, math.nan), size
    centre = float(weight @ sums) / denominator
    interval = (math.nan, math.nan)
    if ci:
        occupied = np.where(counts > 0, counts, 1.0)
        cell_mean = sums / occupied
        squares = trimmed.squares.ravel()
        cell_sd = np.sqrt(np.clip(squares / occupied - cell_mean**2, 0.0, None))
        draws = fit.draws(n_boot, generator)
        flat_draws = draws.reshape(n_boot, -1)
        noise = generator.standard_normal(flat_draws.shape)
        boot_sums = flat_draws * cell_mean + np.sqrt(flat_draws) * cell_sd * noise
        boot_weight = fit.posterior(fit.refit(draws, tol, max_iter)).reshape(n_boot, -1)
        boot_denominator = (boot_weight * flat_draws).sum(axis=1)
        boot = (boot_weight * boot_sums).sum(axis=1) / np.where(
            boot_denominator > 0, boot_denominator, np.nan
        )
        interval = _percentiles(boot[np.isfinite(boot)])
    return centre, interval, size


def _reconstructed_mean(
    plan: CellPlan,
    table: CellTable,
    attribute: str,
    ci: bool,
    n_boot: int,
    tol: float | None,
    max_iter: int,
    generator: np.random.Generator,
) -> MeanResult:
    """Mean over interval midpoints of the joint reconstruction (condition on the target)."""
    axes, trimmed = _trimmed(plan, table)
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    position = [ax.name for ax in fit.axes].index(attribute)
    axis = fit.axes[position]
    assert axis.edges is not None
    midpoints = 0.5 * (axis.edges[:-1] + axis.edges[1:])
    shape = [1] * len(fit.axes)
    shape[position] = midpoints.size
    inside = _joint_mask(fit.axes)
    weights = inside * midpoints.reshape(shape)

    def estimate(theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        flat = theta.reshape(theta.shape[0], -1)
        mass = flat @ inside.ravel().astype(np.float64)
        return flat @ weights.ravel() / np.where(mass > 0, mass, np.nan), mass

    centre, mass = estimate(fit.theta[None])
    interval = (math.nan, math.nan)
    if ci:
        boot, _ = estimate(fit.bootstrap(n_boot, generator, tol, max_iter))
        interval = _percentiles(boot[np.isfinite(boot)])
    return MeanResult(
        float(centre[0]),
        interval,
        float(mass[0] * fit.n),
        "reconstructed",
        ("from interval midpoints of the joint reconstruction",),
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
    :func:`~.queries.distribution`. A discrete target without a condition needs no plan:
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
    axes, trimmed = _trimmed(plan, table)
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
    """As :func:`~.continuous.reconstruct_continuous` on the reported bin counts."""
    assert axis.edges is not None and axis.reported_edges is not None
    stopping = cast(Literal["em", "as"], method)
    smoother = [smoothing_matrix(axis.edges, strength)] if strength > 0 else None
    n = float(counts.sum())
    theta, iterations, converged = fixed_point(
        counts, [axis.channel], stopping=stopping, tol=tol, max_iter=max_iter, smoothing=smoother
    )
    if ci:
        draws = generator.multinomial(int(n), counts / n, size=n_boot).astype(np.float64)
        boot, _, _ = fixed_point(
            draws,
            [axis.channel],
            stopping=stopping,
            tol=tol,
            max_iter=max_iter,
            initial=theta if stopping == "em" else None,
            smoothing=smoother,
        )
        interval = percentile_interval(boot * n)
    else:
        interval = np.full((theta.size, 2), np.nan)
    notes: tuple[str, ...] = ()
    if strength > 0:
        notes = (
            Note(
                gettext_noop(
                    "EMS: EM with a smoothing step of strength %(strength)s (Silverman et al.)"
                ),
                strength=f"{strength:g}",
            ),
        )
    if not converged:
        notes = (
            *notes,
            Note(
                gettext_noop("the %(method)s stopping rule was not met in %(max_iter)s iterations"),
                method=stopping.upper(),
                max_iter=max_iter,
            ),
        )
    result = Reconstruction(
        counts=theta * n,
        proportions=theta,
        ci95=np.asarray(interval, dtype=np.float64),
        iterations=iterations,
        converged=converged,
        method=stopping,
        notes=notes,
    )
    return IntervalReconstruction(result, axis.edges, axis.reported_edges)
