"""Per-key rate limit on submissions (scope ``submissions``).

A fixed-window counter in the cache (Redis in production), keyed by the API key's
prefix. DRF's ``SimpleRateThrottle`` keeps a list of every request's timestamp instead,
which at the rates portals submit (hundreds per second) costs more than the request
itself. A synchronous round trip per request still cost about a quarter of a
submission's latency, so each process counts locally and adds its count to the shared
counter every ``limit // 100`` requests or every 0.2 s, whichever comes first: small
limits stay exact (a batch of 1), large ones may be exceeded by at most one batch per
process. Nothing about the caller's address is used.

Limits on *starting jobs* (reconstruction/quotas.py: analyses, reports, aggregate
reconstructions) are few per minute and must hold across gunicorn workers exactly: they
pass ``exact=True`` and add every request to the shared counter (no per-process state,
so clearing the cache resets them too).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from consultations.models import ApiKey

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``"100/minute"`` -> ``(100, 60)``."""
    number, _, period = rate.partition("/")
    return int(number), _PERIODS[period.strip()[0]]


SYNC_SECONDS = 0.2

# window key -> [requests not yet added to the shared counter, shared count, last sync]
_local: dict[str, list[float]] = {}
_local_lock = threading.Lock()


_redis_clients: dict[str, redis.Redis] = {}


def _redis(url: str) -> redis.Redis:
    """A redis-py client of ``CACHE_URL`` (one connection pool per process and URL)."""
    client = _redis_clients.get(url)
    if client is None:
        client = _redis_clients[url] = redis.Redis.from_url(url)
    return client


def _add(key: str, amount: int, timeout: int) -> int:
    """Add to the window's shared counter and return it (one round trip)."""
    url = getattr(settings, "CACHE_URL", "")
    if url.startswith(("redis://", "rediss://", "unix://")):
        # INCRBY and EXPIRE NX in one pipelined round trip: Django's cache API has no
        # atomic add-and-read that creates the key, and its Redis client is private.
        pipeline = _redis(url).pipeline(transaction=False)
        pipeline.incrby(f"consultations:{key}", amount)
        pipeline.expire(f"consultations:{key}", timeout, nx=True)
        count, _ = pipeline.execute()
        return int(count)
    cache = caches["default"]
    cache.add(key, 0, timeout=timeout)
    try:
        return int(cache.incr(key, amount))
    except ValueError:  # expired between add and incr
        cache.add(key, amount, timeout=timeout)
        return amount


def _count(key: str, timeout: int, limit: int, *, exact: bool = False) -> int:
    """This window's request count as far as this process knows (this request included).

    ``exact``: add this request to the shared counter now and return the shared count
    (every worker sees every request; nothing is kept in the process).
    """
    if exact:
        return _add(key, 1, timeout)
    batch = max(1, limit // 100)
    now = time.monotonic()
    with _local_lock:
        entry = _local.get(key)
        if entry is None:
            if len(_local) > 10_000:  # old windows of many keys
                _local.clear()
            entry = _local[key] = [0, 0, 0.0]
        entry[0] += 1
        if entry[2] and entry[0] < batch and now - entry[2] < SYNC_SECONDS:
            return int(entry[1] + entry[0])
        pending, entry[0], entry[2] = int(entry[0]), 0, now
    shared = _add(key, pending, timeout)
    with _local_lock:
        entry[1] = shared
        return int(shared + entry[0])


class SubmissionRateThrottle(BaseThrottle):
    scope = "submissions"
    exact = False  # batched per process (see the module docstring)

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
        key = f"throttle:{self.scope}:{user.prefix}:{window}"
        count = _count(key, period + 1, limit, exact=self.exact)
        if count > limit:
            self.wait_seconds = (window + 1) * period - now
            return False
        return True

    def wait(self) -> float | None:
        return self.wait_seconds


def charge_submissions(request: Request, items: int) -> None:
    """Count ``items`` more submissions against the key's ``submissions`` quota at once
    (a portal key's bulk counts each response, not one request), exactly across
    processes (the shared counter); over the limit: 429 with ``Retry-After``."""
    from rest_framework.exceptions import Throttled

    rate = api_settings.DEFAULT_THROTTLE_RATES.get(SubmissionRateThrottle.scope)
    user = request.user
    if not rate or items <= 0 or not isinstance(user, ApiKey):
        return
    limit, period = parse_rate(rate)
    now = time.time()
    window = int(now // period)
    key = f"throttle:{SubmissionRateThrottle.scope}:{user.prefix}:{window}"
    if _add(key, items, period + 1) > limit:
        raise Throttled(wait=(window + 1) * period - now)
