"""Events a finished job, or a purge of a survey's answers, emits to the organisation's
webhooks.

Above both ``services`` (a delivery's attempts) and ``tasks`` (the Celery task that makes
them): creating the deliveries of an event and queueing them imports the task, and the task
imports the services, so neither imports the other.

A finished job only queues its deliveries, never sends one (docs/operators/webhooks.md):
with a broker they go to the ``webhooks`` lane's workers; in the embedded default (tasks
in-process) to the process's sender thread (``webhooks/sender.py``). An organisation has at
most ``WEBHOOKS_MAX_PENDING_PER_ORGANISATION`` deliveries waiting; further ones are
recorded as not sent, with the reason.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from webhooks import sender
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
    data = {
        "id": job.pk,
        "status": job.status,
        "survey": getattr(job, "survey_id", None),
        "url": url,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
    if hasattr(job, "kind"):
        data["kind"] = job.kind
    return _announce(job.organisation_id, event, data)


def survey_purged(survey: Any, reason: str) -> int:
    """Queue ``survey.purged`` to the organisation's webhooks that listen for it (the
    purge's own transaction; :func:`surveys.retention.survey_purge` calls it through the
    listener that ``config`` registers); returns how many were queued."""
    data = {
        "survey": survey.pk,
        "url": f"/api/v1/surveys/{survey.pk}/",
        "purged_at": survey.purged_at.isoformat() if survey.purged_at else None,
        "reason": reason,
    }
    return _announce(survey.consultation.organisation_id, "survey.purged", data)


def _announce(organisation_id: int, event: str, data: dict[str, Any]) -> int:
    hooks = [
        hook
        for hook in Webhook.objects.filter(organisation_id=organisation_id, active=True)
        if event in hook.events
    ]
    if not hooks:
        return 0
    cap = int(settings.WEBHOOKS_MAX_PENDING_PER_ORGANISATION)
    waiting = Delivery.objects.filter(
        webhook__organisation_id=organisation_id, status=Delivery.Status.PENDING
    ).count()
    now = timezone.now()
    created = []
    for hook in hooks:
        payload = {"event": event, "data": data}
        if waiting >= cap:
            reason = Message(
                gettext_noop(
                    "Not sent: %(count)s deliveries of this organisation were still waiting "
                    "(WEBHOOKS_MAX_PENDING_PER_ORGANISATION)."
                ),
                {"count": waiting},
            )
            Delivery.objects.create(
                webhook=hook,
                event=event,
                payload=payload,
                status=Delivery.Status.FAILED,
                error=str(reason),
                error_message=reason.as_json(),
            )
            continue
        created.append(
            Delivery.objects.create(webhook=hook, event=event, payload=payload, next_attempt_at=now)
        )
        waiting += 1
    for delivery in created:
        transaction.on_commit(lambda pk=delivery.pk: delivery_queue(pk))
    return len(created)


def delivery_queue(delivery_id: int) -> None:
    """Hand a queued delivery to what sends it, outside the job that finished: the
    ``webhooks`` lane's workers, or in the embedded default this process's sender thread
    (an in-process Celery task would run inside the job)."""
    if current_app.conf.task_always_eager:
        sender.wake()
        return
    deliver.delay(delivery_id)
