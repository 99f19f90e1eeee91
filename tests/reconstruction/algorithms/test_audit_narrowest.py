"""Query auditing judges an implied cell on what the published results prove about it
(issue 29's last trade-off): the narrowest combination of results that implies it, and
for a difference of nested boxes the published boxes inside it. Both fail on the old
code, which judged only the minimum-norm combination and the bare difference."""

from __future__ import annotations

from reconstruction.algorithms.audit import Box, Discrete, Published, audit

UNIVERSE = {"a": Discrete(2), "b": Discrete(2)}
POPULATION = Published.exact(Box(), 2000)


def _box(conditions, estimate, half):
    return Published(Box.of(conditions), estimate, estimate - half, estimate + half)


def _routes(row_total, row_half, cell_estimate, cell_half):
    """Atom (a=0, b=1) is ``a=0`` minus ``a=0 and b=0`` (two narrow results), or ``a=0``
    minus ``b=0`` plus ``a=1 and b=0`` (two wide ones, published with the cell). The
    minimum-norm combination mixes the two routes."""
    published = [POPULATION, _box([("a", "in", {0})], row_total, row_half)]
    new = [
        _box([("a", "in", {0}), ("b", "in", {0})], cell_estimate, cell_half),
        _box([("b", "in", {0})], cell_estimate + 600, 890),
        _box([("a", "in", {1}), ("b", "in", {0})], 600, 590),
    ]
    return published, new


def test_a_cell_that_the_narrowest_combination_shows_large_is_published():
    # a=0 minus (a=0, b=0): 200 within [180, 220]; the minimum-norm mixture (2/3 of the
    # narrow route, 1/3 of the wide one) is 200 +- 510, which reaches below 5.
    published, new = _routes(500, 10, 300, 10)
    assert audit(UNIVERSE, published, new, 5) is None


def test_a_cell_that_even_the_narrowest_combination_leaves_small_is_refused():
    # 305 - 300 = 5 within [3, 7]: small, whichever combination.
    published, new = _routes(305, 1, 300, 1)
    finding = audit(UNIVERSE, published, new, 5)
    assert finding is not None and finding.kind in {"difference", "combination"}


def test_a_row_total_minus_a_shown_cell_is_at_least_the_rows_other_shown_cells():
    """A change's share before (its row's total) contains each of the row's cells: the
    row minus one cell is the row's other cells, at least their published lower ends
    (here 40), however wide the worst case of the row and the cell is."""
    universe = {"a": Discrete(2), "b": Discrete(3)}
    row = _box([("a", "in", {0})], 400, 60)
    first = _box([("a", "in", {0}), ("b", "in", {0})], 300, 60)
    others = [
        _box([("a", "in", {0}), ("b", "in", {1})], 60, 20),
        _box([("a", "in", {0}), ("b", "in", {2})], 40, 20),
    ]
    assert audit(universe, [POPULATION, *others], [row, first], 5) is None
    # Without the other cells published, row minus cell (100 within [-20, 220]) is a
    # group whose size nothing shows to be at least 5: refused.
    assert audit(universe, [POPULATION], [row, first], 5) is not None
    # A published cell inside that reaches below the threshold proves nothing either.
    small = _box([("a", "in", {0}), ("b", "in", {1})], 4, 3)
    assert audit(universe, [POPULATION, small], [row, first], 5) is not None


def test_without_linear_programmes_the_minimum_norm_combination_decides() -> None:
    published, new = _routes(500, 10, 300, 10)
    assert audit(UNIVERSE, published, new, 5, max_programmes=0) is not None
