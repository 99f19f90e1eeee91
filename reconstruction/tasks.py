"""Celery tasks: take an id, call one service, own the retry policy.

Only transient infrastructure errors are retried, with exponential backoff;
everything else ends the job as ``failed`` inside the service
(``reconstruction/services.py``). Late acknowledgement and reject-on-worker-lost
(``config/settings.py``) redeliver a job whose worker died; the runner's
idempotency makes the redelivery safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import kombu.exceptions
import redis.exceptions
from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

logger = logging.getLogger(__name__)

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    kombu.exceptions.OperationalError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)
MAX_RETRIES = 5


def _run_with_retries(task: Task, job_id: int, run: Callable[[], object], model_name: str) -> None:
    try:
        run()
    except TRANSIENT_ERRORS as exc:
        if task.request.retries >= MAX_RETRIES:
            logger.error(
                "%s %s: giving up after %s retries: %r",
                model_name,
                job_id,
                task.request.retries,
                exc,
            )
            from django.apps import apps

            from reconstruction.services import job_fail

            job_fail(
                apps.get_model("reconstruction", model_name),
                job_id,
                f"Infrastructure error after {MAX_RETRIES} retries: {type(exc).__name__}",
            )
            return
        countdown = min(60, 2**task.request.retries)
        logger.warning("%s %s: transient %r, retrying in %s s", model_name, job_id, exc, countdown)
        raise task.retry(exc=exc, countdown=countdown, max_retries=MAX_RETRIES) from exc


@shared_task(bind=True, name="reconstruction.run_aggregate_reconstruction")
def run_aggregate_reconstruction(self: Task, job_id: int) -> None:
    from reconstruction import services

    _run_with_retries(
        self,
        job_id,
        lambda: services.aggregate_reconstruction_run(job_id=job_id),
        "AggregateReconstruction",
    )


@shared_task(bind=True, name="reconstruction.run_analysis")
def run_analysis(self: Task, job_id: int) -> None:
    from reconstruction import services

    _run_with_retries(self, job_id, lambda: services.analysis_run(job_id=job_id), "AnalysisJob")


@shared_task(bind=True, name="reconstruction.run_report")
def run_report(self: Task, job_id: int) -> None:
    from reconstruction import services

    _run_with_retries(self, job_id, lambda: services.report_run(job_id=job_id), "Report")


@shared_task(name="reconstruction.refresh_open_survey_reports")
def refresh_open_survey_reports() -> int:
    from reconstruction import services

    return services.reports_refresh_open_surveys()


@shared_task(name="reconstruction.requeue_stuck_jobs")
def requeue_stuck_jobs() -> int:
    """Queue again jobs left in ``queued`` (their message was lost, e.g. a broker restart)."""
    from reconstruction.models import AggregateReconstruction, AnalysisJob, Report
    from reconstruction.services import jobs_requeue_stuck

    age = settings.JOBS_STUCK_AFTER_SECONDS
    return (
        jobs_requeue_stuck(AnalysisJob, run_analysis, older_than_seconds=age)
        + jobs_requeue_stuck(Report, run_report, older_than_seconds=age)
        + jobs_requeue_stuck(
            AggregateReconstruction, run_aggregate_reconstruction, older_than_seconds=age
        )
    )
