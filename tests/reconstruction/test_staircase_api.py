"""Whole-year ages under the staircase mechanism (``additive_staircase``) through the API,
tasks in-process: the scheme publishes the guarantee, the reports are accepted, counts,
distributions, means and the report work, and bad parameters are a 400 naming them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from consultations.models import Organisation
from consultations.services import consultation_create
from privacy.client import distort_table, table_responses
from reconstruction.algorithms.simulation import SEXES, simulate_candidates
from surveys.models import Survey
from surveys.selectors import survey_scheme
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.coverage import widened
from tests.reconstruction.conftest import client_for
from tests.reconstruction.test_analyses_api import analyse

pytestmark = pytest.mark.django_db

N = 4_000
EPSILON, SENSITIVITY = 4.0, 70.0
AGE: dict[str, Any] = {
    "key": "age",
    "text": "Age in whole years",
    "type": "continuous",
    "range": [16, 86],
    "step": 1,
    "mechanism": {"name": "additive_staircase", "epsilon": EPSILON, "sensitivity": SENSITIVITY},
}
SEX: dict[str, Any] = {
    "key": "sex",
    "text": "Sex",
    "type": "binary",
    "categories": list(SEXES),
    "mechanism": {"name": "randomised_response", "retain": 0.75},
}


def _survey(seed: int) -> tuple[Survey, np.ndarray, np.ndarray]:
    client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(organisation=organisation, title="Panel", actor="tests")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Registration",
        questions=[SEX, AGE],
        actor="tests",
    )
    survey = survey_open(survey=survey, actor="tests")
    rng = np.random.default_rng(seed)
    pool = simulate_candidates(N, rng=rng)
    age = np.clip(np.floor(pool.age), 16, 86)  # whole years
    sent = distort_table(survey_scheme(survey), {"sex": np.array(SEXES)[pool.sex], "age": age}, rng)
    responses_submit_bulk(
        survey=survey,
        responses=table_responses([f"s-{i:05d}" for i in range(N)], sent),
        actor="tests",
    )
    return survey, pool.sex, age


def test_a_staircase_survey_publishes_its_guarantee_and_is_analysed(
    django_capture_on_commit_callbacks: Any,
) -> None:
    survey, sex, age = _survey(3)
    analyst = client_for("north", "analyst")
    scheme = analyst.get(f"/api/v1/surveys/{survey.pk}/scheme/").json()
    question = next(q for q in scheme["questions"] if q["key"] == "age")
    assert question["mechanism"] == AGE["mechanism"]
    assert question["epsilon"] == EPSILON  # sensitivity 70 covers the range 16-86
    assert survey.responses.count() == N

    where = [{"attribute": "age", "op": "between", "value": [30, 45]}]
    count = analyse(
        analyst,
        django_capture_on_commit_callbacks,
        {"survey": survey.pk, "kind": "count", "where": where},
    )["result"]
    truth = float(((age >= 30) & (age < 45)).sum())
    low, high = widened(count["ci95"], alpha=1e-4)
    assert low <= truth <= high, (truth, count)
    assert count["population"] == N
    joint_where = [
        {"attribute": "sex", "op": "in", "value": ["F"]},
        {"attribute": "age", "op": "between", "value": [45, 65]},
    ]
    joint = analyse(
        analyst,
        django_capture_on_commit_callbacks,
        {"survey": survey.pk, "kind": "count", "where": joint_where},
    )["result"]
    truth = float(((sex == 0) & (age >= 45) & (age < 65)).sum())
    low, high = widened(joint["ci95"], alpha=1e-4)
    assert low <= truth <= high, (truth, joint)

    distribution = analyse(
        analyst,
        django_capture_on_commit_callbacks,
        {"survey": survey.pk, "kind": "distribution", "attribute": "age"},
    )["result"]
    counts = np.array([np.nan if c is None else c for c in distribution["counts"]])
    assert len(counts) == 71  # one cell per whole year (step 1), small ones suppressed
    assert 0.95 * N < np.nansum(counts) <= N * (1 + 1e-6)
    years = np.arange(16, 87)
    band = (years >= 30) & (years < 45)
    assert np.nansum(counts[band]) == pytest.approx(count["estimate"], rel=0.02)

    mean = analyse(
        analyst,
        django_capture_on_commit_callbacks,
        {"survey": survey.pk, "kind": "mean", "attribute": "age"},
    )["result"]
    low, high = widened(mean["ci95"], alpha=1e-4)
    assert low <= float(age.mean()) <= high, (age.mean(), mean)

    with django_capture_on_commit_callbacks(execute=True):
        created = analyst.post(f"/api/v1/surveys/{survey.pk}/reports/")
    assert created.status_code == 202, created.json()
    report = analyst.get(created.json()["url"]).json()
    assert report["status"] == "succeeded", report
    document = analyst.get(report["downloads"]["json"]).json()
    section = next(s for s in document["questions"] if s["key"] == "age")
    assert section["epsilon"] == EPSILON
    html = analyst.get(report["downloads"]["html"]).content.decode()
    assert "privacy level ε = 4.000" in html


def test_a_report_outside_the_staircase_bounds_is_refused_and_one_inside_kept(
    django_capture_on_commit_callbacks: Any,
) -> None:
    # Bounds follow the staircase's geometric tail: 576 is accepted for ages 16-86 at
    # eps 4 (10 standard deviations, 275, would have refused one report in 50,000).
    client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(organisation=organisation, title="Bounds", actor="tests")
    survey = survey_open(
        survey=survey_create(
            organisation=organisation,
            consultation=consultation,
            kind="profile",
            title="Registration",
            questions=[AGE],
            actor="tests",
        ),
        actor="tests",
    )
    portal = client_for("north", "portal")
    url = f"/api/v1/surveys/{survey.pk}/responses/"
    # 500, a whole year: the question's step is its reporting grid (issue 31).
    ok = portal.post(url, {"participant": "p-1", "answers": {"age": 500}}, format="json")
    assert ok.status_code == 201, ok.json()
    bad = portal.post(url, {"participant": "p-2", "answers": {"age": 1e4}}, format="json")
    assert bad.status_code == 400
    assert "age" in str(bad.json()["errors"])


@pytest.mark.parametrize(
    ("mechanism", "named"),
    [
        ({"name": "additive_staircase", "epsilon": 0, "sensitivity": 70}, "epsilon"),
        ({"name": "additive_staircase", "epsilon": -1, "sensitivity": 70}, "epsilon"),
        ({"name": "additive_staircase", "epsilon": 600, "sensitivity": 70}, "epsilon"),
        ({"name": "additive_staircase", "epsilon": "2", "sensitivity": 70}, "epsilon"),
        ({"name": "additive_staircase", "epsilon": 2, "sensitivity": 0}, "sensitivity"),
        ({"name": "additive_staircase", "epsilon": 2, "sensitivity": 1e9}, "sensitivity"),
        ({"name": "additive_staircase", "epsilon": 2}, "sensitivity"),
        ({"name": "additive_staircase", "sensitivity": 70}, "epsilon"),
        ({"name": "additive_staircase", "epsilon": 1e-9, "sensitivity": 70}, "epsilon"),
        ({"name": "additive_staircase", "epsilon": 2, "sensitivity": 70, "scale": 1}, "scale"),
    ],
)
def test_bad_staircase_parameters_are_a_400_naming_them(mechanism: dict, named: str) -> None:
    analyst = client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(organisation=organisation, title="Bad", actor="tests")
    response = analyst.post(
        "/api/v1/surveys/",
        {
            "consultation": consultation.pk,
            "kind": "profile",
            "title": "Registration",
            "questions": [{**AGE, "mechanism": mechanism}],
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]["questions"][0]
    assert "mechanism" in errors, errors
    assert named in str(errors["mechanism"]), errors
    assert not Survey.objects.filter(consultation=consultation).exists()
