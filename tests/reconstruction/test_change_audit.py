"""The query audit of changes (issue 29): who answered before only, and earlier changes.

On test_change_api's consultation (3,000 pairs, 100 residents who answered the before
survey only, 60 the after survey only). The audit's population is the before survey's
respondents, so it must know that some of them have no after answer (a change's cells
count pairs only), and a later audit must place an earlier change whatever the new
analysis names.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconstruction import auditing, pipeline
from reconstruction.kinds import change as change_kind
from reconstruction.models import AnalysisJob
from tests.reconstruction.test_change_api import URL, World, change
from tests.reconstruction.test_change_api import world as world  # the module fixture

pytestmark = pytest.mark.django_db


def _run(world: World, capture: Any, body: dict[str, Any]) -> dict[str, Any]:
    with capture(execute=True):
        response = world.analyst.post(URL, body, format="json")
    assert response.status_code == 202, response.json()
    return world.analyst.get(response.json()["url"]).json()


def _distribution(world: World, attribute: str) -> dict[str, Any]:
    return {"survey": world.before.pk, "kind": "distribution", "attribute": attribute}


def test_a_change_after_the_before_questions_distribution_implies_the_before_only(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    """The before question's distribution counts every respondent of the before survey;
    the change's cells count the pairs. Their difference is the residents of each
    category who answered before only: a group the audit must judge (its interval here
    reaches below the threshold of 5). The old universe had no such category, so the
    two looked like the same box twice and the change was published."""
    assert (
        _run(world, django_capture_on_commit_callbacks, _distribution(world, "support"))["status"]
        == "succeeded"
    )
    job = _run(world, django_capture_on_commit_callbacks, change(world))
    assert job["status"] == "refused", job
    assert "query auditing" in job["error"]
    assert job["result"] is None


def test_a_change_after_an_unrelated_distribution_is_published(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    assert (
        _run(world, django_capture_on_commit_callbacks, _distribution(world, "mood"))["status"]
        == "succeeded"
    )
    job = _run(world, django_capture_on_commit_callbacks, change(world))
    assert job["status"] == "succeeded", job


def test_a_later_analysis_places_an_earlier_change_it_does_not_name(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    """A distribution of the before question names no after question; the old audit
    skipped every earlier change then (it could not place ``support@after``) and
    published the distribution beside the change's cells."""
    assert _run(world, django_capture_on_commit_callbacks, change(world))["status"] == "succeeded"
    body = _distribution(world, "support")
    request = pipeline.resolve(world.before, {**body, "survey": world.before.pk})
    questions = dict(request.questions)
    job = AnalysisJob(survey=world.before, organisation_id=world.before.organisation_id)
    boxes = auditing.published_results(job, questions)
    after = change_kind.audit_name(world.after.pk, "support")
    placed = [b for b in boxes if after in dict(b.box.categories)]
    # The 9 cells, the 3 rows' and 3 columns' totals (the shares before and after times
    # the pairs), the pairs and the before-only residents.
    assert len(placed) == 9 + 3 + 3 + 2
    assert questions[after].n_categories == 4  # 3 categories and "no answer after"
    refused = _run(world, django_capture_on_commit_callbacks, body)
    assert refused["status"] == "refused", refused
    assert "query auditing" in refused["error"]
