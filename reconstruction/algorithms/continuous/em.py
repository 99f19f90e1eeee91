"""The one EM core: the EM/AS fixed point over a product of channels, with EMS smoothing.

Pure module: numpy and scipy only.

001_28af1923c784b480.txt, Sections III-B2 (AS, Figure 1, equation (3)) and III-B3 (EM),
and Figure 2 (EM/AS for nominal attributes) share one update on reported cell counts
``c`` and a channel ``C``:

    N_i  <-  sum_j  c_j * C[i, j] N_i / sum_l C[l, j] N_l

:func:`fixed_point` runs it over the product channel of several attributes (one axis at
a time, :func:`_forward` / :func:`_backward`), in batches (bootstrap replicates), with
SQUAREM acceleration; AS and EM differ in their stopping rule. EMS (Silverman, Jones,
Wilson and Nychka, J. R. Statist. Soc. B 52 (1990) 271-324) follows every EM step with a
light smoothing of the density along each continuous axis (:func:`smoothing_matrix`,
strength :func:`default_smoothing`). The joint model of the queries
(:mod:`reconstruction.algorithms.queries.cells`) and the interval reconstruction
(:mod:`.reconstruct`) both run on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from privacy.mechanisms import NoiseModel
from reconstruction.algorithms.continuous.intervals import noise_scale

Stopping = Literal["em", "as"]

_DEFAULT_TOL: dict[str, float] = {"em": 1e-6, "as": 0.01}

_KRON_MAX_ENTRIES = 2_000_000

_KRON_MAX_RATIO = 8

DEFAULT_SMOOTHING = 0.05


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
