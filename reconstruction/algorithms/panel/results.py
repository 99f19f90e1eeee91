"""What panel selection takes and gives: quotas, options, outcomes, the refusal.

Pure module: numpy only.

:class:`Quota` (a band on the expected true count of a category), :class:`PanelOptions`
(the keyword options of :func:`~.selection.select_panel`, validated once), the
:class:`PanelResult` with one :class:`QuotaOutcome` per quota, and
:class:`InfeasibleQuotas`, the refusal with the conflicting quotas and the smallest
relaxation (Flanigan, Gölz, Gupta, Hennig and Procaccia, "Fair algorithms for selecting
citizens' assemblies", Nature 596 (2021), adapted as :mod:`reconstruction.algorithms.panel`
explains).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms.messages import Message
from reconstruction.algorithms.panel import limits
from reconstruction.algorithms.queries import Condition

Objective = Literal["maximin", "nash", "leximin"]

OBJECTIVES: tuple[str, ...] = ("maximin", "nash", "leximin")


@dataclass(frozen=True)
class Quota:
    """A band for the expected true count of panel members meeting a condition.

    Attributes
    ----------
    where : tuple of Condition
        The category (a conjunction over the table's attributes).
    min, max : int
        Inclusive bounds, ``0 <= min <= max``.
    label : str
        A name for messages (``"sex in [F]"``); empty for "quota <index>".
    """

    where: tuple[Condition, ...]
    min: int
    max: int
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "where", tuple(self.where))
        for name in ("min", "max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"quota {self.name}: {name} must be an integer, got {value!r}")
            if value < 0:
                raise ValueError(f"quota {self.name}: {name} must be >= 0, got {value}")
        if self.min > self.max:
            raise ValueError(f"quota {self.name}: min {self.min} is larger than max {self.max}")
        if not self.where:
            raise ValueError(f"quota {self.name}: the condition is empty")

    @property
    def name(self) -> str:
        return self.label or "quota"


@dataclass(frozen=True)
class QuotaOutcome:
    """What the drawn panel and the pool hold for one quota.

    Attributes
    ----------
    label : str
    min, max : int
    expected : float
        Expected true count of the drawn panel's members in the category (sum of their
        posterior probabilities).
    ci95 : (float, float)
        95% interval for the realised true count: normal approximation with the variance
        of the Poisson-binomial count plus the variance of the posteriors over a
        participant bootstrap of the reconstruction (law of total variance), clipped to
        ``[0, size]``.
    pool_expected : float
        Expected number of eligible candidates truly in the category.
    pool_ci95 : (float, float)
        95% interval for that number, as ``ci95`` over the candidates. Not the
        reconstruction's percentile interval of the count (``ConditionPosterior.ci95``):
        that one also holds the variance of the pool's true count, fixed once the pool
        is drawn, and covered 97% (eps 2) and 100% (eps 4) of pools' true counts where
        this one covered 93-96% (tests/reconstruction/algorithms/test_panel_intervals.py).
    expected_outside : float
        Expected number of the drawn panel's seats by which the realised true count falls
        outside ``[min, max]`` (normal approximation with the variance of ``ci95``: the
        Poisson-binomial count's plus the posteriors' replicate variance).
    outside_level : float
        The bound on expected seats outside the band that every panel of the lottery
        meets for this quota (``inf``: only the expected count is kept in the band; see
        ``max_outside`` of :func:`select_panel`).
    """

    label: str
    min: int
    max: int
    expected: float
    ci95: tuple[float, float]
    pool_expected: float
    pool_ci95: tuple[float, float]
    expected_outside: float = math.nan
    outside_level: float = math.inf


@dataclass(frozen=True)
class PanelResult:
    """A panel drawn from a fair lottery over quota-satisfying panels.

    Attributes
    ----------
    rows : ndarray of intp
        Table rows of the panel members, ascending.
    reserves : ndarray of intp
        Table rows of the reserves, in the order they replace drop-outs.
    probabilities : ndarray of float, shape (n,)
        Every table row's probability of being selected by the lottery that was drawn
        (0 for ineligible rows and for candidates no quota-satisfying panel can hold).
    candidates : ndarray of intp
        Table rows of the eligible pool.
    quotas : tuple of QuotaOutcome
    objective : str
    optimum : float
        The smallest selection probability among selectable candidates in the optimal
        distribution (before rounding to the lottery).
    lottery_size : int
        ``m``: the lottery is uniform over ``m`` panels (with repetitions).
    lottery_draw : int
        Which of the ``m`` panels was drawn (0-based), from the seed.
    pool_estimate : float
        Estimated number of table rows that truly meet ``where`` (``n`` without it).
    pool_ci95 : (float, float)
    expected_eligible : float
        Expected number of panel members who truly meet ``where``.
    unselectable : int
        Eligible candidates that no quota-satisfying panel can include (probability 0).
    iterations : int
        Pricing problems solved (MILPs).
    type_of : ndarray of intp
        The type of each candidate (index into ``support``'s columns), in ``candidates``
        order.
    type_posteriors : ndarray, shape (n_types, n_quotas)
    support : ndarray of int, shape (n_panels, n_types)
        Seats per type of every distinct panel in the lottery.
    weights : ndarray of float, shape (n_panels,)
        The lottery's probability of each panel (multiples of ``1 / lottery_size``).
    guarantee : str
        Plain statement of what the quotas guarantee (a :class:`Note`: English text
        carrying its template and parameters, see :func:`guarantee_statement`).
    lp_bound : float
        The LP relaxation's bound (:func:`_lp_bound`) on the lowest selection probability
        of any lottery over the panels these posteriors and bands allow: when it is far
        below ``size / N``, the quotas themselves (not the solver or its time budget) force
        unequal probabilities.
    """

    rows: NDArray[np.intp]
    reserves: NDArray[np.intp]
    probabilities: NDArray[np.float64]
    candidates: NDArray[np.intp]
    quotas: tuple[QuotaOutcome, ...]
    objective: str
    optimum: float
    lottery_size: int
    lottery_draw: int
    pool_estimate: float
    pool_ci95: tuple[float, float]
    expected_eligible: float
    unselectable: int
    iterations: int
    type_of: NDArray[np.intp]
    type_posteriors: NDArray[np.float64]
    support: NDArray[np.int64]
    weights: NDArray[np.float64]
    guarantee: str
    notes: tuple[str, ...] = field(default=())
    lp_bound: float = math.inf

    @property
    def selection_summary(self) -> dict[str, float]:
        """Min, median and max selection probability over the eligible candidates."""
        values = self.probabilities[self.candidates]
        return {
            "min": float(values.min()),
            "median": float(np.median(values)),
            "max": float(values.max()),
        }


class InfeasibleQuotas(ValueError):
    """No panel's expected true counts meet every quota.

    Attributes
    ----------
    conflicting : tuple of int
        Indices of a minimal set of quotas that cannot hold together (removing any one of
        them makes the rest feasible).
    relaxation : tuple of (int, int)
        For every quota, the ``(min, max)`` of the smallest relaxation that is feasible
        (fewest seats added to the bands in total); unchanged quotas keep their bounds.
    message : Message or str
        The explanation, translatable (``str()`` of the error is its English text).
    complete : bool
        ``False`` when ``max_seconds`` cut the diagnosis short: ``conflicting`` then
        conflicts but may not be minimal (or, when feasibility itself was not decided in
        time, is empty), and ``relaxation`` is feasible but may not be the smallest (or
        is unchanged: none found in time). The message says so.
    """

    def __init__(
        self,
        message: Message | str,
        conflicting: tuple[int, ...],
        relaxation: tuple[tuple[int, int], ...],
        *,
        complete: bool = True,
    ) -> None:
        super().__init__(str(message))
        self.message = message
        self.conflicting = conflicting
        self.relaxation = relaxation
        self.complete = complete


class TooManyTypes(ValueError):
    """More candidate types than ``PanelOptions.max_types`` allows (raised before any MILP).

    The solver's work grows with the square of the types (the master LP has one row per
    type and the pricing MILPs one variable per type; bench/bench_cost.py), so the caller's
    cost model turns its time budget into a number of types and refuses a panel whose
    quotas split the candidates finer than that, instead of running it past the limit.

    Attributes
    ----------
    types : int
        The candidate types the quotas' posteriors make (after merging near-equal ones).
    max_types : int
        The limit that was passed.
    """

    def __init__(self, types: int, max_types: int) -> None:
        super().__init__(f"{types} candidate types, more than max_types={max_types}")
        self.types = int(types)
        self.max_types = int(max_types)


class PanelCancelled(Exception):
    """Raised by a ``progress`` callback to stop a long run (re-raised unchanged)."""


Progress = Callable[[float], None]


@dataclass(frozen=True)
class PanelOptions:
    """The options of :func:`~.selection.select_panel`, checked once at the boundary.

    Attributes
    ----------
    reserves : int
        Replacements drawn in order after the panel, each among the remaining candidates
        with probability proportional to their selection probability.
    objective : {"maximin", "nash", "leximin"}
    lottery_size : int
        ``m`` of the uniform lottery (10,000: a draw of four decimal digits). Rounding the
        optimal distribution to multiples of ``1/m`` moves each panel's weight by less
        than ``1/m``; at m = 1,000 that cost 7-10% of the lowest selection probability on
        bench/bench_panel.py's pools of 1,000 / 30 (0.0297 -> 0.0270, a type holding one
        candidate gets a whole number of the m panels), at 10,000 under 1%.
    eligibility_threshold : float in (0, 1]
        Candidates with ``Pr(where | reported) >= eligibility_threshold`` form the pool.
    n_boot : int
        Bootstrap replicates of the reconstruction behind the intervals.
    tol, max_iter
        EM tolerance and iteration cap of the reconstructions.
    max_outside : float or None
        Every panel of the lottery keeps each quota's expected number of seats by which
        the realised true count falls outside the band at most this (for example 0.2),
        which tightens the band on the expected count by a margin that grows with the
        variance of the panel's true count. A quota for which no panel can do so gets the
        lowest of 1.5, 2, 3 and 5 times the level that admits panels, or its plain band
        (stated in ``notes`` and ``QuotaOutcome.outside_level``). ``None`` (default): plain
        bands. Off by default: on bench/bench_panel.py's pools of 1,000 at eps = 4 it made
        the run several times slower and the lottery less fair without bringing the
        realised counts closer to the bands, because it favours candidates with extreme
        posteriors, which are the least reliable ones (the reconstruction's tails).
    max_seconds : float or None
        The wall-clock safety net, counted from the start of the call (posteriors
        included: the worker's time limit counts them too): past it, the optimisation,
        the covering step (the candidates not yet in a panel get probability 0), the
        tightened-bands search and the refusal's diagnosis stop. Where that happens
        depends on the machine's load, so when it fires the notes say that this draw
        may not be reproducible from its seed (and, when it stopped the first check on
        merged types, that the lottery was built over exact types instead). The
        lottery, the draw and the intervals come after it (well under a second at pools
        of 10,000). ``None``: no clock.
    merge : bool
        Merge candidates whose posteriors differ by at most ``min(0.05, 0.5 / size)``
        per quota into one type (:func:`~.posteriors._merge_types`; bands are imposed on
        the members' extreme posteriors, so every panel still meets them). ``False``: one
        type per distinct posterior vector.
    max_rounds : int or None
        The deterministic work limit: the column generation solves at most this many
        pricing problems (:data:`~.limits.MAX_ROUNDS` by default), and every MILP stops
        at a fixed number of branch-and-bound nodes, so the lottery, and the panel the
        seed draws from it, are a function of the data, the request and the seed alone,
        whatever the machine's load. When the rounds run out, every panel of the lottery
        still meets the quotas; only the fairness may fall short of the optimum, and
        ``notes`` state the proven bound on the optimal lowest probability. ``None``: run
        to the gap.
    max_types : int or None
        Refuse (:class:`TooManyTypes`) a problem of more candidate types than this, once
        the types are known and before any MILP (the worker's cost model,
        reconstruction/cost.py). ``None``: no limit.

    Raises
    ------
    ValueError
        An option out of its range.
    """

    reserves: int = 0
    objective: Objective = "maximin"
    lottery_size: int = 10_000
    eligibility_threshold: float = 0.5
    n_boot: int = 100
    tol: float | None = None
    max_iter: int = 10_000
    max_outside: float | None = None
    max_seconds: float | None = None
    merge: bool = True
    max_rounds: int | None = limits.MAX_ROUNDS
    max_types: int | None = None

    def __post_init__(self) -> None:
        reserves = self.reserves
        if (
            isinstance(reserves, bool)
            or not isinstance(reserves, (int, np.integer))
            or reserves < 0
        ):
            raise ValueError(f"reserves must be a non-negative integer, got {reserves!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(
                f"unknown objective {self.objective!r}; use one of {', '.join(OBJECTIVES)}"
            )
        if not isinstance(self.lottery_size, (int, np.integer)) or self.lottery_size < 1:
            raise ValueError(f"lottery_size must be a positive integer, got {self.lottery_size!r}")
        if not 0.0 < self.eligibility_threshold <= 1.0:
            raise ValueError(
                f"eligibility_threshold must be in (0, 1], got {self.eligibility_threshold}"
            )
        if self.n_boot < 2:
            raise ValueError(f"n_boot must be >= 2, got {self.n_boot}")
        if self.max_types is not None and not self.max_types >= 1:
            raise ValueError(f"max_types must be positive or None, got {self.max_types!r}")
        if self.max_outside is not None and not self.max_outside > 0:
            raise ValueError(f"max_outside must be positive or None, got {self.max_outside!r}")
