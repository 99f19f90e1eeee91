"""Browser test (issue 32): randomised response with its own table (the API's full
``matrix``) is set on the builder's card without JSON: privacy "own table" opens a k x k
grid of chances labelled with the card's categories, following them as they are added or
removed; each row's total shows as one types and a row that does not add up to 1 is named
at once; the live preview shows the table's channel. At 1280 px in English and 390 px in
German; the page never scrolls sideways and axe-core finds no serious violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from consultations.services import consultation_create, organisation_create
from surveys.models import Survey
from tests.browser.admin_pages import (
    assert_fits_viewport,
    fill_card,
    serious_accessibility_violations,
    signed_in_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TABLE = [["0.6", "0.3", "0.1"], ["0.2", "0.6", "0.2"], ["0.1", "0.3", "0.5"]]  # last row: 0.9
WORDS = {
    "en": {"bad": "Row Centre adds up to 0.9", "ok": "Every row adds up to 1.", "total": "0.9",
           "api": "Row Centre adds up to 0.9; each row must add up to 1."},
    "de": {"bad": "Zeile Centre ergibt zusammen 0,9", "ok": "Jede Zeile ergibt zusammen 1.",
           "total": "0,9", "api": "Zeile Centre ergibt zusammen 0,9; jede Zeile muss zusammen 1 "
           "ergeben."},
}  # fmt: skip


def cells(page):  # type: ignore[no-untyped-def]
    return page.locator("#questions-0 .matrix-grid tbody input")


@pytest.mark.parametrize(
    ("viewport", "language"), [("desktop", "en"), ("phone", "de")], ids=["1280-en", "390-de"]
)
def test_randomised_response_with_its_own_table_is_set_on_the_card(
    browser, live_server, viewport, language
):  # type: ignore[no-untyped-def]
    organisation = organisation_create(slug="table-town", name="Table Town")
    consultation = consultation_create(organisation=organisation, title="Parks")
    page = signed_in_page(browser, live_server, viewport=viewport, language=language)
    page.goto(f"{live_server.url}/admin/surveys/survey/add/")
    page.select_option("#id_consultation", str(consultation.pk))
    page.select_option("#id_kind", "opinion")
    page.fill("#id_title", "Parks survey")
    grid = page.locator("#questions-0 .form-row.field-randomised_response__matrix")
    assert grid.is_hidden()  # only with "own table"
    fill_card(page, 0, key="site", text="Which site?", type="nominal",
              categories=["North", "South", "Centre"], mechanism="randomised_response",
              privacy="matrix")  # fmt: skip
    assert grid.is_visible()
    assert page.locator("#questions-0 .form-row.field-randomised_response__retain").is_hidden()
    # One row and one column per category, labelled with them.
    headers = page.locator("#questions-0 .matrix-grid tbody th").all_inner_texts()
    assert headers == ["North", "South", "Centre"], headers
    assert cells(page).count() == 9
    for index, value in enumerate(v for row in TABLE for v in row):
        cells(page).nth(index).fill(value)
    # The last row adds up to 0.9: named at once, its total shown, the row marked.
    status = page.locator("#questions-0 .matrix-status")
    expect(status).to_contain_text(WORDS[language]["bad"])
    sums = page.locator("#questions-0 .matrix-sum").all_inner_texts()
    assert sums[2] == WORDS[language]["total"], sums
    assert page.locator("#questions-0 .matrix-grid tr.matrix-bad").count() == 1
    # The preview says what saving would say, in the organiser's words and number format
    # (it showed the engine's "Zeile 2 des Kanals summiert sich zu 0.9": row from 0).
    expect(page.locator("#questions-0 .card-preview")).to_contain_text(
        WORDS[language]["api"], timeout=15_000
    )
    card = page.locator("#questions-0 .card-preview").inner_text()
    assert "Kanal" not in card and "channel" not in card and "randomised_response" not in card
    cells(page).nth(8).fill("0.6")
    expect(status).to_have_text(WORDS[language]["ok"])
    assert page.locator("#questions-0 .matrix-grid tr.matrix-bad").count() == 0
    # The live preview shows the table's channel and its sentence.
    preview = page.locator("#questions-0 .card-preview")
    expect(preview.locator(".channel")).to_be_visible(timeout=15_000)
    assert "0.60" in preview.inner_text() or "0,60" in preview.inner_text()

    # A fourth category adds a row and a column (to fill in); removing it gives the table back.
    page.locator("#questions-0 .field-categories .list-add").click()
    page.locator("#questions-0 .field-categories li input").nth(3).fill("East")
    assert cells(page).count() == 16
    assert page.locator("#questions-0 .matrix-grid thead th").nth(4).text_content() == "East"
    page.locator("#questions-0 .field-categories li").nth(3).locator(".list-remove").click()
    assert cells(page).count() == 9
    assert [cells(page).nth(i).input_value() for i in range(9)] == [
        "0.6", "0.3", "0.1", "0.2", "0.6", "0.2", "0.1", "0.3", "0.6"
    ]  # fmt: skip
    assert_fits_viewport(page)
    assert serious_accessibility_violations(page) == []

    page.locator('input[name="_continue"]').click()
    page.wait_for_selector(".messagelist, .errornote")
    assert page.locator(".errornote").count() == 0, page.inner_text("#content-main")
    question = Survey.objects.get().questions.get()
    assert question.mechanism_params == {
        "matrix": [[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]]
    }
    # Read back as the grid, "own table" chosen.
    assert page.input_value("#id_questions-0-privacy") == "matrix"
    assert cells(page).count() == 9 and cells(page).nth(8).input_value() == "0.6"
    assert_fits_viewport(page)
    assert page.errors == []
    page.context.close()
