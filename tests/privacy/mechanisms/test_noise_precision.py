"""Noise models compute in float64 whatever the input's dtype (issue 33's equivalent-mutant
review: 'dtype=np.float64 dropped' was listed as equivalent, and is not for float32 input,
which numpy 2 keeps in float32: channels and CDFs lost half their digits)."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.mechanisms import (
    AdditiveGaussian,
    AdditiveLaplace,
    AdditiveStaircase,
    AdditiveUniform,
    NoNoise,
    RetentionReplacement,
)

ADDITIVE = [
    AdditiveUniform(2.5),
    AdditiveGaussian(1.3),
    AdditiveLaplace(0.7),
    AdditiveStaircase(1.0, 3.0),
]
X32 = np.linspace(-4.1, 4.1, 23, dtype=np.float32)
EDGES32 = np.array([-2.3, -0.7, 0.1, 1.9, 3.3], dtype=np.float32)
TRUE32 = np.array([-1.1, 0.3, 2.7], dtype=np.float32)


def same(got, expected):
    got = np.asarray(got)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("model", [*ADDITIVE, NoNoise()], ids=repr)
def test_densities_and_cdfs_of_float32_input_are_float64(model):
    same(model.noise_pdf(X32), model.noise_pdf(X32.astype(np.float64)))
    same(model.noise_cdf(X32), model.noise_cdf(X32.astype(np.float64)))


@pytest.mark.parametrize(
    "model", [*ADDITIVE, NoNoise(), RetentionReplacement(0.6, -3.0, 4.0)], ids=repr
)
def test_channels_of_float32_input_are_float64(model):
    edges64, true64 = EDGES32.astype(np.float64), TRUE32.astype(np.float64)
    same(model.point_channel(TRUE32, EDGES32), model.point_channel(true64, edges64))
    same(model.interval_channel(EDGES32, EDGES32), model.interval_channel(edges64, edges64))


@pytest.mark.parametrize(
    "model", [*ADDITIVE, NoNoise(), RetentionReplacement(0.6, -3.0, 4.0)], ids=repr
)
def test_distorting_float32_values_is_distorting_their_float64_values(model):
    got = model.distort(TRUE32, np.random.default_rng(5))
    same(got, model.distort(TRUE32.astype(np.float64), np.random.default_rng(5)))


def test_retention_replacements_reported_cdf_of_float32_input_is_float64():
    model = RetentionReplacement(0.6, -3.0, 4.0)
    y, x = X32[:, None], TRUE32[None, :]
    same(model.reported_cdf(y, x), model.reported_cdf(y.astype(np.float64), x.astype(np.float64)))


def test_a_float32_prior_is_normalised_in_float64():
    from privacy.mechanisms import negative_gaussian
    from privacy.mechanisms.metrics import privacy_level, privacy_levels

    channel = negative_gaussian(5, 1.5)
    prior32 = np.array([1.0, 2.0, 3.0, 0.7, 0.1], dtype=np.float32)
    prior64 = prior32.astype(np.float64)
    same(privacy_levels(channel, prior32), privacy_levels(channel, prior64))
    assert privacy_level(channel, prior32) == privacy_level(channel, prior64)


def test_non_responses_of_float32_counts_are_summed_in_float64():
    from privacy.mechanisms import non_response_interval

    counts32 = np.array([42.3, 33.1, 2.0, 4.0, 9.7], dtype=np.float32)
    got = non_response_interval(100.0, counts32)
    expected = non_response_interval(100.0, counts32.astype(np.float64))
    assert (got.low, got.high) == (expected.low, expected.high)
