"""_Problem's feasibility methods (reconstruction/algorithms/panel/problem.py: ``meets``,
``feasible``, ``find``, ``decide``) on tiny pools with answers known by hand (issue 33:
problem.py's first mutation run). Milliseconds each, so mutation testing can use them."""

from __future__ import annotations

import numpy as np
import pytest

from reconstruction.algorithms.panel import limits
from reconstruction.algorithms.panel.problem import _MEETS_TOL, _Problem

# Two types: 3 women (posteriors 1, 0 for "woman", "man") and 3 men; panels of 4.
SEX = np.array([[1.0, 0.0], [0.0, 1.0]])


def problem(lower, upper, size=4, sizes=(3.0, 3.0), posteriors=SEX):
    return _Problem(
        np.asarray(sizes, dtype=float), np.asarray(posteriors, dtype=float), size,
        np.asarray(lower, dtype=float), np.asarray(upper, dtype=float),
    )  # fmt: skip


def test_a_panel_meets_the_bands_only_with_the_panels_size_and_seats_the_pool_has():
    p = problem([1, 1], [3, 3])
    assert p.meets(np.array([2, 2]))
    assert p.meets(np.array([3, 1])) and p.meets(np.array([1, 3]))
    assert not p.meets(np.array([2, 1]))  # 3 seats, not 4
    assert not p.meets(np.array([2, 3]))  # 5 seats
    assert not p.meets(np.array([4, 0]))  # 4 women: the pool has 3 (and the band says 3)
    wide = problem([0, 0], [4, 4])
    assert wide.meets(np.array([3, 1])) and not wide.meets(np.array([4, 0]))


def test_a_panel_meets_a_band_within_the_solvers_tolerance_and_not_beyond():
    inside, beyond = 0.5 * _MEETS_TOL, 2 * _MEETS_TOL
    panel = np.array([2, 2])  # 2 women, 2 men
    assert problem([2 + inside, 0], [4, 4]).meets(panel)
    assert not problem([2 + beyond, 0], [4, 4]).meets(panel)
    assert problem([0, 0], [4, 2 - inside]).meets(panel)
    assert not problem([0, 0], [4, 2 - beyond]).meets(panel)
    # Exactly at the tolerance (in doubles (2 + 1e-6) - 1e-6 and (2 - 1e-6) + 1e-6 are 2):
    # "within" the tolerance includes its edge: the band is met.
    assert problem([2 + _MEETS_TOL, 0], [4, 4]).meets(panel)
    assert problem([0, 0], [4, 2 - _MEETS_TOL]).meets(panel)


def test_only_the_active_quotas_are_checked():
    p = problem([3, 0], [3, 0])  # 3 women and no man: no panel of 4
    panel = np.array([3, 1])
    assert not p.meets(panel)
    assert p.meets(panel, np.array([True, False]))
    assert not p.meets(panel, np.array([False, True]))
    assert p.feasible(np.array([True, False]))  # 3 women and a man
    assert not p.feasible(np.array([False, True]))  # no man: 4 women, the pool has 3
    assert not p.feasible() and not p.feasible(np.array([True, True]))


def test_find_returns_a_panel_that_meets_the_bands_or_none_when_there_is_none():
    p = problem([3, 1], [3, 1])  # exactly 3 women and 1 man
    ok, panel = p.find()
    assert ok is True and panel is not None and panel.tolist() == [3, 1]
    assert p.decide() is True and p.feasible()
    none = problem([4, 0], [4, 4])  # 4 women: only 3 in the pool
    assert none.find() == (False, None)
    assert none.decide() is False and not none.feasible()
    ok, panel = none.find(np.array([False, True]))
    assert ok is True and none.meets(panel, np.array([False, True]))
    assert none.decide(np.array([False, True])) is True


def _hard() -> _Problem:
    # A panel exists (a panel's expected counts plus 0.13-0.17) that HiGHS does not find
    # at its root node (test_panel_refusal.py: a node-limited check is undecided).
    rng = np.random.default_rng(1)
    t = 30
    posteriors = rng.uniform(0, 1, (t, 3))
    sizes = rng.integers(1, 4, t).astype(float)
    x = np.zeros(t)
    x[rng.choice(t, 10, replace=False)] = 1
    counts = posteriors.T @ x
    return _Problem(sizes, posteriors, 10, counts + 0.13, counts + 0.17)


def test_a_check_stopped_by_the_node_limit_is_undecided(monkeypatch: pytest.MonkeyPatch):
    p = _hard()
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    assert p.find() == (None, None)
    assert p.decide() is None
    monkeypatch.setattr(limits, "DECIDE_NODES", 20_000)
    ok, panel = p.find()
    assert ok is True and p.meets(panel)


def test_find_gives_the_solver_the_time_left_and_at_least_the_floor(
    monkeypatch: pytest.MonkeyPatch,
):
    seen: list[float | None] = []
    solve = _Problem.solve

    def recording(self, weights, active=None, **options):
        seen.append(options.get("time_limit"))
        assert options.get("node_limit") == limits.DECIDE_NODES
        return solve(self, weights, active, **options)

    monkeypatch.setattr(_Problem, "solve", recording)
    monkeypatch.setattr(limits, "now", lambda: 1000.0)
    p = problem([1, 1], [3, 3])
    assert p.decide(deadline=1030.0) is True  # 30 s left
    assert p.decide(deadline=1000.2) is True  # 0.2 s left: the floor
    assert p.decide(deadline=900.0) is True  # past the deadline: the floor
    assert p.decide() is True  # no deadline: no wall-clock limit
    assert seen == [30.0, limits.DECIDE_FLOOR, limits.DECIDE_FLOOR, None]
