"""Client-side distortion (architecture.md, step 2): vectorised and faithful to the channel."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from privacy.mechanisms import (
    AdditiveGaussian,
    distort_codes,
    distort_values,
    negative_uniform,
)


def test_distort_codes_follows_every_row_of_an_asymmetric_channel() -> None:
    channel = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.0, 0.5, 0.5]])
    rng = np.random.default_rng(1)
    codes = np.repeat(np.arange(3), 200_000)
    reported = distort_codes(codes, channel, rng)
    for i in range(3):
        frequencies = np.bincount(reported[codes == i], minlength=3) / 200_000
        # 4 standard errors of a proportion with n = 200,000 is below 0.0045.
        assert_allclose(frequencies, channel[i], atol=0.0045)
    assert not np.any(reported[codes == 2] == 0)  # probability 0 is never reported


def test_negative_survey_never_reports_the_true_category() -> None:
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 4, 500_000)
    reported = distort_codes(codes, negative_uniform(4), rng)
    assert not np.any(reported == codes)


def test_distort_codes_is_reproducible_and_keeps_shape() -> None:
    channel = negative_uniform(3)
    codes = np.array([[0, 1], [2, 0]])
    a = distort_codes(codes, channel, np.random.default_rng(5))
    b = distort_codes(codes, channel, np.random.default_rng(5))
    assert a.shape == (2, 2)
    assert np.array_equal(a, b)


def test_distort_codes_rejects_codes_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"0\.\.2"):
        distort_codes([0, 3], negative_uniform(3), np.random.default_rng(0))


def test_distort_values_delegates_to_the_noise_model() -> None:
    values = np.zeros(100_000)
    reported = distort_values(values, AdditiveGaussian(2.0), np.random.default_rng(0))
    assert_allclose(reported.std(), 2.0, rtol=0.02)
    with pytest.raises(ValueError, match="noise model"):
        distort_values(values, "gaussian", np.random.default_rng(0))  # type: ignore[arg-type]
