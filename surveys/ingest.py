"""Bulk ingestion: storing validated responses with as few statements as possible.

On PostgreSQL a batch is four statements whatever its size (participants inserted and
read back, responses, answers through ``COPY``) and a single response is one statement;
elsewhere (the SQLite default) the ORM's ``bulk_create``. Validation happens before, in
:mod:`surveys.services`; this module only stores a :class:`Batch` atomically and turns
what the database refused (a closed survey, a participant who already answered) into the
domain's :class:`~core.errors.InvalidInput` / :class:`~core.errors.Conflict`.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from core.errors import Conflict, InvalidInput
from privacy.mechanisms import cellkey
from surveys import privacy_budget, tallies
from surveys.models import Answer, Participant, Response, Survey


def this_hour(now: datetime | None = None) -> datetime:
    """The current time truncated to the hour: residents' timestamps are never finer."""
    return (now or timezone.now()).replace(minute=0, second=0, microsecond=0)


def require_open(survey: Survey) -> None:
    if survey.status != Survey.Status.OPEN:
        raise InvalidInput(
            _("Survey %(survey)s is %(status)s; it accepts responses only while open.")
            % {"survey": survey.pk, "status": survey.status},
            {"survey": [_("Is %(status)s, not open.") % {"status": survey.status}]},
        )


@dataclass(frozen=True)
class Batch:
    """Validated responses in columns, ready for one INSERT per table."""

    participants: list[str]
    answer_response_index: list[int]
    answer_question: list[int]
    answer_code: list[int | None]
    answer_value: list[float | None]
    answer_n: list[int]
    # One fresh token per participant, handed out once; only the hashes are stored.
    withdrawal_tokens: list[str] = field(default_factory=list)
    # One cell-key record key per participant (privacy.mechanisms.cellkey), never published.
    record_keys: list[int] = field(default_factory=list)

    @property
    def withdrawal_token_hashes(self) -> list[str]:
        return [withdrawal_token_hash(token) for token in self.withdrawal_tokens]


def new_withdrawal_token() -> str:
    """A 192-bit random token: proof that the caller is the participant who submitted."""
    return secrets.token_urlsafe(24)


def new_withdrawal_tokens(count: int) -> list[str]:
    """``count`` tokens as :func:`new_withdrawal_token` makes them, from one random draw.

    24 bytes are exactly 32 base64 characters (no padding), so the encoding of
    ``24 * count`` random bytes cut every 32 characters is ``count`` independent tokens.
    """
    text = base64.urlsafe_b64encode(secrets.token_bytes(24 * count)).decode("ascii")
    return [text[start : start + 32] for start in range(0, 32 * count, 32)]


def record_keys(batch: Batch) -> list[int]:
    """The batch's record keys (drawn in one piece when the batch was built without)."""
    if len(batch.record_keys) != len(batch.participants):
        batch.record_keys[:] = cellkey.new_record_keys(len(batch.participants))
    return batch.record_keys


def withdrawal_token_hash(token: str) -> str:
    # A random token has nothing to brute-force, so a fast hash suffices (as for API keys).
    return hashlib.sha256(token.encode()).hexdigest()


def _already_answered(survey: Survey, references: Sequence[str]) -> dict[str, bool]:
    """Reference -> withdrawn? for participants who already responded to the survey."""
    found: dict[str, bool] = {}
    for start in range(0, len(references), 5000):
        chunk = references[start : start + 5000]
        rows = Response.objects.filter(
            survey=survey,
            participant__consultation_id=survey.consultation_id,
            participant__reference__in=chunk,
        ).values_list("participant__reference", "withdrawn_at")
        found.update((ref, withdrawn is not None) for ref, withdrawn in rows)
    return found


def _conflict(batch: Batch, answered: dict[str, bool], single: bool) -> Conflict:
    def why(ref: str) -> str:
        # The same words whether or not the reference withdrew (issue 27): anyone with the
        # public portal key could otherwise learn who withdrew.
        return _("Participant %(participant)s has already answered this survey.") % {
            "participant": repr(ref)
        }

    if single:
        ref = batch.participants[0]
        return Conflict(why(ref), {"participant": [why(ref)]})
    items = {
        str(index): {"participant": [why(ref)]}
        for index, ref in enumerate(batch.participants)
        if ref in answered
    }
    return Conflict(
        _("%(count)s participant(s) already answered this survey; nothing was stored.")
        % {"count": len(items)},
        {"responses": items},
    )


class _Rejected(Exception):
    """Raised inside the transaction to roll it back; carries the domain error."""

    def __init__(self, error: Exception) -> None:
        self.error = error


# PostgreSQL's binary COPY format (https://www.postgresql.org/docs/current/sql-copy.html):
# a signature, flags and header-extension length, then one record per row (a field count,
# each field as its length and its big-endian bytes, -1 for NULL), then -1.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
_COPY_TRAILER = b"\xff\xff"
# (response_id bigint, question_id bigint, code smallint, value double, n_categories smallint)
_DISCRETE_ROW = np.dtype(
    [
        ("fields", ">i2"),
        ("response_len", ">i4"),
        ("response", ">i8"),
        ("question_len", ">i4"),
        ("question", ">i8"),
        ("code_len", ">i4"),
        ("code", ">i2"),
        ("value_len", ">i4"),  # -1: NULL
        ("n_len", ">i4"),
        ("n", ">i2"),
    ]
)
_CONTINUOUS_ROW = np.dtype(
    [
        ("fields", ">i2"),
        ("response_len", ">i4"),
        ("response", ">i8"),
        ("question_len", ">i4"),
        ("question", ">i8"),
        ("code_len", ">i4"),  # -1: NULL
        ("value_len", ">i4"),
        ("value", ">f8"),
        ("n_len", ">i4"),
        ("n", ">i2"),
    ]
)


def answers_copy_binary(
    response: np.ndarray,
    question: np.ndarray,
    code: np.ndarray,
    value: np.ndarray,
    n_categories: np.ndarray,
) -> bytes:
    """The answers as one binary ``COPY`` payload, built with numpy (no per-row Python).

    One array per column; ``code`` is -1 for a continuous answer (its ``value`` is then
    the number; ``value`` is ignored for discrete answers, whose code is stored).
    """
    discrete = code >= 0
    rows_d = np.empty(int(discrete.sum()), dtype=_DISCRETE_ROW)
    rows_d["fields"] = 5
    rows_d["response_len"] = 8
    rows_d["response"] = response[discrete]
    rows_d["question_len"] = 8
    rows_d["question"] = question[discrete]
    rows_d["code_len"] = 2
    rows_d["code"] = code[discrete]
    rows_d["value_len"] = -1
    rows_d["n_len"] = 2
    rows_d["n"] = n_categories[discrete]
    continuous = ~discrete
    rows_c = np.empty(int(continuous.sum()), dtype=_CONTINUOUS_ROW)
    rows_c["fields"] = 5
    rows_c["response_len"] = 8
    rows_c["response"] = response[continuous]
    rows_c["question_len"] = 8
    rows_c["question"] = question[continuous]
    rows_c["code_len"] = -1
    rows_c["value_len"] = 8
    rows_c["value"] = value[continuous]
    rows_c["n_len"] = 2
    rows_c["n"] = 0
    return b"".join((_COPY_HEADER, rows_d.tobytes(), rows_c.tobytes(), _COPY_TRAILER))


def _answer_columns(batch: Batch, by_position: np.ndarray) -> bytes:
    """The batch's answers as binary COPY data, each answer bound to its response id."""
    count = len(batch.answer_question)
    code = np.fromiter(
        (-1 if c is None else c for c in batch.answer_code), dtype=np.int64, count=count
    )
    value = np.fromiter(
        (0.0 if v is None else v for v in batch.answer_value), dtype=np.float64, count=count
    )
    return answers_copy_binary(
        by_position[np.asarray(batch.answer_response_index, dtype=np.intp)],
        np.asarray(batch.answer_question, dtype=np.int64),
        code,
        value,
        np.asarray(batch.answer_n, dtype=np.int64),
    )


def _insert_postgresql(survey: Survey, batch: Batch, submitted_at: datetime) -> None:
    """Three or four statements, whatever the batch size: participants (inserted, and
    read back only for those who existed), responses, answers (binary COPY). A single
    response takes one statement instead.

    The response insert re-reads the survey's status under ``FOR KEY SHARE`` (which
    conflicts only with the ``FOR UPDATE`` of :func:`survey_close`, so submissions do not
    serialise one another) and skips rows that hit the unique ``(survey, participant)``
    constraint; any skipped row means a conflict and the transaction is rolled back.
    """
    participant_table = Participant._meta.db_table
    response_table = Response._meta.db_table
    answer_table = Answer._meta.db_table
    survey_table = Survey._meta.db_table
    if len(batch.participants) == 1:
        _insert_one_postgresql(survey, batch, submitted_at)
        return
    connection.ensure_connection()
    # Server-side parameter binding (a plain psycopg cursor on Django's connection, inside
    # its transaction): arrays of 10,000 values go over the wire in binary (``%b``: no
    # per-element quoting in Python) instead of being spelled out as SQL literals, and the
    # answers go in through a binary COPY.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            f"INSERT INTO {participant_table} (consultation_id, reference) "
            "SELECT %s, unnest(%b::varchar[]) "
            "ON CONFLICT (consultation_id, reference) DO NOTHING "
            "RETURNING reference, id",
            [survey.consultation_id, batch.participants],
        )
        participant_ids = dict(cursor.fetchall())
        if len(participant_ids) < len(batch.participants):
            # Those who existed (another survey of the consultation, or a concurrent
            # batch): a separate statement sees the rows committed while the insert waited.
            cursor.execute(
                f"SELECT reference, id FROM {participant_table} "
                "WHERE consultation_id = %s AND reference = ANY(%b::varchar[])",
                [
                    survey.consultation_id,
                    [ref for ref in batch.participants if ref not in participant_ids],
                ],
            )
            participant_ids.update(cursor.fetchall())
        ordered_ids = [participant_ids[ref] for ref in batch.participants]
        cursor.execute(
            f"WITH open_survey AS (SELECT id FROM {survey_table} WHERE {_SAME_OPEN_SURVEY}) "
            f"INSERT INTO {response_table} "
            "(survey_id, participant_id, submitted_at, withdrawal_token_hash, record_key) "
            "SELECT open_survey.id, participant.id, %s, participant.token_hash, "
            "participant.record_key "
            "FROM open_survey, unnest(%b::bigint[], %b::varchar[], %b::bigint[]) "
            "AS participant(id, token_hash, record_key) "
            "ON CONFLICT (survey_id, participant_id) DO NOTHING "
            "RETURNING participant_id, id",
            [
                *_same_open_survey(survey),
                submitted_at,
                ordered_ids,
                batch.withdrawal_token_hashes,
                record_keys(batch),
            ],
        )
        response_ids = dict(cursor.fetchall())
        if len(response_ids) != len(ordered_ids):
            # Only the skipped rows conflict: the others were inserted by this very
            # transaction (rolled back below) and must not be named.
            skipped = [
                ref
                for ref, pid in zip(batch.participants, ordered_ids, strict=True)
                if pid not in response_ids
            ]
            raise _Rejected(_why_not_stored(survey, batch, skipped))
        by_position = np.fromiter(
            (response_ids[pid] for pid in ordered_ids), dtype=np.int64, count=len(ordered_ids)
        )
        with cursor.copy(
            f"COPY {answer_table} (response_id, question_id, code, value, n_categories) "
            "FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.write(_answer_columns(batch, by_position))
    # Same transaction: the tallies the threshold check reads (surveys.tallies).
    tallies.add(survey.pk, tallies.submission_deltas(batch.answer_question, len(ordered_ids)))


def _insert_one_postgresql(survey: Survey, batch: Batch, submitted_at: datetime) -> None:
    """One response in one statement (one round trip, atomic without a transaction block).

    Nothing is written unless the survey is open (``FOR KEY SHARE`` against a concurrent
    close). ``DO UPDATE`` on the participant always returns its id, even when a concurrent
    request inserted it; the response is skipped if the participant already answered,
    and then no answers are inserted either.
    """
    cursor_sql = (
        f"WITH open_survey AS (SELECT id FROM {Survey._meta.db_table}"
        f" WHERE {_SAME_OPEN_SURVEY}),"
        " participant AS ("
        f" INSERT INTO {Participant._meta.db_table} (consultation_id, reference)"
        " SELECT %s, %s FROM open_survey"
        " ON CONFLICT (consultation_id, reference) DO UPDATE SET reference = EXCLUDED.reference"
        " RETURNING id),"
        f" response AS (INSERT INTO {Response._meta.db_table}"
        " (survey_id, participant_id, submitted_at, withdrawal_token_hash, record_key)"
        " SELECT open_survey.id, participant.id, %s, %s, %s FROM open_survey, participant"
        " ON CONFLICT (survey_id, participant_id) DO NOTHING RETURNING id),"
        f" answer AS (INSERT INTO {Answer._meta.db_table}"
        " (response_id, question_id, code, value, n_categories)"
        " SELECT response.id, x.question_id, x.code, x.value, x.n_categories FROM response,"
        " unnest(%s::bigint[], %s::smallint[], %s::double precision[], %s::smallint[])"
        " AS x(question_id, code, value, n_categories)),"
        f" tally AS ({tallies.UPSERT_FROM_RESPONSE})"
        " SELECT count(*) FROM response"
    )
    connection.ensure_connection()
    # Server-side binding on Django's connection: psycopg prepares the statement after a
    # few executions, so PostgreSQL plans this CTE once per connection.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            cursor_sql,
            [
                *_same_open_survey(survey),
                survey.consultation_id,
                batch.participants[0],
                submitted_at,
                batch.withdrawal_token_hashes[0],
                record_keys(batch)[0],
                batch.answer_question,
                batch.answer_code,
                batch.answer_value,
                batch.answer_n,
                *tallies.upsert_params(
                    survey.pk, tallies.submission_deltas(batch.answer_question, 1)
                ),
            ],
        )
        (stored,) = cursor.fetchone()
    if stored != 1:
        raise _Rejected(_why_not_stored(survey, batch))


class StaleSurvey(Exception):
    """The survey passed in is not the stored one (a cached copy outlived its row).

    Only possible where ids are reused (tests that roll back); the caller looks the
    survey up again and retries.
    """


# Lock the survey row against a concurrent close (FOR KEY SHARE conflicts only with
# survey_close's FOR UPDATE, so submissions do not serialise one another) and make sure
# it is the survey the caller validated against.
_SAME_OPEN_SURVEY = (
    "id = %s AND consultation_id = %s AND opened_at = %s AND status = 'open' FOR KEY SHARE"
)


def _same_open_survey(survey: Survey) -> list[Any]:
    return [survey.pk, survey.consultation_id, survey.opened_at]


def _current_status(survey: Survey) -> str:
    """The stored status; :class:`StaleSurvey` if the row is not the survey passed in."""
    row = (
        Survey.objects.filter(pk=survey.pk)
        .values_list("status", "consultation_id", "opened_at")
        .first()
    )
    if row is None or row[1] != survey.consultation_id or row[2] != survey.opened_at:
        raise StaleSurvey(survey.pk)
    return row[0]


def _why_not_stored(
    survey: Survey, batch: Batch, skipped: Sequence[str] | None = None
) -> Exception:
    """Some responses were not inserted: the survey closed, or participants answered.

    ``skipped``: the references whose response was not inserted (default: all).
    """
    status_now = _current_status(survey)
    if status_now != Survey.Status.OPEN:
        survey.status = status_now
        try:
            require_open(survey)
        except InvalidInput as exc:
            return exc
    answered = _already_answered(survey, batch.participants if skipped is None else skipped)
    return _conflict(batch, answered, len(batch.participants) == 1)


def _insert_orm(survey: Survey, batch: Batch, submitted_at: datetime) -> None:
    Participant.objects.bulk_create(
        [
            Participant(consultation_id=survey.consultation_id, reference=r)
            for r in batch.participants
        ],
        ignore_conflicts=True,
        batch_size=500,
    )
    participant_ids: dict[str, int] = {}
    for start in range(0, len(batch.participants), 500):
        participant_ids.update(
            Participant.objects.filter(
                consultation_id=survey.consultation_id,
                reference__in=batch.participants[start : start + 500],
            ).values_list("reference", "id")
        )
    responses = Response.objects.bulk_create(
        [
            Response(
                survey=survey,
                participant_id=participant_ids[ref],
                submitted_at=submitted_at,
                withdrawal_token_hash=token_hash,
                record_key=key,
            )
            for ref, token_hash, key in zip(
                batch.participants, batch.withdrawal_token_hashes, record_keys(batch), strict=True
            )
        ],
        batch_size=500,
    )
    Answer.objects.bulk_create(
        [
            Answer(
                response_id=responses[position].pk,
                question_id=question_id,
                code=code,
                value=value,
                n_categories=n,
            )
            for position, question_id, code, value, n in zip(
                batch.answer_response_index,
                batch.answer_question,
                batch.answer_code,
                batch.answer_value,
                batch.answer_n,
                strict=True,
            )
        ],
        batch_size=500,
    )
    tallies.add(survey.pk, tallies.submission_deltas(batch.answer_question, len(responses)))


def store(survey: Survey, batch: Batch, *, single: bool) -> None:
    """Insert a validated batch atomically; a participant who already answered is a 409.

    The unique constraint ``(survey, participant)`` is the final arbiter: of two requests
    racing with the same participant, one insert wins and the other is answered as a
    conflict (``ON CONFLICT DO NOTHING`` on PostgreSQL, ``IntegrityError`` elsewhere).
    """
    submitted_at = this_hour()
    # A privacy budget or a question asked again: the ledger and the earlier reports are
    # checked in the insert's transaction (surveys.privacy_budget); otherwise nothing.
    guarded = privacy_budget.guarded(survey)
    try:
        if single and connection.vendor == "postgresql" and not guarded:
            # One statement is atomic on its own: no BEGIN/COMMIT round trips.
            _insert_one_postgresql(survey, batch, submitted_at)
            return
        with transaction.atomic():
            if guarded:
                privacy_budget.settle(survey, batch)
            if connection.vendor == "postgresql":
                _insert_postgresql(survey, batch, submitted_at)
            else:
                # A race between these checks and the insert ends in IntegrityError below.
                survey.status = _current_status(survey)
                require_open(survey)
                answered = _already_answered(survey, batch.participants)
                if answered:
                    raise _conflict(batch, answered, single)
                _insert_orm(survey, batch, submitted_at)
    except _Rejected as rejected:
        raise rejected.error from None
    except IntegrityError:
        answered = _already_answered(survey, batch.participants)
        if answered:
            raise _conflict(batch, answered, single) from None
        raise
