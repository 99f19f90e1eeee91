"""Retention of distorted answers: the purge of a closed survey, at once or when due.

A survey may keep its distorted answers for ``retention_days`` after it closes
(api.md, "Retention"); then the beat task :func:`surveys.tasks.purge_expired_surveys`
purges them, and an analyst may purge a closed survey at once
(``POST /surveys/{id}/purge/``, the admin's action). A purge deletes, in one
transaction:

- the answers of every response to the survey (the distorted answers);
- the responses themselves (the link of a participant reference to the survey, its hour
  of submission and its withdrawal token's hash: a token of a purged response then gets
  the same 404 as an unknown one);
- the participant references of the consultation that no response uses any more;
- the survey's response tallies (:mod:`surveys.tallies`, the per-question counts
  derived from the answers).

It keeps the survey and its questions (the scheme: what others need to read the results),
the calibration pairs (no participant reference), and every result and report already
made. It records ``purged_at`` and an audit event ``survey.purge`` (and queues the
webhooks' ``survey.purged``, :func:`listen`); from then on new
analyses and reports that read the survey's answers (its own, or joined through the
profile survey or another survey of the consultation) answer 410 naming the purge date
(:func:`require_not_purged`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from consultations.services import audit_record
from core.errors import Conflict, Gone
from surveys.models import Answer, Participant, Response, ResponseTally, Survey

log = logging.getLogger(__name__)

_ANSWER = Answer._meta.db_table
_RESPONSE = Response._meta.db_table
_PARTICIPANT = Participant._meta.db_table
_TALLY = ResponseTally._meta.db_table

PURGED = gettext_lazy(
    "The distorted answers of survey %(survey)s were purged on %(date)s; results and reports "
    "made before stay available, but no new analysis or report can read them."
)


class SurveyPurged(Gone, ValueError):
    """A request needs the answers of a purged survey (HTTP 410; in a worker, a
    ``ValueError`` that fails the job with this message)."""


@dataclass(frozen=True)
class Purge:
    """What a purge deleted (counts, for the audit trail and the API's answer)."""

    survey: Survey
    responses: int
    answers: int
    participants: int
    already: bool = False


PurgeListener = Callable[[Survey, str], object]
_LISTENERS: list[PurgeListener] = []


def listen(listener: PurgeListener) -> None:
    """Call ``listener(survey, reason)`` inside every purge's transaction, after the
    deletions (``config`` registers the webhooks' ``survey.purged``: the surveys app
    imports no sibling app)."""
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)


def purge_date(survey: Survey) -> str:
    assert survey.purged_at is not None
    return survey.purged_at.date().isoformat()


def purged_error(survey: Survey) -> SurveyPurged:
    message = PURGED % {"survey": survey.pk, "date": purge_date(survey)}
    return SurveyPurged(message, {"survey": [message]})


def require_not_purged(surveys: Iterable[Survey | int]) -> None:
    """Raise :class:`SurveyPurged` naming the first purged survey among ``surveys``
    (objects are checked as loaded; ids in one query)."""
    ids = []
    for survey in surveys:
        if isinstance(survey, Survey):
            if survey.purged_at is not None:
                raise purged_error(survey)
            ids.append(survey.pk)
        else:
            ids.append(int(survey))
    if not ids:
        return
    purged = Survey.objects.filter(pk__in=ids, purged_at__isnull=False).order_by("pk").first()
    if purged is not None:
        raise purged_error(purged)


def expires_at(survey: Survey) -> dt.datetime | None:
    """When the survey's answers are due for purging (``None``: never, or not closed)."""
    if survey.retention_days is None or survey.closed_at is None:
        return None
    return survey.closed_at + dt.timedelta(days=int(survey.retention_days))


def surveys_due(now: dt.datetime | None = None) -> list[Survey]:
    """Closed, not yet purged surveys whose retention period has passed (a few rows:
    the date arithmetic is done here, the same on SQLite and PostgreSQL)."""
    now = now or timezone.now()
    candidates = Survey.objects.filter(
        status=Survey.Status.CLOSED, purged_at__isnull=True, retention_days__isnull=False
    ).order_by("closed_at", "pk")
    return [s for s in candidates if (end := expires_at(s)) is not None and end <= now]


def _execute(sql: str, params: list[Any]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return max(int(cursor.rowcount), 0)


@transaction.atomic
def survey_purge(*, survey: Survey, actor: str = "system", reason: str = "request") -> Purge:
    """Delete a closed survey's distorted answers and what derives from them, in one
    transaction (module docstring); record ``purged_at`` and an audit event.

    Purging a purged survey again changes nothing. Raises :class:`Conflict` (409) for a
    draft or open survey: its answers are still coming in.
    """
    survey = Survey.objects.select_for_update().select_related("consultation").get(pk=survey.pk)
    if survey.purged_at is not None:
        return Purge(survey=survey, responses=0, answers=0, participants=0, already=True)
    if survey.status != Survey.Status.CLOSED:
        raise Conflict(
            _("Survey %(survey)s is %(status)s; close it before purging its answers.")
            % {"survey": survey.pk, "status": survey.status},
            {
                "status": [
                    _("Is %(status)s; only a closed survey can be purged.")
                    % {"status": survey.status}
                ]
            },
        )
    # Plain statements, not the ORM's cascade: a survey may hold 10^6 responses.
    answers = _execute(
        f"DELETE FROM {_ANSWER} WHERE response_id IN "
        f"(SELECT id FROM {_RESPONSE} WHERE survey_id = %s)",
        [survey.pk],
    )
    responses = _execute(f"DELETE FROM {_RESPONSE} WHERE survey_id = %s", [survey.pk])
    participants = _execute(
        f"DELETE FROM {_PARTICIPANT} WHERE consultation_id = %s AND NOT EXISTS "
        f"(SELECT 1 FROM {_RESPONSE} r WHERE r.participant_id = {_PARTICIPANT}.id)",
        [survey.consultation_id],
    )
    _execute(f"DELETE FROM {_TALLY} WHERE survey_id = %s", [survey.pk])
    survey.purged_at = timezone.now()
    survey.save(update_fields=["purged_at"])
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="survey.purge",
        target=str(survey.pk),
        details={
            "reason": reason,
            "retention_days": survey.retention_days,
            "closed_at": survey.closed_at.isoformat() if survey.closed_at else None,
            "responses": responses,
            "answers": answers,
            "participants": participants,
        },
    )
    for listener in _LISTENERS:
        listener(survey, reason)
    log.info(
        "survey %s purged (%s): %s responses, %s answers", survey.pk, reason, responses, answers
    )
    return Purge(survey=survey, responses=responses, answers=answers, participants=participants)


def surveys_purge_due(*, now: dt.datetime | None = None) -> list[int]:
    """Purge every survey whose retention period has passed, each in its own transaction
    (the beat task); returns the ids purged."""
    purged = []
    for survey in surveys_due(now):
        result = survey_purge(survey=survey, actor="retention", reason="retention")
        if not result.already:
            purged.append(survey.pk)
    return purged


__all__ = [
    "Purge",
    "SurveyPurged",
    "expires_at",
    "listen",
    "purge_date",
    "require_not_purged",
    "survey_purge",
    "surveys_due",
    "surveys_purge_due",
]
