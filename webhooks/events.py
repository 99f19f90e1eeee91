"""Events a finished job emits to the organisation's webhooks.

Above both ``services`` (a delivery's attempts) and ``tasks`` (the Celery task that makes
them): creating the deliveries of an event and queueing them imports the task, and the task
imports the services, so neither imports the other.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from webhooks.models import Delivery, Webhook
from webhooks.tasks import deliver


def _event_of(job: Any) -> tuple[str, str] | None:
    name = type(job).__name__
    if name == "AnalysisJob":
        return "analysis.finished", f"/api/v1/analyses/{job.pk}/"
    if name == "Report":
        return "report.finished", f"/api/v1/reports/{job.pk}/"
    return None


def job_finished(job: Any) -> int:
    """Queue a delivery to every active webhook of the job's organisation that listens
    for its event; returns how many were queued."""
    found = _event_of(job)
    if found is None:
        return 0
    event, url = found
    hooks = [
        hook
        for hook in Webhook.objects.filter(organisation_id=job.organisation_id, active=True)
        if event in hook.events
    ]
    if not hooks:
        return 0
    data = {
        "id": job.pk,
        "status": job.status,
        "survey": getattr(job, "survey_id", None),
        "url": url,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
    if hasattr(job, "kind"):
        data["kind"] = job.kind
    created = [
        Delivery.objects.create(webhook=hook, event=event, payload={"event": event, "data": data})
        for hook in hooks
    ]
    for delivery in created:
        transaction.on_commit(lambda pk=delivery.pk: deliver.delay(pk))
    return len(created)
