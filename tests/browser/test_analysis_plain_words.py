"""Browser test (issue 32): an organiser asks how many residents meet two conditions,
built from the questions' own categories and range (no typed values to guess), and reads
the result in plain words: a rounded, localised number with its interval, a chart, what
the interval means, the raw request only under "technical details". At 1280 x 800 in
English and on a 390 px phone in German; the pages never scroll sideways and axe-core
finds no serious violation on the form or the result."""

from __future__ import annotations

import numpy as np
import pytest

from consultations.services import consultation_create, organisation_create
from reconstruction.models import AnalysisJob
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.browser.admin_pages import (
    assert_fits_viewport,
    serious_accessibility_violations,
    signed_in_page,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N = 1200
WORDS = {
    "en": {"headline": "of the 1,200 residents who answered", "count": "how many…"},
    "de": {"headline": "der 1.200 Einwohner", "count": "wie viele…"},
}


@pytest.fixture
def open_survey():
    organisation = organisation_create(slug="count-town", name="Count Town")
    consultation = consultation_create(organisation=organisation, title="Parks")
    survey = survey_create(
        organisation=organisation, consultation=consultation, kind="profile", title="Parks",
        questions=[
            {"key": "visits", "text": "How often do you visit?", "type": "nominal",
             "categories": ["none", "some", "many"],
             "mechanism": {"name": "randomised_response", "retain": 0.8}},
            {"key": "age", "text": "Age", "type": "continuous", "range": [16, 100],
             "mechanism": {"name": "additive_uniform", "half_width": 5}},
        ],
    )  # fmt: skip
    survey = survey_open(survey=survey)
    rng = np.random.default_rng(7)
    visits = np.array(["none", "some", "many"])[rng.integers(0, 3, size=N)]
    ages = np.round(rng.uniform(20, 90, size=N), 3)
    responses_submit_bulk(
        survey=survey,
        responses=[{"participant": f"p{i}", "answers": {"visits": str(v), "age": float(a)}}
                   for i, (v, a) in enumerate(zip(visits, ages, strict=True))],
    )  # fmt: skip
    return survey


@pytest.mark.parametrize(
    ("viewport", "language"), [("desktop", "en"), ("phone", "de")], ids=["1280-en", "390-de"]
)
def test_a_count_with_two_conditions_is_asked_for_and_read_in_plain_words(
    browser, live_server, open_survey, viewport, language
):
    page = signed_in_page(browser, live_server, viewport=viewport, language=language)
    page.goto(f"{live_server.url}/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}")
    page.wait_for_selector("#analysis-form")
    kinds = page.locator("#id_kind option").all_inner_texts()
    assert WORDS[language]["count"] in kinds, kinds  # plain words, not "count"
    page.select_option("#id_kind", "count")
    assert page.locator(".field-attribute").is_hidden()  # a count has no target question
    # Only the count's methods, the recommended one chosen, under "advanced".
    page.click("#advanced summary")
    visible = [
        item.get_attribute("value")
        for item in page.locator("#id_method input").all()
        if item.is_visible()
    ]
    assert visible == ["", "figure3", "naive"], visible
    assert page.is_checked("#id_method input[value='']")

    # Condition 1: a category question offers its own answers to tick.
    page.select_option("#id_where_0_attribute", "visits")
    boxes = page.locator("#condition-0 .condition-categories input")
    shown = [b.get_attribute("value") for b in boxes.all() if b.is_visible()]
    assert sorted(shown) == ["many", "none", "some"]
    page.locator("#condition-0 input[value='some']").check()
    page.locator("#condition-0 input[value='many']").check()
    # Condition 2: a number question offers comparisons and says its range.
    page.select_option("#id_where_1_attribute", "age")
    assert page.locator("#condition-1 .condition-categories").is_hidden()
    assert "16" in page.inner_text("#condition-1 .condition-range")
    page.select_option("#id_where_1_op", "gt")
    page.fill("#id_where_1_number", "40")
    assert_fits_viewport(page)
    assert serious_accessibility_violations(page) == []

    page.click("#start-analysis")
    page.wait_for_selector("#result-headline", timeout=60_000)
    job = AnalysisJob.objects.get()
    assert job.status == "succeeded" and job.kind == "count"
    assert job.spec["where"] == [
        {"attribute": "visits", "op": "in", "value": ["some", "many"]},
        {"attribute": "age", "op": "gt", "value": 40.0},
    ]
    headline = page.inner_text("#result-headline")
    assert WORDS[language]["headline"] in headline, headline
    estimate = job.result["estimate"]
    assert f"{round(estimate):,}".replace(",", "." if language == "de" else ",") in headline
    assert page.locator("#result-chart svg").count() == 1
    assert page.inner_text("#interval-meaning")
    # The banner does not say "queued" once the job has finished.
    assert page.locator(".messagelist").count() == 0
    # The raw request is there, folded away.
    assert not page.locator("#technical-details pre").first.is_visible()
    assert_fits_viewport(page)
    assert serious_accessibility_violations(page) == []
    assert page.errors == []
    page.context.close()
