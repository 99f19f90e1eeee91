"""The survey builder's "ask again (same answer kept)" option (issue 28), as one piece the
builder places where it likes: a form field listing the consultation's earlier questions
that can be asked again, and what choosing one means for the question's JSON.

Asking again means the API's ``reuse``: the resident's device re-sends the report it kept
for the earlier question (RAPPOR's permanent randomisation), the server checks it is the
same and charges no privacy budget. So the question takes the earlier one's type,
categories and mechanism (:func:`ask_again`), and only questions whose report a device
keeps are offered (not those answered as given: ``none``, ``negative_manual``).

Usage in a question form (``consultation`` and the survey being edited, if saved)::

    field = AskAgainField(consultation=consultation, survey=survey)
    ...
    question = ask_again(question, field.earlier(cleaned_value))
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from consultations.models import Consultation
from surveys.models import Question, Survey

ANSWERED_AS_GIVEN = ("none", "negative_manual")
LABEL = _("Ask again (same answer kept)")
HELP = _(
    "Ask a question of an earlier survey of this consultation again: each resident's device "
    "sends the same scrambled answer as then, so it uses none of their privacy budget. The "
    "question keeps that question's categories and mechanism."
)


def earlier_questions(consultation: Consultation, survey: Survey | None = None) -> list[Question]:
    """Questions of the consultation's earlier surveys that can be asked again."""
    surveys = Survey.objects.filter(consultation=consultation)
    if survey is not None and survey.pk is not None:
        surveys = surveys.filter(pk__lt=survey.pk)
    return list(
        Question.objects.filter(survey__in=surveys, reuse__isnull=True)
        .exclude(mechanism__in=ANSWERED_AS_GIVEN)
        .select_related("survey")
        .order_by("survey_id", "position")
    )


def choice_value(question: Question) -> str:
    return f"{question.survey_id}:{question.key}"


class AskAgainSelect(forms.Select):
    """The earlier questions, each option carrying what asking it again sets on the card
    (its type, categories or range, and mechanism), so the card's script can show them
    and grey out the fields they replace."""

    def __init__(self, *args: Any, questions: dict[str, Question], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.questions = questions

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        question = self.questions.get(str(value))
        if question is not None:
            option["attrs"].update(
                {
                    "data-type": question.type,
                    "data-mechanism": question.mechanism,
                    "data-categories": json.dumps(
                        list(question.categories or []), ensure_ascii=False
                    ),
                    "data-low": "" if question.range_low is None else f"{question.range_low:g}",
                    "data-high": "" if question.range_high is None else f"{question.range_high:g}",
                }
            )
        return option


class AskAgainField(forms.ChoiceField):
    """Empty (a new question) or ``"<survey id>:<key>"`` of an earlier question."""

    def __init__(
        self, *, consultation: Consultation, survey: Survey | None = None, **kwargs: Any
    ) -> None:
        self.questions = {choice_value(q): q for q in earlier_questions(consultation, survey)}
        choices = [("", _("No: a new question"))] + [
            (value, f"{q.survey.title} · {q.text or q.key}") for value, q in self.questions.items()
        ]
        kwargs.setdefault("label", LABEL)
        kwargs.setdefault("help_text", HELP)
        kwargs.setdefault("widget", AskAgainSelect(questions=self.questions))
        super().__init__(choices=choices, required=False, **kwargs)

    def earlier(self, value: str | None) -> Question | None:
        """The earlier question a cleaned value names (``None`` for a new question)."""
        return self.questions.get(value or "")


def ask_again(question: dict[str, Any], earlier: Question | None) -> dict[str, Any]:
    """The question's API JSON asking ``earlier`` again: its ``reuse``, and the earlier
    question's type, categories (or range and grid) and mechanism; the key, text,
    ``required`` and translations stay the builder's. ``earlier`` ``None``: unchanged."""
    if earlier is None:
        return question
    asked = {k: v for k, v in question.items() if k not in ("categories", "range", "step")}
    asked.update(
        type=earlier.type,
        mechanism={"name": earlier.mechanism, **(earlier.mechanism_params or {})},
        reuse={"survey": earlier.survey_id, "question": earlier.key},
    )
    if earlier.is_discrete:
        asked["categories"] = list(earlier.categories)
    else:
        asked["range"] = [earlier.range_low, earlier.range_high]
        for name in ("step", "resolution"):
            if getattr(earlier, name) is not None:
                asked[name] = getattr(earlier, name)
    return asked
