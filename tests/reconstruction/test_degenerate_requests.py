"""Degenerate requests refused at POST with a 400 naming the problem (issue 27), instead
of a 202 and a job that fails: a panel with no condition at all (no ``where``, no
quotas), a singular aggregate channel, and a ``nash`` panel with more quotas than its
solver handles. Nothing is stored. Each fails on the old code (202, then a failed job)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from reconstruction.models import AggregateReconstruction, AnalysisJob
from surveys.services import responses_submit_bulk
from tests.factories import (
    client_for,
    consultation_factory,
    key_factory,
    organisation_factory,
    survey_factory,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/analyses/"
# 6 residents per year of age: every quota group holds at least 18 (an exact group is
# published only when its cell-key interval, the value +-2, clears the threshold of 5).
N = 360


@pytest.fixture
def world() -> dict[str, Any]:
    organisation = organisation_factory()
    survey = survey_factory(
        consultation_factory(organisation, min_responses=10, min_cell=5),
        questions=[
            {"key": "sex", "type": "binary", "categories": ["F", "M"],
             "mechanism": {"name": "none"}},
            {"key": "age", "type": "continuous", "range": [16, 100], "step": 1,
             "mechanism": {"name": "none"}},
        ],
    )  # fmt: skip
    responses_submit_bulk(
        survey=survey,
        responses=[
            {"participant": f"c-{i}", "answers": {"sex": "FM"[i % 2], "age": 16 + i % 60}}
            for i in range(N)
        ],
    )
    return {"survey": survey, "client": client_for(key_factory(organisation, "analyst")[1])}


def refused(client: Any, url: str, body: dict[str, Any], model: Any = AnalysisJob) -> dict:
    before = model.objects.count()
    response = client.post(url, body, format="json")
    assert response.status_code == 400, response.json()
    assert model.objects.count() == before
    return response.json()


def test_a_panel_with_no_condition_and_no_quota_is_a_400(world):
    body = {"survey": world["survey"].pk, "kind": "panel", "size": 10, "seed": 1}
    answer = refused(world["client"], URL, body)
    assert "quotas" in answer["errors"], answer


def test_a_singular_aggregate_channel_is_a_400_naming_the_channel(world):
    answer = refused(
        world["client"],
        "/api/v1/aggregate-reconstructions/",
        {"counts": [50, 50], "channel": [[0.5, 0.5], [0.5, 0.5]]},
        AggregateReconstruction,
    )
    assert "singular" in str(answer["errors"]["channel"]), answer


def _bands(count: int) -> list[dict[str, Any]]:
    edges = [16 + 3 * i for i in range(count + 1)]
    return [
        {"where": [{"attribute": "age", "op": "between", "value": [lo, hi]}], "min": 0, "max": 3}
        for lo, hi in itertools.pairwise(edges)
    ]


def test_nash_with_many_quotas_works_or_names_the_limit(world, django_capture_on_commit_callbacks):
    body = {"survey": world["survey"].pk, "kind": "panel", "size": 10, "seed": 3,
            "objective": "nash", "quotas": _bands(18)}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        response = world["client"].post(URL, body, format="json")
    if response.status_code == 400:
        assert "18" in str(response.json()), response.json()
        return
    assert response.status_code == 202, response.json()
    job = world["client"].get(response.json()["url"]).json()
    assert job["status"] == "succeeded", job


def _crossed(count: int) -> list[dict[str, Any]]:
    quotas = []
    for i in range(count):
        lo = 16 + 6 * (i // 2)
        quotas.append(
            {
                "where": [
                    {"attribute": "sex", "op": "in", "value": ["FM"[i % 2]]},
                    {"attribute": "age", "op": "between", "value": [lo, lo + 6]},
                ],
                "min": 0,
                "max": 2,
            }
        )
    return quotas


@pytest.mark.parametrize("objective", ["nash", "maximin", "leximin"])
def test_many_crossed_quotas_work_or_name_the_limit(
    world, django_capture_on_commit_callbacks, objective
):
    body = {"survey": world["survey"].pk, "kind": "panel", "size": 12, "seed": 3,
            "objective": objective, "quotas": _crossed(18)}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        response = world["client"].post(URL, body, format="json")
    if response.status_code == 400:
        assert "18" in str(response.json()), response.json()
        return
    assert response.status_code == 202, response.json()
    job = world["client"].get(response.json()["url"]).json()
    assert job["status"] == "succeeded", job
