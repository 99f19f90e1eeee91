"""The survey's published set and the audited store (reconstruction.auditing; issue 33).

``published_results`` decides what the query audit is told was published: the public
response count, the organisation's earlier succeeded analyses and reports on the survey,
nothing else. ``publish`` refuses a result that differences against them and otherwise
stores it. Results are written straight into the jobs' rows (no engine run), so each
test takes a fraction of a second.
"""

from __future__ import annotations

import pytest

from reconstruction import auditing, disclosure, pipeline
from reconstruction.algorithms.audit import Box, Published
from reconstruction.jobs import JobRefused
from reconstruction.models import AnalysisJob, Job, Report
from surveys.services import response_submit
from tests.factories import consultation_factory, organisation_factory, survey_factory

pytestmark = pytest.mark.django_db

EXACT = {"name": "none"}
QUESTIONS = [
    {"key": "sex", "type": "binary", "categories": ["F", "M"], "mechanism": EXACT},
    {"key": "district", "type": "nominal", "categories": list("NSEWC"), "mechanism": EXACT},
    {"key": "age", "type": "continuous", "range": [16, 100], "mechanism": EXACT},
]
WOMEN = [{"attribute": "sex", "op": "in", "value": ["F"]}]
WOMEN_NOT_C = [*WOMEN, {"attribute": "district", "op": "in", "value": list("NSEW")}]
DISTRICT_N = [{"attribute": "district", "op": "in", "value": ["N"]}]
SUCCEEDED = Job.Status.SUCCEEDED


@pytest.fixture
def world():
    organisation = organisation_factory()
    consultation = consultation_factory(organisation)
    survey = survey_factory(consultation, questions=QUESTIONS)
    # 12 women (2 of them in C), 8 men: 20 responses
    people = [("F", "C")] * 2 + [("F", "NSEW"[i % 4]) for i in range(10)]
    people += [("M", "NSEWC"[i % 5]) for i in range(8)]
    for i, (sex, district) in enumerate(people):
        answers = {"sex": sex, "district": district, "age": float(20 + i)}
        response_submit(survey=survey, participant=f"r{i}", answers=answers)
    return organisation, consultation, survey


def job(organisation, survey, where, result=None, *, status=SUCCEEDED, kind="count"):
    spec = {"survey": survey.pk, "kind": kind, "where": where}
    return AnalysisJob.objects.create(
        organisation=organisation, requested_by="tests", survey=survey, kind=kind, spec=spec,
        status=status, result=result,
    )  # fmt: skip


def count(value):
    return {"estimate": float(value), "ci95": [float(value), float(value)]}


def report(organisation, survey, document, *, status=SUCCEEDED):
    return Report.objects.create(
        organisation=organisation, requested_by="tests", survey=survey, status=status,
        result=document,
    )  # fmt: skip


def boxes(published):
    return [(r.box, r.estimate, r.low, r.high) for r in published]


def box(*conditions):
    return Box.of(list(conditions))


def test_the_population_is_published_at_the_response_count(world):
    organisation, _, survey = world
    new = job(organisation, survey, WOMEN, status=Job.Status.RUNNING)
    assert boxes(auditing.published_results(new, {})) == [(Box(), 20.0, 20.0, 20.0)]


def test_only_the_organisations_succeeded_results_on_the_survey_are_published(world):
    organisation, _consultation, survey = world
    other_survey = survey_factory(consultation_factory(organisation), questions=QUESTIONS)
    other_organisation = organisation_factory()
    job(organisation, survey, WOMEN, count(12))  # published
    job(organisation, survey, DISTRICT_N, count(5), status=Job.Status.FAILED)
    job(organisation, survey, DISTRICT_N, count(5), status=Job.Status.REFUSED)
    job(organisation, survey, DISTRICT_N, count(5), status=Job.Status.QUEUED)
    job(organisation, other_survey, DISTRICT_N, count(5))
    job(other_organisation, survey, DISTRICT_N, count(5))
    new = job(organisation, survey, WOMEN_NOT_C, status=Job.Status.RUNNING)
    questions = {}
    assert boxes(auditing.published_results(new, questions)) == [
        (Box(), 20.0, 20.0, 20.0),
        (box(("sex", "in", {0})), 12.0, 12.0, 12.0),
    ]
    # the questions the published results name are added for the audit's universe
    assert set(questions) == {"sex"}


def test_a_result_is_not_judged_against_itself(world):
    organisation, _, survey = world
    itself = job(organisation, survey, WOMEN, count(12))
    assert boxes(auditing.published_results(itself, {})) == [(Box(), 20.0, 20.0, 20.0)]


def test_a_result_the_audit_cannot_place_is_left_out_and_the_others_kept(world):
    organisation, _, survey = world
    job(organisation, survey, DISTRICT_N, count(4))  # (the newest first: this one last)
    job(organisation, survey, [{"attribute": "income", "op": "gt", "value": 3}], count(4))
    job(organisation, survey, [{"attribute": "sex", "op": "in", "value": ["X"]}], count(4))
    job(organisation, survey, WOMEN, {"estimate": "many", "ci95": [1, 2]})
    job(organisation, survey, WOMEN, count(12), kind="no_such_kind")
    job(organisation, survey, WOMEN, count(12))  # (this one first)
    new = job(organisation, survey, WOMEN, status=Job.Status.RUNNING)
    assert sorted(boxes(auditing.published_results(new, {}))[1:], key=str) == sorted(
        [
            (box(("district", "in", {0})), 4.0, 4.0, 4.0),
            (box(("sex", "in", {0})), 12.0, 12.0, 12.0),
        ],
        key=str,
    )


def test_a_result_on_questions_partly_known_enters_with_all_of_them(world):
    # The new request's questions are known already (sex); an earlier result on sex and
    # district needs district looked up too, or it would be left out of the audit.
    organisation, _, survey = world
    job(organisation, survey, WOMEN_NOT_C, count(10))
    new = job(organisation, survey, WOMEN, status=Job.Status.RUNNING)
    questions = {"sex": survey.questions.get(key="sex")}
    published = auditing.published_results(new, questions)
    assert boxes(published)[1:] == [
        (box(("sex", "in", {0}), ("district", "in", {0, 1, 2, 3})), 10.0, 10.0, 10.0)
    ]
    assert set(questions) == {"sex", "district"}


def test_a_stored_request_is_read_as_its_jobs_kind(world):
    # the kind column decides, also for a stored request that does not repeat it
    organisation, _, survey = world
    earlier = job(organisation, survey, WOMEN, count(12))
    AnalysisJob.objects.filter(pk=earlier.pk).update(spec={"survey": survey.pk, "where": WOMEN})
    new = job(organisation, survey, WOMEN_NOT_C, status=Job.Status.RUNNING)
    assert boxes(auditing.published_results(new, {}))[1:] == [
        (box(("sex", "in", {0})), 12.0, 12.0, 12.0)
    ]


def section(key, counts, published=True):
    return {"key": key, "published": published, "reconstructed": {"counts": counts}}


def test_the_organisations_succeeded_reports_publish_their_published_sections(world):
    organisation, _consultation, survey = world
    report(organisation, survey, {"questions": [section("sex", [12.0, 8.0])]})
    report(organisation, survey, {"questions": [section("district", [1.0] * 5, False)]})
    report(organisation, survey, {"questions": [section("district", [2.0] * 5)]}, status="failed")
    report(other := organisation_factory(), survey, {"questions": [section("district", [3.0] * 5)]})
    other_survey = survey_factory(consultation_factory(organisation), questions=QUESTIONS)
    report(organisation, other_survey, {"questions": [section("district", [4.0] * 5)]})
    assert other is not organisation
    new = job(organisation, survey, WOMEN, status=Job.Status.RUNNING)
    questions = {}
    assert boxes(auditing.published_results(new, questions))[1:] == [
        (box(("sex", "in", {0})), 12.0, 12.0, 12.0),
        (box(("sex", "in", {1})), 8.0, 8.0, 8.0),
    ]
    assert set(questions) == {"sex"}


def test_a_report_the_audit_cannot_read_is_left_out_and_the_others_kept(world):
    organisation, _, survey = world
    report(organisation, survey, {"questions": [section("district", [4.0] * 5)]})
    report(organisation, survey, None)
    report(organisation, survey, ["not", "a", "report"])
    # an unknown question's section is left out; the known one in the same report counts
    report(
        organisation, survey, {"questions": [section("income", [9.0]), section("sex", [12.0, 8.0])]}
    )
    report(organisation, survey, {"questions": [section("district", "many")]})
    report(organisation, survey, None)
    new = job(organisation, survey, WOMEN, status=Job.Status.RUNNING)
    estimates = sorted(r.estimate for r in auditing.published_results(new, {}))
    assert estimates == [4.0] * 5 + [8.0, 12.0, 20.0]


def _publish(organisation, survey, where, payload):
    new = job(organisation, survey, where, status=Job.Status.RUNNING)
    spec = {"survey": survey.pk, "kind": "count", "where": where}
    auditing.publish(new, pipeline.validate_request(survey, spec, count=False), payload)
    new.refresh_from_db()
    return new


def test_a_result_that_differences_against_a_published_one_is_refused_and_not_stored(world):
    # 12 women published; 10 women outside C would reveal the 2 women of C.
    organisation, _, survey = world
    job(organisation, survey, WOMEN, count(12))
    with pytest.raises(JobRefused) as refused:
        _publish(organisation, survey, WOMEN_NOT_C, count(10))
    assert refused.value.message.params == {"threshold": 5, "kind": "difference"}
    assert "threshold of 5" in refused.value.reason
    stored = AnalysisJob.objects.get(spec__where=WOMEN_NOT_C)
    assert (stored.status, stored.result, stored.finished_at) == ("running", None, None)


def test_a_report_enters_the_audit_of_a_new_result(world):
    organisation, _, survey = world
    report(organisation, survey, {"questions": [section("sex", [12.0, 8.0])]})
    with pytest.raises(JobRefused):
        _publish(organisation, survey, WOMEN_NOT_C, count(10))


def test_a_result_that_implies_no_small_cell_is_stored_as_succeeded(world):
    organisation, _, survey = world
    # an earlier result on another question: its attribute joins the audit's universe
    job(organisation, survey, [{"attribute": "age", "op": "gt", "value": 30}], count(9))
    new = job(organisation, survey, WOMEN, status=Job.Status.RUNNING)
    # an earlier attempt of the job left an error behind: success clears it
    AnalysisJob.objects.filter(pk=new.pk).update(
        error="worker lost", error_message={"template": "worker lost", "params": {}}
    )
    spec = {"survey": survey.pk, "kind": "count", "where": WOMEN}
    auditing.publish(new, pipeline.validate_request(survey, spec, count=False), count(12))
    stored = AnalysisJob.objects.get(pk=new.pk)
    assert stored.status == "succeeded"
    assert stored.result == count(12)
    assert (stored.progress, stored.error, stored.error_message) == (1.0, "", None)
    assert stored.finished_at is not None


def test_the_threshold_is_the_consultations_cell_threshold(world):
    organisation, _, survey = world
    job(organisation, survey, WOMEN, count(12))
    # 12 women published; 5 women outside C imply 7 in C: at or above 5, not 10
    assert _publish(organisation, survey, WOMEN_NOT_C, count(5)).status == "succeeded"
    AnalysisJob.objects.filter(spec__where=WOMEN_NOT_C).delete()
    survey.consultation.min_cell = 10
    survey.consultation.save()
    with pytest.raises(JobRefused) as refused:
        _publish(organisation, survey, WOMEN_NOT_C, count(5))
    assert refused.value.message.params["threshold"] == 10


def test_a_job_that_ended_meanwhile_is_not_overwritten(world):
    organisation, _, survey = world
    new = job(organisation, survey, WOMEN, status=Job.Status.FAILED)
    spec = {"survey": survey.pk, "kind": "count", "where": WOMEN}
    auditing.publish(new, pipeline.validate_request(survey, spec, count=False), count(12))
    new.refresh_from_db()
    assert (new.status, new.result) == ("failed", None)


def test_results_of_reads_a_stored_request():
    assert auditing.results_of("count", {"where": []}, count(7), {}) == [
        Published(Box(), 7.0, 7.0, 7.0)
    ]


def _publish_sample(organisation, survey, where, payload):
    new = job(organisation, survey, where, status=Job.Status.RUNNING, kind="sample")
    spec = {"survey": survey.pk, "kind": "sample", "where": where, "size": 2}
    auditing.publish(new, pipeline.validate_request(survey, spec, count=False), payload)
    new.refresh_from_db()
    return new


def pool(value):
    return {"pool_estimate": float(value), "pool_ci95": [float(value), float(value)]}


def test_a_sample_whose_pool_implies_no_small_cell_is_stored(world):
    organisation, _, survey = world
    job(organisation, survey, WOMEN, count(12))
    assert _publish_sample(organisation, survey, DISTRICT_N, pool(5)).status == "succeeded"


def test_a_sample_the_audit_refuses_reads_the_samples_refusal_with_the_threshold(world):
    # 12 women published; a sample of the 10 women outside C would reveal the 2 of C. The
    # refusal reads as a sample's too-large refusal (issue 26: no pool size, one wording).
    organisation, _, survey = world
    job(organisation, survey, WOMEN, count(12))
    with pytest.raises(JobRefused) as refused:
        _publish_sample(organisation, survey, WOMEN_NOT_C, pool(10))
    assert refused.value.message.template == disclosure.sample_refused(5).template
    assert refused.value.message.params == {"threshold": 5}


def test_an_earlier_change_is_placed_with_its_after_surveys_question(world):
    # A succeeded change (issue 29) of "sex" between this survey and a later one: the
    # audit reads the after survey's question and publishes the change's cells under
    # its audit name (change.audit_name), here for a new count on this survey.
    organisation, consultation, survey = world
    after = survey_factory(consultation, questions=QUESTIONS[:1], kind="opinion")
    spec = {"survey": survey.pk, "kind": "change", "attribute": "sex", "after": after.pk,
            "where": []}  # fmt: skip
    cells = [[10.0, 2.0], [1.0, 7.0]]
    result = {"transitions": cells, "transitions_ci95": [[[v, v] for v in row] for row in cells]}
    AnalysisJob.objects.create(
        organisation=organisation, requested_by="tests", survey=survey, kind="change",
        spec=spec, status=SUCCEEDED, result=result,
    )  # fmt: skip
    new = job(organisation, survey, WOMEN, status=Job.Status.RUNNING)
    questions: dict = {}  # nothing known yet: the change's own questions are read
    published = auditing.published_results(new, questions)
    name = f"sex@survey{after.pk}"
    assert questions["sex"] == survey.questions.get(key="sex")
    assert name in questions  # placed: the after question, as the audit sees it
    placed = [r for r in published if name in dict(r.box.categories)]
    assert [(r.box, r.estimate) for r in placed] == [
        (box(("sex", "in", {i}), (name, "in", {j})), value)
        for i, j, value in ((0, 0, 10.0), (0, 1, 2.0), (1, 0, 1.0), (1, 1, 7.0))
    ]


def _publish_change(organisation, survey, where, payload):
    # a change of "sex" (issue 29) from this survey to a later one, through publish()
    after = survey_factory(survey.consultation, questions=QUESTIONS[:1], kind="opinion")
    spec = {"survey": survey.pk, "kind": "change", "attribute": "sex", "after": after.pk,
            "where": where}  # fmt: skip
    new = job(organisation, survey, where, status=Job.Status.RUNNING, kind="change")
    AnalysisJob.objects.filter(pk=new.pk).update(spec=spec)
    new.refresh_from_db()
    auditing.publish(new, pipeline.validate_request(survey, spec, count=False), payload)
    new.refresh_from_db()
    return new


def change_of(group, cells):
    ci95 = [[None if v is None else [v, v] for v in row] for row in cells]
    return {"group_size": float(group), "group_ci95": [float(group)] * 2,
            "transitions": cells, "transitions_ci95": ci95}  # fmt: skip


def test_a_change_is_audited_with_its_after_surveys_question_and_stored(world):
    organisation, _, survey = world
    job(organisation, survey, WOMEN, count(12))
    # the 12 women: 6 answered F again, 6 answered M; no group below 5 implied
    stored = _publish_change(organisation, survey, WOMEN, change_of(12, [[6.0, 6.0], [None] * 2]))
    assert stored.status == "succeeded"
    assert stored.result["transitions"] == [[6.0, 6.0], [None, None]]


def test_a_change_whose_group_differences_against_a_published_count_is_refused(world):
    # 12 women published; a change among the 10 women outside C would reveal the 2 of C
    organisation, _, survey = world
    job(organisation, survey, WOMEN, count(12))
    with pytest.raises(JobRefused) as refused:
        _publish_change(organisation, survey, WOMEN_NOT_C, change_of(10, [[5.0, 5.0], [None] * 2]))
    assert refused.value.message.params == {"threshold": 5, "kind": "difference"}
    assert AnalysisJob.objects.get(kind="change").status == "running"


def test_a_count_whose_complement_in_the_responses_is_small_is_refused(world):
    # 20 responses are public; 17 outside C would reveal the 3 in C
    organisation, _, survey = world
    outside_c = [{"attribute": "district", "op": "in", "value": list("NSEW")}]
    with pytest.raises(JobRefused) as refused:
        _publish(organisation, survey, outside_c, count(17))
    assert refused.value.message.params == {"threshold": 5, "kind": "difference"}
