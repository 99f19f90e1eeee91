"""The survey builder's preview: what each question's mechanism does, in plain words.

Read by the admin (surveys/admin.py) for the survey being built; the maths is in
:mod:`surveys.preview`.
"""

from __future__ import annotations

import math
from typing import Any

from django.utils.translation import gettext as _

from core.messages import translate
from surveys import schemes, selectors
from surveys.models import Question, Survey
from surveys.preview import preview


def _as_api(question: Question) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "key": question.key,
        "text": question.text,
        "type": question.type,
        "mechanism": {"name": question.mechanism, **(question.mechanism_params or {})},
    }
    if question.is_discrete:
        raw["categories"] = list(question.categories)
    else:
        raw["range"] = [question.range_low, question.range_high]
    return raw


def epsilon_words(eps: float | None, mechanism: str, discrete: bool) -> str:
    if mechanism == "none":
        return _("No distortion: the answer is sent as given (no privacy protection).")
    if not discrete and eps is None:  # additive_staircase covering its range has an eps
        return _("Noise is added to every number; a single reported number says little.")
    if eps is None:
        return _(
            "ε is unbounded: a reported answer can rule some true answers out, but it never "
            "says which of the others is true."
        )
    return _(
        "ε = %(epsilon)s: seeing a reported answer makes one true answer at most %(ratio)s "
        "times as likely as another (below 1 is strong, above 3 is weak)."
    ) % {"epsilon": f"{eps:.2f}", "ratio": f"{math.exp(eps):.3g}"}


def margin_words(margin: float | None, discrete: bool, respondents: int) -> str:
    if margin is None:
        return _("The channel cannot be inverted: no estimate is possible.")
    if discrete:
        return _(
            "Expected margin of error at %(n)s respondents: ±%(points)s percentage points on "
            "each category's share."
        ) % {"n": f"{respondents:,}", "points": f"{100 * margin:.1f}"}
    return _("Expected margin of error of the mean at %(n)s respondents: ±%(margin)s.") % {
        "n": f"{respondents:,}",
        "margin": f"{margin:.3g}",
    }


def question_preview(raw: dict[str, Any], respondents: int) -> dict[str, Any]:
    """The preview of one question in the API's JSON shape; ``error`` (the API's message)
    instead of the channel when the question is not valid."""
    key = str(raw.get("key") or "")
    try:
        spec = schemes.parse_question(raw)
        shown = preview(spec, respondents)
    except schemes.QuestionInvalid as exc:
        return {"key": key, "text": raw.get("text") or "", "error": problems_text(exc.errors)}
    except ValueError as exc:
        return {"key": key, "text": raw.get("text") or "", "error": translate(exc)}
    discrete = spec.type != "continuous"
    return {
        "key": spec.key,
        "text": spec.text,
        "mechanism": spec.mechanism,
        "categories": shown.categories,
        "rows": list(zip(shown.categories, shown.channel or [], strict=False)),
        "epsilon": epsilon_words(shown.epsilon, spec.mechanism, discrete),
        "margin": margin_words(shown.margin, discrete, respondents),
    }


def problems_text(errors: Any) -> str:
    """``{"mechanism": ["..."]}`` as one line, ``mechanism: ...`` (as the API's ``detail``)."""
    if isinstance(errors, dict):
        return "; ".join(
            message if field == "non_field_errors" else f"{field}: {message}"
            for field, problems in errors.items()
            for message in [problems_text(problems)]
        )
    if isinstance(errors, (list, tuple)):
        return " ".join(problems_text(item) for item in errors if item)
    return str(errors)


def mechanism_previews(survey: Survey, respondents: int) -> list[dict[str, Any]]:
    return [
        question_preview(_as_api(question), respondents)
        for question in selectors.survey_questions(survey)
    ]
