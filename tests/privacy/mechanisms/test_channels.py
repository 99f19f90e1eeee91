"""Channels of the discrete mechanisms (architecture.md; 003 formulas (6), (8); 000 s. 4.1)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from privacy.mechanisms import (
    channel_conditioning,
    custom_channel,
    manual_negative,
    negative_gaussian,
    negative_uniform,
    randomised_response,
    require_invertible,
    validate_channel,
    validate_stochastic,
)


def test_randomised_response_has_retain_on_the_diagonal() -> None:
    channel = randomised_response(4, 0.7)
    assert_allclose(np.diag(channel), 0.7, rtol=0, atol=1e-15)
    assert_allclose(channel[0, 1:], 0.1, rtol=0, atol=1e-15)
    assert_allclose(channel.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("retain", [0.0, -0.1, 1.5, float("nan")])
def test_randomised_response_rejects_bad_retain(retain: float) -> None:
    with pytest.raises(ValueError, match="retain"):
        randomised_response(3, retain)


def test_negative_uniform_is_formula_6_of_003() -> None:
    channel = negative_uniform(5)
    assert_allclose(np.diag(channel), 0.0, atol=0)
    assert_allclose(channel[0, 1:], 0.25, atol=1e-15)


def test_two_category_negative_survey_is_refused() -> None:
    with pytest.raises(ValueError, match="reveals the true answer"):
        negative_uniform(2)
    with pytest.raises(ValueError, match="reveals the true answer"):
        negative_gaussian(2, 1.0)
    with pytest.raises(ValueError, match="reveals the true answer"):
        manual_negative(2)


def test_negative_gaussian_reproduces_the_worked_example_of_004() -> None:
    # 004, Section 5.1: 7 categories, Pr_{k,1} = 30.7%, 17.6%, 9% for k = 2, 3, 4 (sigma = 2).
    # 004 prints 3.2%, 1.6%, 0.5% for k = 5..7, which the renormalised Gaussian gives as
    # 3.9%, 1.5%, 0.6%; only the first three are checked (the damaged text may have
    # adjusted those probabilities, "Table 2").
    channel = negative_gaussian(7, 2.0)
    assert_allclose(channel[1:4, 0], [0.307, 0.176, 0.090], atol=6e-4)
    # Row 4 of 004's example: 9%, 16.7%, 24.3% on both sides of the true category.
    assert_allclose(channel[3], [0.0895, 0.167, 0.243, 0, 0.243, 0.167, 0.0895], atol=6e-4)


def test_negative_gaussian_is_stable_for_tiny_sigma() -> None:
    channel = negative_gaussian(5, 1e-3)
    assert_allclose(channel[2], [0, 0.5, 0, 0.5, 0], atol=1e-12)
    assert_allclose(channel[0], [0, 1, 0, 0, 0], atol=1e-12)


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("inf")])
def test_negative_gaussian_rejects_bad_sigma(sigma: float) -> None:
    with pytest.raises(ValueError, match="sigma"):
        negative_gaussian(5, sigma)


def test_manual_negative_estimates_rows_from_pairs_and_revises_the_diagonal() -> None:
    # Category 0: 3 pairs (one on the diagonal, dropped), category 2: all on the diagonal.
    pairs = [(0, 1), (0, 2), (0, 0), (0, 2), (2, 2), (2, 2)]
    channel = manual_negative(4, pairs)
    assert_allclose(channel[0], [0, 1 / 3, 2 / 3, 0], atol=1e-15)
    uniform = np.array([1, 1, 1, 0]) / 3
    assert_allclose(channel[3], uniform, atol=1e-15)  # no pairs: uniform negative row
    assert_allclose(channel[2], [1 / 3, 1 / 3, 0, 1 / 3], atol=1e-15)  # all on diagonal
    assert_allclose(np.diag(channel), 0.0, atol=0)


def test_manual_negative_without_pairs_is_the_uniform_survey() -> None:
    assert_allclose(manual_negative(4), negative_uniform(4), atol=0)
    assert_allclose(manual_negative(4, np.empty((0, 2))), negative_uniform(4), atol=0)


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([(0, 4)], r"0\.\.3"),
        ([(-1, 2)], r"0\.\.3"),
        ([(0, 1, 2)], r"shape \(m, 2\)"),
        ([(0.5, 1)], "integer"),
    ],
)
def test_manual_negative_validates_pairs(pairs: list[tuple[float, ...]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        manual_negative(4, pairs)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ([[0.5, 0.5]], "square"),
        ([1.0, 0.0], "2-D"),
        ([[1.0]], "at least 2"),
        ([[0.5, 0.5], [0.2, 0.7]], "row 1 sums to"),
        ([[1.2, -0.2], [0.5, 0.5]], "row 0 has a negative"),
        ([[np.nan, 1.0], [0.5, 0.5]], "row 0 has a non-finite"),
    ],
)
def test_validate_channel_says_what_is_wrong(matrix: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_channel(matrix)  # type: ignore[arg-type]


def test_custom_channel_returns_a_copy() -> None:
    matrix = np.array([[0.6, 0.4], [0.3, 0.7]])
    channel = custom_channel(matrix)
    channel[0, 0] = 0
    assert matrix[0, 0] == 0.6


@settings(max_examples=60, deadline=None)
@given(k=st.integers(3, 30), sigma=st.floats(0.05, 50), retain=st.floats(0.01, 1.0))
def test_every_constructor_gives_a_valid_channel(k: int, sigma: float, retain: float) -> None:
    for channel in (
        randomised_response(k, retain),
        negative_uniform(k),
        negative_gaussian(k, sigma),
        manual_negative(k),
    ):
        validate_channel(channel)
        assert channel.shape == (k, k)


# ------------------------------------------------------------------ invertibility (issue 10)


@pytest.mark.parametrize(("k", "retain"), [(2, 0.5), (4, 0.25), (3, 0.2), (2, 0.505)])
def test_randomised_response_without_information_is_refused(k: int, retain: float) -> None:
    from privacy.mechanisms import channel_conditioning

    checked = channel_conditioning(randomised_response(k, retain), retain=retain)
    assert checked.problem is not None and not checked.wide


def test_a_singular_channel_is_refused_whatever_it_is_called() -> None:
    from privacy.mechanisms import channel_conditioning, require_invertible

    singular = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.5, 0.5, 0.0]])
    assert "singular" in str(channel_conditioning(singular).problem)
    with pytest.raises(ValueError, match="singular"):
        require_invertible(randomised_response(2, 0.5))
    # RR on k categories has condition number (k - 1) / (k retain - 1): 101 at retain 0.505.
    assert channel_conditioning(randomised_response(2, 0.505)).condition == pytest.approx(100.0)


def test_usable_channels_are_accepted_and_wide_ones_carry_a_note() -> None:
    from privacy.mechanisms import channel_conditioning

    for channel in (randomised_response(5, 0.7), negative_uniform(5), negative_gaussian(7, 2)):
        checked = channel_conditioning(channel)
        assert checked.problem is None and checked.note() is None, checked
    wide = channel_conditioning(randomised_response(4, 0.26), retain=0.26)
    assert wide.problem is None and wide.wide
    assert "condition number 75" in str(wide.note())


# --- input checks and messages that mutation testing found untested (issue 33) ------------


@pytest.mark.parametrize("k", [2.5, 3.0, "3", True, None])
def test_k_must_be_an_integer_number_of_categories(k: object) -> None:
    with pytest.raises(ValueError, match=f"k must be an integer number of categories, got {k!r}"):
        randomised_response(k, 0.8)  # type: ignore[arg-type]


def test_k_may_be_a_numpy_integer_and_below_the_minimum_is_named() -> None:
    assert randomised_response(np.int64(3), 0.8).shape == (3, 3)
    with pytest.raises(ValueError, match="k must be at least 2, got 1"):
        randomised_response(1, 0.8)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0)])
def test_an_empty_matrix_is_refused_also_when_rectangular(shape: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match=rf"channel must not be empty, got shape \({shape[0]}, "):
        validate_stochastic(np.zeros(shape))


def test_a_channel_of_integers_is_returned_as_floats() -> None:
    checked = validate_channel([[1, 0], [0, 1]])
    assert checked.dtype == np.float64
    assert checked.flags.c_contiguous


@pytest.mark.parametrize(
    ("channel", "message"),
    [
        ([[0.5, "a"], [0.5, 0.5]], "channel must be a numeric matrix: could not convert"),
        ([0.5, 0.5], r"channel must be a 2-D matrix, got an array with shape \(2,\)"),
        ([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]], r"channel must be square, got shape \(2, 3\)"),
        ([[1.0]], "channel needs at least 2 categories, got k=1"),
        ([[1.0, 0.0], [np.nan, 1.0]], "channel row 1 has a non-finite entry"),
        ([[1.0, 0.0], [-0.5, 1.5]], "channel row 1 has a negative entry"),
        ([[1.0, 0.0], [0.4, 0.8]], "channel row 1 sums to 1.2000000000000002, not 1"),
        ([[0.5, 0.5 + 1.5e-9], [0.5, 0.5]], "channel row 0 sums to 1.0000000015"),
    ],
)
def test_a_bad_channel_is_refused_naming_the_problem(channel: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_channel(channel)  # type: ignore[arg-type]


def test_a_row_sum_within_the_tolerance_is_accepted() -> None:
    validate_channel([[0.5, 0.5 + 0.5e-9], [0.5, 0.5]])


def test_retain_1_keeps_every_answer_and_bad_retain_is_named() -> None:
    assert_allclose(randomised_response(3, 1.0), np.eye(3), atol=0)
    with pytest.raises(ValueError, match=r"retain must be in \(0, 1\], got 1.5"):
        randomised_response(3, 1.5)


def test_bad_sigma_is_named() -> None:
    with pytest.raises(ValueError, match=r"sigma must be > 0 and finite, got -1\.0"):
        negative_gaussian(5, -1.0)


def test_calibration_pairs_of_whole_floats_are_codes_and_others_are_refused() -> None:
    assert_allclose(manual_negative(3, [[0.0, 2.0]]), manual_negative(3, [[0, 2]]), atol=0)
    with pytest.raises(ValueError, match="pairs must be integer category codes"):
        manual_negative(3, [[0.5, 2.0]])
    with pytest.raises(ValueError, match=r"pairs must lie in 0..2, found -1"):
        manual_negative(3, [[0, 1], [-1, 2]])
    with pytest.raises(ValueError, match=r"pairs must lie in 0..2, found 5"):
        manual_negative(3, [[0, 1], [5, 2]])
    with pytest.raises(ValueError, match=r"pairs must have shape \(m, 2\)"):
        manual_negative(3, [1])


def test_one_calibration_pair_sets_its_row() -> None:
    channel = manual_negative(3, [[0, 2]])
    assert_allclose(channel[0], [0.0, 0.0, 1.0], atol=0)
    assert_allclose(channel[1:], negative_uniform(3)[1:], atol=0)


def test_retain_at_chance_is_refused_as_uninformative_not_as_singular() -> None:
    checked = channel_conditioning(randomised_response(2, 0.5), retain=0.5)
    assert str(checked.problem).startswith(
        "retain must exceed 1/k = 1/2 = 0.5: with retain 0.5 the reported answer"
    )
    checked = channel_conditioning(randomised_response(4, 0.2), retain=0.2)
    assert "1/k = 1/4 = 0.25: with retain 0.2 " in str(checked.problem)


def test_a_singular_channel_has_an_infinite_condition_number_and_says_so() -> None:
    for channel in (randomised_response(2, 0.5), randomised_response(3, 1 / 3)):
        checked = channel_conditioning(channel)
        assert checked.condition == float("inf")
        assert str(checked.problem).startswith("the channel is singular (condition number inf")
        assert not checked.wide
    nearly = channel_conditioning(randomised_response(2, 0.501))
    assert str(nearly.problem).startswith(
        "the channel is nearly singular (condition number 500, at most 100 accepted)"
    )


def test_the_condition_limit_is_inclusive_and_require_invertible_passes_it_on() -> None:
    channel = randomised_response(2, 0.6)  # condition 1 / (2 * 0.6 - 1) = 5
    condition = channel_conditioning(channel).condition
    assert condition == pytest.approx(5.0)
    assert channel_conditioning(channel, max_condition=condition).problem is None
    assert require_invertible(channel) == pytest.approx(5.0)
    with pytest.raises(ValueError, match=r"nearly singular \(condition number 5, at most 4 "):
        require_invertible(channel, max_condition=4.0)


def test_codes_are_integers_or_whole_floats_of_any_float_width() -> None:
    whole32 = np.array([[0, 2]], dtype=np.float32)
    assert_allclose(manual_negative(3, whole32), manual_negative(3, [[0, 2]]), atol=0)
    for bad in (np.array([[True, False]]), np.array([["0", "2"]])):
        with pytest.raises(ValueError, match="pairs must be integer category codes, got dtype"):
            manual_negative(3, bad)


def test_distorted_codes_out_of_range_are_named_codes() -> None:
    from privacy.mechanisms import distort_codes

    with pytest.raises(ValueError, match=r"codes must lie in 0..1, found 2"):
        distort_codes([0, 2], randomised_response(2, 0.8), np.random.default_rng(0))
    with pytest.raises(ValueError, match="codes must be integer category codes"):
        distort_codes([0.5], randomised_response(2, 0.8), np.random.default_rng(0))
