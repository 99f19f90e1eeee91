"""Webhooks in the admin: register URLs (the same checks as the API), see deliveries."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from consultations.admin_filters import labelled_filter
from core.messages import translate
from webhooks import services
from webhooks.models import EVENTS, Delivery, Webhook
from webhooks.urlcheck import UnsafeUrl, check_url

# Each event in the organiser's words (the stored and sent names are the API's, e.g.
# ``analysis.finished``): the form's boxes, the lists' columns and the deliveries' filter.
EVENT_LABELS = {
    "analysis.finished": _("An analysis has finished"),
    "report.finished": _("A report has finished"),
    "survey.purged": _("A survey's answers were deleted"),
}


def event_label(event: str) -> str:
    return str(EVENT_LABELS.get(event, event))


def events_label(events: Any) -> str:
    return "; ".join(event_label(e) for e in events) if isinstance(events, list) else ""


class WebhookForm(forms.ModelForm):
    url = forms.URLField(max_length=500, assume_scheme="https")
    events = forms.MultipleChoiceField(
        label=_("Tell this address when"),
        choices=[(e, EVENT_LABELS.get(e, e)) for e in EVENTS],
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = Webhook
        fields = ["organisation", "url", "events", "active"]

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        try:
            check_url(url)
        except UnsafeUrl as exc:
            raise forms.ValidationError(translate(exc)) from None
        return url


class DeliveryInline(admin.TabularInline):
    model = Delivery
    extra = 0
    can_delete = False
    fields = ["event_shown", "status_shown", "attempts", "response_status", "error_text",
              "created_at", "delivered_at"]  # fmt: skip
    readonly_fields = fields
    ordering = ["-created_at"]

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("event"))
    def event_shown(self, delivery: Delivery) -> str:
        return event_label(delivery.event)

    @admin.display(description=_("status"))
    def status_shown(self, delivery: Delivery) -> str:
        return delivery_status_label(delivery.status)


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    form = WebhookForm
    list_display = ["url", "organisation", "events_shown", "active", "created_at"]
    list_filter = ["active", "organisation"]
    readonly_fields = ["secret_for_receivers"]
    inlines = [DeliveryInline]

    @admin.display(description=_("secret (for verifying signatures)"))
    def secret_for_receivers(self, obj: Webhook) -> str:
        return obj.secret if obj.pk else _("generated when saved")

    @admin.display(description=_("events"))
    def events_shown(self, webhook: Webhook) -> str:
        return events_label(webhook.events)

    def save_model(self, request: Any, obj: Webhook, form: Any, change: bool) -> None:
        if not change:
            obj.secret = services.new_secret()
        super().save_model(request, obj, form, change)


# A delivery's status in the organiser's language (the model's choices are the API's words).
DELIVERY_STATUS = {"pending": _("waiting"), "succeeded": _("delivered"), "failed": _("failed")}


def delivery_status_label(status: str) -> str:
    return str(DELIVERY_STATUS.get(status, status))


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["event_shown", "webhook_shown", "status_shown", "attempts", "response_status",
                    "created_at"]  # fmt: skip
    list_filter = [
        ("status", labelled_filter(delivery_status_label)),
        ("event", labelled_filter(event_label, choices=False)),
    ]

    @admin.display(description=_("event"), ordering="event")
    def event_shown(self, delivery: Delivery) -> str:
        return event_label(delivery.event)

    @admin.display(description=_("webhook"), ordering="webhook__url")
    def webhook_shown(self, delivery: Delivery) -> str:
        return delivery.webhook.url

    @admin.display(description=_("status"), ordering="status")
    def status_shown(self, delivery: Delivery) -> str:
        return delivery_status_label(delivery.status)

    # Every field is shown through its organiser's label (no raw model field on the page).
    fields = readonly_fields = [
        "webhook_shown", "event_shown", "payload", "status_shown", "attempts", "response_status",
        "error_text", "created_at", "delivered_at",
    ]  # fmt: skip

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
