"""Fair panel selection (sortition) with quotas on privacy-preserved attributes.

Pure module: numpy and scipy only (HiGHS through :mod:`scipy.optimize`).

001_28af1923c784b480.txt, Section IV-B draws the participants of a deliberative
consultation from the candidates that meet a condition. Citizens' assemblies add quotas
("14-16 women, 5-9 aged 16-29") and ask for a lottery whose selection probabilities are
known and as equal as the quotas allow. The reference method is Flanigan, Gölz, Gupta,
Hennig and Procaccia, "Fair algorithms for selecting citizens' assemblies", Nature 596,
548-552 (2021): find a probability distribution over quota-satisfying panels that
maximises the smallest selection probability (maximin), the product of the probabilities
(Nash welfare) or the whole sorted vector of probabilities (LEXIMIN), by column generation
over panels, then draw one panel from it. Flanigan, Kehne and Procaccia, "Fair sortition
made transparent" (NeurIPS 2021), round that distribution to a uniform lottery over ``m``
panels so that the draw can be shown in public.

Where and why this module differs from Flanigan et al.
------------------------------------------------------
* **Attributes are distorted.** Flanigan et al. see every candidate's true features. Here
  a candidate has only a *posterior* probability of each quota category: ``p[i, j] =
  Pr(candidate i truly meets quota j's condition | i's reported values)``, computed from
  the joint reconstruction of the quota's attributes exactly as ``posterior`` sampling in
  :mod:`reconstruction.algorithms.queries` computes it (EM over the product channel,
  continuous attributes cut into intervals, so age bands come from noisy ages). A quota
  ``min <= count <= max`` is imposed on the panel's **expected true count** ``sum_{i in
  panel} p[i, j]``. The realised true count is random (a Poisson-binomial variable), so
  the quotas hold in expectation only; :class:`QuotaOutcome` gives the 95% interval.
* **Bands tightened for the variance of the true count.** Given the reported answers, a
  panel's true count in a quota is a sum of independent Bernoulli variables whose mean
  and variance are both linear in the seats. Keeping the *expected* count in the band
  still lets the realised count fall outside it by about a seat at strong distortion, so
  every panel of the lottery must also keep the expected number of seats outside each
  band at most ``max_outside`` (normal approximation, the margin's tangent in the
  variance making it one more linear row of the MILPs, see :func:`_tightened`). Flanigan
  et al. need nothing of the kind: their counts are exact.
* **Types instead of people.** Candidates whose posterior vectors are equal (the same
  reported cells) are interchangeable, so the panels are vectors of seats per *type* and
  the linear programmes have one row per type, not per person. Within a type the seats go
  to candidates drawn uniformly at random with the request's seed, which keeps every
  candidate of a type at the same probability (any optimal distribution can be
  symmetrised this way, so nothing is lost). This is what makes pools of 10,000 solvable
  in minutes with HiGHS where the per-person formulation takes hours.
* **Near-equal types merged.** A continuous attribute gives nearly every reported value
  its own posterior, so candidates whose posteriors differ by at most ``min(0.05, 0.5 /
  size)`` per quota are merged (:func:`_merge_types`). Unlike an approximation, this
  cannot break a band: the lower edge is imposed on the type's smallest member posterior
  and the upper edge on its largest, so any members filling the seats keep every
  panel's expected counts within the bands; the cost is at most half a seat of band in
  total and some fairness (the test bounds it). ``merge=False`` turns it off.
* **A relaxation bound and a rounded warm start.** Flanigan et al. start the column
  generation from a covering set of panels and stop on the pricing MILP's dual bound.
  Here the LP relaxation over types (fractional expected seats per type, maximin
  level ``z`` with ``x_t >= z n_t``, :func:`_lp_bound`) bounds the optimum from above
  before any MILP, and hundreds of panels rounded from its seats (systematic rounding
  along types sorted by posteriors, quotas repaired by one-seat moves,
  :func:`_warm_start`) seed the master LP, so it starts near the optimum. The stopping
  rule is sortition-algorithms' own: a gap of 0.0005 in selection probability to the
  best proven bound (the relaxation's or a pricing MILP's), or 0.2% if larger.
* **LEXIMIN without Gurobi.** The LEXIMIN of Flanigan et al. solves a sequence of
  maximin programmes, fixing the probabilities whose dual values are positive; it runs
  here with HiGHS' LP solver (the reference implementation requires Gurobi). Nash welfare
  is maximised by fully corrective Frank-Wolfe steps over the panels found so far (the
  master problem is a mixture-weight likelihood, solved by its EM fixed point), instead
  of a conic solver.
* **Eligibility** (``where``) is also uncertain: candidates whose posterior probability
  of meeting it is at least ``eligibility_threshold`` (0.5) enter the pool; the result
  states how many panel members are expected to meet it truly.

Entry point: :func:`select_panel`; infeasible quotas raise :class:`InfeasibleQuotas` with
the conflicting quotas and the smallest feasible relaxation.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, brentq, linprog, milp
from scipy.special import ndtr

from privacy.mechanisms.messages import Message, Note, gettext_noop
from reconstruction.algorithms.queries import (
    Attribute,
    Condition,
    ConditionPosterior,
    condition_posteriors,
    table_size,
)
from reconstruction.algorithms.uncertainty import default_rng

__all__ = [
    "OBJECTIVES",
    "InfeasibleQuotas",
    "PanelResult",
    "Quota",
    "QuotaOutcome",
    "guarantee_statement",
    "select_panel",
]

Objective = Literal["maximin", "nash", "leximin"]
OBJECTIVES: tuple[str, ...] = ("maximin", "nash", "leximin")

_Z95 = 1.959963984540054
# A probability within this of the level counts as tight (LEXIMIN), and fixed levels are
# imposed with this slack so that LP round-off cannot make a later round infeasible.
_FIX_TOL = 1e-7
# Relative optimality gap of the column generation (maximin, leximin rounds) and of Nash.
_MAXIMIN_GAP = 2e-3
# Absolute gap in selection probability at which maximin has converged: sortition-
# algorithms' own stopping rule (``EPS = 0.0005`` in its maximin column generation), so
# "converged" means the same here as in the reference implementation.
_MAXIMIN_ABS_GAP = 5e-4
_NASH_GAP = 1e-4
# HiGHS' relative MIP gap in pricing: its dual bound stays valid, so the stopping test
# above stays sound; only the columns are slightly less than the best.
_PRICING_GAP = 1e-2
# Weight of the best duals so far in the smoothed pricing duals (Wentges smoothing).
_SMOOTHING = 0.5
# One-seat moves added as extra columns after each pricing MILP.
_NEIGHBOURS = 15
# Deterministic work limits (HiGHS run single-threaded, as scipy runs it, is deterministic
# for given options, so a run stopped by these is a function of the data, the request and
# the seed; a wall-clock limit is not: where it stops depends on the machine's load).
# Branch-and-bound nodes an exact pricing MILP may explore; its dual bound then still
# bounds the optimum.
_PRICING_NODES = 2_000
# Nodes a feasibility MILP (whether the quotas admit a panel; each test of the refusal's
# conflict search; the tightened-bands search) and the relaxation MILP may explore.
_DECIDE_NODES = 20_000
# A cached panel meets a band when its expected count is within this of the band: the
# MILPs' own feasibility tolerance (HiGHS' mip_feasibility_tolerance is 1e-6).
_MEETS_TOL = 1e-6
# Rounds per request: the covering step's panels and the column generation's pricing
# problems (MILP or "LP and fix"; every objective, LEXIMIN's programmes share them).
# Chosen on bench/bench_panel.py's pools of 1,000 / panel 30 so that a panel stays within
# its 10 s target on this 2-core machine (README, "What panels achieve").
_MAX_ROUNDS = 16
# Levels of expected seats outside a band tried, as multiples of ``max_outside``, before a
# quota keeps its plain band (:func:`_tighten`).
_OUTSIDE_STEPS = (1.0, 1.5, 2.0, 3.0, 5.0)
# Seconds a feasibility MILP may always take, even past max_seconds: whether the quotas
# admit a panel at all is asked once per request, and a small problem answers in
# milliseconds; past the deadline, the diagnosis and the tightening ask nothing more.
_DECIDE_FLOOR = 1.0
# Posterior vectors that agree to this many decimals form one type.
_TYPE_DECIMALS = 10
# Merged types (:func:`_merge_types`): members' posteriors may spread over at most
# ``_MERGE_SEATS / size`` per quota, so the bands lose at most ``_MERGE_SEATS`` seats in
# total to the conservative rows (a panel's worst-case shift), and much less in practice.
_MERGE_SEATS = 0.5
_MERGE_CAP = 0.05
# Panels rounded from the LP relaxation's expected seats to seed the column generation.
_WARM_PANELS = 400
_WARM_OFFSETS = 50  # panels per random order of the types (evenly spaced offsets)
_WARM_SEED = 0x5EA7_2021


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


class PanelCancelled(Exception):
    """Raised by a ``progress`` callback to stop a long run (re-raised unchanged)."""


# --------------------------------------------------------------------------- posteriors


def _count_interval(
    values: NDArray[np.float64], replicates: NDArray[np.float64], upper: float
) -> tuple[float, float, float]:
    """Expected true count of a set of rows and a 95% interval for the realised count.

    ``Var = sum p (1 - p)`` (the count given the posteriors is Poisson-binomial) ``+
    Var_boot(sum p)`` (the posteriors' own uncertainty): the law of total variance.
    """
    expected = float(values.sum())
    variance = float((values * (1.0 - values)).sum())
    if replicates.shape[0] > 1:
        variance += float(replicates.sum(axis=1).var(ddof=1))
    half = _Z95 * math.sqrt(max(variance, 0.0))
    return expected, max(0.0, expected - half), min(upper, expected + half)


# --------------------------------------------------------------------------- optimisation


@dataclass(frozen=True)
class _Problem:
    """Panels as seat vectors over types: ``x[t]`` in ``0..sizes[t]``, ``sum x = k``.

    The quota rows are ``lower <= posteriors.T x <= upper`` (the bands on expected true
    counts); ``tight`` adds rows ``tight_lower <= tight x <= tight_upper`` (the bands
    tightened for the variance of the realised counts, :func:`_tightened_rows`), used by
    the optimisation but not by the infeasibility diagnosis, which speaks of the bands.
    """

    sizes: NDArray[np.float64]  # (T,)
    posteriors: NDArray[np.float64]  # (T, q)
    size: int
    lower: NDArray[np.float64]  # (q,)
    upper: NDArray[np.float64]  # (q,)
    tight: NDArray[np.float64] | None = None  # (r, T)
    tight_lower: NDArray[np.float64] | None = None  # (r,)
    tight_upper: NDArray[np.float64] | None = None  # (r,)
    # Merged types (:func:`_merge_types`): the smallest and largest member posterior per
    # type and quota. The lower edge of a band is imposed on the smallest, the upper edge
    # on the largest, so every panel of members meets the bands whoever fills its seats.
    least: NDArray[np.float64] | None = None  # (T, q)
    most: NDArray[np.float64] | None = None  # (T, q)
    # The posteriors' own uncertainty per seat (:func:`_shared_variances`): a panel's
    # expected count varies over the reconstruction's replicates by about ``shared.T x``
    # (its variance, linearised at a panel drawn at random), added to the Bernoulli
    # variance by the tightened bands as the intervals add it (:func:`_count_interval`).
    shared: NDArray[np.float64] | None = None  # (T, q)

    def rows(
        self, active: NDArray[np.bool_] | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The quota rows ``(A, lo, hi)``, ``A`` of shape ``(rows, T)``.

        With ``active`` (a mask over quotas), only those quotas' plain bands.
        """
        keep = np.ones(self.lower.size, dtype=bool) if active is None else active
        if self.least is not None and self.most is not None:
            k = int(keep.sum())
            a = np.vstack([self.least[:, keep].T, self.most[:, keep].T])
            lo = np.concatenate([self.lower[keep], np.full(k, -math.inf)])
            hi = np.concatenate([np.full(k, math.inf), self.upper[keep]])
        else:
            a, lo, hi = self.posteriors[:, keep].T, self.lower[keep], self.upper[keep]
        if active is None and self.tight is not None:
            assert self.tight_lower is not None and self.tight_upper is not None
            a = np.vstack([a, self.tight])
            lo = np.concatenate([lo, self.tight_lower])
            hi = np.concatenate([hi, self.tight_upper])
        return a, lo, hi

    def constraints(self, active: NDArray[np.bool_] | None = None) -> list[LinearConstraint]:
        t = self.sizes.size
        result = [LinearConstraint(np.ones((1, t)), self.size, self.size)]
        a, lo, hi = self.rows(active)
        if a.shape[0]:
            result.append(LinearConstraint(a, lo, hi))
        return result

    def best_panel(
        self,
        weights: NDArray[np.float64],
        active: NDArray[np.bool_] | None = None,
        *,
        time_limit: float | None = None,
    ) -> NDArray[np.int64] | None:
        """The quota-satisfying panel maximising ``sum_t weights[t] x[t]`` (a MILP)."""
        return self.solve(weights, active, time_limit=time_limit)[0]

    def solve(
        self,
        weights: NDArray[np.float64],
        active: NDArray[np.bool_] | None = None,
        *,
        time_limit: float | None = None,
        force: int | None = None,
        gap: float | None = None,
        node_limit: int | None = None,
    ) -> tuple[NDArray[np.int64] | None, float]:
        """The MILP's best panel and its dual bound (an upper bound on every panel).

        ``force``: a type that must get a seat; ``gap``: HiGHS' relative MIP gap at which
        it may stop (the dual bound returned stays valid); ``node_limit``: the
        deterministic work limit (branch-and-bound nodes); ``time_limit``: the wall-clock
        safety net.
        """
        options: dict[str, float] = {} if time_limit is None else {"time_limit": time_limit}
        if node_limit is not None:
            options["node_limit"] = node_limit
        if gap is not None:
            options["mip_rel_gap"] = gap
        low = np.zeros(self.sizes.size)
        if force is not None:
            low[force] = 1.0
        result = milp(
            -weights,
            constraints=self.constraints(active),
            integrality=np.ones(self.sizes.size),
            bounds=Bounds(low, self.sizes),
            options=options,
        )
        if result.status == 2:  # infeasible
            return None, -math.inf
        if result.x is None and _limit_reached(result):
            return None, math.inf  # no panel (with that seat) found within the limits
        if result.x is None:
            raise RuntimeError(f"the panel MILP failed: {result.message}")
        dual = getattr(result, "mip_dual_bound", None)
        bound = float(-dual) if dual is not None and math.isfinite(dual) else float(-result.fun)
        return np.asarray(np.rint(result.x), dtype=np.int64), max(bound, float(-result.fun))

    def quick_panel(self, weights: NDArray[np.float64]) -> tuple[NDArray[np.int64] | None, float]:
        """A good quota-satisfying panel for ``weights``, not always the best ("LP and fix").

        The LP relaxation has a basic optimum with at most ``q + 1`` fractional seats
        (one per constraint); the integral seats are kept and a MILP over the fractional
        types alone places the rest. That MILP has a handful of variables, so this is
        one to two orders of magnitude faster than the full MILP. Returns the panel
        (``None`` when the fixed part leaves no feasible completion) and the relaxation's
        value, an upper bound on every panel's value.
        """
        t = self.sizes.size
        a, lo, hi = self.rows()
        has_hi, has_lo = np.isfinite(hi), np.isfinite(lo)
        relaxed = linprog(
            -weights,
            A_ub=np.vstack([a[has_hi], -a[has_lo]]),
            b_ub=np.concatenate([hi[has_hi], -lo[has_lo]]),
            A_eq=np.ones((1, t)),
            b_eq=[float(self.size)],
            bounds=np.column_stack([np.zeros(t), self.sizes]),
            method="highs",
        )
        if relaxed.status != 0:
            return None, math.inf
        bound = float(-relaxed.fun)
        x = np.asarray(relaxed.x, dtype=np.float64)
        fractional = np.abs(x - np.rint(x)) > 1e-7
        panel = np.asarray(np.rint(np.where(fractional, 0.0, x)), dtype=np.int64)
        if not fractional.any():
            return panel, bound
        fixed_counts = a @ panel
        sub = a[:, fractional]
        result = milp(
            -weights[fractional],
            constraints=[
                LinearConstraint(
                    np.ones((1, int(fractional.sum()))),
                    self.size - panel.sum(),
                    self.size - panel.sum(),
                ),
                LinearConstraint(sub, lo - fixed_counts, hi - fixed_counts),
            ],
            integrality=np.ones(int(fractional.sum())),
            bounds=Bounds(np.zeros(int(fractional.sum())), self.sizes[fractional]),
        )
        if result.x is None:
            return None, bound
        panel[fractional] = np.asarray(np.rint(result.x), dtype=np.int64)
        return panel, bound

    def feasible(self, active: NDArray[np.bool_] | None = None) -> bool:
        return self.best_panel(np.zeros(self.sizes.size), active) is not None

    def find(
        self, active: NDArray[np.bool_] | None = None, *, deadline: float | None = None
    ) -> tuple[bool | None, NDArray[np.int64] | None]:
        """Whether a panel exists, and one when it does; ``None`` when the MILP neither
        found one nor proved there is none within :data:`_DECIDE_NODES` branch-and-bound
        nodes (deterministic) or before ``deadline`` (``time.monotonic()``, the safety
        net; at least :data:`_DECIDE_FLOOR` seconds are always allowed)."""
        limit = None if deadline is None else max(_DECIDE_FLOOR, deadline - time.monotonic())
        panel, bound = self.solve(
            np.zeros(self.sizes.size), active, time_limit=limit, node_limit=_DECIDE_NODES
        )
        if panel is not None:
            return True, panel
        return (None if bound == math.inf else False), None

    def decide(
        self, active: NDArray[np.bool_] | None = None, *, deadline: float | None = None
    ) -> bool | None:
        """Whether a panel exists (:meth:`find` without the panel)."""
        return self.find(active, deadline=deadline)[0]

    def meets(self, panel: NDArray[np.int64], active: NDArray[np.bool_] | None = None) -> bool:
        """Whether ``panel`` meets the (active) quotas, to HiGHS' feasibility tolerance."""
        if int(panel.sum()) != self.size or np.any(panel > self.sizes):
            return False
        a, lo, hi = self.rows(active)
        counts = a @ panel
        return bool(np.all(counts >= lo - _MEETS_TOL) and np.all(counts <= hi + _MEETS_TOL))


_HIGHS_STATUS = re.compile(r"HiGHS Status (\d+)")
# HiGHS model statuses of a run stopped by a limit: time (13), iterations (14), and the
# node limit (``mip_max_nodes``), which HiGHS reports as its solution limit (16); scipy
# maps the first two to status 1 and the last to status 4, "not recognized".
_LIMIT_STATUSES = frozenset({13, 14, 16})


def _limit_reached(result: OptimizeResult) -> bool:
    """Whether a :func:`scipy.optimize.milp` run stopped at a node, time or iteration
    limit (rather than failing)."""
    if result.status == 1:
        return True
    found = _HIGHS_STATUS.search(str(result.message))
    return result.status == 4 and found is not None and int(found.group(1)) in _LIMIT_STATUSES


def _shortfall(z: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """``E[(Z - z)+]`` for a standard normal ``Z``: ``phi(z) - z (1 - Phi(z))``."""
    z = np.asarray(z, dtype=np.float64)
    return np.asarray(np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) - z * ndtr(-z))


def _margin(tau: float, variance: float) -> float:
    """Distance inside a band edge at which a count has ``tau`` expected seats beyond it.

    A count ``C`` with mean ``mu`` and variance ``s`` has ``E[(L - C)+] = sigma *
    psi((mu - L) / sigma)`` expected seats below ``L`` (:func:`_expected_outside`: the
    normal approximation, continuity corrected); ``mu - L >= _margin(tau, s)`` keeps that
    at most ``tau``.
    """
    sigma = math.sqrt(variance)
    target = tau / sigma
    z = brentq(lambda v: float(_shortfall(v)) - target, -target - 10.0, 40.0, xtol=1e-10)
    return sigma * float(z)


def _margin_line(tau: float, variance: float) -> tuple[float, float]:
    """``(a, b)`` of the tangent ``a + b s`` to ``_margin(tau, s)`` at ``s = variance``.

    The margin is concave in the variance where it matters, so the tangent lies above it
    and the linear row built from it is conservative; it is exact at ``variance``.
    """
    h = 1e-4 * variance
    slope = (_margin(tau, variance + h) - _margin(tau, variance - h)) / (2.0 * h)
    return _margin(tau, variance) - slope * variance, slope


def _expected_outside(expected: float, variance: float, low: int, high: int, size: int) -> float:
    """Expected seats of an integer count outside ``[low, high]`` (normal approximation).

    For an integer count ``C`` with mean ``mu`` and standard deviation ``sigma``,
    ``E[(L - C)+] = sum_{k >= 1} P(C <= L - k)``. With the continuity-corrected normal
    ``P(C <= m) ~ Phi((m + 1/2 - mu) / sigma)`` and the sum over ``k`` taken as the
    integral from ``k = 1/2`` (the midpoint rule), this is ``sigma * psi((mu - L) /
    sigma)``, ``psi(z) = E[(Z - z)+]`` (:func:`_shortfall`); above ``U`` likewise
    ``sigma * psi((U - mu) / sigma)``. The form used before (``mu - L + 1/2``) applied
    the half-seat correction the wrong way: on Poisson-binomial counts of 30 seats with
    variance 1.6-6.7 and the mean inside a band of +-2 seats (exact 0.06-1.13 seats
    outside) it gave 0.50-0.78 times the exact figure, this form gives 1.01-1.26 times it
    (conservative, most at small variance; tests/reconstruction/algorithms/test_panel.py
    checks it against the exact convolution).
    """
    if variance <= 1e-12:
        return max(low - expected, 0.0) + max(expected - high, 0.0)
    sigma = math.sqrt(variance)
    total = 0.0
    if low > 0:
        total += sigma * float(_shortfall((expected - low) / sigma))
    if high < size:
        total += sigma * float(_shortfall((high - expected) / sigma))
    return total


def _shared_variances(
    posteriors: Sequence[ConditionPosterior],
    candidates: NDArray[np.intp],
    type_of: NDArray[np.intp],
    sizes: NDArray[np.float64],
    size: int,
) -> NDArray[np.float64]:
    """Per type and quota, each seat's share of the variance of a panel's expected count
    over the reconstruction's bootstrap replicates.

    ``Var_r(sum_i p_ri)`` over a panel is quadratic in the seats; its tangent at a panel
    drawn at random from the ``N`` candidates (weights ``size / N``) is linear:
    ``sum_i x_i c_i`` with ``c_i = (size / N) Cov_r(p_ri, S_r)``, ``S_r`` the pool's sum
    of replicate ``r``, and it equals the variance at that panel. ``c`` is averaged over a
    type's members. Without replicates (``n_boot`` below 2), zeros.
    """
    shared = np.zeros((sizes.size, len(posteriors)))
    n = max(int(candidates.size), 1)
    for j, post in enumerate(posteriors):
        replicates = post.cell_replicates
        if replicates.shape[0] < 2:
            continue
        cells = post.cell_of[candidates]
        weights = np.bincount(cells, minlength=replicates.shape[1]).astype(np.float64)
        totals = replicates @ weights
        centred = replicates - replicates.mean(axis=0)
        covariance = centred.T @ (totals - totals.mean()) / (replicates.shape[0] - 1)
        per_candidate = (size / n) * covariance[cells]
        shared[:, j] = np.bincount(type_of, weights=per_candidate, minlength=sizes.size) / (
            np.maximum(sizes, 1.0)
        )
    return shared


def _tightened(problem: _Problem, levels: NDArray[np.float64]) -> _Problem:
    """The problem with each quota's band tightened for its realised count's variance.

    Given the reported answers, a panel's true count in quota ``j`` is a sum of
    independent Bernoulli variables: mean ``mu = sum_t x_t p_tj`` and variance ``s =
    sum_t x_t p_tj (1 - p_tj)``, both linear in the seats ``x``. The posteriors are
    estimates themselves: with ``problem.shared`` the variance of ``mu`` over the
    reconstruction's replicates, linearised (``sum_t x_t shared_tj``), is added, by the
    law of total variance as in the result's intervals (:func:`_count_interval`); without
    it, a reconstruction error shared by the whole pool (a band's share off by 5-10% at
    n = 1,000 from noisy ages) moved the realised counts outside bands the Bernoulli
    variance alone kept them in. Keeping the expected
    seats outside the band at most ``levels[j]`` (split between the two edges) asks
    ``mu - L >= margin(s)`` and ``U - mu >= margin(s)`` (:func:`_expected_outside`'s
    approximation); the margin is
    replaced by its tangent at the variance of a panel drawn at random from the pool
    (:func:`_margin_line`), which turns each edge into one linear row of the MILPs.
    Infinite levels leave a quota's band as it is.
    """
    variances = problem.posteriors * (1.0 - problem.posteriors)
    if problem.shared is not None:
        variances = variances + problem.shared
    rows: list[NDArray[np.float64]] = []
    lows: list[float] = []
    highs: list[float] = []
    total = float(problem.sizes.sum())
    for j, level in enumerate(levels):
        if not math.isfinite(level):
            continue
        sides = int(problem.lower[j] > 0) + int(problem.upper[j] < problem.size)
        typical = problem.size * float(problem.sizes @ variances[:, j]) / total
        if sides == 0 or typical <= 1e-9:
            continue
        a, b = _margin_line(float(level) / sides, typical)
        if problem.lower[j] > 0:
            rows.append(problem.posteriors[:, j] - b * variances[:, j])
            lows.append(float(problem.lower[j]) + a)
            highs.append(math.inf)
        if problem.upper[j] < problem.size:
            rows.append(problem.posteriors[:, j] + b * variances[:, j])
            lows.append(-math.inf)
            highs.append(float(problem.upper[j]) - a)
    if not rows:
        return problem
    return dataclasses.replace(
        problem,
        tight=np.vstack(rows),
        tight_lower=np.asarray(lows),
        tight_upper=np.asarray(highs),
    )


def _tighten(
    problem: _Problem, max_outside: float, deadline: float | None = None
) -> tuple[_Problem, NDArray[np.float64], bool]:
    """The tightest bands (per quota, on a ladder of levels) that still admit a panel.

    First every quota at ``max_outside``; when no panel meets them all, each quota alone
    finds the lowest level of ``max_outside * _OUTSIDE_STEPS`` that admits a panel, then
    all tightened quotas are loosened one step at a time until a panel exists (infinite
    level: the plain band, which is feasible by then).

    ``deadline`` (``time.monotonic()``, from ``max_seconds``): a level whose feasibility
    is not decided in time counts as infeasible, and once the deadline has passed no
    further level is tried (the quotas not reached keep their plain bands; if the levels
    found so far do not admit a panel either, every band is plain). The third value says
    whether the deadline cut the search short.
    """
    q = problem.lower.size
    levels = np.full(q, float(max_outside))
    candidate = _tightened(problem, levels)
    if candidate.decide(deadline=deadline):
        return candidate, levels, False

    def late() -> bool:
        return deadline is not None and time.monotonic() > deadline

    stopped = False
    ladder = [max_outside * step for step in _OUTSIDE_STEPS] + [math.inf]
    steps = np.full(q, len(ladder) - 1)
    for j in range(q):
        for k, level in enumerate(ladder[:-1]):
            if late():
                stopped = True
                break
            trial = np.full(q, math.inf)
            trial[j] = level
            if _tightened(problem, trial).decide(deadline=deadline):
                steps[j] = k
                break
    while True:
        levels = np.array([ladder[k] for k in steps])
        if not np.isfinite(levels).any():
            return problem, levels, stopped
        if late():
            return problem, np.full(q, math.inf), True
        candidate = _tightened(problem, levels)
        if candidate.decide(deadline=deadline):
            return candidate, levels, stopped
        steps = np.minimum(steps + 1, len(ladder) - 1)


@dataclass(frozen=True)
class _Relaxed:
    """The relaxation MILP's answer (:func:`_relaxation`).

    ``slack``: ``down_j`` then ``up_j`` per quota (all 0 when none was found);
    ``panel``: the seats of a panel meeting the relaxed bands (``None``: none found);
    ``optimal``: the slack is proven the smallest; ``infeasible``: ``True`` when the plain
    bands are proven to admit no panel (the MILP's dual bound, or its optimum, is at least
    one seat), ``False`` when a panel meets them (no slack), ``None`` when undecided.
    """

    slack: list[int]
    panel: NDArray[np.int64] | None
    optimal: bool
    infeasible: bool | None


def _relaxation(problem: _Problem, deadline: float | None = None) -> _Relaxed:
    """Integer relaxations ``(down_j, up_j)`` of the bands with the fewest seats in total.

    Variables: seats per type, then ``down`` and ``up`` per quota; minimise their sum
    subject to ``min_j - down_j <= sum_t p[t, j] x[t] <= max_j + up_j`` (an elastic
    programme, Chinneck, "Feasibility and Infeasibility in Optimization", 2008, ch. 6).
    It stops at :data:`_DECIDE_NODES` nodes (the work limit) or, with ``deadline``
    (``time.monotonic()``), at the safety net (at least :data:`_DECIDE_FLOOR` seconds);
    then its best relaxation found is feasible but perhaps not the smallest. Every slack
    costs a whole seat, so a dual bound of at least half a seat proves the plain bands
    infeasible even when the MILP stops early; an optimum of 0 is a panel meeting them.
    """
    t, q = problem.sizes.size, problem.lower.size
    cost = np.concatenate([np.zeros(t), np.ones(2 * q)])
    rows = np.zeros((2 * q + 1, t + 2 * q))
    rows[0, :t] = 1.0
    rows[1 : q + 1, :t] = problem.posteriors.T
    rows[1 : q + 1, t : t + q] = np.eye(q)  # + down_j >= min_j
    rows[q + 1 :, :t] = problem.posteriors.T
    rows[q + 1 :, t + q :] = -np.eye(q)  # - up_j <= max_j
    lower = np.concatenate([[problem.size], problem.lower, np.full(q, -np.inf)])
    upper = np.concatenate([[problem.size], np.full(q, np.inf), problem.upper])
    options: dict[str, float] = {"node_limit": _DECIDE_NODES}
    if deadline is not None:
        options["time_limit"] = max(_DECIDE_FLOOR, deadline - time.monotonic())
    result = milp(
        cost,
        constraints=[LinearConstraint(rows, lower, upper)],
        integrality=np.ones(t + 2 * q),
        bounds=Bounds(
            np.zeros(t + 2 * q),
            np.concatenate([problem.sizes, problem.lower, np.full(q, problem.size)]),
        ),
        options=options,
    )
    dual = getattr(result, "mip_dual_bound", None)
    proven = dual is not None and math.isfinite(dual) and dual >= 0.5
    if result.x is None and _limit_reached(result):  # no relaxation found within the limits
        return _Relaxed([0] * (2 * q), None, False, True if proven else None)
    if result.x is None:
        raise RuntimeError(f"the relaxation MILP failed: {result.message}")
    slack = [round(float(v)) for v in result.x[t:]]
    panel = np.asarray(np.rint(result.x[:t]), dtype=np.int64)
    optimal = result.status == 0
    infeasible: bool | None = True if (proven or (sum(slack) > 0 and optimal)) else None
    if sum(slack) == 0:
        infeasible = False
    return _Relaxed(slack, panel, optimal, infeasible)


def _conflict(
    problem: _Problem,
    order: Sequence[int],
    panels: list[NDArray[np.int64]],
    deadline: float | None = None,
) -> tuple[tuple[int, ...], bool, bool]:
    """A minimal set of quotas that admits no panel, by the additive method.

    The whole set of quotas must be known to admit no panel. The additive method
    (Tamiz, Mardle and Jones 1996; Chinneck 2008, section 2.2) grows ``T`` (the conflict
    found so far): it adds the quotas in ``order`` to ``T`` one at a time until no
    panel meets them; the last one added belongs to the conflict, joins ``T``, and the
    search restarts with the quotas before it; it ends when ``T`` itself admits no panel.
    Every quota ``c`` of the result was added while ``T`` with the quotas before ``c``
    admitted a panel, so dropping any one quota leaves a feasible set: the result is
    minimal. Checks that find a panel are cheap; proofs that none exists are the costly
    MILPs, and the method needs about one per member of the conflict, on small sets when
    ``order`` starts with the likely culprits (the deletion filter it replaces proved
    infeasibility once per quota not in the conflict, each on nearly every quota).

    Each check first asks ``panels`` (panels found so far: one meeting a set meets its
    subsets) and the sets proven infeasible (their supersets are too), then a MILP of
    at most :data:`_DECIDE_NODES` nodes. A check it leaves undecided counts as "no
    panel" (the quota joins ``T``), so ``T`` may then be larger than needed; if ``T``
    is not proven infeasible in the end, the smallest set proven so is returned.

    Returns the conflict (sorted indices), whether it is proven minimal, and whether
    ``deadline`` (``time.monotonic()``, the safety net) stopped the search.
    """
    q = problem.lower.size
    proven: list[frozenset[int]] = [frozenset(range(q))]
    undecided = False

    def check(members: Sequence[int]) -> bool | None:
        nonlocal undecided
        chosen = frozenset(members)
        if any(known <= chosen for known in proven):
            return False
        active = np.zeros(q, dtype=bool)
        active[list(chosen)] = True
        if any(problem.meets(panel, active) for panel in panels):
            return True
        decided, panel = problem.find(active, deadline=deadline)
        if panel is not None:
            panels.append(panel)
        elif decided is False:
            proven.append(chosen)
        else:
            undecided = True
        return decided

    def late() -> bool:
        return deadline is not None and time.monotonic() > deadline

    found: list[int] = []
    rest = list(order)
    while True:
        if late():
            break
        if check(found) is False:
            return tuple(sorted(found)), not undecided, False
        trial = list(found)
        for i, quota in enumerate(rest):
            if late():
                break
            trial.append(quota)
            if check(trial) is not True:
                found.append(quota)
                rest = rest[:i]
                break
        else:
            break  # every quota added and a panel still found: an undecided check misled
    smallest = min(proven, key=lambda known: (len(known), sorted(known)))
    return tuple(sorted(smallest)), False, late()


def _infeasible(
    problem: _Problem,
    quotas: Sequence[Quota],
    relaxed: _Relaxed,
    deadline: float | None = None,
    max_seconds: float | None = None,
) -> InfeasibleQuotas:
    """The refusal: a minimal conflicting set of quotas and the smallest relaxation.

    ``relaxed``: :func:`_relaxation` of ``problem``, whose bands are known to admit no
    panel. Every conflict contains a quota that the smallest relaxation moves (relaxing
    those admits a panel), so the conflict search (:func:`_conflict`) tries them first,
    then the other quotas on their attributes (bands of one attribute conflict through
    their sum), then the rest; the relaxation's panel is its first cached panel.

    Both stop at deterministic work limits (MILP nodes), so the refusal is a function of
    the data and the request; the message says when a limit left the conflict possibly
    not the fewest or the relaxation possibly not the smallest. ``deadline``
    (``time.monotonic()``, from ``max_seconds``) is the safety net: past it the search
    stops with the smallest set proven to conflict, and the message says so.
    """
    q = len(quotas)
    moved = [j for j in range(q) if relaxed.slack[j] or relaxed.slack[q + j]]
    attributes = [frozenset(c.attribute for c in quota.where) for quota in quotas]
    near = frozenset().union(*(attributes[j] for j in moved))
    order = (
        moved
        + [j for j in range(q) if j not in moved and attributes[j] & near]
        + [j for j in range(q) if j not in moved and not attributes[j] & near]
    )
    panels = [] if relaxed.panel is None else [relaxed.panel]
    conflicting, minimal, clock = _conflict(problem, order, panels, deadline)
    clock = clock or (not relaxed.optimal and deadline is not None and time.monotonic() > deadline)
    slack = relaxed.slack
    relaxation = tuple((quotas[j].min - slack[j], quotas[j].max + slack[q + j]) for j in range(q))
    names: Message | str = ", ".join(_quota_name(quotas, j) for j in conflicting) or Message(
        gettext_noop("the panel size")
    )
    changes = _relaxation_changes(quotas, slack)
    message = Message(
        gettext_noop(
            "no panel of %(size)s meets the quotas on expected true counts; these quotas "
            "conflict: %(names)s. Smallest feasible relaxation: %(changes)s"
        ),
        {
            "size": problem.size,
            "names": names,
            "changes": "; ".join(changes)
            if changes
            else Message(gettext_noop("none found within the panel size")),
        },
    )
    if not (minimal and relaxed.optimal):
        what = Message(
            gettext_noop(
                "the conflicting quotas may not be the fewest, the relaxation may "
                "not be the smallest"
            )
        )
        if minimal:
            what = Message(gettext_noop("the relaxation may not be the smallest"))
        elif relaxed.optimal:
            what = Message(gettext_noop("the conflicting quotas may not be the fewest"))
        if clock:
            message = Message(
                gettext_noop(
                    "%(diagnosis)s (diagnosis stopped at max_seconds=%(seconds)s: %(what)s; "
                    "where the clock stops it depends on the machine's load, so this refusal "
                    "may not be reproducible)"
                ),
                {
                    "diagnosis": message,
                    "seconds": f"{max_seconds:g}" if max_seconds is not None else "?",
                    "what": what,
                },
            )
        else:
            message = Message(
                gettext_noop(
                    "%(diagnosis)s (the diagnosis reached its work limit of %(nodes)s "
                    "branch-and-bound nodes per MILP: %(what)s)"
                ),
                {"diagnosis": message, "nodes": f"{_DECIDE_NODES}", "what": what},
            )
    return InfeasibleQuotas(message, conflicting, relaxation, complete=minimal and relaxed.optimal)


def _relaxation_changes(quotas: Sequence[Quota], slack: Sequence[int]) -> list[str]:
    """``name: min-max -> min'-max'`` for each quota a relaxation's ``slack`` moves."""
    q = len(quotas)
    return [
        f"{_quota_name(quotas, j)}: {quota.min}-{quota.max} -> "
        f"{quota.min - slack[j]}-{quota.max + slack[q + j]}"
        for j, quota in enumerate(quotas)
        if slack[j] or slack[q + j]
    ]


def _undecided(
    quotas: Sequence[Quota],
    max_seconds: float | None,
    deadline: float | None,
    relaxed: _Relaxed | None = None,
) -> InfeasibleQuotas:
    """The refusal when no panel meeting the quotas was found and they were not proven
    infeasible either: within the work limit (reproducible), or before ``deadline``
    (``time.monotonic()``, from ``max_seconds``) passed.

    ``relaxed``: :func:`_relaxation` of the same problem. When it stopped at the limit
    with a relaxation that admits a panel (its incumbent, slack in whole seats), the
    refusal proposes that relaxation, saying it may not be the smallest (the elastic
    programme's first feasible point, Chinneck 2008, ch. 6), as :func:`_infeasible` does;
    ``relaxation`` then holds its bands. Otherwise the bands are returned unchanged.
    """
    clock = deadline is not None and time.monotonic() > deadline
    found = relaxed is not None and relaxed.panel is not None and sum(relaxed.slack) > 0
    if clock:
        message = Message(
            gettext_noop(
                "no panel meeting the quotas on expected true counts was found within "
                "max_seconds=%(seconds)s, nor was it proven that none exists; widen the "
                "quotas or allow more time"
            ),
            {"seconds": f"{max_seconds:g}" if max_seconds is not None else "?"},
        )
    else:
        message = Message(
            gettext_noop(
                "no panel meeting the quotas on expected true counts was found within the "
                "work limit of %(nodes)s branch-and-bound nodes per MILP, nor was it proven "
                "that none exists; widen the quotas"
            ),
            {"nodes": f"{_DECIDE_NODES}"},
        )
    relaxation = tuple((qt.min, qt.max) for qt in quotas)
    if found:
        assert relaxed is not None
        q = len(quotas)
        relaxation = tuple(
            (qt.min - relaxed.slack[j], qt.max + relaxed.slack[q + j])
            for j, qt in enumerate(quotas)
        )
        message = Message(
            gettext_noop(
                "%(undecided)s. A feasible relaxation was found before the limit (it may "
                "not be the smallest): %(changes)s"
            ),
            {
                "undecided": message,
                "changes": "; ".join(_relaxation_changes(quotas, relaxed.slack)),
            },
        )
    return InfeasibleQuotas(message, (), relaxation, complete=False)


def _check_feasible(
    problem: _Problem,
    quotas: Sequence[Quota],
    deadline: float | None = None,
    max_seconds: float | None = None,
) -> None:
    """Return when a panel meets the bands of ``problem`` (exact types); else raise the
    refusal: :func:`_infeasible` when none is proven to exist, :func:`_undecided` (with
    any relaxation found on the way) when the work limit or the clock left it open.

    The relaxation MILP decides feasibility (no slack: a panel) and, when the bands admit
    none, is the refusal's first step; undecided, the plain feasibility MILP.
    """
    relaxed = _relaxation(problem, deadline)
    decided = None if relaxed.infeasible is None else not relaxed.infeasible
    if decided is None:
        decided = problem.decide(deadline=deadline)
    if decided is None:
        raise _undecided(quotas, max_seconds, deadline, relaxed)
    if not decided:
        raise _infeasible(problem, quotas, relaxed, deadline, max_seconds)


def _merge_types(
    matrix: NDArray[np.float64], spread: float
) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Group candidates into types whose posteriors differ by at most ``spread`` per quota.

    Candidates with equal posterior vectors (the same reported cells) are one type, as in
    Flanigan et al.'s symmetry argument. With ``spread > 0``, those exact types are also
    merged by leader clustering (in lexicographic order, each joins the nearest leader
    within ``spread / 2`` in every quota, else leads a new type), which matters for
    continuous attributes: every noisy age has its own posterior of every age band.
    Returns ``type_of`` per candidate, the members' mean, smallest and largest posterior
    per type and quota. The optimisation imposes a band's lower edge on the smallest and
    its upper edge on the largest (:class:`_Problem`), so a merged type can cost some
    fairness but never a band: any members filling a panel's seats keep its expected
    counts within the bands.
    """
    n, q = matrix.shape
    if q == 0:
        zero = np.zeros((1, 0))
        return np.zeros(n, dtype=np.intp), zero, zero, zero
    keys = np.round(matrix, _TYPE_DECIMALS)
    unique, exact = np.unique(keys, axis=0, return_inverse=True)
    exact = np.asarray(exact, dtype=np.intp).ravel()
    if spread > 0 and unique.shape[0] > 1:
        radius = spread / 2.0
        leaders = np.empty_like(unique)
        group = np.empty(unique.shape[0], dtype=np.intp)
        count = 0
        for u in range(unique.shape[0]):  # np.unique's rows are in lexicographic order
            if count:
                distance = np.abs(leaders[:count] - unique[u]).max(axis=1)
                nearest = int(np.argmin(distance))
                if distance[nearest] <= radius:
                    group[u] = nearest
                    continue
            leaders[count] = unique[u]
            group[u] = count
            count += 1
        type_of = group[exact]
    else:
        type_of = exact
    t = int(type_of.max()) + 1
    sizes = np.bincount(type_of, minlength=t).astype(np.float64)
    mean = np.stack(
        [np.bincount(type_of, weights=matrix[:, j], minlength=t) / sizes for j in range(q)],
        axis=1,
    )
    least = np.full((t, q), np.inf)
    most = np.full((t, q), -np.inf)
    np.minimum.at(least, type_of, matrix)
    np.maximum.at(most, type_of, matrix)
    return type_of, mean, least, most


def _lp_bound(
    problem: _Problem, selectable: NDArray[np.bool_]
) -> tuple[float, NDArray[np.float64]]:
    """The maximin of the LP relaxation: expected seats per type, not panels.

    ``max z`` over fractional seats ``x`` (``0 <= x <= n``, ``sum x = k``, the quota rows)
    with ``x_t >= z n_t`` for every selectable type. The marginals of every lottery over
    quota-satisfying panels are such an ``x`` (expectations keep linear rows), so ``z``
    bounds the optimal lowest selection probability from above; the column generation
    stops once its level is within the gap of it. Returns ``z`` and ``x``.
    """
    t = problem.sizes.size
    a, lo, hi = problem.rows()
    has_hi, has_lo = np.isfinite(hi), np.isfinite(lo)
    sel = np.flatnonzero(selectable)
    # -x_t + n_t z <= 0 for selectable t
    link = sparse.hstack(
        [
            -sparse.identity(t, format="csr")[sel],
            sparse.csr_matrix(problem.sizes[sel][:, None]),
        ],
        format="csr",
    )
    quota = sparse.csr_matrix(np.vstack([a[has_hi], -a[has_lo]]))
    quota = sparse.hstack([quota, sparse.csr_matrix((quota.shape[0], 1))], format="csr")
    cost = np.zeros(t + 1)
    cost[-1] = -1.0
    result = linprog(
        cost,
        A_ub=sparse.vstack([link, quota], format="csr"),
        b_ub=np.concatenate([np.zeros(sel.size), hi[has_hi], -lo[has_lo]]),
        A_eq=np.concatenate([np.ones(t), [0.0]])[None, :],
        b_eq=[float(problem.size)],
        bounds=np.column_stack([np.zeros(t + 1), np.concatenate([problem.sizes, [1.0]])]),
        method="highs",
    )
    if result.status != 0:
        return math.inf, np.zeros(t)
    return float(result.x[-1]), np.asarray(result.x[:-1], dtype=np.float64)


def _round_panel(
    x: NDArray[np.float64],
    size: int,
    rng: np.random.Generator,
    posteriors: NDArray[np.float64] | None = None,
) -> NDArray[np.int64]:
    """Systematic (dependent) rounding of expected seats ``x`` to a panel of ``size``.

    One uniform offset over the types' cumulated seats: every type gets ``floor(x_t)``
    or ``ceil(x_t)`` seats, with expectation ``x_t`` whatever the order, and the seats sum
    to ``size``. With ``posteriors``, the types are sorted by their posteriors (quotas in
    random priority, ties at random), so that like types are neighbours and the rounding
    acts as stratified sampling: every quota's expected count stays close to ``x``'s.
    """
    return _systematic(x, size, _order(x.size, rng, posteriors), float(rng.random()))


def _order(
    t: int, rng: np.random.Generator, posteriors: NDArray[np.float64] | None
) -> NDArray[np.intp]:
    """Types sorted by their posteriors (quotas in random priority, ties at random)."""
    if posteriors is None or posteriors.shape[1] == 0:
        return np.asarray(rng.permutation(t), dtype=np.intp)
    keys = [rng.random(t)]
    keys += [posteriors[:, j] for j in rng.permutation(posteriors.shape[1])]
    return np.asarray(np.lexsort(keys), dtype=np.intp)


def _systematic(
    x: NDArray[np.float64],
    size: int,
    order: NDArray[np.intp],
    offset: float,
    caps: NDArray[np.float64] | None = None,
) -> NDArray[np.int64]:
    """Systematic rounding of ``x`` along ``order`` at ``offset`` in ``[0, 1)``.

    ``x`` is scaled to sum to ``size`` first, so a type can get a seat more than its
    ``caps`` (its candidates) allow when ``x`` sums below ``size`` (the warm start's
    herded targets do): with ``caps`` the excess seats go to the types with room whose
    scaled target is furthest above their seats (a panel never holds more members of a
    type than it has; before, the bench drew such a panel from a lottery and failed).
    """
    scaled = x * (size / max(float(x.sum()), 1e-300))
    ends = np.cumsum(scaled[order])
    marks = np.floor(ends + offset)
    seats = np.diff(np.concatenate([[math.floor(offset)], marks]))
    panel = np.zeros(x.size, dtype=np.int64)
    panel[order] = seats.astype(np.int64)
    if caps is not None:
        limit = np.asarray(np.floor(caps + 1e-9), dtype=np.int64)
        excess = int(np.maximum(panel - limit, 0).sum())
        if excess:
            panel = np.minimum(panel, limit)
            room = limit - panel
            shortfall = np.where(room > 0, scaled - panel, -np.inf)
            for t in np.argsort(-shortfall, kind="stable"):  # over types, a few steps
                if excess == 0 or room[t] <= 0:
                    break
                give = int(min(room[t], excess))
                panel[t] += give
                excess -= give
    return panel


def _repair(
    problem: _Problem,
    panel: NDArray[np.int64],
    rows: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    rng: np.random.Generator,
    steps: int = 8,
    pool: int = 64,
) -> NDArray[np.int64] | None:
    """Greedy one-seat moves that reduce the quota violation of ``panel`` to zero.

    Each step moves the seat (from an occupied type to one of ``pool`` random types with
    room) that leaves the smallest total violation; ``None`` if ``steps`` moves do not
    reach a quota-satisfying panel.
    """
    a, lo, hi = rows
    columns = a.T  # (T, r)
    panel = panel.copy()
    for _ in range(steps + 1):
        counts = panel @ columns
        violation = float((np.maximum(lo - counts, 0) + np.maximum(counts - hi, 0)).sum())
        if violation <= 1e-9:
            return panel
        occupied = np.flatnonzero(panel > 0)
        room = np.flatnonzero(panel < problem.sizes)
        if room.size > pool:
            room = rng.choice(room, size=pool, replace=False)
        moved = counts[None, None, :] - columns[occupied][:, None, :] + columns[room][None, :, :]
        after = (np.maximum(lo - moved, 0) + np.maximum(moved - hi, 0)).sum(axis=2)
        after[occupied[:, None] == room[None, :]] = np.inf
        s, t = np.unravel_index(int(np.argmin(after)), after.shape)
        if not after[s, t] < violation - 1e-12:
            return None
        panel[occupied[s]] -= 1
        panel[room[t]] += 1
    return None


def _warm_start(
    cg: _ColumnGeneration, x: NDArray[np.float64], count: int, rng: np.random.Generator
) -> int:
    """Seed the columns with panels rounded from the LP relaxation's expected seats.

    Each panel rounds ``x`` (:func:`_round_panel`) and repairs the quotas by one-seat
    moves (:func:`_repair`); the panels' average is close to ``x``, whose lowest
    probability is the LP bound, so the master LP starts near the optimum and few
    pricing MILPs remain. Returns the number of new panels.
    """
    problem = cg.problem
    rows = problem.rows()
    added = 0
    # Herding: each panel rounds x plus the seats every type is owed so far (``m x``
    # minus the seats the first m panels gave it), so the repairs' moves are paid back
    # and every type's total stays within about a seat of ``m x_t``.
    owed = np.zeros_like(x)
    order = _order(x.size, rng, problem.posteriors)
    for m in range(count):
        if m % _WARM_OFFSETS == 0:
            # A progress report (which may cancel the run) and the time budget.
            cg.report(0.05 + 0.05 * m / count)
            if m and cg.out_of_time():
                break
            order = _order(x.size, rng, problem.posteriors)
        target = np.clip(x + owed, 0.0, problem.sizes)
        rounded = _systematic(target, problem.size, order, float(rng.random()), problem.sizes)
        panel = _repair(problem, rounded, rows, rng)
        if panel is None:
            continue
        owed += x - panel
        added += cg.add(panel)
    return added


def _quota_name(quotas: Sequence[Quota], j: int) -> str:
    return quotas[j].label or f"quota {j}"


Progress = Callable[[float], None]


@dataclass
class _ColumnGeneration:
    """Panels found so far (columns) and the pricing loop shared by the objectives."""

    problem: _Problem
    progress: Progress | None
    columns: list[NDArray[np.int64]] = field(default_factory=list)
    seen: set[bytes] = field(default_factory=set)
    iterations: int = 0
    max_iterations: int = 100_000
    deadline: float | None = None  # time.monotonic(): the wall-clock safety net
    max_rounds: int | None = None  # rounds allowed (``iterations``; the deterministic limit)
    stopped: bool = False  # set when a limit (work or clock) stopped an optimisation early
    clock: bool = False  # set when the wall-clock safety net fired (not reproducible)
    bound: float = math.inf  # the last maximin round's proven bound on its level
    # Types the covering step had not reached when the deadline passed.
    uncovered: NDArray[np.bool_] | None = None
    master: _LiveMaster | None = None  # the maximin master LP, kept between rounds

    def time_limit(self) -> float | None:
        """The seconds left before the deadline (>= 0.1 s), ``None`` without one."""
        if self.deadline is None:
            return None
        return max(0.1, self.deadline - time.monotonic())

    def late(self) -> bool:
        """Whether the wall-clock safety net has fired (recorded in ``clock``)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.clock = self.stopped = True
        return self.clock

    def out_of_time(self) -> bool:
        """Whether a limit stops the optimisation: the rounds (covering and pricing
        problems, deterministic) or, as a safety net, the deadline."""
        if self.max_rounds is not None and self.iterations >= self.max_rounds:
            self.stopped = True
        self.late()
        return self.stopped

    def add(self, panel: NDArray[np.int64]) -> bool:
        key = panel.tobytes()
        if key in self.seen:
            return False
        self.seen.add(key)
        self.columns.append(panel)
        return True

    def price(
        self, weights: NDArray[np.float64], floor: float = math.inf
    ) -> tuple[NDArray[np.int64], float]:
        """A panel whose value under ``weights`` exceeds ``floor`` if one is found fast.

        The "LP and fix" panel is returned when it beats ``floor`` (any improving column
        serves column generation), with the LP relaxation's value as the upper bound on
        every panel's value. Otherwise the exact MILP runs (a minute at most) and its
        dual bound is returned, so the stopping test rests on a proven bound.
        """
        self.iterations += 1
        if self.iterations > self.max_iterations:
            raise RuntimeError(f"column generation did not converge in {self.max_iterations}")
        upper = math.inf
        quick: NDArray[np.int64] | None = None
        if math.isfinite(floor):
            quick, upper = self.problem.quick_panel(weights)
            if (
                quick is not None
                and float(weights @ quick) > floor
                and quick.tobytes() not in self.seen
            ):
                return quick, upper
            if quick is not None and upper <= floor:  # no panel can beat floor
                return quick, upper
        panel, bound = self.problem.solve(
            weights, time_limit=self.time_limit(), gap=_PRICING_GAP, node_limit=_PRICING_NODES
        )
        if panel is None:  # the node limit (or the deadline) stopped the MILP before a panel
            self.stopped = True
            self.late()
            return (quick if quick is not None else self.columns[-1]), math.inf
        # A MILP still running at the deadline stopped at its time limit with a panel that
        # may not be the one its node limit gives: the safety net has fired.
        self.late()
        return panel, min(bound, upper)

    def neighbours(
        self, panel: NDArray[np.int64], weights: NDArray[np.float64], floor: float, limit: int
    ) -> int:
        """Add the best quota-satisfying panels one seat away from ``panel``.

        Moving one seat from type ``s`` to type ``t`` keeps the size; the move is kept
        when every expected count stays in its band and the panel's value under
        ``weights`` stays above ``floor`` (an improving column). One MILP thus yields up
        to ``limit`` columns, which cuts the number of pricing problems several-fold.
        """
        problem = self.problem
        occupied = np.flatnonzero(panel > 0)
        room = np.flatnonzero(panel < problem.sizes)
        if occupied.size == 0 or room.size == 0:
            return 0
        a, lo, hi = problem.rows()
        rows = a.T  # (T, r)
        counts = panel @ rows
        # change[s, t, j] = A[j, t] - A[j, s]
        moved = counts[None, None, :] - rows[occupied][:, None, :] + rows[room][None, :, :]
        ok = np.all((moved >= lo - 1e-9) & (moved <= hi + 1e-9), axis=2) & (
            occupied[:, None] != room[None, :]
        )
        value = float(weights @ panel) - weights[occupied][:, None] + weights[room][None, :]
        value = np.where(ok & (value > floor), value, -np.inf)
        order = np.argsort(-value, axis=None)[:limit]
        added = 0
        for flat in order:
            s, t = np.unravel_index(flat, value.shape)
            if not np.isfinite(value[s, t]):
                break
            candidate = panel.copy()
            candidate[occupied[s]] -= 1
            candidate[room[t]] += 1
            added += self.add(candidate)
        return added

    def report(self, fraction: float) -> None:
        if self.progress is not None:
            self.progress(min(max(fraction, 0.0), 1.0))

    def prune(self, keep: NDArray[np.bool_]) -> None:
        self.columns = [c for c, k in zip(self.columns, keep, strict=True) if k]
        self.seen = {c.tobytes() for c in self.columns}
        self.master = None  # its columns were these

    def matrix(self) -> NDArray[np.float64]:
        """``a[p, t] = x_p[t] / n_t``: panel p's selection probability of a type-t member."""
        return np.asarray(self.columns, dtype=np.float64) / self.problem.sizes

    def cover(self, covered: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Panels until every type some panel can hold is in one (Flanigan et al., Methods).

        Each round takes the "LP and fix" panel with the most not-yet-covered types
        (weighted by the inverse type size); when it covers none, a feasibility MILP
        forces a seat for one uncovered type (any such panel will do, so HiGHS stops at
        its first solution). A type for which that MILP is infeasible fits in no
        quota-satisfying panel; one for which it finds no panel within its node limit is
        treated the same way (probability 0, counted in ``unselectable``). So are the
        types still uncovered when the rounds (``max_rounds``, deterministic) run out or
        the safety net's deadline (``max_seconds``) passes (the mask ``uncovered``): the
        run ends with a valid lottery, and the notes say how many candidates it could not
        reach. Returns the mask of the types some panel holds.
        """
        impossible = np.zeros_like(covered)
        while not (covered | impossible).all():
            if self.columns and self.out_of_time():  # one panel at least, for a lottery
                self.uncovered = ~(covered | impossible)
                break
            self.iterations += 1
            weights = np.where(covered | impossible, 0.0, 1.0 / self.problem.sizes)
            panel, _ = self.problem.quick_panel(weights)
            if panel is None or not ((panel > 0) & ~covered).any():
                target = int(np.argmax(weights))
                panel, _ = self.problem.solve(
                    weights,
                    time_limit=self.time_limit(),
                    force=target,
                    gap=1.0,
                    node_limit=_DECIDE_NODES,
                )
                self.late()  # as in price: a MILP past the deadline may have been cut
                if panel is None:
                    impossible[target] = True
                    continue
            self.add(panel)
            covered = covered | (panel > 0)
            self.report(0.1 * (covered | impossible).mean())
        return covered


def _maximin_master(
    a: NDArray[np.float64],
    free: NDArray[np.bool_],
    fixed: NDArray[np.float64],
    fixed_mask: NDArray[np.bool_],
) -> tuple[float, NDArray[np.float64], NDArray[np.float64], float]:
    """max z s.t. pi_t >= z (free), pi_t >= fixed_t (fixed), over mixtures of columns.

    Returns ``z``, the column weights, the dual prices per type and the dual of the
    convexity row (HiGHS via :func:`scipy.optimize.linprog`, solved from scratch). The
    column generation keeps this programme live instead (:class:`_LiveMaster`); this form
    is its reference (``test_the_live_master_lp_is_the_maximin_master``).
    """
    s = a.shape[0]
    n_free, n_fixed = int(free.sum()), int(fixed_mask.sum())
    # Each panel holds at most `size` types, so the matrix is sparse.
    a_ub = sparse.vstack(
        [
            sparse.hstack([sparse.csr_matrix(-a[:, free].T), np.ones((n_free, 1))]),
            sparse.hstack([sparse.csr_matrix(-a[:, fixed_mask].T), np.zeros((n_fixed, 1))]),
        ],
        format="csr",
    )
    b_ub = np.concatenate([np.zeros(n_free), -(fixed[fixed_mask] - _FIX_TOL)])
    a_eq = np.hstack([np.ones((1, s)), np.zeros((1, 1))])
    cost = np.zeros(s + 1)
    cost[-1] = -1.0
    result = linprog(
        cost,
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=[(0, None)] * s + [(None, None)],
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"the maximin LP failed: {result.message}")
    duals = np.zeros(a.shape[1])
    marginals = -np.asarray(result.ineqlin.marginals)
    duals[free] = marginals[:n_free]
    duals[fixed_mask] = marginals[n_free:]
    return (
        float(result.x[-1]),
        np.asarray(result.x[:-1]),
        np.maximum(duals, 0.0),
        float(-result.eqlin.marginals[0]),
    )


@dataclass
class _LiveMaster:
    """The maximin master LP kept in HiGHS between rounds (primal simplex, no presolve).

    The programme of :func:`_maximin_master` (Flanigan et al. 2021, Methods: the master
    of the column generation over panels). A round only adds panels (columns at weight
    0), so the last optimal basis stays primal feasible and the primal simplex restarts
    from it instead of from scratch: on bench_panel's slow pools of 1,000 / 30 a round's
    master went from about 0.3 s to about 0.1 s after the first few. Single-threaded
    HiGHS with fixed options is deterministic, so the work limit (rounds) still makes
    the lottery a function of the data, the request and the seed. Rebuilt when the rows
    change (LEXIMIN fixes types) or columns were pruned.
    """

    sizes: NDArray[np.float64]
    key: bytes
    highs: Any
    rows: NDArray[np.intp]  # master row of each type, -1 for types not in the LP
    n_columns: int = 0

    @classmethod
    def build(
        cls,
        sizes: NDArray[np.float64],
        free: NDArray[np.bool_],
        fixed: NDArray[np.float64],
        fixed_mask: NDArray[np.bool_],
        key: bytes,
    ) -> _LiveMaster:
        import highspy

        inf = highspy.kHighsInf
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        for option, value in (
            ("output_flag", False),
            ("threads", 1),
            ("presolve", "off"),
            ("simplex_strategy", 4),  # primal: the warm basis stays primal feasible
            ("random_seed", 0),
        ):
            h.setOptionValue(option, value)
        h.addVar(-inf, inf)  # z, column 0
        h.changeColCost(0, -1.0)
        free_types = np.flatnonzero(free)
        fixed_types = np.flatnonzero(fixed_mask)
        rows = np.full(sizes.size, -1, dtype=np.intp)
        rows[free_types] = np.arange(free_types.size)
        rows[fixed_types] = free_types.size + np.arange(fixed_types.size)
        n_free = free_types.size
        # free: z - pi_t <= 0; fixed: -pi_t <= -(f_t - tol)
        h.addRows(
            n_free,
            np.full(n_free, -inf),
            np.zeros(n_free),
            n_free,
            np.arange(n_free, dtype=np.int32),
            np.zeros(n_free, dtype=np.int32),
            np.ones(n_free),
        )
        for t in fixed_types:
            h.addRow(-inf, -(float(fixed[t]) - _FIX_TOL), 0, np.array([], np.int32), np.array([]))
        h.addRow(1.0, 1.0, 0, np.array([], np.int32), np.array([]))  # convexity
        return cls(sizes, key, h, rows)

    def add(self, columns: Sequence[NDArray[np.int64]]) -> None:
        import highspy

        convexity = int(self.rows.max()) + 1 if self.rows.size else 0
        for panel in columns[self.n_columns :]:
            types = np.flatnonzero((panel > 0) & (self.rows >= 0))
            index = np.append(self.rows[types], convexity).astype(np.int32)
            value = np.append(-panel[types] / self.sizes[types], 1.0)
            self.highs.addCol(0.0, 0.0, highspy.kHighsInf, index.size, index, value)
        self.n_columns = len(columns)

    def solve(
        self, free: NDArray[np.bool_], fixed_mask: NDArray[np.bool_]
    ) -> tuple[float, NDArray[np.float64], NDArray[np.float64], float]:
        import highspy

        self.highs.run()
        status = self.highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"the maximin LP failed: {self.highs.modelStatusToString(status)}")
        solution = self.highs.getSolution()
        x = np.asarray(solution.col_value)
        row_dual = np.asarray(solution.row_dual)
        duals = np.zeros(self.sizes.size)
        duals[free] = -row_dual[self.rows[free]]
        duals[fixed_mask] = -row_dual[self.rows[fixed_mask]]
        return float(x[0]), x[1:], np.maximum(duals, 0.0), float(-row_dual[-1])


def _maximin_round(
    cg: _ColumnGeneration,
    free: NDArray[np.bool_],
    fixed: NDArray[np.float64],
    fixed_mask: NDArray[np.bool_],
    tol: float,
    base: float,
    share: float,
    relaxation: float = math.inf,
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """Column generation for one maximin programme (Flanigan et al., Methods, dual LP).

    Stops when the best new panel cannot raise the level by more than the relative
    ``tol`` (its dual value bounds the optimum) or the level comes within ``tol`` of
    ``relaxation`` (the LP relaxation's bound, :func:`_lp_bound`) or of ``size / N``, the
    equal share of the free candidates; no distribution can exceed either.
    """
    sizes = cg.problem.sizes
    remaining = cg.problem.size - float((fixed[fixed_mask] * sizes[fixed_mask]).sum())
    ceiling = min(remaining / max(float(sizes[free].sum()), 1.0), relaxation)
    offsets = np.where(fixed_mask, fixed - _FIX_TOL, 0.0)
    best = ceiling  # the lowest proven bound on the level so far (LP relaxation, Lagrangian)
    center: NDArray[np.float64] | None = None  # the duals that gave it
    while True:
        key = free.tobytes() + fixed_mask.tobytes() + fixed.tobytes()
        live = cg.master
        if live is None or live.key != key or live.n_columns > len(cg.columns):
            live = cg.master = _LiveMaster.build(cg.problem.sizes, free, fixed, fixed_mask, key)
        live.add(cg.columns)
        level, weights, duals, _ = live.solve(free, fixed_mask)
        if len(cg.columns) > 2 * sizes.size + 200:
            # Columns outside the LP's basis may go (pricing finds them again if needed).
            keep = weights > 0
            keep[-200:] = True
            cg.prune(keep)
            weights = weights[keep]
        if ceiling - level <= max(tol * ceiling, _MAXIMIN_ABS_GAP):  # no lottery does better
            return level, weights, duals
        a = cg.matrix()
        added = False
        # Dual smoothing (Wentges): price at a mix of the best duals so far and the
        # current ones, which damps the oscillation of the duals between iterations;
        # when that column does not improve the current master, price at the current
        # duals alone. Any duals y >= 0 with sum_free y = 1 give the bound
        # max_panel sum_t y_t x_t / n_t - sum_fixed y_t f_t >= the optimal level.
        for alpha in (_SMOOTHING, 0.0) if center is not None else (0.0,):
            y = duals if center is None or alpha == 0.0 else alpha * center + (1 - alpha) * duals
            prices = y / sizes
            offset = float(y @ offsets)
            floor = float((a @ y).max()) + 1e-12
            panel, upper = cg.price(prices, floor)
            lagrangian = upper - offset
            if lagrangian < best:
                best, center = lagrangian, y.copy()
            improving = float(duals / sizes @ panel) - float(duals @ offsets) > level + 1e-12
            if improving and cg.add(panel):
                cg.neighbours(panel, duals / sizes, float((a @ duals).max()) + 1e-12, _NEIGHBOURS)
                added = True
                break
        gap = max(best - level, 0.0)
        cg.bound = best
        cg.report(base + share * (level / (level + gap) if level + gap > 0 else 1.0))
        if gap <= max(tol * level, _MAXIMIN_ABS_GAP) or not added or cg.out_of_time():
            # Columns added in this iteration are not in the master's solution yet.
            weights = np.concatenate([weights, np.zeros(len(cg.columns) - weights.size)])
            return level, weights, duals


def _seed_columns(cg: _ColumnGeneration, selectable: NDArray[np.bool_]) -> float:
    """The LP relaxation's bound (:func:`_lp_bound`) over the selectable types, and more
    panels rounded from its seats when some types proved unselectable (the warm start
    of :func:`select_panel` rounded the relaxation over all types)."""
    bound, x = _lp_bound(cg.problem, selectable)
    if math.isfinite(bound) and not selectable.all():
        _warm_start(cg, x, _WARM_PANELS, np.random.default_rng(_WARM_SEED + 1))
    return bound


def _maximin(
    cg: _ColumnGeneration, selectable: NDArray[np.bool_], tol: float
) -> NDArray[np.float64]:
    t = selectable.size
    bound = _seed_columns(cg, selectable)
    _, weights, _ = _maximin_round(
        cg, selectable, np.zeros(t), np.zeros(t, dtype=bool), tol, 0.1, 0.9, bound
    )
    return weights


def _leximin(
    cg: _ColumnGeneration, selectable: NDArray[np.bool_], tol: float
) -> NDArray[np.float64]:
    """LEXIMIN by successive maximin programmes (Flanigan et al., Methods).

    After each programme, the types with a positive dual price cannot all be raised above
    the level together, so they are fixed at it; the next programme raises the rest.
    """
    t = selectable.size
    fixed = np.zeros(t)
    fixed_mask = np.zeros(t, dtype=bool)
    free = selectable.copy()
    bound = _seed_columns(cg, selectable)  # the first round's LP bound
    weights = np.zeros(len(cg.columns))
    total = max(int(selectable.sum()), 1)
    while free.any():
        done = 1.0 - free.sum() / total
        level, weights, duals = _maximin_round(
            cg, free, fixed, fixed_mask, tol, 0.1 + 0.9 * done, 0.9 / total, bound
        )
        bound = math.inf
        tight = free & (duals > _FIX_TOL)
        if not tight.any():  # degenerate duals: fix the lowest instead
            pi = weights @ cg.matrix()
            tight = free & (pi <= level + _FIX_TOL)
        if cg.out_of_time():  # the rest keep the level reached
            break
        fixed[tight] = level
        fixed_mask |= tight
        free &= ~tight
    return weights


def _nash(cg: _ColumnGeneration, selectable: NDArray[np.bool_], tol: float) -> NDArray[np.float64]:
    """Maximise ``sum_t n_t log pi_t`` (Nash welfare) by fully corrective Frank-Wolfe.

    The master problem over the current panels is a mixture-weight likelihood, whose EM
    fixed point ``w_p <- w_p sum_t (n_t / N) a[p, t] / pi_t`` increases it monotonically;
    pricing finds the panel maximising the gradient ``sum_t x_t / pi_t``; the duality gap
    ``max_p sum_t x_t / pi_t - N`` bounds the distance to the optimum.
    """
    sizes = cg.problem.sizes
    n_total = float(sizes[selectable].sum())
    weights = np.full(len(cg.columns), 1.0 / len(cg.columns))
    for _ in range(cg.max_iterations):
        a = cg.matrix()[:, selectable]
        share = sizes[selectable] / n_total
        if weights.size < a.shape[0]:
            weights = np.concatenate(
                [
                    weights * 0.9,
                    np.full(a.shape[0] - weights.size, 0.1 / (a.shape[0] - weights.size)),
                ]
            )
        for _ in range(2000):
            pi = weights @ a
            update = weights * (a @ (share / pi))
            change = float(np.abs(update - weights).max())
            weights = update / update.sum()
            if change < 1e-10:
                break
        pi = weights @ a
        gradient = np.zeros(sizes.size)
        gradient[selectable] = 1.0 / pi
        panel, upper = cg.price(gradient, floor=n_total * (1.0 + tol))
        gap = upper - n_total  # upper bounds every panel's gradient value
        cg.report(0.1 + 0.9 * min(1.0, tol / max(gap / n_total, tol)))
        if gap <= tol * n_total or not cg.add(panel) or cg.out_of_time():
            break
    return weights


def _lottery(weights: NDArray[np.float64], m: int) -> NDArray[np.int64]:
    """Round panel weights to multiples of ``1/m`` (largest remainders; sum exactly m)."""
    scaled = np.maximum(weights, 0.0) * m / max(float(weights.sum()), 1e-300)
    counts = np.floor(scaled).astype(np.int64)
    short = m - int(counts.sum())
    if short > 0:
        order = np.argsort(-(scaled - counts), kind="stable")
        counts[order[:short]] += 1
    return counts


# --------------------------------------------------------------------------- guarantee


def guarantee_statement(
    size: int, n_quotas: int, *, eligibility: bool, max_outside: float | None = None
) -> Note:
    """The plain statement returned with every panel (``max_outside``: the bound kept).

    A :class:`Note`: its English text, carrying its template and parameters so that the
    service layer shows it in the reader's language. The optional sentences (tightened
    bands, uncertain eligibility) are messages of their own, joined to the statement by
    one ``"%(statement)s %(addition)s"`` template each, so translators see whole sentences.
    """
    statement = Message(
        gettext_noop(
            "The panel of %(size)s was drawn by a published lottery over panels that all meet "
            "the %(quotas)s quota(s) in expectation: answers were distorted on residents' "
            "devices, so nobody's true category is known. For every quota, the expected "
            "number of members truly in the category (the sum of their posterior "
            "probabilities) lies within its band; the realised number may fall outside it, "
            "and the 95%% interval shows by how much it plausibly varies. Every candidate's "
            "selection probability is published; candidates with the same reported answers "
            "have the same probability."
        ),
        {"size": int(size), "quotas": int(n_quotas)},
    )
    additions: list[Message] = []
    if max_outside is not None and n_quotas:
        additions.append(
            Message(
                gettext_noop(
                    "The bands were also tightened so that, in every panel of the lottery, the "
                    "realised number of each quota is expected to fall outside its band by at "
                    "most %(max_outside)s seat(s), where the answers allow it (notes name any "
                    "quota where they did not)."
                ),
                {"max_outside": f"{max_outside:g}"},
            )
        )
    if eligibility:
        additions.append(
            Message(
                gettext_noop(
                    "Eligibility is also only known in probability: the expected number of "
                    "members who truly meet it is reported beside the panel."
                )
            )
        )
    for addition in additions:
        statement = Message(
            gettext_noop("%(statement)s %(addition)s"),
            {"statement": statement, "addition": addition},
        )
    return Note(statement.template, **statement.params)


# --------------------------------------------------------------------------- entry point


def select_panel(
    table: Mapping[str, Attribute],
    size: int,
    quotas: Sequence[Quota],
    where: Sequence[Condition] = (),
    *,
    reserves: int = 0,
    objective: Objective = "maximin",
    lottery_size: int = 10_000,
    eligibility_threshold: float = 0.5,
    n_boot: int = 100,
    tol: float | None = None,
    max_iter: int = 10_000,
    rng: np.random.Generator | None = None,
    progress: Progress | None = None,
    max_outside: float | None = None,
    max_seconds: float | None = None,
    merge: bool = True,
    max_rounds: int | None = _MAX_ROUNDS,
) -> PanelResult:
    """Draw a panel from a fair lottery whose panels meet quotas on expected true counts.

    Flanigan et al., "Fair algorithms for selecting citizens' assemblies", Nature 2021,
    adapted to distorted attributes as the module docstring explains: posteriors from the
    joint reconstruction of 001_28af1923c784b480.txt (Figure 2's EM over the product
    channel, Section IV-B's participant sampling), quotas on the sums of posteriors,
    candidates grouped into types, maximin/Nash/LEXIMIN by column generation with HiGHS,
    then a uniform lottery over ``lottery_size`` panels (Flanigan, Kehne and Procaccia
    2021) from which ``rng`` draws one; within a type the seats go to candidates drawn
    uniformly with the same ``rng``.

    Parameters
    ----------
    table : mapping of name -> DiscreteAttribute | ContinuousAttribute
    size : int
        Panel size.
    quotas : sequence of Quota
    where : sequence of Condition
        Eligibility (a conjunction); candidates with ``Pr(where | reported) >=
        eligibility_threshold`` form the pool.
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
    n_boot : int
        Bootstrap replicates of the reconstruction behind the intervals.
    tol, max_iter
        EM tolerance and iteration cap of the reconstructions.
    rng : numpy.random.Generator
        The lottery's randomness (seeded from the request's seed) and the bootstrap's.
    progress : callable(float), optional
        Called with the fraction done; it may raise (for example :class:`PanelCancelled`)
        to stop the run, and the exception propagates unchanged.
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
    merge : bool
        Merge candidates whose posteriors differ by at most ``min(0.05, 0.5 / size)``
        per quota into one type (:func:`_merge_types`; bands are imposed on the
        members' extreme posteriors, so every panel still meets them). ``False``: one
        type per distinct posterior vector.
    max_rounds : int or None
        The deterministic work limit: the column generation solves at most this many
        pricing problems (:data:`_MAX_ROUNDS` by default), and every MILP stops at a
        fixed number of branch-and-bound nodes, so the lottery, and the panel the seed
        draws from it, are a function of the data, the request and the seed alone,
        whatever the machine's load. When the rounds run out, every panel of the lottery
        still meets the quotas; only the fairness may fall short of the optimum, and
        ``notes`` state the proven bound on the optimal lowest probability. ``None``: run
        to the gap.
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

    Returns
    -------
    PanelResult

    Raises
    ------
    InfeasibleQuotas
        No panel's expected true counts meet the quotas.
    ValueError
        Bad sizes or options, quotas whose bounds cannot hold for any panel size, unknown
        attributes or bad conditions, a panel larger than the eligible pool.
    """
    started = time.monotonic()
    n = table_size(table)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    if isinstance(reserves, bool) or not isinstance(reserves, (int, np.integer)) or reserves < 0:
        raise ValueError(f"reserves must be a non-negative integer, got {reserves!r}")
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; use one of {', '.join(OBJECTIVES)}")
    if not isinstance(lottery_size, (int, np.integer)) or lottery_size < 1:
        raise ValueError(f"lottery_size must be a positive integer, got {lottery_size!r}")
    if not 0.0 < eligibility_threshold <= 1.0:
        raise ValueError(f"eligibility_threshold must be in (0, 1], got {eligibility_threshold}")
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    quotas = [
        q if q.label else Quota(q.where, q.min, q.max, f"quota {j}") for j, q in enumerate(quotas)
    ]
    for quota in quotas:
        if quota.min > size:
            raise ValueError(f"{quota.label}: min {quota.min} is larger than the panel size {size}")
    generator = default_rng(rng)

    # Pool and posteriors: one reconstruction (and bootstrap) per joint model, shared by
    # the conditions on it (the bands of one attribute), as condition_posteriors says.
    wheres = ([list(where)] if where else []) + [list(q.where) for q in quotas]
    # The quotas' posteriors also condition on the reports that decide eligibility
    # (``given``): candidates are chosen by those reports, and a category that goes with
    # them would otherwise take the whole table's prior.
    shared = condition_posteriors(
        table, wheres, n_boot=n_boot, tol=tol, max_iter=max_iter, rng=generator, given=where
    )
    if where:
        eligibility: ConditionPosterior | None = shared[0]
        assert eligibility is not None
        candidates = np.flatnonzero(eligibility.values >= eligibility_threshold).astype(np.intp)
        pool_estimate, pool_ci = eligibility.estimate, eligibility.ci95
    else:
        eligibility = None
        candidates = np.arange(n, dtype=np.intp)
        pool_estimate, pool_ci = float(n), (float(n), float(n))
    if candidates.size < size + reserves:
        raise ValueError(
            f"a panel of {size} with {reserves} reserves is larger than the eligible pool "
            f"of {candidates.size} candidates"
        )
    posteriors = shared[1:] if where else shared
    if progress is not None:
        progress(0.05)
    q = len(quotas)
    matrix = (
        np.column_stack([p.values[candidates] for p in posteriors])
        if q
        else np.zeros((candidates.size, 0))
    )
    lower = np.array([qt.min for qt in quotas], dtype=np.float64)
    upper = np.array([qt.max for qt in quotas], dtype=np.float64)
    # Tightened bands are built on the types' mean posteriors: merge only without them.
    spread = min(_MERGE_CAP, _MERGE_SEATS / size) if merge and max_outside is None else 0.0
    deadline = None if max_seconds is None else started + float(max_seconds)
    if max_outside is not None and not max_outside > 0:
        raise ValueError(f"max_outside must be positive or None, got {max_outside!r}")
    problem = None
    # Whether the safety net stopped the check of merged types, so that exact types were
    # used where a run within the clock would have used the merged ones.
    unmerged = False
    if spread > 0:
        type_of, type_posteriors, least, most = _merge_types(matrix, spread)
        sizes = np.bincount(type_of, minlength=type_posteriors.shape[0]).astype(np.float64)
        merged = _Problem(sizes, type_posteriors, int(size), lower, upper, least=least, most=most)
        merged_feasible = merged.decide(deadline=deadline)
        if merged_feasible:
            problem = merged
        elif merged_feasible is None and deadline is not None:
            unmerged = time.monotonic() > deadline
    if problem is None:  # exact types (also the infeasibility diagnosis's problem)
        type_of, type_posteriors, _, _ = _merge_types(matrix, 0.0)
        sizes = np.bincount(type_of, minlength=type_posteriors.shape[0]).astype(np.float64)
        problem = _Problem(sizes, type_posteriors, int(size), lower, upper)
        _check_feasible(problem, quotas, deadline, max_seconds)
    notes: list[str] = []
    if unmerged:
        notes.append(
            Note(
                gettext_noop(
                    "the wall-clock safety net (max_seconds=%(max_seconds)s) stopped the check "
                    "of the quotas on merged candidate types, so the lottery was built over "
                    "exact types instead"
                ),
                max_seconds=f"{max_seconds:g}",
            )
        )
    levels = np.full(q, math.inf)
    cut = False
    if max_outside is not None and q:
        problem = dataclasses.replace(
            problem,
            shared=_shared_variances(posteriors, candidates, type_of, problem.sizes, int(size)),
        )
        problem, levels, cut = _tighten(problem, float(max_outside), deadline)
        if cut:
            notes.append(
                Note(
                    gettext_noop(
                        "the search for tightened bands stopped after "
                        "max_seconds=%(max_seconds)s; the quotas not reached by then keep "
                        "their plain bands"
                    ),
                    max_seconds=f"{max_seconds:g}",
                )
            )
        for quota, level in zip(quotas, levels, strict=True):
            if level != max_outside:
                if math.isfinite(level):
                    notes.append(
                        Note(
                            gettext_noop(
                                "%(quota)s: no panel keeps the expected seats outside the band "
                                "below %(max_outside)s; bound %(level)s used"
                            ),
                            quota=quota.label,
                            max_outside=f"{max_outside:g}",
                            level=f"{level:g}",
                        )
                    )
                else:
                    notes.append(
                        Note(
                            gettext_noop(
                                "%(quota)s: no panel keeps the expected seats outside the band "
                                "below %(max_outside)s; plain band used"
                            ),
                            quota=quota.label,
                            max_outside=f"{max_outside:g}",
                        )
                    )

    cg = _ColumnGeneration(problem, progress, deadline=deadline, max_rounds=max_rounds)
    # Panels rounded from the LP relaxation first (they cover most types at once), then
    # the covering step for the rest (Flanigan et al., Methods).
    bound, x = _lp_bound(problem, np.ones(sizes.size, dtype=bool))
    if math.isfinite(bound) and bound > 0:
        _warm_start(cg, x, _WARM_PANELS, np.random.default_rng(_WARM_SEED))
    covered = np.zeros(sizes.size, dtype=bool)
    for column in cg.columns:
        covered |= column > 0
    selectable = cg.cover(covered)
    solve = {"maximin": _maximin, "leximin": _leximin, "nash": _nash}[objective]
    weights = solve(cg, selectable, _NASH_GAP if objective == "nash" else _MAXIMIN_GAP)
    a = cg.matrix()
    optimum_pi = weights @ a
    optimum = float(optimum_pi[selectable].min())

    counts = _lottery(weights, int(lottery_size))
    used = np.flatnonzero(counts)
    support = np.asarray(cg.columns, dtype=np.int64)[used]
    lottery_weights = counts[used] / float(lottery_size)
    type_probability = lottery_weights @ (support / sizes)

    # The draw: one of the m panels, then the seats of each type among its members.
    draw = int(generator.integers(lottery_size))
    chosen = support[int(np.searchsorted(np.cumsum(counts[used]), draw, side="right"))]
    order = np.argsort(type_of, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes.astype(np.int64))])
    picked: list[NDArray[np.intp]] = []
    for t in np.flatnonzero(chosen):
        members = order[starts[t] : starts[t + 1]]
        picked.append(generator.choice(members, size=int(chosen[t]), replace=False))
    panel_local = np.sort(np.concatenate(picked)).astype(np.intp)

    probabilities = np.zeros(n)
    probabilities[candidates] = type_probability[type_of]
    remaining = np.ones(candidates.size, dtype=bool)
    remaining[panel_local] = False
    reserve_local: list[int] = []
    for _ in range(int(reserves)):
        weight = np.where(remaining, type_probability[type_of], 0.0)
        if weight.sum() <= 0:
            weight = remaining.astype(np.float64)
        pick = int(generator.choice(candidates.size, p=weight / weight.sum()))
        reserve_local.append(pick)
        remaining[pick] = False

    rows = candidates[panel_local]
    outcomes: list[QuotaOutcome] = []
    for quota, post, level in zip(quotas, posteriors, levels, strict=True):
        values = post.values
        expected, low, high = _count_interval(values[rows], post.replicates(rows), float(size))
        # The realised count's variance as the interval takes it: Bernoulli plus the
        # posteriors' own (replicate) variance, the law of total variance.
        variance = float((values[rows] * (1.0 - values[rows])).sum())
        replicates = post.replicates(rows)
        if replicates.shape[0] > 1:
            variance += float(replicates.sum(axis=1).var(ddof=1))
        pool_expected, pool_low, pool_high = _count_interval(
            values[candidates], post.replicates(candidates), float(candidates.size)
        )
        outcomes.append(
            QuotaOutcome(
                quota.label,
                quota.min,
                quota.max,
                expected,
                (low, high),
                pool_expected,
                (pool_low, pool_high),
                _expected_outside(expected, variance, quota.min, quota.max, int(size)),
                float(level),
            )
        )
    expected_eligible = (
        float(size) if eligibility is None else float(eligibility.values[rows].sum())
    )
    if progress is not None:
        progress(1.0)
    if cg.stopped and not cg.clock:  # the work limit: reproducible
        if objective == "maximin" and math.isfinite(cg.bound):
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after %(rounds)s rounds (the work "
                        "limit): the lowest selection probability reached is %(optimum)s; no "
                        "lottery can give everyone more than %(bound)s"
                    ),
                    rounds=cg.iterations,
                    optimum=f"{optimum:.4g}",
                    bound=f"{cg.bound:.4g}",
                )
            )
        else:
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after %(rounds)s rounds (the work "
                        "limit): the lowest selection probability reached is %(optimum)s"
                    ),
                    rounds=cg.iterations,
                    optimum=f"{optimum:.4g}",
                )
            )
    elif cg.stopped:
        if objective == "maximin" and math.isfinite(cg.bound):
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after max_seconds=%(max_seconds)s: the lowest "
                        "selection probability reached is %(optimum)s; no lottery can give "
                        "everyone more than %(bound)s"
                    ),
                    max_seconds=f"{max_seconds:g}",
                    optimum=f"{optimum:.4g}",
                    bound=f"{cg.bound:.4g}",
                )
            )
        else:
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after max_seconds=%(max_seconds)s: the lowest "
                        "selection probability reached is %(optimum)s"
                    ),
                    max_seconds=f"{max_seconds:g}",
                    optimum=f"{optimum:.4g}",
                )
            )
    unselectable = int(sizes[~selectable].sum())
    if cg.uncovered is not None and not cg.clock:
        unreached = int(sizes[cg.uncovered].sum())
        notes.append(
            Note(
                gettext_noop(
                    "%(unreached)s eligible candidate(s) were in no panel found within the "
                    "work limit of %(rounds)s rounds (selection probability 0)"
                ),
                unreached=unreached,
                rounds=cg.iterations,
            )
        )
        unselectable -= unreached
    elif cg.uncovered is not None:
        unreached = int(sizes[cg.uncovered].sum())
        notes.append(
            Note(
                gettext_noop(
                    "%(unreached)s eligible candidate(s) were in no panel found within "
                    "max_seconds=%(max_seconds)s (selection probability 0)"
                ),
                unreached=unreached,
                max_seconds=f"{max_seconds:g}",
            )
        )
        unselectable -= unreached
    if cg.clock or cut or unmerged:
        notes.append(
            Note(
                gettext_noop(
                    "the wall-clock safety net (max_seconds=%(max_seconds)s) stopped this run "
                    "before its work limit: where it stops depends on the machine's load, so "
                    "this draw may not be reproducible from its seed"
                ),
                max_seconds=f"{max_seconds:g}",
            )
        )
    if unselectable:
        notes.append(
            Note(
                gettext_noop(
                    "%(unselectable)s eligible candidate(s) fit in no quota-satisfying panel "
                    "found (selection probability 0)"
                ),
                unselectable=unselectable,
            )
        )
    return PanelResult(
        rows=np.sort(rows).astype(np.intp),
        reserves=candidates[np.asarray(reserve_local, dtype=np.intp)],
        probabilities=probabilities,
        candidates=candidates,
        quotas=tuple(outcomes),
        objective=objective,
        optimum=optimum,
        lottery_size=int(lottery_size),
        lottery_draw=draw,
        pool_estimate=pool_estimate,
        pool_ci95=pool_ci,
        expected_eligible=expected_eligible,
        unselectable=unselectable,
        iterations=cg.iterations,
        type_of=type_of,
        type_posteriors=type_posteriors,
        support=support,
        weights=lottery_weights,
        guarantee=guarantee_statement(
            int(size), q, eligibility=eligibility is not None, max_outside=max_outside
        ),
        notes=tuple(notes),
        lp_bound=float(bound),
    )
