"""Tests of the synthetic candidate pools (reconstruction/algorithms/simulation.py)."""

from __future__ import annotations

import numpy as np
import pytest

from reconstruction.algorithms.queries import ContinuousAttribute, DiscreteAttribute
from reconstruction.algorithms.simulation import (
    AGE_RANGE,
    INCOME_RANGE,
    distort_pool,
    simulate_candidates,
)


def test_same_seed_same_pool_and_distortion() -> None:
    first = simulate_candidates(2_000, rng=np.random.default_rng(11))
    second = simulate_candidates(2_000, rng=np.random.default_rng(11))
    for name, values in first.as_mapping().items():
        np.testing.assert_array_equal(values, second.as_mapping()[name])
    t1 = distort_pool(first, rng=np.random.default_rng(3))
    t2 = distort_pool(second, rng=np.random.default_rng(3))
    age1, age2 = t1["age"], t2["age"]
    assert isinstance(age1, ContinuousAttribute) and isinstance(age2, ContinuousAttribute)
    np.testing.assert_array_equal(age1.values, age2.values)


def test_values_in_declared_ranges_and_codes() -> None:
    pool = simulate_candidates(20_000, rng=np.random.default_rng(1))
    assert pool.n == 20_000
    assert AGE_RANGE[0] <= pool.age.min() and pool.age.max() <= AGE_RANGE[1]
    assert INCOME_RANGE[0] <= pool.income.min() and pool.income.max() <= INCOME_RANGE[1]
    assert set(np.unique(pool.sex)) == {0, 1}
    assert set(np.unique(pool.district)) == {0, 1, 2, 3, 4}
    assert set(np.unique(pool.children)) == {0, 1}


def test_attributes_are_correlated() -> None:
    pool = simulate_candidates(50_000, rng=np.random.default_rng(2))
    middle = (pool.age >= 30) & (pool.age < 55)
    # children are most likely between 30 and 55
    assert pool.children[middle].mean() > pool.children[~middle].mean() + 0.25
    # men earn more, parents earn more, and district S is younger than E
    assert pool.income[pool.sex == 1].mean() > 1.2 * pool.income[pool.sex == 0].mean()
    assert pool.income[pool.children == 1].mean() > 1.2 * pool.income[pool.children == 0].mean()
    assert pool.age[pool.district == 1].mean() + 5 < pool.age[pool.district == 2].mean()


def test_distorted_table_shapes() -> None:
    pool = simulate_candidates(1_000, rng=np.random.default_rng(4))
    table = distort_pool(pool, rng=np.random.default_rng(5), retain=0.75)
    assert set(table) == {"sex", "district", "children", "age", "income"}
    district = table["district"]
    assert isinstance(district, DiscreteAttribute)
    assert district.k == 5 and district.n == 1_000
    np.testing.assert_allclose(np.diag(district.channel), 0.75)
    # about a quarter of the codes changed
    changed = (district.codes != pool.district).mean()
    assert 0.2 < changed < 0.3


@pytest.mark.parametrize("n", [0, -3, 2.5, True])
def test_bad_size_is_refused(n: object) -> None:
    with pytest.raises(ValueError, match="n must be a positive integer"):
        simulate_candidates(n, rng=np.random.default_rng(0))  # type: ignore[arg-type]


def test_rng_is_required_to_be_a_generator() -> None:
    with pytest.raises(ValueError, match="rng"):
        simulate_candidates(10, rng=42)  # type: ignore[arg-type]
