"""Analyses and report tables as CSV and XLSX downloads, and reports in the language asked
for (tasks run in-process on SQLite)."""

from __future__ import annotations

import io
import json
import zipfile
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
    # A plain table: the header first, no comment lines (Excel shows them as data rows).
    assert text.startswith("question,text,cell,naive_count,estimate,proportion,")
    assert not any(line.startswith("#") for line in text.splitlines())
    table = pd.read_csv(io.StringIO(text))
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
        [float("nan") if c is None else c for c in estimates], nan_ok=True, abs=0.05
    )
    # Rounded: no 17-digit floats.
    assert all(len(str(v).split(".")[-1]) <= 4 for v in table["estimate"].dropna())

    # The zip: the same table, what its columns mean, the notes.
    bundle = analyst.get(url, {"format": "zip", "lang": "de"})
    assert bundle.status_code == 200 and bundle["Content-Type"] == "application/zip"
    assert f'report-{report["id"]}.zip"' in bundle["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as archive:
        assert sorted(archive.namelist()) == ["columns.csv", "notes.csv", "report.csv"]
        german = pd.read_csv(io.BytesIO(archive.read("report.csv")))
        assert list(german.columns) == list(table.columns) and len(german) == len(table)
        columns = pd.read_csv(io.BytesIO(archive.read("columns.csv")))
        assert columns.iloc[:, 0].tolist() == list(table.columns)
        notes = archive.read("notes.csv").decode()
        assert "Server" in notes and "Every answer" not in notes  # German, as asked

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
    text = analyst.get(url).content.decode()
    assert text.startswith("cell,estimate,proportion,ci95_low,ci95_high,suppressed,method\n")
    table = pd.read_csv(io.StringIO(text))
    assert table["cell"].astype(str).tolist() == job["result"]["categories"]
    assert table["estimate"].tolist() == pytest.approx(
        [float("nan") if c is None else c for c in job["result"]["counts"]], nan_ok=True, abs=0.05
    )
    assert all(len(str(v).split(".")[-1]) <= 4 for v in table["proportion"].dropna())
    request = {"survey": data.opinion.pk, "kind": "distribution", "attribute": "satisfaction"}
    with zipfile.ZipFile(io.BytesIO(analyst.get(url, {"format": "zip"}).content)) as archive:
        assert sorted(archive.namelist()) == [
            "columns.csv", "distribution.csv", "notes.csv", "request.json",
        ]  # fmt: skip
        # The request as JSON, not a Python repr ({'kind': ...} before).
        assert json.loads(archive.read("request.json"))["kind"] == "distribution"
        assert json.loads(archive.read("request.json")).items() >= request.items()
    book = openpyxl.load_workbook(io.BytesIO(analyst.get(url, {"format": "xlsx"}).content))
    assert book.sheetnames == ["distribution", "columns", "privacy", "request"]
    assert json.loads(book["request"]["A2"].value)["attribute"] == "satisfaction"
    notes = [row[0] for row in book["privacy"].values]
    assert not any("{'" in str(note) for note in notes)  # no Python repr anywhere


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
