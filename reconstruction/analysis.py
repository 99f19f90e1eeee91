"""Analyses of distorted survey data: from an analyst's request to a publishable result.

This module joins the domain (questions, answers, thresholds) to the pure
engine (``reconstruction.algorithms``): it turns api.md's JSON conditions
into engine conditions, loads the answers as numpy arrays through the
selectors, runs the estimator and applies disclosure control
(002_f0fd5869fe299975.txt) before anything leaves the worker.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from core.errors import InvalidInput
from core.messages import message_of, translate
from privacy.mechanisms.messages import Message, note_json
from reconstruction.algorithms import tables
from reconstruction.algorithms.continuous import (
    IntervalReconstruction,
    WholeNumberEvidence,
    half_unit_evidence,
    noise_scale,
    whole_numbers_testable,
    whole_threshold_note,
)
from reconstruction.algorithms.methods import check_method, reconstruct
from reconstruction.algorithms.queries import (
    Attribute,
    Condition,
    ContinuousAttribute,
    CountResult,
    DiscreteAttribute,
    whole_number_weight,
)
from reconstruction.algorithms.queries import _whole_number_note as whole_number_note
from reconstruction.algorithms.result import Reconstruction
from surveys import selectors, statistics, tallies
from surveys.models import Question, Survey

DISCRETE_OPS = ("in",)
CONTINUOUS_OPS = ("gt", "lte", "between")


class AnalysisInputError(InvalidInput, ValueError):
    """A request that cannot be analysed; ``errors`` names the offending fields.

    A domain error (HTTP 400 through ``config.errors``); in a worker it is a
    ``ValueError`` and fails the job with the same message.
    """

    def __init__(self, errors: Mapping[str, Message | str]) -> None:
        # A problem is a translatable Message (template + parameters), so a worker that
        # meets it stores the template and the reader sees it in their own language;
        # ``errors`` and ``detail`` are in the active language (the request's).
        field, problem = next(iter(errors.items()))
        self.message: Message | str = (
            Message(_FIELD_PROBLEM, {"field": field, "problem": problem})
            if isinstance(problem, Message)
            else f"{field}: {problem}"
        )
        shown = {key: translate(value) for key, value in errors.items()}
        detail = _("Invalid input: %(problem)s") % {"problem": translate(self.message)}
        super().__init__(detail, shown)

    def __str__(self) -> str:
        return translate(self.message)


_FIELD_PROBLEM = gettext_noop("%(field)s: %(problem)s")


@dataclass(frozen=True)
class Thresholds:
    """A consultation's disclosure thresholds (002: question-level 10, option-level 5)."""

    min_responses: int
    min_cell: int

    @classmethod
    def of(cls, survey: Survey) -> Thresholds:
        consultation = survey.consultation
        return cls(min_responses=consultation.min_responses, min_cell=consultation.min_cell)


# --------------------------------------------------------------------------- requests


def attribute_questions(survey: Survey, keys: Sequence[str], field: str) -> dict[str, Question]:
    """The questions the attributes name (the survey's own, else the profile survey's)."""
    found: dict[str, Question] = {}
    for key in keys:
        if key in found:
            continue
        try:
            found[key] = selectors.attribute_question(survey, key)
        except ValueError as exc:
            raise AnalysisInputError({field: message_of(exc)}) from None
    return found


def _label_codes(question: Question, values: Any, field: str) -> frozenset[int]:
    labels = [str(label) for label in question.categories]
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise AnalysisInputError(
            {
                field: Message(
                    gettext_noop("'in' needs a list of categories of %(key)s"),
                    {"key": repr(question.key)},
                )
            }
        )
    if not values:
        raise AnalysisInputError(
            {field: Message(gettext_noop("'in' needs at least one category (empty condition)"))}
        )
    codes = set()
    for value in values:
        if str(value) not in labels:
            raise AnalysisInputError(
                {
                    field: Message(
                        gettext_noop("%(value)s is not a category of %(key)s (%(categories)s)"),
                        {
                            "value": repr(value),
                            "key": repr(question.key),
                            "categories": ", ".join(labels),
                        },
                    )
                }
            )
        codes.add(labels.index(str(value)))
    return frozenset(codes)


def parse_where(
    where: Sequence[Mapping[str, Any]], questions: Mapping[str, Question], field: str = "where"
) -> list[Condition]:
    """Turn api.md conditions into engine conditions, rejecting what makes no sense.

    Checked here, so no job is created for them: an operator that does not fit the
    attribute's type, an unknown category, non-numeric thresholds, and a
    contradictory conjunction (no value can satisfy it, e.g. ``gt 40`` and
    ``lte 30``, ``between [5, 3)``, ``in [F]`` and ``in [M]``, or a range outside
    the question's declared range).
    """
    conditions: list[Condition] = []
    for index, item in enumerate(where):
        item_field = f"{field}[{index}]"
        question = questions[item["attribute"]]
        op = item["op"]
        if question.is_discrete and op not in DISCRETE_OPS:
            raise AnalysisInputError(
                {
                    item_field: Message(
                        gettext_noop("%(key)s is %(type)s: use op 'in', not %(op)s"),
                        {"key": repr(question.key), "type": question.type, "op": repr(op)},
                    )
                }
            )
        if not question.is_discrete and op not in CONTINUOUS_OPS:
            raise AnalysisInputError(
                {
                    item_field: Message(
                        gettext_noop("%(key)s is continuous: use gt, lte or between, not %(op)s"),
                        {"key": repr(question.key), "op": repr(op)},
                    )
                }
            )
        value = item.get("value")
        if op == "in":
            value = _label_codes(question, value, item_field)
        try:
            conditions.append(Condition(question.key, op, value))
        except ValueError as exc:
            raise AnalysisInputError({item_field: message_of(exc)}) from None
    _check_satisfiable(conditions, questions, field)
    return conditions


def _check_satisfiable(
    conditions: Sequence[Condition], questions: Mapping[str, Question], field: str
) -> None:
    by_attribute: dict[str, list[Condition]] = {}
    for condition in conditions:
        by_attribute.setdefault(condition.attribute, []).append(condition)
    for key, group in by_attribute.items():
        question = questions[key]
        if question.is_discrete:
            allowed = frozenset(range(len(question.categories)))
            for condition in group:
                allowed &= condition.value  # type: ignore[operator]
            if not allowed:
                raise AnalysisInputError(
                    {
                        field: Message(
                            gettext_noop(
                                "contradictory condition: no category of %(key)s meets all of it"
                            ),
                            {"key": repr(key)},
                        )
                    }
                )
            continue
        # Intersect the half-open pieces with the declared range [low, high].
        low, low_open = float(question.range_low), False
        high, high_open = float(question.range_high), False
        for condition in group:
            if condition.op == "gt":
                t = float(condition.value)  # type: ignore[arg-type]
                if t >= low:
                    low, low_open = t, True
            elif condition.op == "lte":
                t = float(condition.value)  # type: ignore[arg-type]
                if t < high or (t == high and high_open):
                    high, high_open = t, False
            else:
                t1, t2 = condition.value  # type: ignore[misc]
                if t1 > low or (t1 == low and not low_open):
                    low, low_open = t1, False
                if t2 <= high:
                    high, high_open = t2, True
        if low > high or (low == high and (low_open or high_open)):
            raise AnalysisInputError(
                {
                    field: Message(
                        gettext_noop(
                            "contradictory condition: no value of %(key)s in its range "
                            "[%(low)s, %(high)s] meets all of it"
                        ),
                        {
                            "key": repr(key),
                            "low": f"{question.range_low:g}",
                            "high": f"{question.range_high:g}",
                        },
                    )
                }
            )


def condition_keys(spec: Mapping[str, Any]) -> list[str]:
    keys = [item["attribute"] for item in spec.get("where", [])]
    for stratum in spec.get("strata", []):
        keys += [item["attribute"] for item in stratum["where"]]
    for quota in spec.get("quotas", []):  # a panel's quota categories
        keys += [item["attribute"] for item in quota["where"]]
    return keys


@dataclass(frozen=True)
class AnalysisRequest:
    """A request resolved against the survey's schema: questions and engine conditions.

    Building one reads the questions, never an answer.
    """

    survey: Survey
    spec: Mapping[str, Any]
    questions: dict[str, Question]
    where: list[Condition]
    strata: list[tuple[list[Condition], int]]
    thresholds: Thresholds
    participants: int = 0
    """Participants who answered every attribute (set once counted)."""
    read: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Cell tables already read for this request (shared by its ``replace`` copies)."""
    whole_numbers: tuple[str, ...] = ()
    """Continuous attributes without a declared step whose reports show whole numbers
    (:func:`detect_whole_numbers`): planned on the lattice of whole numbers."""
    lattice_weights: tuple[tuple[str, float], ...] = ()
    """Continuous attributes without a declared step whose reports cannot settle whether
    they hold whole numbers, with the weight of whole numbers
    (:func:`detect_whole_numbers` with ``average``): a joint count averages both models."""

    @property
    def kind(self) -> str:
        return str(self.spec["kind"])

    @property
    def method(self) -> str | None:
        method = self.spec.get("method")
        return None if method is None else str(method)

    @property
    def attribute(self) -> str | None:
        attribute = self.spec.get("attribute")
        return None if attribute is None else str(attribute)

    @property
    def target(self) -> Question | None:
        """The question a mean or a distribution is about."""
        return self.questions[self.attribute] if self.attribute else None

    @property
    def keys(self) -> list[str]:
        """Every attribute the request names, the target first, each once."""
        keys = condition_keys(self.spec)
        if self.attribute:
            keys = [self.attribute, *keys]
        return list(dict.fromkeys(keys))


def resolve(survey: Survey, spec: Mapping[str, Any]) -> AnalysisRequest:
    """Resolve a request's attributes and conditions against the survey's schema.

    Raises :class:`AnalysisInputError` for unknown attributes and conditions that do not
    fit their questions (see :func:`parse_where`).
    """
    keys = condition_keys(spec)
    if spec.get("attribute"):
        keys = [spec["attribute"], *keys]
    questions = attribute_questions(survey, keys, "where")
    where = parse_where(spec.get("where", []), questions)
    strata = [
        (parse_where(stratum["where"], questions, f"strata[{i}].where"), int(stratum["size"]))
        for i, stratum in enumerate(spec.get("strata", []))
    ]
    return AnalysisRequest(
        survey=survey,
        spec=spec,
        questions=questions,
        where=where,
        strata=strata,
        thresholds=Thresholds.of(survey),
    )


@dataclass(frozen=True)
class PreparedAnalysis:
    """A resolved request with the answers it needs loaded (the worker's input)."""

    request: AnalysisRequest
    participants: np.ndarray[Any, Any]
    table: dict[str, Attribute]

    # Shorthands the kinds' computations read.
    @property
    def spec(self) -> Mapping[str, Any]:
        return self.request.spec

    @property
    def where(self) -> list[Condition]:
        return self.request.where

    @property
    def strata(self) -> list[tuple[list[Condition], int]]:
        return self.request.strata

    @property
    def questions(self) -> dict[str, Question]:
        return self.request.questions

    @property
    def thresholds(self) -> Thresholds:
        return self.request.thresholds


def _attribute(question: Question, column: np.ndarray[Any, Any]) -> Attribute:
    if question.is_discrete:
        return DiscreteAttribute(column.astype(np.intp), selectors.question_channel(question))
    return ContinuousAttribute(
        column.astype(np.float64),
        selectors.question_noise(question),
        float(question.range_low),
        float(question.range_high),
        step=question.step,
    )


def load(request: AnalysisRequest) -> PreparedAnalysis:
    """Load the answers a request names, aligned by participant (ids, not references).

    Only the methods that assign values to participants need this (Figure 3, sampling);
    it streams from the database into one array per question.
    """
    questions = [request.questions[key] for key in request.keys]
    ids, columns = statistics.attribute_columns(
        request.survey, questions, using=statistics.analysis_alias()
    )
    table = {
        key: _attribute(request.questions[key], columns[request.questions[key].pk])
        for key in request.keys
    }
    return PreparedAnalysis(request=request, participants=ids, table=table)


def references(prepared: PreparedAnalysis, rows: np.ndarray[Any, Any]) -> list[str]:
    """The participants' references of the given rows of a loaded table, in row order."""
    return statistics.participant_references(
        prepared.participants[rows].tolist(), using=statistics.analysis_alias()
    )


def check_method_fits(question: Question, method: str) -> None:
    """Refuse a discrete estimator that does not fit the question's channel.

    The engine's own rule (:func:`reconstruction.algorithms.methods.check_method`), on
    the channel alone: no estimator runs.
    """
    try:
        check_method(selectors.question_channel(question), method)
    except ValueError as exc:
        raise AnalysisInputError(
            {
                "method": Message(
                    gettext_noop("%(problem)s (%(key)s uses %(mechanism)s)"),
                    {
                        "problem": message_of(exc),
                        "key": repr(question.key),
                        "mechanism": question.mechanism,
                    },
                )
            }
        ) from None


def question_spec(question: Question) -> tables.Spec:
    """The engine's view of a question without its data (channel, or noise and range)."""
    if question.is_discrete:
        return tables.DiscreteSpec(selectors.question_channel(question))
    return tables.ContinuousSpec(
        selectors.question_noise(question),
        float(question.range_low),
        float(question.range_high),
        step=question.step,
    )


def participant_count(request: AnalysisRequest) -> int:
    """Participants who answered every attribute the request names (one aggregate query)."""
    questions = [request.questions[key] for key in request.keys]
    return statistics.participant_count(
        request.survey, questions, using=statistics.analysis_alias()
    )


def counted_with_cells(request: AnalysisRequest, target: str | None) -> int:
    """:func:`participant_count`, read off the request's own cell table.

    The cells of the request's condition (and ``target``) count exactly the participants
    :func:`participant_count` counts (everyone who answered every attribute), so one
    ``GROUP BY`` gives both. The plan is chosen for the tallies' upper bound on ``n``
    (:func:`participant_bound`); when the plan for the exact count has the same reported
    cells (the interval count stops depending on ``n`` past a few thousand answers),
    the table is kept for :func:`cells`, else it is read again for the exact plan.
    """
    bound = participant_bound(request)
    if bound < 1 or not (request.where or target):
        return participant_count(request)
    try:
        guess = plan(request, bound, target=target)
    except ValueError:
        return participant_count(request)
    table = cells(request, guess)
    n = table.n
    if n >= 1:
        exact = plan(request, n, target=target)
        if _same_cells(exact, guess):
            request.read[_cells_key(request, exact)] = table
    return n


def _same_cells(a: tables.CellPlan, b: tables.CellPlan) -> bool:
    return a.names == b.names and all(
        (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
        for x, y in zip(a.reported_edges, b.reported_edges, strict=True)
    )


def _cells_key(request: AnalysisRequest, cell_plan: tables.CellPlan) -> Any:
    edges = tuple(None if e is None else e.tobytes() for e in cell_plan.reported_edges)
    return (cell_plan.names, edges, cell_plan.target, tuple(request.keys))


def participant_bound(request: AnalysisRequest) -> int:
    """At least as many as :func:`participant_count`, read in constant time.

    The smallest of the survey's live responses and each named question's live answers,
    from the response tallies (:mod:`surveys.tallies`): a few rows whatever the number
    of participants, so the web request's threshold check does not grow with ``n``.
    Anyone who answered every attribute is counted in each of them, so the bound never
    refuses a request the exact count would accept; the worker counts exactly.
    """
    questions = [request.questions[key] for key in request.keys]
    responses, answers = tallies.live_counts(
        [request.survey.pk], [q.pk for q in questions], using=statistics.analysis_alias()
    )
    return min([responses[request.survey.pk], *(answers[q.pk] for q in questions)])


def too_few_responses(request: AnalysisRequest, n: int) -> Message | None:
    """Why nothing may be published for so few participants (``None`` when enough).

    The reason names the threshold, never the below-threshold number.
    """
    needed = request.thresholds.min_responses
    if n >= needed:
        return None
    keys: Message | str = ", ".join(repr(key) for key in request.keys) or Message(
        gettext_noop("this survey")
    )
    return Message(
        gettext_noop(
            "fewer than %(needed)s participants answered %(keys)s; at least %(needed)s are "
            "needed before anything is published"
        ),
        {"needed": needed, "keys": keys},
    )


def plan(request: AnalysisRequest, n: int, *, target: str | None = None) -> tables.CellPlan:
    """The engine's plan of the reported cells for the request's condition (and target).

    The attributes of :attr:`AnalysisRequest.whole_numbers` get ``step=1``.
    """
    specs = {key: question_spec(request.questions[key]) for key in request.keys}
    for key in request.whole_numbers:
        spec = specs[key]
        if isinstance(spec, tables.ContinuousSpec) and spec.step is None:
            specs[key] = dataclasses.replace(spec, step=1.0)
    return tables.plan_cells(specs, request.where, n=n, target=target)


def whole_number_tests(request: AnalysisRequest) -> tuple[list[str], bool]:
    """The attributes the worker tests for whole numbers, and whether inconclusive
    evidence averages both models (where the array API does, issue 10).

    A joint count tests its condition's attributes and averages; a conditional mean
    (``unbiased``) and a grouped distribution test their condition's and target's
    attributes and keep the interval model when inconclusive, as does the overall
    distribution of a continuous question (:func:`overall_distribution`, which tests
    its question itself). Only continuous questions without a declared step whose noise
    and range allow the test are tested
    (:func:`~reconstruction.algorithms.continuous.whole_numbers_testable`). The cost
    model prices these tests and models (:mod:`reconstruction.cost`).
    """
    kind = request.kind
    if kind == "count" and (request.method or "joint") == "joint":
        keys, average = [c.attribute for c in request.where], True
    elif request.where and (
        (kind == "mean" and (request.method or "unbiased") == "unbiased") or kind == "distribution"
    ):
        keys, average = request.keys, False
    elif kind == "distribution" and request.attribute:  # overall (overall_distribution)
        keys, average = [request.attribute], False
    else:
        return [], False
    tested = []
    for key in dict.fromkeys(keys):
        question = request.questions[key]
        if question.is_discrete or question.step is not None:
            continue
        low, high = float(question.range_low), float(question.range_high)
        if whole_numbers_testable(selectors.question_noise(question), low, high):
            tested.append(key)
    return tested, average


def detect_whole_numbers(
    request: AnalysisRequest, keys: Sequence[str], *, average: bool = False
) -> AnalysisRequest:
    """Test the reports of ``keys``' continuous questions without a declared step for
    whole-number truths, as the array API does (issue 10); the request with those
    found planned on the lattice of whole numbers (:attr:`AnalysisRequest.whole_numbers`).

    Per question one ``GROUP BY`` of its reports in half units over the participants
    who answered every attribute (:func:`surveys.statistics.half_unit_counts`: bounded
    rows whatever the number of participants), then the engine's test on that histogram
    (:func:`~reconstruction.algorithms.continuous.half_unit_evidence`, the same evidence
    as :func:`~reconstruction.algorithms.continuous.whole_number_evidence` on the
    reports). Questions it cannot test (non-additive noise, a range that does not hold
    whole numbers) are not read. Only a clear detection switches the model
    (:attr:`~reconstruction.algorithms.continuous.WholeNumberEvidence.detected`).
    With ``average`` (a joint count), an inconclusive test records the weight of whole
    numbers as the array API's ``count_joint`` computes it
    (:func:`~reconstruction.algorithms.queries.whole_number_weight`) in
    :attr:`AnalysisRequest.lattice_weights`, and the count averages both models
    (:func:`count_models`); otherwise it keeps the interval model, as the array API's
    means and distributions do.
    """
    found: list[str] = []
    weights: list[tuple[str, float]] = []
    everyone = [request.questions[key] for key in request.keys]
    for key in dict.fromkeys(keys):
        question = request.questions[key]
        detected, evidence = whole_number_verdict(request.survey, question, everyone)
        if detected:
            found.append(key)
            continue
        weight = None
        if average and evidence is not None:
            weight = whole_number_weight(selectors.question_noise(question), evidence)
        if weight is not None:
            weights.append((key, weight))
    return dataclasses.replace(request, whole_numbers=tuple(found), lattice_weights=tuple(weights))


def whole_number_verdict(
    survey: Survey, question: Question, require: Sequence[Question] = ()
) -> tuple[bool, WholeNumberEvidence | None]:
    """Whether a continuous question's reports show whole-number truths, and the
    evidence (``None`` where it cannot be tested, or without noise).

    One ``GROUP BY`` of its reports in half units over the participants who answered
    ``require`` too (:func:`surveys.statistics.half_unit_counts`), then the engine's
    test on that histogram
    (:func:`~reconstruction.algorithms.continuous.half_unit_evidence`). A question that
    declares ``step``, is discrete or cannot be tested is not read. Undistorted reports
    are read directly (every report a whole number).
    """
    if question.is_discrete or question.step is not None:
        return False, None
    noise = selectors.question_noise(question)
    low, high = float(question.range_low), float(question.range_high)
    if not whole_numbers_testable(noise, low, high):
        return False, None
    halves = statistics.half_unit_counts(
        survey, question, require=require, using=statistics.analysis_alias()
    )
    if not halves.counts:
        return False, None
    if noise_scale(noise) == 0:  # undistorted: whole numbers are read off the reports
        return halves.fractional == 0, None
    evidence = half_unit_evidence(halves.counts, noise, low, high)
    return evidence is not None and evidence.detected, evidence


def count_models(request: AnalysisRequest) -> CountResult:
    """The joint count averaged over whole numbers and intervals for the attributes of
    :attr:`AnalysisRequest.lattice_weights` (the array API's ``count_joint``).

    One cell table per model (the plan with ``step=1`` on the attributes the model puts
    on whole numbers), each one ``GROUP BY`` (:func:`cells`; the interval model's table
    is the one :func:`counted_with_cells` already read), fitted and averaged by the
    array API's own code (:func:`~reconstruction.algorithms.tables.averaged_count_from_tables`,
    :func:`~reconstruction.algorithms.queries.averaged_count`): O(cells) per model.
    """

    def read(choice: Mapping[str, bool]) -> tuple[tables.CellPlan, tables.CellTable]:
        lattice = tuple(key for key, on in choice.items() if on)
        model = dataclasses.replace(
            request, whole_numbers=(*request.whole_numbers, *lattice), lattice_weights=()
        )
        cell_plan = plan(model, request.participants)
        return cell_plan, cells(model, cell_plan)

    return tables.averaged_count_from_tables(dict(request.lattice_weights), read)


def whole_number_notes(request: AnalysisRequest) -> list[str]:
    """The array API's note for each attribute planned on whole numbers by detection."""
    return [whole_number_note(key) for key in request.whole_numbers]


def whole_threshold_notes(request: AnalysisRequest) -> list[str]:
    """A note per continuous condition attribute under smooth noise (Gaussian, Laplace)
    that declares no step and has a threshold on a whole number
    (:func:`~reconstruction.algorithms.continuous.whole_threshold_note`): the reports
    cannot show whether its truths are whole numbers, and if they are the interval
    model is biased there (issue 10); declaring ``step`` removes it."""
    thresholds: dict[str, list[float]] = {}
    for condition in request.where:
        question = request.questions[condition.attribute]
        if question.is_discrete or question.step is not None:
            continue
        if condition.attribute in request.whole_numbers:
            continue
        thresholds.setdefault(condition.attribute, []).extend(condition.thresholds)
    notes = []
    for key, values in thresholds.items():
        question = request.questions[key]
        note = whole_threshold_note(
            key,
            selectors.question_noise(question),
            float(question.range_low),
            float(question.range_high),
            values,
        )
        if note is not None:
            notes.append(note)
    return notes


def cells(request: AnalysisRequest, cell_plan: tables.CellPlan) -> tables.CellTable:
    """Count the plan's cells in the database; with a target, its per-cell moments too.

    Only participants who answered every attribute of the request count, whichever of
    them the plan's axes are (as in the array API, whose table holds all of them).
    A table :func:`counted_with_cells` read for the same cells is not read again.
    """
    key = _cells_key(request, cell_plan)
    if key in request.read:
        return request.read.pop(key)  # type: ignore[no-any-return]
    axes = [
        statistics.Axis(
            request.questions[name],
            None if edges is None else statistics.finite_edges(edges),
        )
        for name, edges in zip(cell_plan.names, cell_plan.reported_edges, strict=True)
    ]
    target = None
    if cell_plan.target is not None and not request.questions[cell_plan.target].is_discrete:
        target = request.questions[cell_plan.target]
    counted = statistics.cell_statistics(
        request.survey,
        axes,
        target=target,
        require=[request.questions[key] for key in request.keys],
        using=statistics.analysis_alias(),
    )
    return tables.CellTable(counted.counts, counted.sums, counted.squares)


def naive_moments(request: AnalysisRequest) -> statistics.Moments:
    """Participants whose reported answers meet the condition, with the target's sum and
    sum of squares when the request has a continuous target (one SQL aggregate)."""
    where = [(request.questions[c.attribute], c.op, c.value) for c in request.where]
    target = request.target
    return statistics.condition_moments(
        request.survey,
        [request.questions[key] for key in request.keys],
        where,
        target=None if target is None or target.is_discrete else target,
        using=statistics.analysis_alias(),
    )


def naive_count(request: AnalysisRequest) -> int:
    """Participants whose reported answers meet the condition (one SQL ``COUNT``)."""
    return naive_moments(request).count


def group_too_small(needed: int) -> Message:
    return Message(
        gettext_noop(
            "the group this condition selects is too small to publish (the 95%% interval "
            "of its size reaches below %(needed)s)"
        ),
        {"needed": needed},
    )


# --------------------------------------------------------------------------- results


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def interval_json(pair: Any) -> list[float | None]:
    return [_finite(float(pair[0])), _finite(float(pair[1]))]


def suppress_cells(
    counts: np.ndarray[Any, Any], min_cell: int, intervals: Any | None = None
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which cells of a distribution to hide: decided on each cell's interval.

    See :func:`reconstruction.disclosure.hidden_cells` (the threshold point): primary
    suppression hides a cell whose 95% interval reaches below ``min_cell`` (002's
    option-level threshold; without ``intervals`` the counts are exact), complementary
    suppression the next-smallest cell when only one was hidden.
    """
    from reconstruction.disclosure import hidden_cells

    return hidden_cells(counts, min_cell, intervals)


def distribution_payload(
    result: Reconstruction | IntervalReconstruction,
    question: Question,
    min_cell: int,
    *,
    exact: bool = False,
) -> dict[str, Any]:
    """api.md's distribution result with disclosure control applied.

    ``exact``: the answers (target and condition) were collected undistorted, so each
    cell's size is its count (a degenerate interval); otherwise each cell is judged on
    its 95% interval.
    """
    from reconstruction.disclosure import hidden_total, suppression_reason

    counts = np.asarray(result.counts, dtype=np.float64)
    rec = result.reconstruction if isinstance(result, IntervalReconstruction) else result
    bounds = np.stack([counts, counts], axis=1) if exact else np.asarray(rec.ci95)
    hidden = suppress_cells(counts, min_cell, bounds)
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
        payload["suppression"] = suppression_reason(min_cell)
        # The hidden cells' sum is derivable from the total; its (publishable) interval
        # lets the query audit judge it (reconstruction/auditing.py).
        payload["suppressed_total_ci95"] = interval_json(hidden_total(bounds, hidden, total))
    return payload


def calibration_of(question: Question) -> np.ndarray[Any, Any] | None:
    """The calibration pairs a manual negative question's channel was estimated from."""
    if question.mechanism != "negative_manual":
        return None
    return selectors.calibration_pairs(question)


def overall_distribution(
    survey: Survey, question: Question, method: str | None
) -> tuple[Reconstruction | IntervalReconstruction, np.ndarray[Any, np.dtype[np.float64]]]:
    """A question's distribution over the survey's live participants who answered it.

    Returns the reconstruction and the naive counts (the reported answers counted as if
    they were true, in the same categories or intervals). Both come from one SQL
    ``GROUP BY`` of reported cells: codes, or the reported bins of the engine's plan.
    """
    using = statistics.analysis_alias()
    if question.is_discrete:
        counts = statistics.cell_statistics(survey, [statistics.Axis(question)], using=using)
        return distribution_from_counts(question, method, counts.counts)
    n = statistics.participant_count(survey, [question], using=using)
    if n < 1:
        raise ValueError(f"nobody answered {question.key!r}")
    # As the array API's distribution: reports that show whole numbers (no declared
    # step) put the cells on the lattice of whole numbers, and the result says so.
    whole, _evidence = whole_number_verdict(survey, question)
    cell_plan = overall_plan(question, n, whole_numbers=whole)
    counted = statistics.cell_statistics(
        survey, [statistics.Axis(question, overall_inner_edges(cell_plan))], using=using
    )
    result, naive = distribution_from_counts(question, method, counted.counts, cell_plan)
    if whole:
        result = with_whole_number_note(result, question)
    return result, naive


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


def overall_plan(question: Question, n: int, *, whole_numbers: bool = False) -> tables.CellPlan:
    """The engine's plan of a continuous question's reported bins for ``n`` answers
    (``whole_numbers``: on the lattice of whole numbers, ``step=1``)."""
    spec = question_spec(question)
    if whole_numbers and isinstance(spec, tables.ContinuousSpec) and spec.step is None:
        spec = dataclasses.replace(spec, step=1.0)
    return tables.plan_cells({question.key: spec}, (), n=n, target=question.key)


def overall_inner_edges(cell_plan: tables.CellPlan) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The inner edges the database cuts an overall plan's reported values at."""
    bins = cell_plan.reported_edges[0]
    assert bins is not None
    return statistics.finite_edges(bins)


def distribution_from_counts(
    question: Question,
    method: str | None,
    counts: np.ndarray[Any, Any],
    cell_plan: tables.CellPlan | None = None,
) -> tuple[Reconstruction | IntervalReconstruction, np.ndarray[Any, np.dtype[np.float64]]]:
    """:func:`overall_distribution` from counts already read: a discrete question's
    codes, or a continuous one's reported bins of ``cell_plan`` (:func:`overall_plan`)."""
    if question.is_discrete:
        naive = np.asarray(counts, dtype=np.float64)
        result: Reconstruction | IntervalReconstruction = reconstruct(
            naive,
            selectors.question_channel(question),
            method=method or "em_as",
            calibration_pairs=calibration_of(question),
        )
        return result, naive
    assert cell_plan is not None
    bins = cell_plan.reported_edges[0]
    assert bins is not None
    interval = tables.distribution_from_table(
        cell_plan,
        tables.CellTable(counts),
        method="em" if method is None else method,  # type: ignore[arg-type]
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
