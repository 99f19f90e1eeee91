"""A panel's candidate types counted from a table of occupied reported cells.

Pure module: numpy only.

:func:`~.selection.select_panel` groups the eligible candidates into types: equal (then,
merged, near-equal) vectors of posteriors, one per quota (:func:`~.posteriors._merge_types`),
and the solver's time grows with the square of the types (reconstruction/cost.py). A
candidate's posteriors depend on their reported cells only, so the types follow from
the *occupied* joint reported cells of the quotas' and the eligibility's attributes
(one ``GROUP BY``, whatever the number of participants) and the point estimate of each
quota's reconstruction, fitted on the same cells: what :func:`count_types` computes
without reading an answer row. The request of a panel uses it to refuse, before
anything is queued, quotas that split the candidates finer than its time budget allows
(issue 32); the worker's own check (``PanelOptions.max_types``) stays the backstop.

The models are the worker's (:func:`~reconstruction.algorithms.queries.condition_posteriors`
with ``given=where``): the eligibility's joint model, then each quota's over its own
attributes and the eligibility's other attributes (cut at the eligibility's
thresholds, admitting every value). Their reported bins differ between models (each is
cut at its own thresholds), so the table is counted on the union of every model's bins
(:func:`type_bins`), and each model reads its own cells as sums of those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from reconstruction.algorithms.panel.feasibility import _MERGE_CAP, _MERGE_SEATS
from reconstruction.algorithms.panel.posteriors import _TYPE_DECIMALS
from reconstruction.algorithms.panel.results import PanelOptions, Quota
from reconstruction.algorithms.queries import (
    CellPlan,
    CellTable,
    Condition,
    Spec,
    plan_cells,
    posterior_from_table,
)


def _plans(
    specs: Mapping[str, Spec], quotas: Sequence[Quota], where: Sequence[Condition], n: int
) -> tuple[CellPlan | None, list[CellPlan]]:
    """The eligibility's plan and each quota's (the worker's models, see the module)."""
    eligibility = plan_cells(specs, list(where), n=n) if where else None
    plans = []
    for quota in quotas:
        own = {c.attribute for c in quota.where}
        opened = [c for c in where if c.attribute not in own]
        plan = plan_cells(specs, [*quota.where, *opened], n=n)
        names = {c.attribute for c in opened}
        axes = tuple(
            dataclasses.replace(ax, mask=np.ones_like(ax.mask)) if ax.name in names else ax
            for ax in plan.axes
        )
        plans.append(dataclasses.replace(plan, axes=axes))
    return eligibility, plans


def type_bins(
    specs: Mapping[str, Spec], quotas: Sequence[Quota], where: Sequence[Condition], n: int
) -> dict[str, NDArray[np.float64] | None]:
    """The axes to count the occupied cells on: every attribute of the quotas and the
    eligibility, a continuous one on the union of its models' reported bins (inner
    edges, as ``width_bucket`` takes them), a discrete one on its codes (``None``)."""
    eligibility, plans = _plans(specs, quotas, where, n)
    edges: dict[str, set[float] | None] = {}
    for plan in [*([eligibility] if eligibility else []), *plans]:
        for name, reported in zip(plan.names, plan.reported_edges, strict=True):
            if reported is None:
                edges.setdefault(name, None)
            else:
                known = edges.setdefault(name, set())
                assert known is not None
                known.update(float(e) for e in np.asarray(reported)[1:-1])
    return {
        name: None if inner is None else np.array(sorted(inner), dtype=np.float64)
        for name, inner in edges.items()
    }


def _posteriors(
    plan: CellPlan,
    bins: Mapping[str, NDArray[np.float64] | None],
    cells: Mapping[str, NDArray[np.intp]],
    counts: NDArray[np.float64],
    options: PanelOptions,
) -> NDArray[np.float64]:
    """Each occupied cell's posterior under ``plan`` (its cells are sums of the union's)."""
    index = []
    for name, reported in zip(plan.names, plan.reported_edges, strict=True):
        column = cells[name]
        union = bins[name]
        if reported is None or union is None:
            index.append(column)
            continue
        # Union bin k holds [union[k-1], union[k]); the plan's edges are among the
        # union's, so the whole bin lies in the plan's bin of its lower edge.
        lower = np.concatenate([[-np.inf], union])[column]
        inner = np.asarray(reported, dtype=np.float64)[1:-1]
        index.append(np.searchsorted(inner, lower, side="right").astype(np.intp))
    table = np.zeros(plan.shape, dtype=np.float64)
    np.add.at(table, tuple(index), counts)
    posterior, _estimate = posterior_from_table(
        plan, CellTable(table), tol=options.tol, max_iter=options.max_iter
    )
    return np.asarray(posterior[tuple(index)], dtype=np.float64)


def count_types(
    specs: Mapping[str, Spec],
    quotas: Sequence[Quota],
    where: Sequence[Condition],
    *,
    size: int,
    n: int,
    bins: Mapping[str, NDArray[np.float64] | None],
    cells: Mapping[str, NDArray[np.intp]],
    counts: NDArray[np.float64],
    options: PanelOptions | None = None,
) -> int:
    """The candidate types :func:`~.selection.select_panel` would make, from the table.

    ``cells[name]`` holds every occupied joint cell's index on attribute ``name``'s axis
    of ``bins`` (:func:`type_bins`, planned for the same ``n`` participants) and
    ``counts`` its participants. The eligible cells are those whose eligibility posterior
    reaches ``options.eligibility_threshold``; their quota posteriors are merged as the
    worker merges them first (``min(0.05, 0.5 / size)`` per quota, unless
    ``options.merge`` is off or ``max_outside`` is set): the number it checks against
    ``max_types`` before any MILP.
    """
    options = options or PanelOptions()
    eligibility, plans = _plans(specs, quotas, where, n)
    keep = counts > 0
    if eligibility is not None:
        keep &= _posteriors(eligibility, bins, cells, counts, options) >= (
            options.eligibility_threshold
        )
    if not keep.any():
        return 0
    if not plans:
        return 1
    matrix = np.column_stack(
        [_posteriors(plan, bins, cells, counts, options)[keep] for plan in plans]
    )
    merge = options.merge and options.max_outside is None
    spread = min(_MERGE_CAP, _MERGE_SEATS / size) if merge else 0.0
    return merged_count(matrix, spread)


def merged_count(matrix: NDArray[np.float64], spread: float, *, stop: int | None = None) -> int:
    """The number of types :func:`~.posteriors._merge_types` makes of ``matrix``, sooner.

    The same leader clustering: the unique rows in lexicographic order, each joining a
    leader within ``spread / 2`` in every column, else leading a new type (which leader
    it joins changes the types' members, not their number). But a row measures only the
    leaders that can be within reach: cut every column into buckets of width ``spread /
    2``; in the column with the most occupied buckets, a leader within reach lies in the
    row's bucket or one of the two on either side.
    """
    n, q = matrix.shape
    if n == 0:
        return 0
    if q == 0:
        return 1
    unique = np.unique(np.round(matrix, _TYPE_DECIMALS), axis=0)
    if spread <= 0 or unique.shape[0] == 1:
        return int(unique.shape[0])
    radius = spread / 2.0
    cells = np.floor(unique / radius).astype(np.int64)
    column = int(np.argmax([np.unique(cells[:, j]).size for j in range(q)]))
    buckets: dict[int, list[int]] = {}
    leaders = np.empty_like(unique)
    count = 0
    for u in range(unique.shape[0]):
        row = unique[u]
        bucket = int(cells[u, column])
        near = [i for b in range(bucket - 2, bucket + 3) for i in buckets.get(b, ())]
        if near and bool((np.abs(leaders[near] - row).max(axis=1) <= radius).any()):
            continue
        leaders[count] = row
        buckets.setdefault(bucket, []).append(count)
        count += 1
    return count
