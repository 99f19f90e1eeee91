"""Whole numbers on the real stack (issue 10): PostgreSQL counts the half units and the
models' cells, a real Celery worker averages the two models, the API reads it back.

The in-process test (tests/reconstruction/test_whole_numbers_api.py) runs on SQLite,
whose half units are computed with CAST instead of FLOOR and whose cells with CASE
instead of width_bucket; here the same seeded survey goes through PostgreSQL.
"""

from __future__ import annotations

import numpy as np
import pytest

from reconstruction import analysis, pipeline
from reconstruction.algorithms import queries
from tests.integration.test_wiring import wait_for_job
from tests.reconstruction.conftest import client_for
from tests.reconstruction.test_whole_numbers_api import UNSETTLED, _whole_year_survey
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_unsettled_whole_year_ages_are_averaged_on_the_worker(
    celery_worker_process: Worker,
) -> None:
    survey, sex, age = _whole_year_survey(UNSETTLED, 2, "Whole years on PostgreSQL")
    where = [
        {"attribute": "sex", "op": "in", "value": ["F"]},
        {"attribute": "age", "op": "lte", "value": 30},
    ]
    analyst = client_for("north", "analyst")
    response = analyst.post(
        "/api/v1/analyses/", {"survey": survey.pk, "kind": "count", "where": where}, format="json"
    )
    assert response.status_code == 202, response.json()
    job = wait_for_job(analyst, response.json()["url"], timeout=120)
    assert job["status"] == "succeeded", job
    result = job["result"]
    loaded = analysis.load(pipeline.resolve(survey, {"kind": "count", "where": where}))
    expected = queries.count_joint(loaded.table, loaded.where)
    assert any("cannot tell whether" in note for note in expected.notes), expected.notes
    assert result["notes"] == [str(note) for note in expected.notes]
    assert result["estimate"] == pytest.approx(expected.estimate, rel=1e-9)
    assert result["ci95"] == pytest.approx(list(expected.ci95), rel=1e-9)
    truth = float(np.sum((sex == 0) & (age <= 30)))
    assert result["ci95"][0] <= truth <= result["ci95"][1], (truth, result)
