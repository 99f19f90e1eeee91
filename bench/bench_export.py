"""Benchmark: the researcher export of a survey with 10^6 responses on PostgreSQL.

    DJANGO_DEBUG=1 .venv/bin/python bench/bench_export.py [--responses 1000000]

Starts a durable PostgreSQL (tests/servers.py), stores the distorted responses of a
7-question survey through the bulk service, closes it, then streams its export
(surveys/export.py) as CSV and as Parquet into a sink that only counts the bytes, and
measures the time and the process's peak resident memory during each export (the kernel's
high-water mark, reset before each export through /proc/self/clear_refs).

A second survey with a tenth of the responses is exported the same way first. The baseline
beside each memory figure is measured in the same run: the peak growth of that export ten
times smaller, and the size of the uncompressed data.csv (what a non-streaming export would
at least hold in memory, before any Python object overhead). Target: streamed in chunks of
surveys.export.CHUNK responses, the peak grows by less than twice the smaller export's for
ten times the rows (a non-streaming export grows about tenfold).
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.common import Table  # noqa: E402

QUESTIONS = [
    {"key": "sex", "type": "binary", "categories": ["F", "M"],
     "mechanism": {"name": "randomised_response", "retain": 0.75}},
    {"key": "district", "type": "nominal", "categories": ["N", "S", "E", "W", "C"],
     "mechanism": {"name": "randomised_response", "retain": 0.6}},
    {"key": "satisfaction", "type": "ordinal", "categories": ["1", "2", "3", "4", "5"],
     "mechanism": {"name": "negative_uniform"}},
    {"key": "site", "type": "ordinal", "categories": list("ABCDEFG"),
     "mechanism": {"name": "negative_gaussian", "sigma": 1.5}},
    {"key": "tenure", "type": "binary", "categories": ["own", "rent"],
     "mechanism": {"name": "none"}},
    {"key": "age", "type": "continuous", "range": [16, 100], "step": 1,
     "mechanism": {"name": "additive_uniform", "half_width": 10}},
    {"key": "income", "type": "continuous", "range": [0, 20000],
     "mechanism": {"name": "additive_gaussian", "sigma": 800}},
]  # fmt: skip
BATCH = 10_000
GROWTH_LIMIT = 2.0


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


class Counter(io.RawIOBase):
    def __init__(self) -> None:
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        n = len(data)  # type: ignore[arg-type]
        self.size += n
        return n


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--responses", type=int, default=1_000_000)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_DEBUG", "1")

    from tests.servers import running_services

    with running_services(durable=True) as env:
        os.environ.update(env)
        os.environ.pop("CELERY_BROKER_URL")
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        import numpy as np

        from consultations.services import consultation_create, organisation_create
        from privacy.client import distort_table, table_responses
        from surveys import export
        from surveys.selectors import survey_scheme
        from surveys.services import (
            responses_submit_bulk,
            survey_close,
            survey_create,
            survey_open,
        )

        organisation = organisation_create(slug="bench", name="Bench")
        consultation = consultation_create(organisation=organisation, title="Bench")
        rng = np.random.default_rng(1)
        n = args.responses
        small_n = max(1, n // 10)

        def load(size: int, title: str) -> object:
            survey = survey_create(
                organisation=organisation,
                consultation=consultation,
                kind="opinion",
                title=title,
                questions=QUESTIONS,
            )
            survey = survey_open(survey=survey)
            for first in range(0, size, BATCH):
                m = min(BATCH, size - first)
                truth = {}
                for question in QUESTIONS:
                    if question["type"] == "continuous":
                        low, high = question["range"]
                        truth[question["key"]] = np.round(rng.uniform(low, high, size=m))
                    else:
                        labels = np.array(question["categories"])
                        truth[question["key"]] = labels[rng.integers(0, len(labels), size=m)]
                sent = distort_table(survey_scheme(survey), truth, rng)
                references = np.array([f"{title}-{i}" for i in range(first, first + m)])
                responses_submit_bulk(survey=survey, responses=table_responses(references, sent))
            return survey_close(survey=survey)

        started = time.perf_counter()
        small = load(small_n, "small")
        large = load(n, "large")
        load_seconds = time.perf_counter() - started
        gc.collect()

        import pyarrow.parquet  # noqa: F401  (the library's own ~100 MiB, not the export's)

        def measure(survey: object, fmt: str) -> tuple[float, int, int]:
            gc.collect()
            before = _kib("VmRSS")
            Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
            sink = Counter()
            started = time.perf_counter()
            plan = export.export_plan(survey=survey, fmt=fmt, actor="bench")
            for piece in export.stream_zip(plan):
                sink.write(piece)
            return time.perf_counter() - started, _kib("VmHWM") - before, sink.size

        figures = {}
        for fmt in ("csv", "parquet"):
            figures[fmt] = (measure(small, fmt), measure(large, fmt))

        # The uncompressed data.csv of the large survey, measured here.
        plan = export.export_plan(survey=large, fmt="csv", actor="bench")
        archive = io.BytesIO(b"".join(export.stream_zip(plan)))
        csv_bytes = zipfile.ZipFile(archive).getinfo("data.csv").file_size

    table = Table(
        f"Researcher export of {n:,} responses x {len(QUESTIONS)} questions on PostgreSQL, "
        f"after one of {small_n:,} (both stored in {load_seconds:.0f} s beforehand; one run "
        f"each; chunks of {export.CHUNK:,})"
    )
    for fmt, ((_, small_peak, _), (seconds, peak, size)) in figures.items():
        table.add(f"{fmt}: export of {n:,} end to end", seconds, unit="s")
        table.add(f"{fmt}: zip size", size / 2**20, unit="MiB")
        table.add(
            f"{fmt}: peak memory growth, {n:,} rows",
            peak / 1024,
            unit="MiB",
            baseline=small_peak / 1024,
            baseline_name=f"{small_n:,} rows; data.csv {csv_bytes / 2**20:.0f} MiB",
            target=f"< {GROWTH_LIMIT:g}x baseline",
            ok=peak < GROWTH_LIMIT * max(small_peak, 1024),
        )
    return table.finish()


if __name__ == "__main__":
    sys.exit(main())
