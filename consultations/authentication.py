"""``Authorization: Bearer <key>`` for portal and analyst keys."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from consultations.keys import hash_key, recently_verified, remember_verified
from consultations.models import ApiKey


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiKey, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _space, key = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        key = key.strip()
        prefix, dot, _secret = key.partition(".")
        if not dot or not prefix:
            raise exceptions.AuthenticationFailed(_("Malformed API key."))
        digest = hash_key(key)
        ttl = float(getattr(settings, "API_KEY_CACHE_SECONDS", 0))
        cached = recently_verified(digest) if ttl > 0 else None
        if cached is not None:
            return cached, cached
        # No ORDER BY (prefix is unique).
        found = list(
            ApiKey.objects.select_related("organisation").filter(prefix=prefix).order_by()[:1]
        )
        api_key = found[0] if found else None
        if api_key is None or not hmac.compare_digest(api_key.hashed_key, digest):
            raise exceptions.AuthenticationFailed(_("Invalid API key."))
        if api_key.revoked_at is not None:
            raise exceptions.AuthenticationFailed(_("This API key has been revoked."))
        if not api_key.is_usable():
            raise exceptions.AuthenticationFailed(_("This API key has expired."))
        if ttl > 0:
            remember_verified(digest, api_key, ttl=ttl)
        return api_key, api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
