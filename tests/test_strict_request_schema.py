"""The published schema says what the server does with fields a request does not have.

Every request body of the API, and every object nested in one (conditions, strata,
quotas, questions and their mechanisms and translations, bulk response items), refuses
an unknown field with a 400 naming it (``core.strict.StrictFieldsMixin``,
``surveys.schemes``). drf-spectacular leaves ``additionalProperties`` out, which in
OpenAPI means "anything else allowed": a client generated from the schema would send a
misspelt ``mni`` that the server refuses. ``config.schema.AutoSchema`` closes those
objects; these tests read the generated schema and send each operation an unknown field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from consultations.models import Organisation
from surveys.services import response_submit
from tests.factories import (
    Tenant,
    consultation_factory,
    good_answers,
    survey_factory,
    tenant_factory,
)

BODY_METHODS = ("post", "put", "patch")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = schema["components"]["schemas"][name]
    return node


def _objects(schema: dict[str, Any], node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema reachable from ``node`` (properties, items, maps, compositions)."""
    if not isinstance(node, dict):
        return
    node = _resolve(schema, node)
    if "properties" in node:
        yield path, node
        for name, child in node["properties"].items():
            yield from _objects(schema, child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _objects(schema, node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _objects(schema, node["additionalProperties"], f"{path}{{}}")
    for key in ("oneOf", "anyOf", "allOf"):
        for child in node.get(key, []):
            yield from _objects(schema, child, path)


def _request_bodies(schema: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    bodies = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = (operation.get("requestBody") or {}).get("content", {})
            if "application/json" in content:
                bodies[(method, path)] = content["application/json"]["schema"]
    return bodies


def test_every_request_object_in_the_schema_refuses_other_fields(schema: dict[str, Any]) -> None:
    bodies = _request_bodies(schema)
    assert ("post", "/api/v1/analyses/") in bodies
    open_objects = []
    seen = set()
    for (method, path), body in bodies.items():
        for where, node in _objects(schema, body, f"{method.upper()} {path}"):
            seen.add(where)
            if node.get("additionalProperties") is not False:
                open_objects.append(where)
    assert not open_objects, f"request objects the schema leaves open: {open_objects}"
    # The nested objects the server checks are reached (the walk does not stop early).
    for nested in (
        "POST /api/v1/analyses/.where[]",
        "POST /api/v1/analyses/.strata[]",
        "POST /api/v1/analyses/.strata[].where[]",
        "POST /api/v1/analyses/.quotas[]",
        "POST /api/v1/analyses/.quotas[].where[]",
        "POST /api/v1/aggregate-reconstructions/",
        "POST /api/v1/surveys/.questions[]",
        "POST /api/v1/surveys/.questions[].mechanism",
        "POST /api/v1/surveys/.questions[].translations{}",
        "POST /api/v1/surveys/{id}/responses/bulk/.responses[]",
    ):
        assert nested in seen, nested


def test_the_analysis_request_schema_lists_what_the_server_takes(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    request = components["AnalysisRequestRequest"]
    assert request["additionalProperties"] is False
    assert set(request["properties"]) == {
        "survey", "kind", "attribute", "where", "method", "size", "seed", "strata",
        "quotas", "reserves", "objective", "max_outside", "after", "after_attribute", "panel",
    }  # fmt: skip
    assert set(components["QuotaRequest"]["properties"]) == {"where", "min", "max"}
    assert components["QuotaRequest"]["additionalProperties"] is False
    assert components["ConditionRequest"]["additionalProperties"] is False
    # Responses are not requests: the job status a client reads stays open to additions.
    assert "additionalProperties" not in components["AggregateReconstruction"]


# --------------------------------------------------------------------------- behaviour


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    tenant: Tenant = tenant_factory()
    consultation = consultation_factory(tenant.organisation)
    survey = survey_factory(consultation_factory(tenant.organisation))
    draft = survey_factory(consultation, kind="opinion", open_it=False)
    for index in range(12):  # enough answers for an analysis to be taken
        response_submit(survey=survey, participant=f"p-{index}", answers=good_answers(index))
    return {
        "tenant": tenant, "consultation": consultation.pk, "survey": survey.pk,
        "draft": draft.pk,
    }  # fmt: skip


def _cases(world: dict[str, Any]) -> dict[tuple[str, str], tuple[str, dict[str, Any], str]]:
    """(method, schema path) -> (role, a good body, the object's unknown-field message)."""
    survey, consultation = world["survey"], world["consultation"]
    question = {"key": "q", "type": "binary", "categories": ["Y", "N"],
                "mechanism": {"name": "none"}}  # fmt: skip
    consultation_body = {"title": "Library hours", "min_cell": 6}
    survey_body = {"consultation": consultation, "kind": "opinion", "title": "t",
                   "questions": [question]}  # fmt: skip
    return {
        ("post", "/api/v1/consultations/"): (
            "analyst", consultation_body, "Unknown field; a consultation has description, "
            "min_cell, min_responses, privacy_budget, title.",
        ),
        ("put", "/api/v1/consultations/{id}/"): (
            "analyst", consultation_body, "Unknown field; a consultation has description, "
            "min_cell, min_responses, privacy_budget, title.",
        ),
        ("patch", "/api/v1/consultations/{id}/"): (
            "analyst", {"min_cell": 7}, "Unknown field; a consultation has description, "
            "min_cell, min_responses, privacy_budget, title.",
        ),
        ("post", "/api/v1/portal-origins/"): (
            "analyst", {"origin": "https://www.leeds.gov.uk"},
            "Unknown field; a portal origin has origin.",
        ),
        ("post", "/api/v1/surveys/"): (
            "analyst", survey_body,
            "Unknown field; a survey has consultation, kind, questions, retention_days, title.",
        ),
        ("put", "/api/v1/surveys/{id}/"): (
            "analyst", {"title": "renamed", "questions": [question]},
            "Unknown field; a survey has consultation, kind, questions, retention_days, title.",
        ),
        ("patch", "/api/v1/surveys/{id}/"): (
            "analyst", {"title": "renamed"},
            "Unknown field; a survey has consultation, kind, questions, retention_days, title.",
        ),
        ("post", "/api/v1/surveys/{id}/responses/"): (
            "portal", {"participant": "p-100", "answers": good_answers(2)},
            'Unknown field; a response has "participant" and "answers".',
        ),
        ("post", "/api/v1/surveys/{id}/responses/bulk/"): (
            "portal", {"responses": [{"participant": "p-101", "answers": good_answers(3)}]},
            "Unknown field; a bulk submission has responses.",
        ),
        ("post", "/api/v1/surveys/{id}/responses/withdraw/"): (
            "portal", {"participant": "p-1", "withdrawal_token": "not-it"},
            "Unknown field; a withdrawal has participant, withdrawal_token.",
        ),
        ("post", "/api/v1/surveys/{id}/responses/budget/"): (
            "portal", {"participant": "p-1", "withdrawal_token": "not-it"},
            "Unknown field; a budget request has participant, withdrawal_token.",
        ),
        ("post", "/api/v1/surveys/{id}/calibration/"): (
            "analyst", {"question": "skips_class", "pairs": [["never", "always"]]},
            "Unknown field; a calibration upload has pairs, question.",
        ),
        ("post", "/api/v1/webhooks/"): (
            "analyst", {"url": "https://hooks.example.org/x", "events": ["report.finished"]},
            "Unknown field; a webhook has events, url.",
        ),
        ("post", "/api/v1/analyses/"): (
            "analyst", {"survey": survey, "kind": "distribution", "attribute": "sex"},
            "Unknown field; an analysis request has after, after_attribute, attribute, kind, "
            "max_outside, method, objective, panel, quotas, reserves, seed, size, strata, survey, "
            "where.",
        ),
        ("post", "/api/v1/aggregate-reconstructions/"): (
            "analyst", {"counts": [23, 22], "channel": [[0.2, 0.8], [0.8, 0.2]]},
            "Unknown field; an aggregate reconstruction has channel, counts, method.",
        ),
    }  # fmt: skip


def test_every_operation_with_a_body_refuses_an_unknown_field_naming_it(
    schema: dict[str, Any], world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from webhooks import services as webhook_services

    # No DNS in the test: the URL's own checks are tests/webhooks' business.
    monkeypatch.setattr(webhook_services, "check_url", lambda url: None)
    cases = _cases(world)
    assert set(cases) == set(_request_bodies(schema)), "every body operation is tried"
    tenant: Tenant = world["tenant"]
    for (method, path), (role, body, message) in cases.items():
        target = (
            world["consultation"] if "consultations" in path
            else world["draft"] if path == "/api/v1/surveys/{id}/"
            else world["survey"]
        )  # fmt: skip
        url = path.replace("{id}", str(target))
        client = tenant.analyst if role == "analyst" else tenant.portal
        send = getattr(client, method)
        refused = send(url, {**body, "colour": "blue"}, format="json")
        assert refused.status_code == 400, (method, path, refused.content)
        errors = refused.json()["errors"]
        assert errors == {"colour": [message]}, (method, path, errors)
        accepted = send(url, body, format="json")
        # a wrong token: 404, not 400
        expected = 404 if path.endswith(("/withdraw/", "/budget/")) else None
        assert accepted.status_code in ((expected,) if expected else (200, 201, 202)), (
            method, path, accepted.content,
        )  # fmt: skip
    assert Organisation.objects.count() == 1


def test_an_unknown_survey_field_is_named_in_the_readers_language(world: dict[str, Any]) -> None:
    tenant: Tenant = world["tenant"]
    body = {"consultation": world["consultation"], "kind": "opinion", "title": "t", "questons": []}
    german = tenant.analyst.post("/api/v1/surveys/", body, format="json", HTTP_ACCEPT_LANGUAGE="de")
    polish = tenant.analyst.post("/api/v1/surveys/", body, format="json", HTTP_ACCEPT_LANGUAGE="pl")
    known = "consultation, kind, questions, retention_days, title"
    assert german.json()["errors"] == {"questons": [f"Unbekanntes Feld; eine Umfrage hat {known}."]}
    assert polish.json()["errors"] == {"questons": [f"Nieznane pole; ankieta ma pola {known}."]}


@pytest.mark.parametrize(
    ("component", "fields"),
    [
        ("ConsultationInputRequest", {"id", "created_at", "updated_at"}),
        ("SurveyUpdateRequest", {"id", "status", "created_at", "response_count"}),
    ],
)
def test_the_read_only_fields_a_put_may_repeat_are_listed_read_only(schema, component, fields):
    """What GET returned may be PUT back (README addition): the closed request object
    lists the representation's read-only fields as ``readOnly``, not as unknown keys."""
    node = schema["components"]["schemas"][component]
    assert node["additionalProperties"] is False
    for name in fields:
        assert node["properties"][name].get("readOnly") is True, name
