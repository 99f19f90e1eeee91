"""Running background jobs reliably: idempotent, progress-reporting, failing readably.

Celery tasks call :func:`job_execute` with a job model, an id and the pure
computation. The function owns the job's state machine; the task owns only
the retry policy for transient errors (see ``reconstruction/tasks.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.utils import timezone

from reconstruction.models import Job

logger = logging.getLogger(__name__)

J = TypeVar("J", bound=Job)
Progress = Callable[[float], None]


class JobInputError(ValueError):
    """The job's input cannot be computed; the message is shown to the analyst."""


def job_send(task: Any, job_id: int) -> None:
    """Send ``task(job_id)`` to the workers, under the worker's own time limits.

    Celery copies the *sending* process's ``task_time_limit`` and
    ``task_soft_time_limit`` into the message, where they override the
    worker's. The limits belong to the worker (its visibility timeout is
    checked against them), so the message carries none (explicit ``None``).
    """
    task.apply_async((job_id,), time_limit=None, soft_time_limit=None)


def job_enqueue(job: Job, task: Any) -> None:
    """Queue ``task(job.pk)`` once the surrounding transaction commits.

    Queuing before the commit would let a fast worker look for a row that
    does not exist yet (or never will, if the transaction rolls back).
    """
    transaction.on_commit(lambda: job_send(task, job.pk))


def _progress_writer(model: type[J], job_id: int) -> Progress:
    last = {"at": 0.0}

    def report(fraction: float) -> None:
        now = time.monotonic()
        if now - last["at"] < 0.5 and fraction < 1.0:
            return  # at most two writes a second
        last["at"] = now
        model.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
            progress=max(0.0, min(1.0, float(fraction)))
        )

    return report


def job_fail(model: type[J], job_id: int, error: str) -> None:
    model.objects.filter(pk=job_id).exclude(status__in=Job.FINISHED).update(
        status=Job.Status.FAILED, error=error, finished_at=timezone.now()
    )


@dataclass(frozen=True)
class JobOutput:
    """What a computation returns: the JSON result and other columns to store with it."""

    result: dict[str, Any]
    fields: dict[str, Any] = field(default_factory=dict)


def job_execute(
    model: type[J], job_id: int, compute: Callable[[J, Progress], dict[str, Any] | JobOutput]
) -> J | None:
    """Run one job to completion, exactly once as far as its stored result goes.

    - A finished job is left alone, so a redelivered or duplicated message
      stores nothing new.
    - A ``running`` job is run again: its worker died before finishing.
    - The result is written with a conditional update, so two concurrent runs
      of the same job store one result.
    - :class:`JobInputError` / ``ValueError`` and the soft time limit end the
      job as ``failed`` with a readable error; transient database and broker
      errors propagate so the task can retry.
    """
    with transaction.atomic():
        job = model.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            logger.warning("%s %s no longer exists; nothing to do", model.__name__, job_id)
            return None
        if job.status in Job.FINISHED:
            logger.info("%s %s already %s; not run again", model.__name__, job_id, job.status)
            return job
        job.status = Job.Status.RUNNING
        job.attempts += 1
        job.started_at = timezone.now()
        job.progress = 0.0
        job.save(update_fields=["status", "attempts", "started_at", "progress"])

    try:
        result = compute(job, _progress_writer(model, job_id))
    except SoftTimeLimitExceeded:
        job_fail(model, job_id, "The job ran past its time limit and was stopped.")
    except ValueError as exc:  # includes JobInputError and the engine's input checks
        job_fail(model, job_id, str(exc))
    except Exception as exc:
        if _is_transient(exc):
            raise
        logger.exception("%s %s failed", model.__name__, job_id)
        job_fail(model, job_id, f"Internal error ({type(exc).__name__}); the operators were told.")
    else:
        output = result if isinstance(result, JobOutput) else JobOutput(result)
        model.objects.filter(pk=job_id).exclude(status__in=Job.FINISHED).update(
            status=Job.Status.SUCCEEDED,
            result=output.result,
            progress=1.0,
            error="",
            finished_at=timezone.now(),
            **output.fields,
        )
    job.refresh_from_db()
    return job


def _is_transient(exc: BaseException) -> bool:
    from reconstruction.tasks import TRANSIENT_ERRORS

    return isinstance(exc, TRANSIENT_ERRORS)


def jobs_requeue_stuck(model: type[J], task: Any, *, older_than_seconds: float) -> int:
    """Queue again the jobs that sat in ``queued`` too long (their message was lost)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    ids = list(
        model.objects.filter(status=Job.Status.QUEUED, created_at__lt=cutoff).values_list(
            "pk", flat=True
        )
    )
    for job_id in ids:
        job_send(task, job_id)
    return len(ids)
