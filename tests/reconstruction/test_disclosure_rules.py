"""The threshold point's rules on known bounds (reconstruction.disclosure; issue 33).

Complementary suppression, worked by hand: which cells a distribution hides given its
cells' 95% intervals, the worst-case interval of the hidden cells' sum that decides when
to stop hiding, and the size of a group without a condition. Each case is one that a
mutant of the rule (a bound's column swapped, the low bound read for the high one, a
stop one cell early) gets wrong; no database is needed.
"""

from __future__ import annotations

import numpy as np
import pytest

from reconstruction import disclosure
from reconstruction.algorithms.queries import Condition
from reconstruction.analysis import AnalysisRequest
from tests.guard.test_disclosure_and_quotas import is_in
from tests.guard.test_disclosure_intervals import _mean, distorted  # noqa: F401
from tests.guard.test_disclosure_intervals import _request as _resolved

# Two hidden cells of 0..10 each, shown cells of 10..12 and 20..21; published total 40.
BOUNDS = [[0.0, 10.0], [0.0, 10.0], [10.0, 12.0], [20.0, 21.0]]
HIDDEN = [True, True, False, False]


def test_the_hidden_sum_without_a_total_is_the_sum_of_the_hidden_bounds() -> None:
    assert disclosure.hidden_total(BOUNDS, HIDDEN) == (0.0, 20.0)
    assert disclosure.hidden_total(BOUNDS, [False, False, True, False]) == (10.0, 12.0)


def test_the_published_total_narrows_the_hidden_sum_from_both_sides() -> None:
    # total - shown highs = 40 - 33 = 7 > 0 (low); total - shown lows = 40 - 30 = 10 < 20.
    assert disclosure.hidden_total(BOUNDS, HIDDEN, 40.0) == (7.0, 10.0)
    # A small total caps the high bound; a large one lifts the low bound.
    assert disclosure.hidden_total(BOUNDS, HIDDEN, 31.0) == (0.0, 1.0)
    assert disclosure.hidden_total(BOUNDS, HIDDEN, 53.0) == (20.0, 20.0)


def test_the_hidden_cells_may_be_given_as_a_0_1_mask() -> None:
    assert disclosure.hidden_total(BOUNDS, [1, 1, 0, 0], 40.0) == (7.0, 10.0)


def test_the_hidden_sum_reads_each_bound_from_its_own_column() -> None:
    # Asymmetric shown bounds: a column swapped gives (10, 7) here, an empty interval.
    low, high = disclosure.hidden_total(BOUNDS, HIDDEN, 40.0)
    assert low <= high
    bounds = np.array([[1.0, 3.0], [2.0, 9.0], [50.0, 60.0]])
    assert disclosure.hidden_total(bounds, [True, True, False], 62.0) == (3.0, 12.0)
    assert disclosure.hidden_total(bounds, [True, True, False], 70.0) == (10.0, 12.0)


def test_suppression_keeps_hiding_while_the_hidden_sum_may_be_small_but_not_empty() -> None:
    # Cells 0 and 1 (0..4 each) are primary; their sum is 0..8: neither publishable nor
    # provably empty, so the next-smallest shown cell (25..35) is hidden too, which makes
    # the sum 25..43 publishable. Reading the low bound (0) as "empty" stops one cell early.
    counts = [1, 2, 30, 40, 50]
    intervals = [[0, 4], [0, 4], [25, 35], [35, 45], [45, 55]]
    hidden = disclosure.hidden_cells(counts, 5, intervals)
    assert hidden.tolist() == [True, True, True, False, False]


def test_suppression_hides_until_the_hidden_sum_is_publishable() -> None:
    # Primary 0..4, 0..4 and 2..6 (each reaches below 5): their sum, 2..14, is not
    # publishable, so the next-smallest shown cell (20..30) is hidden as well.
    counts = [1, 2, 4, 25, 60]
    intervals = [[0, 4], [0, 4], [2, 6], [20, 30], [55, 65]]
    hidden = disclosure.hidden_cells(counts, 5, intervals)
    assert hidden.tolist() == [True, True, True, True, False]


def test_suppression_stops_when_the_hidden_sum_is_provably_empty() -> None:
    # Two exact zeros: their sum (0, 0) says nothing about anyone; nothing more is hidden.
    assert disclosure.hidden_cells([0, 0, 10, 20], 5).tolist() == [True, True, False, False]


def test_a_single_hidden_cell_is_never_left_alone_even_when_it_is_zero() -> None:
    # One hidden cell is derivable from the total by subtraction, whatever its value.
    assert disclosure.hidden_cells([0, 10, 20], 5).tolist() == [True, True, False]
    assert disclosure.hidden_cells([3, 10, 20], 5).tolist() == [True, True, False]
    # The next-smallest shown cell is the one hidden, not the first or the largest.
    assert disclosure.hidden_cells([20, 10, 3, 12], 5).tolist() == [False, True, True, False]


def test_the_published_total_can_make_two_hidden_cells_enough() -> None:
    # Alone the two hidden cells sum to 0..8, but the total (78) minus the shown cells'
    # highs (31 + 41) puts their sum at 6 or more: publishable, nothing more is hidden.
    intervals = [[0, 4], [0, 4], [29, 31], [39, 41]]
    hidden = disclosure.hidden_cells([4, 4, 30, 40], 5, intervals)
    assert hidden.tolist() == [True, True, False, False]


@pytest.mark.parametrize("half_width", [0.25, 0.5])
def test_a_hidden_sum_is_provably_empty_only_below_half_a_person(half_width: float) -> None:
    # Highs summing to 0.5 or 1.0 may still round to a person: keep hiding.
    intervals = [[0, half_width], [0, half_width], [10, 12], [20, 22]]
    hidden = disclosure.hidden_cells([0.1, 0.1, 11, 21], 5, intervals)
    assert hidden.tolist() == [True, True, True, False]
    intervals = [[0, 0.2], [0, 0.2], [10, 12], [20, 22]]
    hidden = disclosure.hidden_cells([0.1, 0.1, 11, 21], 5, intervals)
    assert hidden.tolist() == [True, True, False, False]


def test_among_equal_cells_the_first_is_hidden() -> None:
    # 17 cells (past numpy's small-array sort) with ties at 10: the complement of the one
    # primary cell is the first 10 (index 4), whatever the sort would pick.
    counts = [3, 11, 12, 12, 10, 10, 12, 12, 10, 10, 12, 11, 10, 12, 10, 11, 11]
    hidden = disclosure.hidden_cells(counts, 5)
    assert np.flatnonzero(hidden).tolist() == [0, 4]


def test_suppression_of_nothing_or_everything_needs_no_complement() -> None:
    assert disclosure.hidden_cells([10, 20, 30], 5).tolist() == [False, False, False]
    assert disclosure.hidden_cells([1, 2], 5).tolist() == [True, True]


def test_a_cell_is_judged_on_its_interval_not_its_count() -> None:
    # Counts 12 and 11 whose intervals reach down to 3 and 2 are hidden (their sum, at
    # least 8 given the total, is publishable); count 4 with 5..9 is shown.
    hidden = disclosure.hidden_cells([12, 11, 4, 50], 5, [[3, 21], [2, 20], [5, 9], [40, 60]])
    assert hidden.tolist() == [True, True, False, False]


def _request(where: list[Condition], participants: int) -> AnalysisRequest:
    # The whole-population path reads no survey, question or answer.
    from reconstruction.kinds import count

    return AnalysisRequest(
        survey=None,  # type: ignore[arg-type]
        kind=count.KIND,
        params=count.Request(kind="count"),
        questions={},
        where=where,
        strata=[],
        thresholds=None,  # type: ignore[arg-type]
        participants=participants,
    )


def test_a_group_without_a_condition_is_every_participant_counted_exactly() -> None:
    size = disclosure.group_size(_request([], 37))
    assert size == disclosure.GroupSize(37.0, 37.0, 37.0, True)
    assert size.ci95 == (37.0, 37.0)


def test_an_empty_where_overrides_the_requests_condition() -> None:
    # A panel's eligible pool without a condition: the whole population, even when the
    # request itself has a condition.
    request = _request([Condition("district", "in", {4})], 37)
    assert disclosure.group_size(request, []) == disclosure.GroupSize.counted(37)


def test_check_group_refuses_below_the_threshold_and_names_the_label() -> None:
    disclosure.check_group(disclosure.GroupSize(12.0, 10.0, 14.0, False), 10)
    with pytest.raises(disclosure.JobRefused) as refused:
        disclosure.check_group(disclosure.GroupSize(12.0, 9.0, 14.0, False), 10)
    assert refused.value.reason.startswith("the group this condition selects is too small")
    with pytest.raises(disclosure.JobRefused) as refused:
        disclosure.check_group(
            disclosure.GroupSize(12.0, 9.0, 14.0, False), 10, label="stratum N: "
        )
    text = refused.value.reason
    assert text.startswith("stratum N: the group this condition selects is too small")
    assert "stratum N: " in text
    assert "below 10" in text


@pytest.mark.django_db
def test_group_size_counts_the_given_condition_not_the_requests(distorted) -> None:  # noqa: F811
    _, survey = distorted
    request = _resolved(survey, _mean(survey, is_in("district", "C")))
    other = _resolved(survey, _mean(survey, is_in("district", "N", "S")))
    size = disclosure.group_size(request, other.where)
    assert size == disclosure.group_size(other)
    assert size != disclosure.group_size(request)
    assert size.exact is False


@pytest.mark.django_db
def test_group_size_counts_the_participants_when_the_request_has_not(distorted) -> None:  # noqa: F811
    from dataclasses import replace

    _, survey = distorted
    request = _resolved(survey, _mean(survey, is_in("district", "N", "S")))
    assert request.participants == 200
    uncounted = replace(request, participants=0)
    assert disclosure.group_size(uncounted) == disclosure.group_size(request)


@pytest.mark.django_db
def test_group_size_uses_the_cells_its_caller_read_already(
    distorted,  # noqa: F811
    django_assert_num_queries,
) -> None:
    # sampling reads the group's plan and cells for its posterior and hands them over:
    # the group is judged on them, without reading the responses again
    from reconstruction import analysis

    _, survey = distorted
    request = _resolved(survey, _mean(survey, is_in("district", "N", "S")))
    plan = analysis.plan(request, request.participants)
    table = analysis.cells(request, plan)
    asked: list[list[Condition]] = []

    def counted(conditions: list[Condition]):  # type: ignore[no-untyped-def]
        asked.append(conditions)
        return plan, table

    with django_assert_num_queries(0):
        size = disclosure.group_size(request, counted=counted)
    assert asked == [list(request.where)]
    assert size == disclosure.group_size(request) and size.exact is False


def test_float32_counts_are_judged_on_their_float64_sum():
    # (issue 33's equivalent-mutant review) Two hidden cells of 2.4999998 and 2.5 sum to
    # 4.9999998, below 5: the large cell is hidden too. Summed in float32 the total rounds
    # to 105.0, and 105 - 100 = 5 would publish it, revealing the hidden pair's sum.
    counts = np.array([2.4999998, 2.5, 100.0], dtype=np.float32)
    assert disclosure.hidden_cells(counts, 5).tolist() == [True, True, True]
    assert disclosure.hidden_cells(counts.astype(np.float64), 5).tolist() == [True, True, True]


def test_a_list_takes_at_most_half_of_its_pool():
    assert disclosure.at_most_half(5, 10) and disclosure.at_most_half(5.0, 10.5)
    assert not disclosure.at_most_half(6, 10)
    assert not disclosure.at_most_half(5, 9.9)


def test_an_exact_group_is_judged_on_its_published_perturbed_size():
    # 5 people, published by the cell key as 3 (what the key sum gives): "3, within 2"
    # does not show 5 or more, so the group is refused although its true size is 5.
    from privacy.mechanisms import cellkey
    from reconstruction.jobs import JobRefused

    key_sum = next(k for k in range(10_000) if cellkey.perturbed_count(5, k) == 3)
    group = disclosure.GroupSize.counted(5, key_sum=key_sum)
    with pytest.raises(JobRefused):
        disclosure.check_group(group, 5)
    disclosure.check_group(disclosure.GroupSize.counted(5), 5)  # unperturbed 5: shown
