"""The rules of the builder's "ask again (same answer kept)" option (surveys/builder_reuse.py,
issue 28): which earlier questions are offered, in which order, and what asking one again
sends. Written to kill the mutants that survived its mutation run (issue 33)."""

from __future__ import annotations

from django import forms

from surveys.builder_reuse import (
    HELP,
    AskAgainField,
    AskAgainSelect,
    ask_again,
    earlier_questions,
)
from tests.factories import consultation_factory, survey_factory

SEX = {"key": "sex", "text": "Sex", "type": "binary", "categories": ["F", "M"],
       "mechanism": {"name": "randomised_response", "retain": 0.7}}  # fmt: skip
SKIPS = {"key": "skips", "type": "ordinal", "categories": ["never", "rarely", "often"],
         "mechanism": {"name": "negative_manual"}}  # fmt: skip
SITE = {"key": "site", "type": "nominal", "categories": ["A", "B", "C"],
        "mechanism": {"name": "negative_uniform"}}  # fmt: skip
INCOME = {"key": "income", "type": "continuous", "range": [0, 20000],
          "mechanism": {"name": "additive_laplace", "scale": 500}}  # fmt: skip


def _field(consultation, survey=None):
    class Form(forms.Form):
        again = AskAgainField(consultation=consultation, survey=survey)

    return Form


def test_a_question_that_is_itself_asked_again_or_answered_as_given_is_not_offered(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[SEX, SKIPS])
    again = {**SEX, "key": "sex_again", "reuse": {"survey": first.pk, "question": "sex"}}
    second = survey_factory(consultation, questions=[again, SITE], kind="opinion")
    draft = survey_factory(consultation, questions=[], kind="opinion", open_it=False)
    offered = [(q.survey_id, q.key) for q in earlier_questions(consultation, draft)]
    # Not the negative_manual question (its answer is given, not kept on the device), not
    # a question that asks again (the earliest one is offered instead).
    assert offered == [(first.pk, "sex"), (second.pk, "site")]


def test_the_offer_is_ordered_by_survey_then_position_and_a_new_survey_sees_every_survey(
    tenant,
):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[SITE, SEX])  # site first, then sex
    second = survey_factory(consultation, questions=[INCOME, {**SEX, "key": "a_sex"}],
                            kind="opinion")  # fmt: skip
    expected = [(first.pk, "site"), (first.pk, "sex"), (second.pk, "income"),
                (second.pk, "a_sex")]  # fmt: skip
    assert [(q.survey_id, q.key) for q in earlier_questions(consultation)] == expected
    # A survey not saved yet (no primary key) comes after all of them.
    unsaved = type(first)(consultation=consultation)
    assert [(q.survey_id, q.key) for q in earlier_questions(consultation, unsaved)] == expected
    # The second survey sees only the first.
    assert [(q.survey_id, q.key) for q in earlier_questions(consultation, second)] == expected[:2]


def test_the_field_is_optional_labels_each_question_and_names_nothing_unknown(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[SEX, SITE], title="Spring")
    form_class = _field(consultation)
    field = form_class().fields["again"]
    assert field.required is False
    assert str(field.help_text) == str(HELP)
    labels = dict(field.choices)
    assert labels[""] == "No: a new question"
    assert labels[f"{first.pk}:sex"] == "Spring · Sex"
    assert labels[f"{first.pk}:site"] == "Spring · site"  # no text: the key
    form = form_class({"again": ""})
    assert form.is_valid() and field.earlier(form.cleaned_data["again"]) is None
    assert field.earlier(None) is None
    assert not form_class({"again": f"{first.pk}:nope"}).is_valid()
    assert field.earlier(f"{first.pk}:site").key == "site"


def test_asking_a_discrete_question_again_takes_its_categories_and_drops_a_typed_range(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[SITE])
    earlier = earlier_questions(consultation)[0]
    typed = {"key": "where", "text": "Where?", "type": "continuous", "range": [0, 9],
             "step": 1, "mechanism": {"name": "none"}}  # fmt: skip
    assert ask_again(typed, earlier) == {
        "key": "where", "text": "Where?", "type": "nominal", "categories": ["A", "B", "C"],
        "mechanism": {"name": "negative_uniform"},
        "reuse": {"survey": first.pk, "question": "site"},
    }  # fmt: skip


def test_asking_a_continuous_question_without_a_step_again_keeps_its_grid_only(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[INCOME])
    earlier = earlier_questions(consultation)[0]
    assert earlier.step is None and earlier.resolution is not None
    typed = {
        "key": "pay",
        "type": "binary",
        "categories": ["x", "y"],
        "mechanism": {"name": "none"},
    }
    asked = ask_again(typed, earlier)
    assert asked == {
        "key": "pay", "type": "continuous", "range": [0.0, 20000.0],
        "resolution": earlier.resolution,
        "mechanism": {"name": "additive_laplace", "scale": 500},
        "reuse": {"survey": first.pk, "question": "income"},
    }  # fmt: skip


def test_the_offer_follows_the_question_order_not_the_order_rows_were_stored_in(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[SITE, SEX], open_it=False)
    site, sex = first.questions.get(key="site"), first.questions.get(key="sex")
    # Reordered in place (sex first): the rows keep their ids, only positions change.
    type(site).objects.filter(pk=site.pk).update(position=99)
    type(sex).objects.filter(pk=sex.pk).update(position=0)
    type(site).objects.filter(pk=site.pk).update(position=1)
    assert [q.key for q in earlier_questions(consultation)] == ["sex", "site"]


def test_the_offer_is_read_in_one_query_with_its_surveys(tenant, django_assert_num_queries):
    consultation = consultation_factory(tenant.organisation)
    survey_factory(consultation, questions=[SEX, SITE], title="One")
    survey_factory(consultation, questions=[INCOME], kind="opinion", title="Two")
    with django_assert_num_queries(1):
        titles = [q.survey.title for q in earlier_questions(consultation)]
    assert titles == ["One", "One", "Two"]


UMLAUT = {"key": "place", "type": "nominal", "categories": ["Nürnberg", "Łódź", "Köln"],
          "mechanism": {"name": "negative_uniform"}}  # fmt: skip


def test_each_offered_question_carries_what_asking_it_again_sets_on_the_card(tenant):
    consultation = consultation_factory(tenant.organisation)
    first = survey_factory(consultation, questions=[UMLAUT, INCOME], title="Spring")
    form = _field(consultation)()
    options = {w.data["value"]: w.data["attrs"] for w in form["again"].subwidgets}
    assert not any(k.startswith("data-") for k in options[""])  # "No: a new question"
    assert options[f"{first.pk}:place"] == {
        "data-type": "nominal", "data-mechanism": "negative_uniform",
        "data-categories": '["Nürnberg", "Łódź", "Köln"]', "data-low": "", "data-high": "",
    }  # fmt: skip
    assert options[f"{first.pk}:income"] == {
        "data-type": "continuous", "data-mechanism": "additive_laplace",
        "data-categories": "[]", "data-low": "0", "data-high": "20000",
    }  # fmt: skip
    # The widget keeps the attributes a form gives it, passed either way.
    questions = form.fields["again"].questions
    for widget in (AskAgainSelect({"class": "card"}, questions=questions),
                   AskAgainSelect(attrs={"class": "card"}, questions=questions)):  # fmt: skip
        widget.choices = [(f"{first.pk}:place", "Spring · place")]
        html = widget.render("again", "")
        assert 'class="card"' in html and 'data-type="nominal"' in html
