"""The job runner: every background job's state machine, in one place.

A job moves ``queued -> running -> succeeded | failed | refused`` (see
:class:`reconstruction.models.Job`). Services create a job row and queue its task **by
name** (:func:`job_enqueue`) once the transaction commits; the Celery task
(``reconstruction/tasks.py``) takes the id and calls :func:`job_execute` with the
computation. Neither module imports the other: this one names tasks, ``tasks.py``
imports this one, and the services import only this one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import kombu.exceptions
import redis.exceptions
from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction.models import Job
from surveys import statistics

logger = logging.getLogger(__name__)

J = TypeVar("J", bound=Job)
Progress = Callable[[float], None]

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    kombu.exceptions.OperationalError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)
"""Infrastructure errors worth a retry (the task's policy); anything else ends the job."""

# Task names (``reconstruction/tasks.py`` registers them under these names).
RUN_ANALYSIS = "reconstruction.run_analysis"
RUN_PANEL = "reconstruction.run_panel"  # an analysis in the panels lane
RUN_REPORT = "reconstruction.run_report"
RUN_AGGREGATE_RECONSTRUCTION = "reconstruction.run_aggregate_reconstruction"


Reason = Message | str
"""A job's refusal or failure reason: a translatable :class:`Message` (stored as
``error_message`` and shown in the reader's language), or plain text."""


class JobInputError(ValueError):
    """The job's input cannot be computed; the message is shown to the analyst."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(str(reason))
        self.message = reason


class JobRefused(Exception):
    """The job ran but its result may not be published (disclosure control).

    The job ends as ``refused`` with ``reason`` (English text) as its error and the
    translatable ``message`` beside it. The reason names the threshold, never a
    below-threshold number (architecture.md, privacy rules).
    """

    def __init__(self, reason: Reason) -> None:
        super().__init__(str(reason))
        self.reason = str(reason)
        self.message = reason


class JobCancelled(Exception):
    """Raised by the progress writer when the job was ended elsewhere while it ran
    (cancelled through the API or the admin, or failed as stuck): the computation stops
    and nothing is stored."""


def job_task(task_name: str, kind: str | None = None) -> str:
    """The task that runs a job: an analysis whose kind has a lane of its own
    (``ANALYSIS_KIND_LANES``: panels by default) runs as :data:`RUN_PANEL`, the same
    computation routed to the ``panels`` lane under that lane's limits."""
    from django.conf import settings

    if task_name == RUN_ANALYSIS and settings.ANALYSIS_KIND_LANES.get(kind) == "panels":
        return RUN_PANEL
    return task_name


def job_lane(task_name: str) -> str:
    """The lane (Celery queue) a task is routed to (``CELERY_TASK_ROUTES``)."""
    from django.conf import settings

    route = settings.CELERY_TASK_ROUTES.get(task_name, {})
    return str(route.get("queue", settings.CELERY_TASK_DEFAULT_QUEUE))


def job_send(task_name: str, job_id: int) -> None:
    """Send the task ``task_name`` with ``job_id`` to the workers of its lane.

    The task is named, not imported, so the sender needs no task module; the settings'
    routes put it in its lane. In the embedded default (``task_always_eager``) the
    registered task runs in-process. Celery copies the *sending* process's
    ``task_time_limit`` and ``task_soft_time_limit`` into the message, where they
    override the worker's; the limits belong to the worker (each lane's, as task
    annotations; its visibility timeout is checked against them), so the message
    carries none.
    """
    app = current_app
    if app.conf.task_always_eager:
        # In-process (embedded default, unit tests): run the registered task; Celery's
        # autodiscovery imports the task modules the first time one is needed.
        if task_name not in app.tasks:
            app.loader.import_default_modules()
        app.tasks[task_name].apply_async((job_id,), time_limit=None, soft_time_limit=None)
        return
    app.send_task(task_name, args=(job_id,), time_limit=None, soft_time_limit=None)


def job_enqueue(job: Job, task_name: str) -> None:
    """Queue ``task_name(job.pk)`` in its lane once the surrounding transaction commits.

    Queuing before the commit would let a fast worker look for a row that
    does not exist yet (or never will, if the transaction rolls back).
    """
    task_name = job_task(task_name, getattr(job, "kind", None))
    # Read-your-writes: the primary's WAL position now, which every write committed before
    # this request lies behind; a worker reading a standby waits until it has replayed it.
    position = statistics.primary_wal_position()
    if position:
        type(job).objects.filter(pk=job.pk).update(wal_lsn=position)
    transaction.on_commit(lambda: job_send(task_name, job.pk))


def job_read_alias(job: Job) -> str:
    """Where this job's statistics are read: the standby (``replica``) once it has replayed
    the primary's WAL up to the job's ``wal_lsn``, waiting at most
    ``ANALYSIS_REPLICA_WAIT_SECONDS``; else the primary. The choice is stored on the job
    (``read_from``: ``replica``, or ``primary`` when it fell back; empty with one
    database), so nobody reads a result without its residents unknowingly."""
    from django.conf import settings

    if "replica" not in settings.DATABASES:
        return "default"
    if statistics.replica_has_replayed(
        job.wal_lsn, wait_seconds=float(settings.ANALYSIS_REPLICA_WAIT_SECONDS)
    ):
        alias, read_from = "replica", "replica"
    else:
        alias, read_from = "default", "primary"
        logger.warning(
            "%s %s: the standby has not replayed %s within %s s; reading the primary",
            type(job).__name__,
            job.pk,
            job.wal_lsn,
            settings.ANALYSIS_REPLICA_WAIT_SECONDS,
        )
    type(job).objects.filter(pk=job.pk).update(read_from=read_from)
    job.read_from = read_from
    return alias


def _progress_writer(model: type[J], job_id: int) -> Progress:
    last = {"at": 0.0}

    def report(fraction: float) -> None:
        now = time.monotonic()
        if now - last["at"] < 0.5 and fraction < 1.0:
            return  # at most two writes a second
        last["at"] = now
        updated = model.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
            progress=max(0.0, min(1.0, float(fraction)))
        )
        if not updated:  # no longer running: cancelled (or ended) elsewhere
            raise JobCancelled(f"{model.__name__} {job_id} is no longer running")

    return report


def reason_of(error: BaseException | Reason) -> Reason:
    """The translatable message an error carries (pure-layer ``InputError``,
    :class:`JobRefused`, :class:`JobInputError`), else its text."""
    if isinstance(error, (Message, str)):
        return error
    carried = getattr(error, "message", None)
    return carried if isinstance(carried, (Message, str)) else str(error)


def reason_fields(reason: Reason) -> dict[str, Any]:
    """The columns a reason is stored in: English ``error``, translatable ``error_message``."""
    return {
        "error": str(reason),
        "error_message": reason.as_json() if isinstance(reason, Message) else None,
    }


def job_fail(
    model: type[J], job_id: int, error: BaseException | Reason, *, status: str = Job.Status.FAILED
) -> None:
    """End an unfinished job as ``failed`` (or ``refused``) with a readable message.

    A :class:`Message` (or an error carrying one) is stored with its template and
    parameters too, so readers see it in their own language (``Job.error_text``).
    """
    model.objects.filter(pk=job_id).exclude(status__in=Job.FINISHED).update(
        status=status, finished_at=timezone.now(), **reason_fields(reason_of(error))
    )


TIME_LIMIT = Message(gettext_noop("The job ran past its time limit and was stopped."))


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
    - :class:`JobRefused` ends the job as ``refused`` with its reason;
    - :class:`JobCancelled` (the job was cancelled while it ran) stores nothing;
      :class:`JobInputError` / ``ValueError`` and the soft time limit end it as
      ``failed`` with a readable error; transient database and broker errors
      (:data:`TRANSIENT_ERRORS`) propagate so the task can retry.
    """
    try:
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
    except SoftTimeLimitExceeded:
        # The limit can fire while the job is being claimed (a busy database or machine):
        # the claim rolls back, so end the job here rather than leave it queued for ever.
        job_fail(model, job_id, TIME_LIMIT)
        return model.objects.filter(pk=job_id).first()

    try:
        with statistics.reading_from(job_read_alias(job)):
            result = compute(job, _progress_writer(model, job_id))
    except SoftTimeLimitExceeded:
        job_fail(model, job_id, TIME_LIMIT)
    except JobCancelled:
        logger.info("%s %s was cancelled while it ran; nothing stored", model.__name__, job_id)
    except JobRefused as exc:
        job_fail(model, job_id, exc, status=Job.Status.REFUSED)
    except ValueError as exc:  # includes JobInputError and the engine's input checks
        job_fail(model, job_id, exc)
    except Exception as exc:
        if isinstance(exc, TRANSIENT_ERRORS):
            raise
        logger.exception("%s %s failed", model.__name__, job_id)
        job_fail(
            model,
            job_id,
            Message(
                gettext_noop("Internal error (%(error)s); the operators were told."),
                {"error": type(exc).__name__},
            ),
        )
    else:
        output = result if isinstance(result, JobOutput) else JobOutput(result)
        model.objects.filter(pk=job_id).exclude(status__in=Job.FINISHED).update(
            status=Job.Status.SUCCEEDED,
            result=output.result,
            progress=1.0,
            error="",
            error_message=None,
            finished_at=timezone.now(),
            **output.fields,
        )
    job.refresh_from_db()
    if job.status in Job.FINISHED:
        from webhooks.events import job_finished

        job_finished(job)  # analysis.finished / report.finished to the organisation's webhooks
    return job


def jobs_requeue_stuck(
    model: type[J],
    task_name: str,
    *,
    older_than_seconds: float,
    lease_seconds: float | None = None,
    max_attempts: int = 3,
    pks: list[int] | None = None,
) -> int:
    """Queue again the jobs that sat in ``queued`` too long (their message was lost),
    and deal with the jobs ``running`` past their lease (their worker died); only the
    jobs ``pks`` when given.

    A job still ``running`` ``lease_seconds`` after it started cannot be running any more
    (the hard time limit would have stopped it): it goes back to ``queued`` and is sent
    again, or, after ``max_attempts`` attempts, ends as ``failed`` with the reason.
    Called by Celery beat and when a worker starts. Returns how many jobs were re-sent.
    """
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    jobs = model.objects.all() if pks is None else model.objects.filter(pk__in=pks)
    ids = list(
        jobs.filter(status=Job.Status.QUEUED, created_at__lt=cutoff).values_list("pk", flat=True)
    )
    if lease_seconds is not None:
        expired = jobs.filter(
            status=Job.Status.RUNNING, started_at__lt=now - timedelta(seconds=lease_seconds)
        )
        expired.filter(attempts__gte=max_attempts).update(
            status=Job.Status.FAILED,
            finished_at=now,
            **reason_fields(
                Message(
                    gettext_noop(
                        "The job's worker stopped before it finished, %(attempts)s times; "
                        "it was not tried again."
                    ),
                    {"attempts": max_attempts},
                )
            ),
        )
        again = list(expired.filter(attempts__lt=max_attempts).values_list("pk", flat=True))
        model.objects.filter(pk__in=again, status=Job.Status.RUNNING).update(
            status=Job.Status.QUEUED, progress=0.0
        )
        ids += again
    kinds = (
        dict(model.objects.filter(pk__in=ids).values_list("pk", "kind"))
        if any(f.name == "kind" for f in model._meta.fields)
        else {}
    )
    for job_id in ids:
        job_send(job_task(task_name, kinds.get(job_id)), job_id)
    return len(ids)


TASKS = {
    "analysisjob": RUN_ANALYSIS,
    "report": RUN_REPORT,
    "aggregatereconstruction": RUN_AGGREGATE_RECONSTRUCTION,
}
"""The task that runs each job model (by ``_meta.model_name``)."""


def _requeue_options() -> dict[str, Any]:
    from django.conf import settings

    return {
        "older_than_seconds": settings.JOBS_STUCK_AFTER_SECONDS,
        "lease_seconds": settings.JOBS_LEASE_SECONDS,
        "max_attempts": settings.JOBS_MAX_ATTEMPTS,
    }


def jobs_requeue_all_stuck() -> int:
    """:func:`jobs_requeue_stuck` for every job model (beat, a starting worker, the
    embedded default's first request)."""
    from django.apps import apps

    return sum(
        jobs_requeue_stuck(apps.get_model("reconstruction", name), task, **_requeue_options())
        for name, task in TASKS.items()
    )


def job_requeue_if_stale(job: J | None) -> J | None:
    """The embedded default (tasks in-process) has no worker to notice a job its dead
    process left ``running`` (or ``queued``): reading such a job past its lease
    (``JOBS_LEASE_SECONDS``; ``JOBS_STUCK_AFTER_SECONDS`` for ``queued``) runs it again
    here, or fails it after ``JOBS_MAX_ATTEMPTS``. With a broker, workers and beat do it."""
    from django.conf import settings

    if job is None or not settings.CELERY_TASK_ALWAYS_EAGER or job.status in Job.FINISHED:
        return job
    options = _requeue_options()
    now = timezone.now()
    if job.status == Job.Status.RUNNING:
        stale = bool(
            job.started_at and job.started_at < now - timedelta(seconds=options["lease_seconds"])
        )
    else:
        stale = job.created_at < now - timedelta(seconds=options["older_than_seconds"])
    if not stale:
        return job
    logger.warning("%s %s was left %s; running it again", type(job).__name__, job.pk, job.status)
    jobs_requeue_stuck(type(job), TASKS[job._meta.model_name], pks=[job.pk], **options)
    job.refresh_from_db()
    return job
