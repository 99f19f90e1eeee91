"""``/api/v1/surveys/``: creation with questions, mechanism validation, states, scheme."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from surveys.models import Question, Survey
from tests.factories import consultation_factory, profile_questions, survey_factory

URL = "/api/v1/surveys/"


def _create(client, consultation, questions=None, kind="profile"):
    return client.post(
        URL,
        {
            "consultation": consultation.pk,
            "kind": kind,
            "title": "Registration",
            "questions": profile_questions() if questions is None else questions,
        },
        format="json",
    )


def test_create_a_survey_with_its_questions_in_one_request(tenant, consultation):
    response = _create(tenant.analyst, consultation)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "draft"
    assert body["kind"] == "profile"
    assert [q["key"] for q in body["questions"]] == [q["key"] for q in profile_questions()]
    age = next(q for q in body["questions"] if q["key"] == "age")
    assert age["range"] == [16, 100]
    assert age["mechanism"] == {"name": "additive_uniform", "half_width": 10}
    stored = Question.objects.get(survey_id=body["id"], key="district")
    assert (stored.n_categories, stored.position, stored.mechanism) == (5, 1, "randomised_response")
    assert Question.objects.get(survey_id=body["id"], key="age").n_categories == 0


def _with(index: int, **changes):
    questions = profile_questions()
    question = copy.deepcopy(questions[index])
    for name, value in changes.items():
        if value is KeyError:
            question.pop(name, None)
        else:
            question[name] = value
    questions[index] = question
    return questions


SEX, DISTRICT, SATISFACTION, SITE, SKIPS, AGE, INCOME, TENURE = range(8)
BAD_QUESTIONS = {
    "retain zero": (
        _with(SEX, mechanism={"name": "randomised_response", "retain": 0}),
        SEX,
        "mechanism",
    ),
    "retain one half on two categories (singular channel)": (
        _with(SEX, mechanism={"name": "randomised_response", "retain": 0.5}),
        SEX,
        "mechanism",
    ),
    "retain below 1/k": (
        _with(DISTRICT, mechanism={"name": "randomised_response", "retain": 0.15}),
        DISTRICT,
        "mechanism",
    ),
    "matrix nearly singular": (
        _with(
            SEX, mechanism={"name": "randomised_response", "matrix": [[0.502, 0.498], [0.5, 0.5]]}
        ),
        SEX,
        "mechanism",
    ),
    "step on a discrete question": (_with(SEX, step=1), SEX, "step"),
    "step not dividing the range": (_with(AGE, step=5), AGE, "step"),
    "step negative": (_with(AGE, step=-1), AGE, "step"),
    "retain above one": (
        _with(SEX, mechanism={"name": "randomised_response", "retain": 1.5}),
        SEX,
        "mechanism",
    ),
    "retain a bool": (
        _with(SEX, mechanism={"name": "randomised_response", "retain": True}),
        SEX,
        "mechanism",
    ),
    "retain and matrix": (
        _with(
            SEX,
            mechanism={"name": "randomised_response", "retain": 0.7, "matrix": [[1, 0], [0, 1]]},
        ),
        SEX,
        "mechanism",
    ),
    "matrix not stochastic": (
        _with(SEX, mechanism={"name": "randomised_response", "matrix": [[0.7, 0.2], [0.3, 0.7]]}),
        SEX,
        "mechanism",
    ),
    "matrix wrong size": (
        _with(
            DISTRICT, mechanism={"name": "randomised_response", "matrix": [[0.7, 0.3], [0.3, 0.7]]}
        ),
        DISTRICT,
        "mechanism",
    ),
    "matrix negative entry": (
        _with(SEX, mechanism={"name": "randomised_response", "matrix": [[1.2, -0.2], [0.3, 0.7]]}),
        SEX,
        "mechanism",
    ),
    "sigma zero": (
        _with(SITE, mechanism={"name": "negative_gaussian", "sigma": 0}),
        SITE,
        "mechanism",
    ),
    "sigma negative": (
        _with(SITE, mechanism={"name": "negative_gaussian", "sigma": -1}),
        SITE,
        "mechanism",
    ),
    "sigma missing": (_with(SITE, mechanism={"name": "negative_gaussian"}), SITE, "mechanism"),
    "gaussian on nominal": (
        _with(DISTRICT, mechanism={"name": "negative_gaussian", "sigma": 1}),
        DISTRICT,
        "mechanism",
    ),
    "negative survey with two categories": (
        _with(SEX, mechanism={"name": "negative_uniform"}),
        SEX,
        "mechanism",
    ),
    "manual negative with two categories": (
        _with(SATISFACTION, categories=["a", "b"], type="nominal"),
        SATISFACTION,
        "mechanism",
    ),
    "continuous mechanism on binary": (
        _with(TENURE, mechanism={"name": "additive_uniform", "half_width": 1}),
        TENURE,
        "mechanism",
    ),
    "discrete mechanism on continuous": (
        _with(AGE, mechanism={"name": "randomised_response", "retain": 0.5}),
        AGE,
        "mechanism",
    ),
    "unknown mechanism": (_with(AGE, mechanism={"name": "magic"}), AGE, "mechanism"),
    "mechanism without name": (_with(AGE, mechanism={"half_width": 3}), AGE, "mechanism"),
    "unexpected parameter": (
        _with(AGE, mechanism={"name": "additive_uniform", "half_width": 3, "sigma": 1}),
        AGE,
        "mechanism",
    ),
    "half width zero": (
        _with(AGE, mechanism={"name": "additive_uniform", "half_width": 0}),
        AGE,
        "mechanism",
    ),
    "laplace scale negative": (
        _with(INCOME, mechanism={"name": "additive_laplace", "scale": -2}),
        INCOME,
        "mechanism",
    ),
    "retention retain zero": (
        _with(INCOME, mechanism={"name": "retention_replacement", "retain": 0}),
        INCOME,
        "mechanism",
    ),
    "parameter a string": (
        _with(INCOME, mechanism={"name": "additive_gaussian", "sigma": "800"}),
        INCOME,
        "mechanism",
    ),
    "duplicate category labels": (
        _with(DISTRICT, categories=["N", "S", "N", "W", "C"]),
        DISTRICT,
        "categories",
    ),
    "binary with three categories": (_with(SEX, categories=["F", "M", "X"]), SEX, "categories"),
    "one category": (_with(DISTRICT, categories=["N"]), DISTRICT, "categories"),
    "categories not strings": (_with(DISTRICT, categories=[1, 2, 3, 4, 5]), DISTRICT, "categories"),
    "discrete without categories": (_with(DISTRICT, categories=KeyError), DISTRICT, "categories"),
    "range low equals high": (_with(AGE, range=[16, 16]), AGE, "range"),
    "range low above high": (_with(AGE, range=[100, 16]), AGE, "range"),
    "range of three": (_with(AGE, range=[1, 2, 3]), AGE, "range"),
    "range with a bool": (_with(AGE, range=[False, 100]), AGE, "range"),
    "range on a discrete question": (_with(SEX, range=[0, 1]), SEX, "range"),
    "categories on a continuous question": (_with(AGE, categories=["a", "b"]), AGE, "categories"),
    "unknown type": (_with(AGE, type="text"), AGE, "type"),
    "bad key": (_with(AGE, key="1 age"), AGE, "key"),
    "duplicate key": (_with(AGE, key="sex"), AGE, "key"),
    "unknown field": (_with(AGE, true_value=3), AGE, "true_value"),
    "required not bool": (_with(AGE, required="yes"), AGE, "required"),
}


@pytest.mark.parametrize("case", sorted(BAD_QUESTIONS))
def test_bad_questions_are_refused_naming_item_and_field(tenant, consultation, case):
    questions, index, field = BAD_QUESTIONS[case]
    response = _create(tenant.analyst, consultation, questions)
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]["questions"]
    assert field in errors[index], errors
    if "singular" in case or "1/k" in case:
        assert "singular" in str(errors[index][field]) or "1/k" in str(errors[index][field])
    assert all(not item for i, item in enumerate(errors) if i != index)
    assert not Survey.objects.exists()


def test_second_profile_survey_is_refused(tenant, consultation):
    assert _create(tenant.analyst, consultation).status_code == 201
    response = _create(tenant.analyst, consultation)
    assert response.status_code == 400
    assert "kind" in response.json()["errors"]
    assert _create(tenant.analyst, consultation, kind="opinion").status_code == 201
    assert _create(tenant.analyst, consultation, kind="opinion").status_code == 201


def test_survey_for_another_organisations_consultation_is_refused(
    tenant, other_tenant, consultation
):
    response = _create(other_tenant.analyst, consultation)
    assert response.status_code == 400
    assert "consultation" in response.json()["errors"]


def test_portal_key_cannot_create_or_change_surveys(tenant, consultation, survey):
    assert _create(tenant.portal, consultation, kind="opinion").status_code == 403
    assert (
        tenant.portal.patch(f"{URL}{survey.pk}/", {"title": "x"}, format="json").status_code == 403
    )
    assert tenant.portal.post(f"{URL}{survey.pk}/close/").status_code == 403
    assert tenant.portal.delete(f"{URL}{survey.pk}/").status_code == 403
    # Portal keys sit in public pages: they read open schemes only, not surveys.
    assert tenant.portal.get(f"{URL}{survey.pk}/").status_code == 403


def test_list_filters_by_consultation_kind_and_status(tenant, consultation):
    other = consultation_factory(tenant.organisation)
    profile = survey_factory(consultation, open_it=True)
    opinion = survey_factory(consultation, kind="opinion", open_it=False)
    elsewhere = survey_factory(other, kind="opinion", open_it=False)

    def ids(**params):
        response = tenant.analyst.get(URL, params)
        assert response.status_code == 200
        return {item["id"] for item in response.json()["results"]}

    assert ids() == {profile.pk, opinion.pk, elsewhere.pk}
    assert ids(consultation=consultation.pk) == {profile.pk, opinion.pk}
    assert ids(kind="opinion") == {opinion.pk, elsewhere.pk}
    assert ids(status="open") == {profile.pk}
    assert ids(consultation=consultation.pk, kind="opinion", status="draft") == {opinion.pk}
    bad = tenant.analyst.get(URL, {"status": "sealed"})
    assert bad.status_code == 400
    assert "status" in bad.json()["errors"]


def test_open_and_close_follow_draft_open_closed(tenant, consultation):
    survey = survey_factory(consultation, open_it=False)
    url = f"{URL}{survey.pk}/"
    assert tenant.analyst.post(url + "close/").status_code == 409
    response = tenant.analyst.post(url + "open/")
    assert response.status_code == 200
    assert response.json()["status"] == "open"
    assert tenant.analyst.post(url + "open/").status_code == 409
    assert tenant.analyst.post(url + "close/").json()["status"] == "closed"
    again = tenant.analyst.post(url + "open/")
    assert again.status_code == 409
    assert "status" in again.json()["errors"]


def test_a_survey_without_questions_cannot_open(tenant, consultation):
    survey = survey_factory(consultation, open_it=False, questions=[])
    response = tenant.analyst.post(f"{URL}{survey.pk}/open/")
    assert response.status_code == 400
    assert "questions" in response.json()["errors"]


def test_questions_are_frozen_once_the_survey_opens(tenant, survey):
    url = f"{URL}{survey.pk}/"
    response = tenant.analyst.patch(url, {"questions": profile_questions()[:2]}, format="json")
    assert response.status_code == 400
    assert "questions" in response.json()["errors"]
    assert survey.questions.count() == 8
    renamed = tenant.analyst.patch(url, {"title": "Renamed"}, format="json")
    assert renamed.status_code == 200
    assert renamed.json()["title"] == "Renamed"
    kind = tenant.analyst.patch(url, {"kind": "opinion"}, format="json")
    assert kind.status_code == 400
    assert "kind" in kind.json()["errors"]


def test_draft_questions_can_be_replaced(tenant, consultation):
    survey = survey_factory(consultation, open_it=False)
    url = f"{URL}{survey.pk}/"
    response = tenant.analyst.put(
        url, {"title": "Shorter", "questions": profile_questions()[:2]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert [q["key"] for q in response.json()["questions"]] == ["sex", "district"]
    bad = tenant.analyst.patch(
        url, {"questions": _with(SEX, mechanism={"name": "x"})}, format="json"
    )
    assert bad.status_code == 400
    assert survey.questions.count() == 2
    assert tenant.analyst.put(url, {"title": "Only title"}, format="json").status_code == 400


def test_delete_only_drafts(tenant, consultation, survey):
    assert tenant.analyst.delete(f"{URL}{survey.pk}/").status_code == 409
    draft = survey_factory(consultation, kind="opinion", open_it=False)
    assert tenant.analyst.delete(f"{URL}{draft.pk}/").status_code == 204
    assert not Survey.objects.filter(pk=draft.pk).exists()


def test_scheme_publishes_channels_epsilon_and_instructions(tenant, survey):
    response = tenant.portal.get(f"{URL}{survey.pk}/scheme/")
    assert response.status_code == 200
    body = response.json()
    assert (body["survey"], body["status"]) == (survey.pk, "open")
    by_key = {q["key"]: q for q in body["questions"]}
    assert list(by_key) == [q["key"] for q in profile_questions()]

    sex = by_key["sex"]
    np.testing.assert_allclose(sex["channel"], [[0.7, 0.3], [0.3, 0.7]])
    assert sex["epsilon"] == pytest.approx(math.log(0.7 / 0.3))
    assert sex["mechanism"] == {"name": "randomised_response", "retain": 0.7}
    np.testing.assert_allclose(
        by_key["district"]["channel"], profile_questions()[1]["mechanism"]["matrix"]
    )
    assert by_key["district"]["epsilon"] == pytest.approx(math.log(6))
    satisfaction = np.array(by_key["satisfaction"]["channel"])
    np.testing.assert_allclose(satisfaction, (1 - np.eye(5)) / 4)
    assert by_key["satisfaction"]["epsilon"] is None  # zero diagonal: unbounded
    site = np.array(by_key["site"]["channel"])
    assert site.shape == (7, 7)
    np.testing.assert_allclose(site.sum(axis=1), 1.0)
    assert np.all(np.diag(site) == 0)
    assert site[3, 2] > site[3, 0]  # nearer categories are likelier
    skips = by_key["skips_class"]
    assert "channel" not in skips
    assert skips["instruction"] == "Choose one answer that is NOT true for you."
    age = by_key["age"]
    assert age["range"] == [16, 100]
    assert "channel" not in age and "categories" not in age
    np.testing.assert_allclose(by_key["tenure"]["channel"], np.eye(2))


def test_another_organisations_survey_answers_404_everywhere(tenant, other_tenant, survey):
    base = f"{URL}{survey.pk}/"
    assert other_tenant.analyst.get(base).status_code == 404
    for client in (other_tenant.analyst, other_tenant.portal):
        assert client.get(base + "scheme/").status_code == 404
    analyst = other_tenant.analyst
    assert analyst.patch(base, {"title": "x"}, format="json").status_code == 404
    assert analyst.put(base, {"title": "x", "questions": []}, format="json").status_code == 404
    assert analyst.delete(base).status_code == 404
    assert analyst.post(base + "open/").status_code == 404
    assert analyst.post(base + "close/").status_code == 404
    assert analyst.get(URL).json()["count"] == 0
    survey.refresh_from_db()
    assert (survey.title, survey.status) == ("Survey", "open")


def test_unknown_survey_answers_404(tenant):
    response = tenant.analyst.get(f"{URL}999999/scheme/")
    assert response.status_code == 404
    assert response.json()["detail"] == "Survey not found."


def test_a_continuous_question_may_declare_its_lattice_step(tenant, consultation):
    response = _create(tenant.analyst, consultation, _with(AGE, step=1))
    assert response.status_code == 201, response.content
    age = next(q for q in response.json()["questions"] if q["key"] == "age")
    assert age["step"] == 1
    stored = Question.objects.get(survey_id=response.json()["id"], key="age")
    assert stored.step == 1.0
    from surveys.schemes import question_scheme

    assert question_scheme(stored)["step"] == 1.0


def test_a_survey_read_with_get_can_be_put_back_edited(tenant, consultation):
    """GET, edit, PUT on a draft: the representation (read-only fields, questions as
    read) goes back unchanged except the edit; an unknown field is still refused."""
    survey = survey_factory(consultation, open_it=False)
    url = f"{URL}{survey.pk}/"
    body = tenant.analyst.get(url).json()
    assert {"id", "status", "created_at", "response_count"} <= set(body)
    body["title"] = "Renamed after reading"
    response = tenant.analyst.put(url, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Renamed after reading"
    assert response.json()["questions"] == body["questions"]
    body["titel"] = "x"
    refused = tenant.analyst.put(url, body, format="json")
    assert refused.status_code == 400
    assert list(refused.json()["errors"]) == ["titel"]
