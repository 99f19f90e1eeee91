"""Report bands of a continuous question (reconstruction/algorithms/bands.py, issue 32
item 8): round bands, merged until each interval's half-width is at most a quarter of its
count, intervals from the replicates' sums (not sums of half-widths)."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.mechanisms import AdditiveUniform
from reconstruction.algorithms.bands import choose_bands, round_width
from reconstruction.algorithms.continuous import reconstruct_continuous


@pytest.mark.parametrize(
    ("low", "high", "width"), [(16, 100, 5), (0, 20_000, 1000), (0, 10, 0.5), (1, 5, 0.2)]
)
def test_the_round_width_cuts_the_range_into_at_most_20_bands(low, high, width) -> None:
    assert round_width(low, high) == pytest.approx(width)


def _ages(n: int = 3000):
    rng = np.random.default_rng(32)
    ages = rng.integers(16, 101, size=n).astype(float)
    noise = AdditiveUniform(10.0)
    result = reconstruct_continuous(
        noise.distort(ages, rng), noise, 16, 100, step=1.0, rng=np.random.default_rng(1)
    )
    return ages, result


def test_single_years_become_useful_bands_whose_counts_are_the_cells_sums() -> None:
    ages, result = _ages()
    half = (result.ci95[:, 1] - result.ci95[:, 0]) / 2
    assert (half > 0.25 * result.counts).mean() > 0.5  # most single years: not useful
    bands = choose_bands(result.edges, result.counts, result.replicates, low=16, high=100)
    assert 2 <= bands.counts.size <= 17 and bands.useful().all()
    assert bands.counts.sum() == pytest.approx(result.counts.sum())
    for j, (first, last) in enumerate(zip(bands.first, bands.last, strict=True)):
        assert bands.counts[j] == pytest.approx(result.counts[first : last + 1].sum())
        # Edges are round (multiples of 5), and each band holds the cells inside it.
        assert bands.edges[j] % 5 == 0
        assert bands.edges[j] <= (result.edges[first] + result.edges[first + 1]) / 2
    # The interval of a sum from the replicates is narrower than the sum of the
    # half-widths (neighbouring cells of a deconvolution are negatively correlated).
    first, last = bands.first[0], bands.last[0]
    summed_halves = half[first : last + 1].sum()
    assert (bands.ci95[0, 1] - bands.ci95[0, 0]) / 2 < 0.8 * summed_halves
    # And it covers the truth in this simulation.
    truth = np.histogram(ages, bins=bands.edges)[0]
    assert ((bands.ci95[:, 0] <= truth) & (truth <= bands.ci95[:, 1])).mean() >= 0.7


def test_exact_counts_keep_the_round_bands() -> None:
    edges = np.arange(15.5, 101.5)  # whole years 16..100
    counts = np.full(85, 40.0)
    bands = choose_bands(edges, counts, None, low=16, high=100)
    assert bands.width == 5 and bands.counts.size == 18  # 15-19 (16-19) ... 100
    assert bands.ci95[:, 0].tolist() == bands.counts.tolist()


def test_one_uncertain_band_merges_with_its_smaller_neighbour() -> None:
    edges = np.array([0.0, 5, 10, 15, 20])
    counts = np.array([100.0, 10, 100, 50])
    rng = np.random.default_rng(0)
    replicates = counts + rng.normal(0, 1, size=(200, 4)) * np.array([1, 5, 1, 1])
    bands = choose_bands(edges, counts, replicates, low=0, high=20)
    # The 5-10 band (half-width ~10 for 10) joins 0-5 (tied with 10-15: the first).
    assert bands.edges.tolist() == [0, 10, 15, 20]
    assert bands.counts.tolist() == [110, 100, 50] and bands.useful().all()


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="do not bound"):
        choose_bands([0, 1], [1.0, 2.0], None, low=0, high=1)
    with pytest.raises(ValueError, match="replicates of shape"):
        choose_bands([0, 1, 2], [1.0, 2.0], np.ones((5, 3)), low=0, high=2)
