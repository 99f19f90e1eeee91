"""Reconstruction of continuous attributes over intervals (AS and EM).

Pure module: numpy and scipy only.

001_28af1923c784b480.txt, Sections III-B2 (AS, Figure 1, equation (3)) and III-B3 (EM)
reconstruct the distribution of a continuous attribute ``X`` from ``w = x + y`` where the
noise ``Y`` has a known density. Following the complexity reduction of [10] and the channel
idea of /work/shared/design/architecture.md, the declared range is cut into intervals, the
reported values are binned, and equation (3) becomes the fixed point

    N_i  <-  sum_j  c_j * C[i, j] N_i / sum_l C[l, j] N_l

on the reported bin counts ``c`` with ``C = noise.interval_channel(true_edges,
reported_edges)``. AS and EM share this update and differ in their stopping rule (see
:func:`fixed_point`). Section IV-A1 asks for intervals that begin/end at a query's
thresholds: :func:`interval_edges` always includes them.

Run to convergence, EM reaches the nonparametric maximum-likelihood estimate, which for
smooth noise (Gaussian, Laplace) concentrates its mass in spikes and moves mass across
thresholds. By default EM therefore runs as EMS (Silverman, Jones, Wilson and Nychka,
J. R. Statist. Soc. B 52 (1990) 271-324): every EM step is followed by a light smoothing
of the estimated density along each continuous attribute (:func:`smoothing_matrix`),
and the iteration runs to the fixed point of this smoothed map. The fixed point does not
depend on the starting point, so bootstrap replicates can be warm-started at it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from privacy.mechanisms import AdditiveGaussian, AdditiveLaplace, AdditiveStaircase, NoiseModel
from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.result import Reconstruction
from reconstruction.algorithms.uncertainty import percentile_interval

__all__ = [
    "LATTICE_SMOOTHING",
    "MAX_LATTICE_CELLS",
    "AxisModel",
    "IntervalReconstruction",
    "LatticeCells",
    "axis_model",
    "bin_values",
    "default_smoothing",
    "fixed_point",
    "half_unit_evidence",
    "interval_count",
    "interval_edges",
    "lattice_cells",
    "lattice_cut",
    "lattice_points",
    "noise_scale",
    "reconstruct_continuous",
    "reported_edges",
    "smoothing_matrix",
    "whole_number_evidence",
    "whole_number_step",
    "whole_numbers_testable",
    "whole_threshold_note",
]

Stopping = Literal["em", "as"]

_MIN_INTERVALS = 20
_MAX_INTERVALS = 40
_DEFAULT_TOL: dict[str, float] = {"em": 1e-6, "as": 0.01}
_KRON_MAX_ENTRIES = 2_000_000
_KRON_MAX_RATIO = 8
DEFAULT_SMOOTHING = 0.05
# Cells holding more lattice points than this use the interval channel of their span,
# which the discrete uniform over so many points matches to within 1/_MAX_POINTS.
_MAX_POINTS_PER_CELL = 1000
# A declared lattice of at most this many points gets one cell per point by default.
# Grouping points into ~30 cells and then smoothing across the groups biased the joint
# count ``sex = F and age <= 30`` (whole years 16..100, ±10 uniform noise) by -0.76% in
# the infinite-n limit; one cell per point with the same smoothing leaves -0.06%
# (tests/reconstruction/algorithms/test_continuous.py::test_lattice_joint_count_unbiased).
MAX_LATTICE_CELLS = 128
# EMS smoothing strength on a lattice with one cell per point. Smoothing moves mass
# between neighbouring points only (one step, not a 2-3 step interval), so it costs
# almost no bias (-0.08% on the count above in the infinite-n limit, -0.16% at 0.5) and
# steadies the deconvolution (standard deviation of that count at n = 10^5 over 16
# surveys: 3.05% at 0.05, 2.46% at 0.2).
LATTICE_SMOOTHING = 0.2
# Detection of whole-number truths on a question without a declared step
# (:func:`whole_number_step`): the lattice of whole numbers is taken when its fit beats
# the lattice shifted by half a step by more than this many log-likelihood units ...
_WHOLE_MIN_GAIN = 10.0
_WHOLE_MIN_Z = 2.5
# ... and by more than this much per report (a share of a nat). On simulated ages
# (16..100, ±10 uniform noise; 3 surveys each) the gain was 531-545 at n = 10^6 and
# 36-68 at 10^5 for whole years, 9-44 at 10^6 and 0.3-2.1 at 10^5 for real-valued ages.
_WHOLE_GAIN_PER_REPORT = 2e-4


@dataclass(frozen=True)
class IntervalReconstruction:
    """A reconstructed distribution of a continuous attribute over intervals.

    Attributes
    ----------
    reconstruction : Reconstruction
        Counts, proportions and 95% intervals per true interval.
    edges : ndarray of shape (m + 1,)
        Edges of the true intervals ``[edges[i], edges[i+1])`` over the declared range.
    reported_edges : ndarray of shape (r + 1,)
        Edges of the bins the reported values were counted in (outer bins open).
    """

    reconstruction: Reconstruction
    edges: NDArray[np.float64]
    reported_edges: NDArray[np.float64]

    @property
    def counts(self) -> NDArray[np.float64]:
        return self.reconstruction.counts

    @property
    def proportions(self) -> NDArray[np.float64]:
        return self.reconstruction.proportions

    @property
    def ci95(self) -> NDArray[np.float64]:
        return self.reconstruction.ci95

    @property
    def intervals(self) -> NDArray[np.float64]:
        """The true intervals as an (m, 2) array of ``[low, high)`` pairs."""
        return np.stack([self.edges[:-1], self.edges[1:]], axis=1)

    @property
    def midpoints(self) -> NDArray[np.float64]:
        return np.asarray(0.5 * (self.edges[:-1] + self.edges[1:]), dtype=np.float64)


def _check_range(low: float, high: float) -> tuple[float, float]:
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        raise ValueError(f"low and high must be numbers, got {low!r}, {high!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"the declared range needs finite low < high, got [{low!r}, {high!r}]")
    return lo, hi


def noise_scale(noise: NoiseModel) -> float | None:
    """Standard deviation of an additive noise model, ``None`` when it has none.

    Retention replacement is not additive; its resolution is not limited by a noise
    width, so it returns ``None``.
    """
    std = getattr(noise, "std", None)
    if std is None:
        return None
    return float(std)


def interval_count(
    low: float, high: float, *, n: int | None = None, noise_scale: float | None = None
) -> int:
    """Default number of intervals over ``[low, high]``.

    Rice's rule ``ceil(2 n^(1/3))`` for ``n`` reports, capped by the resolution the noise
    allows (intervals no narrower than half the noise's standard deviation), then clipped
    to 20..40 intervals.

    Parameters
    ----------
    low, high : float
        The declared range.
    n : int, optional
        Number of reports (no cap from ``n`` when omitted).
    noise_scale : float, optional
        Standard deviation of the noise (no cap from the noise when omitted or 0).

    Returns
    -------
    int
        Between 20 and 40.
    """
    lo, hi = _check_range(low, high)
    count = _MAX_INTERVALS
    if n is not None:
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        count = min(count, math.ceil(2.0 * max(n, 1) ** (1.0 / 3.0)))
    if noise_scale is not None and noise_scale > 0:
        count = min(count, math.ceil((hi - lo) / (0.5 * noise_scale)))
    return int(min(max(count, _MIN_INTERVALS), _MAX_INTERVALS))


def interval_edges(
    low: float,
    high: float,
    *,
    thresholds: Sequence[float] | NDArray[np.float64] = (),
    n_intervals: int | None = None,
    n: int | None = None,
    noise_scale: float | None = None,
) -> NDArray[np.float64]:
    """Edges of intervals over ``[low, high]`` that always include the given thresholds.

    001_28af1923c784b480.txt, Section IV-A1: "we can choose intervals in a way that
    their end/begin in points t1 and t2 ... The number of intervals need not to be limited
    to 3". Starts from ``n_intervals`` equal intervals (default :func:`interval_count`),
    adds every threshold strictly inside the range as an edge and drops the regular edges
    closer than half an interval to a threshold, so no sliver intervals appear.

    Parameters
    ----------
    low, high : float
        The declared range.
    thresholds : sequence of float
        Points that must be edges; those outside ``(low, high)`` are ignored (a condition
        there selects all or nothing).
    n_intervals : int, optional
        Number of regular intervals before the thresholds are added.
    n, noise_scale : optional
        Passed to :func:`interval_count` when ``n_intervals`` is omitted.

    Returns
    -------
    ndarray of shape (m + 1,)
        Strictly increasing edges, ``edges[0] == low``, ``edges[-1] == high``.
    """
    lo, hi = _check_range(low, high)
    cuts = np.asarray(thresholds, dtype=np.float64).ravel()
    if not np.all(np.isfinite(cuts)):
        raise ValueError("thresholds must be finite numbers")
    if n_intervals is None:
        n_intervals = interval_count(lo, hi, n=n, noise_scale=noise_scale)
    if n_intervals < 1:
        raise ValueError(f"n_intervals must be >= 1, got {n_intervals}")
    regular = np.linspace(lo, hi, int(n_intervals) + 1)
    cuts = np.unique(cuts[(cuts > lo) & (cuts < hi)])
    if cuts.size:
        width = (hi - lo) / n_intervals
        inner = regular[1:-1]
        distance = np.min(np.abs(inner[:, None] - cuts[None, :]), axis=1)
        regular = np.concatenate([[lo], inner[distance >= 0.5 * width], [hi]])
    return np.asarray(np.unique(np.concatenate([regular, cuts])), dtype=np.float64)


def lattice_points(low: float, high: float, step: float) -> NDArray[np.float64]:
    """The lattice ``low, low + step, ..., high`` of a question that declares ``step``.

    Raises
    ------
    ValueError
        ``step`` not positive, or ``high - low`` not a whole number of steps.
    """
    lo, hi = _check_range(low, high)
    size = float(step)
    if not (math.isfinite(size) and size > 0):
        raise ValueError(f"step must be a positive number, got {step!r}")
    count = (hi - lo) / size
    whole = round(count)
    if abs(count - whole) > 1e-6 * max(1.0, count):
        raise ValueError(f"the range [{lo:g}, {hi:g}] is not a whole number of steps of {size:g}")
    return np.asarray(lo + size * np.arange(whole + 1), dtype=np.float64)


def lattice_cut(threshold: float, *, low: float, step: float, closed_below: bool) -> float:
    """Where a threshold splits a lattice: the half-step between two lattice points.

    ``closed_below`` for ``v <= t`` and ``v > t`` (a point equal to ``t`` goes below the
    cut: ``age <= 30`` counts 30); otherwise for ``t <= v`` (a point equal to ``t`` goes
    above it, as in ``between [t1, t2)``).
    """
    position = (float(threshold) - low) / step
    if closed_below:
        return float(low + (math.floor(position + 1e-9) + 0.5) * step)
    return float(low + (math.ceil(position - 1e-9) - 0.5) * step)


@dataclass(frozen=True)
class LatticeCells:
    """True cells of a continuous attribute whose values lie on a lattice.

    Each cell holds consecutive lattice points; its edges are half-steps between points,
    so a threshold cut (:func:`lattice_cut`) never splits a point.

    Attributes
    ----------
    edges : ndarray of shape (m + 1,)
        Cell boundaries, from ``low - step / 2`` to ``high + step / 2``.
    representatives : ndarray of shape (m,)
        One lattice point of each cell; every point of a cell meets a condition exactly
        when this one does.
    step : float
    """

    edges: NDArray[np.float64]
    representatives: NDArray[np.float64]
    step: float

    def channel(self, noise: NoiseModel, reported: ArrayLike) -> NDArray[np.float64]:
        """``C[c, j] = Pr(reported in bin j | true value uniform on the points of cell c)``.

        The average of the exact point channels (``noise.point_channel``) of the cell's
        points; a cell with more than 1000 points uses the interval channel of its span.
        """
        bins = np.asarray(reported, dtype=np.float64)
        lo = float(self.edges[0] + 0.5 * self.step)
        counts = np.rint(np.diff(self.edges) / self.step).astype(np.int64)
        rows = np.empty((counts.size, bins.size - 1))
        small = counts <= _MAX_POINTS_PER_CELL
        if np.any(small):
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            picked = [
                lo + self.step * np.arange(start, start + count)
                for start, count, keep in zip(starts, counts, small, strict=True)
                if keep
            ]
            points = np.concatenate(picked)
            per_point = noise.point_channel(points, bins)
            sizes = counts[small]
            offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            rows[small] = np.add.reduceat(per_point, offsets, axis=0) / sizes[:, None]
        if not np.all(small):
            big = np.flatnonzero(~small)
            for index in big:
                span = self.edges[index : index + 2]
                rows[index] = noise.interval_channel(span, bins)[0]
        return np.asarray(rows / rows.sum(axis=1, keepdims=True), dtype=np.float64)


def lattice_cells(
    low: float,
    high: float,
    step: float,
    *,
    cuts: Sequence[float] = (),
    n_cells: int | None = None,
    n: int | None = None,
    noise_scale: float | None = None,
) -> LatticeCells:
    """Cells over the lattice of a question that declares ``step``.

    Without ``n_cells``, a lattice of at most :data:`MAX_LATTICE_CELLS` points (or of
    at most :func:`interval_count` points) gets one cell per point: the model is then
    exactly point masses, the discretisation of 001_28af1923c784b480.txt, Section III-B2
    with no error at all for values on the lattice. A larger lattice (or one of more
    than ``n_cells`` points) is grouped into that many cells of consecutive points, each
    spread evenly over its points, with edges snapped to half-steps; the ``cuts`` (from
    :func:`lattice_cut`) are always edges, so thresholds apply on the lattice exactly.

    Parameters
    ----------
    low, high, step : float
        The declared range and the lattice step (``high - low`` a whole number of steps).
    cuts : sequence of float
        Half-step cut points the cells must respect.
    n_cells : int, optional
        Number of regular cells for a large lattice.
    n, noise_scale : optional
        Passed to :func:`interval_count`.
    """
    points = lattice_points(low, high, step)
    size = float(step)
    halves = points[:-1] + 0.5 * size
    inner: NDArray[np.float64]
    wanted_cells = (
        interval_count(float(points[0]), float(points[-1]), n=n, noise_scale=noise_scale)
        if n_cells is None
        else n_cells
    )
    if points.size <= wanted_cells or (n_cells is None and points.size <= MAX_LATTICE_CELLS):
        inner = halves
    else:
        regular = interval_edges(
            float(points[0]), float(points[-1]), n_intervals=n_cells, n=n, noise_scale=noise_scale
        )[1:-1]
        index = np.clip(np.rint((regular - points[0]) / size - 0.5), 0, halves.size - 1)
        inner = halves[np.unique(index.astype(np.int64))] if halves.size else halves
    wanted = np.asarray([c for c in cuts if points[0] < c < points[-1]], dtype=np.float64)
    edges = np.unique(
        np.concatenate([[points[0] - 0.5 * size], inner, wanted, [points[-1] + 0.5 * size]])
    )
    # Snap to exact half-steps (cuts computed elsewhere may differ in the last bits).
    snapped = points[0] + size * (np.rint((edges - points[0]) / size - 0.5) + 0.5)
    edges = np.unique(snapped)
    first = np.rint((edges[:-1] - points[0]) / size + 0.5).astype(np.int64)
    last = np.rint((edges[1:] - points[0]) / size - 0.5).astype(np.int64)
    representatives = points[(first + last) // 2]
    return LatticeCells(
        edges=np.asarray(edges, dtype=np.float64),
        representatives=np.asarray(representatives, dtype=np.float64),
        step=size,
    )


@dataclass(frozen=True)
class AxisModel:
    """The true cells of one continuous attribute and their channel to reported bins.

    Attributes
    ----------
    edges : ndarray of shape (m + 1,)
        Edges of the true cells (intervals; half-steps between lattice points when the
        attribute declares ``step``).
    representatives : ndarray of shape (m,)
        A value per cell at which a condition is decided: the interval's midpoint, or a
        lattice point of the cell (all of its points agree).
    reported_edges : ndarray of shape (r + 1,)
        Bins of the reported values (outer bins open).
    channel : ndarray of shape (m, r)
    smoothing : float
        The EMS smoothing strength for these cells (:func:`smoothing_matrix`):
        :func:`default_smoothing` for intervals, :data:`LATTICE_SMOOTHING` for a lattice
        with one cell per point under noise that is smoothed at all.
    """

    edges: NDArray[np.float64]
    representatives: NDArray[np.float64]
    reported_edges: NDArray[np.float64]
    channel: NDArray[np.float64]
    smoothing: float = 0.0


def axis_model(
    noise: NoiseModel,
    low: float,
    high: float,
    *,
    cuts: Sequence[tuple[float, bool]] = (),
    step: float | None = None,
    thresholds_only: bool = False,
    n_intervals: int | None = None,
    n: int | None = None,
    channels: dict[tuple[object, ...], NDArray[np.float64]] | None = None,
) -> AxisModel:
    """Cells, reported bins and channel of a continuous attribute for a query.

    Without ``step``: intervals over ``[low, high]`` with the thresholds as edges
    (:func:`interval_edges`; 001_28af1923c784b480.txt, Section IV-A1), each modelled as
    uniform (``noise.interval_channel``). With ``step``: cells of whole lattice points
    (:func:`lattice_cells`: one per point up to :data:`MAX_LATTICE_CELLS` points unless
    ``n_intervals`` asks for fewer), each threshold cut at the half-step
    :func:`lattice_cut` gives, the exact point channels (``noise.point_channel``) and
    the EMS strength :data:`LATTICE_SMOOTHING` when there is one cell per point.

    Parameters
    ----------
    cuts : sequence of (threshold, closed_below)
        The query's thresholds; ``closed_below`` for ``<=`` and ``>`` (a value equal to
        the threshold is below it), false for ``between``'s ``[t1, t2)``.
    thresholds_only : bool
        Only the cells the thresholds cut (``resolution="thresholds"``).
    n_intervals, n
        Regular cell count, or ``n`` reports for :func:`interval_count`.
    channels : dict, optional
        Channels already computed for this ``noise``, by cells and reported bins: a
        caller asking for several models of one attribute (a panel's quotas) passes the
        same dict, and a model whose cells and bins were seen takes that channel (the
        same array) instead of computing it again. Queries whose cuts leave the cells
        unchanged (one cell per lattice point) thus share one channel.
    """
    scale = noise_scale(noise)

    def cached(
        key: tuple[object, ...], compute: Callable[[], NDArray[np.float64]]
    ) -> NDArray[np.float64]:
        if channels is None:
            return compute()
        if key not in channels:
            channels[key] = compute()
        return channels[key]

    if step is not None:
        lattice_cuts = [lattice_cut(t, low=low, step=step, closed_below=below) for t, below in cuts]
        cells = lattice_cells(
            low,
            high,
            step,
            cuts=lattice_cuts,
            n_cells=1 if thresholds_only else n_intervals,
            n=n,
            noise_scale=scale,
        )
        bins = reported_edges(cells.edges, noise, low, high)
        strength = default_smoothing(noise)
        if np.allclose(np.diff(cells.edges), cells.step):
            # One cell per point: bins of half a step with edges at the points and the
            # half-steps. Under bounded noise the reported density of lattice values jumps
            # at the points shifted by the noise's reach; a bin across such a jump averages
            # the two levels away (step=1 count bias -0.5% at n = 10^6 with whole-step
            # bins, see bench/bench_accuracy.py for the figure with half-step bins).
            bins = _halved(bins)
            if strength > 0:
                strength = LATTICE_SMOOTHING
        channel = cached(
            ("lattice", cells.step, cells.edges.tobytes(), bins.tobytes()),
            lambda: cells.channel(noise, bins),
        )
        return AxisModel(cells.edges, cells.representatives, bins, channel, strength)
    thresholds = [t for t, _ in cuts]
    if thresholds_only:
        inner = sorted({t for t in thresholds if low < t < high})
        edges = np.array([low, *inner, high], dtype=np.float64)
    else:
        edges = interval_edges(
            low, high, thresholds=thresholds, n_intervals=n_intervals, n=n, noise_scale=scale
        )
    bins = reported_edges(edges, noise, low, high)
    channel = cached(
        ("intervals", edges.tobytes(), bins.tobytes()),
        lambda: np.asarray(noise.interval_channel(edges, bins), dtype=np.float64),
    )
    midpoints = np.asarray(0.5 * (edges[:-1] + edges[1:]), dtype=np.float64)
    return AxisModel(edges, midpoints, bins, channel, default_smoothing(noise))


def _halved(edges: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every bin split in two at its midpoint."""
    middles = 0.5 * (edges[:-1] + edges[1:])
    return np.asarray(np.sort(np.concatenate([edges, middles])), dtype=np.float64)


def _loglik(
    counts: NDArray[np.float64], theta: NDArray[np.float64], channel: NDArray[np.float64]
) -> float:
    predicted = theta @ channel
    seen = counts > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(counts[seen] * np.log(predicted[seen])))


def whole_number_step(
    values: ArrayLike, noise: NoiseModel, low: float, high: float
) -> float | None:
    """1.0 when the reports show that the true values are whole numbers, else ``None``.

    A question that does not declare ``step`` may still hold whole numbers (ages in
    years, hours, children). The interval model of 001_28af1923c784b480.txt, Section
    III-B2 spreads each interval's mass evenly, so a whole number equal to a threshold
    (``age <= 30`` and a true 30) sits on a cell edge and is mostly counted on the wrong
    side: -5.7% on ``age <= 30`` for whole years 16..100 under ±10 uniform noise, in the
    limit of infinite data. Under bounded noise the reports of whole numbers have a
    density that jumps at whole numbers (shifted by the noise's reach), which real-valued
    truths do not give; this test looks for that signature. Both the lattice of whole
    numbers ``low, ..., high`` and the same lattice shifted by half a step are fitted
    (EMS, :data:`LATTICE_SMOOTHING`) to the reports counted in half-unit bins; the shifted
    lattice is as flexible but puts its points between the whole numbers, so it fits
    real-valued truths about as well and whole numbers much worse. The whole numbers are
    taken when their log-likelihood wins by more than ``max(10, 2e-4 n)`` (measured gains:
    see :data:`_WHOLE_GAIN_PER_REPORT`) and by more than 2.5 of its standard deviations
    (:func:`whole_number_evidence`). Short of that, :func:`~.queries.count_joint` weighs
    both models by :attr:`WholeNumberEvidence.lattice_weight`.

    Without noise the answer is read off the reports. Smooth noise (Gaussian, Laplace)
    blurs the jumps: at n = 10^6 the gain was the same (about 5-8) for whole and
    real-valued ages, so no step is detected and the interval model (and its bias on
    whole numbers at thresholds) stays; such a question should declare ``step``.
    Retention replacement is not additive and is never tested.

    Parameters
    ----------
    values : array_like of shape (n,)
        Reported values.
    noise : NoiseModel
    low, high : float
        The declared range; both must be whole numbers at most
        :data:`MAX_LATTICE_CELLS` - 1 apart (otherwise ``None``).

    Returns
    -------
    float or None
        ``1.0`` (the step to model) or ``None``.
    """
    evidence = whole_number_evidence(values, noise, low, high)
    return 1.0 if evidence is not None and evidence.detected else None


def whole_threshold_note(
    name: str,
    noise: NoiseModel,
    low: float,
    high: float,
    thresholds: Sequence[float],
) -> Note | None:
    """A note where smooth noise hides a bias the analyst can remove by declaring ``step``.

    Under Gaussian or Laplace noise the reports cannot show whether the true values are
    whole numbers (:func:`whole_number_step`: the evidence's gain was the same for whole
    and real-valued ages at n = 10^6): the fractional part is not identifiable from the
    data. The staircase is treated alike (not measured: its characteristic function at
    the lattice frequency is at most ``a / pi``, its density at 0 over pi, 0.017 for
    ε = 4 and sensitivity 70, so at most a faint trace of whole numbers reaches the
    reports). If they are whole numbers, a condition's threshold on a whole number (the
    lattice of whole numbers from a whole-number ``low``, inside the range) puts the
    values equal to it on an edge of the interval model's cells, which spreads each
    cell's mass evenly, and the result is biased: -5.7% for ``age <= 30`` on whole
    years, whatever ``n`` (issue 10). On the lattice (a declared ``step``) the threshold
    would cut between lattice points and change the answer. ``None`` for other noise
    (bounded noise is tested for whole numbers), a range whose ``low`` is not a whole
    number, and thresholds between whole numbers (a lattice cuts where the intervals do
    or splits no point there). The caller gives the attribute's condition thresholds
    when it declares no step and was not found to hold whole numbers.
    """
    if not isinstance(noise, (AdditiveGaussian, AdditiveLaplace, AdditiveStaircase)):
        return None
    if not (math.isfinite(low) and low == math.floor(low)):
        return None
    on_points = sorted(
        {float(t) for t in thresholds if low < t < high and abs(t - round(t)) < 1e-9}
    )
    if not on_points:
        return None
    return Note(
        gettext_noop(
            "%(name)s declares no step and its noise cannot show whether its true values "
            "are whole numbers; if they are (years, counts), values equal to %(thresholds)s "
            "sit on a cell edge of the interval model and this result can be biased by "
            "several per cent (about -6%% for age <= 30 in whole years): declare step 1 on "
            "the question"
        ),
        name=name,
        thresholds=", ".join(f"{t:g}" for t in on_points),
    )


@dataclass(frozen=True)
class WholeNumberEvidence:
    """How much better whole numbers explain the reports than the half-shifted lattice.

    ``gain`` is the log-likelihood of the whole-number lattice minus that of the lattice
    shifted by half a step (both EMS fits to the reports in half-unit bins), ``spread``
    the standard deviation of that sum over the reports (Vuong's statistic is
    ``gain / spread``), ``reports`` their number. Without noise the reports are read
    directly (``gain`` is +inf for whole numbers, -inf otherwise).
    """

    gain: float
    spread: float
    reports: int
    expected: float = math.inf

    @property
    def lattice_weight(self) -> float:
        """How far the evidence favours whole numbers, in [0, 1] (a posterior weight).

        The gain is taken as normal with standard deviation ``spread``, centred on 0
        when the truths are real-valued (neither lattice fits them better) and on
        ``expected`` (the gain the whole-number fit itself predicts) when they are whole
        numbers; with equal prior odds the weight of whole numbers is
        ``1 / (1 + exp(-expected (gain - expected / 2) / spread^2))``. Small surveys
        cannot tell (``expected`` is then small next to ``spread``, the weight about
        1/2); large ones can (about 0 or 1).
        """
        if math.isinf(self.gain):
            return 1.0 if self.gain > 0 else 0.0
        if math.isinf(self.expected):
            return 1.0 if self.detected else 0.0
        logit = self.expected * (self.gain - 0.5 * self.expected) / self.spread**2
        return float(0.5 * (1.0 + math.tanh(0.5 * max(min(logit, 700.0), -700.0))))

    @property
    def z(self) -> float:
        """Vuong-style statistic ``gain / spread`` (+-inf without noise)."""
        if math.isinf(self.gain):
            return self.gain
        return self.gain / self.spread

    @property
    def detected(self) -> bool:
        """Whole numbers beyond doubt: z > 2.5 and a gain past ``max(10, 2e-4 n)``."""
        return self.z > _WHOLE_MIN_Z and self.gain > max(
            _WHOLE_MIN_GAIN, _WHOLE_GAIN_PER_REPORT * self.reports
        )


def whole_number_evidence(
    values: ArrayLike, noise: NoiseModel, low: float, high: float
) -> WholeNumberEvidence | None:
    """The evidence :func:`whole_number_step` decides on, ``None`` where it cannot test.

    ``None`` for an empty column, a range whose bounds are not whole numbers or that
    holds more than :data:`MAX_LATTICE_CELLS` whole numbers, and noise that is not
    additive (retention replacement).
    """
    lo, hi = _check_range(low, high)
    reported = np.asarray(values, dtype=np.float64)
    if reported.size == 0 or not whole_numbers_testable(noise, lo, hi):
        return None
    if noise_scale(noise) == 0:
        exact = bool(np.all(reported == np.round(reported)))
        return WholeNumberEvidence(math.inf if exact else -math.inf, 1.0, int(reported.size))
    bins = _half_unit_bins(noise, lo, hi)
    counts = np.bincount(bin_values(reported, bins), minlength=bins.size - 1).astype(np.float64)
    return _lattice_evidence(counts, noise, lo, hi)


def whole_numbers_testable(noise: NoiseModel, low: float, high: float) -> bool:
    """Whether :func:`whole_number_evidence` can test reports under ``noise`` on
    ``[low, high]``: whole-number bounds holding at most :data:`MAX_LATTICE_CELLS` whole
    numbers, additive noise."""
    lo, hi = _check_range(low, high)
    if lo != math.floor(lo) or hi != math.floor(hi) or hi - lo + 1 > MAX_LATTICE_CELLS:
        return False
    return noise_scale(noise) is not None


def _half_unit_bins(noise: NoiseModel, lo: float, hi: float) -> NDArray[np.float64]:
    """The half-unit bins the evidence counts reports in (outer bins open)."""
    r_lo, r_hi = noise.reported_bounds(lo, hi)
    return np.arange(math.floor(r_lo), math.ceil(r_hi) + 0.75, 0.5)


def half_unit_evidence(
    half_units: Mapping[int, float], noise: NoiseModel, low: float, high: float
) -> WholeNumberEvidence | None:
    """:func:`whole_number_evidence` from the reports' half-unit histogram.

    ``half_units`` maps ``floor(2 x)`` to the number of reports ``x`` in
    ``[k / 2, (k + 1) / 2)``: what a database counts in one ``GROUP BY`` (bounded rows
    whatever the number of reports, :func:`surveys.statistics.half_unit_counts`). The
    evidence equals the array version's on the same reports (its bins are these half
    units, the outer ones open). ``None`` where that one is ``None`` and also without
    noise (the half units cannot show whether every report is a whole number).
    """
    lo, hi = _check_range(low, high)
    total = float(sum(half_units.values()))
    if total <= 0 or not whole_numbers_testable(noise, lo, hi) or noise_scale(noise) == 0:
        return None
    bins = _half_unit_bins(noise, lo, hi)
    counts = np.zeros(bins.size - 1, dtype=np.float64)
    first = 2 * math.floor(bins[0])
    for unit, count in half_units.items():
        counts[min(max(int(unit) - first, 0), counts.size - 1)] += float(count)
    return _lattice_evidence(counts, noise, lo, hi)


def _lattice_evidence(
    counts: NDArray[np.float64], noise: NoiseModel, lo: float, hi: float
) -> WholeNumberEvidence:
    """The whole-number lattice against the half-shifted one, on half-unit counts."""
    bins = _half_unit_bins(noise, lo, hi)
    size = round(float(counts.sum()))
    strength = LATTICE_SMOOTHING if default_smoothing(noise) > 0 else 0.0
    predicted, fits = [], []
    for cells in (lattice_cells(lo, hi, 1.0), lattice_cells(lo - 0.5, hi + 0.5, 1.0)):
        channel = cells.channel(noise, bins)
        smoother = [smoothing_matrix(cells.edges, strength)] if strength > 0 else None
        theta, _, _ = fixed_point(counts, [channel], smoothing=smoother)
        predicted.append(theta @ channel)
        fits.append((channel, smoother, theta))
    seen = counts > 0
    whole, half = (np.maximum(q[seen], 1e-300) for q in predicted)
    ratios = np.log(whole) - np.log(half)
    kept = counts[seen]
    gain = float(kept @ ratios)
    spread = math.sqrt(max(float(kept @ ratios**2) - gain * gain / kept.sum(), 1e-12))
    # The gain whole numbers would give: the reports the whole-number fit predicts,
    # against the half-shifted lattice's best fit to them (n times a Kullback-Leibler
    # divergence).
    channel, smoother, start = fits[1]
    ideal = predicted[0] / predicted[0].sum()
    theta, _, _ = fixed_point(ideal * size, [channel], initial=start, smoothing=smoother)
    shifted = theta @ channel
    inside = ideal > 0
    expected = float(
        size * ideal[inside] @ (np.log(ideal[inside]) - np.log(np.maximum(shifted[inside], 1e-300)))
    )
    return WholeNumberEvidence(gain, spread, size, max(expected, 0.0))


def reported_edges(
    edges: ArrayLike, noise: NoiseModel, low: float, high: float
) -> NDArray[np.float64]:
    """Bins for the reported values: the true edges, extended over the reported range.

    The true edges are kept inside ``[low, high]``; beyond them, bins of the median true
    width continue up to ``noise.reported_bounds(low, high)`` (noise pushes values out of
    the declared range). The outer bins count as open (``interval_channel`` convention).
    """
    true_edges = np.asarray(edges, dtype=np.float64)
    lo, hi = noise.reported_bounds(low, high)
    width = float(np.median(np.diff(true_edges)))
    below = math.ceil((true_edges[0] - lo) / width - 1e-9) if lo < true_edges[0] else 0
    above = math.ceil((hi - true_edges[-1]) / width - 1e-9) if hi > true_edges[-1] else 0
    left = true_edges[0] - width * np.arange(below, 0, -1)
    right = true_edges[-1] + width * np.arange(1, above + 1)
    return np.asarray(np.concatenate([left, true_edges, right]), dtype=np.float64)


def bin_values(values: ArrayLike, edges: ArrayLike) -> NDArray[np.intp]:
    """Bin index of each value; bins are ``[e_i, e_{i+1})`` and the outer two are open."""
    array = np.asarray(values, dtype=np.float64)
    inner = np.asarray(edges, dtype=np.float64)[1:-1]
    return np.asarray(np.searchsorted(inner, array, side="right"), dtype=np.intp)


def smoothing_matrix(edges: ArrayLike, strength: float = DEFAULT_SMOOTHING) -> NDArray[np.float64]:
    """The smoothing step of EMS over intervals (Silverman et al. 1990), as a matrix.

    EMS follows each EM step by a discrete smoothing ``theta <- S theta``; Silverman et
    al. use the binomial weights ``(1/4, 1/2, 1/4)`` over neighbouring bins, which is
    ``strength = 0.5``: a share ``strength / 2`` of an interval's mass moves to each
    neighbour. Intervals may have different widths (thresholds are edges), so the moves
    are those of a reversible random walk whose stationary distribution is the
    interval widths: ``S[i, j] = (strength / 2) min(w_i, w_j) / w_j`` for neighbours
    ``i = j +- 1`` and the rest of column ``j`` stays in ``j``. Hence ``S`` keeps the
    total mass (columns sum to 1) and leaves a flat density flat (``S w = w``); at the
    ends of the range mass that would leave stays (reflection).

    Parameters
    ----------
    edges : array_like of shape (m + 1,)
        Strictly increasing interval edges.
    strength : float, default 0.05 (:data:`DEFAULT_SMOOTHING`)
        In ``[0, 1]``; 0 gives the identity (plain EM); 0.5 is Silverman et al.'s
        binomial weights.

    Returns
    -------
    ndarray of shape (m, m)
        Column-stochastic, ``S[i, j]`` = share of interval ``j``'s mass moved to ``i``.
    """
    widths = np.diff(np.asarray(edges, dtype=np.float64))
    if widths.ndim != 1 or widths.size < 1 or np.any(~(widths > 0)):
        raise ValueError("edges must be a strictly increasing 1-D array of at least 2 edges")
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be in [0, 1], got {strength!r}")
    m = widths.size
    matrix = np.zeros((m, m))
    if m > 1:
        moved = 0.5 * strength * np.minimum(widths[1:], widths[:-1])
        index = np.arange(m - 1)
        matrix[index + 1, index] = moved / widths[:-1]  # from j to j + 1
        matrix[index, index + 1] = moved / widths[1:]  # from j + 1 to j
    matrix[np.arange(m), np.arange(m)] = 1.0 - matrix.sum(axis=0)
    return matrix


def _forward(
    theta: NDArray[np.float64], channels: Sequence[NDArray[np.float64]]
) -> NDArray[np.float64]:
    """Push true-cell probabilities (batch, t1, ..., td) through the product channel."""
    out = theta
    for axis, channel in enumerate(channels, start=1):
        out = np.moveaxis(np.tensordot(out, channel, axes=([axis], [0])), -1, axis)
    return out


def _backward(
    ratio: NDArray[np.float64], channels: Sequence[NDArray[np.float64]]
) -> NDArray[np.float64]:
    """Pull reported-cell weights (batch, r1, ..., rd) back onto the true cells."""
    out = ratio
    for axis, channel in enumerate(channels, start=1):
        out = np.moveaxis(np.tensordot(out, channel, axes=([axis], [1])), -1, axis)
    return out


def _smooth(
    theta: NDArray[np.float64], smoothers: Sequence[NDArray[np.float64] | None]
) -> NDArray[np.float64]:
    """Apply per-axis smoothing matrices (None: no smoothing) to (batch, t1, ..., td).

    Tridiagonal matrices (those of :func:`smoothing_matrix`) are applied by shifts, in
    time linear in the number of cells; others by a matrix product.
    """
    out = theta
    for axis, matrix in enumerate(smoothers, start=1):
        if matrix is None:
            continue
        size = matrix.shape[0]
        lower = np.diagonal(matrix, -1)
        upper = np.diagonal(matrix, 1)
        if size > 2 and np.count_nonzero(matrix) > 3 * size - 2:
            out = np.moveaxis(np.tensordot(out, matrix, axes=([axis], [1])), -1, axis)
            continue
        moved = np.moveaxis(out, axis, -1)
        smoothed = moved * np.diagonal(matrix)
        smoothed[..., 1:] += moved[..., :-1] * lower
        smoothed[..., :-1] += moved[..., 1:] * upper
        out = np.moveaxis(smoothed, -1, axis)
    return out


def _occupied_bins(
    mats: list[NDArray[np.float64]], table: NDArray[np.float64]
) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
    """Drop the reported bins of each axis that no table of the batch counts anything in.

    A reported bin ``r`` enters the update of :func:`fixed_point` only through
    ``c_r / q_r`` with ``q_r = sum_t theta_t C[t, r]`` (its own column), and the
    log-likelihood only where ``c_r > 0``; so a bin with ``c_r = 0`` in every table adds
    nothing, and the fixed point, iteration count and stopping are those of the full
    channel (up to the order of floating-point sums). Heavy-tailed noise reaches far
    past the reports (Laplace bounds at 27.6 scales: about half of 4,008 half-year bins
    for ages under ε = 2 are empty at n = 10^5), and those columns cost as much as the
    occupied ones. Bootstrap resamples of the reports never leave the occupied bins.
    A batch with no counts at all keeps every bin.
    """
    kept_mats: list[NDArray[np.float64]] = []
    for a, mat in enumerate(mats):
        others = tuple(i for i in range(table.ndim) if i != a + 1)
        occupied = np.flatnonzero(table.sum(axis=others) > 0)
        if occupied.size in (0, mat.shape[1]):
            kept_mats.append(mat)
            continue
        kept_mats.append(np.ascontiguousarray(mat[:, occupied]))
        table = np.ascontiguousarray(np.take(table, occupied, axis=a + 1))
    return kept_mats, table


def fixed_point(
    counts: ArrayLike,
    channels: Sequence[ArrayLike],
    *,
    stopping: Stopping = "em",
    tol: float | None = None,
    max_iter: int = 10_000,
    initial: ArrayLike | None = None,
    smoothing: Sequence[ArrayLike | None] | None = None,
) -> tuple[NDArray[np.float64], int, bool]:
    """The AS/EM fixed point on reported counts, for one or a batch of count tables.

    001_28af1923c784b480.txt, Figure 1 / equation (3) (AS) and Figure 2 (EM/AS) in their
    binned form: ``theta_t <- theta_t * sum_r C[t, r] c_r / q_r / n`` with
    ``q = theta C``. The channel of several attributes is their Kronecker product; it is
    applied one axis at a time, never formed.

    Stopping rules
    --------------
    ``"as"``: 001, Section III-B2, third criterion of [10]: stop when the chi-square
    statistic between two consecutive estimates (as counts) falls below ``tol`` (default
    0.01, "1% of the threshold of chi^2 test") times the 95% chi-square critical value.
    ``"em"``: the EM of [11] (001, Section III-B3) is run until the estimate stops
    moving: the largest change of any cell's proportion is below ``tol`` (default 1e-6).
    SQUAREM extrapolation (:func:`_squarem`) speeds EM up without changing its fixed point.

    With ``smoothing`` every update is followed by the smoothing step of EMS (Silverman
    et al. 1990; see :func:`smoothing_matrix`) along the axes that have a matrix, and the
    iteration converges to the fixed point of the smoothed map instead of the spiky
    maximum-likelihood estimate.

    Parameters
    ----------
    counts : array_like of shape (r1, ..., rd) or (batch, r1, ..., rd)
        Reported cell counts; with ``d + 1`` dimensions the first is a batch (e.g.
        bootstrap replicates), each run separately (vectorised).
    channels : sequence of d arrays of shape (t_a, r_a)
        Row-stochastic channel per attribute.
    stopping : {"em", "as"}
    tol : float, optional
    max_iter : int
    initial : array_like of shape (t1, ..., td) or (batch, t1, ..., td), optional
        Starting proportions (default uniform, as Figures 1 and 2). Warm starts (e.g.
        bootstrap replicates started at the point estimate) reach the same fixed point.
    smoothing : sequence of d (t_a, t_a) arrays or None, optional
        Column-stochastic smoothing matrix per axis (:func:`smoothing_matrix`), ``None``
        for an axis that is not smoothed (discrete attributes). Default: plain EM.

    Returns
    -------
    theta : ndarray of shape (t1, ..., td) or (batch, t1, ..., td)
        Estimated proportions of the true cells (each table sums to 1).
    iterations : int
    converged : bool
        Whether every table met the stopping rule before ``max_iter``.
    """
    mats = [np.asarray(c, dtype=np.float64) for c in channels]
    if not mats:
        raise ValueError("need at least one channel")
    for a, mat in enumerate(mats):
        if mat.ndim != 2 or not np.all(np.isfinite(mat)) or np.any(mat < 0):
            raise ValueError(f"channel {a} must be a finite non-negative 2-D matrix")
    table = np.asarray(counts, dtype=np.float64)
    d = len(mats)
    batched = table.ndim == d + 1
    if not batched and table.ndim != d:
        raise ValueError(f"counts must have {d} or {d + 1} dimensions, got {table.ndim}")
    if not batched:
        table = table[None]
    if table.shape[1:] != tuple(m.shape[1] for m in mats):
        raise ValueError(
            f"counts shape {table.shape[1:]} does not match the channels' reported sizes "
            f"{tuple(m.shape[1] for m in mats)}"
        )
    if np.any(table < 0) or not np.all(np.isfinite(table)):
        raise ValueError("counts must be finite and non-negative")
    if stopping not in ("em", "as"):
        raise ValueError(f"stopping must be 'em' or 'as', got {stopping!r}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    rule_tol = _DEFAULT_TOL[stopping] if tol is None else float(tol)
    if not rule_tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    smoothers: list[NDArray[np.float64] | None] = [None] * d
    if smoothing is not None:
        if len(smoothing) != d:
            raise ValueError(f"smoothing needs one entry per channel ({d}), got {len(smoothing)}")
        for a, entry in enumerate(smoothing):
            if entry is None:
                continue
            matrix = np.asarray(entry, dtype=np.float64)
            size = mats[a].shape[0]
            if matrix.shape != (size, size) or not np.all(np.isfinite(matrix)):
                raise ValueError(f"smoothing matrix {a} must be a finite ({size}, {size}) matrix")
            smoothers[a] = matrix

    mats, table = _occupied_bins(mats, table)
    batch = table.shape[0]
    true_shape = tuple(m.shape[0] for m in mats)
    reported_shape = table.shape[1:]
    # Joint reported cells that no table of the batch counts anything in: as for the
    # bins of one axis (_occupied_bins), such a cell enters the update only through its
    # own column, so the flattened (Kronecker) product below drops them exactly. A joint
    # model of a few hundred participants leaves most of its cells empty (a category x
    # 876 staircase age bins at n = 1,000: 4,380 cells, at most 1,000 occupied).
    joint = table.reshape(batch, -1)
    occupied = np.flatnonzero(joint.sum(axis=0) > 0) if d > 1 else np.arange(joint.shape[1])
    if occupied.size == 0:
        occupied = np.arange(joint.shape[1])
    kron_cost = math.prod(true_shape) * occupied.size
    axis_cost = sum(
        math.prod(reported_shape[:a]) * mats[a].size * math.prod(true_shape[a + 1 :])
        for a in range(d)
    )
    if d > 1 and kron_cost <= min(_KRON_MAX_ENTRIES, _KRON_MAX_RATIO * axis_cost):
        # Small enough, and not much more work than the axis-by-axis products, to form
        # the Kronecker product of the occupied joint cells: one matrix product per pass
        # (smoothing still runs per axis on the unflattened true cells).
        # Column r of kron(C_1, ..., C_d) is the outer product of the axes' columns at
        # r's multi-index (true cells in np.kron's order), formed for occupied r only.
        index = np.unravel_index(occupied, reported_shape)
        product = mats[0][:, index[0]]
        for mat, columns in zip(mats[1:], index[1:], strict=True):
            product = (product[:, None, :] * mat[:, columns][None, :, :]).reshape(-1, occupied.size)
        loop_mats = [np.ascontiguousarray(product)]
        table = np.ascontiguousarray(joint[:, occupied])
    else:
        loop_mats = mats
    loop_shape = tuple(m.shape[0] for m in loop_mats)
    loop_d = len(loop_mats)
    sizes = table.reshape(batch, -1).sum(axis=1)
    sizes_b = sizes.reshape((batch,) + (1,) * loop_d)
    if initial is None:
        theta = np.full((batch, *loop_shape), 1.0 / math.prod(true_shape))
    else:
        theta = np.array(np.broadcast_to(initial, (batch, *true_shape)), dtype=np.float64)
        theta = theta.reshape((batch, *loop_shape))
        theta /= theta.reshape(batch, -1).sum(axis=1).reshape(sizes_b.shape)
    cells = math.prod(true_shape)
    critical = float(stats.chi2.ppf(0.95, max(cells - 1, 1)))
    observed = table > 0
    safe_sizes = np.where(sizes_b > 0, sizes_b, 1.0)
    active = np.arange(batch)
    smoothed = any(matrix is not None for matrix in smoothers)

    def em_step(current: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """One update of Figure 1/2 for the active tables, and the log-likelihood of ``current``."""
        counts_now, seen, size_now = table[active], observed[active], safe_sizes[active]
        predicted = _forward(current, loop_mats)
        positive = predicted > 0
        ratio = np.where(seen, counts_now / np.where(positive, predicted, np.inf), 0.0)
        loglik = np.where(seen & positive, counts_now * np.log(np.where(positive, predicted, 1)), 0)
        updated = current * _backward(ratio, loop_mats) / size_now
        if smoothed:
            cube = updated.reshape((active.size, *true_shape))
            updated = _smooth(cube, smoothers).reshape(updated.shape)
        total = updated.reshape(active.size, -1).sum(axis=1).reshape(size_now.shape)
        updated = updated / np.where(total > 0, total, 1.0)
        return updated, loglik.reshape(active.size, -1).sum(axis=1)

    iteration = 0
    for step in range(1, max_iter + 1):
        iteration = step
        current = theta[active]
        updated, loglik = em_step(current)
        if stopping == "as":
            before = (current * sizes_b[active]).reshape(active.size, -1)
            after = (updated * sizes_b[active]).reshape(active.size, -1)
            terms = np.where(before > 0, (after - before) ** 2 / np.where(before > 0, before, 1), 0)
            finished = terms.sum(axis=1) < rule_tol * critical
            theta[active] = updated
        else:
            finished = np.abs(updated - current).reshape(active.size, -1).max(axis=1) < rule_tol
            if np.all(finished):
                theta[active] = updated
            else:
                theta[active] = np.where(
                    finished.reshape((-1,) + (1,) * loop_d),
                    updated,
                    _squarem(current, updated, loglik, em_step),
                )
        # Tables that met the rule stop moving; the others keep iterating.
        active = active[~finished]
        if active.size == 0:
            break
    converged = active.size == 0
    theta = theta.reshape((batch, *true_shape))
    result = theta if batched else theta[0]
    return np.asarray(result, dtype=np.float64), iteration, converged


def _squarem(
    start: NDArray[np.float64],
    first: NDArray[np.float64],
    start_loglik: NDArray[np.float64],
    em_step: Callable[[NDArray[np.float64]], tuple[NDArray[np.float64], NDArray[np.float64]]],
) -> NDArray[np.float64]:
    """One SQUAREM extrapolation (Varadhan and Roland 2008, scheme S3) of the EM map.

    Only speeds up convergence to the same fixed point: the extrapolated point is
    projected back onto the simplex, followed by one EM step, and replaced by the plain
    second EM step wherever it would lower the likelihood (EM is monotone, so is this).
    """
    batch = start.shape[0]
    second, _ = em_step(first)
    r = (first - start).reshape(batch, -1)
    v = (second - first).reshape(batch, -1) - r
    r_norm = np.sqrt((r * r).sum(axis=1))
    v_norm = np.sqrt((v * v).sum(axis=1))
    alpha = -r_norm / np.where(v_norm > 0, v_norm, np.inf)
    alpha = np.minimum(alpha, -1.0)[:, None]
    jumped = start.reshape(batch, -1) - 2.0 * alpha * r + alpha * alpha * v
    jumped = np.clip(jumped, 0.0, None)
    jumped /= np.where(jumped.sum(axis=1, keepdims=True) > 0, jumped.sum(axis=1, keepdims=True), 1)
    candidate, candidate_loglik = em_step(jumped.reshape(start.shape))
    # candidate_loglik is that of the jumped point, which the EM step only improves.
    worse = ~(candidate_loglik >= start_loglik)
    if np.any(worse):
        candidate[worse] = second[worse]
    return candidate


def default_smoothing(noise: NoiseModel, stopping: Stopping = "em") -> float:
    """Default EMS smoothing strength: 0.05 for EM under additive noise, else 0.

    Additive noise with a positive standard deviation blurs the density, and the plain
    EM fixed point (the NPMLE) is then spiky. Without noise the histogram is exact, and
    retention replacement keeps a share of the values exactly, so neither is smoothed;
    AS (001, Section III-B2) stops early instead of smoothing.
    """
    scale = noise_scale(noise)
    if stopping != "em" or scale is None or not scale > 0:
        return 0.0
    return DEFAULT_SMOOTHING


def _percentile_ci(replicates: NDArray[np.float64]) -> NDArray[np.float64]:
    """Percentile 95% interval along axis 0 -> shape (..., 2)
    (:func:`~.uncertainty.percentile_interval`, the rule every percentile interval shares)."""
    return percentile_interval(replicates)


def reconstruct_continuous(
    values: ArrayLike,
    noise: NoiseModel,
    low: float,
    high: float,
    *,
    method: Stopping = "em",
    edges: ArrayLike | None = None,
    thresholds: Sequence[float] = (),
    n_intervals: int | None = None,
    tol: float | None = None,
    max_iter: int = 10_000,
    ci: bool = True,
    n_boot: int = 200,
    rng: np.random.Generator | None = None,
    smoothing: float | None = None,
    step: float | None = None,
    cuts: Sequence[tuple[float, bool]] | None = None,
) -> IntervalReconstruction:
    """Reconstruct the distribution of a distorted continuous attribute over intervals.

    001_28af1923c784b480.txt, Section III-B2 (AS, Figure 1, equation (3)) and Section
    III-B3 (EM), in the binned form of :func:`fixed_point`: the reported values are
    counted in :func:`reported_edges` bins, the channel is
    ``noise.interval_channel(edges, reported_edges)`` and the iteration starts from the
    uniform distribution. With additive noise ``"em"`` runs as EMS (EM with a smoothing
    step, Silverman et al. 1990; :func:`smoothing_matrix`): the converged plain EM is
    spiky under smooth noise (Gaussian noise with sigma 6 on ages put 0.11 of the mass
    below 30 instead of 0.16). The 95% intervals come from a vectorised bootstrap over
    participants (multinomial resampling of the reported bin counts, each replicate
    reconstructed the same way, warm-started at the estimate).

    Parameters
    ----------
    values : array_like of shape (n,)
        Reported (distorted) values.
    noise : NoiseModel
        The mechanism that distorted them (``privacy.mechanisms``).
    low, high : float
        The attribute's declared range.
    method : {"em", "as"}
        Selects the stopping rule (see :func:`fixed_point`).
    edges : array_like, optional
        Interval edges over ``[low, high]``; default :func:`interval_edges` with the
        ``thresholds`` and an interval count chosen from ``n`` and the noise scale.
    thresholds : sequence of float
        Points that must be interval edges (a query's thresholds).
    n_intervals : int, optional
        Regular intervals before thresholds are added.
    tol, max_iter
        Stopping rule parameters.
    ci : bool
        Compute the bootstrap intervals (needs ``rng``).
    n_boot : int
        Bootstrap replicates.
    rng : numpy.random.Generator, optional
        Randomness for the bootstrap; required when ``ci`` is true.
    smoothing : float, optional
        Strength of the EMS smoothing step in ``[0, 1]`` (0: plain EM, the NPMLE).
        Default: 0.05 (:data:`DEFAULT_SMOOTHING`, a tenth of Silverman et al.'s binomial
        weights) for ``"em"`` under additive
        noise with a positive standard deviation, 0 otherwise (no noise, retention
        replacement, and AS, which 001 stops early instead).
    step : float, optional
        The true values lie on the lattice ``low, low + step, ..., high`` (a question
        that declares ``step``): the cells are those of :func:`lattice_cells` (one per
        lattice point up to :data:`MAX_LATTICE_CELLS` points, edges at half-steps) with
        the exact point channels, as :func:`axis_model` gives every query. Not with
        ``edges``; ``thresholds`` are then cut on the lattice as ``v <= t``.

    Returns
    -------
    IntervalReconstruction
        ``method`` is ``"em"`` or ``"as"``; counts sum to ``n``. With ``step`` the edges
        are the half-steps around the lattice points (from ``low - step / 2`` to
        ``high + step / 2``).

    Raises
    ------
    ValueError
        Empty or non-finite values, a bad range or edges, ``ci`` without ``rng``.
    """
    lo, hi = _check_range(low, high)
    reported = np.asarray(values, dtype=np.float64)
    if reported.ndim != 1 or reported.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {reported.shape}")
    if not np.all(np.isfinite(reported)):
        raise ValueError("values must be finite numbers")
    if method not in ("em", "as"):
        raise ValueError(f"method must be 'em' or 'as', got {method!r}")
    if ci and rng is None:
        raise ValueError("ci=True needs rng (a numpy.random.Generator) for the bootstrap")
    n = reported.size
    lattice: AxisModel | None = None
    if step is not None:
        if edges is not None:
            raise ValueError("give either edges or step, not both")
        lattice = axis_model(
            noise,
            lo,
            hi,
            cuts=[(float(t), True) for t in thresholds] if cuts is None else cuts,
            step=step,
            n_intervals=n_intervals,
            n=n,
        )
        true_edges = lattice.edges
    elif edges is None:
        true_edges = interval_edges(
            lo,
            hi,
            thresholds=thresholds,
            n_intervals=n_intervals,
            n=n,
            noise_scale=noise_scale(noise),
        )
    else:
        true_edges = np.asarray(edges, dtype=np.float64)
        if (
            true_edges.ndim != 1
            or true_edges.size < 2
            or np.any(np.diff(true_edges) <= 0)
            or not np.isclose(true_edges[0], lo)
            or not np.isclose(true_edges[-1], hi)
        ):
            raise ValueError("edges must increase strictly from low to high")
    if smoothing is not None:
        strength = float(smoothing)
    elif lattice is not None and method == "em":
        strength = lattice.smoothing
    else:
        strength = default_smoothing(noise, method)
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing!r}")
    if lattice is not None:
        bins, channel = lattice.reported_edges, lattice.channel
    else:
        bins = reported_edges(true_edges, noise, lo, hi)
        channel = noise.interval_channel(true_edges, bins)
    counts = np.bincount(bin_values(reported, bins), minlength=bins.size - 1).astype(np.float64)
    smoother = [smoothing_matrix(true_edges, strength)] if strength > 0 else None
    theta, iterations, converged = fixed_point(
        counts, [channel], stopping=method, tol=tol, max_iter=max_iter, smoothing=smoother
    )
    estimate = theta * n
    if ci:
        assert rng is not None
        draws = rng.multinomial(n, counts / n, size=n_boot).astype(np.float64)
        # AS depends on where it starts (it stops early), so only EM is warm-started.
        boot, _, _ = fixed_point(
            draws,
            [channel],
            stopping=method,
            tol=tol,
            max_iter=max_iter,
            initial=theta if method == "em" else None,
            smoothing=smoother,
        )
        interval = _percentile_ci(boot * n)
    else:
        interval = np.full((estimate.size, 2), np.nan)
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
                method=method.upper(),
                max_iter=max_iter,
            ),
        )
    result = Reconstruction(
        counts=estimate,
        proportions=theta,
        ci95=interval,
        iterations=iterations,
        converged=converged,
        method=method,
        notes=notes,
    )
    return IntervalReconstruction(reconstruction=result, edges=true_edges, reported_edges=bins)
