"""Portal keys sit in public web pages: they may do only what a resident needs.

Read the scheme of an open survey, submit, withdraw with the participant's withdrawal token,
read the participant's privacy budget with that token;
every other endpoint of the API answers 403 (or 404), checked over the whole OpenAPI schema
so that an endpoint added later is covered too.
"""

from __future__ import annotations

import logging
import re

from drf_spectacular.generators import SchemaGenerator

from surveys.models import CalibrationPair, Response
from surveys.services import survey_close, withdrawal_token_hash
from tests.factories import consultation_factory, good_answers, survey_factory

URL = "/api/v1/surveys/"

# (method, path template) a portal key may use; everything else is refused.
PORTAL_ALLOWED = {
    ("GET", "/api/v1/surveys/{id}/scheme/"),
    ("POST", "/api/v1/surveys/{id}/responses/"),
    ("POST", "/api/v1/surveys/{id}/responses/bulk/"),
    ("POST", "/api/v1/surveys/{id}/responses/withdraw/"),
    ("POST", "/api/v1/surveys/{id}/responses/budget/"),
}


def api_operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    )


def test_the_schema_lists_what_this_test_checks() -> None:
    operations = api_operations()
    assert set(operations) >= PORTAL_ALLOWED
    assert ("GET", "/api/v1/consultations/") in operations
    assert ("POST", "/api/v1/surveys/{id}/calibration/") in operations
    assert len(operations) > 15


def test_a_portal_key_is_refused_everywhere_else(tenant, survey) -> None:
    draft = survey_factory(survey.consultation, kind="opinion", open_it=False)
    seen = []
    for method, path in api_operations():
        if (method, path) in PORTAL_ALLOWED:
            continue
        for object_id in (survey.pk, draft.pk):
            url = re.sub(r"\{[^}]+\}", str(object_id), path)
            response = tenant.portal.generic(method, url, "{}", content_type="application/json")
            assert response.status_code in (403, 404), (method, url, response.status_code)
            assert "detail" in response.json()
        seen.append((method, path))
    assert len(seen) >= 15
    # The consultation list, with drafts and response counts, is no longer readable.
    listing = tenant.portal.get("/api/v1/surveys/")
    assert listing.status_code == 403
    assert "analyst" in listing.json()["detail"]
    assert not CalibrationPair.objects.exists()
    assert Response.objects.count() == 0


def test_a_portal_key_reads_only_open_schemes(tenant, survey) -> None:
    assert tenant.portal.get(f"{URL}{survey.pk}/scheme/").status_code == 200
    draft = survey_factory(survey.consultation, kind="opinion", open_it=False)
    assert tenant.portal.get(f"{URL}{draft.pk}/scheme/").status_code == 404
    assert tenant.analyst.get(f"{URL}{draft.pk}/scheme/").status_code == 200
    survey_close(survey=survey)
    assert tenant.portal.get(f"{URL}{survey.pk}/scheme/").status_code == 404
    assert tenant.analyst.get(f"{URL}{survey.pk}/scheme/").status_code == 200


def test_calibration_is_analyst_only(tenant) -> None:
    consultation = consultation_factory(tenant.organisation)
    survey = survey_factory(consultation)
    body = {"question": "skips_class", "pairs": [["never", "always"]]}
    refused = tenant.portal.post(f"{URL}{survey.pk}/calibration/", body, format="json")
    assert refused.status_code == 403
    assert not CalibrationPair.objects.exists()
    accepted = tenant.analyst.post(f"{URL}{survey.pk}/calibration/", body, format="json")
    assert accepted.status_code == 201


def _withdraw(client, survey, participant, token):
    return client.post(
        f"{URL}{survey.pk}/responses/withdraw/",
        {"participant": participant, "withdrawal_token": token},
        format="json",
    )


def test_withdrawal_needs_the_token_returned_once(tenant, survey) -> None:
    created = tenant.portal.post(
        f"{URL}{survey.pk}/responses/",
        {"participant": "p-7", "answers": good_answers()},
        format="json",
    )
    assert created.status_code == 201
    token = created.json()["withdrawal_token"]
    assert len(token) >= 32
    stored = Response.objects.get(participant__reference="p-7")
    assert stored.withdrawal_token_hash == withdrawal_token_hash(token)
    assert token not in stored.withdrawal_token_hash  # only the hash is kept

    wrong = _withdraw(tenant.portal, survey, "p-7", "guessed-" + token[8:])
    unknown = _withdraw(tenant.portal, survey, "p-never", token)
    # A wrong token and an unknown reference are indistinguishable.
    assert wrong.status_code == unknown.status_code == 404
    assert wrong.json() == unknown.json()
    assert "p-7" not in wrong.content.decode() and "p-never" not in unknown.content.decode()
    stored.refresh_from_db()
    assert stored.withdrawn_at is None

    assert _withdraw(tenant.portal, survey, "p-7", token).status_code == 204
    stored.refresh_from_db()
    assert stored.withdrawn_at is not None
    assert not stored.answers.exists()


def test_bulk_returns_one_token_per_item(tenant, survey) -> None:
    items = [{"participant": f"b-{i}", "answers": good_answers(i)} for i in range(3)]
    created = tenant.portal.post(
        f"{URL}{survey.pk}/responses/bulk/", {"responses": items}, format="json"
    )
    assert created.status_code == 201
    body = created.json()
    assert body["created"] == 3
    tokens = body["withdrawal_tokens"]
    assert len(set(tokens)) == 3
    # Each token withdraws its own participant only.
    assert _withdraw(tenant.portal, survey, "b-0", tokens[1]).status_code == 404
    assert _withdraw(tenant.portal, survey, "b-1", tokens[1]).status_code == 204
    withdrawn = set(
        Response.objects.filter(withdrawn_at__isnull=False).values_list(
            "participant__reference", flat=True
        )
    )
    assert withdrawn == {"b-1"}


def test_the_old_withdrawal_url_with_a_reference_is_gone(tenant, survey) -> None:
    created = tenant.portal.post(
        f"{URL}{survey.pk}/responses/",
        {"participant": "p-8", "answers": good_answers()},
        format="json",
    )
    assert created.status_code == 201
    response = tenant.portal.delete(f"{URL}{survey.pk}/responses/p-8/")
    assert response.status_code in (404, 405)
    assert Response.objects.get(participant__reference="p-8").withdrawn_at is None


def test_withdrawal_keeps_references_out_of_logs(tenant, survey, caplog) -> None:
    created = tenant.portal.post(
        f"{URL}{survey.pk}/responses/",
        {"participant": "p-secret-42", "answers": good_answers()},
        format="json",
    )
    token = created.json()["withdrawal_token"]
    with caplog.at_level(logging.DEBUG):
        assert _withdraw(tenant.portal, survey, "p-secret-42", "wrong").status_code == 404
        assert _withdraw(tenant.portal, survey, "p-secret-42", token).status_code == 204
    assert caplog.records, "the 404 is logged by django.request"
    assert "p-secret-42" not in caplog.text
    assert token not in caplog.text
