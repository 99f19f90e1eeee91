"""How a delivery is signed, and how a receiver checks it (no Django here).

Headers of every delivery::

    X-Webhook-Event: analysis.finished
    X-Webhook-Delivery: 42
    X-Webhook-Timestamp: 1795430400                       (Unix seconds)
    X-Webhook-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>

A receiver recomputes the HMAC over the timestamp, a dot and the raw body with its
webhook's secret, compares in constant time, and refuses a timestamp older than a few
minutes, so a captured delivery cannot be replayed later (:func:`verify`).
"""

from __future__ import annotations

import hashlib
import hmac
import time

TOLERANCE_SECONDS = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    message = str(int(timestamp)).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(
    secret: str,
    timestamp: str,
    body: bytes,
    received: str,
    *,
    now: float | None = None,
    tolerance: int = TOLERANCE_SECONDS,
) -> bool:
    """True when ``received`` signs ``body`` at ``timestamp`` and the timestamp is fresh."""
    try:
        stamp = int(timestamp)
    except (TypeError, ValueError):
        return False
    if abs((time.time() if now is None else now) - stamp) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, stamp, body), str(received))
