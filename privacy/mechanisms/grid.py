"""Noise drawn exactly on a published reporting grid (issue 31).

Floating-point noise leaks the true value through the report's last bits (Mironov 2012,
"On significance of the least significant bits for differential privacy"): the exact
double ``fl(x + noise(u))`` depends on ``x`` beyond what the noise law says. So a
continuous question with noise publishes a grid ``origin + k * resolution`` (origin = the
range's low end) and a client

1. rounds the true value to the grid at random (to the grid point below with probability
   ``1 - f`` and above with probability ``f``, ``f`` the fractional position between them:
   unbiased, ``E[rounded] = x``), then
2. adds an integer number ``K`` of grid steps drawn exactly, with integer arithmetic
   from the operating system's randomness, from one of the discrete laws below,

and sends ``origin + (j + K) * resolution`` (computed in IEEE double arithmetic exactly so:
the same double in every client), as a decimal that parses back to it.

Laws, in grid steps (``K`` symmetric about 0):

* :class:`DiscreteLaplace` (two-sided geometric): ``P(K = k) ∝ exp(-|k| / t)``,
  ``t = scale / resolution``; ε of ``1 / t`` per grid step of sensitivity.
* :class:`DiscreteGaussian`: ``P(K = k) ∝ exp(-k² / (2 s²))``, ``s = sigma / resolution``
  (Canonne, Kamath & Steinke 2020, with their exact sampler in the clients).
* :class:`DiscreteStaircase`: the staircase of Geng & Viswanath (2016) in its discrete
  form: ``d`` steps of sensitivity, ``P(K = k) ∝ b^j`` for ``|k| = j d + s``, ``s < r``,
  and ``b^(j+1)`` for ``r <= s < d``; ``b = exp(-ε)``.
* :class:`DiscreteUniform`: ``K`` uniform on ``{-H, ..., H}``, ``H = floor(half_width /
  resolution)``.
* :class:`PointMass`: ``K = 0`` (retention replacement's kept values, rounded).

Retention replacement on the grid keeps the rounded value with probability ``retain`` and
otherwise draws a grid point uniformly from ``{0, ..., N}`` (the range's grid points).

The engine's channels come from the same laws: for a value ``x`` at grid position ``u``
the chance of a report below an edge is the linear interpolation of the noise CDF at
``c - u`` (randomised rounding is exactly that interpolation), and for a true value
uniform on an interval its integral, in closed form through the law's tail sums
(:meth:`_Law.tail` and :meth:`_Law.tail2`). The vectorised samplers here (``numpy``,
seedable) simulate residents for the demo, tests and benchmarks; the portal clients
(``clients/js``, ``clients/python``) draw exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privacy.mechanisms.messages import InputError, gettext_noop
from privacy.mechanisms.noise import (
    AdditiveGaussian,
    AdditiveLaplace,
    AdditiveStaircase,
    AdditiveUniform,
    RetentionReplacement,
    _edges,
    _rows_from_cdf,
    _values,
)

__all__ = [
    "DEFAULT_GRID_POINTS",
    "MAX_GRID_POINTS",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "DiscreteStaircase",
    "DiscreteUniform",
    "Grid",
    "GridGaussian",
    "GridLaplace",
    "GridRetention",
    "GridStaircase",
    "GridUniform",
    "PointMass",
    "decimal",
    "default_resolution",
    "grid_noise",
]

# A question without ``step`` or ``resolution`` gets range / DEFAULT_GRID_POINTS.
DEFAULT_GRID_POINTS = 10_000
# At most this many grid steps across the range (the engine's arrays stay small).
MAX_GRID_POINTS = 1_000_000
# A report within this share of a step of a grid point is that grid point (a decimal
# written by hand may differ from the double origin + k * resolution in its last bit);
# the server stores the grid point itself.
SNAP = 1e-6
# Grid values must stay distinct doubles: resolution at least 2^-36 of the largest |end|.
MIN_RELATIVE_RESOLUTION = 2.0**-36
# Exact discrete Gaussian tables up to this sigma (grid steps); beyond it the CDF is the
# continuity-corrected normal, within 1e-10 of the discrete law.
_GAUSSIAN_TABLE_SIGMA = 20_000.0


def default_resolution(low: float, high: float, step: float | None) -> float:
    """``step`` where the question has one; else the power of ten at or below
    ``(high - low) / 10^4`` when the range is a whole number of it (10^4 to 10^5 steps
    across the range, and grid values are short decimals: 0.001 for ages 16-100, 1 for
    incomes 0-20,000), else ``(high - low) / 10^4``."""
    if step is not None:
        return float(step)
    width = float(high) - float(low)
    fine = width / DEFAULT_GRID_POINTS
    decimal = 10.0 ** math.floor(math.log10(fine) + 1e-9)
    count = width / decimal
    if abs(count - round(count)) <= 1e-9 * count:
        return decimal
    return fine


@dataclass(frozen=True)
class Grid:
    """The reporting grid ``origin + k * resolution``."""

    origin: float
    resolution: float

    def values(self, k: ArrayLike) -> NDArray[np.float64]:
        """``origin + k * resolution`` in double arithmetic (as every client computes it)."""
        return np.asarray(
            self.origin + np.asarray(k, dtype=np.float64) * self.resolution, dtype=np.float64
        )

    def position(self, x: ArrayLike) -> NDArray[np.float64]:
        """``(x - origin) / resolution``: where ``x`` lies, in grid steps."""
        return np.asarray((np.asarray(x, dtype=np.float64) - self.origin) / self.resolution)

    def index(self, values: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """The nearest grid index of each value, and whether the value is on the grid."""
        array = np.asarray(values, dtype=np.float64)
        k = np.rint(self.position(array))
        on = np.abs(array - self.values(k)) <= SNAP * self.resolution
        return k.astype(np.int64), on

    def first_at_or_above(self, edges: ArrayLike) -> NDArray[np.float64]:
        """The smallest grid index whose value is ``>= edge`` (exact in doubles)."""
        e = np.asarray(edges, dtype=np.float64)
        k = np.ceil(self.position(e))
        k = k - (self.values(k - 1.0) >= e)
        k = k + (self.values(k) < e)
        return np.asarray(k, dtype=np.float64)

    def round_randomly(self, x: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Randomised rounding to grid indices: up with probability the fractional part."""
        u = self.position(x)
        below = np.floor(u)
        return np.asarray(below + (rng.random(u.shape) < (u - below)), dtype=np.float64)


class _Law:
    """A symmetric integer noise law, by its tails ``P(K >= s)`` and their sums."""

    def tail(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        """``P(K >= s)`` for integers ``s >= 1``."""
        raise NotImplementedError

    def tail2(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        """``sum_{u >= s} P(K >= u)`` for integers ``s >= 1``."""
        raise NotImplementedError

    @property
    def std(self) -> float:
        raise NotImplementedError

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
        raise NotImplementedError

    def scheme(self) -> dict[str, Any]:
        raise NotImplementedError

    # -- CDFs on the integers and their interpolation ------------------------------

    def cdf(self, m: NDArray[np.float64]) -> NDArray[np.float64]:
        """``P(K <= m)`` for integers ``m``."""
        m = np.asarray(m, dtype=np.float64)
        low = m <= -1
        out = np.empty_like(m)
        out[low] = self.tail(-m[low])
        out[~low] = 1.0 - self.tail(m[~low] + 1.0)
        return out

    def interpolated_cdf(self, w: ArrayLike) -> NDArray[np.float64]:
        """``E[P(K <= w - J)]`` with ``J`` the randomised rounding of ``w``'s fraction:
        the linear interpolation of :meth:`cdf` between integers."""
        w = np.asarray(w, dtype=np.float64)
        n = np.floor(w)
        f = w - n
        return np.asarray((1.0 - f) * self.cdf(n) + f * self.cdf(n + 1.0), dtype=np.float64)

    def smooth_tail(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        """``T(v) = integral of the interpolated CDF up to -1/2 - v`` for ``v >= 0``."""
        z = -0.5 - np.asarray(v, dtype=np.float64)
        n = np.floor(z)  # <= -1
        f = z - n
        fn = self.cdf(n)
        fn1 = self.cdf(n + 1.0)
        at_n = self.tail2(1.0 - n) + fn / 2.0
        return np.asarray(at_n + f * fn + f * f / 2.0 * (fn1 - fn), dtype=np.float64)


@dataclass(frozen=True)
class PointMass(_Law):
    """``K = 0``."""

    def tail(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.zeros_like(np.asarray(s, dtype=np.float64))

    def tail2(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.zeros_like(np.asarray(s, dtype=np.float64))

    @property
    def std(self) -> float:
        return 0.0

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
        return np.zeros(shape)

    def scheme(self) -> dict[str, Any]:
        return {"name": "none"}


@dataclass(frozen=True)
class DiscreteLaplace(_Law):
    """Two-sided geometric: ``P(K = k) = (1 - q) / (1 + q) q^|k|``, ``q = exp(-1 / t)``."""

    t: Fraction

    @property
    def q(self) -> float:
        return math.exp(-1.0 / float(self.t))

    def tail(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        q = self.q
        return np.asarray(np.exp(-np.asarray(s) / float(self.t)) / (1.0 + q))

    def tail2(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        q = self.q
        one_minus_q = -math.expm1(-1.0 / float(self.t))
        return np.asarray(np.exp(-np.asarray(s) / float(self.t)) / ((1.0 + q) * one_minus_q))

    @property
    def std(self) -> float:
        q = self.q
        return math.sqrt(2.0 * q) / -math.expm1(-1.0 / float(self.t))

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
        p = -math.expm1(-1.0 / float(self.t))
        return np.asarray(rng.geometric(p, shape) - rng.geometric(p, shape), dtype=np.float64)

    def scheme(self) -> dict[str, Any]:
        return {"name": "discrete_laplace", "scale": str(self.t)}


@dataclass(frozen=True)
class DiscreteGaussian(_Law):
    """``P(K = k) ∝ exp(-k² / (2 σ²))`` (Canonne, Kamath & Steinke 2020)."""

    sigma2: Fraction

    @property
    def sigma(self) -> float:
        return math.sqrt(float(self.sigma2))

    def _table(self) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        cached = self.__dict__.get("_cache")
        if cached is None:
            sigma = self.sigma
            last = math.ceil(13.0 * sigma) + 2
            k = np.arange(last + 1, dtype=np.float64)
            w = np.exp(-k * k / (2.0 * float(self.sigma2)))
            total = w[0] + 2.0 * w[1:].sum()
            # S1[s] = P(K >= s), T2[s] = sum_{u >= s} S1[u], summed from the far tail.
            s1 = np.cumsum(w[::-1])[::-1] / total
            t2 = np.cumsum(s1[::-1])[::-1]
            var = 2.0 * float((k * k * w).sum()) / total
            cached = (s1, t2, math.sqrt(var))
            object.__setattr__(self, "_cache", cached)
        return cached

    def _index(self, s: NDArray[np.float64], table: NDArray[np.float64]) -> NDArray[np.float64]:
        idx = np.asarray(s, dtype=np.float64)
        inside = idx < table.size
        out = np.zeros_like(idx)
        out[inside] = table[idx[inside].astype(np.int64)]
        return out

    def tail(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.sigma > _GAUSSIAN_TABLE_SIGMA:
            return np.asarray(special.ndtr(-(np.asarray(s) - 0.5) / self.sigma))
        return self._index(s, self._table()[0])

    def tail2(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.sigma > _GAUSSIAN_TABLE_SIGMA:
            z = (np.asarray(s) - 1.0) / self.sigma
            phi = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
            return np.asarray(self.sigma * (phi - z * special.ndtr(-z)))
        return self._index(s, self._table()[1])

    @property
    def std(self) -> float:
        if self.sigma > _GAUSSIAN_TABLE_SIGMA:
            return self.sigma
        return self._table()[2]

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
        """Canonne, Kamath & Steinke's rejection from a discrete Laplace of scale
        ``floor(sigma) + 1``, vectorised in rounds (simulation; the clients draw exactly)."""
        sigma2 = float(self.sigma2)
        t = math.floor(self.sigma) + 1
        out = np.empty(shape, dtype=np.float64).ravel()
        todo = np.arange(out.size)
        p = -math.expm1(-1.0 / t)
        while todo.size:
            y = rng.geometric(p, todo.size) - rng.geometric(p, todo.size)
            accept = rng.random(todo.size) < np.exp(-((np.abs(y) - sigma2 / t) ** 2) / (2 * sigma2))
            out[todo[accept]] = y[accept]
            todo = todo[~accept]
        return out.reshape(shape)

    def scheme(self) -> dict[str, Any]:
        return {"name": "discrete_gaussian", "sigma2": str(self.sigma2)}


@dataclass(frozen=True)
class DiscreteUniform(_Law):
    """``K`` uniform on ``{-H, ..., H}``."""

    half: int

    def tail(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        h = self.half
        return np.asarray(np.maximum(0.0, h - np.asarray(s) + 1.0) / (2 * h + 1))

    def tail2(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        h = self.half
        m = np.maximum(0.0, h - np.asarray(s) + 1.0)
        return np.asarray(m * (m + 1.0) / (2.0 * (2 * h + 1)))

    @property
    def std(self) -> float:
        return math.sqrt(self.half * (self.half + 1) / 3.0)

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
        return np.asarray(rng.integers(-self.half, self.half + 1, shape), dtype=np.float64)

    def scheme(self) -> dict[str, Any]:
        return {"name": "discrete_uniform", "half_width": self.half}


@dataclass(frozen=True)
class DiscreteStaircase(_Law):
    """Geng & Viswanath's staircase on the integers: ``d`` steps of sensitivity, the
    first ``r`` positions of each step at the higher level, ``b = exp(-ε)``."""

    epsilon: Fraction
    d: int
    r: int

    @property
    def b(self) -> float:
        return math.exp(-float(self.epsilon))

    @property
    def _half(self) -> float:
        """``W = sum_{i >= 0} w(i)`` with ``w(0) = 1``."""
        b, d, r = self.b, self.d, self.r
        return (r + (d - r) * b) / (1.0 - b)

    @property
    def _total(self) -> float:
        return 2.0 * self._half - 1.0

    def _split(self, s: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        s = np.asarray(s, dtype=np.float64)
        j = np.floor(s / self.d)
        return j, s - j * self.d

    def _rest(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        """``sum_{i >= s} w(i)`` for ``s`` in ``[0, d)``."""
        b, d, r = self.b, self.d, self.r
        return np.maximum(r - s, 0.0) + b * (d - np.maximum(s, r)) + b * self._half

    def _rest_sum(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        """``sum_{u = s}^{d - 1}`` of :meth:`_rest` for ``s`` in ``[0, d]``."""
        b, d, r = self.b, self.d, self.r
        m = np.maximum(r - s, 0.0)
        n = d - np.maximum(s, r)
        total = m * (m + 1) / 2.0 + b * (m * (d - r) + n * (n + 1) / 2.0) + (d - s) * b * self._half
        return np.asarray(total, dtype=np.float64)

    def tail(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        j, rest = self._split(s)
        return np.asarray(np.exp(-float(self.epsilon) * j) * self._rest(rest) / self._total)

    def tail2(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        j, rest = self._split(s)
        b = self.b
        whole = self._rest_sum(np.zeros(1))[0]
        value = self._rest_sum(rest) + b * whole / (1.0 - b)
        return np.asarray(np.exp(-float(self.epsilon) * j) * value / self._total)

    @property
    def std(self) -> float:
        b, d, r = self.b, float(self.d), float(self.r)

        def power_sums(lo: float, hi: float) -> tuple[float, float, float]:
            n0 = hi - lo
            s1 = (hi * (hi - 1) - lo * (lo - 1)) / 2.0
            s2 = ((hi - 1) * hi * (2 * hi - 1) - (lo - 1) * lo * (2 * lo - 1)) / 6.0
            return n0, s1, s2

        i0, i1, i2 = power_sums(0.0, r)
        o0, o1, o2 = power_sums(r, d)
        a0, a1, a2 = i0 + b * o0, i1 + b * o1, i2 + b * o2
        g0 = 1.0 / (1.0 - b)
        g1 = b / (1.0 - b) ** 2
        g2 = b * (1.0 + b) / (1.0 - b) ** 3
        second = g2 * d * d * a0 + 2.0 * g1 * d * a1 + g0 * a2  # sum_{i >= 0} i² w(i)
        return math.sqrt(2.0 * second / self._total)

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[np.float64]:
        b, d, r = self.b, self.d, self.r
        inner = r / (r + (d - r) * b)
        out = np.empty(shape, dtype=np.float64).ravel()
        todo = np.arange(out.size)
        while todo.size:
            size = todo.size
            negative = rng.random(size) < 0.5
            g = rng.geometric(1.0 - b, size) - 1
            high = rng.random(size) < inner
            w = np.where(high, rng.integers(0, r, size), rng.integers(r, max(d, r + 1), size))
            w = np.where(high | (r < d), w, 0)
            magnitude = g * d + w
            keep = ~(negative & (magnitude == 0))
            out[todo[keep]] = np.where(negative, -magnitude, magnitude)[keep]
            todo = todo[~keep]
        return out.reshape(shape)

    def scheme(self) -> dict[str, Any]:
        return {
            "name": "discrete_staircase",
            "epsilon": str(self.epsilon),
            "steps": self.d,
            "inner": self.r,
        }


# --------------------------------------------------------------------------- models


class _OnGrid:
    """A noise model whose reports lie on a grid: channels from the discrete law.

    Mixed into the continuous models (``GridLaplace(AdditiveLaplace)`` etc.) so the engine
    treats them as the mechanism they implement and reads the exact discrete channels.
    """

    origin: float
    resolution: float

    @property
    def grid(self) -> Grid:
        return Grid(self.origin, self.resolution)

    def law(self) -> Any:
        """The discrete law in grid steps (built once per model)."""
        cached = self.__dict__.get("_law")
        if cached is None:
            cached = self._make_law()
            object.__setattr__(self, "_law", cached)
        return cached

    def _make_law(self) -> _Law:
        raise NotImplementedError

    @property
    def std(self) -> float:
        return float(self.law().std) * self.resolution

    def _below(self, reported_edges: ArrayLike) -> NDArray[np.float64]:
        """``c``: reports below an inner edge are the grid indices ``<= c``."""
        edges = _edges(reported_edges, "reported_edges")
        return np.asarray(self.grid.first_at_or_above(edges[1:-1]) - 1.0)

    def point_channel(self, points: ArrayLike, reported_edges: ArrayLike) -> NDArray[np.float64]:
        """``C[i, j]``: chance that ``x_i`` rounded at random plus ``K`` steps falls in
        reported bin ``j`` (the interpolated CDF at ``c - u``; outer bins open)."""
        u = self.grid.position(np.asarray(points, dtype=np.float64)).reshape(-1, 1)
        c = self._below(reported_edges)[None, :]
        return _rows_from_cdf(self.law().interpolated_cdf(c - u))

    def interval_channel(
        self, true_edges: ArrayLike, reported_edges: ArrayLike
    ) -> NDArray[np.float64]:
        """As :meth:`point_channel` for a true value uniform on each true interval: the
        integral of the interpolated CDF, ``(clip(x - a, 0, w) + T(|x - a|) - T(|x - b|))
        / w`` in grid units with ``x = c + 1/2``."""
        t = _edges(true_edges, "true_edges")
        a = self.grid.position(t[:-1])[:, None]
        b = self.grid.position(t[1:])[:, None]
        width = b - a
        x = self._below(reported_edges)[None, :] + 0.5
        law = self.law()
        cdf = (
            np.clip(x - a, 0.0, width)
            + law.smooth_tail(np.abs(x - a))
            - law.smooth_tail(np.abs(x - b))
        ) / width
        return _rows_from_cdf(np.asarray(cdf, dtype=np.float64))

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        """The grid values from the range's grid points widened by the law's reach."""
        k_low, k_high = self.index_bounds(low, high)
        values = self.grid.values(np.array([k_low, k_high]))
        return float(values[0]), float(values[1])

    def index_bounds(self, low: float, high: float) -> tuple[int, int]:
        """Grid indices from the range's grid points widened by the continuous model's
        spread (10 standard deviations, or as far as one report in 10^12) in the whole
        steps that fit in it, so the server's bounds stay where they were."""
        continuous = super().reported_bounds(low, high)  # type: ignore[misc]
        spread = max(low - continuous[0], continuous[1] - high)
        steps = spread / self.resolution
        reach = math.floor(steps + 1e-9 * max(1.0, steps))  # grid values inside the bounds
        law = self.law()
        if isinstance(law, DiscreteUniform):
            reach = max(reach, law.half)
        u = self.grid.position(np.array([low, high]))
        return int(np.floor(u[0] + 1e-9)) - reach, int(np.ceil(u[1] - 1e-9)) + reach

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        """Round at random to the grid and add the law's steps (vectorised simulation)."""
        array = _values(values)
        k = self.grid.round_randomly(array, rng) + self.law().sample(array.shape, rng)
        return self.grid.values(k)

    def scheme(self) -> dict[str, Any]:
        """The grid as the survey's scheme publishes it."""
        return {"origin": self.origin, "resolution": self.resolution, "law": self.law().scheme()}


def decimal(value: float) -> Fraction:
    """A parameter as the decimal it is written as: the shortest decimal that reads back
    as the double (``0.001`` is 1/1000, not the double's binary expansion)."""
    return Fraction(repr(float(value)))


def _steps(value: float, resolution: float) -> Fraction:
    """A parameter in grid steps, exactly: its decimal over the resolution's."""
    return decimal(value) / decimal(resolution)


@dataclass(frozen=True)
class GridLaplace(_OnGrid, AdditiveLaplace):
    origin: float = 0.0
    resolution: float = 1.0

    def _make_law(self) -> DiscreteLaplace:
        return DiscreteLaplace(_steps(self.scale, self.resolution))

    def epsilon_per_step(self) -> float:
        """ε per grid step of sensitivity: ``resolution / scale``."""
        return self.resolution / self.scale


@dataclass(frozen=True)
class GridGaussian(_OnGrid, AdditiveGaussian):
    origin: float = 0.0
    resolution: float = 1.0

    def _make_law(self) -> DiscreteGaussian:
        return DiscreteGaussian(_steps(self.sigma, self.resolution) ** 2)


@dataclass(frozen=True)
class GridUniform(_OnGrid, AdditiveUniform):
    origin: float = 0.0
    resolution: float = 1.0

    def _make_law(self) -> DiscreteUniform:
        return DiscreteUniform(math.floor(_steps(self.half_width, self.resolution)))


def staircase_steps(sensitivity: float, resolution: float, epsilon: float) -> tuple[int, int]:
    """``(d, r)``: the sensitivity in whole grid steps (at least 1, rounded up) and the
    steps of each stair at the higher level, ``round(gamma d)`` in ``[1, d]``,
    ``gamma = 1 / (1 + e^(ε/2))``."""
    d = max(1, math.ceil(_steps(sensitivity, resolution)))
    half = math.exp(-0.5 * epsilon)
    gamma = half / (1.0 + half)
    return d, min(d, max(1, round(gamma * d)))


@dataclass(frozen=True)
class GridStaircase(_OnGrid, AdditiveStaircase):
    origin: float = 0.0
    resolution: float = 1.0

    def _make_law(self) -> DiscreteStaircase:
        d, r = staircase_steps(self.sensitivity, self.resolution, self.epsilon)
        return DiscreteStaircase(decimal(self.epsilon), d, r)

    def local_epsilon(self, low: float, high: float) -> float | None:
        d, _ = staircase_steps(self.sensitivity, self.resolution, self.epsilon)
        covered = (high - low) <= d * self.resolution * (1.0 + 1e-12)
        return self.epsilon if covered else None


@dataclass(frozen=True)
class GridRetention(_OnGrid, RetentionReplacement):
    """Keep the rounded value with probability ``retain``, else a grid point of the range
    drawn uniformly."""

    origin: float = 0.0
    resolution: float = 1.0

    def _make_law(self) -> PointMass:
        return PointMass()

    @property
    def points(self) -> int:
        """``N + 1``: the grid points ``0..N`` of the range."""
        return int(self.index_bounds(self.low, self.high)[1]) + 1

    @property
    def std(self) -> float:  # not additive: no noise scale for the engine
        raise AttributeError("std")

    def point_channel(self, points: ArrayLike, reported_edges: ArrayLike) -> NDArray[np.float64]:
        kept = _OnGrid.point_channel(self, points, reported_edges)
        return np.asarray(self.retain * kept + (1.0 - self.retain) * self._replaced(reported_edges))

    def interval_channel(
        self, true_edges: ArrayLike, reported_edges: ArrayLike
    ) -> NDArray[np.float64]:
        kept = _OnGrid.interval_channel(self, true_edges, reported_edges)
        return np.asarray(self.retain * kept + (1.0 - self.retain) * self._replaced(reported_edges))

    def _replaced(self, reported_edges: ArrayLike) -> NDArray[np.float64]:
        c = self._below(reported_edges)
        cdf = np.clip((c + 1.0) / self.points, 0.0, 1.0)[None, :]
        return _rows_from_cdf(np.asarray(cdf, dtype=np.float64))

    def distort(self, values: ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
        array = _values(values)
        kept = self.grid.round_randomly(array, rng)
        keep = rng.random(array.shape) < self.retain
        replaced = rng.integers(0, self.points, array.shape).astype(np.float64)
        return self.grid.values(np.where(keep, kept, replaced))

    def reported_bounds(self, low: float, high: float) -> tuple[float, float]:
        return _OnGrid.reported_bounds(self, low, high)

    def scheme(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "resolution": self.resolution,
            "law": {"name": "retention_replacement", "retain": str(decimal(self.retain)),
                    "points": self.points},
        }  # fmt: skip


_GRID_MODELS: dict[type, type] = {
    AdditiveLaplace: GridLaplace,
    AdditiveGaussian: GridGaussian,
    AdditiveUniform: GridUniform,
    AdditiveStaircase: GridStaircase,
    RetentionReplacement: GridRetention,
}


def grid_noise(model: Any, origin: float, resolution: float) -> Any:
    """The grid form of a continuous noise model (``none`` stays as it is)."""
    grid_class = _GRID_MODELS.get(type(model))
    if grid_class is None:
        return model
    if not (math.isfinite(resolution) and resolution > 0):
        raise InputError(
            gettext_noop("%(name)s must be > 0 and finite, got %(value)s"),
            name="resolution",
            value=repr(resolution),
        )
    fields = {name: getattr(model, name) for name in model.__dataclass_fields__}
    return grid_class(**fields, origin=float(origin), resolution=float(resolution))
