"""Paired statistics: the same participants in two surveys of a consultation, in SQL.

A change (before and after deliberation) is fitted from the joint reported cells of one
question in the "before" survey and its twin in the "after" survey, joined on the
participant reference (:func:`surveys.statistics.cell_statistics` joins every other
survey's live response on the participant), optionally restricted to a panel's members.
Participants who answered only one of the two surveys are counted apart
(:func:`unpaired`). As everywhere in :mod:`surveys.statistics`, only cells come back,
never a participant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connections

from surveys import statistics, tallies
from surveys.models import Participant, Question, Survey


@dataclass(frozen=True)
class Unpaired:
    """Participants who answered the question in one survey only (not used in the fit)."""

    before_only: int
    after_only: int


def member_ids(survey: Survey, references: Sequence[str], *, using: str = "default") -> list[int]:
    """The participant ids of ``references`` in the survey's consultation (unknown ones
    are left out: a panel member who never answered anything here)."""
    return list(
        Participant.objects.using(using)
        .filter(consultation_id=survey.consultation_id, reference__in=list(references))
        .values_list("pk", flat=True)
    )


def _members_clause(members: Sequence[int] | None) -> tuple[str, list[Any]]:
    if members is None:
        return "", []
    if not members:
        return " AND 1 = 0", []
    return f" AND r.participant_id IN ({', '.join('%s' for _ in members)})", list(members)


def paired_cells(
    survey: Survey,
    axes: Sequence[statistics.Axis],
    *,
    require: Sequence[Question] = (),
    members: Sequence[int] | None = None,
    using: str = "default",
) -> statistics.CellStatistics:
    """:func:`surveys.statistics.cell_statistics` of ``axes`` (questions of ``survey``, of
    its profile and of an "after" survey, joined on the participant), restricted to the
    participant ids ``members`` when given (a panel's)."""
    if members is None:
        return statistics.cell_statistics(survey, axes, require=require, using=using)
    connection = connections[using]
    questions = [axis.question for axis in axes] + list(require)
    joins, join_params = statistics._joins(survey, questions, participant=True)
    aliases = statistics._aliases(questions)
    select: list[str] = []
    select_params: list[Any] = []
    for axis in axes:
        alias = aliases[axis.question.pk]
        if axis.inner_edges is None:
            select.append(f"{alias}.code")
        else:
            expression, values = statistics._bucket(
                f"{alias}.value", axis.inner_edges, connection.vendor
            )
            select.append(expression)
            select_params += values
    clause, clause_params = _members_clause(members)
    groups = ", ".join(str(i + 1) for i in range(len(select)))
    sql = f"SELECT {', '.join(select)}, COUNT(*) {joins}{clause} GROUP BY {groups}"
    counts = np.zeros(tuple(axis.size for axis in axes), dtype=np.float64)
    with connection.cursor() as cursor:
        cursor.execute(sql, select_params + join_params + clause_params)
        for row in cursor.fetchall():
            counts[tuple(int(v) for v in row[: len(axes)])] = row[len(axes)]
    return statistics.CellStatistics(counts)


def _count(
    survey: Survey, questions: Sequence[Question], members: Sequence[int] | None, using: str
) -> int:
    joins, params = statistics._joins(survey, questions, participant=True)
    clause, clause_params = _members_clause(members)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) {joins}{clause}", params + clause_params)
        (count,) = cursor.fetchone()
    return int(count)


def unpaired(
    before: Question,
    after: Question,
    *,
    members: Sequence[int] | None = None,
    using: str = "default",
) -> Unpaired:
    """Participants who answered ``before`` (in its survey) but not ``after`` (in its
    survey), and the other way round: three counts, no participant leaves the database."""
    before_survey, after_survey = before.survey, after.survey
    both = _count(before_survey, [before, after], members, using)
    return Unpaired(
        before_only=_count(before_survey, [before], members, using) - both,
        after_only=_count(after_survey, [after], members, using) - both,
    )


def unpaired_from_tallies(
    before: Question, after: Question, *, paired: int, using: str = "default"
) -> Unpaired:
    """:func:`unpaired` when the ``paired`` participants who answered both are already
    counted: each question's live answers come from the response tallies (a few rows,
    :mod:`surveys.tallies`), one answer per participant and question."""
    _, answers = tallies.live_counts([], [before.pk, after.pk], using=using)
    return Unpaired(before_only=answers[before.pk] - paired, after_only=answers[after.pk] - paired)
