"""Issue 13, findings 1-3: differencing, strata, cost limits, quotas, stuck jobs.

Exact data (``mechanism: none``) so that the numbers are plain, as in the issue: 120
residents, 53 women of whom 2 live in district C. Tasks run in-process (SQLite).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report
from surveys.services import response_submit
from tests.factories import consultation_factory, survey_factory, tenant_factory

pytestmark = pytest.mark.django_db

DISTRICTS = ["N", "S", "E", "W", "C"]
QUESTIONS = [
    {"key": "sex", "type": "binary", "categories": ["F", "M"], "mechanism": {"name": "none"}},
    {"key": "district", "type": "nominal", "categories": DISTRICTS, "mechanism": {"name": "none"}},
    {"key": "age", "type": "continuous", "range": [16, 100], "mechanism": {"name": "none"}},
]


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _run_jobs(monkeypatch):
    """Queue jobs at once (the tests' transaction never commits)."""
    from django.db import transaction

    monkeypatch.setattr(transaction, "on_commit", lambda func, using=None, robust=False: func())


@pytest.fixture
def world(db):
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation), questions=QUESTIONS)
    people = []
    # 53 women: 2 in C, the other 51 in N, S, E, W; 67 men: at least 10 in every district
    people += [("F", "C")] * 2 + [("F", DISTRICTS[i % 4]) for i in range(51)]
    people += [("M", DISTRICTS[i % 5]) for i in range(67)]
    for i, (sex, district) in enumerate(people):
        answers = {"sex": sex, "district": district, "age": float(20 + i % 60)}
        response_submit(survey=survey, participant=f"r{i}", answers=answers)
    return tenant, survey


def analyse(tenant, body):
    response = tenant.analyst.post("/api/v1/analyses/", body, format="json")
    return response


def finished(tenant, response):
    assert response.status_code == 202, response.content
    return tenant.analyst.get(response.json()["url"]).json()


def refusal(tenant, body) -> str:
    """The refusal of a request: a 400 up front or a job that ends ``refused``."""
    response = analyse(tenant, body)
    if response.status_code == 400:
        return json.dumps(response.json())
    job = finished(tenant, response)
    assert job["status"] == "refused", job
    assert job["result"] is None
    return job["error"]


def count(survey, *conditions):
    return {"survey": survey.pk, "kind": "count", "where": list(conditions)}


def is_in(attribute, *labels):
    return {"attribute": attribute, "op": "in", "value": list(labels)}


def small_numbers(text: str, threshold: int = 5) -> list[str]:
    """Numbers below the threshold that appear in a message (other than list indices)."""
    text = re.sub(r"\[\d+\]", "", text)
    return [
        n for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", text) if float(n) < threshold
    ]


# ----------------------------------------------------------------------- finding 1


def test_the_issues_differencing_attack_is_refused(world):
    tenant, survey = world
    direct = refusal(tenant, count(survey, is_in("sex", "F"), is_in("district", "C")))
    assert not small_numbers(direct)
    women = finished(tenant, analyse(tenant, count(survey, is_in("sex", "F"))))
    assert women["status"] == "succeeded" and abs(women["result"]["estimate"] - 53) <= 2
    rest = finished(
        tenant, analyse(tenant, count(survey, is_in("sex", "F"), is_in("district", *"NSEW")))
    )
    assert rest["status"] == "refused", rest
    assert rest["result"] is None
    assert "threshold of 5" in rest["error"] and not small_numbers(rest["error"])
    assert "51" not in rest["error"]


def test_differencing_across_keys_of_the_organisation_is_refused(world):
    tenant, survey = world
    from tests.factories import client_for, key_factory

    _, other_key = key_factory(tenant.organisation, "analyst")
    other = client_for(other_key)
    women = other.post("/api/v1/analyses/", count(survey, is_in("sex", "F")), format="json")
    assert other.get(women.json()["url"]).json()["status"] == "succeeded"
    rest = finished(
        tenant, analyse(tenant, count(survey, is_in("sex", "F"), is_in("district", *"NSEW")))
    )
    assert rest["status"] == "refused"


def test_complementary_suppression_undone_by_a_later_distribution_is_refused(world):
    tenant, survey = world
    women = finished(tenant, analyse(tenant, count(survey, is_in("sex", "F"))))
    assert women["status"] == "succeeded"
    body = {
        "survey": survey.pk,
        "kind": "distribution",
        "attribute": "district",
        "where": [is_in("sex", "F")],
    }
    distribution = finished(tenant, analyse(tenant, body))
    # C (2) and the next-smallest cell are suppressed within the distribution; its other
    # cells and total are fine on their own, and the audit finds no small implied cell
    # unless the totals let one be derived.
    if distribution["status"] == "succeeded":
        counts = distribution["result"]["counts"]
        assert counts[DISTRICTS.index("C")] is None
    else:
        assert distribution["status"] == "refused"
        assert not small_numbers(distribution["error"])


def test_threshold_differences_on_a_continuous_attribute_are_refused(world):
    tenant, survey = world
    below = {"attribute": "age", "op": "lte", "value": 40}
    just_below = {"attribute": "age", "op": "lte", "value": 39}
    first = finished(tenant, analyse(tenant, count(survey, below)))
    assert first["status"] == "succeeded"
    second = finished(tenant, analyse(tenant, count(survey, just_below)))
    assert second["status"] == "refused"  # age exactly 40: 2 residents


def test_unrelated_results_are_still_published(world):
    tenant, survey = world
    for body in (
        count(survey, is_in("sex", "F")),
        count(survey, is_in("district", "N", "S")),
        count(survey, is_in("sex", "M"), is_in("district", "E")),
    ):
        assert finished(tenant, analyse(tenant, body))["status"] == "succeeded", body


# ----------------------------------------------------------------------- finding 2


def sample(survey, strata, size):
    return {"survey": survey.pk, "kind": "sample", "size": size, "seed": 1, "strata": strata}


def test_a_stratum_below_the_threshold_is_refused_without_its_size(world):
    tenant, survey = world
    strata = [
        {"where": [is_in("sex", "F"), is_in("district", "C")], "size": 1},
        {"where": [is_in("sex", "M")], "size": 10},
    ]
    reason = refusal(tenant, sample(survey, strata, 11))
    assert "strata[0]" in reason
    assert not small_numbers(reason)


def test_a_quota_larger_than_a_small_pool_does_not_state_the_pool(world):
    tenant, survey = world
    strata = [
        {"where": [is_in("sex", "F"), is_in("district", "C")], "size": 2},
        {"where": [is_in("sex", "M")], "size": 10},
    ]
    reason = refusal(tenant, sample(survey, strata, 12))
    assert "pool of 2" not in reason
    assert not small_numbers(reason)


# ----------------------------------------------------------------------- finding 3


def test_an_analysis_over_the_cost_budget_is_refused_naming_both(world, settings):
    tenant, survey = world
    settings.ANALYSIS_COST_BUDGET = 1000
    response = analyse(tenant, count(survey, is_in("sex", "F"), is_in("district", "N")))
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "1,000" in detail and "2,010" in detail  # 2 x 5 cells x (1 + 200 replicates)
    assert not AnalysisJob.objects.exists()


def test_the_default_budget_refuses_the_issues_eight_condition_count(db):
    tenant = tenant_factory()
    questions = [
        {
            "key": f"q{i}",
            "type": "nominal",
            "categories": [str(c) for c in range(6)],
            "mechanism": {"name": "randomised_response", "retain": 0.7},
        }
        for i in range(8)
    ]
    survey = survey_factory(consultation_factory(tenant.organisation), questions=questions)
    where = [is_in(f"q{i}", "0") for i in range(8)]
    response = analyse(tenant, count(survey, *where))
    assert response.status_code == 400
    assert "ANALYSIS_COST_BUDGET" in response.json()["detail"]


def test_the_cost_counts_the_reading_that_grows_with_the_participants(db):
    # bench/bench_cost.py --accepted: a sample of 50 strata judges 50 groups and its 50
    # passes receive most participants 50 times over; its fits are cheap, so the fit-only
    # model accepted it at any size, and it ran for minutes at 10^6 (before one scan and
    # one stream served every stratum: 24 s at 10^6, 64 s at 3 x 10^6 at load 5-8,
    # bench_cost --samples, issue 32). The reading term refuses it at 3 x 10^6 and keeps
    # it at the demo's size.
    from dataclasses import replace

    from reconstruction import analysis, cost, pipeline

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation), questions=QUESTIONS)
    bands = [
        {"where": [{"attribute": "age", "op": "between", "value": [16 + k, 17 + k]}], "size": 1}
        for k in range(50)
    ]
    spec = {"survey": survey.pk, "kind": "sample", "size": 50, "strata": bands}
    request = pipeline.resolve(survey, spec)
    small = replace(request, participants=10_000)
    large = replace(request, participants=3 * 10**6)
    assert cost.fit_cost(small) == cost.fit_cost(large)  # exact answers: one COUNT per group
    assert cost.analysis_cost(small) <= settings.ANALYSIS_COST_BUDGET
    assert cost.analysis_cost(large) > settings.ANALYSIS_COST_BUDGET
    with pytest.raises(analysis.AnalysisInputError, match="for reading the answers"):
        cost.check_cost(large)
    # A count reads its attributes once: 10^6 participants x 2 attributes.
    two = pipeline.resolve(survey, count(survey, is_in("sex", "F"), is_in("district", "N")))
    assert cost.reads(replace(two, participants=10**6)) == 2 * 10**6


def _national(participants: int):
    """The benchmark's seven-question survey (distorted answers) whose response tallies
    say ``participants`` answered every question. No answer is stored: the web request
    reads only the tallies, so its cost check sees a survey of that size."""
    from surveys import tallies
    from surveys.models import Question
    from tests.factories import seven_questions

    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation), questions=seven_questions())
    ids = Question.objects.filter(survey=survey).values_list("pk", flat=True)
    tallies.add(survey.pk, {tallies.SURVEY: participants, **{pk: participants for pk in ids}})
    return tenant, survey


def test_a_national_surveys_count_and_mean_at_ten_million_are_accepted(db):
    # bench/bench_scale.py's count and mean ran end to end in 5.9 s and 6.0 s at 10^7
    # participants, but the reading weight of issue 13 (0.05 units per participant and
    # attribute) priced the count's reading alone at the whole budget, so every analysis
    # at 10^7 was refused (README, "Cost model": the weight is calibrated on the reading
    # time bench/bench_cost.py --accepted measures).
    from dataclasses import replace

    from reconstruction import cost, pipeline

    tenant, survey = _national(10**7)
    body = count(survey, is_in("sex", "F"), {"attribute": "age", "op": "lte", "value": 30})
    assert analyse(tenant, body).status_code == 202
    mean = {
        "survey": survey.pk,
        "kind": "mean",
        "attribute": "income",
        "where": [is_in("district", "N", "S")],
    }
    assert analyse(tenant, mean).status_code == 202
    request = replace(pipeline.resolve(survey, body), participants=10**7)
    # The reading is what grows with the participants; it is priced, not waived.
    assert cost.analysis_cost(request) - cost.fit_cost(request) >= 10**7 * 2 * cost.READ_UNITS
    assert cost.analysis_cost(request) <= settings.ANALYSIS_COST_BUDGET


def test_a_sample_of_many_strata_at_ten_million_is_still_refused_for_its_reading(db):
    tenant, survey = _national(10**7)
    bands = [
        {"where": [{"attribute": "age", "op": "between", "value": [16 + k, 17 + k]}], "size": 1}
        for k in range(50)
    ]
    body = {"survey": survey.pk, "kind": "sample", "size": 50, "seed": 1, "strata": bands}
    response = analyse(tenant, body)
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "ANALYSIS_COST_BUDGET" in detail and "for reading the answers" in detail
    # Its reading alone is over the budget: 50 strata judged, fitted and streamed.
    reading = int(re.search(r"([\d,]+) for reading", detail).group(1).replace(",", ""))
    assert reading > settings.ANALYSIS_COST_BUDGET
    assert not AnalysisJob.objects.exists()


def test_a_figure3_count_is_priced_for_assigning_every_participant_per_replicate(db):
    # Figure 3 loads every participant and assigns them values on each of the 200
    # bootstrap replicates in the worker; priced like the joint count (which fits SQL
    # tables) it was accepted at 10^7, where it would run for minutes.
    tenant, survey = _national(10**7)
    where = [is_in("sex", "F"), {"attribute": "age", "op": "lte", "value": 30}]
    body = {**count(survey, *where), "method": "figure3"}
    response = analyse(tenant, body)
    assert response.status_code == 400, response.content
    assert "for reading the answers" in response.json()["detail"]
    assert analyse(tenant, count(survey, *where)).status_code == 202  # joint: accepted
    small, _survey = _national(20_000)
    assert analyse(small, {**count(_survey, *where), "method": "figure3"}).status_code == 202


def test_whole_number_tests_and_averaged_models_are_priced(db):
    # Issue 10: the worker tests an undeclared continuous attribute for whole numbers
    # (one half-unit GROUP BY over everyone counted), and a joint count whose evidence
    # is inconclusive fits both models (intervals and the 85-point lattice of ages
    # 16..100), each from its own table with its 200 replicates. The cost model priced
    # one interval model (2 x 41 cells) and one table read.
    from dataclasses import replace

    from reconstruction import cost, pipeline
    from tests.factories import profile_questions

    def priced(questions, body_of):
        tenant = tenant_factory()
        survey = survey_factory(consultation_factory(tenant.organisation), questions=questions)
        request = pipeline.resolve(survey, body_of(survey))
        return cost.fit_cost(request), cost.reads(replace(request, participants=10**6))

    where = [is_in("sex", "F"), {"attribute": "age", "op": "lte", "value": 30}]
    questions = profile_questions()[:7]  # age: ±10 uniform noise, no step
    fits, reads = priced(questions, lambda s: count(s, *where))
    assert fits == 2 * (41 + 85) * (1 + cost.N_BOOT)  # both models' fits
    assert reads == (2 + 2 + 2) * 10**6  # table, half units (joined), the lattice's table
    # Declared step: the lattice only, nothing tested.
    stepped = [{**q, "step": 1} if q["key"] == "age" else q for q in questions]
    assert priced(stepped, lambda s: count(s, *where)) == (2 * 85 * 201, 2 * 10**6)
    # Gaussian noise: tested, never averaged (either model, one table).
    smooth = [
        {**q, "mechanism": {"name": "additive_gaussian", "sigma": 5}} if q["key"] == "age" else q
        for q in questions
    ]
    assert priced(smooth, lambda s: count(s, *where)) == (2 * 85 * 201, 4 * 10**6)
    # A conditional mean tests (either model for the condition's age) and judges its group.
    mean = {"kind": "mean", "attribute": "income", "where": where}
    fits, reads = priced(questions, lambda s: {"survey": s.pk, **mean})
    assert fits == (2 * 40 * 85 + 2 * 85) * (1 + cost.N_BOOT), fits  # income: 40 intervals
    assert reads == (3 + 2 + 3) * 10**6  # table, group, age's half units (joined)
    # The overall distribution of age tests it (either model, one half-unit read).
    overall = {"kind": "distribution", "attribute": "age"}
    assert priced(questions, lambda s: {"survey": s.pk, **overall}) == (85 * 201, 2 * 10**6)
    # The count at 10^7 stays within the default budget with the tests priced.
    _tenant, survey = _national(10**7)
    request = replace(pipeline.resolve(survey, count(survey, *where)), participants=10**7)
    assert cost.analysis_cost(request) <= settings.ANALYSIS_COST_BUDGET


def test_analyses_are_rate_limited_per_key_with_retry_after(world, settings):
    tenant, survey = world
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "analyses": "2/minute",
        },
    }
    codes = [analyse(tenant, count(survey, is_in("sex", "F"))).status_code for _ in range(2)]
    assert codes == [202, 202]
    third = analyse(tenant, count(survey, is_in("sex", "F")))
    assert third.status_code == 429 and int(third["Retry-After"]) >= 1
    assert third["Content-Type"].startswith("application/json")
    assert tenant.analyst.get("/api/v1/analyses/").status_code == 200  # polling is free


def test_reports_and_aggregates_are_rate_limited(world, settings):
    tenant, survey = world
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "reports": "1/minute",
            "aggregate_reconstructions": "1/minute",
        },
    }
    url = f"/api/v1/surveys/{survey.pk}/reports/"
    assert tenant.analyst.post(url).status_code == 202
    assert tenant.analyst.post(url).status_code == 429
    body = {"counts": [10, 20], "channel": [[0.7, 0.3], [0.3, 0.7]]}
    aggregate = "/api/v1/aggregate-reconstructions/"
    assert tenant.analyst.post(aggregate, body, format="json").status_code == 202
    refused = tenant.analyst.post(aggregate, body, format="json")
    assert refused.status_code == 429 and "Retry-After" in refused


def test_an_organisation_has_a_cap_on_unfinished_jobs(world, settings):
    tenant, survey = world
    settings.JOBS_MAX_ACTIVE_PER_ORGANISATION = 1
    Report.objects.create(organisation=tenant.organisation, survey=survey, requested_by="t")
    response = tenant.analyst.post(f"/api/v1/surveys/{survey.pk}/reports/")
    assert response.status_code == 429
    assert "JOBS_MAX_ACTIVE_PER_ORGANISATION" in response.json()["detail"]
    assert Report.objects.count() == 1
    refused = analyse(tenant, count(survey, is_in("sex", "F")))
    assert refused.status_code == 429


def test_an_aggregate_reconstruction_has_a_channel_size_cap(db):
    tenant = tenant_factory()
    k = 101
    body = {"counts": [1.0] * k, "channel": [[1.0 / k] * k for _ in range(k)]}
    response = tenant.analyst.post("/api/v1/aggregate-reconstructions/", body, format="json")
    assert response.status_code == 400
    assert "AGGREGATE_MAX_CATEGORIES" in response.json()["detail"]
    assert not AggregateReconstruction.objects.exists()


def test_an_aggregate_request_runs_no_estimator_in_the_request(db, monkeypatch):
    from reconstruction.algorithms import methods

    calls = []
    original = methods.reconstruct
    monkeypatch.setattr(
        methods, "reconstruct", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    import reconstruction.serializers as serializers

    assert not hasattr(serializers, "reconstruct")
    tenant = tenant_factory()
    body = {"counts": [10, 20], "channel": [[0.7, 0.3], [0.3, 0.7]]}
    response = tenant.analyst.post("/api/v1/aggregate-reconstructions/", body, format="json")
    assert response.status_code == 202


def test_a_job_running_past_its_lease_is_requeued_and_finishes(world):
    tenant, survey = world
    from reconstruction import tasks

    job = AnalysisJob.objects.create(
        organisation=tenant.organisation,
        requested_by="t",
        survey=survey,
        kind="count",
        spec=count(survey, is_in("sex", "F")),
        status=Job.Status.RUNNING,
        attempts=1,
        started_at=timezone.now() - timedelta(hours=2),
    )
    tasks.requeue_stuck_jobs()
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.attempts == 2


def test_a_job_whose_worker_died_too_often_fails_with_a_reason(world, settings):
    tenant, survey = world
    from reconstruction import tasks

    job = AnalysisJob.objects.create(
        organisation=tenant.organisation,
        requested_by="t",
        survey=survey,
        kind="count",
        spec=count(survey, is_in("sex", "F")),
        status=Job.Status.RUNNING,
        attempts=settings.JOBS_MAX_ATTEMPTS,
        started_at=timezone.now() - timedelta(hours=2),
    )
    recent = AnalysisJob.objects.create(
        organisation=tenant.organisation,
        requested_by="t",
        survey=survey,
        kind="count",
        spec=count(survey, is_in("sex", "F")),
        status=Job.Status.RUNNING,
        attempts=1,
        started_at=timezone.now(),
    )
    tasks.requeue_stuck_jobs()
    job.refresh_from_db()
    recent.refresh_from_db()
    assert job.status == Job.Status.FAILED and "worker stopped" in job.error
    assert recent.status == Job.Status.RUNNING  # within its lease: left alone


def test_job_rate_limits_are_counted_in_the_shared_cache(world, settings, monkeypatch):
    # Every worker must see every request that starts a job: the count lives in the
    # cache (Redis in production), not in one process, and clearing the cache resets it.
    # (The old per-process batches of limit // 100 left 2 of these 3 requests unshared.)
    import time
    from types import SimpleNamespace

    from django.core.cache import cache

    import consultations.throttling as throttling

    monkeypatch.setattr(  # one fixed window: the minute cannot turn during the test
        throttling, "time", SimpleNamespace(time=lambda: 60.0 * 1000 + 1, monotonic=time.monotonic)
    )
    tenant, survey = world
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "analyses": "300/minute",
        },
    }
    key = f"throttle:analyses:{tenant.analyst_key.prefix}:1000"
    for expected in (1, 2, 3):
        assert analyse(tenant, count(survey, is_in("sex", "F"))).status_code == 202
        assert cache.get(key) == expected
    cache.clear()
    assert analyse(tenant, count(survey, is_in("sex", "F"))).status_code == 202
    assert cache.get(key) == 1
