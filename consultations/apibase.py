"""What every API view of this project shares: roles, the organisation, the audit actor.

Domain errors raised by the services become HTTP in one place,
:func:`config.errors.exception_handler`.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request

from consultations.actors import audit_actor
from consultations.models import ApiKey, Organisation
from consultations.permissions import HasApiKey, IsAnalyst


class ApiView(GenericAPIView):
    """Base view: read with any key of the organisation, write with an analyst key."""

    write_methods = frozenset({"POST", "PUT", "PATCH", "DELETE"})
    metadata_class = None  # OPTIONS answers 405: the OpenAPI schema describes the API
    analyst_writes = True
    pagination_class = None

    def get_permissions(self) -> list[Any]:
        if self.analyst_writes and self.request.method in self.write_methods:
            return [IsAnalyst()]
        return [HasApiKey()]

    @property
    def organisation(self) -> Organisation:
        key: ApiKey = self.request.user  # type: ignore[assignment]
        return key.organisation

    @property
    def actor(self) -> str:
        return audit_actor(self.request.user)

    def validated(self, serializer_class: type, data: Any, **kwargs: Any) -> dict[str, Any]:
        serializer = serializer_class(data=data, **kwargs)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def query(self, serializer_class: type, request: Request) -> dict[str, Any]:
        return self.validated(serializer_class, request.query_params)


def not_found(what: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"{what} not found.")
