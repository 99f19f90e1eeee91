"""Survey reports: every question reconstructed, beside the naive counts, as JSON, CSV and HTML.

Disclosure control (002_f0fd5869fe299975.txt) applies to every published
number: a question with fewer responses than the consultation's
``min_responses`` publishes nothing, and a reconstructed cell whose 95% interval reaches
below ``min_cell`` is hidden (with complementary suppression; the threshold point is
:mod:`reconstruction.disclosure`). The naive counts are exact counts of the reported
answers and are judged on themselves.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from privacy.mechanisms import epsilon
from reconstruction.analysis import (
    Thresholds,
    distribution_payload,
    overall_distribution,
    suppress_cells,
)
from reconstruction.presentation import report_sections
from surveys import selectors, statistics
from surveys.models import Question, Survey


def question_section(survey: Survey, question: Question, thresholds: Thresholds) -> dict[str, Any]:
    """One question's part of the report: its mechanism, epsilon, counts and estimates.

    Everything comes from SQL statistics (one ``COUNT`` and one ``GROUP BY`` of reported
    cells), continuous questions included, so the cost does not grow with the answers.
    """
    channel = selectors.question_channel(question) if question.is_discrete else None
    n = statistics.participant_count(survey, [question], using=statistics.analysis_alias())
    section: dict[str, Any] = {
        "key": question.key,
        "text": question.text,
        "translations": question.translations or {},
        "type": question.type,
        "mechanism": {"name": question.mechanism, **(question.mechanism_params or {})},
        "epsilon": epsilon(channel)
        if channel is not None and question.mechanism != "none"
        else None,
        "responses": n,
    }
    if n < thresholds.min_responses:
        section["published"] = False
        section["reason"] = (
            f"fewer than {thresholds.min_responses} responses: nothing is shown for this question"
        )
        return section
    result, naive = overall_distribution(survey, question, None)
    naive_hidden = suppress_cells(naive, thresholds.min_cell)
    section.update(
        published=True,
        reconstructed=distribution_payload(
            result, question, thresholds.min_cell, exact=question.mechanism == "none"
        ),
        naive={
            "counts": [None if h else float(c) for c, h in zip(naive, naive_hidden, strict=True)],
            "suppressed": [bool(h) for h in naive_hidden],
            # Hidden because small (shown as "less than min_cell"), not as a complement.
            "below_threshold": [bool(c < thresholds.min_cell) for c in naive],
        },
    )
    return section


def _labels(section: dict[str, Any]) -> list[str]:
    reconstructed = section["reconstructed"]
    if "categories" in reconstructed:
        return [str(c) for c in reconstructed["categories"]]
    return [f"[{a:g}, {b:g})" for a, b in reconstructed["intervals"]]


def report_csv(document: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "question",
            "cell",
            "naive_count",
            "estimate",
            "ci95_low",
            "ci95_high",
            "suppressed",
            "method",
            "epsilon",
            "responses",
        ]
    )
    for section in document["questions"]:
        if not section["published"]:
            writer.writerow(
                [
                    section["key"],
                    "",
                    "",
                    "",
                    "",
                    "",
                    "question",
                    "",
                    section["epsilon"],
                    section["responses"],
                ]
            )
            continue
        reconstructed = section["reconstructed"]
        for i, label in enumerate(_labels(section)):
            pair = reconstructed["ci95"][i] or [None, None]
            writer.writerow(
                [
                    section["key"],
                    label,
                    _blank(section["naive"]["counts"][i]),
                    _blank(reconstructed["counts"][i]),
                    _blank(pair[0]),
                    _blank(pair[1]),
                    "yes" if reconstructed["suppressed"][i] else "no",
                    reconstructed["method"],
                    _blank(section["epsilon"]),
                    section["responses"],
                ]
            )
    return out.getvalue()


def _blank(value: Any) -> str:
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def build_report(
    survey: Survey, progress: Callable[[float], None], *, charts: bool = True
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """The report of a survey: (JSON document, the sections as the HTML template shows
    them, with their SVG charts (reconstruction/presentation.py), CSV)."""
    thresholds = Thresholds.of(survey)
    questions = selectors.survey_questions(survey)
    sections = []
    for index, question in enumerate(questions):
        sections.append(question_section(survey, question, thresholds))
        progress(0.8 * (index + 1) / max(1, len(questions)))
    document = {
        "survey": survey.pk,
        "title": survey.title,
        "consultation": survey.consultation.title,
        "status": survey.status,
        "responses": selectors.survey_response_count(survey),
        "generated_at": datetime.now(UTC).replace(second=0, microsecond=0).isoformat(),
        "thresholds": {"min_responses": thresholds.min_responses, "min_cell": thresholds.min_cell},
        "questions": sections,
    }
    rows = report_sections(document, charts=charts)
    progress(0.95)
    return document, rows, report_csv(document)
