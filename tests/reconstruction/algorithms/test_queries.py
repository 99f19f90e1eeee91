"""Tests of counts, means, distributions and sampling over distorted tables (queries.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy.mechanisms import AdditiveUniform, randomised_response
from reconstruction.algorithms.continuous import IntervalReconstruction
from reconstruction.algorithms.queries import (
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
    count,
    count_figure3,
    count_joint,
    count_naive,
    distribution,
    figure3_rows,
    mean,
    sample,
    satisfies,
)
from reconstruction.algorithms.result import Reconstruction
from reconstruction.algorithms.simulation import distort_pool, simulate_candidates
from tests.coverage import assert_coverage

N = 60_000
POOL = simulate_candidates(N, rng=np.random.default_rng(2024))
TRUTH = POOL.as_mapping()
TABLE = distort_pool(POOL, rng=np.random.default_rng(7))
WOMEN_PARENTS_OVER_30 = [
    Condition("sex", "in", {0}),
    Condition("children", "in", {1}),
    Condition("age", "gt", 30),
]


def _true_count(where: list[Condition]) -> int:
    return int(satisfies(TRUTH, where).sum())


def test_joint_count_is_accurate_and_its_interval_covers_truth() -> None:
    truth = _true_count(WOMEN_PARENTS_OVER_30)
    result = count(TABLE, WOMEN_PARENTS_OVER_30, n_boot=60, rng=np.random.default_rng(1))
    assert result.method == "joint" and result.population == N
    # relative RMSE of the joint count is about 3% at this size (bench/bench_queries.py)
    np.testing.assert_allclose(result.estimate, truth, rtol=0.08)
    assert result.ci95[0] <= truth <= result.ci95[1]
    assert result.ci95[0] < result.estimate < result.ci95[1]


def test_joint_beats_figure3_and_naive_on_correlated_data() -> None:
    errors: dict[str, list[float]] = {"joint": [], "figure3": [], "naive": []}
    for seed in range(4):
        rng = np.random.default_rng(100 + seed)
        pool = simulate_candidates(40_000, rng=rng)
        table = distort_pool(pool, rng=rng)
        truth = satisfies(pool.as_mapping(), WOMEN_PARENTS_OVER_30).sum()
        for method in errors:
            estimate = count(table, WOMEN_PARENTS_OVER_30, method=method, ci=False, rng=rng)  # type: ignore[arg-type]
            errors[method].append((estimate.estimate - truth) / truth)
    rmse = {method: float(np.sqrt(np.mean(np.square(e)))) for method, e in errors.items()}
    assert rmse["joint"] < rmse["figure3"] and rmse["joint"] < rmse["naive"]
    assert rmse["joint"] < 0.05


def test_figure3_single_discrete_condition_is_em_as() -> None:
    where = [Condition("district", "in", {1, 2})]
    figure3 = count_figure3(TABLE, where, ci=False)
    joint = count_joint(TABLE, where, ci=False)
    np.testing.assert_allclose(figure3.estimate, joint.estimate, rtol=1e-4)
    np.testing.assert_allclose(figure3.estimate, _true_count(where), rtol=0.03)


def test_figure3_rows_match_its_count() -> None:
    rows, estimate = figure3_rows(TABLE, WOMEN_PARENTS_OVER_30, rng=np.random.default_rng(3))
    assert abs(rows.size - estimate) <= 1.0
    again, _ = figure3_rows(TABLE, WOMEN_PARENTS_OVER_30, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(rows, again)


def test_naive_count_counts_reported_values() -> None:
    where = [Condition("age", "between", (20, 40))]
    age = TABLE["age"]
    assert isinstance(age, ContinuousAttribute)
    expected = ((age.values >= 20) & (age.values < 40)).sum()
    result = count_naive(TABLE, where, rng=np.random.default_rng(0))
    assert result.estimate == expected
    assert result.ci95[0] < expected < result.ci95[1]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(20, 400), st.floats(17, 99))
def test_counts_are_within_zero_and_n(seed: int, n: int, threshold: float) -> None:
    rng = np.random.default_rng(seed)
    table = distort_pool(simulate_candidates(n, rng=rng), rng=rng)
    where = [Condition("children", "in", {1}), Condition("age", "lte", threshold)]
    for method in ("joint", "figure3", "naive"):
        result = count(table, where, method=method, ci=False, rng=rng)
        assert -1e-9 <= result.estimate <= n + 1e-9
    within = distribution(table, "district", where, ci=False)
    assert np.all(within.counts >= 0)
    overall = distribution(table, "age", ci=False)
    np.testing.assert_allclose(overall.counts.sum(), n)


def test_unbiased_mean_is_unbiased_where_select_then_average_is_not() -> None:
    where = [Condition("children", "in", {1})]
    truth = POOL.income[POOL.children == 1].mean()
    unbiased = mean(TABLE, "income", where)
    figure3 = mean(TABLE, "income", where, method="figure3", rng=np.random.default_rng(2))
    naive = mean(TABLE, "income", where, method="naive")
    assert unbiased.method == "unbiased"
    assert unbiased.ci95[0] <= truth <= unbiased.ci95[1]
    for biased in (figure3, naive):
        assert not biased.ci95[0] <= truth <= biased.ci95[1]
        assert abs(biased.estimate - truth) > 3 * abs(unbiased.estimate - truth)
    np.testing.assert_allclose(unbiased.group_size, (POOL.children == 1).sum(), rtol=0.03)


def test_unbiased_mean_of_a_conjunction() -> None:
    where = [Condition("children", "in", {1}), Condition("sex", "in", {1})]
    truth = POOL.income[satisfies(TRUTH, where)].mean()
    result = mean(TABLE, "income", where)
    assert result.ci95[0] <= truth <= result.ci95[1]


def test_overall_mean_and_mean_from_reconstructed_distribution() -> None:
    overall = mean(TABLE, "age")
    np.testing.assert_allclose(overall.estimate, POOL.age.mean(), atol=0.2)
    assert overall.method == "overall" and overall.group_size == N
    where = [Condition("age", "gt", 30)]
    own = mean(TABLE, "age", where, n_boot=30, rng=np.random.default_rng(5))
    assert own.method == "reconstructed"
    np.testing.assert_allclose(own.estimate, POOL.age[POOL.age > 30].mean(), atol=1.0)


def test_distributions_overall_and_within_group() -> None:
    overall = distribution(TABLE, "district", rng=np.random.default_rng(0))
    assert isinstance(overall, Reconstruction)
    np.testing.assert_allclose(overall.proportions, np.bincount(POOL.district) / N, atol=0.015)
    where = [Condition("children", "in", {1})]
    within = distribution(TABLE, "district", where, n_boot=30, rng=np.random.default_rng(0))
    assert isinstance(within, Reconstruction) and within.method == "joint_em"
    truth = np.bincount(POOL.district[POOL.children == 1], minlength=5)
    np.testing.assert_allclose(within.proportions, truth / truth.sum(), atol=0.02)
    assert np.all(within.ci95[:, 0] <= within.counts) and np.all(within.counts <= within.ci95[:, 1])
    ages = distribution(TABLE, "age", [Condition("sex", "in", {0})], ci=False)
    assert isinstance(ages, IntervalReconstruction)
    np.testing.assert_allclose(ages.counts.sum(), (POOL.sex == 0).sum(), rtol=0.05)


def test_sampling_is_reproducible_and_precision_is_honest() -> None:
    where = [Condition("children", "in", {1}), Condition("age", "gt", 30)]
    truly = satisfies(TRUTH, where)
    for method in ("figure3", "posterior"):
        one = sample(TABLE, 1_500, where, method=method, rng=np.random.default_rng(8))
        two = sample(TABLE, 1_500, where, method=method, rng=np.random.default_rng(8))
        np.testing.assert_array_equal(one.rows, two.rows)
        assert one.rows.size == 1_500 and np.unique(one.rows).size == 1_500
        np.testing.assert_allclose(one.expected_precision, truly[one.rows].mean(), atol=0.05)
        np.testing.assert_allclose(one.pool_estimate, truly.sum(), rtol=0.05)


def test_sampling_with_strata_quotas() -> None:
    strata = [([Condition("sex", "in", {0})], 30), ([Condition("sex", "in", {1})], 20)]
    where = [Condition("age", "between", (18, 40))]
    result = sample(TABLE, 50, where, strata=strata, rng=np.random.default_rng(1))
    assert [part.size for part in result.strata_rows] == [30, 20]
    assert np.intersect1d(result.strata_rows[0], result.strata_rows[1]).size == 0
    assert 0 < result.expected_precision <= 1


def test_sample_larger_than_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="larger than the pool"):
        sample(TABLE, N + 1)
    tiny = [Condition("age", "gt", 95)]
    with pytest.raises(ValueError, match="larger than the pool"):
        sample(TABLE, 5_000, tiny, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="strata sizes sum to 3"):
        sample(TABLE, 4, strata=[([Condition("sex", "in", {0})], 3)])


SMALL: dict[str, DiscreteAttribute | ContinuousAttribute] = {
    "sex": DiscreteAttribute(np.array([0, 1, 1]), randomised_response(2, 0.8)),
    "age": ContinuousAttribute(np.array([20.0, 30.0, 40.0]), AdditiveUniform(5), 16, 100),
}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: count(SMALL, [Condition("sex", "gt", 1)]),
            "op 'gt' is not defined for the discrete",
        ),
        (
            lambda: count(SMALL, [Condition("age", "in", {1})]),
            "op 'in' is not defined for the continuous",
        ),
        (lambda: count(SMALL, []), "empty condition"),
        (lambda: Condition("sex", "in", set()), "empty set of categories"),
        (lambda: Condition("age", "between", (5, 3)), "contradictory condition: between"),
        (
            lambda: count(SMALL, [Condition("age", "gt", 50), Condition("age", "lte", 30)]),
            "contradictory condition on 'age'",
        ),
        (
            lambda: count(SMALL, [Condition("sex", "in", {0}), Condition("sex", "in", {1})]),
            "contradictory condition on 'sex'",
        ),
        (lambda: count(SMALL, [Condition("sex", "in", {2})]), r"outside 0..1"),
        (lambda: count(SMALL, [Condition("height", "gt", 2)]), "unknown attribute 'height'"),
        (lambda: Condition("age", "like", 3), "unknown op 'like'"),  # type: ignore[arg-type]
        (
            lambda: count(SMALL, [Condition("sex", "in", {0})], method="magic"),  # type: ignore[arg-type]
            "unknown count method",
        ),
        (lambda: mean(SMALL, "sex"), "needs a continuous attribute"),
        (
            lambda: count(
                {
                    **SMALL,
                    "age": ContinuousAttribute(np.array([1.0, 2.0]), AdditiveUniform(5), 0, 9),
                },
                [Condition("sex", "in", {0})],
            ),
            "mismatched lengths",
        ),
        (lambda: sample(SMALL, 0), "size must be a positive integer"),
    ],
)
def test_bad_input_names_the_problem(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


MEAN_CONDITIONS = {
    "children=Y": [Condition("children", "in", {1})],
    "children=Y & sex=F": [Condition("children", "in", {1}), Condition("sex", "in", {0})],
    "age<=30": [Condition("age", "lte", 30)],
    "age>30 & children=Y": [Condition("age", "gt", 30), Condition("children", "in", {1})],
    "age in [18, 40)": [Condition("age", "between", (18, 40))],
}


def test_unbiased_mean_with_continuous_conditions_where_figure3_is_biased() -> None:
    # Means of the relative errors over 4 pools of 20,000; the standard error of such a
    # mean is about 0.5% (bench/bench_queries.py gives the full table).
    errors: dict[str, dict[str, list[float]]] = {
        label: {"unbiased": [], "figure3": []} for label in MEAN_CONDITIONS
    }
    for seed in range(4):
        rng = np.random.default_rng(300 + seed)
        pool = simulate_candidates(20_000, rng=rng)
        table = distort_pool(pool, rng=rng)
        for label, where in MEAN_CONDITIONS.items():
            truth = pool.income[satisfies(pool.as_mapping(), where)].mean()
            for method in ("unbiased", "figure3"):
                result = mean(table, "income", where, method=method, ci=False, rng=rng)  # type: ignore[arg-type]
                errors[label][method].append((result.estimate - truth) / truth)
    for label, by_method in errors.items():
        bias = {method: float(np.mean(e)) for method, e in by_method.items()}
        assert abs(bias["unbiased"]) < 0.015, (label, bias)
        assert abs(bias["figure3"]) > 2 * abs(bias["unbiased"]), (label, bias)
    assert abs(np.mean(errors["age<=30"]["figure3"])) > 0.05


def _mean_interval_hits(simulations: int) -> list[bool]:
    where = MEAN_CONDITIONS["age<=30"]
    hits = []
    for seed in range(simulations):
        rng = np.random.default_rng(5_000 + seed)
        pool = simulate_candidates(5_000, rng=rng)
        table = distort_pool(pool, rng=rng)
        truth = pool.income[satisfies(pool.as_mapping(), where)].mean()
        result = mean(table, "income", where, n_boot=100, rng=rng)
        hits.append(bool(result.ci95[0] <= truth <= result.ci95[1]))
    return hits


def test_unbiased_mean_interval_does_not_collapse() -> None:
    # The interval refits the joint distribution in every replicate, so it carries the
    # posterior's uncertainty. 40 simulations can only show intervals too narrow
    # (one-sided binomial bound at alpha = 0.001, i.e. at least 33 of 40 cover); the
    # two-sided check is test_unbiased_mean_interval_covers_95_percent (make test-slow).
    assert_coverage(_mean_interval_hits(40), two_sided=False, label="mean | age<=30")


@pytest.mark.slow
def test_unbiased_mean_interval_covers_95_percent() -> None:
    # 300 simulations: a binomial bound on both sides at alpha = 0.001 ([0.903, 0.987]).
    # Issue 10 measured 91% for this case (a conditional mean under a continuous
    # condition); it runs in `make test-slow`, not `make test`.
    assert_coverage(_mean_interval_hits(300), label="mean | age<=30")


def test_joint_count_with_a_gaussian_noised_condition() -> None:
    where = [Condition("income", "gt", 3000), Condition("children", "in", {1})]
    truth = _true_count(where)
    result = count(TABLE, where, n_boot=100, rng=np.random.default_rng(4))
    np.testing.assert_allclose(result.estimate, truth, rtol=0.03)
    assert result.ci95[0] <= truth <= result.ci95[1]
    alone = count(TABLE, [Condition("income", "gt", 3000)], ci=False)
    np.testing.assert_allclose(alone.estimate, (POOL.income > 3000).sum(), rtol=0.02)


# ------------------------------------------------------------------ whole numbers (issue 10)


def _whole_number_table(n: int, seed: int, *, step: float | None):
    from privacy.mechanisms import AdditiveUniform, distort_codes, randomised_response
    from reconstruction.algorithms.simulation import simulate_candidates

    rng = np.random.default_rng(seed)
    pool = simulate_candidates(n, rng=rng)
    age = np.floor(pool.age)
    channel = randomised_response(2, 0.75)
    noise = AdditiveUniform(10.0)
    table = {
        "sex": DiscreteAttribute(distort_codes(pool.sex, channel, rng), channel),
        "age": ContinuousAttribute(noise.distort(age, rng), noise, 16.0, 100.0, step=step),
    }
    truth = int(np.sum((pool.sex == 0) & (age <= 30)))
    return table, truth


def test_a_declared_step_removes_the_whole_number_bias_of_the_joint_count() -> None:
    # Issue 10, finding 1: whole-number ages biased `sex = F and age <= 30` by -4.8% at
    # n = 10^5 (the intervals put the truths at 30 on an edge, half of them outside).
    where = [Condition("sex", "in", {0}), Condition("age", "lte", 30)]
    # One survey's error has a standard deviation of about 2.5% at n = 10^5, so the mean
    # of 8 is checked against 2.5% (its bias in the infinite-n limit is checked in
    # test_continuous.py::test_lattice_joint_count_unbiased).
    errors = []
    for seed in range(8):
        table, truth = _whole_number_table(100_000, seed, step=1.0)
        errors.append(count_joint(table, where, ci=False).estimate / truth - 1)
    assert abs(np.mean(errors)) < 0.025, errors


def test_whole_numbers_without_a_declared_step_are_modelled_on_their_lattice() -> None:
    # Issue 10, "without a declared step, the model must stay unbiased when the truth
    # happens to be whole numbers": the default count was off by -4.8% at n = 10^5 (-6.0%
    # in last session's model). The reports show the whole numbers (uniform noise), so
    # the count uses the lattice model a declared step would give, and says so.
    where = [Condition("sex", "in", {0}), Condition("age", "lte", 30)]
    errors = []
    for seed in range(8):
        table, truth = _whole_number_table(100_000, seed, step=None)
        result = count_joint(table, where, ci=False)
        assert any("whole numbers" in note for note in result.notes), result.notes
        declared, _ = _whole_number_table(100_000, seed, step=1.0)
        assert result.estimate == count_joint(declared, where, ci=False).estimate
        errors.append(result.estimate / truth - 1)
    assert abs(np.mean(errors)) < 0.025, errors


def test_real_valued_truths_keep_the_interval_model() -> None:
    from privacy.mechanisms import AdditiveUniform, distort_codes, randomised_response
    from reconstruction.algorithms.simulation import simulate_candidates

    rng = np.random.default_rng(12)
    pool = simulate_candidates(100_000, rng=rng)
    channel, noise = randomised_response(2, 0.75), AdditiveUniform(10.0)
    table = {
        "sex": DiscreteAttribute(distort_codes(pool.sex, channel, rng), channel),
        "age": ContinuousAttribute(noise.distort(pool.age, rng), noise, 16.0, 100.0),
    }
    where = [Condition("sex", "in", {0}), Condition("age", "lte", 30)]
    result = count_joint(table, where, ci=False)
    assert not any("show whole numbers" in note for note in result.notes), result.notes
    truth = np.sum((pool.sex == 0) & (pool.age <= 30))
    np.testing.assert_allclose(result.estimate, truth, rtol=0.05)


def test_figure3_honours_a_declared_step() -> None:
    # Issue 10: Figure 3's stages reconstructed a continuous attribute over intervals
    # even with a declared step, so whole years at the threshold were cut in half.
    where = [Condition("age", "lte", 30)]
    errors = []
    for seed in range(4):
        table, _ = _whole_number_table(100_000, 50 + seed, step=1.0)
        truth = np.sum(np.floor(_pool_ages(100_000, 50 + seed)) <= 30)
        errors.append(count(table, where, method="figure3", ci=False).estimate / truth - 1)
    assert abs(np.mean(errors)) < 0.015, errors


def _pool_ages(n: int, seed: int) -> np.ndarray:
    from reconstruction.algorithms.simulation import simulate_candidates

    return simulate_candidates(n, rng=np.random.default_rng(seed)).age


def test_a_step_that_does_not_divide_the_range_is_refused() -> None:
    from privacy.mechanisms import NoNoise

    with pytest.raises(ValueError, match="whole number of steps"):
        ContinuousAttribute(np.array([1.0]), NoNoise(), 0.0, 10.0, step=3.0)


def test_sampling_defaults_to_posterior_and_reports_each_subcondition() -> None:
    # Issue 10, finding 7: figure3 was the default though posterior panels are more
    # precise; expected_precision is for the whole condition, so each subcondition's
    # precision is reported beside it.
    table, _ = _whole_number_table(20_000, 3, step=1.0)
    where = [Condition("age", "between", (18.0, 40.0))]
    strata = [([Condition("sex", "in", {0})], 10), ([Condition("sex", "in", {1})], 10)]
    drawn = sample(table, 20, where, strata=strata, rng=np.random.default_rng(1))
    assert drawn.method == "posterior"
    labels = dict(drawn.subcondition_precision)
    assert set(labels) == {"age between [18, 40)", "sex in [0]", "sex in [1]"}
    assert all(0.0 <= value <= 1.0 for value in labels.values())
    assert min(labels.values()) >= 0.5 and drawn.expected_precision >= 0.5


def test_joint_count_interval_of_an_empty_cell_does_not_collapse() -> None:
    # Issue 10, finding 2 for the joint count: replicates warm-started at the estimate
    # could not move a true cell it put at ~0; with only discrete attributes (no EMS
    # smoothing) the interval of a count whose truth is 0 was (0.02, 0.33). Its sampling
    # error under RR 0.8 on two yes/no questions at n = 2,000 is tens of people.
    from privacy.mechanisms import distort_codes, randomised_response

    rng = np.random.default_rng(1)
    channel = randomised_response(2, 0.8)
    first = rng.integers(0, 2, 2_000)
    second = np.where(first == 0, 1, rng.integers(0, 2, 2_000))  # nobody is (0, 0)
    table = {
        "a": DiscreteAttribute(distort_codes(first, channel, rng), channel),
        "b": DiscreteAttribute(distort_codes(second, channel, rng), channel),
    }
    result = count_joint(table, [Condition("a", "in", {0}), Condition("b", "in", {0})], rng=rng)
    assert result.ci95[0] <= 0.5
    assert result.ci95[1] >= 10.0, result.ci95


def _real_valued_table(n: int, seed: int):
    from privacy.mechanisms import AdditiveUniform, distort_codes, randomised_response
    from reconstruction.algorithms.simulation import simulate_candidates

    rng = np.random.default_rng(seed)
    pool = simulate_candidates(n, rng=rng)
    channel, noise = randomised_response(2, 0.75), AdditiveUniform(10.0)
    table = {
        "sex": DiscreteAttribute(distort_codes(pool.sex, channel, rng), channel),
        "age": ContinuousAttribute(noise.distort(pool.age, rng), noise, 16.0, 100.0),
    }
    return table, int(np.sum((pool.sex == 0) & (pool.age <= 30)))


def _joint_count_hits(
    n: int,
    surveys: int,
    *,
    step: float | None,
    whole: bool = True,
    averaged: list[bool] | None = None,
) -> list[bool]:
    """Coverage of `sex = F and age <= 30` on whole-number ages (bench_accuracy's case),
    or on real-valued ages (``whole=False``, the control; no step). ``averaged``, when
    given, receives whether each survey's count averaged the two models."""
    where = [Condition("sex", "in", {0}), Condition("age", "lte", 30)]
    hits = []
    for seed in range(surveys):
        if whole:
            table, truth = _whole_number_table(n, 7_000 + seed, step=step)
        else:
            table, truth = _real_valued_table(n, 7_000 + seed)
        result = count_joint(table, where, n_boot=100, rng=np.random.default_rng(seed))
        low, high = result.ci95
        hits.append(bool(low <= truth <= high))
        if averaged is not None:
            averaged.append(any("cannot tell" in note for note in result.notes))
    return hits


def test_unsettled_whole_numbers_average_the_two_models() -> None:
    # Issue 10: at n = 30,000 the test for whole numbers (z > 2.5) missed whole-number
    # ages in about a third of the surveys, which then kept the interval model's -5% bias
    # (coverage 86.3%). Where the reports cannot settle it, the count averages the lattice
    # and interval models by the evidence's weight and pools their replicates, so the
    # interval reaches the lattice model's count (the one a declared step gives).
    where = [Condition("sex", "in", {0}), Condition("age", "lte", 30)]
    unsettled = 0
    for seed in range(6):
        table, _ = _whole_number_table(30_000, 7_000 + seed, step=None)
        result = count_joint(table, where, n_boot=100, rng=np.random.default_rng(seed))
        if not any("cannot tell" in note for note in result.notes):
            assert any("show whole numbers" in note for note in result.notes), result.notes
            continue
        unsettled += 1
        declared, _ = _whole_number_table(30_000, 7_000 + seed, step=1.0)
        lattice = count_joint(declared, where, ci=False).estimate
        assert result.ci95[0] <= lattice <= result.ci95[1], (result.ci95, lattice)
    assert unsettled >= 1  # seeds 7000-7005: the test missed whole numbers in some


def test_joint_count_interval_at_n_1000_does_not_collapse() -> None:
    # Issue 10, finding 6 (88.5% at n = 200, 92.7% at n = 1,000 last session). 40
    # surveys can only show intervals too narrow (one-sided bound at alpha = 0.001).
    # At n = 1,000 the reports cannot tell whole numbers (evidence of about 1 nat), so
    # these are the averaged models' intervals (_averaged_interval): check that they are.
    averaged: list[bool] = []
    hits = _joint_count_hits(1_000, 40, step=None, averaged=averaged)
    assert sum(averaged) >= 36, averaged
    assert_coverage(hits, two_sided=False, label="n=1000")


def test_averaged_count_interval_is_centred_on_the_averaged_count() -> None:
    # Issue 10: the weighted percentiles of the pooled replicates covered 96.9% at
    # n = 1,000 (batches of 300 up to 98.3%). They are now shifted so that their
    # weighted mean is the averaged count: the interval moves with the count it is given
    # for, keeps the mixture's percentiles, and stays in [0, n].
    from reconstruction.algorithms.queries.counts import _averaged_interval

    rng = np.random.default_rng(3)
    lattice, intervals = rng.normal(110.0, 19.0, 200), rng.normal(103.0, 17.0, 200)
    shares = [np.full(200, 0.6), np.full(200, 0.4)]
    low, high = _averaged_interval([lattice, intervals], shares, 107.0, 1_000)
    moved = _averaged_interval([lattice, intervals], shares, 112.0, 1_000)
    assert moved == pytest.approx((low + 5.0, high + 5.0))
    # Equal weights on one set of replicates: its percentiles, centred on the count.
    same = [lattice, lattice]
    half = [np.full(200, 0.5), np.full(200, 0.5)]
    expected = np.percentile(lattice - lattice.mean() + 100.0, [2.5, 97.5], method="inverted_cdf")
    assert _averaged_interval(same, half, 100.0, 1_000) == pytest.approx(tuple(expected))
    # The weights matter: the more spread model's weight widens the interval.
    wide, narrow = rng.normal(100.0, 30.0, 200), rng.normal(100.0, 5.0, 200)
    mostly_wide = _averaged_interval([wide, narrow], shares, 100.0, 1_000)
    mostly_narrow = _averaged_interval([wide, narrow], shares[::-1], 100.0, 1_000)
    assert mostly_wide[1] - mostly_wide[0] > mostly_narrow[1] - mostly_narrow[0] + 10.0
    # A count near 0 or n keeps its interval inside [0, n].
    low, high = _averaged_interval([lattice - 105.0, intervals - 105.0], shares, 2.0, 1_000)
    assert low == 0.0 and high > 2.0
    low, high = _averaged_interval([lattice + 885.0, intervals + 885.0], shares, 998.0, 1_000)
    assert high == 1_000.0 and low < 998.0


@pytest.mark.slow
def test_joint_count_interval_at_n_1000_covers_95_percent() -> None:
    # 300 surveys, two-sided binomial bound at alpha = 0.001 ([0.903, 0.987]).
    assert_coverage(_joint_count_hits(1_000, 300, step=None), label="joint count n=1000")


def test_joint_count_interval_at_n_30000_without_a_step_does_not_collapse() -> None:
    # Issue 10: 86.3% last session (whole numbers missed by the test kept a -5% bias).
    # 40 surveys can only show intervals too narrow (one-sided bound at alpha = 0.001).
    assert_coverage(_joint_count_hits(30_000, 40, step=None), two_sided=False, label="n=30000")


@pytest.mark.slow
def test_joint_count_interval_at_n_30000_without_a_step_covers_95_percent() -> None:
    # Issue 10: whole-number ages without a declared step at n = 30,000 (86.3% last
    # session); 300 surveys, two-sided binomial bound at alpha = 0.001.
    assert_coverage(_joint_count_hits(30_000, 300, step=None), label="whole, no step, n=30000")


@pytest.mark.slow
def test_joint_count_interval_on_real_valued_ages_at_n_30000_covers_95_percent() -> None:
    # The control of the case above: averaging the models must not make real-valued ages
    # over-covered (nor under-covered); 300 surveys, two-sided.
    hits = _joint_count_hits(30_000, 300, step=None, whole=False)
    assert_coverage(hits, label="real-valued, no step, n=30000")


@pytest.mark.slow
def test_joint_count_interval_with_a_declared_step_at_n_30000_covers_95_percent() -> None:
    # Issue 10: whole-number continuous condition at n = 30,000 (60% last session without
    # a step, where the whole years at the threshold bias the count by about -5%). With
    # the declared step the lattice model has no such bias.
    assert_coverage(_joint_count_hits(30_000, 300, step=1.0), label="joint count n=30000")
