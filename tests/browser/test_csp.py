"""Content-Security-Policy (issue 27): the admin, the API docs page and the example portal
page load under the policy with no violation, and an inline script without the nonce is
blocked (Chromium's securitypolicyviolation events and console messages are collected).

Fails on the old code: no Content-Security-Policy header at all."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.browser.test_portal_and_admin import survey_with_portal_key  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
});
"""


def _watched(browser: Any) -> tuple[Any, Any, list[str]]:
    context = browser.new_context()
    context.add_init_script(WATCH)
    page = context.new_page()
    console: list[str] = []
    page.on(
        "console",
        lambda message: (
            console.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return context, page, console


def _violations(page: Any, console: list[str]) -> list[str]:
    page.wait_for_timeout(300)
    found = [*page.evaluate("window.__csp"), *console]
    console.clear()
    return found


def test_admin_docs_and_portal_pages_pass_the_policy(
    browser,
    live_server,
    survey_with_portal_key,  # noqa: F811
):
    User.objects.create_superuser("organiser", "organiser@example.org", "a-long-passw0rd")
    context, page, console = _watched(browser)
    response = page.goto(f"{live_server.url}/admin/login/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "object-src 'none'" in policy
    page.fill("#id_username", "organiser")
    page.fill("#id_password", "a-long-passw0rd")
    page.click('input[type="submit"]')
    page.wait_for_selector("#site-name")
    seen = {}
    for path in (
        "/admin/",
        "/admin/surveys/survey/",
        "/admin/surveys/survey/add/",
        f"/admin/surveys/survey/{survey_with_portal_key.pk}/change/",
        "/admin/reconstruction/analysisjob/add/",
        f"/admin/reconstruction/analysisjob/add/?survey={survey_with_portal_key.pk}",
        "/admin/reconstruction/report/",
    ):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        seen[path] = _violations(page, console)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info", timeout=30_000)
    seen["/api/docs/"] = _violations(page, console)
    page.goto(f"{live_server.url}/portal-example/{survey_with_portal_key.pk}/")
    page.wait_for_selector("#survey-form:not([hidden])", timeout=30_000)
    seen["/portal-example/"] = _violations(page, console)
    context.close()
    assert not any(seen.values()), seen


def test_an_injected_inline_script_is_blocked(browser, live_server):
    context, page, console = _watched(browser)
    page.goto(f"{live_server.url}/admin/login/")
    page.evaluate(
        """() => { const s = document.createElement("script");
                   s.textContent = "window.__ran = true"; document.body.appendChild(s); }"""
    )
    assert page.evaluate("window.__ran === undefined")
    assert any("script-src" in v for v in _violations(page, console))
    context.close()
