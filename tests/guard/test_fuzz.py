"""Fuzzing (issue 13): every API operation with both roles, and the request parsers.

- Schemathesis generates valid and invalid requests for **every** operation under
  ``/api/v1/`` from the OpenAPI schema and sends them with a portal key and with an
  analyst key; no answer may be a server error, and every answer is JSON.
  (tests/test_api_schema.py checks the documented shapes of the consultations and surveys
  operations; this run is about 5xx.)
- Hypothesis feeds the JSON parser, the question parser and the response checker
  extreme numbers (400-digit integers, 1e308, -0.0, subnormals) and strings (newlines,
  NUL, astral characters): each gives a value or a named error, never an exception.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from config import parsers
from config.wsgi import application
from surveys import answers as answer_rules
from surveys import schemes
from tests.factories import (
    consultation_factory,
    good_answers,
    key_factory,
    organisation_factory,
    profile_questions,
    survey_factory,
)

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application).include(
    path_regex=r"^/api/v1/"
)


def json_or_empty(ctx, response, case) -> None:
    """Every answer with a body is JSON (an HTML error page is a finding)."""
    headers = {str(k).lower(): v for k, v in dict(response.headers).items()}
    kind = headers.get("content-type", "")
    kind = kind[0] if isinstance(kind, list) and kind else str(kind)
    body = response.content or b""
    path = case.path
    if not body or "/download/" in path or path.endswith(".csv"):
        return
    researcher_export = path.startswith("/api/v1/surveys/") and path.endswith("/export/")
    if researcher_export and response.status_code == 200:
        # the researcher export is a zip file; its errors are JSON like everything else
        assert kind.startswith("application/zip"), f"{case.method} {path}: {kind}"
        return
    assert "json" in kind, f"{case.method} {path}: {response.status_code} {kind}"


@pytest.fixture
def world(db, settings):
    """An organisation with an open survey holding one response, and both keys."""
    from django.core.cache import cache

    from surveys.services import response_submit

    cache.clear()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
        },
    }
    organisation = organisation_factory()
    _, analyst = key_factory(organisation, "analyst")
    _, portal = key_factory(organisation, "portal")
    consultation = consultation_factory(organisation)
    survey = survey_factory(consultation)
    response_submit(survey=survey, participant="p-1", answers=good_answers())
    return {
        "keys": {"analyst": analyst, "portal": portal},
        "consultation": consultation.pk,
        "survey": survey.pk,
    }


def _point_at_real_objects(case, world) -> None:
    for name in ("id", "pk", "survey_id"):
        parameters = case.path_parameters or {}
        value = parameters.get(name)
        if isinstance(value, int) and value % 2 == 0:
            parameters[name] = (
                world["consultation"]
                if case.path.startswith("/api/v1/consultations")
                else world["survey"]
            )


@pytest.mark.parametrize("role", ["portal", "analyst"])
@schema.parametrize()
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_no_operation_answers_with_a_server_error(case, world, role):
    _point_at_real_objects(case, world)
    case.call_and_validate(
        headers={"Authorization": f"Bearer {world['keys'][role]}"},
        checks=[not_a_server_error, json_or_empty],
    )


# --------------------------------------------------------------------------- parsers

EXTREME_NUMBERS = st.one_of(
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e308, -1e308, 5e-324, -0.0, 2**63, -(2**63) - 1, 10**19]),
)
EXTREME_STRINGS = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["p1\n", "sex\n", "\x00", "\U0001f600", " ", "a" * 65, "é", "\u2028"]),
)
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), EXTREME_NUMBERS, EXTREME_STRINGS),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(EXTREME_STRINGS, children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=JSONISH)
def test_the_json_parser_bounds_every_number(value):
    text = json.dumps(value)
    parsed = parsers.loads(text)

    def numbers(node):
        if isinstance(node, dict):
            for child in node.values():
                yield from numbers(child)
        elif isinstance(node, list):
            for child in node:
                yield from numbers(child)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            yield node

    for number in numbers(parsed):
        assert isinstance(number, float) or abs(number) < 10**19


@settings(max_examples=50, deadline=None)
@given(depth=st.integers(33, 3000))
def test_the_json_parser_refuses_deep_nesting_with_a_message(depth):
    with pytest.raises(ValueError, match="nested deeper than 32"):
        parsers.loads("[" * depth + "]" * depth)


QUESTION = st.fixed_dictionaries(
    {
        "key": EXTREME_STRINGS,
        "type": st.sampled_from([*schemes.QUESTION_TYPES, "x"]),
    },
    optional={
        "categories": st.lists(EXTREME_STRINGS, max_size=6),
        "range": st.lists(EXTREME_NUMBERS, min_size=0, max_size=3),
        "mechanism": st.fixed_dictionaries(
            {
                "name": st.sampled_from(
                    [*schemes.DISCRETE_MECHANISMS, *schemes.CONTINUOUS_MECHANISMS]
                )
            },
            optional={
                "sigma": EXTREME_NUMBERS,
                "half_width": EXTREME_NUMBERS,
                "scale": EXTREME_NUMBERS,
                "retain": EXTREME_NUMBERS,
            },
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(raw=QUESTION)
def test_the_question_parser_accepts_or_names_the_problem(raw):
    raw = parsers.loads(json.dumps(raw))  # as the API receives it
    try:
        spec = schemes.parse_question(raw)
    except schemes.QuestionInvalid as exc:
        assert exc.errors and all(isinstance(v, list) and v for v in exc.errors.values())
        return
    assert schemes.KEY_PATTERN.fullmatch(spec.key)
    if spec.range is not None:
        assert all(abs(v) <= schemes.RANGE_BOUND for v in spec.range)


@pytest.fixture
def answer_form(db):
    from surveys.selectors import survey_answer_form

    organisation = organisation_factory()
    survey = survey_factory(consultation_factory(organisation), questions=profile_questions())
    return survey_answer_form(survey)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    participant=EXTREME_STRINGS,
    answers=st.dictionaries(
        st.sampled_from(["sex", "age", "income", "district", "nope", "age\n"]),
        st.one_of(EXTREME_NUMBERS, EXTREME_STRINGS, st.none()),
        max_size=8,
    ),
)
def test_the_response_checker_accepts_or_names_the_problem(answer_form, participant, answers):
    item = parsers.loads(json.dumps({"participant": participant, "answers": answers}))
    ref, rows, errors = answer_rules.check_response(item, answer_form)
    if errors:
        return
    assert ref is not None and schemes.PARTICIPANT_PATTERN.fullmatch(ref)
    for _, _, value, _ in rows:
        assert value is None or abs(value) < 1e15
