"""The portal key's bulk cap (issue 27, api.md "a portal key ... may send at most 100
items per call"): a portal key's bulk of more than PORTAL_BULK_MAX_ITEMS (100) responses
is a 400 naming ``responses``, a body above PORTAL_BULK_MAX_BYTES (512 KiB) a 413 before it
is read; nothing is stored. An analyst key may send up to 10,000. Each response of a
portal bulk counts against the key's submissions quota. Fails on the old code (a portal
key's bulk of 5,000 responses was stored)."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from surveys.models import Response
from tests.factories import (
    client_for,
    consultation_factory,
    good_answers,
    key_factory,
    organisation_factory,
    survey_factory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    cache.clear()
    organisation = organisation_factory()
    survey = survey_factory(consultation_factory(organisation))
    return {
        "survey": survey,
        "portal": client_for(key_factory(organisation, "portal")[1]),
        "analyst": client_for(key_factory(organisation, "analyst")[1]),
    }


def bulk(start: int, count: int) -> dict:
    return {
        "responses": [
            {"participant": f"p-{i}", "answers": good_answers(i)}
            for i in range(start, start + count)
        ]
    }


def post(client, survey, body, **extra):
    return client.post(
        f"/api/v1/surveys/{survey.pk}/responses/bulk/",
        json.dumps(body),
        content_type="application/json",
        **extra,
    )


def test_a_portal_key_posts_small_bulks_only(world):
    survey = world["survey"]
    refused = post(world["portal"], survey, bulk(0, 101))
    assert refused.status_code == 400
    assert "100" in refused.json()["errors"]["responses"][0]
    assert Response.objects.filter(survey=survey).count() == 0
    assert post(world["portal"], survey, bulk(0, 100)).status_code == 201
    assert post(world["analyst"], survey, bulk(100, 101)).status_code == 201


def test_a_large_portal_body_is_a_413_and_nothing_is_stored(world):
    survey = world["survey"]
    body = bulk(0, 5000)
    assert len(json.dumps(body)) > 512 * 1024
    response = post(world["portal"], survey, body)
    assert response.status_code == 413
    assert response.json()["errors"]["responses"]
    assert Response.objects.filter(survey=survey).count() == 0
    assert post(world["analyst"], survey, body).status_code == 201


def test_a_portal_bulk_counts_each_response_against_the_quota(world, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "submissions": "150/minute",
        },
    }
    survey = world["survey"]
    assert post(world["portal"], survey, bulk(0, 100)).status_code == 201
    second = post(world["portal"], survey, bulk(100, 100))
    assert second.status_code == 429 and int(second["Retry-After"]) >= 1
    assert Response.objects.filter(survey=survey).count() == 100


def test_the_cap_is_translated(world):
    refused = post(world["portal"], world["survey"], bulk(0, 101), HTTP_ACCEPT_LANGUAGE="de")
    assert "Portal-Schlüssel" in refused.json()["errors"]["responses"][0]
