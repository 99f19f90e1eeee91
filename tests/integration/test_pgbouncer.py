"""The platform behind PgBouncer in transaction mode (issue 9, "Horizontal scale").

Debian's ``pgbouncer`` (tests/servers.py installs it when missing; a missing one fails,
never skips) runs on loopback in front of the test PostgreSQL with ``pool_mode =
transaction``. gunicorn (``config/gunicorn.py``) and a real Celery worker are started with
``DATABASE_URL`` pointing at the pooler and ``DATABASE_POOLER=transaction``: their only
way to the database is through it. Through the HTTP API they take single and bulk
submissions (and refuse a bad batch and a repeated participant with nothing stored),
then run a count and a sample (the sample streams its rows from a named cursor inside a
transaction) on the worker. PgBouncer's own statistics show the traffic went through it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
import requests
from django.db import connection

from consultations.services import api_key_create
from surveys.models import Answer, Response
from tests.factories import consultation_factory, organisation_factory, survey_factory
from tests.servers import REPO, free_port, pgbouncer_server, start_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

QUESTIONS = [
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
]


@pytest.fixture
def bouncer(worker_workdir: Path) -> Iterator[dict[str, str]]:
    """PgBouncer (transaction mode) in front of the test database; its URLs."""
    db = connection.settings_dict
    direct = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    workdir = worker_workdir / f"pgbouncer-{time.monotonic_ns()}"
    with pgbouncer_server(workdir, direct, pool_mode="transaction") as url:
        yield {
            "url": url,
            "admin": url.rsplit("/", 1)[0] + "/pgbouncer",
            "database": str(db["NAME"]),
            "log": str(workdir / "pgbouncer.log"),
        }


@contextlib.contextmanager
def web_server(env: dict[str, str], log: Path) -> Iterator[str]:
    """gunicorn with the production configuration, 1 worker x 4 threads; its base URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"],
        cwd=REPO,
        env={
            **env,
            "GUNICORN_BIND": f"127.0.0.1:{port}",
            "GUNICORN_WORKERS": "1",
            "GUNICORN_THREADS": "4",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "pgbouncer-test-" + "x" * 50,
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        },
        stdout=subprocess.DEVNULL,
        stderr=open(log, "ab"),  # noqa: SIM115  (the server process owns it)
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            with contextlib.suppress(requests.ConnectionError):
                if requests.get(base + "/healthz", timeout=5).status_code in (200, 503):
                    break
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def admin_show(admin_url: str, what: str) -> list[dict[str, Any]]:
    """A ``SHOW ...`` of PgBouncer's admin console (simple query protocol, autocommit)."""
    with psycopg.connect(admin_url, autocommit=True) as admin:
        cursor = admin.cursor()
        cursor.execute(f"SHOW {what}".encode())  # bytes and no parameters: a simple query
        names = [column.name for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def wait_for(base: str, url: str, key: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = requests.get(
            base + url if url.startswith("/") else url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        ).json()
        if body["status"] in ("succeeded", "failed", "refused"):
            return body
        time.sleep(0.2)
    raise AssertionError(f"{url} did not finish within {timeout} s")


def test_submissions_and_analyses_run_through_pgbouncer_in_transaction_mode(
    bouncer: dict[str, str], worker_workdir: Path, tmp_path: Path
) -> None:
    assert connection.vendor == "postgresql"
    organisation = organisation_factory()
    survey = survey_factory(consultation_factory(organisation), questions=QUESTIONS)
    portal = api_key_create(organisation=organisation, role="portal").key
    analyst = api_key_create(organisation=organisation, role="analyst").key
    # The web server and the worker reach the database only through the pooler, and use
    # a broker database of their own (no other test's worker takes their tasks).
    broker = os.environ["CELERY_BROKER_URL"].rsplit("/", 1)[0] + "/5"
    env = {
        **os.environ,
        "DATABASE_URL": bouncer["url"],
        "DATABASE_POOLER": "transaction",
        "CELERY_BROKER_URL": broker,
        "SUBMISSION_RATE_LIMIT": "100000/minute",
    }
    env.pop("DATABASE_REPLICA_URL", None)
    before = {
        row["database"]: row["total_xact_count"] for row in admin_show(bouncer["admin"], "STATS")
    }
    rng = np.random.default_rng(11)

    def answers() -> dict[str, Any]:
        return {"sex": "FM"[int(rng.integers(2))], "age": round(float(rng.uniform(20, 90)), 1)}

    submit = f"/api/v1/surveys/{survey.pk}/responses/"
    bulk = f"/api/v1/surveys/{survey.pk}/responses/bulk/"
    as_portal = {"Authorization": f"Bearer {portal}"}
    as_analyst = {"Authorization": f"Bearer {analyst}"}
    with web_server(env, tmp_path / "gunicorn.log") as base:
        # Single submissions: each is one statement, in autocommit, on whichever server
        # connection the pooler hands out.
        for i in range(20):
            sent = requests.post(
                base + submit,
                json={"participant": f"one-{i}", "answers": answers()},
                headers=as_portal,
                timeout=30,
            )
            assert sent.status_code == 201, sent.text
            assert sent.json()["withdrawal_token"]
        # Bulk submissions: one transaction of several statements and a binary COPY.
        for batch in range(3):
            sent = requests.post(
                base + bulk,
                json={
                    "responses": [
                        {"participant": f"bulk-{batch}-{i}", "answers": answers()}
                        for i in range(200)
                    ]
                },
                headers=as_analyst,  # bulks of 200: a server-side key
                timeout=60,
            )
            assert sent.status_code == 201, sent.text
            assert sent.json()["created"] == 200
        # A bad item and a participant who already answered: 4xx naming them, and the
        # rolled-back transactions leave nothing behind on the pooled connections.
        bad = requests.post(
            base + bulk,
            json={
                "responses": [
                    {"participant": "late-1", "answers": answers()},
                    {"participant": "late-2", "answers": {"sex": "X", "age": 30}},
                ]
            },
            headers=as_portal,
            timeout=30,
        )
        assert bad.status_code == 400, bad.text
        assert "1" in bad.json()["errors"]["responses"]
        again = requests.post(
            base + bulk,
            json={
                "responses": [
                    {"participant": "late-3", "answers": answers()},
                    {"participant": "bulk-0-7", "answers": answers()},
                ]
            },
            headers=as_portal,
            timeout=30,
        )
        assert again.status_code == 409, again.text
        assert "bulk-0-7" in str(again.json()["errors"])
        stored = Response.objects.filter(survey=survey)
        assert stored.count() == 620
        assert not stored.filter(participant__reference__startswith="late-").exists()
        assert Answer.objects.filter(response__survey=survey).count() == 620 * 2

        worker = start_worker(worker_workdir, name="pgbouncer", extra_env=env)
        try:
            count = requests.post(
                base + "/api/v1/analyses/",
                json={
                    "survey": survey.pk,
                    "kind": "count",
                    "where": [
                        {"attribute": "sex", "op": "in", "value": ["F"]},
                        {"attribute": "age", "op": "gt", "value": 40},
                    ],
                },
                headers=as_analyst,
                timeout=30,
            )
            assert count.status_code == 202, count.text
            done = wait_for(base, count.json()["url"], analyst)
            assert done["status"] == "succeeded", done
            assert 0 < done["result"]["estimate"] < 620
            sample = requests.post(
                base + "/api/v1/analyses/",
                json={
                    "survey": survey.pk,
                    "kind": "sample",
                    "size": 10,
                    "seed": 3,
                    "where": [{"attribute": "age", "op": "gt", "value": 30}],
                },
                headers=as_analyst,
                timeout=30,
            )
            assert sample.status_code == 202, sample.text
            drawn = wait_for(base, sample.json()["url"], analyst)
            assert drawn["status"] == "succeeded", drawn
            participants = drawn["result"]["participants"]
            assert len(participants) == 10 and len(set(participants)) == 10
            assert all(ref.startswith(("one-", "bulk-")) for ref in participants)
            assert "succeeded" in worker.output()
        finally:
            worker.stop()
    after = {
        row["database"]: row["total_xact_count"] for row in admin_show(bouncer["admin"], "STATS")
    }
    # 20 single + 5 bulk submissions, two jobs read and written by the worker, each in
    # several transactions, all counted by the pooler for the test database.
    through = after.get(bouncer["database"], 0) - before.get(bouncer["database"], 0)
    assert through >= 40, (before, after)
    pools = [row for row in admin_show(bouncer["admin"], "POOLS") if row["database"] != "pgbouncer"]
    assert [row["pool_mode"] for row in pools] == ["transaction"], pools
