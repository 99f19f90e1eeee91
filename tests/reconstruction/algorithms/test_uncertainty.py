"""95% intervals: coverage over simulated surveys with a known truth, and reproducibility."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from privacy.mechanisms import (
    distort_codes,
    manual_negative,
    negative_uniform,
    randomised_response,
)
from reconstruction.algorithms import em_as, eq, nstops, nstops_ii, nstops_mle, reported_counts

SIMULATIONS = 400


def _coverage(method: str) -> np.ndarray:
    """Share of simulated surveys whose interval covers the true count, per category."""
    rng = np.random.default_rng(2024)
    truth = np.array([0.4, 0.3, 0.2, 0.1])
    channel = randomised_response(4, 0.6) if method != "nstops" else negative_uniform(4)
    n = 2_000
    hits = np.zeros(4)
    for _ in range(SIMULATIONS):
        codes = rng.choice(4, n, p=truth)
        counts = reported_counts(distort_codes(codes, channel, rng), 4)
        true_counts = np.bincount(codes, minlength=4)
        if method == "em_as":
            result = em_as(counts, channel, rng=rng)
        elif method == "eq":
            result = eq(counts, channel)
        else:
            result = nstops(counts)
        hits += (result.ci95[:, 0] <= true_counts) & (true_counts <= result.ci95[:, 1])
    return hits / SIMULATIONS


def test_em_as_bootstrap_interval_covers_about_95_percent() -> None:
    coverage = _coverage("em_as")
    assert 0.92 <= coverage.mean() <= 0.98, coverage
    assert np.all(coverage >= 0.90), coverage


def test_linear_intervals_cover_about_95_percent() -> None:
    for method in ("eq", "nstops"):
        coverage = _coverage(method)
        assert 0.92 <= coverage.mean() <= 0.98, (method, coverage)


def test_same_input_gives_the_same_interval() -> None:
    counts = [300, 250, 250, 200]
    channel = randomised_response(4, 0.5)
    first = em_as(counts, channel).ci95
    assert_allclose(em_as(counts, channel).ci95, first, atol=0)
    assert_allclose(nstops_ii([30, 20, 25, 25]).ci95, nstops_ii([30, 20, 25, 25]).ci95, atol=0)
    other = nstops_ii([30, 20, 25, 25], rng=np.random.default_rng(99)).ci95
    assert not np.array_equal(other, nstops_ii([30, 20, 25, 25]).ci95)


def test_intervals_contain_the_estimate_and_shrink_with_n() -> None:
    channel = randomised_response(3, 0.7)
    small = em_as([50, 30, 20], channel)
    large = em_as([5000, 3000, 2000], channel)
    for result in (small, large):
        assert np.all(result.ci95[:, 0] <= result.counts + 1e-9)
        assert np.all(result.counts <= result.ci95[:, 1] + 1e-9)
    relative_small = np.diff(small.ci95, axis=1)[:, 0] / 100
    relative_large = np.diff(large.ci95, axis=1)[:, 0] / 10_000
    assert np.all(relative_large < relative_small / 5)  # ~ 1/sqrt(100) = 1/10


def test_calibrated_interval_covers_about_95_percent_when_q_is_estimated() -> None:
    # 000, Section 4.1: rows of Q estimated from ~100 calibration pairs per category.
    # Intervals that take Q as known cover far less than 95%; resampling the pairs too
    # brings the coverage back.
    rng = np.random.default_rng(31)
    truth = np.array([0.4, 0.3, 0.2, 0.1])
    manual = np.array(
        [[0, 0.15, 0.45, 0.40], [0.10, 0, 0.35, 0.55], [0.2, 0.3, 0, 0.5], [0.3, 0.5, 0.2, 0]]
    )
    simulations, n = 100, 2_000
    hits = {"calibrated": np.zeros(4), "known": np.zeros(4)}
    for _ in range(simulations):
        codes = rng.choice(4, n, p=truth)
        counts = reported_counts(distort_codes(codes, manual, rng), 4)
        calibration_true = np.repeat(np.arange(4), 100)
        pairs = np.stack([calibration_true, distort_codes(calibration_true, manual, rng)], 1)
        channel = manual_negative(4, pairs)
        true_counts = np.bincount(codes, minlength=4)
        for name, extra in (("calibrated", {"calibration_pairs": pairs}), ("known", {})):
            result = nstops_mle(counts, channel, tol=1e-9, rng=rng, **extra)  # type: ignore[arg-type]
            low, high = result.ci95[:, 0], result.ci95[:, 1]
            hits[name] += (low <= true_counts) & (true_counts <= high)
    coverage = {name: hit / simulations for name, hit in hits.items()}
    assert 0.88 <= coverage["calibrated"].mean() <= 0.99, coverage
    assert np.all(coverage["calibrated"] >= 0.85), coverage
    assert coverage["known"].mean() < 0.75, coverage


def test_em_as_with_calibration_pairs_widens_the_interval() -> None:
    channel_true = randomised_response(3, 0.6)
    rng = np.random.default_rng(8)
    calibration_true = np.repeat(np.arange(3), 80)
    pairs = np.stack([calibration_true, distort_codes(calibration_true, channel_true, rng)], 1)
    tally = np.zeros((3, 3))
    np.add.at(tally, (pairs[:, 0], pairs[:, 1]), 1)
    channel = tally / tally.sum(axis=1, keepdims=True)
    counts = [900, 700, 400]
    known = em_as(counts, channel)
    calibrated = em_as(counts, channel, calibration_pairs=pairs)
    np.testing.assert_allclose(calibrated.counts, known.counts)
    width = lambda r: np.diff(r.ci95, axis=1)[:, 0]  # noqa: E731
    assert np.all(width(calibrated) > 1.3 * width(known))
    assert any("calibration pairs" in note for note in calibrated.notes)


# --------------------------------------------------------------------------- percentile rule
# Every bootstrap percentile interval of the product goes through percentile_interval. Its
# "order" rule is the (B+1) alpha-th order statistics (Davison and Hinkley 1997, Section
# 5.2), interpolated on the normal scale (their eq. 5.8); the product's rule
# (PERCENTILE_RULE) stays numpy's interpolated quantiles (README: why). Each "order" check
# below fails with numpy's interpolation, which sits about one order statistic inside.


def test_order_rule_is_the_b_plus_1_alpha_order_statistics() -> None:
    from reconstruction.algorithms.uncertainty import percentile_interval

    # B = 199: (B+1) 0.025 = 5 and (B+1) 0.975 = 195 are whole, so the bounds are the 5th
    # and 195th smallest replicates (numpy's default gives 5.95 and 194.05).
    replicates = np.random.default_rng(3).permutation(np.arange(1.0, 200.0))
    assert_allclose(percentile_interval(replicates, rule="order"), [5.0, 195.0])
    assert_allclose(percentile_interval(replicates, rule="interpolated"), [5.95, 194.05])
    # B = 999: the 25th and 975th; level 0.9 on B = 99: the 5th and 95th.
    replicates = np.random.default_rng(4).permutation(np.arange(1.0, 1000.0)) * 0.5
    assert_allclose(percentile_interval(replicates, rule="order"), [12.5, 487.5])
    assert_allclose(percentile_interval(np.arange(1.0, 100.0), 0.9, rule="order"), [5.0, 95.0])


def test_order_rule_interpolates_on_the_normal_scale() -> None:
    from scipy import stats

    from reconstruction.algorithms.uncertainty import percentile_interval

    # B = 100 (the panel's n_boot): (B+1) 0.025 = 2.525, between the 2nd and 3rd smallest;
    # the upper bound between the 98th and 99th (D&H eq. 5.8).
    replicates = np.arange(1.0, 101.0) ** 2
    z = stats.norm.ppf
    share = (z(0.025) - z(2 / 101)) / (z(3 / 101) - z(2 / 101))
    low = 4.0 + share * (9.0 - 4.0)
    share_high = (z(0.975) - z(98 / 101)) / (z(99 / 101) - z(98 / 101))
    high = 98.0**2 + share_high * (99.0**2 - 98.0**2)
    assert_allclose(percentile_interval(replicates, rule="order"), [low, high], rtol=1e-12)
    # On the normal scale the weight is not the linear 0.525 (it is about 0.567).
    assert 0.55 < share < 0.6


def test_percentile_interval_along_an_axis_with_missing_and_few_replicates() -> None:
    from reconstruction.algorithms.uncertainty import percentile_interval

    columns = np.stack([np.arange(1.0, 200.0), 10.0 * np.arange(1.0, 200.0)], axis=1)
    expected = [[5.0, 195.0], [50.0, 1950.0]]
    assert_allclose(percentile_interval(columns, rule="order"), expected)
    assert_allclose(percentile_interval(columns.T, axis=1, rule="order"), expected)
    assert_allclose(percentile_interval(columns), np.percentile(columns, [2.5, 97.5], axis=0).T)
    columns[7, 1] = np.nan
    for rule in ("order", "interpolated"):
        result = percentile_interval(columns, rule=rule)
        assert np.isfinite(result[0]).all()
        assert np.isnan(result[1]).all()
        # No replicates (every one non-finite and dropped): NaN bounds, not an IndexError.
        assert np.isnan(percentile_interval(np.array([]), rule=rule)).all()
    # Fewer than 39 replicates: no (B+1) 0.025-th order statistic; the extremes.
    assert_allclose(percentile_interval(np.array([3.0, 1.0, 2.0]), rule="order"), [1.0, 3.0])
    with pytest.raises(ValueError, match="rule"):
        percentile_interval(columns, rule="bca")  # type: ignore[arg-type]


def test_every_bootstrap_path_takes_the_shared_percentile_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reconstruction.algorithms import uncertainty
    from reconstruction.algorithms.queries import naive_count_result
    from reconstruction.algorithms.uncertainty import bootstrap_ci, simulate_reported_counts

    assert uncertainty.PERCENTILE_RULE == "interpolated"
    draws = np.random.default_rng(11).binomial(10**6, 0.37, size=199).astype(float)
    ordered = np.sort(draws)
    counts = np.array([5000.0, 3000.0, 2000.0])
    channel = np.eye(3)
    p = counts / counts.sum()
    batch = simulate_reported_counts(
        10_000, p, channel, replicates=199, rng=np.random.default_rng(5)
    )
    batch_ordered = np.sort(batch, axis=0)

    def intervals() -> tuple[tuple[float, float], np.ndarray]:
        naive = naive_count_result(370_000, 10**6, n_boot=199, rng=np.random.default_rng(11))
        parametric = bootstrap_ci(
            counts, channel, p, lambda b: b, replicates=199, rng=np.random.default_rng(5)
        )
        return naive.ci95, parametric

    naive, parametric = intervals()
    assert_allclose(naive, np.percentile(draws, [2.5, 97.5]))
    assert_allclose(parametric, np.percentile(batch, [2.5, 97.5], axis=0).T)
    # One switch moves both: the naive count's 199 binomial replicates and bootstrap_ci's
    # 199 multinomial ones give their 5th / 195th order statistics.
    monkeypatch.setattr(uncertainty, "PERCENTILE_RULE", "order")
    naive, parametric = intervals()
    assert naive == (ordered[4], ordered[194])
    assert_allclose(parametric, np.stack([batch_ordered[4], batch_ordered[194]], axis=1))
