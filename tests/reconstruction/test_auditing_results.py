"""What each published result puts into the query audit (reconstruction.auditing; issue 33).

The audit can only catch a differencing attack on what it is told was published: each
kind's group (its size and the interval it was judged on), each shown cell of a
distribution, and the hidden cells' sum the total makes derivable. These tests read
results_of / report_results directly on stored payloads; no database.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from reconstruction import auditing
from reconstruction.algorithms.audit import Box, Continuous, Discrete, Published
from reconstruction.kinds import base

SEX = SimpleNamespace(categories=["f", "m", "d"], is_discrete=True, n_categories=3, range_high=None)
AGE = SimpleNamespace(
    categories=[], is_discrete=False, n_categories=0, range_low=16.0, range_high=100.0
)
QUESTIONS = {"sex": SEX, "age": AGE}
WHERE = [{"attribute": "sex", "op": "in", "value": ["m", "d"]}]
GROUP = Box.of([("sex", "in", {1, 2})])


def _conditions(raw: list[dict[str, object]]) -> list[tuple[str, str, object]]:
    return base.audit_conditions(base.conditions(raw), QUESTIONS)


def test_a_condition_names_categories_by_code_and_unknown_names_are_skipped() -> None:
    assert _conditions(WHERE) == [("sex", "in", {1, 2})]
    assert _conditions([{"attribute": "age", "op": "gt", "value": 40}]) == [("age", "gt", 40)]
    with pytest.raises(auditing._Unknown):
        _conditions([{"attribute": "income", "op": "gt", "value": 1}])
    with pytest.raises(auditing._Unknown):
        _conditions([{"attribute": "sex", "op": "in", "value": ["x"]}])


def test_a_missing_bound_is_unbounded_and_no_interval_is_the_value() -> None:
    assert base.audit_interval([3.0, 9.0], 5.0) == (3.0, 9.0)
    assert base.audit_interval([None, 9.0], 5.0) == (-math.inf, 9.0)
    assert base.audit_interval((3.0, None), 5.0) == (3.0, math.inf)
    assert base.audit_interval(None, 5.0) == (5.0, 5.0)
    assert base.audit_interval([1.0, 2.0, 3.0], 5.0) == (5.0, 5.0)


@pytest.mark.parametrize(
    ("kind", "payload", "expected"),
    [
        ("count", {"estimate": 20.0, "ci95": [12.0, 28.0]}, (20.0, 12.0, 28.0)),
        ("mean", {"group_size": 30.0, "group_size_ci95": [25.0, 35.0]}, (30.0, 25.0, 35.0)),
        ("sample", {"pool_estimate": 40.0, "pool_ci95": [33.0, 47.0]}, (40.0, 33.0, 47.0)),
        (
            "panel",
            {"candidates": 48, "expected_eligible": 50.0, "eligible_ci95": [42, 58]},
            (50.0, 42.0, 58.0),
        ),
        ("panel", {"candidates": 48, "expected_eligible": 50.0}, (48.0, 48.0, 48.0)),
        ("panel", {"candidates": 48, "eligible_ci95": [42, 58]}, (48.0, 48.0, 48.0)),
    ],
)
def test_each_kind_publishes_its_group_with_its_interval(
    kind: str, payload: dict[str, object], expected: tuple[float, float, float]
) -> None:
    results = auditing.results_of(kind, {"where": WHERE}, payload, QUESTIONS)
    assert [(r.box, r.estimate, r.low, r.high) for r in results] == [(GROUP, *expected)]


@pytest.mark.parametrize("kind", ["count", "mean", "sample", "panel"])
def test_a_refused_or_empty_result_publishes_nothing(kind: str) -> None:
    assert auditing.results_of(kind, {"where": WHERE}, {}, QUESTIONS) == []


def _distribution(payload: dict[str, object], where: list[dict[str, object]] | None = None):
    spec = {"kind": "distribution", "attribute": "sex", "where": where or []}
    return auditing.results_of("distribution", spec, payload, QUESTIONS)


def test_a_distribution_publishes_each_shown_cell_and_its_group() -> None:
    payload = {
        "n": 60.0,
        "group_size_ci95": [50.0, 70.0],
        "counts": [30.0, 20.0, 10.0],
        "ci95": [[25.0, 35.0], [15.0, 25.0], [6.0, 14.0]],
    }
    results = _distribution(payload, [{"attribute": "age", "op": "gt", "value": 40}])
    older = ("age", "gt", 40)
    assert results == [
        Published(Box.of([older]), 60.0, 50.0, 70.0),
        Published(Box.of([older, ("sex", "in", {0})]), 30.0, 25.0, 35.0),
        Published(Box.of([older, ("sex", "in", {1})]), 20.0, 15.0, 25.0),
        Published(Box.of([older, ("sex", "in", {2})]), 10.0, 6.0, 14.0),
    ]
    # Without a condition the group is the survey's population: not repeated here.
    assert len(_distribution(payload)) == 3


def test_a_distributions_hidden_cells_are_published_as_their_sum() -> None:
    payload = {
        "counts": [None, 40.0, None],
        "ci95": [None, [35.0, 45.0], None],
        "suppressed_total_ci95": [6.0, 14.0],
    }
    results = _distribution(payload)
    assert results == [
        Published(Box.of([("sex", "in", {1})]), 40.0, 35.0, 45.0),
        Published(Box.of([("sex", "in", {0, 2})]), 10.0, 6.0, 14.0),
    ]
    # A total the result did not state (or states with a missing end) adds nothing.
    for total in (None, [6.0, None], "6-14"):
        assert len(_distribution({**payload, "suppressed_total_ci95": total})) == 1


def _age_distribution(counts: list[float | None], total: list[float] | None):
    spec = {"kind": "distribution", "attribute": "age", "where": []}
    payload = {
        "counts": counts,
        "ci95": [None if c is None else [c - 2, c + 2] for c in counts],
        "intervals": [[16.0, 40.0], [40.0, 65.0], [65.0, 100.0]],
        "suppressed_total_ci95": total,
    }
    return auditing.results_of("distribution", spec, payload, QUESTIONS)


def test_a_continuous_distribution_publishes_interval_cells_and_a_hidden_run() -> None:
    results = _age_distribution([30.0, None, None], [4.0, 12.0])
    assert results == [
        Published(Box.of([("age", "between", (16.0, 40.0))]), 30.0, 28.0, 32.0),
        Published(Box.of([("age", "between", (40.0, 100.0))]), 8.0, 4.0, 12.0),
    ]


def test_hidden_cells_that_are_not_one_run_of_intervals_add_no_sum() -> None:
    results = _age_distribution([None, 30.0, None], [4.0, 12.0])
    assert results == [Published(Box.of([("age", "between", (40.0, 65.0))]), 30.0, 28.0, 32.0)]


def test_a_distribution_of_an_unknown_attribute_is_skipped() -> None:
    spec = {"kind": "distribution", "attribute": "income", "where": []}
    with pytest.raises(auditing._Unknown):
        auditing.results_of("distribution", spec, {"counts": [1.0]}, QUESTIONS)


def test_a_report_publishes_only_its_published_sections_of_known_questions() -> None:
    document = {
        "questions": [
            {"key": "sex", "published": True, "reconstructed": {"counts": [30.0, 20.0, 10.0]}},
            {"key": "sex", "published": False, "reconstructed": {"counts": [1.0, 1.0, 1.0]}},
            {"key": "income", "published": True, "reconstructed": {"counts": [5.0]}},
        ]
    }
    results = auditing.report_results(document, QUESTIONS)
    assert [(r.box, r.estimate) for r in results] == [
        (Box.of([("sex", "in", {0})]), 30.0),
        (Box.of([("sex", "in", {1})]), 20.0),
        (Box.of([("sex", "in", {2})]), 10.0),
    ]
    assert auditing.report_results({}, QUESTIONS) == []


def test_the_universe_and_keys_of_a_request() -> None:
    assert auditing._universe(QUESTIONS) == {
        "sex": Discrete(3),
        "age": Continuous(16.0, 100.0),
    }
    where = base.conditions([*WHERE, {"attribute": "age", "op": "gt", "value": 1}])
    assert auditing._keys(base.KindRequest(kind="mean", attribute="x", where=where)) == [
        "sex",
        "age",
        "x",
    ]
    assert auditing._keys(base.KindRequest(kind="count")) == []


def test_an_unknown_attribute_is_named() -> None:
    with pytest.raises(auditing._Unknown) as unknown:
        _conditions([{"attribute": "income", "op": "gt", "value": 1}])
    assert unknown.value.args == ("income",)
    with pytest.raises(auditing._Unknown) as unknown:
        _conditions([{"attribute": "sex", "op": "in", "value": ["x"]}])
    assert unknown.value.args == ("sex",)


def test_a_result_stored_without_an_interval_is_taken_at_its_value() -> None:
    results = auditing.results_of("count", {"where": WHERE}, {"estimate": 20.0}, QUESTIONS)
    assert [(r.estimate, r.low, r.high) for r in results] == [(20.0, 20.0, 20.0)]


def test_hidden_cells_over_the_whole_range_are_one_run() -> None:
    results = _age_distribution([None, None, None], [20.0, 30.0])
    assert results == [Published(Box.of([("age", "between", (16.0, 100.0))]), 25.0, 20.0, 30.0)]


def test_a_distribution_publishes_the_cells_it_has_intervals_for() -> None:
    payload = {"counts": [30.0, 20.0], "ci95": [[25.0, 35.0]]}
    assert _distribution(payload) == [Published(Box.of([("sex", "in", {0})]), 30.0, 25.0, 35.0)]


def test_a_distribution_of_an_unknown_attribute_names_it() -> None:
    spec = {"kind": "distribution", "attribute": "income", "where": []}
    with pytest.raises(auditing._Unknown) as unknown:
        auditing.results_of("distribution", spec, {"counts": [1.0]}, QUESTIONS)
    assert unknown.value.args == ("income",)


def test_a_report_publishes_every_published_question() -> None:
    document = {
        "questions": [
            {"key": "sex", "published": True, "reconstructed": {"counts": [30.0, 20.0, 10.0]}},
            {"key": "age", "published": False, "reconstructed": {"counts": [60.0]}},
            {"key": "sex", "published": True, "reconstructed": {"counts": [31.0, 19.0, 10.0]}},
        ]
    }
    estimates = [r.estimate for r in auditing.report_results(document, QUESTIONS)]
    assert estimates == [30.0, 20.0, 10.0, 31.0, 19.0, 10.0]
