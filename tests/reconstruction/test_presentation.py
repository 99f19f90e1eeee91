"""How reports read: SVG charts with the legend clear of the bars, plain-language privacy
sentences, a visible warning on wide intervals, the language asked for, and exports."""

from __future__ import annotations

import io
import re
import zipfile

import openpyxl
import pandas as pd
import pytest
from django.utils import translation

from reconstruction import exports
from reconstruction.presentation import (
    draw_chart,
    language_of,
    privacy_sentence,
    render_report_html,
)

LABELS = ["strongly disagree", "disagree", "neutral", "agree", "strongly agree"]


def section(**changes):
    base = {
        "key": "opinion",
        "text": "Do you agree?",
        "type": "ordinal",
        "mechanism": {"name": "randomised_response", "retain": 0.7},
        "epsilon": 2.2513,
        "responses": 400,
        "published": True,
        "translations": {
            "de": {
                "text": "Stimmen Sie zu?",
                "labels": ["gar nicht", "eher nicht", "neutral", "eher ja", "voll"],
            }
        },
        "reconstructed": {
            "categories": ["sd", "d", "n", "a", "sa"],
            "counts": [40.0, 90.0, None, 150.0, 30.0],
            "proportions": [0.1, 0.225, None, 0.375, 0.075],
            "ci95": [[20.0, 60.0], [70.0, 110.0], None, [120.0, 180.0], [2.0, 70.0]],
            "suppressed": [False, False, True, False, False],
            "method": "em_as",
            "iterations": 12,
            "converged": True,
            "notes": [],
        },
        "naive": {
            "counts": [60.0, 90.0, None, 130.0, 50.0],
            "suppressed": [False, False, True, False, False],
            "below_threshold": [False, False, True, False, False],
        },
    }
    base.update(changes)
    return base


def document(*sections):
    return {
        "survey": 3,
        "title": "Library hours",
        "consultation": "Leeds",
        "status": "open",
        "responses": 400,
        "generated_at": "2026-11-23T10:00:00+00:00",
        "thresholds": {"min_responses": 10, "min_cell": 5},
        "questions": list(sections),
    }


@pytest.mark.parametrize("labels", [["sd", "d", "n", "a", "sa"], LABELS])
def test_the_legend_is_never_over_a_bar(labels):
    figure = draw_chart(section(), labels)
    renderer = figure.canvas.get_renderer()
    (legend,) = figure.legends
    box = legend.get_window_extent(renderer)
    (axes,) = figure.axes
    bars = [patch.get_window_extent(renderer) for patch in axes.patches]
    assert len(bars) == 10
    assert not any(box.overlaps(bar) for bar in bars)
    assert not box.overlaps(axes.get_window_extent(renderer))


def test_long_labels_are_written_level_and_in_full():
    figure = draw_chart(section(), LABELS)
    (axes,) = figure.axes
    figure.canvas.draw()
    ticks = axes.get_yticklabels()
    assert [t.get_text() for t in ticks] == LABELS
    assert all(t.get_rotation() == 0 and t.get_fontsize() >= 9 for t in ticks)


def test_the_html_report_has_svg_charts_sized_for_the_page_and_a_wide_interval_warning():
    html = render_report_html(document(section()))
    charts = re.findall(r"<svg[^>]*>", html)
    assert len(charts) == 1
    width = float(re.search(r'width="([\d.]+)pt"', charts[0]).group(1))
    assert 500 <= width <= 720  # 8 in: the 60rem page, scaled down on narrow screens
    assert ".chart svg { width: 100%; height: auto; }" in html
    # [2, 70] is wider than its estimate 30: one row flagged and a visible warning.
    assert html.count('class="wide"') == 1
    assert "Warning: for 1 row the 95% interval is wider than the estimate itself" in html
    assert ">sd<" in html and "data:image/png" not in html


def test_privacy_is_one_plain_sentence_per_question():
    rr = privacy_sentence(section())
    assert "kept the true answer with probability 70%" in rr
    assert "at most 9.5 times as likely" in rr and "ε = 2.251" in rr
    negative = privacy_sentence(section(mechanism={"name": "negative_uniform"}, epsilon=None))
    assert "not the resident's own" in negative and "unbounded" not in negative
    noise = privacy_sentence(
        section(type="continuous", mechanism={"name": "additive_uniform", "half_width": 10},
                epsilon=None)
    )  # fmt: skip
    assert "up to ±10" in noise
    assert "not protected" in privacy_sentence(section(mechanism={"name": "none"}, epsilon=None))


def test_the_report_reads_in_german_and_polish_with_the_questions_translations():
    german = render_report_html(document(section()), language="de")
    assert '<html lang="de">' in german
    assert "Stimmen Sie zu?" in german and ">eher ja<" in german
    assert "Warnung" in german and "Warning" not in german
    polish = render_report_html(document(section()), language="pl")
    assert '<html lang="pl">' in polish and "Ostrzeżenie" in polish
    # No Polish translation of the question: its own text and categories.
    assert "Do you agree?" in polish and ">sa<" in polish


@pytest.mark.parametrize(
    ("requested", "expected"), [("de", "de"), ("de-AT", "de"), ("pl_PL", "pl"), ("fr", "en"),
                                (None, "en")]
)  # fmt: skip
def test_language_of_falls_back_to_the_default(requested, expected):
    assert language_of(requested) == expected


def test_report_csv_is_a_plain_table_and_the_zip_describes_it():
    export = exports.report_export(document(section()))
    raw = exports.to_csv(export).decode()
    assert not [line for line in raw.splitlines() if line.startswith("#")]
    table = pd.read_csv(io.StringIO(raw))
    assert list(table["cell"]) == ["sd", "d", "n", "a", "sa"]
    assert table["suppressed"].tolist() == [False, False, True, False, False]
    assert table["estimate"].isna().tolist() == [False, False, True, False, False]
    assert table.loc[3, "ci95_high"] == 180.0
    with zipfile.ZipFile(io.BytesIO(exports.to_zip(export, "report"))) as archive:
        assert archive.read("report.csv").decode() == raw
        columns = pd.read_csv(io.BytesIO(archive.read("columns.csv")))
        assert (
            "distorted answers in the cell, counted as if they were true"
            in columns.set_index("column").loc["naive_count"].tolist()
        )
        assert "never held a true answer" in archive.read("notes.csv").decode()
        assert "request.json" not in archive.namelist()  # a report has no request


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("estimate", 1234.56789, 1234.6),
        ("estimate", 3.14159, 3.14),
        ("ci95_low", 0.0123456, 0.0123),
        ("proportion", 0.123456789, 0.1235),
        ("estimate", 0.0, 0.0),
        ("estimate", 7, 7),
        ("suppressed", True, True),
        ("cell", "[16, 20)", "[16, 20)"),
    ],
)
def test_numbers_are_rounded_for_reading(column, value, expected):
    assert exports.rounded(column, value) == expected


def test_report_xlsx_export_has_the_table_columns_and_privacy_sheets():
    with translation.override("de"):
        export = exports.report_export(document(section()), "de")
        content = exports.to_xlsx(export, "report")
    book = openpyxl.load_workbook(io.BytesIO(content))
    assert book.sheetnames == ["report", "columns", "privacy"]
    rows = list(book["report"].values)
    assert rows[0][:3] == ("question", "text", "cell")
    assert [r[2] for r in rows[1:]] == ["gar nicht", "eher nicht", "neutral", "eher ja", "voll"]
    described = {r[0] for r in list(book["columns"].values)[1:]}
    assert described == set(rows[0])
    notes = [r[0] for r in list(book["privacy"].values)[1:]]
    assert any("10" in note and "5" in note for note in notes)


@pytest.mark.parametrize(
    ("kind", "result", "columns"),
    [
        ("count", {"estimate": 312.4, "ci95": [290.1, 335.0], "population": 2000,
                   "suppressed": False, "method": "joint"},
         ["estimate", "ci95_low", "ci95_high", "suppressed", "population", "method"]),
        ("distribution", {"categories": ["F", "M"], "counts": [10.0, 20.0],
                          "proportions": [0.33, 0.67], "ci95": [[5, 15], [15, 25]],
                          "suppressed": [False, False], "method": "eq", "notes": ["n1"]},
         ["cell", "estimate", "proportion", "ci95_low", "ci95_high", "suppressed", "method"]),
        ("sample", {"participants": ["p-1", "p-2"], "pool_estimate": 830.2},
         ["participant"]),
    ],
)  # fmt: skip
def test_analysis_exports_have_one_table_per_kind(kind, result, columns):
    export = exports.analysis_export(
        kind, {"kind": kind}, result, {"min_responses": 10, "min_cell": 5}
    )
    assert list(export.data.columns) == columns
    assert all(export.columns.get(c) for c in columns)
    assert any("never held a true answer" in n for n in export.notes)


def test_an_analysis_chart_has_no_naive_bars_or_legend_entry():
    from reconstruction.presentation import result_chart_svg

    svg = result_chart_svg(
        {"categories": ["F", "M"], "counts": [10.0, 20.0], "ci95": [[5, 15], [15, 25]]}
    )
    assert svg.startswith("<svg") and "reconstructed estimate" in svg
    assert "counted as if true" not in svg
    interval = result_chart_svg({"estimate": 40.0, "ci95": [30.0, 50.0]})
    assert interval.startswith("<svg")
    assert result_chart_svg({"participants": ["p-1"]}) == ""
