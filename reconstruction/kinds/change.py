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
and complementary suppression, per row and column too since the shares before and after
publish each row's and column's total: :func:`disclosure.hidden_table`), the query
audit on the cells' boxes, the rows' and columns' totals and their hidden sums, where the
after answer is the attribute ``<after_attribute>@after``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from privacy.mechanisms import cellkey
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


def _where_questions(survey: Survey, after: Survey, keys: Sequence[str]) -> dict[str, Question]:
    """The questions a change's condition names: ``<key>@after`` a question of the after
    survey, any other key one of the before survey or of the profile (as for every kind).
    A plain key that only the after survey has is refused with the name to use."""
    found: dict[str, Question] = {}
    for key in keys:
        if key in found:
            continue
        if key.endswith(AFTER_SUFFIX):
            own = key[: -len(AFTER_SUFFIX)]
            question = Question.objects.filter(survey=after, key=own).first()
            if question is None:
                raise _refuse("where", MISSING["after"], survey=after.pk, key=repr(own))
            found[key] = question
            continue
        try:
            found.update(attribute_questions(survey, [key], "where"))
        except AnalysisInputError:
            if not Question.objects.filter(survey=after, key=key).exists():
                raise
            raise _refuse(
                "where",
                gettext_noop(
                    "%(key)s is a question of the after survey only: name it %(name)s in the "
                    "condition (a plain key names the before survey or the profile)"
                ),
                key=repr(key),
                name=repr(f"{key}{AFTER_SUFFIX}"),
            ) from None
    return found


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
    questions = _where_questions(survey, after, [c.attribute for c in params.where])
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
    fits = cost.fit_cells(request.questions, keys, list(params.where)) * (1 + engine.N_BOOT)
    reading = request.participants * (len(keys) + 4)
    return cost.check_budget(fits, int(cost.READ_UNITS * reading))


# --------------------------------------------------------------------------- worker


@dataclass(frozen=True)
class Gathered:
    request: AnalysisRequest
    plan: queries.CellPlan
    table: queries.CellTable
    unpaired: pairs.Unpaired
    group: disclosure.GroupSize | None = None
    """A condition on exact attributes only: its group's count and record keys' sum."""
    cells: tuple[Any, Any] | None = None
    """Both answers and any condition exact: the pairs per (before, after) answer within
    the condition, and their record keys' sums (a register's cells)."""


@dataclass(frozen=True)
class Fitted:
    request: AnalysisRequest
    result: engine.ChangeResult
    unpaired: pairs.Unpaired
    group: disclosure.GroupSize | None = None
    cells: tuple[Any, Any] | None = None


def _members(request: AnalysisRequest) -> list[int] | None:
    params = request.params
    assert isinstance(params, Request)
    if params.panel is None:
        return None
    return pairs.member_ids(request.survey, params.members, using=statistics.analysis_alias())


def gather(request: AnalysisRequest, progress: base.Progress) -> Gathered:
    """One ``GROUP BY`` of the pairs' reported cells (joined on the participant), which
    also counts the pairs exactly; who answered one survey only comes from the response
    tallies (constant time) or, for a panel, two counts of its members' answers."""
    params = request.params
    assert isinstance(params, Request) and params.attribute
    members = _members(request)
    using = statistics.analysis_alias()
    request = base.whole_numbers(request)
    guess = _plan(request, max(analysis.participant_bound(request), 1))
    read = _read(request, guess, members, using)
    table = queries.CellTable(read.counts)
    n = table.n
    request = request.with_participants(n)
    reason = analysis.too_few_responses(request, n)
    if reason is not None:
        raise JobRefused(reason)
    request.kind.validate(request)
    progress(0.3)
    plan = _plan(request, max(n, 1))
    if not _same_cells(plan, guess):  # continuous conditions cut for the exact n
        read = _read(request, plan, members, using)
        table = queries.CellTable(read.counts)
    before, after = request.questions[params.attribute], request.questions[params.after_key]
    if members is None:
        unpaired = pairs.unpaired_from_tallies(before, after, paired=read.paired, using=using)
    else:
        unpaired = pairs.unpaired(before, after, members=members, paired=read.paired, using=using)
    group = None
    if read.group is not None:
        group = disclosure.GroupSize.counted(read.group, read.group_key_sum)
    progress(0.4)
    return Gathered(request, plan, table, unpaired, group, read.cells)


def _read(
    request: AnalysisRequest, plan: queries.CellPlan, members: list[int] | None, using: str
) -> pairs.PairedTable:
    params = request.params
    assert isinstance(params, Request) and params.attribute
    pair = (request.questions[params.attribute], request.questions[params.after_key])
    group: list[tuple[Question, str, Any]] = []
    if request.where and disclosure.is_exact(request, [c.attribute for c in request.where]):
        # A register's group (issue 26): counted exactly, published by the cell key.
        group = [(request.questions[c.attribute], c.op, c.value) for c in request.where]
    return pairs.paired_table(
        request.survey,
        pair,
        _axes(request, plan),
        members=members,
        group=group,
        cell_keys=disclosure.is_exact(request, request.keys),
        using=using,
    )


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
    return Fitted(gathered.request, result, gathered.unpaired, gathered.group, gathered.cells)


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


def _register_cells(cells: tuple[Any, Any]) -> tuple[Any, Any, Any, Any]:
    """Both answers (and any condition) exact: each transition cell is a register's
    cell (issue 26), hidden on its true count (returned first) and published as its
    cell-key perturbed count with the perturbation's bound; the shares come from the
    published cells (all of them: so each row's and column's hidden cells' perturbed sum
    is derivable, and :func:`_hidden` judges it on the true counts)."""
    counts, keys = cells
    k = counts.shape[0]
    true = np.asarray(counts, dtype=np.float64)
    shown = np.array(
        [[cellkey.perturbed_count(int(counts[i, j]), int(keys[i, j])) for j in range(k)]
         for i in range(k)],
        dtype=np.float64,
    )  # fmt: skip
    bounds = np.stack([shown - cellkey.MAX_PERTURBATION, shown + cellkey.MAX_PERTURBATION], -1)
    total = shown.sum()
    before = shown.sum(axis=1) / total if total > 0 else np.zeros(k)
    after = shown.sum(axis=0) / total if total > 0 else np.zeros(k)
    return true, shown, bounds, (before, after, after - before)


def line_totals(
    shares: Sequence[Any], intervals: Sequence[Any], size: float, size_ci: Sequence[Any]
) -> list[tuple[float, float, float] | None]:
    """Each published share before (after) as the count it stands for: the row's
    (column's) total of the transition table within the group, ``(estimate, low, high)``
    with the worst case of the share's and the group size's intervals (a missing bound
    unbounded), or ``None`` when the share is hidden. What :func:`published` gives the
    audit and what :func:`publish` suppresses each row and column against."""
    g_low, g_high = base.audit_interval(size_ci, float(size))
    out: list[tuple[float, float, float] | None] = []
    for share, pair in zip(shares, intervals, strict=True):
        if share is None:
            out.append(None)
            continue
        low, high = base.audit_interval(pair, float(share))
        with np.errstate(invalid="ignore"):
            corners = [a * b for a in (low, high) for b in (g_low, g_high)]
        if any(np.isnan(c) for c in corners):
            corners = [-np.inf, np.inf]
        out.append((float(share) * float(size), float(min(corners)), float(max(corners))))
    return out


def _group_of(where: Any, size: Any, size_ci: Any, paired: Any) -> tuple[float, Any]:
    """The group a change's shares are shares of: with a condition its published size
    and interval (``group_size``, ``group_ci95``), else every pair (exact)."""
    if where:
        return float(size), list(size_ci) if size_ci is not None else None
    return float(paired), [float(paired), float(paired)]


def _line_bounds(
    shares: Sequence[Any], intervals: Sequence[Any], size: float, size_ci: Sequence[Any]
) -> list[tuple[float, float] | None]:
    return [
        None if t is None else (t[1], t[2]) for t in line_totals(shares, intervals, size, size_ci)
    ]


def _line_json(totals: Sequence[tuple[float, float] | None]) -> list[Any]:
    return [None if total is None else interval_json(total) for total in totals]


def _exact_lines(shares: Sequence[Any], sums: Any) -> list[tuple[float, float] | None]:
    """A register's rows (columns): each shown share's line total, the sum of its
    perturbed cells (derivable exactly from the shares, which are of those cells)."""
    lines = zip(shares, sums, strict=True)
    return [None if share is None else (float(t), float(t)) for share, t in lines]


def publish(fitted: Fitted) -> dict[str, Any]:
    request, result = fitted.request, fitted.result
    params = request.params
    assert isinstance(params, Request) and params.attribute
    min_cell = request.thresholds.min_cell
    group = fitted.group
    size = disclosure.GroupSize(result.group_size, *result.group_ci95, exact=False)
    if request.where:
        disclosure.check_group(size if group is None else group, min_cell)
    transitions, transitions_ci95 = result.transitions, result.transitions_ci95
    if group is not None and group.perturbed:
        # A condition on exact attributes (a register): the group's size is published by
        # the cell key as a count is, and the table is scaled to it, so that the shown
        # cells do not add up to the true count either.
        size = disclosure.GroupSize(group.published, *group.published_ci95, exact=False)
        factor = group.published / result.group_size if result.group_size > 0 else 1.0
        transitions, transitions_ci95 = transitions * factor, transitions_ci95 * factor
    categories = [str(c) for c in request.questions[params.attribute].categories]
    k = len(categories)
    shares = (result.before, result.after, result.net_change)
    true = None
    if fitted.cells is not None:
        true, transitions, transitions_ci95, shares = _register_cells(fitted.cells)
    # A category's share before (after) is a group: its count's interval is the share's
    # interval times the group's size.
    scale = size.estimate
    hidden_before = disclosure.hidden_cells(shares[0] * scale, min_cell, result.before_ci95 * scale)
    hidden_after = disclosure.hidden_cells(shares[1] * scale, min_cell, result.after_ci95 * scale)
    hidden_net = hidden_before | hidden_after
    before, before_ci = _share_json(shares[0], result.before_ci95, hidden_before)
    after, after_ci = _share_json(shares[1], result.after_ci95, hidden_after)
    net, net_ci = _share_json(shares[2], result.net_change_ci95, hidden_net)
    # The rows' and columns' totals as the audit takes them from the payload.
    pairs_, pairs_ci = _group_of(request.where, float(size.estimate), size.ci95, result.n)
    rows = _line_bounds(before, before_ci, pairs_, pairs_ci)
    columns = _line_bounds(after, after_ci, pairs_, pairs_ci)
    if true is None:
        hidden = disclosure.hidden_table(
            transitions, min_cell, transitions_ci95, rows=rows, columns=columns
        )
    else:
        # A register's cells: hidden on their true counts, as a count's are; a row's or
        # column's hidden cells' sum is derivable from the shares (of all the perturbed
        # cells), so the lines are judged on the perturbed cells and their bound.
        first = disclosure.hidden_cells(true.ravel(), min_cell).reshape(k, k)
        rows = _exact_lines(before, transitions.sum(axis=1))
        columns = _exact_lines(after, transitions.sum(axis=0))
        hidden = disclosure.hidden_table(
            transitions, min_cell, transitions_ci95, rows=rows, columns=columns, hidden=first
        )
    hidden_rows = disclosure.hidden_line_totals(transitions_ci95, hidden, rows, axis=0)
    hidden_columns = disclosure.hidden_line_totals(transitions_ci95, hidden, columns, axis=1)
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
            [None if hidden[i, j] else float(transitions[i, j]) for j in range(k)] for i in range(k)
        ],
        "transitions_ci95": [
            [
                [None, None] if hidden[i, j] else interval_json(transitions_ci95[i, j])
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
        payload["group_size"] = float(size.estimate)
        payload["group_ci95"] = interval_json(size.ci95)
    if (group is not None and group.perturbed) or fitted.cells is not None:
        payload["perturbed"] = True
    if payload["suppressed"]:
        payload["suppression"] = disclosure.suppression_reason(min_cell)
        payload["suppressed_rows_ci95"] = _line_json(hidden_rows)
        payload["suppressed_columns_ci95"] = _line_json(hidden_columns)
    if params.panel is not None:
        payload["panel"] = params.panel
    return payload


@dataclass(frozen=True)
class AfterAnswer:
    """A question of the after survey as the before survey's query audit places it.

    The audit's population is the before survey's live respondents; some of them never
    answered the after survey. A discrete after question therefore has one category
    more than its own: code ``k``, "no answer after" (the residents counted as
    ``before_only``). A continuous one keeps its range (who did not answer it is not
    placed: a limit, docs/analysts/change.md).
    """

    question: Question

    @property
    def is_discrete(self) -> bool:
        return bool(self.question.is_discrete)

    @property
    def n_categories(self) -> int:
        return int(self.question.n_categories) + (1 if self.is_discrete else 0)

    @property
    def categories(self) -> list[Any]:
        return list(self.question.categories)

    @property
    def range_low(self) -> Any:
        return self.question.range_low

    @property
    def range_high(self) -> Any:
        return self.question.range_high


def _own_key(name: str) -> str:
    return name[: -len(AFTER_SUFFIX)]


def audit_name(after: int, key: str) -> str:
    """The audit's name of the after survey's question ``key``: qualified by the survey,
    so that two changes with different after surveys never share an attribute."""
    return f"{key}@survey{after}"


def _audit_names(params: Request) -> dict[str, str]:
    """The request's names of after-survey questions -> their audit names."""
    names = {params.after_key: audit_name(params.after, _own_key(params.after_key))}
    for condition in params.where:
        if condition.attribute.endswith(AFTER_SUFFIX):
            names[condition.attribute] = audit_name(params.after, _own_key(condition.attribute))
    return names


def audit_questions(survey: Survey, params: Request, known: dict[str, Any]) -> None:
    """What the audit needs to place a change (the kind's ``audit_questions``): its
    before question and conditions on the survey or profile, and its after survey's
    questions as :class:`AfterAnswer` under :func:`audit_name`."""
    after = _audit_names(params)
    for key in [*(c.attribute for c in params.where), params.attribute or ""]:
        if key in after or key in known:
            continue
        try:
            known.update(attribute_questions(survey, [key], "where"))
        except AnalysisInputError:
            raise base.UnknownAttribute(key) from None
    for name, audited in after.items():
        if audited in known:
            continue
        question = Question.objects.filter(survey_id=params.after, key=_own_key(name)).first()
        if question is None:
            raise base.UnknownAttribute(name)
        known[audited] = AfterAnswer(question)


def published(
    params: Request, payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """Each shown transition cell (before ``i`` and after ``j`` within the condition),
    the condition's group and, for a change of every paired resident (no panel), the
    pairs and those who answered before only, both exact (the after answer's category
    ``k``: :class:`AfterAnswer`). ``questions`` holds the after survey's questions under
    :func:`audit_name` (:func:`audit_questions`)."""
    names = _audit_names(params)
    after = names[params.after_key]
    if params.attribute not in questions or after not in questions:
        raise base.UnknownAttribute(params.after_key)
    renamed = [
        dataclasses.replace(c, attribute=names.get(c.attribute, c.attribute)) for c in params.where
    ]
    where = base.audit_conditions(renamed, questions)
    out: list[Published] = []
    if params.where and payload.get("group_size") is not None:
        out.append(base.sized(Box.of(where), payload["group_size"], payload.get("group_ci95")))
    cells = payload.get("transitions") or []
    intervals = payload.get("transitions_ci95") or []
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            if value is None:
                continue
            box = Box.of([*where, (params.attribute, "in", {i}), (after, "in", {j})])
            out.append(base.sized(box, value, intervals[i][j]))
    k = len(cells)
    attribute = str(params.attribute)
    group = payload.get("group_size") if params.where else payload.get("paired")
    scale, scale_ci = (None, None)
    if group is not None:
        scale, scale_ci = _group_of(params.where, group, payload.get("group_ci95"), group)
    lines = (
        (attribute, payload.get("before"), payload.get("before_ci95")),
        (after, payload.get("after"), payload.get("after_ci95")),
    )
    every = set(range(k))
    for name, shares, share_ci in lines:
        # A shown share is its row's (column's) count: a box the cells lie in.
        if shares is None or share_ci is None or scale is None or scale_ci is None:
            continue
        if len(shares) != k:
            continue
        for i, total in enumerate(line_totals(shares, share_ci, scale, scale_ci)):
            if total is not None:
                line = (name, "in", {i})
                box = Box.of([*where, line, *([(after, "in", every)] if name != after else [])])
                out.append(Published(box, *total))
    for axis, field in ((0, "suppressed_rows_ci95"), (1, "suppressed_columns_ci95")):
        # A line's hidden cells' sum, on the interval it was judged on (as a
        # distribution's hidden sum is published).
        for i, pair in enumerate(payload.get(field) or []):
            if pair is None or None in pair:
                continue
            hidden = {j for j in range(k) if _cell(cells, i, j, axis) is None}
            if axis == 0:
                box = Box.of([*where, (attribute, "in", {i}), (after, "in", hidden)])
            else:
                box = Box.of([*where, (attribute, "in", hidden), (after, "in", {i})])
            low, high = float(pair[0]), float(pair[1])
            out.append(Published(box, (low + high) / 2, low, high))
    if params.panel is None and k:
        if payload.get("before_only") is not None:
            box = Box.of([(after, "in", {k})])
            out.append(Published.exact(box, float(payload["before_only"])))
        answered = [(after, "in", set(range(k)))]
        for name in names.values():
            question = questions.get(name)
            if name != after and question is not None and question.is_discrete:
                answered.append((name, "in", set(range(question.n_categories - 1))))
        placed = all(questions[name].is_discrete for name in names.values() if name in questions)
        if placed and payload.get("paired") is not None:
            out.append(Published.exact(Box.of(answered), float(payload["paired"])))
    return out


def _cell(cells: Sequence[Sequence[Any]], line: int, j: int, axis: int) -> Any:
    return cells[line][j] if axis == 0 else cells[j][line]


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
    audit_questions=audit_questions,
    cost=change_cost,
    attribute="required",
    request_fields=("after", "after_attribute", "panel"),
    group_threshold="min_cell",
    whole_number_tests=whole_number_tests,
)
