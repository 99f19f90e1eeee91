"""Webhooks: an organisation's URLs told when an analysis or a report finishes, or when a
survey's answers are purged.

A delivery is signed with the webhook's own secret (HMAC-SHA256 over the timestamp and
the body, webhooks/signing.py) and recorded with its status and attempts, so organisers
see in the admin whether their portal heard about a result.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from consultations.models import Organisation

EVENTS = ("analysis.finished", "report.finished", "survey.purged")


class Webhook(models.Model):
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="webhooks",
        verbose_name=_("organisation"),
    )
    url = models.URLField(max_length=500, verbose_name=_("url"))
    events = models.JSONField(
        help_text="Any of analysis.finished, report.finished, survey.purged.",
        verbose_name=_("events"),
    )
    # Kept in clear: the server must sign with it. Shown once at creation in the API.
    secret = models.CharField(max_length=64, editable=False)
    active = models.BooleanField(default=True, verbose_name=_("active"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("webhook")
        verbose_name_plural = _("webhooks")
        ordering = ["organisation", "id"]

    def __str__(self) -> str:
        # Shown in the admin (links, messages, screen readers' labels): the address, not
        # the API's event names (the admin shows those in plain words).
        return self.url


class Delivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    webhook = models.ForeignKey(
        Webhook, on_delete=models.CASCADE, related_name="deliveries", verbose_name=_("webhook")
    )
    event = models.CharField(max_length=32, verbose_name=_("event"))
    payload = models.JSONField()
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, verbose_name=_("status")
    )
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    response_status = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=_("response status")
    )
    error = models.TextField(blank=True)
    # The error as template + parameters where it has one (an unsafe URL at delivery time),
    # shown in the reader's language (error_text); ``error`` keeps the English text.
    error_message = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    delivered_at = models.DateTimeField(null=True, blank=True)
    # When the embedded default's sender (webhooks/sender.py) attempts it next.
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")]

    def __str__(self) -> str:
        # The address and when (the admin shows the event and status in plain words).
        when = f" ({self.created_at:%Y-%m-%d %H:%M})" if self.created_at else ""
        return f"{self.webhook.url}{when}"

    def error_text(self) -> str:
        """The delivery's error in the active language (as stored when it has no template)."""
        from core.messages import translate

        return translate(self.error_message) if self.error_message else self.error

    error_text.short_description = _("error")  # type: ignore[attr-defined]
