"""Whether the reports of a continuous attribute show whole-number truths.

Pure module: numpy and scipy only.

Beyond 001_28af1923c784b480.txt: whole-number true values (ages in years) sit on the
interval model's cell edges and bias a count at a threshold, so the reports are tested
for them. :func:`whole_number_evidence` compares the likelihood of the lattice model
with the interval model on a half-unit histogram of the reports
(:class:`WholeNumberEvidence`; :func:`half_unit_evidence` from a histogram counted
elsewhere); :func:`whole_number_step` decides, :func:`whole_threshold_note` explains a
threshold between whole numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms import AdditiveGaussian, AdditiveLaplace, AdditiveStaircase, NoiseModel
from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.continuous.em import default_smoothing, fixed_point, smoothing_matrix
from reconstruction.algorithms.continuous.intervals import _check_range, bin_values, noise_scale
from reconstruction.algorithms.continuous.lattice import (
    LATTICE_SMOOTHING,
    MAX_LATTICE_CELLS,
    lattice_cells,
)

# Detection of whole-number truths on a question without a declared step
# (:func:`whole_number_step`): the lattice of whole numbers is taken when its fit beats
# the lattice shifted by half a step by more than this many log-likelihood units ...
_WHOLE_MIN_GAIN = 10.0

_WHOLE_MIN_Z = 2.5


# ... and by more than this much per report (a share of a nat). On simulated ages
# (16..100, ±10 uniform noise; 3 surveys each) the gain was 531-545 at n = 10^6 and
# 36-68 at 10^5 for whole years, 9-44 at 10^6 and 0.3-2.1 at 10^5 for real-valued ages.
_WHOLE_GAIN_PER_REPORT = 2e-4


def _loglik(
    counts: NDArray[np.float64], theta: NDArray[np.float64], channel: NDArray[np.float64]
) -> float:
    predicted = theta @ channel
    seen = counts > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(counts[seen] * np.log(predicted[seen])))


def whole_number_step(
    values: ArrayLike, noise: NoiseModel, low: float, high: float
) -> float | None:
    """1.0 when the reports show that the true values are whole numbers, else ``None``.

    A question that does not declare ``step`` may still hold whole numbers (ages in
    years, hours, children). The interval model of 001_28af1923c784b480.txt, Section
    III-B2 spreads each interval's mass evenly, so a whole number equal to a threshold
    (``age <= 30`` and a true 30) sits on a cell edge and is mostly counted on the wrong
    side: -5.7% on ``age <= 30`` for whole years 16..100 under ±10 uniform noise, in the
    limit of infinite data. Under bounded noise the reports of whole numbers have a
    density that jumps at whole numbers (shifted by the noise's reach), which real-valued
    truths do not give; this test looks for that signature. Both the lattice of whole
    numbers ``low, ..., high`` and the same lattice shifted by half a step are fitted
    (EMS, :data:`LATTICE_SMOOTHING`) to the reports counted in half-unit bins; the shifted
    lattice is as flexible but puts its points between the whole numbers, so it fits
    real-valued truths about as well and whole numbers much worse. The whole numbers are
    taken when their log-likelihood wins by more than ``max(10, 2e-4 n)`` (measured gains:
    see :data:`_WHOLE_GAIN_PER_REPORT`) and by more than 2.5 of its standard deviations
    (:func:`whole_number_evidence`). Short of that, :func:`~.queries.count_joint` weighs
    both models by :attr:`WholeNumberEvidence.lattice_weight`.

    Without noise the answer is read off the reports. Smooth noise (Gaussian, Laplace)
    blurs the jumps: at n = 10^6 the gain was the same (about 5-8) for whole and
    real-valued ages, so no step is detected and the interval model (and its bias on
    whole numbers at thresholds) stays; such a question should declare ``step``.
    Retention replacement is not additive and is never tested.

    Parameters
    ----------
    values : array_like of shape (n,)
        Reported values.
    noise : NoiseModel
    low, high : float
        The declared range; both must be whole numbers at most
        :data:`MAX_LATTICE_CELLS` - 1 apart (otherwise ``None``).

    Returns
    -------
    float or None
        ``1.0`` (the step to model) or ``None``.
    """
    evidence = whole_number_evidence(values, noise, low, high)
    return 1.0 if evidence is not None and evidence.detected else None


def whole_threshold_note(
    name: str,
    noise: NoiseModel,
    low: float,
    high: float,
    thresholds: Sequence[float],
) -> Note | None:
    """A note where smooth noise hides a bias the analyst can remove by declaring ``step``.

    Under Gaussian or Laplace noise the reports cannot show whether the true values are
    whole numbers (:func:`whole_number_step`: the evidence's gain was the same for whole
    and real-valued ages at n = 10^6): the fractional part is not identifiable from the
    data. The staircase is treated alike (not measured: its characteristic function at
    the lattice frequency is at most ``a / pi``, its density at 0 over pi, 0.017 for
    ε = 4 and sensitivity 70, so at most a faint trace of whole numbers reaches the
    reports). If they are whole numbers, a condition's threshold on a whole number (the
    lattice of whole numbers from a whole-number ``low``, inside the range) puts the
    values equal to it on an edge of the interval model's cells, which spreads each
    cell's mass evenly, and the result is biased: -5.7% for ``age <= 30`` on whole
    years, whatever ``n`` (issue 10). On the lattice (a declared ``step``) the threshold
    would cut between lattice points and change the answer. ``None`` for other noise
    (bounded noise is tested for whole numbers), a range whose ``low`` is not a whole
    number, and thresholds between whole numbers (a lattice cuts where the intervals do
    or splits no point there). The caller gives the attribute's condition thresholds
    when it declares no step and was not found to hold whole numbers.
    """
    if not isinstance(noise, (AdditiveGaussian, AdditiveLaplace, AdditiveStaircase)):
        return None
    if not (math.isfinite(low) and low == math.floor(low)):
        return None
    on_points = sorted(
        {float(t) for t in thresholds if low < t < high and abs(t - round(t)) < 1e-9}
    )
    if not on_points:
        return None
    return Note(
        gettext_noop(
            "%(name)s declares no step and its noise cannot show whether its true values "
            "are whole numbers; if they are (years, counts), values equal to %(thresholds)s "
            "sit on a cell edge of the interval model and this result can be biased by "
            "several per cent (about -6%% for age <= 30 in whole years): declare step 1 on "
            "the question"
        ),
        name=name,
        thresholds=", ".join(f"{t:g}" for t in on_points),
    )


@dataclass(frozen=True)
class WholeNumberEvidence:
    """How much better whole numbers explain the reports than the half-shifted lattice.

    ``gain`` is the log-likelihood of the whole-number lattice minus that of the lattice
    shifted by half a step (both EMS fits to the reports in half-unit bins), ``spread``
    the standard deviation of that sum over the reports (Vuong's statistic is
    ``gain / spread``), ``reports`` their number. Without noise the reports are read
    directly (``gain`` is +inf for whole numbers, -inf otherwise).
    """

    gain: float
    spread: float
    reports: int
    expected: float = math.inf

    @property
    def lattice_weight(self) -> float:
        """How far the evidence favours whole numbers, in [0, 1] (a posterior weight).

        The gain is taken as normal with standard deviation ``spread``, centred on 0
        when the truths are real-valued (neither lattice fits them better) and on
        ``expected`` (the gain the whole-number fit itself predicts) when they are whole
        numbers; with equal prior odds the weight of whole numbers is
        ``1 / (1 + exp(-expected (gain - expected / 2) / spread^2))``. Small surveys
        cannot tell (``expected`` is then small next to ``spread``, the weight about
        1/2); large ones can (about 0 or 1).
        """
        if math.isinf(self.gain):
            return 1.0 if self.gain > 0 else 0.0
        if math.isinf(self.expected):
            return 1.0 if self.detected else 0.0
        logit = self.expected * (self.gain - 0.5 * self.expected) / self.spread**2
        return float(0.5 * (1.0 + math.tanh(0.5 * max(min(logit, 700.0), -700.0))))

    @property
    def z(self) -> float:
        """Vuong-style statistic ``gain / spread`` (+-inf without noise)."""
        if math.isinf(self.gain):
            return self.gain
        return self.gain / self.spread

    @property
    def detected(self) -> bool:
        """Whole numbers beyond doubt: z > 2.5 and a gain past ``max(10, 2e-4 n)``."""
        return self.z > _WHOLE_MIN_Z and self.gain > max(
            _WHOLE_MIN_GAIN, _WHOLE_GAIN_PER_REPORT * self.reports
        )


def whole_number_evidence(
    values: ArrayLike, noise: NoiseModel, low: float, high: float
) -> WholeNumberEvidence | None:
    """The evidence :func:`whole_number_step` decides on, ``None`` where it cannot test.

    ``None`` for an empty column, a range whose bounds are not whole numbers or that
    holds more than :data:`MAX_LATTICE_CELLS` whole numbers, and noise that is not
    additive (retention replacement).
    """
    lo, hi = _check_range(low, high)
    reported = np.asarray(values, dtype=np.float64)
    if reported.size == 0 or not whole_numbers_testable(noise, lo, hi):
        return None
    if noise_scale(noise) == 0:
        exact = bool(np.all(reported == np.round(reported)))
        return WholeNumberEvidence(math.inf if exact else -math.inf, 1.0, int(reported.size))
    bins = _half_unit_bins(noise, lo, hi)
    counts = np.bincount(bin_values(reported, bins), minlength=bins.size - 1).astype(np.float64)
    return _lattice_evidence(counts, noise, lo, hi)


def whole_numbers_testable(noise: NoiseModel, low: float, high: float) -> bool:
    """Whether :func:`whole_number_evidence` can test reports under ``noise`` on
    ``[low, high]``: whole-number bounds holding at most :data:`MAX_LATTICE_CELLS` whole
    numbers, additive noise."""
    lo, hi = _check_range(low, high)
    if lo != math.floor(lo) or hi != math.floor(hi) or hi - lo + 1 > MAX_LATTICE_CELLS:
        return False
    return noise_scale(noise) is not None


def _half_unit_bins(noise: NoiseModel, lo: float, hi: float) -> NDArray[np.float64]:
    """The half-unit bins the evidence counts reports in (outer bins open)."""
    r_lo, r_hi = noise.reported_bounds(lo, hi)
    return np.arange(math.floor(r_lo), math.ceil(r_hi) + 0.75, 0.5)


def half_unit_evidence(
    half_units: Mapping[int, float], noise: NoiseModel, low: float, high: float
) -> WholeNumberEvidence | None:
    """:func:`whole_number_evidence` from the reports' half-unit histogram.

    ``half_units`` maps ``floor(2 x)`` to the number of reports ``x`` in
    ``[k / 2, (k + 1) / 2)``: what a database counts in one ``GROUP BY`` (bounded rows
    whatever the number of reports, :func:`surveys.statistics.half_unit_counts`). The
    evidence equals the array version's on the same reports (its bins are these half
    units, the outer ones open). ``None`` where that one is ``None`` and also without
    noise (the half units cannot show whether every report is a whole number).
    """
    lo, hi = _check_range(low, high)
    total = float(sum(half_units.values()))
    if total <= 0 or not whole_numbers_testable(noise, lo, hi) or noise_scale(noise) == 0:
        return None
    bins = _half_unit_bins(noise, lo, hi)
    counts = np.zeros(bins.size - 1, dtype=np.float64)
    first = 2 * math.floor(bins[0])
    for unit, count in half_units.items():
        counts[min(max(int(unit) - first, 0), counts.size - 1)] += float(count)
    return _lattice_evidence(counts, noise, lo, hi)


def _lattice_evidence(
    counts: NDArray[np.float64], noise: NoiseModel, lo: float, hi: float
) -> WholeNumberEvidence:
    """The whole-number lattice against the half-shifted one, on half-unit counts."""
    bins = _half_unit_bins(noise, lo, hi)
    size = round(float(counts.sum()))
    strength = LATTICE_SMOOTHING if default_smoothing(noise) > 0 else 0.0
    predicted, fits = [], []
    for cells in (lattice_cells(lo, hi, 1.0), lattice_cells(lo - 0.5, hi + 0.5, 1.0)):
        channel = cells.channel(noise, bins)
        smoother = [smoothing_matrix(cells.edges, strength)] if strength > 0 else None
        theta, _, _ = fixed_point(counts, [channel], smoothing=smoother)
        predicted.append(theta @ channel)
        fits.append((channel, smoother, theta))
    seen = counts > 0
    whole, half = (np.maximum(q[seen], 1e-300) for q in predicted)
    ratios = np.log(whole) - np.log(half)
    kept = counts[seen]
    gain = float(kept @ ratios)
    spread = math.sqrt(max(float(kept @ ratios**2) - gain * gain / kept.sum(), 1e-12))
    # The gain whole numbers would give: the reports the whole-number fit predicts,
    # against the half-shifted lattice's best fit to them (n times a Kullback-Leibler
    # divergence).
    channel, smoother, start = fits[1]
    ideal = predicted[0] / predicted[0].sum()
    theta, _, _ = fixed_point(ideal * size, [channel], initial=start, smoothing=smoother)
    shifted = theta @ channel
    inside = ideal > 0
    expected = float(
        size * ideal[inside] @ (np.log(ideal[inside]) - np.log(np.maximum(shifted[inside], 1e-300)))
    )
    return WholeNumberEvidence(gain, spread, size, max(expected, 0.0))
