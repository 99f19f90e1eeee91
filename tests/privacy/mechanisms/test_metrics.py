"""Privacy metrics: epsilon of local DP and 004's privacy level (Section 5.1)."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from privacy.mechanisms import (
    epsilon,
    negative_gaussian,
    negative_uniform,
    privacy_level,
    privacy_levels,
    randomised_response,
)


def test_epsilon_of_randomised_response() -> None:
    # api.md's example: retain 0.7 with 2 categories has epsilon = ln(0.7/0.3) = 0.847.
    value = epsilon(randomised_response(2, 0.7))
    assert value is not None
    assert_allclose(value, math.log(0.7 / 0.3), rtol=1e-12)
    assert round(value, 3) == 0.847


def test_epsilon_of_asymmetric_channel_takes_the_worst_column() -> None:
    channel = np.array([[0.8, 0.2], [0.4, 0.6]])
    assert_allclose(epsilon(channel), math.log(3.0), rtol=1e-12)  # column 1: 0.6/0.2


def test_epsilon_is_unbounded_for_negative_surveys() -> None:
    assert epsilon(negative_uniform(5)) is None
    assert epsilon(np.array([[1.0, 0.0], [0.0, 1.0]])) is None


def test_epsilon_ignores_never_reported_columns() -> None:
    assert_allclose(epsilon(np.array([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]])), math.log(2.0))


def test_privacy_level_of_the_worked_example_of_004() -> None:
    # A participant of category 3 reporting 1, sigma = 2, 7 categories: 1 - 0.176 / 0.63.
    levels = privacy_levels(negative_gaussian(7, 2.0))
    column = negative_gaussian(7, 2.0)[:, 0]
    assert_allclose(levels[2, 0], 1 - column[2] / column.sum(), rtol=1e-12)
    assert_allclose(levels[2, 0], 0.72, atol=0.005)


def test_privacy_level_extremes() -> None:
    assert_allclose(privacy_level(np.eye(4)), 0.0, atol=1e-15)
    for c in (3, 5, 10):
        assert_allclose(privacy_level(negative_uniform(c)), (c - 2) / (c - 1), rtol=1e-12)
    # Wider Gaussians protect more (004, Section 6.1.2).
    narrow = privacy_level(negative_gaussian(20, 0.5))
    wide = privacy_level(negative_gaussian(20, 3.0))
    assert narrow < wide < privacy_level(negative_uniform(20)) + 1e-12


def test_privacy_level_validates_prior() -> None:
    with pytest.raises(ValueError, match="prior"):
        privacy_level(negative_uniform(3), prior=[1, 2])


# --- priors, rectangular channels, never-reported columns (issue 33: mutation testing) ------


def test_a_prior_weights_the_posterior_and_is_normalised() -> None:
    channel = [[0.8, 0.2], [0.2, 0.8]]
    # P(0 | 0) = 0.25 * 0.8 / (0.25 * 0.8 + 0.75 * 0.2) = 0.2 / 0.35.
    levels = privacy_levels(channel, prior=[1.0, 3.0])
    assert_allclose(levels[0, 0], 1 - 0.2 / 0.35, rtol=1e-12)
    assert_allclose(levels, privacy_levels(channel, prior=[0.25, 0.75]), rtol=1e-12)
    # The survey's level: sum over i, j of w_i C_ij (1 - P(i | j)).
    expected = (0.25 * 0.8 * (0.15 / 0.35) + 0.25 * 0.2 * (0.6 / 0.65)) + (
        0.75 * 0.2 * (0.2 / 0.35) + 0.75 * 0.8 * (0.05 / 0.65)
    )
    assert privacy_level(channel, prior=[1.0, 3.0]) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "prior", [[1.0, -0.5], [float("nan"), 1.0], [0.0, 0.0], [1.0, float("inf")]]
)
def test_a_prior_must_be_finite_non_negative_and_not_all_zero(prior: list[float]) -> None:
    with pytest.raises(ValueError, match="prior must be finite, non-negative and not all zero"):
        privacy_levels([[0.8, 0.2], [0.2, 0.8]], prior=prior)


def test_a_prior_may_leave_out_a_category() -> None:
    levels = privacy_levels([[0.8, 0.2], [0.2, 0.8]], prior=[0.0, 1.0])
    assert_allclose(levels, [[1.0, 1.0], [0.0, 0.0]], atol=1e-15)


def test_a_rectangular_channel_weighs_its_true_categories() -> None:
    # Two true categories, three reports; the uniform prior has two entries, not three.
    channel = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
    levels = privacy_levels(channel)
    assert_allclose(levels, [[0.0, 0.5, 1.0], [1.0, 0.5, 0.0]], atol=1e-15)
    assert privacy_level(channel) == pytest.approx(0.25)


def test_a_never_reported_column_is_nan_without_warnings() -> None:
    import warnings

    channel = [[1.0, 0.0], [1.0, 0.0]]  # every report is 0; column 1 never occurs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        levels = privacy_levels(channel)
    assert_allclose(levels[:, 0], [0.5, 0.5], atol=1e-15)
    assert np.isnan(levels[:, 1]).all()
    assert privacy_level(channel) == pytest.approx(0.5)
