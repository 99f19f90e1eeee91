"""Writes of the reconstruction app: creating and running background jobs.

The job runner (:func:`job_execute`) owns each job's state machine: idempotent,
progress-reporting, failing readably. Celery tasks call the ``*_run`` services with
an id and own only the retry policy for transient errors (``reconstruction/tasks.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from consultations.models import Organisation
from consultations.services import audit_record
from reconstruction import analysis
from reconstruction.algorithms.methods import reconstruct, reconstruction_as_dict
from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report
from surveys.models import Survey

# --------------------------------------------------------------------------- job runner

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
    from reconstruction.tasks import TRANSIENT_ERRORS  # the tasks module imports this one

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


# --------------------------------------------------------------------------- aggregate


@transaction.atomic
def aggregate_reconstruction_create(
    *,
    organisation: Organisation,
    requested_by: str,
    counts: list[float],
    channel: list[list[float]],
    method: str,
) -> AggregateReconstruction:
    """Store the request and queue its job once the transaction commits.

    Inputs are validated by the caller (the serializer runs the engine's own
    checks), so a stored job always has computable input.
    """
    job = AggregateReconstruction.objects.create(
        organisation=organisation,
        requested_by=requested_by,
        counts=counts,
        channel=channel,
        method=method,
    )
    audit_record(
        organisation=organisation,
        actor=requested_by,
        action="aggregate_reconstruction.create",
        target=f"job {job.pk}",
        details={"method": method, "k": len(counts)},
    )
    from reconstruction.tasks import run_aggregate_reconstruction

    job_enqueue(job, run_aggregate_reconstruction)
    return job


def _compute_aggregate(job: AggregateReconstruction, progress: Progress) -> dict[str, Any]:
    progress(0.1)
    result = reconstruct(np.asarray(job.counts, dtype=np.float64), job.channel, method=job.method)
    return reconstruction_as_dict(result)


def aggregate_reconstruction_run(*, job_id: int) -> AggregateReconstruction | None:
    return job_execute(AggregateReconstruction, job_id, _compute_aggregate)


# --------------------------------------------------------------------------- analyses


def _audit_details(spec: dict[str, Any]) -> dict[str, Any]:
    keep = ("kind", "attribute", "where", "method", "size", "seed", "strata")
    return {key: spec[key] for key in keep if key in spec}


def analysis_create(
    *, organisation: Organisation, survey: Survey, spec: dict[str, Any], requested_by: str
) -> AnalysisJob:
    """Validate an analysis against the data, then store and queue it.

    A request that cannot be answered or published raises
    :class:`reconstruction.analysis.AnalysisInputError` and creates no job; the
    refusal is still written to the audit trail (who asked what).
    """
    spec = {**spec, "survey": survey.pk}
    try:
        analysis.precheck(analysis.prepare(survey, spec))
    except analysis.AnalysisInputError as exc:
        audit_record(
            organisation=organisation,
            actor=requested_by,
            action="analysis.refused",
            target=f"survey {survey.pk}",
            details={**_audit_details(spec), "reason": str(exc)},
        )
        raise
    with transaction.atomic():
        job = AnalysisJob.objects.create(
            organisation=organisation,
            requested_by=requested_by,
            survey=survey,
            kind=spec["kind"],
            spec=spec,
        )
        audit_record(
            organisation=organisation,
            actor=requested_by,
            action="analysis.create",
            target=f"survey {survey.pk}, analysis {job.pk}",
            details=_audit_details(spec),
        )
        from reconstruction.tasks import run_analysis

        job_enqueue(job, run_analysis)
    return job


def _compute_analysis(job: AnalysisJob, progress: Progress) -> dict[str, Any]:
    # The data may have changed since the request (withdrawals): check again.
    prepared = analysis.prepare(job.survey, job.spec)
    analysis.precheck(prepared)
    progress(0.1)
    return analysis.run(prepared, progress)


def analysis_run(*, job_id: int) -> AnalysisJob | None:
    return job_execute(AnalysisJob, job_id, _compute_analysis)


# --------------------------------------------------------------------------- reports


@transaction.atomic
def report_create(*, organisation: Organisation, survey: Survey, requested_by: str) -> Report:
    report = Report.objects.create(
        organisation=organisation, survey=survey, requested_by=requested_by
    )
    audit_record(
        organisation=organisation,
        actor=requested_by,
        action="report.create",
        target=f"survey {survey.pk}, report {report.pk}",
    )
    from reconstruction.tasks import run_report

    job_enqueue(report, run_report)
    return report


def _compute_report(report: Report, progress: Progress) -> JobOutput:
    from reconstruction.reports import build_report

    document, sections, csv = build_report(report.survey, progress)
    html = render_to_string(
        "reconstruction/report.html", {"report": document, "sections": sections}
    )
    return JobOutput(result=document, fields={"html": html, "csv": csv})


def report_run(*, job_id: int) -> Report | None:
    return job_execute(Report, job_id, _compute_report)


def reports_refresh_open_surveys() -> int:
    """Queue a fresh report for every open survey that has none under way (Celery beat)."""
    busy = Report.objects.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).values(
        "survey_id"
    )
    created = 0
    for survey in (
        Survey.objects.filter(status=Survey.Status.OPEN)
        .exclude(pk__in=busy)
        .select_related("consultation")
    ):
        report_create(
            organisation=survey.consultation.organisation, survey=survey, requested_by="schedule"
        )
        created += 1
    return created
