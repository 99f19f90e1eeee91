"""Constraints the database itself enforces, whatever code writes the rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from consultations.models import Consultation
from surveys.models import Answer, CalibrationPair, Participant, Question, Response, Survey
from surveys.services import this_hour


@pytest.fixture
def rows(survey):
    participant = Participant.objects.create(consultation=survey.consultation, reference="p-1")
    response = Response.objects.create(
        survey=survey, participant=participant, submitted_at=this_hour()
    )
    by_key = {q.key: q for q in survey.questions.all()}
    return response, by_key


def _fails(**kwargs):
    model = kwargs.pop("model", Answer)
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.create(**kwargs)


def test_answer_codes_must_lie_within_the_question(rows):
    response, q = rows
    Answer.objects.create(response=response, question=q["district"], code=4, n_categories=5)
    _fails(response=response, question=q["sex"], code=2, n_categories=2)
    _fails(response=response, question=q["sex"], code=-1, n_categories=2)


def test_the_copied_category_count_must_match_the_question(rows):
    response, q = rows
    # code 2 would fit 3 categories, but "sex" has 2: the binding catches the lie.
    _fails(response=response, question=q["sex"], code=2, n_categories=3)


def test_an_answered_question_keeps_its_category_count(rows):
    """The bindings survive migration 0010's rebuild of the answers table (SQLite)."""
    response, q = rows
    district = Question.objects.filter(pk=q["district"].pk)
    assert district.update(n_categories=6) == 1  # nobody answered it yet
    district.update(n_categories=5)
    Answer.objects.create(response=response, question=q["district"], code=4, n_categories=5)
    with pytest.raises(IntegrityError), transaction.atomic():
        district.update(n_categories=6)
    with pytest.raises(IntegrityError), transaction.atomic():
        Answer.objects.filter(response=response).update(n_categories=6)
    assert district.get().n_categories == 5
    assert Answer.objects.get(response=response).n_categories == 5


def test_exactly_one_of_code_and_value(rows):
    response, q = rows
    _fails(response=response, question=q["sex"], code=1, value=1.0, n_categories=2)
    _fails(response=response, question=q["sex"], n_categories=2)
    _fails(response=response, question=q["age"], n_categories=0)
    # A float answer to a discrete question, a code to a continuous one.
    _fails(response=response, question=q["sex"], value=1.0, n_categories=0)
    _fails(response=response, question=q["age"], code=0, n_categories=0)
    Answer.objects.create(response=response, question=q["age"], value=42.5, n_categories=0)


def test_infinite_values_are_refused(rows):
    response, q = rows
    _fails(response=response, question=q["age"], value=float("inf"), n_categories=0)


def test_one_answer_per_question_and_one_response_per_participant(rows, survey):
    response, q = rows
    Answer.objects.create(response=response, question=q["sex"], code=0, n_categories=2)
    _fails(response=response, question=q["sex"], code=1, n_categories=2)
    _fails(
        model=Response, survey=survey, participant=response.participant, submitted_at=this_hour()
    )


def test_timestamps_must_be_coarsened_to_the_hour(survey):
    participant = Participant.objects.create(consultation=survey.consultation, reference="p-2")
    _fails(
        model=Response,
        survey=survey,
        participant=participant,
        submitted_at=this_hour() + timedelta(minutes=7),
    )
    response = Response.objects.create(
        survey=survey, participant=participant, submitted_at=this_hour()
    )
    response.withdrawn_at = timezone.now().replace(second=5)
    with pytest.raises(IntegrityError), transaction.atomic():
        response.save()


def test_participant_references_are_pseudonymous_tokens(survey):
    _fails(model=Participant, consultation=survey.consultation, reference="Jane Doe")
    _fails(model=Participant, consultation=survey.consultation, reference="jane@example.org")


def test_at_most_one_profile_survey_per_consultation(survey):
    _fails(model=Survey, consultation=survey.consultation, kind="profile", title="Second")
    Survey.objects.create(consultation=survey.consultation, kind="opinion", title="Fine")


def test_question_shape_constraints(consultation):
    draft = Survey.objects.create(consultation=consultation, kind="opinion", title="Draft")
    base = {"survey": draft, "key": "q", "position": 0, "model": Question}
    _fails(**base, type="binary", categories=["a", "b", "c"], n_categories=3, mechanism="none")
    _fails(
        **base, type="nominal", categories=["a", "b"], n_categories=2, mechanism="negative_uniform"
    )
    _fails(**base, type="continuous", range_low=5, range_high=5, mechanism="none")
    _fails(**base, type="continuous", range_low=0, range_high=1, mechanism="randomised_response")
    _fails(
        **base,
        type="ordinal",
        categories=["a", "b", "c"],
        n_categories=3,
        mechanism="additive_uniform",
    )


def test_calibration_pairs_are_distinct_codes_in_range(rows):
    _, q = rows
    skips = q["skips_class"]
    now = this_hour()
    CalibrationPair.objects.create(
        question=skips, true_code=0, negative_code=3, n_categories=4, uploaded_at=now
    )
    _fails(
        model=CalibrationPair,
        question=skips,
        true_code=1,
        negative_code=1,
        n_categories=4,
        uploaded_at=now,
    )
    _fails(
        model=CalibrationPair,
        question=skips,
        true_code=0,
        negative_code=4,
        n_categories=4,
        uploaded_at=now,
    )
    _fails(
        model=CalibrationPair,
        question=skips,
        true_code=0,
        negative_code=4,
        n_categories=5,
        uploaded_at=now,
    )


def test_consultation_thresholds_cannot_be_relaxed(tenant):
    with pytest.raises(IntegrityError), transaction.atomic():
        Consultation.objects.create(organisation=tenant.organisation, title="x", min_responses=3)
    with pytest.raises(IntegrityError), transaction.atomic():
        Consultation.objects.create(organisation=tenant.organisation, title="x", min_cell=1)
