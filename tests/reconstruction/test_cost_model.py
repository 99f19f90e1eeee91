"""The cost model's figures, worked by hand (reconstruction.cost; issue 33).

The cost check refuses an analysis before anything is queued; a wrong factor either
lets a request run for hours or refuses an ordinary one. Every figure here follows the
module docstring's formula on a schema small enough to count by hand: discrete questions
(their categories), continuous ones with a declared step (their lattice) and without
(intervals). No database: the requests are resolved by hand.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from reconstruction import cost, registry
from reconstruction.analysis import AnalysisInputError, AnalysisRequest
from reconstruction.kinds import base


def discrete(k: int, mechanism: str = "randomised_response") -> SimpleNamespace:
    return SimpleNamespace(
        is_discrete=True, n_categories=k, mechanism=mechanism, step=None, categories=list(range(k))
    )


def continuous(low: float, high: float, step: float | None, mechanism: str = "none"):
    return SimpleNamespace(
        is_discrete=False,
        n_categories=0,
        mechanism=mechanism,
        step=step,
        range_low=low,
        range_high=high,
    )


QUESTIONS: dict[str, Any] = {
    "a": discrete(5),
    "b": discrete(4),
    "x": discrete(3, mechanism="none"),
    "age": continuous(16, 100, 1.0),  # a declared step: 85 lattice points
    "half": continuous(0, 10, 0.5),  # 21 points
    "wide": continuous(0, 1000, 1.0),  # 1,001 points: more than 128
}


def _in(attribute: str, *codes: int) -> dict[str, Any]:
    return {"attribute": attribute, "op": "in", "value": list(codes)}


def request(spec: dict[str, Any], participants: int = 1000) -> AnalysisRequest:
    kind = registry.get(spec["kind"])
    return AnalysisRequest(
        survey=None,  # type: ignore[arg-type]
        kind=kind,
        params=kind.parse({k: v for k, v in spec.items() if v is not None}),
        questions={k: QUESTIONS[k] for k in QUESTIONS},  # type: ignore[misc]
        where=[],
        strata=[],
        thresholds=None,  # type: ignore[arg-type]
        participants=participants,
    )


def test_thresholds_count_each_cut_of_the_attribute() -> None:
    conditions = base.conditions(
        [
            {"attribute": "age", "op": "gt", "value": 40},
            {"attribute": "age", "op": "between", "value": [20, 30]},
            {"attribute": "a", "op": "in", "value": [1]},
        ]
    )
    assert cost._thresholds(conditions, "age") == 3
    assert cost._thresholds(conditions, "a") == 1
    assert cost._thresholds(conditions, "b") == 0


def test_discrete_cells_are_the_product_of_the_categories() -> None:
    assert cost.fit_cells(QUESTIONS, ["a"], []) == 5
    assert cost.fit_cells(QUESTIONS, ["a", "b"], []) == 20
    assert cost.fit_cells(QUESTIONS, [], []) == 1


def test_continuous_axes_share_the_joint_cap_of_20000_cells() -> None:
    # 5 x 4 = 20 discrete cells leave 1,000 per continuous axis: 40 intervals (the cap)
    # plus one per threshold.
    gt = base.conditions([{"attribute": "age", "op": "gt", "value": 40}])
    assert cost.fit_cells(QUESTIONS, ["a", "b", "age"], gt) == 20 * 41
    # 20,000 / 20 = 1,000 cells for two axes: 31 each (int(sqrt(1000))).
    assert cost.fit_cells(QUESTIONS, ["a", "b", "age", "half"], []) == 20 * 31 * 31
    # 5 x 4 x 5 x 4 x ... : a table that leaves fewer than 2 per axis still gets 2.
    many = {f"q{i}": discrete(10) for i in range(5)} | {"age": QUESTIONS["age"]}
    assert cost.fit_cells(many, [*many], []) == 10**5 * 2
    # Without a discrete axis three continuous axes share all 20,000 cells: 27 each
    # (int(20,000^(1/3)) = 27, 27^3 = 19,683).
    assert cost.fit_cells(QUESTIONS, ["age", "half", "wide"], []) == 27**3


def test_a_lattice_has_one_cell_per_point_up_to_128() -> None:
    age, half, wide = QUESTIONS["age"], QUESTIONS["half"], QUESTIONS["wide"]
    assert cost._axis_cells(age, 40, 4000, 0, "interval") == 40
    assert cost._axis_cells(age, 40, 4000, 2, "interval") == 42
    assert cost._axis_cells(age, 40, 4000, 0, "lattice") == 85
    assert cost._axis_cells(half, 40, 4000, 0, "lattice") == 21
    assert cost._axis_cells(wide, 40, 4000, 1, "lattice") == 41  # grouped like intervals
    assert cost._axis_cells(age, 40, 40, 0, "lattice") == 85  # 40 intervals: not squeezed
    assert cost._axis_cells(age, 20, 20, 0, "lattice") == 20  # squeezed: at most 20
    assert cost._axis_cells(half, 20, 20, 0, "lattice") == 20  # 21 points > 20
    assert cost._axis_cells(age, 40, 4000, 0, "both") == 85 + 40
    assert cost._axis_cells(age, 40, 4000, 0, "either") == 85
    assert cost._axis_cells(half, 40, 4000, 0, "either") == 40
    no_step = continuous(16, 100, None)
    assert cost._axis_cells(no_step, 40, 4000, 0, "lattice") == 85  # whole numbers


def test_fit_cells_take_each_attributes_model() -> None:
    assert cost.fit_cells(QUESTIONS, ["a", "age"], [], {"age": "lattice"}) == 5 * 85
    assert cost.fit_cells(QUESTIONS, ["a", "age"], [], {"age": "both"}) == 5 * (85 + 40)
    assert cost.fit_cells(QUESTIONS, ["a", "age"], []) == 5 * 40


def test_a_count_fits_its_conditions_table_with_200_replicates() -> None:
    spec = {"kind": "count", "where": [_in("a", 1), _in("b", 2)]}
    assert cost.fit_cost(request(spec)) == 20 * 201
    # Reading: 2 attributes per participant for the table.
    assert cost.reads(request(spec)) == 2 * 1000
    assert cost.analysis_cost(request(spec)) == 20 * 201 + int(0.01 * 2000)


def test_a_mean_also_judges_its_groups_size() -> None:
    spec = {"kind": "mean", "attribute": "age", "where": [_in("a", 1)]}
    # The fit: a x age's lattice (85), 200 replicates; the group: a alone, 200 replicates.
    assert cost.fit_cost(request(spec)) == 5 * 85 * 201 + 5 * 201
    # Reading: the table's 2 attributes and the group's 1.
    assert cost.reads(request(spec)) == 3 * 1000


def test_an_undistorted_group_is_counted_for_one_unit() -> None:
    spec = {"kind": "mean", "attribute": "age", "where": [_in("x", 1)]}
    assert cost.fit_cost(request(spec)) == 3 * 85 * 201 + 1


def test_a_distribution_alone_uses_its_own_channel() -> None:
    assert cost.fit_cost(request({"kind": "distribution", "attribute": "a"})) == 5 * 201
    spec = {"kind": "distribution", "attribute": "a", "where": [_in("b", 1)]}
    assert cost.fit_cost(request(spec)) == 20 * 201 + 4 * 201


def test_a_sample_has_no_interval_but_judges_its_pool_and_strata() -> None:
    spec = {
        "kind": "sample",
        "where": [_in("a", 1)],
        "strata": [{"where": [_in("b", 1)], "size": 5}, {"where": [_in("b", 2)], "size": 5}],
    }
    # Its table without replicates (5), the pool (5 x 201), each stratum (a x b, 20 x 201).
    assert cost.fit_cost(request(spec)) == 5 + 5 * 201 + 2 * 20 * 201
    # One scan counts every table (GROUPING SETS) over every attribute it names (a, b);
    # one stream for both passes (a and b again); each pass receives one cell's worth of
    # the participants of its condition's table (a x b: 20 cells).
    assert cost.reads(request(spec)) == 2 * 1000
    assert cost.streamed(request(spec)) == 2 * 1000
    assert cost.candidates(request(spec)) == 2 * 1000 // 20
    assert cost.analysis_cost(request(spec)) == cost.fit_cost(request(spec)) + int(
        0.01 * 2000
    ) + int(0.02 * 2000) + int(0.4 * 100)
    no_strata = {"kind": "sample", "where": [_in("a", 1)]}
    assert cost.reads(request(no_strata)) == 1000
    assert cost.candidates(request(no_strata)) == 1000 // 5
    # Without a condition every participant is a candidate of the one pass.
    assert cost.candidates(request({"kind": "sample"})) == 1000
    assert cost.streamed(request({"kind": "sample"})) == 0
    # Figure 3 loads everyone: each group read on its own, a stream per stratum.
    old = {**spec, "method": "figure3"}
    assert cost.reads(request(old)) == (2 * 1 + 2 * (2 * 2 + 2)) * 1000
    assert cost.streamed(request(old)) == 0 and cost.candidates(request(old)) == 0


def test_a_stratified_sample_at_ten_million_is_priced_on_one_scan_and_one_stream(
    settings: Any,
) -> None:
    """Issue 32: bench_scale's sample in 5 age strata was refused at 10^7 (3.4 million
    units: a scan and a stream per stratum) though at 10^6 it ended in 3.1 s. Priced on
    its one scan, one stream and its candidates (one cell's worth per stratum) a sample
    in 5 age strata is accepted at 10^7; in 50 one-year strata (most participants sent
    to the worker 50 times over) it stays refused."""
    settings.ANALYSIS_COST_BUDGET = 1_000_000

    def bands(width: int, count: int) -> dict[str, Any]:
        return {
            "kind": "sample",
            "strata": [
                {
                    "where": [
                        {
                            "attribute": "age",
                            "op": "between",
                            "value": [16 + k * width, 16 + (k + 1) * width],
                        }
                    ],
                    "size": 1,
                }
                for k in range(count)
            ],
        }

    five = request(bands(15, 5), participants=10_000_000)
    # Reading: one scan and one stream of age; each stratum receives 1/85 of everyone.
    assert cost.reads(five) == cost.streamed(five) == 10_000_000
    assert cost.candidates(five) == int(5 * 10_000_000 / 85)
    assert cost.check_cost(five) < 1_000_000
    with pytest.raises(AnalysisInputError):
        cost.check_cost(request(bands(1, 50), participants=10_000_000))


def test_reading_never_counts_negative_participants() -> None:
    spec = {"kind": "count", "where": [_in("a", 1)]}
    assert cost.reads(request(spec, participants=-5)) == 0
    # nor does a sample's stream, nor its candidates, on an empty pool
    sample = {"kind": "sample", "where": [_in("a", 1)]}
    for participants in (0, -5):
        assert cost.streamed(request(sample, participants)) == 0
        assert cost.candidates(request({"kind": "sample"}, participants)) == 0


def test_a_declared_step_with_fewer_points_than_intervals_is_priced_on_its_lattice() -> None:
    # "half" (0..10 by 0.5) has 21 lattice points, fewer than the 40 intervals (+1 per
    # threshold) it would get without its step: a stratum of a x half has 5 x 21 cells
    half_gt_5 = {"attribute": "half", "op": "gt", "value": 5}
    spec = {"kind": "sample", "where": [_in("a", 1)], "strata": [{"where": [half_gt_5], "size": 5}]}
    # the table without replicates (5), the pool (5 x 201), the stratum (5 x 21 x 201)
    assert cost.fit_cost(request(spec)) == 5 + 5 * 201 + 5 * 21 * 201
    # the stratum's pass receives one cell's worth of the participants
    assert cost.candidates(request(spec)) == 1000 // (5 * 21)


def test_a_figure3_sample_judges_then_fits_its_pool_on_every_attribute_of_its_condition() -> None:
    # no strata: the pool judged and its posterior (2 x 2 attributes), then its one pass
    # judged and fitted (2 x 2) and streamed (2)
    spec = {"kind": "sample", "method": "figure3", "where": [_in("a", 1), _in("b", 1)]}
    assert cost.reads(request(spec)) == (2 * 2 + 2 * 2 + 2) * 1000


def test_figure3_assigns_every_participant_per_attribute_and_replicate() -> None:
    count = {"kind": "count", "method": "figure3", "where": [_in("a", 1), _in("b", 1)]}
    assert cost.assignments(request(count)) == 2 * 201 * 1000
    mean = {"kind": "mean", "method": "figure3", "attribute": "age", "where": [_in("a", 1)]}
    assert cost.assignments(request(mean)) == 2 * 1000
    sample = {
        "kind": "sample",
        "method": "figure3",
        "where": [_in("a", 1)],
        "strata": [{"where": [_in("b", 1)], "size": 5}],
    }
    assert cost.assignments(request(sample)) == (1 + 2) * 1000
    assert cost.assignments(request({**count, "method": "joint"})) == 0
    assert cost.assignments(request({**count, "method": None})) == 0
    assert cost.assignments(request(count, participants=-1)) == 0
    full = cost.analysis_cost(request(count))
    assert full == 20 * 201 + int(0.01 * 2000) + int(0.002 * 2 * 201 * 1000)


def test_a_request_over_the_budget_is_refused_in_plain_words_with_the_figures(
    settings: Any,
) -> None:
    spec = {"kind": "count", "where": [_in("a", 1), _in("b", 2)]}
    settings.ANALYSIS_COST_BUDGET = 20 * 201 + 20
    assert cost.check_cost(request(spec)) == 20 * 201 + 20
    settings.ANALYSIS_COST_BUDGET = 20 * 201 + 19
    with pytest.raises(AnalysisInputError) as refused:
        cost.check_cost(request(spec))
    text = str(refused.value.errors["where"])
    # What to change comes first, in plain words; the figures are the last sentence.
    assert text.startswith("This analysis would take more than a minute. Use fewer conditions")
    assert text.index("fewer categories") < text.index("(Figures:")
    assert "estimated cost 4,040 units against a limit of 4,039" in text
    assert "4,020 for fitting the joint table" in text and "20 for reading the answers" in text


def _quota(attribute: str, *codes: int) -> dict[str, Any]:
    return {"where": [_in(attribute, *codes)], "min": 1, "max": 5}


def test_a_panel_prices_its_fits_candidates_and_solver() -> None:
    spec = {
        "kind": "panel",
        "size": 10,
        "where": [_in("a", 1)],
        "quotas": [_quota("b", 1), _quota("b", 2)],
    }
    fits = 5 * 301 + 2 * 20 * 301
    candidates = 1000 * 3 * 1  # participants x (quotas + 1) x PANEL_CANDIDATE_UNITS
    # Types from the schema: b's two named categories and the rest (3 of its 4).
    assert cost.panel_types_floor(request(spec)) == 3
    solver = int(0.05 * 3 * 3 + 0.1 * 10 * 3 * 3)
    assert cost.panel_cost(request(spec)) == fits + candidates + solver
    # The worker's real number of types replaces the estimate.
    assert cost.panel_cost(request(spec), types=2000) == fits + candidates + int(
        0.05 * 2000**2 + 0.1 * 10 * 2000 * 3
    )
    # Types are at most the participants.
    assert cost.panel_types_floor(request(spec, participants=2)) == 2
    bare = {"kind": "panel", "size": 10}
    assert cost.panel_types_floor(request(bare)) == 1
    assert cost.panel_cost(request(bare)) == 1000 + int(0.05 + 0.1 * 10)


def test_a_panels_continuous_quota_splits_at_its_thresholds() -> None:
    spec = {
        "kind": "panel",
        "size": 10,
        "quotas": [
            {"where": [{"attribute": "age", "op": "lte", "value": 40}], "min": 1, "max": 5},
            {
                "where": [{"attribute": "age", "op": "between", "value": [41, 64]}],
                "min": 1,
                "max": 5,
            },
            _quota("a", 1),
        ],
    }
    # age cut at 40, 41 and 64: 4 pieces; a: category 1 and the rest.
    assert cost.panel_types_floor(request(spec)) == 4 * 2


def test_the_issues_panels_are_accepted_and_many_types_are_not(settings: Any) -> None:
    """Issue 32: a panel of 30 with 3 quotas over 30,000 and one of 100 over 10,000 are
    accepted (both end within seconds, bench/bench_cost.py --panels); the old weights
    priced the first at 1.2 million units, above the budget of 1,000,000."""
    settings.ANALYSIS_COST_BUDGET = 1_000_000
    three = {
        "kind": "panel",
        "size": 30,
        "quotas": [
            _quota("a", 1),
            _quota("b", 1, 2),
            {"where": [{"attribute": "age", "op": "lte", "value": 40}], "min": 8, "max": 18},
        ],
    }
    assert cost.check_panel_cost(request(three, participants=30_000)) < 300_000
    assert cost.check_panel_cost(request({**three, "size": 100}, participants=10_000)) < 300_000
    # The budget leaves the solver thousands of types, not hundreds of thousands.
    most = cost.panel_max_types(request(three, participants=30_000))
    assert 3_000 < most < 5_000
    assert cost.panel_cost(request(three, participants=30_000), types=most) <= 1_000_000
    assert cost.panel_cost(request(three, participants=30_000), types=most + 1) > 1_000_000


def test_a_panel_over_the_budget_is_refused_saying_what_to_change(settings: Any) -> None:
    bare = {"kind": "panel", "size": 10, "quotas": [_quota("a", 1)]}
    settings.ANALYSIS_COST_BUDGET = cost.panel_cost(request(bare))
    assert cost.check_panel_cost(request(bare)) == settings.ANALYSIS_COST_BUDGET
    settings.ANALYSIS_COST_BUDGET -= 1
    with pytest.raises(AnalysisInputError) as refused:
        cost.check_panel_cost(request(bare))
    text = str(refused.value.errors["quotas"])
    assert text.startswith("This panel would take more than a minute to select. Ask for fewer")
    assert text.index("fewer categories") < text.index("(Figures:")
    assert "2 kinds of candidates" in text and "quotas: 1, seats: 10, participants: 1,000" in text
    # With no room left for the solver, it may take a single type.
    assert cost.panel_max_types(request(bare)) == 1


def test_a_lattice_of_exactly_128_points_keeps_one_cell_per_point() -> None:
    exactly = continuous(0, 127, 1.0)
    assert cost._axis_cells(exactly, 40, 4000, 0, "lattice") == 128
    assert cost._axis_cells(continuous(0, 128, 1.0), 40, 4000, 0, "lattice") == 40
