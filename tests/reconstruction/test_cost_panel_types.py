"""The request-time count of a panel's candidate types (issue 32; reconstruction/cost.py
``panel_types``, ``check_panel_types``, ``_same_bins``) pinned with known answers on small
pools (issue 33: these rules were reached only by the 12-second API tests).

Exact attributes (mechanism ``none``) give every candidate posteriors of 0 or 1, so the
types are the distinct combinations of quota memberships among the occupied, eligible
cells: countable by hand. A distorted attribute then shows the merge of near-equal types.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from core.messages import translate
from reconstruction import cost, pipeline
from reconstruction.algorithms.panel import Quota
from reconstruction.conditions import AnalysisInputError
from reconstruction.kinds.panel import parse_quotas
from tests.factories import consultation_factory, organisation_factory, survey_factory
from tests.reconstruction.data import _submit

pytestmark = pytest.mark.django_db

QUESTIONS: list[dict[str, Any]] = [
    {"key": "sex", "type": "binary", "categories": ["F", "M"], "mechanism": {"name": "none"}},
    {
        "key": "district",
        "type": "nominal",
        "categories": ["N", "S", "E", "W", "C"],
        "mechanism": {"name": "none"},
    },
    {"key": "age", "type": "continuous", "range": [16, 100], "mechanism": {"name": "none"}},
    {
        "key": "rr",
        "type": "binary",
        "categories": ["yes", "no"],
        "mechanism": {"name": "randomised_response", "retain": 0.7},
    },
    {
        "key": "home",
        "type": "nominal",
        "categories": ["N", "S", "E", "W", "C"],
        "mechanism": {
            "name": "randomised_response",
            "matrix": [
                [0.6, 0.1, 0.1, 0.1, 0.1],
                [0.1, 0.6, 0.1, 0.1, 0.1],
                [0.1, 0.1, 0.6, 0.1, 0.1],
                [0.1, 0.1, 0.1, 0.6, 0.1],
                [0.1, 0.1, 0.1, 0.1, 0.6],
            ],
        },
    },
    {
        "key": "years",
        "type": "continuous",
        "range": [16, 100],
        "mechanism": {"name": "additive_uniform", "half_width": 10},
    },
]


def _survey(rows: list[tuple[str, str, float, str]], seed: int = 0) -> Any:
    """``rows``: (sex, district, age, rr) per participant; ``home`` and ``years`` are
    distorted answers drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    consultation = consultation_factory(
        organisation_factory(), title="Panel", min_responses=10, min_cell=5, actor="t"
    )
    survey = survey_factory(consultation, questions=QUESTIONS)
    _submit(
        survey,
        [
            {
                "participant": f"p-{i:04d}",
                "answers": {
                    "sex": s,
                    "district": d,
                    "age": a,
                    "rr": r,
                    "home": str(rng.choice(list("NSEWC"), p=[0.4, 0.2, 0.2, 0.15, 0.05])),
                    "years": float(rng.integers(6, 110)),
                },
            }
            for i, (s, d, a, r) in enumerate(rows)
        ],
    )
    return survey


def _request(survey: Any, quotas: list[dict[str, Any]], participants: int, **more: Any) -> Any:
    body = {"survey": survey.pk, "kind": "panel", "size": 10, "seed": 1, "quotas": quotas, **more}
    request = pipeline.resolve(survey, body).with_participants(participants)
    engine = [Quota(tuple(w), lo, hi) for w, lo, hi in parse_quotas(request)]
    return request, engine


def _quota(attribute: str, op: str, value: Any) -> dict[str, Any]:
    return {"where": [{"attribute": attribute, "op": op, "value": value}], "min": 1, "max": 10}


ROWS = (
    [("F", "N", 30.0, "yes")] * 40 + [("F", "E", 50.0, "no")] * 40 + [("M", "N", 60.0, "yes")] * 40
)


def _types(survey: Any, quotas: list[dict[str, Any]], participants: int = 120, **more: Any) -> int:
    request, engine = _request(survey, quotas, participants, **more)
    return int(cost.panel_types(request, engine))


def test_exact_quotas_make_one_type_per_occupied_combination_of_memberships() -> None:
    survey = _survey(ROWS)
    sex, north_or_south = _quota("sex", "in", ["F"]), _quota("district", "in", ["N", "S"])
    assert _types(survey, [sex]) == 2  # F and M
    assert _types(survey, [_quota("sex", "in", ["F", "M"])]) == 1  # everyone in
    # (F, N), (F, E), (M, N): three of the four combinations are occupied.
    assert _types(survey, [sex, north_or_south]) == 3
    # N and S are one membership: E alone makes the other.
    assert _types(survey, [north_or_south]) == 2
    # A continuous exact attribute is cut at the quota's threshold: 30 | 50, 60.
    assert _types(survey, [_quota("age", "lte", 40)]) == 2
    assert _types(survey, [_quota("age", "lte", 55)]) == 2
    assert _types(survey, [_quota("age", "lte", 70)]) == 1
    assert _types(survey, [_quota("age", "lte", 40), _quota("age", "gt", 55)]) == 3
    assert _types(survey, [sex, north_or_south, _quota("age", "lte", 40)]) == 3
    # The quotas' order does not matter.
    assert _types(survey, [north_or_south, sex]) == 3


def test_only_eligible_candidates_make_types() -> None:
    survey = _survey(ROWS)
    sex, age = _quota("sex", "in", ["F"]), _quota("age", "lte", 40)
    north = [{"attribute": "district", "op": "in", "value": ["N"]}]
    # Within N: (F, 30) and (M, 60); within E: (F, 50) only.
    assert _types(survey, [sex], where=north) == 2
    assert _types(survey, [sex, age], where=north) == 2
    east = [{"attribute": "district", "op": "in", "value": ["E"]}]
    assert _types(survey, [sex, age], where=east) == 1
    # An eligibility on an attribute no quota names still narrows the pool.
    young = [{"attribute": "age", "op": "lte", "value": 40}]
    assert _types(survey, [sex], where=young) == 1
    assert _types(survey, [_quota("district", "in", ["N"])], where=young) == 1
    # Nobody eligible (nobody in W): no type.
    west = [{"attribute": "district", "op": "in", "value": ["W"]}]
    assert _types(survey, [sex], where=west) == 0


def test_a_pool_without_answers_has_no_type_and_one_participant_one() -> None:
    assert _types(_survey([]), [_quota("sex", "in", ["F"])], participants=0) == 0
    one = _survey([("F", "N", 30.0, "yes")])
    assert _types(one, [_quota("sex", "in", ["F"])], participants=1) == 1
    assert _types(one, [_quota("sex", "in", ["F"])], participants=0) == 1


def test_the_count_does_not_depend_on_the_tallies_bound_of_the_participants() -> None:
    """The request plans the cells for the tallies' participants, then again for the
    count the GROUP BY found: a bound far above it gives the same types."""
    survey = _survey(ROWS)
    years = [_quota("years", "lte", 40), _quota("home", "in", ["N"])]
    for participants in (120, 121, 100_000):
        assert _types(survey, years, participants=participants) == 18
        assert _types(survey, [_quota("sex", "in", ["F"])], participants=participants) == 2


def test_near_equal_types_merge_by_the_seats_unless_max_outside_is_set() -> None:
    """A distorted age's cells give near-equal posteriors; the worker merges them within
    ``min(0.05, 0.5 / size)``, and not at all when ``max_outside`` is set."""
    survey = _survey(ROWS)
    years = [_quota("years", "lte", 40)]
    assert _types(survey, years, size=10) == 6
    assert _types(survey, years, size=100) == 7
    assert _types(survey, years, size=10, max_outside=0.1) == 8
    assert _types(survey, years, size=100, max_outside=0.1) == 8
    # A distorted category: one type per reported category (the four others are apart).
    assert _types(survey, [_quota("home", "in", ["N"])]) == 4
    # Distorted and exact together: the products of both.
    assert _types(survey, [*years, _quota("home", "in", ["N"])], size=10) == 18
    assert _types(survey, [_quota("rr", "in", ["yes"])]) == 2
    assert _types(survey, [_quota("rr", "in", ["yes"]), _quota("sex", "in", ["F"])]) == 3


def test_same_bins_compares_names_order_and_edges() -> None:
    same = cost._same_bins
    edges = np.array([20.0, 40.0])
    assert same({}, {})
    assert same({"a": None}, {"a": None})
    assert same({"a": edges, "b": None}, {"a": edges.copy(), "b": None})
    assert not same({"a": None}, {"b": None})
    assert not same({"a": None, "b": None}, {"b": None, "a": None})  # order: the columns
    assert not same({"a": None}, {"a": None, "b": None})
    assert not same({"a": None, "b": None}, {"a": None})
    assert not same({"a": edges}, {"a": None})
    assert not same({"a": None}, {"a": edges})
    assert not same({"a": edges}, {"a": np.array([20.0, 41.0])})
    assert not same({"a": edges}, {"a": np.array([20.0])})
    assert not same({"a": edges, "b": None}, {"a": edges, "b": edges})
    assert not same({"a": None, "b": edges}, {"a": None, "b": np.array([1.0, 2.0])})


def _message(error: AnalysisInputError) -> str:
    return translate(error)


def _budget_for(request: Any, types: int, settings: Any) -> int:
    """The smallest budget that leaves the solver ``types`` types (it sets it)."""
    fits, candidates = cost._panel_parts(request)
    settings.ANALYSIS_COST_BUDGET = fits + candidates
    while cost.panel_max_types(request) < types:
        settings.ANALYSIS_COST_BUDGET += 1
    return int(settings.ANALYSIS_COST_BUDGET)


def test_types_up_to_what_the_budget_leaves_pass_and_one_more_is_a_400(settings) -> None:  # type: ignore[no-untyped-def]
    survey = _survey(ROWS)
    quotas = [_quota("sex", "in", ["F"]), _quota("district", "in", ["N", "S"])]
    request, engine = _request(survey, quotas, 120)
    assert cost.panel_types(request, engine) == 3
    exactly = _budget_for(request, 3, settings)
    settings.ANALYSIS_COST_BUDGET = exactly
    assert cost.panel_max_types(request) == 3
    assert cost.check_panel_types(request, engine) == 3  # equal to the most: accepted
    settings.ANALYSIS_COST_BUDGET = exactly - 1
    assert cost.panel_max_types(request) == 2
    with pytest.raises(AnalysisInputError) as refused:
        cost.check_panel_types(request, engine)
    assert list(refused.value.errors) == ["quotas"]
    text = _message(refused.value)
    assert text.startswith("quotas: This panel would take more than a minute to select.")
    assert "Ask for fewer quotas, or put them on questions with fewer categories" in text
    # The figures: the cost on the counted types, the budget, the types, quotas, seats,
    # participants.
    assert cost.panel_cost(request, 3) != cost.panel_cost(request)  # not the schema's floor
    figures = f"estimated cost {cost.panel_cost(request, 3):,} units against a limit of "
    assert f"(Figures: {figures}{exactly - 1:,} (ANALYSIS_COST_BUDGET" in text
    assert "3 kinds of candidates to balance" in text
    assert "quotas: 2, seats: 10, participants: 120" in text


def test_the_api_answers_400_on_the_counted_types_and_stores_nothing(settings) -> None:  # type: ignore[no-untyped-def]
    """The schema's floor (2 types: either side of 40) passes the cost check; the
    counted 6 types of the distorted ages do not fit what the budget leaves."""
    from reconstruction.models import AnalysisJob
    from tests.factories import client_for, key_factory

    survey = _survey(ROWS)
    quotas = [_quota("years", "lte", 40)]
    request, _engine = _request(survey, quotas, 120)
    assert cost.panel_types_floor(request) == 2
    _key, secret = key_factory(survey.consultation.organisation, "analyst")
    body = {"survey": survey.pk, "kind": "panel", "size": 10, "seed": 1, "quotas": quotas}
    settings.ANALYSIS_COST_BUDGET = _budget_for(request, 6, settings) - 1
    response = client_for(secret).post("/api/v1/analyses/", body, format="json")
    assert response.status_code == 400, response.json()
    detail = response.json()["detail"]
    assert "This panel would take more than a minute to select." in detail
    assert "6 kinds of candidates" in detail and "quotas: 1, seats: 10, participants: 120" in detail
    assert not AnalysisJob.objects.exists()
    settings.ANALYSIS_COST_BUDGET = _budget_for(request, 6, settings)
    assert client_for(secret).post("/api/v1/analyses/", body, format="json").status_code == 202


def _largest_fitting(left: int, size: int, quotas: int) -> int:
    """By brute force: the largest number of types whose solver cost fits in ``left``."""
    most = 1
    while cost.panel_solver_cost(most + 1, size, quotas) <= left:
        most += 1
    return most


@pytest.mark.parametrize(
    ("size", "quota_count"), [(1, 1), (4, 1), (10, 1), (10, 2), (30, 1), (100, 2)]
)
def test_the_types_the_budget_leaves_are_the_most_whose_solver_cost_fits(  # type: ignore[no-untyped-def]
    settings, size: int, quota_count: int
) -> None:
    survey = _survey(ROWS[:12])
    quotas = [_quota("sex", "in", ["F"]), _quota("district", "in", ["N"])][:quota_count]
    request, _engine = _request(survey, quotas, 12, size=size)
    fits, candidates = cost._panel_parts(request)
    for left in (-100, -1, 0, 1, 2, 9, 10, 11, 100, 1_000, 12_345, 1_000_000):
        settings.ANALYSIS_COST_BUDGET = fits + candidates + left
        expected = 1 if left <= 0 else _largest_fitting(left, size, quota_count)
        assert cost.panel_max_types(request) == expected, (left, size, quota_count)
        if left > 0:
            assert cost.panel_solver_cost(expected, size, quota_count) <= left or expected == 1
            assert cost.panel_solver_cost(expected + 1, size, quota_count) > left


def test_the_schemas_floor_of_types_and_the_parts_of_a_panels_cost() -> None:
    survey = _survey(ROWS)
    sex, years = _quota("sex", "in", ["F"]), _quota("years", "lte", 40)
    request, _engine = _request(survey, [sex, years], 120)
    # A discrete quota splits at least into its categories and the rest; a continuous
    # one into the intervals between its thresholds: 2 x 2.
    assert cost.panel_types_floor(request) == 4
    two_cuts, _ = _request(survey, [years, _quota("years", "gt", 60)], 120)
    assert cost.panel_types_floor(two_cuts) == 3
    districts, _ = _request(survey, [_quota("district", "in", ["N", "S", "E", "W"])], 120)
    assert cost.panel_types_floor(districts) == 5  # at most the categories
    # At most the participants.
    one, _ = _request(survey, [sex, years], 1)
    assert cost.panel_types_floor(one) == 1
    # The parts: each model refitted with N_BOOT + PANEL_N_BOOT replicates; every
    # candidate's (quotas + 1) posteriors at PANEL_CANDIDATE_UNITS.
    replicates = 1 + cost.N_BOOT + cost.PANEL_N_BOOT
    where = [{"attribute": "years", "op": "gt", "value": 30}]
    eligible, _ = _request(survey, [sex], 120, where=where)
    questions = eligible.questions
    on_years = list(eligible.params.where)
    fits = cost.fit_cells(questions, ["years"], on_years) * replicates
    fits += (
        cost.fit_cells(questions, ["years", "sex"], [*on_years, *eligible.params.quotas[0].where])
        * replicates
    )
    assert cost._panel_parts(eligible) == (fits, 120 * 2)
    assert cost.fit_cells(questions, ["years"], on_years) != cost.fit_cells(
        questions, ["years"], []
    )
    single, _ = _request(survey, [sex], 1)
    assert cost._panel_parts(single)[1] == 2
    nobody, _ = _request(survey, [sex], 0)
    assert cost._panel_parts(nobody)[1] == 2
