"""Browser test: an organiser builds a survey and asks for an analysis in the admin site,
in headless Debian Chromium. The screenshots of the organisers' tour
(docs/organisers/tour.md) are taken here, so they always show the admin as it is: into a
temporary directory by default (so `make test` leaves the working tree clean), into
``$TOUR_DIR`` when it is set; `make tour` sets it to docs/tour/ to refresh the tour page's
images."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import User

from consultations.services import consultation_create, organisation_create
from reconstruction.models import AnalysisJob
from surveys.models import Survey
from surveys.services import responses_submit_bulk
from tests.browser.admin_pages import fill_card, fill_quota

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tour_dir(tmp_path) -> Path:
    """Where the screenshots go: ``$TOUR_DIR`` (relative to the repository) or a temp dir."""
    chosen = os.environ.get("TOUR_DIR")
    directory = (REPO / chosen) if chosen else tmp_path / "tour"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def shot(page, directory: Path, name: str) -> None:
    page.screenshot(path=str(directory / name), full_page=True)


@pytest.fixture
def organiser(browser, live_server):
    organisation = organisation_create(slug="tour-town", name="Tour Town")
    organisation.languages = ["en", "de"]
    organisation.save()
    consultation = consultation_create(organisation=organisation, title="Library hours")
    User.objects.create_superuser("organiser", "organiser@example.org", "a-long-passw0rd")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "organiser")
    page.fill("#id_password", "a-long-passw0rd")
    page.click('input[type="submit"]')
    page.wait_for_selector("#site-name")
    yield page, consultation
    context.close()


def test_organiser_builds_a_survey_and_asks_for_an_analysis(organiser, live_server, tour_dir):
    page, consultation = organiser
    page.goto(f"{live_server.url}/admin/surveys/survey/add/")
    page.select_option("#id_consultation", str(consultation.pk))
    page.select_option("#id_kind", "opinion")
    page.fill("#id_title", "Opening hours")
    fill_card(page, 0, key="hours", text="Preferred closing time", type="ordinal",
              categories=["17:00", "19:00", "21:00"], mechanism="randomised_response",
              privacy="custom", params={"retain": 0.3})  # fmt: skip
    page.click("text=Add another Question")
    fill_card(page, 1, key="age", text="Age", type="continuous", range_low="16",
              range_high="100", mechanism="additive_uniform", privacy="custom",
              params={"half_width": 10})  # fmt: skip
    page.click('input[name="_continue"]')
    # retain 0.3 <= 1/3 of 3 categories cannot be inverted: the API's own message.
    try:
        page.wait_for_selector(".errornote", timeout=15_000)
    except Exception:
        shot(page, tour_dir, "failure.png")
        raise
    errors = page.inner_text("#questions-group")
    assert "retain must exceed 1/k = 1/3" in errors, errors
    assert not Survey.objects.exists()
    shot(page, tour_dir, "02-builder-refuses.png")

    page.fill("#id_questions-0-randomised_response__retain", "0.75")
    page.click('input[name="_continue"]')
    page.wait_for_selector("#mechanism-preview")
    survey = Survey.objects.get()
    assert [q.key for q in survey.questions.order_by("position")] == ["hours", "age"]
    preview = page.inner_text("#preview-hours")
    assert "0.75" in preview and "0.13" in preview  # the channel table
    assert "times as likely" in preview and "percentage points" in preview
    page.fill('input[name="respondents"]', "400")
    page.click("#mechanism-preview button")
    page.wait_for_selector("text=at 400 respondents")
    shot(page, tour_dir, "01-survey-builder.png")

    # Open it (the admin action), then residents answer (simulated, distorted).
    page.goto(f"{live_server.url}/admin/surveys/survey/")
    page.check(f'input[name="_selected_action"][value="{survey.pk}"]')
    page.select_option('select[name="action"]', "open_surveys")
    page.click('button[name="index"]')
    page.wait_for_selector(".messagelist")
    survey.refresh_from_db()
    assert survey.status == "open"
    page.goto(f"{live_server.url}/admin/surveys/survey/{survey.pk}/change/")
    assert page.locator('input[name="questions-0-key"]').count() == 0  # frozen once open
    rng = np.random.default_rng(3)
    hours = np.array(["17:00", "19:00", "21:00"])[rng.choice(3, size=400, p=[0.2, 0.5, 0.3])]
    responses_submit_bulk(
        survey=survey,
        responses=[{"participant": f"p{i}", "answers": {"hours": str(h),
                                                        "age": round(rng.uniform(16, 100), 3)}}
                   for i, h in enumerate(hours)],
    )  # fmt: skip

    page.goto(f"{live_server.url}/admin/reconstruction/analysisjob/add/")
    page.select_option("#id_survey", str(survey.pk))
    page.wait_for_selector("#analysis-form")
    page.select_option("#id_kind", "distribution")
    page.select_option("#id_attribute", "hours")
    shot(page, tour_dir, "03-analysis-form.png")
    page.click("#start-analysis")
    page.wait_for_selector("#result-chart svg", timeout=30_000)
    job = AnalysisJob.objects.get()
    assert job.requested_by == "staff:organiser" and job.status == "succeeded"
    summary = page.inner_text("#result-summary")
    assert "method" in summary and job.result["method"] in summary
    assert "CSV" in page.inner_text("#analysis-result")
    shot(page, tour_dir, "04-analysis-result.png")

    # The panel form: quotas built like the conditions (answers ticked, or numbers).
    page.goto(f"{live_server.url}/admin/reconstruction/analysisjob/panel/?survey={survey.pk}")
    page.wait_for_selector("#panel-form")
    page.fill("#id_size", "20")
    fill_quota(page, 0, "hours", 6, 12, answers=["19:00", "21:00"])
    fill_quota(page, 1, "age", 4, 10, op="between", number=30, up_to=60)
    shot(page, tour_dir, "05-panel-form.png")
    # The organisers' tour page shows exactly the screenshots this test takes (committed).
    readme = (REPO / "docs" / "organisers" / "tour.md").read_text()
    referenced = set(re.findall(r"\]\(\.\./tour/([\w.-]+\.png)\)", readme))
    taken = {path.name for path in tour_dir.glob("*.png")} - {"failure.png"}
    assert referenced == taken, (referenced, taken)
    assert all((REPO / "docs" / "tour" / name).stat().st_size > 10_000 for name in referenced)
