"""Statistics computed in SQL (surveys/statistics.py) equal numpy's on the same data (SQLite).

tests/integration/test_statistics_postgres.py runs the same property on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.surveys.statistics_cases import check_sql_equals_numpy, edges, participant, world


@pytest.fixture
def statistics_world(db: Any) -> tuple[Any, ...]:
    return world()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(people=st.lists(participant, min_size=0, max_size=25), inner=edges)
def test_cell_statistics_in_sql_equal_numpy(
    statistics_world: tuple[Any, ...], people: list[Any], inner: list[float]
) -> None:
    check_sql_equals_numpy(*statistics_world, people, inner)
