"""Response tallies equal a real COUNT after every kind of write (surveys.tallies)."""

from __future__ import annotations

import copy

import pytest
from django.db import connection

from surveys import tallies
from surveys.models import Answer, Response, ResponseTally
from tests.factories import good_answers, profile_questions, survey_factory

URL = "/api/v1/surveys/"


def _real_counts(survey) -> tuple[int, dict[int, int]]:
    live = Response.objects.filter(survey=survey, withdrawn_at__isnull=True)
    answers = {
        q.pk: Answer.objects.filter(question=q, response__in=live).count()
        for q in survey.questions.all()
    }
    return live.count(), answers


def _assert_tallies_match(survey) -> None:
    responses, answers = _real_counts(survey)
    tallied_responses, tallied_answers = tallies.live_counts([survey.pk], list(answers))
    assert tallied_responses == {survey.pk: responses}
    assert tallied_answers == answers


def _optional_questions() -> list[dict]:
    questions = copy.deepcopy(profile_questions())
    for question in questions:
        if question["key"] in ("age", "site"):
            question["required"] = False
    return questions


def _answers(index: int) -> dict:
    answers = good_answers(index)
    if index % 3 == 0:
        answers.pop("age")
    if index % 4 == 0:
        answers.pop("site")
    return answers


def _bulk(client, survey, start: int, n: int):
    return client.post(
        f"{URL}{survey.pk}/responses/bulk/",
        {
            "responses": [
                {"participant": f"p-{i}", "answers": _answers(i)} for i in range(start, start + n)
            ]
        },
        format="json",
    )


def test_tallies_follow_submissions_bulk_conflicts_and_withdrawals(tenant, consultation):
    survey = survey_factory(consultation, questions=_optional_questions())
    other = survey_factory(consultation, kind="opinion")  # counted apart
    assert _bulk(tenant.portal, survey, 0, 40).status_code == 201
    _assert_tallies_match(survey)
    for i in range(40, 46):
        single = tenant.portal.post(
            f"{URL}{survey.pk}/responses/",
            {"participant": f"p-{i}", "answers": _answers(i)},
            format="json",
        )
        assert single.status_code == 201, single.content
    _assert_tallies_match(survey)
    # Rejected writes change nothing: a conflicting batch and a conflicting single one.
    assert _bulk(tenant.portal, survey, 44, 5).status_code == 409
    again = tenant.portal.post(
        f"{URL}{survey.pk}/responses/",
        {"participant": "p-3", "answers": _answers(3)},
        format="json",
    )
    assert again.status_code == 409
    _assert_tallies_match(survey)
    created = _bulk(tenant.portal, survey, 100, 10)
    tokens = created.json()["withdrawal_tokens"]
    for i in (0, 3, 4):  # 0: no age and no site; 3: no age; 4: no site
        token = tokens[i]
        withdrawn = tenant.portal.post(
            f"{URL}{survey.pk}/responses/withdraw/",
            {"participant": f"p-{100 + i}", "withdrawal_token": token},
            format="json",
        )
        assert withdrawn.status_code == 204
    # Withdrawing twice changes nothing.
    tenant.portal.post(
        f"{URL}{survey.pk}/responses/withdraw/",
        {"participant": "p-100", "withdrawal_token": tokens[0]},
        format="json",
    )
    _assert_tallies_match(survey)
    assert tallies.live_counts([other.pk], [])[0] == {other.pk: 0}
    responses, answers = _real_counts(survey)
    assert responses == 53 and answers[survey.questions.get(key="age").pk] < responses


def test_rebuild_recounts_what_was_loaded_outside_the_services(tenant, consultation):
    survey = survey_factory(consultation, questions=_optional_questions())
    assert _bulk(tenant.portal, survey, 0, 12).status_code == 201
    ResponseTally.objects.all().delete()
    assert tallies.live_counts([survey.pk], [])[0] == {survey.pk: 0}
    tallies.rebuild()
    _assert_tallies_match(survey)


def test_concurrent_writers_spread_over_shards_and_sum_correctly(tenant, consultation):
    survey = survey_factory(consultation, questions=_optional_questions())
    question = survey.questions.first()
    for _ in range(50):
        tallies.add(survey.pk, {tallies.SURVEY: 1, question.pk: 2})
    tallies.add(survey.pk, {tallies.SURVEY: -5, question.pk: 0})
    rows = ResponseTally.objects.filter(survey=survey, question_id=tallies.SURVEY)
    assert 1 < rows.count() <= tallies.SHARDS
    responses, answers = tallies.live_counts([survey.pk], [question.pk])
    assert responses == {survey.pk: 45} and answers == {question.pk: 100}


@pytest.mark.parametrize("n", [1, 30])
def test_the_threshold_check_reads_the_tallies_not_the_answers(tenant, consultation, n):
    """POST /analyses/ runs no query over answers (so it does not grow with n)."""
    from django.test.utils import CaptureQueriesContext

    survey = survey_factory(consultation, questions=_optional_questions())
    assert _bulk(tenant.analyst, survey, 0, n).status_code == 201
    with CaptureQueriesContext(connection) as queries:
        response = tenant.analyst.post(
            "/api/v1/analyses/",
            {
                "survey": survey.pk,
                "kind": "count",
                "where": [{"attribute": "sex", "op": "in", "value": ["F"]}],
            },
            format="json",
        )
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert Answer._meta.db_table not in sql
    if n < 10:
        assert response.status_code == 400
        assert "fewer than" in response.json()["detail"]
    else:
        assert response.status_code == 202, response.content


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_on_postgresql_keep_the_tallies_exact() -> None:
    """Single submissions (one CTE statement), bulk batches (COPY) and withdrawals racing
    in threads, each with its own connection as gunicorn's threads have."""
    import threading

    from django.db import connections

    from tests.factories import consultation_factory, tenant_factory

    assert connection.vendor == "postgresql"
    tenant = tenant_factory()
    survey = survey_factory(
        consultation_factory(tenant.organisation), questions=_optional_questions()
    )
    tokens: dict[str, str] = {}
    created = _bulk(tenant.portal, survey, 1000, 20)
    assert created.status_code == 201
    tokens.update((f"p-{1000 + i}", t) for i, t in enumerate(created.json()["withdrawal_tokens"]))
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def work(index: int) -> None:
        try:
            barrier.wait()
            if index < 2:  # bulk batches (COPY)
                _bulk(tenant.analyst, survey, 200 * index, 150)  # > 100: analyst
            elif index < 4:  # single submissions
                for i in range(10):
                    tenant.portal.post(
                        f"{URL}{survey.pk}/responses/",
                        {"participant": f"s-{index}-{i % 7}", "answers": _answers(i)},
                        format="json",
                    )
            else:  # withdrawals
                for i in range(index - 4, 20, 2):
                    ref = f"p-{1000 + i}"
                    tenant.portal.post(
                        f"{URL}{survey.pk}/responses/withdraw/",
                        {"participant": ref, "withdrawal_token": tokens[ref]},
                        format="json",
                    )
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    responses, _ = _real_counts(survey)
    assert responses == 150 + 150 + 2 * 7  # every withdrawal went through
    _assert_tallies_match(survey)
