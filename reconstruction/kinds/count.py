"""``kind: "count"``: how many participants meet a conjunctive condition.

Methods: ``joint`` (default; one EM over the product channel of the condition's
attributes, fitted on the condition's cell table, 001_28af1923c784b480.txt Section IV-A1),
``figure3`` (001, Figure 3: values assigned to every participant, stage by stage) and
``naive`` (the reported answers counted as if true, one SQL ``COUNT``). The count is its
group: it is published when its size's 95% interval clears the cell threshold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_noop

from reconstruction import analysis, cost, disclosure
from reconstruction.algorithms import queries
from reconstruction.algorithms.audit import Published
from reconstruction.analysis import AnalysisRequest, interval_json
from reconstruction.kinds import base

NAME = "count"
METHODS = ("joint", "figure3", "naive")
DEFAULT_METHOD = "joint"


@dataclass(frozen=True)
class Request(base.KindRequest):
    """A count: its conditions (``where``) and method."""


def parse(spec: Mapping[str, Any]) -> Request:
    return Request(**base.common_fields(spec, DEFAULT_METHOD))


def whole_number_tests(request: AnalysisRequest) -> tuple[list[str], bool]:
    """A joint count tests its condition's attributes and averages both models when the
    evidence is inconclusive (the array API's ``count_joint``)."""
    if request.method != "joint":
        return [], False
    return [c.attribute for c in request.where], True


# --------------------------------------------------------------------------- worker


@dataclass(frozen=True)
class Gathered:
    request: AnalysisRequest
    models: dict[Any, tuple[queries.CellPlan, queries.CellTable]] | None = None
    joint: tuple[queries.CellPlan, queries.CellTable] | None = None
    naive: int | None = None
    loaded: analysis.PreparedAnalysis | None = None
    exact: bool = False
    group: disclosure.GroupCells | None = None


@dataclass(frozen=True)
class Fitted:
    request: AnalysisRequest
    result: queries.CountResult
    exact: bool
    group: disclosure.GroupSize | None


def gather(request: AnalysisRequest, progress: base.Progress) -> Gathered:
    joint = request.method == "joint"
    started = base.start(request, progress, with_cells=joint)
    request, read = started.request, started.read
    exact = disclosure.is_exact(request, [c.attribute for c in request.where])
    # The joint count's own interval is its size's interval; otherwise the group is
    # counted on its own (the threshold point, reconstruction/disclosure.py).
    group = None if joint and not exact else disclosure.read_group(request)
    if joint and request.lattice_weights:  # whole numbers or not: average both models
        return Gathered(
            request, models=analysis.model_tables(request, read), exact=exact, group=group
        )
    if joint:
        plan = analysis.plan(request, request.participants)
        gathered = Gathered(
            request, joint=(plan, analysis.cells(request, plan, read)), exact=exact, group=group
        )
        progress(0.3)
        return gathered
    if request.method == "naive":  # one SQL COUNT of the reported answers meeting the condition
        return Gathered(request, naive=analysis.naive_count(request), exact=exact, group=group)
    # Figure 3 assigns values to participants: it reads them (bounded columns)
    loaded = analysis.load(request)
    progress(0.3)
    return Gathered(request, loaded=loaded, exact=exact, group=group)


def fit(gathered: Gathered) -> Fitted:
    request = gathered.request
    if gathered.models is not None:
        models = gathered.models
        result = queries.averaged_count_from_tables(
            dict(request.lattice_weights), lambda choice: models[analysis.model_key(choice)]
        )
    elif gathered.joint is not None:
        result = queries.count_from_table(*gathered.joint)
    elif gathered.naive is not None:
        result = queries.naive_count_result(gathered.naive, request.participants)
    else:
        assert gathered.loaded is not None
        result = queries.count(gathered.loaded.table, gathered.loaded.where, method="figure3")
    group = None if gathered.group is None else disclosure.fit_group(gathered.group)
    return Fitted(request, result, gathered.exact, group)


def publish(fitted: Fitted) -> dict[str, Any]:
    request, result = fitted.request, fitted.result
    min_cell = request.thresholds.min_cell
    if fitted.group is None:
        size = disclosure.GroupSize(result.estimate, *result.ci95, exact=False)
        disclosure.check_group(size, min_cell)
    else:
        disclosure.check_group(fitted.group, min_cell)
    estimate, ci95 = float(result.estimate), result.ci95
    perturbed = fitted.exact and fitted.group is not None and fitted.group.perturbed
    if perturbed:
        # Every attribute exact: the count is a register's cell, published with the
        # cell-key perturbation (issue 26); its interval is the perturbation's bound.
        assert fitted.group is not None
        estimate, ci95 = fitted.group.published, fitted.group.published_ci95
    return {
        "estimate": estimate,
        "ci95": interval_json(ci95),
        "population": int(result.population),
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
    """The count of its condition, with its interval."""
    return base.group_published(params, questions, payload.get("estimate"), payload.get("ci95"))


KIND = base.AnalysisKind(
    name=NAME,
    label=gettext_noop("how many…"),
    summary="how many participants meet a conjunctive condition",
    methods=METHODS,
    default_method=DEFAULT_METHOD,
    parse=parse,
    gather=gather,
    fit=fit,
    publish=publish,
    published=published,
    cost=cost.check_cost,
    needs_where=True,
    group_threshold="min_cell",
    whole_number_tests=whole_number_tests,
    judges_group=False,
    figure3_bootstrap=True,
)
