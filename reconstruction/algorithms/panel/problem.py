"""The panel problem over candidate types and its feasibility MILP.

Pure module: numpy and scipy only (HiGHS through :mod:`scipy.optimize`).

A panel is a vector of seats per *type* (candidates with the same posteriors, see
:mod:`.posteriors`); :class:`_Problem` holds the quota rows on expected true counts
(the bands of Flanigan, Gölz, Gupta, Hennig and Procaccia, Nature 596 (2021), imposed on
sums of posteriors because answers are distorted, 001_28af1923c784b480.txt, Section IV-B),
the optional tightened rows (:mod:`.bands`), and the MILPs that decide whether a panel
exists and find one, within the work limits of :mod:`.limits`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from reconstruction.algorithms.panel import limits

# A cached panel meets a band when its expected count is within this of the band: the
# MILPs' own feasibility tolerance (HiGHS' mip_feasibility_tolerance is 1e-6).
_MEETS_TOL = 1e-6


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
        if result.x is None and limits.limit_reached(result):
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
        found one nor proved there is none within :data:`limits.DECIDE_NODES` branch-and-bound
        nodes (deterministic) or before ``deadline`` (``limits.now()``, the safety
        net; at least :data:`limits.DECIDE_FLOOR` seconds are always allowed)."""
        limit = None if deadline is None else max(limits.DECIDE_FLOOR, deadline - limits.now())
        panel, bound = self.solve(
            np.zeros(self.sizes.size), active, time_limit=limit, node_limit=limits.DECIDE_NODES
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
