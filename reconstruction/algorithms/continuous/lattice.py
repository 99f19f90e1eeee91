"""True values on a lattice (whole years): the cells and their exact channels.

Pure module: numpy and scipy only.

A question that declares ``step`` (or whose reports show whole numbers, see
:mod:`.whole_numbers`) has true values on ``low, low + step, ..., high``
(:func:`lattice_points`): one cell per point up to :data:`MAX_LATTICE_CELLS` points,
with the noise's point channels (:class:`LatticeCells`, :func:`lattice_cells`), and
thresholds cut between points (:func:`lattice_cut`, so ``age <= 30`` counts 30).
Beyond 001_28af1923c784b480.txt, whose intervals (Section III-B2) would put whole numbers
on cell edges.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms import NoiseModel
from reconstruction.algorithms.continuous.intervals import (
    _check_range,
    interval_count,
    interval_edges,
)

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
