"""What every API view of this project shares: roles, the organisation, the audit actor.

Domain errors raised by the services become HTTP in one place,
:func:`config.errors.exception_handler`.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy
from rest_framework import exceptions
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request

from consultations.actors import audit_actor
from consultations.models import ApiKey, Organisation
from consultations.permissions import HasApiKey, IsAnalyst


class ApiView(GenericAPIView):
    """Base view: analyst keys only, unless the view lists methods a portal key may use.

    A portal key sits in a public web page, so it may do only what a resident needs:
    read an open survey's scheme, submit, withdraw (``portal_methods``).
    """

    metadata_class = None  # OPTIONS answers 405: the OpenAPI schema describes the API
    portal_methods: frozenset[str] = frozenset()
    pagination_class = None

    def get_permissions(self) -> list[Any]:
        if self.request.method in self.portal_methods:
            return [HasApiKey()]
        return [IsAnalyst()]

    @property
    def is_portal(self) -> bool:
        key: ApiKey = self.request.user  # type: ignore[assignment]
        return not key.is_analyst

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


NOT_FOUND_MESSAGES = {
    "Consultation": gettext_lazy("Consultation not found."),
    "Portal origin": gettext_lazy("Portal origin not found."),
    "Survey": gettext_lazy("Survey not found."),
    "Webhook": gettext_lazy("Webhook not found."),
}


def not_found(what: str) -> exceptions.NotFound:
    message = NOT_FOUND_MESSAGES.get(what)
    return exceptions.NotFound(str(message) if message is not None else f"{what} not found.")
