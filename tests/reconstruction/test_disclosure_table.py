"""Complementary suppression of a two-way table whose row and column totals are
published too (a change's transition table with its shares before and after, issue 29):
no row or column keeps a single hidden cell, and no hidden cell is pinned by the totals.
No database; fails on the old code (``hidden_table`` did not exist: the change hid the
next-smallest cell of the whole table, often in another row and column)."""

from __future__ import annotations

import numpy as np

from reconstruction import disclosure

TABLE = np.array([[100.0, 3.0, 50.0], [40.0, 100.0, 60.0], [70.0, 80.0, 100.0]])


def _exact_lines(table: np.ndarray, axis: int) -> list[tuple[float, float]]:
    return [(float(t), float(t)) for t in table.sum(axis=axis)]


def _pinned(hidden: np.ndarray) -> list[tuple[int, int]]:
    """Hidden cells that the rows', columns' and table's totals determine."""
    cells = list(zip(*np.nonzero(hidden), strict=True))
    k, m = hidden.shape
    rows = [np.ones(len(cells))]
    rows += [np.array([1.0 if (i == r) else 0.0 for i, _ in cells]) for r in range(k)]
    rows += [np.array([1.0 if (j == c) else 0.0 for _, j in cells]) for c in range(m)]
    matrix = np.array(rows)
    projection = np.linalg.pinv(matrix) @ matrix
    return [cell for n, cell in enumerate(cells) if projection[n, n] > 1 - 1e-9]


def test_the_old_rule_leaves_a_single_hidden_cell_in_a_row_and_a_column() -> None:
    # The whole table's rule hides 3 and the next-smallest cell, 40, in another row and
    # column: with the rows' totals published, 3 = row 0's total minus its shown cells.
    old = disclosure.hidden_cells(TABLE.ravel(), 5).reshape(3, 3)
    assert old.sum() == 2 and old[0, 1] and old[1, 0]


def test_each_row_and_column_with_a_hidden_cell_hides_another() -> None:
    hidden = disclosure.hidden_table(
        TABLE, 5, rows=_exact_lines(TABLE, 1), columns=_exact_lines(TABLE, 0)
    )
    for line in [*hidden, *hidden.T]:
        assert line.sum() != 1, hidden
    assert _pinned(hidden) == []
    # The partners close a rectangle with the hidden 40 (rows 0 and 1, columns 0 and 1).
    assert hidden.sum() == 4 and hidden[:2, :2].all()


def test_rows_alone_hide_a_partner_in_the_row() -> None:
    hidden = disclosure.hidden_table(TABLE, 5, rows=_exact_lines(TABLE, 1))
    assert hidden[0, 1] and hidden[0].sum() == 2 and hidden[1].sum() in (0, 2)


def test_a_line_whose_hidden_sum_may_be_small_is_hidden_whole() -> None:
    """Two cells about empty beside a large one: their sum, the row's total minus the
    large cell, may be below the threshold without being provably empty, so the large
    cell is hidden too (the row's share then says what it held)."""
    table = np.array([[1.0, 2.0, 300.0], [100.0, 100.0, 100.0]])
    intervals = np.stack([np.maximum(table - 3, 0), table + 3], axis=-1)
    rows = [(295.0, 311.0), (290.0, 310.0)]
    hidden = disclosure.hidden_table(table, 5, intervals, rows=rows)
    assert hidden[0].all()
    # (A whole hidden row's sum is its published total: no separate interval.)
    assert disclosure.hidden_line_totals(intervals, hidden, rows, axis=0)[0] is None


def test_a_rows_hidden_sum_is_judged_on_its_cells_bounds_and_the_rows_total() -> None:
    table = np.array([[3.0, 40.0, 300.0], [100.0, 100.0, 100.0]])
    intervals = np.stack([np.maximum(table - 10, 0), table + 10], axis=-1)
    rows = [(330.0, 356.0), None]
    hidden = disclosure.hidden_table(table, 5, intervals, rows=rows)
    assert hidden[0].tolist() == [True, True, False]
    # Hidden bounds [0 + 30, 13 + 50] narrowed by the total minus the shown cell's
    # bounds, [330 - 310, 356 - 290]: [30, 63].
    assert disclosure.hidden_line_totals(intervals, hidden, rows, axis=0) == [(30.0, 63.0), None]


def test_nothing_hidden_needs_no_partner() -> None:
    table = np.full((3, 3), 50.0)
    lines = _exact_lines(table, 1)
    hidden = disclosure.hidden_table(table, 5, rows=lines, columns=lines)
    assert not hidden.any()
