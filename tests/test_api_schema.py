"""Property-based run of the consultations and surveys API against its own OpenAPI schema.

Schemathesis generates requests (valid and invalid) for every operation under
``/api/v1/consultations`` and ``/api/v1/surveys``, sends them to the Django WSGI app in
process with a valid analyst key, and checks that no answer is a server error, that every
status code is documented, and that every body matches the documented schema. Path ids
point at real objects for part of the examples, so the deeper code paths run too.
Bounded: a handful of examples per operation (well under a minute).
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application
from tests.factories import (
    consultation_factory,
    good_answers,
    key_factory,
    organisation_factory,
    survey_factory,
)

# The analyses and reports endpoints (reconstruction app) are covered by their own tests.
schema = (
    schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
    .include(path_regex=r"^/api/v1/(consultations|surveys)/")
    .exclude(path_regex=r"/reports/")
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture
def world(db):
    """An organisation with an open survey holding one response, and an analyst key."""
    from surveys.services import response_submit

    organisation = organisation_factory()
    _, key = key_factory(organisation, "analyst")
    consultation = consultation_factory(organisation)
    survey = survey_factory(consultation)
    response_submit(survey=survey, participant="p-1", answers=good_answers())
    return {"key": key, "consultation": consultation.pk, "survey": survey.pk}


@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_api_matches_its_schema(case, world):
    parameters = case.path_parameters or {}
    identifier = parameters.get("id")
    if isinstance(identifier, int) and identifier % 2 == 0:
        real = (
            world["consultation"]
            if case.path.startswith("/api/v1/consultations")
            else world["survey"]
        )
        parameters["id"] = real
    case.call_and_validate(headers={"Authorization": f"Bearer {world['key']}"}, checks=CHECKS)
