"""The reporting grid on the server (issue 31): published in the scheme, enforced on every
submission of a survey created under it, stored as grid values; surveys created before it
keep working; degenerate mechanisms refused at creation (issue 27, item 4)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from consultation_client import distort_answers

from privacy.client import distort_table
from surveys import selectors
from surveys.models import Answer, Question, Response
from tests.factories import consultation_factory, good_answers, survey_factory, tenant_factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant():
    return tenant_factory()


@pytest.fixture
def survey(tenant):
    return survey_factory(consultation_factory(tenant.organisation))


def _scheme(tenant, survey):
    response = tenant.portal.get(f"/api/v1/surveys/{survey.pk}/scheme/")
    assert response.status_code == 200
    return response.json()


def _questions(scheme):
    return {q["key"]: q for q in scheme["questions"]}


def test_the_scheme_publishes_each_noisy_questions_grid_and_its_exact_law(tenant, survey):
    questions = _questions(_scheme(tenant, survey))
    age, income = questions["age"], questions["income"]
    assert age["resolution"] == 0.001  # no step: the power of ten below range / 10^4
    assert age["grid"] == {
        "origin": 16.0,
        "resolution": 0.001,
        "law": {"name": "discrete_uniform", "half_width": 10_000},
    }
    assert income["grid"]["law"] == {
        "name": "discrete_gaussian",
        "sigma2": str((Fraction(800) / Fraction(1.0)) ** 2),
    }
    assert "grid" not in questions["sex"] and "grid" not in questions["tenure"]
    assert Question.objects.get(survey=survey, key="age").resolution == 0.001


def test_laplace_publishes_epsilon_per_grid_step(tenant):
    questions = [
        {"key": "age", "type": "continuous", "range": [16, 100], "step": 1,
         "mechanism": {"name": "additive_laplace", "scale": 5}},
    ]  # fmt: skip
    survey = survey_factory(consultation_factory(tenant.organisation), questions=questions)
    grid = _questions(_scheme(tenant, survey))["age"]["grid"]
    assert grid["resolution"] == 1.0  # the step
    assert grid["law"] == {"name": "discrete_laplace", "scale": "5"}
    assert grid["epsilon_per_step"] == 0.2


def test_client_reports_are_accepted_and_stored_as_grid_values(tenant, survey):
    scheme = _scheme(tenant, survey)
    rng = random.Random(7)
    sent = distort_answers(scheme, good_answers(3) | {"age": 43.2371, "income": 1234.5}, rng=rng)
    response = tenant.portal.post(
        f"/api/v1/surveys/{survey.pk}/responses/",
        {"participant": "p-1", "answers": sent},
        format="json",
    )
    assert response.status_code == 201, response.content
    stored = {a.question.key: a.value for a in Answer.objects.select_related("question")}
    assert stored["age"] == sent["age"] and stored["income"] == sent["income"]
    age = Question.objects.get(survey=survey, key="age")
    k = round((stored["age"] - 16.0) / age.resolution)
    assert stored["age"] == 16.0 + k * age.resolution


@pytest.mark.parametrize("value", [43.2371, 43.0005, 17.1 + 1e-5])
def test_an_off_grid_report_is_a_400_naming_the_question(tenant, survey, value):
    response = tenant.portal.post(
        f"/api/v1/surveys/{survey.pk}/responses/",
        {"participant": "p-1", "answers": good_answers(0) | {"age": value}},
        format="json",
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert list(body["errors"]["answers"]) == ["age"]
    assert "reporting grid" in body["errors"]["answers"]["age"][0]
    assert body["detail"].startswith("age")
    assert not Response.objects.exists() and not Answer.objects.exists()


def test_bulk_refuses_an_off_grid_report_naming_item_and_question(tenant, survey):
    items = [{"participant": f"p-{i}", "answers": good_answers(i)} for i in range(5)]
    items[3]["answers"]["income"] = 1000.25
    response = tenant.portal.post(
        f"/api/v1/surveys/{survey.pk}/responses/bulk/", {"responses": items}, format="json"
    )
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]["responses"]
    assert list(errors) == ["3"] and list(errors["3"]["answers"]) == ["income"]
    assert not Response.objects.exists() and not Answer.objects.exists()


def test_a_grid_value_written_as_a_short_decimal_is_stored_as_the_grid_value(tenant, survey):
    # 16 + 27001 * 0.001 is the double 43.001000000000005 (not the double nearest 43.001):
    # a hand-written decimal one last bit away is that grid point, and the grid point is
    # stored, so no client's last bits reach the database.
    grid_double = 16.0 + 27001 * 0.001
    assert grid_double != 43.001
    response = tenant.portal.post(
        f"/api/v1/surveys/{survey.pk}/responses/",
        {"participant": "p-1", "answers": good_answers(0) | {"age": 43.001}},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert Answer.objects.get(question__key="age").value == grid_double


def test_simulated_residents_report_on_the_grid(tenant, survey):
    scheme = _scheme(tenant, survey)
    rng = np.random.default_rng(1)
    table = distort_table(scheme, {"age": rng.uniform(16, 100, 2000)}, rng)
    age = _questions(scheme)["age"]["grid"]
    k = np.rint((table["age"] - age["origin"]) / age["resolution"])
    np.testing.assert_array_equal(table["age"], age["origin"] + k * age["resolution"])


def test_a_survey_created_before_the_grid_keeps_the_old_law(tenant, survey):
    Question.objects.filter(survey=survey).update(resolution=None)
    selectors._FORMS.clear()
    questions = _questions(_scheme(tenant, survey))
    assert questions["age"]["grid"] is None
    assert "old continuous noise law" in questions["age"]["noise_note"]
    response = tenant.portal.post(
        f"/api/v1/surveys/{survey.pk}/responses/",
        {"participant": "p-1", "answers": good_answers(0) | {"age": 43.2371}},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert Answer.objects.get(question__key="age").value == 43.2371


def _create(tenant, question):
    consultation = consultation_factory(tenant.organisation)
    return tenant.analyst.post(
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "opinion", "title": "t", "questions": [question]},
        format="json",
    )


AGE = {"key": "age", "type": "continuous", "range": [16, 100]}
LAPLACE = {"name": "additive_laplace", "scale": 5}


@pytest.mark.parametrize(
    ("question", "field", "words"),
    [
        (AGE | {"resolution": 0.13, "mechanism": {"name": "additive_uniform", "half_width": 10}},
         "resolution", "whole number of steps"),
        (AGE | {"resolution": 1e-5, "mechanism": {"name": "additive_uniform", "half_width": 10}},
         "resolution", "at most 1,000,000 grid steps"),
        (AGE | {"step": 1, "resolution": 0.13, "mechanism": LAPLACE},
         "resolution", "whole number of steps"),
        (AGE | {"step": 0.5, "resolution": 1, "mechanism": LAPLACE},
         "resolution", "whole number of resolutions"),
        (AGE | {"resolution": 1, "mechanism": {"name": "none"}},
         "resolution", "Only a continuous question with noise"),
        ({"key": "x", "type": "continuous", "range": [1e9, 1e9 + 1],
          "mechanism": {"name": "additive_laplace", "scale": 0.1}},
         "range", "too fine for values as large"),
        # issue 27, item 4: degenerate mechanisms
        (AGE | {"step": 1e-9, "mechanism": {"name": "additive_uniform", "half_width": 10}},
         "step", "at most 100,000 steps"),
        (AGE | {"mechanism": {"name": "additive_gaussian", "sigma": 5e-324}},
         "mechanism", "sigma must be at least"),
        (AGE | {"mechanism": {"name": "additive_laplace", "scale": 1e-9}},
         "mechanism", "scale must be at least"),
        (AGE | {"mechanism": {"name": "additive_uniform", "half_width": 1e-6}},
         "mechanism", "half_width must be at least"),
        ({"key": "site", "type": "ordinal", "categories": ["A", "B", "C", "D"],
          "mechanism": {"name": "negative_gaussian", "sigma": 5e-324}},
         "mechanism", "sigma must be at least 0.01 category steps"),
        ({"key": "sex", "type": "binary", "categories": ["F", "M"],
          "mechanism": {"name": "randomised_response",
                        "matrix": [[1 - 5e-324, 5e-324], [0.3, 0.7]]}},
         "mechanism", "0 or at least 1e-12"),
    ],
)  # fmt: skip
def test_bad_grids_and_degenerate_mechanisms_are_a_400_naming_the_question(
    tenant, question, field, words
):
    response = _create(tenant, question)
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]["questions"][0]
    assert field in errors, errors
    assert words in " ".join(errors[field]), errors


@pytest.mark.parametrize(
    "question",
    [
        AGE | {"step": 1, "mechanism": {"name": "additive_laplace", "scale": 5}},
        AGE | {"resolution": 0.5, "step": 1, "mechanism": {"name": "additive_laplace", "scale": 5}},
        AGE | {"mechanism": {"name": "additive_staircase", "epsilon": 2, "sensitivity": 84}},
        AGE | {"mechanism": {"name": "retention_replacement", "retain": 0.6}},
        {"key": "sex", "type": "binary", "categories": ["F", "M"],
         "mechanism": {"name": "randomised_response", "matrix": [[1.0, 0.0], [0.3, 0.7]]}},
    ],
)  # fmt: skip
def test_good_grids_are_accepted(tenant, question):
    response = _create(tenant, question)
    assert response.status_code == 201, response.content
