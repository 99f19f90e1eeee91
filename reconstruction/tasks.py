"""Celery tasks: take an id, call one service, own the retry policy.

Only transient infrastructure errors are retried (with exponential backoff);
everything else ends the job as ``failed`` inside the service.
"""

from __future__ import annotations

import logging

import kombu.exceptions
import redis.exceptions
from celery import Task, shared_task
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


def _retry_or_fail(task: Task, exc: BaseException, fail: object) -> None:
    if task.request.retries >= MAX_RETRIES:
        logger.error("giving up after %s retries: %r", task.request.retries, exc)
        fail()  # type: ignore[operator]
        return
    countdown = min(60, 2 ** task.request.retries)
    raise task.retry(exc=exc, countdown=countdown, max_retries=MAX_RETRIES)


@shared_task(bind=True, name="reconstruction.run_aggregate_reconstruction")
def run_aggregate_reconstruction(self: Task, job_id: int) -> None:
    from reconstruction import services
    from reconstruction.jobs import job_fail
    from reconstruction.models import AggregateReconstruction

    try:
        services.aggregate_reconstruction_run(job_id=job_id)
    except TRANSIENT_ERRORS as exc:
        _retry_or_fail(
            self, exc,
            lambda: job_fail(AggregateReconstruction, job_id, f"Infrastructure error: {exc}"),
        )
