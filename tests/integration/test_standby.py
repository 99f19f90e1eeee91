"""Analyses on a real streaming hot standby (issue 30): read-only, read-your-writes, lanes.

tests/servers.py starts the primary and a standby made with ``pg_basebackup -R``
(``hot_standby`` on) and exports its URLs: ``STANDBY_READER_URL`` logs in as a role whose
every transaction is read-only (``default_transaction_read_only``), ``STANDBY_DATABASE_URL``
as the superuser that pauses and resumes replay. Workers started here read the standby
through ``DATABASE_REPLICA_URL``; while they run, the session worker consumes no lane.
The tests wait for events (a job's status), never assert how long anything took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
import redis
from rest_framework.test import APIClient

from consultations.models import Organisation
from consultations.services import api_key_create, organisation_create
from reconstruction import services
from reconstruction.models import AnalysisJob, Job, Report
from surveys.models import Survey
from surveys.replicas import primary_wal_position
from surveys.services import responses_submit_bulk
from tests.factories import consultation_factory, survey_factory
from tests.reconstruction.data import distorted_consultation
from tests.servers import LANES, Worker, start_worker
from webhooks.models import Delivery, Webhook

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

HANG = 240  # ceilings of the waits below: they only catch a hang


def _standby(name: str) -> str:
    url = os.environ.get(name)
    if not url:
        pytest.fail(f"{name} is not set: run the integration tests through tests/servers.py")
    return url


@pytest.fixture
def no_other_workers() -> Iterator[None]:
    """The session worker (no standby) stops consuming every lane during the test."""
    from config.celery import app

    others = [name for reply in app.control.ping(timeout=1.0) or [] for name in reply]
    for lane in LANES if others else ():
        app.control.cancel_consumer(lane, destination=others, reply=True, timeout=5)
    yield
    for lane in LANES if others else ():
        app.control.add_consumer(lane, destination=others, reply=True, timeout=5)


@pytest.fixture
def standby_workers(worker_workdir: Path, no_other_workers: None) -> Iterator[Any]:
    """Start workers that read the standby; each is stopped after the test."""
    started: list[Worker] = []

    def start(name: str, wait_seconds: float, queues: tuple[str, ...] = LANES) -> Worker:
        worker = start_worker(
            worker_workdir,
            name=name,
            queues=queues,
            extra_env={
                "DATABASE_REPLICA_URL": _standby("STANDBY_READER_URL"),
                "ANALYSIS_REPLICA_WAIT_SECONDS": str(wait_seconds),
            },
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def replay() -> Iterator[psycopg.Connection[Any]]:
    """A superuser connection to the standby; replay is resumed whatever the test did."""
    connection = psycopg.connect(_standby("STANDBY_DATABASE_URL"), autocommit=True)
    yield connection
    connection.execute("SELECT pg_wal_replay_resume()")
    connection.close()


def wait_for(model: type[Job], pk: int, statuses: tuple[str, ...], worker: Worker) -> Any:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        job = model.objects.get(pk=pk)
        if job.status in statuses:
            return job
        time.sleep(0.1)
    raise AssertionError(f"{model.__name__} {pk} is {job.status}\n{worker.output()}")


def _replayed(replay: psycopg.Connection[Any], position: str) -> bool:
    row = replay.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [position]).fetchone()
    return bool(row and row[0])


def _primary_position() -> str:
    """Where the primary has inserted WAL: every commit so far lies before it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        return str(cursor.fetchone()[0])


def _caught_up(replay: psycopg.Connection[Any]) -> None:
    position = _primary_position()
    deadline = time.monotonic() + HANG
    while not _replayed(replay, position):
        assert time.monotonic() < deadline, "the standby never replayed the primary"
        time.sleep(0.05)


@pytest.fixture
def slow_wal_writer() -> Iterator[None]:
    """The primary's WAL writer wakes every 10 s instead of 200 ms during the test, so an
    asynchronous commit's record stays unwritten long enough to look at."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
        cursor.execute("SELECT pg_reload_conf()")
    time.sleep(0.5)  # the WAL writer has read the new delay
    yield
    with connection.cursor() as cursor:
        cursor.execute("ALTER SYSTEM RESET wal_writer_delay")
        cursor.execute("SELECT pg_reload_conf()")


def test_a_position_recorded_right_after_an_asynchronous_commit_lies_behind_it(
    replay: psycopg.Connection[Any], slow_wal_writer: None
) -> None:
    """These servers run with ``synchronous_commit = off``, as an operator may: a commit
    returns before the WAL writer has written its record. The position a job records
    (:func:`primary_wal_position`) must still lie after that commit, so a standby that
    has replayed it has the row. ``pg_current_wal_lsn()`` (the position written so far)
    lay before it, and a job right after a submission read a standby without it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("off",)
    _caught_up(replay)  # the WAL writer has just written everything: it sleeps 10 s now
    Organisation.objects.create(slug="async", name="Committed, not yet written")
    committed = _primary_position()  # at or after the commit's record, written or not
    position = primary_wal_position()
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::pg_lsn >= %s::pg_lsn", [position, committed])
        assert cursor.fetchone() == (True,), f"{position} lies before the commit ({committed})"
    deadline = time.monotonic() + HANG
    while not _replayed(replay, position):
        assert time.monotonic() < deadline, "the standby never replayed the position"
        time.sleep(0.05)
    with psycopg.connect(_standby("STANDBY_READER_URL"), autocommit=True) as reader:
        row = reader.execute(
            "SELECT name FROM consultations_organisation WHERE slug = 'async'"
        ).fetchone()
    assert row == ("Committed, not yet written",)


# --------------------------------------------------------------------------- read-only


def test_the_standby_is_a_read_only_streaming_replica(replay: psycopg.Connection[Any]) -> None:
    assert replay.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
    with psycopg.connect(_standby("STANDBY_READER_URL"), autocommit=True) as reader:
        assert reader.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader.execute("CREATE TEMPORARY TABLE probe (x int)")


def test_every_analysis_kind_and_the_report_run_on_the_read_only_standby(
    standby_workers: Any, replay: psycopg.Connection[Any]
) -> None:
    """Nothing on the analysis path writes through the replica alias: the worker's
    replica role opens read-only transactions on a hot standby, and every kind (count,
    mean, distribution, sample, panel) and a report succeed reading it."""
    organisation = organisation_create(slug="standby", name="Standby")
    data = distorted_consultation(organisation, n=800, seed=1414)
    worker = standby_workers("read-only", wait_seconds=120)
    women = [{"attribute": "sex", "op": "in", "value": ["F"]}]
    specs = [
        {"kind": "count", "where": [*women, {"attribute": "age", "op": "gt", "value": 40}]},
        {"kind": "mean", "attribute": "age", "where": women},
        {"kind": "distribution", "attribute": "district"},
        {"kind": "sample", "size": 10, "seed": 3, "where": women},
        {
            "kind": "panel",
            "size": 20,
            "reserves": 3,
            "seed": 7,
            "quotas": [
                {"where": women, "min": 8, "max": 12},
                {
                    "where": [{"attribute": "age", "op": "between", "value": [16, 30]}],
                    "min": 3,
                    "max": 6,
                },
            ],
        },
    ]
    jobs = [
        services.analysis_create(
            organisation=organisation, survey=data.profile, spec=spec, requested_by="tests"
        )
        for spec in specs
    ]
    report = services.report_create(
        organisation=organisation, survey=data.profile, requested_by="tests"
    )
    finished = [wait_for(AnalysisJob, job.pk, Job.FINISHED, worker) for job in jobs]
    finished.append(wait_for(Report, report.pk, Job.FINISHED, worker))
    for job in finished:
        assert job.status == "succeeded", (job, job.error, worker.output())
        assert job.read_from == "replica", job
        assert job.wal_lsn
    assert "cannot execute" not in worker.output()


# --------------------------------------------------------------------------- read-your-writes


def _survey_with_residents(organisation: Organisation, n: int) -> Survey:
    survey = survey_factory(
        consultation_factory(organisation),
        questions=[
            {
                "key": "sex",
                "type": "binary",
                "categories": ["F", "M"],
                "mechanism": {"name": "randomised_response", "retain": 0.8},
            }
        ],
    )
    _submit(survey, 0, n)
    return survey


def _submit(survey: Survey, start: int, n: int) -> None:
    rng = np.random.default_rng(start)
    responses_submit_bulk(
        survey=survey,
        responses=[
            {"participant": f"r{i}", "answers": {"sex": "FM"[int(rng.integers(2))]}}
            for i in range(start, start + n)
        ],
    )


def _analyst(organisation: Organisation) -> APIClient:
    client = APIClient()
    key = api_key_create(organisation=organisation, role="analyst").key
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _count(client: APIClient, survey: Survey) -> int:
    posted = client.post(
        "/api/v1/analyses/",
        {
            "survey": survey.pk,
            "kind": "count",
            "where": [{"attribute": "sex", "op": "in", "value": ["F"]}],
        },
        format="json",
    )
    assert posted.status_code == 202, posted.content
    return int(posted.json()["id"])


def test_an_analysis_right_after_a_submission_falls_back_to_the_primary_when_replay_lags(
    standby_workers: Any, replay: psycopg.Connection[Any]
) -> None:
    """Submit, then analyse at once while the standby's replay is paused: the worker waits
    its bound (1 s here), reads the primary instead and says so; the count includes the
    new residents."""
    organisation = organisation_create(slug="lagging", name="Lagging")
    survey = _survey_with_residents(organisation, 300)
    client = _analyst(organisation)
    worker = standby_workers("fallback", wait_seconds=1)
    _caught_up(replay)
    replay.execute("SELECT pg_wal_replay_pause()")
    _submit(survey, 300, 200)  # committed on the primary, not replayed
    job = wait_for(AnalysisJob, _count(client, survey), Job.FINISHED, worker)
    assert not _replayed(replay, job.wal_lsn)  # replay really was behind the request
    assert job.status == "succeeded", (job.error, worker.output())
    assert job.result["population"] == 500  # the 200 new residents are counted
    assert job.read_from == "primary"
    read = client.get(f"/api/v1/analyses/{job.pk}/").json()
    assert read["read_from"] == "primary"
    assert "has not replayed" in worker.output()


def test_an_analysis_right_after_a_submission_waits_for_the_standby_to_replay_it(
    standby_workers: Any, replay: psycopg.Connection[Any]
) -> None:
    """The same with a long bound: the job waits (running) while replay is paused, and
    once replay resumes it reads the standby, new residents included. A worker on the
    analyses lane alone also leaves a report queued meanwhile, and the six webhook
    deliveries the analysis queued wait in the webhooks lane: none ran in the job."""
    organisation = organisation_create(slug="waiting", name="Waiting")
    survey = _survey_with_residents(organisation, 300)
    for i in range(6):  # unreachable receivers: the lane's workers would time out on them
        Webhook.objects.create(organisation=organisation, url=f"https://10.255.0.{i}/hook",
                               events=["analysis.finished"], secret="s")  # fmt: skip
    broker = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    broker.delete("webhooks")
    client = _analyst(organisation)
    worker = standby_workers("waiting", wait_seconds=600, queues=("analyses",))
    _caught_up(replay)
    replay.execute("SELECT pg_wal_replay_pause()")
    _submit(survey, 300, 200)
    report = services.report_create(organisation=organisation, survey=survey, requested_by="t")
    job_id = _count(client, survey)
    running = wait_for(AnalysisJob, job_id, (Job.Status.RUNNING, *Job.FINISHED), worker)
    assert running.status == Job.Status.RUNNING  # waiting for the standby, not finished
    replay.execute("SELECT pg_wal_replay_resume()")
    job = wait_for(AnalysisJob, job_id, Job.FINISHED, worker)
    assert job.status == "succeeded", (job.error, worker.output())
    assert job.result["population"] == 500
    assert job.read_from == "replica"
    # The report's lane has no worker here: it waits, and it held up nothing.
    assert Report.objects.get(pk=report.pk).status == Job.Status.QUEUED
    # The job queues its deliveries just after it finished: wait for the six messages.
    deadline = time.monotonic() + HANG
    while broker.llen("webhooks") < 6:
        assert time.monotonic() < deadline, worker.output()
        time.sleep(0.05)
    deliveries = Delivery.objects.filter(webhook__organisation=organisation)
    assert sorted(deliveries.values_list("status", "attempts")) == [("pending", 0)] * 6
