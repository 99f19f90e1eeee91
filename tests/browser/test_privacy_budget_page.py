"""Issue 28: the example portal page tells a resident, in German, how much of their privacy
budget they have used before they send anything, re-sends a kept answer for a question
asked again (which costs nothing), and refuses to send past the budget; in headless
Debian Chromium against the live server."""

from __future__ import annotations

import json
import math

import pytest

from consultations.services import api_key_create, consultation_create, organisation_create
from surveys.models import Answer, PrivacyLedger, Response
from surveys.services import response_submit, survey_create, survey_open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RR = math.log(0.7 / 0.3)
REFERENCE = "p-browser-1"


def _rr(key: str, text: str, german: str, **extra):  # type: ignore[no-untyped-def]
    return {
        "key": key,
        "text": text,
        "type": "binary",
        "categories": ["yes", "no"],
        "mechanism": {"name": "randomised_response", "retain": 0.7},
        "translations": {"de": {"text": german, "labels": ["ja", "nein"]}},
        **extra,
    }


def _setup(settings, budget: float):  # type: ignore[no-untyped-def]
    organisation = organisation_create(slug="budget-town", name="Budget Town")
    organisation.languages = ["en", "de", "pl"]
    organisation.save(update_fields=["languages"])
    consultation = consultation_create(
        organisation=organisation, title="New school", privacy_budget=budget
    )
    before = survey_create(
        organisation=organisation, consultation=consultation, kind="opinion", title="Before",
        questions=[_rr("bus", "Do you take the bus?", "Fahren Sie Bus?"),
                   _rr("walk", "Do you walk?", "Gehen Sie zu Fuß?")],
    )  # fmt: skip
    before = survey_open(survey=before)
    after = survey_create(
        organisation=organisation, consultation=consultation, kind="opinion", title="After",
        questions=[
            _rr("bus_again", "Do you take the bus?", "Fahren Sie Bus?",
                reuse={"survey": before.pk, "question": "bus"}),
            _rr("school", "Is the new school a good idea?", "Ist die neue Schule eine gute Idee?"),
        ],
    )  # fmt: skip
    after = survey_open(survey=after)
    settings.PORTAL_EXAMPLE_ENABLED = True
    settings.PORTAL_EXAMPLE_KEY = api_key_create(organisation=organisation, role="portal").key
    # The resident answered the first survey from this browser: its kit kept the
    # withdrawal token and the scrambled answers (what distort.js stores).
    token = response_submit(
        survey=before, participant=REFERENCE, answers={"bus": "no", "walk": "yes"}
    )
    kept = {
        "portal-example:participant": REFERENCE,
        f"privacy-distort:v1-withdrawal:{before.pk}:{REFERENCE}": json.dumps(token),
        f"privacy-distort:v1:{before.pk}:{REFERENCE}:bus": json.dumps("no"),
        f"privacy-distort:v1:{before.pk}:{REFERENCE}:walk": json.dumps("yes"),
    }
    return consultation, after, kept


def _open(browser, live_server, survey, kept):  # type: ignore[no-untyped-def]
    context = browser.new_context(locale="de-DE")
    script = f"for (const [k, v] of Object.entries({json.dumps(kept)})) localStorage.setItem(k, v);"
    context.add_init_script(script)
    page = context.new_page()
    page.goto(f"{live_server.url}/portal-example/{survey.pk}/")
    page.wait_for_selector("#budget:not([hidden])")
    return context, page


def test_the_page_shows_the_budget_used_in_german_before_sending(browser, live_server, settings):
    consultation, survey, kept = _setup(settings, budget=4.0)
    context, page = _open(browser, live_server, survey, kept)
    text = page.inner_text("#budget-text")
    # 2 x ε 0.85 spent; the question asked again costs nothing, the new one 0.85.
    assert "Sie haben 1,69 von Ihrem Privatsphäre-Budget von 4 in dieser Beteiligung" in text
    assert "weitere 0,85" in text and "bleiben 1,46" in text, text
    assert "verfremdete Antwort" in page.inner_text("#budget-explained")
    assert "Schon einmal gefragt" in page.inner_text('fieldset[data-question="bus_again"]')
    page.locator('fieldset[data-question="bus_again"] input[value="yes"]').check()
    page.locator('fieldset[data-question="school"] input[value="yes"]').check()
    page.click("#review-button")
    page.wait_for_selector("#review:not([hidden])")
    assert page.is_visible("#budget")  # still in view while reviewing what will be sent
    assert page.inner_text('td[data-sent="bus_again"]') == "no"  # the kept answer, again
    page.click("#send-button")
    page.wait_for_selector("#done:not([hidden]), #error:not([hidden])")
    assert page.is_visible("#done"), page.inner_text("#error")
    stored = Answer.objects.get(
        response__survey=survey,
        response__participant__reference=REFERENCE,
        question__key="bus_again",
    )
    assert stored.code == 1  # "no"
    ledger = PrivacyLedger.objects.get(consultation=consultation, reference=REFERENCE)
    assert ledger.spent == pytest.approx(3 * RR)
    context.close()


def test_the_page_says_in_german_when_the_budget_does_not_cover_the_survey(
    browser, live_server, settings
):
    _, survey, kept = _setup(settings, budget=2.0)
    context, page = _open(browser, live_server, survey, kept)
    text = page.inner_text("#budget-text")
    assert "Ihr Privatsphäre-Budget von 2 reicht für diese Umfrage nicht" in text, text
    assert "Sie haben 1,69 verbraucht" in text and "bräuchten 0,85" in text
    assert page.is_disabled("#review-button")
    assert not Response.objects.filter(survey=survey).exists()
    context.close()
