"""The embedded default (SQLite, tasks in-process) runs again the jobs a dead process left
``running`` or ``queued``: when such a job is read, and at the process's first request
(issue 27). With a broker, a starting worker and beat do it (tests/integration)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.apps import apps as django_apps
from django.core.signals import request_started
from django.test import override_settings
from django.utils import timezone

from consultations.services import consultation_create
from reconstruction import services
from reconstruction.models import AnalysisJob, Report
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.factories import tenant_factory

pytestmark = pytest.mark.django_db
UID = "requeue-on-start"


@pytest.fixture
def tenant():
    return tenant_factory()


@pytest.fixture
def survey(tenant):
    organisation = tenant.organisation
    consultation = consultation_create(organisation=organisation, title="Parks")
    survey = survey_create(
        organisation=organisation, consultation=consultation, kind="profile", title="Parks",
        questions=[{"key": "visits", "type": "nominal", "categories": ["none", "some", "many"],
                    "mechanism": {"name": "randomised_response", "retain": 0.8}}],
    )  # fmt: skip
    survey = survey_open(survey=survey)
    labels = np.array(["none", "some", "many"])[np.random.default_rng(1).integers(0, 3, 60)]
    responses_submit_bulk(
        survey=survey,
        responses=[{"participant": f"p{i}", "answers": {"visits": str(v)}}
                   for i, v in enumerate(labels)],
    )  # fmt: skip
    return survey


def left_running(tenant, survey, *, seconds_ago: float, attempts: int = 1) -> AnalysisJob:
    """An analysis whose process died while it ran (never run here: no on-commit)."""
    job = services.analysis_create(
        organisation=tenant.organisation, survey=survey, requested_by="t",
        spec={"kind": "distribution", "attribute": "visits"},
    )  # fmt: skip
    AnalysisJob.objects.filter(pk=job.pk).update(
        status="running", attempts=attempts,
        started_at=timezone.now() - timedelta(seconds=seconds_ago),
    )  # fmt: skip
    return job


@override_settings(JOBS_LEASE_SECONDS=420)
def test_a_job_left_running_by_a_dead_process_runs_again_when_read(tenant, survey):
    job = left_running(tenant, survey, seconds_ago=3600)
    read = tenant.analyst.get(f"/api/v1/analyses/{job.pk}/").json()
    assert read["status"] == "succeeded", read
    assert AnalysisJob.objects.get(pk=job.pk).attempts == 2


@override_settings(JOBS_LEASE_SECONDS=420)
def test_a_job_within_its_lease_is_left_running(tenant, survey):
    job = left_running(tenant, survey, seconds_ago=10)
    assert tenant.analyst.get(f"/api/v1/analyses/{job.pk}/").json()["status"] == "running"


@override_settings(JOBS_LEASE_SECONDS=420, JOBS_MAX_ATTEMPTS=3)
def test_a_job_whose_process_died_too_often_fails_with_the_reason(tenant, survey):
    job = left_running(tenant, survey, seconds_ago=3600, attempts=3)
    read = tenant.analyst.get(f"/api/v1/analyses/{job.pk}/").json()
    assert read["status"] == "failed"
    assert "stopped before it finished, 3 times" in read["error"]


@override_settings(JOBS_LEASE_SECONDS=420, JOBS_STUCK_AFTER_SECONDS=600)
def test_the_first_request_of_a_process_runs_the_stale_jobs_again(tenant, survey):
    job = left_running(tenant, survey, seconds_ago=3600)
    report = services.report_create(organisation=tenant.organisation, survey=survey,
                                    requested_by="t")  # fmt: skip
    Report.objects.filter(pk=report.pk).update(created_at=timezone.now() - timedelta(hours=1))
    fresh = left_running(tenant, survey, seconds_ago=1)
    # What the app's ready() connects in the embedded default (a test process's first
    # request has used it up already): the next request runs the stale jobs, once.
    django_apps.get_app_config("reconstruction").ready()
    assert UID in [key[0] for key, *_ in request_started.receivers]
    assert tenant.analyst.get("/api/v1/analyses/").status_code == 200
    assert AnalysisJob.objects.get(pk=job.pk).status == "succeeded"
    assert Report.objects.get(pk=report.pk).status == "succeeded"
    assert AnalysisJob.objects.get(pk=fresh.pk).status == "running"
    assert UID not in [key[0] for key, *_ in request_started.receivers]
