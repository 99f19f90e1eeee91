"""Query auditing per survey (issue 13, finding 1): the published results and the check.

The published set of a survey is every analysis of the organisation on it that
succeeded (whoever asked, with whichever key), every report of the organisation on it
that succeeded (each question's reconstructed cells: a report publishes per-question
distributions, which difference against counts like any other result), plus the
survey's response count, which is public. Before a new analysis's result is stored,
the boxes it publishes (a count's condition; a distribution's cells within its
condition, their hidden sum and the condition's total; a mean's or a sample's group)
are judged together with the published ones by
:func:`reconstruction.algorithms.audit.audit`: a result that would imply a cell whose
interval does not lie at or above the cell threshold (and is not provably empty) ends
the job as ``refused``. The check and the
storing of the result happen in one transaction that holds the survey's row, so two
analyses finishing at once are judged one after the other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction import analysis
from reconstruction.algorithms.audit import Box, Continuous, Discrete, Published, audit
from reconstruction.analysis import AnalysisInputError, AnalysisRequest
from reconstruction.jobs import JobRefused
from reconstruction.models import AnalysisJob, Job, Report
from surveys import selectors as survey_selectors
from surveys.models import Question, Survey


class _Unknown(Exception):
    """A published result names something the audit cannot place (skipped)."""


def _conditions(
    raw: Sequence[Mapping[str, Any]], questions: Mapping[str, Question]
) -> list[tuple[str, str, object]]:
    out: list[tuple[str, str, object]] = []
    for condition in raw:
        key, op, value = condition["attribute"], condition["op"], condition["value"]
        question = questions.get(key)
        if question is None:
            raise _Unknown(key)
        if op == "in":
            labels = list(question.categories)
            try:
                value = {labels.index(label) for label in value}
            except ValueError:
                raise _Unknown(key) from None
        out.append((key, op, value))
    return out


def _interval(pair: Any, estimate: float) -> tuple[float, float]:
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


def _sized(box: Box, estimate: Any, pair: Any) -> Published:
    """A group's size published with its 95% interval (``pair``; see :func:`_interval`)."""
    value = float(estimate)
    low, high = _interval(pair, value)
    return Published(box, value, low, high)


def results_of(
    kind: str, spec: Mapping[str, Any], payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """The boxes (with estimates and intervals) that one analysis result publishes."""
    where = _conditions(spec.get("where") or [], questions)
    box = Box.of(where)
    out: list[Published] = []
    if kind == "count":
        if payload.get("estimate") is not None:
            out.append(_sized(box, payload["estimate"], payload.get("ci95")))
    elif kind == "mean":
        # The group's size on its interval (issue 10: a group is judged on its size's
        # 95% interval, in the audit as in the per-query rule).
        if payload.get("group_size") is not None:
            out.append(_sized(box, payload["group_size"], payload.get("group_size_ci95")))
    elif kind == "sample":
        if payload.get("pool_estimate") is not None:
            out.append(_sized(box, payload["pool_estimate"], payload.get("pool_ci95")))
    elif kind == "panel":
        # The eligible pool on its interval; a panel stored before it published one
        # counts its listed candidates (exactly the group on undistorted answers).
        if (
            payload.get("eligible_ci95") is not None
            and payload.get("expected_eligible") is not None
        ):
            out.append(_sized(box, payload["expected_eligible"], payload["eligible_ci95"]))
        elif payload.get("candidates") is not None:
            out.append(Published.exact(box, float(payload["candidates"])))
    elif kind == "distribution":
        key = spec["attribute"]
        question = questions.get(key)
        if question is None:
            raise _Unknown(key)
        if where and payload.get("n") is not None:
            # The group's size on the interval it was judged on.
            out.append(_sized(box, payload["n"], payload.get("group_size_ci95")))
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
            out.append(_sized(Box.of([*where, cell_of(index, index)]), value, pair))
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


def _universe(questions: Mapping[str, Question]) -> dict[str, Discrete | Continuous]:
    return {
        key: Discrete(int(q.n_categories))
        if q.is_discrete
        else Continuous(float(q.range_low), float(q.range_high))
        for key, q in questions.items()
    }


def _questions_of(survey: Survey, keys: Sequence[str], known: dict[str, Question]) -> None:
    for key in keys:
        if key in known:
            continue
        try:
            known.update(analysis.attribute_questions(survey, [key], "where"))
        except AnalysisInputError:
            raise _Unknown(key) from None


def _keys(spec: Mapping[str, Any]) -> list[str]:
    keys = [c["attribute"] for c in spec.get("where") or []]
    if spec.get("attribute"):
        keys.append(spec["attribute"])
    return keys


def report_results(document: Mapping[str, Any], questions: Mapping[str, Any]) -> list[Published]:
    """The cells a report publishes: each published question's reconstructed distribution."""
    out: list[Published] = []
    for section in document.get("questions") or []:
        if not section.get("published") or section.get("key") not in questions:
            continue
        spec = {"kind": "distribution", "attribute": section["key"]}
        out += results_of("distribution", spec, section.get("reconstructed") or {}, questions)
    return out


def published_results(job: AnalysisJob, questions: dict[str, Question]) -> list[Published]:
    """The survey's published results (all keys of the organisation), and its population."""
    survey = job.survey
    published = [Published.exact(Box(), float(survey_selectors.survey_response_count(survey)))]
    mine = {"organisation_id": job.organisation_id, "survey_id": job.survey_id}
    earlier = AnalysisJob.objects.filter(**mine, status=Job.Status.SUCCEEDED).exclude(pk=job.pk)
    for spec, kind, result in earlier.values_list("spec", "kind", "result"):
        try:
            _questions_of(survey, _keys(spec), questions)
            published += results_of(kind, spec, result or {}, questions)
        except (_Unknown, KeyError, TypeError, ValueError):
            continue  # a result the audit cannot place is left out (README: limits)
    reports = Report.objects.filter(**mine, status=Job.Status.SUCCEEDED)
    for document in reports.values_list("result", flat=True):
        if not isinstance(document, dict):
            continue
        keys = [s.get("key") for s in document.get("questions") or [] if s.get("published")]
        for key in keys:
            try:
                _questions_of(survey, [key], questions)
            except _Unknown:
                continue
        try:
            published += report_results(document, questions)
        except (_Unknown, KeyError, TypeError, ValueError):
            continue
    return published


def publish(job: AnalysisJob, prepared: AnalysisRequest, payload: dict[str, Any]) -> None:
    """Audit ``payload`` against the survey's published results and store it, atomically.

    Raises
    ------
    JobRefused
        When the result, with results already published, implies a cell below the
        threshold; the reason names the threshold only.
    """
    threshold = prepared.thresholds.min_cell
    with transaction.atomic():
        Survey.objects.select_for_update().filter(pk=job.survey_id).first()
        questions = dict(prepared.questions)
        new = results_of(job.kind, prepared.spec, payload, questions)
        published = published_results(job, questions)
        finding = audit(_universe(questions), published, new, threshold) if new else None
        if finding is not None:
            raise JobRefused(
                Message(
                    gettext_noop(
                        "this result, together with results already published for this "
                        "survey, would reveal a group smaller than the threshold of "
                        "%(threshold)s (query auditing: %(kind)s of published results)"
                    ),
                    {"threshold": threshold, "kind": finding.kind},
                )
            )
        AnalysisJob.objects.filter(pk=job.pk).exclude(status__in=Job.FINISHED).update(
            status=Job.Status.SUCCEEDED,
            result=payload,
            progress=1.0,
            error="",
            error_message=None,
            finished_at=timezone.now(),
        )
