"""Submissions under concurrency, on the real PostgreSQL of tests/servers.py.

Run with ``python -m tests.servers -- pytest -m integration``. Each thread has its own
database connection and transaction, as gunicorn workers do, so the unique constraint
and the ``ON CONFLICT`` clauses are what keeps one response per participant.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, connection, connections, transaction

from surveys.models import Answer, Participant, Response
from tests.factories import (
    Tenant,
    consultation_factory,
    good_answers,
    survey_factory,
    tenant_factory,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` in ``count`` threads released together; return results in order."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except Exception as exc:  # surfaced by the assertions below
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


@pytest.fixture
def setup() -> tuple[Tenant, Any]:
    assert connection.vendor == "postgresql", "integration tests need PostgreSQL"
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    return tenant, survey


def test_twenty_simultaneous_submissions_of_one_participant_store_one(setup):
    tenant, survey = setup
    url = f"/api/v1/surveys/{survey.pk}/responses/"

    def submit(index: int) -> int:
        response = tenant.portal.post(
            url, {"participant": "p-race", "answers": good_answers(index)}, format="json"
        )
        return response.status_code

    statuses = _in_threads(20, submit)
    assert Counter(statuses) == {201: 1, 409: 19}, statuses
    assert Response.objects.filter(survey=survey).count() == 1
    assert Participant.objects.filter(reference="p-race").count() == 1
    assert Answer.objects.filter(response__survey=survey).count() == 8


def test_simultaneous_bulk_batches_store_every_acknowledged_response_complete(setup):
    """Eight batches of 500, pairwise overlapping by 50 participants, sent at once.

    Every batch either stores all of its responses (201) or none (409); every stored
    response has all of its answers; no participant is stored twice.
    """
    tenant, survey = setup
    url = f"/api/v1/surveys/{survey.pk}/responses/bulk/"

    def batch(index: int) -> list[dict[str, Any]]:
        start = index * 450  # overlaps the next batch by 50 participants
        return [
            {"participant": f"p-{n}", "answers": good_answers(n)} for n in range(start, start + 500)
        ]

    def submit(index: int) -> tuple[int, dict[str, Any]]:
        # bulks of 500: a server-side key (a portal key sends at most 100)
        response = tenant.analyst.post(url, {"responses": batch(index)}, format="json")
        return response.status_code, response.json()

    results = _in_threads(8, submit)
    assert all(isinstance(r, tuple) for r in results), results
    acknowledged = [i for i, (code, _) in enumerate(results) if code == 201]
    rejected = [i for i, (code, _) in enumerate(results) if code != 201]
    assert acknowledged, results
    for index in rejected:
        code, body = results[index]
        assert code == 409, body
        assert body["errors"]["responses"], body
    expected = {item["participant"] for i in acknowledged for item in batch(i)}
    stored = set(
        Response.objects.filter(survey=survey).values_list("participant__reference", flat=True)
    )
    assert stored == expected
    assert (
        Response.objects.filter(survey=survey).count() == len(expected) == 500 * len(acknowledged)
    )
    per_response = Counter(
        Answer.objects.filter(response__survey=survey).values_list("response_id", flat=True)
    )
    assert set(per_response.values()) == {8}
    assert len(per_response) == len(expected)


def test_a_batch_of_ten_thousand_is_stored_in_full(setup):
    tenant, survey = setup
    items = [{"participant": f"big-{n}", "answers": good_answers(n)} for n in range(10_000)]
    response = tenant.analyst.post(
        f"/api/v1/surveys/{survey.pk}/responses/bulk/", {"responses": items}, format="json"
    )
    assert response.status_code == 201, response.content[:500]
    assert response.json()["created"] == 10_000
    assert len(response.json()["withdrawal_tokens"]) == 10_000
    assert Answer.objects.filter(response__survey=survey).count() == 80_000
    income = survey.questions.get(key="income")
    from surveys.selectors import question_values

    values = question_values(income)
    assert values.shape == (10_000,)
    assert math.isclose(values.sum(), sum(1000.0 + (10 * n) % 19_000 for n in range(10_000)))


def test_a_close_racing_submissions_leaves_no_response_after_it(setup):
    tenant, survey = setup
    url = f"/api/v1/surveys/{survey.pk}/responses/"

    def work(index: int) -> int:
        if index == 0:
            return tenant.analyst.post(f"/api/v1/surveys/{survey.pk}/close/").status_code
        response = tenant.portal.post(
            url, {"participant": f"p-{index}", "answers": good_answers(index)}, format="json"
        )
        return response.status_code

    statuses = _in_threads(12, work)
    assert statuses[0] == 200
    assert set(statuses[1:]) <= {201, 400}
    survey.refresh_from_db()
    stored = Response.objects.filter(survey=survey).count()
    assert stored == statuses[1:].count(201)
    assert Answer.objects.filter(response__survey=survey).count() == 8 * stored


def test_postgres_binds_answer_codes_to_their_question(setup):
    _, survey = setup
    participant = Participant.objects.create(consultation=survey.consultation, reference="p-x")
    from surveys.services import this_hour

    response = Response.objects.create(
        survey=survey, participant=participant, submitted_at=this_hour()
    )
    sex = survey.questions.get(key="sex")
    age = survey.questions.get(key="age")
    with pytest.raises(IntegrityError), transaction.atomic():
        Answer.objects.create(response=response, question=sex, code=2, n_categories=3)
    with pytest.raises(IntegrityError), transaction.atomic():
        Answer.objects.create(response=response, question=age, value=float("nan"), n_categories=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        Answer.objects.create(response=response, question=sex, value=0.5, n_categories=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        sex.n_categories = 3
        sex.categories = ["F", "M", "X"]
        sex.type = "nominal"
        Answer.objects.create(response=response, question=sex, code=0, n_categories=2)
        sex.save()
    other = tenant_factory()
    assert other.organisation.pk != survey.consultation.organisation_id


@pytest.mark.parametrize(
    "questions",
    [
        [{"key": "sex", "type": "binary", "categories": ["F", "M"], "mechanism": {"name": "none"}}],
        [{"key": "age", "type": "continuous", "range": [0, 10], "mechanism": {"name": "none"}}],
    ],
    ids=["only-discrete", "only-continuous"],
)
def test_single_and_bulk_paths_store_surveys_of_one_answer_type(questions):
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation), questions=questions)
    answer = {"sex": "M"} if questions[0]["key"] == "sex" else {"age": 3.5}
    for n in range(3):  # a prepared statement is reused from the second call on
        response = tenant.portal.post(
            f"/api/v1/surveys/{survey.pk}/responses/",
            {"participant": f"p-{n}", "answers": answer},
            format="json",
        )
        assert response.status_code == 201, response.content
    bulk = tenant.portal.post(
        f"/api/v1/surveys/{survey.pk}/responses/bulk/",
        {"responses": [{"participant": f"b-{n}", "answers": answer} for n in range(3)]},
        format="json",
    )
    assert bulk.status_code == 201, bulk.content
    stored = Answer.objects.filter(response__survey=survey)
    assert stored.count() == 6
    assert set(stored.values_list("code", "value").distinct()) == (
        {(1, None)} if "sex" in answer else {(None, 3.5)}
    )


def test_a_bulk_conflict_names_only_those_who_had_answered(setup):
    """PostgreSQL inserts the batch's other responses before it sees the conflict: they
    are rolled back and must not be named (they were named on PostgreSQL before)."""
    tenant, survey = setup
    url = f"/api/v1/surveys/{survey.pk}/responses/bulk/"

    def batch(start: int, count: int) -> list[dict[str, Any]]:
        return [
            {"participant": f"p-{n}", "answers": good_answers(n)}
            for n in range(start, start + count)
        ]

    assert tenant.portal.post(url, {"responses": batch(0, 3)}, format="json").status_code == 201
    response = tenant.portal.post(url, {"responses": batch(2, 4)}, format="json")
    assert response.status_code == 409, response.content
    errors = response.json()["errors"]["responses"]
    assert set(errors) == {"0"}, errors
    assert "p-2" in errors["0"]["participant"][0]
    assert Response.objects.filter(survey=survey).count() == 3
    assert not Participant.objects.filter(reference__in=["p-4", "p-5"]).exists()
