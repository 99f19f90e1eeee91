"""Browser test (issue 32): an organiser builds a survey with every question type on the
builder's cards, without typing JSON, at 1280 x 800 and on a 390 px phone, in English and
German; the page never scrolls sideways and axe-core finds no serious violation; once the
survey opens its questions read as cards, not JSON columns."""

from __future__ import annotations

import math

import pytest

from consultations.services import consultation_create, organisation_create
from surveys.models import Survey
from surveys.services import survey_open
from tests.browser.admin_pages import (
    assert_fits_viewport,
    fill_card,
    serious_accessibility_violations,
    signed_in_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {"add": "Add another Question", "save": "Save and continue editing"},
    "de": {"add": "Question hinzufügen", "save": "Sichern und weiter bearbeiten"},
}


@pytest.mark.parametrize(
    ("viewport", "language"), [("desktop", "en"), ("phone", "de")], ids=["1280-en", "390-de"]
)
def test_a_survey_with_every_question_type_is_built_without_json(
    browser, live_server, viewport, language
):
    organisation = organisation_create(slug="card-town", name="Card Town")
    organisation.languages = ["en", "de"]
    organisation.save()
    consultation = consultation_create(organisation=organisation, title="Parks")
    page = signed_in_page(browser, live_server, viewport=viewport, language=language)
    page.goto(f"{live_server.url}/admin/surveys/survey/add/")
    page.select_option("#id_consultation", str(consultation.pk))
    page.select_option("#id_kind", "opinion")
    page.fill("#id_title", "Parks survey")
    # The organisation speaks English and German: no Polish fields on its cards.
    assert page.locator("#id_questions-0-text_de").is_visible()
    assert page.locator("#id_questions-0-text_pl").is_hidden()
    # Nowhere an organiser works is a JSON box; randomised response comes first, chosen.
    assert page.locator("textarea").count() == 0
    assert page.input_value("#id_questions-0-mechanism") == "randomised_response"
    labels = page.locator("#id_questions-0-mechanism option").all_inner_texts()
    assert "randomised_response" not in labels and "additive_gaussian" not in labels

    fill_card(page, 0, key="district", text="District", type="nominal",
              categories=["North", "South", "Centre"], privacy="strong",
              translations={"de": ("Stadtteil", ["Nord", "Süd", "Mitte"])})  # fmt: skip
    page.locator("#questions-group .add-row a").click()
    fill_card(page, 1, key="sex", text="Sex", type="binary", categories=["F", "M"],
              privacy="light")  # fmt: skip
    page.locator("#questions-group .add-row a").click()
    fill_card(page, 2, key="satisfaction", text="How satisfied?", type="ordinal",
              categories=["low", "mid", "high", "very high"], mechanism="negative_gaussian",
              privacy="balanced")  # fmt: skip
    page.locator("#questions-group .add-row a").click()
    fill_card(page, 3, key="age", text="Age", type="continuous", range_low="16",
              range_high="100", step="1")  # fmt: skip
    # A continuous question offers the noise mechanisms only, Laplace first.
    assert page.input_value("#id_questions-3-mechanism") == "additive_laplace"
    fill_card(page, 3, mechanism="additive_laplace", privacy="custom", params={"scale": 10})
    # Reorder: "Centre" moves up above "South"; the German labels follow.
    page.locator("#questions-0 .field-categories li").nth(2).locator(".list-up").click()

    # Each card shows its live preview: a plain sentence and the margin of error.
    age = page.locator("#questions-3 .card-preview")
    age.locator(".protection").wait_for(timeout=15_000)
    assert "ε" in age.inner_text()
    try:
        page.locator("#questions-2 .card-preview .protection").wait_for(timeout=15_000)
    except Exception:
        page.screenshot(path="/tmp/adm/fail.png", full_page=True)
        raise
    assert page.locator("#questions-0 .card-preview .margin").count() == 1
    assert_fits_viewport(page)
    assert serious_accessibility_violations(page) == []

    page.get_by_role("button", name=WORDS[language]["save"]).or_(
        page.locator('input[name="_continue"]')
    ).first.click()
    page.wait_for_selector(".messagelist, .errornote")
    assert page.locator(".errornote").count() == 0, page.inner_text("#content-main")
    survey = Survey.objects.get()
    questions = {q.key: q for q in survey.questions.all()}
    assert [q.key for q in survey.questions.order_by("position")] == [
        "district", "sex", "satisfaction", "age"
    ]  # fmt: skip
    district = questions["district"]
    assert district.categories == ["North", "Centre", "South"]
    assert district.translations["de"] == {"text": "Stadtteil", "labels": ["Nord", "Mitte", "Süd"]}
    # "strong" is ε = 1: retain = e / (e + k - 1) for randomised response over 3 categories.
    assert district.mechanism_params["retain"] == pytest.approx(math.e / (math.e + 2), abs=1e-3)
    assert questions["sex"].mechanism_params["retain"] == pytest.approx(
        math.exp(3) / (math.exp(3) + 1), abs=1e-3
    )
    assert questions["satisfaction"].mechanism == "negative_gaussian"
    assert questions["age"].mechanism_params == {"scale": 10.0}
    assert (questions["age"].range_low, questions["age"].range_high) == (16, 100)

    # Opened, the questions read as cards: no JSON, no editable fields.
    survey_open(survey=survey)
    page.goto(f"{live_server.url}/admin/surveys/survey/{survey.pk}/change/")
    cards = page.locator(".question-card")
    assert cards.count() == 4
    text = page.inner_text(".question-cards")
    assert "North" in text and "Stadtteil" in text and "[" not in text and "{" not in text
    assert_fits_viewport(page)
    assert page.errors == []
    page.context.close()
