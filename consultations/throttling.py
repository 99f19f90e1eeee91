"""Per-key rate limit on submissions (scope ``submissions``).

A fixed-window counter in the cache (Redis in production): one atomic ``incr`` per
request, keyed by the API key's prefix. DRF's ``SimpleRateThrottle`` keeps a list of
every request's timestamp instead, which at the rates portals submit (hundreds per
second) costs more than the request itself. Nothing about the caller's address is used.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from consultations.models import ApiKey

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``"100/minute"`` -> ``(100, 60)``."""
    number, _, period = rate.partition("/")
    return int(number), _PERIODS[period.strip()[0]]


def _count(key: str, timeout: int) -> int:
    """Increment the window's counter and return it (one Redis round trip, two per window)."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        full_key = cache.make_and_validate_key(key)
        client = cache._cache.get_client(full_key, write=True)
        count = int(client.incr(full_key))
        if count == 1:  # the window's first request starts its expiry
            client.expire(full_key, timeout)
        return count
    cache.add(key, 0, timeout=timeout)
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=timeout)
        return 1


class SubmissionRateThrottle(BaseThrottle):
    scope = "submissions"

    def __init__(self) -> None:
        self.wait_seconds: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
        user = request.user
        if not rate or not isinstance(user, ApiKey):
            return True
        limit, period = parse_rate(rate)
        now = time.time()
        window = int(now // period)
        count = _count(f"throttle:{self.scope}:{user.prefix}:{window}", period + 1)
        if count > limit:
            self.wait_seconds = (window + 1) * period - now
            return False
        return True

    def wait(self) -> float | None:
        return self.wait_seconds
