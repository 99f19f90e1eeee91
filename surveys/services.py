"""Writes of the surveys app: surveys and questions, responses, withdrawals, calibration.

Every function is keyword-only and atomic. Domain problems raise
:class:`surveys.errors.InvalidInput` (400), :class:`~surveys.errors.Conflict` (409) or
:class:`~surveys.errors.NotFound` (404), each naming the offending field or item.

Privacy: nothing here stores or logs a true value, a name, an address or a user agent;
residents' timestamps are coarsened to the hour (:func:`this_hour`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from consultations.models import Consultation, Organisation
from consultations.services import audit_record, consultation_create  # noqa: F401  (re-export)
from surveys import schemes
from surveys.errors import Conflict, InvalidInput, NotFound
from surveys.models import Answer, CalibrationPair, Participant, Question, Response, Survey
from surveys.selectors import survey_answer_form

MAX_BULK = 10_000
MAX_CALIBRATION_PAIRS = 100_000


def this_hour(now: datetime | None = None) -> datetime:
    """The current time truncated to the hour: residents' timestamps are never finer."""
    return (now or timezone.now()).replace(minute=0, second=0, microsecond=0)


# --------------------------------------------------------------------------- surveys


def _parse_questions(questions: Any) -> list[schemes.QuestionSpec]:
    try:
        return schemes.parse_questions(questions)
    except schemes.QuestionListInvalid as exc:
        bad = [i for i, e in enumerate(exc.errors) if e and isinstance(e, dict)]
        detail = (
            f"Invalid question{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))}."
            if bad
            else "questions: must be a list of questions."
        )
        raise InvalidInput(detail, {"questions": exc.errors}) from None


def _store_questions(survey: Survey, specs: Sequence[schemes.QuestionSpec]) -> None:
    Question.objects.bulk_create(
        [
            Question(
                survey=survey,
                key=spec.key,
                text=spec.text,
                type=spec.type,
                required=spec.required,
                categories=list(spec.categories),
                n_categories=spec.n_categories,
                range_low=spec.range[0] if spec.range else None,
                range_high=spec.range[1] if spec.range else None,
                mechanism=spec.mechanism,
                mechanism_params=spec.params,
                position=position,
            )
            for position, spec in enumerate(specs)
        ]
    )


@transaction.atomic
def survey_create(
    *,
    organisation: Organisation,
    consultation: Consultation,
    kind: str,
    title: str,
    questions: list[dict[str, Any]],
    actor: str = "system",
) -> Survey:
    """Create a draft survey with its questions, in one transaction.

    ``questions`` are dicts as the API receives them (``key``, ``text``, ``type``,
    ``categories`` or ``range``, ``mechanism`` = ``{"name": ..., **params}``, optional
    ``required``). Every mechanism is validated by :mod:`privacy.mechanisms`.
    """
    if consultation.organisation_id != organisation.pk:
        raise NotFound("Consultation not found.", {"consultation": ["Not found."]})
    if kind not in Survey.Kind.values:
        raise InvalidInput(
            f"kind must be profile or opinion, got {kind!r}.", {"kind": ["Invalid."]}
        )
    if not isinstance(title, str) or not 1 <= len(title) <= 200:
        raise InvalidInput("title must be 1-200 characters.", {"title": ["1-200 characters."]})
    specs = _parse_questions(questions)
    if kind == Survey.Kind.PROFILE and _has_profile(consultation):
        raise InvalidInput(
            "This consultation already has a profile survey.",
            {"kind": ["This consultation already has a profile survey (at most one)."]},
        )
    try:
        with transaction.atomic():
            survey = Survey.objects.create(consultation=consultation, kind=kind, title=title)
    except IntegrityError:  # a concurrent request created the profile survey first
        raise InvalidInput(
            "This consultation already has a profile survey.",
            {"kind": ["This consultation already has a profile survey (at most one)."]},
        ) from None
    _store_questions(survey, specs)
    audit_record(
        organisation=organisation,
        actor=actor,
        action="survey.create",
        target=str(survey.pk),
        details={"kind": kind, "questions": [s.key for s in specs]},
    )
    return survey


def _has_profile(consultation: Consultation) -> bool:
    return Survey.objects.filter(consultation=consultation, kind=Survey.Kind.PROFILE).exists()


def _frozen(survey: Survey) -> InvalidInput:
    return InvalidInput(
        f"Survey {survey.pk} is {survey.status}: questions and mechanisms are frozen once a "
        "survey opens.",
        {"questions": ["Frozen once the survey opens."]},
    )


@transaction.atomic
def survey_update(
    *,
    survey: Survey,
    title: str | None = None,
    questions: list[dict[str, Any]] | None = None,
    actor: str = "system",
) -> Survey:
    """Rename a survey, or replace the questions of a draft one."""
    survey = Survey.objects.select_for_update().get(pk=survey.pk)
    changed = []
    if title is not None and title != survey.title:
        if not isinstance(title, str) or not 1 <= len(title) <= 200:
            raise InvalidInput("title must be 1-200 characters.", {"title": ["1-200 characters."]})
        survey.title = title
        survey.save(update_fields=["title"])
        changed.append("title")
    if questions is not None:
        if survey.status != Survey.Status.DRAFT:
            raise _frozen(survey)
        specs = _parse_questions(questions)
        CalibrationPair.objects.filter(question__survey=survey).delete()
        survey.questions.all().delete()
        _store_questions(survey, specs)
        changed.append("questions")
    if changed:
        audit_record(
            organisation=survey.consultation.organisation,
            actor=actor,
            action="survey.update",
            target=str(survey.pk),
            details={"fields": changed},
        )
    return survey


@transaction.atomic
def survey_delete(*, survey: Survey, actor: str = "system") -> None:
    """Delete a draft survey (an opened one holds responses: close it instead)."""
    survey = Survey.objects.select_for_update().get(pk=survey.pk)
    if survey.status != Survey.Status.DRAFT:
        raise Conflict(
            f"Survey {survey.pk} is {survey.status}; only draft surveys can be deleted.",
            {"status": [f"Is {survey.status}."]},
        )
    organisation = survey.consultation.organisation
    pk = survey.pk
    survey.delete()
    audit_record(organisation=organisation, actor=actor, action="survey.delete", target=str(pk))


@transaction.atomic
def survey_open(*, survey: Survey, actor: str = "system") -> Survey:
    """Open a draft survey for responses; its questions are frozen from now on."""
    survey = Survey.objects.select_for_update().select_related("consultation").get(pk=survey.pk)
    if survey.status != Survey.Status.DRAFT:
        raise Conflict(
            f"Survey {survey.pk} is {survey.status}; only a draft survey can be opened.",
            {"status": [f"Is {survey.status}."]},
        )
    if not survey.questions.exists():
        raise InvalidInput(
            "A survey needs at least one question to open.", {"questions": ["Empty."]}
        )
    survey.status = Survey.Status.OPEN
    survey.opened_at = timezone.now()
    survey.save(update_fields=["status", "opened_at"])
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="survey.open",
        target=str(survey.pk),
    )
    return survey


@transaction.atomic
def survey_close(*, survey: Survey, actor: str = "system") -> Survey:
    """Close an open survey: no more responses (withdrawals stay possible)."""
    survey = Survey.objects.select_for_update().select_related("consultation").get(pk=survey.pk)
    if survey.status != Survey.Status.OPEN:
        raise Conflict(
            f"Survey {survey.pk} is {survey.status}; only an open survey can be closed.",
            {"status": [f"Is {survey.status}."]},
        )
    survey.status = Survey.Status.CLOSED
    survey.closed_at = timezone.now()
    survey.save(update_fields=["status", "closed_at"])
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="survey.close",
        target=str(survey.pk),
    )
    return survey


# --------------------------------------------------------------------------- responses


def _require_open(survey: Survey) -> None:
    if survey.status != Survey.Status.OPEN:
        raise InvalidInput(
            f"Survey {survey.pk} is {survey.status}; it accepts responses only while open.",
            {"survey": [f"Is {survey.status}, not open."]},
        )


@dataclass(frozen=True)
class _Batch:
    """Validated responses in columns, ready for one INSERT per table."""

    participants: list[str]
    answer_response_index: list[int]
    answer_question: list[int]
    answer_code: list[int | None]
    answer_value: list[float | None]
    answer_n: list[int]


def _validate(survey: Survey, items: Sequence[Any]) -> _Batch:
    form = survey_answer_form(survey)
    errors: dict[str, Any] = {}
    participants: list[str] = []
    index_col: list[int] = []
    question_col: list[int] = []
    code_col: list[int | None] = []
    value_col: list[float | None] = []
    n_col: list[int] = []
    first_seen: dict[str, int] = {}
    duplicates: dict[str, Any] = {}
    for index, item in enumerate(items):
        participant, rows, item_errors = schemes.check_response(item, form)
        if item_errors:
            errors[str(index)] = item_errors
            continue
        assert participant is not None
        if participant in first_seen:
            duplicates[str(index)] = {
                "participant": [
                    f"Participant {participant!r} appears twice in this batch "
                    f"(also item {first_seen[participant]})."
                ]
            }
            continue
        first_seen[participant] = index
        position = len(participants)
        participants.append(participant)
        for question_id, code, value, n in rows:
            index_col.append(position)
            question_col.append(question_id)
            code_col.append(code)
            value_col.append(value)
            n_col.append(n)
    if errors:
        count = len(errors)
        raise InvalidInput(
            f"{count} of {len(items)} response{'s' if len(items) != 1 else ''} "
            f"{'is' if count == 1 else 'are'} invalid; nothing was stored.",
            {"responses": errors},
        )
    if duplicates:
        raise Conflict(
            f"{len(duplicates)} response(s) repeat a participant of the same batch; "
            "nothing was stored.",
            {"responses": duplicates},
        )
    return _Batch(participants, index_col, question_col, code_col, value_col, n_col)


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


def _conflict(batch: _Batch, answered: dict[str, bool], single: bool) -> Conflict:
    def why(ref: str) -> str:
        if answered.get(ref, False):
            return f"Participant {ref!r} withdrew from this survey and cannot answer again."
        return f"Participant {ref!r} has already answered this survey."

    if single:
        ref = batch.participants[0]
        return Conflict(why(ref), {"participant": [why(ref)]})
    items = {
        str(index): {"participant": [why(ref)]}
        for index, ref in enumerate(batch.participants)
        if ref in answered
    }
    return Conflict(
        f"{len(items)} participant(s) already answered this survey; nothing was stored.",
        {"responses": items},
    )


class _Rejected(Exception):
    """Raised inside the transaction to roll it back; carries the domain error."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _insert_postgresql(survey: Survey, batch: _Batch, submitted_at: datetime) -> None:
    """Four statements, whatever the batch size: participants (insert, read back),
    responses, answers (COPY). A single response takes one statement instead.

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
    # its transaction): arrays of 70,000 values go over the wire in binary instead of being
    # spelled out as SQL literals, and the answers go in through COPY.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            f"INSERT INTO {participant_table} (consultation_id, reference) "
            "SELECT %s, unnest(%s::varchar[]) "
            "ON CONFLICT (consultation_id, reference) DO NOTHING",
            [survey.consultation_id, batch.participants],
        )
        # A separate statement: it sees rows that concurrent batches committed while the
        # insert above waited for them.
        cursor.execute(
            f"SELECT reference, id FROM {participant_table} "
            "WHERE consultation_id = %s AND reference = ANY(%s::varchar[])",
            [survey.consultation_id, batch.participants],
        )
        participant_ids = dict(cursor.fetchall())
        ordered_ids = [participant_ids[ref] for ref in batch.participants]
        cursor.execute(
            f"WITH open_survey AS (SELECT id FROM {survey_table} WHERE {_SAME_OPEN_SURVEY}) "
            f"INSERT INTO {response_table} (survey_id, participant_id, submitted_at) "
            "SELECT open_survey.id, participant.id, %s "
            "FROM open_survey, unnest(%s::bigint[]) AS participant(id) "
            "ON CONFLICT (survey_id, participant_id) DO NOTHING "
            "RETURNING participant_id, id",
            [*_same_open_survey(survey), submitted_at, ordered_ids],
        )
        response_ids = dict(cursor.fetchall())
        if len(response_ids) != len(ordered_ids):
            raise _Rejected(_why_not_stored(survey, batch))
        by_position = [response_ids[pid] for pid in ordered_ids]
        with cursor.copy(
            f"COPY {answer_table} (response_id, question_id, code, value, n_categories) FROM STDIN"
        ) as copy:
            for row in zip(
                [by_position[i] for i in batch.answer_response_index],
                batch.answer_question,
                batch.answer_code,
                batch.answer_value,
                batch.answer_n,
                strict=True,
            ):
                copy.write_row(row)


def _insert_one_postgresql(survey: Survey, batch: _Batch, submitted_at: datetime) -> None:
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
        " (survey_id, participant_id, submitted_at)"
        " SELECT open_survey.id, participant.id, %s FROM open_survey, participant"
        " ON CONFLICT (survey_id, participant_id) DO NOTHING RETURNING id),"
        f" answer AS (INSERT INTO {Answer._meta.db_table}"
        " (response_id, question_id, code, value, n_categories)"
        " SELECT response.id, x.question_id, x.code, x.value, x.n_categories FROM response,"
        " unnest(%s::bigint[], %s::smallint[], %s::double precision[], %s::smallint[])"
        " AS x(question_id, code, value, n_categories))"
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
                batch.answer_question,
                batch.answer_code,
                batch.answer_value,
                batch.answer_n,
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


def _why_not_stored(survey: Survey, batch: _Batch) -> Exception:
    """Some responses were not inserted: the survey closed, or participants answered."""
    status_now = _current_status(survey)
    if status_now != Survey.Status.OPEN:
        survey.status = status_now
        try:
            _require_open(survey)
        except InvalidInput as exc:
            return exc
    answered = _already_answered(survey, batch.participants)
    return _conflict(batch, answered, len(batch.participants) == 1)


def _insert_orm(survey: Survey, batch: _Batch, submitted_at: datetime) -> None:
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
            Response(survey=survey, participant_id=participant_ids[ref], submitted_at=submitted_at)
            for ref in batch.participants
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


def _store(survey: Survey, batch: _Batch, *, single: bool) -> None:
    """Insert a validated batch atomically; a participant who already answered is a 409.

    The unique constraint ``(survey, participant)`` is the final arbiter: of two requests
    racing with the same participant, one insert wins and the other is answered as a
    conflict (``ON CONFLICT DO NOTHING`` on PostgreSQL, ``IntegrityError`` elsewhere).
    """
    submitted_at = this_hour()
    try:
        if single and connection.vendor == "postgresql":
            # One statement is atomic on its own: no BEGIN/COMMIT round trips.
            _insert_one_postgresql(survey, batch, submitted_at)
            return
        with transaction.atomic():
            if connection.vendor == "postgresql":
                _insert_postgresql(survey, batch, submitted_at)
            else:
                # A race between these checks and the insert ends in IntegrityError below.
                survey.status = _current_status(survey)
                _require_open(survey)
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


def response_submit(
    *, survey: Survey, participant: str, answers: dict[str, Any], actor: str = "system"
) -> None:
    """Store one participant's distorted answers.

    Raises
    ------
    InvalidInput
        Survey not open, bad participant reference, unknown key, missing required
        answer, unknown category, wrong type, or a value the mechanism could not produce.
    Conflict
        The participant already answered (or withdrew from) this survey.
    """
    del actor  # single submissions are not audited one by one (the key is throttled)
    _require_open(survey)
    try:
        batch = _validate(survey, [{"participant": participant, "answers": answers}])
    except InvalidInput as exc:
        item = exc.errors["responses"]["0"]
        raise InvalidInput(_first_problem(item), item) from None
    _store(survey, batch, single=True)


def _first_problem(item: dict[str, Any]) -> str:
    field, problem = next(iter(item.items()))
    while isinstance(problem, dict):
        field, problem = next(iter(problem.items()))
    return f"{field}: {problem[0]}" if field != "non_field_errors" else problem[0]


def responses_submit_bulk(*, survey: Survey, responses: list[Any], actor: str = "system") -> int:
    """Store up to 10,000 responses atomically; returns how many were stored.

    One bad item rejects the batch: :class:`InvalidInput` names every bad item by index;
    repeated participants in the batch and participants who already answered give a
    :class:`Conflict` naming them. Nothing is stored in either case.
    """
    _require_open(survey)
    if not isinstance(responses, list) or not 1 <= len(responses) <= MAX_BULK:
        raise InvalidInput(
            f"responses must be a list of 1 to {MAX_BULK} responses.",
            {"responses": [f"Must be a list of 1 to {MAX_BULK} responses."]},
        )
    batch = _validate(survey, responses)
    _store(survey, batch, single=False)
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="responses.bulk_submit",
        target=str(survey.pk),
        details={"created": len(batch.participants)},
    )
    return len(batch.participants)


@transaction.atomic
def response_withdraw(*, survey: Survey, participant: str, actor: str = "system") -> Response:
    """Withdraw a participant's response: delete its answers, keep a tombstone.

    Later analyses no longer see it, and the participant cannot answer again. Withdrawing
    twice is harmless.

    Raises
    ------
    NotFound
        The participant never answered this survey.
    """
    response = (
        Response.objects.select_for_update()
        .filter(
            survey=survey,
            participant__consultation_id=survey.consultation_id,
            participant__reference=participant,
        )
        .first()
    )
    if response is None:
        raise NotFound(
            f"No response of participant {participant!r} to survey {survey.pk}.",
            {"participant": ["No response from this participant."]},
        )
    if response.withdrawn_at is None:
        response.answers.all().delete()
        response.withdrawn_at = this_hour()
        response.save(update_fields=["withdrawn_at"])
        audit_record(
            organisation=survey.consultation.organisation,
            actor=actor,
            action="response.withdraw",
            target=str(survey.pk),
        )
    return response


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class CalibrationUpload:
    question: str
    added: int
    total: int


@transaction.atomic
def calibration_upload(
    *, survey: Survey, question: str, pairs: list[Any], actor: str = "system"
) -> CalibrationUpload:
    """Add (true, negative) label pairs of a calibration sample to a negative_manual question.

    They estimate the rows of the question's channel (000_1b7f9a8e281301b4.txt, Section
    4.1); rows without pairs stay uniform. Allowed while the survey is draft or open.
    """
    if survey.status == Survey.Status.CLOSED:
        raise InvalidInput(
            f"Survey {survey.pk} is closed; calibration data can no longer change.",
            {"survey": ["Is closed."]},
        )
    target = (
        Question.objects.filter(survey=survey, key=question).first()
        if isinstance(question, str)
        else None
    )
    if target is None:
        raise InvalidInput(
            f"Survey {survey.pk} has no question {question!r}.",
            {"question": [f"Unknown question {question!r}."]},
        )
    if target.mechanism != "negative_manual":
        raise InvalidInput(
            f"Question {question!r} uses {target.mechanism}; calibration pairs are only for "
            "negative_manual questions.",
            {"question": ["Not a negative_manual question."]},
        )
    if not isinstance(pairs, list) or not 1 <= len(pairs) <= MAX_CALIBRATION_PAIRS:
        raise InvalidInput(
            f"pairs must be a list of 1 to {MAX_CALIBRATION_PAIRS} [true, negative] pairs.",
            {"pairs": [f"Must be a list of 1 to {MAX_CALIBRATION_PAIRS} pairs."]},
        )
    codes = {label: code for code, label in enumerate(target.categories)}
    errors: dict[str, list[str]] = {}
    rows: list[tuple[int, int]] = []
    for index, pair in enumerate(pairs):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(x, str) for x in pair)
        ):
            errors[str(index)] = ["Must be [true label, negative label]."]
            continue
        unknown = [label for label in pair if label not in codes]
        if unknown:
            errors[str(index)] = [
                f"Unknown categor{'ies' if len(unknown) > 1 else 'y'} {unknown}; "
                f"the question's are {target.categories}."
            ]
            continue
        if pair[0] == pair[1]:
            errors[str(index)] = ["The negative answer must differ from the true one."]
            continue
        rows.append((codes[pair[0]], codes[pair[1]]))
    if errors:
        raise InvalidInput(
            f"{len(errors)} of {len(pairs)} calibration pairs are invalid; nothing was stored.",
            {"pairs": errors},
        )
    uploaded_at = this_hour()
    CalibrationPair.objects.bulk_create(
        [
            CalibrationPair(
                question=target,
                true_code=t,
                negative_code=n,
                n_categories=target.n_categories,
                uploaded_at=uploaded_at,
            )
            for t, n in rows
        ],
        batch_size=1000,
    )
    total = CalibrationPair.objects.filter(question=target).count()
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="calibration.upload",
        target=f"{survey.pk}/{target.key}",
        details={"added": len(rows), "total": total},
    )
    return CalibrationUpload(question=target.key, added=len(rows), total=total)
