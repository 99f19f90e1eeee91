"""The public posterior API that panel selection rests on (queries.condition_posterior)."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.mechanisms import randomised_response
from reconstruction.algorithms.queries import (
    Condition,
    DiscreteAttribute,
    condition_posterior,
    count_joint,
    table_size,
)


def test_condition_posterior_is_the_joint_reconstruction_behind_count_joint() -> None:
    rng = np.random.default_rng(8)
    n = 2000
    sex = (rng.random(n) < 0.4).astype(np.intp)
    reported = np.where(rng.random(n) < 0.8, sex, 1 - sex)
    table = {"sex": DiscreteAttribute(reported, randomised_response(2, 0.8))}
    where = [Condition("sex", "in", {1})]
    post = condition_posterior(table, where, n_boot=20, rng=np.random.default_rng(1))
    joint = count_joint(table, where, n_boot=20, rng=np.random.default_rng(1))
    assert table_size(table) == n
    assert post.values.shape == (n,)
    # The posteriors sum to the joint count, and Bayes' rule holds per reported cell.
    np.testing.assert_allclose(post.values.sum(), joint.estimate, rtol=1e-6)
    share = joint.estimate / n
    expected_one = share * 0.8 / (share * 0.8 + (1 - share) * 0.2)
    np.testing.assert_allclose(post.values[reported == 1], expected_one, rtol=1e-6)
    assert post.replicates(np.arange(5)).shape == (20, 5)
    assert post.ci95[0] < post.estimate < post.ci95[1]
    # The same bootstrap as count_joint's interval (same seed, same replicates).
    np.testing.assert_allclose(post.ci95, joint.ci95, rtol=1e-9)


def test_condition_posterior_refuses_bad_conditions() -> None:
    table = {"sex": DiscreteAttribute(np.array([0, 1, 1]), np.eye(2))}
    with pytest.raises(ValueError, match="unknown attribute"):
        condition_posterior(table, [Condition("age", "gt", 3.0)])
    with pytest.raises(ValueError, match="empty condition"):
        condition_posterior(table, [])
    with pytest.raises(ValueError, match="n_boot"):
        condition_posterior(table, [Condition("sex", "in", {1})], n_boot=1)
