"""Issue 13, finding 4: bad input is always a JSON 4xx, never a 500 or an HTML page.

Each case was a 500 (or an HTML 400) on the main of 2026-11-23.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.factories import (
    Tenant,
    consultation_factory,
    good_answers,
    profile_questions,
    survey_factory,
    tenant_factory,
)

pytestmark = pytest.mark.django_db

HUGE = int("9" * 400)


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def tenant(db: None) -> Tenant:
    return tenant_factory()


@pytest.fixture
def survey(tenant: Tenant):
    return survey_factory(consultation_factory(tenant.organisation))


def json_4xx(response: Any, *statuses: int) -> dict[str, Any]:
    assert response["Content-Type"].startswith("application/json"), (
        response.status_code,
        response["Content-Type"],
        response.content[:200],
    )
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    if statuses:
        assert response.status_code in statuses, (response.status_code, response.content[:300])
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def post(client: APIClient, url: str, body: Any) -> Any:
    raw = body if isinstance(body, str) else json.dumps(body)
    return client.generic("POST", url, raw, content_type="application/json")


# ----------------------------------------------------------------------- huge integers


def test_a_400_digit_integer_as_a_continuous_answer_is_a_400(tenant, survey):
    answers = good_answers() | {"age": HUGE}
    response = post(
        tenant.portal,
        f"/api/v1/surveys/{survey.pk}/responses/",
        {"participant": "p1", "answers": answers},
    )
    body = json_4xx(response, 400)
    assert "age" in json.dumps(body)
    assert not survey.responses.exists()


def test_a_400_digit_integer_in_a_bulk_answer_is_a_400(tenant, survey):
    responses = [{"participant": "p1", "answers": good_answers() | {"income": -HUGE}}]
    response = post(
        tenant.portal, f"/api/v1/surveys/{survey.pk}/responses/bulk/", {"responses": responses}
    )
    json_4xx(response, 400)
    assert not survey.responses.exists()


@pytest.mark.parametrize(
    "mechanism",
    [
        {"name": "additive_uniform", "half_width": HUGE},
        {"name": "additive_gaussian", "sigma": HUGE},
        {"name": "additive_laplace", "scale": HUGE},
        {"name": "retention_replacement", "retain": HUGE},
    ],
)
def test_a_400_digit_integer_as_a_question_parameter_is_a_400(tenant, mechanism):
    consultation = consultation_factory(tenant.organisation)
    question = {"key": "age", "type": "continuous", "range": [0, 100], "mechanism": mechanism}
    response = post(
        tenant.analyst,
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "profile", "title": "t", "questions": [question]},
    )
    body = json_4xx(response, 400)
    assert "questions" in body["errors"]


def test_a_400_digit_integer_in_a_range_is_a_400(tenant):
    consultation = consultation_factory(tenant.organisation)
    question = {
        "key": "age",
        "type": "continuous",
        "range": [0, HUGE],
        "mechanism": {"name": "none"},
    }
    response = post(
        tenant.analyst,
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "profile", "title": "t", "questions": [question]},
    )
    json_4xx(response, 400)


@pytest.mark.parametrize(
    "condition",
    [
        {"attribute": "age", "op": "gt", "value": HUGE},
        {"attribute": "age", "op": "lte", "value": -HUGE},
        {"attribute": "age", "op": "between", "value": [0, HUGE]},
        {"attribute": "sex", "op": "in", "value": [HUGE]},
        {"attribute": "age", "op": "gt", "value": 1e308},
    ],
)
def test_a_huge_number_in_a_where_value_is_a_400(tenant, survey, condition):
    response = post(
        tenant.analyst,
        "/api/v1/analyses/",
        {"survey": survey.pk, "kind": "count", "where": [condition]},
    )
    body = json_4xx(response, 400)
    assert "where" in json.dumps(body)


# ----------------------------------------------------------------------- accepted range


def test_an_accepted_range_of_plus_minus_1e308_is_refused_naming_the_bound(tenant):
    consultation = consultation_factory(tenant.organisation)
    question = {
        "key": "x",
        "type": "continuous",
        "range": [-1e308, 1e308],
        "mechanism": {"name": "additive_gaussian", "sigma": 1.0},
    }
    response = post(
        tenant.analyst,
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "profile", "title": "t", "questions": [question]},
    )
    body = json_4xx(response, 400)
    assert "1e+12" in json.dumps(body) or "1000000000000" in json.dumps(body), body


def test_a_noise_parameter_far_beyond_the_range_is_refused_naming_the_bound(tenant):
    consultation = consultation_factory(tenant.organisation)
    question = {
        "key": "x",
        "type": "continuous",
        "range": [0, 100],
        "mechanism": {"name": "additive_gaussian", "sigma": 1e200},
    }
    response = post(
        tenant.analyst,
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "profile", "title": "t", "questions": [question]},
    )
    body = json_4xx(response, 400)
    assert "sigma" in json.dumps(body)


# ----------------------------------------------------------------------- query parameters


@pytest.mark.parametrize("value", ["1e30", "99999999999999999999999"])
def test_a_huge_survey_id_in_a_path_is_a_404_not_a_500(tenant, value):
    response = tenant.analyst.get(f"/api/v1/surveys/{value}/")
    json_4xx(response, 404)


# ----------------------------------------------------------------------- parsing limits


def test_100000_nested_brackets_is_a_400(tenant, survey):
    raw = "[" * 100_000 + "]" * 100_000
    response = post(tenant.analyst, "/api/v1/analyses/", raw)
    body = json_4xx(response, 400)
    assert "deep" in body["detail"].lower() or "nest" in body["detail"].lower()


def test_deep_nesting_inside_an_object_is_a_400(tenant, survey):
    raw = '{"survey": 1, "kind": "count", "where": ' + "[" * 5000 + "]" * 5000 + "}"
    response = post(tenant.analyst, "/api/v1/analyses/", raw)
    json_4xx(response, 400)


def test_an_oversize_body_is_a_json_413(tenant, survey, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = {"participant": "p1", "answers": good_answers() | {"pad": "x" * 5000}}
    response = post(tenant.portal, f"/api/v1/surveys/{survey.pk}/responses/", big)
    body = json_4xx(response, 413)
    assert "1000" in body["detail"]


# ----------------------------------------------------------------------- references and keys


def test_a_participant_reference_with_a_trailing_newline_is_refused(tenant, survey):
    url = f"/api/v1/surveys/{survey.pk}/responses/"
    assert (
        post(tenant.portal, url, {"participant": "p1", "answers": good_answers()}).status_code
        == 201
    )
    response = post(tenant.portal, url, {"participant": "p1\n", "answers": good_answers()})
    json_4xx(response, 400)
    assert survey.responses.count() == 1


def test_a_bulk_participant_reference_with_a_trailing_newline_is_refused(tenant, survey):
    url = f"/api/v1/surveys/{survey.pk}/responses/bulk/"
    response = post(
        tenant.portal, url, {"responses": [{"participant": "p2\n", "answers": good_answers()}]}
    )
    json_4xx(response, 400)
    assert not survey.responses.exists()


def test_a_question_key_with_a_trailing_newline_is_refused(tenant):
    consultation = consultation_factory(tenant.organisation)
    question = profile_questions()[0] | {"key": "sex\n"}
    response = post(
        tenant.analyst,
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "profile", "title": "t", "questions": [question]},
    )
    body = json_4xx(response, 400)
    assert "key" in json.dumps(body)


# ----------------------------------------------------------------------- caps and the scheme


def test_questions_per_survey_are_capped(tenant, settings):
    settings.SURVEY_MAX_QUESTIONS = 5
    consultation = consultation_factory(tenant.organisation)
    questions = [
        {"key": f"q{i}", "type": "binary", "categories": ["a", "b"], "mechanism": {"name": "none"}}
        for i in range(6)
    ]
    response = post(
        tenant.analyst,
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "profile", "title": "t", "questions": questions},
    )
    body = json_4xx(response, 400)
    assert "5" in body["detail"]


def test_categories_per_question_are_capped(tenant, settings):
    settings.SURVEY_MAX_CATEGORIES = 10
    consultation = consultation_factory(tenant.organisation)
    question = {
        "key": "q",
        "type": "nominal",
        "categories": [f"c{i}" for i in range(11)],
        "mechanism": {"name": "negative_uniform"},
    }
    response = post(
        tenant.analyst,
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "profile", "title": "t", "questions": [question]},
    )
    body = json_4xx(response, 400)
    assert "10" in json.dumps(body)


def test_the_scheme_is_built_once_per_survey_state(tenant, survey):
    url = f"/api/v1/surveys/{survey.pk}/scheme/"
    first = tenant.portal.get(url)
    assert first.status_code == 200
    from surveys import schemes

    calls: list[int] = []
    original = schemes.question_scheme
    schemes.question_scheme = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        second = tenant.portal.get(url)
    finally:
        schemes.question_scheme = original
    assert second.status_code == 200 and second.json() == first.json()
    assert calls == []


def test_a_cached_scheme_get_sends_the_rendered_bytes_without_rendering_again(tenant, survey):
    # Issue 13, finding 5: the questions were cached but every GET still rendered the
    # whole scheme as JSON (0.76 s for the largest allowed survey). The rendered bytes
    # are cached now: a second GET renders nothing.
    from rest_framework.renderers import JSONRenderer

    url = f"/api/v1/surveys/{survey.pk}/scheme/"
    first = tenant.portal.get(url)
    assert first.status_code == 200 and first["Content-Type"] == "application/json"
    rendered: list[int] = []
    original = JSONRenderer.render
    JSONRenderer.render = lambda *a, **k: rendered.append(1) or original(*a, **k)
    try:
        second = tenant.portal.get(url)
    finally:
        JSONRenderer.render = original
    assert rendered == []
    assert second.content == first.content
    assert second.json()["questions"] == first.json()["questions"]


def test_the_scheme_answers_304_to_its_etag_and_200_to_another(tenant, survey):
    url = f"/api/v1/surveys/{survey.pk}/scheme/"
    first = tenant.portal.get(url)
    etag = first["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 10
    again = tenant.portal.get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == etag
    weak = tenant.portal.get(url, HTTP_IF_NONE_MATCH=f'"other", W/{etag}')
    assert weak.status_code == 304
    other = tenant.portal.get(url, HTTP_IF_NONE_MATCH='"not-this-one"')
    assert other.status_code == 200 and other.content == first.content


def test_the_cached_scheme_follows_a_change_of_the_survey(tenant, survey):
    # A new title (allowed on an open survey) and closing it change the scheme: the
    # cached bytes and the ETag follow, and the old ETag no longer gives a 304.
    from surveys.services import survey_close, survey_update

    url = f"/api/v1/surveys/{survey.pk}/scheme/"
    first = tenant.analyst.get(url)
    survey_update(survey=survey, title="A new title", actor="test")
    renamed = tenant.analyst.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert renamed.status_code == 200, renamed.status_code
    assert renamed.json()["title"] == "A new title" and renamed["ETag"] != first["ETag"]
    survey_close(survey=survey, actor="test")
    closed = tenant.analyst.get(url, HTTP_IF_NONE_MATCH=renamed["ETag"])
    assert closed.status_code == 200 and closed.json()["status"] == "closed"
    assert tenant.portal.get(url).status_code == 404  # portal keys: open surveys only


# ----------------------------------------------------------------------- SQLite concurrency


def test_concurrent_submissions_of_one_participant_on_sqlite_give_one_201_and_409s(tmp_path):
    """The embedded default (a file, not pytest's in-memory database) in a process of its own."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL")}
    env["DJANGO_DEBUG"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "tests.guard.sqlite_race", str(tmp_path / "race.sqlite3")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    outcomes = json.loads(result.stdout.strip().splitlines()[-1])
    codes = sorted(code for code, _ in outcomes)
    assert codes == [201] + [409] * 19, outcomes
    assert all(kind.startswith("application/json") for _, kind in outcomes), outcomes


@pytest.mark.parametrize("value", ["abc", "1e30", "99999999999999999999999", "-1", "1.5"])
def test_a_bad_survey_filter_on_analyses_is_a_400(tenant, value):
    response = tenant.analyst.get("/api/v1/analyses/", {"survey": value})
    body = json_4xx(response, 400)
    assert "survey" in body["errors"]


@pytest.mark.parametrize(
    "path", ["/api/v1/analyses/-3/", "/api/v1/reports/abc/", "/api/v1/no-such-thing/"]
)
def test_an_unrouted_api_path_is_a_json_404(tenant, path):
    json_4xx(tenant.analyst.get(path), 404)
