"""One descriptor per mechanism (issue 24, item 5): every list of mechanisms is read from it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from privacy.mechanisms import CONTINUOUS, DISCRETE, noise_model, report_sentence

ROOT = Path(__file__).resolve().parents[3]


def test_the_model_schemes_and_client_lists_are_the_descriptors():
    from privacy import client
    from surveys import models, schemes

    assert tuple(DISCRETE) == models.DISCRETE_MECHANISMS
    assert tuple(CONTINUOUS) == models.CONTINUOUS_MECHANISMS
    assert set(models.NEGATIVE_MECHANISMS) == {
        "negative_uniform",
        "negative_gaussian",
        "negative_manual",
    }
    assert {m.name: m.params for m in DISCRETE.values()} == schemes.DISCRETE_MECHANISMS
    assert {m.name: m.params for m in CONTINUOUS.values()} == schemes.CONTINUOUS_MECHANISMS
    assert set(DISCRETE) == client.CHANNEL_MECHANISMS | client.AS_IS_MECHANISMS


def test_the_portal_clients_know_every_mechanism():
    """The JS and Python clients ship apart from the server, so they spell the names out;
    they must name exactly the descriptors' mechanisms."""
    js = (ROOT / "clients/js/src/distort.js").read_text()
    py = (ROOT / "clients/python/src/consultation_client/distortion.py").read_text()
    for name in (*DISCRETE, *CONTINUOUS):
        assert f'"{name}"' in js, name
        assert f'"{name}"' in py, name
    quoted = set(re.findall(r'"((?:additive|negative|retention|randomised)_[a-z_]+)"', js + py))
    assert quoted <= set(DISCRETE) | set(CONTINUOUS)


@pytest.mark.parametrize("name", sorted(set(DISCRETE) | set(CONTINUOUS)))
def test_every_mechanism_has_a_report_sentence(name):
    params = {
        "retain": 0.7, "half_width": 10.0, "sigma": 2.0, "scale": 3.0,
        "epsilon": 2.0, "sensitivity": 10.0,
    }  # fmt: skip
    mechanism = DISCRETE.get(name) or CONTINUOUS[name]
    found = report_sentence(
        {"name": name, **{p: params[p] for p in mechanism.params if p in params}}
    )
    assert found is not None
    template, filled = found
    assert (template % filled) if filled else template


def test_noise_models_are_built_from_the_descriptors():
    assert noise_model("additive_laplace", scale=2.0).std == pytest.approx(2.0 * np.sqrt(2.0))
    uniform = CONTINUOUS["additive_uniform"]
    assert uniform.noise_variance({"half_width": 3.0}) == pytest.approx(3.0)
    rr = CONTINUOUS["retention_replacement"].noise((0.0, 10.0), {"retain": 0.5})
    assert (rr.low, rr.high) == (0.0, 10.0)
    with pytest.raises(ValueError, match="unknown noise model"):
        noise_model("additive_cauchy", scale=1.0)
    assert DISCRETE["negative_gaussian"].ordinal_only
    np.testing.assert_allclose(DISCRETE["none"].channel(3, {}), np.eye(3))


# ------------------------------------------------------------------ the descriptors' rules
# (issue 33: direct tests of each rule, so a wrong rule in descriptors.py fails here)


def rr_channel(k, params):
    return DISCRETE["randomised_response"].channel(k, params)


def test_randomised_response_with_retain_keeps_the_answer_with_that_probability():
    channel = rr_channel(3, {"retain": 0.7})
    np.testing.assert_allclose(np.diag(channel), [0.7, 0.7, 0.7])
    np.testing.assert_allclose(channel[0], [0.7, 0.15, 0.15])


def test_randomised_response_with_a_matrix_is_that_matrix():
    matrix = [[0.8, 0.2], [0.3, 0.7]]
    np.testing.assert_allclose(rr_channel(2, {"matrix": matrix}), matrix)
    # integers are numbers too (an identity given as 0/1)
    np.testing.assert_allclose(rr_channel(2, {"matrix": [[1, 0], [0, 1]]}), np.eye(2))


@pytest.mark.parametrize("params", [{}, {"retain": 0.7, "matrix": [[1, 0], [0, 1]]}])
def test_randomised_response_needs_exactly_one_of_retain_and_matrix(params):
    with pytest.raises(ValueError, match=r"either retain .* or matrix") as caught:
        rr_channel(2, params)
    assert caught.value.message.params == {}


@pytest.mark.parametrize(
    "matrix",
    [
        "[[1, 0], [0, 1]]",
        [[1, 0], "01"],
        [[1, 0], [0, "1"]],
        [[1, 0], [0, None]],
        [[True, False], [False, True]],
        ((1, 0), (0, 1)),
    ],
)
def test_randomised_response_matrix_must_be_rows_of_numbers(matrix):
    with pytest.raises(ValueError, match="list of rows of numbers"):
        rr_channel(2, {"matrix": matrix})


@pytest.mark.parametrize(
    ("k", "matrix", "shape"),
    [
        (3, [[0.5, 0.5], [0.5, 0.5]], (2, 2)),  # too few rows
        (2, [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]], (3, 2)),  # too many rows
        (2, [[1.0], [1.0]], (2, 1)),  # rows too short
        (2, [[1.0, 0.0], [0.5, 0.25, 0.25]], (2, 2)),  # one row too long
        (2, [], (0, 0)),  # empty
    ],
)
def test_randomised_response_matrix_must_be_k_by_k(k, matrix, shape):
    with pytest.raises(ValueError, match="one row per category") as caught:
        rr_channel(k, {"matrix": matrix})
    assert caught.value.message.params == {"k": k, "shape": shape}


def test_randomised_response_matrix_refuses_tiny_entries_and_names_the_first():
    matrix = [[1 - 1e-13, 1e-13], [5e-13, 1 - 5e-13]]
    with pytest.raises(ValueError, match="0 or at least") as caught:
        rr_channel(2, {"matrix": matrix})
    assert caught.value.message.params == {"limit": "1e-12", "value": "1e-13"}
    # exactly the limit is allowed, and so is 0
    limit = 1e-12
    np.testing.assert_allclose(
        rr_channel(2, {"matrix": [[1 - limit, limit], [0.0, 1.0]]}),
        [[1 - limit, limit], [0.0, 1.0]],
    )


def test_negative_gaussian_needs_sigma_and_uses_it():
    mechanism = DISCRETE["negative_gaussian"]
    with pytest.raises(ValueError, match="needs sigma"):
        mechanism.channel(5, {})
    narrow, wide = mechanism.channel(5, {"sigma": 0.5}), mechanism.channel(5, {"sigma": 3.0})
    assert narrow.shape == (5, 5)
    np.testing.assert_allclose(np.diag(narrow), 0.0)
    np.testing.assert_allclose(narrow.sum(axis=1), 1.0)
    # a small sigma keeps the reported answer near the true one
    assert narrow[0, 1] > wide[0, 1]
    assert narrow[0, 4] < wide[0, 4]


def test_negative_manual_channel_comes_from_the_calibration_pairs():
    pairs = np.array([[0, 1], [0, 1], [1, 2]])
    channel = DISCRETE["negative_manual"].channel(3, {}, pairs)
    np.testing.assert_allclose(channel[0], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(channel[1], [0.0, 0.0, 1.0])
    np.testing.assert_allclose(channel[2], [0.5, 0.5, 0.0])  # no pair: uniform negative


def test_channels_and_noise_belong_to_their_family():
    with pytest.raises(ValueError, match="not a discrete mechanism"):
        CONTINUOUS["additive_gaussian"].channel(3, {})
    with pytest.raises(ValueError, match="not a continuous mechanism"):
        DISCRETE["randomised_response"].noise((0.0, 1.0), {"retain": 0.5})
    assert DISCRETE["none"].discrete and not CONTINUOUS["none"].discrete


def test_lookups_by_name():
    from privacy.mechanisms.descriptors import continuous_mechanism, discrete_mechanism

    assert discrete_mechanism("negative_uniform") is DISCRETE["negative_uniform"]
    assert continuous_mechanism("additive_laplace") is CONTINUOUS["additive_laplace"]
    assert discrete_mechanism("additive_laplace") is None
    assert continuous_mechanism("nope") is None


def test_epsilon_is_published_for_the_staircase_covering_the_range_only():
    staircase = CONTINUOUS["additive_staircase"]
    params = {"epsilon": 1.5, "sensitivity": 10.0}
    assert staircase.epsilon(params, (0.0, 10.0)) == pytest.approx(1.5)
    assert staircase.epsilon(params, (5.0, 12.0)) == pytest.approx(1.5)
    assert staircase.epsilon(params, (0.0, 10.5)) is None  # wider than the sensitivity
    assert CONTINUOUS["additive_laplace"].epsilon({"scale": 1.0}, (0.0, 1.0)) is None


@pytest.mark.parametrize(
    ("name", "params", "variance"),
    [
        ("additive_uniform", {"half_width": 6.0}, 12.0),
        ("additive_gaussian", {"sigma": 3.0}, 9.0),
        ("additive_laplace", {"scale": 2.0}, 8.0),
        ("retention_replacement", {"retain": 0.5}, None),
        ("none", {}, None),
    ],
)
def test_noise_variance_of_each_mechanism(name, params, variance):
    found = CONTINUOUS[name].noise_variance(params)
    assert found == (None if variance is None else pytest.approx(variance))


def test_staircase_variance_is_its_noise_models():
    params = {"epsilon": 1.0, "sensitivity": 4.0}
    model = noise_model("additive_staircase", **params)
    assert CONTINUOUS["additive_staircase"].noise_variance(params) == pytest.approx(model.std**2)


def test_noise_takes_the_range_only_where_the_model_needs_it():
    rr = CONTINUOUS["retention_replacement"].noise((2.0, 8.0), {"retain": 0.25})
    assert (rr.retain, rr.low, rr.high) == (0.25, 2.0, 8.0)
    gaussian = CONTINUOUS["additive_gaussian"].noise((2.0, 8.0), {"sigma": 1.5})
    assert gaussian.std == pytest.approx(1.5)


def test_noise_model_names_the_unknown_and_the_known():
    with pytest.raises(ValueError) as caught:
        noise_model("additive_cauchy", scale=1.0)
    assert caught.value.message.params == {
        "name": "'additive_cauchy'",
        "names": str(sorted(CONTINUOUS)),
    }


def test_noise_model_names_missing_and_unexpected_parameters():
    with pytest.raises(ValueError, match="needs parameter") as caught:
        noise_model("additive_staircase", epsilon=1.0)
    assert caught.value.message.params == {
        "name": "additive_staircase",
        "missing": "['sensitivity']",
    }
    with pytest.raises(ValueError, match="does not take") as caught:
        noise_model("additive_gaussian", sigma=1.0, scale=2.0, bias=0.0)
    assert caught.value.message.params == {
        "name": "additive_gaussian",
        "unexpected": "['bias', 'scale']",
    }


@pytest.mark.parametrize(
    ("mechanism", "expected"),
    [
        ({"name": "randomised_response", "retain": 0.25}, {"retain": "25"}),
        ({"name": "randomised_response", "retain": 0.8}, {"retain": "80"}),
        ({"name": "retention_replacement", "retain": 0.6}, {"retain": "60"}),
        ({"name": "additive_uniform", "half_width": 2.5}, {"size": "2.5"}),
        ({"name": "additive_gaussian", "sigma": 4}, {"size": "4"}),
        ({"name": "additive_laplace", "scale": 1.0}, {"size": "1.41"}),
        ({"name": "negative_uniform"}, {}),
    ],
)
def test_report_sentence_parameters(mechanism, expected):
    found = report_sentence(mechanism)
    assert found is not None
    assert found[1] == expected


def test_report_sentence_of_a_matrix_says_it_followed_a_table():
    from privacy.mechanisms.descriptors import MATRIX_SENTENCE

    matrix = {"name": "randomised_response", "matrix": [[0.8, 0.2], [0.2, 0.8]]}
    assert report_sentence(matrix) == (MATRIX_SENTENCE, {})
    retain = report_sentence({"name": "randomised_response", "retain": 0.5})
    assert retain is not None and retain[0] != MATRIX_SENTENCE
    # other mechanisms without retain keep their own sentence
    none = report_sentence({"name": "none"})
    assert none is not None and none[0] == DISCRETE["none"].sentence != MATRIX_SENTENCE
    negative = report_sentence({"name": "negative_manual"})
    assert negative is not None and negative[0] == DISCRETE["negative_manual"].sentence
    assert report_sentence({"name": "additive_cauchy"}) is None


def _worst_log_ratio(model, low: float, high: float, resolution: float) -> float:
    """ln max over reports j and true values x, x' of P(j | x) / P(j | x'), exactly from the
    grid law's channel: true values on every grid point and between them, one reported
    bin per grid value (outer bins open, holding the tails)."""
    steps = round((high - low) / resolution)
    reach = 40
    edges = low + resolution * (np.arange(-reach, steps + reach + 2) - 0.5)
    points = np.linspace(low, high, 4 * steps + 1)
    channel = model.point_channel(points, edges)
    used = channel.max(axis=0) > 0
    return float(np.log(np.max(channel[:, used].max(axis=0) / channel[:, used].min(axis=0))))


@pytest.mark.parametrize(("retain", "low", "high", "resolution"), [
    (0.5, 0.0, 9.0, 1.0), (0.8, 16.0, 26.0, 0.5), (0.3, -2.0, 2.0, 0.25),
])  # fmt: skip
def test_retention_replacements_pure_epsilon_on_a_grid_is_its_exact_worst_ratio(
    retain, low, high, resolution
):
    """Issue 28: ln(1 + p P / (1 - p)) with P grid points is the channel's worst ratio (a
    budget may charge it); off the grid it is unbounded (None)."""
    from privacy.mechanisms.grid import grid_noise

    mechanism = CONTINUOUS["retention_replacement"]
    eps = mechanism.epsilon({"retain": retain}, (low, high), resolution)
    model = grid_noise(mechanism.noise((low, high), {"retain": retain}), low, resolution)
    assert eps == pytest.approx(_worst_log_ratio(model, low, high, resolution), rel=1e-9)
    assert mechanism.epsilon({"retain": retain}, (low, high), None) is None
    assert mechanism.epsilon({"retain": 1.0}, (low, high), resolution) is None


@pytest.mark.parametrize(("scale", "low", "high", "resolution"), [
    (5.0, 0.0, 10.0, 1.0), (21.0, 16.0, 100.0, 1.0), (2.0, 0.0, 3.0, 0.5),
])  # fmt: skip
def test_laplace_pure_epsilon_on_a_grid_bounds_its_worst_ratio_tightly(
    scale, low, high, resolution
):
    """(high - low) / scale bounds the discrete Laplace channel's worst ratio and is
    reached (far reports from the two ends); the Gaussian and uniform noise have none."""
    from privacy.mechanisms.grid import grid_noise

    mechanism = CONTINUOUS["additive_laplace"]
    eps = mechanism.epsilon({"scale": scale}, (low, high), resolution)
    model = grid_noise(mechanism.noise((low, high), {"scale": scale}), low, resolution)
    worst = _worst_log_ratio(model, low, high, resolution)
    assert eps == pytest.approx((high - low) / scale)
    assert worst <= eps * (1 + 1e-9) and worst == pytest.approx(eps, rel=1e-6)
    for name, params in (
        ("additive_gaussian", {"sigma": 3.0}),
        ("additive_uniform", {"half_width": 3.0}),
    ):
        assert CONTINUOUS[name].epsilon(params, (low, high), resolution) is None


# ---------------------------------------------------- pure epsilon on a reporting grid
# (issue 28's budget adds up these epsilons: each rule below is a privacy guarantee)


def test_laplace_on_a_grid_has_epsilon_range_over_scale():
    laplace = CONTINUOUS["additive_laplace"]
    assert laplace.epsilon({"scale": 20.0}, (0.0, 100.0), 1.0) == pytest.approx(5.0)
    assert laplace.epsilon({"scale": 20.0}, (50.0, 100.0), 0.5) == pytest.approx(2.5)
    # off the grid (legacy floating-point noise) it is unbounded
    assert laplace.epsilon({"scale": 20.0}, (0.0, 100.0)) is None


def test_retention_replacement_on_a_grid_has_epsilon_from_its_grid_points():
    rr = CONTINUOUS["retention_replacement"]
    # 0..10 by 1: 11 points; ln(1 + 0.5 * 11 / 0.5) = ln 12
    assert rr.epsilon({"retain": 0.5}, (0.0, 10.0), 1.0) == pytest.approx(np.log(12.0))
    # 0..10 by 0.5: 21 points; ln(1 + 0.2 * 21 / 0.8)
    assert rr.epsilon({"retain": 0.2}, (0.0, 10.0), 0.5) == pytest.approx(np.log1p(0.2 * 21 / 0.8))
    # a range that is not a whole number of steps rounds to the nearest count of points
    assert rr.epsilon({"retain": 0.5}, (0.0, 10.4), 1.0) == pytest.approx(np.log(12.0))
    assert rr.epsilon({"retain": 0.5}, (0.0, 10.6), 1.0) == pytest.approx(np.log(13.0))


@pytest.mark.parametrize("retain", [1.0, 0.0])
def test_retention_replacement_without_a_random_share_or_a_kept_share_is_not_bounded(retain):
    assert CONTINUOUS["retention_replacement"].epsilon({"retain": retain}, (0.0, 10.0), 1.0) is None


@pytest.mark.parametrize("resolution", [None, 0.0, -1.0, float("inf"), float("nan")])
def test_epsilon_needs_a_positive_finite_grid(resolution):
    for name, params in (
        ("additive_laplace", {"scale": 2.0}),
        ("retention_replacement", {"retain": 0.5}),
    ):
        assert CONTINUOUS[name].epsilon(params, (0.0, 10.0), resolution) is None, name


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("additive_gaussian", {"sigma": 2.0}),
        ("additive_uniform", {"half_width": 2.0}),
        ("none", {}),
    ],
)
def test_gaussian_uniform_and_no_noise_have_no_pure_epsilon_even_on_a_grid(name, params):
    assert CONTINUOUS[name].epsilon(params, (0.0, 10.0), 1.0) is None


def test_the_staircases_epsilon_does_not_depend_on_a_grid():
    staircase = CONTINUOUS["additive_staircase"]
    params = {"epsilon": 1.5, "sensitivity": 10.0}
    assert staircase.epsilon(params, (0.0, 10.0), 1.0) == pytest.approx(1.5)
    assert staircase.epsilon(params, (0.0, 20.0), 1.0) is None
