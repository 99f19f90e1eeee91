"""What every API view of this project shares: domain errors mapped to HTTP, roles.

Services raise :mod:`surveys.errors` exceptions that know nothing about HTTP; here they
become 400 / 404 / 409 with the project's error body ``{"detail", "errors"}``.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from consultations.models import ApiKey, Organisation
from consultations.permissions import HasApiKey, IsAnalyst
from surveys.errors import Conflict, InvalidInput, NotFound


class ConflictError(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with what is stored."
    default_code = "conflict"


def to_api_exception(exc: Exception) -> Exception:
    if isinstance(exc, InvalidInput):
        error = exceptions.ValidationError(exc.errors or {"non_field_errors": [exc.detail]})
        error.summary = exc.detail  # type: ignore[attr-defined]  (read by config.errors)
        return error
    if isinstance(exc, Conflict):
        return ConflictError({"detail": exc.detail, "errors": exc.errors})
    if isinstance(exc, NotFound):
        return exceptions.NotFound({"detail": exc.detail, "errors": exc.errors})
    return exc


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

    def handle_exception(self, exc: Exception) -> Response:
        return super().handle_exception(to_api_exception(exc))

    @property
    def organisation(self) -> Organisation:
        key: ApiKey = self.request.user  # type: ignore[assignment]
        return key.organisation

    @property
    def actor(self) -> str:
        return f"key:{self.request.user.prefix}"  # type: ignore[union-attr]

    def validated(self, serializer_class: type, data: Any, **kwargs: Any) -> dict[str, Any]:
        serializer = serializer_class(data=data, **kwargs)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def query(self, serializer_class: type, request: Request) -> dict[str, Any]:
        return self.validated(serializer_class, request.query_params)


def not_found(what: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"{what} not found.")
