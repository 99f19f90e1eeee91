"""95% intervals: coverage over simulated surveys with a known truth, and reproducibility."""

import numpy as np
from numpy.testing import assert_allclose

from privacy.mechanisms import distort_codes, negative_uniform, randomised_response
from reconstruction.algorithms import em_as, eq, nstops, nstops_ii, reported_counts

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
    other = em_as(counts, channel, rng=np.random.default_rng(99)).ci95
    assert not np.array_equal(other, first)


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
