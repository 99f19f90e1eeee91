"""A panel's candidate types counted from occupied reported cells (issue 32): the number
the worker's solver gets (``select_panel``'s posteriors, then its merge of near-equal
types), from a table of cells, as the request counts them before anything is queued
(reconstruction/algorithms/panel/types.py; reconstruction/cost.py, ``panel_types``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from privacy.mechanisms import AdditiveUniform, randomised_response
from reconstruction.algorithms.continuous import whole_number_step
from reconstruction.algorithms.panel import PanelOptions, Quota
from reconstruction.algorithms.panel.feasibility import _MERGE_CAP, _MERGE_SEATS
from reconstruction.algorithms.panel.posteriors import _candidate_pool, _merge_types
from reconstruction.algorithms.panel.types import count_types, merged_count, type_bins
from reconstruction.algorithms.queries import (
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
    spec_of,
    table_size,
)


@pytest.mark.parametrize("seed", range(40))
def test_the_quick_count_of_merged_types_is_the_merges_count(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, q = int(rng.integers(1, 500)), int(rng.integers(1, 5))
    levels = rng.integers(1, 30, size=q)
    matrix = np.column_stack([rng.integers(0, k, n) / max(k - 1, 1) for k in levels])
    if seed % 2:  # near-equal posteriors, as a continuous attribute gives them
        matrix = matrix + rng.normal(0, 0.004, matrix.shape)
    for spread in (0.0, 0.005, 1 / 60, 0.05, 0.3):
        assert merged_count(matrix, spread) == _merge_types(matrix, spread)[1].shape[0]
    assert merged_count(np.zeros((0, q)), 0.01) == 0
    assert merged_count(np.zeros((3, 0)), 0.01) == 1


def _table(n: int, seed: int) -> dict[str, DiscreteAttribute | ContinuousAttribute]:
    rng = np.random.default_rng(seed)
    channel = randomised_response(5, 0.6)
    true = rng.choice(5, size=n, p=[0.46, 0.27, 0.15, 0.10, 0.02])
    codes = (rng.random(n)[:, None] > np.cumsum(channel, axis=1)[true]).sum(axis=1)
    sex_channel = randomised_response(2, 0.7)
    sex = (rng.random(n)[:, None] > np.cumsum(sex_channel, axis=1)[rng.integers(0, 2, n)]).sum(
        axis=1
    )
    noise = AdditiveUniform(half_width=10)
    ages = rng.integers(16, 90, n).astype(float)
    return {
        "district": DiscreteAttribute(codes.astype(np.intp), channel),
        "sex": DiscreteAttribute(sex.astype(np.intp), sex_channel),
        "age": ContinuousAttribute(noise.distort(ages, rng), noise, 16.0, 100.0),
    }


def _worker_types(table, quotas, where, size) -> int:  # type: ignore[no-untyped-def]
    """What select_panel's _types_problem checks against max_types first."""
    options = PanelOptions(n_boot=2)
    pool = _candidate_pool(table, size, quotas, where, options, np.random.default_rng(1))
    return int(_merge_types(pool.matrix, min(_MERGE_CAP, _MERGE_SEATS / size))[1].shape[0])


def _request_types(table, quotas, where, size) -> int:  # type: ignore[no-untyped-def]
    """The request's count: the occupied cells counted (here in numpy, in SQL there)."""
    n = table_size(table)
    specs = {name: spec_of(attr) for name, attr in table.items()}
    for name, attr in table.items():
        if isinstance(attr, ContinuousAttribute):  # the worker's whole-number test
            step = whole_number_step(attr.values, attr.noise, attr.low, attr.high)
            specs[name] = dataclasses.replace(specs[name], step=step)  # type: ignore[type-var]
    bins = type_bins(specs, quotas, where, n)
    columns = []
    for name, inner in bins.items():
        attr = table[name]
        if inner is None:
            columns.append(np.asarray(attr.codes))  # type: ignore[union-attr]
        else:  # PostgreSQL's width_bucket
            columns.append(np.searchsorted(inner, attr.values, side="right"))  # type: ignore[union-attr]
    cells, counts = np.unique(np.column_stack(columns), axis=0, return_counts=True)
    return count_types(
        specs,
        quotas,
        where,
        size=size,
        n=n,
        bins=bins,
        cells={name: cells[:, i] for i, name in enumerate(bins)},
        counts=counts.astype(np.float64),
    )


QUOTAS = [
    Quota((Condition("sex", "in", {0}),), 10, 20),
    Quota((Condition("district", "in", {0, 1}),), 8, 20),
    Quota((Condition("age", "lte", 40.0),), 6, 20),
    Quota((Condition("age", "between", (41.0, 65.0)),), 6, 20),
]


@pytest.mark.parametrize(
    ("quotas", "where", "size"),
    [
        (QUOTAS[:3], [], 30),
        (QUOTAS, [], 30),
        (QUOTAS, [], 100),
        (QUOTAS[:1] + QUOTAS[2:3], [Condition("district", "in", {0, 1})], 30),
        (QUOTAS[1:2], [Condition("age", "gt", 30.0)], 20),
    ],
)
def test_the_request_counts_the_types_the_worker_gets(quotas, where, size) -> None:  # type: ignore[no-untyped-def]
    table = _table(6000, seed=size + len(quotas))
    assert _request_types(table, quotas, where, size) == _worker_types(table, quotas, where, size)


def test_types_without_quotas_are_one_and_without_candidates_none() -> None:
    table = _table(500, seed=3)
    assert _request_types(table, [], [Condition("district", "in", {0})], 10) == 1
    # An eligibility nobody reaches (a category of prior 0.02 under heavy distortion).
    rare = [Condition("district", "in", {4}), Condition("age", "gt", 95.0)]
    assert _request_types(table, QUOTAS[:1], rare, 10) == 0
