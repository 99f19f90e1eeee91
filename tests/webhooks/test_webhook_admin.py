"""Webhooks in the admin speak the organiser's language: the events a webhook listens for,
and the deliveries' list, filter and page, read in plain words (en, de, pl), not the API's
event names such as ``analysis.finished`` (which stay what is stored and sent)."""

from __future__ import annotations

from html import unescape

import pytest
from django.contrib.auth.models import User

from tests.factories import tenant_factory
from webhooks.models import Delivery, Webhook

pytestmark = pytest.mark.django_db

API_NAMES = ("analysis.finished", "report.finished", "survey.purged")
LABELS = {
    "en": ("An analysis has finished", "A report has finished", "A survey's answers were deleted"),
    "de": ("Eine Analyse ist fertig", "Ein Bericht ist fertig",
           "Die Antworten einer Umfrage wurden gelöscht"),
    "pl": ("Analiza została zakończona", "Raport został zakończony",
           "Odpowiedzi ankiety zostały usunięte"),
}  # fmt: skip


@pytest.fixture
def staff(client):
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    return client


@pytest.fixture
def hook():
    tenant = tenant_factory()
    webhook = Webhook.objects.create(
        organisation=tenant.organisation, url="https://93.184.216.34/hook",
        events=["analysis.finished", "survey.purged"], secret="s",
    )  # fmt: skip
    for event in ("analysis.finished", "survey.purged"):
        Delivery.objects.create(webhook=webhook, event=event, payload={"event": event})
    return webhook


def _page(staff, url: str, language: str) -> str:
    response = staff.get(url, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return unescape(response.content.decode())


@pytest.mark.parametrize("language", ["en", "de", "pl"])
def test_webhook_events_are_picked_and_listed_in_plain_words(staff, hook, language):
    analysis, report, purged = LABELS[language]
    form = _page(staff, "/admin/webhooks/webhook/add/", language)
    boxes = form.split('id="id_events"')[1].split("</div>\n</div>")[0]
    assert analysis in boxes and report in boxes and purged in boxes, boxes
    assert 'value="analysis.finished"' in boxes  # the stored value is the API's name
    shown = boxes.replace('value="', "")
    assert not any(f">{name}" in shown or f" {name}<" in shown for name in API_NAMES), boxes
    hooks = _page(staff, "/admin/webhooks/webhook/", language)
    rows = hooks.split('id="result_list"')[1].split("</table>")[0]
    assert analysis in rows and purged in rows and "analysis.finished" not in rows, rows
    deliveries = _page(staff, "/admin/webhooks/delivery/", language)
    rows = deliveries.split('id="result_list"')[1].split("</table>")[0]
    assert analysis in rows and purged in rows, rows
    assert not any(name in rows for name in API_NAMES), rows
    # The filter beside the deliveries: the labels, filtering by the stored name.
    panel = deliveries.split('id="changelist-filter"')[1].split("</nav>")[0]
    assert analysis in panel and purged in panel, panel
    assert not any(f">{name}<" in panel for name in API_NAMES), panel
    assert "event=analysis.finished" in panel or "event__exact=analysis.finished" in panel
    delivery = hook.deliveries.get(event="survey.purged")
    page = _page(staff, f"/admin/webhooks/delivery/{delivery.pk}/change/", language)
    content = page.split('id="content-main"')[1]
    assert purged in content
    assert "survey.purged</div>" not in content, content  # no raw field beside its label
    edit = _page(staff, f"/admin/webhooks/webhook/{hook.pk}/change/", language)
    inline = edit.split('id="deliveries-group"')[1]
    assert analysis in inline and purged in inline
    assert not any(f">{name}<" in inline for name in API_NAMES), inline


def test_filtering_deliveries_by_event_still_uses_the_stored_name(staff, hook):
    listing = staff.get("/admin/webhooks/delivery/?event=survey.purged", HTTP_ACCEPT_LANGUAGE="de")
    rows = unescape(listing.content.decode()).split('id="result_list"')[1].split("</table>")[0]
    assert "Die Antworten einer Umfrage wurden gelöscht" in rows
    assert "Eine Analyse ist fertig" not in rows
