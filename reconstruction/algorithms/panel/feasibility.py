"""Relaxation and diagnosis: why no panel meets the quotas, and the smallest fix.

Pure module: numpy and scipy only (HiGHS through :mod:`scipy.optimize`).

When no panel's expected true counts meet every quota, the refusal
(:class:`~.results.InfeasibleQuotas`) names a minimal set of conflicting quotas
(:func:`_conflict`, a deletion filter over feasibility MILPs) and the smallest relaxation
of the bands in seats (:func:`_relaxation`, one MILP). Within the work limits of
:mod:`.limits`, an undecided check says so (:func:`_undecided`). Entry:
:func:`_check_feasible`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import Bounds, LinearConstraint, milp

from privacy.mechanisms.messages import Message, gettext_noop
from reconstruction.algorithms.panel import limits
from reconstruction.algorithms.panel.posteriors import _merge_types
from reconstruction.algorithms.panel.problem import _Problem
from reconstruction.algorithms.panel.results import (
    InfeasibleQuotas,
    PanelOptions,
    Quota,
    TooManyTypes,
)


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
    It stops at :data:`limits.DECIDE_NODES` nodes (the work limit) or, with ``deadline``
    (``limits.now()``), at the safety net (at least :data:`limits.DECIDE_FLOOR` seconds);
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
    options: dict[str, float] = {"node_limit": limits.DECIDE_NODES}
    if deadline is not None:
        options["time_limit"] = max(limits.DECIDE_FLOOR, deadline - limits.now())
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
    if result.x is None and limits.limit_reached(result):  # no relaxation found within the limits
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
    at most :data:`limits.DECIDE_NODES` nodes. A check it leaves undecided counts as "no
    panel" (the quota joins ``T``), so ``T`` may then be larger than needed; if ``T``
    is not proven infeasible in the end, the smallest set proven so is returned.

    Returns the conflict (sorted indices), whether it is proven minimal, and whether
    ``deadline`` (``limits.now()``, the safety net) stopped the search.
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
        return deadline is not None and limits.now() > deadline

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
    (``limits.now()``, from ``max_seconds``) is the safety net: past it the search
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
    clock = clock or (not relaxed.optimal and deadline is not None and limits.now() > deadline)
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
                {"diagnosis": message, "nodes": f"{limits.DECIDE_NODES}", "what": what},
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
    (``limits.now()``, from ``max_seconds``) passed.

    ``relaxed``: :func:`_relaxation` of the same problem. When it stopped at the limit
    with a relaxation that admits a panel (its incumbent, slack in whole seats), the
    refusal proposes that relaxation, saying it may not be the smallest (the elastic
    programme's first feasible point, Chinneck 2008, ch. 6), as :func:`_infeasible` does;
    ``relaxation`` then holds its bands. Otherwise the bands are returned unchanged.
    """
    clock = deadline is not None and limits.now() > deadline
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
            {"nodes": f"{limits.DECIDE_NODES}"},
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


def _quota_name(quotas: Sequence[Quota], j: int) -> str:
    return quotas[j].label or f"quota {j}"


# Merged types (:func:`~.posteriors._merge_types`): members' posteriors may spread over at
# most ``_MERGE_SEATS / size`` per quota, so the bands lose at most ``_MERGE_SEATS`` seats
# in total to the conservative rows (a panel's worst-case shift), and much less in practice.
_MERGE_SEATS = 0.5
_MERGE_CAP = 0.05


@dataclass(frozen=True)
class _Types:
    """The problem over candidate types, each candidate's type and the types' posteriors.

    ``unmerged``: the safety net stopped the check of merged types, so exact types were
    used where a run within the clock would have used the merged ones.
    """

    problem: _Problem
    type_of: NDArray[np.intp]
    type_posteriors: NDArray[np.float64]
    unmerged: bool


def _types_problem(
    matrix: NDArray[np.float64],
    quotas: Sequence[Quota],
    size: int,
    options: PanelOptions,
    deadline: float | None,
) -> _Types:
    """Group the candidates into types and check that the quotas admit a panel.

    Merged types first (without tightened bands, which are built on the types' mean
    posteriors); if they admit no panel, exact types, whose problem is also the one the
    infeasibility diagnosis speaks of (:func:`_check_feasible` raises
    :class:`~.results.InfeasibleQuotas`).
    """
    lower = np.array([qt.min for qt in quotas], dtype=np.float64)
    upper = np.array([qt.max for qt in quotas], dtype=np.float64)
    merge = options.merge and options.max_outside is None
    spread = min(_MERGE_CAP, _MERGE_SEATS / size) if merge else 0.0
    unmerged = False
    if spread > 0:
        type_of, type_posteriors, least, most = _merge_types(matrix, spread)
        _check_types(type_posteriors.shape[0], options)
        sizes = np.bincount(type_of, minlength=type_posteriors.shape[0]).astype(np.float64)
        merged = _Problem(sizes, type_posteriors, int(size), lower, upper, least=least, most=most)
        merged_feasible = merged.decide(deadline=deadline)
        if merged_feasible:
            return _Types(merged, type_of, type_posteriors, False)
        if merged_feasible is None and deadline is not None:
            unmerged = limits.now() > deadline
    type_of, type_posteriors, _, _ = _merge_types(matrix, 0.0)
    _check_types(type_posteriors.shape[0], options)
    sizes = np.bincount(type_of, minlength=type_posteriors.shape[0]).astype(np.float64)
    problem = _Problem(sizes, type_posteriors, int(size), lower, upper)
    _check_feasible(problem, quotas, deadline, options.max_seconds)
    return _Types(problem, type_of, type_posteriors, unmerged)


def _check_types(types: int, options: PanelOptions) -> None:
    """Refuse more types than ``options.max_types`` before any MILP runs."""
    if options.max_types is not None and types > options.max_types:
        raise TooManyTypes(types, options.max_types)
