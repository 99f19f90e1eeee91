"""Counts of participants meeting a conjunctive condition (001, Section IV-A1).

Pure module: numpy and scipy only.

* :func:`count_joint` / :func:`count_from_table`: beyond 001_28af1923c784b480.txt, the
  condition's attributes are reconstructed jointly (EM over the product channel,
  :mod:`.cells`), so the count is not diluted by the misassigned members of Figure 3's
  intermediate groups; the array API builds the cell table of its rows and calls
  :func:`count_from_table`.
* :func:`averaged_count` / :func:`averaged_count_from_tables`: where the reports cannot
  tell whether a continuous attribute holds whole numbers, the two models are averaged
  (Buckland, Burnham and Augustin 1997) with the weight of
  :func:`whole_number_weight`.
* :func:`count_naive` / :func:`naive_count_result`: the reported values as they are
  (001, Section IV-A1's baseline). Figure 3's count is :mod:`.figure3`'s.
* :func:`count`: the dispatcher over ``method``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms import (
    AdditiveUniform,
    NoiseModel,
)
from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.continuous import (
    WholeNumberEvidence,
    whole_number_evidence,
)
from reconstruction.algorithms.queries.cells import (
    CellPlan,
    CellTable,
    Resolution,
    _fit,
    _joint_mask,
    _JointFit,
    _percentiles,
    _require_rows,
    _row_cells,
    _trimmed,
    _whole_number_notes,
)
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
    _check_options,
    _group,
    satisfies,
    table_size,
)
from reconstruction.algorithms.queries.figure3 import count_figure3
from reconstruction.algorithms.queries.results import CountResult
from reconstruction.algorithms.uncertainty import default_rng

CountMethod = Literal["joint", "figure3", "naive"]


# A model weighing less than this in the average of whole numbers and intervals is left out.
_MIN_MODEL_WEIGHT = 0.01


def _lattice_weights(table: Mapping[str, Attribute], names: Sequence[str]) -> dict[str, float]:
    """Weights of whole numbers for the undeclared continuous attributes the reports
    cannot settle (:attr:`~.continuous.WholeNumberEvidence.lattice_weight`).

    Attributes that declare ``step``, that cannot be tested, whose whole numbers are
    detected (:attr:`~.continuous.WholeNumberEvidence.detected`) or whose weight is
    below :data:`_MIN_MODEL_WEIGHT` are left out: one model serves them. So are
    attributes under noise other than bounded uniform noise: smooth noise (Gaussian,
    Laplace) blurs the jumps that whole numbers leave in the reports, so the evidence
    stays uninformative at any feasible ``n`` (its gain was 0.1-0.7 at n = 10^4-10^5 for
    whole and real-valued ages alike under Gaussian noise) and its weight would be noise;
    such a question should declare ``step``.
    """
    weights: dict[str, float] = {}
    for name in names:
        attr = table[name]
        if not isinstance(attr, ContinuousAttribute) or attr.step is not None:
            continue
        if not isinstance(attr.noise, AdditiveUniform):
            continue  # not tested at all (see whole_number_weight)
        evidence = whole_number_evidence(attr.values, attr.noise, attr.low, attr.high)
        weight = whole_number_weight(attr.noise, evidence)
        if weight is not None:
            weights[name] = weight
    return weights


def whole_number_weight(noise: NoiseModel, evidence: WholeNumberEvidence | None) -> float | None:
    """The weight :func:`count_joint` gives whole numbers for an undeclared continuous
    attribute whose reports gave ``evidence``, ``None`` when one model serves it.

    ``None`` for noise other than bounded uniform noise (see :func:`_lattice_weights`),
    no evidence (untestable), whole numbers beyond doubt
    (:attr:`~.continuous.WholeNumberEvidence.detected`: the lattice alone) and a weight
    below :data:`_MIN_MODEL_WEIGHT` (the intervals alone). The same rule serves the
    array API (the evidence from the reports) and callers that hold the reports'
    half-unit histogram only (:func:`~.continuous.half_unit_evidence`).
    """
    if not isinstance(noise, AdditiveUniform) or evidence is None or evidence.detected:
        return None
    weight = evidence.lattice_weight
    return min(weight, 1.0) if weight >= _MIN_MODEL_WEIGHT else None


def _models(weights: Mapping[str, float]) -> list[tuple[dict[str, bool], float]]:
    """Every combination of whole numbers / intervals for the unsettled attributes, with
    its weight (product of the attributes'), the negligible ones left out."""
    models: list[tuple[dict[str, bool], float]] = [({}, 1.0)]
    for name, weight in weights.items():
        models = [
            ({**choice, name: on}, share * (weight if on else 1.0 - weight))
            for choice, share in models
            for on in (True, False)
        ]
    kept = [(choice, share) for choice, share in models if share >= _MIN_MODEL_WEIGHT]
    total = sum(share for _, share in kept)
    return [(choice, share / total) for choice, share in kept]


def _weighted_percentiles(
    values: NDArray[np.float64], weights: NDArray[np.float64]
) -> tuple[float, float]:
    """2.5% and 97.5% points of a weighted sample (replicates of averaged models).

    The smallest value whose cumulative weight reaches 2.5% (97.5%): the weighted
    inverse of the empirical distribution. It is the one percentile rule that does not
    go through :func:`~.uncertainty.percentile_interval`, because its replicates carry
    unequal weights; with equal weights on ``B = 200`` replicates its bounds are the 5th
    and 195th order statistics (numpy's interpolation there: 5.975th and 195.025th).
    It was chosen, shift included, by coverage over 2,700 surveys (about 95.9%) and
    covers 97.5% of the averaged real-valued surveys at n = 30,000
    (:func:`_averaged_interval`).
    """
    order = np.argsort(values)
    ordered, cumulative = values[order], np.cumsum(weights[order])
    cumulative /= cumulative[-1]
    low = float(ordered[min(int(np.searchsorted(cumulative, 0.025)), ordered.size - 1)])
    high = float(ordered[min(int(np.searchsorted(cumulative, 0.975)), ordered.size - 1)])
    return low, high


def _averaged_interval(
    replicates: Sequence[NDArray[np.float64]],
    shares: Sequence[NDArray[np.float64]],
    estimate: float,
    n: int,
) -> tuple[float, float]:
    """95% interval of a model-averaged count from its models' bootstrap replicates.

    ``estimate`` is the averaged count, ``replicates[k]`` model ``k``'s replicates and
    ``shares[k]`` its weight (one per replicate). The pooled replicates, weighted by
    model, are the model-averaged bootstrap distribution (Buckland, Burnham and Augustin
    1997, Biometrics 53, 603-618): its spread holds each model's and the distance between
    them. They are shifted so that their weighted mean is ``estimate`` (removing the
    replicates' own mean bias, so the interval is centred on the count it is given for)
    and the interval is their weighted 2.5% and 97.5% points, within ``[0, n]``.

    Chosen by coverage of ``sex = F and age <= 30`` (whole-number ages, no step) over
    simulated surveys, each rule evaluated on the same surveys: at n = 1,000 the
    unshifted percentiles (the rule before) covered 96.9% of 1,500 surveys (batches of
    300 up to 98.3%) and 95.4% of bench_accuracy's 900; shifted 96.1% and 94.7% (but
    98.3% of the slow test's 300 surveys with ``n_boot=100``: batches of 300 ranged
    93.3-98.3%, about 95.9% over all 2,700; the number of replicates, 50 to 400, moved
    the coverage of the same surveys by less than 0.5 points). A normal interval with
    the model-averaged variance (Burnham and Anderson 2002, eq. 4.9) covered 95.7% and
    93.7% there but 98.8% of the averaged surveys of real-valued ages at n = 30,000 (161
    of bench_accuracy's 300 surveys; this rule 97.5%).
    """
    pooled, weights = np.concatenate(replicates), np.concatenate(shares)
    centre = float(np.sum(weights * pooled) / np.sum(weights))
    low, high = _weighted_percentiles(pooled + (estimate - centre), weights)
    return max(low, 0.0), min(high, float(n))


def count_joint(
    table: Mapping[str, Attribute],
    where: Sequence[Condition],
    *,
    resolution: Resolution = "fine",
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """Count participants meeting a conjunction by reconstructing the attributes jointly.

    Beyond 001_28af1923c784b480.txt: instead of Figure 3's chain of per-attribute
    reconstructions and assignments, the distribution of the condition's attributes is
    reconstructed jointly. The channel of the tuple of reported values is the Kronecker
    product of the attributes' channels (distortions are independent given the truth);
    continuous attributes are cut into intervals that include the query's thresholds
    (001, Section IV-A1) and enter through ``noise.interval_channel``; one that declares
    ``step`` is modelled on its lattice instead (one cell per point up to 128 points,
    thresholds cut on the lattice so ``age <= 30`` counts 30, ``noise.point_channel``;
    :func:`~.continuous.axis_model`). Without a declared step, whole-number values at a
    threshold would sit on a cell edge of the interval model and bias the count (-5.7%
    for ``age <= 30`` on whole years under ±10 uniform noise, infinite n), so the reports
    are first tested for whole numbers (:func:`~.continuous.whole_number_step`); when
    they show them, the attribute gets the lattice model of ``step=1`` and the result a
    note. When they cannot settle it (under bounded noise at n of about 10^3-10^5: the
    test missed whole years in a third of the surveys at n = 30,000, and each miss kept a
    -5% bias), the count averages the two models, whole numbers and intervals, with the
    weight the evidence gives whole numbers
    (:attr:`~.continuous.WholeNumberEvidence.lattice_weight`), and the interval is the
    percentile interval of both models' bootstrap replicates pooled with the same weights
    (centred on the averaged count), so it carries the doubt about the model too
    (Buckland, Burnham and Augustin 1997, Biometrics 53, 603-618;
    :func:`_averaged_interval`); a note gives the weight. Under smooth noise
    (Gaussian, Laplace) the reports cannot tell whole numbers from real values at any
    feasible n and the interval model and its bias stay: such a question should declare
    ``step``. The joint reported cells are counted in one pass (``ravel_multi_index`` +
    ``bincount``), the EM fixed point of 001, Figure 2 runs on the product channel
    (:func:`fixed_point`, applied one axis at a time) and the estimate is ``n`` times
    the total probability of the true cells that meet the condition.

    Parameters
    ----------
    table : mapping of name -> DiscreteAttribute | ContinuousAttribute
    where : sequence of Condition
        The conjunction ``c_1 and ... and c_m``.
    resolution : {"fine", "thresholds"}
        ``fine`` (default): continuous attributes on a regular grid of 20-40 intervals
        (fewer when many continuous attributes meet) plus the thresholds; ``thresholds``:
        only the 2-3 intervals the thresholds cut, with the channel assuming values
        spread uniformly inside each (biased when the density is not flat there).
    ci : bool
        Add a 95% interval from a vectorised bootstrap over participants (multinomial
        resampling of the joint reported cells, each replicate reconstructed from a
        fresh start, :meth:`_JointFit.refit`): the percentile interval of the
        replicates; when the models are averaged, that of the replicates pooled by model
        weight and centred on the averaged count (:func:`_averaged_interval`).
    n_boot, tol, max_iter, rng
        Bootstrap replicates, EM stopping tolerance, iteration cap, randomness.

    Returns
    -------
    CountResult
        ``method="joint"``.

    Raises
    ------
    ValueError
        Empty or contradictory condition, unknown attribute, an op that does not fit the
        attribute's type, mismatched lengths.
    """
    if not where:
        raise ValueError("empty condition: give at least one subcondition")
    table_size(table)
    groups = _group(table, where)
    _check_options(n_boot, max_iter)
    generator = default_rng(rng)
    weights = _lattice_weights(table, list(groups))
    if not weights:
        plan, cells, _ = _row_cells(table, groups, resolution=resolution)
        return count_from_table(
            plan, cells, ci=ci, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=generator
        )
    return averaged_count_from_tables(
        weights,
        lambda choice: _row_cells(table, groups, resolution=resolution, lattice=choice)[:2],
        ci=ci,
        n_boot=n_boot,
        tol=tol,
        max_iter=max_iter,
        rng=generator,
    )


def averaged_count(
    weights: Mapping[str, float],
    fit_model: Callable[[Mapping[str, bool]], _JointFit],
    *,
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """The joint count averaged over whole numbers and intervals (see :func:`count_joint`).

    The reports cannot tell whether some truths are whole numbers: the models (whole
    numbers and intervals per attribute of ``weights``, :func:`_models`) are averaged by
    the evidence's weights, and their bootstrap replicates pooled with the same weights
    and centred on the averaged count give the interval (:func:`_averaged_interval`),
    so that the interval carries the uncertainty about the model as well (Buckland,
    Burnham and Augustin 1997). ``fit_model(choice)`` fits the joint model with each
    attribute of ``choice`` on whole numbers (``True``) or intervals (``False``), in the
    order of :func:`_models`; :func:`count_joint` fits the reports' own cells, and
    :func:`averaged_count_from_tables` tables counted elsewhere (one per
    model), so both share this averaging, its interval and its note.
    """
    generator = default_rng(rng)
    estimates, replicates, shares, converged = [], [], [], True
    detected: tuple[str, ...] = ()
    n = 0
    for choice, share in _models(weights):
        fit = fit_model(choice)
        n = fit.n
        mask = _joint_mask(fit.axes)
        estimates.append(share * float(n * fit.theta[mask].sum()))
        converged = converged and fit.converged
        detected = _whole_number_notes([ax for ax in fit.axes if ax.name not in weights])
        if ci:
            boot = fit.bootstrap(n_boot, generator, tol, max_iter)
            replicates.append(n * boot[:, mask].sum(axis=1))
            shares.append(np.full(n_boot, share))
    interval = (math.nan, math.nan)
    if ci:
        interval = _averaged_interval(replicates, shares, float(sum(estimates)), n)
    notes = detected + tuple(
        Note(
            gettext_noop(
                "the reports of %(name)s cannot tell whether its true values are whole "
                "numbers (weight %(weight)s): the count averages both models and its "
                "interval spans them (declare step to settle it)"
            ),
            name=name,
            weight=f"{weight:.2f}",
        )
        for name, weight in weights.items()
    )
    if not converged:
        notes = (*notes, Note(gettext_noop("the joint EM did not meet its stopping rule")))
    return CountResult(float(sum(estimates)), interval, n, "joint", notes)


def count_naive(
    table: Mapping[str, Attribute],
    where: Sequence[Condition],
    *,
    ci: bool = True,
    n_boot: int = 200,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """Count the rows whose reported values meet the condition, ignoring the distortion.

    The baseline of 001_28af1923c784b480.txt, Section IV-A1 ("Based on Table II without
    taking into account the distortion we would obtain ..."). The interval is a
    parametric bootstrap of the binomial count (sampling variation only; the bias from
    the distortion is not in it).
    """
    if not where:
        raise ValueError("empty condition: give at least one subcondition")
    n = table_size(table)
    _group(table, where)
    _check_options(n_boot, 1)
    values = {
        name: attr.codes if isinstance(attr, DiscreteAttribute) else attr.values
        for name, attr in table.items()
    }
    hits = int(satisfies(values, where).sum())
    return naive_count_result(hits, n, ci=ci, n_boot=n_boot, rng=rng)


def naive_count_result(
    hits: int,
    n: int,
    *,
    ci: bool = True,
    n_boot: int = 200,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """The naive count from the number of rows meeting the condition (``hits`` of ``n``).

    The interval is a parametric bootstrap of the binomial count. Shared by
    :func:`count_naive` and callers that count ``hits`` elsewhere (one SQL ``COUNT``).
    """
    if n < 1:
        raise ValueError("the table has no rows")
    _check_options(n_boot, 1)
    interval = (math.nan, math.nan)
    if ci:
        boot = default_rng(rng).binomial(n, hits / n, size=n_boot).astype(np.float64)
        interval = _percentiles(boot)
    return CountResult(float(hits), interval, n, "naive")


def count(
    table: Mapping[str, Attribute],
    where: Sequence[Condition],
    *,
    method: CountMethod = "joint",
    ci: bool = True,
    n_boot: int = 200,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> CountResult:
    """Number of participants that meet a conjunctive condition, with a 95% interval.

    Parameters
    ----------
    method : {"joint", "figure3", "naive"}
        ``joint`` (default, :func:`count_joint`) was the most accurate on simulated
        correlated data (bench/bench_queries.py); ``figure3`` is 001's Figure 3
        (:func:`count_figure3`); ``naive`` counts reported values (:func:`count_naive`).
    """
    if method == "joint":
        return count_joint(table, where, ci=ci, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=rng)
    if method == "figure3":
        return count_figure3(
            table, where, ci=ci, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=rng
        )
    if method == "naive":
        return count_naive(table, where, ci=ci, n_boot=n_boot, rng=rng)
    raise ValueError(f"unknown count method {method!r}; use joint, figure3 or naive")


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
    """The joint count of :func:`count_joint` from a table of reported cells.

    Same model and interval (bootstrap over participants as multinomial redraws of the
    cells, each replicate refitted); ``population`` is the table's total.
    """
    if not plan.groups:
        raise ValueError("empty condition: give at least one subcondition")
    _check_options(n_boot, max_iter)
    n = _require_rows(table)
    axes, trimmed, _ = _trimmed(plan, table)
    fit = _fit(axes, trimmed.counts, tol, max_iter)
    mask = _joint_mask(fit.axes)
    estimate = float(n * fit.theta[mask].sum())
    interval = (math.nan, math.nan)
    if ci:
        boot = fit.bootstrap(n_boot, default_rng(rng), tol, max_iter)
        interval = _percentiles(n * boot[:, mask].sum(axis=1))
    notes = _whole_number_notes(fit.axes)
    if not fit.converged:
        notes = (*notes, Note(gettext_noop("the joint EM did not meet its stopping rule")))
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
    """:func:`count_joint`'s average of whole numbers and intervals, from
    tables of reported cells.

    ``weights`` holds the weight of whole numbers of each undeclared continuous
    attribute the reports cannot settle (:func:`whole_number_weight` of
    :func:`~.continuous.half_unit_evidence`); ``read(choice)`` returns the plan with
    ``step=1`` on the attributes ``choice`` puts on whole numbers (``True``), none on
    the others, and that plan's table. Each model is fitted as :func:`count_from_table`
    fits it, and the models are averaged by :func:`averaged_count` (the array
    API's own averaging, interval and note): on the same reports the result equals
    :func:`count_joint`'s.
    """
    _check_options(n_boot, max_iter)

    def fit(choice: Mapping[str, bool]) -> _JointFit:
        plan, table = read(choice)
        if not plan.groups:
            raise ValueError("empty condition: give at least one subcondition")
        _require_rows(table)
        axes, trimmed, _ = _trimmed(plan, table)
        return _fit(axes, trimmed.counts, tol, max_iter)

    return averaged_count(weights, fit, ci=ci, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=rng)
