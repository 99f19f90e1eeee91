"""Participant sampling for a deliberative consultation (001, Section IV-B).

Pure module: numpy and scipy only.

:func:`sample` draws from Figure 3's list (``figure3``, 001_28af1923c784b480.txt, Section
IV-B) or the candidates with the highest posterior of meeting the condition
(``posterior``, :mod:`.posteriors`), with optional strata; :class:`TopCandidates` keeps
the best of a stream in bounded memory, for the same draw over rows read in chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reconstruction.algorithms.queries.cells import _joint_mask, _row_fit
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    _group,
    condition_label,
    table_size,
)
from reconstruction.algorithms.queries.figure3 import figure3_rows
from reconstruction.algorithms.queries.results import SampleResult
from reconstruction.algorithms.uncertainty import default_rng

SampleMethod = Literal["figure3", "posterior"]


def sample(
    table: Mapping[str, Attribute],
    size: int,
    where: Sequence[Condition] = (),
    *,
    strata: Sequence[tuple[Sequence[Condition], int]] = (),
    method: SampleMethod = "posterior",
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
) -> SampleResult:
    """Draw participants for a deliberative consultation (001, Section IV-B).

    ``posterior`` (default, beyond the document): the candidates with the highest
    posterior probability of meeting the condition given their reported values (ties at
    random); it favours extreme reported values, but its panels were the more precise
    (expected precision about 0.75 with strata and 0.999 without, against 0.63 and
    0.84 for ``figure3``). ``figure3``: 001_28af1923c784b480.txt, Section IV-B: the list
    of candidates from Figure 3 (including the last assignment step) for the condition,
    from which ``size`` are drawn at random.

    With ``strata`` (a list of ``(condition, size)`` quotas, their sizes summing to
    ``size``) each stratum draws from ``where`` and its own condition, without drawing a
    candidate twice. ``expected_precision`` is the mean over the chosen candidates of
    ``Pr(true values meet the condition | reported values)`` from the joint
    reconstruction; ``pool_estimate`` is the joint count of ``where``.

    Raises
    ------
    ValueError
        A size that is not positive, strata sizes that do not sum to ``size``, a sample
        (or stratum) larger than its pool, bad conditions, an unknown method.
    """
    n = table_size(table)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    if method not in ("figure3", "posterior"):
        raise ValueError(f"unknown sampling method {method!r}; use figure3 or posterior")
    if size > n:
        raise ValueError(f"sample of {size} is larger than the pool of {n} candidates")
    generator = default_rng(rng)
    quotas: list[tuple[list[Condition], int]]
    if strata:
        quotas = []
        for stratum in strata:
            conds, quota = stratum
            if isinstance(quota, bool) or not isinstance(quota, (int, np.integer)) or quota < 1:
                raise ValueError(f"stratum size must be a positive integer, got {quota!r}")
            quotas.append(([*where, *conds], int(quota)))
        total = sum(quota for _, quota in quotas)
        if total != size:
            raise ValueError(f"strata sizes sum to {total}, not to the sample size {size}")
    else:
        quotas = [(list(where), int(size))]
    pool_estimate = float(n)
    if where:
        groups = _group(table, where)
        fit = _row_fit(table, groups, tol, max_iter)
        pool_estimate = float(n * fit.theta[_joint_mask(fit.axes)].sum())
    taken = np.zeros(n, dtype=bool)
    chosen_parts: list[NDArray[np.intp]] = []
    precision_parts: list[NDArray[np.float64]] = []
    for conds, quota in quotas:
        if not conds:
            posterior = np.ones(n)
            estimate = float(n)
        else:
            groups = _group(table, conds)
            fit = _row_fit(table, groups, tol, max_iter)
            estimate = float(n * fit.theta[_joint_mask(fit.axes)].sum())
            shape = fit.counts.shape
            flat = np.ravel_multi_index(tuple(ax.cells for ax in fit.axes), shape)
            posterior = fit.posterior().ravel()[flat]
        if method == "figure3" and conds:
            pool, _ = figure3_rows(table, conds, tol=tol, max_iter=max_iter, rng=generator)
            pool = pool[~taken[pool]]
            if quota > pool.size:
                raise ValueError(
                    f"sample of {quota} is larger than the pool of {pool.size} candidates "
                    "that meet the condition"
                )
            picked = generator.choice(pool, size=quota, replace=False)
        else:
            available = np.flatnonzero(~taken)
            limit = min(round(estimate), available.size)
            if quota > limit:
                raise ValueError(
                    f"sample of {quota} is larger than the pool of about {limit} candidates "
                    "that meet the condition"
                )
            order = np.lexsort((generator.random(available.size), -posterior[available]))
            picked = available[order[:quota]]
        taken[picked] = True
        chosen_parts.append(np.sort(picked).astype(np.intp))
        precision_parts.append(posterior[picked])
    rows = np.sort(np.concatenate(chosen_parts)).astype(np.intp)
    precision = float(np.concatenate(precision_parts).mean())
    per_condition: dict[str, list[NDArray[np.float64]]] = {}
    for (conds, _), picked in zip(quotas, chosen_parts, strict=True):
        for cond in conds:
            label = condition_label(cond)
            fit = _row_fit(table, {cond.attribute: [cond]}, tol, max_iter)
            flat = np.ravel_multi_index(tuple(ax.cells for ax in fit.axes), fit.counts.shape)
            posterior = fit.posterior().ravel()[flat]
            per_condition.setdefault(label, []).append(posterior[picked])
    subconditions = tuple(
        (label, float(np.concatenate(parts).mean())) for label, parts in per_condition.items()
    )
    return SampleResult(rows, pool_estimate, precision, tuple(chosen_parts), method, subconditions)


class TopCandidates:
    """The ``quota`` best candidates of a stream, in bounded memory (``quota + chunk``).

    Candidates are ranked as :func:`sample` ranks them: highest score
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
