"""``kind: "distribution"``: the reconstructed distribution of a question.

Overall, a discrete question's distribution comes from its reported categories and its
channel with any discrete estimator (``em_as`` by default, 000/001's methods), a continuous
one's from its reported bins (``em`` by default, or ``as``). Within a group the joint EM of
the condition's cell table is the only estimator. Cells are suppressed on their intervals
(reconstruction/disclosure.py); the group is judged on its size's interval.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from privacy.mechanisms import cellkey
from privacy.mechanisms.messages import Message, note_json
from reconstruction import analysis, cost, disclosure
from reconstruction.algorithms import queries
from reconstruction.algorithms.audit import Box, Published
from reconstruction.algorithms.continuous import IntervalReconstruction
from reconstruction.algorithms.methods import DISCRETE_METHODS, reconstruct
from reconstruction.algorithms.queries import _whole_number_note as whole_number_note
from reconstruction.algorithms.result import Reconstruction
from reconstruction.analysis import (
    AnalysisInputError,
    AnalysisRequest,
    interval_json,
)
from reconstruction.kinds import base
from surveys import condition_counts, selectors, statistics
from surveys.models import Question, Survey

NAME = "distribution"
CONTINUOUS_METHODS = ("em", "as")
METHODS = (*DISCRETE_METHODS, *CONTINUOUS_METHODS)
DISCRETE_DEFAULT, CONTINUOUS_DEFAULT = "em_as", "em"
"""The default method depends on the question (``default_method`` is ``None``)."""


@dataclass(frozen=True)
class Request(base.KindRequest):
    """A distribution: its question (``attribute``), conditions and, overall, a method."""


def parse(spec: Mapping[str, Any]) -> Request:
    return Request(**base.common_fields(spec, None))


def methods_for(request: AnalysisRequest) -> tuple[str, ...]:
    question = request.target
    return DISCRETE_METHODS if question is not None and question.is_discrete else CONTINUOUS_METHODS


def validate(request: AnalysisRequest) -> None:
    method = request.method
    if method is None:
        return
    if request.where:
        # Within a group the joint EM is the only estimator; a chosen method would be
        # silently ignored.
        raise AnalysisInputError(
            {
                "method": Message(
                    gettext_noop(
                        "%(method)s applies only to a distribution without conditions; within a "
                        "group the joint EM is used (leave out 'method')"
                    ),
                    {"method": repr(method)},
                )
            }
        )
    question = request.target
    if question is not None and question.is_discrete:
        analysis.check_method_fits(question, method)


def whole_number_tests(request: AnalysisRequest) -> tuple[list[str], bool]:
    """A grouped distribution tests its condition's and question's attributes, an overall
    one its question (:func:`overall_counts` tests it itself); inconclusive evidence
    keeps the interval model."""
    if request.where:
        return request.keys, False
    if request.attribute:
        return [request.attribute], False
    return [], False


# --------------------------------------------------------------------------- overall


@dataclass(frozen=True)
class OverallCounts:
    """A question's reported cells over the survey's live participants who answered it:
    codes, or the reported bins of ``plan`` (``whole``: on the lattice of whole numbers)."""

    counts: np.ndarray[Any, Any]
    plan: queries.CellPlan | None = None
    whole: bool = False


def overall_counts(survey: Survey, question: Question) -> OverallCounts:
    """The database's part of :func:`overall_distribution`: one SQL ``GROUP BY`` of
    reported cells (and, for a continuous question without a declared step, the
    whole-number test, :func:`~reconstruction.analysis.whole_number_verdict`)."""
    using = statistics.analysis_alias()
    if question.is_discrete:
        counts = statistics.cell_statistics(survey, [statistics.Axis(question)], using=using)
        return OverallCounts(counts.counts)
    n = statistics.participant_count(survey, [question], using=using)
    if n < 1:
        raise ValueError(f"nobody answered {question.key!r}")
    # As the array API's distribution: reports that show whole numbers (no declared
    # step) put the cells on the lattice of whole numbers, and the result says so.
    whole, _evidence = analysis.whole_number_verdict(survey, question)
    cell_plan = overall_plan(question, n, whole_numbers=whole)
    counted = statistics.cell_statistics(
        survey, [statistics.Axis(question, overall_inner_edges(cell_plan))], using=using
    )
    return OverallCounts(counted.counts, cell_plan, whole)


def overall_fit(
    question: Question, method: str | None, counted: OverallCounts
) -> tuple[Reconstruction | IntervalReconstruction, np.ndarray[Any, np.dtype[np.float64]]]:
    """The engine's part of :func:`overall_distribution`."""
    result, naive = distribution_from_counts(question, method, counted.counts, counted.plan)
    if counted.whole:
        result = with_whole_number_note(result, question)
    return result, naive


def overall_distribution(
    survey: Survey, question: Question, method: str | None
) -> tuple[Reconstruction | IntervalReconstruction, np.ndarray[Any, np.dtype[np.float64]]]:
    """A question's distribution over the survey's live participants who answered it.

    Returns the reconstruction and the naive counts (the reported answers counted as if
    they were true, in the same categories or intervals). Both come from one SQL
    ``GROUP BY`` of reported cells: codes, or the reported bins of the engine's plan.
    """
    return overall_fit(question, method, overall_counts(survey, question))


def calibration_of(question: Question) -> np.ndarray[Any, Any] | None:
    """The calibration pairs a manual negative question's channel was estimated from."""
    if question.mechanism != "negative_manual":
        return None
    return selectors.calibration_pairs(question)


def with_whole_number_note(
    result: Reconstruction | IntervalReconstruction, question: Question
) -> IntervalReconstruction:
    """A continuous question's overall distribution planned on whole numbers by detection
    (:func:`whole_number_verdict`), with the array API's note saying so (the survey
    report, :mod:`reconstruction.reports`, adds it as :func:`overall_distribution` does)."""
    assert isinstance(result, IntervalReconstruction)
    inner = result.reconstruction
    notes = (*inner.notes, whole_number_note(question.key))
    return dataclasses.replace(result, reconstruction=dataclasses.replace(inner, notes=notes))


def overall_plan(question: Question, n: int, *, whole_numbers: bool = False) -> queries.CellPlan:
    """The engine's plan of a continuous question's reported bins for ``n`` answers
    (``whole_numbers``: on the lattice of whole numbers, ``step=1``)."""
    spec = analysis.question_spec(question)
    if whole_numbers and isinstance(spec, queries.ContinuousSpec) and spec.step is None:
        spec = dataclasses.replace(spec, step=1.0)
    return queries.plan_cells({question.key: spec}, (), n=n, target=question.key)


def overall_inner_edges(cell_plan: queries.CellPlan) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The inner edges the database cuts an overall plan's reported values at."""
    bins = cell_plan.reported_edges[0]
    assert bins is not None
    return statistics.finite_edges(bins)


def distribution_from_counts(
    question: Question,
    method: str | None,
    counts: np.ndarray[Any, Any],
    cell_plan: queries.CellPlan | None = None,
) -> tuple[Reconstruction | IntervalReconstruction, np.ndarray[Any, np.dtype[np.float64]]]:
    """:func:`overall_distribution` from counts already read: a discrete question's
    codes, or a continuous one's reported bins of ``cell_plan`` (:func:`overall_plan`)."""
    if question.is_discrete:
        naive = np.asarray(counts, dtype=np.float64)
        result: Reconstruction | IntervalReconstruction = reconstruct(
            naive,
            selectors.question_channel(question),
            method=DISCRETE_DEFAULT if method is None else method,
            calibration_pairs=calibration_of(question),
        )
        return result, naive
    assert cell_plan is not None
    bins = cell_plan.reported_edges[0]
    assert bins is not None
    interval = queries.distribution_from_table(
        cell_plan,
        queries.CellTable(counts),
        method=CONTINUOUS_DEFAULT if method is None else method,  # type: ignore[arg-type]
    )
    assert isinstance(interval, IntervalReconstruction)
    return interval, fold_naive(counts, bins, interval.edges)


def fold_naive(
    reported: np.ndarray[Any, Any], bins: np.ndarray[Any, Any], edges: np.ndarray[Any, Any]
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Counts of reported bins as counts of the true intervals, values outside the
    declared range counted in the nearest interval (``np.histogram`` of clipped values)."""
    first = int(np.flatnonzero(bins == edges[0])[0])
    m = edges.size - 1
    naive = np.asarray(reported[first : first + m], dtype=np.float64).copy()
    naive[0] += float(reported[:first].sum())
    naive[-1] += float(reported[first + m :].sum())
    return naive


def distribution_payload(
    result: Reconstruction | IntervalReconstruction,
    question: Question,
    min_cell: int,
    *,
    exact: bool = False,
    keyed: condition_counts.KeyedCells | None = None,
    group: disclosure.GroupSize | None = None,
) -> dict[str, Any]:
    """api.md's distribution result with disclosure control applied.

    ``exact``: the answers (target and condition) were collected undistorted, so each
    cell's size is its count (a degenerate interval); otherwise each cell is judged on
    its 95% interval. ``keyed``: the exact cells' counts and key sums, so the shown
    cells are published with the cell-key perturbation (issue 26; ``group``: the
    condition's group, whose size is then published perturbed too).
    """
    counts = np.asarray(result.counts, dtype=np.float64)
    rec = result.reconstruction if isinstance(result, IntervalReconstruction) else result
    if keyed is not None:
        # A register's cells are judged on what they publish: the perturbed count and
        # its bound (a cell of 5 published as 3 would otherwise say "exactly 5").
        perturbed = np.asarray(
            cellkey.perturbed_counts(keyed.counts, keyed.key_sums), dtype=np.float64
        )
        published_bounds = np.array([cellkey.bounds(v) for v in perturbed]).reshape(-1, 2)
        hidden = disclosure.hidden_cells(perturbed, min_cell, published_bounds)
        return _perturbed_payload(result, question, min_cell, keyed, hidden, group)
    bounds = np.stack([counts, counts], axis=1) if exact else np.asarray(rec.ci95)
    hidden = disclosure.hidden_cells(counts, min_cell, bounds)
    payload: dict[str, Any] = {}
    if isinstance(result, IntervalReconstruction):
        payload["intervals"] = [[float(a), float(b)] for a, b in result.intervals]
    else:
        payload["categories"] = [str(label) for label in question.categories]
    total = float(counts.sum())
    payload.update(
        counts=[None if h else float(c) for c, h in zip(counts, hidden, strict=True)],
        proportions=[
            None if h else (float(c) / total if total else None)
            for c, h in zip(counts, hidden, strict=True)
        ],
        ci95=[None if h else interval_json(pair) for pair, h in zip(rec.ci95, hidden, strict=True)],
        suppressed=[bool(h) for h in hidden],
        method=rec.method,
        iterations=int(rec.iterations),
        converged=bool(rec.converged),
        notes=[note_json(note) for note in rec.notes],
        n=total,
    )
    if hidden.any():
        payload["suppression"] = disclosure.suppression_reason(min_cell)
        # The hidden cells' sum is derivable from the total; its (publishable) interval
        # lets the query audit judge it (reconstruction/auditing.py).
        payload["suppressed_total_ci95"] = interval_json(
            disclosure.hidden_total(bounds, hidden, total)
        )
    return payload


def _perturbed_payload(
    result: Reconstruction | IntervalReconstruction,
    question: Question,
    min_cell: int,
    keyed: condition_counts.KeyedCells,
    hidden: np.ndarray[Any, Any],
    group: disclosure.GroupSize | None,
) -> dict[str, Any]:
    """An exact distribution: the cells the true counts allow, each published as its
    cell-key perturbed count (within 2 of the truth, the interval it publishes)."""
    rec = result.reconstruction if isinstance(result, IntervalReconstruction) else result
    shown = [
        None if h else float(cellkey.perturbed_count(int(c), k))
        for c, k, h in zip(keyed.counts, keyed.key_sums, hidden, strict=True)
    ]
    # The total, like every cell, is published perturbed by its own cell key (the
    # group's, or all the cells' records'): an exact total beside perturbed cells would
    # narrow each cell of two (n minus the other cell).
    if group is not None and group.perturbed:
        total = group.published
    else:
        total = float(cellkey.perturbed_count(keyed.total, keyed.total_key_sum))
    total_bounds = cellkey.bounds(total)
    payload: dict[str, Any] = {}
    if isinstance(result, IntervalReconstruction):
        payload["intervals"] = [[float(a), float(b)] for a, b in result.intervals]
        if len(payload["intervals"]) != len(shown):
            raise ValueError("the keyed cells are not the distribution's intervals")
    else:
        payload["categories"] = [str(label) for label in question.categories]
    payload.update(
        counts=shown,
        proportions=[None if v is None or not total else v / total for v in shown],
        ci95=[None if v is None else interval_json(cellkey.bounds(v)) for v in shown],
        suppressed=[bool(h) for h in hidden],
        perturbed=True,
        method=rec.method,
        iterations=int(rec.iterations),
        converged=bool(rec.converged),
        notes=[note_json(note) for note in rec.notes],
        n=total,
    )
    if hidden.any():
        payload["suppression"] = disclosure.suppression_reason(min_cell)
        # Derivable from the published total and cells, and no more: both perturbed.
        visible = [cellkey.bounds(v) for v in shown if v is not None]
        low = max(0.0, total_bounds[0] - sum(high for _, high in visible))
        high = total_bounds[1] - sum(low_ for low_, _ in visible)
        payload["suppressed_total_ci95"] = interval_json((low, high))
    return payload


# --------------------------------------------------------------------------- worker


@dataclass(frozen=True)
class Gathered:
    request: AnalysisRequest
    table: tuple[queries.CellPlan, queries.CellTable] | None = None
    overall: OverallCounts | None = None
    group: disclosure.GroupCells | None = None
    keyed: condition_counts.KeyedCells | None = None


@dataclass(frozen=True)
class Fitted:
    request: AnalysisRequest
    result: Reconstruction | IntervalReconstruction
    group: disclosure.GroupSize | None
    keyed: condition_counts.KeyedCells | None = None


def gather(request: AnalysisRequest, progress: base.Progress) -> Gathered:
    request = base.start(request, progress).request
    attribute = request.attribute
    assert attribute is not None
    # A register's cells (every attribute exact): the cell-key method, a discrete
    # question's categories or a continuous one's intervals (issue 26).
    exact = disclosure.is_exact(request, request.keys)
    if request.where:
        plan = analysis.plan(request, request.participants, target=attribute)
        table = (plan, analysis.cells(request, plan))
        progress(0.3)
        group = disclosure.read_group(request)
        keyed = analysis.keyed_cells(request, target_inner_edges(plan)) if exact else None
        return Gathered(request, table=table, group=group, keyed=keyed)
    overall = overall_counts(request.survey, request.questions[attribute])
    keyed = analysis.keyed_cells(request, target_inner_edges(overall.plan)) if exact else None
    return Gathered(request, overall=overall, keyed=keyed)


def target_inner_edges(plan: queries.CellPlan | None) -> np.ndarray[Any, Any] | None:
    """The inner edges of a continuous target's true intervals in ``plan`` (the cells its
    distribution publishes); ``None`` for a discrete target (or no plan)."""
    if plan is None or plan.target is None:
        return None
    axis = plan.axes[plan.names.index(plan.target)]
    if axis.edges is None:
        return None
    return np.asarray(axis.edges[1:-1], dtype=np.float64)


def fit(gathered: Gathered) -> Fitted:
    request = gathered.request
    if gathered.table is not None:
        assert gathered.group is not None
        result = queries.distribution_from_table(*gathered.table)
        return Fitted(request, result, disclosure.fit_group(gathered.group), gathered.keyed)
    assert gathered.overall is not None and request.attribute is not None
    question = request.questions[request.attribute]
    result, _naive = overall_fit(question, request.method, gathered.overall)
    return Fitted(request, result, None, gathered.keyed)


def publish(fitted: Fitted) -> dict[str, Any]:
    request, size = fitted.request, fitted.group
    if size is not None:
        disclosure.check_group(size, request.thresholds.min_responses)
    elif fitted.keyed is not None:
        # Overall, an exact question publishes its answerers' count perturbed (``n``),
        # and is judged on it (issue 26), as a report judges its response count.
        keyed = fitted.keyed
        answered = disclosure.GroupSize.counted(keyed.total, keyed.total_key_sum)
        disclosure.check_answerers(request, answered)
    assert request.attribute is not None
    payload = distribution_payload(
        fitted.result,
        request.questions[request.attribute],
        request.thresholds.min_cell,
        exact=disclosure.is_exact(request, request.keys),
        keyed=fitted.keyed,
        group=size,
    )
    if request.whole_numbers:
        payload["notes"] = [
            *base.notes(analysis.whole_number_notes(request)),
            *payload.get("notes", []),
        ]
    threshold_notes = analysis.whole_threshold_notes(request)
    if threshold_notes:
        payload["notes"] = [*payload.get("notes", []), *base.notes(threshold_notes)]
    if size is not None:
        # The group's size interval it was judged on (the query audit judges it so too);
        # an exact group's as published.
        payload["group_size_ci95"] = interval_json(
            size.published_ci95 if fitted.keyed is not None else size.ci95
        )
    return payload


def published(
    params: Request, payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """The group's size (within a group), every published cell within the condition and
    the hidden cells' sum, each with the interval it was judged on."""
    key = params.attribute
    question = questions.get(key) if key else None
    if key is None or question is None:
        raise base.UnknownAttribute(key)
    where = base.audit_conditions(params.where, questions)
    out: list[Published] = []
    if where and payload.get("n") is not None:
        # The group's size on the interval it was judged on.
        out.append(base.sized(Box.of(where), payload["n"], payload.get("group_size_ci95")))
    counts = payload.get("counts") or []
    ci95 = payload.get("ci95") or [None] * len(counts)
    intervals = payload.get("intervals")

    def cell_of(first: int, last: int) -> tuple[str, str, object]:
        if intervals is None:
            return (key, "in", set(range(first, last + 1)))
        a, b = float(intervals[first][0]), float(intervals[last][1])
        top = b >= float(question.range_high)
        return (key, "between_closed" if top else "between", (a, b))

    hidden = []
    for index, (value, pair) in enumerate(zip(counts, ci95, strict=False)):
        if value is None:
            hidden.append(index)
            continue  # suppressed: not published
        out.append(base.sized(Box.of([*where, cell_of(index, index)]), value, pair))
    total = payload.get("suppressed_total_ci95")
    if hidden and isinstance(total, list) and None not in total:
        # The hidden cells' sum is derivable from the total: published with the
        # interval the distribution judged it on (a box when it is one: any set of
        # categories, or one run of intervals).
        if intervals is None:
            box = Box.of([*where, (key, "in", set(hidden))])
        elif hidden == list(range(hidden[0], hidden[-1] + 1)):
            box = Box.of([*where, cell_of(hidden[0], hidden[-1])])
        else:
            return out
        low, high = float(total[0]), float(total[1])
        out.append(Published(box, (low + high) / 2, low, high))
    return out


def question_published(
    key: str, payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """The cells a report publishes of one question (its overall distribution)."""
    return published(Request(kind=NAME, attribute=key), payload, questions)


KIND = base.AnalysisKind(
    name=NAME,
    label=gettext_noop("breakdown of…"),
    summary="the reconstructed distribution of a question, overall or within a group "
    "(discrete questions: em_as by default; continuous ones: em by default)",
    methods=METHODS,
    default_method=None,
    parse=parse,
    gather=gather,
    fit=fit,
    publish=publish,
    published=published,
    cost=cost.check_cost,
    attribute="required",
    methods_for=methods_for,
    type_methods={
        "discrete": (DISCRETE_DEFAULT, *(m for m in DISCRETE_METHODS if m != DISCRETE_DEFAULT)),
        "continuous": (
            CONTINUOUS_DEFAULT,
            *(m for m in CONTINUOUS_METHODS if m != CONTINUOUS_DEFAULT),
        ),
    },
    validate=validate,
    whole_number_tests=whole_number_tests,
    overall_alone=True,
)
