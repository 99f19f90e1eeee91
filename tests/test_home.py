"""``/`` leads somewhere useful: a page linking the admin, the API docs and the health
check; the admin's "View site" link answers it (it answered 404 before)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from consultations.models import Organisation

pytestmark = pytest.mark.django_db


def test_the_root_url_links_the_admin_the_api_docs_and_the_health_check(client):
    response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    for target in ('href="/admin/"', 'href="/api/docs/"', 'href="/healthz"'):
        assert target in page, target
    german = client.get("/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert 'lang="de"' in german and "API-Dokumentation" in german


def test_the_admins_view_site_link_leads_to_the_front_page(client):
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    page = client.get("/admin/").content.decode()
    assert 'href="/"' in page  # "View site"
    assert client.get("/").status_code == 200


def test_an_organisations_languages_are_ticked_not_typed_as_json(client):
    User.objects.create_superuser("operator", "o@example.org", "a-long-passw0rd")
    client.login(username="operator", password="a-long-passw0rd")
    page = client.get("/admin/consultations/organisation/add/").content.decode()
    assert 'type="checkbox" name="languages" value="de"' in page
    assert "[&quot;en&quot;]" not in page and '["en"]' not in page
    response = client.post(
        "/admin/consultations/organisation/add/",
        {
            "slug": "town", "name": "Town", "languages": ["pl", "en"],
            **{f"{p}-{k}": v for p in ("portal_origins", "memberships")
               for k, v in (("TOTAL_FORMS", "0"), ("INITIAL_FORMS", "0"))},
        },
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert Organisation.objects.get(slug="town").languages == ["en", "pl"]
