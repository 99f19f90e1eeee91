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


def test_posteriors_of_several_quotas_compute_each_channel_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # condition_posteriors computes each attribute's noise channel once per cells and
    # reported bins and hands it to every model that has them; each quota's posteriors
    # must still be exactly those it gets alone (a channel shared with a model of other
    # cells would change them, or fail on its shape).
    from privacy.mechanisms import AdditiveLaplace, AdditiveUniform
    from reconstruction.algorithms import continuous
    from reconstruction.algorithms.queries import ContinuousAttribute, condition_posteriors

    rng = np.random.default_rng(12)
    n = 800
    age = np.floor(16 + 70 * rng.beta(2.2, 1.9, size=n))
    hours = rng.gamma(3.0, 6.0, size=n).clip(0, 60)  # real-valued: the interval model
    sex = (rng.random(n) < 0.5).astype(np.intp)
    laplace, uniform = AdditiveLaplace(10.0), AdditiveUniform(10.0)
    table = {
        "age": ContinuousAttribute(uniform.distort(age, rng), uniform, 16, 86, step=1.0),
        "hours": ContinuousAttribute(laplace.distort(hours, rng), laplace, 0, 60),
        "sex": DiscreteAttribute(
            np.where(rng.random(n) < 0.8, sex, 1 - sex), randomised_response(2, 0.8)
        ),
    }
    wheres = [
        [Condition("age", "between", (16, 30))],
        [Condition("age", "between", (30, 65))],
        [Condition("hours", "lte", 10.0)],
        [Condition("hours", "between", (20.0, 40.0))],
        [Condition("sex", "in", {0})],
        [Condition("sex", "in", {1})],
    ]
    given = [Condition("hours", "gt", 5.0)]  # an eligibility: every model but hours' holds it
    alone = [
        condition_posteriors(table, [where], n_boot=20, rng=np.random.default_rng(4), given=given)[
            0
        ]
        for where in wheres
    ]
    computed: list[str] = []
    lattice_channel = continuous.LatticeCells.channel
    interval_channel = AdditiveLaplace.interval_channel

    def lattice(self, noise, reported):  # type: ignore[no-untyped-def]
        # (hours' whole-number test also fits two lattices, once per request)
        computed.append("age" if noise is uniform else "hours' lattice test")
        return lattice_channel(self, noise, reported)

    def intervals(self, edges, reported):  # type: ignore[no-untyped-def]
        computed.append("hours")
        return interval_channel(self, edges, reported)

    monkeypatch.setattr(continuous.LatticeCells, "channel", lattice)
    monkeypatch.setattr(AdditiveLaplace, "interval_channel", intervals)
    shared = condition_posteriors(
        table, wheres, n_boot=20, rng=np.random.default_rng(4), given=given
    )
    for one, both in zip(alone, shared, strict=True):
        np.testing.assert_array_equal(one.cell_values, both.cell_values)
        assert one.estimate == both.estimate
    np.testing.assert_array_equal(alone[0].cell_replicates, shared[0].cell_replicates)
    # age: one lattice (the bands' cuts pick its points), shared by the two bands'
    # models; hours: its own cells per threshold set,
    # the eligibility's (> 5) shared by the age and sex models.
    assert computed.count("age") == 1
    assert computed.count("hours") == 3
