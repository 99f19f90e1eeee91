"""Sufficient statistics computed in the database: only cells x intervals rows come back.

The analysis engine fits from tables of reported cells
(:mod:`reconstruction.algorithms.queries`): how many participants reported each joint
cell (discrete codes x continuous values cut into reported bins) and, for a mean, the
per-cell sum and sum of squares of the target's reported values. Here those tables are
one ``GROUP BY`` each, so what leaves the database does not grow with the number of
participants:

- PostgreSQL: ``width_bucket(value, inner_edges)`` (the number of inner edges at or
  below the value; plain SQL, so Citus can distribute it unchanged);
- SQLite: the same number as a sum of comparisons ``(value >= e1) + (value >= e2) ...``
  (nested as a balanced tree, so thousands of bins stay within SQLite's expression depth).

A participant counts when they have a live (not withdrawn) response to the survey and
an answer to every question named; questions of the consultation's profile survey are
joined on the participant (their profile response must be live too).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connections, transaction
from numpy.typing import NDArray

from surveys.joins import _LIVE, _aliases, _bucket, _floor, _joins, has_withdrawn
from surveys.models import Answer, Question, Response, Survey
from surveys.replicas import (
    analysis_alias,
    primary_wal_position,
    reading_from,
    replica_has_replayed,
)

_ANSWER = Answer._meta.db_table
_RESPONSE = Response._meta.db_table


@dataclass(frozen=True)
class Axis:
    """One axis of a cell table: a question and, if continuous, its bins' inner edges."""

    question: Question
    inner_edges: NDArray[np.float64] | None = None

    @property
    def size(self) -> int:
        if self.inner_edges is None:
            return int(self.question.n_categories)
        return int(self.inner_edges.size) + 1


@dataclass(frozen=True)
class CellStatistics:
    """Counts of the joint reported cells and (optionally) a target's moments per cell."""

    counts: NDArray[np.float64]
    sums: NDArray[np.float64] | None = None
    squares: NDArray[np.float64] | None = None


def participant_count(
    survey: Survey, questions: Sequence[Question], *, using: str = "default"
) -> int:
    """Participants with a live response to ``survey`` who answered every question.

    One aggregate query; with no questions, the survey's live responses.
    """
    joins, params = _joins(survey, questions, using=using)
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) {joins}", params)
        (count,) = cursor.fetchone()
    return int(count)


def cell_statistics(
    survey: Survey,
    axes: Sequence[Axis],
    *,
    target: Question | None = None,
    require: Sequence[Question] = (),
    using: str = "default",
) -> CellStatistics:
    """The joint reported cells of ``axes`` counted in the database (one ``GROUP BY``).

    Parameters
    ----------
    axes : sequence of Axis
        Discrete questions count their codes; continuous ones the bin
        ``#{inner edges <= value}`` of their reported value.
    target : Question, optional
        A continuous question whose per-cell sum and sum of squares are wanted.
    require : sequence of Question
        Questions a participant must also have answered to be counted (the other
        attributes of the same analysis, so every table of it counts the same people).
    """
    if not axes:
        raise ValueError("cell statistics need at least one axis")
    connection = connections[using]
    vendor = connection.vendor
    questions = [axis.question for axis in axes] + ([target] if target is not None else [])
    questions += list(require)
    joins, join_params = _joins(survey, questions, using=using)
    aliases = _aliases(questions)
    select: list[str] = []
    select_params: list[Any] = []
    for axis in axes:
        alias = aliases[axis.question.pk]
        if axis.inner_edges is None:
            select.append(f"{alias}.code")
        else:
            expression, values = _bucket(f"{alias}.value", axis.inner_edges, vendor)
            select.append(expression)
            select_params += values
    groups = ", ".join(str(i + 1) for i in range(len(select)))
    moments = ""
    if target is not None:
        column = f"{aliases[target.pk]}.value"
        moments = f", SUM({column}), SUM({column} * {column})"
    sql = f"SELECT {', '.join(select)}, COUNT(*){moments} {joins} GROUP BY {groups}"
    shape = tuple(axis.size for axis in axes)
    counts = np.zeros(shape, dtype=np.float64)
    sums = np.zeros(shape, dtype=np.float64) if target is not None else None
    squares = np.zeros(shape, dtype=np.float64) if target is not None else None
    d = len(axes)
    with connection.cursor() as cursor:
        cursor.execute(sql, select_params + join_params)
        for row in cursor.fetchall():
            index = tuple(int(v) for v in row[:d])
            counts[index] = row[d]
            if sums is not None and squares is not None:
                sums[index] = row[d + 1]
                squares[index] = row[d + 2]
    return CellStatistics(counts, sums, squares)


def occupied_cells(
    survey: Survey,
    axes: Sequence[Axis],
    *,
    require: Sequence[Question] = (),
    using: str = "default",
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The joint reported cells of ``axes`` that hold anyone, and their counts.

    :func:`cell_statistics`'s ``GROUP BY`` without its dense table (the occupied cells of
    many axes are few beside their product): ``(cells, counts)`` with one row of axis
    indices per occupied cell. A panel's request counts its candidate types on it
    (reconstruction/cost.py).
    """
    if not axes:
        raise ValueError("cell statistics need at least one axis")
    connection = connections[using]
    questions = [axis.question for axis in axes] + list(require)
    joins, join_params = _joins(survey, questions, using=using)
    aliases = _aliases(questions)
    select: list[str] = []
    select_params: list[Any] = []
    for axis in axes:
        alias = aliases[axis.question.pk]
        if axis.inner_edges is None:
            select.append(f"{alias}.code")
        else:
            expression, values = _bucket(f"{alias}.value", axis.inner_edges, connection.vendor)
            select.append(expression)
            select_params += values
    groups = ", ".join(str(i + 1) for i in range(len(select)))
    sql = f"SELECT {', '.join(select)}, COUNT(*) {joins} GROUP BY {groups}"
    with connection.cursor() as cursor:
        cursor.execute(sql, select_params + join_params)
        rows = cursor.fetchall()
    d = len(axes)
    cells = np.array([row[:d] for row in rows], dtype=np.intp).reshape(len(rows), d)
    counts = np.array([row[d] for row in rows], dtype=np.float64)
    return cells, counts


_GROUPING_WIDTH = 31
"""Distinct columns per grouping-sets query (PostgreSQL's ``GROUPING()`` takes at most 32)."""


def _axis_key(axis: Axis) -> tuple[int, bytes]:
    edges = b"" if axis.inner_edges is None else np.asarray(axis.inner_edges).tobytes()
    return int(axis.question.pk), edges


def cell_counts_many(
    survey: Survey,
    tables: Sequence[Sequence[Axis]],
    *,
    require: Sequence[Question] = (),
    using: str = "default",
) -> list[NDArray[np.float64]]:
    """The counts of several cell tables of :func:`cell_statistics`, from one scan.

    Every table counts the same participants: those who answered every question of
    every table and of ``require``. On PostgreSQL one ``GROUP BY GROUPING SETS`` over
    the joined answers gives them all (one scan instead of one per table: a stratified
    sample's pool, strata and subconditions; batches of at most 31 distinct columns);
    on SQLite, which has no grouping sets, one :func:`cell_statistics` per table.
    """
    if any(not axes for axes in tables):
        raise ValueError("cell statistics need at least one axis")
    questions = [axis.question for axes in tables for axis in axes] + list(require)
    if connections[using].vendor != "postgresql" or len(tables) < 2:
        return [
            cell_statistics(survey, axes, require=questions, using=using).counts for axes in tables
        ]
    out: dict[int, NDArray[np.float64]] = {}
    batch: list[int] = []
    seen: set[tuple[int, bytes]] = set()
    for index, axes in enumerate(tables):
        keys = {_axis_key(axis) for axis in axes}
        if batch and len(seen | keys) > _GROUPING_WIDTH:
            out.update(_grouping_sets(survey, tables, batch, questions, using)[0])
            batch, seen = [], set()
        batch.append(index)
        seen |= keys
    out.update(_grouping_sets(survey, tables, batch, questions, using)[0])
    return [out[index] for index in range(len(tables))]


@contextmanager
def _hashed(using: str) -> Iterator[None]:
    """A transaction whose grouping-sets queries hash every set: PostgreSQL guesses far
    more groups than cells x intervals hold (hundreds), and would sort the joined
    answers for one set (an external sort of every row at 10^6) instead."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute("SET LOCAL enable_sort = off")
        yield


def _grouping_sets(
    survey: Survey,
    tables: Sequence[Sequence[Axis]],
    batch: Sequence[int],
    questions: Sequence[Question],
    using: str,
    halves: Sequence[Question] = (),
) -> tuple[dict[int, NDArray[np.float64]], dict[int, HalfUnits]]:
    """One ``GROUPING SETS`` query for the tables ``batch`` and the half units of
    ``halves`` (PostgreSQL): per half question, its reports in half units and whether
    each is fractional (:func:`half_unit_counts`)."""
    joins, join_params = _joins(survey, questions, using=using)
    aliases = _aliases(questions)
    columns: dict[tuple[int, bytes], int] = {}  # distinct (question, edges) -> column
    select: list[str] = []
    select_params: list[Any] = []
    per_table: dict[int, list[int]] = {}
    for index in batch:
        indexes = []
        for axis in tables[index]:
            key = _axis_key(axis)
            if key not in columns:
                columns[key] = len(select)
                alias = aliases[axis.question.pk]
                if axis.inner_edges is None:
                    select.append(f"{alias}.code")
                else:
                    expression, values = _bucket(f"{alias}.value", axis.inner_edges, "postgresql")
                    select.append(expression)
                    select_params += values
            indexes.append(columns[key])
        per_table[index] = indexes
    per_half: dict[int, list[int]] = {}
    for question in halves:
        column = f"{aliases[question.pk]}.value"
        per_half[question.pk] = [len(select), len(select) + 1]
        select.append(f"FLOOR({column} * 2)")
        select.append(f"CASE WHEN {column} = FLOOR({column}) THEN 0 ELSE 1 END")
    width = len(select)
    masks: dict[frozenset[int], int] = {}  # distinct grouping set -> its GROUPING() value
    for indexes in [*per_table.values(), *per_half.values()]:
        members = frozenset(indexes)
        # GROUPING(x0, ..., xm) sets bit (m - i) when x_i is not grouped in the row's set.
        masks[members] = sum(1 << (width - 1 - i) for i in range(width) if i not in members)
    names = [f"x{i}" for i in range(width)]
    inner = ", ".join(f"{expr} AS {name}" for expr, name in zip(select, names, strict=True))
    grouping = ", ".join("(" + ", ".join(names[i] for i in sorted(m)) + ")" for m in masks)
    sql = (
        f"SELECT GROUPING({', '.join(names)}), {', '.join(names)}, COUNT(*) "
        f"FROM (SELECT {inner} {joins}) s GROUP BY GROUPING SETS ({grouping})"
    )
    rows: dict[int, list[tuple[Any, ...]]] = {mask: [] for mask in masks.values()}
    with _hashed(using), connections[using].cursor() as cursor:
        cursor.execute(sql, select_params + join_params)
        for row in cursor.fetchall():
            rows[int(row[0])].append(row)
    out: dict[int, NDArray[np.float64]] = {}
    for index, indexes in per_table.items():
        axes = tables[index]
        counts = np.zeros(tuple(axis.size for axis in axes), dtype=np.float64)
        for row in rows[masks[frozenset(indexes)]]:
            counts[tuple(int(row[1 + i]) for i in indexes)] = row[-1]
        out[index] = counts
    units: dict[int, HalfUnits] = {}
    for pk, (unit, other) in per_half.items():
        found: dict[int, int] = {}
        fractional = 0
        for row in rows[masks[frozenset((unit, other))]]:
            k = int(row[1 + unit])
            found[k] = found.get(k, 0) + int(row[-1])
            fractional += int(row[-1]) if int(row[1 + other]) else 0
        units[pk] = HalfUnits(found, fractional)
    return out, units


def question_tables(
    survey: Survey,
    questions: Sequence[Question],
    *,
    inner_edges: Mapping[int, NDArray[np.float64]] | None = None,
    using: str = "default",
) -> dict[int, NDArray[np.float64]]:
    """Each question's reported cells over the live participants who answered it, in
    one ``GROUP BY`` of the survey's answers (a report's statistics, every question at once).

    The same counts as :func:`cell_statistics` with one axis per question, called once
    per question, from one scan instead of one join per question.

    Parameters
    ----------
    questions : sequence of Question
        Questions of ``survey`` itself.
    inner_edges : mapping of question pk -> ndarray, optional
        A continuous question listed here is counted in the bins of these inner edges
        (``#{inner edges <= value}``); one that is not gets a single cell, the number
        who answered it. Discrete questions count their codes.

    Returns
    -------
    dict of question pk -> ndarray
        Counts of shape ``(k,)`` (discrete), ``(len(edges) + 1,)`` or ``(1,)``.
    """
    edges = dict(inner_edges or {})
    distinct = list({q.pk: q for q in questions}.values())
    if any(q.survey_id != survey.pk for q in distinct):
        raise ValueError("question_tables counts the survey's own questions only")
    result: dict[int, NDArray[np.float64]] = {}
    for q in distinct:
        if q.is_discrete:
            size = int(q.n_categories)
        elif q.pk in edges:
            size = int(np.asarray(edges[q.pk]).size) + 1
        else:
            size = 1
        result[q.pk] = np.zeros(size, dtype=np.float64)
    if not distinct:
        return result
    connection = connections[using]
    cases: list[str] = []
    params: list[Any] = []
    for q in distinct:
        if q.is_discrete:
            expression, values = "a.code", []
        elif q.pk in edges:
            expression, values = _bucket(
                "a.value", np.asarray(edges[q.pk], dtype=np.float64), connection.vendor
            )
        else:
            expression, values = "0", []
        cases.append(f"WHEN %s THEN {expression}")
        params += [q.pk, *values]
    ids = [q.pk for q in distinct]
    sql = (
        f"SELECT a.question_id, CASE a.question_id {' '.join(cases)} ELSE 0 END, COUNT(*) "
        f"FROM {_ANSWER} a WHERE a.question_id IN ({', '.join('%s' for _ in ids)}) "
        + (f"AND {_LIVE.format(alias='a')} " if has_withdrawn(survey, using=using) else "")
        + "GROUP BY 1, 2"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *ids])
        for question_id, cell, count in cursor.fetchall():
            result[int(question_id)][int(cell)] = count
    return result


@dataclass(frozen=True)
class HalfUnits:
    """A continuous question's reports counted in half units: ``counts[k]`` reports in
    ``[k / 2, (k + 1) / 2)`` (``k = floor(2 value)``) and ``fractional`` of them not a
    whole number (what the engine's whole-number test needs without noise)."""

    counts: dict[int, int]
    fractional: int


def half_unit_counts(
    survey: Survey,
    question: Question,
    *,
    require: Sequence[Question] = (),
    using: str = "default",
) -> HalfUnits:
    """The reports of a continuous question in half units, in one ``GROUP BY``.

    The histogram the engine tests for whole-number truths
    (:func:`reconstruction.algorithms.continuous.half_unit_evidence`): one row per half
    unit the reports reach (bounded by the question's range and its noise, whatever the
    number of participants), over the participants :func:`cell_statistics` counts with
    the same ``require``.
    """
    connection = connections[using]
    vendor = connection.vendor
    questions = [question, *require]
    joins, params = _joins(survey, questions, using=using)
    column = f"{_aliases(questions)[question.pk]}.value"
    unit = _floor(f"({column} * 2)", vendor)
    whole = _floor(column, vendor)
    sql = (
        f"SELECT {unit}, COUNT(*), SUM(CASE WHEN {column} = {whole} THEN 0 ELSE 1 END) "
        f"{joins} GROUP BY 1"
    )
    counts: dict[int, int] = {}
    fractional = 0
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for k, count, other in cursor.fetchall():
            counts[int(k)] = int(count)
            fractional += int(other or 0)
    return HalfUnits(counts, fractional)


CHUNK = 50_000


def iter_attribute_columns(
    survey: Survey,
    questions: Sequence[Question],
    *,
    using: str = "default",
    chunk: int | None = None,
) -> Iterator[tuple[NDArray[np.int64], dict[int, NDArray[Any]]]]:
    """Participants' answers side by side, a chunk at a time (bounded memory).

    Yields ``(ids, {question pk: column})`` blocks of at most ``chunk`` (default
    :data:`CHUNK`) participants in participant-id order: codes as int64, values as
    float64, nothing else (no references, no Python object per row). Rows come from a
    server-side cursor (PostgreSQL) or SQLite's cursor, inside one read transaction.
    """
    size = CHUNK if chunk is None else int(chunk)
    joins, params = _joins(survey, questions, participant=True)
    aliases = _aliases(questions)
    distinct = list({q.pk: q for q in questions}.values())
    select = ", ".join(
        f"{aliases[q.pk]}.code" if q.is_discrete else f"{aliases[q.pk]}.value" for q in distinct
    )
    sql = f"SELECT r.participant_id{', ' + select if select else ''} {joins} ORDER BY 1"
    connection = connections[using]

    def block(rows: list[tuple[Any, ...]]) -> tuple[NDArray[np.int64], dict[int, NDArray[Any]]]:
        values = np.array(rows, dtype=np.float64).reshape(len(rows), 1 + len(distinct))
        columns = {
            q.pk: values[:, i + 1].astype(np.int64 if q.is_discrete else np.float64)
            for i, q in enumerate(distinct)
        }
        return values[:, 0].astype(np.int64), columns

    with transaction.atomic(using=using):
        if connection.vendor == "postgresql":
            connection.ensure_connection()
            with connection.connection.cursor(name="attribute_columns") as cursor:
                cursor.itersize = size
                cursor.execute(sql, params)
                while rows := cursor.fetchmany(size):
                    yield block(rows)
        else:
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                while rows := cursor.fetchmany(size):
                    yield block(rows)


def iter_candidates(
    survey: Survey,
    questions: Sequence[Question],
    cells: Sequence[Axis],
    wanted: Sequence[int] | None,
    *,
    using: str = "default",
    chunk: int | None = None,
) -> Iterator[tuple[int, NDArray[np.int64], NDArray[np.int64], dict[int, NDArray[Any]]]]:
    """The participants of :func:`iter_attribute_columns` whose reported cell is wanted.

    Every participant keeps their position in the full stream (participant-id order,
    counted by ``row_number()`` in the database), but only those whose flat cell over
    ``cells`` (C order, as :func:`~reconstruction.algorithms.queries.flat_cells`) is in
    ``wanted`` leave the database (``wanted=None``: all of them). Sampling ranks by the
    cell's posterior, so only the best cells' participants are candidates: a few
    thousand rows instead of ``n``.

    Yields ``(total, positions, ids, {question pk: column})`` blocks in position order;
    ``total`` is the length of the full stream (0 when nothing is wanted).
    """
    for total, positions, ids, block, _hits in iter_candidates_many(
        survey, questions, [(cells, wanted)], using=using, chunk=chunk
    ):
        yield total, positions, ids, block


def iter_candidates_many(
    survey: Survey,
    questions: Sequence[Question],
    passes: Sequence[tuple[Sequence[Axis], Sequence[int] | None]],
    *,
    using: str = "default",
    chunk: int | None = None,
) -> Iterator[
    tuple[int, NDArray[np.int64], NDArray[np.int64], dict[int, NDArray[Any]], NDArray[np.bool_]]
]:
    """:func:`iter_candidates` for several passes ``(cells, wanted)`` in one scan.

    A participant leaves the database when they are wanted by any pass; ``hits[r, p]``
    says whether row ``r`` is a candidate of pass ``p``. Positions and ``total`` are
    those of the one participant stream all passes share, so a stratified sample ranks
    every stratum from one query instead of one per stratum.

    Yields ``(total, positions, ids, {question pk: column}, hits)`` blocks in position
    order; nothing when no pass wants any cell.
    """
    size = CHUNK if chunk is None else int(chunk)
    joins, params = _joins(survey, questions, participant=True)
    aliases = _aliases(questions)
    distinct = list({q.pk: q for q in questions}.values())
    connection = connections[using]
    columns = [
        f"{aliases[q.pk]}.code" if q.is_discrete else f"{aliases[q.pk]}.value" for q in distinct
    ]
    select = "".join(f", {column} AS c{i}" for i, column in enumerate(columns))
    cell_sql: list[str] = []
    cell_params: list[Any] = []
    filters: list[str] = []
    where_params: list[Any] = []
    wanted_sets: list[NDArray[np.int64] | None] = []
    for number, (cells, wanted) in enumerate(passes):
        expression_sql = "0"
        if cells:
            strides = np.cumprod([1, *[axis.size for axis in cells][::-1]])[:-1][::-1]
            parts = []
            for axis, stride in zip(cells, strides, strict=True):
                alias = aliases[axis.question.pk]
                if axis.inner_edges is None:
                    expression, values = f"{alias}.code", []
                else:
                    expression, values = _bucket(
                        f"{alias}.value", axis.inner_edges, connection.vendor
                    )
                parts.append(f"({expression}) * {int(stride)}")
                cell_params += values
            expression_sql = " + ".join(parts)
        cell_sql.append(f"{expression_sql} AS cell{number}")
        if wanted is None:
            filters.append("TRUE")
            wanted_sets.append(None)
            continue
        flat = sorted({int(c) for c in wanted})
        wanted_sets.append(np.asarray(flat, dtype=np.int64))
        if flat:
            filters.append(f"t.cell{number} IN ({', '.join('%s' for _ in flat)})")
            where_params += flat
    if not filters:
        return
    where = "" if "TRUE" in filters else "WHERE " + " OR ".join(filters)
    if where == "":
        where_params = []
    outer = "".join(f", t.c{i}" for i in range(len(distinct)))
    outer += "".join(f", t.cell{number}" for number in range(len(passes)))
    # The stream's length comes with its last row (the one without a successor), which
    # is sent first: a running count (row_number, lead) instead of COUNT(*) OVER (), which
    # would hold every row of the stream before sending any (a second pass over 10^6).
    where = f"{where} OR t.last" if where else ""
    sql = (
        f"SELECT t.pos, t.last, t.pid{outer} FROM (SELECT "
        "row_number() OVER w - 1 AS pos, (lead(1) OVER w) IS NULL AS last, "
        f"r.participant_id AS pid{select}, {', '.join(cell_sql)} {joins} "
        "WINDOW w AS (ORDER BY r.participant_id)) t "
        f"{where} ORDER BY t.last DESC, t.pos"
    )
    arguments = cell_params + params + where_params
    width = 3 + len(distinct)

    def block(
        rows: list[tuple[Any, ...]], total: int
    ) -> tuple[
        int, NDArray[np.int64], NDArray[np.int64], dict[int, NDArray[Any]], NDArray[np.bool_]
    ]:
        values = np.array(rows, dtype=np.float64).reshape(len(rows), width + len(passes))
        found = {
            q.pk: values[:, i + 3].astype(np.int64 if q.is_discrete else np.float64)
            for i, q in enumerate(distinct)
        }
        hits = np.ones((len(rows), len(passes)), dtype=bool)
        for number, flat in enumerate(wanted_sets):
            if flat is not None:
                hits[:, number] = np.isin(values[:, width + number].astype(np.int64), flat)
        return (
            total,
            values[:, 0].astype(np.int64),
            values[:, 2].astype(np.int64),
            found,
            hits,
        )

    def blocks(fetch: Any) -> Iterator[Any]:
        """The candidates in position order; the last row (sent first) only if wanted."""
        rows = fetch()
        if not rows:
            return
        last = [rows[0]]
        total = int(last[0][0]) + 1
        rows = rows[1:]
        while True:
            if rows:
                yield block(rows, total)
            rows = fetch()
            if not rows:
                break
        tail = block(last, total)
        if tail[4].any():
            yield tail

    with transaction.atomic(using=using):
        if connection.vendor == "postgresql":
            connection.ensure_connection()
            with connection.connection.cursor(name="sampling_candidates") as cursor:
                cursor.itersize = size
                cursor.execute(sql, arguments)
                yield from blocks(lambda: cursor.fetchmany(size))
        else:
            with connection.cursor() as cursor:
                cursor.execute(sql, arguments)
                yield from blocks(lambda: cursor.fetchmany(size))


def attribute_columns(
    survey: Survey, questions: Sequence[Question], *, using: str = "default"
) -> tuple[NDArray[np.int64], dict[int, NDArray[Any]]]:
    """Every participant's answers as whole columns (Figure 3 assigns values to all).

    The chunks of :func:`iter_attribute_columns` copied into arrays preallocated for
    the participants counted first, so memory is the arrays themselves.
    """
    n = participant_count(survey, questions, using=using)
    distinct = list({q.pk: q for q in questions}.values())
    ids = np.empty(n, dtype=np.int64)
    columns = {q.pk: np.empty(n, dtype=np.int64 if q.is_discrete else np.float64) for q in distinct}
    filled = 0
    for block_ids, block in iter_attribute_columns(survey, questions, using=using):
        stop = filled + block_ids.size
        if stop > n:
            raise RuntimeError("the answers changed while they were read; try again")
        ids[filled:stop] = block_ids
        for pk, column in block.items():
            columns[pk][filled:stop] = column
        filled = stop
    return ids[:filled], {pk: column[:filled] for pk, column in columns.items()}


def participant_references(ids: Sequence[int], *, using: str = "default") -> list[str]:
    """The references of the given participant ids, in the same order."""
    from surveys.models import Participant

    wanted = [int(i) for i in ids]
    found = dict(
        Participant.objects.using(using).filter(pk__in=wanted).values_list("pk", "reference")
    )
    return [found[i] for i in wanted]


def finite_edges(edges: NDArray[np.float64]) -> NDArray[np.float64]:
    """Inner edges as plain floats (the outer bins are open, so their ends are unused)."""
    inner = np.asarray(edges, dtype=np.float64)[1:-1]
    if not np.all(np.isfinite(inner)):
        raise ValueError("inner bin edges must be finite")
    return inner


__all__ = [
    "Axis",
    "CellStatistics",
    "HalfUnits",
    "analysis_alias",
    "attribute_columns",
    "cell_counts_many",
    "cell_statistics",
    "finite_edges",
    "half_unit_counts",
    "iter_attribute_columns",
    "iter_candidates",
    "iter_candidates_many",
    "occupied_cells",
    "participant_count",
    "participant_references",
    "primary_wal_position",
    "question_tables",
    "reading_from",
    "replica_has_replayed",
]
