"""The LP relaxation's bound and the panels rounded from it (the warm start).

Pure module: numpy and scipy only.

The LP relaxation over types (fractional expected seats per type, maximin level ``z``
with ``x_t >= z n_t``, :func:`_lp_bound`) bounds the optimum of Flanigan et al.'s
maximin (Nature 2021) before any MILP, and hundreds of panels rounded from its seats
(systematic rounding along types sorted by posteriors, :func:`_systematic`; quotas
repaired by one-seat moves, :func:`_repair`; :func:`~.maximin._warm_start`) seed the master LP.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from reconstruction.algorithms.panel.problem import _Problem


def _lp_bound(
    problem: _Problem, selectable: NDArray[np.bool_]
) -> tuple[float, NDArray[np.float64]]:
    """The maximin of the LP relaxation: expected seats per type, not panels.

    ``max z`` over fractional seats ``x`` (``0 <= x <= n``, ``sum x = k``, the quota rows)
    with ``x_t >= z n_t`` for every selectable type. The marginals of every lottery over
    quota-satisfying panels are such an ``x`` (expectations keep linear rows), so ``z``
    bounds the optimal lowest selection probability from above; the column generation
    stops once its level is within the gap of it. Returns ``z`` and ``x``.
    """
    t = problem.sizes.size
    a, lo, hi = problem.rows()
    has_hi, has_lo = np.isfinite(hi), np.isfinite(lo)
    sel = np.flatnonzero(selectable)
    # -x_t + n_t z <= 0 for selectable t
    link = sparse.hstack(
        [
            -sparse.identity(t, format="csr")[sel],
            sparse.csr_matrix(problem.sizes[sel][:, None]),
        ],
        format="csr",
    )
    quota = sparse.csr_matrix(np.vstack([a[has_hi], -a[has_lo]]))
    quota = sparse.hstack([quota, sparse.csr_matrix((quota.shape[0], 1))], format="csr")
    cost = np.zeros(t + 1)
    cost[-1] = -1.0
    result = linprog(
        cost,
        A_ub=sparse.vstack([link, quota], format="csr"),
        b_ub=np.concatenate([np.zeros(sel.size), hi[has_hi], -lo[has_lo]]),
        A_eq=np.concatenate([np.ones(t), [0.0]])[None, :],
        b_eq=[float(problem.size)],
        bounds=np.column_stack([np.zeros(t + 1), np.concatenate([problem.sizes, [1.0]])]),
        method="highs",
    )
    if result.status != 0:
        return math.inf, np.zeros(t)
    return float(result.x[-1]), np.asarray(result.x[:-1], dtype=np.float64)


def _round_panel(
    x: NDArray[np.float64],
    size: int,
    rng: np.random.Generator,
    posteriors: NDArray[np.float64] | None = None,
) -> NDArray[np.int64]:
    """Systematic (dependent) rounding of expected seats ``x`` to a panel of ``size``.

    One uniform offset over the types' cumulated seats: every type gets ``floor(x_t)``
    or ``ceil(x_t)`` seats, with expectation ``x_t`` whatever the order, and the seats sum
    to ``size``. With ``posteriors``, the types are sorted by their posteriors (quotas in
    random priority, ties at random), so that like types are neighbours and the rounding
    acts as stratified sampling: every quota's expected count stays close to ``x``'s.
    """
    return _systematic(x, size, _order(x.size, rng, posteriors), float(rng.random()))


def _order(
    t: int, rng: np.random.Generator, posteriors: NDArray[np.float64] | None
) -> NDArray[np.intp]:
    """Types sorted by their posteriors (quotas in random priority, ties at random)."""
    if posteriors is None or posteriors.shape[1] == 0:
        return np.asarray(rng.permutation(t), dtype=np.intp)
    keys = [rng.random(t)]
    keys += [posteriors[:, j] for j in rng.permutation(posteriors.shape[1])]
    return np.asarray(np.lexsort(keys), dtype=np.intp)


def _systematic(
    x: NDArray[np.float64],
    size: int,
    order: NDArray[np.intp],
    offset: float,
    caps: NDArray[np.float64] | None = None,
) -> NDArray[np.int64]:
    """Systematic rounding of ``x`` along ``order`` at ``offset`` in ``[0, 1)``.

    ``x`` is scaled to sum to ``size`` first, so a type can get a seat more than its
    ``caps`` (its candidates) allow when ``x`` sums below ``size`` (the warm start's
    herded targets do): with ``caps`` the excess seats go to the types with room whose
    scaled target is furthest above their seats (a panel never holds more members of a
    type than it has; before, the bench drew such a panel from a lottery and failed).
    """
    scaled = x * (size / max(float(x.sum()), 1e-300))
    ends = np.cumsum(scaled[order])
    marks = np.floor(ends + offset)
    seats = np.diff(np.concatenate([[math.floor(offset)], marks]))
    panel = np.zeros(x.size, dtype=np.int64)
    panel[order] = seats.astype(np.int64)
    if caps is not None:
        limit = np.asarray(np.floor(caps + 1e-9), dtype=np.int64)
        excess = int(np.maximum(panel - limit, 0).sum())
        if excess:
            panel = np.minimum(panel, limit)
            room = limit - panel
            shortfall = np.where(room > 0, scaled - panel, -np.inf)
            for t in np.argsort(-shortfall, kind="stable"):  # over types, a few steps
                if excess == 0 or room[t] <= 0:
                    break
                give = int(min(room[t], excess))
                panel[t] += give
                excess -= give
    return panel


def _repair(
    problem: _Problem,
    panel: NDArray[np.int64],
    rows: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    rng: np.random.Generator,
    steps: int = 8,
    pool: int = 64,
) -> NDArray[np.int64] | None:
    """Greedy one-seat moves that reduce the quota violation of ``panel`` to zero.

    Each step moves the seat (from an occupied type to one of ``pool`` random types with
    room) that leaves the smallest total violation; ``None`` if ``steps`` moves do not
    reach a quota-satisfying panel.
    """
    a, lo, hi = rows
    columns = a.T  # (T, r)
    panel = panel.copy()
    for _ in range(steps + 1):
        counts = panel @ columns
        violation = float((np.maximum(lo - counts, 0) + np.maximum(counts - hi, 0)).sum())
        if violation <= 1e-9:
            return panel
        occupied = np.flatnonzero(panel > 0)
        room = np.flatnonzero(panel < problem.sizes)
        if room.size > pool:
            room = rng.choice(room, size=pool, replace=False)
        moved = counts[None, None, :] - columns[occupied][:, None, :] + columns[room][None, :, :]
        after = (np.maximum(lo - moved, 0) + np.maximum(moved - hi, 0)).sum(axis=2)
        after[occupied[:, None] == room[None, :]] = np.inf
        s, t = np.unravel_index(int(np.argmin(after)), after.shape)
        if not after[s, t] < violation - 1e-12:
            return None
        panel[occupied[s]] -= 1
        panel[room[t]] += 1
    return None
