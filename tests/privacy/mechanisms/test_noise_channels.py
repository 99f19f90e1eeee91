"""Channels of the continuous mechanisms on known inputs (issue 33: mutation testing).

The no-noise and retention-replacement channels, their point channels (the lattice
path) and the input checks that name what is wrong: each case here is worked by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from privacy.mechanisms import NoNoise, RetentionReplacement, noise_model

EDGES = [0.0, 2.0, 4.0]


def test_no_noise_is_a_point_mass_at_0() -> None:
    model = NoNoise()
    assert model.std == 0.0
    assert model.noise_pdf([-1.0, 0.0, 1.0]).tolist() == [0.0, np.inf, 0.0]
    assert model.noise_cdf([-1.0, -1e-300, 0.0, 1.0]).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert model.noise_cdf(0).dtype == np.float64


def test_no_noise_reports_each_point_in_its_own_bin() -> None:
    # A point on an inner edge belongs to the bin it starts; outer bins are open.
    channel = NoNoise().point_channel([-5.0, 0.5, 2.0, 3.9, 4.0, 9.0], EDGES)
    assert channel.tolist() == [[1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [0, 1]]
    assert channel.dtype == np.float64


def test_no_noise_copies_the_values_it_reports() -> None:
    values = np.array([1.0, 2.0])
    reported = NoNoise().distort(values, np.random.default_rng(0))
    assert reported.tolist() == [1.0, 2.0] and reported.dtype == np.float64
    reported[0] = 99.0
    assert values[0] == 1.0
    assert NoNoise().distort([1, 2], np.random.default_rng(0)).dtype == np.float64


def test_no_noise_interval_channel_shares_each_interval_between_bins() -> None:
    channel = NoNoise().interval_channel([0.0, 1.0, 3.0, 4.0], EDGES)
    assert_allclose(channel, [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], atol=1e-15)


RR = RetentionReplacement(retain=0.6, low=0.0, high=4.0)


def test_retention_replacement_point_channel_mixes_the_point_and_the_uniform() -> None:
    # Kept (0.6): the point's own bin; replaced (0.4): U(0, 4), half in each bin.
    channel = RR.point_channel([0.5, 3.5, 2.0], EDGES)
    assert_allclose(channel, [[0.8, 0.2], [0.2, 0.8], [0.2, 0.8]], atol=1e-15)


def test_retention_replacement_interval_channel() -> None:
    channel = RR.interval_channel([0.0, 1.0, 3.0, 4.0], EDGES)
    assert_allclose(channel, [[0.8, 0.2], [0.5, 0.5], [0.2, 0.8]], atol=1e-15)
    # Reported bins wider than the range: the replacement's share follows its overlap.
    channel = RR.interval_channel([0.0, 4.0], [-4.0, 1.0, 8.0])
    assert_allclose(channel, [[0.25, 0.75]], atol=1e-15)


def test_retention_replacement_reported_cdf() -> None:
    # Pr(reported <= y | x) = 0.6 [x <= y] + 0.4 clip(y / 4, 0, 1).
    cdf = RR.reported_cdf([1.0, 1.0, -1.0, 5.0], [0.5, 2.0, -2.0, 5.0])
    assert_allclose(cdf, [0.6 + 0.1, 0.1, 0.6, 1.0], atol=1e-15)
    assert RR.reported_cdf(1.0, 1.0).dtype == np.float64


def test_retention_replacement_reported_cdf_off_zero() -> None:
    # replacements uniform on [10, 20]: Pr(reported <= y | x) = 0.6 [x <= y] + 0.4 (y - 10) / 10
    model = RetentionReplacement(retain=0.6, low=10.0, high=20.0)
    cdf = model.reported_cdf([12.5, 12.5, 15.0, 9.0, 20.0], [30.0, 11.0, 15.0, 9.0, 25.0])
    assert_allclose(cdf, [0.1, 0.7, 0.8, 0.6, 0.4], atol=1e-15)


def test_retention_replacement_validates_retain_and_range() -> None:
    assert RetentionReplacement(retain=1.0, low=0.0, high=1.0).retain == 1.0
    given = RetentionReplacement(retain="0.5", low="0", high="2")  # type: ignore[arg-type]
    stored = (given.retain, given.low, given.high)
    assert stored == (0.5, 0.0, 2.0) and all(isinstance(value, float) for value in stored)
    for retain in (0.0, 1.5, float("nan"), "x"):
        with pytest.raises(ValueError, match="retain must be"):
            RetentionReplacement(retain=retain, low=0.0, high=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"got 2\.0, 1\.0"):
        RetentionReplacement(retain=0.5, low=2.0, high=1.0)
    assert RR.reported_bounds(-1, 5) == (-1.0, 5.0)


def test_retention_replacement_keeps_or_replaces_within_range() -> None:
    values = np.full(2000, 1.0)
    reported = RR.distort(values, np.random.default_rng(3))
    kept = reported == 1.0
    assert 0.55 < kept.mean() < 0.65
    assert np.all((reported[~kept] >= 0.0) & (reported[~kept] <= 4.0))


@pytest.mark.parametrize(
    ("edges", "message"),
    [
        ([1.0], r"true_edges must be a 1-D array of at least 2 edges, got shape \(1,\)"),
        ([[0.0, 1.0]], r"true_edges must be a 1-D array of at least 2 edges, got shape \(1, 2\)"),
        ([0.0, np.inf], "true_edges must be finite"),
        ([0.0, 0.0, 1.0], "true_edges must be strictly increasing"),
    ],
)
def test_bad_edges_are_named(edges: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        NoNoise().interval_channel(edges, EDGES)
    with pytest.raises(ValueError, match=message.replace("true_edges", "reported_edges")):
        NoNoise().interval_channel(EDGES, edges)
    with pytest.raises(ValueError, match=message.replace("true_edges", "reported_edges")):
        RR.point_channel([1.0], edges)


def test_values_must_be_finite() -> None:
    with pytest.raises(ValueError, match="values must be finite numbers"):
        NoNoise().distort([1.0, np.nan], np.random.default_rng(0))


@pytest.mark.parametrize(
    ("name", "param", "draw"),
    [
        ("additive_uniform", "half_width", lambda rng: rng.uniform(-1.0, 1.0, size=5)),
        ("additive_gaussian", "sigma", lambda rng: rng.normal(0.0, 1.0, size=5)),
        ("additive_laplace", "scale", lambda rng: rng.laplace(0.0, 1.0, size=5)),
    ],
)
def test_additive_noise_is_the_generators_draw_added(name: str, param: str, draw) -> None:
    model = noise_model(name, **{param: 1.0})
    reported = model.distort(np.full(5, 10.0), np.random.default_rng(7))
    assert_allclose(reported, 10.0 + draw(np.random.default_rng(7)), atol=1e-12)


@pytest.mark.parametrize(
    ("cls", "field", "others"),
    [
        ("AdditiveGaussian", "sigma", {}),
        ("AdditiveLaplace", "scale", {}),
        ("AdditiveUniform", "half_width", {}),
        ("AdditiveStaircase", "epsilon", {"sensitivity": 10.0}),
        ("AdditiveStaircase", "sensitivity", {"epsilon": 2.0}),
    ],
)
def test_a_noise_parameter_is_stored_as_a_float_and_named_when_bad(
    cls: str, field: str, others: dict[str, float]
) -> None:
    import privacy.mechanisms as mechanisms

    model_class = getattr(mechanisms, cls)
    model = model_class(**{field: "2", **others})
    assert getattr(model, field) == 2.0 and isinstance(getattr(model, field), float)
    with pytest.raises(ValueError, match=rf"^{field} must be > 0 and finite, got -1\.5$"):
        model_class(**{field: -1.5, **others})
    with pytest.raises(ValueError, match=rf"^{field} must be a number, got 'x'$"):
        model_class(**{field: "x", **others})


def test_the_staircase_epsilon_limit_is_inclusive_and_named() -> None:
    from privacy.mechanisms import AdditiveStaircase
    from privacy.mechanisms.noise import MAX_STAIRCASE_EPSILON

    assert AdditiveStaircase(epsilon=MAX_STAIRCASE_EPSILON, sensitivity=1.0).epsilon == 500.0
    with pytest.raises(ValueError, match=r"^epsilon must be at most 500, got 501$"):
        AdditiveStaircase(epsilon=501, sensitivity=1.0)
    with pytest.raises(ValueError, match=r"^epsilon must be > 0 and finite, got 1e-300$"):
        AdditiveStaircase(epsilon=1e-300, sensitivity=1.0)


@pytest.mark.parametrize(
    "model",
    [
        NoNoise(),
        RR,
        noise_model("additive_uniform", half_width=1.0),
        noise_model("additive_laplace", scale=1.0),
    ],
)
def test_every_channel_names_the_bad_edges(model: object) -> None:
    bad = [0.0, 0.0, 1.0]
    with pytest.raises(ValueError, match=r"^true_edges must be strictly increasing$"):
        model.interval_channel(bad, EDGES)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"^reported_edges must be strictly increasing$"):
        model.interval_channel(EDGES, bad)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"^reported_edges must be strictly increasing$"):
        model.point_channel([1.0], bad)  # type: ignore[attr-defined]


def test_reported_bounds_name_both_ends() -> None:
    with pytest.raises(ValueError, match=r"^need finite low < high, got low=2\.0, high=1\.0$"):
        NoNoise().reported_bounds(2, 1)
