"""Every integer filter is bounded (issue 27): a query parameter beyond a 64-bit id is a
400 naming the parameter, never a database overflow (an HTML 500 before:
``GET /api/v1/surveys/?consultation=9223372036854775808``)."""

from __future__ import annotations

import pytest

from tests.factories import client_for, key_factory, organisation_factory

pytestmark = pytest.mark.django_db

TOO_BIG = str(2**63)


@pytest.mark.parametrize(
    ("path", "parameter"),
    [("/api/v1/surveys/", "consultation"), ("/api/v1/analyses/", "survey")],
)
def test_an_integer_filter_beyond_64_bits_is_a_400_naming_it(path, parameter):
    _, key = key_factory(organisation_factory(), "analyst")
    client = client_for(key)
    response = client.get(path, {parameter: TOO_BIG})
    assert response.status_code == 400, response.content[:200]
    assert parameter in response.json()["errors"]
    largest = client.get(path, {parameter: str(2**63 - 1)})
    assert largest.status_code == 200


def test_every_integer_query_parameter_of_the_schema_has_a_maximum():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    unbounded = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                kind = parameter.get("schema", {})
                if (
                    parameter.get("in") == "query"
                    and kind.get("type") == "integer"
                    and kind.get("maximum", 2**64) > 2**63 - 1
                ):
                    unbounded.append(f"{method.upper()} {path} ?{parameter['name']}")
    assert not unbounded
