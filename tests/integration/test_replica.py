"""Analyses read their statistics from the ``replica`` alias when DATABASE_REPLICA_URL is set.

The replica is a second alias on the same PostgreSQL cluster (as streaming replication
would present it); the analysis runs in a process started with that setting.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from django.db import connection

from surveys.services import responses_submit_bulk
from tests.factories import consultation_factory, organisation_factory, survey_factory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_statistics_are_read_from_the_replica_alias(settings: Any) -> None:
    assert connection.vendor == "postgresql"
    consultation = consultation_factory(organisation_factory())
    survey = survey_factory(
        consultation,
        questions=[
            {
                "key": "sex",
                "type": "binary",
                "categories": ["F", "M"],
                "mechanism": {"name": "randomised_response", "retain": 0.8},
            },
            {
                "key": "age",
                "type": "continuous",
                "range": [16, 100],
                "mechanism": {"name": "additive_uniform", "half_width": 5},
            },
        ],
    )
    rng = np.random.default_rng(1)
    responses_submit_bulk(
        survey=survey,
        responses=[
            {
                "participant": f"r{i}",
                "answers": {
                    "sex": "FM"[int(rng.integers(2))],
                    "age": round(float(rng.uniform(20, 90)), 3),  # on the 0.001 grid
                },
            }
            for i in range(400)
        ],
    )
    db = connection.settings_dict
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "DATABASE_REPLICA_URL": url, "DJANGO_DEBUG": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.replica_probe", str(survey.pk)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["aliases"] == ["default", "replica"]
    assert any("width_bucket" in sql for sql in seen["replica"]), seen["replica"]
    assert any("COUNT(*)" in sql for sql in seen["replica"])
    assert not any("width_bucket" in sql for sql in seen["default"])
    assert seen["estimate"] > 0
    # Sampling streams the participants' answers from the replica too (server-side cursor).
    assert len(seen["sample"]) == 10 and len(set(seen["sample"])) == 10
    assert all(ref.startswith("r") for ref in seen["sample"])
    assert any('"reference"' in sql for sql in seen["replica"]), seen["replica"]
