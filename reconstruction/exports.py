"""Analyses and report tables as CSV and XLSX downloads, built with pandas and openpyxl.

Every export carries, besides the data, a description of each column and the privacy notes
(how answers were distorted, the disclosure thresholds, what "suppressed" means): in XLSX
as the sheets ``columns`` and ``privacy``; in CSV as ``#`` comment lines before the table
(``pandas.read_csv(path, comment="#")`` reads the table alone).

Spreadsheet formula injection (OWASP "CSV injection"): a question text, category or
reference is typed by an analyst, staff member or portal, so a cell that a spreadsheet
would read as a formula (it begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return, and is not a plain number) is written with a leading ``'`` in CSV (the writer is
``defusedcsv``'s, which also escapes ``|`` and ``%``); XLSX cells are typed: a string is
always a string cell, never a formula (:func:`to_xlsx`).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
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
FORMATS = {"csv": CSV_TYPE, "xlsx": XLSX_TYPE}

# OWASP's formula triggers; defusedcsv covers the first four (and | and %), not tab and CR.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"-?[0-9.,]+(e[+-]?[0-9]+)?", re.IGNORECASE)
# In a '#' comment line: a trigger right after a separator would start a cell too.
_COMMENT_CELL = re.compile(r"(^|[,;\t])(\s*)(?=[=+\-@])")


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


def safe_comment(text: str) -> str:
    """A ``#`` comment line's text with no cell a spreadsheet would run: line breaks
    become spaces and a trigger after a separator gets a leading ``'``."""
    flat = str(text).replace("\r", " ").replace("\n", " ")
    return _COMMENT_CELL.sub(lambda m: f"{m.group(1)}{m.group(2)}'", flat)


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
    """One table with what its columns mean and the privacy notes that apply to it."""

    data: pd.DataFrame
    columns: dict[str, str]
    notes: list[str]

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
    notes.append(_("Request: %(spec)s") % {"spec": spec})
    notes.extend(translate_notes(result.get("notes")))
    if transitions.is_change(result):
        notes.extend(transitions.net_shift_sentences(result))
        order = ["quantity", "before", "after", "estimate", "ci95_low", "ci95_high", "suppressed"]
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


def to_csv(export: Export) -> bytes:
    out = io.StringIO()
    out.write("# " + _("Columns") + "\n")
    for name, meaning in export.description().itertuples(index=False):
        out.write("# " + safe_comment(f"{name}: {meaning}") + "\n")
    out.write("# " + _("Privacy notes") + "\n")
    for note in export.notes:
        out.write("# " + safe_comment(note) + "\n")
    writer = csv_writer(out, lineterminator="\n")
    writer.writerow(list(export.data.columns))
    for row in export.data.itertuples(index=False):
        writer.writerow([_plain(v) for v in row])
    return out.getvalue().encode("utf-8")


def _sheet(book: Any, title: str, frame: pd.DataFrame) -> None:
    """One sheet: a header row, then the values; every string is a string cell (openpyxl
    would store a string beginning with '=' as a formula)."""
    sheet = book.create_sheet(title)
    for r, row in enumerate([list(frame.columns), *frame.itertuples(index=False)], start=1):
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
    _sheet(book, "privacy", pd.DataFrame({_("note"): export.notes}))
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def render(export: Export, fmt: str, title: str) -> bytes:
    if fmt == "xlsx":
        return to_xlsx(export, title)
    return to_csv(export)
