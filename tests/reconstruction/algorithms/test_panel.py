"""Fair panel selection (panel.py) against brute-force enumeration of panels on tiny pools.

Reference optima: every panel of the pool is enumerated, the quota-satisfying ones (on the
expected true counts computed from the same posteriors) become the columns of the
per-person maximin LP of Flanigan et al. (Nature 2021), solved directly with HiGHS.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import linprog

from privacy.mechanisms import AdditiveLaplace, randomised_response
from reconstruction.algorithms.panel import (
    InfeasibleQuotas,
    PanelCancelled,
    PanelOptions,
    Quota,
    limits,
    maximin,
    select_panel,
)
from reconstruction.algorithms.panel.problem import _Problem
from reconstruction.algorithms.panel.warm_start import _lp_bound
from reconstruction.algorithms.queries import (
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
    condition_posterior,
)

SEX = [1, 0, 0, 1, 0, 1, 1, 0, 1, 1]
DISTRICT = [0, 1, 2, 2, 0, 1, 0, 0, 1, 0]


def _true_table() -> dict[str, DiscreteAttribute | ContinuousAttribute]:
    return {
        "sex": DiscreteAttribute(np.array(SEX), np.eye(2)),
        "district": DiscreteAttribute(np.array(DISTRICT), np.eye(3)),
    }


def _noisy_table() -> dict[str, DiscreteAttribute | ContinuousAttribute]:
    return {
        "sex": DiscreteAttribute(np.array(SEX), randomised_response(2, 0.85)),
        "district": DiscreteAttribute(np.array(DISTRICT), randomised_response(3, 0.9)),
    }


def _quotas() -> list[Quota]:
    # Bands, not exact numbers: expected counts are sums of fractional posteriors.
    return [
        Quota((Condition("sex", "in", {0}),), 1, 3, "women"),
        Quota((Condition("district", "in", {0}),), 1, 3, "district 0"),
        Quota((Condition("district", "in", {2}),), 1, 2, "district 2"),
    ]


def _person_posteriors(result, n: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    matrix = np.zeros((n, result.type_posteriors.shape[1]))
    matrix[result.candidates] = result.type_posteriors[result.type_of]
    return matrix


def _brute_force_maximin(posteriors: np.ndarray, size: int, quotas: list[Quota]) -> float:
    n = posteriors.shape[0]
    lower = np.array([q.min for q in quotas]) - 1e-9
    upper = np.array([q.max for q in quotas]) + 1e-9
    panels = []
    for members in itertools.combinations(range(n), size):
        sums = posteriors[list(members)].sum(axis=0)
        if np.all(sums >= lower) and np.all(sums <= upper):
            row = np.zeros(n)
            row[list(members)] = 1.0
            panels.append(row)
    a = np.array(panels)
    selectable = a.max(axis=0) > 0
    s = a.shape[0]
    # max z s.t. sum_p lambda_p a[p, i] >= z for every selectable i, sum lambda = 1.
    a_ub = np.hstack([-a[:, selectable].T, np.ones((int(selectable.sum()), 1))])
    cost = np.zeros(s + 1)
    cost[-1] = -1.0
    res = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(a_ub.shape[0]),
        A_eq=np.hstack([np.ones((1, s)), [[0.0]]]),
        b_eq=[1.0],
        bounds=[(0, None)] * s + [(None, None)],
        method="highs",
    )
    assert res.status == 0
    return float(res.x[-1])


@pytest.mark.parametrize("make_table", [_true_table, _noisy_table])
def test_maximin_matches_brute_force_optimum(make_table) -> None:  # type: ignore[no-untyped-def]
    table = make_table()
    result = select_panel(table, 4, _quotas(), rng=np.random.default_rng(3), lottery_size=10_000)
    expected = _brute_force_maximin(_person_posteriors(result, len(SEX)), 4, _quotas())
    assert_allclose(result.optimum, expected, rtol=1e-3)
    # The lottery (multiples of 1/10,000) stays within 1e-3 of the optimum.
    assert result.selection_summary["min"] >= expected - 1e-3
    # Probabilities are a panel's worth in total, and equal within a type.
    assert_allclose(result.probabilities.sum(), 4.0, atol=1e-9)
    for t in np.unique(result.type_of):
        values = result.probabilities[result.candidates[result.type_of == t]]
        assert np.ptp(values) < 1e-12


def test_true_data_optimum_is_known() -> None:
    # Exactly 2 women among 4 (women are rows 1, 2, 4, 7): each woman 2/4, each man 2/6.
    quotas = [Quota((Condition("sex", "in", {0}),), 2, 2, "women")]
    result = select_panel(_true_table(), 4, quotas, rng=np.random.default_rng(0))
    assert_allclose(result.optimum, 2 / 6, rtol=1e-6)
    women = np.array(SEX) == 0
    assert_allclose(result.probabilities[women], 0.5, atol=1e-3)
    assert_allclose(result.probabilities[~women], 2 / 6, atol=1e-3)
    assert int(women[result.rows].sum()) == 2


def test_every_panel_in_the_support_meets_the_quotas_in_expectation() -> None:
    result = select_panel(_noisy_table(), 4, _quotas(), rng=np.random.default_rng(1))
    sums = result.support @ result.type_posteriors
    lower = np.array([q.min for q in _quotas()])
    upper = np.array([q.max for q in _quotas()])
    assert np.all(sums >= lower - 1e-6) and np.all(sums <= upper + 1e-6)
    assert np.all(result.support.sum(axis=1) == 4)
    assert_allclose(result.weights.sum(), 1.0)
    drawn = _person_posteriors(result, len(SEX))[result.rows].sum(axis=0)
    assert np.all(drawn >= lower - 1e-6) and np.all(drawn <= upper + 1e-6)
    for outcome, value in zip(result.quotas, drawn, strict=True):
        assert_allclose(outcome.expected, value)
        assert outcome.ci95[0] <= outcome.expected <= outcome.ci95[1]


def test_leximin_and_nash_are_at_least_as_fair_as_their_definitions_require() -> None:
    table = _noisy_table()
    maximin = select_panel(table, 4, _quotas(), rng=np.random.default_rng(2), lottery_size=10_000)
    leximin = select_panel(
        table, 4, _quotas(), objective="leximin", rng=np.random.default_rng(2), lottery_size=10_000
    )
    nash = select_panel(
        table, 4, _quotas(), objective="nash", rng=np.random.default_rng(2), lottery_size=10_000
    )
    # LEXIMIN's first level is the maximin optimum, and its sorted vector dominates.
    assert_allclose(leximin.optimum, maximin.optimum, rtol=1e-3)
    lex = np.sort(leximin.probabilities[leximin.candidates])
    mm = np.sort(maximin.probabilities[maximin.candidates])
    first = np.flatnonzero(np.abs(lex - mm) > 2e-3)
    assert first.size == 0 or lex[first[0]] > mm[first[0]]

    # Nash welfare: no other distribution found here has a larger sum of log-probabilities.
    def welfare(result) -> float:  # type: ignore[no-untyped-def]
        values = result.probabilities[result.candidates]
        return float(np.log(np.maximum(values, 1e-12)).sum())

    assert welfare(nash) >= max(welfare(maximin), welfare(leximin)) - 1e-2


def test_same_seed_same_panel_and_reserves_are_distinct() -> None:
    args = (_noisy_table(), 4, _quotas())
    first = select_panel(*args, reserves=3, rng=np.random.default_rng(11))
    second = select_panel(*args, reserves=3, rng=np.random.default_rng(11))
    assert first.rows.tolist() == second.rows.tolist()
    assert first.reserves.tolist() == second.reserves.tolist()
    assert len(set(first.reserves.tolist()) | set(first.rows.tolist())) == 7


def test_infeasible_quotas_name_the_conflict_and_the_smallest_relaxation() -> None:
    quotas = [
        Quota((Condition("sex", "in", {0}),), 3, 4, "women"),
        Quota((Condition("sex", "in", {1}),), 3, 4, "men"),
        Quota((Condition("district", "in", {1}),), 0, 3, "district 1"),
    ]
    with pytest.raises(InfeasibleQuotas) as caught:
        select_panel(_true_table(), 4, quotas, rng=np.random.default_rng(0))
    error = caught.value
    assert error.conflicting == (0, 1)
    assert "women" in str(error) and "men" in str(error)
    # Two seats must go: the relaxation lowers the minimums by 2 in total, nothing else.
    relaxed = error.relaxation
    assert relaxed[2] == (0, 3)
    assert (3 - relaxed[0][0]) + (3 - relaxed[1][0]) == 2
    assert relaxed[0][1] == 4 and relaxed[1][1] == 4
    fixed = [Quota(q.where, lo, hi, q.label) for q, (lo, hi) in zip(quotas, relaxed, strict=True)]
    assert select_panel(_true_table(), 4, fixed, rng=np.random.default_rng(0)).rows.size == 4


def test_continuous_quotas_use_the_posteriors_of_noisy_ages() -> None:
    rng = np.random.default_rng(5)
    ages = rng.integers(16, 86, size=400).astype(float)
    noise = AdditiveLaplace(70 / 4)
    table = {"age": ContinuousAttribute(noise.distort(ages, rng), noise, 16, 86)}
    young = Quota((Condition("age", "between", (16, 35)),), 4, 6, "16-34")
    # Plain bands: this test is about the posteriors (the tightening has its own tests).
    result = select_panel(table, 15, [young], rng=np.random.default_rng(5), max_outside=None)
    posterior = result.type_posteriors[result.type_of, 0]
    # Posteriors fall with the reported age: a noisy age is informative but not exact.
    reported = table["age"].values[result.candidates]
    assert np.corrcoef(reported, posterior)[0, 1] < -0.5
    assert 0.0 < posterior.min() < posterior.max() < 1.0
    assert 4 - 1e-6 <= result.quotas[0].expected <= 6 + 1e-6


def test_progress_is_reported_and_a_raising_callback_cancels() -> None:
    seen: list[float] = []
    select_panel(_noisy_table(), 4, _quotas(), rng=np.random.default_rng(0), progress=seen.append)
    assert seen[-1] == 1.0 and all(0.0 <= v <= 1.0 for v in seen)

    def cancel(fraction: float) -> None:
        raise PanelCancelled

    with pytest.raises(PanelCancelled):
        select_panel(_noisy_table(), 4, _quotas(), rng=np.random.default_rng(0), progress=cancel)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 0}, "size must be a positive integer"),
        ({"size": 11}, "larger than the eligible pool"),
        ({"objective": "greedy"}, "unknown objective"),
        ({"reserves": -1}, "reserves must be a non-negative integer"),
    ],
)
def test_bad_options_are_refused(kwargs, message) -> None:  # type: ignore[no-untyped-def]
    options = {"size": 4, **kwargs}
    size = options.pop("size")
    with pytest.raises(ValueError, match=message):
        select_panel(_true_table(), size, _quotas(), **options)


def test_bad_quota_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="min 3 is larger than max 2"):
        Quota((Condition("sex", "in", {0}),), 3, 2, "women")
    with pytest.raises(ValueError, match="must be an integer"):
        Quota((Condition("sex", "in", {0}),), 1.5, 2, "women")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be >= 0"):
        Quota((Condition("sex", "in", {0}),), -1, 2, "women")


def _normal_outside(mu: np.ndarray, var: np.ndarray, low: int, high: int, size: int) -> np.ndarray:
    """Expected seats outside [low, high] of an integer count with mean mu and variance var
    (continuity-corrected normal, the sum over seats as an integral from half a seat)."""
    from scipy.stats import norm

    sigma = np.sqrt(var)
    total = np.zeros_like(mu)
    if low > 0:
        z = (mu - low) / sigma
        total += sigma * (norm.pdf(z) - z * norm.sf(z))
    if high < size:
        z = (high - mu) / sigma
        total += sigma * (norm.pdf(z) - z * norm.sf(z))
    return total


def _age_sex_table(eps: float, n: int = 300) -> dict[str, DiscreteAttribute | ContinuousAttribute]:
    rng = np.random.default_rng(17)
    ages = rng.integers(16, 86, size=n).astype(float)
    sex = (rng.random(n) < 0.5).astype(np.intp)
    retain = np.exp(eps) / (np.exp(eps) + 1)
    reported = np.where(rng.random(n) < retain, sex, 1 - sex)
    noise = AdditiveLaplace(70 / eps)
    return {
        "age": ContinuousAttribute(noise.distort(ages, rng), noise, 16, 86),
        "sex": DiscreteAttribute(reported, randomised_response(2, retain)),
    }


def test_tightened_bands_bound_the_expected_seats_outside_every_band() -> None:
    # Bands +-2 around a panel of 12: at eps = 3 the realised true counts vary by about
    # 1.5 seats, so plain bands on the expected counts leave seats outside them.
    table = _age_sex_table(3.0)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
        Quota((Condition("age", "between", (16, 40)),), 2, 6, "16-39"),
    ]
    size = 12
    tight = select_panel(table, size, quotas, rng=np.random.default_rng(1), max_outside=0.1)
    plain = select_panel(table, size, quotas, rng=np.random.default_rng(1), max_outside=None)
    worst = {}
    for name, result in (("tight", tight), ("plain", plain)):
        p = result.type_posteriors
        mu = result.support @ p
        var = result.support @ (p * (1 - p))
        lower = np.array([q.min for q in quotas])
        upper = np.array([q.max for q in quotas])
        # The bands on the expected counts hold in both.
        assert np.all(mu >= lower - 1e-6) and np.all(mu <= upper + 1e-6)
        outside = np.column_stack(
            [_normal_outside(mu[:, j], var[:, j], q.min, q.max, size) for j, q in enumerate(quotas)]
        )
        worst[name] = outside.max(axis=0)
        for outcome in result.quotas:
            assert outcome.expected_outside >= 0.0
            if name == "plain":
                assert outcome.outside_level == np.inf
            else:
                assert outcome.outside_level >= 0.1
    levels = np.array([o.outside_level for o in tight.quotas])
    # Every panel of the lottery keeps each quota's expected seats outside within its level.
    assert np.all(worst["tight"] <= levels + 1e-6)
    assert np.all(worst["tight"] <= worst["plain"] + 1e-9)
    # The plain lottery needed the tightening (its worst panel is beyond the level).
    assert worst["plain"].max() > levels.min(), (worst, levels)
    assert "expected to fall outside its band by at most 0.1" in tight.guarantee


def test_unattainable_outside_level_falls_back_with_a_note() -> None:
    # Ages at eps = 1 say little: no panel keeps 0.01 seats outside a +-1 band.
    table = _age_sex_table(1.0)
    quotas = [Quota((Condition("age", "between", (16, 40)),), 3, 5, "16-39")]
    result = select_panel(table, 12, quotas, rng=np.random.default_rng(2), max_outside=0.01)
    assert result.quotas[0].outside_level > 0.01
    assert any("16-39" in note for note in result.notes)
    assert 3 - 1e-6 <= result.quotas[0].expected <= 5 + 1e-6


def test_a_time_limit_stops_early_with_a_valid_lottery_and_says_so() -> None:
    table = _age_sex_table(3.0)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
        Quota((Condition("age", "between", (16, 40)),), 2, 6, "16-39"),
    ]
    # LEXIMIN: many maximin rounds (a single maximin now often converges on its warm
    # start, before any time check).
    full = select_panel(table, 12, quotas, rng=np.random.default_rng(4), objective="leximin")
    stopped = select_panel(
        table, 12, quotas, rng=np.random.default_rng(4), max_seconds=0.0, objective="leximin"
    )
    assert any("max_seconds" in note for note in stopped.notes)
    assert not any("max_seconds" in note for note in full.notes)
    # Still a lottery over panels that meet the bands, just not the fairest one.
    mu = stopped.support @ stopped.type_posteriors
    assert np.all(mu >= np.array([4, 2]) - 1e-6) and np.all(mu <= np.array([8, 6]) + 1e-6)
    assert_allclose(stopped.weights.sum(), 1.0)
    assert stopped.optimum <= full.optimum + 1e-6  # LEXIMIN fixes levels with 1e-7 slack


def test_merged_types_keep_every_members_panel_within_the_bands() -> None:
    # Continuous ages give many distinct posteriors; merging groups near-equal ones. The
    # bands are imposed on each merged type's extreme members, so whichever members fill
    # a panel's seats, their own posteriors keep the expected counts within the bands.
    table = _age_sex_table(2.0, n=400)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 6, "women"),
        Quota((Condition("age", "between", (16, 40)),), 3, 4, "16-39"),
    ]
    merged = select_panel(table, 10, quotas, rng=np.random.default_rng(3))
    exact = select_panel(table, 10, quotas, rng=np.random.default_rng(3), merge=False)
    assert merged.type_posteriors.shape[0] < exact.type_posteriors.shape[0]
    posteriors = np.column_stack(
        [condition_posterior(table, q.where, rng=np.random.default_rng(0)).values for q in quotas]
    )[merged.candidates]
    lower = np.array([q.min for q in quotas])
    upper = np.array([q.max for q in quotas])
    for panel in merged.support:
        least = np.zeros(len(quotas))
        most = np.zeros(len(quotas))
        for t in np.flatnonzero(panel):
            members = posteriors[merged.type_of == t]
            # The panel's seats of this type taken by its lowest / highest members.
            least += np.sort(members, axis=0)[: panel[t]].sum(axis=0)
            most += np.sort(members, axis=0)[::-1][: panel[t]].sum(axis=0)
        assert np.all(least >= lower - 1e-6) and np.all(most <= upper + 1e-6)
    # Merging costs little fairness (the bound: half a seat of band in total).
    assert merged.optimum >= 0.9 * exact.optimum


def test_lp_relaxation_bounds_the_maximin_optimum() -> None:
    # The relaxation's level bounds every lottery's lowest probability from above, and
    # the column generation stops within sortition-algorithms' gap (0.0005) of the best
    # bound, so a converged optimum lies within that of the relaxation or below it.
    table = _age_sex_table(3.0)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 5, "women"),
        Quota((Condition("age", "between", (16, 40)),), 5, 6, "16-39"),
    ]
    result = select_panel(table, 12, quotas, rng=np.random.default_rng(5), merge=False)
    problem = _Problem(
        np.bincount(result.type_of).astype(float),
        result.type_posteriors,
        12,
        np.array([4.0, 5.0]),
        np.array([5.0, 6.0]),
    )
    bound, seats = _lp_bound(problem, np.ones(problem.sizes.size, dtype=bool))
    assert_allclose(seats.sum(), 12.0)
    assert result.optimum <= bound + 1e-9
    assert_allclose(result.lp_bound, bound)  # reported with the result
    assert not result.notes or not any("max_seconds" in n for n in result.notes)


@pytest.mark.parametrize(
    ("eps", "n", "size", "women", "young"),
    [(2.0, 300, 10, (3, 4), (2, 3)), (3.0, 200, 8, (2, 3), (4, 5))],
)
def test_the_default_lottery_keeps_the_lowest_probability_of_the_optimum(  # type: ignore[no-untyped-def]
    eps, n, size, women, young
) -> None:
    # The optimal distribution is rounded to a uniform lottery over m panels. A type of
    # one candidate gets a whole number of the m panels, so at m = 1,000 these pools lost
    # 2.0% and 2.3% of the maximin level (0.0200 of 0.0204, 0.0115 of 0.0118); the
    # default m = 10,000 keeps it within 0.5%.
    table = _age_sex_table(eps, n=n)
    quotas = [
        Quota((Condition("sex", "in", {0}),), *women, "women"),
        Quota((Condition("age", "between", (16, 40)),), *young, "16-39"),
    ]
    result = select_panel(table, size, quotas, rng=np.random.default_rng(5), merge=False)
    assert result.lottery_size == 10_000
    assert_allclose(result.weights * result.lottery_size, np.rint(result.weights * 10_000))
    assert result.selection_summary["min"] >= 0.995 * result.optimum


def test_the_deadline_also_stops_the_covering_step_and_the_notes_count_who_it_missed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # max_seconds counts from the call's start (posteriors included), so a run whose
    # covering step has not put every candidate in a panel by then still ends in time,
    # with a valid lottery: the candidates not reached get probability 0 and the notes
    # say how many. Without warm-start panels, the covering step finds one panel and stops.
    monkeypatch.setattr(maximin, "_WARM_PANELS", 0)
    table = _age_sex_table(3.0)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
        Quota((Condition("age", "between", (16, 40)),), 2, 6, "16-39"),
    ]
    stopped = select_panel(
        table, 12, quotas, rng=np.random.default_rng(1), max_seconds=0.0, merge=False
    )
    full = select_panel(table, 12, quotas, rng=np.random.default_rng(1), merge=False)
    missed = [note for note in stopped.notes if "were in no panel found within" in note]
    assert len(missed) == 1
    zero = int((stopped.probabilities[stopped.candidates] == 0).sum())
    assert zero > 0 and missed[0].startswith(f"{zero} eligible candidate(s)")
    assert stopped.unselectable == 0  # none of them proved impossible
    assert (full.probabilities[full.candidates] > 0).all()
    assert not any("were in no panel found" in note for note in full.notes)
    mu = stopped.support @ stopped.type_posteriors
    assert np.all(mu >= np.array([4, 2]) - 1e-6) and np.all(mu <= np.array([8, 6]) + 1e-6)
    assert_allclose(stopped.weights.sum(), 1.0)


def _banded_table() -> dict[str, DiscreteAttribute | ContinuousAttribute]:
    # Whole-year ages with the declared step (the lattice model, as bench_panel's pools).
    rng = np.random.default_rng(23)
    n = 400
    ages = np.minimum(16 + rng.gamma(2.2, 14.0, size=n).astype(int), 95).astype(float)
    sex = (rng.random(n) < 0.52).astype(np.intp)
    reported = np.where(rng.random(n) < 0.8, sex, 1 - sex)
    noise = AdditiveLaplace(35.0)
    return {
        "age": ContinuousAttribute(noise.distort(ages, rng), noise, 16, 95, step=1.0),
        "sex": DiscreteAttribute(reported, randomised_response(2, 0.8)),
    }


_BANDS = ((16, 30), (30, 45), (45, 65), (65, 96))


def _banded_quotas() -> list[Quota]:
    quotas = [
        Quota((Condition("age", "between", band),), 1, 6, f"{band[0]}-{band[1] - 1}")
        for band in _BANDS
    ]
    quotas += [
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
        Quota((Condition("sex", "in", {1}),), 4, 8, "men"),
    ]
    return quotas


def _counting_fits(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    from reconstruction.algorithms.queries import posteriors as posteriors_module

    calls: list[int] = []
    real = posteriors_module._fit

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(posteriors_module, "_fit", counted)
    return calls


def test_the_bands_of_an_attribute_share_one_reconstruction(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reconstruction.algorithms.queries import condition_posteriors

    table = _banded_table()
    quotas = _banded_quotas()
    # Each condition alone (its own fit and bootstrap), as select_panel did before.
    alone = [
        condition_posterior(table, q.where, n_boot=20, rng=np.random.default_rng(5)) for q in quotas
    ]
    calls = _counting_fits(monkeypatch)
    shared = condition_posteriors(
        table, [q.where for q in quotas], n_boot=20, rng=np.random.default_rng(5)
    )
    assert len(calls) == 2  # one age reconstruction for the four bands, one for sex
    for one, both in zip(alone, shared, strict=True):
        # The same posteriors and estimates, to the bit.
        np.testing.assert_array_equal(one.values, both.values)
        assert one.estimate == both.estimate
        assert both.replicates(np.arange(3)).shape == (20, 3)
    # The first condition's bootstrap is condition_posterior's with the same generator.
    np.testing.assert_array_equal(alone[0].cell_replicates, shared[0].cell_replicates)
    # The bands partition the ages: every row's posteriors over the bands sum to 1, in
    # the estimate and in every shared bootstrap replicate.
    np.testing.assert_allclose(sum(p.values for p in shared[:4]), 1.0, atol=1e-9)
    rows = np.arange(50)
    np.testing.assert_allclose(sum(p.replicates(rows) for p in shared[:4]), 1.0, atol=1e-9)


def test_select_panel_fits_each_reconstruction_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    table = _banded_table()
    quotas = _banded_quotas()
    calls = _counting_fits(monkeypatch)
    result = select_panel(table, 12, quotas, n_boot=20, rng=np.random.default_rng(2), merge=False)
    assert len(calls) == 2  # was 6: one per quota
    posteriors = np.column_stack(
        [condition_posterior(table, q.where, n_boot=20).values for q in quotas]
    )
    # The panel's (exact) types carry the posteriors each quota alone gives (a type's
    # posterior is its members' mean: equal to the last bits).
    np.testing.assert_allclose(
        result.type_posteriors[result.type_of], posteriors[result.candidates], rtol=1e-12, atol=0
    )


def test_a_tiny_budget_cuts_the_refusal_short_and_says_so() -> None:
    # The refusal of test_infeasible_quotas_..., with no time at all: the diagnosis stops
    # (the conflict search tries nothing), and the refusal says so; what it returns still
    # holds: the quotas it names conflict, and its relaxation admits a panel.
    quotas = [
        Quota((Condition("sex", "in", {0}),), 3, 4, "women"),
        Quota((Condition("sex", "in", {1}),), 3, 4, "men"),
        Quota((Condition("district", "in", {1}),), 0, 3, "district 1"),
    ]
    with pytest.raises(InfeasibleQuotas) as caught:
        select_panel(_true_table(), 4, quotas, rng=np.random.default_rng(0), max_seconds=0.0)
    error = caught.value
    assert not error.complete
    assert "diagnosis stopped at max_seconds=0" in str(error)
    assert set(error.conflicting) >= {0, 1}
    fixed = [
        Quota(q.where, lo, hi, q.label)
        for q, (lo, hi) in zip(quotas, error.relaxation, strict=True)
    ]
    assert select_panel(_true_table(), 4, fixed, rng=np.random.default_rng(0)).rows.size == 4
    # Without a budget the same refusal is complete and carries no such note.
    with pytest.raises(InfeasibleQuotas) as full:
        select_panel(_true_table(), 4, quotas, rng=np.random.default_rng(0))
    assert full.value.complete and "max_seconds" not in str(full.value)


def test_a_tiny_budget_stops_the_search_for_tightened_bands() -> None:
    # At eps = 1 no panel keeps 0.2 seats outside both bands at once, so the search walks
    # the ladder of levels (without a budget it settles on 1.0 and 0.3; 0.6 and 0.2 with
    # the margins of the doubly continuity-corrected normal, which understated the seats
    # outside, and 0.3 and 0.2 before the age band's variance included the posteriors'
    # own); with no time it
    # stops at once and keeps the plain bands, and the notes say so.
    table = _age_sex_table(1.0)
    quotas = [
        Quota((Condition("age", "between", (16, 40)),), 3, 5, "16-39"),
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
    ]
    result = select_panel(
        table, 12, quotas, rng=np.random.default_rng(2), max_outside=0.2, max_seconds=0.0
    )
    assert any("tightened bands stopped after max_seconds=0" in note for note in result.notes)
    assert all(o.outside_level == math.inf for o in result.quotas)
    for outcome, quota in zip(result.quotas, quotas, strict=True):
        assert quota.min - 1e-6 <= outcome.expected <= quota.max + 1e-6
    unbounded = select_panel(table, 12, quotas, rng=np.random.default_rng(2), max_outside=0.2)
    assert not any("tightened bands stopped" in note for note in unbounded.notes)
    assert [o.outside_level for o in unbounded.quotas] == pytest.approx([1.0, 0.3])


class _Clock:
    """A stand-in for the ``time`` module that :mod:`panel` reads: ``monotonic()``
    advances ``step`` seconds per call (0: a machine infinitely fast) and counts calls."""

    def __init__(self, step: float) -> None:
        self.step, self.now, self.calls = step, 0.0, 0

    def monotonic(self) -> float:
        self.calls += 1
        self.now += self.step
        return self.now


def _seeded_run(monkeypatch: pytest.MonkeyPatch, clock: _Clock, **options: object):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(limits, "time", clock)
    table = _age_sex_table(3.0)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
        Quota((Condition("age", "between", (16, 40)),), 2, 6, "16-39"),
    ]
    return select_panel(
        table, 12, quotas, rng=np.random.default_rng(7), reserves=3, merge=False, **options
    )


def test_the_seed_reproduces_the_panel_whatever_the_machines_speed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Issue 14: "the seed that reproduces the draw". The optimisation stops at a
    # deterministic work limit (rounds, MILP nodes), not at the clock, so a slow or busy
    # machine draws the same panel, probabilities and reserves from the same seed. Without
    # warm-start panels this problem needs about 30 covering and pricing rounds to
    # converge; the default limit is lowered to 15 so that the limit, not convergence,
    # ends both runs. The old code stopped at max_seconds, i.e. at a different round on
    # the fast clock below, and drew another lottery.
    monkeypatch.setattr(maximin, "_WARM_PANELS", 0)
    monkeypatch.setitem(select_panel.__kwdefaults__, "options", PanelOptions(max_rounds=15))
    frozen = _Clock(0.0)
    first = _seeded_run(monkeypatch, frozen, max_seconds=100.0)
    # The clock now runs so fast that 100 s pass at the 24th reading. The converged run
    # reads it about 31 times (once per round and at the start), so a wall-clock budget
    # stops it near round 23, short of convergence, and draws another lottery; the work
    # limit ends the run at round 15 (about 16 readings), before the safety net fires.
    fast = _Clock(100.0 / 24)
    second = _seeded_run(monkeypatch, fast, max_seconds=100.0)
    assert fast.now < 100.0
    assert first.iterations == second.iterations >= 15
    assert any("rounds (the work limit)" in note for note in first.notes)
    assert not any("max_seconds" in note for note in first.notes + second.notes)
    np.testing.assert_array_equal(first.rows, second.rows)
    np.testing.assert_array_equal(first.reserves, second.reserves)
    np.testing.assert_array_equal(first.probabilities, second.probabilities)
    assert first.lottery_draw == second.lottery_draw
    assert [str(note) for note in first.notes] == [str(note) for note in second.notes]


def test_the_wall_clock_safety_net_says_the_draw_may_not_be_reproducible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # When max_seconds fires before the work limit, the run still ends with a valid
    # lottery, and the notes say where it stopped depends on the load.
    monkeypatch.setattr(maximin, "_WARM_PANELS", 0)
    stopped = _seeded_run(monkeypatch, _Clock(5.0), max_seconds=20.0)
    safety = [note for note in stopped.notes if "may not be reproducible" in note]
    assert len(safety) == 1 and "max_seconds=20" in safety[0]
    assert not any("rounds (the work limit)" in note for note in stopped.notes)
    mu = stopped.support @ stopped.type_posteriors
    assert np.all(mu >= np.array([4, 2]) - 1e-6) and np.all(mu <= np.array([8, 6]) + 1e-6)
    # A run that the work limit ends (the clock frozen) carries no such note.
    limited = _seeded_run(monkeypatch, _Clock(0.0), max_seconds=20.0, max_rounds=10)
    assert not any("may not be reproducible" in note for note in limited.notes)
    assert any("work limit" in note for note in limited.notes)


def test_a_safety_net_firing_in_the_merged_types_check_says_exact_types_were_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first feasibility check runs on merged types; when max_seconds passes while
    # HiGHS is still deciding it, select_panel falls back to exact types. That run's
    # lottery is not the one a run within the clock builds (merged types), so the result
    # must say so and that the draw may not be reproducible; it used to say neither.
    clock = _Clock(0.0)
    monkeypatch.setattr(limits, "time", clock)
    original = _Problem.decide
    checked = []

    def slow_merged_check(self, active=None, *, deadline=None):  # type: ignore[no-untyped-def]
        if self.least is None or deadline is None:
            return original(self, active, deadline=deadline)
        # The merged MILP outlasts the time left: the clock passes the deadline and
        # HiGHS (really) stops at its time limit before deciding.
        clock.now = deadline + 1.0
        floor = limits.DECIDE_FLOOR
        monkeypatch.setattr(limits, "DECIDE_FLOOR", 1e-9)
        try:
            decided = original(self, active, deadline=deadline)
        finally:
            monkeypatch.setattr(limits, "DECIDE_FLOOR", floor)
        checked.append(decided)
        return decided

    monkeypatch.setattr(_Problem, "decide", slow_merged_check)
    table = _age_sex_table(3.0)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
        Quota((Condition("age", "between", (16, 40)),), 2, 6, "16-39"),
    ]
    result = select_panel(table, 12, quotas, rng=np.random.default_rng(7), max_seconds=30.0)
    assert checked == [None]
    fallback = [note for note in result.notes if "merged candidate types" in note]
    assert len(fallback) == 1 and "max_seconds=30" in fallback[0]
    assert "exact types" in fallback[0]
    assert sum("may not be reproducible" in note for note in result.notes) == 1
    # exact types: one per distinct posterior vector, and every panel meets the bands
    assert len(result.type_posteriors) == len(np.unique(result.type_posteriors, axis=0))
    mu = result.support @ result.type_posteriors
    assert np.all(mu >= np.array([4, 2]) - 1e-6) and np.all(mu <= np.array([8, 6]) + 1e-6)
    # Within the clock the merged check decides, and no such note appears.
    monkeypatch.setattr(_Problem, "decide", original)
    calm = select_panel(table, 12, quotas, rng=np.random.default_rng(7), max_seconds=30.0)
    assert not any("merged candidate types" in n or "reproducible" in n for n in calm.notes)
    assert len(calm.type_posteriors) < len(result.type_posteriors)


def test_shared_variances_are_the_replicate_variance_at_a_random_panel() -> None:
    # The tightened bands add the posteriors' own uncertainty, linearised at a panel
    # drawn at random: sum_t x_t shared_t equals Var_r(expected count) at x = size/N * n_t
    # (the tangent touches there), and a pool-wide shift of the posteriors is felt by
    # every seat.
    from reconstruction.algorithms.panel.bands import _shared_variances
    from reconstruction.algorithms.panel.posteriors import _merge_types
    from reconstruction.algorithms.queries import condition_posteriors

    table = _age_sex_table(3.0)
    wheres = [[Condition("age", "between", (16, 40))], [Condition("sex", "in", {0})]]
    posteriors = condition_posteriors(table, wheres, n_boot=100, rng=np.random.default_rng(3))
    candidates = np.arange(300)
    matrix = np.column_stack([p.values for p in posteriors])
    type_of, _, _, _ = _merge_types(matrix, 0.0)
    sizes = np.bincount(type_of).astype(float)
    size = 12
    shared = _shared_variances(posteriors, candidates, type_of, sizes, size)
    typical = size / 300 * sizes
    for j, post in enumerate(posteriors):
        totals = post.replicates(candidates).sum(axis=1) * size / 300
        assert typical @ shared[:, j] == pytest.approx(float(totals.var(ddof=1)), rel=1e-9)
        assert typical @ shared[:, j] > 0
    # the age band's expected count varies over the replicates far more than sex's
    assert typical @ shared[:, 0] > 3 * (typical @ shared[:, 1])


def test_tightened_bands_and_expected_outside_include_the_posteriors_uncertainty() -> None:
    # The realised count's variance is the Bernoulli variance plus the replicate variance
    # of the expected count (as ci95 takes it). The tightened lottery keeps every panel's
    # expected seats outside, with that variance (linearised shared part), within its
    # level, and the result's expected_outside uses the same total variance; with the
    # Bernoulli variance alone the age band's realised counts fell outside more often
    # than stated (bench_panel, ages from noisy whole years).
    from reconstruction.algorithms.panel.bands import _expected_outside, _shared_variances

    table = _age_sex_table(3.0)
    quotas = [
        Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
        Quota((Condition("age", "between", (16, 40)),), 2, 6, "16-39"),
    ]
    size = 12
    tight = select_panel(table, size, quotas, rng=np.random.default_rng(1), max_outside=0.2)
    from reconstruction.algorithms.queries import condition_posteriors

    posteriors = condition_posteriors(
        table, [q.where for q in quotas], n_boot=100, rng=np.random.default_rng(1)
    )
    shared = _shared_variances(
        posteriors,
        tight.candidates,
        tight.type_of,
        np.bincount(tight.type_of).astype(float),
        size,
    )
    p = tight.type_posteriors
    mu = tight.support @ p
    var = tight.support @ (p * (1 - p) + shared)
    for j, (quota, outcome) in enumerate(zip(quotas, tight.quotas, strict=True)):
        outside = _normal_outside(mu[:, j], var[:, j], quota.min, quota.max, size)
        assert np.all(outside <= outcome.outside_level + 1e-6), (quota.label, outside.max())
        rows = tight.rows
        values = posteriors[j].values[rows]
        replicate = float(posteriors[j].replicates(rows).sum(axis=1).var(ddof=1))
        binomial = float((values * (1 - values)).sum())
        assert replicate > 0
        assert outcome.expected_outside == pytest.approx(
            _expected_outside(outcome.expected, binomial + replicate, quota.min, quota.max, size)
        )
        assert outcome.expected_outside > _expected_outside(
            outcome.expected, binomial, quota.min, quota.max, size
        )


def test_systematic_rounding_never_gives_a_type_more_seats_than_candidates() -> None:
    # The warm start rounds herded targets that may sum below the panel size; scaled up,
    # a type of one candidate got two seats (bench_panel drew that panel and failed:
    # "Cannot take a larger sample than population").
    from reconstruction.algorithms.panel.warm_start import _systematic

    x = np.array([1.0, 1.0, 0.5])
    order = np.arange(3)
    uncapped = _systematic(x, 3, order, 0.9)
    assert uncapped.tolist() == [2, 1, 0]  # the defect, without caps
    capped = _systematic(x, 3, order, 0.9, np.array([1.0, 1.0, 5.0]))
    assert capped.tolist() == [1, 1, 1]
    rng = np.random.default_rng(4)
    for _ in range(200):
        sizes = rng.integers(1, 4, size=12).astype(float)
        target = rng.random(12) * sizes
        size = int(rng.integers(1, int(sizes.sum()) + 1))
        panel = _systematic(target, size, rng.permutation(12), float(rng.random()), sizes)
        assert panel.sum() == size and np.all(panel <= sizes) and np.all(panel >= 0)


@pytest.mark.parametrize("fixing", [False, True])
def test_the_live_master_lp_is_the_maximin_master(fixing: bool) -> None:
    # The master LP kept in HiGHS between rounds (columns added, primal simplex from the
    # last basis) must solve the same programme as _maximin_master's fresh linprog: the
    # same optimal level, a feasible mixture reaching it, and dual prices that certify it
    # (they drive the pricing), also with LEXIMIN's fixed types.
    from reconstruction.algorithms.panel.maximin import _FIX_TOL, _LiveMaster, _maximin_master

    rng = np.random.default_rng(7)
    t, size = 40, 6
    sizes = rng.integers(1, 5, size=t).astype(float)

    def panels(count: int) -> list[np.ndarray]:
        out = []
        for _ in range(count):
            x = np.zeros(t, dtype=np.int64)
            x[rng.choice(t, size=size, replace=False)] = 1
            out.append(x)
        return out

    columns = panels(30)
    fixed_mask = np.zeros(t, dtype=bool)
    fixed = np.zeros(t)
    if fixing:
        fixed_mask[:5] = True
        fixed[:5] = (
            0.5
            * _maximin_master(
                np.asarray(columns) / sizes, np.ones(t, bool), fixed, np.zeros(t, bool)
            )[0]
        )
    free = ~fixed_mask
    live = _LiveMaster.build(sizes, free, fixed, fixed_mask, b"")
    for _ in range(4):
        live.add(columns)
        a = np.asarray(columns, dtype=np.float64) / sizes
        level, weights, duals, _ = live.solve(free, fixed_mask)
        reference, _, reference_duals, _ = _maximin_master(a, free, fixed, fixed_mask)
        assert level == pytest.approx(reference, abs=1e-9)
        pi = weights @ a
        assert weights.min() >= -1e-12 and weights.sum() == pytest.approx(1.0, abs=1e-9)
        assert pi[free].min() >= level - 1e-9
        assert np.all(pi[fixed_mask] >= fixed[fixed_mask] - _FIX_TOL - 1e-9)
        for y in (duals, reference_duals):  # strong duality: the prices' bound is the level
            assert y[free].sum() == pytest.approx(1.0, abs=1e-9)
            assert float((a @ y).max()) - float(y[fixed_mask] @ (fixed[fixed_mask] - _FIX_TOL)) == (
                pytest.approx(level, abs=1e-9)
            )
        columns = columns + panels(10)


def _exact_outside(p: np.ndarray, low: int, high: int) -> float:
    """Exact expected seats outside [low, high] of a Poisson-binomial count (convolution)."""
    pmf = np.array([1.0])
    for q in p:
        pmf = np.convolve(pmf, [1.0 - q, q])
    k = np.arange(pmf.size)
    return float(pmf @ (np.maximum(low - k, 0) + np.maximum(k - high, 0)))


def test_expected_outside_matches_the_exact_poisson_binomial_figure() -> None:
    # Panels of 30 seats with posteriors spread like those of age bands from noisy whole
    # years (variance 1.5-7), the expected count at the band's centre, half-way to an
    # edge and on it (bands of +-2 seats, bench_panel's). The continuity-corrected normal
    # is 1.01-1.26 times the exact expectation (conservative; the most at small variance
    # with the mean at the centre); the form with half a seat added to the distance from
    # the edge gave 0.50-0.78 times it.
    from reconstruction.algorithms.panel.bands import _expected_outside

    rng = np.random.default_rng(3)
    checked = 0
    for spread in (0.2, 0.5, 1.0, 2.0):
        for _ in range(4):
            p = rng.beta(spread, spread, size=30)
            mu, var = float(p.sum()), float((p * (1 - p)).sum())
            if var < 1.5:
                continue
            centre = round(mu)
            for low in (centre - 2, centre - 1, centre):
                exact = _exact_outside(p, low, low + 4)
                ours = _expected_outside(mu, var, low, low + 4, 30)
                assert 0.98 * exact <= ours <= 1.3 * exact, (spread, var, low, exact, ours)
                checked += 1
    assert checked >= 24
