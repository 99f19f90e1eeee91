"""Issue 28: each resident's privacy budget per consultation, reused answers, the resident's
view of their budget (API, on SQLite here; on PostgreSQL with parallel requests in
tests/integration/test_privacy_budget_postgres.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from core.errors import NotFound
from surveys.models import Answer, PrivacyLedger, Response
from surveys.privacy_budget import NO_SUCH_PARTICIPANT, participant_budget
from tests.factories import consultation_factory, survey_factory

URL = "/api/v1/surveys/"
RR = math.log(0.7 / 0.3)  # ε of randomised response keeping 70% of two categories


def rr_question(key: str = "sex", retain: float = 0.7, **extra: Any) -> dict[str, Any]:
    return {
        "key": key,
        "type": "binary",
        "categories": ["F", "M"],
        "mechanism": {"name": "randomised_response", "retain": retain},
        **extra,
    }


def exact_question(key: str = "tenure") -> dict[str, Any]:
    return {
        "key": key,
        "type": "binary",
        "categories": ["own", "rent"],
        "mechanism": {"name": "none"},
    }


def two_rr() -> list[dict[str, Any]]:
    return [rr_question("sex"), rr_question("smokes"), exact_question()]


def submit(client, survey, participant, answers):
    return client.post(
        f"{URL}{survey.pk}/responses/",
        {"participant": participant, "answers": answers},
        format="json",
    )


def bulk(client, survey, responses):
    return client.post(f"{URL}{survey.pk}/responses/bulk/", {"responses": responses}, format="json")


def spent(consultation, participant: str) -> float | None:
    row = PrivacyLedger.objects.filter(consultation=consultation, reference=participant).first()
    return None if row is None else row.spent


ANSWERS = {"sex": "F", "smokes": "M", "tenure": "own"}


# --------------------------------------------------------------------------- the budget field


def test_a_consultation_takes_a_budget_and_shows_it(tenant):
    created = tenant.analyst.post(
        "/api/v1/consultations/", {"title": "School", "privacy_budget": 4}, format="json"
    )
    assert created.status_code == 201, created.content
    assert created.json()["privacy_budget"] == 4.0
    plain = tenant.analyst.post("/api/v1/consultations/", {"title": "No cap"}, format="json")
    assert plain.json()["privacy_budget"] is None


@pytest.mark.parametrize("budget", [0, -1, 0.0, 1e7, "4", True, [4]])
def test_budgets_that_are_not_positive_finite_numbers_are_refused(tenant, budget):
    response = tenant.analyst.post(
        "/api/v1/consultations/", {"title": "School", "privacy_budget": budget}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "privacy_budget" in response.json()["errors"]


def test_a_non_finite_budget_is_refused(tenant):
    body = b'{"title": "School", "privacy_budget": 1e400}'  # parses as infinity
    response = tenant.analyst.generic(
        "POST", "/api/v1/consultations/", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content


def test_once_a_survey_opened_a_budget_can_be_raised_or_removed_only(tenant):
    capped = consultation_factory(tenant.organisation, privacy_budget=4.0)
    uncapped = consultation_factory(tenant.organisation)
    survey_factory(capped, questions=two_rr())
    survey_factory(uncapped, questions=two_rr())

    def patch(consultation, budget):
        return tenant.analyst.patch(
            f"/api/v1/consultations/{consultation.pk}/", {"privacy_budget": budget}, format="json"
        )

    lowered = patch(capped, 3.0)
    assert lowered.status_code == 400 and "raised" in lowered.json()["detail"]
    introduced = patch(uncapped, 3.0)
    assert introduced.status_code == 400 and "first survey opens" in introduced.json()["detail"]
    assert patch(capped, 6.0).json()["privacy_budget"] == 6.0
    assert patch(capped, None).json()["privacy_budget"] is None
    draft_only = consultation_factory(tenant.organisation)
    survey_factory(draft_only, questions=two_rr(), open_it=False)
    assert patch(draft_only, 2.5).json()["privacy_budget"] == 2.5
    assert patch(draft_only, 1.0).json()["privacy_budget"] == 1.0


# --------------------------------------------------------------------------- schemes and opening


def test_the_scheme_carries_epsilon_total_and_the_budget(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=4.0)
    survey = survey_factory(consultation, questions=two_rr())
    scheme = tenant.portal.get(f"{URL}{survey.pk}/scheme/").json()
    assert scheme["epsilon_total"] == pytest.approx(2 * RR)  # the exact question counts 0
    assert scheme["privacy_budget"] == 4.0


def test_a_survey_with_an_unbounded_question_has_no_epsilon_total(tenant, survey):
    scheme = tenant.portal.get(f"{URL}{survey.pk}/scheme/").json()
    assert scheme["epsilon_total"] is None  # negative surveys, Gaussian noise
    assert scheme["privacy_budget"] is None


def test_unbounded_questions_cannot_open_in_a_budgeted_consultation(tenant):
    from tests.factories import profile_questions

    consultation = consultation_factory(tenant.organisation, privacy_budget=100.0)
    survey = survey_factory(consultation, questions=profile_questions(), open_it=False)
    response = tenant.analyst.post(f"{URL}{survey.pk}/open/")
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body["errors"]["questions"]) == {
        "satisfaction",
        "site",
        "skips_class",
        "age",
        "income",
    }
    assert "no bounded privacy loss" in body["detail"]
    survey.refresh_from_db()
    assert survey.status == "draft"
    # Without a budget the same survey opens.
    free = survey_factory(consultation_factory(tenant.organisation), questions=profile_questions())
    assert free.status == "open"


def test_a_survey_that_alone_exceeds_the_budget_cannot_open(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=1.5)
    survey = survey_factory(consultation, questions=two_rr(), open_it=False)
    response = tenant.analyst.post(f"{URL}{survey.pk}/open/")
    assert response.status_code == 400, response.content
    assert "privacy_budget" in response.json()["errors"]
    assert "1.695" in response.json()["detail"]
    fits = survey_factory(
        consultation, questions=[rr_question()], open_it=False, kind="opinion", title="one"
    )
    assert tenant.analyst.post(f"{URL}{fits.pk}/open/").status_code == 200


def test_laplace_and_retention_on_a_grid_have_a_pure_epsilon_gaussian_none(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=20.0)
    questions = [
        {"key": "age", "type": "continuous", "range": [16, 100], "step": 1,
         "mechanism": {"name": "additive_laplace", "scale": 21}},
        {"key": "rooms", "type": "continuous", "range": [0, 9], "step": 1,
         "mechanism": {"name": "retention_replacement", "retain": 0.5}},
    ]  # fmt: skip
    survey = survey_factory(consultation, questions=questions)
    scheme = tenant.portal.get(f"{URL}{survey.pk}/scheme/").json()
    by_key = {q["key"]: q for q in scheme["questions"]}
    assert by_key["age"]["epsilon"] == pytest.approx(84 / 21)
    assert by_key["rooms"]["epsilon"] == pytest.approx(math.log(1 + 0.5 * 10 / 0.5))
    assert scheme["epsilon_total"] == pytest.approx(4 + math.log(11))
    gaussian = [{"key": "age", "type": "continuous", "range": [16, 100], "step": 1,
                 "mechanism": {"name": "additive_gaussian", "sigma": 5}}]  # fmt: skip
    draft = survey_factory(
        consultation, questions=gaussian, open_it=False, kind="opinion", title="g"
    )
    refused = tenant.analyst.post(f"{URL}{draft.pk}/open/")
    assert refused.status_code == 400 and "age" in refused.json()["errors"]["questions"]


# --------------------------------------------------------------------------- the ledger


def test_a_response_past_the_budget_is_a_409_and_nothing_is_stored(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=3.0)
    first = survey_factory(consultation, questions=two_rr(), title="before")
    second = survey_factory(consultation, questions=two_rr(), kind="opinion", title="after")
    assert submit(tenant.portal, first, "p-1", ANSWERS).status_code == 201
    assert spent(consultation, "p-1") == pytest.approx(2 * RR)
    refused = submit(tenant.portal, second, "p-1", ANSWERS)
    assert refused.status_code == 409, refused.content
    body = refused.json()
    assert body["code"] == "privacy_budget"
    assert "privacy budget" in body["detail"] and "participant" in body["errors"]
    assert not Response.objects.filter(survey=second).exists()
    assert spent(consultation, "p-1") == pytest.approx(2 * RR)  # nothing charged either
    # Another resident still answers both; an exact-only answer costs nothing.
    assert submit(tenant.portal, second, "p-2", ANSWERS).status_code == 201
    assert spent(consultation, "p-2") == pytest.approx(2 * RR)


def test_a_resident_exactly_at_the_budget_passes(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=4 * RR)
    first = survey_factory(consultation, questions=two_rr(), title="before")
    second = survey_factory(consultation, questions=two_rr(), kind="opinion", title="after")
    assert submit(tenant.portal, first, "p-1", ANSWERS).status_code == 201
    assert submit(tenant.portal, second, "p-1", ANSWERS).status_code == 201


def test_optional_questions_left_out_are_not_charged(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=3.0)
    questions = [rr_question("sex"), rr_question("smokes", required=False)]
    first = survey_factory(consultation, questions=questions, title="before")
    second = survey_factory(consultation, questions=questions, kind="opinion", title="after")
    assert submit(tenant.portal, first, "p-1", {"sex": "F"}).status_code == 201
    assert submit(tenant.portal, second, "p-1", {"sex": "M"}).status_code == 201
    assert spent(consultation, "p-1") == pytest.approx(2 * RR)


def test_a_bulk_batch_with_a_resident_past_the_budget_is_refused_whole(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=3.0)
    first = survey_factory(consultation, questions=two_rr(), title="before")
    second = survey_factory(consultation, questions=two_rr(), kind="opinion", title="after")
    assert bulk(tenant.analyst, first, [
        {"participant": f"p-{n}", "answers": ANSWERS} for n in (2, 5)
    ]).status_code == 201  # fmt: skip
    batch = [{"participant": f"p-{n}", "answers": ANSWERS} for n in range(6)]
    refused = bulk(tenant.analyst, second, batch)
    assert refused.status_code == 409, refused.content
    body = refused.json()
    assert body["code"] == "privacy_budget"
    assert set(body["errors"]["responses"]) == {"2", "5"}
    assert "2 responses" in body["detail"]
    assert not Response.objects.filter(survey=second).exists()
    assert not Answer.objects.filter(response__survey=second).exists()
    assert spent(consultation, "p-0") is None and spent(consultation, "p-2") == pytest.approx(
        2 * RR
    )
    accepted = bulk(
        tenant.analyst, second, [b for b in batch if b["participant"] not in ("p-2", "p-5")]
    )
    assert accepted.status_code == 201
    assert spent(consultation, "p-0") == pytest.approx(2 * RR)


def test_a_withdrawal_refunds_nothing(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=3.0)
    first = survey_factory(consultation, questions=two_rr(), title="before")
    second = survey_factory(consultation, questions=two_rr(), kind="opinion", title="after")
    token = submit(tenant.portal, first, "p-1", ANSWERS).json()["withdrawal_token"]
    withdrawn = tenant.portal.post(
        f"{URL}{first.pk}/responses/withdraw/",
        {"participant": "p-1", "withdrawal_token": token},
        format="json",
    )
    assert withdrawn.status_code == 204
    assert submit(tenant.portal, second, "p-1", ANSWERS).status_code == 409


def test_without_a_budget_no_ledger_is_kept(tenant):
    consultation = consultation_factory(tenant.organisation)
    survey = survey_factory(consultation, questions=two_rr())
    assert submit(tenant.portal, survey, "p-1", ANSWERS).status_code == 201
    assert not PrivacyLedger.objects.exists()


# --------------------------------------------------------------------------- reuse


def reuse_of(survey, key="sex", question_key="sex_again"):
    return rr_question(question_key, reuse={"survey": survey.pk, "question": key})


def test_a_reused_question_costs_nothing_when_the_report_is_the_same(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=2.0)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    second = survey_factory(
        consultation, questions=[reuse_of(first), rr_question("smokes")], kind="opinion"
    )
    scheme = tenant.portal.get(f"{URL}{second.pk}/scheme/").json()
    assert scheme["questions"][0]["reuse"] == {"survey": first.pk, "question": "sex"}
    assert scheme["epsilon_total"] == pytest.approx(RR)  # the reuse counts 0
    listed = tenant.analyst.get(f"{URL}{second.pk}/").json()["questions"][0]
    assert listed["reuse"] == {"survey": first.pk, "question": "sex"}
    assert submit(tenant.portal, first, "p-1", {"sex": "M"}).status_code == 201
    same = submit(tenant.portal, second, "p-1", {"sex_again": "M", "smokes": "F"})
    assert same.status_code == 201, same.content
    assert spent(consultation, "p-1") == pytest.approx(2 * RR)  # sex once, smokes once


def test_a_reused_question_with_a_different_report_is_a_409(tenant):
    consultation = consultation_factory(tenant.organisation)  # checked with or without budget
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    second = survey_factory(consultation, questions=[reuse_of(first)], kind="opinion")
    assert submit(tenant.portal, first, "p-1", {"sex": "M"}).status_code == 201
    differs = submit(tenant.portal, second, "p-1", {"sex_again": "F"})
    assert differs.status_code == 409, differs.content
    assert differs.json()["code"] == "reused_report_differs"
    assert "sex_again" in differs.json()["errors"]["answers"]
    assert not Response.objects.filter(survey=second).exists()
    refused = bulk(tenant.analyst, second, [
        {"participant": "p-0", "answers": {"sex_again": "F"}},
        {"participant": "p-1", "answers": {"sex_again": "F"}},
    ])  # fmt: skip
    assert refused.status_code == 409
    assert set(refused.json()["errors"]["responses"]) == {"1"}
    assert not Response.objects.filter(survey=second).exists()


def test_a_reuse_without_an_earlier_report_is_a_fresh_report_and_is_charged(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=1.0)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    second = survey_factory(consultation, questions=[reuse_of(first)], kind="opinion")
    assert submit(tenant.portal, second, "p-new", {"sex_again": "F"}).status_code == 201
    assert spent(consultation, "p-new") == pytest.approx(RR)


def test_a_reuse_of_a_reuse_points_at_the_first_question(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[rr_question()], title="1")
    second = survey_factory(consultation, questions=[reuse_of(first)], kind="opinion", title="2")
    third = survey_factory(
        consultation, questions=[reuse_of(second, "sex_again", "sex_third")], kind="opinion"
    )
    assert third.questions.get().reuse == {"survey": first.pk, "question": "sex"}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"categories": ["yes", "no"]}, "categories"),
        ({"mechanism": {"name": "randomised_response", "retain": 0.8}}, "mechanism"),
        ({"type": "nominal", "categories": ["F", "M", "X"]}, "nominal"),
    ],
)
def test_a_reuse_of_another_question_shape_is_refused(tenant, change, words):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    question = {**reuse_of(first), **change}
    response = tenant.analyst.post(URL, {
        "consultation": consultation.pk, "kind": "opinion", "title": "after",
        "questions": [question],
    }, format="json")  # fmt: skip
    assert response.status_code == 400, response.content
    (message,) = response.json()["errors"]["questions"][0]["reuse"]
    assert words in message
    assert message.startswith(f"Question 'sex' of survey {first.pk} cannot be asked again here")


def test_a_reuse_across_consultations_or_of_nothing_is_refused(tenant):
    elsewhere = survey_factory(consultation_factory(tenant.organisation), questions=[rr_question()])
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    cases = [
        ({"survey": elsewhere.pk, "question": "sex"}, "same consultation"),
        ({"survey": first.pk, "question": "age"}, "no question"),
        ({"survey": first.pk}, "Must be"),
        ({"survey": "1", "question": "sex"}, "Must be"),
    ]
    for reuse, words in cases:
        response = tenant.analyst.post(URL, {
            "consultation": consultation.pk, "kind": "opinion", "title": "after",
            "questions": [rr_question("again", reuse=reuse)],
        }, format="json")  # fmt: skip
        assert response.status_code == 400, (reuse, response.content)
        (message,) = response.json()["errors"]["questions"][0]["reuse"]
        assert words in message, (reuse, message)


def test_a_draft_cannot_ask_again_its_own_or_a_later_surveys_question(tenant):
    consultation = consultation_factory(tenant.organisation)
    draft = survey_factory(consultation, questions=[rr_question()], open_it=False, title="draft")
    later = survey_factory(consultation, questions=[rr_question()], kind="opinion", title="later")
    for earlier in (draft, later):
        response = tenant.analyst.patch(f"{URL}{draft.pk}/", {
            "questions": [rr_question(), reuse_of(earlier)],
        }, format="json")  # fmt: skip
        assert response.status_code == 400, (earlier.title, response.content)
        errors = response.json()["errors"]["questions"]
        assert errors[0] == {}
        assert errors[1]["reuse"] == [
            f"Survey {earlier.pk} is not earlier than this one: only an earlier survey's "
            "question can be asked again."
        ]
    assert [q.key for q in draft.questions.all()] == ["sex"]  # nothing stored


@pytest.mark.parametrize("gone", ["question", "survey"])
def test_a_draft_whose_earlier_question_is_gone_cannot_open(tenant, gone):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[rr_question()], open_it=False, title="1")
    # the same key as the earlier question's, and the earlier survey keeps another question
    second = survey_factory(
        consultation,
        questions=[reuse_of(first, question_key="sex")],
        open_it=False,
        kind="opinion",
        title="2",
    )
    if gone == "question":
        edited = tenant.analyst.patch(
            f"{URL}{first.pk}/", {"questions": [rr_question("smokes")]}, format="json"
        )
        assert edited.status_code == 200, edited.content
    else:
        assert tenant.analyst.delete(f"{URL}{first.pk}/").status_code == 204
    response = tenant.analyst.post(f"{URL}{second.pk}/open/")
    assert response.status_code == 400, response.content
    message = (
        f"Question 'sex' asks again question 'sex' of survey {first.pk}, which no longer exists."
    )
    assert response.json()["detail"] == message
    assert response.json()["errors"] == {"questions": {"sex": [message]}}
    second.refresh_from_db()
    assert second.status == "draft"


def test_a_question_sent_as_given_cannot_reuse(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[exact_question()], title="before")
    question = {**exact_question("again"), "reuse": {"survey": first.pk, "question": "tenure"}}
    response = tenant.analyst.post(URL, {
        "consultation": consultation.pk, "kind": "opinion", "title": "after",
        "questions": [question],
    }, format="json")  # fmt: skip
    assert response.status_code == 400
    assert "as given" in response.json()["errors"]["questions"][0]["reuse"][0]


# --------------------------------------------------------------------------- the resident's view


def budget_of(client, survey, participant, token):
    return client.post(
        f"{URL}{survey.pk}/responses/budget/",
        {"participant": participant, "withdrawal_token": token},
        format="json",
    )


def test_a_resident_reads_their_budget_with_any_of_their_tokens(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=4.0)
    first = survey_factory(consultation, questions=two_rr(), title="before")
    second = survey_factory(consultation, questions=[rr_question()], kind="opinion")
    token = submit(tenant.portal, first, "p-1", ANSWERS).json()["withdrawal_token"]
    submit(tenant.portal, second, "p-1", {"sex": "F"})
    seen = budget_of(tenant.portal, second, "p-1", token)  # the first survey's token
    assert seen.status_code == 200, seen.content
    assert seen.json() == pytest.approx({"budget": 4.0, "spent": 3 * RR, "remaining": 4.0 - 3 * RR})


def test_a_wrong_token_or_an_unknown_resident_gets_the_same_404(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=4.0)
    survey = survey_factory(consultation, questions=two_rr())
    other = survey_factory(consultation_factory(tenant.organisation), questions=two_rr())
    token = submit(tenant.portal, survey, "p-1", ANSWERS).json()["withdrawal_token"]
    other_token = submit(tenant.portal, other, "p-1", ANSWERS).json()["withdrawal_token"]
    answers = [
        budget_of(tenant.portal, survey, "p-1", "wrong"),
        budget_of(tenant.portal, survey, "p-2", token),
        budget_of(tenant.portal, survey, "p-1", other_token),  # another consultation's token
    ]
    assert [a.status_code for a in answers] == [404, 404, 404]
    assert len({a.content for a in answers}) == 1


def test_without_a_budget_the_resident_sees_no_cap(tenant):
    survey = survey_factory(consultation_factory(tenant.organisation), questions=two_rr())
    token = submit(tenant.portal, survey, "p-1", ANSWERS).json()["withdrawal_token"]
    seen = budget_of(tenant.portal, survey, "p-1", token)
    assert seen.json() == {"budget": None, "spent": None, "remaining": None}


def test_without_a_budget_or_reuse_a_submission_reads_nothing_more(tenant):
    """The hot path: once the survey is cached, a submission to an unbudgeted survey
    without reuse reads neither the ledger, nor the budget, nor the questions."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    survey = survey_factory(consultation_factory(tenant.organisation), questions=two_rr())
    assert submit(tenant.portal, survey, "p-1", ANSWERS).status_code == 201  # warms caches
    with CaptureQueriesContext(connection) as queries:
        assert submit(tenant.portal, survey, "p-2", ANSWERS).status_code == 201
    read = " ".join(q["sql"] for q in queries.captured_queries)
    assert "privacyledger" not in read and "privacy_budget" not in read
    assert "surveys_question" not in read


# ------------------------------------- rules the mutation run found open (issue 33)
# A withdrawn earlier report is no kept report; the resident's view answers a wrong
# reference or token of any type with the same 404 naming the withdrawal token; a bulk
# batch past the budget names its items; the ledger is written in chunks of 300.


def test_a_reuse_after_the_earlier_response_was_withdrawn_is_a_fresh_report(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=2.0)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    second = survey_factory(consultation, questions=[reuse_of(first)], kind="opinion")
    token = submit(tenant.portal, first, "p-1", {"sex": "M"}).json()["withdrawal_token"]
    withdrawn = tenant.portal.post(
        f"{URL}{first.pk}/responses/withdraw/",
        {"participant": "p-1", "withdrawal_token": token},
        format="json",
    )
    assert withdrawn.status_code == 204
    # the kept report is gone with the withdrawal: a new one (F) is a fresh report, charged
    fresh = submit(tenant.portal, second, "p-1", {"sex_again": "F"})
    assert fresh.status_code == 201, fresh.content
    assert spent(consultation, "p-1") == pytest.approx(2 * RR)


def test_another_residents_kept_report_is_not_yours(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=2.0)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    second = survey_factory(consultation, questions=[reuse_of(first)], kind="opinion")
    assert submit(tenant.portal, first, "p-1", {"sex": "M"}).status_code == 201
    assert submit(tenant.portal, first, "p-2", {"sex": "F"}).status_code == 201
    assert submit(tenant.portal, second, "p-2", {"sex_again": "F"}).status_code == 201
    assert submit(tenant.portal, second, "p-1", {"sex_again": "F"}).status_code == 409
    assert spent(consultation, "p-2") == pytest.approx(RR)  # the reuse was free


def test_the_budget_views_404_names_the_withdrawal_token(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=4.0)
    survey = survey_factory(consultation, questions=[rr_question()])
    submit(tenant.portal, survey, "p-1", {"sex": "F"})
    answer = budget_of(tenant.portal, survey, "p-1", "wrong")
    assert answer.status_code == 404
    assert answer.json() == {
        "detail": str(NO_SUCH_PARTICIPANT),
        "errors": {"withdrawal_token": [str(NO_SUCH_PARTICIPANT)]},
    }


@pytest.mark.parametrize(
    ("participant", "token"), [(123, "x"), (None, "x"), ("p-1", 123), ("p-1", None), ("p 1", "")]
)
def test_a_reference_or_token_of_the_wrong_type_is_the_same_404(tenant, participant, token):
    consultation = consultation_factory(tenant.organisation, privacy_budget=4.0)
    survey = survey_factory(consultation, questions=[rr_question()])
    submit(tenant.portal, survey, "p-1", {"sex": "F"})
    with pytest.raises(NotFound) as caught:
        participant_budget(survey=survey, participant=participant, withdrawal_token=token)
    assert caught.value.errors == {"withdrawal_token": [str(NO_SUCH_PARTICIPANT)]}


def test_a_bulk_batch_past_the_budget_names_the_items_of_the_residents_past_it(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=3.0)
    first = survey_factory(consultation, questions=two_rr(), title="before")
    second = survey_factory(consultation, questions=two_rr(), kind="opinion", title="after")
    assert submit(tenant.portal, first, "p-1", ANSWERS).status_code == 201
    batch = [{"participant": f"p-{n}", "answers": ANSWERS} for n in range(3)]
    refused = bulk(tenant.analyst, second, batch)
    assert refused.status_code == 409, refused.content
    (item,) = refused.json()["errors"]["responses"].items()
    assert item[0] == "1" and list(item[1]) == ["participant"]


def test_a_bulk_batch_of_more_than_300_residents_charges_every_one(tenant):
    # the ledger is written in chunks of 300 rows on SQLite (its parameter limit)
    consultation = consultation_factory(tenant.organisation, privacy_budget=2.0)
    survey = survey_factory(consultation, questions=[rr_question()])
    batch = [{"participant": f"p-{n}", "answers": {"sex": "F"}} for n in range(301)]
    assert bulk(tenant.analyst, survey, batch).status_code == 201
    for n in (0, 299, 300):
        assert spent(consultation, f"p-{n}") == pytest.approx(RR)


def test_a_reuse_of_a_continuous_question_needs_its_range_and_grid(tenant):
    consultation = consultation_factory(tenant.organisation)
    age = {"key": "age", "type": "continuous", "range": [16, 100], "step": 1,
           "mechanism": {"name": "additive_laplace", "scale": 21}}  # fmt: skip
    first = survey_factory(consultation, questions=[age], title="before")
    again = {**age, "key": "age_again", "reuse": {"survey": first.pk, "question": "age"}}

    def create(question):
        return tenant.analyst.post(URL, {
            "consultation": consultation.pk, "kind": "opinion", "title": "after",
            "questions": [question],
        }, format="json")  # fmt: skip

    for change in ({"range": [16, 90]}, {"step": 2}):
        refused = create({**again, **change})
        assert refused.status_code == 400, (change, refused.content)
        (message,) = refused.json()["errors"]["questions"][0]["reuse"]
        assert "range and reporting grid differ" in message
    assert create(again).status_code == 201


def test_the_budget_view_shows_this_consultations_spending_of_this_resident(tenant):
    budgeted = consultation_factory(tenant.organisation, privacy_budget=2.0)
    survey = survey_factory(
        budgeted, questions=[rr_question(), rr_question("smokes", required=False)]
    )
    elsewhere = survey_factory(
        consultation_factory(tenant.organisation, privacy_budget=5.0), questions=[rr_question()]
    )
    # another consultation's ledger; other residents' rows (1 RR each), before and after p-1
    assert submit(tenant.portal, elsewhere, "p-1", {"sex": "F"}).status_code == 201
    assert submit(tenant.portal, survey, "p-0", {"sex": "F"}).status_code == 201
    assert submit(tenant.portal, survey, "p-2", {"sex": "F"}).status_code == 201
    token = submit(tenant.portal, survey, "p-1", {"sex": "F", "smokes": "M"}).json()
    seen = budget_of(tenant.portal, survey, "p-1", token["withdrawal_token"]).json()
    # 2 RR = 1.69 spent: what remains (0.31) is shown as it is
    assert seen == pytest.approx({"budget": 2.0, "spent": 2 * RR, "remaining": 2.0 - 2 * RR})


def test_a_resident_charged_nothing_yet_has_spent_nothing(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=2.0)
    survey = survey_factory(consultation, questions=[exact_question()])
    token = submit(tenant.portal, survey, "p-1", {"tenure": "own"}).json()["withdrawal_token"]
    seen = budget_of(tenant.portal, survey, "p-1", token).json()
    assert seen == {"budget": 2.0, "spent": 0.0, "remaining": 2.0}


def test_a_fresh_report_for_a_reuse_question_can_exceed_the_budget_on_its_own(tenant):
    # epsilon_total counts a reuse as free, so the survey opens under a budget of 1.0;
    # a resident who skipped the first survey sends fresh sex and smokes reports (2 RR)
    consultation = consultation_factory(tenant.organisation, privacy_budget=1.0)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    smokes = rr_question("smokes", required=False)
    second = survey_factory(consultation, questions=[reuse_of(first), smokes], kind="opinion")
    alone = submit(tenant.portal, second, "p-new", {"sex_again": "F", "smokes": "M"})
    assert alone.status_code == 409 and alone.json()["code"] == "privacy_budget"
    refused = bulk(tenant.analyst, second, [
        {"participant": "p-a", "answers": {"sex_again": "F"}},
        {"participant": "p-b", "answers": {"sex_again": "F", "smokes": "M"}},
    ])  # fmt: skip
    assert refused.status_code == 409, refused.content
    assert set(refused.json()["errors"]["responses"]) == {"1"}
    assert spent(consultation, "p-new") is None and spent(consultation, "p-a") is None


def test_a_differing_kept_report_is_named_whatever_comes_before_it_in_a_batch(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    second = survey_factory(consultation, questions=[reuse_of(first)], kind="opinion")
    assert submit(tenant.portal, first, "p-1", {"sex": "M"}).status_code == 201
    assert submit(tenant.portal, first, "p-2", {"sex": "M"}).status_code == 201
    refused = bulk(tenant.analyst, second, [
        {"participant": "p-new", "answers": {"sex_again": "F"}},  # no kept report
        {"participant": "p-2", "answers": {"sex_again": "M"}},  # the same report
        {"participant": "p-1", "answers": {"sex_again": "F"}},  # a different one
    ])  # fmt: skip
    assert refused.status_code == 409, refused.content
    body = refused.json()
    assert body["code"] == "reused_report_differs"
    assert set(body["errors"]["responses"]) == {"2"}
    single = submit(tenant.portal, second, "p-1", {"sex_again": "F"}).json()
    assert single["detail"] == single["errors"]["answers"]["sex_again"][0]
    assert f"survey {first.pk}" in single["detail"]


def test_a_response_without_charged_answers_is_charged_nothing_and_keeps_no_ledger_row(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=2.0)
    questions = [rr_question("sex", required=False), {**exact_question(), "required": False}]
    survey = survey_factory(consultation, questions=questions)
    accepted = bulk(tenant.analyst, survey, [
        {"participant": "p-1", "answers": {"sex": "F", "tenure": "own"}},
        {"participant": "p-2", "answers": {"tenure": "rent"}},
        {"participant": "p-3", "answers": {}},  # (last, with no answer at all)
    ])  # fmt: skip
    assert accepted.status_code == 201, accepted.content
    assert spent(consultation, "p-1") == pytest.approx(RR)
    assert spent(consultation, "p-2") is None  # no record of a resident charged nothing
    assert spent(consultation, "p-3") is None


def test_the_refusal_to_open_names_every_unbounded_question_in_its_message(tenant):
    from tests.factories import profile_questions

    consultation = consultation_factory(tenant.organisation, privacy_budget=100.0)
    survey = survey_factory(consultation, questions=profile_questions(), open_it=False)
    body = tenant.analyst.post(f"{URL}{survey.pk}/open/").json()
    assert "'satisfaction', 'site', 'skips_class', 'age', 'income'" in body["detail"]
    assert body["errors"]["questions"]["age"] == [body["detail"]]


def test_a_survey_of_exact_questions_opens_under_any_budget(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=0.5)
    survey = survey_factory(consultation, questions=[exact_question()], open_it=False)
    assert tenant.analyst.post(f"{URL}{survey.pk}/open/").status_code == 200


def test_a_survey_needing_exactly_the_budget_opens_and_one_needing_more_does_not(tenant):
    consultation = consultation_factory(tenant.organisation, privacy_budget=2 * RR)
    fits = survey_factory(consultation, questions=two_rr(), open_it=False)
    assert tenant.analyst.post(f"{URL}{fits.pk}/open/").status_code == 200
    three = [rr_question("a"), rr_question("b"), rr_question("c")]
    over = survey_factory(consultation, questions=three, open_it=False, kind="opinion")
    refused = tenant.analyst.post(f"{URL}{over.pk}/open/")
    assert refused.status_code == 400
    assert refused.json()["errors"]["privacy_budget"] == [refused.json()["detail"]]


def test_a_survey_with_a_reuse_and_an_unbounded_question_takes_responses(tenant):
    # no budget: the reuse alone puts the submission through settle, where the unbounded
    # question costs infinity (never charged without a budget)
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    negative = {"key": "site", "type": "nominal", "categories": list("ABC"),
                "mechanism": {"name": "negative_uniform"}}  # fmt: skip
    second = survey_factory(consultation, questions=[reuse_of(first), negative], kind="opinion")
    accepted = submit(tenant.portal, second, "p-1", {"sex_again": "F", "site": "B"})
    assert accepted.status_code == 201, accepted.content


def test_a_reuse_after_a_plain_question_is_resolved_and_every_question_kept(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    created = tenant.analyst.post(URL, {
        "consultation": consultation.pk, "kind": "opinion", "title": "after",
        "questions": [rr_question("smokes"), reuse_of(first), rr_question("pets")],
    }, format="json")  # fmt: skip
    assert created.status_code == 201, created.content
    questions = created.json()["questions"]
    assert [q["key"] for q in questions] == ["smokes", "sex_again", "pets"]
    assert questions[1]["reuse"] == {"survey": first.pk, "question": "sex"}


def test_a_fresh_report_to_a_reuse_of_an_unbounded_question_is_refused_under_a_budget(tenant):
    # A reuse is free in epsilon_total, so a survey asking again a negative-survey question
    # (of a draft survey: nobody kept a report) opens under a budget; each fresh report
    # then costs an unbounded epsilon and is refused, never charged as a number.
    consultation = consultation_factory(tenant.organisation, privacy_budget=5.0)
    negative = {"key": "site", "type": "nominal", "categories": list("ABC"),
                "mechanism": {"name": "negative_uniform"}}  # fmt: skip
    first = survey_factory(consultation, questions=[negative], open_it=False, title="draft")
    again = {**negative, "key": "site_again", "reuse": {"survey": first.pk, "question": "site"}}
    second = survey_factory(consultation, questions=[again], kind="opinion")
    refused = submit(tenant.portal, second, "p-1", {"site_again": "B"})
    assert refused.status_code == 409, refused.content
    assert refused.json()["code"] == "privacy_budget"
    assert spent(consultation, "p-1") is None


def test_a_bulk_batch_names_every_resident_past_the_budget_also_with_one_past_it_alone(tenant):
    # Budget 1.0, one randomised-response report costs RR (0.85). p-old answered the first
    # survey (RR spent); in the batch p-new sends two fresh reports (2 RR: past the budget
    # on its own) and p-old one more (RR + RR: past it with what it spent before). The 409
    # names both items, not only the one past the budget on its own (the analyst would
    # otherwise learn of p-old only on the next try).
    consultation = consultation_factory(tenant.organisation, privacy_budget=1.0)
    first = survey_factory(consultation, questions=[rr_question()], title="before")
    assert submit(tenant.portal, first, "p-old", {"sex": "F"}).status_code == 201
    smokes = rr_question("smokes", required=False)
    second = survey_factory(consultation, questions=[reuse_of(first), smokes], kind="opinion")
    refused = bulk(tenant.analyst, second, [
        {"participant": "p-new", "answers": {"sex_again": "F", "smokes": "M"}},
        {"participant": "p-ok", "answers": {"sex_again": "F"}},
        {"participant": "p-old", "answers": {"sex_again": "F", "smokes": "M"}},
    ])  # fmt: skip
    assert refused.status_code == 409, refused.content
    assert set(refused.json()["errors"]["responses"]) == {"0", "2"}
    assert "2 responses" in refused.json()["detail"]
    assert spent(consultation, "p-old") == pytest.approx(RR)
    assert spent(consultation, "p-new") is None and spent(consultation, "p-ok") is None
