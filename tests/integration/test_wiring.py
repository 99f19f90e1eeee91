"""The wiring, end to end: API → PostgreSQL → Redis → a real Celery worker → API."""

from __future__ import annotations

import time

import numpy as np
import pytest
from django.db import connection
from rest_framework.test import APIClient

from privacy.mechanisms import randomised_response
from reconstruction.models import AggregateReconstruction
from tests.reconstruction.conftest import client_for
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def wait_for_job(client: APIClient, url: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(url).json()
        if body["status"] in ("succeeded", "failed"):
            return body
        time.sleep(0.2)
    raise AssertionError(f"job at {url} did not finish within {timeout} s: {body}")


def test_the_real_stack_is_in_use(celery_worker_process: Worker) -> None:
    assert connection.vendor == "postgresql"
    from django.conf import settings

    assert settings.CELERY_TASK_ALWAYS_EAGER is False
    assert settings.CELERY_BROKER_URL.startswith("redis://127.0.0.1:")


def test_api_request_runs_on_the_worker_and_is_read_back(celery_worker_process: Worker) -> None:
    analyst = client_for("wiring", "analyst")
    channel = randomised_response(4, 0.6)
    truth = np.array([400.0, 300.0, 200.0, 100.0])
    response = analyst.post(
        "/api/v1/aggregate-reconstructions/",
        {"counts": (truth @ channel).tolist(), "channel": channel.tolist()},
        format="json",
    )
    assert response.status_code == 202, response.json()
    body = wait_for_job(analyst, response.json()["url"])
    assert body["status"] == "succeeded", body
    np.testing.assert_allclose(body["result"]["counts"], truth, rtol=1e-5)

    # Persisted in PostgreSQL by the worker process, not by this one.
    job = AggregateReconstruction.objects.get(pk=response.json()["id"])
    assert job.attempts == 1 and job.finished_at is not None
    assert "reconstruction.run_aggregate_reconstruction" in celery_worker_process.output()
    assert "succeeded" in celery_worker_process.output()


def test_healthz_sees_database_broker_and_worker(celery_worker_process: Worker, client) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok", body
    assert body["database"]["vendor"] == "postgresql"
    assert body["worker"]["status"] == "up" and body["worker"]["workers"] >= 1


def test_healthz_is_503_when_the_broker_is_unreachable(client, settings) -> None:
    from tests.servers import free_port

    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["broker"]["status"] == "down"
