"""The platform speaks English, German and Polish: complete catalogues, compiled, used by
the API's error messages, the example portal page and the downloads."""

from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest
from django.test import Client, override_settings

from tests.factories import tenant_factory

LOCALE = Path(__file__).resolve().parents[1] / "locale"
PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]|\{\w+\}")


@pytest.mark.parametrize("language", ["de", "pl"])
def test_the_catalogue_is_complete_and_compiled(language):
    po = polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))
    entries = [e for e in po if not e.obsolete]
    assert len(entries) > 90
    assert [e.msgid for e in entries if not e.translated() or "fuzzy" in e.flags] == []
    for entry in entries:
        forms = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
        for form in forms:
            wanted = set(PLACEHOLDER.findall(entry.msgid_plural or entry.msgid))
            assert set(PLACEHOLDER.findall(form)) == wanted, (entry.msgid, form)
    compiled = polib.mofile(str(LOCALE / language / "LC_MESSAGES" / "django.mo"))
    assert {e.msgid: e.msgstr for e in compiled if not e.msgid_plural and e.msgid} == {
        e.msgid: e.msgstr for e in entries if not e.msgid_plural
    }, "django.mo is stale: run .venv/bin/python locale/fill.py"


def test_api_errors_follow_accept_language(db):
    tenant = tenant_factory()
    body = {"title": ""}
    english = tenant.analyst.post("/api/v1/consultations/", body, format="json")
    german = tenant.analyst.post(
        "/api/v1/consultations/", body, format="json", HTTP_ACCEPT_LANGUAGE="de"
    )
    polish = tenant.analyst.post(
        "/api/v1/consultations/", body, format="json", HTTP_ACCEPT_LANGUAGE="pl-PL,pl;q=0.9"
    )
    assert english.status_code == german.status_code == polish.status_code == 400
    assert english.json()["errors"] != german.json()["errors"]
    assert "Dieses Feld" in str(german.json()["errors"])
    assert "To pole" in str(polish.json()["errors"])


@override_settings(PORTAL_EXAMPLE_ENABLED=True, PORTAL_EXAMPLE_KEY="k-example")
@pytest.mark.parametrize(
    ("query", "header", "expected"),
    [
        ("", "de-DE,de;q=0.9", "Was dieses Gerät verlässt"),
        ("?lang=pl", "de", "Co opuszcza to urządzenie"),
        ("", "fr", "What leaves this device"),
    ],
)
def test_the_example_page_speaks_the_residents_language(db, query, header, expected):
    page = Client().get(f"/portal-example/3/{query}", HTTP_ACCEPT_LANGUAGE=header)
    assert page.status_code == 200
    html = page.content.decode()
    assert expected in html
    # The script's sentences come in the same language.
    if "pl" in query:
        assert "Wyślij te odpowiedzi" in html and '"language": "pl"' in html
