"""Analyses and report tables as CSV, XLSX and ZIP downloads, built with pandas and openpyxl.

The table is a plain table a spreadsheet opens as it is: a header row, then one row per
cell, participant or result, numbers rounded (:func:`rounded`). What the columns mean, the
privacy notes (how answers were distorted, the disclosure thresholds, what "suppressed"
means) and, for an analysis, its request as JSON travel beside it, never inside it:

- ``csv``: the table alone;
- ``zip``: the table (``<title>.csv``), ``columns.csv``, ``notes.csv`` and, for an
  analysis, ``request.json``;
- ``xlsx``: the sheets ``<title>``, ``columns``, ``privacy`` and, for an analysis,
  ``request``.

A kind contributes its table as an :class:`Export` (its rows, the meaning of its columns,
its notes): reconstruction/transitions.py does for a change what :func:`analysis_export`
does for the other kinds.

Spreadsheet formula injection (OWASP "CSV injection"): a question text, category or
reference is typed by an analyst, staff member or portal, so a cell that a spreadsheet
would read as a formula (it begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return, and is not a plain number) is written with a leading ``'`` in CSV (the writer is
``defusedcsv``'s, which also escapes ``|`` and ``%``); XLSX cells are typed: a string is
always a string cell, never a formula (:func:`to_xlsx`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import openpyxl
import pandas as pd
from defusedcsv import csv as defused_csv
from django.utils.translation import gettext as _
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

from core.messages import localise_result, translate_notes
from reconstruction import transitions
from reconstruction.presentation import privacy_sentence, section_labels

CSV_TYPE = "text/csv; charset=utf-8"
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ZIP_TYPE = "application/zip"
FORMATS = {"csv": CSV_TYPE, "xlsx": XLSX_TYPE, "zip": ZIP_TYPE}

# OWASP's formula triggers; defusedcsv covers the first four (and | and %), not tab and CR.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"-?[0-9.,]+(e[+-]?[0-9]+)?", re.IGNORECASE)


def safe_cell(value: Any) -> Any:
    """``value`` as a spreadsheet may show it without running it: a string that begins
    with a formula trigger and is not a plain number gets a leading ``'``."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return value
    if _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value


def csv_writer(out: Any, **options: Any) -> Any:
    """A CSV writer that neutralises formula cells (defusedcsv, plus tab and CR)."""
    inner = defused_csv.writer(out, **options)

    class _Writer:
        def writerow(self, row: Iterable[Any]) -> Any:
            return inner.writerow([safe_cell(v) for v in row])

        def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
            for row in rows:
                self.writerow(row)

    return _Writer()


def safe_csv_lines(text: str) -> Iterator[str]:
    """An already written CSV (e.g. a stored attachment) rewritten through
    :func:`csv_writer`, one line at a time."""
    reader = defused_csv.reader(io.StringIO(text))
    for row in reader:
        out = io.StringIO()
        csv_writer(out, lineterminator="\n").writerow(row)
        yield out.getvalue()


@dataclass(frozen=True)
class Export:
    """One table with what its columns mean, the privacy notes that apply to it and,
    for an analysis, the request it answers (written as JSON beside the table)."""

    data: pd.DataFrame
    columns: dict[str, str]
    notes: list[str]
    request: Mapping[str, Any] | None = None

    def description(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                _("column"): list(self.data.columns),
                _("meaning"): [self.columns.get(c, "") for c in self.data.columns],
            }
        )


def _disclosure_notes(thresholds: dict[str, Any] | None) -> list[str]:
    distorted = (
        _(
            "Every answer was distorted on the resident's device before it was sent; the server never held a true answer. Estimates are reconstructed from the distorted answers and carry 95%% intervals."  # noqa: E501
        )
        % {}
    )
    notes = [
        distorted,
        _(
            "A suppressed number is empty: it was estimated below the publication "
            "threshold, or hidden so that it cannot be derived from the others."
        ),
    ]
    if thresholds:
        notes.append(
            _(
                "Publication thresholds: at least %(min_responses)s responses per question, "
                "at least %(min_cell)s per published cell."
            )
            % thresholds
        )
    return notes


def _columns() -> dict[str, str]:
    return {
        "question": _("question key"),
        "text": _("question text"),
        "cell": _("category, or interval [low, high) of a continuous question"),
        "naive_count": _("distorted answers in the cell, counted as if they were true"),
        "estimate": _("reconstructed estimate of the true value"),
        "proportion": _("reconstructed share of the participants"),
        "ci95_low": _("lower end of the 95%% interval") % {},
        "ci95_high": _("upper end of the 95%% interval") % {},
        "suppressed": _("true when the number is withheld by disclosure control"),
        "method": _("reconstruction method"),
        "epsilon": _("local differential privacy level ε of the question (empty: unbounded)"),
        "responses": _("responses to the question"),
        "privacy": _("what the resident's device did to the answer"),
        "population": _("participants the count is taken over"),
        "group_size": _("estimated number of participants the mean is taken over"),
        "participant": _("the portal's pseudonymous participant reference"),
        "field": _("name of a result field"),
        "value": _("its value"),
    }


def _pair(pair: Any) -> tuple[Any, Any]:
    if isinstance(pair, list | tuple) and len(pair) == 2:
        return pair[0], pair[1]
    return None, None


def report_export(document: dict[str, Any], language: str | None = None) -> Export:
    """One row per published cell of every question; unpublished questions get one row."""
    rows = []
    notes = _disclosure_notes(document.get("thresholds"))
    for section in document["questions"]:
        # each question's reconstruction notes, in the active language
        for note in translate_notes((section.get("reconstructed") or {}).get("notes")):
            notes.append(f"{section['key']}: {note}")
        base = {
            "question": section["key"],
            "text": section.get("text", ""),
            "epsilon": section.get("epsilon"),
            "responses": section["responses"],
            "privacy": privacy_sentence(section),
        }
        if not section["published"]:
            rows.append({**base, "cell": None, "suppressed": True})
            continue
        reconstructed = section["reconstructed"]
        for i, label in enumerate(section_labels(section, language)):
            low, high = _pair(reconstructed["ci95"][i])
            rows.append(
                {
                    **base,
                    "cell": label,
                    "naive_count": section["naive"]["counts"][i],
                    "estimate": reconstructed["counts"][i],
                    "proportion": reconstructed["proportions"][i],
                    "ci95_low": low,
                    "ci95_high": high,
                    "suppressed": bool(reconstructed["suppressed"][i]),
                    "method": reconstructed["method"],
                }
            )
    order = [
        "question", "text", "cell", "naive_count", "estimate", "proportion", "ci95_low",
        "ci95_high", "suppressed", "method", "epsilon", "responses", "privacy",
    ]  # fmt: skip
    data = pd.DataFrame(rows, columns=order)
    return Export(data, _columns(), notes)


def analysis_export(
    kind: str, spec: dict[str, Any], result: dict[str, Any], thresholds: dict[str, Any] | None
) -> Export:
    """The result table of an analysis: one row per category or interval for a
    distribution, one row per participant for a sample or panel, one row otherwise; its
    notes and messages (a panel's guarantee) in the active language."""
    result = localise_result(result)
    columns = _columns()
    notes = _disclosure_notes(thresholds)
    notes.extend(translate_notes(result.get("notes")))
    return dataclasses.replace(_analysis_table(result, columns, notes), request=dict(spec))


def _analysis_table(result: dict[str, Any], columns: dict[str, str], notes: list[str]) -> Export:
    """The table of :func:`analysis_export` by the shape of the result."""
    if transitions.is_change(result):
        notes.extend(transitions.net_shift_sentences(result))
        order = [
            "quantity", "before", "after", "category", "estimate", "ci95_low", "ci95_high",
            "suppressed",
        ]  # fmt: skip
        data = pd.DataFrame(transitions.table_rows(result), columns=order)
        return Export(data, {**columns, **transitions.columns()}, notes)
    if "counts" in result and ("categories" in result or "intervals" in result):
        labels = (
            [str(c) for c in result["categories"]]
            if "categories" in result
            else [f"[{a:g}, {b:g})" for a, b in result["intervals"]]
        )
        rows = []
        for i, label in enumerate(labels):
            low, high = _pair((result.get("ci95") or [None] * len(labels))[i])
            rows.append(
                {
                    "cell": label,
                    "estimate": result["counts"][i],
                    "proportion": (result.get("proportions") or [None] * len(labels))[i],
                    "ci95_low": low,
                    "ci95_high": high,
                    "suppressed": bool((result.get("suppressed") or [False] * len(labels))[i]),
                    "method": result.get("method"),
                }
            )
        return Export(pd.DataFrame(rows), columns, notes)
    if isinstance(result.get("participants"), list):
        data = pd.DataFrame({"participant": result["participants"]})
        reserves = result.get("reserves")
        if isinstance(reserves, list):  # a panel: members, then the reserves in order
            data = pd.DataFrame(
                {
                    "participant": [*result["participants"], *reserves],
                    "reserve_rank": pd.array(
                        [None] * len(result["participants"]) + list(range(1, len(reserves) + 1)),
                        dtype="Int64",
                    ),
                }
            )
            columns["reserve_rank"] = _("empty for a panel member; 1, 2, ... for the reserves")
        for quota in result.get("quotas") or []:
            if isinstance(quota, dict) and "expected" in quota:
                low, high = _pair(quota.get("ci95"))
                notes.append(
                    _(
                        "%(label)s: quota %(min)s to %(max)s, expected true count %(expected)s "
                        "(95%% interval %(low)s to %(high)s)"
                    )
                    % {
                        "label": quota.get("label", ""),
                        "min": quota.get("min"),
                        "max": quota.get("max"),
                        "expected": f"{float(quota['expected']):.2f}",
                        "low": "—" if low is None else f"{float(low):.2f}",
                        "high": "—" if high is None else f"{float(high):.2f}",
                    }
                )
        for name, value in result.items():
            if name != "participants" and not isinstance(value, list | dict):
                notes.append(f"{name}: {value}")
        return Export(data, columns, notes)
    if "estimate" in result:
        low, high = _pair(result.get("ci95"))
        row = {
            "estimate": result.get("estimate"),
            "ci95_low": low,
            "ci95_high": high,
            "suppressed": bool(result.get("suppressed", False)),
        }
        for name, value in result.items():
            if (
                name not in row
                and name not in ("ci95", "notes")
                and not isinstance(value, list | dict)
            ):
                row[name] = value
        return Export(pd.DataFrame([row]), columns, notes)
    flat = [
        {"field": name, "value": value}
        for name, value in result.items()
        if not isinstance(value, list | dict)
    ]
    return Export(pd.DataFrame(flat, columns=["field", "value"]), columns, notes)


def _plain(value: Any) -> Any:
    """A cell's value as the csv module writes it: missing values empty."""
    try:
        if value is None or bool(pd.isna(value)):
            return None
    except (TypeError, ValueError):
        return value
    return value.item() if hasattr(value, "item") else value


# Columns whose numbers are shares or probabilities, and their decimals.
_FINE = {"proportion": 4, "selection_probability": 6, "epsilon": 3}


def rounded(column: str, value: Any) -> Any:
    """A number as a reader wants it in a table: shares and probabilities to a few
    decimals (:data:`_FINE`), other numbers to 1 decimal from 100 on, 2 from 1 on and 3
    significant digits below (a mean of a 1-5 scale keeps 2.47, a count 1,234.5); whole
    numbers, booleans and text as they are."""
    plain = _plain(value)
    if not isinstance(plain, float) or isinstance(plain, bool) or not math.isfinite(plain):
        return plain
    if column in _FINE:
        return round(plain, _FINE[column])
    size = abs(plain)
    if size >= 100:
        return round(plain, 1)
    if size >= 1:
        return round(plain, 2)
    if size == 0:
        return 0.0
    return round(plain, 2 - math.floor(math.log10(size)))


def _rows(frame: pd.DataFrame) -> Iterator[list[Any]]:
    columns = [str(c) for c in frame.columns]
    for row in frame.itertuples(index=False):
        yield [rounded(c, v) for c, v in zip(columns, row, strict=True)]


def _csv(frame: pd.DataFrame) -> bytes:
    out = io.StringIO()
    writer = csv_writer(out, lineterminator="\n")
    writer.writerow(list(frame.columns))
    writer.writerows(_rows(frame))
    return out.getvalue().encode("utf-8")


def to_csv(export: Export) -> bytes:
    """The table alone: a header row and rounded numbers (no comment lines: a
    spreadsheet shows them as data rows); its description goes in :func:`to_zip`."""
    return _csv(export.data)


def _notes(export: Export) -> pd.DataFrame:
    return pd.DataFrame({_("note"): export.notes})


def request_json(export: Export) -> str:
    """The request as JSON (indented, keys as sent)."""
    return json.dumps(export.request, ensure_ascii=False, indent=2, default=str)


def to_zip(export: Export, title: str) -> bytes:
    """The table (``<title>.csv``) with ``columns.csv``, ``notes.csv`` and, for an
    analysis, ``request.json`` beside it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{_file_title(title)}.csv", _csv(export.data))
        archive.writestr("columns.csv", _csv(export.description()))
        archive.writestr("notes.csv", _csv(_notes(export)))
        if export.request is not None:
            archive.writestr("request.json", request_json(export) + "\n")
    return buffer.getvalue()


def _file_title(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", title).strip("-") or "data"


def _sheet(book: Any, title: str, frame: pd.DataFrame) -> None:
    """One sheet: a header row, then the rounded values; every string is a string cell
    (openpyxl would store a string beginning with '=' as a formula)."""
    sheet = book.create_sheet(title)
    for r, row in enumerate([list(frame.columns), *_rows(frame)], start=1):
        for c, value in enumerate(row, start=1):
            plain = _plain(value)
            if plain is None:
                continue
            if not isinstance(plain, bool | int | float):
                plain = ILLEGAL_CHARACTERS_RE.sub("", str(plain))
            cell = sheet.cell(row=r, column=c, value=plain)
            if isinstance(plain, str):
                cell.data_type = "s"  # never "f": text, whatever it begins with


def to_xlsx(export: Export, title: str) -> bytes:
    book = openpyxl.Workbook()
    book.remove(book.active)
    _sheet(book, title[:31] or "data", export.data)
    _sheet(book, "columns", export.description())
    _sheet(book, "privacy", _notes(export))
    if export.request is not None:
        _sheet(book, "request", pd.DataFrame({"JSON": [request_json(export)]}))
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def render(export: Export, fmt: str, title: str) -> bytes:
    if fmt == "xlsx":
        return to_xlsx(export, title)
    if fmt == "zip":
        return to_zip(export, title)
    return to_csv(export)
