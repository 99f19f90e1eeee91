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
