"""Analysis requests refuse what they do not understand (api.md, Analyses: "Refused up front
with a 400 naming the rule").

DRF drops unknown keys silently: a quota with a misspelt ``mni`` used to run a panel with
only its ``max`` band checked, a ``label`` or an ``extra`` key anywhere was ignored. Now
every level of every kind (the request, its conditions, strata and quotas, and the
conditions inside those) answers 400 naming the unknown field and listing the known
ones, in the reader's language. Integers are JSON numbers: ``"size": "20"`` is a 400.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from consultations.models import Organisation
from reconstruction.models import AggregateReconstruction, AnalysisJob
from tests.reconstruction.conftest import client_for
from tests.reconstruction.test_panel_api import _exact_consultation

pytestmark = pytest.mark.django_db

URL = "/api/v1/analyses/"
SEX_F = {"attribute": "sex", "op": "in", "value": ["F"]}
SEX_M = {"attribute": "sex", "op": "in", "value": ["M"]}
YOUNG = {"attribute": "age", "op": "between", "value": [18, 40]}
CONDITION = "attribute, op, value"


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[tuple[APIClient, int]]:
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            analyst = client_for("north", "analyst")
            exact = _exact_consultation(Organisation.objects.get(slug="north"))
            yield analyst, exact.survey
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def bodies(survey: int) -> dict[str, dict[str, Any]]:
    """One good request of every kind, with every nested object the kind takes."""
    return {
        "count": {"survey": survey, "kind": "count", "where": [SEX_F, YOUNG]},
        "mean": {"survey": survey, "kind": "mean", "attribute": "age", "where": [SEX_F]},
        "distribution": {
            "survey": survey, "kind": "distribution", "attribute": "sex",
            "where": [YOUNG],
        },
        "sample": {
            "survey": survey, "kind": "sample", "size": 20, "seed": 7, "where": [YOUNG],
            "strata": [{"where": [SEX_F], "size": 10}, {"where": [SEX_M], "size": 10}],
        },
        "panel": {
            "survey": survey, "kind": "panel", "size": 20, "reserves": 2, "seed": 5,
            "objective": "maximin", "where": [{"attribute": "age", "op": "gt", "value": 17}],
            "quotas": [{"where": [SEX_F], "min": 9, "max": 11}],
        },
    }  # fmt: skip


# (kind, path to the object that gets the extra key, what that object lists as known)
TOP = (
    "after, after_attribute, attribute, kind, max_outside, method, objective, panel, quotas, "
    "reserves, seed, size, strata, survey, where"
)
LEVELS = [
    *[(kind, (), TOP) for kind in ("count", "mean", "distribution", "sample", "panel")],
    *[(kind, ("where", 0), CONDITION) for kind in ("count", "mean", "distribution")],
    ("count", ("where", 1), CONDITION),
    ("sample", ("where", 0), CONDITION),
    ("sample", ("strata", 1), "size, where"),
    ("sample", ("strata", 0, "where", 0), CONDITION),
    ("panel", ("where", 0), CONDITION),
    ("panel", ("quotas", 0), "max, min, where"),
    ("panel", ("quotas", 0, "where", 0), CONDITION),
]


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        data = data[step] if isinstance(data, list) or isinstance(step, str) else data[str(step)]
    return data


def post(client: APIClient, body: dict[str, Any], **headers: str) -> Any:
    before = AnalysisJob.objects.count()
    response = client.post(URL, body, format="json", **headers)
    if response.status_code != 202:
        assert AnalysisJob.objects.count() == before, "a refused request must not create a job"
    return response


@pytest.mark.parametrize(("kind", "path", "known"), LEVELS)
def test_an_unknown_field_at_any_level_is_a_400_naming_it(
    world: tuple[APIClient, int], kind: str, path: tuple[Any, ...], known: str
) -> None:
    analyst, survey = world
    good = bodies(survey)[kind]
    accepted = post(analyst, good)
    assert accepted.status_code == 202, accepted.json()  # the request itself is fine
    bad = copy.deepcopy(good)
    _at(bad, path)["label"] = "women"
    response = post(analyst, bad)
    assert response.status_code == 400, response.json()
    errors = response.json()["errors"]
    messages = _at(errors, path)["label"]
    assert messages == [f"Unknown field; {_object(path)} has {known}."], errors
    assert list(_at(errors, path)) == ["label"], "only the unknown field is wrong"


def _object(path: tuple[Any, ...]) -> str:
    if not path:
        return "an analysis request"
    return {"where": "a condition", "strata": "a stratum", "quotas": "a quota"}[path[-2]]


def test_a_misspelt_quota_bound_is_not_ignored(world: tuple[APIClient, int]) -> None:
    analyst, survey = world
    body = bodies(survey)["panel"]
    body["quotas"] = [{"where": [SEX_F], "mni": 9, "max": 11}]
    response = post(analyst, body)
    assert response.status_code == 400
    quota = response.json()["errors"]["quotas"]["0"]
    assert quota["mni"] == ["Unknown field; a quota has max, min, where."]
    assert quota["min"] == ["This field is required."]


def test_several_unknown_fields_are_all_named(world: tuple[APIClient, int]) -> None:
    analyst, survey = world
    body = {**bodies(survey)["count"], "group_by": "sex", "options": {"fast": True}}
    body["where"] = [{**SEX_F, "negate": True}]
    errors = post(analyst, body).json()["errors"]
    assert set(errors) == {"group_by", "options", "where"}, errors
    assert set(errors["where"]["0"]) == {"negate"}


def test_unknown_fields_are_named_in_the_readers_language(world: tuple[APIClient, int]) -> None:
    analyst, survey = world
    body = bodies(survey)["panel"]
    body["quotas"][0]["label"] = "Frauen"
    german = post(analyst, body, HTTP_ACCEPT_LANGUAGE="de").json()["errors"]
    polish = post(analyst, body, HTTP_ACCEPT_LANGUAGE="pl").json()["errors"]
    assert german["quotas"]["0"]["label"] == ["Unbekanntes Feld; eine Quote hat max, min, where."]
    assert polish["quotas"]["0"]["label"] == ["Nieznane pole; kwota ma pola max, min, where."]


@pytest.mark.parametrize(
    ("kind", "path", "field"),
    [
        ("count", (), "survey"),
        ("sample", (), "size"),
        ("sample", (), "seed"),
        ("sample", ("strata", 0), "size"),
        ("panel", (), "size"),
        ("panel", (), "reserves"),
        ("panel", ("quotas", 0), "min"),
        ("panel", ("quotas", 0), "max"),
    ],
)
def test_an_integer_given_as_a_json_string_is_a_400_naming_it(
    world: tuple[APIClient, int], kind: str, path: tuple[Any, ...], field: str
) -> None:
    analyst, survey = world
    body = bodies(survey)[kind]
    target = _at(body, path)
    target[field] = str(target[field])
    response = post(analyst, body)
    assert response.status_code == 400, response.json()
    assert _at(response.json()["errors"], path)[field] == [
        "A valid integer is required (a JSON number, not a string)."
    ]
    target[field] = float(target[field])  # a whole JSON number stays an integer
    assert post(analyst, body).status_code == 202


def test_an_aggregate_reconstruction_refuses_unknown_fields(
    world: tuple[APIClient, int],
) -> None:
    analyst, _survey = world
    body = {"counts": [23, 22], "channel": [[0.2, 0.8], [0.8, 0.2]], "method": "em_as"}
    url = "/api/v1/aggregate-reconstructions/"
    assert analyst.post(url, body, format="json").status_code == 202
    before = AggregateReconstruction.objects.count()
    response = analyst.post(url, {**body, "methd": "eq"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "methd": ["Unknown field; an aggregate reconstruction has channel, counts, method."]
    }
    assert AggregateReconstruction.objects.count() == before


NUMBER_IN_A_STRING = "A valid number is required (a JSON number, not a string)."


@pytest.mark.parametrize("language", ["en", "de", "pl"])
def test_a_decimal_given_as_a_json_string_is_a_400_naming_it(
    world: tuple[APIClient, int], language: str
) -> None:
    """``max_outside`` was the one number of an analysis request that DRF still read from a
    string (``FloatField``); it is refused like the integers, in the reader's language."""
    analyst, survey = world
    message = {
        "en": NUMBER_IN_A_STRING,
        "de": "Eine gültige Zahl ist erforderlich (eine JSON-Zahl, keine Zeichenkette).",
        "pl": "Wymagana jest poprawna liczba (liczba JSON, nie napis).",
    }[language]
    body = {**bodies(survey)["panel"], "max_outside": "0.5"}
    response = post(analyst, body, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 400, response.json()
    assert response.json()["errors"] == {"max_outside": [message]}
    body["max_outside"] = True  # not a number either (DRF read it as 1.0)
    assert post(analyst, body).json()["errors"] == {"max_outside": ["A valid number is required."]}
    body["max_outside"] = 0.5
    assert post(analyst, body).status_code == 202
    body["max_outside"] = 1  # a JSON integer is a number
    assert post(analyst, body).status_code == 202


@pytest.mark.parametrize(
    ("change", "errors"),
    [
        (("counts", 0, "23"), {"counts": {"0": [NUMBER_IN_A_STRING]}}),
        (("counts", 1, True), {"counts": {"1": ["A valid number is required."]}}),
        (("channel", 0, ["0.2", 0.8]), {"channel": {"0": {"0": [NUMBER_IN_A_STRING]}}}),
        (("channel", 1, [0.8, "2e-1"]), {"channel": {"1": {"1": [NUMBER_IN_A_STRING]}}}),
    ],
)
def test_aggregate_counts_and_channel_given_as_json_strings_are_a_400_naming_them(
    world: tuple[APIClient, int], change: tuple[str, int, Any], errors: dict[str, Any]
) -> None:
    analyst, _survey = world
    url = "/api/v1/aggregate-reconstructions/"
    body: dict[str, Any] = {"counts": [23, 22], "channel": [[0.2, 0.8], [0.8, 0.2]]}
    field, index, value = change
    bad = copy.deepcopy(body)
    bad[field][index] = value
    before = AggregateReconstruction.objects.count()
    response = analyst.post(url, bad, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["errors"] == errors
    assert AggregateReconstruction.objects.count() == before
    assert analyst.post(url, body, format="json").status_code == 202
