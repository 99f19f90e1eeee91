"""Counts of the participants meeting a conjunction, in the database: the naive count and
mean (the reported answers taken as true), and for exact attributes the cell-key method's
key sums (issue 26, ``privacy.mechanisms.cellkey``): one aggregate query each, over the
live participants :mod:`surveys.statistics` joins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connections
from numpy.typing import NDArray

from surveys.joins import _RESPONSE, _aliases, _bucket, _joins
from surveys.models import Question, Survey

KEY_SUM = "SUM(COALESCE({alias}.record_key, 0))"
"""The cell-key method's key sum of the rows (issue 26): integer arithmetic, so it is
exact and independent of the order the database adds in (``privacy.mechanisms.cellkey``)."""


def _keyed_sql(
    survey: Survey,
    questions: Sequence[Question],
    columns: Sequence[tuple[str, str]],
    clauses: Sequence[str],
    *,
    group: bool = False,
    using: str = "default",
) -> tuple[str, list[Any]]:
    """An aggregate of the rows meeting ``clauses`` with the responses' record keys summed
    last: ``SELECT <outer columns>, <key sum>`` (``group``: grouped by the first column).

    ``columns`` holds ``(inner expression, outer expression)`` pairs: the inner one over
    the answers' aliases, the outer one over ``c.c0``, ``c.c1``, ... On the fast path (the
    survey's own questions) the answers are filtered first, in a subquery PostgreSQL may
    not flatten (``OFFSET 0``), and only the rows left are joined to their responses by
    primary key (the covering index ``response_record_key``): the planner, left free,
    joined every row of the first condition before the others had filtered it
    (bench/bench_cellkey.py scale).
    """
    joins, params = _joins(survey, questions, using=using)
    filtered = "".join(f" AND {c}" for c in clauses)

    def select(names: Sequence[str]) -> str:
        names_of = {f"c{n}": name for n, name in enumerate(names)}
        return "".join(f"{o.format(**names_of)}, " for _, o in columns)

    if joins.startswith(f"FROM {_RESPONSE} r "):  # the response rows are joined already
        sql = f"SELECT {select([i for i, _ in columns])}{KEY_SUM.format(alias='r')} {joins}"
        return sql + filtered + (" GROUP BY 1" if group else ""), params
    prefix = select([f"c.c{n}" for n in range(len(columns))])
    inner = "".join(f"{i} AS c{n}, " for n, (i, _) in enumerate(columns))
    fence = " OFFSET 0" if connections[using].vendor == "postgresql" else ""
    sql = (
        f"SELECT {prefix}{KEY_SUM.format(alias='rk')} FROM "
        f"(SELECT {inner}a0.response_id AS rid {joins}{filtered}{fence}) c "
        f"JOIN {_RESPONSE} rk ON rk.id = c.rid"
    )
    return sql + (" GROUP BY 1" if group else ""), params


def condition_count(
    survey: Survey,
    questions: Sequence[Question],
    where: Sequence[tuple[Question, str, Any]],
    *,
    using: str = "default",
) -> int:
    """Participants whose *reported* answers meet a conjunction (the naive count).

    ``where`` holds ``(question, op, value)`` with ``op`` in ``in`` (codes), ``gt``,
    ``lte``, ``between`` (``[t1, t2)``).
    """
    return condition_moments(survey, questions, where, using=using).count


@dataclass(frozen=True)
class Moments:
    """How many rows, and the sum and sum of squares of a target's values over them."""

    count: int
    total: float = 0.0
    squares: float = 0.0
    key_sum: int | None = None
    """The rows' record keys summed (with ``keys``; the cell-key method)."""


def condition_moments(
    survey: Survey,
    questions: Sequence[Question],
    where: Sequence[tuple[Question, str, Any]],
    *,
    target: Question | None = None,
    keys: bool = False,
    using: str = "default",
) -> Moments:
    """Participants whose *reported* answers meet a conjunction, with a target's moments.

    One aggregate query (``COUNT``, and with ``target`` the ``SUM`` and sum of squares
    of its reported values over those participants): the naive count and mean.
    ``where`` holds ``(question, op, value)`` with ``op`` in ``in`` (codes), ``gt``,
    ``lte``, ``between`` (``[t1, t2)``).
    """
    named = list(questions) + [q for q, _, _ in where] + ([target] if target is not None else [])
    aliases = _aliases(named)
    clauses, values = _where_clauses(aliases, where)
    if keys:
        columns = [("1", "COUNT(*)")]
        if target is not None:
            column = f"{aliases[target.pk]}.value"
            columns += [(column, "SUM({c1})"), (f"{column} * {column}", "SUM({c2})")]
        sql, params = _keyed_sql(survey, named, columns, clauses, using=using)
    else:
        joins, params = _joins(survey, named, using=using)
        moments = ""
        if target is not None:
            column = f"{aliases[target.pk]}.value"
            moments = f", SUM({column}), SUM({column} * {column})"
        sql = f"SELECT COUNT(*){moments} {joins}" + "".join(f" AND {c}" for c in clauses)
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params + values)
        row = cursor.fetchone()
    key = int(row[-1] or 0) if keys else None
    if target is None:
        return Moments(int(row[0]), key_sum=key)
    return Moments(int(row[0]), float(row[1] or 0.0), float(row[2] or 0.0), key_sum=key)


@dataclass(frozen=True)
class KeyedCells:
    """A question's cells among the rows meeting a condition (a discrete question's
    categories, or a continuous one's intervals): how many rows, and their record keys'
    sum (the cell-key method), per cell."""

    counts: NDArray[np.int64]
    key_sums: list[int]

    @property
    def total(self) -> int:
        """How many rows all the cells hold."""
        return int(self.counts.sum())

    @property
    def total_key_sum(self) -> int:
        """The record keys of all the cells' rows summed: the key of their total."""
        return sum(int(k) for k in self.key_sums)


def condition_key_cells(
    survey: Survey,
    questions: Sequence[Question],
    where: Sequence[tuple[Question, str, Any]],
    target: Question,
    *,
    inner_edges: NDArray[np.float64] | Sequence[float] | None = None,
    using: str = "default",
) -> KeyedCells:
    """:func:`condition_moments` per cell of ``target``, with the key sums, in one
    ``GROUP BY`` (an exact distribution's cells, issue 26).

    A discrete target's cells are its categories; a continuous one's are cut at
    ``inner_edges`` (cell ``i`` holds the values with ``i`` inner edges at or below
    them, as :func:`surveys.statistics.cell_statistics` cuts them).
    """
    if not target.is_discrete and inner_edges is None:
        raise ValueError("a continuous question's keyed cells need the inner edges of its cells")
    named = list(questions) + [q for q, _, _ in where] + [target]
    aliases = _aliases(named)
    clauses, values = _where_clauses(aliases, where)
    if target.is_discrete:
        cell, cell_params = f"{aliases[target.pk]}.code", []
        size = int(target.n_categories)
    else:
        edges = np.asarray(inner_edges, dtype=np.float64)
        vendor = connections[using].vendor
        cell, cell_params = _bucket(f"{aliases[target.pk]}.value", edges, vendor)
        size = int(edges.size) + 1
    columns = [(cell, "{c0}"), ("1", "COUNT(*)")]
    sql, params = _keyed_sql(survey, named, columns, clauses, group=True, using=using)
    counts = np.zeros(size, dtype=np.int64)
    key_sums = [0] * size
    with connections[using].cursor() as cursor:
        cursor.execute(sql, cell_params + params + values)
        for category, rows, keys in cursor.fetchall():
            counts[int(category)] = int(rows)
            key_sums[int(category)] = int(keys or 0)
    return KeyedCells(counts, key_sums)


def _where_clauses(
    aliases: Mapping[int, str], where: Sequence[tuple[Question, str, Any]]
) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    values: list[Any] = []
    for question, op, value in where:
        alias = aliases[question.pk]
        if op == "in":
            codes = sorted(int(c) for c in value)
            clauses.append(f"{alias}.code IN ({', '.join('%s' for _ in codes)})")
            values += codes
        elif op == "gt":
            clauses.append(f"{alias}.value > %s")
            values.append(float(value))
        elif op == "lte":
            clauses.append(f"{alias}.value <= %s")
            values.append(float(value))
        elif op == "between":
            clauses.append(f"{alias}.value >= %s AND {alias}.value < %s")
            values += [float(value[0]), float(value[1])]
        else:
            raise ValueError(f"unknown op {op!r}")
    return clauses, values


__all__ = [
    "KeyedCells",
    "Moments",
    "condition_count",
    "condition_key_cells",
    "condition_moments",
]
