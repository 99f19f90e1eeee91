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
    #: Read-only fields of the resource's representation that a body may repeat, so that
    #: what GET returned can be edited and PUT back; they are ignored (the server sets
    #: them). Published in the request schema as ``readOnly``.
    repeatable_fields: tuple[str, ...] = ()
    unknown_field_message: Promise = gettext_lazy("Unknown field; this object has %(fields)s.")

    def to_internal_value(self, data: Any) -> Any:
        unknown: dict[str, list[str]] = {}
        if isinstance(data, Mapping):
            fields = self.fields  # type: ignore[attr-defined]
            known = sorted(name for name, field in fields.items() if not field.read_only)
            message = str(self.unknown_field_message) % {"fields": ", ".join(known)}
            repeatable = set(self.repeatable_fields)
            unknown = {
                str(name): [message]
                for name in data
                if name not in known and name not in repeatable
            }
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


class JSONNumberField(serializers.FloatField):
    """A number given as a JSON number: ``"0.5"`` and ``true`` are refused, not read as 0.5 / 1.

    DRF's ``FloatField`` reads any string ``float()`` takes and ``True`` as 1.0, so a
    client that quotes its numbers, or sends a flag where a count belongs, had its request
    run as if it were right; :class:`JSONIntegerField` already refuses a quoted integer,
    and question schemes (``surveys.schemes.is_number``) and condition thresholds refuse
    both. Integers are numbers: ``3`` is taken as 3.0.
    """

    default_error_messages = {
        "string": gettext_lazy("A valid number is required (a JSON number, not a string)."),
    }

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, str):
            self.fail("string")
        if isinstance(data, bool):
            self.fail("invalid")
        return float(super().to_internal_value(data))
