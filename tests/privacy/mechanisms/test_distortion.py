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


# --- the draw at the edges of the CDF (issue 33: mutation testing) -------------------------


class _Draws:
    """A generator whose uniform draws are given: the edges no seed reliably reaches."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self, n: int) -> np.ndarray:
        return np.full(n, self.value)


JUST_BELOW_1 = float(np.nextafter(1.0, 0.0))


def test_a_category_of_probability_0_is_never_reported_at_the_top_of_the_cdf() -> None:
    # Ten categories of 0.1 sum to 0.9999999999999999: a draw just below 1 lies past
    # them and must still report the last possible category (9), not the impossible 10/11.
    channel = np.array([[0.1] * 10 + [0.0, 0.0]])
    assert distort_codes([0], channel, _Draws(JUST_BELOW_1)).tolist() == [9]  # type: ignore[arg-type]


def test_a_draw_that_rounds_up_to_the_next_row_stays_in_its_row() -> None:
    # 1 + (1 - 2**-53) rounds to 2.0, the next row's start: the report is capped at the
    # last possible category of code 1, never a category index past the channel.
    channel = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    assert distort_codes([1, 0], channel, _Draws(JUST_BELOW_1)).tolist() == [1, 1]  # type: ignore[arg-type]


def test_a_draw_on_a_cdf_step_reports_the_category_it_starts() -> None:
    # Inverse CDF: category j when cdf[j-1] <= u < cdf[j]; a zero-probability first
    # category is skipped even by a draw of exactly 0.
    channel = np.array([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    assert distort_codes([0, 1], channel, _Draws(0.0)).tolist() == [1, 0]  # type: ignore[arg-type]
    assert distort_codes([0, 1], channel, _Draws(0.5)).tolist() == [2, 2]  # type: ignore[arg-type]
