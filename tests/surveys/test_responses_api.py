"""Responses: single and bulk submission, withdrawal, calibration, rate limits, isolation."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from django.test import override_settings
from rest_framework.settings import api_settings

from privacy.mechanisms import manual_negative
from surveys.models import Answer, CalibrationPair, Participant, Response
from surveys.selectors import question_channel, question_codes, reported_code_counts
from surveys.services import survey_close
from tests.factories import good_answers, survey_factory

URL = "/api/v1/surveys/"


def _submit(client, survey, participant="p-000123", answers=None):
    return client.post(
        f"{URL}{survey.pk}/responses/",
        {"participant": participant, "answers": good_answers() if answers is None else answers},
        format="json",
    )


def _bulk(client, survey, responses):
    return client.post(f"{URL}{survey.pk}/responses/bulk/", {"responses": responses}, format="json")


def _answers_with(**changes):
    answers = good_answers()
    for key, value in changes.items():
        if value is KeyError:
            answers.pop(key)
        else:
            answers[key] = value
    return answers


def test_a_response_is_stored_as_typed_rows_with_a_coarse_timestamp(tenant, survey):
    response = _submit(tenant.portal, survey)
    assert response.status_code == 201, response.content
    stored = Response.objects.get(survey=survey)
    assert stored.participant.reference == "p-000123"
    assert (
        stored.submitted_at.minute,
        stored.submitted_at.second,
        stored.submitted_at.microsecond,
    ) == (0, 0, 0)
    rows = {
        a.question.key: a for a in Answer.objects.filter(response=stored).select_related("question")
    }
    assert len(rows) == 8
    assert (rows["sex"].code, rows["sex"].value) == (0, None)  # "F"
    assert rows["district"].code == 0
    assert rows["skips_class"].code == 0
    assert (rows["age"].code, rows["age"].value) == (None, 16.0)
    assert rows["income"].value == 1000.0


def test_analyst_keys_may_submit_too(tenant, survey):
    assert _submit(tenant.analyst, survey).status_code == 201


def test_optional_questions_may_be_left_out(tenant, consultation):
    questions = [
        {"key": "sex", "type": "binary", "categories": ["F", "M"], "mechanism": {"name": "none"}},
        {
            "key": "note",
            "type": "nominal",
            "categories": ["a", "b", "c"],
            "required": False,
            "mechanism": {"name": "none"},
        },
    ]
    survey = survey_factory(consultation, kind="opinion", questions=questions)
    assert _submit(tenant.portal, survey, "a", {"sex": "F"}).status_code == 201
    assert _submit(tenant.portal, survey, "b", {"sex": "F", "note": None}).status_code == 201
    missing = _submit(tenant.portal, survey, "c", {"note": "a"})
    assert missing.status_code == 400
    assert "sex" in missing.json()["errors"]["answers"]


BAD_ANSWERS = {
    "unknown key": (_answers_with(favourite_colour="red"), "favourite_colour"),
    "category outside the question": (_answers_with(sex="X"), "sex"),
    "category of another question": (_answers_with(district="F"), "district"),
    "number for a discrete question": (_answers_with(satisfaction=3), "satisfaction"),
    "string for a continuous question": (_answers_with(age="43"), "age"),
    "bool for a continuous question": (_answers_with(age=True), "age"),
    "list for a discrete question": (_answers_with(sex=["F"]), "sex"),
    "below the reported range": (_answers_with(age=5.9), "age"),  # [16-10, 100+10]
    "above the reported range": (_answers_with(age=110.5), "age"),
    "beyond ten standard deviations": (_answers_with(income=20000 + 8001), "income"),
    "missing answer": (_answers_with(site=KeyError), "site"),
    "null for a required answer": (_answers_with(site=None), "site"),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_bad_answers_are_refused_naming_the_question(tenant, survey, case):
    answers, key = BAD_ANSWERS[case]
    response = _submit(tenant.portal, survey, answers=answers)
    assert response.status_code == 400, response.content
    body = response.json()
    assert key in body["errors"]["answers"], body
    assert body["detail"].startswith(key)
    assert not Response.objects.exists()
    assert not Answer.objects.exists()


def test_values_the_mechanism_can_produce_are_accepted(tenant, survey):
    edge = _answers_with(age=6.0, income=-8000.0)
    assert _submit(tenant.portal, survey, "edge-low", edge).status_code == 201
    edge = _answers_with(age=110, income=28000)
    assert _submit(tenant.portal, survey, "edge-high", edge).status_code == 201


@pytest.mark.parametrize(
    ("participant", "field"),
    [
        ("has space", "participant"),
        ("x" * 65, "participant"),
        ("", "participant"),
        (12345, "participant"),
        ("p/1", "participant"),
        ("jane@example.org", "participant"),
    ],
)
def test_bad_participant_references_are_refused(tenant, survey, participant, field):
    response = _submit(tenant.portal, survey, participant)
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert not Participant.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        '{"participant": "p-1", "answers": {"age": NaN}}',
        '{"participant": "p-1", "answers": {"age": Infinity}}',
        '{"participant": "p-1", "answers": {"age": 1e400}}',
        '{"participant": "p-1"}',
        '{"participant": "p-1", "answers": ["F"]}',
        '{"participant": "p-1", "answers": {}, "email": "jane@example.org"}',
        "[]",
        "not json",
    ],
)
def test_malformed_bodies_are_refused(tenant, survey, body):
    response = tenant.portal.post(
        f"{URL}{survey.pk}/responses/", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["detail"]
    assert not Response.objects.exists()


def test_draft_and_closed_surveys_accept_no_responses(tenant, consultation, survey):
    draft = survey_factory(consultation, kind="opinion", open_it=False)
    response = _submit(tenant.portal, draft)
    assert response.status_code == 400
    assert "survey" in response.json()["errors"]
    survey_close(survey=survey)
    closed = _submit(tenant.portal, survey)
    assert closed.status_code == 400
    assert "closed" in closed.json()["detail"]
    bulk = _bulk(tenant.portal, survey, [{"participant": "a", "answers": good_answers()}])
    assert bulk.status_code == 400
    assert not Response.objects.exists()


def test_a_second_response_of_the_same_participant_is_a_conflict(tenant, survey):
    assert _submit(tenant.portal, survey).status_code == 201
    again = _submit(tenant.portal, survey, answers=good_answers(1))
    assert again.status_code == 409
    assert "participant" in again.json()["errors"]
    assert Response.objects.count() == 1
    assert Answer.objects.count() == 8


def test_the_same_participant_answers_several_surveys_of_a_consultation(
    tenant, consultation, survey
):
    opinion = survey_factory(consultation, kind="opinion")
    assert _submit(tenant.portal, survey).status_code == 201
    assert _submit(tenant.portal, opinion).status_code == 201
    assert Participant.objects.filter(reference="p-000123").count() == 1


# --------------------------------------------------------------------------- bulk


def _batch(n, start=0):
    return [{"participant": f"p-{start + i}", "answers": good_answers(start + i)} for i in range(n)]


def test_bulk_stores_every_response(tenant, survey):
    response = _bulk(tenant.analyst, survey, _batch(250))  # > 100: a server-side key
    assert response.status_code == 201, response.content
    assert response.json()["created"] == 250
    assert len(set(response.json()["withdrawal_tokens"])) == 250
    assert Response.objects.filter(survey=survey).count() == 250
    assert Answer.objects.count() == 250 * 8
    sex = survey.questions.get(key="sex")
    np.testing.assert_array_equal(reported_code_counts(sex), [125, 125])


def test_one_bad_item_rejects_the_whole_batch_naming_each(tenant, survey):
    items = _batch(20)
    items[3]["answers"]["sex"] = "X"
    items[17]["answers"].pop("age")
    items[11] = "not an object"
    response = _bulk(tenant.portal, survey, items)
    assert response.status_code == 400
    errors = response.json()["errors"]["responses"]
    assert set(errors) == {"3", "11", "17"}
    assert "sex" in errors["3"]["answers"]
    assert "age" in errors["17"]["answers"]
    assert "3 of 20" in response.json()["detail"]
    assert not Response.objects.exists()
    assert not Participant.objects.exists()


def test_a_participant_twice_in_a_batch_is_a_conflict(tenant, survey):
    items = _batch(5)
    items[4]["participant"] = items[1]["participant"]
    response = _bulk(tenant.portal, survey, items)
    assert response.status_code == 409
    assert set(response.json()["errors"]["responses"]) == {"4"}
    assert not Response.objects.exists()


def test_participants_who_already_answered_are_named_and_nothing_is_stored(tenant, survey):
    assert _bulk(tenant.portal, survey, _batch(3)).status_code == 201
    response = _bulk(tenant.portal, survey, _batch(4, start=2))  # p-2 answered already
    assert response.status_code == 409
    errors = response.json()["errors"]["responses"]
    assert set(errors) == {"0"}
    assert "p-2" in errors["0"]["participant"][0]
    assert Response.objects.count() == 3


@pytest.mark.parametrize(
    "payload",
    [{"responses": []}, {"responses": "all"}, {}, {"responses": [{}] * 10_001}],
)
def test_bulk_envelope_is_checked(tenant, survey, payload):
    response = tenant.portal.post(f"{URL}{survey.pk}/responses/bulk/", payload, format="json")
    assert response.status_code == 400
    assert "responses" in response.json()["errors"]


# --------------------------------------------------------------------------- withdrawal


def _withdraw(client, survey, participant, token):
    return client.post(
        f"{URL}{survey.pk}/responses/withdraw/",
        {"participant": participant, "withdrawal_token": token},
        format="json",
    )


def test_withdrawal_deletes_answers_and_blocks_answering_again(tenant, survey):
    created = _bulk(tenant.portal, survey, _batch(3))
    assert created.status_code == 201
    tokens = dict(zip(["p-0", "p-1", "p-2"], created.json()["withdrawal_tokens"], strict=True))
    sex = survey.questions.get(key="sex")
    assert len(question_codes(sex)) == 3
    response = _withdraw(tenant.portal, survey, "p-1", tokens["p-1"])
    assert response.status_code == 204
    tombstone = Response.objects.get(participant__reference="p-1")
    assert tombstone.withdrawn_at is not None and tombstone.withdrawn_at.minute == 0
    assert not tombstone.answers.exists()
    assert len(question_codes(sex)) == 2
    again = _submit(tenant.portal, survey, "p-1")
    assert again.status_code == 409
    # The same answer as for a participant who never withdrew (issue 27): a portal key
    # cannot tell who withdrew. Fails on the old code ("... withdrew from this survey").
    answered = _submit(tenant.portal, survey, "p-0")
    assert answered.status_code == 409
    assert "withdrew" not in str(again.json())
    assert str(again.json()).replace("p-1", "p-0") == str(answered.json())
    assert _withdraw(tenant.portal, survey, "p-1", tokens["p-1"]).status_code == 204
    assert _withdraw(tenant.portal, survey, "nobody", tokens["p-1"]).status_code == 404


def test_withdrawal_is_possible_after_closing(tenant, survey):
    created = _submit(tenant.portal, survey)
    assert created.status_code == 201
    survey_close(survey=survey)
    token = created.json()["withdrawal_token"]
    assert _withdraw(tenant.portal, survey, "p-000123", token).status_code == 204


# --------------------------------------------------------------------------- calibration


def _calibrate(client, survey, question="skips_class", pairs=None):
    return client.post(
        f"{URL}{survey.pk}/calibration/",
        {
            "question": question,
            "pairs": pairs
            if pairs is not None
            else [
                ["never", "always"],
                ["never", "always"],
                ["never", "often"],
                ["rarely", "often"],
            ],
        },
        format="json",
    )


def test_calibration_pairs_estimate_the_manual_negative_channel(tenant, survey):
    response = _calibrate(tenant.analyst, survey)
    assert response.status_code == 201, response.content
    assert response.json() == {"question": "skips_class", "added": 4, "total": 4}
    assert _calibrate(tenant.analyst, survey, pairs=[["often", "never"]]).json()["total"] == 5
    question = survey.questions.get(key="skips_class")
    channel = question_channel(question)
    expected = manual_negative(4, np.array([[0, 3], [0, 3], [0, 2], [1, 2], [2, 0]]))
    np.testing.assert_allclose(channel, expected)
    np.testing.assert_allclose(channel[0], [0, 0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(channel[3], [1 / 3, 1 / 3, 1 / 3, 0])  # no data: uniform
    assert CalibrationPair.objects.count() == 5


@pytest.mark.parametrize(
    ("question", "pairs", "field"),
    [
        ("sex", [["F", "M"]], "question"),
        ("nonexistent", [["never", "always"]], "question"),
        ("skips_class", [["never", "always"], ["never", "sometimes"]], "pairs"),
        ("skips_class", [["never", "never"]], "pairs"),
        ("skips_class", [["never"]], "pairs"),
        ("skips_class", [[0, 3]], "pairs"),
        ("skips_class", [], "pairs"),
        (["skips_class"], [["never", "always"]], "question"),
    ],
)
def test_bad_calibration_data_is_refused(tenant, survey, question, pairs, field):
    response = _calibrate(tenant.analyst, survey, question, pairs)
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert not CalibrationPair.objects.exists()


def test_bad_calibration_pair_is_named_by_index(tenant, survey):
    response = _calibrate(tenant.analyst, survey, pairs=[["never", "always"], ["rarely", "rarely"]])
    assert set(response.json()["errors"]["pairs"]) == {"1"}


def test_calibration_is_refused_for_a_closed_survey(tenant, survey):
    survey_close(survey=survey)
    assert _calibrate(tenant.analyst, survey).status_code == 400


# --------------------------------------------------------------------------- limits, isolation


def test_submissions_are_rate_limited_per_key_with_retry_after(tenant, survey):
    rates = {**api_settings.DEFAULT_THROTTLE_RATES, "submissions": "2/minute"}
    with override_settings(REST_FRAMEWORK={**_rest_framework(), "DEFAULT_THROTTLE_RATES": rates}):
        assert _submit(tenant.portal, survey, "a").status_code == 201
        assert _submit(tenant.portal, survey, "b").status_code == 201
        limited = _submit(tenant.portal, survey, "c")
        assert limited.status_code == 429
        assert int(limited["Retry-After"]) >= 1
        assert limited.json()["detail"]
        # Another key of the same organisation has its own budget.
        assert _submit(tenant.analyst, survey, "d").status_code == 201
    assert not Response.objects.filter(participant__reference="c").exists()


def _rest_framework():
    from django.conf import settings

    return dict(settings.REST_FRAMEWORK)


def test_another_organisations_keys_get_404_on_every_submission_endpoint(
    tenant, other_tenant, survey
):
    for client in (other_tenant.portal, other_tenant.analyst):
        assert _submit(client, survey).status_code == 404
        assert _bulk(client, survey, _batch(2)).status_code == 404
        assert _withdraw(client, survey, "p-1", "a-token").status_code == 404
    assert _calibrate(other_tenant.analyst, survey).status_code == 404
    assert not Response.objects.exists()
    assert not CalibrationPair.objects.exists()


def test_nothing_identifying_is_stored(tenant, survey):
    """No column for an address, a user agent, a name, an e-mail or a true value."""
    forbidden = {"ip", "address", "agent", "email", "name", "true", "raw", "user", "browser"}
    for model in (Response, Answer, Participant):
        for field in model._meta.get_fields():
            assert not forbidden & set(field.name.split("_")), (model, field.name)
    client = copy.copy(tenant.portal)
    response = client.post(
        f"{URL}{survey.pk}/responses/",
        json.dumps({"participant": "p-9", "answers": good_answers()}),
        content_type="application/json",
        REMOTE_ADDR="203.0.113.7",
        HTTP_USER_AGENT="Secret/1.0",
    )
    assert response.status_code == 201
    from consultations.models import AuditEvent

    for event in AuditEvent.objects.all():
        assert "203.0.113.7" not in json.dumps(event.details) + event.actor + event.target


def test_a_remembered_open_survey_is_rechecked_when_storing(tenant, survey):
    assert _submit(tenant.portal, survey, "first").status_code == 201  # now remembered
    survey_close(survey=survey)  # behind the API's back
    response = _submit(tenant.portal, survey, "second")
    assert response.status_code == 400
    assert "closed" in response.json()["detail"]
    assert not Response.objects.filter(participant__reference="second").exists()


def test_a_stale_remembered_survey_is_looked_up_again(tenant, survey):
    from datetime import timedelta

    from surveys import selectors

    stale = copy.copy(survey)
    stale.opened_at = survey.opened_at - timedelta(days=1)  # as if another row had this id
    selectors._OPEN_SURVEYS[(survey.pk, tenant.organisation.pk)] = stale
    assert _submit(tenant.portal, survey, "p-1").status_code == 201
    assert (
        selectors._OPEN_SURVEYS[(survey.pk, tenant.organisation.pk)].opened_at == survey.opened_at
    )
