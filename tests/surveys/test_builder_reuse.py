"""Issue 28: the builder's "ask again (same answer kept)" piece (surveys/builder_reuse.py),
and the current builder keeping a question's reuse when a draft is edited."""

from __future__ import annotations

from django import forms

from surveys import services
from surveys.builder_reuse import AskAgainField, ask_again, earlier_questions
from tests.factories import consultation_factory, survey_factory

SEX = {"key": "sex", "text": "Sex", "type": "binary", "categories": ["F", "M"],
       "mechanism": {"name": "randomised_response", "retain": 0.7}}  # fmt: skip
TENURE = {"key": "tenure", "type": "binary", "categories": ["own", "rent"],
          "mechanism": {"name": "none"}}  # fmt: skip
AGE = {"key": "age", "type": "continuous", "range": [16, 100], "step": 1,
       "mechanism": {"name": "additive_laplace", "scale": 20}}  # fmt: skip


def test_the_option_lists_earlier_questions_a_device_keeps_and_fills_in_the_question(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[SEX, TENURE, AGE], title="Before")
    draft = survey_factory(consultation, questions=[], kind="opinion", open_it=False)
    later = survey_factory(consultation, questions=[SEX], kind="opinion", title="Later")
    elsewhere = survey_factory(consultation_factory(tenant.organisation), questions=[SEX])

    class Form(forms.Form):
        again = AskAgainField(consultation=consultation, survey=draft)

    field = Form().fields["again"]
    values = [value for value, _label in field.choices]
    # Not the exact question (answered as given), not later surveys, not other consultations.
    assert values == ["", f"{first.pk}:sex", f"{first.pk}:age"]
    assert "Before · Sex" in dict(field.choices)[f"{first.pk}:sex"]
    assert str(field.label) == "Ask again (same answer kept)"
    assert later.pk not in {q.survey_id for q in earlier_questions(consultation, draft)}
    assert elsewhere.pk not in {q.survey_id for q in earlier_questions(consultation)}

    form = Form({"again": f"{first.pk}:age"})
    assert form.is_valid()
    typed = {"key": "age_again", "text": "Age", "type": "binary", "categories": ["x", "y"],
             "mechanism": {"name": "none"}, "required": False}  # fmt: skip
    asked = ask_again(typed, field.earlier(form.cleaned_data["again"]))
    assert asked == {
        "key": "age_again", "text": "Age", "required": False, "type": "continuous",
        "range": [16.0, 100.0], "step": 1.0, "resolution": 1.0,
        "mechanism": {"name": "additive_laplace", "scale": 20},
        "reuse": {"survey": first.pk, "question": "age"},
    }  # fmt: skip
    assert ask_again(typed, field.earlier("")) == typed
    # What it makes is what the services accept.
    services.survey_update(survey=draft, questions=[asked])
    assert draft.questions.get().reuse == {"survey": first.pk, "question": "age"}


def test_the_builder_keeps_reuse_when_a_draft_is_saved_again(tenant, client):
    from surveys.builder_forms import question_form_for

    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[SEX])
    again = {**SEX, "key": "sex_again", "reuse": {"survey": first.pk, "question": "sex"}}
    draft = survey_factory(consultation, questions=[again], kind="opinion", open_it=False)
    question = draft.questions.get()
    form = question_form_for(tenant.organisation)(
        data={"key": "sex_again", "text": "Sex", "type": "binary", "required": "on",
              "categories": "F\nM", "mechanism": "randomised_response", "privacy": "custom",
              "randomised_response__retain": "0.7"},
        instance=question,
    )  # fmt: skip
    assert form.is_valid(), form.errors
    assert form.as_api()["reuse"] == {"survey": first.pk, "question": "sex"}
