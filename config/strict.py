"""Request fields that refuse what DRF would silently drop or convert.

DRF drops unknown keys of a request object and reads ``"20"`` as 20; the API parses JSON
only (``config.parsers.GuardedJSONParser``), so either is a client bug that would run
something other than what was asked for. Every request body of the API (and each nested
object it takes) uses :class:`StrictFieldsMixin`; the OpenAPI schema marks those objects
``additionalProperties: false`` (``config.schema.AutoSchema``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy
from rest_framework import serializers


class StrictFieldsMixin:
    """Refuse fields a request object does not have, at its own nesting level.

    DRF drops unknown keys silently, so a misspelt ``mni`` in a quota, a ``label`` or a
    ``strata`` meant for another object would run a different analysis than the one
    asked for. Each unknown key gets its own error, next to the fields' other errors,
    saying what the object has (as ``surveys.schemes`` does for questions).
    """

    #: Read by ``config.schema.AutoSchema``: the request object is ``additionalProperties: false``.
    refuses_unknown_fields = True
    unknown_field_message: Promise = gettext_lazy("Unknown field; this object has %(fields)s.")

    def to_internal_value(self, data: Any) -> Any:
        unknown: dict[str, list[str]] = {}
        if isinstance(data, Mapping):
            fields = self.fields  # type: ignore[attr-defined]
            known = sorted(name for name, field in fields.items() if not field.read_only)
            message = str(self.unknown_field_message) % {"fields": ", ".join(known)}
            unknown = {str(name): [message] for name in data if name not in known}
        try:
            value = super().to_internal_value(data)  # type: ignore[misc]
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **unknown}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class JSONIntegerField(serializers.IntegerField):
    """An integer given as a JSON number: ``"20"`` is refused, not read as 20.

    The API parses JSON only (``config.parsers.GuardedJSONParser``) and api.md gives sizes,
    seeds, bounds and survey ids as JSON numbers; a string there is a client bug that DRF's
    form-friendly ``IntegerField`` would hide. Whole floats (``20.0``) stay accepted, as
    JSON does not tell them apart from integers in every client.
    """

    default_error_messages = {
        "string": gettext_lazy("A valid integer is required (a JSON number, not a string)."),
    }

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str):
            self.fail("string")
        return int(super().to_internal_value(data))
