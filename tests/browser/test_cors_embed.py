"""The documented embed (docs/portal/client-kit.md), run from a portal on another origin
against the API (CORS).

Two live servers on different ports: the API (Django) on ``localhost``, and portal pages on
``127.0.0.1`` that serve the pinned package as the client kit page says. Its embed works
from the listed portal origin and is refused by the browser from an unlisted one.
"""

from __future__ import annotations

import json
import re
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.db import connections
from django.test.testcases import LiveServerThread

from consultations.services import (
    api_key_create,
    consultation_create,
    organisation_create,
    portal_origin_add,
)
from surveys.models import Response
from surveys.services import survey_create, survey_open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]
DISTORT_JS = REPO / "clients" / "js" / "src" / "distort.js"


def readme_embed() -> str:
    readme = (REPO / "docs" / "portal" / "client-kit.md").read_text()
    section = readme[readme.index("## Embed it in a portal page") :]
    return re.search(r"```html\n(.*?)```", section, re.S).group(1)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture
def api_server():
    """The API on its own origin; static files through WhiteNoise, not the test handler."""
    overrides = {}
    for conn in connections.all():
        if conn.vendor == "sqlite" and conn.is_in_memory_db():
            conn.inc_thread_sharing()  # as Django's LiveServerTestCase does
            overrides[conn.alias] = conn
    thread = LiveServerThread(
        "localhost", static_handler=lambda app: app, connections_override=overrides, port=0
    )
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    yield f"http://localhost:{thread.port}"
    thread.terminate()
    for conn in overrides.values():
        conn.dec_thread_sharing()


@pytest.fixture
def portal_pages(tmp_path):
    """Start portal servers on 127.0.0.1, each on its own port (its own origin)."""
    servers = []

    def start(html: str) -> str:
        root = tmp_path / f"portal-{len(servers)}"
        root.mkdir()
        (root / "embed.html").write_text(html)
        # The documented embed loads the pinned package from the portal's own /vendor/ path.
        for path in re.findall(r'"(/vendor/[^"]+\.js)"', html):
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(DISTORT_JS.read_bytes())
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def page_for(api: str, survey_id: int, key: str, participant: str) -> str:
    script = (
        readme_embed()
        .replace("https://consult.example.org", api)
        .replace(", 3, PORTAL_KEY", f", {survey_id}, PORTAL_KEY")
        .replace("PORTAL_KEY", json.dumps(key))
        .replace('"p-000123"', json.dumps(participant))
        .replace("</script>", '  document.title = "sent";\n</script>')
    )
    return f"<!doctype html><html><head><title>portal</title></head><body>{script}</body></html>"


def run(browser, url: str) -> tuple[str, list[str]]:
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text))
    page.goto(url)
    try:
        page.wait_for_function("document.title === 'sent'", timeout=10_000)
    except Exception:
        pass
    title = page.title()
    context.close()
    return title, errors


def test_the_readme_embed_works_from_a_listed_origin_only(browser, api_server, portal_pages):
    organisation = organisation_create(slug="cors-town", name="Cors Town")
    consultation = consultation_create(organisation=organisation, title="Bus routes")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Residents",
        questions=[
            {
                "key": "sex",
                "type": "binary",
                "categories": ["F", "M"],
                "mechanism": {"name": "randomised_response", "retain": 0.7},
            },
            {
                "key": "age",
                "type": "continuous",
                "range": [16, 100],
                "mechanism": {"name": "additive_uniform", "half_width": 10},
            },
        ],
    )
    survey = survey_open(survey=survey)
    key = api_key_create(organisation=organisation, role="portal").key

    listed = portal_pages(page_for(api_server, survey.pk, key, "p-000123"))
    unlisted = portal_pages(page_for(api_server, survey.pk, key, "p-000124"))
    portal_origin_add(organisation=organisation, origin=listed)

    title, errors = run(browser, f"{listed}/embed.html")
    assert title == "sent", errors
    stored = Response.objects.get(survey=survey, participant__reference="p-000123")
    assert stored.withdrawal_token_hash  # the token was handed to the page

    title, errors = run(browser, f"{unlisted}/embed.html")
    assert title != "sent"
    assert any("CORS" in e or "Failed to fetch" in e for e in errors), errors
    assert not Response.objects.filter(participant__reference="p-000124").exists()
