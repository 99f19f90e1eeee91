"""Browser test: the survey builder's mechanism preview follows the organiser's typing,
before anything is saved (surveys/static/surveys/builder_preview.js and the admin's
preview endpoint), in headless Debian Chromium."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from consultations.services import consultation_create, organisation_create
from surveys.models import Question
from surveys.services import survey_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin_page(browser, live_server):
    User.objects.create_superuser("organiser", "organiser@example.org", "a-long-passw0rd")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "organiser")
    page.fill("#id_password", "a-long-passw0rd")
    page.click('input[type="submit"]')
    page.wait_for_selector("#site-name")
    yield page
    context.close()
    assert errors == [], f"errors in the page: {errors}"


def test_changing_the_retain_probability_updates_the_preview_without_saving(
    admin_page, live_server
):
    organisation = organisation_create(slug="live-town", name="Live Town")
    consultation = consultation_create(organisation=organisation, title="Library hours")
    survey = survey_create(
        organisation=organisation, consultation=consultation, kind="opinion", title="Hours",
        questions=[{"key": "hours", "type": "ordinal", "categories": ["17:00", "19:00", "21:00"],
                    "mechanism": {"name": "randomised_response", "retain": 0.75}}],
    )  # fmt: skip
    page = admin_page
    page.goto(f"{live_server.url}/admin/surveys/survey/{survey.pk}/change/")
    table = page.locator("#preview-hours table.channel")
    assert table.locator("td").first.inner_text() == "0.75"
    # Locator waits, not wait_for_function: the page's Content-Security-Policy forbids the
    # eval that Playwright's string predicates need.
    page.locator("#mechanism-preview[data-updated]").wait_for(state="attached")

    # Custom privacy: the mechanism's own field (no JSON).
    assert page.input_value("#id_questions-0-privacy") == "custom"
    page.fill("#id_questions-0-randomised_response__retain", "0.9")
    expect(page.locator("#preview-hours table.channel td").first).to_have_text(
        "0.90", timeout=15_000
    )
    preview = page.inner_text("#preview-hours")
    assert "0.05" in preview  # (1 - 0.9) / 2 off the diagonal
    assert "ε = 2.89" in preview
    # Nothing was saved: the stored question keeps its retain probability.
    assert Question.objects.get(survey=survey).mechanism_params == {"retain": 0.75}
    assert page.url.endswith(f"/admin/surveys/survey/{survey.pk}/change/")

    # A value the API refuses shows the API's message, still without saving.
    page.fill("#id_questions-0-randomised_response__retain", "0.2")
    page.wait_for_selector("#preview-hours .errornote", timeout=15_000)
    assert "retain must exceed 1/k = 1/3" in page.inner_text("#preview-hours")
    assert Question.objects.get(survey=survey).mechanism_params == {"retain": 0.75}

    # The expected number of respondents updates it too.
    page.fill("#id_questions-0-randomised_response__retain", "0.9")
    page.fill('#mechanism-preview input[name="respondents"]', "250")
    page.wait_for_selector("#preview-hours >> text=at 250 respondents", timeout=15_000)
