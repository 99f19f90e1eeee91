"""Analyses at national scale: 10^5 and 10^6 participants x 7 questions on durable PostgreSQL.

    DJANGO_DEBUG=1 .venv/bin/python bench/bench_scale.py [--sizes 100000 1000000]

The set-up of issue 9: a profile survey of 7 questions (2 continuous: whole-year ages,
incomes) with realistic data (skewed categories, a rare group), distorted as the portal
clients would and submitted through the bulk API (10,000 responses per request, 2
concurrent clients) to gunicorn with ``config/gunicorn.py`` (2 workers x 4 threads), one
Celery worker (concurrency 1), PostgreSQL with fsync on (tests/servers.py). At each size:

- ``POST /analyses/`` latency (median of 5), the job itself not waited for;
- a conjunctive count of a discrete and a continuous attribute, end to end (POST ->
  ``succeeded``), a conditional mean, a sample of 100, a report of every question;
- peak RSS of the gunicorn workers and of the Celery worker during the analyses (both
  restarted before them, so the peak is the analyses', not the ingestion's);
- ingest rate (responses of 7 answers per second, 2 concurrent clients).

Prints each figure beside the issue's baseline and the target; exits 1 when a target is
missed (``--no-fail`` to always exit 0).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_api import _descendants, _start_gunicorn  # noqa: E402

BATCH = 10_000
CLIENTS = 2
# Issue 9's measurements before the re-cut (same machine, same set-up).
BASELINE = {
    100_000: {"post": 0.67, "count": 1.5, "mean": 1.6, "sample": 1.6, "rss": (192, 192)},
    1_000_000: {"post": 6.2, "count": 10.9, "mean": 8.9, "sample": 9.2, "rss": (675, 651)},
}
BASELINE_INGEST = "10,000-14,000"
TARGETS = {"post": 0.1, "count": 3.0, "mean": 3.0, "sample": 5.0, "report": 10.0}
RSS_GROWTH_TARGET_MB = 50.0
INGEST_TARGET = 20_000.0

DISTRICT_P = [0.46, 0.27, 0.15, 0.10, 0.02]  # skewed, one rare district
SATISFACTION_P = [0.05, 0.10, 0.25, 0.40, 0.20]
SITE_P = [0.30, 0.25, 0.15, 0.12, 0.10, 0.05, 0.03]
SKIPS_P = [0.55, 0.30, 0.12, 0.03]


def _env_setup(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _prepare(env: dict[str, str]) -> tuple[int, str, str, dict[str, Any]]:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=REPO,
        env={**os.environ, **env},
        check=True,
    )
    _env_setup(env)
    from consultations.services import api_key_create, consultation_create, organisation_create
    from surveys.selectors import survey_scheme
    from surveys.services import survey_create, survey_open
    from tests.factories import seven_questions

    organisation = organisation_create(slug="scale", name="Scale")
    portal = api_key_create(organisation=organisation, role="portal", name="portal").key
    analyst = api_key_create(organisation=organisation, role="analyst", name="analyst").key
    consultation = consultation_create(organisation=organisation, title="National")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="National profile",
        questions=seven_questions(),
        actor="bench",
    )
    survey = survey_open(survey=survey, actor="bench")
    scheme = survey_scheme(survey)
    from django.db import connections

    connections.close_all()
    return survey.pk, portal, analyst, scheme


def _true_columns(n: int, rng: np.random.Generator) -> dict[str, Any]:
    age = rng.choice(np.arange(16, 100), size=n, p=_age_weights())
    return {
        "sex": rng.choice(["F", "M"], size=n, p=[0.51, 0.49]),
        "district": rng.choice(list("NSEWC"), size=n, p=DISTRICT_P),
        "satisfaction": rng.choice(list("12345"), size=n, p=SATISFACTION_P),
        "site": rng.choice(list("ABCDEFG"), size=n, p=SITE_P),
        "skips_class": rng.choice(["never", "rarely", "often", "always"], size=n, p=SKIPS_P),
        "age": age.astype(np.float64),
        "income": np.clip(rng.lognormal(7.8, 0.6, size=n) + 40 * (age - 16), 0, 20_000),
    }


def _age_weights() -> np.ndarray:
    ages = np.arange(16, 100)
    weights = np.exp(-(((ages - 42) / 25.0) ** 2))
    return weights / weights.sum()


def _post(conn: http.client.HTTPConnection, path: str, body: bytes, key: str) -> tuple[int, Any]:
    conn.request(
        "POST",
        path,
        body=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"null")


def _get(conn: http.client.HTTPConnection, path: str, key: str) -> Any:
    conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
    response = conn.getresponse()
    return json.loads(response.read())


def ingest(
    port: int, survey: int, key: str, scheme: dict[str, Any], start: int, stop: int, seed: int
) -> float:
    """Submit participants ``start..stop`` in batches from 2 concurrent clients; rate."""
    from privacy.client import distort_table

    rng = np.random.default_rng(seed)
    bodies: list[bytes] = []
    for first in range(start, stop, BATCH):
        size = min(BATCH, stop - first)
        distorted = distort_table(scheme, _true_columns(size, rng), rng)
        columns = {k: np.asarray(v).tolist() for k, v in distorted.items()}
        responses = [
            {"participant": f"p{first + i}", "answers": {k: c[i] for k, c in columns.items()}}
            for i in range(size)
        ]
        bodies.append(json.dumps({"responses": responses}).encode())
    queue = list(enumerate(bodies))
    lock = threading.Lock()
    failures: list[str] = []

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while True:
            with lock:
                if not queue:
                    return
                _, body = queue.pop()
            status, content = _post(conn, f"/api/v1/surveys/{survey}/responses/bulk/", body, key)
            if status != 201:
                with lock:
                    failures.append(f"{status} {str(content)[:300]}")

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if failures:
        raise RuntimeError(f"{len(failures)} bulk batches failed, e.g. {failures[0]}")
    return (stop - start) / elapsed


def copy_load(
    env: dict[str, str], survey: int, scheme: dict[str, Any], start: int, stop: int, seed: int
) -> float:
    """Load participants ``start..stop`` with COPY straight into the tables (no API).

    For sizes whose ingestion through the API would take too long on a shared machine;
    the data are distorted by the same client code. Returns responses per second.
    """
    import psycopg
    from django.db import connection

    from privacy.client import distort_table
    from surveys import tallies
    from surveys.models import Answer, Participant, Question, Response, Survey

    rng = np.random.default_rng(seed)
    questions = {q.key: q for q in Question.objects.filter(survey_id=survey)}
    labels = {
        q["key"]: {str(label): i for i, label in enumerate(q.get("categories") or [])}
        for q in scheme["questions"]
    }
    consultation = Survey.objects.get(pk=survey).consultation_id
    hour = __import__("surveys.ingest", fromlist=["this_hour"]).this_hour()
    began = time.perf_counter()
    connection.ensure_connection()
    raw = connection.connection
    with psycopg.Cursor(raw) as cursor:
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {Participant._meta.db_table}")
        next_participant = int(cursor.fetchone()[0]) + 1
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {Response._meta.db_table}")
        next_response = int(cursor.fetchone()[0]) + 1
    for first in range(start, stop, 100_000):
        size = min(100_000, stop - first)
        distorted = distort_table(scheme, _true_columns(size, rng), rng)
        participant_ids = np.arange(next_participant, next_participant + size)
        response_ids = np.arange(next_response, next_response + size)
        next_participant += size
        next_response += size
        with raw.transaction(), psycopg.Cursor(raw) as cursor:
            with cursor.copy(
                f"COPY {Participant._meta.db_table} (id, consultation_id, reference) FROM STDIN"
            ) as copy:
                for i in range(size):
                    copy.write_row((int(participant_ids[i]), consultation, f"p{first + i}"))
            with cursor.copy(
                f"COPY {Response._meta.db_table} (id, survey_id, participant_id, submitted_at) "
                "FROM STDIN"
            ) as copy:
                for i in range(size):
                    copy.write_row((int(response_ids[i]), survey, int(participant_ids[i]), hour))
            with cursor.copy(
                f"COPY {Answer._meta.db_table} "
                "(response_id, question_id, code, value, n_categories) FROM STDIN"
            ) as copy:
                for key, column in distorted.items():
                    question = questions[key]
                    values = np.asarray(column)
                    if question.is_discrete:
                        codes = np.vectorize(labels[key].__getitem__)(values.astype(str))
                        n = len(labels[key])
                        for rid, code in zip(response_ids.tolist(), codes.tolist(), strict=True):
                            copy.write_row((rid, question.pk, code, None, n))
                    else:
                        for rid, value in zip(
                            response_ids.tolist(), values.astype(float).tolist(), strict=True
                        ):
                            copy.write_row((rid, question.pk, None, value, 0))
            # The response tallies POST /analyses/ reads (surveys.tallies), same transaction.
            tallies.add(survey, {0: size, **{questions[key].pk: size for key in distorted}})
    with psycopg.Cursor(raw) as cursor:
        for model in (Participant, Response):
            table = model._meta.db_table
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT MAX(id) FROM {table}))"
            )
    return (stop - start) / (time.perf_counter() - began)


def _wait(conn: http.client.HTTPConnection, url: str, key: str, timeout: float = 600) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = _get(conn, url, key)
        if job["status"] in ("succeeded", "failed", "refused"):
            return job
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not finish in {timeout} s")


def end_to_end(conn: http.client.HTTPConnection, key: str, body: dict[str, Any]) -> float:
    began = time.perf_counter()
    status, created = _post(conn, "/api/v1/analyses/", json.dumps(body).encode(), key)
    if status != 202:
        raise RuntimeError(f"analysis refused: {status} {created}")
    job = _wait(conn, created["url"], key)
    elapsed = time.perf_counter() - began
    if job["status"] != "succeeded":
        raise RuntimeError(f"analysis {body['kind']} ended {job['status']}: {job['error']}")
    return elapsed


def _peak_rss_mb(roots: list[int]) -> float:
    """The largest VmHWM (peak resident set) of any process under ``roots``, in MB."""
    peak = 0
    for root in roots:
        for pid in _descendants(root):
            try:
                with open(f"/proc/{pid}/status") as status:
                    for line in status:
                        if line.startswith("VmHWM:"):
                            peak = max(peak, int(line.split()[1]))
            except OSError:
                continue
    return peak / 1024


def analyses(port: int, survey: int, key: str) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    count = {
        "survey": survey,
        "kind": "count",
        "where": [
            {"attribute": "sex", "op": "in", "value": ["F"]},
            {"attribute": "age", "op": "lte", "value": 30},
        ],
    }
    posts = []
    for _ in range(5):
        began = time.perf_counter()
        status, created = _post(conn, "/api/v1/analyses/", json.dumps(count).encode(), key)
        posts.append(time.perf_counter() - began)
        if status != 202:
            raise RuntimeError(f"POST /analyses/ failed: {status} {created}")
        _wait(conn, created["url"], key)  # one job at a time: the worker is shared
    figures = {"post": statistics.median(posts)}
    figures["count"] = end_to_end(conn, key, count)
    figures["mean"] = end_to_end(
        conn,
        key,
        {
            "survey": survey,
            "kind": "mean",
            "attribute": "income",
            "where": [{"attribute": "district", "op": "in", "value": ["N", "S"]}],
        },
    )
    figures["sample"] = end_to_end(
        conn,
        key,
        {
            "survey": survey,
            "kind": "sample",
            "size": 100,
            "seed": 7,
            "where": [{"attribute": "age", "op": "between", "value": [18, 40]}],
        },
    )
    began = time.perf_counter()
    status, created = _post(conn, f"/api/v1/surveys/{survey}/reports/", b"", key)
    if status != 202:
        raise RuntimeError(f"report refused: {status} {created}")
    report = _wait(conn, created["url"], key)
    figures["report"] = time.perf_counter() - began
    if report["status"] != "succeeded":
        raise RuntimeError(f"report ended {report['status']}: {report['error']}")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument(
        "--copy-above",
        type=int,
        default=None,
        help="load sizes above this with COPY instead of the bulk API (said in the output)",
    )
    parser.add_argument("--no-fail", action="store_true")
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)

    from tests.servers import free_port, running_services, start_worker

    results: dict[int, dict[str, float]] = {}
    rates: list[float] = []
    with running_services(durable=True) as env:
        env = {**env, "SUBMISSION_RATE_LIMIT": "100000000/minute"}
        survey, portal, analyst, scheme = _prepare(env)
        workdir = Path(env["INTEGRATION_WORKDIR"])
        loaded = 0
        copied: list[int] = []
        for size in sizes:
            if args.copy_above is not None and size > args.copy_above:
                copy_load(env, survey, scheme, loaded, size, seed=size)
                copied.append(size)
            else:
                port = free_port()
                server = _start_gunicorn(env, port, 2, 4, workdir / "gunicorn.log")
                try:
                    rates.append(ingest(port, survey, portal, scheme, loaded, size, seed=size))
                finally:
                    server.terminate()
                    server.wait(timeout=60)
            loaded = size
            from django.db import connection

            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
            # Fresh processes: their peak RSS is then the analyses' own.
            port = free_port()
            server = _start_gunicorn(env, port, 2, 4, workdir / "gunicorn.log")
            worker = start_worker(workdir, name="scale", extra_env=env)
            try:
                figures = analyses(port, survey, analyst)
                figures["rss_web"] = _peak_rss_mb([server.pid])
                figures["rss_worker"] = _peak_rss_mb([worker.process.pid])
            finally:
                worker.stop()
                server.terminate()
                server.wait(timeout=60)
            results[size] = figures
            print(f"[{size:,}] {figures}", flush=True)

    rows: list[tuple[str, str, str, str, bool | None]] = []
    for size, figures in results.items():
        base = BASELINE.get(size, {})
        for name, label in (
            ("post", "POST /analyses/ (s)"),
            ("count", "count, end to end (s)"),
            ("mean", "conditional mean (s)"),
            ("sample", "sample of 100 (s)"),
            ("report", "report of every question (s)"),
        ):
            target = TARGETS[name]
            checked = size >= 1_000_000 or name == "post"
            rows.append(
                (
                    f"n={size:,}: {label}",
                    f"{figures[name]:.3f}",
                    f"{base[name]:g}" if name in base else "—",
                    f"< {target:g}" if checked else "",
                    figures[name] < target if checked else None,
                )
            )
        web, worker_mb = base.get("rss", (None, None)) if base else (None, None)
        rows.append(
            (
                f"n={size:,}: peak RSS web / worker (MB)",
                f"{figures['rss_web']:.0f} / {figures['rss_worker']:.0f}",
                f"{web} / {worker_mb}" if web else "—",
                "",
                None,
            )
        )
    if len(results) >= 2:
        small, large = results[sizes[0]], results[sizes[-1]]
        growth = max(large["rss_web"] - small["rss_web"], large["rss_worker"] - small["rss_worker"])
        rows.append(
            (
                f"peak RSS growth {sizes[0]:,} -> {sizes[-1]:,} (MB, larger of web/worker)",
                f"{growth:.0f}",
                "483 / 459",
                f"< {RSS_GROWTH_TARGET_MB:g}",
                growth < RSS_GROWTH_TARGET_MB,
            )
        )
    rate = min(rates) if rates else 0.0
    rows.append(
        (
            f"ingest, {CLIENTS} clients (responses/s, 7 answers)",
            f"{rate:,.0f}",
            BASELINE_INGEST,
            f">= {INGEST_TARGET:,.0f}",
            rate >= INGEST_TARGET,
        )
    )
    print(
        f"\nScale benchmark: gunicorn 2 workers x 4 threads, 1 Celery worker, PostgreSQL "
        f"(durable), {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f} "
        "(other processes share the CPUs)"
    )
    print(f"{'measure':58} {'measured':>14} {'baseline':>12} {'target':>10}  ok")
    for name, value, baseline, target, ok in rows:
        mark = "" if ok is None else ("yes" if ok else "NO")
        print(f"{name:58} {value:>14} {baseline:>12} {target:>10}  {mark}")
    if copied:
        print(
            "participants up to "
            + ", ".join(f"{size:,}" for size in copied)
            + " were loaded with COPY (not through the API); the ingest rate is the API's"
        )
    missed = [row[0] for row in rows if row[4] is False]
    if missed:
        print("missed: " + "; ".join(missed))
    return 1 if missed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
