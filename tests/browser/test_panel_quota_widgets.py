"""Browser test (issue 32): the panel form's quotas and eligibility are built with widgets,
as the analysis form's conditions are: pick a question, tick its answers (or choose a
comparison and numbers within its range), give the fewest and most seats; quotas are
added and removed with buttons, and nowhere is syntax typed. At 1280 px in English and
390 px in German; the page never scrolls sideways and axe-core finds no serious violation
on the form and on the panel's report."""

from __future__ import annotations

import pytest

from consultations.services import consultation_create, organisation_create
from reconstruction.models import AnalysisJob
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.browser.admin_pages import (
    assert_fits_viewport,
    fill_condition,
    fill_quota,
    serious_accessibility_violations,
    signed_in_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N = 300
WORDS = {
    "en": {"add": "Add a quota", "range": "16"},
    "de": {"add": "Quote hinzufügen", "range": "16"},
}


@pytest.fixture
def candidates():  # type: ignore[no-untyped-def]
    organisation = organisation_create(slug="quota-town", name="Quota Town")
    consultation = consultation_create(organisation=organisation, title="Assembly", min_cell=5)
    survey = survey_create(
        organisation=organisation, consultation=consultation, kind="profile",
        title="Assembly candidates",
        questions=[
            {"key": "sex", "text": "Sex", "type": "binary", "categories": ["F", "M"],
             "mechanism": {"name": "none"}},
            {"key": "district", "text": "District", "type": "nominal",
             "categories": ["N", "S", "E"], "mechanism": {"name": "none"}},
            {"key": "age", "text": "Age", "type": "continuous", "range": [16, 100],
             "mechanism": {"name": "none"}},
        ],
    )  # fmt: skip
    survey = survey_open(survey=survey)
    responses_submit_bulk(
        survey=survey,
        responses=[
            {"participant": f"q-{i:03d}",
             "answers": {"sex": "FM"[i % 2], "district": "NSE"[(i // 2) % 3],
                         "age": float(16 + (i * 7) % 80)}}
            for i in range(N)
        ],
    )  # fmt: skip
    return survey


@pytest.mark.parametrize(
    ("viewport", "language"), [("desktop", "en"), ("phone", "de")], ids=["1280-en", "390-de"]
)
def test_quotas_are_built_added_and_removed_with_widgets(
    browser, live_server, candidates, viewport, language
):  # type: ignore[no-untyped-def]
    page = signed_in_page(browser, live_server, viewport=viewport, language=language)
    page.goto(f"{live_server.url}/admin/reconstruction/analysisjob/panel/?survey={candidates.pk}")
    page.wait_for_selector("#panel-form")
    # One empty quota to start with, the others come with "Add a quota".
    assert page.locator("#quota-0").is_visible() and page.locator("#quota-1").is_hidden()
    assert page.inner_text("#add-quota").strip() == f"+ {WORDS[language]['add']}"
    # No box where syntax is typed: only numbers (seats, a number in a range) are typed.
    assert page.locator("#panel-form textarea").count() == 0
    typed = page.locator("#panel-form input[type='text']").evaluate_all(
        "inputs => inputs.map((input) => input.name)"
    )
    assert typed and all(
        name == "max_outside" or name.endswith(("_number", "_up_to")) for name in typed
    ), typed

    page.fill("#id_size", "20")
    page.fill("#id_seed", "5")
    # Eligibility: older than 25 (a number question offers comparisons and says its range).
    # Not 17: the 8 residents it leaves out are the whole pool minus the eligible group, and
    # with the eligible group's cell-key perturbation (+-2, random record keys) that implied
    # group's interval reached below the threshold of 5 in some runs (issue 26's refusal).
    fill_condition(page, "where_0", "age", op="gt", number=25)
    assert WORDS[language]["range"] in page.inner_text("#eligibility-0 .condition-range")
    assert page.locator("#eligibility-0 .condition-categories").is_hidden()
    # Quota 1: women, 8 to 12 seats; a category question shows its own answers only.
    fill_quota(page, 0, "sex", 8, 12, answers=["F"])
    boxes = page.locator("#quota-0 .condition-categories input").all()
    shown = [b.get_attribute("value") for b in boxes if b.is_visible()]
    assert shown == ["F", "M"], shown
    # Quota 2 (removed again below) and quota 3: from 30 up to 60 years, 6 to 12 seats.
    fill_quota(page, 1, "district", 6, 14, answers=["N", "S"])
    fill_quota(page, 2, "age", 6, 12, op="between", number=30, up_to=60)
    assert page.locator("#quota-2 .condition-up-to").is_visible()
    page.locator("#quota-1 .quota-remove").click()
    assert page.locator("#quota-1").is_hidden()
    assert page.input_value("#id_quota_1_attribute") == ""
    assert not page.locator("#quota-1 input[value='N']").is_checked()
    assert_fits_viewport(page)
    assert serious_accessibility_violations(page) == []

    page.click("#start-panel")
    page.wait_for_selector("#panel-report, #job-error, #analysis-errors", timeout=90_000)
    job = AnalysisJob.objects.get(kind="panel")
    assert job.status == "succeeded", (job.status, job.error_text())
    assert job.spec["where"] == [{"attribute": "age", "op": "gt", "value": 25.0}]
    assert job.spec["quotas"] == [
        {"where": [{"attribute": "sex", "op": "in", "value": ["F"]}], "min": 8, "max": 12},
        {"where": [{"attribute": "age", "op": "between", "value": [30.0, 60.0]}],
         "min": 6, "max": 12},
    ]  # fmt: skip
    assert page.locator("#panel-quotas tbody tr").count() == 2
    assert page.locator(".messagelist").count() == 0  # no "was queued" once drawn
    # The report links every download of the panel's table (CSV, ZIP, XLSX).
    formats = page.locator("#result-downloads a[href*='format=']").evaluate_all(
        "links => links.map((a) => a.href.split('format=')[1])"
    )
    assert formats == ["csv", "zip", "xlsx"], formats
    assert_fits_viewport(page)
    assert serious_accessibility_violations(page) == []
    assert page.errors == []
    page.context.close()
