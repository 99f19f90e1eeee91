"""A job whose worker was killed (-9) while it ran: the lease logic deals with it (issue 13).

Real PostgreSQL, Redis and Celery workers (tests/servers.py). The workers here run with
a lease of a few seconds (``JOBS_LEASE_SECONDS``) and a visibility timeout of an hour,
so Redis never hands the dead worker's message back during the test: whatever happens to
the job is the lease logic's doing (``jobs_requeue_stuck``, run when a worker starts and
from beat). The waits are on events (a job's status, the lease's end) with generous
ceilings that only catch a hang; nothing asserts how long anything took.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from consultations.models import Organisation
from reconstruction.models import AggregateReconstruction, Job
from tests.integration import test_jobs_reliability as reliability
from tests.integration.test_jobs_reliability import HANG, LONG_K, aggregate, wait_for, wait_for_log
from tests.servers import Worker, start_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# The reliability tests' fixtures (an organisation, workers stopped after the test,
# other workers kept off the queue).
organisation = reliability.organisation
workers = reliability.workers
only_our_workers = reliability.only_our_workers

LEASE = 5
LEASE_LIMITS = {
    "CELERY_TASK_SOFT_TIME_LIMIT": "40",
    "CELERY_TASK_TIME_LIMIT": "45",
    "CELERY_VISIBILITY_TIMEOUT": "3600",
    "JOBS_LEASE_SECONDS": str(LEASE),
    "JOBS_MAX_ATTEMPTS": "3",
}


@pytest.fixture
def forget_dead_deliveries() -> Iterator[list[int]]:
    """Drop the killed worker's unacknowledged messages of the test's jobs afterwards.

    They would otherwise come back, an hour-old, in the start-up sweep of a later test's
    worker with a short visibility timeout and be counted as its deliveries.
    """
    job_ids: list[int] = []
    yield job_ids
    import redis

    client = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    for tag, raw in client.hgetall("unacked").items():
        try:
            headers = json.loads(raw)[0]["headers"]
        except (ValueError, KeyError, IndexError, TypeError):
            continue
        if any(headers.get("argsrepr") == f"({pk},)" for pk in job_ids):
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


def _run_and_kill(
    organisation: Organisation, workers: list[Worker], job_ids: list[int], worker_workdir
) -> AggregateReconstruction:
    doomed = start_worker(worker_workdir, name="lease-doomed", extra_env=LEASE_LIMITS)
    workers.append(doomed)
    job = aggregate(organisation, k=LONG_K)
    job_ids.append(job.pk)
    job = wait_for(AggregateReconstruction, job.pk, (Job.Status.RUNNING,), HANG, doomed)
    doomed.kill()  # SIGKILL of the main process and its pool child
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.attempts == 1 and job.result is None
    # Wait for the event "the lease has run out" (its ceiling only catches a hang).
    assert job.started_at is not None
    ends = job.started_at + timedelta(seconds=LEASE + 1)
    deadline = time.monotonic() + HANG
    while timezone.now() < ends:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return job


def test_a_job_whose_worker_was_killed_is_requeued_by_the_next_worker(
    worker_workdir,
    organisation: Organisation,
    only_our_workers: None,
    workers: list[Worker],
    forget_dead_deliveries: list[int],
) -> None:
    job = _run_and_kill(organisation, workers, forget_dead_deliveries, worker_workdir)
    rescuer = start_worker(worker_workdir, name="lease-rescuer", extra_env=LEASE_LIMITS)
    workers.append(rescuer)
    # Its start-up re-queues the job past its lease (not Redis: visibility is an hour).
    wait_for_log(rescuer, lambda: "re-queued 1 stuck jobs at start-up" in rescuer.output())
    job = wait_for(AggregateReconstruction, job.pk, Job.FINISHED, HANG, rescuer)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.attempts == 2
    assert len(job.result["counts"]) == LONG_K
    rescuer.stop()


def test_a_job_whose_worker_died_too_often_fails_with_the_reason(
    worker_workdir,
    organisation: Organisation,
    only_our_workers: None,
    workers: list[Worker],
    forget_dead_deliveries: list[int],
) -> None:
    job = _run_and_kill(organisation, workers, forget_dead_deliveries, worker_workdir)
    strict = {**LEASE_LIMITS, "JOBS_MAX_ATTEMPTS": "1"}
    rescuer = start_worker(worker_workdir, name="lease-strict", extra_env=strict)
    workers.append(rescuer)
    job = wait_for(AggregateReconstruction, job.pk, Job.FINISHED, HANG, rescuer)
    assert job.status == Job.Status.FAILED
    assert "worker stopped before it finished" in job.error
    assert job.result is None and job.attempts == 1
    rescuer.stop()
