"""Question text and category labels per language: validated against the organisation's
languages, served in the scheme, while answers stay the category values."""

from __future__ import annotations

import pytest

from surveys.models import Survey

SEX = {
    "key": "sex",
    "text": "Sex",
    "type": "binary",
    "categories": ["F", "M"],
    "mechanism": {"name": "randomised_response", "retain": 0.75},
    "translations": {
        "de": {"text": "Geschlecht", "labels": ["weiblich", "männlich"]},
        "pl": {"text": "Płeć", "labels": ["kobieta", "mężczyzna"]},
    },
}
AGE = {
    "key": "age",
    "type": "continuous",
    "range": [16, 100],
    "mechanism": {"name": "none"},
    "translations": {"de": {"text": "Alter"}},
}


@pytest.fixture
def multilingual(tenant):
    tenant.organisation.languages = ["en", "de", "pl"]
    tenant.organisation.save(update_fields=["languages"])
    return tenant


def create(tenant, consultation, questions):
    return tenant.analyst.post(
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "opinion", "title": "T", "questions": questions},
        format="json",
    )


def test_translations_are_stored_and_served_in_the_scheme(multilingual, consultation):
    created = create(multilingual, consultation, [SEX, AGE])
    assert created.status_code == 201, created.json()
    survey_id = created.json()["id"]
    assert multilingual.analyst.post(f"/api/v1/surveys/{survey_id}/open/").status_code == 200
    scheme = multilingual.portal.get(f"/api/v1/surveys/{survey_id}/scheme/").json()
    sex, age = scheme["questions"]
    assert sex["translations"]["de"] == {"text": "Geschlecht", "labels": ["weiblich", "männlich"]}
    assert sex["categories"] == ["F", "M"]
    assert age["translations"] == {"de": {"text": "Alter"}}
    # Residents answer with the wire values, whatever language they read.
    sent = multilingual.portal.post(
        f"/api/v1/surveys/{survey_id}/responses/",
        {"participant": "p-1", "answers": {"sex": "M", "age": 40}},
        format="json",
    )
    assert sent.status_code == 201, sent.json()


def test_a_language_the_organisation_does_not_use_is_a_400_naming_question_and_language(
    tenant, consultation
):
    response = create(tenant, consultation, [AGE, SEX])  # the organisation speaks "en" only
    assert response.status_code == 400
    body = response.json()
    assert (
        "Question 'age': language 'de' is not one of the organisation's languages (en)"
        in (body["detail"])
    )
    assert body["errors"]["questions"][0]["translations"] == [body["detail"]]
    assert body["errors"]["questions"][1] == {}
    assert not Survey.objects.exists()


def test_a_label_missing_in_one_language_is_a_400_naming_question_and_language(
    multilingual, consultation
):
    broken = {
        **SEX,
        "translations": {**SEX["translations"], "pl": {"text": "Płeć", "labels": ["kobieta"]}},
    }
    response = create(multilingual, consultation, [AGE, broken])
    assert response.status_code == 400
    (message,) = response.json()["errors"]["questions"][1]["translations"]
    assert message.startswith("Question 'sex': Language 'pl': a label is missing; give 2 labels")
    assert not Survey.objects.exists()


@pytest.mark.parametrize(
    ("translations", "message"),
    [
        ({"de": "Geschlecht"}, "must be an object with \"text\" and \"labels\""),
        ({"de": {"text": "G", "labels": ["w", "m"], "hint": "x"}}, "must be an object"),
        ({"de": {"text": "G"}}, "a label is missing"),
        ({"de": {"text": "G", "labels": ["w", ""]}}, "a label is missing"),
    ],
)  # fmt: skip
def test_malformed_translations_are_refused(multilingual, consultation, translations, message):
    response = create(multilingual, consultation, [{**SEX, "translations": translations}])
    assert response.status_code == 400
    assert message in response.json()["errors"]["questions"][0]["translations"][0]


def test_a_continuous_question_has_no_labels(multilingual, consultation):
    bad = {**AGE, "translations": {"de": {"text": "Alter", "labels": ["a", "b"]}}}
    response = create(multilingual, consultation, [bad])
    assert response.status_code == 400
    assert "no category labels" in response.json()["errors"]["questions"][0]["translations"][0]
