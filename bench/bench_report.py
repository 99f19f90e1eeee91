"""Benchmark: a report of a survey with 100,000 responses and 10 questions, on PostgreSQL.

    DJANGO_DEBUG=1 .venv/bin/python bench/bench_report.py [--responses 100000]

Starts a durable PostgreSQL (tests/servers.py), stores the distorted responses through
the bulk service, then times the report job end to end: loading the answers, every
question's reconstruction with its 95% interval, the naive counts, the charts, the
HTML/CSV rendering and the stored result. Target: under 10 s. Prints a table with the
target beside each figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import Table  # noqa: E402

TARGET_SECONDS = 10.0

QUESTIONS = [
    {
        "key": "sex",
        "type": "binary",
        "categories": ["F", "M"],
        "mechanism": {"name": "randomised_response", "retain": 0.75},
    },
    {
        "key": "district",
        "type": "nominal",
        "categories": ["N", "S", "E", "W", "C"],
        "mechanism": {"name": "randomised_response", "retain": 0.6},
    },
    {
        "key": "children",
        "type": "binary",
        "categories": ["N", "Y"],
        "mechanism": {"name": "randomised_response", "retain": 0.8},
    },
    {
        "key": "satisfaction",
        "type": "ordinal",
        "categories": ["1", "2", "3", "4", "5"],
        "mechanism": {"name": "negative_uniform"},
    },
    {
        "key": "site",
        "type": "ordinal",
        "categories": list("ABCDEFG"),
        "mechanism": {"name": "negative_gaussian", "sigma": 1.5},
    },
    {
        "key": "attendance",
        "type": "ordinal",
        "categories": ["never", "rarely", "often", "always"],
        "mechanism": {"name": "negative_manual"},
    },
    {
        "key": "tenure",
        "type": "binary",
        "categories": ["own", "rent"],
        "mechanism": {"name": "none"},
    },
    {
        "key": "age",
        "type": "continuous",
        "range": [16, 100],
        "mechanism": {"name": "additive_uniform", "half_width": 10},
    },
    {
        "key": "income",
        "type": "continuous",
        "range": [0, 20000],
        "mechanism": {"name": "additive_gaussian", "sigma": 800},
    },
    {
        "key": "commute",
        "type": "continuous",
        "range": [0, 120],
        "mechanism": {"name": "additive_laplace", "scale": 5},
    },
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--responses", type=int, default=100_000)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_DEBUG", "1")

    from tests.servers import running_services

    with running_services(durable=True) as env:
        os.environ.update(env)
        os.environ.pop("CELERY_BROKER_URL")  # the job runs here, timed, not on a worker
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        import numpy as np

        from consultations.services import consultation_create, organisation_create
        from privacy.client import distort_table, table_responses
        from reconstruction.models import Report
        from reconstruction.services import report_run
        from surveys.selectors import survey_scheme
        from surveys.services import responses_submit_bulk, survey_create, survey_open

        organisation = organisation_create(slug="bench", name="Bench")
        consultation = consultation_create(organisation=organisation, title="Bench")
        survey = survey_create(
            organisation=organisation,
            consultation=consultation,
            kind="opinion",
            title="Ten questions",
            questions=QUESTIONS,
        )
        survey = survey_open(survey=survey)
        rng = np.random.default_rng(1)
        n = args.responses
        truth = {}
        for question in QUESTIONS:
            if question["type"] == "continuous":
                low, high = question["range"]
                truth[question["key"]] = rng.uniform(low, high, size=n)
            else:
                categories = np.array(question["categories"])
                truth[question["key"]] = categories[rng.integers(0, len(categories), size=n)]
        started = time.perf_counter()
        sent = distort_table(survey_scheme(survey), truth, rng)
        responses = table_responses(np.array([f"p{i}" for i in range(n)]), sent)
        for start in range(0, n, 10_000):
            responses_submit_bulk(survey=survey, responses=responses[start : start + 10_000])
        load_seconds = time.perf_counter() - started

        report = Report.objects.create(
            organisation=organisation, survey=survey, requested_by="bench"
        )
        started = time.perf_counter()
        report_run(job_id=report.pk)
        seconds = time.perf_counter() - started
        report.refresh_from_db()
        assert report.status == "succeeded", report.error
        charts = report.html.count("<svg")  # inline SVG charts (issue 12), one per question

    table = Table(
        f"Report of {n:,} responses x {len(QUESTIONS)} questions on PostgreSQL "
        f"(stored in {load_seconds:.1f} s beforehand; one run)"
    )
    table.add(
        "report end to end",
        seconds,
        unit="s",
        target=f"< {TARGET_SECONDS:g} s",
        ok=seconds < TARGET_SECONDS,
    )
    table.add(
        "charts embedded",
        charts,
        target=f"= {len(QUESTIONS)}",
        ok=charts == len(QUESTIONS),
    )
    return table.finish()


if __name__ == "__main__":
    sys.exit(main())
