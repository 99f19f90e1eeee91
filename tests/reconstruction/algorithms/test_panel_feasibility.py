"""The refusal of infeasible panel quotas on tiny pools whose answers are known by hand
(panel/feasibility.py: ``_relaxation``, ``_conflict``, ``_infeasible``, ``_undecided``,
``_check_feasible``, ``_types_problem``; issue 33).

Each pool has two or three types of candidates with 0/1 posteriors, so every band's
expected count is a number of seats and the smallest relaxation and the conflicting
quotas can be read off. test_panel_refusal.py checks the same functions against brute
force on random pools; these run in milliseconds, so mutation testing can use them.
"""

from __future__ import annotations

import numpy as np
import pytest

from reconstruction.algorithms.panel import InfeasibleQuotas, Quota, limits
from reconstruction.algorithms.panel.feasibility import (
    _check_feasible,
    _conflict,
    _infeasible,
    _relaxation,
    _Relaxed,
    _types_problem,
    _undecided,
)
from reconstruction.algorithms.panel.problem import _Problem
from reconstruction.algorithms.panel.results import PanelOptions, TooManyTypes
from reconstruction.algorithms.queries import Condition

# Two types: 3 women (posterior of "woman" 1, of "man" 0) and 3 men.
SIZES = np.array([3.0, 3.0])
SEX = np.array([[1.0, 0.0], [0.0, 1.0]])


def problem(lower, upper, size=4, sizes=SIZES, posteriors=SEX):
    return _Problem(
        np.asarray(sizes, dtype=float), np.asarray(posteriors, dtype=float), size,
        np.asarray(lower, dtype=float), np.asarray(upper, dtype=float),
    )  # fmt: skip


def quotas(bands, attributes=("sex", "sex"), labels=("women", "men")):
    return [
        Quota((Condition(attribute, "in", {j}),), lo, hi, label)
        for j, ((lo, hi), attribute, label) in enumerate(
            zip(bands, attributes, labels, strict=True)
        )
    ]


def seats(relaxed: _Relaxed) -> int:
    return sum(relaxed.slack)


# ------------------------------------------------------------------------- _relaxation


def test_bands_a_panel_meets_need_no_relaxation():
    p = problem([1, 1], [3, 3])
    relaxed = _relaxation(p)
    assert relaxed.slack == [0, 0, 0, 0]
    assert relaxed.infeasible is False and relaxed.optimal
    assert relaxed.panel is not None and p.meets(relaxed.panel)


def test_minimums_too_high_are_lowered_by_the_fewest_seats():
    # 3 women and 3 men on a panel of 4 cannot both be met: 2 seats of minimum go
    p = problem([3, 3], [3, 3])
    relaxed = _relaxation(p)
    assert relaxed.infeasible is True and relaxed.optimal
    down, up = relaxed.slack[:2], relaxed.slack[2:]
    assert sum(down) == 2 and up == [0, 0]
    assert relaxed.panel is not None and relaxed.panel.sum() == 4
    widened = problem(p.lower - down, p.upper + up)
    assert widened.meets(relaxed.panel)


def test_maximums_too_low_are_raised_by_the_fewest_seats():
    # at most 1 woman and 1 man on a panel of 4: 2 seats of maximum are added
    p = problem([0, 0], [1, 1])
    relaxed = _relaxation(p)
    down, up = relaxed.slack[:2], relaxed.slack[2:]
    assert down == [0, 0] and sum(up) == 2
    assert relaxed.infeasible is True and relaxed.optimal
    assert problem(p.lower, p.upper + up).meets(relaxed.panel)


def test_one_band_relaxed_on_one_side_only():
    # women 3-3 on a panel of 4 with 3 men at least 2: one seat off the women's minimum
    # (or the men's): 1 seat in all
    p = problem([3, 2], [3, 4])
    relaxed = _relaxation(p)
    assert seats(relaxed) == 1 and relaxed.infeasible is True


def test_the_panel_size_is_a_hard_constraint_of_the_relaxation():
    # women 0-0 and men 0-0: every seat is a relaxation; a panel of 4 needs 4 seats
    relaxed = _relaxation(problem([0, 0], [0, 0]))
    assert seats(relaxed) == 4 and relaxed.panel.sum() == 4


def test_the_relaxation_keeps_the_pool_sizes():
    # 1 woman in the pool: a panel of 3 with at least 2 women needs 1 seat of relaxation,
    # however many men there are
    p = problem([2, 0], [3, 3], size=3, sizes=[1.0, 5.0])
    relaxed = _relaxation(p)
    assert relaxed.slack == [1, 0, 0, 0]
    assert list(relaxed.panel) == [1, 2]


def test_a_relaxation_past_the_deadline_still_gets_its_floor():
    # the safety net allows at least limits.DECIDE_FLOOR seconds, even past the deadline
    relaxed = _relaxation(problem([3, 3], [3, 3]), deadline=limits.now() - 100.0)
    assert relaxed.optimal and seats(relaxed) == 2


def test_a_relaxation_with_time_left_is_the_same():
    relaxed = _relaxation(problem([3, 3], [3, 3]), deadline=limits.now() + 100.0)
    assert relaxed.optimal and seats(relaxed) == 2 and relaxed.infeasible is True


# ------------------------------------------------------------------------- _conflict

# Three types: women (also "young"), men, and nobody-in-particular.
THREE = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])


def test_a_quota_that_cannot_hold_alone_is_the_conflict_whatever_the_order():
    # quota 2: at least 5 young people, but only 3 exist
    p = problem([0, 0, 5], [4, 4, 6], size=4, sizes=[3, 3, 3], posteriors=THREE)
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        assert _conflict(p, order, []) == ((2,), True, False), order


def test_two_quotas_that_conflict_together_are_named_together():
    # at least 3 women and at least 3 men on a panel of 4; "young" at most 4 holds
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        assert _conflict(p, order, []) == ((0, 1), True, False), order


def test_of_two_conflicts_the_search_finds_one():
    # women >= 3 with young <= 2 conflict (women are young); women >= 3 and men >= 3 too
    p = problem([3, 3, 0], [4, 4, 2], size=4, sizes=[3, 3, 3], posteriors=THREE)
    assert _conflict(p, [0, 1, 2], [])[0] == (0, 1)
    assert _conflict(p, [0, 2, 1], [])[0] == (0, 2)
    assert _conflict(p, [2, 0, 1], [])[0] == (0, 2)


def test_a_cached_panel_answers_a_check_without_changing_the_result():
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    panels = [np.array([3, 1, 0])]  # meets quotas 0 and 2, not 1
    assert _conflict(p, [0, 2, 1], panels) == ((0, 1), True, False)
    # panels found on the way are kept for the caller
    assert len(panels) >= 1 and all(p.meets(x, np.array([True, False, True])) for x in panels[:1])


def test_a_wrong_cached_panel_is_not_believed():
    # a "panel" of the wrong size or beyond the pool meets nothing
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    bogus = [np.array([3, 3, 0]), np.array([4, 0, 0])]
    assert _conflict(p, [0, 1, 2], bogus) == ((0, 1), True, False)


def test_a_conflict_search_past_its_deadline_names_every_quota_and_says_so():
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    assert _conflict(p, [0, 1, 2], [], deadline=limits.now() - 1.0) == ((0, 1, 2), False, True)
    assert _conflict(p, [0, 1, 2], [], deadline=limits.now() + 100.0) == ((0, 1), True, False)


def test_with_no_quota_to_blame_the_panel_size_is():
    # a panel of 4 from a pool of 3: infeasible before any quota
    p = problem([0], [4], size=4, sizes=[3.0], posteriors=[[1.0]])
    assert _conflict(p, [0], []) == ((), True, False)


# ------------------------------------------------------------------ _infeasible, messages


def test_the_refusal_names_the_conflict_and_the_relaxation():
    p = problem([3, 2], [3, 4])
    qs = quotas([(3, 3), (2, 4)])
    relaxed = _relaxation(p)
    error = _infeasible(p, qs, relaxed)
    assert error.complete
    assert error.conflicting == (0, 1)
    down, up = relaxed.slack[:2], relaxed.slack[2:]
    assert error.relaxation == ((3 - down[0], 3 + up[0]), (2 - down[1], 4 + up[1]))
    assert sum(down) == 1 and up == [0, 0]
    moved = "women: 3-3 -> 2-3" if down[0] else "men: 2-4 -> 1-4"
    assert str(error) == (
        "no panel of 4 meets the quotas on expected true counts; these quotas conflict: "
        f"women, men. Smallest feasible relaxation: {moved}"
    )


def test_quotas_without_a_label_are_named_by_their_index():
    p = problem([3, 3], [3, 3])
    qs = quotas([(3, 3), (3, 3)], labels=("", ""))
    error = _infeasible(p, qs, _relaxation(p))
    assert "these quotas conflict: quota 0, quota 1." in str(error)
    assert "quota 0: 3-3 -> " in str(error) or "quota 1: 3-3 -> " in str(error)


def test_the_refusal_says_when_the_relaxation_may_not_be_the_smallest():
    p = problem([3, 3], [3, 3])
    qs = quotas([(3, 3), (3, 3)])
    found = _Relaxed([2, 1, 0, 0], np.array([1, 3]), False, True)
    error = _infeasible(p, qs, found)
    assert not error.complete and error.conflicting == (0, 1)
    assert error.relaxation == ((1, 3), (2, 3))
    assert str(error).endswith(
        "Smallest feasible relaxation: women: 3-3 -> 1-3; men: 3-3 -> 2-3 (the diagnosis "
        f"reached its work limit of {limits.DECIDE_NODES} branch-and-bound nodes per MILP: "
        "the relaxation may not be the smallest)"
    )


def test_the_refusal_says_when_the_clock_stopped_the_diagnosis():
    p = problem([3, 3], [3, 3])
    qs = quotas([(3, 3), (3, 3)])
    relaxed = _relaxation(p)
    late = limits.now() - 1.0
    error = _infeasible(p, qs, relaxed, deadline=late, max_seconds=2.5)
    assert not error.complete and error.conflicting == (0, 1)
    assert (
        "(diagnosis stopped at max_seconds=2.5: the conflicting quotas may not be the "
        "fewest; where the clock stops it depends on the machine's load, so this refusal "
        "may not be reproducible)"
    ) in str(error)
    unknown = _infeasible(p, qs, relaxed, deadline=late)
    assert "max_seconds=?" in str(unknown)
    # both unproven: both said
    both = _infeasible(p, qs, _Relaxed([1, 1, 0, 0], np.array([2, 2]), False, True), deadline=late)
    assert (
        "the conflicting quotas may not be the fewest, the relaxation may not be the "
        "smallest" in str(both)
    )


def test_an_unfinished_relaxation_past_the_deadline_counts_as_the_clock():
    # the conflict search is complete, but the relaxation stopped unproven after the
    # deadline passed: the message blames the clock, not the node limit
    p = problem([3, 3], [3, 3])
    qs = quotas([(3, 3), (3, 3)])
    unproven = _Relaxed([1, 1, 0, 0], np.array([2, 2]), False, True)
    error = _infeasible(p, qs, unproven, deadline=limits.now() + 100.0)
    assert "work limit" in str(error) and "max_seconds" not in str(error)


def test_the_search_tries_what_the_relaxation_moves_first():
    # two conflicts: {women >= 3, men >= 3} and {young <= 2 (women are young), women >= 3}
    # The relaxation given moves the men's band only, so the conflict named contains it.
    p = problem([3, 3, 0], [4, 4, 2], size=4, sizes=[3, 3, 3], posteriors=THREE)
    qs = [
        Quota((Condition("sex", "in", {0}),), 3, 4, "women"),
        Quota((Condition("sex", "in", {1}),), 3, 4, "men"),
        Quota((Condition("age", "lte", 30),), 0, 2, "young"),
    ]
    men_moved = _Relaxed([0, 1, 0, 0, 0, 0], None, True, True)
    assert _infeasible(p, qs, men_moved).conflicting == (0, 1)
    young_moved = _Relaxed([0, 0, 0, 0, 0, 1], None, True, True)
    assert _infeasible(p, qs, young_moved).conflicting == (0, 2)


def test_the_relaxations_panel_is_handed_to_the_search():
    # the relaxation's panel meets no quota set that conflicts, so using it changes nothing
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    qs = quotas([(3, 4), (3, 4), (0, 4)], ("sex", "sex", "age"), ("women", "men", "young"))
    relaxed = _relaxation(p)
    assert relaxed.panel is not None
    assert _infeasible(p, qs, relaxed).conflicting == (0, 1)


# --------------------------------------------------------------------------- _undecided


def test_an_undecided_check_within_the_work_limit_says_so():
    qs = quotas([(3, 3), (3, 3)])
    error = _undecided(qs, None, None)
    assert error.complete is False and error.conflicting == ()
    assert error.relaxation == ((3, 3), (3, 3))
    assert str(error) == (
        "no panel meeting the quotas on expected true counts was found within the work "
        f"limit of {limits.DECIDE_NODES} branch-and-bound nodes per MILP, nor was it "
        "proven that none exists; widen the quotas"
    )


def test_an_undecided_check_past_the_deadline_says_so():
    qs = quotas([(3, 3), (3, 3)])
    error = _undecided(qs, 2.5, limits.now() - 1.0)
    assert str(error) == (
        "no panel meeting the quotas on expected true counts was found within "
        "max_seconds=2.5, nor was it proven that none exists; widen the quotas or allow "
        "more time"
    )
    assert "max_seconds=?" in str(_undecided(qs, None, limits.now() - 1.0))
    # before the deadline: the work limit
    assert "work limit" in str(_undecided(qs, 2.5, limits.now() + 100.0))


def test_an_undecided_check_proposes_a_relaxation_only_when_one_was_found():
    qs = quotas([(3, 3), (3, 3)])
    found = _Relaxed([1, 0, 0, 2], np.array([2, 2]), False, None)
    error = _undecided(qs, None, None, found)
    assert error.relaxation == ((2, 3), (3, 5))
    assert str(error).endswith(
        "A feasible relaxation was found before the limit (it may not be the smallest): "
        "women: 3-3 -> 2-3; men: 3-3 -> 3-5"
    )
    # no slack (nothing to propose) or no panel: the bands unchanged
    for relaxed in (_Relaxed([0, 0, 0, 0], np.array([2, 2]), False, None),
                    _Relaxed([1, 0, 0, 2], None, False, None)):  # fmt: skip
        plain = _undecided(qs, None, None, relaxed)
        assert plain.relaxation == ((3, 3), (3, 3)) and "relaxation" not in str(plain)


# ---------------------------------------------------------------------- _check_feasible


def test_feasible_bands_pass():
    assert _check_feasible(problem([1, 1], [3, 3]), quotas([(1, 3), (1, 3)])) is None


def test_infeasible_bands_are_refused_with_the_diagnosis():
    with pytest.raises(InfeasibleQuotas) as caught:
        _check_feasible(problem([3, 3], [3, 3]), quotas([(3, 3), (3, 3)]), max_seconds=9.0)
    assert caught.value.complete and caught.value.conflicting == (0, 1)
    assert "Smallest feasible relaxation" in str(caught.value)


def test_an_undecided_relaxation_falls_back_to_the_plain_check(monkeypatch):
    import reconstruction.algorithms.panel.feasibility as feasibility

    undecided = _Relaxed([0, 0, 0, 0], None, False, None)
    monkeypatch.setattr(feasibility, "_relaxation", lambda problem, deadline=None: undecided)
    assert _check_feasible(problem([1, 1], [3, 3]), quotas([(1, 3), (1, 3)])) is None
    with pytest.raises(InfeasibleQuotas) as caught:
        _check_feasible(problem([3, 3], [3, 3]), quotas([(3, 3), (3, 3)]))
    assert caught.value.conflicting == (0, 1)


# ---------------------------------------------------------------------- _types_problem


def _candidates():
    # 3 women and 3 men, each posterior a little off 0/1 (as distorted answers give)
    return np.array(
        [[0.99, 0.01], [0.98, 0.02], [0.985, 0.015], [0.01, 0.99], [0.02, 0.98], [0.015, 0.985]]
    )


def test_near_equal_candidates_are_merged_into_types():
    qs = quotas([(1, 3), (1, 3)])
    types = _types_problem(_candidates(), qs, 4, PanelOptions(), None)
    assert not types.unmerged
    assert list(types.type_of) == [0, 0, 0, 1, 1, 1] or list(types.type_of) == [1, 1, 1, 0, 0, 0]
    assert types.problem.sizes.tolist() in ([3.0, 3.0],)
    assert types.problem.least is not None  # merged: bands on the members' extremes
    # the problem's posteriors are the types' mean posteriors
    np.testing.assert_allclose(types.problem.posteriors, types.type_posteriors)
    np.testing.assert_allclose(types.type_posteriors[types.type_of[0]], [0.985, 0.015])


def test_merging_works_with_more_quotas_than_types():
    qs = [*quotas([(1, 3), (1, 3)]), Quota((Condition("sex", "in", {0}),), 0, 4, "anyone")]
    matrix = np.column_stack([_candidates(), np.ones(6)])
    types = _types_problem(matrix, qs, 4, PanelOptions(), None)
    assert types.problem.sizes.tolist() == [3.0, 3.0]
    assert types.problem.decide() is True


def test_merged_types_are_used_only_when_every_choice_of_members_meets_the_bands():
    # 40 candidates, posteriors 0.497 and 0.503 (one merged type: mean 0.5, extremes
    # 0.497..0.503); a panel of all 40 must have exactly 20 expected: the means say yes,
    # the members' extremes (19.88..20.12) say no, so the exact types are used
    matrix = np.repeat([[0.497], [0.503]], 20, axis=0)
    qs = [Quota((Condition("x", "in", {0}),), 20, 20, "half")]
    types = _types_problem(matrix, qs, 40, PanelOptions(), None)
    assert types.problem.least is None
    assert len(set(types.type_of.tolist())) == 2 and types.problem.decide() is True


def test_without_merging_each_posterior_is_its_own_type():
    qs = quotas([(1, 3), (1, 3)])
    for options in (PanelOptions(merge=False), PanelOptions(max_outside=0.2)):
        types = _types_problem(_candidates(), qs, 4, options, None)
        assert len(set(types.type_of.tolist())) == 6, options
        assert types.problem.least is None


def test_when_merged_types_admit_no_panel_exact_types_are_used():
    # Two women (posteriors 1.0 and 0.98, within the merging radius) and a man; exactly
    # one expected woman on a panel of 2: the woman of 1.0 with the man. Merged, the
    # band's lower edge is imposed on the smaller member (0.98): no panel; exact: one.
    matrix = np.array([[1.0], [0.98], [0.0]])
    qs = [Quota((Condition("sex", "in", {0}),), 1, 1, "women")]
    types = _types_problem(matrix, qs, 2, PanelOptions(), None)
    assert types.problem.least is None
    assert len(set(types.type_of.tolist())) == 3
    assert types.problem.decide() is True and not types.unmerged


def test_infeasible_quotas_are_refused_on_exact_types():
    # at least 2 expected women and 2 expected men on a panel of 3
    qs = quotas([(2, 4), (2, 4)])
    with pytest.raises(InfeasibleQuotas) as caught:
        _types_problem(_candidates(), qs, 3, PanelOptions(), None)
    assert caught.value.conflicting == (0, 1)
    assert "no panel of 3 meets" in str(caught.value)


HALF = [Quota((Condition("x", "in", {0}),), 20, 20, "half")]
FORTY = np.repeat([[0.497], [0.503]], 20, axis=0)  # one merged type the bands reject


def test_a_decided_merged_check_past_the_deadline_is_not_blamed_on_the_clock():
    types = _types_problem(FORTY, HALF, 40, PanelOptions(), limits.now() - 10.0)
    assert types.problem.least is None and types.unmerged is False


@pytest.mark.parametrize(("offset", "clocked"), [(None, False), (100.0, False), (-10.0, True)])
def test_an_undecided_merged_check_is_blamed_on_the_clock_only_past_the_deadline(
    monkeypatch, offset, clocked
):
    # the merged types' check ends undecided (as at the work limit on a hard pool): exact
    # types are used; the notes say the clock decided that only when it had run out
    real = _Problem.decide

    def decide(self, active=None, *, deadline=None):
        return None if self.least is not None else real(self, active, deadline=deadline)

    monkeypatch.setattr(_Problem, "decide", decide)
    deadline = None if offset is None else limits.now() + offset
    types = _types_problem(_candidates(), quotas([(1, 3), (1, 3)]), 4, PanelOptions(), deadline)
    assert types.problem.least is None
    assert bool(types.unmerged) is clocked


# ------------------------------------------------- work limits and the safety net (a pool
# that HiGHS does not solve at its root node: test_panel_refusal.py's)


def _hard(extra_half_quota: bool = False) -> _Problem:
    rng = np.random.default_rng(1)
    t = 30
    posteriors = rng.uniform(0, 1, (t, 3))
    sizes = rng.integers(1, 4, t).astype(float)
    x = np.zeros(t)
    x[rng.choice(t, 10, replace=False)] = 1
    counts = posteriors.T @ x
    if not extra_half_quota:
        return _Problem(sizes, posteriors, 10, counts + 0.13, counts + 0.17)
    # plus 'at least 6 of 10 seats' on a quota every candidate meets with 0.5: even the
    # LP relaxation needs a seat of slack, so the root's dual bound proves infeasibility
    return _Problem(
        sizes,
        np.column_stack([posteriors, np.full(t, 0.5)]),
        10,
        np.concatenate([counts + 0.13, [6.0]]),
        np.concatenate([counts + 0.17, [10.0]]),
    )


def test_a_relaxation_stopped_early_is_proven_infeasible_by_its_dual_bound(monkeypatch):
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    relaxed = _relaxation(_hard(extra_half_quota=True))
    assert relaxed.optimal is False
    assert relaxed.infeasible is True  # the bound, not the (unproven) optimum, says so
    # without the LP-infeasible quota nothing is proven at one node
    assert _relaxation(_hard()).infeasible is None


def test_past_the_deadline_with_no_floor_left_the_relaxation_stops_with_nothing(monkeypatch):
    monkeypatch.setattr(limits, "DECIDE_FLOOR", 0.0)
    stopped = _relaxation(_hard(), deadline=limits.now() - 10.0)
    assert stopped == _Relaxed([0] * 6, None, False, None)
    # before the deadline the same MILP finishes: a panel meets the bands
    done = _relaxation(_hard(), deadline=limits.now() + 100.0)
    assert done.optimal is True and done.infeasible is False


def test_past_the_deadline_the_check_is_undecided_and_says_max_seconds(monkeypatch):
    monkeypatch.setattr(limits, "DECIDE_FLOOR", 0.0)
    problem = _hard()
    qs = [Quota((Condition(f"a{j}", "in", {0}),), 0, 10, f"q{j}") for j in range(3)]
    with pytest.raises(InfeasibleQuotas) as caught:
        _check_feasible(problem, qs, deadline=limits.now() - 10.0, max_seconds=3.0)
    assert caught.value.complete is False and caught.value.conflicting == ()
    assert "was found within max_seconds=3, nor was it proven" in str(caught.value)
    # with time left it passes
    assert _check_feasible(problem, qs, deadline=limits.now() + 100.0, max_seconds=3.0) is None


def test_a_decided_relaxation_is_trusted_whatever_the_plain_check_would_say(monkeypatch):
    # the plain feasibility MILP is only asked when the relaxation left it open
    monkeypatch.setattr(_Problem, "decide", lambda self, active=None, *, deadline=None: None)
    with pytest.raises(InfeasibleQuotas) as caught:
        _check_feasible(problem([3, 3], [3, 3]), quotas([(3, 3), (3, 3)]))
    assert caught.value.complete and caught.value.conflicting == (0, 1)
    assert _check_feasible(problem([1, 1], [3, 3]), quotas([(1, 3), (1, 3)])) is None


def _found_panel() -> np.ndarray:
    ok, panel = _hard().find()
    assert ok and panel is not None
    return panel


def test_at_the_node_limit_the_conflict_search_says_when_a_check_was_undecided(monkeypatch):
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    problem = _hard(extra_half_quota=True)
    # quota 3 tried first is proven alone; tried last, the undecided checks of the first
    # three leave all four named, not minimal
    assert _conflict(problem, [3, 0, 1, 2], []) == ((3,), True, False)
    assert _conflict(problem, [0, 1, 2, 3], []) == ((0, 1, 2, 3), False, False)


def test_a_cached_panel_decides_what_the_node_limit_leaves_open(monkeypatch):
    # a panel meeting quotas 0-2 (found without the limit) answers those checks, so the
    # search proves quota 3 alone even at one node per MILP
    panel = _found_panel()
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    problem = _hard(extra_half_quota=True)
    assert _conflict(problem, [0, 1, 2, 3], [panel]) == ((3,), True, False)
    # the refusal hands the relaxation's panel to the search the same way
    qs = [Quota((Condition(f"a{j}", "in", {0}),), 0, 10, f"q{j}") for j in range(4)]
    error = _infeasible(problem, qs, _Relaxed([0] * 8, panel, True, True))
    assert error.conflicting == (3,) and error.complete


def test_a_conflict_search_overtaken_by_the_deadline_midway_still_names_a_conflict(monkeypatch):
    calls = []

    def now():
        calls.append(None)
        return 0.0 if len(calls) <= 2 else 1000.0

    monkeypatch.setattr(limits, "now", now)
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    assert _conflict(p, [0, 1, 2], [], deadline=500.0) == ((0, 1, 2), False, True)


def test_a_relaxation_stopped_at_the_node_limit_keeps_what_it_found(monkeypatch):
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    relaxed = _relaxation(_hard())
    assert relaxed.optimal is False and relaxed.infeasible is None
    assert relaxed.panel is not None and sum(relaxed.slack) >= 1


def test_the_undecided_refusal_proposes_the_relaxation_found(monkeypatch):
    monkeypatch.setattr(limits, "DECIDE_NODES", 1)
    qs = [Quota((Condition(f"a{j}", "in", {0}),), 0, 10, f"q{j}") for j in range(3)]
    with pytest.raises(InfeasibleQuotas) as caught:
        _check_feasible(_hard(), qs)
    assert "A feasible relaxation was found before the limit" in str(caught.value)


def test_a_refusal_past_the_deadline_says_the_clock_stopped_it_and_names_max_seconds():
    with pytest.raises(InfeasibleQuotas) as caught:
        _check_feasible(problem([3, 3], [3, 3]), quotas([(3, 3), (3, 3)]), limits.now() - 1.0, 2.5)
    assert caught.value.complete is False
    assert "diagnosis stopped at max_seconds=2.5" in str(caught.value)


def test_raised_maximums_are_the_relaxations_upper_bands():
    p = problem([0, 0], [1, 1])
    relaxed = _relaxation(p)
    up = relaxed.slack[2:]
    error = _infeasible(p, quotas([(0, 1), (0, 1)]), relaxed)
    assert error.relaxation == ((0, 1 + up[0]), (0, 1 + up[1]))
    assert sum(up) == 2


def test_a_refusal_without_a_relaxation_says_none_was_found():
    p = problem([3, 3], [3, 3])
    error = _infeasible(p, quotas([(3, 3), (3, 3)]), _Relaxed([0, 0, 0, 0], None, True, True))
    assert str(error).endswith("Smallest feasible relaxation: none found within the panel size")
    assert error.relaxation == ((3, 3), (3, 3))


def test_an_undecided_check_proposes_a_relaxation_of_one_seat():
    qs = quotas([(3, 3), (3, 3)])
    error = _undecided(qs, None, None, _Relaxed([1, 0, 0, 0], np.array([2, 2]), False, None))
    assert error.relaxation == ((2, 3), (3, 3))


def test_the_search_tries_the_moved_quotas_attribute_before_the_others():
    # women >= 3 (sex), young <= 2 (age; the women are young), men >= 3 (sex): women conflict
    # with the young band and with the men's. The relaxation moved the women's band: the
    # search tries the other sex band next, so it names women and men.
    posteriors = [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    p = problem([3, 0, 3], [4, 2, 4], size=4, sizes=[3, 3, 3], posteriors=posteriors)
    qs = [
        Quota((Condition("sex", "in", {0}),), 3, 4, "women"),
        Quota((Condition("age", "lte", 30),), 0, 2, "young"),
        Quota((Condition("sex", "in", {1}),), 3, 4, "men"),
    ]
    women_moved = _Relaxed([1, 0, 0, 0, 0, 0], None, True, True)
    assert _infeasible(p, qs, women_moved).conflicting == (0, 2)


def test_the_merging_radius_shrinks_with_the_panel_size():
    # at a panel of 40 the merged types may lose at most half a seat in all: posteriors
    # 0.49 and 0.51 stay two types (merged, their extremes would miss the band of 20)
    matrix = np.repeat([[0.49], [0.51]], 20, axis=0)
    types = _types_problem(matrix, HALF, 40, PanelOptions(), None)
    assert types.problem.least is not None  # the merged check passed ...
    assert len(set(types.type_of.tolist())) == 2  # ... without merging these two


def test_exact_types_with_more_quotas_than_types():
    matrix = np.repeat([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], 3, axis=0)
    qs = [*quotas([(1, 3), (1, 3)]), Quota((Condition("sex", "in", {0}),), 0, 4, "anyone")]
    types = _types_problem(matrix, qs, 4, PanelOptions(merge=False), None)
    assert types.problem.sizes.tolist() == [3.0, 3.0]
    np.testing.assert_allclose(types.type_posteriors, types.problem.posteriors)


def test_a_refusal_on_exact_types_is_diagnosed_within_the_requests_time():
    qs = quotas([(2, 4), (2, 4)])
    options = PanelOptions(max_seconds=2.5)
    with pytest.raises(InfeasibleQuotas) as caught:
        _types_problem(_candidates(), qs, 3, options, limits.now() + 100.0)
    assert caught.value.complete and "max_seconds" not in str(caught.value)
    with pytest.raises(InfeasibleQuotas) as caught:
        _types_problem(_candidates(), qs, 3, options, limits.now() - 1.0)
    assert "diagnosis stopped at max_seconds=2.5" in str(caught.value)


# --------------------------------------------------------------------- max_types (issue 32)


def test_merged_types_past_max_types_are_refused_before_any_milp(monkeypatch):
    # 3 women and 3 men make two merged types; a third quota column ("anyone") changes
    # the number of quotas, not of types
    matrix = np.column_stack([_candidates(), np.ones(6)])
    qs = [*quotas([(1, 3), (1, 3)]), Quota((Condition("sex", "in", {0}),), 0, 4, "anyone")]
    assert _types_problem(matrix, qs, 4, PanelOptions(max_types=2), None).problem.sizes.size == 2
    monkeypatch.setattr(_Problem, "decide", lambda self, active=None, *, deadline=None: 1 / 0)
    with pytest.raises(TooManyTypes) as refused:
        _types_problem(matrix, qs, 4, PanelOptions(max_types=1), None)
    assert (refused.value.types, refused.value.max_types) == (2, 1)
    assert str(refused.value) == "2 candidate types, more than max_types=1"


@pytest.mark.parametrize("options", [{"merge": False}, {"max_outside": 0.2}])
def test_exact_types_past_max_types_are_refused_too(monkeypatch, options):
    # without merging each of the 6 posteriors is a type (test above: 2 merged)
    matrix = np.column_stack([_candidates(), np.ones(6)])
    qs = [*quotas([(1, 3), (1, 3)]), Quota((Condition("sex", "in", {0}),), 0, 4, "anyone")]
    exact = _types_problem(matrix, qs, 4, PanelOptions(max_types=6, **options), None)
    assert exact.problem.sizes.size == 6
    with pytest.raises(TooManyTypes) as refused:
        _types_problem(matrix, qs, 4, PanelOptions(max_types=5, **options), None)
    assert (refused.value.types, refused.value.max_types) == (6, 5)


# ------------------------------------------------ the conflict search and the safety net


def _clock(monkeypatch, start=0.0):
    """A clock that stands still until a test moves it (``clock[0]``)."""
    clock = [start]
    monkeypatch.setattr(limits, "now", lambda: clock[0])
    return clock


def test_a_search_stopped_by_the_clock_names_the_smallest_set_proven_to_conflict(monkeypatch):
    # women >= 3 and men >= 3 on a panel of 4: the search proves {women, men} first; the
    # clock runs out during that proof, so the search stops there and names that set
    # (not every quota, the only other set known to conflict)
    clock = _clock(monkeypatch)
    real = _Problem.find

    def find(self, active=None, *, deadline=None):
        decided, panel = real(self, active, deadline=deadline)
        if decided is False:
            clock[0] = 1000.0
        return decided, panel

    monkeypatch.setattr(_Problem, "find", find)
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    assert _conflict(p, [0, 1, 2], [], deadline=500.0) == ((0, 1), False, True)


def test_a_conflict_found_after_an_undecided_check_is_not_claimed_the_fewest(monkeypatch):
    # the check of "men >= 3" alone ends undecided (as at the work limit on a hard pool),
    # so men join the conflict without proof that they are needed: {women, men} conflict,
    # but the search cannot say that no smaller set does
    real = _Problem.find

    def find(self, active=None, *, deadline=None):
        if active is not None and np.flatnonzero(active).tolist() == [1]:
            return None, None
        return real(self, active, deadline=deadline)

    monkeypatch.setattr(_Problem, "find", find)
    p = problem([3, 3, 0], [4, 4, 4], size=4, sizes=[3, 3, 3], posteriors=THREE)
    assert _conflict(p, [0, 1, 2], []) == ((0, 1), False, False)
    qs = quotas([(3, 4), (3, 4), (0, 4)], ("sex", "sex", "age"), ("women", "men", "young"))
    error = _infeasible(p, qs, _Relaxed([1, 0, 0, 0, 0, 0], None, True, True))  # women first
    assert error.conflicting == (0, 1) and not error.complete
    assert str(error).endswith("the conflicting quotas may not be the fewest)")


def test_each_check_of_the_conflict_search_stops_at_the_deadline(monkeypatch):
    # a hard pool whose checks need branch and bound; with no floor and the clock at the
    # deadline (not past it: the search goes on, but no time is left), every MILP stops
    # undecided, so nothing smaller than all quotas is proven (without a deadline quota 3
    # alone is)
    monkeypatch.setattr(limits, "DECIDE_FLOOR", 0.0)
    _clock(monkeypatch, start=100.0)
    assert _conflict(_hard(extra_half_quota=True), [0, 1, 3, 2], [], deadline=100.0) == (
        (0, 1, 2, 3),
        False,
        False,
    )
    assert _conflict(_hard(extra_half_quota=True), [0, 1, 3, 2], [], deadline=None) == (
        (3,),
        True,
        False,
    )


def test_a_deadline_passing_after_the_search_blames_the_clock_for_an_unfinished_relaxation(
    monkeypatch,
):
    # the conflict search finishes in time (proven minimal), then the deadline passes;
    # the relaxation had stopped unproven: the refusal says the clock stopped it
    import reconstruction.algorithms.panel.feasibility as feasibility

    clock = _clock(monkeypatch)
    real = feasibility._conflict

    def conflict(*args, **kwargs):
        found = real(*args, **kwargs)
        clock[0] = 1000.0
        return found

    monkeypatch.setattr(feasibility, "_conflict", conflict)
    p = problem([3, 3], [3, 3])
    qs = quotas([(3, 3), (3, 3)])
    unproven = _Relaxed([1, 1, 0, 0], np.array([2, 2]), False, True)
    error = _infeasible(p, qs, unproven, deadline=500.0, max_seconds=2.5)
    assert error.conflicting == (0, 1) and not error.complete
    assert str(error).endswith(
        "(diagnosis stopped at max_seconds=2.5: the relaxation may not be the smallest; where "
        "the clock stops it depends on the machine's load, so this refusal may not be "
        "reproducible)"
    )


def test_past_the_deadline_with_no_floor_left_merged_types_are_not_checked_either(monkeypatch):
    # 60 candidates with three noisy attributes, bands of one seat around a random panel's
    # expected counts: with time, the merged types admit a panel; past the deadline with
    # no floor left, their check stops undecided like the exact types' check, and the
    # request is refused as undecided within max_seconds
    rng = np.random.default_rng(0)
    matrix = rng.uniform(0, 1, (60, 3))
    counts = matrix[rng.choice(60, 10, replace=False)].sum(axis=0)
    qs = [
        Quota((Condition(f"a{j}", "in", {0}),), int(np.floor(c)), int(np.ceil(c)), f"q{j}")
        for j, c in enumerate(counts)
    ]
    options = PanelOptions(max_seconds=3.0)
    monkeypatch.setattr(limits, "DECIDE_FLOOR", 0.0)
    in_time = _types_problem(matrix, qs, 10, options, limits.now() + 100.0)
    assert in_time.problem.least is not None and not in_time.unmerged
    with pytest.raises(InfeasibleQuotas) as caught:
        _types_problem(matrix, qs, 10, options, limits.now() - 10.0)
    assert caught.value.complete is False
    assert "was found within max_seconds=3, nor was it proven" in str(caught.value)
