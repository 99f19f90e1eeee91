"""Fixtures for tests against the real servers started by tests/servers.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import Worker, start_worker


@pytest.fixture(scope="session")
def worker_workdir() -> Path:
    return Path(os.environ["INTEGRATION_WORKDIR"])


@pytest.fixture(scope="session")
def celery_worker_process(worker_workdir: Path, django_db_setup: None) -> Iterator[Worker]:
    """One real ``celery worker`` process for the session (migrations already applied)."""
    worker = start_worker(worker_workdir, name="session-worker")
    yield worker
    worker.stop()
