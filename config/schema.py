"""The OpenAPI schema generator: drf-spectacular's, saying which request objects are closed.

drf-spectacular leaves ``additionalProperties`` out of every object, which reads as "other
keys allowed". The API refuses unknown keys in every request body and in each object nested
in one (``core.strict.StrictFieldsMixin``; questions and responses are checked by
``surveys.schemes`` with the same rule), so those request objects are published with
``additionalProperties: false``: a client generated from the schema, or a validator run
against it, refuses what the server would refuse.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema


class AutoSchema(SpectacularAutoSchema):
    def _map_serializer(
        self, serializer: Any, direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and getattr(serializer, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
            # Read-only fields a body may repeat from GET (ignored by the server).
            properties = schema.setdefault("properties", {})
            for name in getattr(serializer, "repeatable_fields", ()):
                properties.setdefault(
                    name,
                    {
                        "readOnly": True,
                        "description": "Ignored: may be repeated from the representation "
                        "read with GET, so that it can be edited and sent back.",
                    },
                )
        return schema
