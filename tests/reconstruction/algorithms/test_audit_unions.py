"""Issue 26: the audit sees unions of atoms that are boxes (the three-box trackers), on
exact counts and on counts published with the cell-key perturbation (within 2)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from reconstruction.algorithms.audit import (
    Box,
    Continuous,
    Discrete,
    Published,
    _floor,
    _judge,
    _Pieces,
    audit,
)

UNIVERSE = {"district": Discrete(5), "tenure": Discrete(2), "item": Discrete(2),
            "age": Continuous(16, 100)}  # fmt: skip
N, S, E, W, C = range(5)
Y, NO = 0, 1
POPULATION = Published.exact(Box(), 440)


def exact(conditions, value):
    return Published.exact(Box.of(conditions), value)


def perturbed(conditions, value):
    return Published(Box.of(conditions), value, value - 2, value + 2)


def test_the_three_box_tracker_is_refused_on_exact_counts():
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    finding = audit(UNIVERSE, [POPULATION, c, n], [rest], 5)
    assert finding is not None and finding.kind == "union"
    # Without step 4 (no boxes allowed) the old audit let it through.
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5, max_boxes=0) is None


def test_the_three_box_tracker_is_refused_on_perturbed_counts():
    c = perturbed([("district", "in", {C})], 41)
    n = perturbed([("district", "in", {N})], 98)
    rest = perturbed([("item", "in", {NO}), ("district", "in", {C, N})], 138)
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5) is not None


def test_the_continuous_tracker_is_refused():
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    young = exact([("age", "lte", 94), ("district", "in", {C, N})], 137)
    assert audit(UNIVERSE, [POPULATION, c, n], [young], 5) is not None


def test_a_large_union_passes():
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 100)  # 39 say Y
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5) is None


def test_a_union_implied_by_published_results_alone_is_not_blamed_on_a_new_one():
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    unrelated = exact([("tenure", "in", {0})], 198)
    assert audit(UNIVERSE, [POPULATION, c, n, rest], [unrelated], 5) is None


def test_too_many_boxes_skip_step_4():
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5, max_boxes=10) is None


# The floor of a union box (step 4 refuses a small-looking union only when the published
# boxes inside it do not already show it is at least the threshold). Atoms 0..4; the box
# is atoms {0, 1, 2, 4}; rows are published boxes (0/1 over the atoms).
FLOOR_ROWS = np.array([
    [1, 0, 0, 0, 0],  # 30, inside
    [1, 1, 0, 0, 0],  # 40, inside
    [0, 0, 1, 0, 0],  # 7, inside, disjoint from the 40
    [0, 1, 0, 0, 0],  # 5, inside, overlaps the 40 (taken before it)
    [0, 0, 0, 0, 1],  # 1, inside, disjoint: a perturbed count of 3 has a lower end of 1
    [0, 0, 1, 1, 0],  # 100, not inside (atom 3 is outside the box)
], dtype=float)  # fmt: skip
FLOOR_BOX = np.array([1, 1, 1, 0, 1], dtype=float)


def _rows(lows):
    return [Published(Box(), low, low, low + 4) for low in lows]


def test_the_floor_sums_the_lower_ends_of_disjoint_published_boxes_inside_largest_first():
    # 40 (atoms 0, 1) + 7 (atom 2) + 1 (atom 4); the 30 and the 5 overlap the 40; the
    # 100 is not inside the box.
    floor = _floor(FLOOR_ROWS, _rows([30, 40, 7, 5, 1, 100]), FLOOR_BOX)
    assert floor == 48.0


def test_the_floor_ignores_boxes_without_a_positive_finite_lower_end():
    rows = np.array([[1, 0], [0, 1]], dtype=float)
    box = np.array([1, 1], dtype=float)
    unknown = [Published(Box(), 10, float("nan"), 20), Published(Box(), 3, -math.inf, 8)]
    assert _floor(rows, unknown, box) == 0.0
    assert _floor(rows, [Published(Box(), 0, 0, 4), Published(Box(), 6, 6, 6)], box) == 6.0


def test_the_floor_of_a_box_with_no_published_box_inside_is_zero():
    assert _floor(FLOOR_ROWS, _rows([30, 40, 7, 5, 1, 100]), np.array([0, 0, 0, 1, 0.0])) == 0.0


def test_results_wider_than_the_cell_key_bound_are_not_used_by_step_4():
    # The three-box tracker, one result within 2.5 (a distorted, reconstructed one): step 4
    # uses only results published within 2 either way (exact or cell-key perturbed).
    c = Published(Box.of([("district", "in", {C})]), 41, 38.5, 43.5)
    n = perturbed([("district", "in", {N})], 98)
    rest = perturbed([("item", "in", {NO}), ("district", "in", {C, N})], 138)
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5) is None
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5, max_union_half_width=2.5) is not None


def test_a_combination_of_two_unbounded_results_is_refused_without_a_numeric_warning():
    # Two results with an unbounded upper end (centre inf) taken with +1 and -1: the
    # implied cell is unknown (inf - inf), so it is judged small, and silently.
    import warnings

    inf = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        finding = _judge(np.array([1.0, -1.0]), np.array([inf, inf]), np.array([inf, inf]),
                         1, 5, "union")  # fmt: skip
    assert finding is not None and finding.uses == (0, 1)


def test_repeating_a_published_result_does_not_blame_the_union_it_already_implied():
    # The tracker's union was implied by the published results alone (judged then); the
    # same box published again adds nothing new.
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    again = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    assert audit(UNIVERSE, [POPULATION, c, n, rest], [again], 5) is None


def test_the_tracker_asked_all_at_once_is_refused():
    # No earlier results: every result of the union is new.
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    finding = audit(UNIVERSE, [], [POPULATION, c, n, rest], 5)
    assert finding is not None and finding.kind == "union"


def test_a_lower_end_that_is_not_a_number_does_not_let_a_small_box_hide_a_larger_one():
    # A box of 40 (atoms 0, 1) and a box of 5 inside it (atom 0): the floor is 40, in
    # whatever order the results come, also with a result of unknown (NaN) lower end
    # among them (NaN compares false: sorted by -low alone, the 5 could come first).
    rows = np.array([[1, 0, 0], [0, 0, 1], [1, 1, 0]], dtype=float)
    lows = [5.0, math.nan, 40.0]
    for order in itertools.permutations(range(3)):
        results = [Published(Box(), 50, lows[i], 60) for i in order]
        assert _floor(rows[list(order)], results, np.ones(3)) == 40.0


# Step 4's candidate boxes (issue 33: tests that kill the mutants that survived in
# _union_boxes and in audit's step 4).


def test_a_small_box_a_new_result_publishes_itself_is_left_to_the_per_query_rule():
    # count(a=0) = 3 is the new result's own box; another result cuts it into two atoms.
    # Step 4 judges boxes the results imply, not the results' own boxes (suppression's
    # job), so nothing is refused: a = 1 is 9, b = 1 is 6.
    universe = {"a": Discrete(2), "b": Discrete(2)}
    published = [Published.exact(Box(), 12), exact([("b", "in", {0})], 6)]
    assert audit(universe, published, [exact([("a", "in", {0})], 3)], 5) is None


def test_a_union_with_two_pieces_on_every_attribute_is_judged():
    # a in {1, 3} (4 + 3) minus the new a in {1, 3} and b = 0 (4) is the box
    # a in {1, 3} and b in {1, 2}: 3 people.
    universe = {"a": Discrete(4), "b": Discrete(3)}
    published = [Published.exact(Box(), 10), exact([("a", "in", {3})], 4),
                 exact([("a", "in", {1})], 3)]  # fmt: skip
    new = exact([("a", "in", {1, 3}), ("b", "in", {0})], 4)
    finding = audit(universe, published, [new], 5)
    assert finding is not None and finding.kind == "union" and finding.uses == (1, 2, 3)
    assert audit(universe, published, [exact([("a", "in", {1, 3}), ("b", "in", {0})], 2)],
                 5) is None  # 7 - 2 = 5: at the threshold  # fmt: skip


def test_a_box_outside_the_span_of_the_results_is_not_judged():
    # Only the population and the new cell a = 1 and b = 1 are known: no other box is
    # implied (a = 1 alone is not: its projection, 18/3 + ..., is no count of anybody).
    universe = {"a": Discrete(3), "b": Discrete(3)}
    new = perturbed([("a", "in", {1}), ("b", "in", {1})], 2)
    assert audit(universe, [Published.exact(Box(), 18)], [new], 5) is None


def test_the_tracker_without_the_population_is_refused():
    # No result is the whole population: the candidate "every category" is not a result's
    # own box, and the boxes after it in the candidates' order are still judged.
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    finding = audit(UNIVERSE, [c, n], [rest], 5)
    assert finding is not None and finding.kind == "union" and finding.uses == (0, 1, 2)


def test_a_union_that_leaves_an_attribute_free_is_judged_when_every_result_restricts_it():
    # a = 0 and b = 0 (3) and a = 1 and b = 0 (1): the box b = 0 (any a) is 4, though no
    # result leaves a free.
    universe = {"a": Discrete(2), "b": Discrete(3)}
    first = exact([("a", "in", {0}), ("b", "in", {0})], 3)
    second = exact([("a", "in", {1}), ("b", "in", {0})], 1)
    finding = audit(universe, [first], [second], 5)
    assert finding is not None and finding.kind == "union" and finding.uses == (0, 1)


def test_a_union_using_a_reconstructed_result_is_skipped_and_the_next_ones_judged():
    # The three-box tracker plus a new reconstructed count(tenure = 0) (within 6): the
    # box tenure = 1 (population minus it) uses the wide result and is skipped; the
    # tracker's union, later in the same batch, is still refused.
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    tenure = Published(Box.of([("tenure", "in", {0})]), 220, 214, 226)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    finding = audit(UNIVERSE, [POPULATION, c, n], [tenure, rest], 5)
    assert finding is not None and finding.kind == "union" and finding.uses == (1, 2, 4)


def test_a_union_that_looks_small_but_holds_a_published_box_of_the_threshold_passes():
    # District C: 40 people, 5 of them say Y; district N: 99, all say N. Published within
    # 2 (cell key): C 38, N 97, item N in {C, N} 136, and exactly: C and Y = 5. The
    # union "{C, N} and Y" combines to 38 + 97 - 136 = -1, within 6: [-7, 5], which looks
    # small; but it holds the published box C and Y (at least 5): not refused. N and Y
    # (the union minus that box) combines to [-12, 0]: provably empty.
    c_and_y = exact([("district", "in", {C}), ("item", "in", {Y})], 5)
    published = [POPULATION, perturbed([("district", "in", {C})], 38),
                 perturbed([("district", "in", {N})], 97), c_and_y]  # fmt: skip
    rest = perturbed([("item", "in", {NO}), ("district", "in", {C, N})], 136)
    assert audit(UNIVERSE, published, [rest], 5) is None
    # With C and Y published as 4, N and Y combines to -5 within 6, [-11, 1]: not shown
    # empty, so that cell is refused (step 3).
    below = [*published[:3], exact([("district", "in", {C}), ("item", "in", {Y})], 4)]
    finding = audit(UNIVERSE, below, [rest], 5)
    assert finding is not None and finding.kind == "combination"


def test_exactly_max_boxes_candidates_are_judged():
    # The tracker's candidates: 10 options for the district (5 single ones, all of them,
    # {C}, {N}, {C, N} and their complements) times 3 for the item ({Y}, {N}, both).
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5, max_boxes=30) is not None
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5, max_boxes=29) is None


def test_candidates_beyond_the_first_batch_are_judged():
    # 18 age pieces (cuts every 4 years from 20 to 88, every piece published large) give
    # 171 runs of pieces; with the district's 10 options and the item's 3 that is 5,130
    # candidate boxes, judged 512 at a time: the tracker's union comes after the first.
    ages = [exact([("age", "lte", t)], 20 * (i + 1)) for i, t in enumerate(range(20, 89, 4))]
    c = exact([("district", "in", {C})], 40)
    n = exact([("district", "in", {N})], 99)
    rest = exact([("item", "in", {NO}), ("district", "in", {C, N})], 137)
    finding = audit(UNIVERSE, [POPULATION, *ages, c, n], [rest], 5)
    assert finding is not None and finding.kind == "union"


def test_the_limit_on_a_results_half_width_takes_a_rounding_error_above_it():
    # A limit computed as 2 - 1e-9 still takes the cell key's results (within 2).
    c = perturbed([("district", "in", {C})], 41)
    n = perturbed([("district", "in", {N})], 98)
    rest = perturbed([("item", "in", {NO}), ("district", "in", {C, N})], 138)
    assert audit(UNIVERSE, [POPULATION, c, n], [rest], 5,
                 max_union_half_width=2.0 - 1e-9) is not None  # fmt: skip


def test_a_condition_at_the_ranges_low_end_adds_no_piece():
    # age 16-100 cut at 30 by "between [16, 30)": two pieces, 16-30 and 30-100. A sliver
    # piece at 16 would always go with the piece above it: two equal columns, neither of
    # which step 3 could judge on its own.
    young = Box.of([("age", "between", (16, 30))])
    pieces = _Pieces(UNIVERSE, [young, Box.of([("age", "gt", 16)])])
    assert pieces.sizes == [2]
    assert pieces.sets(young) == [frozenset({0})]
