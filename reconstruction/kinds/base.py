"""What every analysis kind module provides, and the pieces the kinds share.

A kind is one module of :mod:`reconstruction.kinds` with a module-level ``KIND``, an
:class:`AnalysisKind`. The worker runs its three stages once, in order
(:func:`reconstruction.pipeline.compute`):

``gather(request, progress)``
    every SQL read the result needs (through :mod:`surveys.statistics` and the
    helpers of :mod:`reconstruction.analysis`), after the shared start
    (:func:`start`: whole-number tests, the exact participant count, the threshold of
    responses, the kind's ``validate``);
``fit(gathered)``
    engine calls only (:mod:`reconstruction.algorithms`), no database;
``publish(fitted)``
    disclosure control (:mod:`reconstruction.disclosure`) and api.md's result JSON.

Besides the stages a kind declares its typed request (``parse``: a frozen
:class:`KindRequest` from the serializer's validated data), its methods and default,
request-time ``validate`` and ``cost`` checks, the boxes the query audit records
(``published``), which attributes the worker tests for whole numbers, and the traits
the cost model and the interfaces read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from reconstruction import analysis
from reconstruction.algorithms.audit import Box, Published
from reconstruction.analysis import AnalysisInputError, AnalysisRequest, ConditionSpec
from reconstruction.jobs import JobRefused

Progress = Callable[[float], None]

ATTACHMENT_KEY = "_attachment"
"""Key of the payload under which a kind hands a CSV attachment to the service (popped
before the result is stored; see ``services._compute_analysis``)."""


def probabilities_url(job_id: int) -> str:
    return f"/api/v1/analyses/{job_id}/probabilities.csv"


# --------------------------------------------------------------------------- typed requests


@dataclass(frozen=True)
class StratumSpec:
    """One stratum of a sample as asked: its conditions and its size."""

    where: tuple[ConditionSpec, ...]
    size: int


@dataclass(frozen=True)
class KindRequest:
    """The fields every kind's request has, typed (the kinds add their own).

    ``method`` is the method asked for, else the kind's ``default_method`` (``None`` for a
    kind whose default depends on the question, e.g. a distribution).
    """

    kind: str
    method: str | None = None
    attribute: str | None = None
    where: tuple[ConditionSpec, ...] = ()
    strata: tuple[StratumSpec, ...] = ()
    asked_method: bool = False
    """Whether the request named its method (a default is not checked against a channel)."""

    def other_surveys(self) -> tuple[int, ...]:
        """Ids of the further surveys whose answers the request reads besides the survey's
        own and its profile's (e.g. a change's ``after`` survey): a purged one answers 410
        (:func:`reconstruction.pipeline.validate_request`)."""
        return ()

    def condition_keys(self) -> list[str]:
        """Every attribute a condition names (the kinds add theirs, e.g. quotas)."""
        keys = [c.attribute for c in self.where]
        for stratum in self.strata:
            keys += [c.attribute for c in stratum.where]
        return keys


def common_fields(spec: Mapping[str, Any], default_method: str | None) -> dict[str, Any]:
    """The :class:`KindRequest` fields of a validated request mapping."""
    method = spec.get("method")
    return {
        "kind": str(spec["kind"]),
        "method": default_method if method is None else str(method),
        "asked_method": method is not None,
        "attribute": None if spec.get("attribute") is None else str(spec["attribute"]),
        "where": conditions(spec.get("where") or ()),
        "strata": tuple(
            StratumSpec(conditions(s["where"]), int(s["size"])) for s in spec.get("strata") or ()
        ),
    }


def conditions(raw: Sequence[Mapping[str, Any]]) -> tuple[ConditionSpec, ...]:
    return tuple(ConditionSpec.of(item) for item in raw)


# --------------------------------------------------------------------------- the contract


@dataclass(frozen=True)
class AnalysisKind:
    """One analysis kind: what it accepts, how it is checked, computed and published.

    ``name``, ``summary``
        The ``kind`` of api.md's request (also ``AnalysisJob.kind``) and one sentence
        for the API documentation.
    ``methods`` / ``default_method``
        Every method name the kind accepts and the one used when the request names none;
        ``methods_for(request)`` narrows them for one request (default: ``methods``).
    ``attribute``, ``needs_where``, ``sampling``, ``request_fields``
        What the serializer checks: the target question ``"required"`` or
        ``"forbidden"``; at least one condition; ``size``/``seed``/``strata`` (sampling
        kinds); further fields only this kind takes.
    ``group_threshold``
        The disclosure threshold a condition's group must reach (``"min_cell"`` or
        ``"min_responses"``, 002_f0fd5869fe299975.txt).
    ``parse(spec)``
        The kind's typed, frozen request from the serializer's validated data.
    ``validate(request)``
        Request-time checks on the schema (raise :class:`AnalysisInputError`); it must
        not read answers. ``request.participants`` is an upper bound in the web request
        and the exact count in the worker.
    ``cost(request)``
        Refuse a request above ``ANALYSIS_COST_BUDGET`` before anything is queued.
    ``admit(request)``
        Optional, in the web request only (after ``validate``): a check that reads a few
        aggregate rows of the answers (one ``GROUP BY``, bounded whatever the number of
        participants) to refuse with a 400 what the worker would otherwise refuse
        seconds later (a panel's candidate types, issue 32); the worker keeps its own.
    ``gather`` / ``fit`` / ``publish``
        The worker's three stages (module docstring). What needs the fit to be decided
        raises :class:`~reconstruction.jobs.JobRefused` naming the threshold, never a
        below-threshold number.
    ``published(params, payload, questions)``
        The boxes a stored result publishes, with estimates and intervals (the query
        audit, :mod:`reconstruction.auditing`).
    ``whole_number_tests(request)``
        The attributes the worker tests for whole-number truths and whether inconclusive
        evidence averages both models (issue 10).
    The cost model's traits: ``interval`` (the result has a bootstrap interval),
    ``judges_group`` (a condition's group is judged on its own count),
    ``overall_alone`` (without a condition only the target is fitted), ``streams`` (the
    participants are streamed once per quota), ``figure3_bootstrap`` (Figure 3 is
    repeated on every bootstrap replicate). ``attachment``: the result comes with a CSV
    of selection probabilities; ``admin_form``: the admin's analysis form offers it;
    ``label``: what it estimates in plain words (``gettext_noop``; interfaces translate it
    and fall back to ``name``); ``attribute_types`` and ``type_methods``: what the
    admin's analysis form offers for the target question's type.
    ``resolve(survey, request)``
        Resolves the typed request against the schema itself (a kind that reads a second
        survey); default :func:`reconstruction.analysis.resolve` of its attributes.
    ``audit_questions(survey, params, known)``
        Adds to ``known`` what the query audit needs to place the boxes a request of
        this kind publishes, by the names its ``published`` uses (a kind that reads a
        second survey); raises :class:`UnknownAttribute` for what it cannot place.
        Default: the request's condition and ``attribute``, questions of the survey or
        its profile (:mod:`reconstruction.auditing`).
    """

    name: str
    summary: str
    methods: tuple[str, ...]
    default_method: str | None
    parse: Callable[[Mapping[str, Any]], KindRequest]
    gather: Callable[[AnalysisRequest, Progress], Any]
    fit: Callable[[Any], Any]
    publish: Callable[[Any], dict[str, Any]]
    published: Callable[[Any, Mapping[str, Any], Mapping[str, Any]], list[Published]]
    cost: Callable[[AnalysisRequest], int]
    attribute: Literal["required", "forbidden"] = "forbidden"
    needs_where: bool = False
    sampling: bool = False
    request_fields: tuple[str, ...] = ()
    group_threshold: Literal["min_cell", "min_responses"] = "min_responses"
    methods_for: Callable[[AnalysisRequest], tuple[str, ...]] | None = None
    validate: Callable[[AnalysisRequest], None] = field(default=lambda request: None)
    admit: Callable[[AnalysisRequest], None] | None = None
    whole_number_tests: Callable[[AnalysisRequest], tuple[list[str], bool]] = field(
        default=lambda request: ([], False)
    )
    interval: bool = True
    judges_group: bool = True
    overall_alone: bool = False
    streams: bool = False
    figure3_bootstrap: bool = False
    attachment: bool = False
    admin_form: bool = True
    label: str = ""
    attribute_types: tuple[str, ...] = ("discrete", "continuous")
    """The question types the target ``attribute`` may have (the admin form offers those)."""
    type_methods: Mapping[str, tuple[str, ...]] | None = None
    """Methods by the target question's type (``discrete``/``continuous``), the default
    first, for a kind whose methods depend on it (``methods_for``); ``None``: ``methods``."""
    resolve: Callable[[Any, KindRequest], AnalysisRequest] | None = None
    audit_questions: Callable[[Any, Any, dict[str, Any]], None] | None = None

    def allowed_methods(self, request: AnalysisRequest) -> tuple[str, ...]:
        return self.methods if self.methods_for is None else self.methods_for(request)

    def threshold(self, request: AnalysisRequest) -> int:
        return int(getattr(request.thresholds, self.group_threshold))


# --------------------------------------------------------------------------- the worker's start


@dataclass(frozen=True)
class Started:
    """The worker's request after the shared start, with the table read while counting."""

    request: AnalysisRequest
    read: analysis.CellsRead | None


def start(
    request: AnalysisRequest,
    progress: Progress,
    *,
    with_cells: bool = False,
    target: str | None = None,
    participants: int | None = None,
) -> Started:
    """Count again (data change) and decide what needs the exact count, before the fit.

    Tests the whole-number attributes (:func:`whole_numbers`), counts the participants
    exactly (``with_cells``: off the request's own cell table with ``target``, which is
    kept for the gather; a joint count's whole-number tests from the same scan), or takes
    ``participants`` counted by the caller off the same participants' cell tables,
    refuses too few responses and runs the kind's ``validate`` on the exact count.
    """
    read = None
    if with_cells and target is None:  # a joint count: tests and cells from one scan
        request, n, read = analysis.tested_counted_with_cells(request)
    elif with_cells:
        request = whole_numbers(request)
        n, read = analysis.counted_with_cells(request, target)
    elif participants is not None:  # counted off the kind's own cell tables
        request = whole_numbers(request)
        n = participants
    else:
        request = whole_numbers(request)
        n = analysis.participant_count(request)
    reason = analysis.too_few_responses(request, n)
    if reason is not None:
        raise JobRefused(reason)
    request = request.with_participants(n)
    try:
        request.kind.validate(request)
    except AnalysisInputError as exc:
        raise JobRefused(exc.message) from None  # template + parameters
    progress(0.1)
    return Started(request, read)


def whole_numbers(request: AnalysisRequest) -> AnalysisRequest:
    """Test for whole-number truths where the array API does (issue 10): the attributes
    of :func:`reconstruction.analysis.whole_number_tests` (one ``GROUP BY`` each). A
    joint count whose evidence is inconclusive averages both models. The overall
    distribution of a continuous question tests its question itself
    (:func:`reconstruction.analysis.overall_counts`)."""
    keys, average = analysis.whole_number_tests(request)
    if not keys or (request.kind.overall_alone and not request.where):
        return request
    return analysis.detect_whole_numbers(request, keys, average=average)


# --------------------------------------------------------------------------- the query audit


class UnknownAttribute(Exception):
    """A published result names something the audit cannot place (skipped)."""


def audit_conditions(
    raw: Sequence[ConditionSpec], questions: Mapping[str, Any]
) -> list[tuple[str, str, object]]:
    """Stored conditions as the audit's boxes take them (categories as codes)."""
    out: list[tuple[str, str, object]] = []
    for condition in raw:
        key, op, value = condition.attribute, condition.op, condition.value
        question = questions.get(key)
        if question is None:
            raise UnknownAttribute(key)
        if op == "in":
            labels = list(question.categories)
            try:
                value = {labels.index(label) for label in value}  # type: ignore[union-attr]
            except ValueError:
                raise UnknownAttribute(key) from None
        out.append((key, op, value))
    return out


def audit_interval(pair: Any, estimate: float) -> tuple[float, float]:
    """A published size's 95% interval, as the audit must assume it.

    A missing bound (``null``: not finite) is unbounded on that side, never the point
    estimate: a result is judged on what is known about it (issue 10, the threshold
    point). Only a result stored without any interval (an exact count, or a result
    stored before its kind published one) is taken at its value.
    """
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        low = -math.inf if pair[0] is None else float(pair[0])
        high = math.inf if pair[1] is None else float(pair[1])
        return low, high
    return estimate, estimate


def sized(box: Box, estimate: Any, pair: Any) -> Published:
    """A group's size published with its 95% interval (``pair``; see :func:`audit_interval`)."""
    value = float(estimate)
    low, high = audit_interval(pair, value)
    return Published(box, value, low, high)


def group_published(
    params: KindRequest, questions: Mapping[str, Any], estimate: Any, pair: Any
) -> list[Published]:
    """The box of a result that publishes its condition's group size (or nothing)."""
    if estimate is None:
        return []
    return [sized(Box.of(audit_conditions(params.where, questions)), estimate, pair)]


def notes(*groups: Sequence[Any]) -> list[Any]:
    """Result notes (templates with parameters, :func:`privacy.mechanisms.messages.note_json`)."""
    from privacy.mechanisms.messages import note_json

    return [note_json(note) for group in groups for note in group]
