"""Input and output shapes of the consultations API."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy
from rest_framework import serializers

from consultations.models import Consultation, PortalOrigin
from core.strict import JSONIntegerField, StrictFieldsMixin


class ErrorSerializer(serializers.Serializer):
    """Every 4xx answer: a one-line ``detail`` and ``errors`` naming fields or items."""

    detail = serializers.CharField()
    errors = serializers.DictField(child=serializers.JSONField(), required=False)
    code = serializers.CharField(
        required=False,
        help_text="A stable reason where a client acts on it: privacy_budget (409).",
    )


class ConsultationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Consultation
        fields = [
            "id",
            "title",
            "description",
            "min_responses",
            "min_cell",
            "privacy_budget",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class PrivacyBudgetField(serializers.FloatField):
    """A JSON number passed through as given: the service names a bad one (≤ 0, not
    finite) in its 400 with the rule, and a string or boolean is no number here."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise serializers.ValidationError(
                gettext_lazy("Must be a number (ε) or null for no cap.")
            )
        return data


class ConsultationInputSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = gettext_lazy("Unknown field; a consultation has %(fields)s.")
    repeatable_fields = ("id", "created_at", "updated_at")
    title = serializers.CharField(max_length=200)
    description = serializers.CharField(
        allow_blank=True, required=False, default="", max_length=20_000
    )
    min_responses = JSONIntegerField(
        min_value=Consultation.MIN_RESPONSES_FLOOR,
        max_value=1_000_000,
        required=False,
        default=Consultation.MIN_RESPONSES_FLOOR,
        help_text="Question-level disclosure threshold (at least 10).",
    )
    min_cell = JSONIntegerField(
        min_value=Consultation.MIN_CELL_FLOOR,
        max_value=1_000_000,
        required=False,
        default=Consultation.MIN_CELL_FLOOR,
        help_text="Option-level disclosure threshold (at least 5).",
    )
    privacy_budget = PrivacyBudgetField(
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "The most that all the consultation's surveys together may learn about one "
            "resident: ε of local differential privacy under sequential composition; null "
            "(the default) for no cap. Must be > 0 and finite. Once a survey has opened it "
            "can only be raised or removed. See docs/organisers/privacy-budget.md."
        ),
    )


class ConsultationFilterSerializer(serializers.Serializer):
    search = serializers.CharField(
        required=False, max_length=200, help_text="Case-insensitive match on the title."
    )


class PortalOriginSerializer(serializers.ModelSerializer):
    class Meta:
        model = PortalOrigin
        fields = ["id", "origin", "created_at"]
        read_only_fields = fields


class PortalOriginInputSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = gettext_lazy("Unknown field; a portal origin has %(fields)s.")
    # Checked by the service, which names a badly formed origin in its 400.
    origin = serializers.CharField(
        max_length=255,
        trim_whitespace=False,
        help_text="scheme://host[:port] of a portal page, e.g. https://www.leeds.gov.uk",
    )
