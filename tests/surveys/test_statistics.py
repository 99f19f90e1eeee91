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


def test_reports_on_an_edge_fall_in_the_bin_above_it(statistics_world: tuple[Any, ...]) -> None:
    """Whole-year ages exactly on the edges (the whole-number model's bins are cut at
    multiples of a half): counted from half units (surveys/joint_counts.py) they fall
    in the bin above the edge, as width_bucket puts them; one withdrawal, one without a
    profile."""
    people = [
        ((0, age), 5.0, False, False) for age in (19.5, 20.0, 20.0, 20.5, 21.0, 25.3, 30.0, 30.2)
    ] + [((1, 20.0), 4.0, True, False), (None, 3.0, False, False)]
    check_sql_equals_numpy(*statistics_world, people, [20.0, 20.5, 25.3, 30.0])
