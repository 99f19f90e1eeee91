"""Browser tests (b) and (c): a resident answers on the example portal page, and an
organiser starts a report from the admin site, in headless Debian Chromium."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from consultations.services import api_key_create, consultation_create, organisation_create
from reconstruction.models import Report
from surveys.models import Answer, Response
from surveys.services import survey_create, survey_open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTIONS = [
    {
        "key": "sex",
        "text": "Sex",
        "type": "binary",
        "categories": ["F", "M"],
        "mechanism": {"name": "randomised_response", "retain": 0.7},
    },
    {
        "key": "age",
        "text": "Age",
        "type": "continuous",
        "range": [16, 100],
        "mechanism": {"name": "additive_uniform", "half_width": 10},
    },
    {
        "key": "attendance",
        "text": "Council meetings attended",
        "type": "ordinal",
        "categories": ["never", "rarely", "often", "always"],
        "mechanism": {"name": "negative_manual"},
    },
]


@pytest.fixture
def survey_with_portal_key(settings):  # type: ignore[no-untyped-def]
    organisation = organisation_create(slug="browser-town", name="Browser Town")
    consultation = consultation_create(organisation=organisation, title="School")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="opinion",
        title="School plans",
        questions=QUESTIONS,
    )
    survey = survey_open(survey=survey)
    settings.PORTAL_EXAMPLE_ENABLED = True
    settings.PORTAL_EXAMPLE_KEY = api_key_create(organisation=organisation, role="portal").key
    return survey


def _answer_and_review(page) -> dict[str, str]:  # type: ignore[no-untyped-def]
    page.wait_for_selector("#survey-form:not([hidden])")
    page.check('input[name="sex"][value="F"]')
    page.fill('input[name="age"]', "43")
    page.check('input[name="attendance"][value="always"]')
    page.click("#review-button")
    page.wait_for_selector("#review:not([hidden])")
    return {key: page.inner_text(f'td[data-sent="{key}"]') for key in ("sex", "age", "attendance")}


def test_resident_submits_distorted_answers_once(browser, live_server, survey_with_portal_key):
    survey = survey_with_portal_key
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_server.url}/portal-example/{survey.pk}/")
    instruction = page.inner_text('fieldset[data-question="attendance"] .instruction')
    assert "NOT" in instruction
    shown = _answer_and_review(page)
    page.click("#send-button")
    page.wait_for_selector("#done:not([hidden]), #error:not([hidden])")
    assert page.is_visible("#done"), page.inner_text("#error")
    reference = page.inner_text("#participant-ref")

    response = Response.objects.get(survey=survey, participant__reference=reference)
    stored = {
        a.question.key: a
        for a in Answer.objects.filter(response=response).select_related("question")
    }
    # What the server holds is what the page showed it would send, not the true answers.
    assert stored["age"].value == pytest.approx(float(shown["age"]))
    assert stored["age"].value != 43.0  # uniform noise on [-10, 10] is never exactly 0
    assert abs(stored["age"].value - 43.0) <= 10.0
    assert QUESTIONS[0]["categories"][stored["sex"].code] == shown["sex"]
    # The manually selected negative answer is the resident's own choice, sent as is.
    assert QUESTIONS[2]["categories"][stored["attendance"].code] == "always"

    # Answering again from the same browser is refused, and nothing more is stored.
    page.goto(f"{live_server.url}/portal-example/{survey.pk}/")
    again = _answer_and_review(page)
    assert again["age"] == shown["age"]  # permanent randomisation: the memoised value
    page.click("#send-button")
    page.wait_for_selector("#error:not([hidden])")
    assert "already answered" in page.inner_text("#error")
    assert Response.objects.filter(survey=survey).count() == 1
    context.close()


def test_page_says_when_no_key_is_configured(browser, live_server, settings):
    settings.PORTAL_EXAMPLE_ENABLED = True
    settings.PORTAL_EXAMPLE_KEY = ""
    page = browser.new_page()
    page.goto(f"{live_server.url}/portal-example/1/")
    assert page.is_visible("#not-configured")
    assert page.is_hidden("#survey-form")
    page.close()


def test_organiser_opens_a_survey_and_starts_a_report(browser, live_server, survey_with_portal_key):
    survey = survey_with_portal_key
    User.objects.create_superuser("organiser", "organiser@example.org", "a-long-passw0rd")
    page = browser.new_page()
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "organiser")
    page.fill("#id_password", "a-long-passw0rd")
    page.click('input[type="submit"]')
    page.wait_for_selector("#site-name")

    page.goto(f"{live_server.url}/admin/surveys/survey/")
    page.click(f'text="{survey.title}"')
    page.wait_for_selector("#content h2, #content h1")
    assert survey.title in page.content()
    assert "age" in page.content()  # the questions are shown inline

    page.goto(f"{live_server.url}/admin/surveys/survey/")
    page.check(f'input[name="_selected_action"][value="{survey.pk}"]')
    page.select_option('select[name="action"]', "start_report")
    page.click('button[name="index"]')
    page.wait_for_selector(".messagelist")
    assert "queued" in page.inner_text(".messagelist")

    report = Report.objects.get(survey=survey)
    assert report.requested_by == "staff:organiser"
    assert report.status == "succeeded", report.error
    page.goto(f"{live_server.url}/admin/reconstruction/report/{report.pk}/change/")
    with page.expect_download() as download:
        page.click('a:text("HTML")')
    assert download.value.suggested_filename == f"survey-{survey.pk}-report-{report.pk}.html"
    page.close()


def test_resident_submits_staircase_noise_explained_by_its_mean_size(
    browser, live_server, settings
):
    """An ``additive_staircase`` question on the example page: the page explains the noise
    by its mean size (4.8 for eps 1 and sensitivity 5: Delta (b/(1-b) + the stair's mean
    part)), and what the server stores is the distorted number the page showed."""
    organisation = organisation_create(slug="stair-town", name="Stair Town")
    consultation = consultation_create(organisation=organisation, title="Work")
    hours = {
        "key": "hours",
        "text": "Hours worked last week",
        "type": "continuous",
        "range": [0, 80],
        "mechanism": {"name": "additive_staircase", "epsilon": 1.0, "sensitivity": 5.0},
    }
    survey = survey_open(
        survey=survey_create(
            organisation=organisation,
            consultation=consultation,
            kind="opinion",
            title="Working hours",
            questions=[hours],
        )
    )
    settings.PORTAL_EXAMPLE_ENABLED = True
    settings.PORTAL_EXAMPLE_KEY = api_key_create(organisation=organisation, role="portal").key
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_server.url}/portal-example/{survey.pk}/")
    page.wait_for_selector("#survey-form:not([hidden])")
    assert "±4.8" in page.inner_text('fieldset[data-question="hours"] .how')
    page.fill('input[name="hours"]', "38")
    page.click("#review-button")
    page.wait_for_selector("#review:not([hidden])")
    shown = float(page.inner_text('td[data-sent="hours"]'))
    page.click("#send-button")
    page.wait_for_selector("#done:not([hidden]), #error:not([hidden])")
    assert page.is_visible("#done"), page.inner_text("#error")
    stored = Answer.objects.get(response__survey=survey, question__key="hours").value
    assert stored == pytest.approx(shown)
    assert stored != 38.0  # the staircase noise has a density: exactly 0 has probability 0
    context.close()
