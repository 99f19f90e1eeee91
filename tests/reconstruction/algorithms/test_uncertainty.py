"""95% intervals: coverage over simulated surveys with a known truth, and reproducibility."""

import numpy as np
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
