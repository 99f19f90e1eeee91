"""Estimators of the true distribution of a discrete (nominal/ordinal) attribute.

All estimators take the reported counts (sufficient statistics) and the channel
``C[i, j] = Pr(reported j | true i)``; their cost does not depend on the number of people.

* :func:`em_as` -- EM/AS, 001_28af1923c784b480.txt, Section III-B5, Figure 2.
* :func:`eq` -- EQ (system of equations), 001, Section III-B6, equation (4).
* :func:`nstops` -- NStoPS, 003_7fc4d61026dceaec.txt, formulas (5) and (7).
* :func:`nstops_i` -- NStoPS-I, 003, Figure 1 with formulas (9)/(12) and (11).
* :func:`nstops_ii` -- NStoPS-II, 003, Section 3.2, Figure 3.
* :func:`nstops_mle` -- NStoPS-MLE, 000_1b7f9a8e281301b4.txt, Section 4.2, equation (4).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms.channels import (
    channel_conditioning,
    negative_uniform,
    validate_channel,
    validate_stochastic,
)
from privacy.mechanisms.messages import InputError, Note, gettext_noop
from reconstruction.algorithms.counts import validate_counts
from reconstruction.algorithms.result import Reconstruction
from reconstruction.algorithms.uncertainty import (
    DEFAULT_REPLICATES,
    bootstrap_ci,
    boundary_ci,
    calibrated_bootstrap_ci,
    calibration_sizes,
    linear_ci,
)

__all__ = [
    "em_as",
    "em_as_batch",
    "eq",
    "nstops",
    "nstops_i",
    "nstops_ii",
    "nstops_ii_batch",
    "nstops_mle",
    "project_to_simplex",
    "revise_negative_channel",
]

_BOOTSTRAP_TOL = 1e-6
_CALIBRATED_BOOTSTRAP_TOL = 1e-5
_CALIBRATED_BOOTSTRAP_MAX_ITER = 5_000


# --------------------------------------------------------------------------- helpers


def _check_options(tol: float, max_iter: int) -> None:
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be > 0 and finite, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")


def _counts_and_channel(
    counts: ArrayLike, channel: ArrayLike, *, square: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    matrix = validate_channel(channel) if square else validate_stochastic(channel)
    reported = validate_counts(counts, matrix.shape[1])
    impossible = (reported > 0) & (matrix.sum(axis=0) == 0)
    if np.any(impossible):
        j = int(np.flatnonzero(impossible)[0])
        raise ValueError(
            f"reported category {j} has counts but no true category can produce it "
            "(its channel column is all zeros)"
        )
    return reported, matrix


def _conditioning_notes(matrix: NDArray[np.float64]) -> tuple[str, ...]:
    """Refuse a square channel that cannot be inverted; a note when it widens intervals.

    :func:`privacy.mechanisms.channel_conditioning` holds the rule (condition number at
    most 100). Rectangular interval channels of continuous attributes are not checked
    here: their ill-posedness is that of deconvolution, handled by the interval grid
    and EMS smoothing (:mod:`reconstruction.algorithms.continuous`).
    """
    if matrix.shape[0] != matrix.shape[1]:
        return ()
    checked = channel_conditioning(matrix)
    if checked.problem is not None:
        raise InputError(checked.problem.template, **checked.problem.params)
    note = checked.note()
    return () if note is None else (note,)


def project_to_simplex(values: ArrayLike, total: float) -> NDArray[np.float64]:
    """Euclidean projection onto ``{t : t >= 0, sum(t) = total}``.

    The sort-based algorithm (Held, Wolfe and Crowder 1974; Duchi et al. 2008).

    Parameters
    ----------
    values : array_like of shape (k,)
    total : float
        Positive total.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"values must be a non-empty 1-D vector, got shape {v.shape}")
    if not total > 0:
        raise ValueError(f"total must be positive, got {total!r}")
    u = np.sort(v)[::-1]
    cumulative = np.cumsum(u) - total
    index = np.arange(1, v.size + 1)
    rho = int(np.flatnonzero(u - cumulative / index > 0)[-1])
    theta = cumulative[rho] / (rho + 1)
    return np.asarray(np.maximum(v - theta, 0.0), dtype=np.float64)


def _reconstruction(
    counts_true: NDArray[np.float64],
    total: float,
    ci95: NDArray[np.float64],
    *,
    iterations: int,
    converged: bool,
    method: str,
    notes: tuple[str, ...] = (),
) -> Reconstruction:
    return Reconstruction(
        counts=counts_true,
        proportions=counts_true / total,
        ci95=ci95,
        iterations=iterations,
        converged=converged,
        method=method,
        notes=notes,
    )


def _nan_ci(k: int) -> NDArray[np.float64]:
    return np.full((k, 2), np.nan)


# --------------------------------------------------------------------------- EM / AS


def em_as_batch(
    counts: ArrayLike,
    channel: ArrayLike,
    *,
    tol: float = 1e-8,
    max_iter: int = 10_000,
    start: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.bool_]]:
    """EM/AS on a batch of count vectors at once (vectorised over the batch).

    The update of 001_28af1923c784b480.txt, Figure 2, grouped by reported category:
    ``p_i <- p_i * sum_j (r_j / n) C[i, j] / sum_l C[l, j] p_l``. The posterior of true
    category ``i`` given reported ``j`` uses ``C[i, j]`` (row = true, column = reported), so
    the update is ``p * ((r / n) / (p @ C)) @ C.T``, correct for asymmetric channels.

    Plain EM converges slowly when the channel keeps little information, so pairs of EM
    steps are extrapolated with SQUAREM (Varadhan and Roland, Scand. J. Statist. 2008,
    scheme S3), falling back to the plain EM step whenever the extrapolated point has a
    non-positive entry or a lower likelihood. The fixed point, and therefore the
    estimate, is that of Figure 2; only the number of iterations changes. The stopping
    rule is always tested on a plain EM step from the current estimate.

    Parameters
    ----------
    counts : array_like of shape (B, k_reported)
        Non-negative count vectors, each with a positive total (not validated here beyond
        shapes; :func:`em_as` validates at the boundary).
    channel : array_like of shape (k_true, k_reported) or (B, k_true, k_reported)
        One channel for the whole batch, or one per row (bootstrap replicates whose
        channel was itself re-estimated, see
        :func:`reconstruction.algorithms.uncertainty.calibrated_bootstrap_ci`).
    tol : float
        Stop a row when the largest change of its proportions between successive
        estimates is below ``tol``.
    max_iter : int
    start : array_like of shape (k_true,) or (B, k_true), optional
        Starting proportions; the uniform distribution (as in Figure 2) by default.

    Returns
    -------
    proportions : ndarray of shape (B, k_true)
    iterations : ndarray of int64, shape (B,)
        EM steps (evaluations of the Figure 2 update) each row needed (``max_iter`` if it
        did not converge).
    converged : ndarray of bool, shape (B,)
    """
    matrix = np.asarray(channel, dtype=np.float64)
    batch = np.asarray(counts, dtype=np.float64)
    per_row = matrix.ndim == 3
    if batch.ndim != 2 or batch.shape[1] != matrix.shape[-1]:
        raise ValueError(f"counts must have shape (B, {matrix.shape[-1]}), got {batch.shape}")
    if per_row and matrix.shape[0] != batch.shape[0]:
        raise ValueError(f"{matrix.shape[0]} channels for {batch.shape[0]} count vectors")
    size, k_true = batch.shape[0], matrix.shape[-2]
    frequencies = batch / batch.sum(axis=1, keepdims=True)
    if start is None:
        p = np.full((size, k_true), 1.0 / k_true)
    else:
        p = np.array(np.broadcast_to(np.asarray(start, dtype=np.float64), (size, k_true)))
    transposed = np.ascontiguousarray(np.swapaxes(matrix, -1, -2))
    observed = frequencies > 0

    def push(current: NDArray[np.float64], mats: NDArray[np.float64]) -> NDArray[np.float64]:
        if per_row:
            return np.asarray(np.matmul(current[:, None, :], mats)[:, 0, :])
        return np.asarray(current @ mats)

    def step(
        current: NDArray[np.float64],
        freq: NDArray[np.float64],
        seen: NDArray[np.bool_],
        mats: NDArray[np.float64],
        back: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        predicted = push(current, mats)
        # A reported category no true category produces (possible only for a resampled
        # channel) carries no information about the proportions: it is ignored.
        usable = seen & (predicted > 0)
        ratio = np.where(usable, freq / np.where(usable, predicted, 1.0), 0.0)
        updated = current * push(ratio, back)
        return np.asarray(updated / updated.sum(axis=1, keepdims=True), dtype=np.float64)

    def log_likelihood(
        current: NDArray[np.float64],
        freq: NDArray[np.float64],
        seen: NDArray[np.bool_],
        mats: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        predicted = push(current, mats)
        usable = seen & (predicted > 0)
        return np.asarray(
            np.where(usable, freq * np.log(np.where(usable, predicted, 1.0)), 0.0).sum(axis=1)
        )

    iterations = np.full(size, max_iter, dtype=np.int64)
    converged = np.zeros(size, dtype=np.bool_)
    active = np.arange(size)  # rows still iterating; converged rows are frozen in ``p``
    current = p
    freq, seen = frequencies, observed
    mats, back = matrix, transposed
    evaluations = 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        while evaluations < max_iter:
            first = step(current, freq, seen, mats, back)
            evaluations += 1
            residual = first - current
            done = np.max(np.abs(residual), axis=1) < tol
            if done.any():
                finished = active[done]
                p[finished] = first[done]
                iterations[finished] = evaluations
                converged[finished] = True
                keep = ~done
                active, current, first, residual = (
                    active[keep],
                    current[keep],
                    first[keep],
                    residual[keep],
                )
                freq, seen = freq[keep], seen[keep]
                if per_row:
                    mats, back = mats[keep], back[keep]
                if active.size == 0:
                    break
            if evaluations >= max_iter:
                p[active] = first
                break
            second = step(first, freq, seen, mats, back)
            evaluations += 1
            # SQUAREM extrapolation (Varadhan and Roland 2008, scheme S3) with two
            # safeguards: a candidate with a non-positive entry, or a lower likelihood than
            # the plain EM step, is replaced by the plain EM step.
            curvature = second - first - residual
            r_norm = np.sqrt(np.sum(residual * residual, axis=1))
            v_norm = np.sqrt(np.sum(curvature * curvature, axis=1))
            alpha = np.where(v_norm > 0, -r_norm / np.where(v_norm > 0, v_norm, 1.0), -1.0)
            alpha = np.minimum(alpha, -1.0)[:, None]
            candidate = current - 2.0 * alpha * residual + alpha * alpha * curvature
            valid = np.all(candidate > 0, axis=1) & np.all(np.isfinite(candidate), axis=1)
            candidate = np.where(valid[:, None], candidate, second)
            candidate /= candidate.sum(axis=1, keepdims=True)
            worse = log_likelihood(candidate, freq, seen, mats) < log_likelihood(
                second, freq, seen, mats
            )
            current = np.where(worse[:, None], second, candidate)
        else:
            p[active] = current
    return p, iterations, converged


def em_as(
    counts: ArrayLike,
    channel: ArrayLike,
    *,
    tol: float = 1e-8,
    max_iter: int = 10_000,
    ci: bool = True,
    rng: np.random.Generator | None = None,
    calibration_pairs: ArrayLike | None = None,
) -> Reconstruction:
    """EM/AS reconstruction of a discrete distribution.

    001_28af1923c784b480.txt, Section III-B5, Figure 2: start from the uniform
    distribution and apply
    ``Pr(X = v_p)^{j+1} = (1/n) sum_s Pr(v_p -> X(s)) Pr^j(X = v_p) /
    sum_t Pr(v_t -> X(s)) Pr^j(X = v_t)`` until the stopping criterion is met. Grouping
    the ``n`` samples by reported category makes each iteration O(k^2). The fixed point is
    the maximum-likelihood estimate of the multinomial model (000, Section 4.2).

    Parameters
    ----------
    counts : array_like of shape (k_reported,)
        Reported counts (non-negative; real values allowed).
    channel : array_like of shape (k_true, k_reported)
        ``C[i, j] = Pr(reported j | true i)``; may be rectangular (interval channels of
        continuous attributes, 001 Section IV-A1).
    tol : float, default 1e-8
        Stopping rule of 001 (Section III-B5, after [10]): stop "when the difference
        between successive estimates of the original probability distribution becomes
        small"; here the largest absolute change of a proportion is below ``tol``.
    max_iter : int, default 10000
    ci : bool, default True
        Compute 95% intervals by a parametric bootstrap (1000 replicates, vectorised; see
        :func:`reconstruction.algorithms.uncertainty.bootstrap_ci`); NaN otherwise.
    rng : numpy.random.Generator, optional
        For the bootstrap; a fixed seed by default (same input, same interval).
    calibration_pairs : array_like of shape (m, 2), optional
        ``(true, reported)`` pairs from which rows of ``channel`` were estimated (each
        such row the empirical distribution of its pairs' reported categories). The
        interval then also resamples them
        (:func:`reconstruction.algorithms.uncertainty.calibrated_bootstrap_ci`); rows
        without pairs are taken as known.

    Returns
    -------
    Reconstruction
        ``counts`` are non-negative and sum to ``n = sum(counts)``.
    """
    _check_options(tol, max_iter)
    reported, matrix = _counts_and_channel(counts, channel, square=False)
    sizes = None
    if calibration_pairs is not None:
        sizes = calibration_sizes(calibration_pairs, matrix.shape[0], negative=False)
    return _em_reconstruction(
        reported,
        matrix,
        tol=tol,
        max_iter=max_iter,
        ci=ci,
        rng=rng,
        method="em_as",
        calibration=sizes,
    )


def _em_reconstruction(
    reported: NDArray[np.float64],
    matrix: NDArray[np.float64],
    *,
    tol: float,
    max_iter: int,
    ci: bool,
    rng: np.random.Generator | None,
    method: str,
    notes: tuple[str, ...] = (),
    calibration: NDArray[np.int64] | None = None,
) -> Reconstruction:
    notes = (*_conditioning_notes(matrix), *notes)
    total = float(reported.sum())
    proportions, iterations, converged = em_as_batch(
        reported[None, :], matrix, tol=tol, max_iter=max_iter
    )
    p = proportions[0]
    k_true = matrix.shape[0]
    # Replicates start afresh, half way between the estimate and the uniform start of
    # Figure 2: EM's update is multiplicative, so a replicate started at an estimate
    # with a category at (about) 0 could never move it, and the interval would collapse
    # to [0, 0]. Every entry of this start is at least 1/(2k).
    fresh = 0.5 * (p + 1.0 / k_true)
    if ci:
        bootstrap_tol = max(tol, _BOOTSTRAP_TOL)

        def estimator(batch: NDArray[np.float64]) -> NDArray[np.float64]:
            fitted, _, _ = em_as_batch(
                batch, matrix, tol=bootstrap_tol, max_iter=max_iter, start=fresh
            )
            return np.asarray(fitted * batch.sum(axis=1, keepdims=True), dtype=np.float64)

        if calibration is not None and calibration.sum() > 0:

            def calibrated(
                batch: NDArray[np.float64], channels: NDArray[np.float64]
            ) -> NDArray[np.float64]:
                # Replicates whose maximum is on the boundary crawl towards it (EM is
                # sublinear there); a looser tolerance and a cap keep the batch fast, and
                # they move each replicate by far less than its sampling error (~n^-1/2).
                fitted, _, _ = em_as_batch(
                    batch,
                    channels,
                    tol=max(bootstrap_tol, _CALIBRATED_BOOTSTRAP_TOL),
                    max_iter=min(max_iter, _CALIBRATED_BOOTSTRAP_MAX_ITER),
                    start=fresh,
                )
                return np.asarray(fitted * batch.sum(axis=1, keepdims=True), dtype=np.float64)

            interval = calibrated_bootstrap_ci(
                reported,
                matrix,
                p,
                calibrated,
                sizes=calibration,
                replicates=DEFAULT_REPLICATES,
                rng=rng,
            )
            notes = (
                *notes,
                Note(
                    gettext_noop(
                        "the interval includes the uncertainty of rows estimated from "
                        "%(pairs)s calibration pairs"
                    ),
                    pairs=int(calibration.sum()),
                ),
            )
        elif matrix.shape[0] == matrix.shape[1]:
            interval = boundary_ci(reported, matrix, p * total)
        else:
            interval = bootstrap_ci(
                reported, matrix, p, estimator, replicates=DEFAULT_REPLICATES, rng=rng
            )
    else:
        interval = _nan_ci(k_true)
    if not converged[0]:
        notes = (
            *notes,
            Note(
                gettext_noop("did not converge within max_iter=%(max_iter)s iterations"),
                max_iter=max_iter,
            ),
        )
    return _reconstruction(
        p * total,
        total,
        interval,
        iterations=int(iterations[0]),
        converged=bool(converged[0]),
        method=method,
        notes=notes,
    )


# --------------------------------------------------------------------------- EQ / NStoPS


def _solve_linear(
    reported: NDArray[np.float64], matrix: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    checked = channel_conditioning(matrix)
    if checked.problem is not None:
        raise ValueError(f"{checked.problem} (the system C^T t = r of 001, Section III-B6)")
    inverse_transpose = np.asarray(np.linalg.inv(matrix.T), dtype=np.float64)
    return np.asarray(inverse_transpose @ reported, dtype=np.float64), inverse_transpose


def _linear_reconstruction(
    reported: NDArray[np.float64],
    estimate: NDArray[np.float64],
    inverse_transpose: NDArray[np.float64],
    *,
    project: bool,
    ci: bool,
    method: str,
    notes: tuple[str, ...] = (),
) -> Reconstruction:
    total = float(reported.sum())
    interval = linear_ci(reported, inverse_transpose) if ci else _nan_ci(estimate.size)
    outside = bool(np.any(estimate < 0) or np.any(estimate > total))
    if outside:
        negative = [int(i) for i in np.flatnonzero(estimate < 0)]
        raw = ", ".join(f"{estimate[i]:.4g}" for i in negative)
        if project:
            estimate = project_to_simplex(estimate, total)
            interval = np.clip(interval, 0.0, total)
            notes = (
                *notes,
                Note(
                    gettext_noop(
                        "the solution left the simplex (categories %(negative)s came out "
                        "negative: %(raw)s); reported is its Euclidean projection onto "
                        "{t >= 0, sum t = n}, and intervals are clipped to [0, n]"
                    ),
                    negative=str(negative),
                    raw=raw,
                ),
            )
        else:
            notes = (
                *notes,
                Note(
                    gettext_noop(
                        "the solution left the simplex: categories %(negative)s are negative "
                        "(%(raw)s); pass project=True for the Euclidean projection onto "
                        "{t >= 0, sum t = n}"
                    ),
                    negative=str(negative),
                    raw=raw,
                ),
            )
    return _reconstruction(
        estimate, total, interval, iterations=0, converged=True, method=method, notes=notes
    )


def eq(
    counts: ArrayLike, channel: ArrayLike, *, project: bool = True, ci: bool = True
) -> Reconstruction:
    """EQ: solve the system of equations ``Z = P X`` (001, Section III-B6, equation (4)).

    With this project's orientation (``P = C^T``) the reported counts ``r`` and the true
    counts ``t`` satisfy ``C^T t = r`` in expectation; EQ solves it exactly.

    Parameters
    ----------
    counts : array_like of shape (k,)
    channel : array_like of shape (k, k)
        Must be non-singular.
    project : bool, default True
        If the solution leaves the simplex, return its Euclidean projection onto
        ``{t >= 0, sum t = n}`` (``notes`` name the categories that came out negative);
        ``False`` returns the raw solution with that note.
    ci : bool, default True
        Exact-covariance normal 95% interval (:func:`~.uncertainty.linear_ci`), clipped to
        ``[0, n]`` when projecting.

    Returns
    -------
    Reconstruction
        ``counts`` sum to ``n``; never negative unless ``project=False``. A note says
        when the channel's condition number widens the interval.

    Raises
    ------
    ValueError
        Invalid counts or channel, or a channel that cannot be inverted
        (:func:`privacy.mechanisms.channel_conditioning`).
    """
    reported, matrix = _counts_and_channel(counts, channel, square=True)
    estimate, inverse_transpose = _solve_linear(reported, matrix)
    return _linear_reconstruction(
        reported,
        estimate,
        inverse_transpose,
        project=project,
        ci=ci,
        method="eq",
        notes=_conditioning_notes(matrix),
    )


def nstops(counts: ArrayLike, *, project: bool = True, ci: bool = True) -> Reconstruction:
    """NStoPS for the uniform negative survey: ``t_j = N - (c - 1) r_j``.

    003_7fc4d61026dceaec.txt, formula (7) (the closed form of ``T = R Q^{-1}``, formula
    (5), with ``Q`` of formula (6)). The solution is negative when ``r_j > N/(c-1)``; it
    is then projected onto the simplex and ``notes`` say which categories were negative.

    Parameters
    ----------
    counts : array_like of shape (c,)
        Negative-survey counts, ``c >= 3``.
    project : bool, default True
        As in :func:`eq`.
    ci : bool, default True
        Exact-covariance normal interval (:func:`~.uncertainty.linear_ci`).
    """
    reported = validate_counts(counts)
    c = reported.size
    negative_uniform(c)  # validates c >= 3
    total = float(reported.sum())
    estimate = total - (c - 1) * reported
    # Q^{-T} of formula (6) in closed form: t = (1 1^T - (c - 1) I) r.
    inverse_transpose = np.ones((c, c)) - (c - 1) * np.eye(c)
    return _linear_reconstruction(
        reported, estimate, inverse_transpose, project=project, ci=ci, method="nstops"
    )


def nstops_i(
    counts: ArrayLike,
    channel: ArrayLike | None = None,
    *,
    tol: float = 1e-8,
    max_iter: int = 100_000,
    ci: bool = True,
    rng: np.random.Generator | None = None,
) -> Reconstruction:
    """NStoPS-I: the iterative estimate of 003_7fc4d61026dceaec.txt, Figure 1.

    Start from ``t_j = N / c`` and alternate formula (12),
    ``m_ij = q_ji t_j / sum_k q_ki t_k`` (for the uniform negative survey this is
    ``t_j / (N - t_i)``; the ``t_j / (N - t_j)`` printed as formula (9) is a typo, see the
    seeds README), and formula (11), ``t_j = sum_i r_i m_ij``. This is the EM/AS update
    (001, Figure 2) on the negative survey's channel, so the fixed point is the constrained
    maximum-likelihood estimate; it is never negative. 003 stops when no ``t_j`` changes by
    more than ``epsilon = 1e-4``; here ``tol`` bounds the change of the proportions.

    Parameters
    ----------
    counts : array_like of shape (c,)
    channel : array_like of shape (c, c), optional
        ``Q`` (rows = true category). The uniform negative survey (formula (6)) by default;
        e.g. the Gaussian negative survey's ``Q`` (formula (8)) otherwise.
    tol, max_iter, ci, rng
        As in :func:`em_as`.
    """
    _check_options(tol, max_iter)
    reported = validate_counts(counts)
    matrix = negative_uniform(reported.size) if channel is None else channel
    reported, checked = _counts_and_channel(reported, matrix, square=True)
    return _em_reconstruction(
        reported, checked, tol=tol, max_iter=max_iter, ci=ci, rng=rng, method="nstops_i"
    )


def nstops_ii_batch(counts: ArrayLike) -> NDArray[np.float64]:
    """NStoPS-II on a ``(B, c)`` batch of negative-survey counts (vectorised).

    003_7fc4d61026dceaec.txt, Section 3.2 and Figure 3: compute ``t = N - (c-1) r``;
    while some ``t_i < 0``, fix those to 0, exclude them (``N' <- N' - r_i``,
    ``c' <- c' - 1``) and recompute ``t_i = N' - (c' - 1) r_i`` for the rest; finally
    scale ``t_i <- t_i / N' * N``. If no report falls on the remaining categories
    (``N' = 0``), ``N`` is shared equally among them.
    """
    batch = np.asarray(counts, dtype=np.float64)
    if batch.ndim != 2:
        raise ValueError(f"counts must have shape (B, c), got {batch.shape}")
    size, c = batch.shape
    total = batch.sum(axis=1)
    remaining_total = total.copy()
    remaining = np.full(size, float(c))
    active = np.ones((size, c), dtype=np.bool_)
    estimate = total[:, None] - (c - 1) * batch
    for _ in range(c):
        negative = active & (estimate < 0)
        if not negative.any():
            break
        active &= ~negative
        remaining_total -= np.where(negative, batch, 0.0).sum(axis=1)
        remaining -= negative.sum(axis=1)
        estimate = np.where(
            active, remaining_total[:, None] - (remaining[:, None] - 1.0) * batch, 0.0
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = estimate * (total / remaining_total)[:, None]
    degenerate = ~(remaining_total > 0)
    if degenerate.any():
        share = (total / active.sum(axis=1))[:, None]
        scaled[degenerate] = np.where(active, share, 0.0)[degenerate]
    return np.asarray(np.where(active, scaled, 0.0), dtype=np.float64)


def nstops_ii(
    counts: ArrayLike, *, ci: bool = True, rng: np.random.Generator | None = None
) -> Reconstruction:
    """NStoPS-II: zero the negative categories of NStoPS and re-solve (003, Figure 3).

    For the uniform negative survey only (003, Section 5: it is not directly applicable to
    Gaussian negative surveys). Never negative; sums to ``N``; equals NStoPS whenever
    every ``r_i <= N / (c - 1)``.

    Parameters
    ----------
    counts : array_like of shape (c,)
        Negative-survey counts, ``c >= 3``.
    ci : bool, default True
        Parametric-bootstrap percentile interval (vectorised over replicates).
    rng : numpy.random.Generator, optional
    """
    reported = validate_counts(counts)
    matrix = negative_uniform(reported.size)
    estimate = nstops_ii_batch(reported[None, :])[0]
    total = float(reported.sum())
    if ci:
        interval = bootstrap_ci(reported, matrix, estimate / total, nstops_ii_batch, rng=rng)
    else:
        interval = _nan_ci(reported.size)
    notes: tuple[str, ...] = ()
    excluded = [int(i) for i in np.flatnonzero(estimate == 0)]
    if excluded:
        notes = (
            Note(
                gettext_noop("categories %(excluded)s were excluded (estimated 0)"),
                excluded=str(excluded),
            ),
        )
    return _reconstruction(
        estimate, total, interval, iterations=0, converged=True, method="nstops_ii", notes=notes
    )


def revise_negative_channel(channel: ArrayLike) -> tuple[NDArray[np.float64], tuple[int, ...]]:
    """Revise ``q_ii`` to 0 and rescale each row (000_1b7f9a8e281301b4.txt, Section 4.2).

    ``q_ij <- q_ij / sum_{j != i} q_ij``. A row whose mass is all on the diagonal cannot be
    rescaled; it becomes the uniform negative row.

    Returns
    -------
    channel : ndarray of shape (c, c)
    fallback_rows : tuple of int
        Rows replaced by the uniform negative row.
    """
    matrix = validate_channel(channel)
    c = matrix.shape[0]
    np.fill_diagonal(matrix, 0.0)
    sums = matrix.sum(axis=1)
    empty = sums <= 0
    if c < 3:
        raise ValueError(
            "a negative survey needs k >= 3 categories: with 2 categories the reported "
            "(negative) category reveals the true answer"
        )
    matrix[~empty] /= sums[~empty, None]
    matrix[empty] = negative_uniform(c)[empty]
    return matrix, tuple(int(i) for i in np.flatnonzero(empty))


def nstops_mle(
    counts: ArrayLike,
    channel: ArrayLike,
    *,
    tol: float = 1e-11,
    max_iter: int = 200_000,
    ci: bool = True,
    rng: np.random.Generator | None = None,
    calibration_pairs: ArrayLike | None = None,
) -> Reconstruction:
    """NStoPS-MLE: constrained multinomial maximum likelihood (000, Section 4.2).

    Steps of 000: ``n = sum r``; revise ``q_ii`` to 0 and rescale the rows
    (:func:`revise_negative_channel`); then maximise equation (4),
    ``sum_i r_i log(sum_j t_j q_ji)`` subject to ``sum t = n`` and ``0 <= t_i <= n``.
    The objective is concave, and its maximiser over the simplex is the fixed point of the
    EM/AS iteration (001, Figure 2), which keeps the constraints by construction; it is
    run to a tight tolerance (``tol`` on successive proportions). Agreement with a generic
    constrained optimiser (SLSQP) is checked in the tests.

    Parameters
    ----------
    counts : array_like of shape (c,)
    channel : array_like of shape (c, c)
        ``Q`` estimated e.g. by :func:`privacy.mechanisms.manual_negative`.
    tol, max_iter, ci, rng
        As in :func:`em_as`.
    calibration_pairs : array_like of shape (m, 2), optional
        The ``(true, negative)`` pairs ``channel`` was estimated from (000, Section 4.1;
        :func:`privacy.mechanisms.manual_negative`). The interval then also resamples
        them per row, as another calibration sample of the same size would have given
        (:func:`reconstruction.algorithms.uncertainty.calibrated_bootstrap_ci`); with
        about 100 pairs per row that error is often larger than the survey's own.
    """
    _check_options(tol, max_iter)
    revised, fallback = revise_negative_channel(channel)
    reported, checked = _counts_and_channel(counts, revised, square=True)
    notes: tuple[str, ...] = ()
    if fallback:
        notes = (
            Note(
                gettext_noop("rows %(rows)s had all mass on the diagonal; used uniform rows"),
                rows=str(list(fallback)),
            ),
        )
    return _em_reconstruction(
        reported,
        checked,
        tol=tol,
        max_iter=max_iter,
        ci=ci,
        rng=rng,
        method="nstops_mle",
        notes=notes,
        calibration=None
        if calibration_pairs is None
        else calibration_sizes(calibration_pairs, checked.shape[0], negative=True),
    )
