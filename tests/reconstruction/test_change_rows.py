"""A change and the before question's distribution on a realistic pool (issue 29's
last trade-off): both are published, in either order, and no suppressed transition cell
can be recovered from them.

A consultation asks 5,000 residents before; 2,400 of them (the panel) answer after
too. The categories are skewed (against 60%, unsure 30%, for 10%) and two transition
cells are small, so the change suppresses cells. Its ``before`` shares are boxes of the
audit (each row's total), which judges the residents who answered before only per
category on the distribution's and the share's intervals (about 260 for "for"); the
transition table is suppressed per row and column so that those totals minus the shown
cells never pin a hidden cell. On the old code the two analyses excluded each other
(the second was refused), and a row or column with a single hidden cell gave it away.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from django.db import transaction
from rest_framework.test import APIClient

from consultations.models import Organisation
from consultations.services import consultation_create
from reconstruction.algorithms.simulation import simulate_transitions
from surveys.models import Survey
from tests.reconstruction.conftest import client_for
from tests.reconstruction.test_change_api import RR, SUPPORT, URL, _send, _survey

pytestmark = pytest.mark.django_db

PAIRED, BEFORE_ONLY = 2400, 2600
BEFORE = np.array([0.6, 0.3, 0.1])
# Shares of the pairs: "for -> against" (about 5) and "unsure -> for" are small.
TRUTH = np.array([[0.50, 0.06, 0.04], [0.05, 0.235, 0.015], [0.002, 0.018, 0.08]])


@dataclass
class Pool:
    before: Survey
    after: Survey
    analyst: APIClient


def _build(organisation: Organisation) -> Pool:
    rng = np.random.default_rng(2029)
    consultation = consultation_create(
        organisation=organisation, title="Panel", min_responses=10, min_cell=5, actor="tests"
    )
    question = [{"key": "support", "type": "nominal", "categories": list(SUPPORT), "mechanism": RR}]
    before = _survey(organisation, consultation, "opinion", "Before", question)
    after = _survey(organisation, consultation, "opinion", "After", question)
    b, a = simulate_transitions(PAIRED, TRUTH, rng=rng)
    only = rng.choice(3, size=BEFORE_ONLY, p=BEFORE)
    labels = np.array(SUPPORT)
    refs = np.array([f"r-{i:05d}" for i in range(PAIRED + BEFORE_ONLY)])
    _send(before, refs, {"support": labels[np.r_[b, only]]}, rng)
    _send(after, refs[:PAIRED], {"support": labels[a]}, rng)
    return Pool(before, after, client_for("north", "analyst"))


@pytest.fixture(scope="module")
def pool(django_db_setup: None, django_db_blocker: Any) -> Iterator[Pool]:
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield _build(Organisation.objects.get_or_create(slug="north")[0])
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def _run(pool: Pool, capture: Any, body: dict[str, Any]) -> dict[str, Any]:
    with capture(execute=True):
        response = pool.analyst.post(URL, {"survey": pool.before.pk, **body}, format="json")
    assert response.status_code == 202, response.json()
    return pool.analyst.get(response.json()["url"]).json()


CHANGE = {"kind": "change", "attribute": "support"}
DISTRIBUTION = {"kind": "distribution", "attribute": "support"}


def _both(pool: Pool, capture: Any, first: dict[str, Any], second: dict[str, Any]) -> list[Any]:
    jobs = []
    for body in (first, second):
        if body["kind"] == "change":
            body = {**body, "after": pool.after.pk}
        job = _run(pool, capture, body)
        assert job["status"] == "succeeded", (body["kind"], job["error"])
        jobs.append(job["result"])
    return jobs


def test_the_before_distribution_then_a_change_are_both_published(
    pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    _, change = _both(pool, django_capture_on_commit_callbacks, DISTRIBUTION, CHANGE)
    assert change["paired"] == PAIRED and change["before_only"] == BEFORE_ONLY
    assert change["suppressed"] is True  # the small cells are hidden, the rest shown
    assert None not in change["before"]


def test_a_change_then_the_before_distribution_are_both_published(
    pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    change, distribution = _both(pool, django_capture_on_commit_callbacks, CHANGE, DISTRIBUTION)
    assert change["suppressed"] is True
    assert None not in distribution["counts"]


def _atoms_pinned(change: dict[str, Any], distribution: dict[str, Any]) -> list[tuple[int, int]]:
    """The hidden transition cells that a linear combination of everything published
    determines: the distribution's cells (before answer i, whatever after, "no answer
    after" included), the change's shown cells, its rows' totals (``before`` x paired),
    its columns' totals (``after`` x paired), the pairs, the before-only residents and
    the survey's respondents. Atoms: (before i, after j), j = 3 is "no answer after"."""
    k = 3
    rows: list[np.ndarray] = []

    def box(before: set[int], after: set[int]) -> None:
        indicator = np.zeros((k, k + 1))
        indicator[np.ix_(sorted(before), sorted(after))] = 1.0
        rows.append(indicator.ravel())

    every, answered = set(range(k)), set(range(k))
    box(every, every | {k})
    box(every, answered)
    box(every, {k})
    for i, value in enumerate(distribution["counts"]):
        if value is not None:
            box({i}, answered | {k})
    for i in range(k):
        if change["before"][i] is not None:
            box({i}, answered)
        if change["after"][i] is not None:
            box(every, {i})
        for j in range(k):
            if change["transitions"][i][j] is not None:
                box({i}, {j})
    matrix = np.array(rows)
    projection = np.linalg.pinv(matrix) @ matrix
    hidden = [(i, j) for i in range(k) for j in range(k) if change["transitions"][i][j] is None]
    return [(i, j) for i, j in hidden if projection[i * (k + 1) + j, i * (k + 1) + j] > 1 - 1e-9]


def test_no_suppressed_cell_can_be_recovered_from_the_change_and_the_distribution(
    pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    """Differencing a change's row (its ``before`` share times the pairs, minus the row's
    shown cells) or column against the before distribution leaves at least two hidden
    cells together: none of them is determined (the old code hid the next-smallest cell
    of the whole table, in another row and column, so a row's or a column's total minus
    its shown cells was the hidden cell itself)."""
    distribution, change = _both(pool, django_capture_on_commit_callbacks, DISTRIBUTION, CHANGE)
    cells = change["transitions"]
    hidden = np.array([[value is None for value in row] for row in cells])
    assert hidden.any()
    for line in [*hidden, *hidden.T]:
        assert line.sum() != 1, hidden
    assert _atoms_pinned(change, distribution) == []
    # Each line's hidden cells' sum is derivable (its total minus its shown cells): it
    # is published with the interval it was judged on, at or above the threshold.
    for field, lines in (("suppressed_rows_ci95", hidden), ("suppressed_columns_ci95", hidden.T)):
        for line, pair in zip(lines, change[field], strict=True):
            assert (pair is not None) == (line.any() and not line.all()), (field, pair)
            assert pair is None or pair[0] >= 5, (field, pair)
