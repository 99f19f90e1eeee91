"""Answers never refer to a missing response or question, on the real PostgreSQL.

Migration 0007 replaced the answers' per-row foreign keys by statement-level triggers
(one set-based check per statement; issue 9, ingest). These tests hold the triggers to
what the keys guaranteed: inserts (row by row, set-based, binary ``COPY``) naming a
missing response or a wrong ``(question, n_categories)`` fail; deleting or re-keying a
response or question that answers refer to fails; a delete racing an insert of answers
that refer to the row waits for it and then fails; nothing half-stored survives a
failure.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import psycopg
import pytest
from django.db import IntegrityError, connection, connections, transaction

from surveys.ingest import answers_copy_binary, this_hour
from surveys.models import Answer, Participant, Question, Response
from tests.factories import consultation_factory, survey_factory, tenant_factory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stored() -> tuple[Response, dict[str, Question]]:
    assert connection.vendor == "postgresql", "integration tests need PostgreSQL"
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    participant = Participant.objects.create(consultation=survey.consultation, reference="p-1")
    response = Response.objects.create(
        survey=survey, participant=participant, submitted_at=this_hour()
    )
    questions = {q.key: q for q in survey.questions.all()}
    Answer.objects.create(response=response, question=questions["sex"], code=1, n_categories=2)
    return response, questions


def _missing_response_id() -> int:
    return (Response.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1000


def test_an_answer_to_a_missing_response_is_refused(stored):
    response, questions = stored
    with (
        pytest.raises(IntegrityError, match="response that does not exist"),
        transaction.atomic(),
    ):
        Answer.objects.create(
            response_id=_missing_response_id(),
            question=questions["district"],
            code=0,
            n_categories=5,
        )
    # Set-based: one good row and one bad row in one statement store neither.
    with pytest.raises(IntegrityError), transaction.atomic():
        Answer.objects.bulk_create(
            [
                Answer(response=response, question=questions["district"], code=0, n_categories=5),
                Answer(
                    response_id=_missing_response_id(),
                    question=questions["district"],
                    code=1,
                    n_categories=5,
                ),
            ]
        )
    assert Answer.objects.filter(response=response).count() == 1


def test_an_answer_to_a_missing_question_or_wrong_category_count_is_refused(stored):
    response, questions = stored
    missing = (Question.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1000
    with (
        pytest.raises(IntegrityError, match="question that does not exist"),
        transaction.atomic(),
    ):
        Answer.objects.create(response=response, question_id=missing, code=0, n_categories=2)
    with (
        pytest.raises(IntegrityError, match="another number of categories"),
        transaction.atomic(),
    ):
        Answer.objects.create(
            response=response, question=questions["district"], code=0, n_categories=6
        )


def test_binary_copy_of_answers_is_checked_too(stored):
    response, questions = stored
    district = questions["district"]

    def copy(response_ids: list[int], n_categories: int) -> None:
        payload = answers_copy_binary(
            np.asarray(response_ids, dtype=np.int64),
            np.full(len(response_ids), district.pk, dtype=np.int64),
            np.zeros(len(response_ids), dtype=np.int64),
            np.zeros(len(response_ids)),
            np.full(len(response_ids), n_categories, dtype=np.int64),
        )
        connection.ensure_connection()
        sql = (
            "COPY surveys_answer (response_id, question_id, code, value, n_categories) "
            "FROM STDIN (FORMAT BINARY)"
        )
        with (
            transaction.atomic(),
            psycopg.Cursor(connection.connection) as cursor,
            cursor.copy(sql) as writer,
        ):
            writer.write(payload)

    # A plain psycopg cursor (as surveys.ingest uses): psycopg's own error class.
    with pytest.raises(psycopg.errors.ForeignKeyViolation, match="response that does not"):
        copy([response.pk, _missing_response_id()], 5)
    with pytest.raises(psycopg.errors.ForeignKeyViolation, match="another number of"):
        copy([response.pk], 4)
    assert not Answer.objects.filter(question=district).exists()
    copy([response.pk], 5)
    assert Answer.objects.filter(question=district).count() == 1


def test_a_response_or_question_with_answers_cannot_disappear(stored):
    response, questions = stored
    with (
        pytest.raises(IntegrityError, match="still has answers"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM surveys_response WHERE id = %s", [response.pk])
    with (
        pytest.raises(IntegrityError, match="still has answers"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "UPDATE surveys_response SET id = %s WHERE id = %s",
            [_missing_response_id(), response.pk],
        )
    sex = questions["sex"]
    with (
        pytest.raises(IntegrityError, match="answers refer to this question"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM surveys_question WHERE id = %s", [sex.pk])
    with (
        pytest.raises(IntegrityError, match="answers refer to this question"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "UPDATE surveys_question SET n_categories = 3, type = 'nominal', "
            'categories = \'["F", "M", "X"]\' WHERE id = %s',
            [sex.pk],
        )
    assert Response.objects.filter(pk=response.pk).exists()
    assert Question.objects.get(pk=sex.pk).n_categories == 2
    # A question nobody answered can still change, and a response without answers go.
    district = questions["district"]
    Question.objects.filter(pk=district.pk).update(position=99)
    Answer.objects.filter(response=response).delete()
    Response.objects.filter(pk=response.pk).delete()
    assert not Response.objects.filter(pk=response.pk).exists()


def test_a_delete_racing_an_insert_of_answers_waits_and_fails(stored):
    """The inserter locks the response ``FOR KEY SHARE``; the delete waits, then fails."""
    response, questions = stored
    Answer.objects.filter(response=response).delete()
    inserted = threading.Event()
    outcome: list[object] = []

    def delete() -> None:
        try:
            inserted.wait(30)
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("DELETE FROM surveys_response WHERE id = %s", [response.pk])
            outcome.append("deleted")
        except Exception as exc:  # judged below
            outcome.append(exc)
        finally:
            connections.close_all()

    deleter = threading.Thread(target=delete)
    deleter.start()
    with transaction.atomic():
        Answer.objects.create(
            response=response, question=questions["district"], code=2, n_categories=5
        )
        inserted.set()
        time.sleep(1.0)  # the delete now waits on the lock
        assert deleter.is_alive()
    deleter.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], IntegrityError), outcome
    assert Answer.objects.filter(response=response).count() == 1
    assert Response.objects.filter(pk=response.pk).exists()


def test_an_insert_after_a_committed_delete_fails(stored):
    response, questions = stored
    Answer.objects.filter(response=response).delete()
    Response.objects.filter(pk=response.pk).delete()
    with (
        pytest.raises(IntegrityError, match="response that does not exist"),
        transaction.atomic(),
    ):
        Answer.objects.create(
            response_id=response.pk, question=questions["sex"], code=0, n_categories=2
        )


def test_responses_and_participants_refer_to_existing_rows(stored):
    """Migration 0008: the same statement-level checks for responses and participants."""
    response, _ = stored
    survey, participant = response.survey, response.participant
    with (
        pytest.raises(IntegrityError, match="missing surveys_participant row"),
        transaction.atomic(),
    ):
        Response.objects.create(
            survey=survey, participant_id=participant.pk + 1000, submitted_at=this_hour()
        )
    with (
        pytest.raises(IntegrityError, match="missing surveys_survey row"),
        transaction.atomic(),
    ):
        Response.objects.filter(pk=response.pk).update(survey_id=survey.pk + 1000)
    with (
        pytest.raises(IntegrityError, match="missing consultations_consultation row"),
        transaction.atomic(),
    ):
        Participant.objects.create(consultation_id=survey.consultation_id + 1000, reference="p-2")
    for table, pk in [
        ("surveys_participant", participant.pk),
        ("surveys_survey", survey.pk),
        ("consultations_consultation", survey.consultation_id),
    ]:
        with (
            pytest.raises(IntegrityError, match="still refer to this"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(f"DELETE FROM {table} WHERE id = %s", [pk])
    assert Response.objects.filter(pk=response.pk, survey=survey).exists()
    assert Participant.objects.filter(pk=participant.pk).exists()
    # Deleted children first (as Django's cascades do), the parents may go.
    Answer.objects.filter(response=response).delete()
    Response.objects.filter(pk=response.pk).delete()
    Participant.objects.filter(pk=participant.pk).delete()
    assert not Participant.objects.filter(pk=participant.pk).exists()
