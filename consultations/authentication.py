"""``Authorization: Bearer <key>`` for portal and analyst keys."""

from __future__ import annotations

import hmac

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from consultations.models import ApiKey
from consultations.services import hash_key


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKey, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, key = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        key = key.strip()
        prefix, dot, _secret = key.partition(".")
        if not dot or not prefix:
            raise exceptions.AuthenticationFailed("Malformed API key.")
        # No ORDER BY (prefix is unique): this runs on every request.
        found = list(
            ApiKey.objects.select_related("organisation").filter(prefix=prefix).order_by()[:1]
        )
        api_key = found[0] if found else None
        if api_key is None or not hmac.compare_digest(api_key.hashed_key, hash_key(key)):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        if api_key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API key has been revoked.")
        if not api_key.is_usable():
            raise exceptions.AuthenticationFailed("This API key has expired.")
        return api_key, api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
