"""SQL statistics on PostgreSQL (width_bucket) equal numpy's; the replica alias reads them.

The replica is a second alias on the same cluster (DATABASE_REPLICA_URL in production):
analyses read through it, writes and migrations stay on ``default``.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.surveys.statistics_cases import check_sql_equals_numpy, edges, participant, world

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def statistics_world(db: Any) -> tuple[Any, ...]:
    assert connection.vendor == "postgresql", "the integration suite runs on PostgreSQL"
    return world()


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(people=st.lists(participant, min_size=0, max_size=25), inner=edges)
def test_cell_statistics_in_postgresql_equal_numpy(
    statistics_world: tuple[Any, ...], people: list[Any], inner: list[float]
) -> None:
    check_sql_equals_numpy(*statistics_world, people, inner)
