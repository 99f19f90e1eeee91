"""A resident reads the example portal page in their own language (the page's sentences,
the question texts and the category labels), while the page sends, and the server stores,
the stable wire values; in headless Debian Chromium."""

from __future__ import annotations

import pytest

from consultations.services import api_key_create, consultation_create, organisation_create
from surveys.models import Answer, Response
from surveys.services import survey_create, survey_open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTIONS = [
    {
        "key": "tenure",
        "text": "Do you own or rent your home?",
        "type": "nominal",
        "categories": ["own", "rent", "other"],
        "mechanism": {"name": "none"},
        "translations": {
            "de": {"text": "Wohnen Sie zur Miete oder im Eigentum?",
                   "labels": ["Eigentum", "Miete", "anders"]},
            "pl": {"text": "Czy jest Pan/Pani właścicielem czy najemcą mieszkania?",
                   "labels": ["własność", "najem", "inne"]},
        },
    },
    {
        "key": "age",
        "text": "Age",
        "type": "continuous",
        "range": [16, 100],
        "mechanism": {"name": "none"},
        "translations": {"de": {"text": "Alter"}, "pl": {"text": "Wiek"}},
    },
]  # fmt: skip


@pytest.fixture
def multilingual_survey(settings):  # type: ignore[no-untyped-def]
    organisation = organisation_create(slug="polyglot-town", name="Polyglot Town")
    organisation.languages = ["en", "de", "pl"]
    organisation.save(update_fields=["languages"])
    consultation = consultation_create(organisation=organisation, title="Housing")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="opinion",
        title="Housing",
        questions=QUESTIONS,
    )
    survey = survey_open(survey=survey)
    settings.PORTAL_EXAMPLE_ENABLED = True
    settings.PORTAL_EXAMPLE_KEY = api_key_create(organisation=organisation, role="portal").key
    return survey


@pytest.mark.parametrize(
    ("locale", "query", "legend", "label", "send"),
    [
        ("de-DE", "", "Wohnen Sie zur Miete oder im Eigentum?", "Miete", "Diese Antworten senden"),
        ("de-DE", "?lang=pl", "Czy jest Pan/Pani właścicielem", "najem", "Wyślij te odpowiedzi"),
        ("fr-FR", "", "Do you own or rent your home?", "rent", "Send these answers"),
    ],
)
def test_the_resident_reads_their_language_and_the_wire_values_are_sent(
    browser, live_server, multilingual_survey, locale, query, legend, label, send
):
    survey = multilingual_survey
    context = browser.new_context(locale=locale)  # Accept-Language and navigator.languages
    page = context.new_page()
    page.goto(f"{live_server.url}/portal-example/{survey.pk}/{query}")
    page.wait_for_selector("#survey-form:not([hidden])")
    assert legend in page.inner_text('fieldset[data-question="tenure"] legend')
    assert page.inner_text("#send-button") == send
    choice = page.locator('fieldset[data-question="tenure"] label.choice', has_text=label)
    assert choice.count() == 1
    # The radio button under the resident's label carries the wire value.
    assert choice.locator("input").get_attribute("value") == "rent"
    choice.locator("input").check()
    page.fill('input[name="age"]', "52")
    page.click("#review-button")
    page.wait_for_selector("#review:not([hidden])")
    assert page.inner_text('td[data-sent="tenure"]') == "rent"
    page.click("#send-button")
    page.wait_for_selector("#done:not([hidden]), #error:not([hidden])")
    assert page.is_visible("#done"), page.inner_text("#error")
    reference = page.inner_text("#participant-ref")
    response = Response.objects.get(survey=survey, participant__reference=reference)
    stored = {
        a.question.key: a
        for a in Answer.objects.filter(response=response).select_related("question")
    }
    assert QUESTIONS[0]["categories"][stored["tenure"].code] == "rent"
    assert stored["age"].value == 52.0
    context.close()
