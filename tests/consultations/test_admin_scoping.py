"""Organisations in the admin: a staff user sees and changes only their organisations' objects.

Two councils with one of everything; a staff user of the first, with every admin
permission, must never see, change, act on or download the second's objects, on any admin
page. A superuser sees both.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from consultations.admin_scoping import OrganisationScopedAdmin, organisation_path
from consultations.models import ApiKey, Organisation, StaffMembership
from consultations.services import api_key_create, organisation_create, portal_origin_add
from reconstruction.models import AggregateReconstruction, AnalysisJob, Report
from surveys.models import Response, Survey
from surveys.services import calibration_upload, responses_submit_bulk
from tests.factories import consultation_factory, good_answers, survey_factory
from webhooks.models import Delivery, Webhook


def council(slug: str) -> dict:
    organisation = organisation_create(slug=slug, name=f"{slug.title()} Council")
    consultation = consultation_factory(organisation, title=f"{slug} consultation")
    survey = survey_factory(consultation, title=f"{slug} survey")
    responses_submit_bulk(
        survey=survey,
        responses=[{"participant": f"{slug}-p{i}", "answers": good_answers(i)} for i in range(3)],
    )
    calibration_upload(survey=survey, question="skips_class", pairs=[["never", "often"]])
    key = api_key_create(organisation=organisation, role="portal", name=f"{slug} key").api_key
    portal_origin_add(organisation=organisation, origin=f"https://www.{slug}.gov.uk")
    common = {"organisation": organisation, "requested_by": "tests", "status": "succeeded"}
    AnalysisJob.objects.create(
        **common, survey=survey, kind="count", spec={"where": []}, result={"estimate": 1}
    )
    AggregateReconstruction.objects.create(
        **common, counts=[1, 2], channel=[[1, 0], [0, 1]], result={"counts": [1, 2]}
    )
    report = Report.objects.create(
        **common, survey=survey, html=f"<p>{slug} report</p>", csv=f"{slug},1", result={"s": slug}
    )
    webhook = Webhook.objects.create(
        organisation=organisation,
        url=f"https://hooks.{slug}.example/",
        events=["report.finished"],
        secret="s" * 64,
    )
    Delivery.objects.create(webhook=webhook, event="report.finished", payload={"job": 1})
    return {
        "organisation": organisation,
        "survey": survey,
        "key": key,
        "report": report,
        "response": Response.objects.filter(survey=survey).first(),
    }


@pytest.fixture
def councils(db):
    return council("leeds"), council("york")


@pytest.fixture
def leeds_staff(councils) -> Client:
    user = get_user_model().objects.create_user("leeds-officer", password="pw-123456789")
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.all())
    StaffMembership.objects.create(user=user, organisation=councils[0]["organisation"])
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def superuser(db) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.invalid", "pw-12345")
    client = Client()
    client.force_login(user)
    return client


def scoped_models() -> list[type]:
    return [
        model
        for model in apps.get_models()
        if admin.site.is_registered(model) and organisation_path(model) is not None
    ]


def organisation_of(obj) -> int:
    path = organisation_path(type(obj))
    if path == "":
        return obj.pk
    return type(obj)._default_manager.filter(pk=obj.pk).values_list(f"{path}__id", flat=True)[0]


def url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_every_admin_page_with_an_organisation_is_scoped() -> None:
    names = {m._meta.label for m in scoped_models()}
    expected = {
        "consultations.Organisation",
        "consultations.ApiKey",
        "consultations.Consultation",
        "consultations.AuditEvent",
        "surveys.Survey",
        "surveys.Response",
        "surveys.Participant",
        "surveys.CalibrationPair",
        "reconstruction.AnalysisJob",
        "reconstruction.AggregateReconstruction",
        "reconstruction.Report",
        "webhooks.Webhook",
        "webhooks.Delivery",
    }
    assert expected <= names
    for model in scoped_models():
        assert isinstance(admin.site.get_model_admin(model), OrganisationScopedAdmin), model


def test_lists_and_change_pages_show_only_the_staff_users_organisation(
    councils, leeds_staff, superuser
) -> None:
    leeds, york = (c["organisation"].pk for c in councils)
    for model in scoped_models():
        objects = list(model._default_manager.all())
        mine = [o for o in objects if organisation_of(o) == leeds]
        theirs = [o for o in objects if organisation_of(o) == york]
        assert mine and theirs, f"extend council() with a {model.__name__} for both councils"

        page = leeds_staff.get(url(model, "changelist"))
        assert page.status_code == 200, model
        shown = {o.pk for o in page.context["cl"].queryset}
        assert shown == {o.pk for o in mine}, model
        assert "York Council" not in page.content.decode(), model  # not even in filters

        everything = superuser.get(url(model, "changelist"))
        assert {o.pk for o in everything.context["cl"].queryset} == {o.pk for o in objects}

        assert leeds_staff.get(url(model, "change", mine[0].pk)).status_code == 200, model
        other = leeds_staff.get(url(model, "change", theirs[0].pk), follow=True)
        assert "York Council" not in other.content.decode(), model
        assert other.redirect_chain or other.status_code in (403, 404), model
        if admin.site.get_model_admin(model).has_delete_permission:
            delete = leeds_staff.post(url(model, "delete", theirs[0].pk), {"post": "yes"})
            assert delete.status_code in (302, 403, 404)
            assert model._default_manager.filter(pk=theirs[0].pk).exists(), model


def test_actions_do_nothing_to_another_organisations_objects(councils, leeds_staff) -> None:
    leeds, york = councils
    for model, action, obj in (
        (ApiKey, "revoke", york["key"]),
        (Survey, "close_surveys", york["survey"]),
        (Response, "withdraw", york["response"]),
    ):
        leeds_staff.post(url(model, "changelist"), {"action": action, "_selected_action": [obj.pk]})
    york["key"].refresh_from_db()
    york["survey"].refresh_from_db()
    york["response"].refresh_from_db()
    assert york["key"].revoked_at is None
    assert york["survey"].status == "open"
    assert york["response"].withdrawn_at is None
    # The same actions work on the staff user's own objects.
    leeds_staff.post(
        url(ApiKey, "changelist"), {"action": "revoke", "_selected_action": [leeds["key"].pk]}
    )
    leeds["key"].refresh_from_db()
    assert leeds["key"].revoked_at is not None


def test_report_downloads_are_scoped(councils, leeds_staff, superuser) -> None:
    leeds, york = councils
    for fmt in ("html", "csv", "json"):
        mine = leeds_staff.get(f"/admin/reports/{leeds['report'].pk}/download/?format={fmt}")
        assert mine.status_code == 200
        assert (
            leeds_staff.get(
                f"/admin/reports/{york['report'].pk}/download/?format={fmt}"
            ).status_code
            == 404
        )
    assert superuser.get(f"/admin/reports/{york['report'].pk}/download/").status_code == 200


def test_add_forms_offer_only_the_staff_users_organisations(councils, leeds_staff) -> None:
    leeds, york = councils
    page = leeds_staff.get(url(ApiKey, "add"))
    choices = {pk for pk, _ in page.context["adminform"].form.fields["organisation"].choices if pk}
    assert {int(str(pk)) for pk in choices} == {leeds["organisation"].pk}
    forged = leeds_staff.post(
        url(ApiKey, "add"), {"organisation": york["organisation"].pk, "role": "analyst"}
    )
    assert forged.status_code == 200  # the form refuses the other council
    assert not ApiKey.objects.filter(organisation=york["organisation"], role="analyst").exists()


def test_a_staff_user_in_two_organisations_sees_both_and_no_membership_sees_none(
    councils, leeds_staff
) -> None:
    user = get_user_model().objects.get(username="leeds-officer")
    StaffMembership.objects.create(user=user, organisation=councils[1]["organisation"])
    page = leeds_staff.get(url(Organisation, "changelist"))
    assert {o.pk for o in page.context["cl"].queryset} == {c["organisation"].pk for c in councils}
    StaffMembership.objects.filter(user=user).delete()
    page = leeds_staff.get(url(Survey, "changelist"))
    assert list(page.context["cl"].queryset) == []


def test_only_superusers_manage_memberships(councils, leeds_staff, superuser) -> None:
    leeds = councils[0]["organisation"]
    own = leeds_staff.get(url(Organisation, "change", leeds.pk)).content.decode()
    assert "memberships-TOTAL_FORMS" not in own
    assert "portal_origins-TOTAL_FORMS" in own
    assert (
        "memberships-TOTAL_FORMS"
        in superuser.get(url(Organisation, "change", leeds.pk)).content.decode()
    )


def test_admin_exports_and_the_analysis_form_are_scoped(councils, leeds_staff, superuser) -> None:
    leeds, york = councils
    for council_ in councils:  # a report document with no published question
        Report.objects.filter(pk=council_["report"].pk).update(result={"questions": []})
    mine = AnalysisJob.objects.get(organisation=leeds["organisation"])
    theirs = AnalysisJob.objects.get(organisation=york["organisation"])
    assert leeds_staff.get(f"/admin/analyses/{mine.pk}/export/?format=csv").status_code == 200
    assert leeds_staff.get(f"/admin/analyses/{theirs.pk}/export/?format=csv").status_code == 404
    assert superuser.get(f"/admin/analyses/{theirs.pk}/export/?format=csv").status_code == 200
    assert leeds_staff.get(f"/admin/reports/{leeds['report'].pk}/export/").status_code == 200
    assert leeds_staff.get(f"/admin/reports/{york['report'].pk}/export/").status_code == 404
    assert superuser.get(f"/admin/reports/{york['report'].pk}/export/").status_code == 200
    # The analysis form lists and accepts only the staff user's own surveys.
    form = leeds_staff.get(url(AnalysisJob, "add"))
    assert form.status_code == 200
    assert {s.pk for s in form.context["surveys"]} == {leeds["survey"].pk}
    other = leeds_staff.get(url(AnalysisJob, "add") + f"?survey={york['survey'].pk}")
    assert other.status_code == 404
    before = AnalysisJob.objects.filter(survey=york["survey"]).count()
    leeds_staff.post(
        url(AnalysisJob, "add") + f"?survey={york['survey'].pk}",
        {"kind": "distribution", "attribute": "sex"},
    )
    assert AnalysisJob.objects.filter(survey=york["survey"]).count() == before
