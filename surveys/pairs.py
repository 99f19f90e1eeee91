"""Paired statistics: the same participants in two surveys of a consultation, in SQL.

A change (before and after deliberation) is fitted from the joint reported cells of one
question in the "before" survey and its twin in the "after" survey, joined on the
participant reference, optionally restricted to a panel's members
(:func:`paired_table`). Participants who answered only one of the two surveys are
counted apart (:func:`unpaired`). As everywhere in :mod:`surveys.statistics`, only cells
come back, never a participant.

How the join is read (PostgreSQL, 10^6 pairs; bench/bench_change_scale.py): each survey's
answers to a question come in response order from the covering index
``answer_question_response``, and the live responses of a survey with their participant
in the same order from ``response_live_participant`` (``(survey, id)`` including the
participant, live responses only), so answer and participant meet in a merge of two
index-only scans per survey; the two surveys then meet in one hash join on the
participant (the one step that cannot come in order). The old form (the responses of
both surveys and both answer sets joined by three hash joins, spilling to disk in
batches) read every row three times over.

The query runs with settings of its own (:func:`_planned`): JIT off (compiling it cost
about 0.15 s and saved nothing), a ``work_mem`` that holds the hash of 10^6 pairs in one
batch, sequential scans off (the planner takes the survey's share of the responses and
the question's share of the answers as independent, underestimates the merge's rows by
half and would hash both sides instead) and no parallel workers (a parallel plan hashes
all three joins again, which on two cores shared with other work gains nothing).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connections, transaction
from numpy.typing import NDArray

from surveys import statistics, tallies
from surveys.condition_counts import _where_clauses
from surveys.joins import _ANSWER, _RESPONSE, _bucket
from surveys.models import Participant, Question, Survey

WORK_MEM = "128MB"
"""The pair query's ``work_mem``: the hash of 10^6 pairs (about 60 MB) in one batch."""


@dataclass(frozen=True)
class Unpaired:
    """Participants who answered the question in one survey only (not used in the fit)."""

    before_only: int
    after_only: int


@dataclass(frozen=True)
class PairedTable:
    """The pairs' joint reported cells, and how many pairs there are.

    Attributes
    ----------
    counts : ndarray
        Pairs per joint cell of the axes, among those who also answered every other
        question named (a condition's).
    paired : int
        Pairs who answered the two paired questions (live responses to both surveys),
        whether or not they answered the condition's questions.
    group : int, optional
        With ``group`` conditions: the pairs in the table whose reported answers meet
        them (exact attributes: their true answers).
    group_key_sum : int, optional
        Their before responses' record keys summed (the cell-key method,
        :mod:`privacy.mechanisms.cellkey`).
    """

    counts: NDArray[np.float64]
    paired: int
    group: int | None = None
    group_key_sum: int | None = None
    cells: tuple[NDArray[np.int64], NDArray[Any]] | None = None
    """With ``cell_keys``: the pairs per (before, after) code and their keys' sums."""


def member_ids(survey: Survey, references: Sequence[str], *, using: str = "default") -> list[int]:
    """The participant ids of ``references`` in the survey's consultation (unknown ones
    are left out: a panel member who never answered anything here)."""
    return list(
        Participant.objects.using(using)
        .filter(consultation_id=survey.consultation_id, reference__in=list(references))
        .values_list("pk", flat=True)
    )


def _members_clause(members: Sequence[int] | None, alias: str = "r") -> tuple[str, list[Any]]:
    if members is None:
        return "", []
    if not members:
        return " AND 1 = 0", []
    return f" AND {alias}.participant_id IN ({', '.join('%s' for _ in members)})", list(members)


@contextmanager
def _planned(using: str) -> Iterator[None]:
    """The pair query's planner settings (module docstring), for one transaction."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        yield
        return
    settings = {
        "jit": "off",
        "work_mem": f"'{WORK_MEM}'",
        "enable_seqscan": "off",
        "max_parallel_workers_per_gather": "0",
    }
    with transaction.atomic(using=using), connection.cursor() as cursor:
        for name, value in settings.items():
            cursor.execute(f"SET LOCAL {name} = {value}")
        try:
            yield
        finally:  # an enclosing transaction goes on with its own settings
            for name in settings:
                cursor.execute(f"SET LOCAL {name} = DEFAULT")


def _pair_joins(
    survey: Survey,
    pair: tuple[Question, Question],
    others: Sequence[Question],
    members: Sequence[int] | None,
) -> tuple[str, list[Any], dict[int, str], list[str]]:
    """``FROM ... WHERE ...`` of the pairs: the before answer ``a0`` and its live response
    ``r0``, the after survey's live response and answer (inner joins: only pairs count),
    then every other question left-joined (a condition's: who did not answer it is still
    a pair). Returns the SQL, its parameters, each question's answer alias and the
    aliases of the left-joined answers."""
    before, after = pair
    if before.survey_id != survey.pk:
        raise ValueError("the before question must be a question of the survey")
    sql = [
        f"FROM {_ANSWER} a0 JOIN {_RESPONSE} r0 ON r0.id = a0.response_id "
        "AND r0.survey_id = %s AND r0.withdrawn_at IS NULL"
    ]
    params: list[Any] = [survey.pk]
    aliases: dict[int, str] = {before.pk: "a0"}
    responses: dict[int, str] = {survey.pk: "r0"}
    left: list[str] = []

    def response(survey_id: int, outer: bool) -> str:
        if survey_id not in responses:
            alias = f"r{len(responses)}"
            responses[survey_id] = alias
            sql.append(
                f"{'LEFT JOIN' if outer else 'JOIN'} {_RESPONSE} {alias} ON "
                f"{alias}.participant_id = r0.participant_id AND {alias}.survey_id = %s "
                f"AND {alias}.withdrawn_at IS NULL"
            )
            params.append(survey_id)
        return responses[survey_id]

    def answer(question: Question, outer: bool) -> None:
        if question.pk in aliases:
            return
        alias = f"a{len(aliases)}"
        aliases[question.pk] = alias
        owner = "a0.response_id" if question.survey_id == survey.pk else None
        if owner is None:
            owner = f"{response(question.survey_id, outer)}.id"
        sql.append(
            f"{'LEFT JOIN' if outer else 'JOIN'} {_ANSWER} {alias} ON "
            f"{alias}.response_id = {owner} AND {alias}.question_id = %s"
        )
        params.append(question.pk)
        if outer:
            left.append(alias)

    answer(after, outer=False)
    for question in others:
        answer(question, outer=True)
    sql.append("WHERE a0.question_id = %s")
    params.append(before.pk)
    clause, clause_params = _members_clause(members, "r0")
    return " ".join(sql) + clause, params + clause_params, aliases, left


def paired_table(
    survey: Survey,
    pair: tuple[Question, Question],
    axes: Sequence[statistics.Axis],
    *,
    members: Sequence[int] | None = None,
    group: Sequence[tuple[Question, str, Any]] = (),
    cell_keys: bool = False,
    using: str = "default",
) -> PairedTable:
    """The joint reported cells of ``axes`` over the pairs, in one ``GROUP BY``.

    Parameters
    ----------
    survey : Survey
        The before survey; ``pair`` is ``(before question, after question)``, the first
        a question of ``survey``, the second of the after survey.
    axes : sequence of Axis
        The table's axes: questions of ``survey``, of the after survey or of the
        consultation's profile; a pair counts in the table when it answered every one.
    members : sequence of int, optional
        Participant ids to keep to (a panel's).
    group : sequence of (Question, op, value), optional
        A condition (``op`` ``in`` with codes, ``gt``, ``lte``, ``between``) on questions
        among the axes: the pairs meeting it are counted too, with their record keys'
        sum (an exact condition's group, published by the cell-key method).
    cell_keys : bool
        Also count the pairs per (before, after) code among those in the table (and in
        ``group``), with their record keys' sums: a register's transition cells, when
        both paired questions are exact.
    """
    if not axes:
        raise ValueError("cell statistics need at least one axis")
    connection = connections[using]
    others = [axis.question for axis in axes]
    joins, join_params, aliases, left = _pair_joins(survey, pair, others, members)
    select: list[str] = []
    select_params: list[Any] = []
    for axis in axes:
        alias = aliases[axis.question.pk]
        if axis.inner_edges is None:
            select.append(f"{alias}.code")
        else:
            expression, values = _bucket(f"{alias}.value", axis.inner_edges, connection.vendor)
            select.append(expression)
            select_params += values
    d = len(select)
    if left:  # 1 when the pair answered every left-joined question
        answered = " AND ".join(f"{alias}.response_id IS NOT NULL" for alias in left)
        select.append(f"CASE WHEN {answered} THEN 1 ELSE 0 END")
    key_sum = ", SUM(COALESCE(r0.record_key, 0))" if group or cell_keys else ""
    if group:
        clauses, values = _where_clauses(aliases, group)
        select.append(f"CASE WHEN {' AND '.join(clauses)} THEN 1 ELSE 0 END")
        select_params += values
    shape = (int(pair[0].n_categories), int(pair[1].n_categories))
    positions = [
        next(i for i, axis in enumerate(axes) if axis.question.pk == question.pk)
        for question in (pair if cell_keys else ())
    ]
    pair_counts = np.zeros(shape, dtype=np.int64)
    pair_keys = np.zeros(shape, dtype=object)
    groups = ", ".join(str(i + 1) for i in range(len(select)))
    sql = f"SELECT {', '.join(select)}, COUNT(*){key_sum} {joins} GROUP BY {groups}"
    counts = np.zeros(tuple(axis.size for axis in axes), dtype=np.float64)
    paired, members_of_group, group_key_sum = 0, 0, 0
    with _planned(using), connection.cursor() as cursor:
        cursor.execute(sql, select_params + join_params)
        rows = cursor.fetchall()
    width = len(select)
    for row in rows:
        paired += int(row[width])
        if left and not row[d]:
            continue
        counts[tuple(int(v) for v in row[:d])] += row[width]
        if group and not row[width - 1]:
            continue
        if group:
            members_of_group += int(row[width])
            group_key_sum += int(row[width + 1] or 0)
        if cell_keys:
            cell = (int(row[positions[0]]), int(row[positions[1]]))
            pair_counts[cell] += int(row[width])
            pair_keys[cell] += int(row[width + 1] or 0)
    keyed = (pair_counts, pair_keys) if cell_keys else None
    if not group:
        return PairedTable(counts, paired, cells=keyed)
    return PairedTable(counts, paired, members_of_group, group_key_sum, keyed)


def paired_cells(
    survey: Survey,
    axes: Sequence[statistics.Axis],
    *,
    require: Sequence[Question] = (),
    members: Sequence[int] | None = None,
    using: str = "default",
) -> statistics.CellStatistics:
    """:func:`paired_table`'s counts, the pair being the first two of ``axes``, among the
    pairs who answered every question of ``require`` too."""
    extra = [statistics.Axis(q) for q in require if q.pk not in {a.question.pk for a in axes}]
    pair = (axes[0].question, axes[1].question)
    table = paired_table(survey, pair, [*axes, *extra], members=members, using=using)
    counts = table.counts.sum(axis=tuple(range(len(axes), len(axes) + len(extra))))
    return statistics.CellStatistics(np.asarray(counts, dtype=np.float64))


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
    paired: int | None = None,
    using: str = "default",
) -> Unpaired:
    """Participants who answered ``before`` (in its survey) but not ``after`` (in its
    survey), and the other way round: counts, no participant leaves the database
    (``paired``: those who answered both, when already counted)."""
    before_survey, after_survey = before.survey, after.survey
    both = paired if paired is not None else _count(before_survey, [before, after], members, using)
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
