"""Issue 26: the audit sees unions of atoms that are boxes (the three-box trackers), on
exact counts and on counts published with the cell-key perturbation (within 2)."""

from __future__ import annotations

from reconstruction.algorithms.audit import Box, Continuous, Discrete, Published, audit

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
