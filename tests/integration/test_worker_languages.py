"""A refusal decided on a real Celery worker (which speaks English) is read in the
reader's language: the worker stores the reason as template + parameters."""

from __future__ import annotations

import time

import pytest

from reconstruction.jobs import RUN_ANALYSIS, job_send
from reconstruction.models import AnalysisJob
from surveys.services import response_submit
from tests.factories import consultation_factory, good_answers, survey_factory, tenant_factory
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_refusal_decided_on_the_worker_is_read_in_german_and_polish(
    celery_worker_process: Worker,
) -> None:
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    for index in range(15):
        response_submit(survey=survey, participant=f"p-{index}", answers=good_answers(index))
    # A sample checked against more participants than the worker finds (the request was
    # accepted, then responses were withdrawn before the worker ran it): the job row and
    # its message, as analysis_create leaves them, without the race of a withdrawal.
    job = AnalysisJob.objects.create(
        organisation=tenant.organisation, requested_by="key:test", survey=survey,
        kind="sample", spec={"survey": survey.pk, "kind": "sample", "size": 16, "seed": 3},
    )  # fmt: skip
    job_send(RUN_ANALYSIS, job.pk)
    url = f"/api/v1/analyses/{job.pk}/"
    deadline = time.monotonic() + 60
    while (body := tenant.analyst.get(url).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, body
        time.sleep(0.2)
    # Issue 26: the refusal names the rule and the threshold, never the pool's size (15).
    english = (
        "size: refused by disclosure control: a sample or panel (and each stratum) may take at "
        "most half of the participants estimated to meet its condition, and no group it implies "
        "may be smaller than the threshold of 5; ask for fewer participants or widen the "
        "condition"
    )
    assert (body["status"], body["error"]) == ("refused", english), body
    assert "reconstruction.run_analysis" in celery_worker_process.output()
    german = tenant.analyst.get(url, HTTP_ACCEPT_LANGUAGE="de").json()["error"]
    polish = tenant.analyst.get(url + "?lang=pl").json()["error"]
    for text in (german, polish):
        assert text.startswith("size: ") and " 5" in text and "15" not in text, text
    assert len({english, german, polish}) == 3
    stored = AnalysisJob.objects.get(pk=job.pk).error_message
    assert stored["template"] == "%(field)s: %(problem)s"
    assert "15" not in str(stored["params"]), stored
