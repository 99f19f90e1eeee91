"""Tests of ARVeSNA and the sorted assignment (reconstruction/algorithms/assignment.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy.mechanisms import distort_codes, randomised_response
from reconstruction.algorithms.assignment import (
    arvesna,
    arvesna_transfers,
    round_counts,
    sorted_assignment,
)


@given(
    st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=12).filter(
        lambda xs: sum(xs) > 0
    ),
    st.integers(0, 10_000),
)
def test_round_counts_sums_to_total(counts: list[float], total: int) -> None:
    rounded = round_counts(counts, total)
    assert rounded.sum() == total
    assert np.all(rounded >= 0)
    scaled = np.asarray(counts) * total / sum(counts)
    assert np.all(np.abs(rounded - scaled) < 1.0 + 1e-9)


def test_transfers_follow_the_most_likely_source() -> None:
    # reported value 0 has 10 too many; values 1 and 2 lack 5 each, and a true 2 is far
    # more likely to be reported as 0 than a true 1 (C[2, 0] > C[1, 0]).
    channel = np.array([[0.8, 0.1, 0.1], [0.05, 0.9, 0.05], [0.3, 0.1, 0.6]])
    moves = arvesna_transfers([30, 10, 10], [20, 15, 15], channel)
    np.testing.assert_array_equal(moves, [[0, 5, 5], [0, 0, 0], [0, 0, 0]])
    moves = arvesna_transfers([30, 10, 10], [24, 11, 15], channel)
    np.testing.assert_array_equal(moves[0], [0, 1, 5])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6), st.integers(1, 400))
def test_arvesna_matches_reconstructed_counts(seed: int, k: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    channel = randomised_response(k, 0.7)
    codes = distort_codes(rng.integers(0, k, n), channel, rng)
    estimate = rng.dirichlet(np.ones(k)) * n
    assigned = arvesna(codes, estimate, channel, rng=rng)
    np.testing.assert_array_equal(np.bincount(assigned, minlength=k), round_counts(estimate, n))
    # only samples of values with a surplus change value
    surplus = np.bincount(codes, minlength=k) > round_counts(estimate, n)
    assert np.all(surplus[codes[assigned != codes]])


def test_arvesna_is_reproducible_and_random_in_who_moves() -> None:
    channel = randomised_response(3, 0.6)
    codes = np.repeat([0, 1, 2], [500, 300, 200])
    estimate = np.array([300.0, 400.0, 300.0])
    one = arvesna(codes, estimate, channel, rng=np.random.default_rng(9))
    two = arvesna(codes, estimate, channel, rng=np.random.default_rng(9))
    three = arvesna(codes, estimate, channel, rng=np.random.default_rng(10))
    np.testing.assert_array_equal(one, two)
    assert np.any(one != three)


def test_arvesna_rejects_codes_outside_range() -> None:
    with pytest.raises(ValueError, match=r"reported_codes must be integers in 0\.\.1"):
        arvesna([0, 2], [1.0, 1.0], randomised_response(2, 0.8), rng=np.random.default_rng(0))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.integers(1, 8))
def test_sorted_assignment_is_monotone(seed: int, n: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=n), 1)  # ties on purpose
    counts = rng.dirichlet(np.ones(m)) * n
    assigned = sorted_assignment(values, counts, rng=rng)
    np.testing.assert_array_equal(np.bincount(assigned, minlength=m), round_counts(counts, n))
    # a smaller value never lands in a later interval than a larger one
    lower = values[:, None] < values[None, :]
    assert not np.any(lower & (assigned[:, None] > assigned[None, :]))


def test_sorted_assignment_first_counts_go_to_first_interval() -> None:
    values = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    np.testing.assert_array_equal(sorted_assignment(values, [2, 3]), [1, 0, 1, 0, 1])
