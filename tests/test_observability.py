"""Operators' view: Prometheus metrics (off by default, then behind a token), JSON logs, Sentry."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from consultations.services import organisation_create
from reconstruction.models import AggregateReconstruction, Report
from tests.factories import consultation_factory, survey_factory

REPO = Path(__file__).resolve().parent.parent
TOKEN = "metrics-token-0123456789"


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = TOKEN
    settings.MIDDLEWARE = [
        "django_prometheus.middleware.PrometheusBeforeMiddleware",
        *settings.MIDDLEWARE,
        "django_prometheus.middleware.PrometheusAfterMiddleware",
    ]
    return settings


@pytest.mark.django_db
def test_metrics_are_off_by_default() -> None:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404


@pytest.mark.django_db
def test_metrics_need_the_token(metrics_on) -> None:
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    # Whatever the Host header: Prometheus scrapes the container's internal address.
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="web:8000")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")


@pytest.mark.django_db
def test_metrics_count_requests_latencies_and_jobs(metrics_on) -> None:
    organisation = organisation_create(slug="metrics-town", name="Metrics Town")
    survey = survey_factory(consultation_factory(organisation))
    now = timezone.now()
    common = {"organisation": organisation, "requested_by": "tests"}
    Report.objects.create(
        **common,
        survey=survey,
        status="succeeded",
        started_at=now - timedelta(seconds=2),
        finished_at=now,
    )
    Report.objects.create(
        **common,
        survey=survey,
        status="failed",
        started_at=now - timedelta(seconds=5),
        finished_at=now,
    )
    Report.objects.create(**common, survey=survey, status="queued")
    AggregateReconstruction.objects.create(**common, counts=[1], channel=[[1]], status="queued")
    client = Client()
    assert client.get("/api/v1/consultations/").status_code == 401
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    assert "django_http_requests_total_by_method_total" in text
    assert "django_http_requests_latency_seconds_by_view_method_bucket" in text
    assert 'django_http_responses_total_by_status_total{status="401"}' in text
    assert 'consultations_jobs_finished_total{kind="report",outcome="succeeded"} 1.0' in text
    assert 'consultations_jobs_finished_total{kind="report",outcome="failed"} 1.0' in text
    assert 'consultations_job_duration_seconds_total{kind="report",outcome="succeeded"} 2.0' in text
    assert 'consultations_job_duration_seconds_total{kind="report",outcome="failed"} 5.0' in text
    assert 'consultations_jobs{kind="aggregate",status="queued"} 1.0' in text
    assert "consultations_jobs_queued 2.0" in text


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "METRICS_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**clean, "DJANGO_DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_metrics_without_a_token_refuse_to_start() -> None:
    result = _manage("check", env={"METRICS_ENABLED": "1"})
    assert result.returncode != 0
    assert "METRICS_TOKEN" in result.stderr


def test_json_logs_are_one_object_a_line() -> None:
    result = _manage(
        "shell",
        "-c",
        "import logging; logging.getLogger('consultations').warning('hello %s', 'operator')",
        env={"DJANGO_LOG_FORMAT": "json"},
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert {"message": "hello operator", "level": "WARNING", "logger": "consultations"}.items() <= (
        lines[-1].items()
    )
    bad = _manage("check", env={"DJANGO_LOG_FORMAT": "xml"})
    assert bad.returncode != 0 and "DJANGO_LOG_FORMAT" in bad.stderr


class _Collector(BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        _Collector.received.append(body)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_errors_reach_sentry_without_personal_data() -> None:
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Collector.received.clear()
    try:
        dsn = f"http://publickey@127.0.0.1:{server.server_port}/1"
        script = (
            "import sentry_sdk\n"
            "options = sentry_sdk.get_client().options\n"
            "assert options['send_default_pii'] is False, options['send_default_pii']\n"
            "assert options['max_request_body_size'] == 'never'\n"
            "try:\n    1 / 0\n"
            "except ZeroDivisionError as exc:\n    sentry_sdk.capture_exception(exc)\n"
            "sentry_sdk.flush(5)\n"
        )
        result = _manage("shell", "-c", script, env={"SENTRY_DSN": dsn})
        assert result.returncode == 0, result.stderr
    finally:
        server.shutdown()
    assert _Collector.received, "no event reached the Sentry DSN"
    assert b"ZeroDivisionError" in b"".join(_Collector.received)
