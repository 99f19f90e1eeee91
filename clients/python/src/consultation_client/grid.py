"""Exact discrete noise on a survey's published reporting grid (the server's issue 31).

Floating-point noise leaks the true value through the report's last bits (Mironov,
"On significance of the least significant bits for differential privacy", CCS 2012). A
continuous question with noise therefore publishes ``grid``: ``origin``, ``resolution``
and a discrete ``law`` whose parameters are exact fractions (``"n/d"`` strings). A report
is ``origin + (j + K) * resolution`` computed in double arithmetic, where

* ``j`` is the true value's randomised rounding to the grid: the grid point below with
  probability ``1 - f`` and the one above with probability ``f``, ``f`` the exact
  fractional position between them (so the rounded value is unbiased), and
* ``K`` an integer drawn exactly from the law with integer arithmetic only:
  ``discrete_laplace`` and ``discrete_gaussian`` with the samplers of Canonne, Kamath &
  Steinke, "The discrete Gaussian for differential privacy" (NeurIPS 2020, Algorithms 1-3),
  ``discrete_staircase`` (Geng & Viswanath 2016 in its discrete form) and
  ``discrete_uniform``; ``retention_replacement`` keeps ``j`` with probability ``retain``
  and otherwise sends a grid point of the range drawn uniformly.

Every random choice is ``rng.randrange(n)`` (the operating system's generator by default):
no float ever touches the noise.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

__all__ = [
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "discrete_staircase",
    "grid_report",
    "grid_value",
]


def _bernoulli(p: Fraction, rng: random.Random) -> bool:
    """True with probability ``p`` in [0, 1], exactly."""
    return rng.randrange(p.denominator) < p.numerator


def bernoulli_exp(gamma: Fraction, rng: random.Random) -> bool:
    """True with probability ``exp(-gamma)`` for rational ``gamma >= 0`` (CKS, Algorithm 1)."""
    while gamma > 1:
        if not bernoulli_exp(Fraction(1), rng):
            return False
        gamma -= 1
    k = 1
    while _bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


def _geometric_steps(t: int, rng: random.Random) -> int:
    """``X`` with ``P(X = x) ∝ exp(-x / t)`` on ``0, 1, 2, ...`` (CKS, Algorithm 2's core)."""
    while True:
        u = rng.randrange(t)
        if not bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), rng):
            v += 1
        return u + t * v


def geometric(ratio_log: Fraction, rng: random.Random) -> int:
    """``G`` with ``P(G = g) ∝ exp(-g * ratio_log)`` on ``0, 1, 2, ...``, exactly."""
    s, t = ratio_log.numerator, ratio_log.denominator  # exp(-s / t) per step
    return _geometric_steps(t, rng) // s


def discrete_laplace(scale: Fraction, rng: random.Random) -> int:
    """``P(K = k) ∝ exp(-|k| / scale)`` (CKS, Algorithm 2, scale ``t / s``)."""
    t, s = scale.numerator, scale.denominator
    while True:
        y = _geometric_steps(t, rng) // s
        negative = rng.randrange(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma2: Fraction, rng: random.Random) -> int:
    """``P(K = k) ∝ exp(-k² / (2 sigma2))`` (CKS, Algorithm 3)."""
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # floor(sigma) + 1
    while True:
        y = discrete_laplace(Fraction(t), rng)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bernoulli_exp(gamma, rng):
            return y


def discrete_staircase(epsilon: Fraction, d: int, r: int, rng: random.Random) -> int:
    """The staircase on the integers: ``P(K = k) ∝ b^j`` for ``|k| = j d + s`` with
    ``s < r`` and ``b^(j+1)`` for ``r <= s < d``, ``b = exp(-ε)``: a geometric number of
    whole steps, a position in the step (the outer ones kept with probability ``b``) and
    a sign, with ``-0`` redrawn."""
    while True:
        negative = rng.randrange(2) == 1
        steps = geometric(epsilon, rng)
        while True:
            position = rng.randrange(d)
            if position < r or bernoulli_exp(epsilon, rng):
                break
        magnitude = steps * d + position
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


def _fraction(value: Any, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"grid law parameter {name!r} must be an exact fraction, got {value!r}")
    try:
        number = Fraction(value)
    except (ValueError, ZeroDivisionError):
        raise ValueError(
            f"grid law parameter {name!r} must be an exact fraction, got {value!r}"
        ) from None
    return number


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"grid law parameter {name!r} must be a whole number, got {value!r}")
    return value


def draw(law: Mapping[str, Any], rng: random.Random) -> int:
    """One draw of ``K`` (grid steps) from a published additive law."""
    name = law.get("name")
    if name == "discrete_laplace":
        scale = _fraction(law.get("scale"), "scale")
        if scale <= 0:
            raise ValueError(f"grid law parameter 'scale' must be > 0, got {scale}")
        return discrete_laplace(scale, rng)
    if name == "discrete_gaussian":
        sigma2 = _fraction(law.get("sigma2"), "sigma2")
        if sigma2 <= 0:
            raise ValueError(f"grid law parameter 'sigma2' must be > 0, got {sigma2}")
        return discrete_gaussian(sigma2, rng)
    if name == "discrete_uniform":
        half = _positive_int(law.get("half_width"), "half_width")
        return rng.randrange(2 * half + 1) - half
    if name == "discrete_staircase":
        epsilon = _fraction(law.get("epsilon"), "epsilon")
        d = _positive_int(law.get("steps"), "steps")
        r = _positive_int(law.get("inner"), "inner")
        if epsilon <= 0 or not 1 <= r <= d:
            raise ValueError(
                "grid law discrete_staircase needs epsilon > 0 and 1 <= inner <= steps, "
                f"got {dict(law)!r}"
            )
        return discrete_staircase(epsilon, d, r, rng)
    raise ValueError(f"unknown grid law {name!r}")


def grid_value(origin: float, resolution: float, k: int) -> float:
    """``origin + k * resolution`` in double arithmetic (the value every client sends)."""
    return origin + float(k) * resolution


def _round_randomly(value: float, origin: float, resolution: float, rng: random.Random) -> int:
    u = (Fraction(value) - Fraction(origin)) / Fraction(resolution)
    below = math.floor(u)
    return below + (1 if _bernoulli(u - below, rng) else 0)


def grid_report(grid: Mapping[str, Any], value: float, rng: random.Random) -> float:
    """The report of a true ``value`` on a published grid (see the module's text)."""
    origin, resolution = grid.get("origin"), grid.get("resolution")
    for name, number in (("origin", origin), ("resolution", resolution)):
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ValueError(f"grid {name!r} must be a number, got {number!r}")
        if not math.isfinite(number):
            raise ValueError(f"grid {name!r} must be finite, got {number!r}")
    assert isinstance(origin, (int, float)) and isinstance(resolution, (int, float))
    if not resolution > 0:
        raise ValueError(f"grid 'resolution' must be > 0, got {resolution!r}")
    law = grid.get("law")
    if not isinstance(law, Mapping):
        raise ValueError("the grid has no law")
    j = _round_randomly(value, origin, resolution, rng)
    if law.get("name") == "retention_replacement":
        retain = _fraction(law.get("retain"), "retain")
        points = _positive_int(law.get("points"), "points")
        if not 0 < retain <= 1 or points < 1:
            raise ValueError(
                f"grid law retention_replacement needs 0 < retain <= 1, got {dict(law)!r}"
            )
        k = j if _bernoulli(retain, rng) else rng.randrange(points)
    else:
        k = j + draw(law, rng)
    return grid_value(float(origin), float(resolution), k)
