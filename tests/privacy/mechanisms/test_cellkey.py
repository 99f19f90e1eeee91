"""The cell-key perturbation table and lookups (privacy/mechanisms/cellkey.py), directly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privacy.mechanisms import cellkey

keys = st.integers(min_value=0, max_value=cellkey.KEY_MODULUS * 1000)


def test_the_table_is_a_distribution_with_zero_mean_and_variance_1_2() -> None:
    assert sum(p for _, p in cellkey.PERTURBATION) == pytest.approx(1.0)
    assert sum(p for _, p in cellkey.SMALL_PERTURBATION) == pytest.approx(1.0)
    assert pytest.approx(0.0, abs=1e-12) == cellkey.MEAN
    assert pytest.approx(1.2) == cellkey.VARIANCE
    assert max(abs(d) for d, _ in cellkey.PERTURBATION) == cellkey.MAX_PERTURBATION == 2
    # Symmetric: no sign bias.
    table = dict(cellkey.PERTURBATION)
    assert all(table[d] == pytest.approx(table[-d]) for d in table)


def test_the_lookup_follows_the_cumulative_table() -> None:
    # 0.1 | 0.2 | 0.4 | 0.2 | 0.1
    assert cellkey.lookup(240, 0.0) == -2
    assert cellkey.lookup(240, 0.0999) == -2
    assert cellkey.lookup(240, 0.1) == -1
    assert cellkey.lookup(240, 0.2999) == -1
    assert cellkey.lookup(240, 0.3) == 0
    assert cellkey.lookup(240, 0.6999) == 0
    assert cellkey.lookup(240, 0.7) == 1
    assert cellkey.lookup(240, 0.8999) == 1
    assert cellkey.lookup(240, 0.9) == 2
    assert cellkey.lookup(240, 0.999999) == 2
    assert cellkey.lookup(3, 0.0) == -2  # a count of 3 may reach 1, never 0


def test_small_counts_never_reach_zero_or_below() -> None:
    assert cellkey.lookup(0, 0.0) == 0 and cellkey.lookup(0, 0.99) == 0
    assert cellkey.lookup(1, 0.0) == 0 and cellkey.lookup(1, 0.99) == 0
    assert cellkey.lookup(2, 0.0) == -1
    assert cellkey.lookup(2, 0.25) == 0
    assert cellkey.lookup(2, 0.7499) == 0
    assert cellkey.lookup(2, 0.75) == 1


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5])
def test_a_key_outside_the_unit_interval_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="cell key"):
        cellkey.lookup(10, bad)


def test_a_negative_count_or_a_non_integer_key_sum_is_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        cellkey.lookup(-1, 0.5)
    with pytest.raises(ValueError, match="integer"):
        cellkey.cell_keys(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="integer"):
        cellkey.cell_keys(True)
    with pytest.raises(ValueError, match="non-negative"):
        cellkey.new_record_keys(-1)


def test_cell_keys_are_the_two_halves_of_the_sum_mod_2_to_32() -> None:
    key = cellkey.cell_keys((3 << 16) + 5 + 7 * cellkey.KEY_MODULUS)
    assert key.count == 3 / 65536
    assert key.total == 5 / 65536
    top = cellkey.cell_keys(cellkey.KEY_MODULUS - 1)
    assert top.count == 65535 / 65536 and top.total == 65535 / 65536
    assert cellkey.cell_keys(-1) == top  # modulo, as SQL sums of keys never are negative


@given(count=st.integers(min_value=3, max_value=10**7), key_sum=keys)
def test_a_count_moves_by_at_most_two_and_the_same_records_give_the_same_value(
    count: int, key_sum: int
) -> None:
    published = cellkey.perturbed_count(count, key_sum)
    assert abs(published - count) <= 2
    assert published == cellkey.perturbed_count(count, key_sum)
    assert published == count + cellkey.perturbation(count, key_sum)
    low, high = cellkey.bounds(published)
    assert low <= count <= high


@given(count=st.integers(min_value=0, max_value=10**6), key_sum=keys)
def test_a_published_count_is_never_below_one_unless_it_is_zero(count: int, key_sum: int) -> None:
    published = cellkey.perturbed_count(count, key_sum)
    assert (published == 0) == (count == 0)
    assert published >= min(count, 1)


def test_record_keys_are_uniform_32_bit_integers_and_make_unbiased_perturbations() -> None:
    drawn = np.asarray(cellkey.new_record_keys(240_000))
    assert drawn.min() >= 0 and drawn.max() < cellkey.KEY_MODULUS
    assert len(cellkey.new_record_keys(0)) == 0
    assert 0 <= cellkey.new_record_key() < cellkey.KEY_MODULUS
    # Cells of 240 random records: the perturbations' mean and variance are the table's.
    sums = drawn.reshape(-1, 240).sum(axis=1)
    changes = np.array([cellkey.perturbation(240, int(s)) for s in sums])
    cells = np.array([cellkey.perturbation(240, int(s)) for s in drawn.reshape(-1, 40).sum(axis=1)])
    both = np.concatenate([changes, cells])
    assert abs(both.mean()) < 0.1  # 7,000 cells: standard error 0.014
    assert both.var() == pytest.approx(cellkey.VARIANCE, abs=0.15)
    assert set(np.unique(both)) == {-2, -1, 0, 1, 2}


def test_a_mean_moves_in_proportion_and_consistently() -> None:
    mean = 41.3
    for key_sum in range(0, cellkey.KEY_MODULUS, cellkey.KEY_MODULUS // 97):
        moved = cellkey.perturbed_mean(mean, 40, key_sum)
        keys_ = cellkey.cell_keys(key_sum)
        expected = (
            mean * (40 + cellkey.lookup(40, keys_.total)) / (40 + cellkey.lookup(40, keys_.count))
        )
        assert moved == pytest.approx(expected)
        assert mean * 38 / 42 <= moved <= mean * 42 / 38
        assert moved == cellkey.perturbed_mean(mean, 40, key_sum)
    assert cellkey.perturbed_mean(7.5, 0, 123) == 7.5


def test_perturbed_counts_of_a_table() -> None:
    assert cellkey.perturbed_counts([0, 240, 2], [5, 0, 0]) == [0, 238, 1]
    with pytest.raises(ValueError):
        cellkey.perturbed_counts([1, 2], [3])


@pytest.mark.parametrize("count", [1, 3, 4, 7])
def test_new_record_keys_are_count_python_ints_below_2_to_the_32(count):
    # (issue 33: mutmut survivors) whole numbers stored as the records' keys, exactly count
    keys = cellkey.new_record_keys(count)
    assert len(keys) == count
    assert all(type(k) is int and 0 <= k < 2**32 for k in keys)


def test_the_published_table_has_the_documented_properties_from_first_principles() -> None:
    # docs/methods/cell-key.md: changes -2..+2 with 0.1, 0.2, 0.4, 0.2, 0.1; mean 0, variance 1.2.
    table = cellkey.PERTURBATION
    changes = [d for d, _ in table]
    probabilities = [p for _, p in table]
    assert changes == [-2, -1, 0, 1, 2]
    assert all(p > 0 for p in probabilities)
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-12)
    assert sum(d * p for d, p in table) == pytest.approx(0.0, abs=1e-12)
    assert sum(d * d * p for d, p in table) == pytest.approx(1.2, abs=1e-12)
    assert all(abs(d) <= 2 for d in changes)
    assert probabilities == probabilities[::-1]  # symmetric
    small = cellkey.SMALL_PERTURBATION
    assert [d for d, _ in small] == [-1, 0, 1]
    assert [p for _, p in small] == [0.25, 0.5, 0.25]


def test_table_moments_are_the_mean_and_variance_of_the_change() -> None:
    # (issue 33: mutmut could not see the import-time call; these call it) an asymmetric
    # table: mean 0.5 * 3 + 0.5 * 1 = 2, variance 0.5 * 1 + 0.5 * 1 = 1.
    assert cellkey.table_moments([(3, 0.5), (1, 0.5)]) == pytest.approx((2.0, 1.0))
    # mean 0.25 * 4 = 1, variance 0.75 * 1 + 0.25 * 9 = 3.
    assert cellkey.table_moments([(0, 0.75), (4, 0.25)]) == pytest.approx((1.0, 3.0))
    assert cellkey.table_moments(cellkey.PERTURBATION) == pytest.approx((0.0, 1.2))
    assert cellkey.table_moments(cellkey.PERTURBATION) == (cellkey.MEAN, cellkey.VARIANCE)


def test_cumulative_bounds_end_each_row_and_a_key_of_exactly_0_3_starts_the_zero_row() -> None:
    bounds = cellkey.cumulative_bounds(cellkey.PERTURBATION)
    # Exactly these floats: 0.1 + 0.2 is 0.30000000000000004 unrounded.
    assert bounds.tolist() == [0.1, 0.3, 0.7, 0.9, 1.0]
    assert cellkey.cumulative_bounds(cellkey.SMALL_PERTURBATION).tolist() == [0.25, 0.75, 1.0]
    assert cellkey.cumulative_bounds([(0, 0.125), (1, 0.875)]).tolist() == [0.125, 1.0]
    assert cellkey.lookup(240, 0.3) == 0
