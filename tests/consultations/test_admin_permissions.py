"""Staff permissions (issue 27): every custom admin view and download checks the model
permission as well as the organisation.

A staff member of Leeds with no model permissions cannot ask for analyses or panels,
download reports, report or analysis exports or a panel's probabilities.csv, see the
reports list, or run the surveys' and keys' actions; with the matching permissions the
same member can. Fails on the old code (every download answered 200, the analysis form
queued a job, the survey actions queued reports)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from consultations.models import ApiKey, StaffMembership
from reconstruction.models import AnalysisJob, Report
from tests.consultations.test_admin_scoping import council

pytestmark = pytest.mark.django_db


def staff(organisation, *codenames: str) -> Client:
    user = get_user_model().objects.create_user(
        f"officer-{len(codenames)}-{get_user_model().objects.count()}", password="pw-123456789"
    )
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    StaffMembership.objects.create(user=user, organisation=organisation)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def leeds(db):
    world = council("leeds")
    world["panel"] = AnalysisJob.objects.create(
        organisation=world["organisation"],
        survey=world["survey"],
        requested_by="tests",
        status="succeeded",
        kind="panel",
        spec={"size": 2},
        result={"participants": ["leeds-p0"]},
        attachment="participant,selection_probability,selected,reserve_rank\nleeds-p0,1.0,1,\n",
    )
    world["report"].result = {"survey": world["survey"].pk, "questions": []}
    world["report"].save()
    world["count"] = AnalysisJob.objects.filter(kind="count", survey=world["survey"]).get()
    return world


def downloads(world) -> list[str]:
    report, count, panel = world["report"].pk, world["count"].pk, world["panel"].pk
    return [
        reverse("admin-report-download", args=[report]) + "?format=html",
        reverse("admin-report-download", args=[report]) + "?format=csv",
        reverse("admin-report-export", args=[report]) + "?format=xlsx",
        reverse("admin-analysis-export", args=[count]) + "?format=csv",
        reverse("admin-panel-probabilities", args=[panel]),
    ]


def test_a_member_without_permissions_can_download_nothing(leeds):
    client = staff(leeds["organisation"])
    for url in downloads(leeds):
        assert client.get(url).status_code == 403, url
    assert client.get(reverse("admin:reconstruction_report_changelist")).status_code == 403


def test_a_member_with_the_view_permissions_downloads(leeds):
    client = staff(leeds["organisation"], "view_report", "view_analysisjob")
    for url in downloads(leeds):
        assert client.get(url).status_code == 200, url
    assert client.get(reverse("admin:reconstruction_report_changelist")).status_code == 200


def test_report_view_alone_does_not_open_participant_lists(leeds):
    client = staff(leeds["organisation"], "view_report")
    panel = reverse("admin-panel-probabilities", args=[leeds["panel"].pk])
    assert client.get(panel).status_code == 403


def test_analyses_and_panels_need_the_add_permission(leeds):
    survey = leeds["survey"].pk
    before = AnalysisJob.objects.count()
    viewer = staff(leeds["organisation"], "view_analysisjob")
    add = reverse("admin:reconstruction_analysisjob_add")
    panel = reverse("admin:reconstruction_analysisjob_panel")
    assert viewer.get(add, {"survey": survey}).status_code == 403
    assert viewer.post(f"{add}?survey={survey}", {"kind": "count"}).status_code == 403
    assert viewer.get(panel, {"survey": survey}).status_code == 403
    assert viewer.post(f"{panel}?survey={survey}", {"size": 2}).status_code == 403
    assert AnalysisJob.objects.count() == before
    adder = staff(leeds["organisation"], "view_analysisjob", "add_analysisjob")
    assert adder.get(add, {"survey": survey}).status_code == 200
    assert adder.get(panel, {"survey": survey}).status_code == 200


def test_survey_actions_need_their_permissions(leeds):
    survey = leeds["survey"]
    changelist = reverse("admin:surveys_survey_changelist")
    viewer = staff(leeds["organisation"], "view_survey")
    page = viewer.get(changelist)
    assert page.status_code == 200
    for action in ("open_surveys", "close_surveys", "start_report"):
        assert f'value="{action}"' not in page.content.decode()
    reports = Report.objects.count()
    viewer.post(changelist, {"action": "start_report", "_selected_action": [survey.pk]})
    viewer.post(changelist, {"action": "close_surveys", "_selected_action": [survey.pk]})
    assert Report.objects.count() == reports
    survey.refresh_from_db()
    assert survey.status == "open"

    allowed = staff(leeds["organisation"], "view_survey", "change_survey", "add_report")
    page = allowed.get(changelist).content.decode()
    for action in ("open_surveys", "close_surveys", "start_report"):
        assert f'value="{action}"' in page


def test_revoking_keys_needs_the_change_permission(leeds):
    key = leeds["key"]
    viewer = staff(leeds["organisation"], "view_apikey")
    changelist = reverse("admin:consultations_apikey_changelist")
    assert 'value="revoke"' not in viewer.get(changelist).content.decode()
    viewer.post(changelist, {"action": "revoke", "_selected_action": [key.pk]})
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
