"""``kind: "change"``: how the same residents' answers changed between two surveys.

``survey`` is the "before" survey, ``after`` the "after" survey of the same consultation;
``attribute`` a discrete question asked in both (``after_attribute`` when its key differs
in the after survey). The participants who answered both are joined on their reference
in SQL (:mod:`surveys.pairs`), their joint reported cells (and any condition's) counted
in one ``GROUP BY``, and the (before, after) table reconstructed jointly with the product
of the two channels (:mod:`reconstruction.algorithms.queries.change`: the joint EM of
the count, no estimator of its own), every interval from the participant bootstrap.
``panel`` restricts the change to a succeeded panel's members. Those who answered one
survey only are counted apart and not used.

Published as counts are: the group (paired participants meeting ``where``) on its
size's interval, each transition cell on its own (reconstruction/disclosure.py, primary
and complementary suppression), the query audit on the cells' boxes, where the after
answer is the attribute ``<after_attribute>@after``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message, Note
from reconstruction import analysis, cost, disclosure
from reconstruction.algorithms import queries
from reconstruction.algorithms.audit import Box, Published
from reconstruction.algorithms.queries import change as engine
from reconstruction.analysis import AnalysisInputError, AnalysisRequest, interval_json
from reconstruction.conditions import Thresholds, attribute_questions, parse_where
from reconstruction.jobs import JobRefused
from reconstruction.kinds import base
from reconstruction.models import AnalysisJob, Job
from surveys import pairs, statistics
from surveys.models import Question, Survey

NAME = "change"
METHODS = ("joint",)
DEFAULT_METHOD = "joint"
AFTER_SUFFIX = "@after"
LABEL = gettext_noop("how opinions changed")


@dataclass(frozen=True)
class Request(base.KindRequest):
    """A change: the before question (``attribute``), the after survey and its question,
    conditions on the before survey or profile, and optionally a panel."""

    after: int = 0
    after_attribute: str | None = None
    panel: int | None = None
    members: tuple[str, ...] = ()
    """The panel's member references (filled when resolved, never from the request)."""

    @property
    def after_key(self) -> str:
        """The after answer's name among the request's attributes (audit boxes, cells)."""
        return f"{self.after_attribute or self.attribute}{AFTER_SUFFIX}"

    def other_surveys(self) -> tuple[int, ...]:
        return (self.after,) if self.after else ()

    def condition_keys(self) -> list[str]:
        # The after answer is required of every participant counted: only pairs count.
        return [*super().condition_keys(), self.after_key]


def parse(spec: Mapping[str, Any]) -> Request:
    panel, after_attribute = spec.get("panel"), spec.get("after_attribute")
    return Request(
        **base.common_fields(spec, DEFAULT_METHOD),
        after=int(spec.get("after") or 0),
        after_attribute=None if after_attribute is None else str(after_attribute),
        panel=None if panel is None else int(panel),
    )


# --------------------------------------------------------------------------- request


def _refuse(field: str, template: str, **params: Any) -> AnalysisInputError:
    return AnalysisInputError({field: Message(template, params)})


def _after_survey(before: Survey, after_id: int) -> Survey:
    if after_id == before.pk:
        raise _refuse(
            "after",
            gettext_noop(
                "the after survey is the before survey: a change needs two surveys of the "
                "same residents"
            ),
        )
    after = Survey.objects.filter(pk=after_id).first() if after_id else None
    if after is None or after.consultation_id != before.consultation_id:
        raise _refuse(
            "after",
            gettext_noop(
                "survey %(after)s is not a survey of this consultation: a change compares "
                "two surveys of the same consultation"
            ),
            after=after_id,
        )
    return after


MISSING = {
    "before": gettext_noop("the before survey (%(survey)s) has no question %(key)s"),
    "after": gettext_noop("the after survey (%(survey)s) has no question %(key)s"),
}


def _own_question(survey: Survey, key: str, field: str, which: str) -> Question:
    question = Question.objects.filter(survey=survey, key=key).first()
    if question is None:
        raise _refuse(field, MISSING[which], survey=survey.pk, key=repr(key))
    if not question.is_discrete:
        raise _refuse(
            field,
            gettext_noop(
                "%(key)s is continuous: a change of a continuous question is not yet "
                "supported (ask a discrete question)"
            ),
            key=repr(key),
        )
    return question


def _panel_members(survey: Survey, panel: int) -> tuple[str, ...]:
    """The members of a succeeded panel of the survey's consultation (400 otherwise)."""
    job = (
        AnalysisJob.objects.filter(pk=panel, organisation_id=survey.organisation_id)
        .select_related("survey")
        .first()
    )
    entry = None if job is None else job.kind
    members = (job.result or {}).get("participants") if job is not None else None
    if (
        job is None
        or entry != "panel"
        or job.status != Job.Status.SUCCEEDED
        or job.survey.consultation_id != survey.consultation_id
        or not isinstance(members, list)
    ):
        raise _refuse(
            "panel",
            gettext_noop("analysis %(panel)s is not a succeeded panel of this consultation"),
            panel=panel,
        )
    return tuple(str(m) for m in members)


def resolve(survey: Survey, params: base.KindRequest) -> AnalysisRequest:
    """The request resolved against both surveys' schemas (no answer is read): the
    after survey and question, their categories, the conditions, the panel."""
    assert isinstance(params, Request) and params.attribute
    after = _after_survey(survey, params.after)
    before_question = _own_question(survey, params.attribute, "attribute", "before")
    after_field = "after_attribute" if params.after_attribute else "attribute"
    after_question = _own_question(
        after, params.after_attribute or params.attribute, after_field, "after"
    )
    if list(before_question.categories) != list(after_question.categories):
        raise _refuse(
            after_field,
            gettext_noop(
                "%(key)s has the categories %(before)s before and %(after)s after: a change "
                "needs the same categories in both surveys"
            ),
            key=repr(params.attribute),
            before=", ".join(map(str, before_question.categories)),
            after=", ".join(map(str, after_question.categories)),
        )
    keys = [c.attribute for c in params.where]
    questions = attribute_questions(survey, keys, "where")
    questions[params.attribute] = before_question
    questions[params.after_key] = after_question
    if params.panel is not None:
        members = _panel_members(survey, params.panel)
        params = dataclasses.replace(params, members=members)
    return AnalysisRequest(
        survey=survey,
        kind=KIND,
        params=params,
        questions=questions,
        where=parse_where(params.where, questions),
        strata=[],
        thresholds=Thresholds.of(survey),
    )


def change_cost(request: AnalysisRequest) -> int:
    """The joint table of (before, after, condition) x (1 + bootstrap), the group's
    count when there is a condition, and reading: the pairs' table and three counts of
    who answered which survey (:func:`reconstruction.cost.check_budget`)."""
    params = request.params
    assert isinstance(params, Request)
    keys = request.keys
    fits = cost.fit_cells(request.questions, keys, list(params.where)) * (1 + cost.N_BOOT)
    reading = request.participants * (len(keys) + 4)
    return cost.check_budget(fits, int(cost.READ_UNITS * reading))


# --------------------------------------------------------------------------- worker


@dataclass(frozen=True)
class Gathered:
    request: AnalysisRequest
    plan: queries.CellPlan
    table: queries.CellTable
    unpaired: pairs.Unpaired


@dataclass(frozen=True)
class Fitted:
    request: AnalysisRequest
    result: engine.ChangeResult
    unpaired: pairs.Unpaired


def _members(request: AnalysisRequest) -> list[int] | None:
    params = request.params
    assert isinstance(params, Request)
    if params.panel is None:
        return None
    return pairs.member_ids(request.survey, params.members, using=statistics.analysis_alias())


def gather(request: AnalysisRequest, progress: base.Progress) -> Gathered:
    """One ``GROUP BY`` of the pairs' reported cells (joined on the participant), which
    also counts them exactly; who answered one survey only comes from the response
    tallies (constant time) and, with a condition or a panel, one count of the pairs."""
    params = request.params
    assert isinstance(params, Request) and params.attribute
    members = _members(request)
    using = statistics.analysis_alias()
    request = base.whole_numbers(request)
    guess = _plan(request, max(analysis.participant_bound(request), 1))
    table = _read(request, guess, members, using)
    n = table.n
    request = request.with_participants(n)
    reason = analysis.too_few_responses(request, n)
    if reason is not None:
        raise JobRefused(reason)
    request.kind.validate(request)
    progress(0.3)
    plan = _plan(request, max(n, 1))
    if not _same_cells(plan, guess):  # continuous conditions cut for the exact n
        table = _read(request, plan, members, using)
    before, after = request.questions[params.attribute], request.questions[params.after_key]
    if members is None and not request.where:
        unpaired = pairs.unpaired_from_tallies(before, after, paired=n, using=using)
    else:
        unpaired = pairs.unpaired(before, after, members=members, using=using)
    progress(0.4)
    return Gathered(request, plan, table, unpaired)


def _read(
    request: AnalysisRequest, plan: queries.CellPlan, members: list[int] | None, using: str
) -> queries.CellTable:
    counted = pairs.paired_cells(
        request.survey,
        _axes(request, plan),
        require=[request.questions[key] for key in request.keys],
        members=members,
        using=using,
    )
    return queries.CellTable(counted.counts)


def _same_cells(a: queries.CellPlan, b: queries.CellPlan) -> bool:
    return a.names == b.names and all(
        (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
        for x, y in zip(a.reported_edges, b.reported_edges, strict=True)
    )


def _plan(request: AnalysisRequest, n: int) -> queries.CellPlan:
    params = request.params
    assert isinstance(params, Request) and params.attribute
    specs = {key: analysis.question_spec(request.questions[key]) for key in request.keys}
    for key in request.whole_numbers:
        spec = specs[key]
        if isinstance(spec, queries.ContinuousSpec) and spec.step is None:
            specs[key] = dataclasses.replace(spec, step=1.0)
    return engine.plan_change(specs, params.attribute, params.after_key, request.where, n=n)


def _axes(request: AnalysisRequest, plan: queries.CellPlan) -> list[statistics.Axis]:
    return [
        statistics.Axis(
            request.questions[name], None if edges is None else statistics.finite_edges(edges)
        )
        for name, edges in zip(plan.names, plan.reported_edges, strict=True)
    ]


def fit(gathered: Gathered) -> Fitted:
    result = engine.change_from_table(gathered.plan, gathered.table)
    return Fitted(gathered.request, result, gathered.unpaired)


def whole_number_tests(request: AnalysisRequest) -> tuple[list[str], bool]:
    """The condition's continuous attributes keep the interval model when inconclusive."""
    return [c.attribute for c in request.where], False


# --------------------------------------------------------------------------- publish


def _covers_zero_note(category: str) -> str:
    return Note(
        gettext_noop(
            "the 95%% interval of the net shift toward %(category)s covers 0: the data do not "
            "show that the share of %(category)s changed"
        ),
        category=category,
    )


def _share_json(values: Any, intervals: Any, hidden: Any) -> tuple[list[Any], list[Any]]:
    shown = [None if h else float(v) for v, h in zip(values, hidden, strict=True)]
    pairs_ = [
        [None, None] if h else interval_json(p) for p, h in zip(intervals, hidden, strict=True)
    ]
    return shown, pairs_


def publish(fitted: Fitted) -> dict[str, Any]:
    request, result = fitted.request, fitted.result
    params = request.params
    assert isinstance(params, Request) and params.attribute
    min_cell = request.thresholds.min_cell
    if request.where:
        size = disclosure.GroupSize(result.group_size, *result.group_ci95, exact=False)
        disclosure.check_group(size, min_cell)
    categories = [str(c) for c in request.questions[params.attribute].categories]
    k = len(categories)
    hidden = disclosure.hidden_cells(
        result.transitions.ravel(), min_cell, result.transitions_ci95.reshape(-1, 2)
    ).reshape(k, k)
    # A category's share before (after) is a group: its count's interval is the share's
    # interval times the group's size.
    scale = result.group_size
    hidden_before = disclosure.hidden_cells(
        result.before * scale, min_cell, result.before_ci95 * scale
    )
    hidden_after = disclosure.hidden_cells(
        result.after * scale, min_cell, result.after_ci95 * scale
    )
    hidden_net = hidden_before | hidden_after
    before, before_ci = _share_json(result.before, result.before_ci95, hidden_before)
    after, after_ci = _share_json(result.after, result.after_ci95, hidden_after)
    net, net_ci = _share_json(result.net_change, result.net_change_ci95, hidden_net)
    covering = [
        categories[i]
        for i in range(k)
        if not hidden_net[i] and result.net_change_ci95[i, 0] <= 0 <= result.net_change_ci95[i, 1]
    ]
    payload: dict[str, Any] = {
        "categories": categories,
        "paired": int(result.n),
        "before_only": int(fitted.unpaired.before_only),
        "after_only": int(fitted.unpaired.after_only),
        "transitions": [
            [None if hidden[i, j] else float(result.transitions[i, j]) for j in range(k)]
            for i in range(k)
        ],
        "transitions_ci95": [
            [
                [None, None] if hidden[i, j] else interval_json(result.transitions_ci95[i, j])
                for j in range(k)
            ]
            for i in range(k)
        ],
        "before": before,
        "before_ci95": before_ci,
        "after": after,
        "after_ci95": after_ci,
        "net_change": net,
        "net_change_ci95": net_ci,
        "shift_positive": [None if hidden_net[i] else float(result.positive[i]) for i in range(k)],
        "suppressed": bool(hidden.any() or hidden_net.any()),
        "method": "joint",
        "notes": base.notes(
            analysis.whole_number_notes(request),
            result.notes,
            [_covers_zero_note(c) for c in covering],
        ),
    }
    if request.where:
        payload["group_size"] = float(result.group_size)
        payload["group_ci95"] = interval_json(result.group_ci95)
    if payload["suppressed"]:
        payload["suppression"] = disclosure.suppression_reason(min_cell)
    if params.panel is not None:
        payload["panel"] = params.panel
    return payload


def published(
    params: Request, payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """Each shown transition cell (before ``i`` and after ``j`` within the condition),
    and the condition's group. An earlier change whose after question is not among
    ``questions`` cannot be placed (:class:`~reconstruction.kinds.base.UnknownAttribute`)."""
    if params.attribute not in questions or params.after_key not in questions:
        raise base.UnknownAttribute(params.after_key)
    where = base.audit_conditions(params.where, questions)
    out: list[Published] = []
    if params.where and payload.get("group_size") is not None:
        out.append(base.sized(Box.of(where), payload["group_size"], payload.get("group_ci95")))
    cells = payload.get("transitions") or []
    intervals = payload.get("transitions_ci95") or []
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            if value is None:
                continue
            box = Box.of([*where, (params.attribute, "in", {i}), (params.after_key, "in", {j})])
            out.append(base.sized(box, value, intervals[i][j]))
    return out


def report_entries(survey: Survey) -> list[dict[str, Any]]:
    """The survey's published changes (succeeded change analyses of its organisation with
    this survey as the before survey), newest first, as a report shows them."""
    jobs = AnalysisJob.objects.filter(
        survey=survey,
        organisation_id=survey.organisation_id,
        kind=NAME,
        status=Job.Status.SUCCEEDED,
    ).order_by("-finished_at", "-pk")
    return [
        {"analysis": pk, "request": spec, "result": result}
        for pk, spec, result in jobs.values_list("pk", "spec", "result")
        if isinstance(result, dict)
    ]


KIND = base.AnalysisKind(
    name=NAME,
    summary=(
        "how the same residents' answers to a discrete question changed between a before "
        "and an after survey (deliberation), reconstructed jointly from both distorted answers"
    ),
    label=LABEL,
    methods=METHODS,
    default_method=DEFAULT_METHOD,
    parse=parse,
    resolve=resolve,
    gather=gather,
    fit=fit,
    publish=publish,
    published=published,
    cost=change_cost,
    attribute="required",
    request_fields=("after", "after_attribute", "panel"),
    group_threshold="min_cell",
    whole_number_tests=whole_number_tests,
)
