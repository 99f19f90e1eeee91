"""The embedded default's webhook sender: one background thread of the process.

Without a broker, Celery tasks run in-process, in the request or job that queued them; a
delivery must not (six unreachable receivers once made every analysis take 37.5 s). So
:func:`~webhooks.services.job_finished` only queues deliveries, and this daemon thread,
started on the first one, sends those due (:func:`~webhooks.services.deliveries_send_due`)
with its own database connection, waking when a delivery is queued and every
``WEBHOOKS_EMBEDDED_POLL_SECONDS`` for retries. ``WEBHOOKS_EMBEDDED_SENDER=0`` turns it
off (the unit tests send deliveries themselves). With a broker, the ``webhooks`` lane's
Celery workers send them instead and this thread never starts.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_wake = threading.Event()
_stop = threading.Event()
_thread: threading.Thread | None = None


def wake() -> None:
    """A delivery was queued: start the sender if it is not running, and wake it."""
    global _thread
    if not getattr(settings, "WEBHOOKS_EMBEDDED_SENDER", True):
        return
    with _lock:
        if _thread is None or not _thread.is_alive():
            _stop.clear()
            _thread = threading.Thread(target=_run, name="webhook-sender", daemon=True)
            _thread.start()
    _wake.set()


def _run() -> None:
    from webhooks.services import deliveries_send_due

    while not _stop.is_set() and getattr(settings, "WEBHOOKS_EMBEDDED_SENDER", True):
        poll = float(getattr(settings, "WEBHOOKS_EMBEDDED_POLL_SECONDS", 5))
        _wake.clear()
        try:
            sent = deliveries_send_due()
        except Exception:  # a database hiccup must not end the sender
            logger.exception("sending webhook deliveries failed")
            sent = 0
        finally:
            connections.close_all()
        if not sent:
            _wake.wait(poll)


def stop(timeout: float = 30) -> None:
    """End the sender thread (after the attempt under way, if any)."""
    _stop.set()
    _wake.set()
    with _lock:
        thread = _thread
    if thread is not None:
        thread.join(timeout)
