"""Writes: register and remove webhooks, queue deliveries when a job finishes, attempt one.

The job runner calls :func:`job_finished` once when an analysis or a report reaches a
final status; each matching webhook gets a :class:`~webhooks.models.Delivery`, sent by
the Celery task ``webhooks.deliver`` (retries with exponential backoff, webhooks/tasks.py).
The payload names the job and where to read it, never a result: the receiver reads the
numbers with its own key, so a leaked delivery discloses nothing.
"""

from __future__ import annotations

import json
import secrets
import time

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from consultations.models import Organisation
from consultations.services import audit_record
from core.messages import translate
from webhooks import signing
from webhooks.models import EVENTS, Delivery, Webhook
from webhooks.urlcheck import UnsafeUrl, check_url, checked_target, post_pinned

TIMEOUT_SECONDS = 10
MAX_ATTEMPTS = 6


class WebhookInvalid(ValueError):
    def __init__(self, detail: str, errors: dict[str, list[str]]) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors


def webhook_create(
    *, organisation: Organisation, url: str, events: list[str], actor: str
) -> Webhook:
    """Register ``url`` for ``events``; refuses non-https and non-public URLs."""
    if not isinstance(url, str) or not url or len(url) > 500:
        raise WebhookInvalid(_("url: 1-500 characters."), {"url": [_("1-500 characters.")]})
    try:
        check_url(url)
    except UnsafeUrl as exc:
        raise WebhookInvalid(translate(exc), {"url": [translate(exc)]}) from None
    unknown = [e for e in events if e not in EVENTS] if isinstance(events, list) else events
    if not isinstance(events, list) or not events or unknown:
        message = _("events must be a non-empty list of %(events)s; got %(unknown)s.") % {
            "events": ", ".join(EVENTS),
            "unknown": repr(unknown),
        }
        raise WebhookInvalid(message, {"events": [message]})
    with transaction.atomic():
        webhook = Webhook.objects.create(
            organisation=organisation,
            url=url,
            events=sorted(set(events)),
            secret=new_secret(),
        )
        audit_record(
            organisation=organisation,
            actor=actor,
            action="webhook.create",
            target=str(webhook.pk),
            details={"events": webhook.events},
        )
    return webhook


def new_secret() -> str:
    return secrets.token_hex(32)


def webhook_delete(*, webhook: Webhook, actor: str) -> None:
    with transaction.atomic():
        audit_record(
            organisation=webhook.organisation,
            actor=actor,
            action="webhook.delete",
            target=str(webhook.pk),
        )
        webhook.delete()


def delivery_attempt(delivery_id: int) -> bool | None:
    """One attempt at a delivery. True: delivered; False: failed, worth retrying; None:
    nothing to do (already finished) or a permanent failure (unsafe URL now)."""
    delivery = Delivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != Delivery.Status.PENDING:
        return None
    webhook = delivery.webhook
    attempts = delivery.attempts + 1
    try:
        target = checked_target(webhook.url)
    except UnsafeUrl as exc:
        Delivery.objects.filter(pk=delivery_id).update(
            status=Delivery.Status.FAILED,
            attempts=attempts,
            error=str(exc),
            error_message=exc.message.as_json(),  # read in the organiser's language
        )
        return None
    body = json.dumps({**delivery.payload, "delivery": delivery.pk}, sort_keys=True).encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "consultations-webhooks/1",
        "X-Webhook-Event": delivery.event,
        "X-Webhook-Delivery": str(delivery.pk),
        "X-Webhook-Timestamp": str(timestamp),
        "X-Webhook-Signature": signing.signature(webhook.secret, timestamp, body),
    }
    timeout = float(getattr(settings, "WEBHOOKS_TIMEOUT_SECONDS", TIMEOUT_SECONDS))
    try:
        # To the address just checked, never resolved again (no DNS-rebinding window).
        response = post_pinned(target, data=body, headers=headers, timeout=timeout)
    except requests.RequestException as exc:
        Delivery.objects.filter(pk=delivery_id).update(
            attempts=attempts, error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        return False
    if 200 <= response.status_code < 300:
        Delivery.objects.filter(pk=delivery_id).update(
            status=Delivery.Status.SUCCEEDED,
            attempts=attempts,
            response_status=response.status_code,
            error="",
            delivered_at=timezone.now(),
        )
        return True
    Delivery.objects.filter(pk=delivery_id).update(
        attempts=attempts,
        response_status=response.status_code,
        error=f"HTTP {response.status_code}",
    )
    return False


def delivery_give_up(delivery_id: int) -> None:
    Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.PENDING).update(
        status=Delivery.Status.FAILED
    )


def backoff_seconds(retries: int) -> int:
    """Exponential backoff between attempts: 10 s, 20 s, 40 s, ... capped at 30 minutes."""
    return int(min(1800, 10 * 2**retries))
