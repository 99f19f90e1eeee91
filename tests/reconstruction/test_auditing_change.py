"""What a published change (issue 29) puts into the query audit: its condition's group and
each shown transition cell, a box over the before and the after answer (issue 33: the
change kind's ``published``, mutation-tested like the other kinds'). No database."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reconstruction import auditing
from reconstruction.algorithms.audit import Box, Published
from reconstruction.kinds import base

SEX = SimpleNamespace(categories=["f", "m", "d"], is_discrete=True, n_categories=3, range_high=None)
VIEW = SimpleNamespace(categories=["yes", "no"], is_discrete=True, n_categories=2, range_high=None)
QUESTIONS = {"sex": SEX, "view": VIEW, "view@after": VIEW}
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
        return Box.of([group, ("view", "in", {i}), ("view@after", "in", {j})])

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
            {"view": VIEW, "view@after": VIEW},
        )
