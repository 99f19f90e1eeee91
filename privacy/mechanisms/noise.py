"""Noise models for continuous answers.

001_28af1923c784b480.txt (Section IV-A) lists the mechanisms for continuous attributes:
additive perturbation [10] and retention replacement perturbation [23]. Once the range of
an attribute is cut into intervals, every model becomes a channel matrix
(``interval_channel``), so the discrete estimators (EM/AS, EQ) reconstruct continuous
attributes too (001, Section IV-A1: "choose intervals ... and apply AS or EM").

Each model is a frozen dataclass with ``distort(values, rng)``, ``reported_bounds(low,
high)`` and ``interval_channel(true_edges, reported_edges)``; the additive ones also have
``noise_pdf`` and ``noise_cdf`` (the density ``f_Y`` and CDF ``F_Y`` of 001, Figure 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privacy.mechanisms.messages import InputError, gettext_noop

__all__ = [
    "REPORTED_TAIL",
    "AdditiveGaussian",
    "AdditiveLaplace",
    "AdditiveUniform",
    "NoNoise",
    "NoiseModel",
    "RetentionReplacement",
]

_BOUNDS_IN_SD = 10.0
# Above this, the staircase's gamma and b underflow (the noise is then practically 0 anyway).
MAX_STAIRCASE_EPSILON = 500.0
# The share of honest reports the reported bounds may leave outside: the server refuses
# reports beyond them (surveys.answers.answer_form), so at most 1 in 10^12 per report.
# Each unbounded model's bounds reach the wider of 10 standard deviations and the
# distance its two-sided tail P(|Z| > s) takes to fall to this share (closed form per model).
REPORTED_TAIL = 1e-12
# -log of REPORTED_TAIL.
_TAIL_LOG = 12.0 * math.log(10.0)


@runtime_checkable
class NoiseModel(Protocol):
    """What every continuous mechanism offers."""

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]: ...

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]: ...

    def interval_channel(
        self, true_edges: ArrayLike, reported_edges: ArrayLike
    ) -> NDArray[np.float64]: ...

    def point_channel(
        self, points: ArrayLike, reported_edges: ArrayLike
    ) -> NDArray[np.float64]: ...


def _positive(name: str, value: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(
            gettext_noop("%(name)s must be a number, got %(value)s"), name=name, value=repr(value)
        ) from None
    if not (math.isfinite(number) and number > 0.0):
        raise InputError(
            gettext_noop("%(name)s must be > 0 and finite, got %(value)s"),
            name=name,
            value=repr(value),
        )
    return number


def _retain(value: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(
            gettext_noop("retain must be a number, got %(value)s"), value=repr(value)
        ) from None
    if not (math.isfinite(number) and 0.0 < number <= 1.0):
        raise InputError(
            gettext_noop("retain must be in (0, 1], got %(retain)s"), retain=repr(value)
        )
    return number


def _values(values: ArrayLike) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError("values must be finite numbers")
    return array


def _edges(edges: ArrayLike, name: str) -> NDArray[np.float64]:
    array = np.asarray(edges, dtype=np.float64)
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"{name} must be a 1-D array of at least 2 edges, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    if np.any(np.diff(array) <= 0):
        raise ValueError(f"{name} must be strictly increasing")
    return array


def _bounds(low: float, high: float) -> tuple[float, float]:
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise InputError(
            gettext_noop("need finite low < high, got low=%(low)s, high=%(high)s"),
            low=repr(low),
            high=repr(high),
        )
    return low, high


def _rows_from_cdf(cdf_at_inner_edges: NDArray[np.float64]) -> NDArray[np.float64]:
    """Turn reported CDFs at inner edges (k_true, m-1) into a channel (k_true, m)."""
    k_true = cdf_at_inner_edges.shape[0]
    padded = np.concatenate(
        [np.zeros((k_true, 1)), np.clip(cdf_at_inner_edges, 0.0, 1.0), np.ones((k_true, 1))],
        axis=1,
    )
    padded = np.maximum.accumulate(padded, axis=1)
    channel = np.diff(padded, axis=1)
    return np.asarray(channel / channel.sum(axis=1, keepdims=True), dtype=np.float64)


def _overlap_fraction(
    intervals: NDArray[np.float64], reported_edges: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Share of each interval ``intervals[i] = (a, b)`` in each reported bin (outer bins open)."""
    a = intervals[:, 0][:, None]
    b = intervals[:, 1][:, None]
    inner = reported_edges[1:-1][None, :]
    # CDF of a uniform on [a, b] at the inner edges.
    cdf = np.clip((inner - a) / (b - a), 0.0, 1.0)
    return _rows_from_cdf(cdf)


class _SymmetricAdditive:
    """Shared maths for additive noise with a density symmetric about 0.

    With ``G(x) = ∫_{-inf}^x F_Y(t) dt`` and symmetry, ``G(x) = max(x, 0) + T(|x|)`` where
    ``T(u) = G(-u)`` is a small tail term. For a true value uniform on ``[a, b]`` (width
    ``w``) the reported value ``X + Y`` has CDF
    ``H(e) = (G(e - a) - G(e - b)) / w = (clip(e - a, 0, w) + T(|e - a|) - T(|e - b|)) / w``,
    which avoids the cancellation of the naive difference. Channel entries are differences
    of ``H`` at the reported edges, with the outer bins open so rows sum to 1.
    """

    def _tail(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def noise_cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        raise NotImplementedError

    def interval_channel(
        self, true_edges: ArrayLike, reported_edges: ArrayLike
    ) -> NDArray[np.float64]:
        """Channel between true intervals and reported bins.

        ``C[i, j] = Pr(X + Y in reported bin j | X uniform on true interval i)``
        (the interval form of 001_28af1923c784b480.txt, Figure 1, as used in Section
        IV-A1). The first and last reported bins are open to ``-inf`` and ``+inf``.

        Parameters
        ----------
        true_edges : array_like of shape (k_true + 1,)
            Strictly increasing edges of the true intervals.
        reported_edges : array_like of shape (k_reported + 1,)
            Strictly increasing edges of the reported bins; only the inner edges matter.

        Returns
        -------
        ndarray of shape (k_true, k_reported)
            Row-stochastic channel, computed in closed form.
        """
        t_edges = _edges(true_edges, "true_edges")
        r_edges = _edges(reported_edges, "reported_edges")
        a = t_edges[:-1, None]
        b = t_edges[1:, None]
        width = b - a
        inner = r_edges[None, 1:-1]
        cdf = (
            np.clip(inner - a, 0.0, width)
            + self._tail(np.abs(inner - a))
            - self._tail(np.abs(inner - b))
        ) / width
        return _rows_from_cdf(np.asarray(cdf, dtype=np.float64))

    def point_channel(self, points: ArrayLike, reported_edges: ArrayLike) -> NDArray[np.float64]:
        """Channel between true point masses and reported bins.

        ``C[i, j] = Pr(x_i + Y in reported bin j) = F_Y(e_{j+1} - x_i) - F_Y(e_j - x_i)``,
        outer bins open: the exact channel of a true value on a lattice (a question that
        declares ``step``), where the interval channel would spread it over an interval.

        Parameters
        ----------
        points : array_like of shape (k_true,)
            True values.
        reported_edges : array_like of shape (k_reported + 1,)
            Strictly increasing edges of the reported bins.
        """
        x = np.asarray(points, dtype=np.float64).reshape(-1, 1)
        r_edges = _edges(reported_edges, "reported_edges")
        return _rows_from_cdf(np.asarray(self.noise_cdf(r_edges[None, 1:-1] - x)))


@dataclass(frozen=True)
class AdditiveUniform(_SymmetricAdditive):
    """Additive noise uniform on ``[-half_width, half_width]``.

    001_28af1923c784b480.txt, Section III-B2 (``w_i = x_i + y_i``) and Table II (uniform
    distortion ``<-500, 500>`` for Salary).
    """

    half_width: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "half_width", _positive("half_width", self.half_width))

    @property
    def std(self) -> float:
        return self.half_width / math.sqrt(3.0)

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``values + y`` with ``y ~ U(-half_width, half_width)``, vectorised."""
        array = _values(values)
        return array + rng.uniform(-self.half_width, self.half_width, size=array.shape)

    def noise_pdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """Density ``f_Y``: ``1 / (2 h)`` on ``[-h, h]``, 0 elsewhere."""
        array = np.asarray(x, dtype=np.float64)
        h = self.half_width
        return np.where(np.abs(array) <= h, 1.0 / (2.0 * h), 0.0)

    def noise_cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """CDF ``F_Y``: ``clip((x + h) / (2 h), 0, 1)``."""
        array = np.asarray(x, dtype=np.float64)
        h = self.half_width
        return np.asarray(np.clip((array + h) / (2.0 * h), 0.0, 1.0), dtype=np.float64)

    def _tail(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        h = self.half_width
        gap = np.maximum(h - u, 0.0)
        return np.asarray(gap * gap / (4.0 * h), dtype=np.float64)

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        """``[low - h, high + h]``: bounded noise extends the range by its support."""
        low, high = _bounds(low, high)
        return low - self.half_width, high + self.half_width


@dataclass(frozen=True)
class AdditiveGaussian(_SymmetricAdditive):
    """Additive Gaussian noise ``N(0, sigma^2)`` (001, Section IV-A: additive perturbation)."""

    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", _positive("sigma", self.sigma))

    @property
    def std(self) -> float:
        return self.sigma

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``values + y`` with ``y ~ N(0, sigma^2)``, vectorised."""
        array = _values(values)
        return array + rng.normal(0.0, self.sigma, size=array.shape)

    def noise_pdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """Density ``f_Y(x) = exp(-x^2 / (2 sigma^2)) / (sigma sqrt(2 pi))``."""
        z = np.asarray(x, dtype=np.float64) / self.sigma
        return np.asarray(np.exp(-0.5 * z * z) / (self.sigma * math.sqrt(2.0 * math.pi)))

    def noise_cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """CDF ``F_Y(x) = Phi(x / sigma)``."""
        return np.asarray(special.ndtr(np.asarray(x, dtype=np.float64) / self.sigma))

    def _tail(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        # G(-u) = sigma * phi(u / sigma) - u * Phi(-u / sigma)
        z = u / self.sigma
        phi = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        return np.asarray(self.sigma * phi - u * special.ndtr(-z), dtype=np.float64)

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        """``[low - 10 sigma, high + 10 sigma]`` (unbounded noise: 10 standard deviations).

        The Gaussian tail beyond 10 sigma is ``2 Phi(-10) = 1.5e-23``, already below
        :data:`REPORTED_TAIL` (which alone would need ``7.13 sigma``), so 10 sigma is the
        wider of the two and the bounds stay where they were.
        """
        low, high = _bounds(low, high)
        spread = _BOUNDS_IN_SD * self.sigma
        return low - spread, high + spread


@dataclass(frozen=True)
class AdditiveLaplace(_SymmetricAdditive):
    """Additive Laplace noise with density ``exp(-|x| / scale) / (2 scale)``."""

    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _positive("scale", self.scale))

    @property
    def std(self) -> float:
        return math.sqrt(2.0) * self.scale

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``values + y`` with ``y ~ Laplace(0, scale)``, vectorised."""
        array = _values(values)
        return array + rng.laplace(0.0, self.scale, size=array.shape)

    def noise_pdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """Density ``f_Y(x) = exp(-|x| / b) / (2 b)``."""
        array = np.asarray(x, dtype=np.float64)
        return np.asarray(np.exp(-np.abs(array) / self.scale) / (2.0 * self.scale))

    def noise_cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """CDF: ``exp(x / b) / 2`` for ``x < 0``, ``1 - exp(-x / b) / 2`` otherwise."""
        array = np.asarray(x, dtype=np.float64)
        half_tail = 0.5 * np.exp(-np.abs(array) / self.scale)
        return np.asarray(np.where(array < 0, half_tail, 1.0 - half_tail))

    def _tail(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(0.5 * self.scale * np.exp(-u / self.scale), dtype=np.float64)

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        """``[low - s, high + s]`` with ``s = scale * ln(10^12)`` (27.6 scales, 19.5 sd):
        the two-sided tail ``P(|Z| > s) = exp(-s / scale)`` equals :data:`REPORTED_TAIL`.

        10 standard deviations (``10 sqrt(2) scale``) left ``exp(-10 sqrt(2)) = 7e-7`` of
        honest reports outside, which the server refused (several at 10^7 residents).
        """
        low, high = _bounds(low, high)
        spread = max(_BOUNDS_IN_SD * self.std, _TAIL_LOG * self.scale)
        return low - spread, high + spread


@dataclass(frozen=True)
class AdditiveStaircase(_SymmetricAdditive):
    """Additive staircase noise: the optimal noise-adding mechanism for ε-differential
    privacy (Geng and Viswanath, "The optimal noise-adding mechanism in differential
    privacy", IEEE Trans. Inf. Theory 62(2), 2016).

    With ``b = e^-ε``, ``gamma = 1 / (1 + e^(ε/2))`` (their l1-optimal gamma) and ``Δ`` the
    sensitivity, the density is symmetric and, for ``|z|`` in ``[kΔ, (k+gamma)Δ)``, equal to
    ``a b^k``, and in ``[(k+gamma)Δ, (k+1)Δ)`` to ``a b^(k+1)`` (``k = 0, 1, ...``), with
    ``a = (1 - b) / (2Δ(gamma + (1 - gamma) b))``. Shifting the density by at most ``Δ`` changes it
    by a factor of at most ``e^ε``, so a true value in a range of width ``<= Δ`` reported
    as ``x + Z`` is ε-locally differentially private, as with Laplace noise of scale
    ``Δ / ε``, but with far less noise at ε >= 1 (standard deviation 18.9 against 24.7 for
    ε = 4 and Δ = 70; the noise sits mostly within ``gammaΔ`` of 0).

    The magnitude is ``|Z| = Δ (G + V)`` with ``G`` geometric (``P(G = k) = (1 - b) b^k``)
    and ``V`` independent of ``G`` (uniform on ``[0, gamma)`` with probability
    ``gamma / (gamma + (1 - gamma) b)``, else uniform on ``[gamma, 1)``), which gives the
    sampler and the closed forms below (geometric series summed exactly; no grids).
    """

    epsilon: float
    sensitivity: float

    def __post_init__(self) -> None:
        eps = _positive("epsilon", self.epsilon)
        if math.exp(-eps) >= 1.0:  # so small that e^-eps rounds to 1: no distribution
            raise InputError(
                gettext_noop("%(name)s must be > 0 and finite, got %(value)s"),
                name="epsilon",
                value=repr(self.epsilon),
            )
        if eps > MAX_STAIRCASE_EPSILON:  # gamma and b would underflow to 0
            raise InputError(
                gettext_noop("epsilon must be at most %(limit)s, got %(value)s"),
                limit=f"{MAX_STAIRCASE_EPSILON:g}",
                value=repr(self.epsilon),
            )
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", _positive("sensitivity", self.sensitivity))

    @property
    def b(self) -> float:
        """``e^-ε``: the ratio of the density one step ``Δ`` further out."""
        return math.exp(-self.epsilon)

    @property
    def gamma(self) -> float:
        """``gamma = 1 / (1 + e^(ε/2))``, the share of each step at the higher level."""
        half = math.exp(-0.5 * self.epsilon)  # 1 / (1 + e^(ε/2)) without overflow
        return half / (1.0 + half)

    @property
    def _inner(self) -> float:
        """``P(V < gamma) = gamma / (gamma + (1 - gamma) b)``: the sampler's chance of the
        higher level."""
        g, b = self.gamma, self.b
        return g / (g + (1.0 - g) * b)

    @property
    def _height(self) -> float:
        """``a``, the density at 0."""
        g, b = self.gamma, self.b
        return (1.0 - b) / (2.0 * self.sensitivity * (g + (1.0 - g) * b))

    @property
    def std(self) -> float:
        """``Δ sqrt(E[(G + V)^2])`` in closed form."""
        b, g, p = self.b, self.gamma, self._inner
        mean_g = b / (1.0 - b)
        square_g = b * (1.0 + b) / (1.0 - b) ** 2
        mean_v = p * g / 2.0 + (1.0 - p) * (1.0 + g) / 2.0
        square_v = p * g * g / 3.0 + (1.0 - p) * (g * g + g * (1.0 - g) + (1.0 - g) ** 2 / 3.0)
        return self.sensitivity * math.sqrt(square_g + 2.0 * mean_g * mean_v + square_v)

    def _step(self, u: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``k = floor(u / Δ)`` and ``r = u / Δ - k`` in ``[0, 1)`` for ``u >= 0``."""
        scaled = u / self.sensitivity
        k = np.floor(scaled)
        with np.errstate(invalid="ignore"):  # u = inf: k = inf, r = 0, b^k = 0
            fraction = np.where(np.isfinite(scaled), scaled - k, 0.0)
        return k, np.clip(fraction, 0.0, 1.0)

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``values + S Δ (G + V)``, vectorised (the sampler of the contract:
        ``S = ±1``, ``G`` geometric, ``B`` picks the level, ``U`` uniform on ``[0, 1)``)."""
        array = _values(values)
        shape = array.shape
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        geometric = rng.geometric(1.0 - self.b, size=shape) - 1.0
        inner = rng.random(shape) < self._inner
        uniform = rng.random(shape)
        g = self.gamma
        fraction = np.where(inner, g * uniform, g + (1.0 - g) * uniform)
        return np.asarray(array + sign * self.sensitivity * (geometric + fraction))

    def noise_pdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """Density: ``a b^k`` on ``|x|`` in ``[kΔ, (k+gamma)Δ)``, ``a b^(k+1)`` on the rest of
        step ``k``."""
        k, r = self._step(np.abs(np.asarray(x, dtype=np.float64)))
        level = np.where(r < self.gamma, k, k + 1.0)
        return np.asarray(self._height * np.power(self.b, level), dtype=np.float64)

    def _survival(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """``P(Z > u)`` for ``u >= 0``: the steps beyond ``k`` (``b^(k+1) / 2``) plus the
        rest of step ``k``."""
        k, r = self._step(u)
        g, b, ad = self.gamma, self.b, self._height * self.sensitivity
        bk = np.power(b, k)
        rest = np.where(r < g, ad * bk * ((g - r) + (1.0 - g) * b), ad * bk * b * (1.0 - r))
        return np.asarray(bk * b / 2.0 + rest, dtype=np.float64)

    def noise_cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """CDF ``F_Y``: ``P(Z > |x|)`` for ``x < 0``, ``1 - P(Z > x)`` otherwise."""
        array = np.asarray(x, dtype=np.float64)
        survival = self._survival(np.abs(array))
        return np.asarray(np.where(array < 0, survival, 1.0 - survival), dtype=np.float64)

    def _tail(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """``T(u) = ∫_u^inf P(Z > s) ds`` for ``u >= 0``.

        Over a whole step ``j`` the survival integrates to ``Δ b^j (b / 2 + aΔ c)`` with
        ``c = gamma²/2 + gamma(1 - gamma) b + (1 - gamma)² b / 2``; the steps after ``k`` sum to
        ``Δ (b / 2 + aΔ c) b^(k+1) / (1 - b)``, and the rest of step ``k`` from ``r`` is
        ``Δ (b^(k+1) (1 - r) / 2 + aΔ R(r))`` with ``R(r) = b^k ((gamma - r)²/2 + (1 - gamma) b
        (gamma - r) + (1 - gamma)² b / 2)`` below ``gamma`` and ``b^(k+1) (1 - r)² / 2`` above.
        """
        k, r = self._step(np.asarray(u, dtype=np.float64))
        g, b, d = self.gamma, self.b, self.sensitivity
        ad = self._height * d
        c = g * g / 2.0 + g * (1.0 - g) * b + (1.0 - g) ** 2 * b / 2.0
        bk = np.power(b, k)
        later = (b / 2.0 + ad * c) * bk * b / (1.0 - b)
        gap = g - r
        rest = np.where(
            r < g,
            bk * (gap * gap / 2.0 + (1.0 - g) * b * gap + (1.0 - g) ** 2 * b / 2.0),
            bk * b * (1.0 - r) ** 2 / 2.0,
        )
        return np.asarray(d * (later + bk * b * (1.0 - r) / 2.0 + ad * rest), dtype=np.float64)

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        """``[low - s, high + s]`` with ``s`` the larger of 10 standard deviations and
        ``kΔ``, ``k`` the fewest whole steps with ``P(|Z| >= kΔ) = b^k <= 1e-12``
        (:data:`REPORTED_TAIL`).

        The geometric tail is heavier than Laplace's in units of the standard deviation
        (beyond 10 sd at ε = 4 lie 2e-5 of the reports), and the server refuses reports
        outside these bounds (``surveys.answers.answer_form``), so they reach as far as
        one report in 10^12 goes.
        """
        low, high = _bounds(low, high)
        steps = math.ceil(_TAIL_LOG / self.epsilon)
        spread = max(_BOUNDS_IN_SD * self.std, steps * self.sensitivity)
        return low - spread, high + spread

    def local_epsilon(self, low: float, high: float) -> float | None:
        """ε of local differential privacy for true values in ``[low, high]``: ``epsilon``
        when the range is no wider than ``sensitivity``, else ``None`` (only answers
        within ``sensitivity`` of each other are then ε-indistinguishable)."""
        low, high = _bounds(low, high)
        return self.epsilon if high - low <= self.sensitivity else None


@dataclass(frozen=True)
class RetentionReplacement:
    """Retention replacement perturbation ([23] in 001_28af1923c784b480.txt, Section IV-A).

    With probability ``retain`` the true value is reported, otherwise a value drawn
    uniformly from ``[low, high]`` (004_594176c10f691dd8.txt calls the uniform variant
    URRP). The reported value given a true value ``x`` has the mixture distribution
    ``retain * delta_x + (1 - retain) * U(low, high)``; it is not additive, so there is no
    ``noise_pdf``: use :meth:`reported_cdf` for ``Pr(reported <= y | true x)``.
    """

    retain: float
    low: float
    high: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "retain", _retain(self.retain))
        try:
            low, high = _bounds(self.low, self.high)
        except ValueError:
            raise InputError(
                gettext_noop("low and high must be finite with low < high, got %(low)s, %(high)s"),
                low=repr(self.low),
                high=repr(self.high),
            ) from None
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Keep each value with probability ``retain``, else replace it by ``U(low, high)``."""
        array = _values(values)
        keep = rng.random(array.shape) < self.retain
        replacement = rng.uniform(self.low, self.high, size=array.shape)
        return np.where(keep, array, replacement)

    def reported_cdf(self, y: ArrayLike, true_value: ArrayLike) -> NDArray[np.float64]:
        """``Pr(reported <= y | true x) = retain [x <= y] + (1 - retain) U_cdf(y)``."""
        yy = np.asarray(y, dtype=np.float64)
        xx = np.asarray(true_value, dtype=np.float64)
        uniform_cdf = np.clip((yy - self.low) / (self.high - self.low), 0.0, 1.0)
        return np.asarray(
            self.retain * (xx <= yy) + (1.0 - self.retain) * uniform_cdf, dtype=np.float64
        )

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        """``[low, high]``: retained values stay in range and replacements are drawn from it."""
        return _bounds(low, high)

    def interval_channel(
        self, true_edges: ArrayLike, reported_edges: ArrayLike
    ) -> NDArray[np.float64]:
        """``C[i, j] = retain * overlap(i, j) + (1 - retain) * Pr(U(low, high) in bin j)``.

        ``overlap(i, j)`` is the share of true interval ``i`` inside reported bin ``j``;
        outer reported bins are open so rows sum to 1.
        """
        t_edges = _edges(true_edges, "true_edges")
        r_edges = _edges(reported_edges, "reported_edges")
        retained = _overlap_fraction(np.stack([t_edges[:-1], t_edges[1:]], axis=1), r_edges)
        replaced = _overlap_fraction(np.array([[self.low, self.high]]), r_edges)
        return np.asarray(self.retain * retained + (1.0 - self.retain) * replaced)

    def point_channel(self, points: ArrayLike, reported_edges: ArrayLike) -> NDArray[np.float64]:
        """``C[i, j] = retain * [x_i in bin j] + (1 - retain) * Pr(U(low, high) in bin j)``."""
        x = np.asarray(points, dtype=np.float64).reshape(-1, 1)
        r_edges = _edges(reported_edges, "reported_edges")
        kept = _rows_from_cdf(np.asarray(x < r_edges[None, 1:-1], dtype=np.float64))
        replaced = _overlap_fraction(np.array([[self.low, self.high]]), r_edges)
        return np.asarray(self.retain * kept + (1.0 - self.retain) * replaced)


@dataclass(frozen=True)
class NoNoise:
    """No distortion: the reported value is the true value."""

    @property
    def std(self) -> float:
        return 0.0

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Return a copy of ``values``; ``rng`` is not used."""
        del rng
        return np.array(_values(values), dtype=np.float64, copy=True)

    def noise_pdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """A point mass at 0: ``inf`` at 0, 0 elsewhere (a Dirac delta)."""
        array = np.asarray(x, dtype=np.float64)
        return np.where(array == 0.0, np.inf, 0.0)

    def noise_cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """Step at 0: ``1`` for ``x >= 0``, else 0."""
        return np.asarray(np.asarray(x, dtype=np.float64) >= 0.0, dtype=np.float64)

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        """``[low, high]``."""
        return _bounds(low, high)

    def interval_channel(
        self, true_edges: ArrayLike, reported_edges: ArrayLike
    ) -> NDArray[np.float64]:
        """Share of each true interval in each reported bin (outer bins open)."""
        t_edges = _edges(true_edges, "true_edges")
        r_edges = _edges(reported_edges, "reported_edges")
        return _overlap_fraction(np.stack([t_edges[:-1], t_edges[1:]], axis=1), r_edges)

    def point_channel(self, points: ArrayLike, reported_edges: ArrayLike) -> NDArray[np.float64]:
        """The reported bin of each true point (outer bins open)."""
        x = np.asarray(points, dtype=np.float64).reshape(-1, 1)
        r_edges = _edges(reported_edges, "reported_edges")
        return _rows_from_cdf(np.asarray(x < r_edges[None, 1:-1], dtype=np.float64))
