"""Writes: register and remove webhooks, attempt a delivery, send the due ones.

The job runner calls :func:`webhooks.events.job_finished` once when an analysis or a
report reaches a final status; each matching webhook gets a
:class:`~webhooks.models.Delivery`, queued,
never sent in the job: with a broker, the Celery task ``webhooks.deliver`` in the
``webhooks`` lane sends it (retries with exponential backoff, webhooks/tasks.py); in the
embedded default, a background thread of the process (webhooks/sender.py) sends the due
deliveries (:func:`deliveries_send_due`). An organisation has at most
``WEBHOOKS_MAX_PENDING_PER_ORGANISATION`` deliveries waiting; more are recorded as not
sent. Every network failure is stored with the same text (:data:`UNREACHABLE`), so a
delivery's error never tells an open port from a closed one or a TLS failure.
The payload names the job and where to read it, never a result: the receiver reads the
numbers with its own key, so a leaked delivery discloses nothing.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import datetime, timedelta

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from consultations.models import Organisation
from consultations.services import audit_record
from core.messages import translate
from privacy.mechanisms.messages import Message
from webhooks import signing
from webhooks.models import EVENTS, Delivery, Webhook
from webhooks.urlcheck import UnsafeUrl, check_url, checked_target, post_pinned

TIMEOUT_SECONDS = 10
MAX_ATTEMPTS = 6
DELIVER = "webhooks.deliver"  # the Celery task (webhooks/tasks.py)

UNREACHABLE = Message(gettext_noop("The receiver could not be reached."))
"""Every network failure's text: refused, timed out, reset or a failed TLS handshake alike
(telling them apart would let an organisation map ports and services it cannot reach)."""


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
    except (requests.RequestException, OSError):
        # One text for every network failure (UNREACHABLE); the cause is not logged either.
        Delivery.objects.filter(pk=delivery_id).update(
            attempts=attempts, error=str(UNREACHABLE), error_message=UNREACHABLE.as_json()
        )
        return False
    if 200 <= response.status_code < 300:
        Delivery.objects.filter(pk=delivery_id).update(
            status=Delivery.Status.SUCCEEDED,
            attempts=attempts,
            response_status=response.status_code,
            error="",
            error_message=None,
            delivered_at=timezone.now(),
        )
        return True
    Delivery.objects.filter(pk=delivery_id).update(
        attempts=attempts,
        response_status=response.status_code,
        error=f"HTTP {response.status_code}",
        error_message=None,
    )
    return False


def deliveries_send_due(now: datetime | None = None, *, limit: int = 100) -> int:
    """Attempt each pending delivery whose next attempt is due (the embedded default's
    sender, webhooks/sender.py): a failed attempt is due again after
    :func:`backoff_seconds`, and given up after ``MAX_ATTEMPTS``. Returns how many were
    attempted."""
    now = now or timezone.now()
    due = list(
        Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    for delivery_id in due:
        if delivery_attempt(delivery_id) is not False:
            continue
        attempts = Delivery.objects.filter(pk=delivery_id).values_list("attempts", flat=True)
        done = next(iter(attempts), MAX_ATTEMPTS)
        if done >= MAX_ATTEMPTS:
            delivery_give_up(delivery_id)
        else:
            Delivery.objects.filter(pk=delivery_id).update(
                next_attempt_at=now + timedelta(seconds=backoff_seconds(done - 1))
            )
    return len(due)


def delivery_give_up(delivery_id: int) -> None:
    Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.PENDING).update(
        status=Delivery.Status.FAILED
    )


def backoff_seconds(retries: int) -> int:
    """Exponential backoff between attempts: 10 s, 20 s, 40 s, ... capped at 30 minutes."""
    return int(min(1800, 10 * 2**retries))
