"""Rules of privacy/mechanisms/grid.py that test_grid.py does not reach (issue 33: written
against the mutants that survived grid.py's first mutation run): the exact grid in
doubles, the published schemes, the wide discrete Gaussian, and the input checks."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from privacy.mechanisms.grid import (
    SNAP,
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
    PointMass,
    decimal,
    default_resolution,
    grid_noise,
    staircase_steps,
)
from privacy.mechanisms.messages import InputError
from privacy.mechanisms.noise import (
    AdditiveGaussian,
    AdditiveLaplace,
    AdditiveStaircase,
    AdditiveUniform,
    NoNoise,
    RetentionReplacement,
)


def test_a_value_within_the_snap_of_a_grid_point_is_that_point_and_one_beyond_is_not():
    grid = Grid(16.0, 0.25)
    k, on = grid.index([16.0, 16.75, 16.75 + 0.5 * SNAP * 0.25, 16.75 + 2 * SNAP * 0.25, 16.6])
    assert k.tolist() == [0, 3, 3, 3, 2]  # the nearest grid index (16.6 is nearer 16.5)
    assert on.tolist() == [True, True, True, False, False]
    assert k.dtype == np.int64


def test_the_first_grid_index_at_or_above_an_edge_is_exact_in_doubles():
    # In doubles 0.1 + 3 * 0.1 is 0.4000000000000001, not 0.4: the grid index of an edge
    # is the smallest k whose value origin + k * resolution (as every client computes it)
    # is at or above the edge, also where (edge - origin) / resolution rounds the wrong way.
    rng = np.random.default_rng(11)
    for origin, resolution in ((0.1, 0.1), (16.0, 0.001), (-3.0, 0.3), (0.0, 1 / 3)):
        grid = Grid(origin, resolution)
        k = np.arange(-50, 2000)
        values = grid.values(k)
        edges = np.concatenate(
            [
                values,
                np.nextafter(values, np.inf),
                np.nextafter(values, -np.inf),
                origin + rng.uniform(-50, 2000, 500) * resolution,
            ]
        )
        found = grid.first_at_or_above(edges)
        assert np.all(grid.values(found) >= edges)
        assert np.all(grid.values(found - 1) < edges)


def test_a_discrete_gaussian_wider_than_its_tables_follows_the_exact_law():
    # sigma = 25,000 steps is past the exact tables (20,000): the tails come from the
    # continuity-corrected normal, within 1e-10 of the discrete law (the docstring's
    # promise), checked against the exact table the law would otherwise build.
    law = DiscreteGaussian(Fraction(25_000) ** 2)
    exact_tail, exact_tail2, exact_std = law._table()
    s = np.array([1.0, 2.0, 100.0, 12_500.0, 25_000.0, 50_000.0, 100_000.0])
    index = s.astype(np.int64)
    np.testing.assert_allclose(law.tail(s), exact_tail[index], rtol=0, atol=1e-10)
    np.testing.assert_allclose(law.tail2(s), exact_tail2[index], rtol=1e-8)
    assert law.std == pytest.approx(exact_std, rel=1e-12)
    # Past the table's end the exact tails are 0 (a table reads 0 beyond its last entry).
    narrow = DiscreteGaussian(Fraction(4))
    far = np.array([10_000.0])
    assert narrow.tail(far)[0] == 0.0 and narrow.tail2(far)[0] == 0.0


MODELS = [
    AdditiveLaplace(0.5),
    AdditiveGaussian(1.3),
    AdditiveUniform(0.7),
    AdditiveStaircase(1.5, 2.0),
    RetentionReplacement(0.6, 16.0, 100.0),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_grid_noise_keeps_every_parameter_of_the_mechanism(model):
    on_grid = grid_noise(model, 16.0, 0.1)
    assert isinstance(on_grid, type(model)) and type(on_grid) is not type(model)
    for name in model.__dataclass_fields__:
        assert getattr(on_grid, name) == getattr(model, name)
    assert (on_grid.origin, on_grid.resolution) == (16.0, 0.1)


def test_grid_noise_leaves_no_noise_alone_and_refuses_a_resolution_that_is_no_step():
    none = NoNoise()
    assert grid_noise(none, 0.0, 1.0) is none
    for bad in (0.0, -0.5, math.inf, math.nan):
        with pytest.raises(InputError) as caught:
            grid_noise(AdditiveLaplace(1.0), 0.0, bad)
        assert str(caught.value) == f"resolution must be > 0 and finite, got {bad!r}"


def test_each_grid_models_scheme_publishes_its_law_in_exact_grid_steps():
    # What the clients read to draw exactly: parameters over the resolution as decimals.
    laplace = GridLaplace(0.5, origin=16.0, resolution=0.1).scheme()
    assert laplace == {"origin": 16.0, "resolution": 0.1,
                       "law": {"name": "discrete_laplace", "scale": "5"}}  # fmt: skip
    gaussian = GridGaussian(1.3, origin=0.0, resolution=0.1).scheme()["law"]
    assert gaussian["name"] == "discrete_gaussian"
    assert Fraction(gaussian["sigma2"]) == (Fraction("1.3") / Fraction("0.1")) ** 2  # 169
    uniform = GridUniform(0.75, origin=0.0, resolution=0.1).scheme()["law"]
    assert uniform == {"name": "discrete_uniform", "half_width": 7}  # whole steps within
    staircase = GridStaircase(1.5, 2.0, origin=0.0, resolution=0.5).scheme()["law"]
    d, r = staircase_steps(2.0, 0.5, 1.5)
    assert staircase == {"name": "discrete_staircase", "epsilon": "3/2", "steps": d, "inner": r}
    assert (d, r) == (4, 1)  # 2 / 0.5 steps; round(4 / (1 + e^0.75)) = 1
    retention = GridRetention(0.6, 16.0, 100.0, origin=16.0, resolution=0.5)
    assert retention.scheme() == {"origin": 16.0, "resolution": 0.5,
                                  "law": {"name": "retention_replacement", "retain": "3/5",
                                          "points": 169}}  # fmt: skip
    assert retention.law().scheme() == {"name": "none"}


def test_retention_on_the_grid_replaces_with_a_grid_point_of_the_range_and_has_no_std():
    model = GridRetention(0.01, 16.0, 100.0, origin=16.0, resolution=0.5)
    assert model.points == 169  # 16.0, 16.5, ..., 100.0
    rng = np.random.default_rng(8)
    reports = model.distort(np.full(5000, 50.0), rng)  # 99% replaced
    k, on = model.grid.index(reports)
    assert on.all() and k.min() == 0 and k.max() == 168
    with pytest.raises(AttributeError):
        _ = model.std
    kept = GridRetention(1.0, 16.0, 100.0, origin=16.0, resolution=0.5)
    assert set(np.unique(kept.distort(np.full(1000, 50.2), rng))) == {50.0, 50.5}


def test_parameters_are_the_decimals_they_are_written_as():
    assert decimal(0.1) == Fraction(1, 10)
    assert decimal(1e-3) == Fraction(1, 1000)
    assert GridLaplace(0.3, origin=0.0, resolution=0.1).law().t == 3  # not 2.9999999999999996
    assert GridUniform(0.3, origin=0.0, resolution=0.1).law().half == 3


def test_the_reported_indices_cover_the_range_and_the_noises_spread_in_whole_steps():
    # Laplace of scale 1 on a grid of 0.5 over [16, 100]: the continuous model's bounds
    # (its spread beyond each end) in whole steps, from the range's first and last points.
    model = GridLaplace(1.0, origin=16.0, resolution=0.5)
    spread = 16.0 - AdditiveLaplace(1.0).reported_bounds(16.0, 100.0)[0]
    steps = math.floor(spread / 0.5)
    assert model.index_bounds(16.0, 100.0) == (-steps, 168 + steps)
    assert model.reported_bounds(16.0, 100.0) == (16.0 - steps * 0.5, 100.0 + steps * 0.5)
    # A range end between grid points: the grid point outside it.
    low, high = model.index_bounds(16.2, 99.9)
    assert (low, high) == (-steps, 168 + steps)
    # Uniform noise: at least its half-width in steps.
    uniform = GridUniform(3.0, origin=0.0, resolution=0.5)
    assert uniform.index_bounds(0.0, 10.0) == (-6, 26)


def _fresh_laws():
    # Built inside each test: a law caches its tables on first use, so instances made at
    # import (test_grid.py's LAWS) would keep tables computed before a change to the code.
    return [
        PointMass(),
        DiscreteLaplace(Fraction(5, 2)),
        DiscreteGaussian(Fraction(9, 4)),
        DiscreteGaussian(Fraction(1, 400)),  # sigma 0.05: narrower than a step
        DiscreteUniform(3),
        DiscreteStaircase(Fraction(1), 6, 2),
        DiscreteStaircase(Fraction(1, 2), 2, 1),  # d = r + 1
        DiscreteStaircase(Fraction(4), 1, 1),  # r = d
    ]


def _mass(law, k):
    k = np.abs(np.asarray(k, dtype=np.float64))
    if isinstance(law, PointMass):
        return (k == 0).astype(float)
    if isinstance(law, DiscreteLaplace):
        return np.exp(-k / float(law.t))
    if isinstance(law, DiscreteGaussian):
        return np.exp(-k * k / (2 * float(law.sigma2)))
    if isinstance(law, DiscreteUniform):
        return (k <= law.half).astype(float)
    j, r = np.floor(k / law.d), k % law.d
    return np.exp(-float(law.epsilon) * (j + (r >= law.r)))


def test_each_laws_tails_are_its_mass_function_computed_afresh():
    k = np.arange(-300, 301)
    s = np.arange(1, 40, dtype=float)
    for law in _fresh_laws():
        p = _mass(law, k) / _mass(law, k).sum()
        tails = np.array([p[k >= v].sum() for v in s])
        np.testing.assert_allclose(law.tail(s), tails, rtol=1e-9, atol=1e-15, err_msg=repr(law))
        np.testing.assert_allclose(
            law.tail2(s), [((k - v + 1) * p)[k >= v].sum() for v in s], rtol=1e-9, atol=1e-15
        )
        assert law.std == pytest.approx(math.sqrt((k * k * p).sum()), rel=1e-9, abs=1e-15)
    # sigma 0.05: P(K >= 1) is exp(-200) over the total, a number, not 0.
    narrow = DiscreteGaussian(Fraction(1, 400))
    assert narrow.tail(np.array([1.0]))[0] == pytest.approx(math.exp(-200), rel=1e-12)


def test_each_laws_sampler_keeps_the_shape_asked_for_and_draws_whole_steps():
    rng = np.random.default_rng(4)
    for law in _fresh_laws():
        draws = law.sample((3, 4000), rng)
        assert draws.shape == (3, 4000) and draws.dtype == np.float64, repr(law)
        assert np.all(draws == np.rint(draws))
        assert law.tail(np.ones((2, 3))).shape == (2, 3)
        assert law.tail2(np.ones((2, 3))).shape == (2, 3)


def test_the_staircase_sampler_with_one_step_above_the_inner_ones_follows_its_law():
    # d = 2, r = 1: magnitudes 2j (inner) and 2j + 1 (outer); never 2j + 2 from one stair.
    law = DiscreteStaircase(Fraction(1, 2), 2, 1)
    rng = np.random.default_rng(9)
    draws = law.sample((40_000,), rng)
    k = np.arange(-12, 13)
    p = _mass(law, np.arange(-400, 401))
    p = p / p.sum()
    expected = p[388:413] * draws.size
    observed = np.array([(draws == v).sum() for v in k])
    statistic = float(((observed - expected) ** 2 / expected).sum())
    assert statistic < 60.0, statistic  # chi-square with 24 degrees of freedom: p < 1e-4


def test_retention_on_the_grid_keeps_the_share_it_says():
    model = GridRetention(0.5, 16.0, 100.0, origin=16.0, resolution=0.5)
    rng = np.random.default_rng(12)
    reports = model.distort(np.full(8000, 50.0), rng)
    kept = float(np.mean(reports == 50.0))  # kept, or drawn as 50.0 (1 in 169)
    assert kept == pytest.approx(0.5 + 0.5 / 169, abs=0.03)


def test_the_staircase_grid_covers_the_range_in_grid_units():
    # Sensitivity 2 on a grid of 0.5 is d = 4 steps: it covers a range of width 2.
    model = GridStaircase(1.0, 2.0, origin=0.0, resolution=0.5)
    assert model.local_epsilon(0.0, 2.0) == 1.0
    assert model.local_epsilon(0.0, 2.5) is None


def test_the_default_resolution_when_the_range_is_a_power_of_ten_or_not_exact_in_doubles():
    assert default_resolution(0, 10_000, None) == 1.0  # 10^4 steps of 1, not 10^5 of 0.1
    assert default_resolution(0, 10, None) == 0.001
    # 0.3 / 1e-5 is 29999.999999999996 in doubles: still a whole number of 1e-5.
    assert default_resolution(0, 0.3, None) == 1e-5


def test_float32_input_gives_the_grid_and_the_channels_of_its_float64_values():
    # float32 minus a Python float stays float32 in numpy 2: the grid's arithmetic must be
    # done on the values as float64, or the positions lose their last bits.
    grid = Grid(16.0, 0.001)
    x32 = np.array([16.3, 57.123, 99.9], dtype=np.float32)
    x64 = x32.astype(np.float64)
    np.testing.assert_array_equal(grid.position(x32), grid.position(x64))
    np.testing.assert_array_equal(grid.first_at_or_above(x32), grid.first_at_or_above(x64))
    model = GridLaplace(2.5, origin=16.0, resolution=0.001)
    edges = np.array([0.0, 30.0, 60.0, 120.0])
    np.testing.assert_array_equal(model.point_channel(x32, edges), model.point_channel(x64, edges))


def test_bad_edges_are_named_by_which_edges_they_are():
    model = GridLaplace(2.5, origin=16.0, resolution=0.5)
    with pytest.raises(ValueError, match=r"^reported_edges must be strictly increasing"):
        model.point_channel([20.0], [30.0, 20.0, 40.0])
    with pytest.raises(ValueError, match=r"^true_edges must be strictly increasing"):
        model.interval_channel([30.0, 20.0, 40.0], [0.0, 50.0, 100.0])
    with pytest.raises(ValueError, match=r"^reported_edges must be strictly increasing"):
        model.interval_channel([0.0, 50.0, 100.0], [30.0, 20.0, 40.0])
