"""Synthetic candidate pools with correlated attributes and a known truth.

Pure module (numpy and the pure ``privacy.mechanisms``). A seeded generator of the kind
of table 001_28af1923c784b480.txt (Tables I and II, Section IV) works with: candidates'
sex, district, children, age and income, with realistic dependencies between them, so
that reconstruction methods can be measured against the truth (tests, benchmarks, the
product's demo).

Dependencies built in
---------------------
* district -> age (an older and a younger district) and district -> income;
* age -> children (most likely between 30 and 55);
* sex, age (a concave career profile), district and children -> income.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms import AdditiveGaussian, AdditiveUniform, distort_codes, randomised_response
from reconstruction.algorithms.queries import ContinuousAttribute, DiscreteAttribute

__all__ = [
    "AGE_RANGE",
    "CHILDREN",
    "DISTRICTS",
    "INCOME_RANGE",
    "SEXES",
    "CandidatePool",
    "distort_pool",
    "simulate_candidates",
    "simulate_transitions",
]

SEXES: Final = ("F", "M")
DISTRICTS: Final = ("N", "S", "E", "W", "C")
CHILDREN: Final = ("N", "Y")
AGE_RANGE: Final = (16.0, 100.0)
INCOME_RANGE: Final = (0.0, 20000.0)

# Beta(a, b) shape of (age - 16) / 84 per district: S is young, E is old.
_AGE_SHAPE: Final = np.array([[2.2, 3.8], [1.7, 4.2], [2.8, 3.2], [2.2, 3.6], [2.0, 3.4]])
_DISTRICT_SHARE: Final = np.array([0.22, 0.25, 0.18, 0.20, 0.15])
_DISTRICT_INCOME: Final = np.array([0.0, -0.15, 0.05, -0.05, 0.25])


@dataclass(frozen=True)
class CandidatePool:
    """True characteristics of simulated candidates (one entry per candidate).

    Attributes
    ----------
    sex : ndarray of intp
        Codes into :data:`SEXES` (0 = F, 1 = M).
    district : ndarray of intp
        Codes into :data:`DISTRICTS`.
    children : ndarray of intp
        Codes into :data:`CHILDREN` (0 = no, 1 = yes).
    age : ndarray of float64
        Years, within :data:`AGE_RANGE`.
    income : ndarray of float64
        Monthly income, within :data:`INCOME_RANGE`.
    """

    sex: NDArray[np.intp]
    district: NDArray[np.intp]
    children: NDArray[np.intp]
    age: NDArray[np.float64]
    income: NDArray[np.float64]

    @property
    def n(self) -> int:
        return int(self.sex.shape[0])

    def as_mapping(self) -> dict[str, NDArray[np.intp] | NDArray[np.float64]]:
        """The true values by attribute name (``sex``, ``district``, ``children``, ...)."""
        return {
            "sex": self.sex,
            "district": self.district,
            "children": self.children,
            "age": self.age,
            "income": self.income,
        }


def simulate_candidates(n: int, *, rng: np.random.Generator) -> CandidatePool:
    """Draw ``n`` candidates with correlated attributes.

    Parameters
    ----------
    n : int
        Number of candidates (>= 1).
    rng : numpy.random.Generator
        The only source of randomness: the same seed gives the same pool.

    Returns
    -------
    CandidatePool
        The true values (integer codes for the nominal attributes).

    Raises
    ------
    ValueError
        If ``n`` is not a positive integer or ``rng`` is not a Generator.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy.random.Generator")
    size = int(n)
    sex = (rng.random(size) >= 0.52).astype(np.intp)
    district = rng.choice(len(DISTRICTS), size=size, p=_DISTRICT_SHARE).astype(np.intp)
    shape = _AGE_SHAPE[district]
    low, high = AGE_RANGE
    age = low + (high - low) * rng.beta(shape[:, 0], shape[:, 1])
    p_children = 0.08 + 0.72 * np.exp(-(((age - 42.0) / 14.0) ** 2))
    p_children = p_children + 0.05 * (sex == 0)
    children = (rng.random(size) < p_children).astype(np.intp)
    career = -0.55 * ((age - 52.0) / 22.0) ** 2
    log_income = (
        7.75
        + 0.30 * sex
        + _DISTRICT_INCOME[district]
        + career
        + 0.35 * children
        + rng.normal(0.0, 0.35, size=size)
    )
    income = np.clip(np.exp(log_income), *INCOME_RANGE)
    return CandidatePool(
        sex=sex,
        district=district,
        children=children,
        age=np.asarray(age, dtype=np.float64),
        income=np.asarray(income, dtype=np.float64),
    )


def distort_pool(
    pool: CandidatePool,
    *,
    rng: np.random.Generator,
    retain: float = 0.75,
    age_half_width: float = 10.0,
    income_sigma: float = 800.0,
) -> dict[str, DiscreteAttribute | ContinuousAttribute]:
    """Distort a pool as the portal's clients would and return the reported table.

    Randomised response with ``retain`` on sex, district and children (001, Section
    IV-A: "distortion with a matrix of retaining/changing values"), additive uniform noise
    on ``[-age_half_width, age_half_width]`` on age (as 001, Table II) and additive
    Gaussian noise on income.

    Returns
    -------
    dict of name -> DiscreteAttribute | ContinuousAttribute
        The table the query functions of :mod:`reconstruction.algorithms.queries` take.
    """
    table: dict[str, DiscreteAttribute | ContinuousAttribute] = {}
    for name, codes, k in (
        ("sex", pool.sex, len(SEXES)),
        ("district", pool.district, len(DISTRICTS)),
        ("children", pool.children, len(CHILDREN)),
    ):
        channel = randomised_response(k, retain)
        table[name] = DiscreteAttribute(distort_codes(codes, channel, rng), channel)
    age_noise = AdditiveUniform(age_half_width)
    table["age"] = ContinuousAttribute(age_noise.distort(pool.age, rng), age_noise, *AGE_RANGE)
    income_noise = AdditiveGaussian(income_sigma)
    table["income"] = ContinuousAttribute(
        income_noise.distort(pool.income, rng), income_noise, *INCOME_RANGE
    )
    return table


def simulate_transitions(
    n: int, transitions: NDArray[np.float64], *, rng: np.random.Generator
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """True (before, after) answer codes of ``n`` residents: each pair drawn from the
    ``(k, k)`` table of shares ``transitions`` (row: before, column: after; normalised)."""
    table = np.asarray(transitions, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1] or np.any(table < 0):
        raise ValueError("transitions must be a square table of non-negative shares")
    k = table.shape[0]
    cells = rng.choice(k * k, size=int(n), p=(table / table.sum()).ravel())
    before, after = np.divmod(cells, k)
    return before.astype(np.intp), after.astype(np.intp)
