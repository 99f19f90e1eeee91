"""Issue 32: the panel a council selects most often is accepted and drawn.

A panel of 30 with 3 quotas (sex, district, an age band) over 30,000 simulated residents
went to a 400 ("1,242,646 units ... above the budget of 1,000,000"): the cost model
priced every candidate's posteriors at 10 units and the solver on the wrong figure.
Through the API on SQLite, the job run in-process as the worker runs it; no timing is
asserted here (bench/bench_cost.py --panels measures it against the 60 s target).
"""

from __future__ import annotations

import numpy as np
import pytest

from consultations.models import Organisation
from consultations.services import consultation_create
from privacy.client import distort_table, table_responses
from reconstruction.algorithms.panel import Quota
from surveys.selectors import survey_scheme
from surveys.services import survey_create, survey_open
from tests.reconstruction.data import (
    DISTRICTS,
    PROFILE_QUESTIONS,
    SEXES,
    _submit,
    simulate_candidates,
)

pytestmark = pytest.mark.django_db

THREE_QUOTAS = [
    {"where": [{"attribute": "sex", "op": "in", "value": ["F"]}], "min": 12, "max": 18},
    {"where": [{"attribute": "district", "op": "in", "value": ["N", "S"]}], "min": 8, "max": 20},
    {"where": [{"attribute": "age", "op": "lte", "value": 40}], "min": 6, "max": 20},
]


def _profile(n: int, seed: int) -> int:
    """A profile survey of the quotas' three questions, answered by ``n`` simulated
    residents (distorted on their devices, as tests/reconstruction/data.py does)."""
    rng = np.random.default_rng(seed)
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(
        organisation=organisation, title="Assembly", min_responses=10, min_cell=5, actor="t"
    )
    questions = [q for q in PROFILE_QUESTIONS if q["key"] in ("sex", "district", "age")]
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Candidates",
        questions=questions,
        actor="t",
    )
    survey = survey_open(survey=survey, actor="t")
    pool = simulate_candidates(n, rng=rng)
    sent = distort_table(
        survey_scheme(survey),
        {
            "sex": np.array(SEXES)[pool.sex],
            "district": np.array(DISTRICTS)[pool.district],
            "age": pool.age,
        },
        rng,
    )
    _submit(survey, table_responses(np.array([f"r-{i:06d}" for i in range(n)]), sent))
    return survey.pk


def test_a_panel_of_30_with_3_quotas_over_30000_is_accepted_and_drawn(
    analyst, django_capture_on_commit_callbacks
):
    body = {
        "survey": _profile(30_000, seed=32),
        "kind": "panel",
        "size": 30,
        "seed": 32,
        "quotas": THREE_QUOTAS,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = analyst.post("/api/v1/analyses/", body, format="json")
    assert response.status_code == 202, response.json()
    job = analyst.get(response.json()["url"]).json()
    assert job["status"] == "succeeded", job
    assert len(job["result"]["participants"]) == 30


FIVE_QUOTAS_ON_FIVE_QUESTIONS = [
    *THREE_QUOTAS,
    {"where": [{"attribute": "site", "op": "in", "value": ["A", "B", "C"]}], "min": 5, "max": 25},
    {
        "where": [{"attribute": "satisfaction", "op": "in", "value": ["4", "5"]}],
        "min": 5,
        "max": 25,
    },
]


def _five_questions(n: int, seed: int) -> int:
    """A profile of sex, district, age and two negative surveys (site, satisfaction; the
    bench's questions, tests.factories), answered by ``n`` simulated residents."""
    from tests.factories import profile_questions

    rng = np.random.default_rng(seed)
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(
        organisation=organisation, title="Assembly", min_responses=10, min_cell=5, actor="t"
    )
    keys = ("sex", "district", "satisfaction", "site", "age")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Candidates",
        questions=[q for q in profile_questions() if q["key"] in keys],
        actor="t",
    )
    survey = survey_open(survey=survey, actor="t")
    # bench/bench_scale.py's residents: skewed districts, satisfaction and sites, ages
    # around 42 (whole years).
    ages = np.arange(16, 100)
    weights = np.exp(-(((ages - 42) / 25.0) ** 2))
    true = {
        "sex": rng.choice(["F", "M"], size=n, p=[0.51, 0.49]),
        "district": rng.choice(list("NSEWC"), size=n, p=[0.46, 0.27, 0.15, 0.10, 0.02]),
        "satisfaction": rng.choice(list("12345"), size=n, p=[0.05, 0.10, 0.25, 0.40, 0.20]),
        "site": rng.choice(list("ABCDEFG"), size=n, p=[0.30, 0.25, 0.15, 0.12, 0.10, 0.05, 0.03]),
        "age": rng.choice(ages, size=n, p=weights / weights.sum()).astype(float),
    }
    sent = distort_table(survey_scheme(survey), true, rng)
    _submit(survey, table_responses(np.array([f"r-{i:06d}" for i in range(n)]), sent))
    return survey.pk


def test_quotas_that_make_too_many_candidate_types_are_a_400_before_anything_is_queued(
    analyst, django_capture_on_commit_callbacks
):
    """bench_cost's panel of 30 with 5 quotas on 5 questions over 30,000 (two of them
    negative surveys): 5,666 candidate types there, about 1.5 times what the budget
    leaves the solver. It was accepted on the schema's estimate (144 types) and refused
    by the worker seconds later; the request now counts the types (one GROUP BY of the
    occupied reported cells) and answers 400, storing nothing."""
    from reconstruction import cost, pipeline
    from reconstruction.kinds.panel import parse_quotas
    from reconstruction.models import AnalysisJob
    from surveys.models import Survey

    survey = _five_questions(30_000, seed=34)
    body = {"survey": survey, "kind": "panel", "size": 30, "seed": 1}
    with django_capture_on_commit_callbacks(execute=True):
        response = analyst.post(
            "/api/v1/analyses/", {**body, "quotas": FIVE_QUOTAS_ON_FIVE_QUESTIONS}, format="json"
        )
        german = analyst.post(
            "/api/v1/analyses/",
            {**body, "quotas": FIVE_QUOTAS_ON_FIVE_QUESTIONS},
            format="json",
            HTTP_ACCEPT_LANGUAGE="de",
        )
    assert response.status_code == 400, response.json()
    text = response.json()["detail"]
    assert "This panel would take more than a minute to select. Ask for fewer quotas" in text
    assert text.index("fewer categories") < text.index("(Figures:")
    assert "quotas: 5, seats: 30, participants: 30,000" in text
    assert german.status_code == 400 and german.json()["detail"] != text  # translated (de)
    assert not AnalysisJob.objects.exists()  # nothing stored, nothing queued
    # The figure is the worker's own count of types, above what the budget leaves.
    request = pipeline.resolve(
        Survey.objects.get(pk=survey), {**body, "quotas": FIVE_QUOTAS_ON_FIVE_QUESTIONS}
    )
    request = request.with_participants(30_000)
    quotas = [Quota(tuple(w), lo, hi) for w, lo, hi in parse_quotas(request)]
    types = cost.panel_types(request, quotas)
    assert types > cost.panel_max_types(request)
    assert f"{types:,} kinds of candidates" in text
    # The three quotas of the issue over the same pool are accepted.
    with django_capture_on_commit_callbacks(execute=False):
        fine = analyst.post("/api/v1/analyses/", {**body, "quotas": THREE_QUOTAS}, format="json")
    assert fine.status_code == 202, fine.json()


def test_the_worker_still_refuses_a_panel_whose_types_outgrow_the_budget(
    analyst, django_capture_on_commit_callbacks, settings
):
    """The worker's check stays the backstop: a panel accepted at request time whose
    types need more than the budget by the time the worker runs (here the budget is
    lowered in between) ends ``refused`` with the same plain message, translated."""
    from reconstruction import cost, pipeline
    from surveys.models import Survey

    survey = _profile(2_000, seed=33)
    body = {"survey": survey, "kind": "panel", "size": 30, "seed": 1, "quotas": THREE_QUOTAS}
    request = pipeline.validate_request(Survey.objects.get(pk=survey), body)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = analyst.post("/api/v1/analyses/", body, format="json")
    assert response.status_code == 202, response.json()
    # Room for the fits, the candidates and a few types, not for the real ones.
    settings.ANALYSIS_COST_BUDGET = cost.panel_cost(request) + 50
    for callback in callbacks:
        callback()
    job = analyst.get(response.json()["url"]).json()
    assert job["status"] == "refused", job
    assert job["error"].startswith("This panel would take more than a minute to select.")
    assert "Ask for fewer quotas" in job["error"] and "(Figures:" in job["error"]
    german = analyst.get(response.json()["url"], HTTP_ACCEPT_LANGUAGE="de").json()
    assert german["error"] != job["error"]  # translated (de)


def test_a_panel_over_the_budget_on_its_real_types_is_a_400_saying_what_to_change(
    analyst, settings
):
    """The request counts the real types (noisy ages: many) where the schema saw 12."""
    from reconstruction import cost, pipeline
    from surveys.models import Survey

    survey = _profile(2_000, seed=33)
    body = {"survey": survey, "kind": "panel", "size": 30, "seed": 1, "quotas": THREE_QUOTAS}
    request = pipeline.validate_request(Survey.objects.get(pk=survey), body)
    settings.ANALYSIS_COST_BUDGET = cost.panel_cost(request) + 50
    response = analyst.post("/api/v1/analyses/", body, format="json")
    assert response.status_code == 400, response.json()
    text = response.json()["detail"]
    assert "This panel would take more than a minute to select." in text
    assert "Ask for fewer quotas" in text and "(Figures:" in text
