"""Maximin master LP and pricing: the column generation behind the fair lottery.

Pure module: numpy and scipy only (HiGHS through :mod:`scipy.optimize`).

Flanigan, Gölz, Gupta, Hennig and Procaccia, "Fair algorithms for selecting citizens'
assemblies", Nature 596 (2021), Methods: a distribution over quota-satisfying panels that
maximises the lowest selection probability is found by column generation, a master LP
over the panels found so far (:func:`_maximin_master`, kept live between rounds by
:class:`_LiveMaster`) and a pricing MILP that finds the panel its duals value most
(:class:`_ColumnGeneration`, with Wentges smoothing and one-seat neighbours,
:func:`_maximin_round`). LEXIMIN (:func:`_leximin`) fixes the tight probabilities and
repeats; Nash welfare (:func:`_nash`) runs fully corrective Frank-Wolfe steps.
:func:`optimise` is the stage :func:`~.selection.select_panel` calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from reconstruction.algorithms.panel import limits
from reconstruction.algorithms.panel.problem import _Problem
from reconstruction.algorithms.panel.results import Objective, Progress
from reconstruction.algorithms.panel.warm_start import _lp_bound, _order, _repair, _systematic

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


# Panels rounded from the LP relaxation's expected seats to seed the column generation.
_WARM_PANELS = 400

_WARM_SEED = 0x5EA7_2021

_WARM_OFFSETS = 50  # panels per random order of the types (evenly spaced offsets)


@dataclass
class _ColumnGeneration:
    """Panels found so far (columns) and the pricing loop shared by the objectives."""

    problem: _Problem
    progress: Progress | None
    columns: list[NDArray[np.int64]] = field(default_factory=list)
    seen: set[bytes] = field(default_factory=set)
    iterations: int = 0
    max_iterations: int = 100_000
    deadline: float | None = None  # limits.now(): the wall-clock safety net
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
        return max(0.1, self.deadline - limits.now())

    def late(self) -> bool:
        """Whether the wall-clock safety net has fired (recorded in ``clock``)."""
        if self.deadline is not None and limits.now() > self.deadline:
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
            weights, time_limit=self.time_limit(), gap=_PRICING_GAP, node_limit=limits.PRICING_NODES
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
                    node_limit=limits.DECIDE_NODES,
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


@dataclass(frozen=True)
class _Optimum:
    """The optimal distribution over the panels found, before rounding to the lottery.

    ``weights[p]`` is the probability of panel ``cg.columns[p]``; ``optimum`` the lowest
    selection probability of a selectable type; ``bound`` the LP relaxation's bound.
    """

    cg: _ColumnGeneration
    weights: NDArray[np.float64]
    bound: float
    selectable: NDArray[np.bool_]
    optimum: float


def optimise(
    problem: _Problem,
    objective: Objective,
    progress: Progress | None,
    deadline: float | None,
    max_rounds: int | None,
) -> _Optimum:
    """The optimisation stage: maximin, LEXIMIN or Nash welfare by column generation.

    Panels rounded from the LP relaxation first (they cover most types at once), then the
    covering step for the rest (Flanigan et al., Methods), then the objective's column
    generation.
    """
    sizes = problem.sizes
    cg = _ColumnGeneration(problem, progress, deadline=deadline, max_rounds=max_rounds)
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
    return _Optimum(cg, weights, float(bound), selectable, optimum)


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
