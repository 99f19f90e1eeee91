"""Issue 26's attacks replayed on the real stack: PostgreSQL computes the counts and the
cell keys' sums, a real Celery worker runs the jobs (the SQLite replay is
``tests/guard/test_exact_attacks.py``)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.guard import exact_attacks
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("name", sorted(exact_attacks.ATTACKS))
def test_the_attack_recovers_nothing_exact_on_postgresql(
    celery_worker_process: Worker, name: str
) -> None:
    assert connection.vendor == "postgresql", "the integration suite runs on PostgreSQL"
    from django.core.cache import cache

    cache.clear()
    world = exact_attacks.make_world()
    recovered = exact_attacks.ATTACKS[name](world)
    assert recovered is None, f"attack {name} recovered {recovered!r}"
