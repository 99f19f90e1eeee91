"""A joint count's statistics in one scan: its whole-number tests' half units and the
cell tables of every model the tests may choose (:mod:`surveys.statistics`).

When the count's condition has one continuous attribute whose reports lie in a bounded
range (whole-year ages, a score), one ``GROUP BY`` counts everything at once: by the
discrete codes, the reports in half units, whether each is a whole number, and the bin of
each table whose edges are not multiples of a half (few groups: a half unit meets at most
a few bins). A report in ``[k / 2, (k + 1) / 2)`` lies in the bin of ``k / 2`` for edges
that are multiples of a half (the whole-number model's), so every table is a sum of
these rows, the same integers its own ``width_bucket`` query counts. Otherwise one
``GROUPING SETS`` query (PostgreSQL), or one query each (SQLite).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.db import connections
from numpy.typing import NDArray

from surveys.joins import _aliases, _bucket, _floor, _joins
from surveys.models import Question, Survey
from surveys.statistics import (
    _GROUPING_WIDTH,
    Axis,
    HalfUnits,
    _axis_key,
    _grouping_sets,
    cell_counts_many,
    half_unit_counts,
)

OTHER_CUTS = 3
"""At most this many cuts of the continuous question at edges that are not multiples of
a half (each a grouping column; the interval model's)."""

HALF_UNITS_SPAN = 2_000.0
"""The widest question range (high - low) counted in half units: 4,000 half units plus
the noise's tails, times the discrete codes, is what the one GROUP BY returns."""


def cell_counts_and_half_units(
    survey: Survey,
    tables: Sequence[Sequence[Axis]],
    halves: Sequence[Question],
    *,
    require: Sequence[Question] = (),
    using: str = "default",
) -> tuple[list[NDArray[np.float64]], dict[int, HalfUnits]]:
    """:func:`~surveys.statistics.cell_counts_many` of ``tables`` and
    :func:`~surveys.statistics.half_unit_counts` of each of ``halves``, over the same
    participants (everyone who answered every question named), from one scan."""
    if any(not axes for axes in tables):
        raise ValueError("cell statistics need at least one axis")
    questions = [a.question for axes in tables for a in axes] + list(halves) + list(require)
    fine = _fine_question(tables, halves)
    if fine is not None:
        return _from_half_units(survey, tables, fine, questions, using)
    columns = {_axis_key(axis) for axes in tables for axis in axes}
    if (
        connections[using].vendor != "postgresql"
        or len(columns) + 2 * len(halves) > _GROUPING_WIDTH
    ):
        counts = cell_counts_many(survey, tables, require=questions, using=using)
        units = {q.pk: half_unit_counts(survey, q, require=questions, using=using) for q in halves}
        return counts, units
    out, units = _grouping_sets(survey, tables, range(len(tables)), questions, using, halves)
    return [out[index] for index in range(len(tables))], units


def _fine_question(tables: Sequence[Sequence[Axis]], halves: Sequence[Question]) -> Question | None:
    """The one continuous question the tables cut and the tests test, when its range is
    narrow and the tables cut it at most :data:`OTHER_CUTS` other ways; else ``None``."""
    continuous = {
        a.question.pk: a.question for axes in tables for a in axes if not a.question.is_discrete
    }
    continuous.update({q.pk: q for q in halves})
    if len(continuous) != 1 or any(q.is_discrete for q in halves):
        return None
    (question,) = continuous.values()
    if question.range_low is None or question.range_high is None:
        return None
    if float(question.range_high) - float(question.range_low) > HALF_UNITS_SPAN:
        return None
    cuts = set()
    for axes in tables:
        for axis in axes:
            if axis.question.pk == question.pk:
                if axis.inner_edges is None:
                    return None
                if not _halves(axis.inner_edges):
                    cuts.add(_axis_key(axis))
    return question if len(cuts) <= OTHER_CUTS else None


def _halves(edges: NDArray[np.float64]) -> bool:
    doubled = 2 * np.asarray(edges, dtype=np.float64)
    return bool(np.all(np.isfinite(doubled)) and np.array_equal(doubled, np.floor(doubled)))


def _from_half_units(
    survey: Survey,
    tables: Sequence[Sequence[Axis]],
    fine: Question,
    questions: Sequence[Question],
    using: str,
) -> tuple[list[NDArray[np.float64]], dict[int, HalfUnits]]:
    connection = connections[using]
    vendor = connection.vendor
    joins, params = _joins(survey, questions, using=using)
    aliases = _aliases(questions)
    discrete = list(
        {
            a.question.pk: a.question for axes in tables for a in axes if a.question.is_discrete
        }.values()
    )
    column = f"{aliases[fine.pk]}.value"
    select = [f"{aliases[q.pk]}.code" for q in discrete]
    select.append(_floor(f"({column} * 2)", vendor))
    select.append(f"CASE WHEN {column} = {_floor(column, vendor)} THEN 0 ELSE 1 END")
    select_params: list[object] = []
    cut_column: dict[tuple[int, bytes], int] = {}
    for axes in tables:
        for axis in axes:
            key = _axis_key(axis)
            if axis.question.pk == fine.pk and key not in cut_column:
                assert axis.inner_edges is not None
                if not _halves(axis.inner_edges):
                    cut_column[key] = len(select)
                    expression, values = _bucket(column, axis.inner_edges, vendor)
                    select.append(expression)
                    select_params += values
    groups = ", ".join(str(i + 1) for i in range(len(select)))
    sql = f"SELECT {', '.join(select)}, COUNT(*) {joins} GROUP BY {groups}"
    with connection.cursor() as cursor:
        cursor.execute(sql, select_params + params)
        rows = cursor.fetchall()
    width = len(discrete)
    data = np.array(rows, dtype=np.float64).reshape(len(rows), len(select) + 1)
    units_k = data[:, width].astype(np.int64)
    other = data[:, width + 1].astype(np.int64)
    count = data[:, -1]
    found: dict[int, int] = {}
    for k, c in zip(units_k.tolist(), count.tolist(), strict=True):
        found[k] = found.get(k, 0) + int(c)
    units = {fine.pk: HalfUnits(found, int(count[other == 1].sum()))}
    position = {q.pk: i for i, q in enumerate(discrete)}
    out = []
    for axes in tables:
        table = np.zeros(tuple(axis.size for axis in axes), dtype=np.float64)
        index = []
        for axis in axes:
            key = _axis_key(axis)
            if key in cut_column:
                index.append(data[:, cut_column[key]].astype(np.int64))
            elif axis.question.pk == fine.pk:
                assert axis.inner_edges is not None
                edges = np.asarray(axis.inner_edges, dtype=np.float64)
                index.append(np.searchsorted(edges, units_k / 2.0, side="right"))
            else:
                index.append(data[:, position[axis.question.pk]].astype(np.int64))
        np.add.at(table, tuple(index), count)
        out.append(table)
    return out, units


__all__ = ["HALF_UNITS_SPAN", "OTHER_CUTS", "cell_counts_and_half_units"]
