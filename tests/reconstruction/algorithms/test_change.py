"""The change engine (reconstruction/algorithms/queries/change.py): simulations with a known
(before, after) truth, no Django."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from privacy.mechanisms import distort_codes, randomised_response
from reconstruction.algorithms.queries import Condition, DiscreteAttribute, DiscreteSpec, cell_table
from reconstruction.algorithms.queries.change import change, change_from_table, plan_change
from reconstruction.algorithms.simulation import simulate_transitions
from tests.coverage import widened

TRUTH = np.array([[0.30, 0.05, 0.10], [0.03, 0.10, 0.07], [0.02, 0.05, 0.28]])


def _distort(codes: np.ndarray, channel: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return distort_codes(codes, channel, rng=rng)


def test_known_transitions_are_covered_and_shares_add_up() -> None:
    rng = np.random.default_rng(7)
    before, after = simulate_transitions(20_000, TRUTH, rng=rng)
    channel = randomised_response(3, 0.7)
    result = change(
        DiscreteAttribute(_distort(before, channel, rng), channel),
        DiscreteAttribute(_distort(after, channel, rng), channel),
        rng=rng,
    )
    truth = np.bincount(before * 3 + after, minlength=9).reshape(3, 3)
    for i in range(3):
        for j in range(3):
            low, high = widened(result.transitions_ci95[i, j], alpha=1e-4)
            assert low <= truth[i, j] <= high, (i, j, result.transitions, truth)
    assert result.transitions.sum() == pytest.approx(20_000)
    assert result.before.sum() == pytest.approx(1.0) and result.after.sum() == pytest.approx(1.0)
    assert result.net_change.sum() == pytest.approx(0.0, abs=1e-9)
    net = truth.sum(0) / 20_000 - truth.sum(1) / 20_000
    for i in range(3):
        low, high = widened(result.net_change_ci95[i], alpha=1e-4)
        assert low <= net[i] <= high
    assert result.positive[0] < 0.01 and result.positive[2] > 0.99


def test_without_distortion_the_table_is_the_reported_one() -> None:
    rng = np.random.default_rng(8)
    before, after = simulate_transitions(5_000, TRUTH, rng=rng)
    identity = np.eye(3)
    result = change(DiscreteAttribute(before, identity), DiscreteAttribute(after, identity))
    truth = np.bincount(before * 3 + after, minlength=9).reshape(3, 3)
    assert_allclose(result.transitions, truth, atol=1e-6)


def test_a_condition_on_a_third_attribute_restricts_the_table() -> None:
    rng = np.random.default_rng(9)
    n = 6_000
    before, after = simulate_transitions(n, TRUTH, rng=rng)
    group = (rng.random(n) < 0.4).astype(np.intp)
    identity = np.eye(3)
    specs = {
        "b": DiscreteSpec(identity),
        "a": DiscreteSpec(identity),
        "g": DiscreteSpec(np.eye(2)),
    }
    plan = plan_change(specs, "b", "a", [Condition("g", "in", {1})], n=n)
    table = cell_table(plan, {"b": before, "a": after, "g": group})
    result = change_from_table(plan, table)
    inside = group == 1
    truth = np.bincount(before[inside] * 3 + after[inside], minlength=9).reshape(3, 3)
    assert_allclose(result.transitions, truth, atol=1e-3)
    assert result.group_size == pytest.approx(inside.sum(), abs=1e-3)


@pytest.mark.parametrize(
    ("specs", "before", "after", "words"),
    [
        ({"b": DiscreteSpec(np.eye(3)), "a": DiscreteSpec(np.eye(2))}, "b", "a", "categories"),
        ({"b": DiscreteSpec(np.eye(3))}, "b", "a", "discrete attribute"),
        ({"b": DiscreteSpec(np.eye(3))}, "b", "b", "two attributes"),
    ],
)
def test_plan_refuses_what_is_not_a_change(specs, before, after, words) -> None:
    with pytest.raises(ValueError, match=words):
        plan_change(specs, before, after, n=10)
