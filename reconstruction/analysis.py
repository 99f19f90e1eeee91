"""Analyses of distorted survey data: from an analyst's request to a publishable result.

This module joins the domain (questions, answers, thresholds) to the pure engine
(``reconstruction.algorithms``) for every kind (:mod:`reconstruction.kinds`): the request
resolved against the schema (:class:`AnalysisRequest`; conditions are checked in
:mod:`reconstruction.conditions`), the SQL reads the kinds' ``gather`` stages share (cell
tables of a plan, participant counts, the whole-number tests, the answers of the
participants for the methods that assign values to them), and the result helpers.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from django.utils.translation import gettext_noop

from core.messages import message_of
from privacy.mechanisms.messages import Message
from reconstruction.algorithms import queries
from reconstruction.algorithms.continuous import (
    WholeNumberEvidence,
    half_unit_evidence,
    noise_scale,
    whole_numbers_testable,
    whole_threshold_note,
)
from reconstruction.algorithms.methods import check_method
from reconstruction.algorithms.queries import (
    Attribute,
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
    whole_number_weight,
)
from reconstruction.algorithms.queries import _whole_number_note as whole_number_note
from reconstruction.conditions import (
    AnalysisInputError,
    ConditionSpec,
    Thresholds,
    attribute_questions,
    parse_where,
)
from surveys import condition_counts, joint_counts, selectors, statistics, tallies
from surveys.models import Question, Survey


class Kind(Protocol):
    """What this module and the cost model read of a request's kind
    (:class:`reconstruction.kinds.base.AnalysisKind`)."""

    name: str
    default_method: str | None
    interval: bool
    judges_group: bool
    overall_alone: bool
    streams: bool
    figure3_bootstrap: bool

    def validate(self, request: AnalysisRequest) -> None: ...

    def whole_number_tests(self, request: AnalysisRequest) -> tuple[list[str], bool]: ...


class Params(Protocol):
    """What this module reads of a kind's typed request
    (:class:`reconstruction.kinds.base.KindRequest`)."""

    kind: str
    method: str | None
    attribute: str | None
    asked_method: bool
    where: Sequence[ConditionSpec]
    strata: Sequence[Any]

    def condition_keys(self) -> list[str]: ...


@dataclass(frozen=True)
class AnalysisRequest:
    """A typed request resolved against the survey's schema: questions and engine
    conditions. Building one reads the questions, never an answer.

    ``kind`` is the kind's entry (:mod:`reconstruction.kinds`), ``params`` its typed,
    frozen request (parsed once from the serializer's validated data).
    """

    survey: Survey
    kind: Kind
    params: Params
    questions: dict[str, Question]
    where: list[Condition]
    strata: list[tuple[list[Condition], int]]
    thresholds: Thresholds
    participants: int = 0
    """Participants who answered every attribute (set once counted)."""
    whole_numbers: tuple[str, ...] = ()
    """Continuous attributes without a declared step whose reports show whole numbers
    (:func:`detect_whole_numbers`): planned on the lattice of whole numbers."""
    lattice_weights: tuple[tuple[str, float], ...] = ()
    """Continuous attributes without a declared step whose reports cannot settle whether
    they hold whole numbers, with the weight of whole numbers
    (:func:`detect_whole_numbers` with ``average``): a joint count averages both models."""

    @property
    def method(self) -> str | None:
        """The method asked for, else the kind's default (``None``: chosen by the question)."""
        return self.params.method

    @property
    def attribute(self) -> str | None:
        return self.params.attribute

    @property
    def target(self) -> Question | None:
        """The question a mean or a distribution is about."""
        return self.questions[self.attribute] if self.attribute else None

    @property
    def keys(self) -> list[str]:
        """Every attribute the request names, the target first, each once."""
        keys = self.params.condition_keys()
        if self.attribute:
            keys = [self.attribute, *keys]
        return list(dict.fromkeys(keys))

    def with_participants(self, n: int) -> AnalysisRequest:
        return dataclasses.replace(self, participants=int(n))


def resolve(
    survey: Survey,
    kind: Kind,
    params: Params,
    where: Sequence[ConditionSpec],
    strata: Sequence[tuple[Sequence[ConditionSpec], int]] = (),
) -> AnalysisRequest:
    """Resolve a typed request's attributes and conditions against the survey's schema.

    Raises :class:`AnalysisInputError` for unknown attributes and conditions that do not
    fit their questions (see :func:`parse_where`).
    """
    keys = params.condition_keys()
    if params.attribute:
        keys = [params.attribute, *keys]
    questions = attribute_questions(survey, keys, "where")
    return AnalysisRequest(
        survey=survey,
        kind=kind,
        params=params,
        questions=questions,
        where=parse_where(where, questions),
        strata=[
            (parse_where(conds, questions, f"strata[{i}].where"), int(size))
            for i, (conds, size) in enumerate(strata)
        ],
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


def question_spec(question: Question) -> queries.Spec:
    """The engine's view of a question without its data (channel, or noise and range)."""
    if question.is_discrete:
        return queries.DiscreteSpec(selectors.question_channel(question))
    return queries.ContinuousSpec(
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


@dataclass(frozen=True)
class CellsRead:
    """Cell tables read while counting (:func:`counted_with_cells`,
    :func:`tested_counted_with_cells`), by the plan each was read for: :func:`cells` of
    the same plan returns it instead of reading again."""

    tables: Mapping[Any, queries.CellTable]


def counted_with_cells(
    request: AnalysisRequest, target: str | None
) -> tuple[int, CellsRead | None]:
    """:func:`participant_count`, read off the request's own cell table, and that table.

    The cells of the request's condition (and ``target``) count exactly the participants
    :func:`participant_count` counts (everyone who answered every attribute), so one
    ``GROUP BY`` gives both. The plan is chosen for the tallies' upper bound on ``n``
    (:func:`participant_bound`); when the plan for the exact count has the same reported
    cells (the interval count stops depending on ``n`` past a few thousand answers),
    the table is returned for :func:`cells`, else it is read again for the exact plan.
    """
    bound = participant_bound(request)
    if bound < 1 or not (request.where or target):
        return participant_count(request), None
    try:
        guess = plan(request, bound, target=target)
    except ValueError:
        return participant_count(request), None
    table = cells(request, guess)
    n = table.n
    if n >= 1:
        exact = plan(request, n, target=target)
        if _same_cells(exact, guess):
            return n, CellsRead({_cells_key(request, exact): table})
    return n, None


def tested_counted_with_cells(
    request: AnalysisRequest,
) -> tuple[AnalysisRequest, int, CellsRead | None]:
    """The whole-number tests (:func:`detect_whole_numbers`) and :func:`counted_with_cells`
    of a joint count, from one scan where the database can (one ``GROUPING SETS`` query,
    :func:`surveys.joint_counts.cell_counts_and_half_units`): the tested attributes' half
    units and the condition's cell tables of every model the tests may choose (each
    tested attribute on whole numbers or not), planned for the tallies' upper bound on
    ``n`` (:func:`participant_bound`). The tests then choose as they do one by one
    (:func:`whole_number_verdict`), and every table whose plan for the exact count has
    the same cells is kept for :func:`cells` (:func:`model_tables` reads the averaged
    models' tables from it), so the counts are those of the tests and reads in turn.

    Returns the request with its whole numbers and lattice weights, the exact count and
    the tables read.
    """
    keys, average = whole_number_tests(request)
    bound = participant_bound(request)
    if not keys or not request.where or bound < 1 or len(keys) > 3:
        if keys and not (request.kind.overall_alone and not request.where):
            request = detect_whole_numbers(request, keys, average=average)
        n, read = counted_with_cells(request, None)
        return request, n, read
    models: dict[tuple[bool, ...], AnalysisRequest] = {}
    guesses: dict[Any, queries.CellPlan] = {}
    try:
        for choice in itertools.product((True, False), repeat=len(keys)):
            lattice = tuple(key for key, on in zip(keys, choice, strict=True) if on)
            models[choice] = dataclasses.replace(request, whole_numbers=lattice)
            guess = plan(models[choice], bound)
            guesses.setdefault(_cells_key(request, guess), guess)
    except ValueError:  # as counted_with_cells: counted and read one by one
        request = detect_whole_numbers(request, keys, average=average)
        n, read = counted_with_cells(request, None)
        return request, n, read
    everyone = [request.questions[key] for key in request.keys]
    counted, halves = joint_counts.cell_counts_and_half_units(
        request.survey,
        [_axes(request, guess) for guess in guesses.values()],
        [request.questions[key] for key in keys],
        require=everyone,
        using=statistics.analysis_alias(),
    )
    read = {key: queries.CellTable(counts) for key, counts in zip(guesses, counted, strict=True)}
    found: list[str] = []
    weights: list[tuple[str, float]] = []
    for key in keys:
        question = request.questions[key]
        detected, evidence = judge_whole_numbers(question, halves[question.pk])
        if detected:
            found.append(key)
        elif average and evidence is not None:
            weight = whole_number_weight(selectors.question_noise(question), evidence)
            if weight is not None:
                weights.append((key, weight))
    request = dataclasses.replace(
        request, whole_numbers=tuple(found), lattice_weights=tuple(weights)
    )
    n = next(iter(read.values())).n
    kept: dict[Any, queries.CellTable] = {}
    if n >= 1:
        for model in models.values():
            guess = plan(model, bound)
            exact = plan(model, n)
            if _same_cells(exact, guess):
                kept[_cells_key(request, exact)] = read[_cells_key(request, guess)]
    return request, n, CellsRead(kept) if kept else None


def _axes(request: AnalysisRequest, cell_plan: queries.CellPlan) -> list[statistics.Axis]:
    return [
        statistics.Axis(
            request.questions[name],
            None if edges is None else statistics.finite_edges(edges),
        )
        for name, edges in zip(cell_plan.names, cell_plan.reported_edges, strict=True)
    ]


def _same_cells(a: queries.CellPlan, b: queries.CellPlan) -> bool:
    return a.names == b.names and all(
        (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
        for x, y in zip(a.reported_edges, b.reported_edges, strict=True)
    )


def _cells_key(request: AnalysisRequest, cell_plan: queries.CellPlan) -> Any:
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


def plan(request: AnalysisRequest, n: int, *, target: str | None = None) -> queries.CellPlan:
    """The engine's plan of the reported cells for the request's condition (and target).

    The attributes of :attr:`AnalysisRequest.whole_numbers` get ``step=1``.
    """
    specs = {key: question_spec(request.questions[key]) for key in request.keys}
    for key in request.whole_numbers:
        spec = specs[key]
        if isinstance(spec, queries.ContinuousSpec) and spec.step is None:
            specs[key] = dataclasses.replace(spec, step=1.0)
    return queries.plan_cells(specs, request.where, n=n, target=target)


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
    keys, average = request.kind.whole_number_tests(request)
    if not keys:
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
    return judge_whole_numbers(question, halves)


def judge_whole_numbers(
    question: Question, halves: statistics.HalfUnits
) -> tuple[bool, WholeNumberEvidence | None]:
    """:func:`whole_number_verdict` on the half units read (a testable question)."""
    noise = selectors.question_noise(question)
    low, high = float(question.range_low), float(question.range_high)
    if not halves.counts:
        return False, None
    if noise_scale(noise) == 0:  # undistorted: whole numbers are read off the reports
        return halves.fractional == 0, None
    evidence = half_unit_evidence(halves.counts, noise, low, high)
    return evidence is not None and evidence.detected, evidence


def model_tables(
    request: AnalysisRequest, read: CellsRead | None = None
) -> dict[tuple[tuple[str, bool], ...], tuple[queries.CellPlan, queries.CellTable]]:
    """The cell tables of every model of :attr:`AnalysisRequest.lattice_weights`: each
    combination of whole numbers (the plan with ``step=1`` on the attributes a model puts
    on whole numbers) and intervals, one ``GROUP BY`` each (:func:`cells`; the interval
    model's table is the one :func:`counted_with_cells` read), keyed by
    :func:`model_key`. A joint count averages them
    (:func:`~reconstruction.algorithms.queries.averaged_count_from_tables`)."""
    keys = [key for key, _weight in request.lattice_weights]
    out = {}
    for choice in itertools.product((True, False), repeat=len(keys)):
        lattice = tuple(key for key, on in zip(keys, choice, strict=True) if on)
        model = dataclasses.replace(
            request, whole_numbers=(*request.whole_numbers, *lattice), lattice_weights=()
        )
        cell_plan = plan(model, request.participants)
        out[model_key(dict(zip(keys, choice, strict=True)))] = (
            cell_plan,
            cells(model, cell_plan, read),
        )
    return out


def model_key(choice: Mapping[str, bool]) -> tuple[tuple[str, bool], ...]:
    return tuple(sorted(choice.items()))


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


def cells(
    request: AnalysisRequest, cell_plan: queries.CellPlan, read: CellsRead | None = None
) -> queries.CellTable:
    """Count the plan's cells in the database; with a target, its per-cell moments too.

    Only participants who answered every attribute of the request count, whichever of
    them the plan's axes are (as in the array API, whose table holds all of them).
    A table :func:`counted_with_cells` read for the same cells (``read``) is not read
    again.
    """
    if read is not None and _cells_key(request, cell_plan) in read.tables:
        return read.tables[_cells_key(request, cell_plan)]
    axes = _axes(request, cell_plan)
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
    return queries.CellTable(counted.counts, counted.sums, counted.squares)


def naive_moments(request: AnalysisRequest, *, keys: bool = False) -> condition_counts.Moments:
    """Participants whose reported answers meet the condition, with the target's sum and
    sum of squares when the request has a continuous target (one SQL aggregate); with
    ``keys``, their record keys' sum (the cell-key method)."""
    where = [(request.questions[c.attribute], c.op, c.value) for c in request.where]
    target = request.target
    return condition_counts.condition_moments(
        request.survey,
        [request.questions[key] for key in request.keys],
        where,
        target=None if target is None or target.is_discrete else target,
        keys=keys,
        using=statistics.analysis_alias(),
    )


def keyed_cells(
    request: AnalysisRequest, inner_edges: Any | None = None
) -> condition_counts.KeyedCells:
    """The target's cells among the participants meeting the condition (a discrete
    target's categories; a continuous one's intervals, cut at ``inner_edges``), with
    their record keys' sums (an exact distribution's cells; the cell-key method)."""
    target = request.target
    assert target is not None
    where = [(request.questions[c.attribute], c.op, c.value) for c in request.where]
    return condition_counts.condition_key_cells(
        request.survey,
        [request.questions[key] for key in request.keys],
        where,
        target,
        inner_edges=inner_edges,
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
