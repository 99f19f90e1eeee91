"""The reporting grid's discrete laws and their channels (issue 31).

Each law's probabilities are checked against a direct sum of its mass function, its
vectorised sampler (the simulated residents') by a chi-square test on grid counts
(seeded), and the engine's channels against exact enumeration over the rounding and the
noise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privacy.mechanisms.grid import (
    DiscreteGaussian,
    DiscreteLaplace,
    DiscreteStaircase,
    DiscreteUniform,
    Grid,
    GridGaussian,
    GridLaplace,
    GridRetention,
    GridStaircase,
    GridUniform,
    default_resolution,
    grid_noise,
    staircase_steps,
)
from privacy.mechanisms.noise import AdditiveLaplace


def mass(law, k):
    """The law's mass function written out (not through its tails)."""
    k = np.abs(np.asarray(k, dtype=np.float64))
    if isinstance(law, DiscreteLaplace):
        w = np.exp(-k / float(law.t))
    elif isinstance(law, DiscreteGaussian):
        w = np.exp(-k * k / (2 * float(law.sigma2)))
    elif isinstance(law, DiscreteUniform):
        w = (k <= law.half).astype(float)
    else:
        j, s = np.floor(k / law.d), k % law.d
        w = np.exp(-float(law.epsilon) * (j + (s >= law.r)))
    return w


def normalised(law, lim=4000):
    k = np.arange(-lim, lim + 1)
    w = mass(law, k)
    return k, w / w.sum()


LAWS = [
    DiscreteLaplace(Fraction(5, 2)),
    DiscreteLaplace(Fraction(1, 3)),
    DiscreteGaussian(Fraction(9, 4)),
    DiscreteGaussian(Fraction(1, 5)),
    DiscreteUniform(7),
    DiscreteStaircase(Fraction(1), 6, 2),
    DiscreteStaircase(Fraction(4), 1, 1),
]


@pytest.mark.parametrize("law", LAWS, ids=repr)
def test_each_laws_cdf_tails_and_std_are_its_mass_function(law):
    k, p = normalised(law)
    cdf = np.cumsum(p)
    np.testing.assert_allclose(law.cdf(k[3900:4100].astype(float)), cdf[3900:4100], atol=1e-12)
    s = np.arange(1, 60, dtype=float)
    tails = np.array([p[k >= v].sum() for v in s])
    np.testing.assert_allclose(law.tail(s), tails, atol=1e-13)
    # sum_{u >= s} P(K >= u) = sum_{k >= s} (k - s + 1) P(K = k)
    np.testing.assert_allclose(
        law.tail2(s), [((k - v + 1) * p)[k >= v].sum() for v in s], atol=1e-11
    )
    assert law.std == pytest.approx(math.sqrt((k * k * p).sum()), rel=1e-9)


@pytest.mark.parametrize("law", LAWS, ids=repr)
def test_each_vectorised_sampler_follows_its_law_chi_square(law):
    rng = np.random.default_rng(20261127)
    draws = law.sample((60_000,), rng)
    assert np.all(draws == np.rint(draws))
    k, p = normalised(law)
    keep = p * draws.size >= 5  # cells with enough expectation; the rest pooled
    observed = np.array([(draws == v).sum() for v in k[keep]] + [(~np.isin(draws, k[keep])).sum()])
    expected = np.append(p[keep], p[~keep].sum()) * draws.size
    if expected[-1] < 5:
        observed[-2] += observed[-1]
        expected[-2] += expected[-1]
        observed, expected = observed[:-1], expected[:-1]
    statistic = float(((observed - expected) ** 2 / expected).sum())
    assert statistic < stats.chi2.ppf(1 - 1e-3, observed.size - 1), statistic


GRID_MODELS = [
    GridLaplace(2.5, origin=16.0, resolution=1.0),
    GridGaussian(1.3, origin=0.0, resolution=0.5),
    GridUniform(3.0, origin=0.0, resolution=0.5),
    GridStaircase(1.0, 3.0, origin=0.0, resolution=0.5),
    GridRetention(0.6, 0.0, 10.0, origin=0.0, resolution=0.5),
]


def enumerated_point_channel(model, x, edges):
    """Exact enumeration: rounding down or up, then every noise step within 400."""
    grid = model.grid
    u = (x - grid.origin) / grid.resolution
    below = math.floor(u)
    rows = np.zeros(len(edges) - 1)
    ks = np.arange(-400, 401)
    if isinstance(model, GridRetention):
        law_p = (ks == 0).astype(float)
    else:
        law = model.law()
        law_p = law.cdf(ks.astype(float)) - law.cdf(ks - 1.0)
    for j, weight in ((below, 1 - (u - below)), (below + 1, u - below)):
        if weight == 0:
            continue
        values = grid.values(j + ks)
        bins = np.clip(np.searchsorted(edges[1:-1], values, side="right"), 0, len(edges) - 2)
        np.add.at(rows, bins, weight * law_p)
    if isinstance(model, GridRetention):
        replaced = np.zeros(len(edges) - 1)
        values = grid.values(np.arange(model.points))
        bins = np.searchsorted(edges[1:-1], values, side="right")
        np.add.at(replaced, bins, 1.0 / model.points)
        rows = model.retain * rows + (1 - model.retain) * replaced
    return rows


@pytest.mark.parametrize("model", GRID_MODELS, ids=lambda m: type(m).__name__)
def test_the_engines_channels_are_the_exact_discrete_law(model):
    # Edges on grid points, between them and off the range; bins are [e, e').
    edges = np.array([-3.0, 0.0, 1.0, 2.25, 3.5, 4.0, 6.1, 8.0, 10.0, 13.0])
    points = np.array([0.0, 0.2, 1.0, 3.75, 5.3, 9.9, 10.0])
    channel = model.point_channel(points, edges)
    for row, x in zip(channel, points, strict=True):
        np.testing.assert_allclose(row, enumerated_point_channel(model, x, edges), atol=1e-12)
    # A true value uniform on an interval: the average of point channels over it.
    true_edges = np.array([0.0, 1.5, 4.0, 10.0])
    channel = model.interval_channel(true_edges, edges)
    for i in range(3):
        xs = np.linspace(true_edges[i], true_edges[i + 1], 4001)
        rows = model.point_channel(xs, edges)
        average = (rows[:-1] + rows[1:]).mean(axis=0) / 2  # trapezoid: piecewise linear in x
        np.testing.assert_allclose(channel[i], average, atol=1e-6)


@pytest.mark.parametrize("model", GRID_MODELS, ids=lambda m: type(m).__name__)
def test_every_simulated_report_lands_on_the_grid_within_the_reported_bounds(model):
    rng = np.random.default_rng(3)
    values = rng.uniform(0.0, 10.0, 20_000)
    reports = model.distort(values, rng)
    k, on = model.grid.index(reports)
    assert on.all()
    np.testing.assert_array_equal(reports, model.grid.values(k))  # the exact double
    low, high = model.reported_bounds(0.0, 10.0)
    assert reports.min() >= low and reports.max() <= high


def test_randomised_rounding_is_unbiased():
    grid = Grid(16.0, 0.5)
    rng = np.random.default_rng(5)
    x = np.full(200_000, 16.3)
    rounded = grid.values(grid.round_randomly(x, rng))
    assert set(np.unique(rounded)) == {16.0, 16.5}
    assert rounded.mean() == pytest.approx(16.3, abs=4 * 0.5 * 0.5 / math.sqrt(x.size))


def test_the_default_resolution_is_step_else_a_power_of_ten_else_a_ten_thousandth():
    assert default_resolution(16, 100, 1.0) == 1.0
    assert default_resolution(16, 100, None) == 0.001
    assert default_resolution(0, 20000, None) == 1.0
    assert default_resolution(0, 1 / 3, None) == pytest.approx(1 / 3 / 10_000)


def test_the_staircase_grid_covers_its_sensitivity_in_whole_steps():
    assert staircase_steps(10.0, 0.5, 2.0) == (20, 5)  # gamma(2) = 0.269
    assert staircase_steps(1.0, 1.0, 4.0)[0] == 1
    model = GridStaircase(2.0, 84.0, origin=16.0, resolution=1.0)
    assert model.local_epsilon(16.0, 100.0) == 2.0
    assert model.local_epsilon(16.0, 101.0) is None


def test_grid_noise_keeps_the_mechanism_and_publishes_exact_parameters():
    model = grid_noise(AdditiveLaplace(0.1), 16.0, 0.001)
    assert isinstance(model, AdditiveLaplace) and isinstance(model, GridLaplace)
    scheme = model.scheme()
    assert scheme["law"] == {"name": "discrete_laplace", "scale": "100"}  # 0.1 / 0.001
    assert model.epsilon_per_step() == pytest.approx(0.01)
    assert model.std == pytest.approx(0.1 * math.sqrt(2), rel=1e-4)
