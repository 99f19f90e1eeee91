"""An analysis's query audit holds its survey's row while it judges and stores the
result (reconstruction/auditing.py), so two audits of a survey run one after the other.
It must not hold up the survey's submissions: each bulk submission re-reads its survey
``FOR KEY SHARE`` (surveys/ingest.py), which a ``FOR UPDATE`` lock blocks for the whole
audit, and the ingest beside a stream of analyses slowed down (issue 30, item 5)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from reconstruction import auditing
from tests.factories import consultation_factory, good_answers, survey_factory, tenant_factory

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

API = "/api/v1/"


def test_a_bulk_submission_goes_through_while_an_audit_holds_the_survey() -> None:
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation, title="Audit lock"))
    outcome: dict[str, object] = {}

    def submit() -> None:
        try:
            with connection.cursor() as cursor:  # this thread's own connection
                cursor.execute("SET lock_timeout = '10s'")
            created = tenant.analyst.post(
                f"{API}surveys/{survey.pk}/responses/bulk/",
                {
                    "responses": [
                        {"participant": f"l-{i}", "answers": good_answers(i)} for i in range(20)
                    ]
                },
                format="json",
            )
            outcome["status"] = created.status_code
        except Exception as exc:  # a lock timeout ends up here or as a 5xx
            outcome["error"] = repr(exc)
        finally:
            connection.close()

    with transaction.atomic():
        auditing.lock_survey(survey.pk)
        submitter = threading.Thread(target=submit)
        submitter.start()
        submitter.join(timeout=30)
        finished_while_held = not submitter.is_alive()
    submitter.join(timeout=30)
    assert finished_while_held, "the submission waited for the audit's lock"
    assert outcome.get("status") == 201, outcome


def test_two_audits_of_a_survey_still_run_one_after_the_other() -> None:
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation, title="Audits"))
    outcome: dict[str, object] = {}

    def second_audit() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '1s'")
            with transaction.atomic():
                auditing.lock_survey(survey.pk)
            outcome["locked"] = True
        except Exception as exc:
            outcome["error"] = type(exc).__name__
        finally:
            connection.close()

    with transaction.atomic():
        auditing.lock_survey(survey.pk)
        other = threading.Thread(target=second_audit)
        other.start()
        other.join(timeout=30)
    assert "locked" not in outcome and outcome.get("error") == "OperationalError", outcome
