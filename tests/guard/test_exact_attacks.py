"""Issue 26: every attack of the adversarial pass is refused or recovers nothing exact
(SQLite, tasks in-process; the same replay on PostgreSQL is
``tests/integration/test_exact_attacks_postgres.py``)."""

from __future__ import annotations

import pytest

from tests.guard import exact_attacks

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _run_jobs(monkeypatch):
    """Queue jobs at once (the tests' transaction never commits)."""
    from django.db import transaction

    monkeypatch.setattr(transaction, "on_commit", lambda func, using=None, robust=False: func())


@pytest.fixture
def world(db):
    return exact_attacks.make_world()


@pytest.mark.parametrize("name", sorted(exact_attacks.ATTACKS))
def test_the_attack_recovers_nothing_exact(world, name):
    recovered = exact_attacks.ATTACKS[name](world)
    assert recovered is None, f"attack {name} recovered {recovered!r}"
