"""``kind: "mean"``: the mean of a continuous question, overall or within a group.

Methods: ``unbiased`` (default; the conditional mean from one cell table of the
condition and the target with its per-cell moments), ``figure3`` (001, Figure 3's
assignment, then the mean of the assigned) and ``naive`` (one SQL aggregate of the
reported answers). The group is judged on its size's interval against the question-level
threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from privacy.mechanisms import cellkey
from privacy.mechanisms.messages import Message
from reconstruction import analysis, cost, disclosure
from reconstruction.algorithms import queries
from reconstruction.algorithms.audit import Published
from reconstruction.analysis import AnalysisInputError, AnalysisRequest, interval_json
from reconstruction.kinds import base

NAME = "mean"
METHODS = ("unbiased", "figure3", "naive")
DEFAULT_METHOD = "unbiased"


@dataclass(frozen=True)
class Request(base.KindRequest):
    """A mean: its target question (``attribute``), conditions and method."""


def parse(spec: Mapping[str, Any]) -> Request:
    return Request(**base.common_fields(spec, DEFAULT_METHOD))


def validate(request: AnalysisRequest) -> None:
    question = request.target
    assert question is not None
    if question.is_discrete:
        raise AnalysisInputError(
            {
                "attribute": Message(
                    gettext_noop(
                        "%(key)s is %(type)s: a mean needs a continuous question "
                        "(use a distribution)"
                    ),
                    {"key": repr(question.key), "type": question.type},
                )
            }
        )


def whole_number_tests(request: AnalysisRequest) -> tuple[list[str], bool]:
    """A conditional ``unbiased`` mean tests its condition's and target's attributes and
    keeps the interval model when the evidence is inconclusive."""
    if request.where and request.method == "unbiased":
        return request.keys, False
    return [], False


def _marginal_of(
    request: AnalysisRequest, read: tuple[queries.CellPlan, queries.CellTable] | None
) -> Callable[[list[Any]], tuple[queries.CellPlan, queries.CellTable]]:
    """The group's cells for :func:`disclosure.read_group`: summed out of a table already
    read when its leading axes are the group's plan (the same participants, the same
    reported cells), else read from the database."""

    def counted(conds: list[Any]) -> tuple[queries.CellPlan, queries.CellTable]:
        sub = replace(request, where=conds)
        plan = analysis.plan(sub, request.participants)
        if read is not None:
            full, table = read
            d = len(plan.names)
            same = full.names[:d] == plan.names and all(
                (a is None and b is None)
                or (a is not None and b is not None and np.array_equal(a, b))
                for a, b in zip(full.reported_edges[:d], plan.reported_edges, strict=True)
            )
            if same:
                others = tuple(range(d, len(full.names)))
                return plan, queries.CellTable(table.counts.sum(axis=others))
        return plan, analysis.cells(sub, plan)

    return counted


# --------------------------------------------------------------------------- worker


@dataclass(frozen=True)
class Gathered:
    request: AnalysisRequest
    table: tuple[queries.CellPlan, queries.CellTable] | None = None
    moments: Any = None
    loaded: analysis.PreparedAnalysis | None = None
    group: disclosure.GroupCells | None = None


@dataclass(frozen=True)
class Fitted:
    request: AnalysisRequest
    result: Any
    group: disclosure.GroupSize


def gather(request: AnalysisRequest, progress: base.Progress) -> Gathered:
    started = base.start(
        request, progress, with_cells=request.method == "unbiased", target=request.attribute
    )
    request, read = started.request, started.read
    attribute = request.attribute
    assert attribute is not None
    table = moments = loaded = None
    if request.method == "unbiased" or not request.where:  # without a condition: overall
        plan = analysis.plan(request, request.participants, target=attribute)
        table = (plan, analysis.cells(request, plan, read))
        progress(0.3)
    elif request.method == "naive":  # one SQL aggregate: count, sum, sum of squares
        moments = analysis.naive_moments(request)
    else:  # Figure 3 assigns values to participants: it reads them (bounded columns)
        loaded = analysis.load(request)
        progress(0.3)
    group = disclosure.read_group(request, counted=_marginal_of(request, table))
    if (
        group.counted is not None
        and group.key_sum is None
        and disclosure.is_exact(request, request.keys)
    ):
        # An exact mean over everyone: its sum is perturbed too, on everyone's key sum.
        keyed = analysis.naive_moments(request, keys=True)
        group = disclosure.GroupCells(counted=keyed.count, key_sum=keyed.key_sum)
    return Gathered(request, table, moments, loaded, group)


def fit(gathered: Gathered) -> Fitted:
    request = gathered.request
    attribute = request.attribute
    assert attribute is not None
    if gathered.table is not None:
        plan, cells = gathered.table
        result = queries.mean_from_table(plan, cells, plan.specs)
    elif gathered.moments is not None:
        spec = analysis.question_spec(request.questions[attribute])
        assert isinstance(spec, queries.ContinuousSpec)
        moments = gathered.moments
        result = queries.naive_mean_from_moments(
            spec, moments.count, moments.total, moments.squares
        )
    else:
        assert gathered.loaded is not None
        loaded = gathered.loaded
        result = queries.mean(loaded.table, attribute, loaded.where, method=request.method)  # type: ignore[arg-type]
    assert gathered.group is not None
    return Fitted(request, result, disclosure.fit_group(gathered.group))


def publish(fitted: Fitted) -> dict[str, Any]:
    request, result, size = fitted.request, fitted.result, fitted.group
    if request.where:
        disclosure.check_group(size, request.thresholds.min_responses)
    else:
        # Overall, an exact target's answerers are judged on the count it publishes.
        disclosure.check_answerers(request, size)
    estimate, ci95 = float(result.estimate), tuple(result.ci95)
    group_size, group_ci95 = float(result.group_size), size.ci95
    perturbed = size.perturbed
    if perturbed:
        # An exact group, or overall an exact target's answerers (issue 26): its size is
        # published with the cell-key perturbation, the value a count of it would give.
        group_size, group_ci95 = size.published, size.published_ci95
    if perturbed and disclosure.is_exact(request, request.keys) and size.key_sum is not None:
        # Target exact too: the sum moves in proportion (cellkey.perturbed_mean), the
        # interval with it.
        moved = cellkey.perturbed_mean(estimate, round(size.estimate), size.key_sum)
        ci95 = (ci95[0] + moved - estimate, ci95[1] + moved - estimate)
        estimate = moved
    return {
        "estimate": estimate,
        "ci95": interval_json(ci95),
        "group_size": group_size,
        "group_size_ci95": interval_json(group_ci95),
        "suppressed": False,
        **({"perturbed": True} if perturbed else {}),
        "method": result.method,
        "notes": base.notes(
            analysis.whole_number_notes(request),
            result.notes,
            analysis.whole_threshold_notes(request) if request.method != "naive" else (),
        ),
    }


def published(
    params: Request, payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """The group's size on its interval (issue 10: a group is judged on its size's 95%
    interval, in the audit as in the per-query rule)."""
    return base.group_published(
        params, questions, payload.get("group_size"), payload.get("group_size_ci95")
    )


KIND = base.AnalysisKind(
    name=NAME,
    label=gettext_noop("average of…"),
    summary="the mean of a continuous question, overall or within a group",
    methods=METHODS,
    default_method=DEFAULT_METHOD,
    parse=parse,
    gather=gather,
    fit=fit,
    publish=publish,
    published=published,
    cost=cost.check_cost,
    attribute="required",
    attribute_types=("continuous",),
    validate=validate,
    whole_number_tests=whole_number_tests,
)
