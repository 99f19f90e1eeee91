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

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction import analysis, disclosure, registry
from reconstruction.algorithms.audit import Box, Continuous, Discrete, Published, audit
from reconstruction.analysis import AnalysisInputError, AnalysisRequest
from reconstruction.jobs import JobRefused
from reconstruction.kinds import base, distribution
from reconstruction.kinds.base import KindRequest
from reconstruction.models import AnalysisJob, Job, Report
from surveys import selectors as survey_selectors
from surveys import statistics
from surveys.models import Question, Survey

_Unknown = base.UnknownAttribute


def results_of(
    kind: str, spec: Mapping[str, Any], payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """The boxes (with estimates and intervals) that one stored analysis result
    publishes: its kind's ``published`` of the stored request, parsed as when it ran."""
    entry = registry.get(kind)
    return entry.published(entry.parse({**spec, "kind": kind}), payload, questions)


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


def _keys(params: KindRequest) -> list[str]:
    keys = [c.attribute for c in params.where]
    if params.attribute:
        keys.append(params.attribute)
    return keys


def _place(
    entry: base.AnalysisKind, survey: Survey, params: KindRequest, known: dict[str, Any]
) -> None:
    """Add to ``known`` what the boxes of a result of ``entry`` name (the kind's own
    ``audit_questions`` for a kind that reads another survey, as a change does)."""
    if entry.audit_questions is not None:
        entry.audit_questions(survey, params, known)
    else:
        _questions_of(survey, _keys(params), known)


def report_results(document: Mapping[str, Any], questions: Mapping[str, Any]) -> list[Published]:
    """The cells a report publishes: each published question's reconstructed distribution."""
    out: list[Published] = []
    for section in document.get("questions") or []:
        if not section.get("published") or section.get("key") not in questions:
            continue
        out += distribution.question_published(
            section["key"], section.get("reconstructed") or {}, questions
        )
    return out


def published_results(
    job: AnalysisJob, questions: dict[str, Question], population: int | None = None
) -> list[Published]:
    """The survey's published results (all keys of the organisation), and its population
    (its live responses: ``population``, else counted here)."""
    survey = job.survey
    if population is None:
        population = survey_selectors.survey_response_count(survey)
    published = [Published.exact(Box(), float(population))]
    mine = {"organisation_id": job.organisation_id, "survey_id": job.survey_id}
    earlier = AnalysisJob.objects.filter(**mine, status=Job.Status.SUCCEEDED).exclude(pk=job.pk)
    for spec, kind, result in earlier.values_list("spec", "kind", "result"):
        try:
            entry = registry.get(kind)
            params = entry.parse({**spec, "kind": kind})  # the stored request, typed
            _place(entry, survey, params, questions)
            published += entry.published(params, result or {}, questions)
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


def lock_survey(survey_id: int) -> None:
    """Hold the survey's row until the transaction ends, so that its audits run one
    after the other: ``FOR NO KEY UPDATE``, which excludes another audit (and a change
    of the survey's row) but not the ``FOR KEY SHARE`` with which every bulk submission
    checks that its survey exists (``FOR UPDATE`` held the ingest up for the whole
    audit: issue 30's ingest beside analyses)."""
    Survey.objects.select_for_update(no_key=True).filter(pk=survey_id).first()


def publish(job: AnalysisJob, prepared: AnalysisRequest, payload: dict[str, Any]) -> None:
    """Audit ``payload`` against the survey's published results and store it, atomically.

    Raises
    ------
    JobRefused
        When the result, with results already published, implies a cell below the
        threshold; the reason names the threshold only.
    """
    threshold = prepared.thresholds.min_cell
    # The population is counted before the survey is held, where the job read its
    # statistics (the standby when it has one): a scan of the survey's responses.
    population = survey_selectors.survey_response_count(
        job.survey, using=statistics.analysis_alias()
    )
    with transaction.atomic():
        lock_survey(job.survey_id)
        questions = dict(prepared.questions)
        entry = registry.get(job.kind)
        if entry.audit_questions is not None:
            entry.audit_questions(job.survey, prepared.params, questions)
        new = entry.published(prepared.params, payload, questions)
        published = published_results(job, questions, population)
        finding = audit(_universe(questions), published, new, threshold) if new else None
        if finding is not None and registry.get(job.kind).sampling:
            # A list's refusal reads the same whether its size or the audit refused it.
            raise JobRefused(disclosure.sample_refused(threshold))
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
