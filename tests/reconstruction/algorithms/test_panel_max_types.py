"""``select_panel``'s ``max_types``: the worker's cost model refuses a panel whose quotas
split the candidates into more types than its time budget allows, before any MILP
(issue 32; reconstruction/cost.py, ``panel_max_types``)."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.mechanisms import AdditiveLaplace
from reconstruction.algorithms.panel import (
    PanelOptions,
    Quota,
    TooManyTypes,
    feasibility,
    select_panel,
)
from reconstruction.algorithms.queries import Condition, ContinuousAttribute


def _ages() -> dict[str, ContinuousAttribute]:
    rng = np.random.default_rng(5)
    ages = rng.integers(16, 86, size=400).astype(float)
    noise = AdditiveLaplace(70 / 4)
    return {"age": ContinuousAttribute(noise.distort(ages, rng), noise, 16, 86)}


QUOTA = [Quota((Condition("age", "between", (16, 35)),), 4, 6, "16-34")]


def test_more_types_than_max_types_are_refused_before_any_milp(monkeypatch) -> None:
    free = select_panel(_ages(), 15, QUOTA, rng=np.random.default_rng(5))
    types = free.support.shape[1]
    assert types > 3  # noisy ages: many posteriors
    decided: list[int] = []
    monkeypatch.setattr(
        feasibility._Problem, "decide", lambda self, **kw: decided.append(1) or True
    )
    with pytest.raises(TooManyTypes) as refused:
        select_panel(_ages(), 15, QUOTA, rng=np.random.default_rng(5), max_types=types - 1)
    assert refused.value.types == types and refused.value.max_types == types - 1
    assert decided == []  # refused before the feasibility MILP


def test_a_limit_the_types_fit_in_changes_nothing() -> None:
    free = select_panel(_ages(), 15, QUOTA, rng=np.random.default_rng(5))
    types = free.support.shape[1]
    limited = select_panel(_ages(), 15, QUOTA, rng=np.random.default_rng(5), max_types=types)
    np.testing.assert_array_equal(limited.rows, free.rows)
    np.testing.assert_array_equal(limited.probabilities, free.probabilities)


def test_max_types_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_types must be positive"):
        PanelOptions(max_types=0)
