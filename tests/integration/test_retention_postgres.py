"""Retention on the real components (issue 28 item 4): PostgreSQL (its statement-level
reference triggers on answers, responses and participants), Redis, a Celery worker and a
real ``celery beat`` that queues ``surveys.purge_expired_surveys`` to the ``ingest`` lane.

The waits are on events (the survey's ``purged_at``) with a ceiling that only catches a
hang; nothing asserts how long anything took.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from consultations.models import AuditEvent
from surveys.models import Answer, Participant, Response, ResponseTally, Survey
from surveys.services import survey_close
from tests.factories import consultation_factory, good_answers, survey_factory, tenant_factory
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

API = "/api/v1/"
REPO = Path(__file__).resolve().parents[2]


def _bulk(client, survey: Survey, first: int, count: int, answers=good_answers) -> list[str]:
    created = client.post(
        f"{API}surveys/{survey.pk}/responses/bulk/",
        {
            "responses": [
                {"participant": f"r-{i}", "answers": answers(i)}
                for i in range(first, first + count)
            ]
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    return list(created.json()["withdrawal_tokens"])


def _counts(survey: Survey) -> tuple[int, int, int]:
    return (
        Response.objects.filter(survey=survey).count(),
        Answer.objects.filter(response__survey=survey).count(),
        ResponseTally.objects.filter(survey=survey).count(),
    )


def _beat(workdir: Path) -> subprocess.Popen[bytes]:
    """A real ``celery beat`` whose purge entry comes round every second."""
    log = workdir / f"beat-{time.monotonic_ns()}.log"
    env = {**os.environ, "RETENTION_PURGE_SECONDS": "1"}
    with open(log, "ab") as out:
        return subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO",
                "-s", str(workdir / f"beat-schedule-{time.monotonic_ns()}"),
            ],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def test_beat_purges_a_survey_whose_retention_passed_on_postgresql(
    celery_worker_process: Worker, worker_workdir: Path
) -> None:
    tenant = tenant_factory()
    consultation = consultation_factory(tenant.organisation, title="Register")
    profile = survey_factory(consultation)
    tokens = _bulk(tenant.analyst, profile, 0, 1000)
    _bulk(tenant.analyst, profile, 1000, 1000)
    support = {"key": "support", "type": "nominal", "categories": ["yes", "no", "unsure"],
               "mechanism": {"name": "randomised_response", "retain": 0.8}}  # fmt: skip
    opinion = survey_factory(consultation, kind="opinion", questions=[support])
    _bulk(tenant.analyst, opinion, 0, 300, lambda i: {"support": ["yes", "no", "unsure"][i % 3]})
    # r-0 .. r-299 answer both
    kept = survey_factory(consultation, kind="opinion", title="Kept")
    _bulk(tenant.analyst, kept, 5000, 50)
    for survey in (profile, kept):
        survey_close(survey=survey)
    closed = timezone.now() - timedelta(days=8)
    Survey.objects.filter(pk=profile.pk).update(retention_days=7, closed_at=closed)
    Survey.objects.filter(pk=kept.pk).update(retention_days=9, closed_at=closed)
    assert _counts(profile)[0] == 2000

    beat = _beat(worker_workdir)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if Survey.objects.get(pk=profile.pk).purged_at is not None:
                break
            time.sleep(0.5)
    finally:
        os.killpg(beat.pid, signal.SIGTERM)
        beat.wait(timeout=20)
    assert Survey.objects.get(pk=profile.pk).purged_at is not None, "beat never purged it"
    assert "surveys.purge_expired_surveys" in celery_worker_process.output()

    assert _counts(profile) == (0, 0, 0)
    assert Survey.objects.get(pk=kept.pk).purged_at is None  # 9 days: not yet
    assert _counts(kept)[0] == 50 and _counts(opinion)[0] == 300
    # references still answering the opinion survey (r-0..r-299) and the kept one stay
    assert Participant.objects.filter(consultation=consultation).count() == 350
    event = AuditEvent.objects.get(action="survey.purge", target=str(profile.pk))
    assert event.actor == "retention"
    assert (event.details["responses"], event.details["participants"]) == (2000, 1700)

    withdraw = f"{API}surveys/{profile.pk}/responses/withdraw/"
    purged = tenant.portal.post(
        withdraw, {"participant": "r-0", "withdrawal_token": tokens[0]}, format="json"
    )
    unknown = tenant.portal.post(
        withdraw, {"participant": "r-nobody", "withdrawal_token": tokens[0]}, format="json"
    )
    assert purged.status_code == unknown.status_code == 404
    assert purged.json() == unknown.json()

    date = Survey.objects.get(pk=profile.pk).purged_at.date().isoformat()
    joined = tenant.analyst.post(
        f"{API}analyses/",
        {
            "survey": opinion.pk,
            "kind": "count",
            "where": [
                {"attribute": "sex", "op": "in", "value": ["F"]},  # the purged profile's
                {"attribute": "support", "op": "in", "value": ["yes"]},
            ],
        },
        format="json",
    )
    assert joined.status_code == 410, joined.content
    assert date in joined.json()["detail"]


def test_the_purge_endpoint_on_postgresql_is_all_or_nothing(
    celery_worker_process: Worker,
) -> None:
    tenant = tenant_factory()
    consultation = consultation_factory(tenant.organisation, title="Now")
    survey = survey_factory(consultation)
    _bulk(tenant.analyst, survey, 0, 500)
    assert tenant.analyst.post(f"{API}surveys/{survey.pk}/purge/").status_code == 409
    assert _counts(survey)[0] == 500
    survey_close(survey=survey)
    purged = tenant.analyst.post(f"{API}surveys/{survey.pk}/purge/")
    assert purged.status_code == 200, purged.content
    assert purged.json()["purged_at"] is not None
    assert _counts(survey) == (0, 0, 0)
    assert not Participant.objects.filter(consultation=consultation).exists()
    report = tenant.analyst.post(f"{API}surveys/{survey.pk}/reports/")
    assert report.status_code == 410
    export = tenant.analyst.get(f"{API}surveys/{survey.pk}/export/")
    assert export.status_code == 410


def test_the_researcher_export_on_postgresql(celery_worker_process: Worker, monkeypatch) -> None:
    """The export's SQL on PostgreSQL: ids fetched in parts, answers read CHUNK responses
    at a time, the exact attributes' smallest cell by GROUP BY."""
    import csv
    import io
    import zipfile

    import pyarrow.parquet as pq

    from surveys import export

    monkeypatch.setattr(export, "CHUNK", 300)  # 7 chunks of the 2,000 responses
    tenant = tenant_factory()
    consultation = consultation_factory(tenant.organisation, title="Export")
    survey = survey_factory(consultation)
    _bulk(tenant.analyst, survey, 0, 1000)
    _bulk(tenant.analyst, survey, 1000, 1000)
    survey_close(survey=survey)
    url = f"{API}surveys/{survey.pk}/export/"

    def rows(response) -> list[dict[str, str]]:
        assert response.status_code == 200, response.content[:300]
        archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
        return list(csv.DictReader(io.StringIO(archive.read("data.csv").decode())))

    first = rows(tenant.analyst.get(url, {"exact": "tenure"}))  # own / rent: 1000 each
    assert len(first) == 2000 and len({r["participant"] for r in first}) == 2000
    assert {row["tenure"] for row in first} == {"own", "rent"}
    second = rows(tenant.analyst.get(url))
    assert "tenure" not in second[0]
    assert not {r["participant"] for r in first} & {r["participant"] for r in second}
    sexes = sorted(r["sex"] for r in first)
    assert sexes == sorted(r["sex"] for r in second)
    parquet = tenant.analyst.get(url, {"format": "parquet"})
    assert parquet.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(parquet.streaming_content)))
    table = pq.read_table(io.BytesIO(archive.read("data.parquet")))
    assert table.num_rows == 2000 and sorted(table.column("sex").to_pylist()) == sexes
    small = tenant.analyst.get(url, {"exact": "tenure"})  # the same cells pass again
    assert small.status_code == 200
    Survey.objects.filter(pk=survey.pk).update(status="open")
    assert tenant.analyst.get(url, {"exact": "tenure"}).status_code == 409
