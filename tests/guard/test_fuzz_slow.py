"""The long schemathesis run (issue 27, ``make test-slow``): every operation under
``/api/v1/`` from the project's own OpenAPI schema, positive and negative cases (values
out of the documented bounds among them), with a portal key and with an analyst key, 40
cases per operation and key; no answer is a server error and every body is JSON.
``tests/guard/test_fuzz.py`` runs the same check with 8 cases in the fast suite."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.guard.test_fuzz import _point_at_real_objects, json_or_empty, schema, world

__all__ = ["world"]  # the fixture, shared with the fast run


@pytest.mark.slow
@pytest.mark.parametrize("role", ["portal", "analyst"])
@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_no_operation_answers_with_a_server_error_long_run(case, world, role):
    _point_at_real_objects(case, world)
    case.call_and_validate(
        headers={"Authorization": f"Bearer {world['keys'][role]}"},
        checks=[not_a_server_error, json_or_empty],
    )
