"""The staircase mechanism (Geng and Viswanath, IEEE Trans. Inf. Theory 62(2), 2016):
closed forms against numerical integration, the sampler against the CDF, the eps-LDP
ratio, and its channels."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate, stats

from privacy.mechanisms import AdditiveLaplace, AdditiveStaircase
from privacy.mechanisms.noise import REPORTED_TAIL

CASES = [(2.0, 70.0), (4.0, 70.0), (0.5, 3.0), (8.0, 1.0)]


def _breaks(model: AdditiveStaircase, start: float, stop: float) -> np.ndarray:
    """Every jump of the density in [start, stop] (kΔ and (k + gamma)Δ), with the ends."""
    d, g = model.sensitivity, model.gamma
    steps = np.arange(math.floor(start / d), math.ceil(stop / d) + 1) * d
    points = np.concatenate([steps, steps + g * d, [start, stop]])
    return np.unique(points[(points >= start) & (points <= stop)])


def _integral(function, model: AdditiveStaircase, start: float, stop: float) -> float:
    """Piecewise quadrature between the density's jumps (exact up to quad's tolerance)."""
    points = _breaks(model, start, stop)
    return sum(
        integrate.quad(lambda t: float(function(t)), a, b, epsabs=1e-14, epsrel=1e-12)[0]
        for a, b in itertools.pairwise(points)
    )


def _far(model: AdditiveStaircase) -> float:
    """A point beyond which the density's mass is below 1e-15."""
    return model.sensitivity * (math.ceil(36.0 / model.epsilon) + 2)


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_the_density_integrates_to_one(eps: float, delta: float) -> None:
    model = AdditiveStaircase(eps, delta)
    total = 2.0 * _integral(model.noise_pdf, model, 0.0, _far(model))
    assert total == pytest.approx(1.0, abs=1e-9)
    # the density's levels are those of the contract
    b, g = math.exp(-eps), 1.0 / (1.0 + math.exp(eps / 2.0))
    a = (1.0 - b) / (2.0 * delta * (g + (1.0 - g) * b))
    assert_allclose(
        model.noise_pdf(np.array([0.0, -0.99 * g * delta, 1.01 * g * delta, 2.5 * delta])),
        [a, a, a * b, a * b**3 if g <= 0.5 else a * b**2],
    )


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_the_cdf_is_the_integral_of_the_density(eps: float, delta: float) -> None:
    model = AdditiveStaircase(eps, delta)
    for x in np.array([-3.3, -1.0, -0.05, 0.0, 0.07, 0.5, 1.5, 2.2]) * delta:
        numeric = 0.5 + math.copysign(_integral(model.noise_pdf, model, 0.0, abs(x)), x)
        assert float(model.noise_cdf(x)) == pytest.approx(numeric, abs=1e-10)


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_the_tail_is_the_integral_of_the_survival(eps: float, delta: float) -> None:
    model = AdditiveStaircase(eps, delta)
    u = np.array([0.0, 0.03, 0.5, 1.0, 1.7, 4.2]) * delta
    numeric = [
        _integral(lambda s: 1.0 - model.noise_cdf(s), model, float(v), _far(model)) for v in u
    ]
    assert_allclose(model._tail(u), numeric, rtol=1e-8, atol=1e-12 * delta)


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_the_standard_deviation_is_the_densitys(eps: float, delta: float) -> None:
    model = AdditiveStaircase(eps, delta)
    second = 2.0 * _integral(lambda t: t * t * model.noise_pdf(t), model, 0.0, _far(model))
    assert model.std == pytest.approx(math.sqrt(second), rel=1e-9)


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_the_sampler_draws_from_the_cdf(eps: float, delta: float) -> None:
    model = AdditiveStaircase(eps, delta)
    noise = model.distort(np.zeros(20_000), np.random.default_rng(11))
    assert stats.kstest(noise, model.noise_cdf).pvalue > 0.01
    # the test has the power to reject Laplace noise with the same eps-LDP guarantee
    laplace = AdditiveLaplace(delta / eps)
    assert stats.kstest(noise, laplace.noise_cdf).pvalue < 1e-4
    # and values are shifted, not replaced
    values = np.array([3.0, -7.5, 1e6])
    shifted = model.distort(np.repeat(values, 5_000), np.random.default_rng(2))
    assert_allclose(
        np.median(shifted.reshape(3, -1), axis=1), values, atol=model.gamma * delta + 1e-9
    )


def _worst_ratio(model: AdditiveStaircase, shift_max: float) -> float:
    """max over reports y and true values x, x' with |x - x'| <= shift_max of
    pdf(y - x) / pdf(y - x'), on a grid that contains every jump."""
    d = model.sensitivity
    # Reports just either side of every jump (on the jump itself, y and y - Δ straddle
    # two jumps by rounding alone, a measure-zero artefact of evaluating the density).
    jumps = _breaks(model, 0.0, 4 * d)
    jumps = np.concatenate([jumps, -jumps])
    y = np.concatenate([jumps - 1e-7 * d, jumps + 1e-7 * d, np.linspace(-4 * d, 4 * d, 800)])
    worst = 0.0
    for shift in np.linspace(0.0, shift_max, 61):
        ratio = model.noise_pdf(y) / model.noise_pdf(y - shift)
        worst = max(worst, float(ratio.max()), float((1.0 / ratio).max()))
    return worst


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_the_privacy_ratio_is_at_most_e_to_the_eps(eps: float, delta: float) -> None:
    model = AdditiveStaircase(eps, delta)
    worst = _worst_ratio(model, delta)
    assert worst <= math.exp(eps) * (1.0 + 1e-9)
    # attained: the mechanism is not more private than it says ...
    assert worst >= math.exp(eps) * (1.0 - 1e-9)
    assert worst > math.exp(0.99 * eps)
    # ... and the guarantee fails for values further apart than the sensitivity
    assert _worst_ratio(model, 2.0 * delta) > math.exp(1.5 * eps)


def test_local_epsilon_needs_the_sensitivity_to_cover_the_range() -> None:
    model = AdditiveStaircase(3.0, 70.0)
    assert model.local_epsilon(16, 86) == 3.0
    assert model.local_epsilon(16, 85) == 3.0
    assert model.local_epsilon(0, 100) is None


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_channels_are_row_stochastic_and_match_simulation(eps: float, delta: float) -> None:
    model = AdditiveStaircase(eps, delta)
    true_edges = np.linspace(0.0, delta, 6)
    reported = np.linspace(-2 * delta, 3 * delta, 14)
    interval = model.interval_channel(true_edges, reported)
    points = model.point_channel(true_edges, reported)
    for channel in (interval, points):
        assert np.all(channel >= 0.0)
        assert_allclose(channel.sum(axis=1), 1.0, atol=1e-12)
    rng = np.random.default_rng(5)
    edges = reported.copy()
    edges[0], edges[-1] = -np.inf, np.inf
    n = 200_000
    for i in (0, 3):
        values = rng.uniform(true_edges[i], true_edges[i + 1], n)
        frequencies = np.histogram(model.distort(values, rng), edges)[0] / n
        assert_allclose(frequencies, interval[i], atol=0.005)  # > 4 standard errors
        frequencies = np.histogram(model.distort(np.full(n, true_edges[i]), rng), edges)[0] / n
        assert_allclose(frequencies, points[i], atol=0.005)


def test_the_staircase_is_tighter_than_laplace_at_the_same_guarantee() -> None:
    # Geng and Viswanath: the staircase is the optimal eps-DP noise; at eps = 2 and 4 on
    # whole-year ages 16-85 (sensitivity 70) its standard deviation is below Laplace's.
    for eps in (2.0, 4.0):
        assert AdditiveStaircase(eps, 70.0).std < AdditiveLaplace(70.0 / eps).std
    assert AdditiveStaircase(4.0, 70.0).std == pytest.approx(18.914, abs=1e-3)


@pytest.mark.parametrize(("eps", "delta"), CASES)
def test_reported_bounds_hold_all_but_one_report_in_a_million_million(
    eps: float, delta: float
) -> None:
    # The server refuses reports outside reported_bounds: 10 standard deviations, enough
    # for Gaussian noise, leave 2e-5 of the staircase's reports outside at eps = 4, so the
    # bounds follow its geometric tail instead (as Laplace's do).
    model = AdditiveStaircase(eps, delta)
    low, high = model.reported_bounds(16.0, 86.0)
    outside = float(model.noise_cdf(low - 16.0) + 1.0 - model.noise_cdf(high - 86.0))
    assert outside <= REPORTED_TAIL
    # Whole steps: the tail at the bound is within one step's factor b = e^-eps of 1e-12.
    assert 2.0 * float(model.noise_cdf(low - 16.0)) >= REPORTED_TAIL * math.exp(-eps) * (1 - 1e-9)
    assert float(model.noise_cdf(-10 * model.std)) * 2 > 1e-9  # the heavy tail
    assert high - 86.0 >= 10 * model.std


@pytest.mark.parametrize(("eps", "delta"), [(2.0, 1.0), (0.5, 4.0)])
def test_each_step_is_higher_on_its_first_gamma_share_and_lower_from_there(
    eps: float, delta: float
) -> None:
    # the density is a b^k on [kΔ, (k + gamma)Δ) and a b^(k+1) on [(k + gamma)Δ, (k+1)Δ):
    # each level's interval is closed at its left end (Δ a power of two, so gamma Δ / Δ
    # is gamma exactly)
    model = AdditiveStaircase(epsilon=eps, sensitivity=delta)
    a, b, g = model.noise_pdf(0.0), model.b, model.gamma
    steps = np.array([1.0, 3.0]) * delta
    assert_allclose(model.noise_pdf(steps), [a * b, a * b**3], rtol=1e-12)
    assert_allclose(model.noise_pdf([g * delta, -g * delta]), [a * b, a * b], rtol=1e-12)
    below = np.nextafter(g * delta, 0.0)
    assert_allclose(model.noise_pdf([below, -below]), [a, a], rtol=1e-12)


def test_the_cdf_at_infinity_is_0_and_1_without_a_numeric_warning() -> None:
    model = AdditiveStaircase(epsilon=1.0, sensitivity=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model.noise_cdf(np.array([-np.inf, np.inf])).tolist() == [0.0, 1.0]
        assert model.noise_pdf(np.array([-np.inf, np.inf])).tolist() == [0.0, 0.0]
