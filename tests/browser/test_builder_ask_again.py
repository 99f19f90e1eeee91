"""Browser test (issue 28/32): a draft card's "Ask again (same answer kept)" shows the
earlier question's type, categories and mechanism and greys out (inert) the fields it
replaces; choosing "No" gives them back. At 1280 px in English and 390 px in German; the
page never scrolls sideways and axe-core finds no serious violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from consultations.services import consultation_create, organisation_create
from tests.browser.admin_pages import (
    assert_fits_viewport,
    serious_accessibility_violations,
    signed_in_page,
)
from tests.factories import survey_factory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SEX = {"key": "sex", "text": "Sex", "type": "nominal", "categories": ["F", "M", "X"],
       "mechanism": {"name": "randomised_response", "retain": 0.7}}  # fmt: skip
REPLACED = ("type", "categories", "mechanism", "privacy")


@pytest.mark.parametrize(
    ("viewport", "language"), [("desktop", "en"), ("phone", "de")], ids=["1280-en", "390-de"]
)
def test_asking_again_greys_out_what_the_earlier_question_sets(
    browser, live_server, viewport, language
):
    organisation = organisation_create(slug="again-town", name="Again Town")
    consultation = consultation_create(organisation=organisation, title="Parks")
    earlier = survey_factory(consultation, questions=[SEX], title="Before")
    draft = survey_factory(
        consultation, kind="opinion", title="After", open_it=False,
        questions=[{"key": "sex_again", "type": "binary", "categories": ["a", "b"],
                    "mechanism": {"name": "none"}}],
    )  # fmt: skip
    page = signed_in_page(browser, live_server, viewport=viewport, language=language)
    page.goto(f"{live_server.url}/admin/surveys/survey/{draft.pk}/change/")
    card = page.locator("#questions-0")
    rows = {name: card.locator(f".form-row.field-{name}") for name in REPLACED}
    assert not any(row.evaluate("r => r.inert") for row in rows.values())
    assert (
        card.locator(".ask-again-note").count() == 0 or card.locator(".ask-again-note").is_hidden()
    )

    page.select_option("#id_questions-0-ask_again", f"{earlier.pk}:sex")
    # The card shows what the question will be: the earlier one's type, answers, mechanism.
    assert page.input_value("#id_questions-0-type") == "nominal"
    assert page.input_value("#id_questions-0-mechanism") == "randomised_response"
    answers = card.locator(".field-categories li input")
    assert [answers.nth(i).input_value() for i in range(answers.count())] == ["F", "M", "X"]
    for name, row in rows.items():
        assert row.evaluate("r => r.inert"), name  # not focusable, not clickable
        assert "set-by-ask-again" in (row.get_attribute("class") or ""), name
    assert card.locator(".ask-again-note").is_visible()
    # The card's preview follows: the earlier question's randomised response (70%).
    expect(card.locator(".card-preview .device")).to_contain_text("70", timeout=15_000)
    assert_fits_viewport(page)
    assert serious_accessibility_violations(page) == []

    page.locator('input[name="_continue"]').click()
    page.wait_for_selector(".messagelist, .errornote")
    assert page.locator(".errornote").count() == 0, page.inner_text("#content-main")
    stored = draft.questions.get()
    assert stored.reuse == {"survey": earlier.pk, "question": "sex"}
    assert stored.categories == ["F", "M", "X"]
    # Read back greyed out; "No: a new question" gives the fields back.
    assert page.locator("#questions-0 .form-row.field-type").evaluate("r => r.inert")
    page.select_option("#id_questions-0-ask_again", "")
    assert not page.locator("#questions-0 .form-row.field-type").evaluate("r => r.inert")
    assert page.locator("#questions-0 .ask-again-note").is_hidden()
    assert page.errors == []
    page.context.close()
