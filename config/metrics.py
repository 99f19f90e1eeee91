"""Prometheus metrics at ``/metrics``, for operators; off unless ``METRICS_ENABLED``.

- Requests and latencies: django-prometheus's middleware (``django_http_*``), per view,
  method and status.
- Jobs: counts by kind and outcome and the total of their run times, read from the job
  tables at scrape time (``consultations_jobs``, ``consultations_job_duration_seconds``),
  so they agree across gunicorn workers and Celery workers without shared state.
- Queue length: messages waiting in the broker's queue (``consultations_queue_length``)
  and jobs still ``queued`` in the database.

The endpoint is not public: it answers 404 unless ``METRICS_ENABLED``, and then only to
``Authorization: Bearer <METRICS_TOKEN>`` (Prometheus' ``authorization`` scrape option).
With several gunicorn workers set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory so
that the request metrics of every worker are added up (prometheus-client's multiprocess
mode; ``config/gunicorn.py`` marks exited workers).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterator
from typing import Any

import redis
from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector


def _job_models() -> list[tuple[str, Any]]:
    from reconstruction.models import AggregateReconstruction, AnalysisJob, Report

    return [("analysis", AnalysisJob), ("aggregate", AggregateReconstruction), ("report", Report)]


class JobCollector:
    """Job outcomes, run times and queue length, read when Prometheus scrapes."""

    def collect(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily(
            "consultations_jobs", "Jobs by kind and status.", labels=["kind", "status"]
        )
        finished = CounterMetricFamily(
            "consultations_jobs_finished",
            "Finished jobs by kind and outcome (succeeded or failed).",
            labels=["kind", "outcome"],
        )
        durations = CounterMetricFamily(
            "consultations_job_duration_seconds",
            "Total run time of finished jobs (started to finished), by kind and outcome.",
            labels=["kind", "outcome"],
        )
        queued_total = 0
        for kind, model in _job_models():
            for row in model.objects.values("status").annotate(n=Count("id")).order_by():
                jobs.add_metric([kind, row["status"]], row["n"])
                if row["status"] == "queued":
                    queued_total += row["n"]
            rows = (
                model.objects.filter(status__in=["succeeded", "failed"])
                .exclude(started_at=None)
                .exclude(finished_at=None)
                .values("status")
                .annotate(
                    n=Count("id"),
                    seconds=Sum(
                        ExpressionWrapper(
                            F("finished_at") - F("started_at"), output_field=DurationField()
                        )
                    ),
                )
                .order_by()
            )
            for row in rows:
                finished.add_metric([kind, row["status"]], row["n"])
                seconds = row["seconds"].total_seconds() if row["seconds"] is not None else 0.0
                durations.add_metric([kind, row["status"]], max(0.0, seconds))
        yield jobs
        yield finished
        yield durations
        queued = GaugeMetricFamily(
            "consultations_jobs_queued", "Jobs waiting in the database (status queued)."
        )
        queued.add_metric([], queued_total)
        yield queued
        lanes = {lane: broker_queue_length(lane) for lane in settings.CELERY_LANE_NAMES}
        if any(count is not None for count in lanes.values()):
            length = GaugeMetricFamily(
                "consultations_queue_length",
                "Messages waiting in the broker, per lane (Celery queue).",
                labels=["lane"],
            )
            for lane, count in lanes.items():
                if count is not None:
                    length.add_metric([lane], count)
            yield length


def broker_queue_length(queue: str | None = None) -> int | None:
    """Messages in a Celery queue (the default lane unless named); ``None`` without a
    broker (in-process tasks)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    from config.celery import app

    queue = queue or app.conf.task_default_queue
    url = settings.CELERY_BROKER_URL
    try:
        if url.startswith(("redis://", "rediss://")):
            # Kombu keeps a Redis queue as lists: the queue's name, and one per priority step.
            client = redis.Redis.from_url(url, socket_timeout=2)
            steps = app.conf.broker_transport_options.get("priority_steps", [0, 3, 6, 9])
            names = [queue] + [f"{queue}\x06\x16{step}" for step in steps if step]
            return sum(int(client.llen(name)) for name in names)
        with app.connection_for_read() as connection:
            declared = connection.default_channel.queue_declare(queue=queue, passive=True)
            return int(declared.message_count)
    except Exception:  # the broker is down: /healthz says so; no metric rather than a 500
        return None


def _authorised(request: HttpRequest) -> bool:
    token = getattr(settings, "METRICS_TOKEN", "")
    given = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not getattr(settings, "METRICS_ENABLED", False):
        raise Http404("Metrics are off (METRICS_ENABLED).")
    if not _authorised(request):
        response = HttpResponse("Unauthorised: Authorization: Bearer <METRICS_TOKEN>\n", status=401)
        response["WWW-Authenticate"] = "Bearer"
        return response
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    jobs = CollectorRegistry()
    jobs.register(JobCollector())
    return HttpResponse(body + generate_latest(jobs), content_type=CONTENT_TYPE_LATEST)
