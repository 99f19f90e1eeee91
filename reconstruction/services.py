"""Writes of the reconstruction app: creating and running background jobs."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import transaction

from consultations.models import Organisation
from consultations.services import audit_record
from reconstruction import analysis
from reconstruction.algorithms.methods import reconstruct, reconstruction_as_dict
from reconstruction.jobs import JobOutput, Progress, job_enqueue, job_execute
from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report
from surveys.models import Survey

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

    document, html, csv = build_report(report.survey, progress)
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
