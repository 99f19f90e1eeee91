"""Counting reported categories: one bincount pass, validated."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconstruction.algorithms import reported_counts


def test_reported_counts() -> None:
    assert reported_counts([0, 2, 2, 1, 2], 4).tolist() == [1, 1, 3, 0]
    assert reported_counts(np.array([1, 1], dtype=np.int8), 2).tolist() == [0, 2]


def test_empty_data_gives_zeros() -> None:
    assert reported_counts([], 3).tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    ("codes", "message"),
    [([0, 3], r"0\.\.2, found 3"), ([0, -1], "negative"), ([0.5], "integer")],
)
def test_bad_codes_are_refused(codes: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reported_counts(codes, 3)


def test_bad_k_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be"):
        reported_counts([0], 0)


@given(st.lists(st.integers(0, 9), max_size=200))
def test_counts_sum_to_the_number_of_codes(codes: list[int]) -> None:
    counts = reported_counts(np.array(codes, dtype=np.int64), 10)
    assert counts.sum() == len(codes)
    assert counts.tolist() == [codes.count(j) for j in range(10)]
