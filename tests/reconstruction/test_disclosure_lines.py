"""Direct tests of ``hidden_table``'s steps with known small tables (issue 33): the rank
check on pinned cells, which cell a line's partner is, ``_lines`` with unpublished totals,
and ``hidden_line_totals`` / ``line_hidden_total``'s worst-case intervals. No database."""

from __future__ import annotations

import numpy as np
import pytest

from reconstruction import disclosure


def _lines_ok(hidden: np.ndarray) -> None:
    for line in [*hidden, *hidden.T]:
        assert line.sum() != 1, hidden


# Two 2 x 2 blocks of hidden cells (rows 0-1 x columns 0-1, rows 2-3 x columns 2-3) joined
# by the hidden cell (1, 2): every row and column has 0 or >= 2 hidden cells, but (1, 2) is
# the only hidden link between the blocks, so the rows' and columns' totals pin it (row 1's
# total minus its shown cells minus block A's row-1 part, which column totals fix). Every
# cell is large, so no line's hidden sum is small: only the rank check can act.
BRIDGE = np.array(
    [
        [80.0, 81.0, 21.0, 82.0, 60.0],
        [83.0, 84.0, 85.0, 90.0, 30.0],
        [40.0, 41.0, 86.0, 87.0, 25.0],
        [42.0, 43.0, 88.0, 89.0, 70.0],
    ]
)
BRIDGE_HIDDEN = [
    [1, 1, 0, 0, 0],
    [1, 1, 1, 0, 0],
    [0, 0, 1, 1, 0],
    [0, 0, 1, 1, 0],
]


def _exact(table: np.ndarray, axis: int) -> list[tuple[float, float]]:
    return [(float(t), float(t)) for t in table.sum(axis=axis)]


def test_pinned_finds_the_one_hidden_link_between_two_blocks() -> None:
    hidden = np.array(BRIDGE_HIDDEN, dtype=bool).ravel()
    k, m = BRIDGE.shape
    lines = [line for line, _ in disclosure._lines(k, m, _exact(BRIDGE, 1), _exact(BRIDGE, 0))]
    assert disclosure._pinned(hidden, lines) == 1 * m + 2
    # A 2 x 2 block alone is never pinned: +1/-1 around it keeps every total.
    block = np.zeros((k, m), dtype=bool)
    block[:2, :2] = True
    assert disclosure._pinned(block.ravel(), lines) is None
    assert disclosure._pinned(np.zeros(k * m, dtype=bool), lines) is None


def test_a_single_hidden_cell_is_pinned_by_the_tables_total_alone() -> None:
    hidden = np.zeros(6, dtype=bool)
    hidden[4] = True
    assert disclosure._pinned(hidden, []) == 4
    hidden[5] = True
    assert disclosure._pinned(hidden, []) is None


def test_a_pinned_cell_gets_the_next_smallest_shown_cell_of_a_line_through_it() -> None:
    """The given hidden cells (as 0/1) pass every line check; the rank check finds (1, 2)
    pinned. Rows come before columns among the lines, so row 1's smallest shown cell,
    (1, 4) = 30, is hidden (not the table's smallest shown cell, (0, 2) = 21, nor column
    2's). Column 4 then has a single hidden cell: its partner is its smallest shown cell
    (2, 4) = 25 (every crossing row has hidden cells), which also links the blocks, so
    nothing is pinned any more."""
    hidden = disclosure.hidden_table(
        BRIDGE,
        5,
        rows=_exact(BRIDGE, 1),
        columns=_exact(BRIDGE, 0),
        hidden=BRIDGE_HIDDEN,
    )
    expected = np.array(BRIDGE_HIDDEN, dtype=bool)
    expected[1, 4] = expected[2, 4] = True
    assert hidden.tolist() == expected.tolist()
    _lines_ok(hidden)
    k, m = BRIDGE.shape
    lines = [line for line, _ in disclosure._lines(k, m, _exact(BRIDGE, 1), _exact(BRIDGE, 0))]
    assert disclosure._pinned(hidden.ravel(), lines) is None


def test_a_rows_partner_is_its_smallest_shown_cell_not_its_first() -> None:
    # Row 0 = [100, 3, 50]: 3 is hidden, and its partner is the smaller of 100 and 50.
    table = np.array([[100.0, 3.0, 50.0], [40.0, 100.0, 60.0], [70.0, 80.0, 100.0]])
    hidden = disclosure.hidden_table(table, 5, rows=_exact(table, 1))
    assert hidden[0].tolist() == [False, True, True]


def test_a_row_after_an_unpublished_row_is_still_checked() -> None:
    # Row 0's total is not published (None), row 1's is: row 1's single hidden cell (a 2
    # whose complement the whole table's rule put in row 0) gets a partner.
    table = np.array([[50.0, 60.0, 4.0], [2.0, 70.0, 80.0]])
    rows = [None, (152.0, 152.0)]
    hidden = disclosure.hidden_table(table, 5, rows=rows)
    # The table's rule: 2 and 4 hidden (sum 6 >= 5). Row 1 must not keep 2 alone.
    assert hidden[1].sum() >= 2 and hidden[1, 0]
    assert hidden[1].tolist() == [True, True, False]


def test_a_cell_whose_interval_reaches_below_the_threshold_is_hidden() -> None:
    # 8 counts as large, but its interval [3, 13] does not show 5: it is hidden (and a
    # partner beside it), judged on the intervals, not on the counts.
    table = np.array([[8.0, 50.0], [60.0, 70.0]])
    intervals = np.stack([table - 5, table + 5], axis=-1)
    hidden = disclosure.hidden_table(table, 5, intervals)
    assert hidden[0, 0] and hidden.sum() == 2 and hidden[0, 1]


def test_a_fully_hidden_line_needs_no_partner_even_with_a_small_total() -> None:
    # Row 0 = [1, 2]: both hidden, its total 3 is published and is the hidden sum itself
    # (no shown cell to hide more of). Row 1's single hidden 50 gets its partner 60.
    table = np.array([[1.0, 2.0], [50.0, 60.0], [70.0, 80.0]])
    hidden = disclosure.hidden_table(table, 5, rows=_exact(table, 1))
    assert hidden.tolist() == [[True, True], [True, True], [False, False]]


def test_columns_hidden_sums_are_their_totals_minus_their_shown_cells() -> None:
    # Column 0 = [3, 40, 300] with 3 and 40 hidden, bounds +-10 (3's from 0): the hidden
    # cells' bounds give [30, 63]; the column's total [340, 346] minus the shown cell's
    # bounds [290, 310] gives [30, 56]: the worst case is [30, 56]. Column 1 is not
    # published, column 2 has nothing hidden.
    table = np.array([[3.0, 7.0, 50.0], [40.0, 8.0, 50.0], [300.0, 9.0, 50.0]])
    intervals = np.stack([np.maximum(table - 10, 0), table + 10], axis=-1)
    hidden = np.zeros((3, 3), dtype=bool)
    hidden[:2, 0] = True
    columns = [(340.0, 346.0), None, (150.0, 150.0)]
    assert disclosure.hidden_line_totals(intervals, hidden, columns, axis=1) == [
        (30.0, 56.0),
        None,
        None,
    ]
    # The same table transposed, as rows.
    assert disclosure.hidden_line_totals(
        intervals.transpose(1, 0, 2), hidden.T, columns, axis=0
    ) == [(30.0, 56.0), None, None]


def test_a_line_total_narrows_the_hidden_sums_low_end() -> None:
    # Hidden [0, 10] + [0, 10] = [0, 20]; total [100, 104] minus the shown [80, 85]: at
    # least 15, at most 24: [15, 20].
    bounds = np.array([[0.0, 10.0], [0.0, 10.0], [80.0, 85.0]])
    hidden = np.array([True, True, False])
    line = np.array([True, True, True])
    assert disclosure.line_hidden_total(bounds, hidden, line, (100.0, 104.0)) == (15.0, 20.0)
    # ... and its high end: total [90, 92] minus shown [80, 85]: at most 12.
    assert disclosure.line_hidden_total(bounds, hidden, line, (90.0, 92.0)) == (5.0, 12.0)


def test_float32_bounds_are_summed_in_float64() -> None:
    # 2**24 + 1 is not a float32 sum of 2**24 and 1: summed in float32 the shown cells'
    # low end would be 2**24 and the hidden sum's high end 1 larger than the truth.
    big = float(2**24)
    intervals = np.array([[[0.0, 5.0], [0.0, 5.0], [big, big], [1.0, 1.0]]], dtype=np.float32)
    hidden = np.array([[True, True, False, False]])
    total = big + 1 + 4
    assert disclosure.hidden_line_totals(intervals, hidden, [(total, total)], axis=0) == [
        (4.0, 4.0)
    ]


@pytest.mark.parametrize("half_width", [0.25, 0.5])
def test_a_lines_hidden_sum_up_to_half_a_person_or_more_is_not_provably_empty(
    half_width: float,
) -> None:
    # Two hidden cells in [0, 0.25] or [0, 0.5]: their sum's high end, 0.5 or 1, may still
    # round to a person (only a sum below 0.5 is provably empty), so the row's large cell
    # is hidden too, as the whole table's rule does (test_disclosure_rules).
    table = np.array([[0.1, 0.1, 100.0], [50.0, 50.0, 50.0]])
    intervals = np.array(
        [
            [[0.0, half_width], [0.0, half_width], [95.0, 105.0]],
            [[45.0, 55.0], [45.0, 55.0], [45.0, 55.0]],
        ]
    )
    rows = [(95.0, 106.0), None]
    hidden = disclosure.hidden_table(table, 5, intervals, rows=rows, hidden=[[1, 1, 0], [0, 0, 0]])
    assert hidden[0].all()
    # Below half a person the sum is provably empty: nothing more is hidden.
    intervals[0, :2, 1] = 0.2
    hidden = disclosure.hidden_table(table, 5, intervals, rows=rows, hidden=[[1, 1, 0], [0, 0, 0]])
    assert hidden[0].tolist() == [True, True, False]


def test_the_hidden_cells_may_be_given_as_a_0_1_mask() -> None:
    # A stored mask (JSON 0/1) reads as the same booleans as hidden_table's own.
    table = np.array([[3.0, 40.0, 300.0], [100.0, 100.0, 100.0]])
    intervals = np.stack([np.maximum(table - 10, 0), table + 10], axis=-1)
    rows = [(330.0, 356.0), None]
    as_bool = disclosure.hidden_line_totals(
        intervals, np.array([[True, True, False], [False, False, False]]), rows, axis=0
    )
    assert as_bool == [(30.0, 63.0), None]
    assert disclosure.hidden_line_totals(intervals, [[1, 1, 0], [0, 0, 0]], rows, axis=0) == as_bool


def test_float32_tables_are_judged_on_float64_sums() -> None:
    """Row 0 = [2, 2, 2**24, 1] with 2 and 2 hidden, each in [0, 2.5]; the row's total is
    2**24 + 5. Its hidden sum is the total minus the shown cells, 2**24 + 5 - (2**24 + 1) =
    4: below 5, so the 1 is hidden too, and then the hidden sum 5 is publishable. In
    float32, 2**24 + 1 is 2**24: the bounds would say 5 and show the 1; the table's total,
    2**24 + 5, would round to 2**24 + 4 and hide the whole row."""
    big = float(2**24)
    counts = np.array([[2.0, 2.0, big, 1.0]], dtype=np.float32)
    intervals = np.array([[[0.0, 2.5], [0.0, 2.5], [big, big], [1.0, 1.0]]], dtype=np.float32)
    total = big + 5
    hidden = disclosure.hidden_table(
        counts, 5, intervals, rows=[(total, total)], hidden=[[1, 1, 0, 0]]
    )
    assert hidden.tolist() == [[True, True, False, True]]


def test_a_pinned_cell_on_no_published_line_gets_the_tables_smallest_shown_cell() -> None:
    """Rows 0 and 1 are published, row 2 is not: the table's total minus rows 0 and 1 is
    row 2's sum, so the hidden 3 at (2, 0) beside the shown 20 is pinned. No published
    line runs through it, so the table's smallest shown cell, that 20, is hidden: row 2's
    two hidden cells then give only their sum."""
    table = np.array([[50.0, 60.0], [70.0, 80.0], [3.0, 20.0]])
    rows = [(110.0, 110.0), (150.0, 150.0), None]
    hidden = disclosure.hidden_table(table, 5, rows=rows, hidden=[[1, 1], [0, 0], [1, 0]])
    assert hidden.tolist() == [[True, True], [False, False], [True, True]]


def test_of_tied_shown_cells_the_first_is_hidden() -> None:
    """The bridge table with row 1's two shown cells equal (30 and 30): the pinned (1, 2)
    gets the first of them in reading order, (1, 3), which links the two blocks through
    column 3 at once (the same table gives the same cells on every machine, whatever
    sort numpy would pick for ties)."""
    table = BRIDGE.copy()
    table[1, 3] = table[1, 4] = 30.0
    hidden = disclosure.hidden_table(
        table, 5, rows=_exact(table, 1), columns=_exact(table, 0), hidden=BRIDGE_HIDDEN
    )
    expected = np.array(BRIDGE_HIDDEN, dtype=bool)
    expected[1, 3] = True
    assert hidden.tolist() == expected.tolist()


def _pinned_by(
    hidden: np.ndarray,
    rows: list[tuple[float, float] | None],
    columns: list[tuple[float, float] | None],
) -> list[tuple[int, int]]:
    """Hidden cells that the published rows', columns' and table's totals determine
    (their indicator lies in the span of those totals' hidden parts)."""
    cells = list(zip(*np.nonzero(hidden), strict=True))
    equations = [np.ones(len(cells))]
    equations += [
        np.array([1.0 if i == r else 0.0 for i, _ in cells])
        for r, total in enumerate(rows)
        if total is not None
    ]
    equations += [
        np.array([1.0 if j == c else 0.0 for _, j in cells])
        for c, total in enumerate(columns)
        if total is not None
    ]
    matrix = np.array(equations)
    projection = np.linalg.pinv(matrix) @ matrix
    return [cell for n, cell in enumerate(cells) if projection[n, n] > 1 - 1e-9]


def test_a_pinned_cell_whose_only_line_is_hidden_whole_gets_another_shown_cell() -> None:
    """Row 0's total is not published. The small 2, 1 and 3 and their partners hide
    column 0 whole, and then the rank check finds (0, 0) pinned (column 0's total and the
    table's total minus rows 1 and 2): its only published line, column 0, has no shown
    cell left, so a shown cell elsewhere is hidden (a line without a shown cell can take
    no more, and the loop would never end). The result keeps no published line with a
    single hidden cell and no pinned cell."""
    table = np.array([[2.0, 90.0, 30.0], [90.0, 1.0, 30.0], [3.0, 12.0, 90.0]])
    rows: list[tuple[float, float] | None] = [None, *_exact(table, 1)[1:]]
    columns: list[tuple[float, float] | None] = list(_exact(table, 0))
    hidden = disclosure.hidden_table(table, 5, rows=rows, columns=columns)
    assert hidden[0, 0] and hidden[1, 1] and hidden[2, 0]
    for index, total in enumerate(rows):
        assert total is None or hidden[index].sum() != 1, hidden
    for index in range(3):
        assert hidden[:, index].sum() != 1, hidden
    assert _pinned_by(hidden, rows, columns) == []
