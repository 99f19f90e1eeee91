"""Run one analysis in a process configured with a ``replica`` alias; print where it read.

Used by test_replica.py: ``python -m tests.integration.replica_probe SURVEY_ID``.
"""

from __future__ import annotations

import json
import sys

import django
from django.db import connections
from django.test.utils import CaptureQueriesContext


def main() -> None:
    django.setup()
    from reconstruction import pipeline
    from surveys.models import Survey

    survey = Survey.objects.get(pk=int(sys.argv[1]))
    spec = {
        "kind": "count",
        "survey": survey.pk,
        "where": [
            {"attribute": "sex", "op": "in", "value": ["F"]},
            {"attribute": "age", "op": "gt", "value": 40},
        ],
    }
    with (
        CaptureQueriesContext(connections["replica"]) as replica,
        CaptureQueriesContext(connections["default"]) as default,
    ):
        request = pipeline.validate_request(survey, spec)
        result = pipeline.compute(request, lambda fraction: None)
        sample_spec = {**spec, "kind": "sample", "size": 10, "seed": 3}
        sample = pipeline.compute(
            pipeline.validate_request(survey, sample_spec), lambda fraction: None
        )
    print(
        json.dumps(
            {
                "aliases": sorted(connections.settings),
                "replica": [q["sql"] for q in replica.captured_queries],
                "default": [q["sql"] for q in default.captured_queries],
                "estimate": result["estimate"],
                "sample": sample["participants"],
            }
        )
    )


if __name__ == "__main__":
    main()
