"""The refusal of infeasible panel quotas (panel.py: ``_relaxation``, ``_conflict``,
``_infeasible``) against brute-force enumeration of every panel on small pools.

Brute force: every seat vector over the types (``x_t`` in ``0..sizes_t``, ``sum x =
size``) is enumerated; a set of quotas is feasible when one of them keeps every quota
of the set within its band (to the MILPs' tolerance of 1e-6), a conflict is a set that
is infeasible while every set with one quota fewer is feasible, and the smallest
relaxation is the fewest whole seats added to the bands that some panel needs.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privacy.mechanisms import AdditiveLaplace, randomised_response
from reconstruction.algorithms.panel import InfeasibleQuotas, Quota, limits, select_panel
from reconstruction.algorithms.panel.feasibility import (
    _check_feasible,
    _conflict,
    _infeasible,
    _relaxation,
    _Relaxed,
    _undecided,
)
from reconstruction.algorithms.panel.problem import _Problem
from reconstruction.algorithms.queries import (
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
)

TOL = 1e-6


def _panels(sizes: np.ndarray, size: int) -> np.ndarray:
    ranges = [range(int(s) + 1) for s in sizes]
    return np.array([x for x in itertools.product(*ranges) if sum(x) == size], dtype=float)


def _feasible(counts: np.ndarray, lower: np.ndarray, upper: np.ndarray, members) -> bool:  # type: ignore[no-untyped-def]
    j = list(members)
    if not j:
        return counts.shape[0] > 0
    inside = (counts[:, j] >= lower[j] - TOL) & (counts[:, j] <= upper[j] + TOL)
    return bool(inside.all(axis=1).any())


def _conflicts(counts: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> set[tuple[int, ...]]:
    """Every minimal infeasible set of quotas."""
    q = lower.size
    found: set[tuple[int, ...]] = set()
    for r in range(1, q + 1):
        for members in itertools.combinations(range(q), r):
            if not _feasible(counts, lower, upper, members) and all(
                _feasible(counts, lower, upper, set(members) - {j}) for j in members
            ):
                found.add(members)
    return found


def _smallest_relaxation(counts: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> int:
    down = np.ceil(np.maximum(lower - counts - TOL, 0.0))
    up = np.ceil(np.maximum(counts - upper - TOL, 0.0))
    return int((down + up).sum(axis=1).min())


def _instance(seed: int) -> tuple[_Problem, list[Quota]] | None:
    """A small pool of 6 types: posteriors on a grid of tenths, four quotas on two
    attributes (two bands each), bands of two or three seats; ``None`` when feasible."""
    rng = np.random.default_rng(seed)
    t, size = 6, 5
    sizes = rng.integers(1, 4, size=t).astype(float)
    posteriors = rng.integers(0, 11, size=(t, 4)) / 10.0
    lower = rng.integers(0, 4, size=4).astype(float)
    upper = lower + rng.integers(0, 2, size=4)
    problem = _Problem(sizes, posteriors, size, lower, upper)
    counts = _panels(sizes, size) @ posteriors
    if _feasible(counts, lower, upper, range(4)):
        return None
    attributes = ["sex", "sex", "district", "district"]
    quotas = [
        Quota((Condition(attributes[j], "in", {j % 2}),), int(lower[j]), int(upper[j]), f"q{j}")
        for j in range(4)
    ]
    return problem, quotas


def test_the_refusal_names_a_minimal_conflict_and_the_smallest_relaxation() -> None:
    checked = several = 0
    for seed in range(300):
        instance = _instance(seed)
        if instance is None:
            continue
        problem, quotas = instance
        counts = _panels(problem.sizes, problem.size) @ problem.posteriors
        lower, upper = problem.lower, problem.upper
        relaxed = _relaxation(problem)
        assert relaxed.infeasible is True and relaxed.optimal, seed
        error = _infeasible(problem, quotas, relaxed)
        assert error.complete, seed
        truth = _conflicts(counts, lower, upper)
        assert error.conflicting in truth, (seed, error.conflicting, truth)
        several += len(truth) > 1 and len(error.conflicting) > 1
        # The relaxation: only widens, admits a panel, and adds the fewest seats.
        new_lower = np.array([lo for lo, _ in error.relaxation], dtype=float)
        new_upper = np.array([hi for _, hi in error.relaxation], dtype=float)
        assert np.all(new_lower <= lower) and np.all(new_upper >= upper)
        assert _feasible(counts, new_lower, new_upper, range(4)), seed
        seats = int((lower - new_lower).sum() + (new_upper - upper).sum())
        assert seats == _smallest_relaxation(counts, lower, upper), seed
        # The message names exactly the conflicting quotas.
        named = str(error).split("conflict: ")[1].split(". Smallest")[0].split(", ")
        assert named == [quotas[j].label for j in error.conflicting]
        checked += 1
    # Enough infeasible pools, some with more than one conflict to choose from.
    assert checked >= 40 and several >= 3, (checked, several)


def test_any_order_of_the_search_gives_a_minimal_conflict() -> None:
    # The additive method is correct whatever order it tries the quotas in; the order
    # only decides which conflict it finds (and how fast): every order is checked here.
    seen = 0
    for seed in range(300):
        instance = _instance(seed)
        if instance is None:
            continue
        problem, _ = instance
        counts = _panels(problem.sizes, problem.size) @ problem.posteriors
        truth = _conflicts(counts, problem.lower, problem.upper)
        found = set()
        for order in itertools.permutations(range(4)):
            conflict, minimal, clock = _conflict(problem, order, [])
            assert minimal and not clock
            assert conflict in truth, (seed, order, conflict, truth)
            found.add(conflict)
        seen += len(found) > 1
        if seen >= 3:
            break
    assert seen >= 3  # orders that lead to different conflicts were among them


def test_a_node_limited_check_is_undecided_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    # HiGHS reports its node limit as "solution limit reached", which scipy passes on as
    # status 4 ("not recognized"); before, a feasibility MILP that hit the limit without
    # a panel raised "the panel MILP failed" instead of answering "undecided". These
    # bands (a panel's counts plus 0.13-0.17) admit a panel that HiGHS does not find at
    # its root node.
    rng = np.random.default_rng(1)
    t = 30
    posteriors = rng.uniform(0, 1, (t, 3))
    sizes = rng.integers(1, 4, t).astype(float)
    x = np.zeros(t)
    x[rng.choice(t, 10, replace=False)] = 1
    counts = posteriors.T @ x
    problem = _Problem(sizes, posteriors, 10, counts + 0.13, counts + 0.17)
    assert problem.decide() is True
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    assert problem.decide() is None
    assert problem.find() == (None, None)
    # A conflict search whose checks are undecided says so, and what it names still
    # conflicts: quota 3 (every posterior 0.5, at least 6 of 10 seats) cannot hold, the
    # other three can together. Tried first, quota 3 is found alone and proven; tried
    # last, the undecided checks of the first three leave all four named, not minimal.
    with_half = _Problem(
        sizes,
        np.column_stack([posteriors, np.full(t, 0.5)]),
        10,
        np.concatenate([counts + 0.13, [6.0]]),
        np.concatenate([counts + 0.17, [10.0]]),
    )
    assert _conflict(with_half, [3, 0, 1, 2], []) == ((3,), True, False)
    assert _conflict(with_half, [0, 1, 2, 3], []) == ((0, 1, 2, 3), False, False)
    quotas = [
        Quota((Condition(f"a{j}", "in", {0}),), int(lo), int(np.ceil(hi)), f"q{j}")
        for j, (lo, hi) in enumerate(zip(with_half.lower, with_half.upper, strict=True))
    ]
    error = _infeasible(with_half, quotas, _Relaxed([0] * 8, None, True, True))
    assert not error.complete and error.conflicting == (0, 1, 2, 3)
    assert "work limit of 1 branch-and-bound nodes per MILP" in str(error)
    assert "the conflicting quotas may not be the fewest" in str(error)
    assert "max_seconds" not in str(error)
    monkeypatch.setattr(limits, "DECIDE_NODES", 20_000)
    assert _conflict(with_half, [0, 1, 2, 3], []) == ((3,), True, False)


def test_an_undecided_refusal_proposes_the_relaxation_found_before_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The problem of the test above (a panel exists; HiGHS does not find it at its root
    # node). At a node limit of 1 the relaxation MILP still finds a relaxation of one seat
    # (its incumbent) without proving it the smallest or the bands infeasible, and the
    # feasibility MILP is undecided: hard random pools end so at 20,000 nodes. Before,
    # the refusal only said "widen the quotas" and returned the bands unchanged.
    rng = np.random.default_rng(1)
    t = 30
    posteriors = rng.uniform(0, 1, (t, 3))
    sizes = rng.integers(1, 4, t).astype(float)
    x = np.zeros(t)
    x[rng.choice(t, 10, replace=False)] = 1
    counts = posteriors.T @ x
    problem = _Problem(sizes, posteriors, 10, counts + 0.13, counts + 0.17)
    quotas = [
        Quota((Condition(f"a{j}", "in", {0}),), int(lo), int(np.ceil(hi)), f"q{j}")
        for j, (lo, hi) in enumerate(zip(problem.lower, problem.upper, strict=True))
    ]
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    relaxed = _relaxation(problem)
    assert relaxed.infeasible is None and not relaxed.optimal and relaxed.panel is not None
    down, up = np.array(relaxed.slack[:3]), np.array(relaxed.slack[3:])
    assert down.sum() + up.sum() >= 1
    assert problem.decide() is None
    with pytest.raises(InfeasibleQuotas) as caught:
        _check_feasible(problem, quotas)
    error = caught.value
    assert not error.complete and error.conflicting == ()
    assert error.relaxation == tuple(
        (quota.min - int(down[j]), quota.max + int(up[j])) for j, quota in enumerate(quotas)
    )
    changes = "; ".join(
        f"q{j}: {quota.min}-{quota.max} -> {quota.min - down[j]}-{quota.max + up[j]}"
        for j, quota in enumerate(quotas)
        if down[j] or up[j]
    )
    assert str(error) == (
        "no panel meeting the quotas on expected true counts was found within the work "
        "limit of 1 branch-and-bound nodes per MILP, nor was it proven that none exists; "
        "widen the quotas. A feasible relaxation was found before the limit (it may not "
        f"be the smallest): {changes}"
    )
    # What it proposes admits a panel: the relaxation's own panel meets the widened bands.
    widened = _Problem(sizes, posteriors, 10, problem.lower - down, problem.upper + up)
    assert widened.meets(relaxed.panel) and not problem.meets(relaxed.panel)
    from django.utils import translation

    from core.messages import translate

    with translation.override("de"):
        german = translate(error)
    with translation.override("pl"):
        polish = translate(error)
    assert "Vor der Grenze wurde eine erfüllbare Lockerung gefunden (sie ist vielleicht " in german
    assert german.endswith(changes) and "Arbeitsgrenze von 1 Branch-and-Bound-Knoten" in german
    assert "Przed osiągnięciem limitu znaleziono wykonalne złagodzenie" in polish
    assert polish.endswith(changes)
    # Without a relaxation found (none within the limit), the refusal is as before.
    plain = _undecided(quotas, None, None, _Relaxed([0] * 6, None, False, None))
    assert "relaxation" not in str(plain)
    assert plain.relaxation == tuple((quota.min, quota.max) for quota in quotas)


def _ages_table() -> dict[str, DiscreteAttribute | ContinuousAttribute]:
    rng = np.random.default_rng(11)
    n = 300
    ages = rng.integers(16, 86, size=n).astype(float)
    sex = (rng.random(n) < 0.4 + 0.3 * (ages > 50)).astype(np.intp)
    noise = AdditiveLaplace(70 / 3.0)
    keep = rng.random(n) < 0.9
    reported = np.where(keep, sex, 1 - sex).astype(np.intp)
    return {
        "age": ContinuousAttribute(noise.distort(ages, rng), noise, 16, 86, step=1),
        "sex": DiscreteAttribute(reported, randomised_response(2, 0.9)),
    }


class _Clock:
    """A stand-in for the ``time`` module that panel.py reads (see test_panel.py)."""

    def __init__(self, step: float) -> None:
        self.step, self.now, self.calls = step, 0.0, 0

    def monotonic(self) -> float:
        self.calls += 1
        self.now += self.step
        return self.now


# Every candidate's posteriors of the three age bands sum to 1, so the bands' expected
# counts sum to the 12 seats, and their minimums (5 + 4 + 4 = 13) cannot all hold; noisy
# ages spread every posterior over the bands, so fewer of them may already conflict.
QUOTAS = [
    Quota((Condition("sex", "in", {0}),), 4, 8, "women"),
    Quota((Condition("age", "between", (16, 40)),), 5, 7, "16-39"),
    Quota((Condition("age", "between", (40, 60)),), 4, 6, "40-59"),
    Quota((Condition("age", "between", (60, 86)),), 4, 6, "60-85"),
    Quota((Condition("sex", "in", {1}),), 4, 8, "men"),
]


def _refuse(monkeypatch: pytest.MonkeyPatch, clock: _Clock) -> InfeasibleQuotas:
    monkeypatch.setattr(limits, "time", clock)
    with pytest.raises(InfeasibleQuotas) as caught:
        select_panel(_ages_table(), 12, QUOTAS, rng=np.random.default_rng(3), max_seconds=100.0)
    return caught.value


def test_the_refusal_is_the_same_under_a_frozen_and_a_fast_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The diagnosis stops at work limits (MILP nodes), not at the clock: a machine so
    # busy that most of max_seconds passes during the run names the same quotas and
    # proposes the same relaxation, in the same words, as an infinitely fast one.
    frozen = _Clock(0.0)
    first = _refuse(monkeypatch, frozen)
    fast = _Clock(90.0 / max(frozen.calls, 1))
    second = _refuse(monkeypatch, fast)
    assert 0.0 < fast.now < 100.0  # the clock ran, the safety net did not fire
    assert first.complete and second.complete
    assert first.conflicting == second.conflicting
    assert first.relaxation == second.relaxation
    assert str(first) == str(second) and "max_seconds" not in str(first)
    # What it names conflicts, minimally (each smaller set admits a panel), and what it
    # proposes admits a panel, on the clock that panel.py really reads.
    monkeypatch.undo()
    named = [QUOTAS[j] for j in first.conflicting]
    assert first.conflicting and set(first.conflicting) <= {1, 2, 3}  # the sex bands can hold
    with pytest.raises(InfeasibleQuotas):
        select_panel(_ages_table(), 12, named, rng=np.random.default_rng(3))
    for j in range(len(named)):
        fewer = named[:j] + named[j + 1 :]
        assert select_panel(_ages_table(), 12, fewer, rng=np.random.default_rng(3)).rows.size == 12
    relaxed = [
        Quota(q.where, lo, hi, q.label)
        for q, (lo, hi) in zip(QUOTAS, first.relaxation, strict=True)
    ]
    assert select_panel(_ages_table(), 12, relaxed, rng=np.random.default_rng(3)).rows.size == 12
    # Past the safety net the same refusal stops and says so; what it names still
    # conflicts (the smallest set proven to: here all five quotas).
    late = _refuse(monkeypatch, _Clock(1000.0))
    assert not late.complete and "diagnosis stopped at max_seconds=100" in str(late)
    assert "this refusal may not be reproducible" in str(late)
    assert "may not be reproducible" not in str(first)
    assert set(late.conflicting) >= set(first.conflicting)
