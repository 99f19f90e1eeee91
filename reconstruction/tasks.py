"""Celery tasks: take an id, call one service, own the retry policy.

Only transient infrastructure errors are retried, with exponential backoff;
everything else ends the job as ``failed`` (or ``refused``) inside the job runner
(``reconstruction/jobs.py``). Late acknowledgement and reject-on-worker-lost
(``config/settings.py``) redeliver a job whose worker died; the runner's
idempotency makes the redelivery safe. Services queue these tasks by name
(:func:`reconstruction.jobs.job_enqueue`), so nothing imports this module but Celery.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import Task, shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction import jobs, services
from reconstruction.jobs import TRANSIENT_ERRORS
from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report

logger = logging.getLogger(__name__)

MAX_RETRIES = 5


def _run_with_retries(
    task: Task, job_id: int, run: Callable[[], object], model: type[Job] | str
) -> None:
    if isinstance(model, str):
        from django.apps import apps

        model = apps.get_model("reconstruction", model)
    try:
        run()
    except TRANSIENT_ERRORS as exc:
        name = model.__name__
        if task.request.retries >= MAX_RETRIES:
            logger.error(
                "%s %s: giving up after %s retries: %r", name, job_id, task.request.retries, exc
            )
            jobs.job_fail(
                model,
                job_id,
                Message(
                    gettext_noop("Infrastructure error after %(retries)s retries: %(error)s"),
                    {"retries": MAX_RETRIES, "error": type(exc).__name__},
                ),
            )
            return
        countdown = min(60, 2**task.request.retries)
        logger.warning("%s %s: transient %r, retrying in %s s", name, job_id, exc, countdown)
        raise task.retry(exc=exc, countdown=countdown, max_retries=MAX_RETRIES) from exc


@shared_task(bind=True, name=jobs.RUN_AGGREGATE_RECONSTRUCTION)
def run_aggregate_reconstruction(self: Task, job_id: int) -> None:
    _run_with_retries(
        self,
        job_id,
        lambda: services.aggregate_reconstruction_run(job_id=job_id),
        AggregateReconstruction,
    )


@shared_task(bind=True, name=jobs.RUN_ANALYSIS)
def run_analysis(self: Task, job_id: int) -> None:
    _run_with_retries(self, job_id, lambda: services.analysis_run(job_id=job_id), AnalysisJob)


@shared_task(bind=True, name=jobs.RUN_PANEL)
def run_panel(self: Task, job_id: int) -> None:
    """An analysis in the ``panels`` lane (its own queue and limits), otherwise the same."""
    _run_with_retries(self, job_id, lambda: services.analysis_run(job_id=job_id), AnalysisJob)


@shared_task(bind=True, name=jobs.RUN_REPORT)
def run_report(self: Task, job_id: int) -> None:
    _run_with_retries(self, job_id, lambda: services.report_run(job_id=job_id), Report)


@shared_task(name="reconstruction.refresh_open_survey_reports")
def refresh_open_survey_reports() -> int:
    return services.reports_refresh_open_surveys()


@shared_task(name="reconstruction.requeue_stuck_jobs")
def requeue_stuck_jobs() -> int:
    """Queue again jobs left in ``queued`` (their message was lost, e.g. a broker restart)."""
    options = {
        "older_than_seconds": settings.JOBS_STUCK_AFTER_SECONDS,
        "lease_seconds": settings.JOBS_LEASE_SECONDS,
        "max_attempts": settings.JOBS_MAX_ATTEMPTS,
    }
    return (
        jobs.jobs_requeue_stuck(AnalysisJob, jobs.RUN_ANALYSIS, **options)
        + jobs.jobs_requeue_stuck(Report, jobs.RUN_REPORT, **options)
        + jobs.jobs_requeue_stuck(
            AggregateReconstruction, jobs.RUN_AGGREGATE_RECONSTRUCTION, **options
        )
    )


@worker_ready.connect
def _requeue_on_worker_start(**_: object) -> None:
    """A starting worker picks up what a dead one left ``running`` (issue 13)."""
    try:
        count = requeue_stuck_jobs()
    except Exception:  # never stop a worker from starting
        logger.exception("re-queuing stuck jobs at start-up failed")
        return
    if count:
        logger.warning("re-queued %s stuck jobs at start-up", count)
