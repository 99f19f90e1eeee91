"""Aggregate reconstructions through the API, with tasks run in-process."""

from __future__ import annotations

import numpy as np
import pytest
from rest_framework.test import APIClient

from consultations.models import AuditEvent
from privacy.mechanisms import negative_uniform, randomised_response
from reconstruction.models import AggregateReconstruction

URL = "/api/v1/aggregate-reconstructions/"


def submit(client: APIClient, body: dict, capture) -> dict:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        response = client.post(URL, body, format="json")
    return {"status": response.status_code, "body": response.json(), "headers": response}


def test_job_runs_and_result_is_read_back(analyst, django_capture_on_commit_callbacks) -> None:
    channel = randomised_response(3, 0.7)
    truth = np.array([500.0, 300.0, 200.0])
    counts = truth @ channel
    created = submit(
        analyst,
        {"counts": counts.tolist(), "channel": channel.tolist()},
        django_capture_on_commit_callbacks,
    )
    assert created["status"] == 202, created["body"]
    assert created["body"]["status"] == "queued"
    job = analyst.get(created["body"]["url"]).json()
    assert job["status"] == "succeeded", job
    assert job["progress"] == 1.0
    np.testing.assert_allclose(job["result"]["counts"], truth, rtol=1e-5)
    assert job["result"]["method"] == "em_as"
    lows, highs = np.array(job["result"]["ci95"]).T
    assert np.all(lows <= truth + 1e-6) and np.all(truth <= highs + 1e-6)
    assert AuditEvent.objects.filter(action="aggregate_reconstruction.create").count() == 1


def test_negative_survey_method(analyst, django_capture_on_commit_callbacks) -> None:
    body = {
        "counts": [23, 22, 20, 18, 17],
        "channel": negative_uniform(5).tolist(),
        "method": "nstops",
    }
    created = submit(analyst, body, django_capture_on_commit_callbacks)
    result = analyst.get(created["body"]["url"]).json()["result"]
    # 003: t_j = N - (c - 1) r_j with N = 100, c = 5.
    np.testing.assert_allclose(result["counts"], [8, 12, 20, 28, 32], atol=1e-9)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"counts": [1, 2], "channel": [[0.5, 0.6], [0.5, 0.5]]}, "channel"),
        ({"counts": [1, 2, 3], "channel": [[1, 0], [0, 1]]}, "channel"),
        ({"counts": [-1, 2], "channel": [[1, 0], [0, 1]]}, "counts"),
        ({"counts": [0, 0], "channel": [[1, 0], [0, 1]]}, "counts"),
        ({"counts": [1, 2], "channel": [[1, 0], [0, 1]], "method": "magic"}, "method"),
        (
            {
                "counts": [1, 2, 3],
                "channel": randomised_response(3, 0.6).tolist(),
                "method": "nstops",
            },
            "method",
        ),
        ({"counts": [1, 2], "channel": [[0.5, 0.5], [0.5, 0.5]], "method": "eq"}, "channel"),
        # 000's diagonal revision would destroy a randomised-response channel.
        (
            {"counts": [1, 2, 3], "channel": randomised_response(3, 0.6).tolist(), "method": "mle"},
            "method",
        ),
        ({"channel": [[1, 0], [0, 1]]}, "counts"),
    ],
)
def test_bad_input_is_named_and_nothing_stored(analyst, body, field) -> None:
    response = analyst.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["errors"], response.json()
    assert response.json()["detail"]
    assert AggregateReconstruction.objects.count() == 0


def test_roles_and_tenants(
    analyst, portal, other_analyst, django_capture_on_commit_callbacks
) -> None:
    body = {"counts": [10, 20], "channel": [[1, 0], [0, 1]]}
    assert portal.post(URL, body, format="json").status_code == 403
    assert APIClient().post(URL, body, format="json").status_code == 401
    created = submit(analyst, body, django_capture_on_commit_callbacks)
    assert other_analyst.get(created["body"]["url"]).status_code == 404
    assert analyst.get(created["body"]["url"]).status_code == 200
