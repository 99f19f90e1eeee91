"""Response tallies: how many participants answered, read in constant time.

``POST /analyses/`` must refuse a request over too few participants (the question-level
threshold, 002_f0fd5869fe299975.txt) without counting joined answers, which grows with
the number of participants. :class:`~surveys.models.ResponseTally` keeps running counts
instead: live responses per survey and live answers per question. Every write that adds
or removes answers adds its delta **in the same transaction** (:func:`add`; the
single-statement PostgreSQL submission embeds :data:`UPSERT_FROM_RESPONSE` in its
statement). :func:`live_counts` sums a few rows whatever ``n`` is.

The tallies bound the participants an analysis sees from above (someone counted for
each question answered all of them only if the answers overlap); the worker still
counts exactly and refuses the job if the exact number falls short.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from django.db import connections, transaction

from surveys.models import Answer, Response, ResponseTally

SHARDS = 8
"""Counter rows per key: concurrent writers pick one at random and rarely collide."""

SURVEY = 0
"""The ``question_id`` under which a survey's live responses are counted."""

_TALLY = ResponseTally._meta.db_table
_CONFLICT = (
    'ON CONFLICT (question_id, survey_id, shard) DO UPDATE SET "count" = '
    f'{_TALLY}."count" + EXCLUDED."count"'
)

UPSERT_FROM_RESPONSE = (
    f'INSERT INTO {_TALLY} (question_id, survey_id, shard, "count")'
    " SELECT t.question_id, %s, %s, t.delta FROM response,"
    " unnest(%s::bigint[], %s::bigint[]) AS t(question_id, delta)"
    f" ORDER BY t.question_id {_CONFLICT}"
)
"""A PostgreSQL CTE body adding deltas only if the CTE ``response`` inserted a row.

Parameters: survey id, shard, question ids, deltas (see :func:`upsert_params`).
"""


def shard() -> int:
    return random.randrange(SHARDS)  # spreads writers over rows; not a secret


def submission_deltas(questions: Iterable[int], responses: int) -> dict[int, int]:
    """The deltas of ``responses`` new responses whose answers name ``questions``."""
    deltas: dict[int, int] = {SURVEY: responses}
    deltas.update(Counter(int(q) for q in questions))
    return deltas


def upsert_params(survey_id: int, deltas: Mapping[int, int]) -> list[object]:
    keys = sorted(deltas)
    return [survey_id, shard(), keys, [int(deltas[k]) for k in keys]]


def add(survey_id: int, deltas: Mapping[int, int], *, using: str = "default") -> None:
    """Add ``deltas`` (question id, or :data:`SURVEY`, -> change) to the survey's tallies.

    Call it inside the transaction that writes the answers. One statement; rows are
    touched in key order, so two writers never wait on each other in opposite orders.
    """
    keys = sorted(k for k, v in deltas.items() if v)
    if not keys:
        return
    row = shard()
    values = ", ".join("(%s, %s, %s, %s)" for _ in keys)
    params: list[int] = []
    for key in keys:
        params += [key, survey_id, row, int(deltas[key])]
    with connections[using].cursor() as cursor:
        cursor.execute(
            f'INSERT INTO {_TALLY} (question_id, survey_id, shard, "count") '
            f"VALUES {values} {_CONFLICT}",
            params,
        )


def withdraw(response: Response, *, using: str = "default") -> None:
    """Remove a response's answers from the tallies (call before deleting them)."""
    questions = (
        Answer.objects.using(using).filter(response=response).values_list("question_id", flat=True)
    )
    deltas = {key: -value for key, value in submission_deltas(questions, 1).items()}
    add(response.survey_id, deltas, using=using)


def live_counts(
    survey_ids: Sequence[int], question_ids: Sequence[int], *, using: str = "default"
) -> tuple[dict[int, int], dict[int, int]]:
    """Live responses per survey and live answers per question (one small query).

    Returns ``({survey id: responses}, {question id: answers})``; what has no row is 0.
    """
    surveys = sorted({int(s) for s in survey_ids})
    questions = sorted({int(q) for q in question_ids} - {SURVEY})
    clauses = []
    params: list[object] = []
    if surveys:
        clauses.append(f"(question_id = 0 AND survey_id IN ({', '.join('%s' for _ in surveys)}))")
        params += surveys
    if questions:
        clauses.append(f"question_id IN ({', '.join('%s' for _ in questions)})")
        params += questions
    responses = dict.fromkeys(surveys, 0)
    answers = dict.fromkeys(questions, 0)
    if not clauses:
        return responses, answers
    with connections[using].cursor() as cursor:
        cursor.execute(
            f'SELECT question_id, survey_id, SUM("count") FROM {_TALLY} '
            f"WHERE {' OR '.join(clauses)} GROUP BY question_id, survey_id",
            params,
        )
        for question_id, survey_id, total in cursor.fetchall():
            if question_id == SURVEY:
                responses[int(survey_id)] = int(total)
            else:
                answers[int(question_id)] = int(total)
    return responses, answers


REBUILD_SQL = (
    f'INSERT INTO {_TALLY} (question_id, survey_id, shard, "count") '
    f"SELECT 0, r.survey_id, 0, COUNT(*) FROM {Response._meta.db_table} r "
    "WHERE r.withdrawn_at IS NULL GROUP BY r.survey_id "
    "UNION ALL "
    "SELECT a.question_id, r.survey_id, 0, COUNT(*) "
    f"FROM {Answer._meta.db_table} a JOIN {Response._meta.db_table} r ON r.id = a.response_id "
    "WHERE r.withdrawn_at IS NULL GROUP BY a.question_id, r.survey_id"
)


def rebuild(*, using: str = "default") -> None:
    """Recount every tally from the answers (after loading data outside the services)."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(f"DELETE FROM {_TALLY}")
        cursor.execute(REBUILD_SQL)


__all__ = [
    "SHARDS",
    "SURVEY",
    "UPSERT_FROM_RESPONSE",
    "add",
    "live_counts",
    "rebuild",
    "submission_deltas",
    "upsert_params",
    "withdraw",
]
