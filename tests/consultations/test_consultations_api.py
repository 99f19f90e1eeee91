"""``/api/v1/consultations/``: roles, validation, pagination, filtering, isolation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from consultations.models import AuditEvent, Consultation
from consultations.services import api_key_revoke
from tests.factories import client_for, consultation_factory, key_factory, survey_factory

URL = "/api/v1/consultations/"


def test_analyst_creates_a_consultation_with_default_thresholds(tenant):
    response = tenant.analyst.post(URL, {"title": "New primary school"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["title"] == "New primary school"
    assert (body["min_responses"], body["min_cell"]) == (10, 5)
    stored = Consultation.objects.get(pk=body["id"])
    assert stored.organisation == tenant.organisation
    assert AuditEvent.objects.filter(action="consultation.create", target=str(stored.pk)).exists()


def test_stricter_thresholds_are_kept(tenant):
    response = tenant.analyst.post(
        URL, {"title": "T", "description": "D", "min_responses": 50, "min_cell": 10}, format="json"
    )
    assert response.status_code == 201
    assert (response.json()["min_responses"], response.json()["min_cell"]) == (50, 10)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"title": "T", "min_responses": 9}, "min_responses"),
        ({"title": "T", "min_cell": 4}, "min_cell"),
        ({"title": "T", "min_cell": "many"}, "min_cell"),
        ({"title": ""}, "title"),
        ({}, "title"),
        ({"title": "x" * 201}, "title"),
    ],
)
def test_bad_consultation_input_names_the_field(tenant, payload, field):
    response = tenant.analyst.post(URL, payload, format="json")
    assert response.status_code == 400
    body = response.json()
    assert field in body["errors"]
    assert body["detail"]
    assert not Consultation.objects.exists()


def test_portal_key_may_neither_read_nor_create(tenant, consultation):
    # A portal key sits in a public page: the list (drafts, counts) is not for it.
    assert tenant.portal.get(URL).status_code == 403
    assert tenant.portal.get(f"{URL}{consultation.pk}/").status_code == 403
    response = tenant.portal.post(URL, {"title": "T"}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == "This needs an analyst key."


def test_requests_without_a_valid_key_are_refused(tenant):
    from rest_framework.test import APIClient

    assert APIClient().get(URL).status_code == 401
    assert client_for("nonsense").get(URL).status_code == 401
    assert client_for("abcd.efgh").get(URL).status_code == 401


def test_revoked_and_expired_keys_are_refused(tenant):
    api_key, secret = key_factory(tenant.organisation, "analyst")
    client = client_for(secret)
    assert client.get(URL).status_code == 200
    api_key_revoke(api_key=api_key)
    assert client.get(URL).status_code == 401
    expired, expired_secret = key_factory(tenant.organisation, "analyst")
    expired.expires_at = timezone.now() - timedelta(minutes=1)
    expired.save()
    assert client_for(expired_secret).get(URL).status_code == 401


def test_list_is_paginated_with_a_capped_page_size_and_filtered(tenant):
    for number in range(3):
        consultation_factory(tenant.organisation, title=f"School {number}")
    consultation_factory(tenant.organisation, title="Library")
    page = tenant.analyst.get(URL, {"page_size": 2}).json()
    assert page["count"] == 4
    assert len(page["results"]) == 2
    assert page["next"] is not None
    capped = tenant.analyst.get(URL, {"page_size": 100_000}).json()
    assert len(capped["results"]) == 4  # capped at 500, all fit
    found = tenant.analyst.get(URL, {"search": "school"}).json()
    assert sorted(item["title"] for item in found["results"]) == [
        "School 0",
        "School 1",
        "School 2",
    ]


def test_page_size_is_capped_at_500(tenant):
    Consultation.objects.bulk_create(
        [Consultation(organisation=tenant.organisation, title=f"C{i}") for i in range(501)]
    )
    page = tenant.analyst.get(URL, {"page_size": 1000}).json()
    assert page["count"] == 501
    assert len(page["results"]) == 500


def test_retrieve_update_and_partial_update(tenant, consultation):
    url = f"{URL}{consultation.pk}/"
    assert tenant.analyst.get(url).json()["title"] == "New primary school"
    response = tenant.analyst.patch(url, {"min_cell": 8}, format="json")
    assert response.status_code == 200
    assert response.json()["min_cell"] == 8
    assert response.json()["title"] == "New primary school"
    response = tenant.analyst.put(url, {"title": "Renamed", "min_responses": 20}, format="json")
    assert response.status_code == 200
    consultation.refresh_from_db()
    assert (consultation.title, consultation.min_responses) == ("Renamed", 20)
    assert tenant.analyst.patch(url, {"min_responses": 3}, format="json").status_code == 400
    assert tenant.portal.patch(url, {"title": "x"}, format="json").status_code == 403


def test_delete_only_before_any_survey_opened(tenant, consultation):
    url = f"{URL}{consultation.pk}/"
    survey_factory(consultation, open_it=True)
    response = tenant.analyst.delete(url)
    assert response.status_code == 409
    assert "consultation" in response.json()["errors"]
    other = consultation_factory(tenant.organisation)
    survey_factory(other, open_it=False)
    assert tenant.analyst.delete(f"{URL}{other.pk}/").status_code == 204
    assert not Consultation.objects.filter(pk=other.pk).exists()


def test_another_organisations_consultation_answers_404(tenant, other_tenant, consultation):
    url = f"{URL}{consultation.pk}/"
    assert other_tenant.analyst.get(url).status_code == 404
    assert other_tenant.analyst.patch(url, {"title": "x"}, format="json").status_code == 404
    assert other_tenant.analyst.put(url, {"title": "x"}, format="json").status_code == 404
    assert other_tenant.analyst.delete(url).status_code == 404
    assert other_tenant.analyst.get(URL).json()["count"] == 0
    consultation.refresh_from_db()
    assert consultation.title == "New primary school"


def test_a_consultation_read_with_get_can_be_put_back_edited(tenant, consultation):
    """GET, edit, PUT: the representation's read-only fields (id, timestamps) may be
    repeated and are ignored; an unknown field is still refused."""
    url = f"{URL}{consultation.pk}/"
    body = tenant.analyst.get(url).json()
    assert {"id", "created_at", "updated_at"} <= set(body)
    body["title"] = "Renamed after reading"
    response = tenant.analyst.put(url, body, format="json")
    assert response.status_code == 200, response.content
    consultation.refresh_from_db()
    assert consultation.title == "Renamed after reading"
    assert response.json()["id"] == consultation.pk
    body["min_cel"] = 8
    refused = tenant.analyst.put(url, body, format="json")
    assert refused.status_code == 400
    assert list(refused.json()["errors"]) == ["min_cel"]
