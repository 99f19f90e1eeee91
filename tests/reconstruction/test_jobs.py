"""The job runner and the tasks' retry policy, with tasks run in-process (eager).

Celery's eager mode runs a retry at once and synchronously (``Task.apply`` applies
the retry signature with ``retries + 1``, ignoring the countdown), so the retry
policy of reconstruction/tasks.py is exercised for real here, without waiting.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

from consultations.models import Organisation
from reconstruction import pipeline, services, tasks
from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report
from surveys.services import survey_close
from tests.reconstruction.data import Consultation, distorted_consultation

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(analyst: Any) -> Consultation:
    return distorted_consultation(Organisation.objects.get(slug="north"), n=200, seed=3)


def queued_analysis(data: Consultation, **spec: Any) -> AnalysisJob:
    """An analysis stored and queued, its task not run (the commit never happens)."""
    spec = spec or {"kind": "distribution", "attribute": "sex"}
    return services.analysis_create(
        organisation=data.consultation.organisation,
        survey=data.profile,
        spec=spec,
        requested_by="tests",
    )


def test_running_a_finished_job_again_changes_nothing(data: Consultation) -> None:
    job = queued_analysis(data)
    tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.attempts == 1
    first = (job.result, job.finished_at, job.started_at)

    tasks.run_analysis.delay(job.pk)  # a duplicated or redelivered message
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    assert job.attempts == 1
    assert (job.result, job.finished_at, job.started_at) == first


def test_a_running_job_is_run_again(data: Consultation) -> None:
    """A job left ``running`` (its worker died) is taken up again by the redelivery."""
    job = queued_analysis(data)
    AnalysisJob.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, attempts=1)
    tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.attempts == 2
    assert job.result["categories"] == ["F", "M"]


def test_a_value_error_fails_the_job_with_its_message(
    data: Consultation, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued_analysis(data)

    def broken(prepared: Any, progress: Any) -> dict[str, Any]:
        raise ValueError("the channel is singular")

    monkeypatch.setattr(pipeline, "compute", broken)
    tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error == "the channel is singular"
    assert job.result is None and job.finished_at is not None and job.attempts == 1


def test_an_unexpected_error_fails_the_job_without_leaking_details(
    data: Consultation, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued_analysis(data)

    def broken(prepared: Any, progress: Any) -> dict[str, Any]:
        raise KeyError("secret internals")

    monkeypatch.setattr(pipeline, "compute", broken)
    tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert "KeyError" in job.error and "secret" not in job.error


def test_the_soft_time_limit_while_claiming_fails_the_job_not_leaves_it_queued(
    data: Consultation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine the limit can fire while the worker still claims the job row."""
    from celery.exceptions import SoftTimeLimitExceeded

    job = queued_analysis(data)
    real = AnalysisJob.objects.select_for_update

    def slow_claim(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(AnalysisJob.objects, "select_for_update", real)
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(AnalysisJob.objects, "select_for_update", slow_claim)
    tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert "time limit" in job.error
    assert job.result is None and job.finished_at is not None


def test_data_changed_since_the_request_is_refused_readably(data: Consultation) -> None:
    """The worker checks the thresholds again: withdrawals can leave too few answers."""
    from surveys.services import response_withdraw

    job = queued_analysis(data)
    for reference in data.participants[:195]:
        response_withdraw(survey=data.profile, participant=str(reference))
    tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.REFUSED
    assert "fewer than 10 participants answered 'sex'" in job.error
    assert "5" not in job.error  # the below-threshold number is never quoted


def test_a_transient_error_is_retried_and_the_job_succeeds(
    data: Consultation, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued_analysis(data)
    real = pipeline.compute
    calls = []

    def flaky(prepared: Any, progress: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(prepared, progress)

    monkeypatch.setattr(pipeline, "compute", flaky)
    result = tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert len(calls) == 2
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.attempts == 2 and job.error == ""
    assert job.result["categories"] == ["F", "M"]
    assert result.successful()


def test_a_lasting_transient_error_ends_the_job_failed_after_max_retries(
    data: Consultation, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = queued_analysis(data)
    calls = []

    def down(prepared: Any, progress: Any) -> dict[str, Any]:
        calls.append(1)
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(pipeline, "compute", down)
    tasks.run_analysis.delay(job.pk)
    job.refresh_from_db()
    assert len(calls) == tasks.MAX_RETRIES + 1
    assert job.status == Job.Status.FAILED
    assert job.error == (
        f"Infrastructure error after {tasks.MAX_RETRIES} retries: OperationalError"
    )
    assert job.finished_at is not None and job.result is None


def test_the_retry_policy_backs_off_exponentially(data: Consultation, monkeypatch: Any) -> None:
    """Outside eager mode the retry is queued with a growing countdown."""
    countdowns: list[int] = []

    class Retry(Exception):
        pass

    class FakeTask:
        class request:
            retries = 0

        def retry(self, *, exc: Exception, countdown: int, max_retries: int) -> Exception:
            assert max_retries == tasks.MAX_RETRIES
            countdowns.append(countdown)
            return Retry()

    def down() -> None:
        raise OperationalError("down")

    task = FakeTask()
    for retries in range(tasks.MAX_RETRIES):
        task.request.retries = retries
        with pytest.raises(Retry):
            tasks._run_with_retries(task, 1, down, "AnalysisJob")  # type: ignore[arg-type]
    assert countdowns == [1, 2, 4, 8, 16]


# --------------------------------------------------------------------------- beat tasks


def test_requeue_stuck_jobs_requeues_only_old_queued_jobs(
    data: Consultation, settings: Any
) -> None:
    settings.JOBS_STUCK_AFTER_SECONDS = 600
    old = queued_analysis(data)
    fresh = queued_analysis(data)
    running = queued_analysis(data)
    long_ago = timezone.now() - timedelta(hours=1)
    AnalysisJob.objects.filter(pk__in=[old.pk, running.pk]).update(created_at=long_ago)
    AnalysisJob.objects.filter(pk=running.pk).update(status=Job.Status.RUNNING)
    report = services.report_create(
        organisation=data.consultation.organisation, survey=data.opinion, requested_by="tests"
    )
    Report.objects.filter(pk=report.pk).update(created_at=long_ago)

    assert tasks.requeue_stuck_jobs.delay().get() == 2

    statuses = dict(AnalysisJob.objects.values_list("pk", "status"))
    assert statuses[old.pk] == Job.Status.SUCCEEDED  # re-queued, and run in-process
    assert statuses[fresh.pk] == Job.Status.QUEUED
    assert statuses[running.pk] == Job.Status.RUNNING
    report.refresh_from_db()
    assert report.status == Job.Status.SUCCEEDED and report.attempts == 1
    assert tasks.requeue_stuck_jobs.delay().get() == 0


def test_requeue_covers_aggregate_reconstructions(analyst: Any, settings: Any) -> None:
    job = services.aggregate_reconstruction_create(
        organisation=Organisation.objects.get(slug="north"),
        requested_by="tests",
        counts=[60, 40],
        channel=[[0.8, 0.2], [0.2, 0.8]],
        method="em_as",
    )
    AggregateReconstruction.objects.filter(pk=job.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.JOBS_STUCK_AFTER_SECONDS + 5)
    )
    assert tasks.requeue_stuck_jobs.delay().get() == 1
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED


def test_refresh_open_survey_reports_creates_one_per_open_survey(data: Consultation) -> None:
    other = distorted_consultation(data.consultation.organisation, n=50, seed=4)
    survey_close(survey=other.opinion, actor="tests")
    # The reports' tasks are queued on commit, which never comes here: they stay queued.
    assert tasks.refresh_open_survey_reports.delay().get() == 3
    surveys = sorted(Report.objects.values_list("survey_id", flat=True))
    assert surveys == sorted([data.profile.pk, data.opinion.pk, other.profile.pk])
    assert set(Report.objects.values_list("requested_by", flat=True)) == {"schedule"}

    # A report already queued (or running) for a survey: none is added for it.
    assert tasks.refresh_open_survey_reports.delay().get() == 0
    Report.objects.filter(survey=data.profile).update(status=Job.Status.RUNNING)
    Report.objects.filter(survey=data.opinion).update(status=Job.Status.SUCCEEDED)
    assert tasks.refresh_open_survey_reports.delay().get() == 1
    assert Report.objects.filter(survey=data.opinion).count() == 2
    assert Report.objects.filter(survey=data.profile).count() == 1


def test_queued_messages_carry_no_time_limits(
    data: Consultation, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """The worker's own limits apply: Celery would otherwise copy the sender's into the
    message (a web process with other settings would override the worker's)."""
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(
        tasks.run_analysis,
        "apply_async",
        lambda args, **options: sent.append({"args": args, **options}),
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = queued_analysis(data)
    assert sent == [{"args": (job.pk,), "time_limit": None, "soft_time_limit": None}]
