"""Reconstruction round trips on the reporting grid (issue 31): values distorted with each
grid law (randomised rounding + exact discrete noise, as the clients do) and reconstructed
with the engine's channels from the same discrete law give back the true distribution, the
true share below a threshold and the true mean, within their sampling error."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.mechanisms.grid import (
    GridGaussian,
    GridLaplace,
    GridRetention,
    GridStaircase,
    GridUniform,
)
from reconstruction.algorithms.continuous import reconstruct_continuous
from reconstruction.algorithms.queries import Condition, ContinuousAttribute, count_joint, mean

LOW, HIGH = 16.0, 100.0
MODELS = {
    "laplace": GridLaplace(5.0, origin=LOW, resolution=0.001),
    "gaussian": GridGaussian(6.0, origin=LOW, resolution=0.001),
    "uniform": GridUniform(10.0, origin=LOW, resolution=0.001),
    "staircase": GridStaircase(2.0, 84.0, origin=LOW, resolution=0.001),
    "retention": GridRetention(0.6, LOW, HIGH, origin=LOW, resolution=0.001),
    "laplace_whole_years": GridLaplace(5.0, origin=LOW, resolution=1.0),
}


def _ages(rng: np.random.Generator, n: int, whole: bool) -> np.ndarray:
    ages = np.clip(rng.gamma(6.0, 7.0, n) + 16.0, LOW, HIGH)
    return np.floor(ages) if whole else ages


@pytest.mark.parametrize("name", sorted(MODELS))
def test_distribution_share_and_mean_come_back_from_grid_reports(name):
    model = MODELS[name]
    whole = name.endswith("whole_years")
    step = 1.0 if whole else None
    rng = np.random.default_rng(31)
    n = 20_000
    ages = _ages(rng, n, whole)
    reports = model.distort(ages, rng)
    _, on = model.grid.index(reports)
    assert on.all()
    result = reconstruct_continuous(
        reports, model, LOW, HIGH, thresholds=[30.0], rng=rng, n_boot=50, step=step
    )
    below = result.edges[1:] <= 30.0 + (0.5 if whole else 0.0)
    share = float(result.proportions[below].sum())
    truth = float(np.mean(ages <= 30.0))
    assert abs(share - truth) < 0.03, (share, truth)
    table = {"age": ContinuousAttribute(reports, model, LOW, HIGH, step=step)}
    count = count_joint(table, [Condition("age", "lte", 30.0)], rng=rng)
    low, high = count.ci95
    assert abs(count.estimate / n - truth) < 0.03
    assert low - 0.02 * n <= truth * n <= high + 0.02 * n
    average = mean(table, "age", [], rng=rng)
    assert abs(average.estimate - ages.mean()) < 0.6, (average.estimate, ages.mean())
