"""Survey reports: every question reconstructed, beside the naive counts, as JSON, CSV and HTML.

Disclosure control (002_f0fd5869fe299975.txt) applies to every published
number: a question with fewer responses than the consultation's
``min_responses`` publishes nothing, and a reconstructed cell whose 95% interval reaches
below ``min_cell`` is hidden (with complementary suppression; the threshold point is
:mod:`reconstruction.disclosure`). The naive counts are exact counts of the reported
answers and are judged on themselves.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from privacy.mechanisms import cellkey, epsilon
from reconstruction import disclosure
from reconstruction.algorithms.continuous import IntervalReconstruction
from reconstruction.analysis import Thresholds, whole_number_verdict
from reconstruction.disclosure import hidden_cells as suppress_cells
from reconstruction.kinds import change
from reconstruction.kinds.distribution import (
    distribution_from_counts,
    distribution_payload,
    overall_distribution,
    overall_inner_edges,
    overall_plan,
    target_inner_edges,
    with_whole_number_note,
)
from reconstruction.presentation import report_sections
from reconstruction.report_bands import band_payload
from surveys import condition_counts, schemes, selectors, statistics
from surveys.models import Question, Survey


def question_section(
    survey: Survey,
    question: Question,
    thresholds: Thresholds,
    statistics_read: tuple[int, Any, Any, bool] | None = None,
) -> dict[str, Any]:
    """One question's part of the report: its mechanism, epsilon, counts and estimates.

    Everything comes from SQL statistics (one ``COUNT`` and one ``GROUP BY`` of reported
    cells), continuous questions included, so the cost does not grow with the answers.
    :func:`build_report` reads every question's statistics at once and passes them as
    ``statistics_read``: ``(n, counts, plan, whole_numbers)`` (see :func:`report_statistics`);
    a continuous question whose reports show whole numbers is reconstructed on the lattice
    of whole numbers with the same note as ``POST /analyses/`` kind ``distribution``
    (:func:`~reconstruction.kinds.distribution.overall_distribution`, issue 10).
    """
    channel = selectors.question_channel(question) if question.is_discrete else None
    if statistics_read is None:
        n = statistics.participant_count(survey, [question], using=statistics.analysis_alias())
    else:
        n = statistics_read[0]
    section: dict[str, Any] = {
        "key": question.key,
        "text": question.text,
        "translations": question.translations or {},
        "type": question.type,
        "mechanism": {"name": question.mechanism, **(question.mechanism_params or {})},
        "epsilon": epsilon(channel)
        if channel is not None and question.mechanism != "none"
        else schemes.continuous_epsilon(
            question.mechanism,
            question.mechanism_params or {},
            (question.range_low, question.range_high),
            question.resolution,
        )
        if channel is None
        else None,
        "responses": n,
    }
    enough = n >= thresholds.min_responses
    if question.mechanism == "none":
        # A register's response count is perturbed by its own cell key, like the total
        # of an exact distribution: exact, it narrowed the two cells of a two-category
        # question to one value whenever both moved by 2 the same way (one table in 50).
        # Judged on what it publishes (issue 26): judged on the true count, a published
        # 9 beside "fewer than 10" would say 9, and a shown 8 would say exactly 10.
        published_n = responses_published(survey, question)
        section["responses"] = published_n
        enough = disclosure.publishable(cellkey.bounds(published_n), thresholds.min_responses)
    if not enough:
        section["published"] = False
        section["reason"] = (
            f"fewer than {thresholds.min_responses} responses: nothing is shown for this question"
        )
        return section
    if statistics_read is None:
        result, naive = overall_distribution(survey, question, None)
    else:
        if not question.is_discrete and statistics_read[2] is None:
            raise ValueError(f"nobody answered {question.key!r}")
        result, naive = distribution_from_counts(question, None, *statistics_read[1:3])
        if statistics_read[3]:
            result = with_whole_number_note(result, question)
    naive_hidden = suppress_cells(naive, thresholds.min_cell)
    below = [bool(c < thresholds.min_cell) for c in naive]
    keyed = None
    if question.mechanism == "none":
        # A register's cells (issue 26): published with the cell-key perturbation, the
        # naive counts (the same true counts) too, each judged on what it publishes; a
        # continuous question's cells are its plan's intervals.
        plan = None if statistics_read is None else statistics_read[2]
        if plan is None and not question.is_discrete:
            whole, _evidence = whole_number_verdict(survey, question)
            plan = overall_plan(question, int(n), whole_numbers=whole)
        keyed = condition_counts.condition_key_cells(
            survey,
            [question],
            [],
            question,
            inner_edges=target_inner_edges(plan),
            using=statistics.analysis_alias(),
        )
        naive = np.asarray(cellkey.perturbed_counts(keyed.counts, keyed.key_sums), dtype=np.float64)
        naive_hidden = suppress_cells(
            naive, thresholds.min_cell, np.array([cellkey.bounds(v) for v in naive]).reshape(-1, 2)
        )
        below = [bool(c - cellkey.MAX_PERTURBATION < thresholds.min_cell) for c in naive]
    section.update(
        published=True,
        reconstructed=distribution_payload(
            result,
            question,
            thresholds.min_cell,
            exact=question.mechanism == "none",
            keyed=keyed,
        ),
        naive={
            "counts": [None if h else float(c) for c, h in zip(naive, naive_hidden, strict=True)],
            "suppressed": [bool(h) for h in naive_hidden],
            # Hidden because small (shown as "less than min_cell"), not as a complement.
            "below_threshold": below,
        },
    )
    if isinstance(result, IntervalReconstruction):  # a continuous question: its bands
        section["reconstructed"]["bands"] = band_payload(
            result,
            low=float(question.range_low),
            high=float(question.range_high),
            step=lattice_step(result, float(question.range_low)),
            min_cell=thresholds.min_cell,
            exact=question.mechanism == "none",
            hidden_cells=section["reconstructed"]["suppressed"],
            keyed=keyed,
        )
    return section


def responses_published(survey: Survey, question: Question) -> int:
    """How many answered an exact question, as a report publishes it: the count plus
    the cell-key perturbation of its answerers' record keys (one aggregate query)."""
    moments = condition_counts.condition_moments(
        survey, [question], [], keys=True, using=statistics.analysis_alias()
    )
    return cellkey.perturbed_count(moments.count, moments.key_sum or 0)


def lattice_step(result: IntervalReconstruction, low: float) -> float | None:
    """The step of a lattice reconstruction (cells centred on ``low``, ``low + step``,
    ...), ``None`` for intervals (cells starting at ``low``)."""
    widths = np.diff(result.edges)
    width = float(widths[0])
    if np.allclose(widths, width) and abs(float(result.edges[0]) + width / 2 - low) < 1e-6:
        return width
    return None


def report_statistics(
    survey: Survey, questions: Sequence[Question], thresholds: Thresholds
) -> dict[int, tuple[int, Any, Any, bool]]:
    """Every question's statistics in two SQL queries, plus one per continuous question
    tested for whole numbers, whatever the number of answers.

    One ``GROUP BY`` of the survey's answers by question and code counts who answered
    each question and a discrete question's codes; a second one cuts the continuous
    questions' values into the reported bins of their plans (which depend on how many
    answered). Before it, each published continuous question without a declared step
    whose noise and range allow the test gets the worker's whole-number test
    (:func:`~reconstruction.analysis.whole_number_verdict`: one ``GROUP BY`` of its
    reports in half units, bounded rows); a detected question is planned on the lattice
    of whole numbers, as :func:`~reconstruction.kinds.distribution.overall_distribution` plans it
    (issue 10). Returns ``{question pk: (n, counts, plan, whole_numbers)}`` (``plan`` is
    ``None`` for a discrete question; ``counts`` for a continuous question below the
    threshold is its single total).
    """
    using = statistics.analysis_alias()
    first = statistics.question_tables(survey, questions, using=using)
    read: dict[int, tuple[int, Any, Any, bool]] = {}
    plans = {}
    whole: dict[int, bool] = {}
    for question in questions:
        n = round(float(first[question.pk].sum()))
        read[question.pk] = (n, first[question.pk], None, False)
        if not question.is_discrete and n >= max(1, thresholds.min_responses):
            whole[question.pk], _evidence = whole_number_verdict(survey, question)
            plans[question.pk] = overall_plan(question, n, whole_numbers=whole[question.pk])
    if plans:
        cut = statistics.question_tables(
            survey,
            [q for q in questions if q.pk in plans],
            inner_edges={pk: overall_inner_edges(plan) for pk, plan in plans.items()},
            using=using,
        )
        for pk, plan in plans.items():
            read[pk] = (read[pk][0], cut[pk], plan, whole[pk])
    return read


def _labels(section: dict[str, Any]) -> list[str]:
    reconstructed = section["reconstructed"]
    if "categories" in reconstructed:
        return [str(c) for c in reconstructed["categories"]]
    return [f"[{a:g}, {b:g})" for a, b in reconstructed["intervals"]]


def report_csv(document: dict[str, Any]) -> str:
    from reconstruction.exports import csv_writer  # formula cells neutralised

    out = io.StringIO()
    writer = csv_writer(out)
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
    read = report_statistics(survey, questions, thresholds)
    sections = []
    for index, question in enumerate(questions):
        sections.append(question_section(survey, question, thresholds, read[question.pk]))
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
    changes = change.report_entries(survey)
    if changes:  # how opinions changed (issue 29), only when there are any
        document["changes"] = changes
    rows = report_sections(document, charts=charts)
    progress(0.95)
    return document, rows, report_csv(document)
