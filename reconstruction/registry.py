"""The analysis kinds: one registry entry each (count, mean, distribution, sample).

Every place that needs to know about a kind reads its entry here: the request
serializer (kinds, method names, which fields a kind takes), the API's OpenAPI text, the
service that validates a request and the worker that computes it. There is no other
list of methods and no ``if kind == ...`` chain.

Adding a kind (e.g. ``panel``) is one :func:`register` call with an
:class:`AnalysisKind`; the model's ``kind`` choices and check constraint need the name
too (a migration).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from reconstruction import analysis
from reconstruction.algorithms import queries
from reconstruction.algorithms.methods import DISCRETE_METHODS
from reconstruction.analysis import (
    AnalysisInputError,
    AnalysisRequest,
    PreparedAnalysis,
    interval_json,
)
from reconstruction.jobs import JobRefused

Progress = Callable[[float], None]


def _no_check(request: AnalysisRequest) -> None:
    del request


@dataclass(frozen=True)
class AnalysisKind:
    """One analysis kind: what it accepts, how it is checked, computed and published.

    The contract of an entry:

    ``name``
        The ``kind`` of api.md's request (also the model's ``AnalysisJob.kind``).
    ``summary``
        One sentence for the API documentation.
    ``methods`` / ``default_method``
        Every method name the kind accepts and the one used when the request names
        none. ``methods_for(request)`` narrows them for a particular request (e.g. a
        distribution of a discrete vs. a continuous question); default: ``methods``.
    ``attribute``
        ``"required"``: the request names the question analysed (``attribute``);
        ``"forbidden"``: it must not.
    ``needs_where``
        The request needs at least one condition.
    ``sampling``
        The kind takes ``size``, ``seed`` and ``strata`` (no other kind may).
    ``group_threshold``
        The disclosure threshold a condition's estimated group must reach:
        ``"min_cell"`` (option-level) or ``"min_responses"`` (question-level),
        002_f0fd5869fe299975.txt.
    ``validate(request)``
        Request-time checks that need the schema only (question types, whether a method
        fits a channel): raise :class:`~reconstruction.analysis.AnalysisInputError`. It
        must not read answers.
    ``precheck(prepared, group)``
        Further refusals once the answers are loaded and the group estimated (e.g. a
        sample larger than its pool): raise ``AnalysisInputError``.
    ``compute(prepared, progress)``
        Runs the engine once and returns api.md's result JSON with disclosure control
        applied (suppressed cells, refusals as :class:`~reconstruction.jobs.JobRefused`
        naming the threshold, never a below-threshold number). Call ``progress`` with
        fractions in ``[0, 1]``.
    """

    name: str
    summary: str
    methods: tuple[str, ...]
    default_method: str | None
    compute: Callable[[PreparedAnalysis, Progress], dict[str, Any]]
    attribute: Literal["required", "forbidden"] = "forbidden"
    needs_where: bool = False
    sampling: bool = False
    group_threshold: Literal["min_cell", "min_responses"] = "min_responses"
    methods_for: Callable[[AnalysisRequest], tuple[str, ...]] | None = None
    validate: Callable[[AnalysisRequest], None] = _no_check
    precheck: Callable[[PreparedAnalysis, float], None] = field(
        default=lambda prepared, group: None
    )

    def allowed_methods(self, request: AnalysisRequest) -> tuple[str, ...]:
        return self.methods if self.methods_for is None else self.methods_for(request)

    def threshold(self, request: AnalysisRequest) -> int:
        return int(getattr(request.thresholds, self.group_threshold))


KINDS: dict[str, AnalysisKind] = {}


def register(kind: AnalysisKind) -> AnalysisKind:
    """Add (or replace) a kind; returns it so it can be used as a value."""
    KINDS[kind.name] = kind
    return kind


def get(name: str) -> AnalysisKind:
    try:
        return KINDS[name]
    except KeyError:
        raise AnalysisInputError(
            {"kind": f"unknown kind {name!r}; choose one of {', '.join(KINDS)}"}
        ) from None


def all_methods() -> tuple[str, ...]:
    """Every method name of every kind, each once (the serializer's choices)."""
    return tuple(dict.fromkeys(m for kind in KINDS.values() for m in kind.methods))


def methods_description() -> str:
    """The methods of each kind for the API documentation."""
    parts = []
    for kind in KINDS.values():
        names = ", ".join(
            f"`{m}`" + (" (default)" if m == kind.default_method else "") for m in kind.methods
        )
        parts.append(f"{kind.name}: {names}")
    return "; ".join(parts) + "."


# --------------------------------------------------------------------------- request path


def validate_request(survey: Any, spec: dict[str, Any]) -> AnalysisRequest:
    """Everything that can be decided from the schema, before any answer is read."""
    kind = get(spec["kind"])
    request = analysis.resolve(survey, spec)
    method = request.method
    if method is not None:
        allowed = kind.allowed_methods(request)
        if method not in allowed:
            raise AnalysisInputError(
                {
                    "method": f"{method!r} does not apply to this {kind.name}; choose one of "
                    f"{', '.join(allowed)}"
                }
            )
    if kind.needs_where and not request.where:
        raise AnalysisInputError({"where": f"a {kind.name} needs at least one condition"})
    kind.validate(request)
    return request


def check(request: AnalysisRequest) -> PreparedAnalysis:
    """Load the answers and refuse what could never be published or drawn.

    - fewer responses than the question-level threshold;
    - a condition whose estimated group is below the kind's threshold;
    - the kind's own refusals (``precheck``).
    """
    kind = get(request.kind)
    prepared = analysis.load(request)
    analysis.check_responses(prepared)
    group = analysis.check_group(prepared, kind.threshold(request))
    kind.precheck(prepared, group)
    return prepared


def compute(prepared: PreparedAnalysis, progress: Progress) -> dict[str, Any]:
    """The kind's computation: one fit, disclosure control, api.md's JSON."""
    return get(prepared.request.kind).compute(prepared, progress)


# --------------------------------------------------------------------------- count


def _count(prepared: PreparedAnalysis, progress: Progress) -> dict[str, Any]:
    min_cell = prepared.thresholds.min_cell
    progress(0.2)
    result = queries.count(
        prepared.table, prepared.where, method=prepared.request.method or "joint"
    )
    progress(0.9)
    suppressed = result.estimate < min_cell
    payload: dict[str, Any] = {
        "estimate": None if suppressed else float(result.estimate),
        "ci95": None if suppressed else interval_json(result.ci95),
        "population": int(result.population),
        "suppressed": bool(suppressed),
        "method": result.method,
        "notes": list(result.notes),
    }
    if suppressed:
        payload["reason"] = f"the estimate is below the threshold of {min_cell}"
    return payload


register(
    AnalysisKind(
        name="count",
        summary="how many participants meet a conjunctive condition",
        methods=("joint", "figure3", "naive"),
        default_method="joint",
        needs_where=True,
        group_threshold="min_cell",
        compute=_count,
    )
)


# --------------------------------------------------------------------------- mean


def _validate_mean(request: AnalysisRequest) -> None:
    question = request.target
    assert question is not None
    if question.is_discrete:
        raise AnalysisInputError(
            {
                "attribute": f"{question.key!r} is {question.type}: a mean needs a continuous "
                "question (use a distribution)"
            }
        )


def _mean(prepared: PreparedAnalysis, progress: Progress) -> dict[str, Any]:
    min_responses = prepared.thresholds.min_responses
    progress(0.2)
    result = queries.mean(
        prepared.table,
        prepared.spec["attribute"],
        prepared.where,
        method=prepared.request.method or "unbiased",
    )
    progress(0.9)
    small = result.group_size < min_responses
    payload: dict[str, Any] = {
        "estimate": None if small else float(result.estimate),
        "ci95": None if small else interval_json(result.ci95),
        "group_size": float(result.group_size),
        "suppressed": bool(small),
        "method": result.method,
        "notes": list(result.notes),
    }
    if small:
        payload["reason"] = f"the group is estimated below the threshold of {min_responses}"
    return payload


register(
    AnalysisKind(
        name="mean",
        summary="the mean of a continuous question, overall or within a group",
        methods=("unbiased", "figure3", "naive"),
        default_method="unbiased",
        attribute="required",
        validate=_validate_mean,
        compute=_mean,
    )
)


# --------------------------------------------------------------------------- distribution

CONTINUOUS_METHODS = ("em", "as")


def _distribution_methods(request: AnalysisRequest) -> tuple[str, ...]:
    question = request.target
    return DISCRETE_METHODS if question is not None and question.is_discrete else CONTINUOUS_METHODS


def _validate_distribution(request: AnalysisRequest) -> None:
    method = request.method
    if method is None:
        return
    if request.where:
        # Within a group the joint EM is the only estimator; a chosen method would be
        # silently ignored.
        raise AnalysisInputError(
            {
                "method": f"{method!r} applies only to a distribution without conditions; "
                "within a group the joint EM is used (leave out 'method')"
            }
        )
    question = request.target
    if question is not None and question.is_discrete:
        analysis.check_method_fits(question, method)


def _distribution(prepared: PreparedAnalysis, progress: Progress) -> dict[str, Any]:
    attribute = prepared.spec["attribute"]
    question = prepared.questions[attribute]
    progress(0.2)
    if prepared.where:
        reconstructed = queries.distribution(prepared.table, attribute, prepared.where)
    else:
        reconstructed = analysis.overall_distribution(
            question, prepared.request.method, table=prepared.table
        )
    progress(0.9)
    return analysis.distribution_payload(reconstructed, question, prepared.thresholds.min_cell)


register(
    AnalysisKind(
        name="distribution",
        summary="the reconstructed distribution of a question, overall or within a group "
        "(discrete questions: em_as by default; continuous ones: em by default)",
        methods=(*DISCRETE_METHODS, *CONTINUOUS_METHODS),
        default_method=None,
        attribute="required",
        methods_for=_distribution_methods,
        validate=_validate_distribution,
        compute=_distribution,
    )
)


# --------------------------------------------------------------------------- sample


def _precheck_sample(prepared: PreparedAnalysis, group: float) -> None:
    size = int(prepared.spec["size"])
    if size > group:
        raise AnalysisInputError(
            {
                "size": f"a sample of {size} is larger than the estimated pool of "
                f"{group:.0f} participants meeting the condition"
            }
        )
    for i, (stratum, quota) in enumerate(prepared.strata):
        pool = queries.count(prepared.table, [*prepared.where, *stratum], ci=False).estimate
        if quota > pool:
            raise AnalysisInputError(
                {
                    f"strata[{i}].size": f"a quota of {quota} is larger than the stratum's "
                    f"estimated pool of {pool:.0f}"
                }
            )


def _sample(prepared: PreparedAnalysis, progress: Progress) -> dict[str, Any]:
    seed = prepared.spec.get("seed")
    progress(0.2)
    drawn = queries.sample(
        prepared.table,
        int(prepared.spec["size"]),
        prepared.where,
        strata=prepared.strata,
        method=prepared.request.method or "figure3",
        rng=np.random.default_rng(seed),
    )
    progress(0.9)
    participants = prepared.participants
    return {
        "participants": [str(ref) for ref in participants[drawn.rows]],
        "strata": [[str(ref) for ref in participants[rows]] for rows in drawn.strata_rows]
        if prepared.strata
        else [],
        "pool_estimate": float(drawn.pool_estimate),
        "expected_precision": float(drawn.expected_precision),
        "seed": seed,
        "method": drawn.method,
    }


register(
    AnalysisKind(
        name="sample",
        summary="participants drawn for a deliberative panel (001, Section IV-B)",
        methods=("figure3", "posterior"),
        default_method="figure3",
        sampling=True,
        group_threshold="min_cell",
        precheck=_precheck_sample,
        compute=_sample,
    )
)

__all__ = [
    "KINDS",
    "AnalysisKind",
    "JobRefused",
    "all_methods",
    "check",
    "compute",
    "get",
    "methods_description",
    "register",
    "validate_request",
]
