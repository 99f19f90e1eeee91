"""The platform speaks English, German and Polish: complete catalogues, compiled, used by
the API's error messages, the example portal page and the downloads."""

from __future__ import annotations

import math
import re
from pathlib import Path

import polib
import pytest
from django.test import Client, override_settings

from reconstruction.models import AnalysisJob
from surveys.models import Survey
from tests.factories import consultation_factory, survey_factory, tenant_factory

LOCALE = Path(__file__).resolve().parents[1] / "locale"
PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]|\{\w+\}")


@pytest.mark.parametrize("language", ["de", "pl"])
def test_the_catalogue_is_complete_and_compiled(language):
    po = polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))
    entries = [e for e in po if not e.obsolete]
    assert len(entries) > 90
    assert [e.msgid for e in entries if not e.translated() or "fuzzy" in e.flags] == []
    for entry in entries:
        forms = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
        for form in forms:
            wanted = set(PLACEHOLDER.findall(entry.msgid_plural or entry.msgid))
            assert set(PLACEHOLDER.findall(form)) == wanted, (entry.msgid, form)
    compiled = polib.mofile(str(LOCALE / language / "LC_MESSAGES" / "django.mo"))
    assert {e.msgid: e.msgstr for e in compiled if not e.msgid_plural and e.msgid} == {
        e.msgid: e.msgstr for e in entries if not e.msgid_plural
    }, "django.mo is stale: run `make messages` (the .po file is the source)"


def test_api_errors_follow_accept_language(db):
    tenant = tenant_factory()
    body = {"title": ""}
    english = tenant.analyst.post("/api/v1/consultations/", body, format="json")
    german = tenant.analyst.post(
        "/api/v1/consultations/", body, format="json", HTTP_ACCEPT_LANGUAGE="de"
    )
    polish = tenant.analyst.post(
        "/api/v1/consultations/", body, format="json", HTTP_ACCEPT_LANGUAGE="pl-PL,pl;q=0.9"
    )
    assert english.status_code == german.status_code == polish.status_code == 400
    assert english.json()["errors"] != german.json()["errors"]
    assert "Dieses Feld" in str(german.json()["errors"])
    assert "To pole" in str(polish.json()["errors"])


@override_settings(PORTAL_EXAMPLE_ENABLED=True, PORTAL_EXAMPLE_KEY="k-example")
@pytest.mark.parametrize(
    ("query", "header", "expected"),
    [
        ("", "de-DE,de;q=0.9", "Was dieses Gerät verlässt"),
        ("?lang=pl", "de", "Co opuszcza to urządzenie"),
        ("", "fr", "What leaves this device"),
    ],
)
def test_the_example_page_speaks_the_residents_language(db, query, header, expected):
    page = Client().get(f"/portal-example/3/{query}", HTTP_ACCEPT_LANGUAGE=header)
    assert page.status_code == 200
    html = page.content.decode()
    assert expected in html
    # The script's sentences come in the same language.
    if "pl" in query:
        assert "Wyślij te odpowiedzi" in html and '"language": "pl"' in html


# --------------------------------------------------------------------------- domain errors


def both_languages(send):
    """The same request in English (no header) and in German (Accept-Language: de)."""
    english = send()
    german = send(HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")
    assert english.status_code == german.status_code, (english.json(), german.json())
    return english, german


def test_a_refused_survey_is_explained_in_german(db):
    tenant = tenant_factory()
    consultation = consultation_factory(tenant.organisation)
    body = {
        "consultation": consultation.pk, "kind": "opinion", "title": "Parks",
        "questions": [
            {"key": "colour", "type": "tricolour", "categories": ["a", "b"],
             "mechanism": {"name": "none"}},
            {"key": "site", "type": "nominal", "categories": ["A", "B", "C"],
             "mechanism": {"name": "randomised_response", "retain": "high"}},
            {"key": "age", "type": "continuous", "range": [50, 10], "mechanism": {"name": "none"}},
        ],
    }  # fmt: skip
    english, german = both_languages(
        lambda **headers: tenant.analyst.post("/api/v1/surveys/", body, format="json", **headers)
    )
    assert english.status_code == 400
    en, de = english.json(), german.json()
    assert en["detail"].startswith("Invalid input: questions: type: Must be one of binary")
    assert de["detail"] == (
        "Ungültige Eingabe: questions: type: "
        "Muss eines von binary, nominal, ordinal, continuous sein."
    )
    colour, site, age = de["errors"]["questions"]
    assert colour["type"] == ["Muss eines von binary, nominal, ordinal, continuous sein."]
    assert site["mechanism"] == ["retain muss eine Zahl sein, erhalten: 'high'."]
    assert age["range"] == ["unten muss kleiner als oben sein, erhalten: [50, 10]."]
    assert en["errors"]["questions"][2]["range"] == ["low must be below high, got [50, 10]."]
    assert not Survey.objects.exists()


def test_a_refused_analysis_is_explained_in_german(db):
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    cases = [
        ({"attribute": "nope", "op": "in", "value": ["x"]}, "unbekanntes Merkmal 'nope'"),
        ({"attribute": "sex", "op": "in", "value": ["X"]}, "'X' ist keine Kategorie von 'sex'"),
        ({"attribute": "sex", "op": "gt", "value": 3}, "'sex' ist binary: verwenden Sie op 'in'"),
    ]
    for condition, expected in cases:
        body = {"survey": survey.pk, "kind": "count", "where": [condition]}
        english, german = both_languages(
            lambda body=body, **headers: tenant.analyst.post(
                "/api/v1/analyses/", body, format="json", **headers
            )
        )
        assert english.status_code == 400, english.json()
        assert german.json()["detail"].startswith("Ungültige Eingabe: where"), german.json()
        assert expected in german.json()["detail"], german.json()
        assert english.json()["detail"].startswith("Invalid input: where")
    assert not AnalysisJob.objects.exists()


def test_a_refused_job_quota_is_explained_in_german(db, settings):
    settings.JOBS_MAX_ACTIVE_PER_ORGANISATION = 0
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    english, german = both_languages(
        lambda **headers: tenant.analyst.post(f"/api/v1/surveys/{survey.pk}/reports/", **headers)
    )
    assert english.status_code == 429 and int(german["Retry-After"]) >= 1
    assert english.json()["detail"].startswith("Your organisation already has 0 jobs")
    assert german.json()["detail"].startswith("Ihre Organisation hat bereits 0 Aufträge")
    assert "Your organisation" not in german.json()["detail"]


# --------------------------------------------------------------------------- pure-layer errors


def three_languages(send):
    """The same request with no header (English), Accept-Language de and ?lang=pl."""
    english = send("")
    german = send("", HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")
    polish = send("?lang=pl", HTTP_ACCEPT_LANGUAGE="de")
    assert english.status_code == german.status_code == polish.status_code, (
        english.json(),
        german.json(),
        polish.json(),
    )
    return english.json(), german.json(), polish.json()


def test_a_pure_layer_refusal_of_a_survey_is_explained_in_each_language(db):
    """privacy/mechanisms/channels.py refuses randomised response with retain <= 1/k; the
    message (an InputError template, no Django there) is translated in the API."""
    from privacy.mechanisms.channels import channel_conditioning, randomised_response

    pure = channel_conditioning(randomised_response(4, 0.2), retain=0.2).problem
    assert pure is not None and str(pure).startswith("retain must exceed 1/k = 1/4 = 0.25")
    tenant = tenant_factory()
    consultation = consultation_factory(tenant.organisation)
    body = {
        "consultation": consultation.pk, "kind": "opinion", "title": "Parks",
        "questions": [
            {"key": "site", "type": "nominal", "categories": ["A", "B", "C", "D"],
             "mechanism": {"name": "randomised_response", "retain": 0.2}},
        ],
    }  # fmt: skip
    en, de, pl = three_languages(
        lambda query, **headers: tenant.analyst.post(
            f"/api/v1/surveys/{query}", body, format="json", **headers
        )
    )
    assert en["errors"]["questions"][0]["mechanism"] == [f"randomised_response: {pure}."], (
        en
    )  # the English text is the pure layer's own
    assert de["errors"]["questions"][0]["mechanism"] == [
        "randomised_response: retain muss größer als 1/k = 1/4 = 0.25 sein: mit retain 0.2 "
        "sagt die gemeldete Antwort nichts über die wahre aus oder meldet sie seltener als der "
        "Zufall (verwenden Sie dafür eine negative Umfrage)."
    ], de
    assert pl["errors"]["questions"][0]["mechanism"][0].startswith(
        "randomised_response: retain musi być większe niż 1/k = 1/4 = 0.25: przy retain 0.2"
    ), pl
    assert de["detail"].startswith("Ungültige Eingabe") and "retain muss größer" in de["detail"]
    assert pl["detail"].startswith("Nieprawidłowe dane") and "retain musi być" in pl["detail"]
    assert not Survey.objects.exists()


def test_a_pure_layer_refusal_of_an_analysis_is_explained_in_each_language(db):
    """reconstruction/algorithms/methods.py (check_method) refuses nstops for a
    randomised-response channel; the API answers in the reader's language."""
    tenant = tenant_factory()
    body = {
        "counts": [30, 50, 20],
        "channel": [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]],
        "method": "nstops",
    }
    en, de, pl = three_languages(
        lambda query, **headers: tenant.analyst.post(
            f"/api/v1/aggregate-reconstructions/{query}", body, format="json", **headers
        )
    )
    assert en["errors"]["method"] == [
        "method 'nstops' applies only to the uniform negative survey"
    ], en
    assert de["errors"]["method"] == [
        "das Verfahren 'nstops' gilt nur für die gleichverteilte negative Umfrage"
    ], de
    assert pl["errors"]["method"] == [
        "metoda 'nstops' dotyczy tylko jednostajnej ankiety negatywnej"
    ], pl
    assert de["detail"].startswith("Ungültige Eingabe: method: das Verfahren"), de
    assert pl["detail"].startswith("Nieprawidłowe dane: method: metoda"), pl


SOURCES = ("config", "core", "consultations", "privacy", "reconstruction", "surveys", "webhooks")
MARKERS = {"_", "gettext", "gettext_lazy", "gettext_noop", "ngettext", "ngettext_lazy"}
TEMPLATE_TAG = re.compile(r"""\{%\s*translate\s+(["'])(.*?)\1""")


def marked_strings() -> dict[str, str]:
    """Every literal the project marks for translation: the arguments of gettext, its
    aliases and gettext_noop (the pure layer's templates and the Django side's messages),
    and the {% translate "..." %} tags of the templates; each with where it is."""
    import ast

    root = LOCALE.parent
    found: dict[str, str] = {}
    for package in SOURCES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name not in MARKERS:
                    continue
                plurals = node.args[:2] if name.startswith("ngettext") else node.args[:1]
                for arg in plurals:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found.setdefault(arg.value, f"{path.relative_to(root)}:{node.lineno}")
        for path in sorted((root / package).rglob("*.html")):
            for match in TEMPLATE_TAG.finditer(path.read_text()):
                # makemessages writes a template's "%" as "%%" (python-format)
                found.setdefault(match.group(2).replace("%", "%%"), str(path.relative_to(root)))
    return found


def test_every_marked_string_is_in_the_catalogues():
    """Every string marked anywhere (the pure layer's InputError templates, the analysis
    refusals the worker stores as template + parameters, the Django side's messages and
    the templates' tags) is extracted and translated: a new or changed message without
    its German and Polish fails here, naming it."""
    marked = marked_strings()
    # the pure layer's templates and the worker-side refusals are among them
    assert marked["method %(method)s applies only to the uniform negative survey"].startswith(
        "reconstruction/algorithms/"
    )
    assert marked[
        "the 95%% interval of the net shift toward %(category)s covers 0: the data do not "
        "show that the share of %(category)s changed"
    ].startswith("reconstruction/kinds/change.py")
    assert "%(field)s: %(problem)s" in marked
    assert len(marked) > 300
    for language in ("de", "pl"):
        po = polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))
        known = {e.msgid: e for e in po if not e.obsolete}
        known.update({e.msgid_plural: e for e in po if not e.obsolete and e.msgid_plural})
        missing = {
            text: where
            for text, where in marked.items()
            if text not in known or not known[text].translated() or "fuzzy" in known[text].flags
        }
        assert missing == {}, (language, missing)


def test_a_stored_job_reason_is_shown_in_the_readers_language(db, client):
    """A refusal is stored as its template and parameters (Job.error_message) and read in
    the API (?lang=, Accept-Language) and on the admin result page in the reader's language."""
    from django.contrib.auth.models import User

    from reconstruction.analysis import group_too_small
    from reconstruction.jobs import JobRefused, job_fail

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    job = AnalysisJob.objects.create(
        organisation=tenant.organisation, requested_by="key:test", survey=survey,
        kind="count", spec={"survey": survey.pk, "kind": "count"},
    )  # fmt: skip
    job_fail(AnalysisJob, job.pk, JobRefused(group_too_small(7)), status="refused")
    job.refresh_from_db()
    english = (
        "the group this condition selects is too small to publish (the 95% interval of its "
        "size reaches below 7)"
    )
    assert job.status == "refused" and job.error == english
    assert job.error_message == {"template": group_too_small(7).template, "params": {"needed": 7}}
    url = f"/api/v1/analyses/{job.pk}/"
    assert tenant.analyst.get(url).json()["error"] == english
    german = tenant.analyst.get(url, HTTP_ACCEPT_LANGUAGE="de").json()["error"]
    assert german.startswith("die Gruppe, die diese Bedingung auswählt, ist zu klein")
    assert german.endswith("reicht unter 7)")
    polish = tenant.analyst.get(url + "?lang=pl", HTTP_ACCEPT_LANGUAGE="de").json()["error"]
    assert polish.startswith("grupa wybrana przez ten warunek") and polish.endswith("poniżej 7)")
    # A reason stored before the template existed (no error_message) is shown as it is.
    AnalysisJob.objects.filter(pk=job.pk).update(error="an old reason", error_message=None)
    assert tenant.analyst.get(url, HTTP_ACCEPT_LANGUAGE="de").json()["error"] == "an old reason"
    AnalysisJob.objects.filter(pk=job.pk).update(
        error=english, error_message=group_too_small(7).as_json()
    )
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    page = client.get(
        f"/admin/reconstruction/analysisjob/{job.pk}/change/", HTTP_ACCEPT_LANGUAGE="pl"
    ).content.decode()
    assert "grupa wybrana przez ten warunek jest zbyt mała" in page
    assert "too small to publish" not in page


def test_reasons_stored_as_text_before_are_backfilled_with_their_template(db):
    import importlib

    from django.apps import apps
    from django.utils import translation

    migration = importlib.import_module("reconstruction.migrations.0006_job_error_message")
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))

    def job(error):
        return AnalysisJob.objects.create(
            organisation=tenant.organisation, requested_by="key:test", survey=survey,
            kind="count", spec={}, status="refused", error=error,
        )  # fmt: skip

    small = job(
        "the group this condition selects is too small to publish (the 95% interval of its "
        "size reaches below 5)"
    )
    crashed = job("Internal error (KeyError); the operators were told.")
    other = job("something nobody templated")
    migration.backfill(apps, None)
    for row in (small, crashed, other):
        row.refresh_from_db()
    assert small.error_message["params"] == {"needed": 5}
    assert crashed.error_message["params"] == {"error": "KeyError"}
    assert other.error_message is None
    with translation.override("de"):
        assert small.error_text().endswith("reicht unter 5)")
        assert (
            crashed.error_text() == "Interner Fehler (KeyError); der Betrieb wurde benachrichtigt."
        )
        assert other.error_text() == "something nobody templated"
    with translation.override("en"):
        assert small.error_text() == small.error


def test_a_malformed_json_body_is_explained_in_the_requested_language(db):
    tenant = tenant_factory()
    body = '{"title": NaN}'

    def send(query, **headers):
        return tenant.analyst.post(
            f"/api/v1/consultations/{query}", body, content_type="application/json", **headers
        )

    en, de, pl = three_languages(send)
    assert en["detail"] == "JSON parse error - NaN is not a JSON number; send a finite number."
    assert de["detail"] == (
        "JSON-Syntaxfehler - NaN ist keine JSON-Zahl; senden Sie eine endliche Zahl."
    )
    assert pl["detail"] == "Błąd składni JSON - NaN nie jest liczbą JSON; wyślij liczbę skończoną."


def test_a_refusal_found_only_in_the_worker_is_shown_in_the_readers_language(
    db, client, django_capture_on_commit_callbacks
):
    """A sample that fitted the participants when it was asked for, but no longer does when
    the worker runs it (two responses withdrawn meanwhile): the worker, in English, refuses
    it through the registry's request checks (an AnalysisInputError), and the reason is
    stored as template + parameters, so the API and the admin show it in en, de and pl."""
    from django.contrib.auth.models import User
    from django.utils import translation

    from reconstruction.services import analysis_run
    from surveys.services import response_submit, response_withdraw
    from tests.factories import good_answers

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    for index in range(15):
        response_submit(survey=survey, participant=f"p-{index}", answers=good_answers(index))
    body = {"survey": survey.pk, "kind": "sample", "size": 7, "seed": 3}
    asked = tenant.analyst.post("/api/v1/analyses/", body, format="json")
    assert asked.status_code == 202, asked.json()
    job_id = asked.json()["id"]
    for index in (0, 1):
        response_withdraw(survey=survey, participant=f"p-{index}")
    with translation.override("en"):  # a real worker speaks English
        analysis_run(job_id=job_id)
    job = AnalysisJob.objects.get(pk=job_id)
    # At most half of the 13 left (issue 26: the refusal names the threshold, no count).
    english = (
        "size: refused by disclosure control: a sample or panel (and each stratum) may take "
        "at most half of the participants estimated to meet its condition, and no group it "
        "implies may be smaller than the threshold of 5; ask for fewer participants or "
        "widen the condition"
    )
    assert (job.status, job.error) == ("refused", english)
    assert job.error_message["template"] == "%(field)s: %(problem)s"
    assert job.error_message["params"]["problem"]["params"] == {"threshold": 5}
    url = f"/api/v1/analyses/{job_id}/"
    assert tenant.analyst.get(url).json()["error"] == english
    german = tenant.analyst.get(url, HTTP_ACCEPT_LANGUAGE="de").json()["error"]
    polish = tenant.analyst.get(url + "?lang=pl", HTTP_ACCEPT_LANGUAGE="de").json()["error"]
    assert german.startswith("size: ") and german != english and "5" in german, german
    assert polish.startswith("size: ") and polish not in (english, german), polish
    with translation.override("de"):
        assert german == "size: " + translation.gettext(
            english[len("size: ") :].replace("threshold of 5", "threshold of %(threshold)s")
        ) % {"threshold": 5}
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    page = client.get(
        f"/admin/reconstruction/analysisjob/{job_id}/change/", HTTP_ACCEPT_LANGUAGE="pl"
    ).content.decode()
    assert polish in page and english not in page


def test_the_analysis_requests_field_errors_are_in_the_readers_language(db):
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    body = {"survey": survey.pk, "kind": "distribution", "seed": 4}
    en, de, pl = three_languages(
        lambda query, **headers: tenant.analyst.post(
            f"/api/v1/analyses/{query}", body, format="json", **headers
        )
    )
    assert en["errors"]["attribute"] == ["A distribution needs the attribute to analyse."], en
    assert de["errors"]["attribute"] == [
        "Eine Analyse der Art distribution braucht das zu analysierende Merkmal."
    ], de
    assert pl["errors"]["attribute"] == ["Analiza rodzaju distribution wymaga cechy do analizy."]
    assert en["errors"]["seed"] == ["Only a sample or panel takes 'seed'."], en
    assert de["errors"]["seed"] == ["Nur eine Analyse der Art sample oder panel nimmt 'seed'."]
    assert pl["errors"]["seed"] == ["Tylko analiza rodzaju sample lub panel przyjmuje 'seed'."]
    assert not AnalysisJob.objects.exists()


def test_the_survey_builder_is_labelled_in_the_organisers_language(db, client):
    from django.contrib.auth.models import User

    tenant = tenant_factory()
    draft = survey_factory(consultation_factory(tenant.organisation), open_it=False)
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    # The question cards' labels and boxes (issue 32: cards, privacy in plain words).
    headings = {
        "en": ["Key", "Range low", "Privacy mechanism", "Privacy", "Answers"],
        "de": ["Schlüssel", "Bereich von", "Datenschutzverfahren", "Datenschutz", "Antworten"],
        "pl": ["Klucz", "Zakres od", "Mechanizm prywatności", "Prywatność", "Możliwe odpowiedzi"],
    }
    for language, expected in headings.items():
        page = client.get(
            f"/admin/surveys/survey/{draft.pk}/change/?lang={language}"
        ).content.decode()
        shown = re.findall(r"<label[^>]*>\s*([^<]+?):\s*</label>", page)
        shown += re.findall(r'<h4[^>]*class="fieldset-heading">\s*([^<]+?)\s*<', page)
        assert all(label in shown for label in expected), (language, shown)
        added = client.get(f"/admin/surveys/survey/add/?lang={language}").content.decode()
        title = {"en": "Title", "de": "Titel", "pl": "Tytuł"}[language]
        assert f'<label class="required" for="id_title">{title}:</label>' in added, language


def test_the_admin_result_summary_is_in_the_organisers_language(
    db, client, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import User

    from surveys.services import response_submit
    from tests.factories import good_answers

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    for index in range(40):
        response_submit(survey=survey, participant=f"p-{index}", answers=good_answers(index))
    with django_capture_on_commit_callbacks(execute=True):
        asked = tenant.analyst.post(
            "/api/v1/analyses/",
            {"survey": survey.pk, "kind": "mean", "attribute": "age"},
            format="json",
        )
    job = AnalysisJob.objects.get(pk=asked.json()["id"])
    assert job.status == "succeeded", job.error
    low, high = job.result["ci95"]
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    # Rounded to two significant digits of the half-width, in each language's format.
    places = max(0, 1 - math.floor(math.log10((high - low) / 2)))
    en_low, en_high = f"{low:.{places}f}", f"{high:.{places}f}"
    de_low, de_high = en_low.replace(".", ","), en_high.replace(".", ",")
    expected = {
        "en": ("estimate", "method", f"{en_low} to {en_high}"),
        "de": ("Schätzung", "Verfahren", f"{de_low} bis {de_high}"),
        "pl": ("oszacowanie", "metoda", f"od {de_low} do {de_high}"),
    }
    for language, (estimate, method, interval) in expected.items():
        page = client.get(
            f"/admin/reconstruction/analysisjob/{job.pk}/change/?lang={language}"
        ).content.decode()
        summary = page.split('id="result-summary"')[1].split("</table>")[0]
        rows = dict(re.findall(r"<tr><th[^>]*>([^<]+)</th><td>([^<]+)</td></tr>", summary))
        # The method's paper name, then its one line in the reader's language.
        shown = rows.get(method, "")
        assert estimate in rows and shown.startswith(job.result["method"] + ": "), (language, rows)
        assert (language == "en") == ("average of everybody" in shown), (language, shown)
        assert interval in rows.values(), (language, rows)


def test_result_notes_are_stored_as_templates_and_read_in_each_language(
    db, client, django_capture_on_commit_callbacks
):
    """The pure engine's notes are stored language-neutral (template + parameters) and
    read in en, de and pl: an analysis's notes in the API, the admin result page and the
    export; a report's notes in its HTML, JSON and export. Plain-text notes stored before
    stay readable as they are."""
    from django.contrib.auth.models import User

    from surveys.services import response_submit
    from tests.factories import good_answers

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    for index in range(60):
        response_submit(survey=survey, participant=f"p-{index}", answers=good_answers(index))
    body = {
        "survey": survey.pk, "kind": "distribution", "attribute": "district",
        "where": [{"attribute": "sex", "op": "in", "value": ["F"]}],
    }  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        asked = tenant.analyst.post("/api/v1/analyses/", body, format="json")
        reported = tenant.analyst.post(f"/api/v1/surveys/{survey.pk}/reports/")
    job = AnalysisJob.objects.get(pk=asked.json()["id"])
    assert job.status == "succeeded", job.error
    within = "counts within the group; they sum to the estimated group size"
    assert job.result["notes"] == [{"template": within, "params": {}}]
    expected = {
        "en": within,
        "de": "Anzahlen innerhalb der Gruppe; sie summieren sich zur geschätzten Gruppengröße",
        "pl": "liczebności w obrębie grupy; sumują się do szacowanej wielkości grupy",
    }
    url = f"/api/v1/analyses/{job.pk}/"
    en, de, pl = three_languages(
        lambda query, **headers: tenant.analyst.get(url + query, **headers)
    )
    assert [en["result"]["notes"], de["result"]["notes"], pl["result"]["notes"]] == [
        [expected["en"]],
        [expected["de"]],
        [expected["pl"]],
    ]
    export = _notes(tenant.analyst.get(f"{url}export/?format=zip&lang=de").content)
    assert expected["de"] in export and within not in export
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    for language, text in expected.items():
        page = client.get(
            f"/admin/reconstruction/analysisjob/{job.pk}/change/?lang={language}"
        ).content.decode()
        assert f'<ul id="result-notes"><li>{text}</li></ul>' in page, language

    # A report: the continuous questions' EMS note, with its parameter.
    report = reported.json()["url"]
    stored = next(
        section["reconstructed"]["notes"]
        for section in tenant.analyst.get(f"{report}download/?format=json").json()["questions"]
        if section["key"] == "age"
    )
    ems = {
        "en": "EMS: EM with a smoothing step of strength 0.05 (Silverman et al.)",
        "de": "EMS: EM mit einem Glättungsschritt der Stärke 0.05 (Silverman et al.)",
        "pl": "EMS: EM z krokiem wygładzania o sile 0.05 (Silverman i in.)",
    }
    assert stored == [ems["en"]]
    for language, text in ems.items():
        html = tenant.analyst.get(f"{report}download/?format=html&lang={language}").content
        assert text in html.decode(), language
        document = tenant.analyst.get(f"{report}download/?format=json&lang={language}").json()
        age = next(s for s in document["questions"] if s["key"] == "age")
        assert age["reconstructed"]["notes"] == [text], language
        export = tenant.analyst.get(f"{report}export/?format=zip&lang={language}").content
        assert f"age: {text}" in _notes(export), language
    assert (
        "Silverman et al."
        not in tenant.analyst.get(
            f"{report}download/?format=html", HTTP_ACCEPT_LANGUAGE="pl"
        ).content.decode()
    )

    # A result stored before notes were translatable (plain English text) reads as stored.
    AnalysisJob.objects.filter(pk=job.pk).update(result={**job.result, "notes": ["an old note"]})
    assert tenant.analyst.get(url + "?lang=de").json()["result"]["notes"] == ["an old note"]
    page = client.get(f"/admin/reconstruction/analysisjob/{job.pk}/change/?lang=pl")
    assert "<li>an old note</li>" in page.content.decode()


def test_a_note_is_its_english_text_and_keeps_its_template_through_pickling():
    import pickle

    from privacy.mechanisms.messages import Note, note_json

    note = Note("rows %(rows)s had all mass on the diagonal; used uniform rows", rows="[1, 2]")
    assert note == "rows [1, 2] had all mass on the diagonal; used uniform rows"
    back = pickle.loads(pickle.dumps(note))
    assert back == note and note_json(back) == {
        "template": "rows %(rows)s had all mass on the diagonal; used uniform rows",
        "params": {"rows": "[1, 2]"},
    }
    assert note_json("plain text") == "plain text"


def test_the_admin_names_apps_models_and_columns_in_the_organisers_language(db, client):
    """Apps, models and the changelists' fields carry verbose names through gettext_lazy:
    the admin index and the analysis jobs' changelist in de (and pl) show no English."""
    from django.contrib.auth.models import User

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation))
    AnalysisJob.objects.create(
        organisation=tenant.organisation, requested_by="key:test", survey=survey,
        kind="count", spec={},
    )  # fmt: skip
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    index = {
        "en": ["Reconstruction", "Analysis jobs", "Surveys", "API keys", "Deliveries"],
        "de": ["Rekonstruktion", "Analyseaufträge", "Umfragen", "API-Schlüssel", "Zustellungen"],
        "pl": ["Rekonstrukcja", "Zadania analizy", "Ankiety", "Klucze API", "Doręczenia"],
    }
    columns = {
        "en": ["Kind", "Survey", "Status", "Progress", "Requested by", "Created at"],
        "de": ["Art", "Umfrage", "Status", "Fortschritt", "Angefordert von", "Erstellt am"],
        "pl": ["Rodzaj", "Ankieta", "Status", "Postęp", "Zlecone przez", "Utworzono"],
    }
    for language, names in index.items():
        page = client.get(f"/admin/?lang={language}").content.decode()
        shown = re.findall(r"<(?:caption|th scope=\"row\"[^>]*)>\s*<a [^>]*>([^<]+)</a>", page)
        assert all(name in shown for name in names), (language, shown)
        # (?lang= is taken for a filter on a changelist: the header chooses there)
        changelist = client.get(
            "/admin/reconstruction/analysisjob/", HTTP_ACCEPT_LANGUAGE=language
        ).content.decode()
        headers = re.findall(r'<div class="text">\s*(?:<a [^>]*>)?([^<]+?)\s*<', changelist)
        assert all(name in headers for name in columns[language]), (language, headers)
    german = client.get("/admin/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert (
        "Analysis jobs" not in german
        and "Requested by"
        not in client.get(
            "/admin/reconstruction/analysisjob/", HTTP_ACCEPT_LANGUAGE="de"
        ).content.decode()
    )


# --------------------------------------------------------------------------- the catalogues' home


def test_scrambled_answers_are_not_called_encrypted_or_hidden():
    """A resident's answer is randomly distorted, not encrypted (German "verschlüsselt" says
    the organisers could decrypt it) and not hidden: the wording says "verfremdet" and
    "zniekształcony" (the German page said "verschlüsselt" until the .po files became the
    only source)."""
    wrong = {"de": re.compile(r"schlüssel|versteck|verborg", re.I),
             "pl": re.compile(r"szyfr|ukry", re.I)}  # fmt: skip
    right = {"de": re.compile(r"verfremd|verfälsch|verzerr", re.I),
             "pl": re.compile(r"zniekształc", re.I)}  # fmt: skip
    for language in ("de", "pl"):
        po = polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))
        scrambled = [e for e in po if re.search(r"scrambl", e.msgid, re.I)]
        assert len(scrambled) >= 4
        for entry in scrambled:
            assert not wrong[language].search(entry.msgstr), (language, entry.msgstr)
            assert right[language].search(entry.msgstr), (language, entry.msgstr)


def test_the_po_files_are_the_only_source_and_the_image_compiles_them(tmp_path):
    """No second copy of the translations (the old locale/catalogue.py and its fill script);
    no committed .mo; the Dockerfile's msgfmt step, run as written on a copy of locale/,
    compiles every .po into a .mo that says what the .po says."""
    import shutil
    import subprocess

    assert sorted(p.name for p in LOCALE.iterdir() if p.is_file()) == []
    ignored = (LOCALE.parent / ".gitignore").read_text().splitlines()
    assert "*.mo" in ignored
    dockerfile = (LOCALE.parent / "Dockerfile").read_text()
    (step,) = [
        line.removeprefix("RUN ")
        for line in dockerfile.splitlines()
        if line.startswith("RUN ") and "msgfmt" in line
    ]
    assert "COPY --from=catalogues /locale locale" in dockerfile
    assert shutil.which("msgfmt"), "GNU gettext is missing: apt-get install gettext"
    copy = tmp_path / "locale"
    shutil.copytree(LOCALE, copy, ignore=shutil.ignore_patterns("*.mo"))
    subprocess.run(["sh", "-c", step.replace("/locale", str(copy))], check=True)
    for language in ("de", "pl"):
        po = polib.pofile(str(copy / language / "LC_MESSAGES" / "django.po"))
        mo = polib.mofile(str(copy / language / "LC_MESSAGES" / "django.mo"))
        assert {e.msgid: e.msgstr for e in mo if e.msgid and not e.msgid_plural} == {
            e.msgid: e.msgstr for e in po if not e.obsolete and not e.msgid_plural
        }


# Different English strings that may share one translation: the language has one word
# for both (German "API-Schlüssel" is singular and plural; Polish "przedział" is both a
# quota's band and an interval).
SHARED_TRANSLATIONS = {
    "de": [{"API key", "API keys"}],
    "pl": [{"Panel size", "the panel size"}, {"Draw a panel", "Draw the panel"},
           {"Band", "interval"}],
}  # fmt: skip


def test_no_two_different_strings_share_one_translation():
    """A translation copied onto the wrong entry (a merge's fuzzy match accepted, a row of
    a table pasted one line off) shows as two different English strings with one German
    or Polish text: "No distortion" and "iterations" were both "Iterationen", and the
    mechanism "Randomised response" was "Mindestzahl der Antworten" (min responses)."""
    for language in ("de", "pl"):
        po = polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))
        by_text: dict[str, set[str]] = {}
        for entry in po:
            if not entry.obsolete and not entry.msgid_plural and entry.msgstr:
                by_text.setdefault(entry.msgstr.strip().lower(), set()).add(entry.msgid)
        shared = [
            msgids
            for msgids in by_text.values()
            if len({m.lower().strip(" .") for m in msgids}) > 1
            and msgids not in SHARED_TRANSLATIONS[language]
        ]
        assert shared == [], (language, shared)


def _notes(bundle: bytes) -> str:
    """The notes of an export's zip (reconstruction/exports.py: notes.csv)."""
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        return archive.read("notes.csv").decode()
