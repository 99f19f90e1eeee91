"""Tests of interval reconstruction for continuous attributes (continuous.py)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy.mechanisms import (
    AdditiveGaussian,
    AdditiveLaplace,
    AdditiveUniform,
    NoiseModel,
    NoNoise,
    RetentionReplacement,
)
from reconstruction.algorithms.continuous import (
    bin_values,
    fixed_point,
    interval_count,
    interval_edges,
    reconstruct_continuous,
    reported_edges,
    smoothing_matrix,
)
from reconstruction.algorithms.simulation import simulate_candidates

AGES = simulate_candidates(40_000, rng=np.random.default_rng(7)).age


@settings(max_examples=60, deadline=None)
@given(
    st.floats(-1e3, 1e3),
    st.floats(1.0, 1e3),
    st.lists(st.floats(-2e3, 2e3), max_size=4),
    st.integers(1, 60),
)
def test_grid_contains_thresholds(low: float, width: float, cuts: list[float], m: int) -> None:
    high = low + width
    edges = interval_edges(low, high, thresholds=cuts, n_intervals=m)
    assert edges[0] == low and edges[-1] == high
    assert np.all(np.diff(edges) > 0)
    for t in cuts:
        if low < t < high:
            assert t in edges
    # no sliver intervals except between two thresholds
    inside = [t for t in cuts if low < t < high]
    slivers = np.diff(edges) < 0.5 * width / m - 1e-9
    for i in np.flatnonzero(slivers):
        assert edges[i] in inside or edges[i + 1] in inside


def test_default_interval_count_depends_on_n_and_noise() -> None:
    assert interval_count(16, 100, n=100, noise_scale=None) == 20
    assert interval_count(16, 100, n=10**6, noise_scale=None) == 40
    assert interval_count(16, 100, n=10**6, noise_scale=5.77) == 30
    assert len(interval_edges(16, 100, n=30_000, noise_scale=5.77)) - 1 == 30


def test_reported_bins_cover_noise_support() -> None:
    edges = interval_edges(16, 100, n_intervals=21)
    bins = reported_edges(edges, AdditiveUniform(10), 16, 100)
    assert bins[0] <= 6 and bins[-1] >= 110
    assert set(edges) <= set(bins)
    np.testing.assert_array_equal(
        bin_values([5.0, 16.0, 100.0, 200.0], bins)[[0, -1]], [0, len(bins) - 2]
    )


@pytest.mark.parametrize(
    "noise",
    [
        AdditiveUniform(10),
        AdditiveGaussian(6),
        AdditiveLaplace(4),
        RetentionReplacement(0.6, 16, 100),
    ],
    ids=["uniform", "gaussian", "laplace", "retention"],
)
@pytest.mark.parametrize("method", ["em", "as"])
def test_recovers_share_below_threshold(noise: NoiseModel, method: Literal["em", "as"]) -> None:
    # EM runs as EMS under additive noise; the plain converged EM (the NPMLE) was spiky
    # under Gaussian noise and put 0.11 below 30 instead of 0.16 (see the next test).
    rng = np.random.default_rng(1)
    reported = noise.distort(AGES, rng)
    result = reconstruct_continuous(
        reported,
        noise,
        16,
        100,
        method=method,
        thresholds=[30, 60],
        ci=False,
    )
    below = result.edges[1:] <= 30
    between = (result.edges[:-1] >= 30) & (result.edges[1:] <= 60)
    # tolerance: about 4 standard errors at n = 40,000 plus the reconstruction's own error
    np.testing.assert_allclose(result.proportions[below].sum(), (AGES <= 30).mean(), atol=0.012)
    np.testing.assert_allclose(
        result.proportions[between].sum(), ((AGES > 30) & (AGES <= 60)).mean(), atol=0.015
    )
    assert result.reconstruction.converged
    assert result.reconstruction.method == method
    np.testing.assert_allclose(result.counts.sum(), AGES.size)


def test_no_noise_gives_the_histogram() -> None:
    edges = interval_edges(16, 100, thresholds=[30], n_intervals=20)
    result = reconstruct_continuous(AGES, NoNoise(), 16, 100, edges=edges, ci=False)
    histogram = np.histogram(AGES, bins=edges)[0]
    np.testing.assert_allclose(result.counts, histogram, atol=0.5)


def test_bootstrap_interval_is_reproducible_and_covers_estimate() -> None:
    noise = AdditiveUniform(10)
    reported = noise.distort(AGES[:5_000], np.random.default_rng(2))
    one = reconstruct_continuous(reported, noise, 16, 100, n_boot=50, rng=np.random.default_rng(3))
    two = reconstruct_continuous(reported, noise, 16, 100, n_boot=50, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(one.ci95, two.ci95)
    assert np.all(one.ci95[:, 0] <= one.ci95[:, 1])
    assert one.ci95.shape == (one.counts.size, 2)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300))
def test_counts_non_negative_and_sum_to_n(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    noise = AdditiveGaussian(5)
    reported = noise.distort(rng.uniform(0, 50, n), rng)
    result = reconstruct_continuous(reported, noise, 0, 50, ci=False, max_iter=2_000)
    assert np.all(result.counts >= 0)
    np.testing.assert_allclose(result.counts.sum(), n)


def test_batched_and_kronecker_paths_agree() -> None:
    rng = np.random.default_rng(4)
    a = np.array([[0.7, 0.3], [0.2, 0.8]])
    b = AdditiveUniform(3).interval_channel(np.linspace(0, 10, 6), np.linspace(-3, 13, 9))
    counts = rng.integers(0, 50, size=(3, 2, 8)).astype(float)
    batched, _, _ = fixed_point(counts, [a, b], tol=1e-10)
    for i in range(3):
        single, _, ok = fixed_point(counts[i], [a, b], tol=1e-10)
        assert ok
        np.testing.assert_allclose(batched[i], single, atol=1e-7)
    flat, _, _ = fixed_point(counts[0].ravel(), [np.kron(a, b)], tol=1e-10)
    np.testing.assert_allclose(flat.reshape(2, 5), batched[0], atol=1e-7)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"values": []}, "non-empty"),
        ({"values": [1.0, np.nan]}, "finite"),
        ({"low": 5.0, "high": 5.0}, "low < high"),
        ({"edges": [0.0, 20.0, 10.0, 50.0]}, "edges must increase"),
        ({"method": "kde"}, "method must be"),
    ],
)
def test_bad_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {
        "values": [1.0, 2.0],
        "noise": AdditiveUniform(1),
        "low": 0.0,
        "high": 50.0,
        "ci": False,
    }
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        reconstruct_continuous(**arguments)  # type: ignore[arg-type]


def test_plain_em_is_spiky_and_ems_is_not() -> None:
    # 001, Section III-B3's EM run to convergence is the NPMLE: under Gaussian noise it
    # puts its mass in spikes; EMS (Silverman et al. 1990) keeps the density smooth.
    noise = AdditiveGaussian(6)
    reported = noise.distort(AGES, np.random.default_rng(1))
    edges = interval_edges(16, 100, thresholds=[30], n=AGES.size, noise_scale=6)
    histogram = np.histogram(AGES, bins=edges)[0] / AGES.size
    plain = reconstruct_continuous(reported, noise, 16, 100, edges=edges, ci=False, smoothing=0)
    ems = reconstruct_continuous(reported, noise, 16, 100, edges=edges, ci=False)
    loss = {
        name: 0.5 * np.abs(result.proportions - histogram).sum()
        for name, result in (("plain", plain), ("ems", ems))
    }
    assert loss["ems"] < 0.05 < loss["plain"], loss
    below = edges[1:] <= 30
    np.testing.assert_allclose(ems.proportions[below].sum(), (AGES <= 30).mean(), atol=0.008)
    assert any("EMS" in note for note in ems.reconstruction.notes)
    assert ems.reconstruction.iterations < plain.reconstruction.iterations


def test_smoothing_matrix_keeps_mass_and_flat_densities() -> None:
    edges = interval_edges(16, 100, thresholds=[30, 31.5], n_intervals=20)
    matrix = smoothing_matrix(edges, 0.5)
    widths = np.diff(edges)
    np.testing.assert_allclose(matrix.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(matrix @ widths, widths, rtol=1e-12)
    assert np.all(matrix >= 0)
    np.testing.assert_array_equal(smoothing_matrix(edges, 0.0), np.eye(widths.size))
    with pytest.raises(ValueError, match="strength"):
        smoothing_matrix(edges, 1.5)


def test_smoothed_fixed_point_does_not_depend_on_the_start() -> None:
    noise = AdditiveGaussian(6)
    reported = noise.distort(AGES[:5_000], np.random.default_rng(5))
    edges = interval_edges(16, 100, n_intervals=28)
    bins = reported_edges(edges, noise, 16, 100)
    channel = noise.interval_channel(edges, bins)
    counts = np.bincount(bin_values(reported, bins), minlength=bins.size - 1)
    smoothing = [smoothing_matrix(edges)]
    uniform, _, ok = fixed_point(counts, [channel], tol=1e-10, smoothing=smoothing)
    start = np.random.default_rng(0).dirichlet(np.ones(edges.size - 1))
    other, _, ok_other = fixed_point(
        counts, [channel], tol=1e-10, smoothing=smoothing, initial=start
    )
    assert ok and ok_other
    np.testing.assert_allclose(uniform, other, atol=1e-6)


# ------------------------------------------------------------------ lattice (issue 10)


def test_lattice_cuts_put_a_threshold_point_on_the_side_the_condition_says() -> None:
    from reconstruction.algorithms.continuous import lattice_cut

    assert lattice_cut(30, low=16, step=1, closed_below=True) == 30.5  # age <= 30 counts 30
    assert lattice_cut(30, low=16, step=1, closed_below=False) == 29.5  # 30 <= age counts 30
    assert lattice_cut(30.4, low=16, step=1, closed_below=True) == 30.5
    assert lattice_cut(30.4, low=16, step=1, closed_below=False) == 30.5


def test_lattice_cells_hold_whole_points_and_respect_the_cuts() -> None:
    from reconstruction.algorithms.continuous import lattice_cells

    small = lattice_cells(16, 30, 1, cuts=[20.5])
    assert small.representatives.size == 15  # one cell per whole year: point masses
    np.testing.assert_allclose(small.edges[[0, -1]], [15.5, 30.5])
    large = lattice_cells(0, 20_000, 1, cuts=[2_999.5], n=10_000)
    assert 20 <= large.representatives.size <= 42
    assert 2_999.5 in large.edges
    assert np.all(np.abs((large.edges - 0.5) % 1) < 1e-9)


def test_lattice_channel_of_a_point_is_the_noise_shifted_to_it() -> None:
    from privacy.mechanisms import AdditiveUniform
    from reconstruction.algorithms.continuous import lattice_cells

    cells = lattice_cells(0, 4, 1)
    bins = np.array([-10.0, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 10.0])
    channel = cells.channel(AdditiveUniform(1.0), bins)
    # A value 2 plus U(-1, 1) lands in its own bin [1.5, 2.5) half the time.
    np.testing.assert_allclose(channel[2], [0, 0, 0.25, 0.5, 0.25, 0, 0], atol=1e-12)


# ------------------------------------------------------------------ lattices (issue 10)


def _whole_year_population() -> tuple[np.ndarray, float]:
    """P(sex, whole-year age 16..100) of a large simulated pool, and P(F, age <= 30)."""
    pool = simulate_candidates(200_000, rng=np.random.default_rng(0))
    years = (np.floor(pool.age) - 16).astype(np.intp)
    joint = np.zeros((2, 85))
    np.add.at(joint, (pool.sex, years), 1.0)
    joint /= joint.sum()
    return joint, float(joint[0, :15].sum())


def test_lattice_joint_count_unbiased() -> None:
    # Issue 10, target "bias at scale" with a declared step: the count `sex = F and
    # age <= 30` on whole years (RR 0.75, ±10 uniform noise) was off by -1.1% at 10^6.
    # Measured here in the infinite-n limit (the exact expected reported counts, no
    # sampling noise): ~30 cells of 2-3 whole years each, smoothed across, gave -0.76%;
    # one cell per year gives -0.08% (smoothing 0.2 between neighbouring years).
    from privacy.mechanisms import randomised_response
    from reconstruction.algorithms.continuous import (
        LATTICE_SMOOTHING,
        axis_model,
        default_smoothing,
    )

    noise = AdditiveUniform(10.0)
    sex = randomised_response(2, 0.75)
    joint, truth = _whole_year_population()
    model = axis_model(noise, 16.0, 100.0, cuts=[(30.0, True)], step=1.0, n=10**6)
    assert model.representatives.size == 85  # one cell per whole year
    expected = sex.T @ joint @ noise.point_channel(np.arange(16.0, 101.0), model.reported_edges)
    assert model.smoothing == LATTICE_SMOOTHING > default_smoothing(noise)
    smoother = [None, smoothing_matrix(model.edges, model.smoothing)]
    theta, _, converged = fixed_point(10**6 * expected, [sex, model.channel], smoothing=smoother)
    assert converged
    estimate = float(theta[0, model.representatives <= 30].sum())
    assert abs(estimate / truth - 1) < 0.003, estimate / truth - 1


def test_overall_distribution_honours_a_declared_step() -> None:
    # Issue 10, point 4: the overall distribution of a continuous question ignored its
    # step (20-40 intervals with whole years on their edges). With step=1 it has one cell
    # per whole year, edges at half-years, and finds each year's share.
    from reconstruction.algorithms.queries import ContinuousAttribute, distribution

    rng = np.random.default_rng(4)
    noise = AdditiveUniform(10.0)
    years = np.floor(simulate_candidates(100_000, rng=rng).age)
    attribute = ContinuousAttribute(noise.distort(years, rng), noise, 16.0, 100.0, step=1.0)
    result = distribution({"age": attribute}, "age", ci=False)
    assert result.edges.size == 86
    np.testing.assert_allclose(result.edges[[0, 1, -1]], [15.5, 16.5, 100.5])
    truth = np.bincount((years - 16).astype(np.intp), minlength=85) / years.size
    # Share of ages 25..34 (ten cells) against the truth.
    np.testing.assert_allclose(result.proportions[9:19].sum(), truth[9:19].sum(), rtol=0.05)
    direct = reconstruct_continuous(attribute.values, noise, 16.0, 100.0, step=1.0, ci=False)
    np.testing.assert_allclose(direct.counts, result.counts)


def test_whole_numbers_are_detected_under_bounded_noise_and_real_values_are_not() -> None:
    # Issue 10: without a declared step, whole-number truths at a threshold biased the
    # joint count by about -5.7% (infinite n). The reports of whole numbers under uniform
    # noise have a density that jumps at whole numbers; real-valued truths do not.
    from privacy.mechanisms import AdditiveGaussian, NoNoise
    from reconstruction.algorithms.continuous import whole_number_step

    rng = np.random.default_rng(21)
    ages = simulate_candidates(100_000, rng=rng).age
    noise = AdditiveUniform(10.0)
    assert whole_number_step(noise.distort(np.floor(ages), rng), noise, 16, 100) == 1.0
    assert whole_number_step(noise.distort(ages, rng), noise, 16, 100) is None
    # Smooth noise blurs the jumps away: no detection (declare step instead).
    gaussian = AdditiveGaussian(6.0)
    assert whole_number_step(gaussian.distort(np.floor(ages), rng), gaussian, 16, 100) is None
    # Undistorted values are read directly.
    assert whole_number_step(np.floor(ages), NoNoise(), 16, 100) == 1.0
    assert whole_number_step(ages, NoNoise(), 16, 100) is None
    # A range that is not whole, or too wide for one cell per whole number: not tested.
    assert whole_number_step(noise.distort(np.floor(ages), rng), noise, 15.5, 100) is None
    assert whole_number_step(np.floor(ages) * 100, NoNoise(), 0, 20_000) is None


def test_overall_distribution_without_a_step_detects_whole_numbers() -> None:
    # Issue 10: count_joint tested the reports for whole numbers, distribution() did not
    # (20-40 intervals with the whole years on their edges). Both now use the lattice of
    # whole numbers when the reports show them, and say so; real values keep intervals.
    from reconstruction.algorithms.continuous import IntervalReconstruction
    from reconstruction.algorithms.queries import ContinuousAttribute, distribution

    rng = np.random.default_rng(8)
    noise = AdditiveUniform(10.0)
    ages = simulate_candidates(100_000, rng=rng).age
    years = np.floor(ages)
    undeclared = ContinuousAttribute(noise.distort(years, rng), noise, 16.0, 100.0)
    result = distribution({"age": undeclared}, "age", ci=False)
    assert isinstance(result, IntervalReconstruction)
    assert any("show whole numbers" in note for note in result.reconstruction.notes)
    declared = ContinuousAttribute(undeclared.values, noise, 16.0, 100.0, step=1.0)
    same = distribution({"age": declared}, "age", ci=False)
    np.testing.assert_array_equal(result.edges, same.edges)
    np.testing.assert_allclose(result.counts, same.counts)
    real = ContinuousAttribute(noise.distort(ages, rng), noise, 16.0, 100.0)
    interval = distribution({"age": real}, "age", ci=False)
    assert not any("whole numbers" in note for note in interval.reconstruction.notes)
    assert interval.edges.size < 60  # 20-40 intervals plus thresholds, not 86 half-steps


def test_whole_number_evidence_weighs_what_the_reports_can_show() -> None:
    # Issue 10: the detection of whole numbers is a yes/no test, unreliable at n = 30,000
    # (z 1.8-4.1 for whole years, up to 2.5 for real values). The weight of whole numbers
    # is about 1/2 where the reports cannot tell (n = 1,000), near 1 or 0 where they can.
    from reconstruction.algorithms.continuous import whole_number_evidence

    noise = AdditiveUniform(10.0)

    def weights(n: int, whole: bool) -> list[float]:
        result = []
        for seed in range(4):
            rng = np.random.default_rng(300 + seed)
            ages = simulate_candidates(n, rng=rng).age
            truths = np.floor(ages) if whole else ages
            evidence = whole_number_evidence(noise.distort(truths, rng), noise, 16, 100)
            assert evidence is not None
            result.append(evidence.lattice_weight)
        return result

    small = weights(1_000, True) + weights(1_000, False)
    assert 0.25 < float(np.mean(small)) < 0.75 and min(small) > 0.05, small
    assert min(weights(100_000, True)) > 0.99
    assert max(weights(100_000, False)) < 0.2
    rng = np.random.default_rng(1)
    ages = simulate_candidates(100_000, rng=rng).age
    # The gain whole numbers should give is what they do give (531-545 at 10^6, earlier).
    evidence = whole_number_evidence(noise.distort(np.floor(ages), rng), noise, 16, 100)
    assert evidence is not None and 0.6 < evidence.gain / evidence.expected < 1.6


def test_whole_threshold_note_flags_whole_thresholds_under_smooth_noise_only() -> None:
    # Issue 10: under Gaussian or Laplace noise whole numbers cannot be detected, so a
    # condition whose threshold is a whole number keeps the interval model's bias if the
    # truths are whole numbers; the note asks for the step. Bounded noise is tested
    # instead, and thresholds between whole numbers are cut alike by both models.
    from privacy.mechanisms import AdditiveGaussian, AdditiveLaplace, AdditiveUniform
    from reconstruction.algorithms.continuous import whole_threshold_note

    note = whole_threshold_note("age", AdditiveGaussian(5.0), 16, 100, [30.0, 50.0, 30.0])
    assert note is not None and "values equal to 30, 50 " in note and "declare step 1" in note
    assert note.message.params == {"name": "age", "thresholds": "30, 50"}
    assert whole_threshold_note("age", AdditiveLaplace(4.0), 16, 100, [30.0]) is not None
    from privacy.mechanisms import AdditiveStaircase

    assert whole_threshold_note("age", AdditiveStaircase(4, 84), 16, 100, [30.0]) is not None
    assert whole_threshold_note("age", AdditiveGaussian(5.0), 16, 100, [30.5]) is None
    assert whole_threshold_note("age", AdditiveGaussian(5.0), 16, 100, [100.0, 16.0]) is None
    assert whole_threshold_note("age", AdditiveGaussian(5.0), 16.5, 100, [30.0]) is None
    assert whole_threshold_note("age", AdditiveUniform(10.0), 16, 100, [30.0]) is None


def _whole_year_ages(n: int, seed: int) -> np.ndarray:
    """Whole-year ages 16-85 (the bench's panel pools), skewed like the simulated pool."""
    ages = np.floor(simulate_candidates(n, rng=np.random.default_rng(seed)).age)
    return np.clip(ages, 16.0, 85.0)


@pytest.mark.parametrize("method", ["em", "as"])
def test_staircase_whole_years_round_trip_on_the_lattice(method: Literal["em", "as"]) -> None:
    # The staircase mechanism (eps-LDP on ages 16-85 with sensitivity 70) on whole-year
    # ages with step 1: AS/EM on the lattice of 70 years recover the age bands.
    from privacy.mechanisms import AdditiveStaircase

    ages = _whole_year_ages(40_000, 3)
    noise = AdditiveStaircase(4.0, 70.0)
    reported = noise.distort(ages, np.random.default_rng(8))
    result = reconstruct_continuous(reported, noise, 16, 85, method=method, step=1.0, ci=False)
    assert result.edges.size == 71
    years = np.arange(16.0, 86.0)
    for low, high in ((16, 30), (30, 45), (45, 65), (65, 86)):
        estimate = result.proportions[(years >= low) & (years < high)].sum()
        truth = ((ages >= low) & (ages < high)).mean()
        assert abs(estimate - truth) < 0.02, (method, low, estimate, truth)


def test_staircase_band_counts_cover_the_truth_on_the_lattice() -> None:
    # The same through the joint count with its bootstrap interval: each band's true
    # count lies inside the 95% interval, and the interval is much narrower than under
    # Laplace noise with the same guarantee (scale 70 / eps; with this seed Laplace's
    # interval of the 16-29 band, [478, 788], misses its truth, 810).
    from privacy.mechanisms import AdditiveLaplace, AdditiveStaircase
    from reconstruction.algorithms.queries import Condition, ContinuousAttribute, count_joint

    ages = _whole_year_ages(5_000, 5)
    widths = {}
    for noise in (AdditiveStaircase(4.0, 70.0), AdditiveLaplace(70.0 / 4.0)):
        rng = np.random.default_rng(9)
        table = {"age": ContinuousAttribute(noise.distort(ages, rng), noise, 16, 85, step=1.0)}
        widths[type(noise).__name__] = []
        for low, high in ((16, 30), (30, 45), (45, 65), (65, 86)):  # [low, high)
            result = count_joint(
                table, [Condition("age", "between", (low, high))], n_boot=200, rng=rng
            )
            truth = int(((ages >= low) & (ages < high)).sum())
            if isinstance(noise, AdditiveStaircase):
                assert result.ci95[0] <= truth <= result.ci95[1], (low, result, truth)
            widths[type(noise).__name__].append(result.ci95[1] - result.ci95[0])
    assert np.mean(widths["AdditiveStaircase"]) < 0.8 * np.mean(widths["AdditiveLaplace"])


def _full_channel_map(
    theta: np.ndarray, counts: np.ndarray, channel: np.ndarray, smoother: np.ndarray
) -> np.ndarray:
    """One EMS update written out on the whole channel, every reported bin included."""
    predicted = theta @ channel
    ratio = np.divide(counts, predicted, out=np.zeros_like(counts), where=counts > 0)
    updated = smoother @ (theta * (channel @ ratio) / counts.sum())
    return updated / updated.sum()


def _laplace_ages(n: int) -> tuple[AdditiveLaplace, np.ndarray, np.ndarray, np.ndarray]:
    noise = AdditiveLaplace(35.0)  # eps 2 on ages 16..86: bounds 27.6 scales out
    truth = np.clip(np.round(AGES[:n]), 16, 86)
    reported = noise.distort(truth, np.random.default_rng(21))
    edges = interval_edges(16, 86, n_intervals=35)
    return noise, reported, edges, reported_edges(edges, noise, 16, 86)


def test_fit_on_occupied_bins_is_the_full_channel_fixed_point() -> None:
    # fixed_point drops the reported bins nobody reported in (most of the Laplace tail
    # bins); the fit must still be the fixed point of the update on the whole channel.
    noise, reported, edges, bins = _laplace_ages(5_000)
    channel = noise.interval_channel(edges, bins)
    counts = np.bincount(bin_values(reported, bins), minlength=bins.size - 1).astype(float)
    occupied = counts > 0
    assert occupied.sum() < 0.5 * counts.size  # the tails are mostly empty
    smoother = smoothing_matrix(edges, 0.05)
    theta, _, converged = fixed_point(counts, [channel], smoothing=[smoother], tol=1e-13)
    assert converged
    residual = _full_channel_map(theta, counts, channel, smoother) - theta
    assert np.max(np.abs(residual)) < 1e-10
    # and it is the fit on the occupied columns alone
    alone, _, _ = fixed_point(
        counts[occupied], [channel[:, occupied]], smoothing=[smoother], tol=1e-13
    )
    np.testing.assert_allclose(theta, alone, rtol=0, atol=1e-12)


def test_a_report_in_a_far_bin_is_still_counted() -> None:
    noise, reported, edges, bins = _laplace_ages(5_000)
    channel = noise.interval_channel(edges, bins)
    smoother = smoothing_matrix(edges, 0.05)
    _, top = noise.reported_bounds(16, 86)
    counts = np.bincount(bin_values(reported, bins), minlength=bins.size - 1).astype(float)
    far = counts.copy()
    far[bin_values([top - 0.1], bins)[0]] += 1  # the outermost bin, nobody else there
    assert counts[-1] == 0 and far[-1] == 1
    both, _, _ = fixed_point(np.stack([counts, far]), [channel], smoothing=[smoother], tol=1e-13)
    without, _, _ = fixed_point(counts, [channel], smoothing=[smoother], tol=1e-13)
    alone, _, _ = fixed_point(far, [channel], smoothing=[smoother], tol=1e-13)
    # each table of a batch is fitted on its own (a bin empty in one is kept for the other)
    np.testing.assert_allclose(both[0], without, rtol=0, atol=1e-12)
    np.testing.assert_allclose(both[1], alone, rtol=0, atol=1e-12)
    residual = _full_channel_map(alone, far, channel, smoother) - alone
    assert np.max(np.abs(residual)) < 1e-10
    # the far report pulls mass to the top interval (1 report of 5,001)
    assert alone[-1] - without[-1] > 1e-4
    result = reconstruct_continuous(
        np.append(reported, top - 0.1), noise, 16, 86, edges=edges, ci=False
    )
    assert result.counts.sum() == pytest.approx(5_001)
    np.testing.assert_allclose(
        result.proportions[-1], fixed_point(far, [channel], smoothing=[smoother])[0][-1], rtol=1e-12
    )


def _joint_ems_map(
    theta: np.ndarray, counts: np.ndarray, a: np.ndarray, b: np.ndarray, smoother: np.ndarray
) -> np.ndarray:
    """One EMS update of a two-attribute table on the whole Kronecker channel (every
    joint reported cell included), the second axis smoothed."""
    channel = np.kron(a, b)
    predicted = theta.ravel() @ channel
    flat = counts.ravel()
    ratio = np.divide(flat, predicted, out=np.zeros_like(flat), where=flat > 0)
    updated = (theta.ravel() * (channel @ ratio) / flat.sum()).reshape(theta.shape)
    updated = updated @ smoother.T
    return updated / updated.sum()


def test_joint_fit_on_occupied_joint_cells_is_the_full_channel_fixed_point() -> None:
    # A category x many noisy-age bins with few participants (a panel's quota model
    # conditioned on an age eligibility): every bin and category is reported by someone,
    # but most joint cells are empty. fixed_point forms the Kronecker channel of the
    # occupied joint cells only; the fit must be the fixed point on the whole channel.
    noise, reported, edges, bins = _laplace_ages(400)
    b = noise.interval_channel(edges, bins)
    rng = np.random.default_rng(3)
    category = rng.choice(5, size=reported.size, p=[0.34, 0.27, 0.2, 0.15, 0.04])
    a = np.full((5, 5), 0.3 / 4) + 0.7 * np.eye(5) - np.full((5, 5), 0.3 / 4) * np.eye(5)
    cells = bin_values(reported, bins)
    keep = np.isin(np.arange(bins.size - 1), cells)  # the marginal's empty bins go first
    b, columns = b[:, keep], np.cumsum(keep) - 1
    counts = np.zeros((5, b.shape[1]))
    np.add.at(counts, (category, columns[cells]), 1.0)
    assert counts.sum(axis=0).min() > 0 and counts.sum(axis=1).min() > 0
    assert (counts == 0).mean() > 0.5  # most joint cells are empty
    smoother = smoothing_matrix(edges, 0.05)
    theta, _, converged = fixed_point(counts, [a, b], smoothing=[None, smoother], tol=1e-13)
    assert converged
    residual = _joint_ems_map(theta, counts, a, b, smoother) - theta
    assert np.max(np.abs(residual)) < 1e-10
    # A batch keeps the cells any of its tables counts: a second table with one report
    # in a joint cell empty in the first is fitted on its own, the first unchanged.
    empty = np.argwhere(counts == 0)[0]
    other = counts.copy()
    other[tuple(empty)] += 1
    both, _, _ = fixed_point(
        np.stack([counts, other]), [a, b], smoothing=[None, smoother], tol=1e-13
    )
    np.testing.assert_allclose(both[0], theta, rtol=0, atol=1e-10)
    residual = _joint_ems_map(both[1], other, a, b, smoother) - both[1]
    assert np.max(np.abs(residual)) < 1e-10
    assert np.max(np.abs(both[1] - theta)) > 1e-6  # that one report moved the fit
