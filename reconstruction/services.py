"""Writes of the reconstruction app: creating jobs and computing them.

Each ``*_create`` service stores a job and queues its task by name once the
transaction commits (:func:`reconstruction.jobs.job_enqueue`); each ``*_run`` service
is what the task calls with the id, through the job runner
(:func:`reconstruction.jobs.job_execute`). What an analysis computes is its kind's
module in :mod:`reconstruction.kinds`, run by :mod:`reconstruction.pipeline`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.template.loader import render_to_string
from django.utils.translation import gettext_noop

from consultations.models import Organisation
from consultations.services import audit_record
from privacy.mechanisms.messages import Message
from reconstruction import auditing, pipeline, selectors
from reconstruction.algorithms.methods import reconstruct, reconstruction_as_dict
from reconstruction.analysis import AnalysisInputError
from reconstruction.jobs import (
    RUN_AGGREGATE_RECONSTRUCTION,
    RUN_ANALYSIS,
    RUN_REPORT,
    JobOutput,
    JobRefused,
    Progress,
    job_enqueue,
    job_execute,
    job_fail,
)
from reconstruction.kinds.base import ATTACHMENT_KEY, probabilities_url
from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report
from reconstruction.quotas import check_active_jobs
from surveys import retention
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
    check_active_jobs(organisation)
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
    job_enqueue(job, RUN_AGGREGATE_RECONSTRUCTION)
    return job


def _compute_aggregate(job: AggregateReconstruction, progress: Progress) -> dict[str, Any]:
    progress(0.1)
    result = reconstruct(np.asarray(job.counts, dtype=np.float64), job.channel, method=job.method)
    return reconstruction_as_dict(result)


def aggregate_reconstruction_run(*, job_id: int) -> AggregateReconstruction | None:
    return job_execute(AggregateReconstruction, job_id, _compute_aggregate)


# --------------------------------------------------------------------------- analyses


def _audit_details(spec: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "kind", "attribute", "where", "method", "size", "seed", "strata",
        "quotas", "reserves", "objective", "max_outside", "after", "after_attribute", "panel",
    )  # fmt: skip
    return {key: spec[key] for key in keep if key in spec}


def analysis_create(
    *, organisation: Organisation, survey: Survey, spec: dict[str, Any], requested_by: str
) -> AnalysisJob:
    """Validate an analysis against the survey's schema and response counts; queue it.

    No fit runs here (a few rows of response tallies): what needs a fit is decided by the
    worker, which ends the job ``refused`` when disclosure control forbids the result.
    A request that cannot be answered raises
    :class:`reconstruction.analysis.AnalysisInputError` and creates no job; the
    refusal is still written to the audit trail (who asked what).
    """
    spec = {**spec, "survey": survey.pk}
    try:
        pipeline.validate_request(survey, spec)
    except AnalysisInputError as exc:
        audit_record(
            organisation=organisation,
            actor=requested_by,
            action="analysis.refused",
            target=f"survey {survey.pk}",
            details={**_audit_details(spec), "reason": str(exc)},
        )
        raise
    with transaction.atomic():
        check_active_jobs(organisation)
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
        job_enqueue(job, RUN_ANALYSIS)
    return job


def _compute_analysis(job: AnalysisJob, progress: Progress) -> dict[str, Any]:
    """The worker's one entry point for an analysis: the stored request parsed and
    checked again, then its kind's gather -> fit -> publish (:func:`pipeline.compute`),
    then the query audit and the store."""
    request = pipeline.validate_request(job.survey, job.spec, count=False)
    try:
        payload = pipeline.compute(request, progress)
        attachment = payload.pop(ATTACHMENT_KEY, None)
        if attachment is not None:  # a panel's selection probabilities (CSV download)
            AnalysisJob.objects.filter(pk=job.pk).update(attachment=attachment)
            payload["probabilities_url"] = probabilities_url(job.pk)
        # Query auditing (issue 13): judged with the published results, stored atomically.
        auditing.publish(job, request, payload)
        return payload
    except JobRefused as exc:
        audit_record(
            organisation=job.organisation,
            actor=job.requested_by,
            action="analysis.refused",
            target=f"survey {job.survey_id}, analysis {job.pk}",
            details={**_audit_details(dict(job.spec)), "reason": exc.reason},
        )
        raise


def analysis_run(*, job_id: int) -> AnalysisJob | None:
    return job_execute(AnalysisJob, job_id, _compute_analysis)


def analysis_cancel(*, job: AnalysisJob, requested_by: str) -> AnalysisJob:
    """Cancel an unfinished analysis: it ends ``failed`` with the reason at once.

    A queued job is then never run (finished jobs are left alone); a running one stops at
    its next progress report (:class:`reconstruction.jobs.JobCancelled`). A finished job
    is returned unchanged.
    """
    if job.status not in Job.FINISHED:
        job_fail(
            AnalysisJob,
            job.pk,
            Message(gettext_noop("Cancelled by %(who)s."), {"who": requested_by}),
        )
        audit_record(
            organisation=job.organisation,
            actor=requested_by,
            action="analysis.cancel",
            target=f"survey {job.survey_id}, analysis {job.pk}",
            details={"kind": job.kind},
        )
    job.refresh_from_db()
    return job


# --------------------------------------------------------------------------- reports


@transaction.atomic
def report_create(*, organisation: Organisation, survey: Survey, requested_by: str) -> Report:
    retention.require_not_purged([survey])  # 410 naming the purge date
    check_active_jobs(organisation)
    report = Report.objects.create(
        organisation=organisation, survey=survey, requested_by=requested_by
    )
    audit_record(
        organisation=organisation,
        actor=requested_by,
        action="report.create",
        target=f"survey {survey.pk}, report {report.pk}",
    )
    job_enqueue(report, RUN_REPORT)
    return report


def _compute_report(report: Report, progress: Progress) -> JobOutput:
    from reconstruction.reports import build_report

    retention.require_not_purged([report.survey])  # purged after it was queued: fails
    document, sections, csv = build_report(report.survey, progress)
    from reconstruction.presentation import change_sections, report_renderings

    html = render_to_string(
        "reconstruction/report.html",
        {
            "report": document,
            "sections": sections,
            "changes": change_sections(document),
            "language": settings.LANGUAGE_CODE,
        },
    )

    renderings = report_renderings(document, report.organisation.languages)
    return JobOutput(result=document, fields={"html": html, "csv": csv, "renderings": renderings})


def report_run(*, job_id: int) -> Report | None:
    return job_execute(Report, job_id, _compute_report)


def reports_refresh_open_surveys() -> int:
    """Queue a fresh report for every open survey that has none under way (Celery beat)."""
    created = 0
    for survey in selectors.surveys_needing_report():
        report_create(
            organisation=survey.consultation.organisation, survey=survey, requested_by="schedule"
        )
        created += 1
    return created
