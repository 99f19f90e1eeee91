"""Means of a continuous attribute, overall or within a group (001, Section IV-A2).

Pure module: numpy and scipy only.

With additive zero-mean noise the mean of reported values estimates the mean of true
values (001_28af1923c784b480.txt, Section IV-A2; retention replacement is corrected
linearly, :func:`linear_noise`). Within a group, :func:`mean` with ``method="unbiased"``
and :func:`mean_from_table` weight the cells by ``g(r)`` with
``E[g | true] = 1[true meets the condition]`` (discrete conditions) or by the joint
reconstruction's posterior (continuous ones), both from cell moments
(:func:`_mean_from_moments`, the one path); ``figure3`` and ``naive`` select rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms import (
    NoiseModel,
    RetentionReplacement,
)
from reconstruction.algorithms.queries.cells import (
    CellPlan,
    CellTable,
    _fit,
    _joint_mask,
    _percentiles,
    _require_rows,
    _row_cells,
    _trimmed,
)
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    ContinuousAttribute,
    ContinuousSpec,
    DiscreteAttribute,
    Spec,
    _check_options,
    _group,
    satisfies,
    table_size,
)
from reconstruction.algorithms.queries.figure3 import figure3_rows
from reconstruction.algorithms.queries.results import MeanResult
from reconstruction.algorithms.uncertainty import default_rng

MeanMethod = Literal["unbiased", "figure3", "naive"]

_Z95 = 1.959963984540054


def linear_noise(noise: NoiseModel) -> tuple[float, float]:
    """``(a, b)`` with ``E[reported | true x] = a x + b`` (mean-correcting the noise).

    Shared by the array API and the tables' entry points.
    """
    if isinstance(noise, RetentionReplacement):
        p = noise.retain
        return p, (1.0 - p) * 0.5 * (noise.low + noise.high)
    # Additive noise models here have mean 0 (001, Section IV-A2).
    return 1.0, 0.0


def moments_mean(
    count: float, total: float, squares: float, method: str, notes: tuple[str, ...] = ()
) -> MeanResult:
    """The mean of selected values from their count, sum and sum of squares.

    The normal 95% interval ``mean +- 1.96 s / sqrt(count)`` (``s`` with ``ddof=1``).
    Shared by the array API (moments of the selected rows) and the tables' entry points
    (moments computed in the database), so both give the same result.
    """
    if not count > 0:
        return MeanResult(math.nan, (math.nan, math.nan), 0.0, method, ("the group is empty",))
    centre = total / count
    if count > 1:
        variance = max(squares - count * centre * centre, 0.0) / (count - 1)
        half = _Z95 * math.sqrt(variance / count)
    else:
        half = math.nan
    return MeanResult(centre, (centre - half, centre + half), float(count), method, notes)


NAIVE_MEAN_NOTE = "biased: misreported members dilute the group"

FIGURE3_MEAN_NOTE = "biased: misassigned members dilute the group"


def _select_mean(
    y: NDArray[np.float64], rows: NDArray[np.intp] | None, method: str, notes: tuple[str, ...]
) -> MeanResult:
    """:func:`moments_mean` of ``y[rows]`` (all of ``y`` when ``rows`` is ``None``)."""
    group = y if rows is None else y[rows]
    centre = float(group.mean()) if group.size else 0.0
    # Moments about the group's mean (numerically stable), then the shared formula.
    deviations = group - centre
    squares = float(deviations @ deviations) + group.size * centre * centre
    return moments_mean(float(group.size), centre * group.size, squares, method, notes)


def mean(
    table: Mapping[str, Attribute],
    attribute: str,
    where: Sequence[Condition] = (),
    *,
    method: MeanMethod = "unbiased",
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> MeanResult:
    """Mean of a continuous attribute, overall or among participants meeting a condition.

    001_28af1923c784b480.txt, Section IV-A2: with additive zero-mean noise the mean of
    reported values estimates the mean of true values, for any set of participants chosen
    independently of that noise (retention replacement is mean-corrected linearly).

    Methods
    -------
    ``unbiased`` (default, beyond the document): selecting a group by Figure 3 and
    averaging (001, IV-A2) is biased when the condition's attributes are distorted,
    because misassigned members dilute the group. Instead:

    * discrete attributes only: weights ``g(r) = prod_a (C_a^{-1} 1_{S_a})[r_a]`` of the
      reported codes, with ``E[g | true] = 1[true meets the condition]``, give
      ``sum g y / sum g``, exactly unbiased up to O(1/n); 95% interval by the delta
      method (the weights are fixed, so it is honest);
    * with continuous attributes: the joint distribution of the condition's attributes
      and the target (on its own grid of intervals) is reconstructed by EMS over the
      product channel (:func:`count_joint`), and every participant is weighted by the
      posterior ``pi = Pr(true values meet the condition | reported cell)``, the
      reported cell including the target's reported bin. Since the target's noise has
      mean 0 given everything else, ``E[pi y] = E[1_S y]``: the estimate
      ``sum pi y / sum pi`` is consistent (equivalently the group's mean over true
      cells, each with its within-cell mean estimated from the reported values).
      The 95% interval is a participant bootstrap with no per-participant work per
      replicate (multinomial cell counts, normal within-cell sums) in which each
      replicate refits the joint distribution, so the posterior's uncertainty is in it.

    When the condition involves the attribute itself, the mean comes from the joint
    reconstructed distribution instead (interval midpoints, ``method="reconstructed"``,
    bootstrap interval).
    ``figure3``: Figure 3's list, then the mean of its reported values (001, IV-A2).
    ``naive``: rows whose reported values meet the condition.

    Parameters
    ----------
    table : mapping of name -> attribute
    attribute : str
        A continuous attribute.
    where : sequence of Condition
        Empty for the overall mean.

    Returns
    -------
    MeanResult

    Raises
    ------
    ValueError
        Unknown or discrete attribute, bad condition, unknown method.
    """
    table_size(table)
    target = table.get(attribute)
    if target is None:
        raise ValueError(f"unknown attribute {attribute!r}; known: {sorted(table)}")
    if not isinstance(target, ContinuousAttribute):
        raise ValueError(f"a mean needs a continuous attribute; {attribute!r} is discrete")
    if method not in ("unbiased", "figure3", "naive"):
        raise ValueError(f"unknown mean method {method!r}; use unbiased, figure3 or naive")
    _check_options(n_boot, max_iter)
    scale, shift = linear_noise(target.noise)
    y = (target.values - shift) / scale
    if not where:
        return _select_mean(y, None, "overall", ())
    groups = _group(table, where)
    generator = default_rng(rng)
    if method == "naive":
        values = {
            name: attr.codes if isinstance(attr, DiscreteAttribute) else attr.values
            for name, attr in table.items()
        }
        rows = np.flatnonzero(satisfies(values, where)).astype(np.intp)
        return _select_mean(y, rows, "naive", (NAIVE_MEAN_NOTE,))
    if method == "figure3":
        rows, _ = figure3_rows(table, where, tol=tol, max_iter=max_iter, rng=generator)
        return _select_mean(y, rows, "figure3", (FIGURE3_MEAN_NOTE,))
    plan, moments, _ = _row_cells(table, groups, target=attribute, target_values=y)
    return _mean_from_moments(plan, moments, ci, n_boot, tol, max_iter, generator)


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
    """The unbiased mean of :func:`mean` from cell counts, sums and squares.

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
    return _mean_from_moments(
        plan, CellTable(counts, sums, squares), ci, n_boot, tol, max_iter, generator
    )


def _mean_from_moments(
    plan: CellPlan,
    moments: CellTable,
    ci: bool,
    n_boot: int,
    tol: float | None,
    max_iter: int,
    generator: np.random.Generator,
) -> MeanResult:
    """The mean of the plan's target within its condition, from the cells' counts and
    the sums and sums of squares of the *mean-corrected* target values.

    A condition on the target itself: the mean over interval midpoints of the joint
    reconstruction (:func:`_reconstructed_mean`); on discrete attributes only: the
    exactly unbiased weights (:func:`_deconvolution_mean`); otherwise the
    posterior-weighted mean (:func:`_posterior_mean`).
    """
    attribute = plan.target
    assert attribute is not None and moments.sums is not None and moments.squares is not None
    if attribute in plan.groups:
        return _reconstructed_mean(plan, moments, attribute, ci, n_boot, tol, max_iter, generator)
    exact = _deconvolution_mean(plan, moments.counts, moments.sums, moments.squares)
    if exact is not None:
        centre, interval, size = exact
    else:
        centre, interval, size = _posterior_mean(
            plan, moments, ci, n_boot, tol, max_iter, generator
        )
    if not size > 0 or not math.isfinite(centre):
        return MeanResult(
            math.nan, (math.nan, math.nan), size, "unbiased", ("the estimated group is empty",)
        )
    return MeanResult(centre, interval, size, "unbiased")


def naive_mean_from_moments(
    spec: ContinuousSpec, count: float, total: float, squares: float
) -> MeanResult:
    """:func:`mean` with ``method="naive"`` from the selected rows' moments.

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
    """Exactly unbiased weights for a condition on discrete attributes only (see :func:`mean`).

    ``g(r) = prod_a (C_a^{-1} 1_{S_a})[r_a]`` per reported cell has
    ``E[g | true] = 1[true meets S]``, so ``sum g y / sum g`` is a ratio of unbiased sums
    and its delta-method interval is exact to first order (the weights are fixed: no
    fitted posterior in them). ``None`` when a continuous attribute is in the condition
    or a channel is singular.
    """
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
    """Posterior-weighted mean from cell moments (see :func:`mean`).

    Returns the estimate, its 95% bootstrap interval and the estimated group size. The
    interval is a participant bootstrap with no work per participant: a resample moves
    ``N*_c ~ Multinomial(n, N / n)`` participants into each reported cell, and the sum of
    their values is that of ``N*_c`` draws from the cell's values; the cell is narrow in
    the target (its reported bin is one coordinate), so that sum is normal with mean
    ``N*_c ybar_c`` and variance ``N*_c s_c^2`` to a close approximation. Each replicate
    refits the joint distribution, so the posterior's own uncertainty is in the interval.
    """
    axes, trimmed, _ = _trimmed(plan, moments)
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
    axes, trimmed, _ = _trimmed(plan, table)
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
