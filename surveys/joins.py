"""The SQL pieces every statistics query shares: the joins of a survey's live answers,
their aliases, and reported values cut into bins (:mod:`surveys.statistics`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import connections
from numpy.typing import NDArray

from surveys.models import Answer, Question, Response, Survey

_ANSWER = Answer._meta.db_table
_RESPONSE = Response._meta.db_table

_LIVE = (
    f"NOT EXISTS (SELECT 1 FROM {_RESPONSE} w WHERE w.id = {{alias}}.response_id "
    "AND w.withdrawn_at IS NOT NULL)"
)
"""The answer's response is live: an anti-join with the (few) withdrawn responses."""


def has_withdrawn(survey: Survey, *, using: str = "default") -> bool:
    """Whether any response to ``survey`` was withdrawn (the partial index
    ``response_withdrawn`` holds only those: one index probe)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {_RESPONSE} WHERE survey_id = %s AND withdrawn_at IS NOT NULL LIMIT 1",
            [survey.pk],
        )
        return cursor.fetchone() is not None


def _joins(
    survey: Survey,
    questions: Sequence[Question],
    *,
    participant: bool = False,
    using: str = "default",
) -> tuple[str, list[Any]]:
    """``FROM`` the survey's live responses, one answer join per distinct question.

    When every question is the survey's own (and ``participant`` is not needed: the
    alias ``r`` is then absent), the answers are joined to each other on their response
    and the withdrawn responses are left out by an anti-join (only when the survey has
    any: :func:`has_withdrawn`; a withdrawal deletes its answers anyway, and the anti-join
    costs a sixth of a 10^6 scan): with the covering index
    ``answer_question_response`` PostgreSQL merges index-only scans in response order
    and never visits the response table's live rows. An answer to a question of the
    survey belongs to a response to the survey (the services store them so), so both
    forms count the same participants.
    """
    distinct = list({q.pk: q for q in questions}.values())
    if distinct and not participant and all(q.survey_id == survey.pk for q in distinct):
        sql = [f"FROM {_ANSWER} a0"]
        params: list[Any] = []
        for index, question in enumerate(distinct[1:], start=1):
            sql.append(
                f"JOIN {_ANSWER} a{index} ON a{index}.response_id = a0.response_id "
                f"AND a{index}.question_id = %s"
            )
            params.append(question.pk)
        sql.append("WHERE a0.question_id = %s")
        params.append(distinct[0].pk)
        if has_withdrawn(survey, using=using):
            sql.append(f"AND {_LIVE.format(alias='a0')}")
        return " ".join(sql), params
    sql = [f"FROM {_RESPONSE} r"]
    params = []
    # Other surveys of the consultation (the profile; a change's "after" survey) are
    # joined on the participant reference, one live response alias each.
    others: dict[int, str] = {}
    seen: dict[int, str] = {}
    for question in questions:
        if question.pk in seen:
            continue
        alias = f"a{len(seen)}"
        seen[question.pk] = alias
        if question.survey_id == survey.pk:
            owner = "r.id"
        else:
            if question.survey_id not in others:
                others[question.survey_id] = f"pr{len(others) or ''}"
                sql.append(
                    f"JOIN {_RESPONSE} {others[question.survey_id]} ON "
                    f"{others[question.survey_id]}.participant_id = r.participant_id AND "
                    f"{others[question.survey_id]}.survey_id = %s AND "
                    f"{others[question.survey_id]}.withdrawn_at IS NULL"
                )
                params.append(question.survey_id)
            owner = f"{others[question.survey_id]}.id"
        sql.append(
            f"JOIN {_ANSWER} {alias} ON {alias}.response_id = {owner} AND {alias}.question_id = %s"
        )
        params.append(question.pk)
    sql.append("WHERE r.survey_id = %s AND r.withdrawn_at IS NULL")
    params.append(survey.pk)
    return " ".join(sql), params


def _aliases(questions: Sequence[Question]) -> dict[int, str]:
    aliases: dict[int, str] = {}
    for question in questions:
        if question.pk not in aliases:
            aliases[question.pk] = f"a{len(aliases)}"
    return aliases


def _bucket(column: str, edges: NDArray[np.float64], vendor: str) -> tuple[str, list[Any]]:
    if not edges.size:
        return "0", []
    if vendor == "postgresql":
        return f"width_bucket({column}, %s::double precision[])", [[float(e) for e in edges]]
    return _balanced_sum([f"({column} >= %s)"] * edges.size), [float(e) for e in edges]


def _balanced_sum(terms: Sequence[str]) -> str:
    """``(t1 + t2 + ...)`` nested as a balanced tree: SQLite refuses expressions deeper
    than 1,000 (SQLITE_MAX_EXPR_DEPTH), which a flat sum of over 1,000 comparisons is (the
    reported bins of whole-year ages under wide noise, e.g. the staircase's or Laplace's
    at eps 2: about 2,000 bins of one year)."""
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return f"({_balanced_sum(terms[:middle])} + {_balanced_sum(terms[middle:])})"


def _floor(expression: str, vendor: str) -> str:
    if vendor == "postgresql":
        return f"FLOOR({expression})"
    # SQLite's FLOOR needs the math functions compiled in; CAST truncates towards zero.
    return f"(CAST({expression} AS INTEGER) - ({expression} < CAST({expression} AS INTEGER)))"
