"""The model of one continuous attribute for a query: cells, bins, channel, smoothing.

Pure module: numpy and scipy only.

:func:`axis_model` chooses the true cells of a continuous attribute for a query (the
intervals of 001_28af1923c784b480.txt, Section III-B2 with the thresholds of Section
IV-A1 as edges, :mod:`.intervals`; or the lattice of :mod:`.lattice`), the reported bins
over the noise's reach, the channel ``noise.interval_channel`` / ``point_channel`` and
the EMS strength, as one :class:`AxisModel`: one axis of the joint model of
:mod:`reconstruction.algorithms.queries.cells`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms import NoiseModel
from reconstruction.algorithms.continuous.em import default_smoothing
from reconstruction.algorithms.continuous.intervals import (
    interval_edges,
    noise_scale,
    reported_edges,
)
from reconstruction.algorithms.continuous.lattice import (
    LATTICE_SMOOTHING,
    lattice_cells,
    lattice_cut,
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
