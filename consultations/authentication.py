"""``Authorization: Bearer <key>`` for portal and analyst keys."""

from __future__ import annotations

import hmac
import threading
import time

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from consultations.models import ApiKey
from consultations.services import hash_key

# Keys verified recently, by the hash of the whole key: every submission authenticates, and
# a database round trip per request is a large share of its cost. A revocation or expiry is
# seen at once by this process (the revoke service forgets the key) and within
# API_KEY_CACHE_SECONDS by the others.
_verified: dict[str, tuple[float, ApiKey]] = {}
_verified_lock = threading.Lock()


def forget_verified_keys(prefix: str | None = None) -> None:
    with _verified_lock:
        for digest in [d for d, (_, k) in _verified.items() if prefix in (None, k.prefix)]:
            _verified.pop(digest, None)


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
        cached = _verified.get(digest) if ttl > 0 else None
        if cached is not None and cached[0] > time.monotonic() and cached[1].is_usable():
            return cached[1], cached[1]
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
            with _verified_lock:
                if len(_verified) > 10_000:
                    _verified.clear()
                _verified[digest] = (time.monotonic() + ttl, api_key)
        return api_key, api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
