"""Analyses in the admin: a form builds the request from the survey's questions, the API's
validation and audit apply, and the result page shows estimate, interval, method, chart."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from django.contrib.auth.models import User

from consultations.models import AuditEvent
from consultations.services import consultation_create, organisation_create
from reconstruction.models import AnalysisJob
from surveys.services import responses_submit_bulk, survey_create, survey_open

pytestmark = pytest.mark.django_db


@pytest.fixture
def open_survey():
    organisation = organisation_create(slug="admin-town", name="Admin Town")
    consultation = consultation_create(organisation=organisation, title="Parks")
    survey = survey_create(
        organisation=organisation, consultation=consultation, kind="profile", title="Parks",
        questions=[
            {"key": "visits", "type": "nominal", "categories": ["none", "some", "many"],
             "mechanism": {"name": "randomised_response", "retain": 0.8}},
            {"key": "age", "type": "continuous", "range": [16, 100],
             "mechanism": {"name": "additive_uniform", "half_width": 5}},
        ],
    )  # fmt: skip
    survey = survey_open(survey=survey)
    rng = np.random.default_rng(1)
    labels = np.array(["none", "some", "many"])[rng.integers(0, 3, size=300)]
    ages = np.round(rng.uniform(20, 90, size=300), 3)  # reports on the grid (0.001)
    responses_submit_bulk(
        survey=survey,
        responses=[{"participant": f"p{i}", "answers": {"visits": str(v), "age": float(a)}}
                   for i, (v, a) in enumerate(zip(labels, ages, strict=True))],
    )  # fmt: skip
    return survey


@pytest.fixture
def staff(client):
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    return client


def test_a_distribution_is_asked_for_in_the_admin_and_its_result_shown(
    staff, open_survey, django_capture_on_commit_callbacks
):
    url = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    form = staff.get(url).content.decode()
    assert 'value="visits"' in form and 'value="count"' in form and 'value="mean"' in form
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(url, {"kind": "distribution", "attribute": "visits",
                                    "method": "eq"})  # fmt: skip
    assert response.status_code == 302, response.content.decode()[-2000:]
    job = AnalysisJob.objects.get()
    assert (job.status, job.kind, job.requested_by) == ("succeeded", "distribution",
                                                        "staff:organiser")  # fmt: skip
    assert AuditEvent.objects.filter(actor="staff:organiser", action="analysis.create").exists()
    page = staff.get(response["Location"]).content.decode()
    assert 'id="result-chart"' in page and "<svg" in page
    assert "eq" in page.split('id="result-summary"')[1].split("</table>")[0]
    export = staff.get(f"/admin/analyses/{job.pk}/export/?format=csv")
    assert export.status_code == 200 and export.content.startswith(b"cell,estimate,")
    bundle = staff.get(f"/admin/analyses/{job.pk}/export/?format=zip")
    assert bundle.status_code == 200 and bundle["Content-Type"] == "application/zip"


def test_a_mean_with_a_condition_shows_estimate_and_interval(
    staff, open_survey, django_capture_on_commit_callbacks
):
    url = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(url, {
            "kind": "mean", "attribute": "age",
            "where_0_attribute": "visits", "where_0_categories": ["some", "many"],
        })  # fmt: skip
    assert response.status_code == 302, response.content.decode()[-2000:]
    job = AnalysisJob.objects.get()
    assert job.spec["where"] == [{"attribute": "visits", "op": "in", "value": ["some", "many"]}]
    page = staff.get(response["Location"]).content.decode()
    summary = page.split('id="result-summary"')[1].split("</table>")[0]
    assert "estimate" in summary and "95% interval" in summary
    # Rounded to two significant digits of the interval's half-width, not 17 digits.
    low, high = job.result["ci95"]
    places = max(0, 1 - math.floor(math.log10((high - low) / 2)))
    assert f"{low:,.{places}f} to {high:,.{places}f}" in summary
    assert not re.search(r"\d\.\d{4,}", summary)
    headline = page.split('id="result-headline">')[1].split("</p>")[0]
    assert "The average is about" in headline and f"{high:,.{places}f}" in headline


def test_bad_requests_get_the_apis_messages_and_no_job(staff, open_survey):
    url = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    page = staff.post(url, {"kind": "distribution"}).content.decode()
    assert "A distribution needs the attribute to analyse." in page
    page = staff.post(url, {
        "kind": "count", "where_0_attribute": "age", "where_0_op": "gt",
    }).content.decode()  # fmt: skip
    # A condition without its number: said beside the number (was the API's "where[0]...").
    number = page.split('id="condition-0"')[1].split('class="condition-up-to"')[0]
    assert "Type a number." in number.split('class="condition-number"')[1], number
    assert not AnalysisJob.objects.exists()


def test_the_result_page_shows_the_jobs_progress_until_it_finishes(staff, open_survey):
    """A queued or running job's page shows its progress and refreshes itself; once the
    worker has run it, the result replaces the progress bar."""
    from reconstruction.services import analysis_run

    url = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    response = staff.post(url, {"kind": "distribution", "attribute": "visits"})
    assert response.status_code == 302, response.content.decode()[-2000:]
    job = AnalysisJob.objects.get()
    assert job.status == "queued"  # the queue is not run in this test until asked below
    AnalysisJob.objects.filter(pk=job.pk).update(status="running", progress=0.3)
    page = staff.get(response["Location"]).content.decode()
    assert '<progress id="job-progress" max="1" value="0.3">' in page
    assert '<meta http-equiv="refresh"' in page and 'id="result-chart"' not in page
    AnalysisJob.objects.filter(pk=job.pk).update(status="queued", progress=0.0)
    analysis_run(job_id=job.pk)
    page = staff.get(response["Location"]).content.decode()
    assert 'id="job-progress"' not in page and '<meta http-equiv="refresh"' not in page
    assert 'id="result-chart"' in page


def test_job_lists_and_pages_say_kind_and_status_in_the_organisers_language(
    staff, open_survey, django_capture_on_commit_callbacks
):
    url = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(url, {"kind": "distribution", "attribute": "visits"})
    assert response.status_code == 302, response.content.decode()[-2000:]
    listing = staff.get(
        "/admin/reconstruction/analysisjob/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert "Aufteilung von…" in listing and "fertig" in listing
    page = staff.get(f"{response['Location']}?lang=pl").content.decode()
    assert "gotowe" in page and "Szczegóły techniczne" in page
    assert "API key prefix or staff username" not in page  # the model's English help text
    reports = staff.get("/admin/reconstruction/report/", HTTP_ACCEPT_LANGUAGE="de")
    assert reports.status_code == 200


def _filter(listing: str) -> str:
    """The changelist's filter panel (Django's #changelist-filter)."""
    return listing.split('id="changelist-filter"')[1].split("</nav>")[0]


def test_changelist_filters_say_statuses_and_kinds_in_the_organisers_language(
    staff, open_survey, django_capture_on_commit_callbacks
):
    """The filters beside the lists of analyses, reports and surveys read the job pages'
    labels in German and Polish, not the API's words (succeeded, distribution, open)."""
    url = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        staff.post(url, {"kind": "distribution", "attribute": "visits"})
    listing = staff.get("/admin/reconstruction/analysisjob/", HTTP_ACCEPT_LANGUAGE="de")
    german = _filter(listing.content.decode())
    assert "fertig" in german and "in der Warteschlange" in german, german
    assert "Aufteilung von…" in german and "Wie viele…" not in german  # kinds asked for
    assert ">succeeded<" not in german and ">distribution<" not in german
    # Filtering still works by the API's value (the address is unchanged).
    listed = staff.get(
        "/admin/reconstruction/analysisjob/?status__exact=succeeded", HTTP_ACCEPT_LANGUAGE="de"
    )
    assert listed.status_code == 200 and "Aufteilung von…" in listed.content.decode()
    polish = _filter(
        staff.get("/admin/reconstruction/report/", HTTP_ACCEPT_LANGUAGE="pl").content.decode()
    )
    assert "gotowe" in polish and ">succeeded<" not in polish
    surveys = staff.get("/admin/surveys/survey/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Entwurf" in _filter(surveys) and "Profil" in _filter(surveys)
    assert ">draft<" not in _filter(surveys) and ">profile<" not in surveys
    # The list's own columns too (the survey is open: "offen").
    rows = surveys.split('id="result_list"')[1].split("</table>")[0]
    assert "offen" in rows and ">open<" not in rows
    responses = staff.get("/admin/surveys/response/", HTTP_ACCEPT_LANGUAGE="pl").content.decode()
    assert "zamknięta" in _filter(responses) and ">closed<" not in _filter(responses)
    # Webhook deliveries and API keys too.
    deliveries = staff.get("/admin/webhooks/delivery/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "zugestellt" in _filter(deliveries) and ">succeeded<" not in _filter(deliveries)
    keys = staff.get("/admin/consultations/apikey/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Portal (sendet die Antworten der Einwohner)" in _filter(keys)
    assert ">portal<" not in _filter(keys)


def test_result_pages_link_every_export_and_reports_their_zip(
    staff, open_survey, django_capture_on_commit_callbacks
):
    """The result page links the table as CSV, as a ZIP with its descriptions, notes and
    request, and as XLSX; each link downloads its file. A report's downloads add the ZIP."""
    from reconstruction.services import report_create

    url = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(url, {"kind": "distribution", "attribute": "visits"})
    page = staff.get(response["Location"], HTTP_ACCEPT_LANGUAGE="de").content.decode()
    downloads = page.split('id="result-downloads"')[1].split("</p>")[0]
    links = re.findall(r'href="([^"]+)"', downloads)
    assert [link.rsplit("=", 1)[1] for link in links] == ["csv", "zip", "xlsx"], links
    assert "Tabelle mit Beschreibungen, Hinweisen und Anfrage (ZIP)" in downloads
    types = [staff.get(link.replace("&amp;", "&"))["Content-Type"] for link in links]
    assert types[1] == "application/zip" and types[0].startswith("text/csv"), types

    with django_capture_on_commit_callbacks(execute=True):
        report = report_create(
            organisation=open_survey.consultation.organisation, survey=open_survey,
            requested_by="staff:organiser",
        )  # fmt: skip
    listing = staff.get("/admin/reconstruction/report/", HTTP_ACCEPT_LANGUAGE="de").content
    row = listing.decode().split(f"/admin/reports/{report.pk}/download/")[0]
    assert f"/admin/reports/{report.pk}/export/?format=zip" in listing.decode()
    assert "Tabelle" in listing.decode() and row
    bundle = staff.get(f"/admin/reports/{report.pk}/export/?format=zip")
    assert bundle.status_code == 200 and bundle["Content-Type"] == "application/zip"


def test_the_panel_form_builds_quotas_from_widgets_not_typed_syntax(
    staff, open_survey, django_capture_on_commit_callbacks
):
    """Quotas and eligibility on the panel form are a question, its answers ticked (or a
    comparison and a number in its range) and the fewest/most seats: no text box takes
    "visits in some, many"; the request is the API's."""
    url = f"/admin/reconstruction/analysisjob/panel/?survey={open_survey.pk}"
    page = staff.get(url).content.decode()
    assert "_value" not in page and "categories separated by commas" not in page
    assert 'name="quota_0_categories"' in page and 'value="some"' in page
    assert 'id="add-quota"' in page and "Remove this quota" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(url, {
            "size": "10", "reserves": "0", "seed": "3", "objective": "maximin",
            "where_0_attribute": "age", "where_0_op": "between", "where_0_number": "18",
            "where_0_up_to": "95",
            "quota_0_attribute": "visits", "quota_0_categories": ["many", "some"],
            "quota_0_min": "3", "quota_0_max": "8",
            "quota_1_attribute": "age", "quota_1_op": "lte", "quota_1_number": "40",
            "quota_1_max": "6",
        })  # fmt: skip
    assert response.status_code == 302, response.content.decode()[-3000:]
    job = AnalysisJob.objects.get()
    assert job.spec["where"] == [{"attribute": "age", "op": "between", "value": [18.0, 95.0]}]
    assert 'id="panel-report"' in staff.get(response["Location"]).content.decode()
    assert job.spec["quotas"] == [
        {"where": [{"attribute": "visits", "op": "in", "value": ["some", "many"]}],
         "min": 3, "max": 8},
        {"where": [{"attribute": "age", "op": "lte", "value": 40.0}], "min": 0, "max": 6},
    ]  # fmt: skip
    # A negative seat count is refused on the form, naming the field; no job is made.
    page = staff.post(url, {"size": "10", "reserves": "0", "objective": "maximin",
                            "quota_0_attribute": "visits", "quota_0_categories": ["some"],
                            "quota_0_min": "-1"}).content.decode()  # fmt: skip
    assert 'id="quota-0"' in page and "errorlist" in page.split('id="quota-0"')[1][:3000]
    assert AnalysisJob.objects.count() == 1
    german = staff.get(url, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Quote hinzufügen" in german and "Sitze für Kandidaten, deren Antwort auf" in german


def _row(page: str, row: str) -> str:
    """One condition row of the panel form (``quota-1``, ``eligibility-0``)."""
    return page.split(f'id="{row}"')[1].split('<div class="condition-row')[0]


QUOTA_PROBLEMS = {  # the rows as typed, the row and widget the message is beside, the message
    "more-than-at-most": (
        {"quota_1_attribute": "visits", "quota_1_categories": ["some"], "quota_1_min": "5",
         "quota_1_max": "3"},
        "quota-1", "quota_1_min",
        {"en": "At least 5 seats is more than at most 3.",
         "de": "Mindestens 5 Sitze sind mehr als höchstens 3.",
         "pl": "Co najmniej 5 miejsc to więcej niż co najwyżej 3."},
    ),
    "more-than-the-panel": (
        {"quota_1_attribute": "visits", "quota_1_categories": ["some"], "quota_1_min": "12"},
        "quota-1", "quota_1_min",
        {"en": "At least 12 seats is more than the panel's 10 seats.",
         "de": "Mindestens 12 Sitze sind mehr als die 10 Sitze des Gremiums.",
         "pl": "Co najmniej 12 miejsc to więcej niż 10 miejsc panelu."},
    ),
    "no-answer-ticked": (
        {"quota_1_attribute": "visits", "quota_1_min": "2"},
        "quota-1", "quota_1_categories",
        {"en": "Tick at least one answer.", "de": "Kreuzen Sie mindestens eine Antwort an.",
         "pl": "Zaznacz co najmniej jedną odpowiedź."},
    ),
    "no-number": (
        {"quota_1_attribute": "age", "quota_1_op": "lte", "quota_1_max": "3"},
        "quota-1", "quota_1_number",
        {"en": "Type a number.", "de": "Geben Sie eine Zahl ein.", "pl": "Wpisz liczbę."},
    ),
    "empty-range": (
        {"quota_1_attribute": "age", "quota_1_op": "between", "quota_1_number": "50",
         "quota_1_up_to": "20", "quota_1_max": "3"},
        "quota-1", "quota_1_up_to",
        {"en": "Type a number above the first one.",
         "de": "Geben Sie eine Zahl über der ersten ein.",
         "pl": "Wpisz liczbę większą od pierwszej."},
    ),
    "same-group-twice": (
        {"quota_0_attribute": "visits", "quota_0_categories": ["some"], "quota_0_min": "2",
         "quota_1_attribute": "visits", "quota_1_categories": ["some"], "quota_1_min": "3"},
        "quota-1", "quota_1_attribute",
        {"en": "Quota 2 is about the same residents as quota 1: give each group one quota.",
         "de": "Quote 2 betrifft dieselben Einwohner wie Quote 1: Geben Sie jeder Gruppe eine "
               "Quote.",
         "pl": "Kwota 2 dotyczy tych samych mieszkańców co kwota 1: daj każdej grupie jedną "
               "kwotę."},
    ),
    "eligibility-no-answer": (
        {"where_0_attribute": "visits", "quota_1_attribute": "age", "quota_1_op": "lte",
         "quota_1_number": "40", "quota_1_max": "6"},
        "eligibility-0", "where_0_categories",
        {"en": "Tick at least one answer.", "de": "Kreuzen Sie mindestens eine Antwort an.",
         "pl": "Zaznacz co najmniej jedną odpowiedź."},
    ),
}  # fmt: skip


@pytest.mark.parametrize("language", ["en", "de", "pl"])
@pytest.mark.parametrize("case", list(QUOTA_PROBLEMS))
def test_a_quotas_problem_is_a_plain_sentence_beside_its_widget(staff, open_survey, case, language):
    """A problem inside one quota (or eligibility condition) is said in the organiser's
    language beside the widget to change, not at the top in the API's words ("Quotas:
    Quota 1: min: min 5 is larger than max 3.", "quotas[0].where[0]: 'in' needs at least
    one category", "Quota 1: Who can be selected: Quota 1: value: This field may not be
    null."); nothing is queued."""
    from html import unescape

    rows, row, widget, message = QUOTA_PROBLEMS[case]
    url = f"/admin/reconstruction/analysisjob/panel/?survey={open_survey.pk}"
    response = staff.post(
        url, {"size": "10", "reserves": "0", "objective": "maximin", **rows},
        HTTP_ACCEPT_LANGUAGE=language,
    )  # fmt: skip
    page = unescape(response.content.decode())
    assert response.status_code == 200 and not AnalysisJob.objects.exists()
    shown = _row(page, row)
    errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', shown, re.S)
    assert [re.sub(r"<[^>]+>", "", e).strip() for e in errors] == [message[language]], errors
    beside = shown.split('class="errorlist')[1]
    assert f'name="{widget}"' in beside.split("</div>")[0] + beside.split("</fieldset>")[0]
    assert 'id="analysis-errors"' not in page  # nothing at the top
    every = " ".join(re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', page, re.S))
    for jargon in ("quotas[", "where[", "min:", "max:", "value:", "Quota 1: "):
        assert jargon not in every, (jargon, every)


def test_a_refusal_naming_quotas_numbers_them_as_on_the_form(staff, open_survey):
    """The panel kind's refusal of quotas together names them as the form numbers them
    (rows 1 and 3 filled in, "Quote 1, Quote 3"; the API counts quotas[0], quotas[1] from
    0 and writes their conditions as "(visits in [some])") and the question by its name."""
    url = f"/admin/reconstruction/analysisjob/panel/?survey={open_survey.pk}"
    page = staff.post(url, {
        "size": "10", "reserves": "0", "objective": "maximin",
        "quota_0_attribute": "visits", "quota_0_categories": ["some"], "quota_0_min": "6",
        "quota_2_attribute": "visits", "quota_2_categories": ["many"], "quota_2_min": "6",
    }, HTTP_ACCEPT_LANGUAGE="de").content.decode()  # fmt: skip
    errors = page.split('id="analysis-errors"')[1].split("</ul>")[0]
    assert "(Quote 1, Quote 3)" in errors and "“visits”" in errors, errors
    assert "quotas[" not in errors and "[some]" not in errors and "&#x27;visits&#x27;" not in errors
    assert not AnalysisJob.objects.exists()


def test_cost_refusals_read_in_plain_words_with_the_figures_as_a_footnote(
    staff, open_survey, settings
):
    """A request the cost model refuses (engineer cost2's messages, shown as they are)
    names the form's part in plain words ("Quotas", "Which residents", not the API's
    field names) and shows the figures apart, as a footnote; nothing is queued."""
    from reconstruction.result_view import footnoted

    settings.ANALYSIS_COST_BUDGET = 1
    panel = f"/admin/reconstruction/analysisjob/panel/?survey={open_survey.pk}"
    page = staff.post(panel, {
        "size": "10", "reserves": "0", "objective": "maximin",
        "quota_0_attribute": "visits", "quota_0_categories": ["some"], "quota_0_min": "2",
    }).content.decode()  # fmt: skip
    errors = page.split('id="analysis-errors"')[1].split("</ul>")[0]
    assert "<li>Quotas: This panel would take more than a minute" in errors, errors
    assert '<small class="footnote">(Figures: estimated cost' in errors, errors
    analysis = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    page = staff.post(analysis, {
        "kind": "count", "where_0_attribute": "visits", "where_0_categories": ["some"],
    }, HTTP_ACCEPT_LANGUAGE="de").content.decode()  # fmt: skip
    errors = page.split('id="analysis-errors"')[1].split("</ul>")[0]
    assert "<li>Welche Einwohner: " in errors and '<small class="footnote">(' in errors, errors
    assert not AnalysisJob.objects.exists()
    assert footnoted("Ask for fewer quotas (for example one per band). (Figures: 3 (of 4).)") == (
        "Ask for fewer quotas (for example one per band).",
        "(Figures: 3 (of 4).)",
    )
    assert footnoted("quotas 1 and 2 conflict (sex)") == ("quotas 1 and 2 conflict (sex)", "")


def test_survey_and_report_actions_speak_the_organisers_language(staff, open_survey):
    """The changelists' actions and their messages in German, not English f-strings."""
    page = staff.get("/admin/surveys/survey/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    actions = page.split('name="action"')[1].split("</select>")[0]
    assert "Ausgewählte offene Umfragen schließen" in actions
    assert "Bericht zu den ausgewählten Umfragen starten" in actions
    assert "Close the selected" not in actions
    response = staff.post(
        "/admin/surveys/survey/",
        {"action": "close_surveys", "_selected_action": [open_survey.pk], "index": "0"},
        HTTP_ACCEPT_LANGUAGE="de",
        follow=True,
    )
    assert "1 Umfrage(n) geschlossen." in response.content.decode()


def test_result_pages_show_no_api_words_or_unrounded_numbers(
    staff, open_survey, django_capture_on_commit_callbacks
):
    """What admin3's walk through the result pages found, in German: the page title read
    "AnalysisJob 4 (succeeded)", the survey "Parks (profile, open)"; a number question's
    chart labelled its bands "[16, 19.2308)"; a panel's quotas read "quotas[0] (visits in
    [some])" with "3 to 8" and "9.9", its selection chances "0,0100", its progress "1,0";
    an open survey's card showed "half_width = 5"."""
    from html import unescape

    add = f"/admin/reconstruction/analysisjob/add/?survey={open_survey.pk}"
    panel = f"/admin/reconstruction/analysisjob/panel/?survey={open_survey.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        staff.post(add, {"kind": "distribution", "attribute": "age"})
        staff.post(panel, {
            "size": "10", "reserves": "0", "seed": "3", "objective": "maximin",
            "quota_0_attribute": "visits", "quota_0_categories": ["some"],
            "quota_0_min": "3", "quota_0_max": "8",
        })  # fmt: skip
    bands, drawn = AnalysisJob.objects.order_by("pk")
    assert bands.status == drawn.status == "succeeded", (bands.error_text(), drawn.error_text())

    def page(job):
        url = f"/admin/reconstruction/analysisjob/{job.pk}/change/"
        return unescape(staff.get(url, HTTP_ACCEPT_LANGUAGE="de").content.decode())

    shown = page(bands)
    assert f"Analyseauftrag {bands.pk}" in shown and "AnalysisJob" not in shown
    assert "(succeeded)" not in shown and "(profile, open)" not in shown
    chart = shown.split('id="result-chart"')[1].split("</figure>")[0]
    assert "bis unter" in chart and not re.search(r"\[\d+(\.\d+)?, ", chart), chart[:2000]
    assert "100 %" in shown.split("field-progress_shown")[1][:400]
    # The method by its paper's name with what it does (it read "Verfahren em").
    assert re.search(r"<td>em: [A-ZÄÖÜa-zäöü]", shown.split("<details")[0]), shown
    shown = page(drawn)
    quotas = shown.split('id="panel-quotas"')[1].split("</table>")[0]
    assert "Quote 1: visits: some" in quotas and "3 bis 8" in quotas, quotas
    plain = shown.split("<details")[0]  # the raw request and result stay under "technical"
    assert "quotas[" not in plain and "[some]" not in plain
    assert not re.search(r"\d\.\d", quotas), quotas  # 9,9 in German, not 9.9
    members = shown.split('id="panel-members"')[1].split("</table>")[0]
    assert re.search(r"niedrigste \d+(,\d+)? %", members), members
    assert "0,0" not in members, members
    survey = unescape(
        staff.get(
            f"/admin/surveys/survey/{open_survey.pk}/change/", HTTP_ACCEPT_LANGUAGE="de"
        ).content.decode()
    )
    assert "half_width" not in survey and "Rauschen bis ± (in Einheiten der Antwort) = 5" in survey
    form = unescape(staff.get(add, HTTP_ACCEPT_LANGUAGE="de").content.decode())
    assert "(profile, open)" not in form and f">{open_survey.title}<" in form


def test_the_tightened_bands_field_speaks_plain_words_and_keeps_its_errors(staff, open_survey):
    """The panel form's "seats outside each band" named the API's max_outside in its help,
    and the API's refusal of its value came at the top as "max_outside: ..."; now plain
    help, and the refusal beside the field."""
    url = f"/admin/reconstruction/analysisjob/panel/?survey={open_survey.pk}"
    page = staff.post(url, {
        "size": "10", "reserves": "0", "objective": "maximin", "max_outside": "-1",
        "quota_0_attribute": "visits", "quota_0_categories": ["some"], "quota_0_min": "2",
    }, HTTP_ACCEPT_LANGUAGE="de").content.decode()  # fmt: skip
    field = page.split("field-max_outside")[1].split("</div>\n")[0]
    assert "errorlist" in field and "Engere Spannen: Jedes Panel" in page, field
    text = re.sub(r"<[^>]+>", " ", page.split('id="panel-form"')[1])  # what is read
    assert "max_outside" not in text, text
    assert 'id="analysis-errors"' not in page and not AnalysisJob.objects.exists()


def test_a_samples_result_page_says_who_was_drawn(
    staff, open_survey, django_capture_on_commit_callbacks
):
    """A sample's page showed only "Verfahren posterior" and what an interval means (it
    has none); now one sentence with its size, seed and members, in the reader's
    language, and no interval paragraph."""
    from reconstruction import services

    with django_capture_on_commit_callbacks(execute=True):
        job = services.analysis_create(
            organisation=open_survey.consultation.organisation, survey=open_survey,
            spec={"kind": "sample", "size": 20, "seed": 4}, requested_by="tests",
        )  # fmt: skip
    job.refresh_from_db()
    assert job.status == "succeeded", job.error_text()
    page = staff.get(
        f"/admin/reconstruction/analysisjob/{job.pk}/change/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    headline = page.split('id="result-headline">')[1].split("</p>")[0]
    assert headline.startswith("Eine Zufallsstichprobe von 20 Einwohnerinnen"), headline
    assert all(member in headline for member in job.result["participants"])
    assert 'id="interval-meaning"' not in page
