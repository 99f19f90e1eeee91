"""The analysis path: a request validated at the edge, then gather -> fit -> publish once.

:func:`validate_request` is what the web request decides (the schema and the response
tallies, no fit); :func:`compute` is the worker's part: the kind's ``gather`` (every SQL
read), its pure ``fit`` and its ``publish`` (disclosure control and the result JSON), each
once (:mod:`reconstruction.kinds.base`). The raw request mapping is parsed once, into the
kind's typed, frozen request (:func:`resolve`); nothing after it reads the mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction import analysis, registry
from reconstruction.analysis import AnalysisInputError, AnalysisRequest
from reconstruction.kinds.base import Progress
from surveys import retention
from surveys.models import Survey


def resolve(survey: Survey, spec: Mapping[str, Any]) -> AnalysisRequest:
    """The serializer's validated data as the kind's typed request, resolved against the
    survey's schema (questions and engine conditions; no answer is read)."""
    kind = registry.get(spec["kind"])
    params = kind.parse(spec)
    if kind.resolve is not None:
        return kind.resolve(survey, params)
    strata = [(stratum.where, stratum.size) for stratum in params.strata]
    return analysis.resolve(survey, kind, params, params.where, strata)


def validate_request(
    survey: Survey, spec: Mapping[str, Any], *, count: bool = True
) -> AnalysisRequest:
    """What the web request decides: the schema and the response tallies, no fit.

    Raises :class:`AnalysisInputError` (HTTP 400) for a request that does not fit the
    survey's questions, a method that does not fit the kind or the channel, and (with
    ``count``) fewer participants than the question-level threshold, judged on
    :func:`~reconstruction.analysis.participant_bound` (a few rows of
    :mod:`surveys.tallies`, whatever the number of participants). The worker passes
    ``count=False`` and counts exactly in :func:`compute`.

    Raises :class:`surveys.retention.SurveyPurged` (HTTP 410; in the worker it fails the
    job) when the survey, or a survey whose answers the request joins, was purged.
    """
    retention.require_not_purged([survey])
    request = resolve(survey, spec)
    retention.require_not_purged(
        {q.survey_id for q in request.questions.values() if q.survey_id != survey.pk}
        | set(request.params.other_surveys())
    )
    kind = registry.get(request.params.kind)
    if request.params.asked_method and request.method is not None:
        allowed = kind.allowed_methods(request)
        if request.method not in allowed:
            raise AnalysisInputError(
                {
                    "method": Message(
                        gettext_noop(
                            "%(method)s does not apply to this %(kind)s; choose one of %(choices)s"
                        ),
                        {
                            "method": repr(request.method),
                            "kind": kind.name,
                            "choices": ", ".join(allowed),
                        },
                    )
                }
            )
    if kind.needs_where and not request.where:
        raise AnalysisInputError(
            {
                "where": Message(
                    gettext_noop("a %(kind)s needs at least one condition"), {"kind": kind.name}
                )
            }
        )
    if not count:
        return request
    # Constant time in n: the response tallies bound the count from above; the worker
    # counts exactly (and refuses the job if the exact count falls short).
    bounded = request.with_participants(analysis.participant_bound(request))
    kind.cost(bounded)  # before any answer is read (issue 13)
    reason = analysis.too_few_responses(bounded, bounded.participants)
    if reason is not None:
        raise AnalysisInputError({"survey": reason})
    kind.validate(bounded)
    if kind.admit is not None:
        kind.admit(bounded)
    return bounded


def compute(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    """The worker's part: the kind's gather, fit and publish, once each.

    ``gather`` starts by counting again (the data may have changed since the request;
    :func:`reconstruction.kinds.base.start`)."""
    kind = registry.get(request.params.kind)
    gathered = kind.gather(request, progress)
    fitted = kind.fit(gathered)
    return kind.publish(fitted)


__all__ = ["compute", "resolve", "validate_request"]
