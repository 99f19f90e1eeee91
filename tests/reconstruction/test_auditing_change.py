"""What a published change (issue 29) puts into the query audit: its condition's group,
each shown transition cell (a box over the before and the after answer), and for a change
of every pair the pairs and the before-only residents (issue 33: the change kind's
``published``, mutation-tested like the other kinds'). No database."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reconstruction import auditing
from reconstruction.algorithms.audit import Box, Published
from reconstruction.kinds import base

SEX = SimpleNamespace(categories=["f", "m", "d"], is_discrete=True, n_categories=3, range_high=None)
VIEW = SimpleNamespace(categories=["yes", "no"], is_discrete=True, n_categories=2, range_high=None)
# The after survey's question as the audit places it (change.AfterAnswer, under
# change.audit_name): a category more, "no answer after".
AFTER = SimpleNamespace(categories=["yes", "no"], is_discrete=True, n_categories=3, range_high=None)
QUESTIONS = {"sex": SEX, "view": VIEW, "view@survey7": AFTER}
WHERE = [{"attribute": "sex", "op": "in", "value": ["m", "d"]}]
PAYLOAD = {
    "group_size": 40.0,
    "group_ci95": [35.0, 45.0],
    "transitions": [[None, 20.0], [6.0, 14.0]],
    "transitions_ci95": [[None, [17.0, 23.0]], [[5.0, 8.0], [11.0, 17.0]]],
}


def _change(payload, where=None, after_attribute=None):
    spec = {"kind": "change", "attribute": "view", "after": 7, "where": where or []}
    if after_attribute is not None:
        spec["after_attribute"] = after_attribute
    return auditing.results_of("change", spec, payload, QUESTIONS)


def test_a_change_publishes_its_group_and_each_shown_transition_cell() -> None:
    group = ("sex", "in", {1, 2})

    def cell(i: int, j: int) -> Box:
        return Box.of([group, ("view", "in", {i}), ("view@survey7", "in", {j})])

    assert _change(PAYLOAD, WHERE) == [
        Published(Box.of([group]), 40.0, 35.0, 45.0),
        Published(cell(0, 1), 20.0, 17.0, 23.0),  # yes -> no (yes -> yes is hidden)
        Published(cell(1, 0), 6.0, 5.0, 8.0),  # no -> yes
        Published(cell(1, 1), 14.0, 11.0, 17.0),
    ]


def test_without_a_condition_or_a_group_size_only_the_cells_are_published() -> None:
    assert len(_change(PAYLOAD)) == 3  # the whole population is not repeated
    without_size = {k: v for k, v in PAYLOAD.items() if k != "group_size"}
    assert len(_change(without_size, WHERE)) == 3
    assert _change({}, WHERE) == []


def test_a_change_whose_after_question_is_unknown_is_named() -> None:
    with pytest.raises(base.UnknownAttribute) as unknown:
        _change(PAYLOAD, after_attribute="mood")
    assert unknown.value.args == ("mood@after",)
    with pytest.raises(base.UnknownAttribute):
        auditing.results_of(
            "change",
            {"kind": "change", "attribute": "sex", "after": 7, "where": []},
            PAYLOAD,
            {"view": VIEW, "view@survey7": AFTER},
        )


def test_a_change_of_every_pair_publishes_its_pairs_and_the_before_only_exactly() -> None:
    # The audit's population is the before survey's respondents; the after question gets
    # a category more, code 2 here ("no answer after"): 100 answered before only, and the
    # 3,000 pairs are everyone with an after answer (codes 0 and 1).
    payload = {**PAYLOAD, "before_only": 100, "paired": 3000}
    results = _change(payload)
    assert results[-2:] == [
        Published.exact(Box.of([("view@survey7", "in", {2})]), 100.0),
        Published.exact(Box.of([("view@survey7", "in", {0, 1})]), 3000.0),
    ]
    assert len(results) == 5
    # A panel's change counts its members only: neither is published.
    spec = {"kind": "change", "attribute": "view", "after": 7, "where": [], "panel": 4}
    assert len(auditing.results_of("change", spec, payload, QUESTIONS)) == 3


MOOD = SimpleNamespace(
    categories=["good", "bad"], is_discrete=True, n_categories=3, range_high=None
)
HOURS = SimpleNamespace(
    categories=[], is_discrete=False, n_categories=0, range_low=0.0, range_high=60.0
)


def test_a_condition_on_the_after_survey_is_placed_under_its_audit_name() -> None:
    # "mood@after" is a question of the after survey: the audit names it "mood@survey7"
    # (its own category "no answer after" is code 2). The pairs are everyone with an
    # answer to both after questions.
    questions = {**QUESTIONS, "mood@survey7": MOOD}
    spec = {"kind": "change", "attribute": "view", "after": 7,
            "where": [{"attribute": "mood@after", "op": "in", "value": ["good"]}]}  # fmt: skip
    payload = {**PAYLOAD, "before_only": 100, "paired": 3000}
    results = auditing.results_of("change", spec, payload, questions)
    good = ("mood@survey7", "in", {0})
    assert results[0] == Published(Box.of([good]), 40.0, 35.0, 45.0)
    assert results[1].box == Box.of([good, ("view", "in", {0}), ("view@survey7", "in", {1})])
    paired = Box.of([("view@survey7", "in", {0, 1}), ("mood@survey7", "in", {0, 1})])
    assert results[-1] == Published.exact(paired, 3000.0)
    # A continuous after question cannot be placed ("no answer" is no value): no pairs.
    spec["where"] = [{"attribute": "hours@after", "op": "gt", "value": 10}]
    placed = auditing.results_of("change", spec, payload, {**QUESTIONS, "hours@survey7": HOURS})
    assert Box.of([("view@survey7", "in", {2})]) in [r.box for r in placed]
    assert all(r.estimate != 3000.0 for r in placed)


def test_each_shown_share_is_its_rows_or_columns_total_and_each_hidden_sum_a_box() -> None:
    """Issue 29's last trade-off: the share before (after) times the group is the row's
    (column's) total, with the worst case of the share's and the group's intervals; a
    row's (column's) hidden cells' sum is published on the interval it was judged on.
    Fails on the old code, which placed the cells only."""
    group = ("sex", "in", {1, 2})
    payload = {
        **PAYLOAD,
        "before": [0.5, None],
        "before_ci95": [[0.4, 0.6], [None, None]],
        "after": [0.65, 0.35],
        "after_ci95": [[0.6, 0.7], [0.3, 0.4]],
        "suppressed_rows_ci95": [[10.0, 20.0], None],
        "suppressed_columns_ci95": [None, None],
    }
    results = _change(payload, WHERE)[4:]
    row = Box.of([group, ("view", "in", {0}), ("view@survey7", "in", {0, 1})])
    assert results[0] == Published(row, 20.0, 0.4 * 35.0, 0.6 * 45.0)
    columns = [Box.of([group, ("view@survey7", "in", {j})]) for j in (0, 1)]
    assert results[1] == Published(columns[0], 0.65 * 40.0, 0.6 * 35.0, 0.7 * 45.0)
    assert results[2].box == columns[1]
    # Row 0 hides (yes, yes): its hidden sum is that cell's box, on [10, 20].
    hidden = Box.of([group, ("view", "in", {0}), ("view@survey7", "in", {0})])
    assert results[3] == Published(hidden, 15.0, 10.0, 20.0)
    assert len(results) == 4
    # Without a condition the group is every pair, exact.
    plain = {k: v for k, v in payload.items() if not k.startswith("group")}
    rows = [r for r in _change({**plain, "paired": 100}) if r.box.categories[0][0] == "view"]
    assert (
        Published(Box.of([("view", "in", {0}), ("view@survey7", "in", {0, 1})]), 50.0, 40.0, 60.0)
        in rows
    )
