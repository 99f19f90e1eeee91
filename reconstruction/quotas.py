"""Quotas on background work (issue 13, finding 3): rate limits per key, a cap per organisation.

- :class:`AnalysisRateThrottle`, :class:`ReportRateThrottle` and
  :class:`AggregateRateThrottle` limit how many jobs one API key may *start* per window
  (scopes ``analyses``, ``reports``, ``aggregate_reconstructions`` of
  ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``; env ``ANALYSIS_RATE_LIMIT``,
  ``REPORT_RATE_LIMIT``, ``AGGREGATE_RATE_LIMIT``). Polling a job's status is not
  limited. An exceeded limit is a 429 with ``Retry-After``.
- :func:`check_active_jobs` caps the jobs an organisation has ``queued`` or ``running``
  at once (``JOBS_MAX_ACTIVE_PER_ORGANISATION``): one organisation cannot fill the
  workers' queue for everybody else.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.request import Request

from consultations.models import Organisation
from consultations.throttling import SubmissionRateThrottle
from core.errors import QuotaExceeded


class JobRateThrottle(SubmissionRateThrottle):
    """The submissions' fixed-window counter, counting only requests that start a job.

    Exact: every request is added to the shared counter in the cache (Redis in
    production) at once, so the limit holds across gunicorn workers and processes, and
    clearing the cache resets it.
    """

    exact = True

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.method != "POST":
            return True
        return super().allow_request(request, view)


class AnalysisRateThrottle(JobRateThrottle):
    scope = "analyses"


class ReportRateThrottle(JobRateThrottle):
    scope = "reports"


class AggregateRateThrottle(JobRateThrottle):
    scope = "aggregate_reconstructions"


def active_jobs(organisation: Organisation) -> int:
    """Jobs of the organisation that are ``queued`` or ``running``, of every kind."""
    from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report

    active = (Job.Status.QUEUED, Job.Status.RUNNING)
    return sum(
        model.objects.filter(organisation=organisation, status__in=active).count()
        for model in (AnalysisJob, Report, AggregateReconstruction)
    )


def check_active_jobs(organisation: Organisation) -> None:
    """Refuse a new job when the organisation already has its cap of unfinished jobs.

    Call inside the transaction that creates the job; the organisation's row is locked
    so that concurrent requests of one organisation count one after the other.
    """
    limit = int(settings.JOBS_MAX_ACTIVE_PER_ORGANISATION)
    Organisation.objects.select_for_update().filter(pk=organisation.pk).first()
    if active_jobs(organisation) >= limit:
        raise QuotaExceeded(
            _(
                "Your organisation already has %(limit)s jobs queued or running, the most it "
                "may have at once (JOBS_MAX_ACTIVE_PER_ORGANISATION); retry when one has "
                "finished."
            )
            % {"limit": limit},
            retry_after=int(settings.JOBS_QUOTA_RETRY_SECONDS),
        )
