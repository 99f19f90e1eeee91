"""Bands of a continuous question that a reader can use (issue 32, item 8).

Pure module: numpy only.

A continuous question's reconstruction has one cell per lattice point (ages 16..100: 85
single years) or per interval, and most cells' 95% intervals are wider than their counts.
A report shows *bands* instead: round bands (5 or 10 years, or 1, 2 or 5 times a power of
ten of the question's unit) over the range, merged with a neighbour until each band's
interval is useful: its half-width at most a quarter of its count (``ratio``).

A band's count is the sum of its cells' counts, and its interval comes from the same sums
over the bootstrap replicates (``IntervalReconstruction.replicates``; the percentile rule
of :func:`~reconstruction.algorithms.uncertainty.percentile_interval`): neighbouring cells
of a deconvolution are negatively correlated, so the sum of their intervals' half-widths
would overstate a band's uncertainty several times over. Without replicates (answers
collected undistorted) the counts are exact and so are the bands'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reconstruction.algorithms.uncertainty import percentile_interval

MAX_BANDS = 20
"""The round width is the smallest that cuts the range into at most this many bands."""

USEFUL = 0.25
"""A band is useful when its interval's half-width is at most this share of its count."""


@dataclass(frozen=True)
class Bands:
    """Bands over a continuous question's cells.

    Attributes
    ----------
    edges : ndarray of shape (b + 1,)
        Round edges of the bands (the first at or below the range's low end, the last at
        or above its high end); band ``j`` is ``[edges[j], edges[j+1])``.
    first, last : ndarray of int, shape (b,)
        The cells each band sums (``first[j] .. last[j]`` inclusive).
    counts : ndarray of shape (b,)
    ci95 : ndarray of shape (b, 2)
        The band's 95% interval: percentiles of the replicates' sums (degenerate when
        exact).
    width : float
        The round width the bands started from.
    """

    edges: NDArray[np.float64]
    first: NDArray[np.intp]
    last: NDArray[np.intp]
    counts: NDArray[np.float64]
    ci95: NDArray[np.float64]
    width: float

    def useful(self, ratio: float = USEFUL) -> NDArray[np.bool_]:
        """Whether each band's half-width is at most ``ratio`` of its count."""
        half = (self.ci95[:, 1] - self.ci95[:, 0]) / 2
        return np.asarray((self.counts > 0) & (half <= ratio * self.counts), dtype=bool)


def round_width(
    low: float, high: float, *, max_bands: int = MAX_BANDS, at_least: float = 0.0
) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k whose bands cut ``[low, high]`` into at most
    ``max_bands`` (ages 16-100: 5 years, 17 bands) and that is ``at_least`` as wide (the
    widest cell: a band never splits one)."""
    span = float(high) - float(low)
    if not span > 0:
        raise ValueError(f"the range must be non-empty, got [{low}, {high}]")
    smallest = max(span / max_bands, float(at_least) * (1 - 1e-9))
    power = 10.0 ** math.floor(math.log10(smallest))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        width = step * power
        if width >= smallest:
            return width
    return 10.0 * power  # pragma: no cover - the loop ends at 10x, which always fits


def sum_interval(
    replicates: NDArray[np.float64] | None, cells: NDArray[np.intp], count: float
) -> NDArray[np.float64]:
    """The 95% interval of a sum of cells (exact without replicates)."""
    if replicates is None:
        return np.array([count, count], dtype=np.float64)
    return np.asarray(percentile_interval(replicates[:, cells].sum(axis=1)), dtype=np.float64)


def choose_bands(
    edges: ArrayLike,
    counts: ArrayLike,
    replicates: ArrayLike | None,
    *,
    low: float,
    high: float,
    width: float | None = None,
    ratio: float = USEFUL,
) -> Bands:
    """Round bands over the cells ``edges``/``counts``, merged until each is useful.

    Each cell goes to the round band of its midpoint. While some band's half-width
    exceeds ``ratio`` times its count (or it has no count), the one furthest from it is
    merged with its neighbour of smaller count; a single band is always returned as it
    is. ``replicates`` (``(B, cells)``) give the intervals; ``None``: exact counts.

    Raises
    ------
    ValueError
        Edges and counts that do not match, replicates of another shape.
    """
    cell_edges = np.asarray(edges, dtype=np.float64)
    values = np.asarray(counts, dtype=np.float64)
    if cell_edges.ndim != 1 or cell_edges.size != values.size + 1 or values.size == 0:
        raise ValueError(f"{cell_edges.size} edges do not bound {values.size} cells")
    boot = None if replicates is None else np.asarray(replicates, dtype=np.float64)
    if boot is not None and (boot.ndim != 2 or boot.shape[1] != values.size):
        raise ValueError(f"replicates of shape {boot.shape} for {values.size} cells")
    widest = float(np.diff(cell_edges).max())
    step = round_width(low, high, at_least=widest) if width is None else float(width)
    start = math.floor(float(low) / step + 1e-9) * step
    middles = (cell_edges[:-1] + cell_edges[1:]) / 2
    slot = np.floor((np.clip(middles, low, high) - start) / step + 1e-9).astype(np.intp)
    groups: list[list[int]] = []
    for cell, band in enumerate(slot.tolist()):
        if groups and slot[groups[-1][0]] == band:
            groups[-1].append(cell)
        else:
            groups.append([cell])

    def measure(group: list[int]) -> tuple[float, NDArray[np.float64]]:
        cells = np.asarray(group, dtype=np.intp)
        total = float(values[cells].sum())
        return total, sum_interval(boot, cells, total)

    measured = [measure(g) for g in groups]
    while len(groups) > 1:
        worst, excess = -1, 0.0
        for j, (total, (lo, hi)) in enumerate(measured):
            over = math.inf if total <= 0 else (hi - lo) / 2 / total - ratio
            if over > excess:
                worst, excess = j, over
        if worst < 0:
            break
        neighbours = [k for k in (worst - 1, worst + 1) if 0 <= k < len(groups)]
        other = min(neighbours, key=lambda k: measured[k][0])
        a, b = sorted((worst, other))
        groups[a : b + 1] = [groups[a] + groups[b]]
        measured[a : b + 1] = [measure(groups[a])]
    first = np.array([g[0] for g in groups], dtype=np.intp)
    last = np.array([g[-1] for g in groups], dtype=np.intp)
    # Inner edges: the round edge where the next band's cells begin (cells go to the band
    # of their midpoint); outer edges: round, around the first and last cells.
    inner = [start + slot[f] * step for f in first[1:]]
    outer_low = min(start + slot[first[0]] * step, math.floor(cell_edges[0] / step) * step)
    outer_high = max(start + (slot[last[-1]] + 1) * step, math.ceil(cell_edges[-1] / step) * step)
    band_edges = np.array([outer_low, *inner, outer_high], dtype=np.float64)
    return Bands(
        edges=band_edges,
        first=first,
        last=last,
        counts=np.array([m[0] for m in measured], dtype=np.float64),
        ci95=np.array([m[1] for m in measured], dtype=np.float64).reshape(-1, 2),
        width=step,
    )
