"""The admin's analysis form in plain words (issue 32 item 2).

Built from the kinds' own attributes (:class:`reconstruction.kinds.base.AnalysisKind`:
``label``, ``attribute``, ``attribute_types``, ``type_methods``; the methods' one-line
descriptions in :data:`reconstruction.registry.METHOD_HELP`), so a new kind shows up here
without an edit. Conditions are built from a question, a comparison and a value that
fits the question (its categories, or numbers within its range); the script
``reconstruction/static/reconstruction/analysis_form.js`` shows only what fits the chosen
kind and question. The request goes through the API's serializer and service.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from reconstruction import registry
from reconstruction.kinds.base import AnalysisKind
from surveys import selectors as survey_selectors
from surveys.models import Question, Survey

CONDITION_ROWS = 3
KIND_FIELDS = ("after", "after_attribute", "panel")
COMPARISONS = {
    "in": _("is one of"),
    "gt": _("is above"),
    "lte": _("is at most"),
    "between": _("is from … up to (not including) …"),
}


def form_kinds() -> list[tuple[str, AnalysisKind]]:
    """The registry's kinds the form offers (sampling kinds and panels have their own)."""
    return [
        (name, kind)
        for name, kind in registry.KINDS.items()
        if not kind.sampling and kind.admin_form
    ]


def kind_label(kind: AnalysisKind) -> str:
    return gettext(kind.label) if kind.label else kind.name


def survey_questions(survey: Survey) -> list[Question]:
    """The survey's questions, then its consultation's profile questions (each key once)."""
    questions = list(survey_selectors.survey_questions(survey))
    profile = survey_selectors.profile_survey(survey)
    if profile is not None and profile.pk != survey.pk:
        questions += list(survey_selectors.survey_questions(profile))
    seen: set[str] = set()
    unique = []
    for question in questions:
        if question.key not in seen:
            seen.add(question.key)
            unique.append(question)
    return unique


def question_label(question: Question) -> str:
    return f"{question.text} ({question.key})" if question.text else question.key


def question_data(questions: dict[str, Question]) -> dict[str, dict[str, str]]:
    """What a condition's widgets need of each question: its type, its categories (in
    its order) or its range (the script shows the fitting widgets)."""
    return {
        key: {
            "type": "discrete" if q.is_discrete else "continuous",
            "categories": json.dumps(list(q.categories or []), ensure_ascii=False),
            "low": "" if q.range_low is None else f"{q.range_low:g}",
            "high": "" if q.range_high is None else f"{q.range_high:g}",
        }
        for key, q in questions.items()
    }


def condition_fields(
    prefix: str, label: Any, questions: dict[str, Question]
) -> dict[str, forms.Field]:
    """One condition as widgets, ``<prefix>_attribute`` (a question), ``_op`` (a
    comparison, number questions), ``_categories`` (the answers to tick, category
    questions), ``_number`` and ``_up_to``; read back by :func:`condition_from`."""
    labels = list(  # each question's answers in its own order, each label once
        dict.fromkeys(str(c) for q in questions.values() if q.is_discrete for c in q.categories)
    )
    return {
        f"{prefix}_attribute": forms.ChoiceField(
            label=label,
            choices=[("", "—"), *((key, question_label(q)) for key, q in questions.items())],
            required=False,
            widget=DataSelect(option_data=question_data(questions)),
        ),
        f"{prefix}_op": forms.ChoiceField(
            label=_("comparison"), choices=list(COMPARISONS.items()), required=False
        ),
        f"{prefix}_categories": forms.MultipleChoiceField(
            label=_("answers"),
            choices=[(c, c) for c in labels],
            required=False,
            widget=forms.CheckboxSelectMultiple,
        ),
        f"{prefix}_number": forms.FloatField(label=_("number"), required=False, localize=True),
        f"{prefix}_up_to": forms.FloatField(label=_("up to"), required=False, localize=True),
    }


def condition_row(form: forms.Form, prefix: str, index: int) -> dict[str, Any]:
    """A condition's bound fields by role, for the templates."""
    return {
        "index": index,
        "prefix": prefix,
        **{
            role: form[f"{prefix}_{role}"]
            for role in ("attribute", "op", "categories", "number", "up_to")
        },
    }


def condition_from(
    data: dict[str, Any], prefix: str, questions: dict[str, Question]
) -> dict[str, Any] | None:
    """The API's condition from a row of :func:`condition_fields` (``None``: no question
    chosen). A category question is "is one of" its ticked answers; a number question
    takes the comparison that fits what was typed."""
    key = data.get(f"{prefix}_attribute")
    if not key:
        return None
    question = questions.get(key)
    number, up_to = data.get(f"{prefix}_number"), data.get(f"{prefix}_up_to")
    if question is not None and question.is_discrete:
        ticked = set(data.get(f"{prefix}_categories") or [])
        return {
            "attribute": key,
            "op": "in",
            "value": [c for c in question.categories if c in ticked],
        }
    op = data.get(f"{prefix}_op") or "gt"
    if op == "in":
        op = "between" if up_to is not None else "gt"
    if op == "between":
        return {"attribute": key, "op": op, "value": [number, up_to]}
    return {"attribute": key, "op": op, "value": number}


def condition_problems(form: forms.Form, prefix: str, questions: dict[str, Question]) -> None:
    """A condition row that cannot make a condition, said beside its widget in plain words
    (the API would name ``where[0].value`` or ``'in' needs at least one category``): a
    question with no answer ticked, a number question with no number, a range whose end
    is not above its start."""
    data = form.cleaned_data
    question = questions.get(data.get(f"{prefix}_attribute") or "")
    if question is None:
        return
    if question.is_discrete:
        if not data.get(f"{prefix}_categories"):
            form.add_error(f"{prefix}_categories", _("Tick at least one answer."))
        return
    number, up_to = data.get(f"{prefix}_number"), data.get(f"{prefix}_up_to")
    if number is None:
        form.add_error(f"{prefix}_number", _("Type a number."))
    elif data.get(f"{prefix}_op") == "between" and (up_to is None or up_to <= number):
        form.add_error(f"{prefix}_up_to", _("Type a number above the first one."))


class DataSelect(forms.Select):
    """A select whose options carry ``data-`` attributes (``option_data[value]``)."""

    def __init__(self, *args: Any, option_data: dict[str, dict[str, str]], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.option_data = option_data

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        for key, data in self.option_data.get(str(value), {}).items():
            option["attrs"][f"data-{key}"] = data
        return option


class MethodSelect(forms.RadioSelect):
    """The methods as radio buttons, each with its kinds and question types."""

    def __init__(self, *args: Any, option_data: dict[str, dict[str, str]], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.option_data = option_data

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        for key, data in self.option_data.get(str(value), {}).items():
            option["attrs"][f"data-{key}"] = data
        return option


def method_table() -> dict[str, dict[str, Any]]:
    """Each method: which kinds offer it for which question types, where it is the
    default ("kind:type" pairs)."""
    table: dict[str, dict[str, Any]] = {}
    for name, kind in form_kinds():
        per_type = kind.type_methods or {t: kind.methods for t in ("discrete", "continuous")}
        for qtype, methods in per_type.items():
            default = methods[0] if kind.type_methods else kind.default_method
            for method in methods:
                entry = table.setdefault(method, {"fits": set(), "default": set()})
                entry["fits"].add(f"{name}:{qtype}")
                if method == default:
                    entry["default"].add(f"{name}:{qtype}")
    return table


class AnalysisRequestForm(forms.Form):
    kind = forms.ChoiceField(label=_("What do you want to know?"))
    attribute = forms.ChoiceField(label=_("About which question"), required=False)
    method = forms.ChoiceField(
        label=_("Method"),
        required=False,
        help_text=_("Leave the recommended method unless you know why another fits better."),
    )

    def __init__(self, *args: Any, survey: Survey, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.questions = {q.key: q for q in survey_questions(survey)}
        kinds = form_kinds()
        self.fields["kind"].widget = DataSelect(
            option_data={
                name: {
                    "attribute": kind.attribute,
                    "types": " ".join(kind.attribute_types),
                    "needs-where": "1" if kind.needs_where else "",
                    "fields": " ".join(kind.request_fields),
                }
                for name, kind in kinds
            }
        )
        # After the widget: a choice field hands its choices to its widget.
        self.fields["kind"].choices = [(name, kind_label(kind)) for name, kind in kinds]
        question_choices = [(key, question_label(q)) for key, q in self.questions.items()]
        self.fields["attribute"].widget = DataSelect(option_data=question_data(self.questions))
        self.fields["attribute"].choices = [("", "—"), *question_choices]
        table = method_table()
        self.fields["method"].widget = MethodSelect(
            option_data={
                m: {"fits": " ".join(sorted(e["fits"])), "default": " ".join(sorted(e["default"]))}
                for m, e in table.items()
            }
        )
        self.fields["method"].choices = [
            ("", _("the recommended method")),
            *[(m, f"{m}: {gettext(registry.METHOD_HELP.get(m, ''))}") for m in table],
        ]
        self.fields["method"].initial = ""
        # Fields only some kinds take (their ``request_fields``; shown for those kinds):
        # how opinions changed reads an after survey of the same consultation, its key,
        # and optionally a panel's members.
        others = Survey.objects.filter(consultation_id=survey.consultation_id).exclude(pk=survey.pk)
        self.fields["after"] = forms.ChoiceField(
            label=_("After survey (how opinions changed)"),
            required=False,
            choices=[("", "—"), *((str(s.pk), str(s)) for s in others)],
        )
        self.fields["after_attribute"] = forms.CharField(
            label=_("Its question, when the key differs"), required=False, max_length=64
        )
        self.fields["panel"] = forms.IntegerField(
            label=_("Only the members of panel (analysis id)"), required=False, min_value=1
        )
        for i in range(CONDITION_ROWS):
            self.fields.update(
                condition_fields(f"where_{i}", _("Residents whose answer to"), self.questions)
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for i in range(CONDITION_ROWS):
            condition_problems(self, f"where_{i}", self.questions)
        return data

    def kind_fields(self) -> list[Any]:
        """The fields only some kinds take, for the template."""
        return [self[name] for name in KIND_FIELDS]

    def condition_rows(self) -> list[dict[str, Any]]:
        """The condition fields by row, for the template."""
        return [condition_row(self, f"where_{i}", i) for i in range(CONDITION_ROWS)]

    def condition(self, i: int) -> dict[str, Any] | None:
        return condition_from(self.cleaned_data, f"where_{i}", self.questions)

    def spec(self) -> dict[str, Any]:
        data = self.cleaned_data
        kind = registry.KINDS[data["kind"]]
        spec: dict[str, Any] = {"kind": data["kind"]}
        # A kind without a target question (a count) counts the residents the conditions
        # describe: a question picked above is not sent (its conditions are).
        if data.get("attribute") and kind.attribute == "required":
            spec["attribute"] = data["attribute"]
        if data.get("method"):
            spec["method"] = data["method"]
        for name in KIND_FIELDS:
            if data.get(name) and name in kind.request_fields:
                spec[name] = int(data[name]) if name == "after" else data[name]
        where = [c for c in (self.condition(i) for i in range(CONDITION_ROWS)) if c]
        if where:
            spec["where"] = where
        return spec
