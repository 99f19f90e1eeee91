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


class HealthzMiddleware:
    """Answer ``/healthz`` (and ``/metrics``) before host validation and the HTTPS redirect.

    Container health checks, load balancers and Prometheus call the app by its internal
    address (``localhost:8000``, ``web:8000``), which is not one of ``DJANGO_ALLOWED_HOSTS``;
    Django would answer 400 DisallowedHost (or redirect to HTTPS) and the container would
    never be healthy. The health check reveals only up/down and the metrics need their own
    token, so both are safe to answer whatever the Host header says. Placed first in
    ``MIDDLEWARE``.
    """

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        if request.path_info == "/healthz":
            return healthz(request)
        if request.path_info == "/metrics":
            from config.metrics import metrics

            return metrics(request)
        return self.get_response(request)
