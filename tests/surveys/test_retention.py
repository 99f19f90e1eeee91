"""Retention and purge (api.md, "Retention"): `retention_days`, `POST /surveys/{id}/purge/`,
the beat task, 410 for new analyses and reports, the admin's action with confirmation.

SQLite, tasks in-process. The same purge on PostgreSQL with a real worker:
tests/integration/test_retention_postgres.py.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from consultations.models import AuditEvent
from reconstruction.models import AnalysisJob
from surveys import retention, tasks
from surveys.models import Answer, Participant, Response, ResponseTally, Survey
from surveys.services import response_submit, survey_close
from tests.factories import good_answers, survey_factory
from tests.reconstruction.data import distorted_consultation

pytestmark = pytest.mark.django_db

URL = "/api/v1/surveys/"


def _purge(client: Any, survey: Survey) -> Any:
    return client.post(f"{URL}{survey.pk}/purge/", format="json")


def _counts(survey: Survey) -> tuple[int, int, int]:
    return (
        Response.objects.filter(survey=survey).count(),
        Answer.objects.filter(response__survey=survey).count(),
        ResponseTally.objects.filter(survey=survey).count(),
    )


# --------------------------------------------------------------------------- retention_days


def test_retention_days_is_set_at_creation_changed_and_cleared(tenant, consultation):
    body = {"consultation": consultation.pk, "kind": "opinion", "title": "T", "questions": []}
    created = tenant.analyst.post(URL, {**body, "retention_days": 30}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["retention_days"] == 30
    assert created.json()["purged_at"] is None
    pk = created.json()["id"]
    assert Survey.objects.get(pk=pk).retention_days == 30
    changed = tenant.analyst.patch(f"{URL}{pk}/", {"retention_days": 365}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["retention_days"] == 365
    renamed = tenant.analyst.patch(f"{URL}{pk}/", {"title": "U"}, format="json")
    assert renamed.json()["retention_days"] == 365  # not named: unchanged
    cleared = tenant.analyst.patch(f"{URL}{pk}/", {"retention_days": None}, format="json")
    assert cleared.json()["retention_days"] is None
    assert Survey.objects.get(pk=pk).retention_days is None
    event = AuditEvent.objects.filter(action="survey.update", target=str(pk)).first()
    assert event is not None and "retention_days" in event.details["fields"]


def test_retention_days_may_change_on_an_open_survey(tenant, survey):
    response = tenant.analyst.patch(f"{URL}{survey.pk}/", {"retention_days": 7}, format="json")
    assert response.status_code == 200, response.json()
    assert Survey.objects.get(pk=survey.pk).retention_days == 7


@pytest.mark.parametrize("bad", [0, -1, 1.5, "30", True, 36_501, [30]])
def test_bad_retention_days_is_a_400_naming_it_and_nothing_is_stored(tenant, consultation, bad):
    body = {"consultation": consultation.pk, "kind": "opinion", "title": "T", "questions": []}
    response = tenant.analyst.post(URL, {**body, "retention_days": bad}, format="json")
    assert response.status_code == 400, response.json()
    assert "retention_days" in response.json()["errors"]
    assert not Survey.objects.exists()
    survey = survey_factory(consultation, kind="opinion", open_it=False)
    patched = tenant.analyst.patch(f"{URL}{survey.pk}/", {"retention_days": bad}, format="json")
    assert patched.status_code == 400
    assert "retention_days" in patched.json()["errors"]
    assert Survey.objects.get(pk=survey.pk).retention_days is None


# --------------------------------------------------------------------------- purge endpoint


def _closed_with_responses(consultation, n: int = 3, kind: str = "profile") -> tuple[Survey, list]:
    survey = survey_factory(consultation, kind=kind)
    tokens = [
        response_submit(survey=survey, participant=f"p-{i}", answers=good_answers(i))
        for i in range(n)
    ]
    return survey_close(survey=survey), tokens


def test_purge_of_an_open_or_draft_survey_is_a_409_and_deletes_nothing(tenant, consultation):
    survey = survey_factory(consultation)
    response_submit(survey=survey, participant="p-1", answers=good_answers())
    before = _counts(survey)
    response = _purge(tenant.analyst, survey)
    assert response.status_code == 409, response.json()
    assert "close it" in response.json()["detail"]
    assert "status" in response.json()["errors"]
    assert _counts(survey) == before
    assert Survey.objects.get(pk=survey.pk).purged_at is None
    draft = survey_factory(consultation, kind="opinion", open_it=False)
    assert _purge(tenant.analyst, draft).status_code == 409
    assert not AuditEvent.objects.filter(action="survey.purge").exists()


def test_purge_is_for_analysts_of_the_survey_s_organisation(tenant, other_tenant, consultation):
    survey, _ = _closed_with_responses(consultation)
    before = _counts(survey)
    assert _purge(tenant.portal, survey).status_code == 403
    assert _purge(other_tenant.analyst, survey).status_code == 404
    assert _purge(tenant.analyst.__class__(), survey).status_code == 401
    assert _counts(survey) == before


def test_purge_deletes_answers_responses_tallies_and_orphan_references(tenant, consultation):
    profile, _ = _closed_with_responses(consultation, n=3)
    opinion = survey_factory(consultation, kind="opinion")
    response_submit(survey=opinion, participant="p-0", answers=good_answers(0))
    assert _counts(profile)[0] == 3 and _counts(profile)[1] > 0 and _counts(profile)[2] > 0
    response = _purge(tenant.analyst, profile)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["purged_at"] is not None
    assert body["response_count"] == 0
    assert body["questions"]  # the scheme stays
    assert _counts(profile) == (0, 0, 0)
    # p-0 still answers the opinion survey: kept; p-1 and p-2 answer nothing any more.
    references = set(
        Participant.objects.filter(consultation=consultation).values_list("reference", flat=True)
    )
    assert references == {"p-0"}
    assert _counts(opinion)[0] == 1 and _counts(opinion)[1] > 0  # another survey: untouched
    event = AuditEvent.objects.get(action="survey.purge")
    assert event.target == str(profile.pk)
    assert event.actor.startswith("key:")
    assert event.details["reason"] == "request"
    assert event.details["responses"] == 3
    assert event.details["participants"] == 2
    assert event.details["answers"] == 3 * 8


def test_a_second_purge_changes_nothing(tenant, consultation):
    survey, _ = _closed_with_responses(consultation)
    first = _purge(tenant.analyst, survey).json()["purged_at"]
    again = _purge(tenant.analyst, survey)
    assert again.status_code == 200
    assert again.json()["purged_at"] == first
    assert AuditEvent.objects.filter(action="survey.purge").count() == 1


def test_withdrawal_tokens_of_purged_responses_answer_like_unknown_ones(tenant, consultation):
    survey, tokens = _closed_with_responses(consultation, n=2)
    withdraw = f"{URL}{survey.pk}/responses/withdraw/"
    unknown = tenant.portal.post(
        withdraw, {"participant": "p-nobody", "withdrawal_token": "x" * 43}, format="json"
    )
    assert unknown.status_code == 404
    assert _purge(tenant.analyst, survey).status_code == 200
    purged = tenant.portal.post(
        withdraw, {"participant": "p-0", "withdrawal_token": tokens[0]}, format="json"
    )
    assert purged.status_code == 404
    assert purged.json() == unknown.json()


# --------------------------------------------------------------------------- 410 afterwards


@pytest.fixture
def simulated(tenant):
    data = distorted_consultation(tenant.organisation, n=300, seed=11)
    survey_close(survey=data.profile)
    survey_close(survey=data.opinion)
    return data


def _analysis(client: Any, capture: Any, body: dict[str, Any]) -> Any:
    with capture(execute=True):
        return client.post("/api/v1/analyses/", body, format="json")


def test_after_a_purge_new_analyses_and_reports_get_410_naming_the_date(
    tenant, simulated, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    profile, opinion = simulated.profile, simulated.opinion
    before = _analysis(
        tenant.analyst, capture, {"survey": profile.pk, "kind": "distribution", "attribute": "sex"}
    )
    assert before.status_code == 202, before.json()
    made = tenant.analyst.get(before.json()["url"]).json()
    assert made["status"] == "succeeded", made
    with capture(execute=True):
        report = tenant.analyst.post(f"/api/v1/surveys/{profile.pk}/reports/", format="json")
    assert report.status_code == 202, report.json()
    download = f"/api/v1/reports/{report.json()['id']}/download/?format=csv"
    csv_before = tenant.analyst.get(download)
    assert csv_before.status_code == 200
    assert _purge(tenant.analyst, profile).status_code == 200
    date = Survey.objects.get(pk=profile.pk).purged_at.date().isoformat()

    for body in (
        {"survey": profile.pk, "kind": "distribution", "attribute": "sex"},
        {"survey": profile.pk, "kind": "count", "where": [
            {"attribute": "sex", "op": "in", "value": ["F"]}]},
        # joined through the profile survey from an opinion survey
        {"survey": opinion.pk, "kind": "count", "where": [
            {"attribute": "sex", "op": "in", "value": ["F"]},
            {"attribute": "site", "op": "in", "value": ["A", "B"]}]},
    ):  # fmt: skip
        refused = _analysis(tenant.analyst, capture, body)
        assert refused.status_code == 410, refused.json()
        assert date in refused.json()["detail"]
        assert "purged" in refused.json()["detail"]
    report = tenant.analyst.post(f"/api/v1/surveys/{profile.pk}/reports/", format="json")
    assert report.status_code == 410, report.json()
    assert date in report.json()["detail"]
    # The opinion survey's own answers are still there.
    own = _analysis(
        tenant.analyst, capture, {"survey": opinion.pk, "kind": "distribution", "attribute": "site"}
    )
    assert own.status_code == 202, own.json()
    # What was made before stays readable, unchanged.
    assert tenant.analyst.get(before.json()["url"]).json() == made
    csv_after = tenant.analyst.get(download)
    assert csv_after.status_code == 200 and csv_after.content == csv_before.content


def test_an_analysis_queued_before_the_purge_fails_naming_it(
    tenant, simulated, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        queued = tenant.analyst.post(
            "/api/v1/analyses/",
            {"survey": simulated.profile.pk, "kind": "distribution", "attribute": "sex"},
            format="json",
        )
    assert queued.status_code == 202
    retention.survey_purge(survey=simulated.profile, actor="tests")
    for callback in callbacks:
        callback()
    job = AnalysisJob.objects.get(pk=queued.json()["id"])
    assert job.status == "failed"
    assert "purged" in job.error


def test_a_kind_may_name_further_surveys_it_reads(tenant, simulated):
    """A kind whose request reads another survey (a change's ``after``) names it in
    ``other_surveys``; validate_request refuses it once that survey is purged."""
    from reconstruction import pipeline
    from reconstruction.kinds.base import KindRequest

    retention.survey_purge(survey=simulated.opinion, actor="tests")

    class Reads(KindRequest):
        def other_surveys(self) -> tuple[int, ...]:
            return (simulated.opinion.pk,)

    original = pipeline.resolve

    def resolve(survey: Any, spec: Any) -> Any:
        request = original(survey, spec)
        return request.__class__(**{**request.__dict__, "params": Reads(kind="distribution")})

    spec = {"kind": "distribution", "attribute": "sex"}
    pipeline.validate_request(simulated.profile, spec)  # nothing purged that it reads
    pipeline.resolve = resolve  # type: ignore[assignment]
    try:
        with pytest.raises(retention.SurveyPurged, match="purged"):
            pipeline.validate_request(simulated.profile, spec)
    finally:
        pipeline.resolve = original  # type: ignore[assignment]


# --------------------------------------------------------------------------- beat task


def test_the_beat_task_purges_surveys_whose_retention_has_passed(tenant, consultation):
    due, _ = _closed_with_responses(consultation, n=2)
    later = survey_factory(consultation, kind="opinion")
    response_submit(survey=later, participant="p-0", answers=good_answers())
    later = survey_close(survey=later)
    kept = survey_factory(consultation, kind="opinion")
    response_submit(survey=kept, participant="p-1", answers=good_answers())
    kept = survey_close(survey=kept)
    still_open = survey_factory(consultation, kind="opinion")
    response_submit(survey=still_open, participant="p-2", answers=good_answers())
    now = timezone.now()
    Survey.objects.filter(pk=due.pk).update(retention_days=30, closed_at=now - dt.timedelta(31))
    Survey.objects.filter(pk=later.pk).update(retention_days=30, closed_at=now - dt.timedelta(29))
    Survey.objects.filter(pk=kept.pk).update(closed_at=now - dt.timedelta(3000))
    Survey.objects.filter(pk=still_open.pk).update(retention_days=1)

    assert tasks.purge_expired_surveys.delay().get() == 1
    assert Survey.objects.get(pk=due.pk).purged_at is not None
    assert _counts(due) == (0, 0, 0)
    for survey in (later, kept, still_open):
        assert Survey.objects.get(pk=survey.pk).purged_at is None
        assert _counts(survey)[0] == 1
    event = AuditEvent.objects.get(action="survey.purge")
    assert (event.actor, event.details["reason"], event.details["retention_days"]) == (
        "retention",
        "retention",
        30,
    )
    assert tasks.purge_expired_surveys.delay().get() == 0  # nothing left that is due


def test_the_purge_task_is_on_the_beat_schedule_in_the_ingest_lane(settings):
    from config.celery import app

    name = tasks.purge_expired_surveys.name
    entries = [e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == name]
    assert len(entries) == 1 and float(entries[0]["schedule"]) > 0
    assert settings.CELERY_TASK_ROUTES[name] == {"queue": "ingest"}
    assert name in app.tasks


def test_a_purge_is_one_transaction(tenant, consultation, monkeypatch):
    """A failure after the answers were deleted leaves everything as it was."""
    survey, _ = _closed_with_responses(consultation)
    before = _counts(survey)

    def fail(**kwargs: Any) -> None:
        raise RuntimeError("audit store down")

    monkeypatch.setattr(retention, "audit_record", fail)
    with pytest.raises(RuntimeError):
        retention.survey_purge(survey=survey, actor="tests")
    assert _counts(survey) == before
    assert Survey.objects.get(pk=survey.pk).purged_at is None
    assert connection.in_atomic_block  # the test's own transaction, still usable


# --------------------------------------------------------------------------- admin


def test_the_admin_action_asks_for_confirmation_then_purges(client, tenant, consultation):
    survey, _ = _closed_with_responses(consultation)
    still_open = survey_factory(consultation, kind="opinion")
    User.objects.create_superuser("organiser", "organiser@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    before = _counts(survey)
    form = {"action": "purge_surveys", "_selected_action": [survey.pk, still_open.pk]}
    page = client.post("/admin/surveys/survey/", form)
    assert page.status_code == 200
    text = page.content.decode()
    assert "3 responses will be deleted" in text
    assert "cannot be purged" in text
    assert _counts(survey) == before  # nothing yet
    done = client.post("/admin/surveys/survey/", {**form, "confirm": "yes"}, follow=True)
    assert done.status_code == 200
    assert Survey.objects.get(pk=survey.pk).purged_at is not None
    assert _counts(survey) == (0, 0, 0)
    assert Survey.objects.get(pk=still_open.pk).purged_at is None
    assert "close it before purging" in done.content.decode()
    event = AuditEvent.objects.get(action="survey.purge")
    assert event.actor == "staff:organiser"


def test_the_admin_form_sets_retention_days(client, tenant, consultation):
    survey = survey_factory(consultation, kind="opinion")
    User.objects.create_superuser("organiser", "organiser@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    page = client.get(f"/admin/surveys/survey/{survey.pk}/change/")
    assert page.status_code == 200
    assert 'name="retention_days"' in page.content.decode()


def test_a_change_whose_after_survey_was_purged_gets_410(
    tenant, consultation, django_capture_on_commit_callbacks
):
    """The change kind reads its ``after`` survey too (other_surveys): purging that
    survey refuses new changes with 410, while the before survey is untouched."""
    rr = {"name": "randomised_response", "retain": 0.8}
    questions = [{"key": "support", "type": "nominal", "categories": ["yes", "no", "unsure"],
                  "mechanism": rr}]  # fmt: skip
    before = survey_factory(consultation, kind="opinion", questions=questions, title="Before")
    after = survey_factory(consultation, kind="opinion", questions=questions, title="After")
    for i in range(40):
        answer = {"support": ["yes", "no", "unsure"][i % 3]}
        response_submit(survey=before, participant=f"p-{i}", answers=answer)
        response_submit(survey=after, participant=f"p-{i}", answers=answer)
    survey_close(survey=after)
    body = {"survey": before.pk, "kind": "change", "after": after.pk, "attribute": "support"}
    with django_capture_on_commit_callbacks(execute=False):
        assert _analysis_post(tenant.analyst, body).status_code == 202
    assert _purge(tenant.analyst, after).status_code == 200
    refused = _analysis_post(tenant.analyst, body)
    assert refused.status_code == 410, refused.json()
    assert f"survey {after.pk}" in refused.json()["detail"]
    assert Survey.objects.get(pk=before.pk).purged_at is None


def _analysis_post(client: Any, body: dict[str, Any]) -> Any:
    return client.post("/api/v1/analyses/", body, format="json")


def test_a_purge_is_announced_to_webhooks_listening_for_it(
    tenant, consultation, django_capture_on_commit_callbacks
):
    from webhooks.models import Delivery, Webhook

    url = "https://93.184.216.34/hook"
    listening = Webhook.objects.create(
        organisation=tenant.organisation, url=url, events=["survey.purged"], secret="s" * 64
    )
    Webhook.objects.create(
        organisation=tenant.organisation, url=url, events=["report.finished"], secret="s" * 64
    )
    survey, _ = _closed_with_responses(consultation)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert _purge(tenant.analyst, survey).status_code == 200
    delivery = Delivery.objects.get()  # only the webhook that listens for it
    assert delivery.webhook == listening and delivery.event == "survey.purged"
    purged_at = Survey.objects.get(pk=survey.pk).purged_at
    assert delivery.payload == {
        "event": "survey.purged",
        "data": {
            "survey": survey.pk,
            "url": f"/api/v1/surveys/{survey.pk}/",
            "purged_at": purged_at.isoformat(),
            "reason": "request",
        },
    }
    assert len(queued) == 1  # sent once the purge commits
    with django_capture_on_commit_callbacks(execute=False):
        assert _purge(tenant.analyst, survey).status_code == 200  # again: nothing new
    assert Delivery.objects.count() == 1
    created = tenant.analyst.post(
        "/api/v1/webhooks/", {"url": url, "events": ["survey.purged"]}, format="json"
    )
    assert created.status_code == 201, created.json()  # the event name is known
    assert created.json()["events"] == ["survey.purged"]
