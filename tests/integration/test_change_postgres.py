"""The change kind's SQL on PostgreSQL (issue 29): the pairs' cells joined on the
participant reference, the panel members' filter and who answered one survey only,
against counts made here from the codes sent; then a change end to end on a real worker.

Undistorted answers (``mechanism: none``), so the reported cells are the true ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from consultations.models import Organisation
from consultations.services import consultation_create
from reconstruction.models import AnalysisJob, Job
from surveys import pairs, statistics
from surveys.models import Question, Response
from surveys.services import response_withdraw, responses_submit_bulk, survey_create, survey_open
from tests.integration.test_wiring import wait_for_job
from tests.reconstruction.conftest import client_for
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LABELS = ("no", "maybe", "yes")


def _world() -> dict[str, object]:
    client = client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(
        organisation=organisation, title="Change on PostgreSQL", min_responses=10, min_cell=5
    )
    question = {"key": "support", "type": "nominal", "categories": list(LABELS),
                "mechanism": {"name": "none"}}  # fmt: skip
    surveys = []
    for title in ("before", "after"):
        survey = survey_create(organisation=organisation, consultation=consultation,
                               kind="opinion", title=title, questions=[question])  # fmt: skip
        surveys.append(survey_open(survey=survey))
    rng = np.random.default_rng(29)
    before_codes = rng.integers(0, 3, size=130)  # p-000..p-129 answer before
    after_codes = rng.integers(0, 3, size=130)  # p-010..p-139 answer after
    responses_submit_bulk(survey=surveys[0], responses=[
        {"participant": f"p-{i:03d}", "answers": {"support": LABELS[c]}}
        for i, c in enumerate(before_codes)
    ])  # fmt: skip
    responses_submit_bulk(survey=surveys[1], responses=[
        {"participant": f"p-{i + 10:03d}", "answers": {"support": LABELS[c]}}
        for i, c in enumerate(after_codes)
    ])  # fmt: skip
    response_withdraw(survey=surveys[1], participant="p-050")  # no longer paired
    return {"client": client, "before": surveys[0], "after": surveys[1],
            "before_codes": before_codes, "after_codes": after_codes}  # fmt: skip


def _expected(world: dict, members: set[int] | None = None) -> np.ndarray:
    table = np.zeros((3, 3))
    for person in range(10, 130):
        if person == 50 or (members is not None and person not in members):
            continue
        table[world["before_codes"][person], world["after_codes"][person - 10]] += 1
    return table


def test_paired_cells_and_unpaired_counts_on_postgresql() -> None:
    world = _world()
    before, after = world["before"], world["after"]
    qb, qa = Question.objects.get(survey=before), Question.objects.get(survey=after)
    axes = [statistics.Axis(qb), statistics.Axis(qa)]
    cells = pairs.paired_cells(before, axes, require=[qb, qa])
    np.testing.assert_array_equal(cells.counts, _expected(world))
    # 130 answered before, 129 live after, 119 both: 11 before only, 10 after only.
    assert pairs.unpaired(qb, qa) == pairs.Unpaired(before_only=11, after_only=10)
    assert pairs.unpaired_from_tallies(qb, qa, paired=119) == pairs.Unpaired(11, 10)
    refs = [f"p-{i:03d}" for i in range(0, 60)] + ["p-999"]  # p-999 never answered
    members = pairs.member_ids(before, refs)
    assert len(members) == 60
    cells = pairs.paired_cells(before, axes, require=[qb, qa], members=members)
    np.testing.assert_array_equal(cells.counts, _expected(world, set(range(60))))
    assert pairs.unpaired(qb, qa, members=members) == pairs.Unpaired(11, 0)


def test_an_exact_group_of_pairs_is_counted_with_its_record_keys_on_postgresql() -> None:
    """The cell-key method's input for a change with an exact condition (issue 26/29):
    the pairs meeting it and their before responses' record keys, from the same query."""
    world = _world()
    before, after = world["before"], world["after"]
    qb, qa = Question.objects.get(survey=before), Question.objects.get(survey=after)
    axes = [statistics.Axis(qb), statistics.Axis(qa)]
    table = pairs.paired_table(before, (qb, qa), axes, group=[(qa, "in", {2})])
    np.testing.assert_array_equal(table.counts, _expected(world))
    assert table.paired == 119
    people = [p for p in range(10, 130) if p != 50 and world["after_codes"][p - 10] == 2]
    responses = Response.objects.filter(
        survey=before, participant__reference__in=[f"p-{p:03d}" for p in people]
    )
    assert table.group == len(people)
    assert table.group_key_sum == sum(int(r.record_key) for r in responses)


def test_a_change_end_to_end_on_the_worker(celery_worker_process: Worker) -> None:
    world = _world()
    client = world["client"]
    body = {"survey": world["before"].pk, "kind": "change", "after": world["after"].pk,
            "attribute": "support"}  # fmt: skip
    response = client.post("/api/v1/analyses/", body, format="json")
    assert response.status_code == 202, response.json()
    job = wait_for_job(client, response.json()["url"], timeout=120)
    assert job["status"] == Job.Status.SUCCEEDED, job
    result = job["result"]
    assert (result["paired"], result["before_only"], result["after_only"]) == (119, 11, 10)
    expected = _expected(world)
    shown = np.array([[np.nan if v is None else v for v in row] for row in result["transitions"]])
    mask = ~np.isnan(shown)
    # Exact answers are a register: each cell is published by the cell key (issue 26).
    assert result["perturbed"] is True
    np.testing.assert_allclose(shown[mask], expected[mask], atol=2)
    assert AnalysisJob.objects.filter(kind="change").count() == 1
