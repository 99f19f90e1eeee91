"""Continuous noise models and their interval channels (001, Section III-B2 and IV-A1)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy import integrate

from privacy.mechanisms import (
    AdditiveGaussian,
    AdditiveLaplace,
    AdditiveStaircase,
    AdditiveUniform,
    NoNoise,
    RetentionReplacement,
    noise_model,
)
from privacy.mechanisms.noise import REPORTED_TAIL

ADDITIVE = [
    AdditiveUniform(0.7),
    AdditiveGaussian(0.6),
    AdditiveLaplace(0.4),
    AdditiveStaircase(1.5, 1.2),
]
TRUE_EDGES = np.array([0.0, 0.5, 1.5, 3.0])
REPORTED_EDGES = np.array([-1.0, 0.0, 1.0, 2.0, 2.5, 4.0])


def _quadrature_channel(model: AdditiveUniform | AdditiveGaussian | AdditiveLaplace) -> np.ndarray:
    """C[i, j] by numerical integration of F_Y differences over the true interval."""
    edges = REPORTED_EDGES.copy()
    edges[0], edges[-1] = -np.inf, np.inf
    channel = np.zeros((TRUE_EDGES.size - 1, edges.size - 1))
    for i, (a, b) in enumerate(itertools.pairwise(TRUE_EDGES)):
        for j, (lo, hi) in enumerate(itertools.pairwise(edges)):

            def mass(x: float, lo: float = lo, hi: float = hi) -> float:
                return float(model.noise_cdf(hi - x) - model.noise_cdf(lo - x))

            value, _ = integrate.quad(mass, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)
            channel[i, j] = value / (b - a)
    return channel


@pytest.mark.parametrize("model", ADDITIVE, ids=lambda m: type(m).__name__)
def test_interval_channel_matches_quadrature(model: AdditiveGaussian) -> None:
    channel = model.interval_channel(TRUE_EDGES, REPORTED_EDGES)
    assert channel.shape == (3, 5)
    assert_allclose(channel, _quadrature_channel(model), atol=1e-9)
    assert_allclose(channel.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize(
    "model",
    [*ADDITIVE, RetentionReplacement(0.6, -1.0, 4.0), NoNoise()],
    ids=lambda m: type(m).__name__,
)
def test_interval_channel_matches_simulation(model: AdditiveGaussian) -> None:
    rng = np.random.default_rng(3)
    n = 400_000
    edges = REPORTED_EDGES.copy()
    edges[0], edges[-1] = -np.inf, np.inf
    channel = model.interval_channel(TRUE_EDGES, REPORTED_EDGES)
    for i in range(3):
        values = rng.uniform(TRUE_EDGES[i], TRUE_EDGES[i + 1], n)
        frequencies = np.histogram(model.distort(values, rng), edges)[0] / n
        assert_allclose(frequencies, channel[i], atol=0.004)  # > 4 standard errors


def test_interval_channel_is_accurate_far_from_zero() -> None:
    # Large values must not lose the channel to cancellation.
    model = AdditiveGaussian(1.0)
    shift = 1e6
    near = model.interval_channel(TRUE_EDGES, REPORTED_EDGES)
    far = model.interval_channel(TRUE_EDGES + shift, REPORTED_EDGES + shift)
    assert_allclose(far, near, atol=1e-8)


def test_pdf_and_cdf_agree() -> None:
    x = np.linspace(-3, 3, 2001)
    for model in ADDITIVE:
        cdf = model.noise_cdf(x)
        numeric = np.concatenate([[0.0], integrate.cumulative_trapezoid(model.noise_pdf(x), x)])
        assert_allclose(cdf - cdf[0], numeric, atol=2e-3)


def test_reported_bounds() -> None:
    assert AdditiveUniform(10).reported_bounds(16, 100) == (6, 110)
    assert AdditiveGaussian(800).reported_bounds(0, 20000) == (-8000, 28000)
    low, high = AdditiveLaplace(2).reported_bounds(0, 1)
    spread = 2 * 12 * math.log(10)  # scale * ln(10^12), wider than 10 sd = 20 sqrt(2)
    assert math.isclose(low, -spread) and math.isclose(high, 1 + spread)
    assert RetentionReplacement(0.5, 0, 10).reported_bounds(0, 10) == (0, 10)
    assert NoNoise().reported_bounds(1, 2) == (1, 2)


def test_retention_replacement_keeps_or_replaces() -> None:
    model = RetentionReplacement(0.3, 0.0, 10.0)
    values = np.full(200_000, 5.0)
    reported = model.distort(values, np.random.default_rng(0))
    kept = np.mean(reported == 5.0)
    assert_allclose(kept, 0.3, atol=0.005)
    assert reported.min() >= 0 and reported.max() <= 10
    assert_allclose(model.reported_cdf(5.0, 5.0), 0.3 + 0.7 * 0.5, atol=1e-15)


def test_noise_model_maps_api_names() -> None:
    assert noise_model("none") == NoNoise()
    assert noise_model("additive_uniform", half_width=10) == AdditiveUniform(10)
    assert noise_model("additive_gaussian", sigma=2) == AdditiveGaussian(2)
    assert noise_model("additive_laplace", scale=1) == AdditiveLaplace(1)
    assert noise_model("additive_staircase", epsilon=2, sensitivity=70) == (
        AdditiveStaircase(2, 70)
    )
    assert noise_model("retention_replacement", retain=0.5, low=0, high=1) == (
        RetentionReplacement(0.5, 0, 1)
    )


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("additive_uniform", {"half_width": 0}, "half_width"),
        ("additive_gaussian", {"sigma": float("inf")}, "sigma"),
        ("additive_laplace", {"scale": -1}, "scale"),
        ("additive_staircase", {"epsilon": 0, "sensitivity": 1}, "epsilon"),
        ("additive_staircase", {"epsilon": 1e-17, "sensitivity": 1}, "epsilon"),
        ("additive_staircase", {"epsilon": 501, "sensitivity": 1}, "epsilon"),
        ("additive_staircase", {"epsilon": 1, "sensitivity": -2}, "sensitivity"),
        ("additive_staircase", {"epsilon": 1, "sensitivity": "x"}, "sensitivity"),
        ("additive_staircase", {"epsilon": 1}, "sensitivity"),
        ("additive_staircase", {"epsilon": 1, "sensitivity": 1, "scale": 1}, "scale"),
        ("retention_replacement", {"retain": 0, "low": 0, "high": 1}, "retain"),
        ("retention_replacement", {"retain": 0.5, "low": 1, "high": 1}, "low and high"),
        ("additive_gaussian", {}, "sigma"),
        ("additive_gaussian", {"sigma": 1, "scale": 2}, "scale"),
        ("multiplicative", {}, "unknown noise model"),
    ],
)
def test_noise_model_names_the_bad_parameter(name: str, params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        noise_model(name, **params)


@settings(max_examples=50, deadline=None)
@given(
    sigma=st.floats(0.01, 100),
    edges=st.lists(st.floats(-100, 100), min_size=2, max_size=8, unique=True),
)
def test_interval_channel_rows_are_distributions(sigma: float, edges: list[float]) -> None:
    sorted_edges = np.sort(np.array(edges))
    if np.any(np.diff(sorted_edges) < 1e-6):
        return
    for model in (
        AdditiveGaussian(sigma),
        AdditiveLaplace(sigma),
        AdditiveUniform(sigma),
        AdditiveStaircase(2.0, sigma),
    ):
        channel = model.interval_channel(sorted_edges, sorted_edges)
        assert np.all(channel >= 0)
        assert_allclose(channel.sum(axis=1), 1.0, atol=1e-12)


def _outside(model: AdditiveGaussian | AdditiveLaplace | AdditiveUniform, low: float) -> float:
    """Share of reports of a true value at ``low`` falling below the lower bound, times two
    (symmetric noise: the two-sided tail; the CDF near 0 keeps its precision, 1 - CDF
    near 1 would not)."""
    bound, _ = model.reported_bounds(low, low + 70.0)
    return 2.0 * float(model.noise_cdf(bound - low))


@pytest.mark.parametrize("scale", [0.5, 17.5, 35.0, 2000.0])
def test_laplace_bounds_leave_one_honest_report_in_a_million_million_outside(
    scale: float,
) -> None:
    # The server refuses reports outside reported_bounds. At 10 standard deviations a
    # Laplace report fell outside with probability exp(-10 sqrt 2) = 7e-7: several honest
    # residents refused at 10^7. The bounds now reach where the two-sided tail is 1e-12.
    model = AdditiveLaplace(scale)
    assert math.isclose(_outside(model, 16.0), REPORTED_TAIL, rel_tol=1e-9)
    old_spread = 10 * model.std
    assert 2.0 * float(model.noise_cdf(-old_spread)) == pytest.approx(7.2e-7, rel=0.01)
    low, high = model.reported_bounds(16.0, 86.0)
    assert high - 86.0 > 1.9 * old_spread and 16.0 - low == pytest.approx(high - 86.0)


@pytest.mark.parametrize("sigma", [0.5, 17.5, 800.0])
def test_gaussian_bounds_stay_at_ten_sd_below_the_tail_share(sigma: float) -> None:
    # 10 sd leave 2 Phi(-10) = 1.5e-23 outside: already within the 1e-12 rule.
    model = AdditiveGaussian(sigma)
    outside = _outside(model, 0.0)
    assert outside <= REPORTED_TAIL
    assert outside == pytest.approx(1.5239e-23, rel=1e-3)
    assert model.reported_bounds(0.0, 1.0) == pytest.approx((-10 * sigma, 1 + 10 * sigma))


def test_uniform_bounds_leave_no_report_outside() -> None:
    model = AdditiveUniform(10)
    assert _outside(model, 16.0) == 0.0
    bound, _ = model.reported_bounds(16.0, 86.0)
    assert float(model.noise_cdf(bound - 16.0 + 1e-9)) > 0.0  # the bound is the support's end


def test_uniform_noise_has_its_density_on_the_closed_interval() -> None:
    # 1 / (2 h) on [-h, h], the ends included; 0 beyond them
    model = AdditiveUniform(0.5)
    ends = [-0.5, 0.5, np.nextafter(-0.5, -1.0), np.nextafter(0.5, 1.0), 0.0]
    assert model.noise_pdf(ends).tolist() == [1.0, 1.0, 0.0, 0.0, 1.0]
