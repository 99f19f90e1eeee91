"""Organisers start reports and download them from the admin site."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import User

from consultations.models import AuditEvent
from consultations.services import consultation_create, organisation_create
from reconstruction.models import Report
from surveys.services import responses_submit_bulk, survey_create, survey_open

pytestmark = pytest.mark.django_db


@pytest.fixture
def open_survey():  # type: ignore[no-untyped-def]
    organisation = organisation_create(slug="admin-town", name="Admin Town")
    consultation = consultation_create(organisation=organisation, title="Parks")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Parks survey",
        questions=[
            {
                "key": "visits",
                "type": "nominal",
                "categories": ["none", "some", "many"],
                "mechanism": {"name": "randomised_response", "retain": 0.8},
            }
        ],
    )
    survey = survey_open(survey=survey)
    rng = np.random.default_rng(1)
    labels = np.array(["none", "some", "many"])[rng.integers(0, 3, size=60)]
    responses_submit_bulk(
        survey=survey,
        responses=[
            {"participant": f"p{i}", "answers": {"visits": str(label)}}
            for i, label in enumerate(labels)
        ],
    )
    return survey


def test_staff_start_a_report_and_download_it(
    client, open_survey, django_capture_on_commit_callbacks
):
    User.objects.create_superuser("organiser", "organiser@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    assert client.get("/admin/reconstruction/report/add/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/admin/reconstruction/report/add/", {"survey": open_survey.pk})
    assert response.status_code == 302
    report = Report.objects.get()
    assert report.status == "succeeded", report.error
    assert report.requested_by == "staff:organiser"
    assert AuditEvent.objects.filter(action="report.create", actor="staff:organiser").exists()
    page = client.get(f"/admin/reconstruction/report/{report.pk}/change/")
    assert b"?format=html" in page.content
    html = client.get(f"/admin/reports/{report.pk}/download/?format=html")
    assert html.status_code == 200 and b"<svg" in html.content
    assert client.get(f"/admin/reports/{report.pk}/download/?format=pdf").status_code == 400


def test_downloads_need_staff(client, open_survey):
    assert client.get("/admin/reports/1/download/").status_code == 302  # to the login page
