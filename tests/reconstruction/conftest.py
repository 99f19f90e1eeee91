from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from consultations.services import api_key_create, organisation_create


def client_for(slug: str, role: str) -> APIClient:
    from consultations.models import Organisation

    organisation = Organisation.objects.filter(slug=slug).first() or organisation_create(
        slug=slug, name=slug.title()
    )
    issued = api_key_create(organisation=organisation, role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.key}")
    return client


@pytest.fixture
def analyst(db: None) -> APIClient:
    return client_for("north", "analyst")


@pytest.fixture
def portal(db: None) -> APIClient:
    return client_for("north", "portal")


@pytest.fixture
def other_analyst(db: None) -> APIClient:
    return client_for("south", "analyst")
