"""Issue 26: an overall exact result is judged on the answerers' count it publishes.

An optional exact question answered by few: its overall distribution publishes ``n``
perturbed by the answerers' cell key, and its overall mean publishes ``group_size``
likewise (the value a count of that group, a report's response count and the
distribution's ``n`` give). Either is shown only when that published count's interval
(minus 2) reaches ``min_responses`` (10), as a report's question is: judged on the true
count, a published 9 beside the rule "at least 10" would leave only 10 or 11, and an
exact ``group_size`` would undo the perturbation of the distribution's ``n``.

The record keys are set here (all 0: every count of 3 or more moves by -2, all
0xFFFF0000: by +2, or a fixed spread), so nothing depends on chance.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from privacy.mechanisms import cellkey
from reconstruction.models import Report
from surveys.models import Answer, Response
from tests.factories import consultation_factory, survey_factory, tenant_factory
from tests.guard.exact_attacks import Outcome, World, run, small_numbers

pytestmark = pytest.mark.django_db

HIGH_KEY = 0xFFFF0000
"""Its upper half reads 0.99998: a sum of up to 65,535 of them moves a count by +2."""

QUESTIONS = [
    {"key": "district", "type": "binary", "categories": ["N", "S"], "mechanism": {"name": "none"}},
    {
        "key": "pilot",
        "type": "binary",
        "categories": ["Y", "N"],
        "required": False,
        "mechanism": {"name": "none"},
    },
    {
        "key": "spend",
        "type": "continuous",
        "range": [0, 100],
        "step": 1,
        "required": False,
        "mechanism": {"name": "none"},
    },
]


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _run_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import transaction

    monkeypatch.setattr(transaction, "on_commit", lambda func, using=None, robust=False: func())


def _world(answered: int, *, key: int | None) -> World:
    """60 residents, the first ``answered`` answering pilot (half "Y") and spend; every
    record key ``key``, or (``None``) the fixed spread ``i * 2654435761 mod 2**32``."""
    from surveys.services import responses_submit_bulk

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation), questions=QUESTIONS)
    residents = []
    for i in range(60):
        answers: dict[str, Any] = {"district": "NS"[i % 2]}
        if i < answered:
            answers["pilot"] = "YN"[i % 2]
            answers["spend"] = float(10 + i)
        residents.append({"participant": f"p-{i:03d}", "answers": answers})
    responses_submit_bulk(survey=survey, responses=residents)
    if key is not None:
        Response.objects.filter(survey=survey).update(record_key=key)
    else:
        for index, pk in enumerate(
            Response.objects.filter(survey=survey).order_by("pk").values_list("pk", flat=True)
        ):
            Response.objects.filter(pk=pk).update(record_key=index * 2654435761 % 2**32)
    return World(tenant, survey)


def _distribution(world: World) -> Outcome:
    return run(world, world.body("distribution", attribute="pilot"))


def _mean(world: World) -> Outcome:
    return run(world, world.body("mean", attribute="spend"))


def _answerers_published(world: World, key: str) -> int:
    """The answerers' count of ``key`` as the cell-key method publishes it."""
    answers = Answer.objects.filter(question__survey=world.survey, question__key=key)
    keys = list(answers.values_list("response__record_key", flat=True))
    return cellkey.perturbed_count(len(keys), sum(keys))


@pytest.mark.parametrize("analysis", [_distribution, _mean])
def test_an_overall_exact_result_is_judged_on_the_answerers_count_it_publishes(analysis) -> None:
    """11 answered, moved by -2: published 9, whose interval [7, 11] reaches below 10.
    The old code published the distribution with n = 9 and the mean with group_size 11."""
    outcome = analysis(_world(11, key=0))
    assert outcome.status == "refused", outcome
    assert "fewer than 10 participants answered" in outcome.error
    assert not small_numbers(outcome.error, 10) and "11" not in outcome.error


def test_the_refusal_on_the_published_count_gives_the_reason_of_too_few_answerers() -> None:
    """11 published as 9 is refused (by the worker) with the words that refuse 9 true
    answerers (up front, a 400): no published count, no number below the threshold."""
    for analysis in (_distribution, _mean):
        nine = analysis(_world(9, key=HIGH_KEY))
        eleven = analysis(_world(11, key=0))
        assert nine.status == eleven.status == "refused"
        assert eleven.job_id is not None and nine.job_id is None
        assert eleven.error.startswith("fewer than 10 participants answered")
        assert json.loads(nine.error)["errors"]["survey"] == eleven.error


def test_an_overall_exact_distribution_publishes_enough_answerers() -> None:
    """11 answered, moved by +2: published 13, whose interval [11, 15] reaches 10."""
    outcome = _distribution(_world(11, key=HIGH_KEY))
    assert outcome.published and outcome.result is not None
    assert outcome.result["perturbed"] is True and outcome.result["n"] == 13


def test_an_overall_exact_mean_publishes_its_answerers_perturbed() -> None:
    """11 answered, moved by +2: group_size 13 on [11, 15] (the old code: 11 on [11, 11])."""
    outcome = _mean(_world(11, key=HIGH_KEY))
    assert outcome.published and outcome.result is not None
    result = outcome.result
    assert result["perturbed"] is True
    assert result["group_size"] == 13 and result["group_size_ci95"] == [11.0, 15.0]


def test_an_exact_questions_answerers_are_published_as_one_value_everywhere() -> None:
    """40 answered, record keys spread (fixed): the mean's group_size, the
    distribution's n and a report's response count are the one perturbed value of the
    answerers' cell key, so none undoes another's perturbation (the old mean: 40)."""
    world = _world(40, key=None)
    expected = _answerers_published(world, "pilot")
    assert expected == _answerers_published(world, "spend") != 40  # the keys move it
    distribution, mean = _distribution(world), _mean(world)
    assert distribution.result is not None and mean.result is not None
    assert distribution.result["n"] == expected
    assert mean.result["group_size"] == expected
    assert mean.result["group_size_ci95"] == [expected - 2.0, expected + 2.0]
    response = world.tenant.analyst.post(f"/api/v1/surveys/{world.survey.pk}/reports/")
    assert response.status_code == 202, response.content
    sections = {s["key"]: s for s in Report.objects.get(survey=world.survey).result["questions"]}
    assert sections["pilot"]["responses"] == sections["spend"]["responses"] == expected


def test_a_required_exact_question_is_published_on_its_perturbed_count() -> None:
    """The required exact district (60 answered, moved by -2 to 58) is published."""
    world = _world(40, key=0)
    outcome = run(world, world.body("distribution", attribute="district"))
    assert outcome.published and outcome.result is not None
    assert outcome.result["n"] == 58
