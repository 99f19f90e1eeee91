"""Analyses and report tables as CSV and XLSX downloads, and reports in the language asked
for (tasks run in-process on SQLite)."""

from __future__ import annotations

import io
from typing import Any

import openpyxl
import pandas as pd
import pytest
from rest_framework.test import APIClient

from consultations.models import Organisation
from tests.reconstruction.data import Consultation, distorted_consultation

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(analyst: APIClient) -> Consultation:
    return distorted_consultation(Organisation.objects.get(slug="north"), n=400, seed=5)


def run(client: APIClient, capture: Any, url: str, body: dict | None = None) -> dict:
    with capture(execute=True):
        response = client.post(url, body or {}, format="json")
    assert response.status_code == 202, response.json()
    job = client.get(response.json()["url"]).json()
    assert job["status"] == "succeeded", job
    return job


def test_a_report_table_downloads_as_csv_and_xlsx(
    analyst, data, django_capture_on_commit_callbacks
):
    report = run(analyst, django_capture_on_commit_callbacks,
                 f"/api/v1/surveys/{data.opinion.pk}/reports/")  # fmt: skip
    url = f"/api/v1/reports/{report['id']}/export/"
    csv = analyst.get(url, {"format": "csv"})
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    assert f'report-{report["id"]}.csv"' in csv["Content-Disposition"]
    text = csv.content.decode()
    assert text.startswith("# Columns\n") and "# Privacy notes\n" in text
    table = pd.read_csv(io.StringIO(text), comment="#")
    document = analyst.get(f"/api/v1/reports/{report['id']}/download/?format=json").json()
    published = [q for q in document["questions"] if q["published"]]
    expected_rows = sum(len(q["reconstructed"]["counts"]) for q in published) + sum(
        1 for q in document["questions"] if not q["published"]
    )
    assert len(table) == expected_rows
    first = published[0]
    rows = table[table["question"] == first["key"]]
    estimates = [c for c in first["reconstructed"]["counts"]]
    assert rows["estimate"].tolist() == pytest.approx(
        [float("nan") if c is None else c for c in estimates], nan_ok=True
    )

    xlsx = analyst.get(url, {"format": "xlsx", "lang": "pl"})
    assert xlsx.status_code == 200
    book = openpyxl.load_workbook(io.BytesIO(xlsx.content))
    assert book.sheetnames == ["report", "columns", "privacy"]
    header = next(book["report"].values)
    described = [row[0] for row in list(book["columns"].values)[1:]]
    assert described == list(header)
    assert next(iter(book["columns"].values)) == ("kolumna", "znaczenie")  # Polish, as asked
    notes = [row[0] for row in list(book["privacy"].values)[1:]]
    assert any("serwer nigdy nie miał prawdziwej odpowiedzi" in note for note in notes)

    assert analyst.get(url, {"format": "pdf"}).status_code == 400


def test_an_analysis_downloads_as_csv_and_xlsx(analyst, data, django_capture_on_commit_callbacks):
    job = run(
        analyst,
        django_capture_on_commit_callbacks,
        "/api/v1/analyses/",
        {"survey": data.opinion.pk, "kind": "distribution", "attribute": "satisfaction"},
    )
    url = f"/api/v1/analyses/{job['id']}/export/"
    table = pd.read_csv(io.StringIO(analyst.get(url).content.decode()), comment="#")
    assert table["cell"].astype(str).tolist() == job["result"]["categories"]
    assert table["estimate"].tolist() == pytest.approx(
        [float("nan") if c is None else c for c in job["result"]["counts"]], nan_ok=True
    )
    book = openpyxl.load_workbook(io.BytesIO(analyst.get(url, {"format": "xlsx"}).content))
    assert book.sheetnames == ["distribution", "columns", "privacy"]


def test_exports_of_another_organisation_are_404(
    analyst, other_analyst, data, django_capture_on_commit_callbacks
):
    report = run(analyst, django_capture_on_commit_callbacks,
                 f"/api/v1/surveys/{data.opinion.pk}/reports/")  # fmt: skip
    assert other_analyst.get(f"/api/v1/reports/{report['id']}/export/").status_code == 404


def test_the_html_report_is_rendered_in_the_language_asked_for(
    analyst, data, django_capture_on_commit_callbacks
):
    report = run(analyst, django_capture_on_commit_callbacks,
                 f"/api/v1/surveys/{data.opinion.pk}/reports/")  # fmt: skip
    url = f"/api/v1/reports/{report['id']}/download/"
    english = analyst.get(url, {"format": "html"}).content.decode()
    german = analyst.get(url, {"format": "html"}, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    polish = analyst.get(url, {"format": "html", "lang": "pl"}).content.decode()
    assert '<html lang="en">' in english and "reconstructed" in english
    assert '<html lang="de">' in german and "rekonstruiert" in german
    assert '<html lang="pl">' in polish and "odtworzone" in polish
    assert german.count("<svg") == english.count("<svg") > 0
