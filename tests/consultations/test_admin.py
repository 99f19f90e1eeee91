"""The admin site: every page renders, keys are shown once, surveys open/close via services."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.urls import reverse

from consultations.keys import hash_key
from consultations.models import ApiKey, AuditEvent
from surveys.models import Response, Survey
from surveys.services import calibration_upload, responses_submit_bulk
from tests.factories import good_answers, survey_factory


@pytest.fixture
def staff(db, client):
    user = get_user_model().objects.create_superuser("operator", "ops@example.invalid", "pw-123456")
    client.force_login(user)
    return client


@pytest.fixture
def filled(survey):
    responses_submit_bulk(
        survey=survey,
        responses=[{"participant": f"p{i}", "answers": good_answers(i)} for i in range(3)],
    )
    calibration_upload(survey=survey, question="skips_class", pairs=[["never", "often"]])
    return survey


MODELS = [
    "consultations_organisation",
    "consultations_apikey",
    "consultations_consultation",
    "consultations_auditevent",
    "surveys_survey",
    "surveys_response",
    "surveys_participant",
    "surveys_calibrationpair",
]


@pytest.mark.parametrize("name", MODELS)
def test_every_changelist_and_change_page_renders(staff, filled, name):
    changelist = staff.get(reverse(f"admin:{name}_changelist"))
    assert changelist.status_code == 200
    model = changelist.context["cl"].model
    obj = model.objects.first()
    assert obj is not None
    assert staff.get(reverse(f"admin:{name}_change", args=[obj.pk])).status_code == 200


def test_changelists_search_and_filter(staff, filled):
    found = staff.get(reverse("admin:surveys_response_changelist"), {"q": "p1"})
    assert [r.participant.reference for r in found.context["cl"].result_list] == ["p1"]
    drafts = staff.get(reverse("admin:surveys_survey_changelist"), {"status__exact": "draft"})
    assert list(drafts.context["cl"].result_list) == []


def test_a_key_created_in_the_admin_is_shown_once_and_stored_hashed(staff, tenant):
    response = staff.post(
        reverse("admin:consultations_apikey_add"),
        {"organisation": tenant.organisation.pk, "role": "portal", "name": "Portal of the city"},
        follow=True,
    )
    assert response.status_code == 200
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    shown = [m.rsplit(" ", 1)[1] for m in messages if "shown once" in m]
    assert len(shown) == 1
    key = shown[0]
    stored = ApiKey.objects.get(name="Portal of the city")
    assert stored.hashed_key == hash_key(key) and key not in stored.hashed_key
    assert key.startswith(stored.prefix + ".")
    page = staff.get(reverse("admin:consultations_apikey_change", args=[stored.pk]))
    assert key not in page.content.decode()


def test_revoke_action_goes_through_the_service(staff, tenant):
    url = reverse("admin:consultations_apikey_changelist")
    staff.post(url, {"action": "revoke", "_selected_action": [tenant.portal_key.pk]})
    tenant.portal_key.refresh_from_db()
    assert tenant.portal_key.revoked_at is not None
    assert AuditEvent.objects.filter(action="api_key.revoke", actor="staff:operator").exists()


def test_open_and_close_actions(staff, consultation):
    draft = survey_factory(consultation, open_it=False)
    url = reverse("admin:surveys_survey_changelist")
    staff.post(url, {"action": "open_surveys", "_selected_action": [draft.pk]})
    draft.refresh_from_db()
    assert draft.status == Survey.Status.OPEN
    staff.post(url, {"action": "close_surveys", "_selected_action": [draft.pk]})
    draft.refresh_from_db()
    assert draft.status == Survey.Status.CLOSED
    response = staff.post(
        url, {"action": "open_surveys", "_selected_action": [draft.pk]}, follow=True
    )
    assert any("only a draft survey" in str(m) for m in get_messages(response.wsgi_request))
    assert AuditEvent.objects.filter(action="survey.close", actor="staff:operator").exists()


def test_responses_and_audit_trail_are_read_only(staff, filled):
    response = Response.objects.first()
    assert staff.get(reverse("admin:surveys_response_add")).status_code == 403
    page = staff.get(reverse("admin:surveys_response_change", args=[response.pk]))
    assert b'name="_save"' not in page.content
    before = response.submitted_at
    staff.post(
        reverse("admin:surveys_response_change", args=[response.pk]), {"submitted_at": "2020-01-01"}
    )
    response.refresh_from_db()
    assert response.submitted_at == before
    assert staff.get(reverse("admin:consultations_auditevent_add")).status_code == 403
    event = AuditEvent.objects.first()
    assert (
        staff.post(reverse("admin:consultations_auditevent_delete", args=[event.pk])).status_code
        == 403
    )


def test_withdraw_action(staff, filled):
    target = Response.objects.get(participant__reference="p0")
    staff.post(
        reverse("admin:surveys_response_changelist"),
        {"action": "withdraw", "_selected_action": [target.pk]},
    )
    target.refresh_from_db()
    assert target.withdrawn_at is not None
    assert not target.answers.exists()


def test_the_privacy_budget_is_set_in_the_admin_by_the_apis_rules(staff, consultation):
    """Issue 28: the consultation form takes a privacy budget, refuses one <= 0, and once a
    survey opened refuses to introduce or lower one, with the API's words."""
    url = reverse("admin:consultations_consultation_change", args=[consultation.pk])
    form = {"title": consultation.title, "description": "", "min_responses": 10, "min_cell": 5}
    refused = staff.post(url, {**form, "privacy_budget": "0"})
    assert refused.status_code == 200 and "positive finite number" in refused.content.decode()
    assert staff.post(url, {**form, "privacy_budget": "4"}).status_code == 302
    consultation.refresh_from_db()
    assert consultation.privacy_budget == 4.0
    survey_factory(consultation, questions=[{
        "key": "sex", "type": "binary", "categories": ["F", "M"],
        "mechanism": {"name": "randomised_response", "retain": 0.7},
    }])  # fmt: skip
    lowered = staff.post(url, {**form, "privacy_budget": "3"})
    assert lowered.status_code == 200 and "can only be raised" in lowered.content.decode()
    assert staff.post(url, {**form, "privacy_budget": "5"}).status_code == 302
    consultation.refresh_from_db()
    assert consultation.privacy_budget == 5.0
    assert AuditEvent.objects.filter(action="consultation.update").exists()


@pytest.mark.parametrize(
    ("language", "portal", "analyst", "line", "shown", "revoke"),
    [
        ("en", "Residents' portal", "Analyst", "cannot read any result",
         "analyst (reads results)", "Revoke the selected keys"),
        ("de", "Portal der Einwohner", "Analyst", "kann keine Ergebnisse lesen",
         "Analyse (liest Ergebnisse)", "Ausgewählte Schlüssel widerrufen"),
        ("pl", "Portal mieszkańców", "Analityk", "nie może odczytać żadnych wyników",
         "analityk (czyta wyniki)", "Unieważnij wybrane klucze"),
    ],
)  # fmt: skip
def test_a_new_keys_role_is_chosen_in_plain_words_with_what_it_can_do(
    staff, tenant, language, portal, analyst, line, shown, revoke
):
    """The add form offers the roles as plain, translated choices with one line each on
    what the key can do, not the API's names ``portal`` and ``analyst``; the stored value
    stays the API's, and the key's page, its message and the revoke action speak the
    organiser's language too."""
    from html import unescape

    add = reverse("admin:consultations_apikey_add")
    page = unescape(staff.get(add, HTTP_ACCEPT_LANGUAGE=language).content.decode())
    roles = page.split('id="id_role"')[1].split('id="id_name"')[0]
    assert portal in roles and analyst in roles and line in roles, roles
    assert ">portal<" not in roles and ">analyst<" not in roles, roles
    assert 'value="portal"' in roles and 'value="analyst"' in roles
    name = f"Tools {language}"
    created = staff.post(
        add,
        {"organisation": tenant.organisation.pk, "role": "analyst", "name": name},
        HTTP_ACCEPT_LANGUAGE=language,
        follow=True,
    )
    key = ApiKey.objects.get(name=name)
    assert key.role == "analyst"
    shown_messages = [str(m) for m in get_messages(created.wsgi_request)]
    (message,) = [m for m in shown_messages if f"{key.prefix}." in m]
    assert not any(">analyst<" in m or "/analyst/" in m for m in shown_messages), shown_messages
    assert message.rsplit(" ", 1)[1].startswith(key.prefix + ".")
    assert ("shown once" in message) == (language == "en"), message
    change = reverse("admin:consultations_apikey_change", args=[key.pk])
    detail = unescape(staff.get(change, HTTP_ACCEPT_LANGUAGE=language).content.decode())
    assert shown in detail.split("field-role_shown")[1][:600]
    listing = reverse("admin:consultations_apikey_changelist")
    assert revoke in staff.get(listing, HTTP_ACCEPT_LANGUAGE=language).content.decode()


def test_the_consultation_form_explains_its_fields_in_the_organisers_language(staff, tenant):
    """The thresholds and the privacy budget were explained in English on a German page
    ("Question-level disclosure threshold: fewer responses publish nothing.")."""
    page = staff.get(
        reverse("admin:consultations_consultation_add"), HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert "Kleinere Gruppen werden nie gezeigt" in page
    assert "disclosure threshold" not in page and "Privacy budget ε per resident" not in page
