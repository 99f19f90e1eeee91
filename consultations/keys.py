"""API keys below both their writes and their checks: the stored hash of a key, and this
process's cache of keys verified recently.

``services`` (create, revoke) and ``authentication`` (verify) both need these; keeping them
here lets each import this module instead of the other.
"""

from __future__ import annotations

import hashlib
import threading
import time

from consultations.models import ApiKey

# Keys verified recently, by the hash of the whole key: every submission authenticates, and
# a database round trip per request is a large share of its cost. A revocation or expiry is
# seen at once by this process (the revoke service forgets the key) and within
# API_KEY_CACHE_SECONDS by the others.
_verified: dict[str, tuple[float, ApiKey]] = {}
_verified_lock = threading.Lock()


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def recently_verified(digest: str) -> ApiKey | None:
    """The key verified under ``digest`` within its time to live, if still usable."""
    cached = _verified.get(digest)
    if cached is not None and cached[0] > time.monotonic() and cached[1].is_usable():
        return cached[1]
    return None


def remember_verified(digest: str, api_key: ApiKey, *, ttl: float) -> None:
    with _verified_lock:
        if len(_verified) > 10_000:
            _verified.clear()
        _verified[digest] = (time.monotonic() + ttl, api_key)


def forget_verified_keys(prefix: str | None = None) -> None:
    with _verified_lock:
        for digest in [d for d, (_, k) in _verified.items() if prefix in (None, k.prefix)]:
            _verified.pop(digest, None)
