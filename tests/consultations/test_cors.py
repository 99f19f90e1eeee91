"""CORS for portals: listed origins only, preflights without a key, bad origins named."""

from __future__ import annotations

import pytest
from django.test import Client

from consultations.models import PortalOrigin
from consultations.origins import BadOrigin, normalise_origin
from consultations.services import portal_origin_add
from tests.factories import consultation_factory, survey_factory

ALLOWED = "https://www.leeds.gov.uk"


@pytest.fixture
def listed(tenant):
    portal_origin_add(organisation=tenant.organisation, origin=ALLOWED)
    consultation = consultation_factory(tenant.organisation)
    return survey_factory(consultation)


def preflight(path: str, origin: str):
    return Client().options(
        path,
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )


def test_a_preflight_from_a_listed_origin_passes_without_a_key(listed) -> None:
    response = preflight(f"/api/v1/surveys/{listed.pk}/responses/", ALLOWED)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == ALLOWED
    allowed_headers = response["Access-Control-Allow-Headers"].lower()
    assert "authorization" in allowed_headers and "content-type" in allowed_headers
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert "Access-Control-Allow-Credentials" not in response


def test_an_actual_request_from_a_listed_origin_gets_the_header(tenant, listed) -> None:
    response = tenant.portal.get(f"/api/v1/surveys/{listed.pk}/scheme/", HTTP_ORIGIN=ALLOWED)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == ALLOWED
    assert "Retry-After" in response["Access-Control-Expose-Headers"]


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "http://www.leeds.gov.uk", "https://www.leeds.gov.uk:8443", "null"],
)
def test_other_origins_get_no_cors_headers(tenant, listed, origin) -> None:
    response = preflight(f"/api/v1/surveys/{listed.pk}/responses/", origin)
    assert not [h for h in response.headers if h.lower().startswith("access-control-")]
    actual = tenant.portal.get(f"/api/v1/surveys/{listed.pk}/scheme/", HTTP_ORIGIN=origin)
    assert not [h for h in actual.headers if h.lower().startswith("access-control-")]


def test_the_admin_gets_no_cors_headers(listed) -> None:
    response = Client().get("/admin/login/", HTTP_ORIGIN=ALLOWED)
    assert "Access-Control-Allow-Origin" not in response


@pytest.mark.parametrize(
    "bad",
    [
        "www.leeds.gov.uk",
        "https://www.leeds.gov.uk/portal",
        "ftp://www.leeds.gov.uk",
        "https://*.leeds.gov.uk",
        "https://user:pw@www.leeds.gov.uk",
        "https://www.leeds.gov.uk:99999",
        "https://",
    ],
)
def test_a_badly_formed_origin_is_refused_with_a_400_naming_it(tenant, bad) -> None:
    response = tenant.analyst.post("/api/v1/portal-origins/", {"origin": bad}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert bad in body["detail"]
    assert "origin" in body["errors"]
    assert not PortalOrigin.objects.exists()


def test_analysts_list_add_and_remove_origins(tenant, other_tenant) -> None:
    added = tenant.analyst.post(
        "/api/v1/portal-origins/", {"origin": "HTTPS://Portal.Example.org:443/"}, format="json"
    )
    assert added.status_code == 201
    assert added.json()["origin"] == "https://portal.example.org"
    again = tenant.analyst.post(
        "/api/v1/portal-origins/", {"origin": "https://portal.example.org"}, format="json"
    )
    assert again.status_code == 409
    listing = tenant.analyst.get("/api/v1/portal-origins/").json()
    assert [o["origin"] for o in listing] == ["https://portal.example.org"]
    assert other_tenant.analyst.get("/api/v1/portal-origins/").json() == []
    url = f"/api/v1/portal-origins/{added.json()['id']}/"
    assert tenant.portal.get("/api/v1/portal-origins/").status_code == 403
    assert tenant.portal.delete(url).status_code == 403
    assert other_tenant.analyst.delete(url).status_code == 404
    assert tenant.analyst.delete(url).status_code == 204
    assert not PortalOrigin.objects.exists()


def test_removing_an_origin_stops_cors_at_once(tenant, listed) -> None:
    assert preflight("/api/v1/surveys/1/responses/", ALLOWED).has_header(
        "Access-Control-Allow-Origin"
    )
    origin = PortalOrigin.objects.get()
    assert tenant.analyst.delete(f"/api/v1/portal-origins/{origin.pk}/").status_code == 204
    assert not preflight("/api/v1/surveys/1/responses/", ALLOWED).has_header(
        "Access-Control-Allow-Origin"
    )


def test_normalise_origin() -> None:
    assert normalise_origin("http://localhost:8080") == "http://localhost:8080"
    assert normalise_origin("http://[::1]:80") == "http://[::1]"
    with pytest.raises(BadOrigin, match="no path"):
        normalise_origin("https://a.org/x")


# ------------------------------------------------- origins belong to organisations (issue 27)

OTHER = "https://www.york.gov.uk"


@pytest.fixture
def two_councils(tenant, other_tenant, listed):
    """Leeds lists ALLOWED and owns ``listed``; York lists OTHER and owns a survey too."""
    portal_origin_add(organisation=other_tenant.organisation, origin=OTHER)
    york = survey_factory(consultation_factory(other_tenant.organisation))
    return {"leeds": listed, "york": york}


def _cors(response) -> list[str]:
    return [h for h in response.headers if h.lower().startswith("access-control-")]


def test_another_councils_origin_gets_no_headers_on_a_survey(tenant, two_councils) -> None:
    """Fails on the old code: York's origin was allowed on every council's paths."""
    leeds = two_councils["leeds"]
    assert not _cors(preflight(f"/api/v1/surveys/{leeds.pk}/responses/", OTHER))
    actual = tenant.portal.get(f"/api/v1/surveys/{leeds.pk}/scheme/", HTTP_ORIGIN=OTHER)
    assert actual.status_code == 200 and not _cors(actual)
    own = preflight(f"/api/v1/surveys/{two_councils['york'].pk}/responses/", OTHER)
    assert own["Access-Control-Allow-Origin"] == OTHER


def test_other_objects_answer_the_keys_organisations_origins(
    tenant, other_tenant, two_councils
) -> None:
    mine = tenant.analyst.get("/api/v1/consultations/", HTTP_ORIGIN=ALLOWED)
    assert mine["Access-Control-Allow-Origin"] == ALLOWED
    theirs = tenant.analyst.get("/api/v1/consultations/", HTTP_ORIGIN=OTHER)
    assert not _cors(theirs)
    york = other_tenant.analyst.get("/api/v1/consultations/", HTTP_ORIGIN=OTHER)
    assert york["Access-Control-Allow-Origin"] == OTHER
