"""Small-count disclosure control (002_f0fd5869fe299975.txt)."""

import pytest

from privacy.mechanisms import non_response_interval, question_publishable, suppress_counts


def test_option_threshold_example_of_002() -> None:
    result = suppress_counts([42, 33, 2, 4, 9])
    assert result.counts == (42, 33, None, None, 9)
    assert result.labels() == ("42", "33", "less than 5", "less than 5", "9")
    assert suppress_counts([5, 4]).suppressed == (False, True)


def test_thresholds_are_parameters() -> None:
    assert suppress_counts([9, 10], option_threshold=10).suppressed == (True, False)
    assert not question_publishable(9)
    assert question_publishable(10)
    assert question_publishable(15, question_threshold=15)
    assert not question_publishable(14, question_threshold=15)


def test_non_response_interval_examples_of_002() -> None:
    interval = non_response_interval(100, [42, 33, 2, 4, 9])
    assert (interval.low, interval.high) == (8, 16)
    assert interval.label() == "between 8 and 16"
    clamped = non_response_interval(20, [17, 2])
    assert (clamped.low, clamped.high) == (0, 3)  # "between 0 and 3", not -1


def test_non_response_interval_leaks_nothing_about_suppressed_cells() -> None:
    # Two tables the reader cannot tell apart give the same interval.
    assert non_response_interval(100, [42, 33, 2, 4, 9]) == non_response_interval(
        100, [42, 33, 0, 4, 9]
    )
    assert non_response_interval(100, [42, 33, 1, 3, 9]) == non_response_interval(
        100, [42, 33, 4, 0, 9]
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: suppress_counts([3, -1]), "non-negative"),
        (lambda: suppress_counts([3, 1], option_threshold=0), "option_threshold"),
        (lambda: question_publishable(5, question_threshold=-2), "question_threshold"),
        (lambda: non_response_interval(10, [8, 7]), "only 10 participants"),
    ],
)
def test_bad_inputs_are_refused(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


def test_a_group_is_published_only_when_its_whole_interval_clears_the_threshold() -> None:
    # Issue 10, finding 4: a point estimate of 12 cleared the threshold of 5 for a true
    # group of 3; the decision now follows the size's 95% interval.
    from privacy.mechanisms import group_publishable

    assert not group_publishable((2.0, 22.0), threshold=5)
    assert group_publishable((5.0, 22.0), threshold=5)
    assert not group_publishable((float("nan"), float("nan")), threshold=5)


# --- boundaries that mutation testing found untested (issue 33) --------------------------


@pytest.mark.parametrize("threshold", [True, 2.5, "5", 0, -1])
def test_a_threshold_must_be_a_positive_integer(threshold: object) -> None:
    with pytest.raises(
        ValueError, match=f"option_threshold must be a positive integer, got {threshold!r}"
    ):
        suppress_counts([3, 7], option_threshold=threshold)  # type: ignore[arg-type]


def test_a_threshold_of_1_hides_only_zeros() -> None:
    assert suppress_counts([0, 1, 0.5], option_threshold=1).suppressed == (True, False, True)
    assert question_publishable(1, question_threshold=1)
    assert not question_publishable(0, question_threshold=1)


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([[1, 2], [3, 4]], r"counts must be a 1-D vector, got shape \(2, 2\)"),
        ([3, float("nan")], "counts must be finite"),
        ([3, float("inf")], "counts must be finite"),
        ([3, -0.5], "counts must be non-negative, found -0.5"),
    ],
)
def test_bad_counts_are_refused_naming_the_problem(counts: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        suppress_counts(counts)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        non_response_interval(100, counts)  # type: ignore[arg-type]


def test_no_responses_is_a_question_below_the_threshold_not_an_error() -> None:
    assert not question_publishable(0)
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="n_responses must be a non-negative number"):
            question_publishable(bad)


def test_every_participant_answering_leaves_no_non_responses() -> None:
    interval = non_response_interval(10, [5, 5])
    assert (interval.low, interval.high) == (0.0, 0.0)
    assert interval.label() == "0"
    assert non_response_interval(16, [5, 5]).label() == "6"
    for bad in (-1, float("nan")):
        with pytest.raises(ValueError, match="n_participants must be a non-negative number"):
            non_response_interval(bad, [5, 5])


def test_the_non_response_bounds_use_the_threshold_minus_one_per_hidden_option() -> None:
    # Shown: 42 + 33 + 9 = 84 of 100; two hidden options of at most 4 each.
    interval = non_response_interval(100, [42, 33, 2, 4, 9])
    assert (interval.low, interval.high) == (8.0, 16.0)
    # A count equal to the threshold is shown, so it is not a hidden option.
    assert non_response_interval(100, [42, 33, 5, 4, 9]) == non_response_interval(
        100, [42, 33, 5, 0, 9]
    )
    interval = non_response_interval(100, [42, 33, 5, 4, 9])
    assert (interval.low, interval.high) == (7.0, 11.0)


def test_an_interval_must_be_two_numbers_and_an_infinite_bound_is_not_evidence() -> None:
    from privacy.mechanisms import group_publishable

    with pytest.raises(ValueError, match="interval must be"):
        group_publishable((5.0, 6.0, 7.0), threshold=5)
    assert not group_publishable((float("inf"), float("inf")), threshold=5)
    assert group_publishable([[5.0, 9.0]], threshold=5)
    with pytest.raises(ValueError, match="threshold must be a positive integer"):
        group_publishable((5.0, 9.0), threshold=True)  # type: ignore[arg-type]


def test_each_threshold_is_named_in_its_refusal() -> None:
    with pytest.raises(ValueError, match=r"^option_threshold must be a positive integer, got 0"):
        non_response_interval(10, [1], option_threshold=0)
    with pytest.raises(ValueError, match=r"^question_threshold must be a positive integer, got 0"):
        question_publishable(5, question_threshold=0)


def test_a_survey_without_participants_has_no_non_responses() -> None:
    interval = non_response_interval(0, [])
    assert (interval.low, interval.high) == (0.0, 0.0)


def test_a_missing_bound_is_not_evidence_of_a_large_group() -> None:
    from privacy.mechanisms import group_publishable

    assert not group_publishable((None, 9.0), threshold=5)
    assert not group_publishable([None, None], threshold=5)
