"""``/healthz``: is the database reachable, the broker reachable and a worker alive?"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


def _database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure means "down"; the reason is reported
        return {"status": "down", "error": type(exc).__name__}
    return {"status": "up", "vendor": connection.vendor}


def _broker_and_worker() -> tuple[dict[str, Any], dict[str, Any]]:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        in_process = {"status": "up", "mode": "in-process"}
        return in_process, in_process
    from config.celery import app

    try:
        with app.connection_for_write(url=settings.CELERY_BROKER_URL) as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        return {"status": "down", "error": type(exc).__name__}, {"status": "unknown"}
    try:
        replies = app.control.ping(timeout=settings.HEALTHZ_WORKER_TIMEOUT)
    except Exception as exc:
        return {"status": "up"}, {"status": "down", "error": type(exc).__name__}
    if not replies:
        return {"status": "up"}, {"status": "down", "error": "no worker answered the ping"}
    return {"status": "up"}, {"status": "up", "workers": len(replies)}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    database = _database()
    broker, worker = _broker_and_worker()
    checks = {"database": database, "broker": broker, "worker": worker}
    healthy = all(check["status"] == "up" for check in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503
    )
