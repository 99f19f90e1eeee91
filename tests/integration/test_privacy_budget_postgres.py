"""Issue 28: the privacy-budget ledger under concurrency, on the real PostgreSQL of
tests/servers.py, with parallel requests (one database connection and transaction per
thread, as gunicorn workers have).

Run with ``python -m tests.servers -- pytest tests/integration/test_privacy_budget_postgres.py``.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections

from surveys.models import Answer, PrivacyLedger, Response
from tests.factories import Tenant, consultation_factory, survey_factory, tenant_factory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RR = math.log(0.7 / 0.3)
QUESTIONS = [
    {"key": "sex", "type": "binary", "categories": ["F", "M"],
     "mechanism": {"name": "randomised_response", "retain": 0.7}},
    {"key": "smokes", "type": "binary", "categories": ["Y", "N"],
     "mechanism": {"name": "randomised_response", "retain": 0.7}},
]  # fmt: skip
ANSWERS = {"sex": "F", "smokes": "N"}
COST = 2 * RR  # one response to one of these surveys


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


def _surveys(tenant: Tenant, budget: float, count: int) -> tuple[Any, list[Any]]:
    assert connection.vendor == "postgresql", "integration tests need PostgreSQL"
    consultation = consultation_factory(tenant.organisation, privacy_budget=budget)
    surveys = [
        survey_factory(consultation, questions=QUESTIONS, kind="opinion", title=f"wave {i}")
        for i in range(count)
    ]
    return consultation, surveys


def test_surveys_submitted_at_once_for_one_resident_never_pass_the_budget() -> None:
    """Eight surveys, a budget that holds two responses: for each of five residents the
    eight single submissions sent at once store exactly two."""
    tenant = tenant_factory()
    consultation, surveys = _surveys(tenant, budget=2.5 * COST, count=8)
    for resident in range(5):
        participant = f"p-race-{resident}"

        def submit(index: int, participant: str = participant) -> tuple[int, Any]:
            response = tenant.portal.post(
                f"/api/v1/surveys/{surveys[index].pk}/responses/",
                {"participant": participant, "answers": ANSWERS},
                format="json",
            )
            return response.status_code, response.json()

        results = _in_threads(8, submit)
        assert all(isinstance(r, tuple) for r in results), results
        assert Counter(code for code, _ in results) == {201: 2, 409: 6}, results
        assert all(body["code"] == "privacy_budget" for code, body in results if code == 409)
        stored = Response.objects.filter(participant__reference=participant)
        assert stored.count() == 2
        assert Answer.objects.filter(response__in=stored).count() == 4
        ledger = PrivacyLedger.objects.get(consultation=consultation, reference=participant)
        assert ledger.spent == pytest.approx(2 * COST)


def test_bulk_batches_sent_at_once_charge_each_resident_once_within_the_budget() -> None:
    """Four batches of the same 200 residents to four surveys, and single submissions of
    some of them, all at once, under a budget that holds one response each: every
    resident ends with one response and one charge, and refused batches store nothing."""
    tenant = tenant_factory()
    consultation, surveys = _surveys(tenant, budget=1.5 * COST, count=5)
    residents = [f"p-{n:03d}" for n in range(200)]
    items = [{"participant": ref, "answers": ANSWERS} for ref in residents]

    def submit(index: int) -> tuple[str, int]:
        if index < 4:
            # Each batch in its own order: the ledger locks residents in one order anyway.
            batch = items[index * 50 :] + items[: index * 50]
            response = tenant.analyst.post(
                f"/api/v1/surveys/{surveys[index].pk}/responses/bulk/",
                {"responses": batch},
                format="json",
            )
            return "bulk", response.status_code
        response = tenant.portal.post(
            f"/api/v1/surveys/{surveys[4].pk}/responses/",
            {"participant": residents[index * 7 % 200], "answers": ANSWERS},
            format="json",
        )
        return "single", response.status_code

    results = _in_threads(10, submit)
    assert all(isinstance(r, tuple) for r in results), results
    assert {code for _, code in results} <= {201, 409}, results
    per_resident = Counter(
        Response.objects.filter(survey__consultation=consultation).values_list(
            "participant__reference", flat=True
        )
    )
    assert set(per_resident.values()) == {1}, per_resident
    bulk_stored = [i for i, (kind, code) in enumerate(results) if kind == "bulk" and code == 201]
    singles_stored = sum(1 for kind, code in results if kind == "single" and code == 201)
    assert len(bulk_stored) <= 1
    assert len(per_resident) == 200 * len(bulk_stored) + singles_stored
    spent = list(
        PrivacyLedger.objects.filter(consultation=consultation).values_list("spent", flat=True)
    )
    assert len(spent) == len(per_resident)
    assert all(value == pytest.approx(COST) for value in spent)
    for index, survey in enumerate(surveys[:4]):
        stored = Response.objects.filter(survey=survey).count()
        assert stored == (200 if index in bulk_stored else 0)


def test_a_reused_report_is_checked_and_free_on_postgresql() -> None:
    tenant = tenant_factory()
    consultation = consultation_factory(tenant.organisation, privacy_budget=COST)
    first = survey_factory(consultation, questions=QUESTIONS, kind="opinion", title="before")
    again = [{**QUESTIONS[0], "key": "sex_again", "reuse": {"survey": first.pk, "question": "sex"}}]
    second = survey_factory(consultation, questions=again, kind="opinion", title="after")
    url = "/api/v1/surveys/{}/responses/"
    assert (
        tenant.portal.post(
            url.format(first.pk), {"participant": "p-1", "answers": ANSWERS}, format="json"
        ).status_code
        == 201
    )
    differs = tenant.portal.post(
        url.format(second.pk), {"participant": "p-1", "answers": {"sex_again": "M"}}, format="json"
    )
    assert differs.status_code == 409 and differs.json()["code"] == "reused_report_differs"
    same = tenant.portal.post(
        url.format(second.pk), {"participant": "p-1", "answers": {"sex_again": "F"}}, format="json"
    )
    assert same.status_code == 201, same.content  # at the budget already: the reuse is free
    ledger = PrivacyLedger.objects.get(consultation=consultation, reference="p-1")
    assert ledger.spent == pytest.approx(COST)
