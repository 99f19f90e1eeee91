"""The analysis registry: one entry per kind, read by the serializer, the API and the worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reconstruction import registry
from reconstruction.models import AnalysisJob
from reconstruction.serializers import AnalysisRequestSerializer


def test_every_entry_names_a_default_among_its_methods() -> None:
    assert {"count", "mean", "distribution", "sample"} <= set(registry.KINDS)
    assert registry.kind_choices() == list(registry.KINDS)
    for kind in registry.KINDS.values():
        assert kind.default_method is None or kind.default_method in kind.methods


def test_the_model_checks_its_kind_against_the_registry_not_a_fixed_list(
    extra_kind: registry.AnalysisKind,
) -> None:
    from django.core.exceptions import ValidationError

    job = AnalysisJob(kind="tally")
    job.clean()  # a registered kind needs no migration
    job.kind = "nonsense"
    with pytest.raises(ValidationError, match="unknown kind 'nonsense'"):
        job.clean()


@pytest.fixture
def extra_kind() -> Iterator[registry.AnalysisKind]:
    from reconstruction.kinds import base

    entry = registry.register(
        registry.AnalysisKind(
            name="tally",
            summary="a test kind",
            methods=("fast", "slow"),
            default_method="fast",
            parse=lambda spec: base.KindRequest(**base.common_fields(spec, "fast")),
            gather=lambda request, progress: request,
            fit=lambda gathered: gathered,
            publish=lambda fitted: {"ok": True},
            published=lambda params, payload, questions: [],
            cost=lambda request: 0,
            attribute="required",
        )
    )
    yield entry
    del registry.KINDS["tally"]


def test_a_registered_kind_is_accepted_by_the_request_serializer(
    extra_kind: registry.AnalysisKind,
) -> None:
    ok = AnalysisRequestSerializer(
        data={"survey": 1, "kind": "tally", "attribute": "age", "method": "slow"}
    )
    assert ok.is_valid(), ok.errors
    missing = AnalysisRequestSerializer(data={"survey": 1, "kind": "tally"})
    assert not missing.is_valid()
    assert "tally needs the attribute" in str(missing.errors["attribute"])
    assert "`tally`: a test kind" not in registry.methods_description()
    assert "tally: `fast` (default), `slow`" in registry.methods_description()


def test_without_the_entry_the_kind_is_refused() -> None:
    serializer = AnalysisRequestSerializer(data={"survey": 1, "kind": "tally"})
    assert not serializer.is_valid()
    assert "kind" in serializer.errors
