from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from consultations.models import ApiKey


class HasApiKey(BasePermission):
    message = _("An API key is required: Authorization: Bearer <key>.")

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, ApiKey)


class IsAnalyst(HasApiKey):
    message = _("This needs an analyst key.")

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, ApiKey) and request.user.is_analyst
