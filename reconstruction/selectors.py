"""Reads of the reconstruction app: jobs scoped to an organisation.

Views and the admin read jobs only through these functions (in the embedded default a
job its dead process left behind is run again when read: jobs.job_requeue_if_stale); the
answers themselves are read through :mod:`surveys.selectors` (and the SQL statistics there).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from consultations.models import Organisation
from reconstruction.jobs import job_requeue_if_stale
from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report
from surveys.models import Survey


def _pk(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def analysis_list(
    *,
    organisation: Organisation,
    survey: Any = None,
    kind: str | None = None,
    status: str | None = None,
) -> QuerySet[AnalysisJob]:
    """The organisation's analyses, newest first, optionally filtered."""
    queryset = AnalysisJob.objects.filter(organisation=organisation)
    if survey:
        queryset = queryset.filter(survey=survey)
    if kind:
        queryset = queryset.filter(kind=kind)
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-id")


def analysis_get(*, organisation: Organisation, pk: Any) -> AnalysisJob | None:
    pk = _pk(pk)
    job = AnalysisJob.objects.filter(pk=pk, organisation=organisation).first() if pk else None
    return job_requeue_if_stale(job)  # the embedded default's dead-process check


def report_get(*, organisation: Organisation, pk: Any) -> Report | None:
    pk = _pk(pk)
    report = Report.objects.filter(pk=pk, organisation=organisation).first() if pk else None
    return job_requeue_if_stale(report)


def report_get_for_staff(*, pk: Any) -> Report | None:
    """Any organisation's report (the admin site's staff download)."""
    pk = _pk(pk)
    return Report.objects.filter(pk=pk).first() if pk else None


def aggregate_reconstruction_get(
    *, organisation: Organisation, pk: Any
) -> AggregateReconstruction | None:
    pk = _pk(pk)
    if not pk:
        return None
    job = AggregateReconstruction.objects.filter(pk=pk, organisation=organisation).first()
    return job_requeue_if_stale(job)


def surveys_needing_report() -> QuerySet[Survey]:
    """Open surveys with no report queued or running (the scheduled refresh)."""
    busy = Report.objects.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).values(
        "survey_id"
    )
    return (
        Survey.objects.filter(status=Survey.Status.OPEN)
        .exclude(pk__in=busy)
        .select_related("consultation")
    )
