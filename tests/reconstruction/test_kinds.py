"""The analysis kinds (issue 24): one module each, the worker's gather -> fit -> publish.

The golden test (tests/golden/) pins what every kind returns; these check the shape that
keeps it so: ``fit`` and ``publish`` read nothing from the database, and no code outside
``reconstruction/kinds/`` dispatches on a kind's name.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consultations.models import Organisation
from reconstruction import pipeline, registry
from tests.reconstruction.conftest import client_for
from tests.reconstruction.data import distorted_consultation

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "count", "where": [{"attribute": "sex", "op": "in", "value": ["F"]}]},
        {
            "kind": "count",
            "method": "naive",
            "where": [{"attribute": "age", "op": "lte", "value": 30}],
        },
        {
            "kind": "mean",
            "attribute": "income",
            "where": [{"attribute": "children", "op": "in", "value": ["Y"]}],
        },
        {"kind": "distribution", "attribute": "age"},
        {
            "kind": "distribution",
            "attribute": "district",
            "where": [{"attribute": "sex", "op": "in", "value": ["M"]}],
        },
    ],
    ids=["count", "naive-count", "mean", "distribution", "grouped-distribution"],
)
def test_fit_and_publish_read_nothing_from_the_database(spec: dict[str, Any]) -> None:
    client_for("north", "analyst")
    data = distorted_consultation(Organisation.objects.get(slug="north"), n=600, seed=24)
    request = pipeline.validate_request(data.profile, {**spec, "survey": data.profile.pk})
    kind = registry.get(spec["kind"])
    stages: list[str] = []
    gathered = kind.gather(request, lambda fraction: stages.append("progress"))
    with CaptureQueriesContext(connection) as queries:
        fitted = kind.fit(gathered)
        payload = kind.publish(fitted)
    assert [q["sql"] for q in queries.captured_queries] == []
    assert payload == pipeline.compute(request, lambda fraction: None)


def _kind_comparisons(path: Path, names: set[str]) -> list[str]:
    """Comparisons of a kind's name with a string literal (``kind == "panel"``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        parts = [node.left, *node.comparators]
        literals = {p.value for p in parts if isinstance(p, ast.Constant)}
        named = any(
            (isinstance(p, ast.Attribute) and p.attr == "kind")
            or (isinstance(p, ast.Name) and p.id in ("kind", "name"))
            for p in parts
        )
        if named and literals & names:
            found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_code_outside_the_kinds_compares_a_kind_to_its_name() -> None:
    names = set(registry.KINDS)
    kinds = REPO / "reconstruction" / "kinds"
    found = []
    for package in ("reconstruction", "surveys", "consultations", "config", "core", "webhooks"):
        for path in sorted((REPO / package).rglob("*.py")):
            if kinds in path.parents or "migrations" in path.parts:
                continue
            found += _kind_comparisons(path, names)
    assert found == []


def test_every_kind_is_one_module_that_the_registry_maps() -> None:
    modules = sorted(p.stem for p in (REPO / "reconstruction" / "kinds").glob("*.py"))
    assert [m for m in modules if m not in ("__init__", "base")] == sorted(registry.KINDS)
    for name, kind in registry.KINDS.items():
        assert type(kind.parse({"kind": name, "size": 1})).__module__ == (
            f"reconstruction.kinds.{name}"
        )


def test_the_operators_are_the_ones_the_engine_evaluates() -> None:
    """One list of condition operators (reconstruction/conditions.py); the engine's
    ``Op`` names the same ones, so a new operator cannot reach one side only."""
    from typing import get_args

    from reconstruction.algorithms.queries.conditions import Condition, Op
    from reconstruction.conditions import CONTINUOUS_OPS, DISCRETE_OPS, OPERATORS

    assert set(OPERATORS) == set(get_args(Op))
    assert set(DISCRETE_OPS) | set(CONTINUOUS_OPS) == set(OPERATORS)
    for op in DISCRETE_OPS:
        assert Condition("x", op, frozenset({0})).op == op  # type: ignore[arg-type]
    for op in CONTINUOUS_OPS:
        value = (1.0, 2.0) if op == "between" else 1.0
        assert Condition("x", op, value).op == op  # type: ignore[arg-type]
